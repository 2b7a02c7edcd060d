"""The native platform's call path: a plan of launches runs as one call of its generated entry
point (gpuarr/backends/native_dispatch.py), inputs it cannot take run step by step, and jit's
fast path takes NumPy arrays; row reductions keep a costly pre-map for their epilogue
(softmax's exp once per element). Results are compared with the NumPy backend and NumPy."""
import ctypes

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.backends import native, native_dispatch
from gpuarr.compiler import render
from gpuarr.platforms import get_platform


@pytest.fixture
def plat(native_platform):
    return native_platform


def compile_both(plat, f, *args):
    closed = gpuarr.make_jaxpr(f)(*args)
    return plat.compile(closed), get_platform("cpu").compile_numpy(closed)


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def step_by_step_forbidden(monkeypatch):
    def refuse(self, inputs):
        raise AssertionError("ran step by step")
    monkeypatch.setattr(native.PlanRunner, "__call__", refuse)


def test_array_struct_offsets_read_what_python_reports():
    layout = native_dispatch.object_layout()
    assert layout is not None   # CPython and NumPy's documented array struct
    items, typ, data, flags, descr = layout
    a = np.arange(7, dtype=np.int16)[::2]
    pair = (a, None)
    read = lambda obj, off: ctypes.c_void_p.from_address(id(obj) + off).value  # noqa: E731
    assert read(pair, items) == id(a) and read(pair, items + 8) == id(None)
    assert read(a, typ) == id(np.ndarray) and read(a, data) == a.ctypes.data
    assert read(a, descr) == id(a.dtype)
    assert ctypes.c_int.from_address(id(a) + flags).value == a.flags.num


def test_a_fused_plan_runs_in_one_call(plat, monkeypatch):
    def f(x, y):
        z = jnp.tanh(x * 1.5 + y)
        return z, jnp.sum(z * z, axis=1), (z - jnp.max(z)) * 2.0
    x = np.random.default_rng(0).standard_normal((33, 17)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(17).astype(np.float32)
    run, ref = compile_both(plat, f, x, y)
    assert sum(s.kind == "launch" for s in run.launch_plan.steps) >= 2
    step_by_step_forbidden(monkeypatch)
    assert_same(run(x, y), ref(x, y))
    assert_same(run(x, y), ref(x, y))   # outputs are fresh arrays each call


def test_inputs_the_entry_point_refuses_run_step_by_step(plat):
    f = lambda x, y: (x * 2.0 + y, x - y)  # noqa: E731
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    run, ref = compile_both(plat, f, x, x)
    strided = np.linspace(-1, 1, 48, dtype=np.float32).reshape(4, 12)[:, ::2]
    swapped = x.astype(x.dtype.newbyteorder())   # equal values, another dtype object
    unaligned = np.frombuffer(b"\0" + x.tobytes(), np.float32, 24, offset=1).reshape(4, 6)
    for bad in (strided, swapped, unaligned, x.astype(np.float64), x.tolist()):
        assert_same(run(bad, x), ref(np.asarray(bad, np.float32), x))


def test_outputs_that_are_inputs_constants_or_repeated(plat, monkeypatch):
    table = np.arange(6, dtype=np.float32)
    def f(x):
        y = x * 3.0
        return x, y, y, gpuarr.numpy.asarray(table), y + table
    x = np.ones(6, np.float32)
    run, ref = compile_both(plat, f, x)
    step_by_step_forbidden(monkeypatch)
    got = run(x)
    assert_same(got, ref(x))
    assert got[0] is not x and not np.shares_memory(got[0], x)   # a copy, as before


def test_without_the_array_struct_plans_run_step_by_step(plat, monkeypatch):
    monkeypatch.setattr(native_dispatch, "_layout", [None])
    native.clear_memory_cache()
    f = lambda x: jnp.exp(x) * 0.5 - x  # noqa: E731
    x = np.linspace(-3, 3, 50, dtype=np.float32)
    run, ref = compile_both(plat, f, x)
    assert_same(run(x), ref(x))


def test_jit_fast_path_takes_numpy_arrays():
    traces = []

    @gpuarr.jit
    def f(x, y):
        traces.append(1)
        return x * y + 1.0
    a = np.arange(4, dtype=np.float32)
    b = np.full((3, 4), 2, np.float32)
    first = f(a, b)
    for _ in range(3):
        out = f(a, b)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(first))
    assert len(traces) == 1 and out.shape == (3, 4) and out.dtype == np.float32
    wide = f(a.astype(np.float64), b)   # converted to float32, as JAX without x64
    assert wide.dtype == np.float32 and len(traces) == 1
    other = f(np.arange(3, dtype=np.float32).reshape(3, 1), b)
    assert other.shape == (3, 4) and len(traces) == 2
    np.testing.assert_array_equal(np.asarray(other), np.arange(3.0).reshape(3, 1) * b + 1.0)
    mixed = f(jnp.asarray(a), b)   # an Array and a NumPy array: one Program
    np.testing.assert_array_equal(np.asarray(mixed), np.asarray(first))


def softmax(np_, x):
    m = np_.max(x, axis=1, keepdims=True)
    e = np_.exp(x - m)
    return e / np_.sum(e, axis=1, keepdims=True)


def test_softmax_computes_exp_once_per_element(plat):
    x = np.random.default_rng(2).standard_normal((37, 300)).astype(np.float32) * 4
    x[3, 5] = np.inf
    x[4] = -np.inf
    run, ref = compile_both(plat, lambda x: softmax(jnp, x), x)
    (kernel,) = [s for s in run.launch_plan.steps if s.kind == "launch" and "kept[" in s.source]
    body = kernel.source[len(render.prelude("c")):]
    assert body.count("exp_f32(") == 1
    got, want = run(x), ref(x)
    assert_same(got, want)
    with np.errstate(invalid="ignore"):
        exact = softmax(np, x.astype(np.float64))
    np.testing.assert_allclose(got[0], exact, rtol=2e-6, atol=1e-7, equal_nan=True)


def test_cheap_or_long_rows_are_computed_twice(plat):
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    cheap = lambda x: (x - 1.0) / jnp.sum(x - 1.0, axis=1, keepdims=True)  # noqa: E731
    run, ref = compile_both(plat, cheap, x)
    assert not any("kept[" in s.source for s in run.launch_plan.steps if s.kind == "launch")
    assert_same(run(x), ref(x))
    long_rows = np.random.default_rng(4).standard_normal((2, 16384)).astype(np.float32)
    run, ref = compile_both(plat, lambda x: softmax(jnp, x), long_rows)
    assert not any("kept[" in s.source for s in run.launch_plan.steps if s.kind == "launch")
    assert_same(run(long_rows), ref(long_rows))
