"""Run a function through the kernel path (passes -> fusion -> render -> NVRTC check -> PoCL)
and through the NumPy backend on the same optimized Program, and compare."""
import numpy as np

import gpuarr
from gpuarr.backends import nvrtc, opencl
from gpuarr.backends.numpy import codegen
from gpuarr.compiler import compile_closed, passes, plan_closed
from gpuarr.core import ClosedProgram, Eqn, Program, ShapedArray, Var

COMPILED_SOURCES: set = set()


def optimized(f, *args):
    if isinstance(f, ClosedProgram):
        return passes.optimize(f)
    return passes.optimize(gpuarr.make_jaxpr(f)(*args))


def one_eqn_program(prim, params, out_aval, *args) -> ClosedProgram:
    """A ClosedProgram applying `prim` once, built by hand (no tracing)."""
    invars = [Var(ShapedArray(np.shape(a), np.asarray(a).dtype)) for a in args]
    out = Var(out_aval)
    return ClosedProgram(Program([], invars, [Eqn(prim, invars, params, [out])], [out]), [])


def run_both(f, *args, nvrtc_check=True):
    """(kernel results, NumPy results, KernelPlan) for `f(*args)`."""
    closed = optimized(f, *args)
    args = [np.asarray(a) for a in args]
    consts = [np.asarray(getattr(c, "_value", c)) for c in closed.consts]
    want = codegen.compile_closed(closed)(*args)
    launch_plan = compile_closed(closed)
    if nvrtc_check:
        for step in launch_plan.steps:
            if step.kind == "launch" and step.source not in COMPILED_SOURCES:
                nvrtc.compile(step.source, step.name, arch="sm_90")
                COMPILED_SOURCES.add(step.source)
    got = opencl.run_plan(launch_plan, consts + args)
    return got, [np.asarray(w) for w in want], plan_closed(closed)


def check(f, *args, rtol=1e-5, atol=1e-6, exact=False):
    """Assert the kernel path equals the NumPy backend on `f(*args)`; return the KernelPlan."""
    got, want, plan = run_both(f, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return plan


def kernel_count(plan) -> int:
    return len(plan.kernels)


def run_kernels(f, *args):
    """Kernel-path results only (for comparing against NumPy expressions directly)."""
    closed = optimized(f, *args)
    consts = [np.asarray(getattr(c, "_value", c)) for c in closed.consts]
    launch_plan = compile_closed(closed)
    for step in launch_plan.steps:
        if step.kind == "launch" and step.source not in COMPILED_SOURCES:
            nvrtc.compile(step.source, step.name, arch="sm_90")
            COMPILED_SOURCES.add(step.source)
    return opencl.run_plan(launch_plan, consts + [np.asarray(a) for a in args]), plan_closed(closed)
