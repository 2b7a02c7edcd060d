"""Runs of large elementwise steps in the NumPy backend's generated code go block by block:
one function loops over cache-sized blocks of the flat index range (on the shared threads),
intermediates read only inside the run live in per-block buffers, and values read later get
full-size buffers. Results must equal the step-by-step evaluation bit for bit."""
import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends import host_threads
from gpuarr.backends.numpy import codegen
from gpuarr.compiler import passes

pytestmark = pytest.mark.numpy_backend

BIG = (1030, 300)  # over the run size set below, and not a multiple of the block size


@pytest.fixture(autouse=True)
def small_runs(monkeypatch):
    # Runs start at 2**21 elements; smaller thresholds and blocks keep these tests quick while
    # exercising many blocks, a short last block and both threads.
    monkeypatch.setattr(codegen, "_RUN_MIN_SIZE", 1 << 18)
    monkeypatch.setattr(host_threads, "CACHE_BLOCK", 1 << 12)
    monkeypatch.setattr(host_threads, "_policy",
                        host_threads.ThreadPolicy(((1 << 15, 2),), 1 << 12))
    monkeypatch.setattr(codegen, "_RUN_PART", 1 << 15)


def source(fun, *args):
    return codegen.source_of(passes.optimize(jax.jit(fun).trace(*args).jaxpr))


def step_by_step(fun, *args):
    """`fun` evaluated eagerly, one NumPy call per primitive."""
    with jax.disable_jit():
        return fun(*args)


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_chain_with_escaping_intermediate_and_scalars():
    rng = np.random.default_rng(0)
    x = rng.normal(size=BIG).astype(np.float32)
    y = rng.normal(size=BIG).astype(np.float32)

    def f(x, y, s):
        a = jnp.sin(x) * y + 0.5     # `a` is also an output
        b = jnp.exp(a - s)           # s: a 0-d operand
        return a, jnp.maximum(b, x) / (1.0 + jnp.abs(y))

    s = np.float32(0.25)
    before = x.copy(), y.copy()
    src = source(f, x, y, s)
    assert "run_in_passes" in src and "split_" not in src, src
    assert "for s in range(lo, hi, step):" in src, src  # run_in_passes sets the block rows
    # sin and exp make the passes costly: they stay cache-sized on several threads.
    assert ", True)" in next(ln for ln in src.splitlines() if "run_in_passes" in ln), src
    got = jax.jit(f)(x, y, s)
    for g, w in zip(got, step_by_step(f, x, y, s)):
        assert_same(g, w)
    np.testing.assert_array_equal(x, before[0])  # inputs are never written
    np.testing.assert_array_equal(y, before[1])


def test_integer_bit_ops_and_bitcast_view():
    # The tail of `uniform`: xor, constant shifts and a bitcast to float32 inside the run.
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**32, size=(1 << 19,), dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, size=(1 << 19,), dtype=np.uint64).astype(np.uint32)

    def f(a, b):
        bits = lax.shift_right_logical(lax.bitwise_xor(a, b), np.uint32(9))
        floats = lax.bitcast_convert_type(lax.bitwise_or(bits, np.uint32(0x3F800000)),
                                          np.float32)
        return floats - np.float32(1), lax.shift_left(a, np.uint32(3))

    src = source(f, a, b)
    assert ".view(" in src and "run_in_passes" in src, src
    # Cheap bit operations: on several threads the passes take the policy's length.
    assert ", False)" in next(ln for ln in src.splitlines() if "run_in_passes" in ln), src
    got = jax.jit(f)(a, b)
    want = ((((a ^ b) >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1),
            a << np.uint32(3))
    for g, w in zip(got, want):
        assert_same(g, w)


def test_escaping_view_ends_the_run():
    # A bitcast read after the run has no buffer of its own: the run stops before it.
    x = np.random.default_rng(2).integers(0, 1 << 20, size=(1 << 19,)).astype(np.int32)

    def f(x):
        y = lax.bitcast_convert_type(x + 1, np.float32)
        return y, jnp.sqrt(jnp.abs(y)) * 2.0

    got = jax.jit(f)(x)
    for g, w in zip(got, step_by_step(f, x)):
        assert_same(g, w)


def test_broadcast_and_transposed_operands_are_sliced_in_place():
    # A row broadcast to the full shape (a stride-0 view) and a transposed input: blocks are
    # slices of their leading axis, so neither is copied, and both read right.
    rng = np.random.default_rng(3)
    x = rng.normal(size=BIG).astype(np.float32)
    xt = rng.normal(size=BIG[::-1]).astype(np.float32)
    row = rng.normal(size=BIG[1:]).astype(np.float32)

    def f(x, xt, row):  # sin runs in blocks as a ufunc (float32 tanh is no ufunc)
        return jnp.sin(x * row) + row - xt.T

    src = source(f, x, xt, row)
    assert "run_in_passes" in src and "reshape" not in src, src
    assert_same(jax.jit(f)(x, xt, row), step_by_step(f, x, xt, row))


def test_operands_with_unit_axes_broadcast_against_each_block():
    # lax broadcasts size-1 axes: a [1, n] row is read whole by every block, an [m, 1] column
    # sliced with the blocks.
    rng = np.random.default_rng(4)
    x = rng.normal(size=BIG).astype(np.float32)
    row = rng.normal(size=(1, BIG[1])).astype(np.float32)
    col = rng.normal(size=(BIG[0], 1)).astype(np.float32)

    def f(x, row, col):
        return lax.mul(jnp.tanh(lax.add(x, row)), col) - 1.0

    src = source(f, x, row, col)
    assert "run_in_passes" in src, src
    assert_same(jax.jit(f)(x, row, col), step_by_step(f, x, row, col))
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x, row, col)),
                               np.tanh(x + row) * col - 1, rtol=1e-6, atol=1e-6)


def test_operands_that_broadcast_inside_the_step_stay_step_by_step():
    rng = np.random.default_rng(5)
    x = rng.normal(size=BIG).astype(np.float32)
    col = rng.normal(size=(BIG[0], 1)).astype(np.float32)

    def f(x, col):
        return lax.add(x, lax.broadcast_in_dim(col, BIG, (0, 1)))

    assert_same(jax.jit(f)(x, col), step_by_step(f, x, col))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_other_dtypes(dtype):
    rng = np.random.default_rng(4)
    x = (rng.normal(size=BIG) * 100).astype(dtype)
    y = (rng.normal(size=BIG) * 100).astype(dtype)

    def f(x, y):
        if dtype == np.bool_:
            return (x & ~y) | (y ^ x)
        return jnp.maximum(x, y) - jnp.minimum(x * 2, y)

    assert_same(jax.jit(f)(x, y), step_by_step(f, x, y))


def test_block_kernel_joins_the_run():
    # XLA's float32 erf_inv (normal's sampler) is not a ufunc but takes blocks in the run.
    from gpuarr.random.xla_math import erf_inv_giles
    x = np.random.default_rng(3).uniform(-1, 1, BIG).astype(np.float32)

    def f(x):
        return erf_inv_giles(x * np.float32(0.5) + np.float32(0.25)) * np.float32(1.5)
    src = source(f, x)
    assert "f_erf_inv_giles" in src and "for s in range" in src
    assert_same(jax.jit(f)(x), step_by_step(f, x))


@pytest.mark.parametrize("shape", [(1 << 19,), (1030, 300)], ids=str)
def test_random_bits_are_drawn_in_the_run(shape):
    # Threefry's two outputs are block kernel results, and a 1-D iota (the counters) is each
    # block's index range: neither the counters nor the raw words get full-size buffers.
    from gpuarr import random
    key = random.key(7)

    def f(key):
        return random.uniform(key, shape, minval=-2.0, maxval=3.0)
    src = source(f, key)
    run = src[src.index("def run"):]
    assert "f_threefry2x32" in run and "for s in range" in run
    if len(shape) == 1:
        assert "arange" in run and "f_iota" not in src
    assert_same(jax.jit(f)(key), step_by_step(f, key))


def test_keys_of_their_own_per_element():
    # Per-element keys (split's counters under vmap, say) are blocks of the run too.
    from gpuarr import prng
    rng = np.random.default_rng(5)
    k1, k2, x1, x2 = (rng.integers(0, 2 ** 32, 1 << 19, dtype=np.uint32) for _ in range(4))

    def f(k1, k2, x1, x2):
        a, b = prng.threefry2x32(k1, k2, x1, x2)
        return a ^ b, b + np.uint32(1)
    assert "f_threefry2x32" in source(f, k1, k2, x1, x2).split("def run")[1]
    for got, want in zip(jax.jit(f)(k1, k2, x1, x2), step_by_step(f, k1, k2, x1, x2)):
        assert_same(got, want)
