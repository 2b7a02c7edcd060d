"""Non-temporal stores on the native platform: elementwise launches moving at least
render.STREAM_MIN_BYTES write their outputs through tiles copied out with streaming stores
(STREAM_TILES, kernels/dialect_c.h). Each streamed program is compared with the same program
built with ordinary stores (bit for bit), with the NumPy backend and with NumPy, at sizes
around the threshold, with tails that end mid-tile and mid-vector, on one and several
threads, into outputs at every alignment."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.backends import native
from gpuarr.compiler import render
from gpuarr.platforms import get_platform
from tests.jax_compare import assert_same_results as assert_same


@pytest.fixture
def plat(native_platform):
    return native_platform


def run_both(plat, f, *args):
    """(native results, NumPy backend results) of jit(f) on the same optimized Program."""
    closed = gpuarr.make_jaxpr(f)(*args)
    got = plat.compile(closed)(*[np.asarray(a) for a in args])
    want = get_platform("cpu").compile_numpy(closed)(*[np.asarray(a) for a in args])
    return got, want


def sources(plat, f, *args) -> str:
    """The kernel text of every launch of jit(f) on the native platform."""
    run = plat.compile(gpuarr.make_jaxpr(f)(*args))
    return "".join(kernel_text(s.source) for s in run.launch_plan.steps if s.kind == "launch")


def kernel_text(source: str) -> str:
    """`source` without the prelude (whose dialect header defines the STREAM_ macros)."""
    prelude = render.prelude("c")
    assert source.startswith(prelude)
    return source[len(prelude):]


def streamed_and_ordinary(plat, monkeypatch, f, *args):
    """(results with every launch streamed, results with ordinary stores, NumPy backend's)."""
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 0)
    assert "STREAM_TILES(" in sources(plat, f, *args)
    streamed, want = run_both(plat, f, *args)
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 1 << 62)
    ordinary, _ = run_both(plat, f, *args)
    return streamed, ordinary, want


def assert_identical(got, want):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def test_the_threshold_counts_the_launch_bytes(plat, monkeypatch):
    # x * 2 + 1 over n float32 moves 8 n bytes: streamed from 8000 bytes on, at n = 1000.
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 8000)
    for n, streamed in ((999, False), (1000, True), (1001, True)):
        x = np.arange(n, dtype=np.float32)
        text = sources(plat, lambda x: x * 2.0 + 1.0, x)
        assert ("STREAM_TILE(f32, out" in text) is streamed, n
        got, want = run_both(plat, lambda x: x * 2.0 + 1.0, x)
        assert_same(got, want, rtol=0, atol=0)
        np.testing.assert_array_equal(np.asarray(got[0]), x * np.float32(2) + np.float32(1))


def test_the_gpu_dialect_never_streams(monkeypatch):
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 0)
    from gpuarr.compiler.plan import Arg, ElementwiseKernel, IndexMap, Load, Op, Store, View
    view = IndexMap((View((256,), (1,), 0),))
    k = ElementwiseKernel("k", (256,), (Arg("x", "float32", 256), Arg("y", "float32", 256, True)),
                          (Load("x", view, "float32"), Op("neg", (0,), "float32")),
                          (Store("y", 1),))
    assert "STREAM_TILES(" in kernel_text(render.render(k, "c").source)
    assert "STREAM_TILES(" not in render.render(k, "gpu").source


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
@pytest.mark.parametrize("n", [1, 63, 64, 127, 128, 129, 255, 1000, 4096 + 17])
def test_streamed_outputs_of_every_vec4_dtype_match_ordinary_stores(plat, monkeypatch, dtype, n):
    rng = np.random.default_rng(n)
    x = rng.integers(-1000, 1000, n).astype(dtype)
    y = rng.integers(1, 1000, n).astype(dtype)

    def f(x, y):
        return x * y + x, (x ^ y if x.dtype.kind in "iu" else x - y)
    streamed, ordinary, want = streamed_and_ordinary(plat, monkeypatch, f, x, y)
    assert_identical(streamed, ordinary)
    assert_same(streamed, want, rtol=0, atol=0)
    if dtype == "float32":
        np.testing.assert_allclose(np.asarray(streamed[0]),
                                   x.astype(np.float64) * y + x, rtol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(streamed[1]), x ^ y)


@pytest.mark.parametrize("dtype", ["bool", "float16", "int8", "int16", "complex64"])
def test_streamed_outputs_of_other_dtypes_match_ordinary_stores(plat, monkeypatch, dtype):
    n = 3 * 128 + 5   # three whole tiles and a tail shorter than a vector
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(n) * 50).astype(dtype)

    def f(x):
        return x + x, x == x[::-1]
    streamed, ordinary, want = streamed_and_ordinary(plat, monkeypatch, f, x)
    assert_identical(streamed, ordinary)
    assert_same(streamed, want, rtol=0, atol=0)
    np.testing.assert_array_equal(np.asarray(streamed[1]), x == x[::-1])


def test_streamed_launches_split_over_threads(plat, monkeypatch):
    # Thread parts and tiles end mid-array.
    monkeypatch.setattr(native, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "3")
    n = (1 << 18) + 77
    rng = np.random.default_rng(2)
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))

    def f(x, y, z):
        return (jnp.sqrt(jnp.abs(jnp.tanh(x * 1.5 + y) * z - 0.5)),)
    streamed, ordinary, want = streamed_and_ordinary(plat, monkeypatch, f, x, y, z)
    assert_identical(streamed, ordinary)
    assert_same(streamed, want, rtol=1e-5, atol=1e-5)   # tanh: XLA's, not NumPy's
    oracle = np.sqrt(np.abs(np.tanh(x.astype(np.float64) * 1.5 + y) * z - 0.5))
    np.testing.assert_allclose(np.asarray(streamed[0]), oracle, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_streamed_outputs_at_every_alignment(plat, monkeypatch, threads):
    # The copy streams 64-, 32- or 16-byte vectors as the output's address allows, and writes
    # the rest (or all of an output aligned to less than 16 bytes) with ordinary stores.
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(native, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", threads)
    n = 5 * 128 + 3
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    run = plat.compile(gpuarr.make_jaxpr(lambda x: x * 2.0 + 1.0)(x))
    (step,) = [s for s in run.launch_plan.steps if s.kind == "launch"]
    assert "STREAM_TILE(f32, " in kernel_text(step.source)
    fn = native.entry(native.load(step.source), step.name)
    base = np.empty(n + 32, np.float32)
    for k in range(17):   # every offset modulo 64 bytes
        base[...] = np.nan
        out = base[k:k + n]
        native.launch(fn, native.pointers([x, out]), step.global_size, 8 * n)
        np.testing.assert_array_equal(out, x * np.float32(2) + np.float32(1))
        assert np.isnan(base[:k]).all() and np.isnan(base[k + n:]).all()


def test_only_outputs_written_in_order_and_never_read_are_streamed(plat, monkeypatch):
    monkeypatch.setattr(render, "STREAM_MIN_BYTES", 0)
    from gpuarr.compiler.plan import Arg, ElementwiseKernel, IndexMap, Load, Op, Store, View
    flat = IndexMap((View((16, 16), (16, 1), 0),))
    transposed = IndexMap((View((16, 16), (1, 16), 0),))
    args = (Arg("x", "float32", 256), Arg("y", "float32", 256, True))

    def kernel(store_index, load_arg="x"):
        return ElementwiseKernel("k", (16, 16), args,
                                 (Load(load_arg, flat, "float32"), Op("neg", (0,), "float32")),
                                 (Store("y", 1, store_index),))
    assert "STREAM_TILE(f32, y)" in kernel_text(render.render(kernel(None), "c").source)
    assert "STREAM_TILE(f32, y)" in kernel_text(render.render(kernel(flat), "c").source)
    assert "STREAM_TILES(" not in kernel_text(render.render(kernel(transposed), "c").source)
    assert "STREAM_TILES(" not in kernel_text(render.render(kernel(None, load_arg="y"), "c").source)
    # A transposed result through the whole path: right values either way.
    x = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
    got, want = run_both(plat, lambda x: (x * 2.0).T + 1.0, x)
    assert_same(got, want, rtol=0, atol=0)
    np.testing.assert_array_equal(np.asarray(got[0]), (x * 2 + 1).T)


def test_large_outputs_are_allocated_aligned():
    for shape, dtype in (((1 << 20,), np.float32), ((512, 1024), np.float64),
                         ((3, 5), np.int32), ((1 << 21,), np.bool_)):
        a = native.empty(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
        if a.nbytes >= native.ALIGNED_MIN_BYTES:
            assert a.ctypes.data % native.ALIGNMENT == 0
        a[...] = 1
        assert a.sum() == a.size
