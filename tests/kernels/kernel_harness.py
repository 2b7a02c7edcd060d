"""Run a function through the kernel path (passes -> fusion -> render -> NVRTC check -> PoCL,
or -> render in the C dialect -> the system C compiler -> native) and through the NumPy backend
on the same optimized Program, and compare. `BACKEND[0]` says which kernel executor runs
("pocl" or "native"); conftest.py's `kernel_backend` fixture sets it per test."""
import numpy as np

import gpuarr
from gpuarr.backends import float_env, native, nvrtc, opencl
from gpuarr.backends.numpy import codegen
from gpuarr.compiler import compile_closed, passes, plan_closed, render
from gpuarr.compiler.fusion import FusionOptions
from gpuarr.core import ClosedProgram, Eqn, Program, ShapedArray, Var

COMPILED_SOURCES: set = set()
BACKEND = ["pocl"]


def execute(closed, inputs, nvrtc_check=True) -> list:
    """Run `closed`'s kernel plan on `inputs` (constants first) with the current backend."""
    if BACKEND[0] == "native":   # the native platform's options: tiled column reductions
        launch_plan = compile_closed(closed, FusionOptions(split_columns=False), dialect="c")
        return native.PlanRunner(launch_plan, render.prelude("c"))(inputs)
    launch_plan = compile_closed(closed)
    if nvrtc_check:
        for step in launch_plan.steps:
            if step.kind == "launch" and step.source not in COMPILED_SOURCES:
                nvrtc.compile(step.source, step.name, arch="sm_90")
                COMPILED_SOURCES.add(step.source)
    return opencl.run_plan(launch_plan, inputs)


def run_rendered(rk, arrays: dict, outputs) -> dict:
    """Run one RenderedKernel (and its setup entries) on flat `arrays` with the current
    backend; return {name: array} for `outputs`. PoCL runs the GPU dialect's text, native the
    C dialect's."""
    if BACKEND[0] == "native":
        lib = native.load(rk.source)
        arrays = {k: np.ascontiguousarray(v).copy() for k, v in arrays.items()}
        ptrs = native.pointers([arrays[n] for n in rk.arg_names])
        nbytes = sum(a.nbytes for a in arrays.values())
        for entry, global_size in (*rk.setup, (rk.name, rk.global_size)):
            native.launch(native.entry(lib, entry), ptrs, global_size, nbytes)
        return {k: arrays[k] for k in outputs}
    for entry, global_size in rk.setup:   # earlier entry points write the scratch buffers
        arrays.update(opencl.run(rk.source, entry, global_size, rk.local_size, rk.arg_names,
                                 arrays, tuple(k for k, _, _ in rk.scratch)))
    return opencl.run(rk.source, rk.name, rk.global_size, rk.local_size, rk.arg_names,
                      arrays, tuple(outputs))


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
    with float_env.flushing():  # as jitted programs run: subnormals flushed, as in XLA
        want = codegen.compile_closed(closed)(*args)
    got = execute(closed, consts + args, nvrtc_check)
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
    return execute(closed, consts + [np.asarray(a) for a in args]), plan_closed(closed)
