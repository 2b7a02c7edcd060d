"""Kernel-level limits of the CUDA path, each checked on PoCL and compiled with NVRTC: narrow
atomics, 32-bit index overflow, kernel parameter counts, launch sizes of reductions, and the
cost of non-add scatters."""
import math

import numpy as np
import pytest
from kernel_harness import check, run_kernels

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.backends import nvrtc
from gpuarr.compiler import plan_closed, render
from gpuarr.compiler.plan import (
    Arg,
    ElementwiseKernel,
    IndexMap,
    Load,
    Op,
    ReductionKernel,
    ScatterKernel,
    Store,
)

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]
rng = np.random.default_rng(7)


# ---- scatter-add on 8/16-bit integers ----------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_narrow_integer_scatter_add_wraps_like_add_at(dtype):
    info = np.iinfo(dtype)
    idx = rng.integers(0, 10, 300).astype(np.int32)
    idx[:40] = 3                                      # one element hit 40+ times: wraps around
    upd = rng.integers(info.min, info.max, 300, endpoint=True).astype(dtype)
    (got,), plan = run_kernels(lambda i, u: jnp.zeros(10, dtype).at[i].add(u), idx, upd)
    want = np.zeros(10, dtype)
    np.add.at(want, idx, upd)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    (k,) = [k for k in plan.kernels if isinstance(k, ScatterKernel)]
    source = render.render(k).source
    assert f"ATOMIC_ADD_{render.ctype(dtype).upper()}(&out[t]" in source


def test_narrow_atomic_add_touches_only_its_lane():
    """Neighbouring bytes of one 32-bit word, each hit by many updates, at odd offsets too."""
    x = rng.integers(-128, 127, 13).astype(np.int8)
    idx = rng.integers(0, 13, 2000).astype(np.int32)
    upd = rng.integers(-128, 127, 2000).astype(np.int8)
    plan = check(lambda x, i, u: x.at[i].add(u), x, idx, upd)
    assert any(isinstance(k, ScatterKernel) for k in plan.kernels)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint32", "int64", "uint64",
                                   "float32", "float64"])
@pytest.mark.parametrize("combiner", ["add", "set", "min", "max", "mul", "sub"])
def test_every_scatter_renders_defined_macros(dtype, combiner):
    """No dtype and combiner leaves an ATOMIC_ macro undefined: NVRTC compiles each kernel."""
    for deterministic in (False, True):
        k = ScatterKernel("k_s", dtype, "int32", (7,), (20,), (20, 1), (), (0,), (0,),
                          combiner, "drop", deterministic)
        nvrtc.compile(render.render(k).source, k.name, arch="sm_90")


@pytest.fixture
def on_opencl():
    """jit runs through the kernels on PoCL, as with GPUARR_PLATFORMS=opencl."""
    before = gpuarr.config.platforms
    gpuarr.config.update("jax_platforms", "opencl")
    yield
    gpuarr.config.update("jax_platforms", before)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_narrow_scatter_add_under_jit_on_opencl(on_opencl, dtype):
    from gpuarr.platforms import default_platform
    assert default_platform().name == "opencl"
    idx = np.array([1, 1, 1, 9, 0, 1, 9, 4] * 50, np.int32)
    upd = np.arange(400).astype(dtype)
    got = np.asarray(gpuarr.jit(lambda i, u: jnp.zeros(10, dtype).at[i].add(u))(idx, upd))
    want = np.zeros(10, dtype)
    np.add.at(want, idx, upd)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_concatenate_of_5000_arrays_under_jit_on_opencl(on_opencl):
    xs = [np.full(2, k, np.int32) for k in range(5000)]
    got = np.asarray(gpuarr.jit(lambda *xs: jnp.concatenate(xs))(*xs))
    np.testing.assert_array_equal(got, np.concatenate(xs))


# ---- 32-bit indices near 2^31 ------------------------------------------------------------------

def _exp_kernel(n):
    return ElementwiseKernel("k_exp", (n,), (Arg("x", "float32", n), Arg("out", "float32", n, True)),
                             (Load("x", IndexMap.contiguous((n,)), "float32"), Op("exp", (0,), "float32")),
                             (Store("out", 1),))


@pytest.mark.parametrize("n, t", [(2**31 - 2**20 - 1, "i32"), (2**31 - 2**20, "i64"), (2**31 - 1, "i64"),
                                  (2**31 - 3, "i64"), (2**31 + 8, "i64")])
def test_grid_stride_loops_cannot_wrap(n, t):
    """i + global size stays below 2^31 in every i32 loop; sizes closer to 2^31 take i64."""
    rk = render.render(_exp_kernel(n))
    assert n - 1 + rk.global_size <= 2**31 - 1 or t == "i64"
    assert f"({t}, q, {n // 4})" in rk.source or f"({t}, i, {n})" in rk.source
    nvrtc.compile(rk.source, rk.name, arch="sm_90")
    args = (Arg("x", "float32", n), Arg("out0", "float32", n // 2, True))
    load = Load("x", IndexMap.contiguous((n // 2, 2)), "float32")
    red = ReductionKernel("k_sum", (n // 2,), (2,), args, "sum", "float32", 0.0, (load,), 0,
                          strategy="column")
    rr = render.render(red)
    assert f"GRID_STRIDE_LOOP({t}, o, {n // 2})" in rr.source
    nvrtc.compile(rr.source, rr.name, arch="sm_90")


def test_64_bit_index_kernels_run(monkeypatch, run_kernel):
    """A moderately large elementwise and column reduction with 64-bit indices forced."""
    monkeypatch.setattr(render, "INT32_LIMIT", 1000)
    n = 3 * 2**20 + 3
    x = rng.standard_normal(n).astype(np.float32)
    k = _exp_kernel(n)
    assert "GRID_STRIDE_LOOP(i64" in render.render(k).source
    got = run_kernel(k, {"x": x}, {"out": np.zeros(n, np.float32)})["out"]
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-6)
    y = rng.standard_normal((3000, 700)).astype(np.float32)
    (got,), _ = run_kernels(lambda y: jnp.sum(y, axis=0), y)
    np.testing.assert_allclose(got, y.sum(0), rtol=1e-4, atol=1e-3)


# ---- non-add scatters cost the updates ---------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint16", "uint8"])
@pytest.mark.parametrize("op", ["set", "min", "max", "mul", "apply"])
def test_non_add_scatters_with_duplicates_match_numpy_backend(dtype, op):
    x = (rng.standard_normal((40, 3)) * 20).astype(dtype)
    idx = rng.integers(-3, 43, 500).astype(np.int32)
    idx[:100] = 5
    upd = (rng.standard_normal((500, 3)) * 20).astype(dtype)
    if op == "mul":
        upd = np.where(rng.random((500, 3)) < 0.5, -1, 1).astype(dtype)
    f = {"set": lambda x, i, u: x.at[i].set(u), "min": lambda x, i, u: x.at[i].min(u),
         "max": lambda x, i, u: x.at[i].max(u), "mul": lambda x, i, u: x.at[i].multiply(u),
         "apply": lambda x, i, u: x.at[i].apply(lambda v: v * 2 - 1) + u[:40]}[op]
    plan = check(f, x, idx, upd, exact=True)   # products of +-1 and apply's 2v-1 round exactly
    (k,) = [k for k in plan.kernels if isinstance(k, ScatterKernel)]
    assert render.scatter_variant(k) == ("owner" if op == "set" else "cas")
    rk = render.render(k)
    assert rk.global_size <= max(256, math.ceil(500 * 3 / 256) * 256)   # threads follow the updates


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64", "int16"])
@pytest.mark.parametrize("combiner", ["set", "min", "max", "mul", "sub"])
def test_scatter_kernels_of_every_width(run_kernel, dtype, combiner):
    """The compare-and-swap word and ownership variants on 16- and 64-bit elements."""
    operand = (rng.standard_normal(9) * 1000).astype(dtype)
    idx = rng.integers(-2, 11, (300, 1)).astype(np.int32)
    upd = (rng.standard_normal(300) * 1000).astype(dtype)
    if combiner == "mul":
        upd = np.where(rng.random(300) < 0.5, -1, 1).astype(dtype)
    k = ScatterKernel("k_w", dtype, "int32", (9,), (300,), (300, 1), (), (0,), (0,), combiner,
                      "drop", True)
    got = run_kernel(k, {"updates": upd, "indices": idx}, {"out": operand.copy()})["out"]
    want = operand.copy()
    with np.errstate(over="ignore"):
        for (i,), u in zip(idx, upd):
            if 0 <= i < 9:
                a = want[i]
                want[i] = {"set": u, "min": min(a, u), "max": max(a, u), "mul": a * u,
                           "sub": a - u}[combiner]
    assert got.dtype == want.dtype
    if combiner == "sub" and dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def test_set_keeps_the_last_update_in_order():
    x = np.zeros(4, np.float32)
    idx = np.array([1, 2, 1, 1, 2, 3, 1], np.int32)
    upd = np.arange(1, 8, dtype=np.float32)
    (got,), _ = run_kernels(lambda x, i, u: x.at[i].set(u), x, idx, upd)
    np.testing.assert_array_equal(got, np.array([0, 7, 5, 6], np.float32))
    # the NumPy backend (and JAX on the CPU) agree
    np.testing.assert_array_equal(np.asarray(gpuarr.jit(lambda x, i, u: x.at[i].set(u))(x, idx, upd)), got)


def test_scatter_plans_launch_per_update_not_per_operand_element():
    closed = gpuarr.make_jaxpr(lambda x, i, u: x.at[i].max(u))(
        np.zeros((1 << 22,), np.float32), np.zeros(64, np.int32), np.zeros(64, np.float32))
    launch_plan = render.render_plan(plan_closed(closed))
    (launch,) = [s for s in launch_plan.steps if s.kind == "launch" and "scatter" in s.name]
    assert launch.global_size == 256
    closed = gpuarr.make_jaxpr(lambda x, i, u: x.at[i].set(u))(
        np.zeros((1 << 22,), np.float32), np.zeros(64, np.int32), np.zeros(64, np.float32))
    launches = [s for s in render.render_plan(plan_closed(closed)).steps
                if s.kind == "launch" and "scatter" in s.name]
    assert [s.global_size for s in launches] == [render.MAX_GLOBAL_SIZE, 256, 256]   # init, claim, set


# ---- kernel parameter counts -------------------------------------------------------------------

@pytest.mark.slow
def test_concatenate_of_5000_arrays_stays_under_the_parameter_cap():
    from gpuarr.compiler.plan import MAX_KERNEL_ARGS
    xs = [rng.standard_normal(3).astype(np.float32) for _ in range(5000)]
    plan = check(lambda *xs: jnp.concatenate(xs) * 2.0, *xs)
    assert len(plan.kernels) >= 5000 // MAX_KERNEL_ARGS
    for k in plan.kernels:
        assert len(k.args) <= MAX_KERNEL_ARGS
        rk = render.render(k)
        head = rk.source[rk.source.index(f"KERNEL void {rk.name}("):]
        assert head[:head.index(")")].count("*") == len(k.args)


def test_concatenate_pieces_along_an_inner_axis():
    xs = [rng.standard_normal((2, i % 3)).astype(np.float32) for i in range(150)]
    check(lambda *xs: jnp.concatenate(xs, axis=1), *xs, exact=True)


# ---- reductions fill the device ----------------------------------------------------------------

def _blocks(f, shape, dtype=np.float32):
    closed = gpuarr.make_jaxpr(f)(gpuarr.ShapeDtypeStruct(shape, dtype))
    return [s.global_size // s.local_size for s in render.render_plan(plan_closed(closed)).steps
            if s.kind == "launch"]


@pytest.mark.parametrize("f, shape", [
    (lambda x: jnp.sum(x, axis=0), (16384, 16384)),        # column: was 64 blocks
    (lambda x: jnp.max(x, axis=1), (16, 1 << 20)),         # row: was 16 blocks
    (lambda x: jnp.sum(x), (1 << 26,)),                     # full: two passes already
    (lambda x: jnp.mean(x, axis=0), (4096, 8192)),
])
def test_large_reductions_launch_enough_blocks(f, shape):
    assert max(_blocks(f, shape)) >= 0.95 * 2 * 132


@pytest.mark.parametrize("f, shape", [
    (lambda x: jnp.sum(x, axis=0), (3000, 300)),
    (lambda x: jnp.mean(x, axis=0) * 2.0, (1000, 517)),
    (lambda x: jnp.max(jnp.exp(x), axis=1), (5, 70001)),
    (lambda x: jnp.min(x, axis=(0, 2)), (300, 40, 9)),
    (lambda x: jnp.sum(x[:, ::-1].T, axis=1), (2001, 129)),
])
def test_split_reductions_match_numpy_backend(f, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    # Sums of up to 3,000 float32 terms round differently when split: absolute error ~1e-4.
    plan = check(f, x, rtol=1e-4, atol=1e-3)
    assert any(getattr(k, "split", 0) for k in plan.kernels)


@pytest.mark.parametrize("f, shape", [
    (lambda x: jnp.argmax(x, axis=1), (16, 1 << 20)),
    (lambda x: jnp.argmin(x, axis=0), (16384, 4096)),
    (lambda x: jnp.argmax(x), (1 << 24,)),
])
def test_large_arg_reductions_launch_enough_blocks(f, shape):
    assert max(_blocks(f, shape)) >= 0.95 * 2 * 132


@pytest.mark.parametrize("f, shape", [
    (lambda x: jnp.argmax(x, axis=1), (7, 20001)),
    (lambda x: jnp.argmin(x, axis=0), (5000, 300)),
    (lambda x: jnp.argmax(x), (300007,)),
    (lambda x: jnp.argmin(jnp.abs(x), axis=1), (3, 30000, 2)),
])
@pytest.mark.parametrize("ties", [False, True])
def test_split_arg_reductions_match_numpy_backend(f, shape, ties):
    """Ties (rounded values, repeated extremes) go to the lower index across chunks too."""
    x = rng.standard_normal(shape).astype(np.float32)
    if ties:
        x = np.round(x).clip(-2, 2)
        x.reshape(-1)[::997] = np.nan if shape[0] == 300007 else x.reshape(-1)[::997]
    plan = check(f, x)
    assert any(getattr(k, "split", 0) for k in plan.kernels)
