"""The kernel compiler: passes (Program -> Program), fusion (Program -> KernelPlan), rendering
(KernelPlan -> LaunchPlan of CUDA C / OpenCL C source). Backends run LaunchPlans.

The optional passes are run by the platform (`Platform.compile`: `optimize`, then `codegen`);
a kernel platform's codegen inlines calls (`inline_calls`, whose consts it then passes) and calls
`compile_closed(closed)`: fuse, render, log the compilation when `config.log_compiles` is on
(logger "gpuarr"), and dump sources to GPUARR_DUMP_DIR.
"""
from __future__ import annotations

import logging
import time

logger = logging.getLogger("gpuarr")


def inline_calls(closed):
    """`closed` with every call (nested jit, remat, custom_jvp/vjp) inlined. A kernel plan
    cannot run a call, and with the optional passes off, or for an eager primitive that is
    itself a call, nothing else would inline it; its consts come along."""
    from gpuarr.compiler import passes
    from gpuarr.core import ClosedProgram
    program, consts = passes.inline(closed.program, list(closed.consts))
    return closed if program is closed.program else ClosedProgram(program, consts)


def plan_closed(closed, options=None):
    """The KernelPlan of a ClosedProgram (the optional passes and `inline_calls` are assumed
    to have run already)."""
    from gpuarr.compiler import fusion, passes
    program = passes.decompose_for_kernels(closed.program)
    inplace = passes.inplace_operands(program)
    return fusion.fuse(program, closed.consts, options, inplace)


def compile_closed(closed, options=None, dialect: str = "gpu"):
    """Fuse and render a ClosedProgram into a LaunchPlan (see gpuarr.compiler.plan), in kernel
    `dialect` ("gpu" for CUDA and OpenCL, "c" for the native platform)."""
    from gpuarr.compiler import render, row_groups
    from gpuarr.config import config
    start = time.perf_counter()
    plan = plan_closed(closed, options)
    # In C, row reductions sharing their rows run as one launch.
    launch_plan = render.render_plan(plan, dialect=dialect,
                                     regroup=row_groups.group if dialect == "c" else None)
    if config.log_compiles:
        kernels = [s.name for s in launch_plan.steps if s.kind == "launch"]
        host = [s.name for s in launch_plan.steps if s.kind == "host"]
        logger.warning("Compiled a program of %d equations into %d kernels %s and %d host steps %s "
                       "in %.1f ms", len(closed.program.eqns), len(kernels), kernels, len(host),
                       host, 1e3 * (time.perf_counter() - start))
    return launch_plan
