"""The native platform: jitted Programs run as the same fused kernels the cuda and opencl
platforms run, rendered in the C dialect and built by the system C compiler into one shared
object per program (gpuarr/backends/native.py). Buffers are host NumPy arrays; eager single
operations, library calls (matmul, sort, FFT, linear algebra) and host steps use the NumPy
implementations on the same buffers.

Without a working C compiler (none on PATH, `CC` naming a broken one) every program runs on
the NumPy backend, after one log line giving the reason; when one program's kernels cannot be
built (a compiler error), that program runs on the NumPy backend, also after one log line.
"""
from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from gpuarr.backends import float_env, host_threads, native, native_loops
from gpuarr.backends import numpy as numpy_backend
from gpuarr.compiler import compile_closed, inline_calls, render
from gpuarr.compiler.fusion import FusionOptions
from gpuarr.core import subprograms
from gpuarr.lax.dot_precision import is_algorithm
from gpuarr.platforms import Device
from gpuarr.platforms.host import HostBufferPlatform, computes_floats
from gpuarr.sharding.spmd import shard_map_p

logger = logging.getLogger("gpuarr")


class NativeDevice(Device):
    kind_name = "CpuDevice"


class NativePlatform(HostBufferPlatform):
    """Host NumPy buffers and eager ops as on the cpu platform; jit compiles to C kernels."""

    name = "native"

    def __init__(self):
        super().__init__(NativeDevice("native", 0))
        try:
            native.toolchain()
            self.unavailable = None
            native.prepare_prelude(render.prelude("c"))
        except native.NativeCompilerNotFoundError as e:
            self.unavailable = str(e)
            logger.warning("native platform: no working C compiler, jitted programs run on "
                           "the NumPy backend: %s", e)

    def codegen(self, closed):
        """Fuse and render `closed` (its calls inlined first) in the C dialect and build it;
        control-flow bodies go through `compile` (passes, then kernels) as sub-plans. Falls
        back to the NumPy backend, with one log line, when the kernels cannot be built."""
        if self.unavailable is not None:
            return numpy_backend.compile_closed(closed)
        closed = inline_calls(closed)
        if runs_per_device(closed.program):
            return numpy_backend.compile_closed(closed)
        plan = compile_closed(closed, self.fusion_options(), dialect="c")
        try:
            plan = self.native_loops(products_by_size(plan))
            runner = native.PlanRunner(plan, render.prelude("c"))
        except (native.NativeCompileError, native.NativeCompilerNotFoundError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            logger.warning("native platform: running this program on the NumPy backend: %s",
                           reason)
            return numpy_backend.compile_closed(closed)
        consts = tuple(numpy_backend.as_numpy(c) for c in closed.consts)  # device Arrays copied
        run_plan = runner.run

        def run(*buffers):
            return run_plan(consts + buffers if consts else buffers)

        run.launch_plan = plan
        # Host steps (complex sqrt, say) flush subnormals as the kernels and XLA's CPU code do;
        # the kernels' entry points set the float environment themselves.
        host = any(step.kind == "host" for step in plan.steps)
        return float_env.flushed(run) if host and computes_floats(closed.program) else run

    def fusion_options(self) -> FusionOptions:
        """Loop bodies compile through this platform; column reductions stay one tiled pass."""
        return FusionOptions(sub_compiler=float_env.unflushed(self.compile), split_columns=False)

    def sub_plan(self, closed):
        """(launch plan, native.PlanRunner, consts) of a loop's body or condition, or None when
        its kernels cannot be built (the loop then keeps the Python driver)."""
        closed = inline_calls(self.optimize(closed))
        plan = compile_closed(closed, self.fusion_options(), dialect="c")
        try:
            plan = self.native_loops(products_by_size(plan))
            runner = native.PlanRunner(plan, render.prelude("c"))
        except (native.NativeCompileError, native.NativeCompilerNotFoundError):
            return None
        return plan, runner, [np.asarray(getattr(c, "_value", c)) for c in closed.consts]

    def native_loops(self, plan):
        """`plan` with each `scan` and `while` whose body and condition are kernels and matrix
        products driven by the C loop driver (gpuarr/backends/native_loops.py) instead of
        Python: no Python work per iteration."""
        steps = list(plan.steps)
        for k, step in enumerate(steps):
            if not getattr(step, "drives_sub_plans", False) or step.params is None:
                continue
            p, loop = step.params, None
            if step.name == "scan":
                body = self.sub_plan(p["jaxpr"])
                loop = body and native_loops.scan_loop(_driver_source(), body, p)
            elif step.name == "while":
                cond = self.sub_plan(p["cond_jaxpr"])
                body = cond and self.sub_plan(p["body_jaxpr"])
                loop = body and native_loops.while_loop(_driver_source(), cond, body, p)
            if loop:
                steps[k] = dataclasses.replace(step, fn=loop,
                                               reason="a loop run by the C loop driver")
        return dataclasses.replace(plan, steps=tuple(steps))


def runs_per_device(prog) -> bool:
    """Whether `prog` holds a shard_map over several devices (in a branch or loop too): its
    operands and results may be pieces held per process (DeviceShards), which the kernels'
    contiguous buffers cannot hold; sharding/spmd.py compiles its per-device Programs."""
    return any((e.prim is shard_map_p and e.params["mesh"].size > 1) or any(
        runs_per_device(getattr(p, "program", p)) for p in subprograms(e.params))
        for e in prog.eqns)


def products_by_size(plan):
    """`plan` with each plain float matrix/vector product (one contracting dim, no batch dims,
    rank 1 or 2) calling `np.dot` under the NumPy backend's BLAS thread policy
    (`host_threads.blas_dot`: one BLAS thread for small products and on a busy machine), as
    the NumPy backend does; OpenBLAS's threads would otherwise fight the kernels' thread pool
    and other processes for the cores."""
    shapes = {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in plan.buffers}
    steps = list(plan.steps)
    for k, step in enumerate(steps):
        if getattr(step, "name", "") != "dot_general" or step.kind != "host" or not step.params:
            continue
        (lc, rc), (lb, rb) = step.params["dimension_numbers"]
        (xs, xt), (ys, yt), (_, ot) = (shapes[n] for n in step.inputs + step.outputs)
        precision = step.params.get("precision")
        if lb or len(lc) != 1 or not (1 <= len(xs) <= 2 and 1 <= len(ys) <= 2) or xt != yt \
                or xt != ot or xt.char not in "fdFD" or is_algorithm(precision):
            continue
        dot = host_threads.blas_dot(math.prod(xs) * math.prod(ys) // max(xs[lc[0]], 1))
        lhs_t, rhs_t = lc[0] != len(xs) - 1, rc[0] != 0

        def product(x, y, dot=dot, lhs_t=lhs_t, rhs_t=rhs_t):
            return (dot(x.T if lhs_t else x, y.T if rhs_t else y),)
        steps[k] = dataclasses.replace(step, fn=product)
    return dataclasses.replace(plan, steps=tuple(steps))


def _driver_source() -> str:
    return (render.KERNELS_DIR / "loop_driver.c").read_text()


def make() -> NativePlatform:
    return NativePlatform()
