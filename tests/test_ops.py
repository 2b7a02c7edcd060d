"""gpuarr.ops segment reductions against jax.ops: values, dtypes, empty segments, ids out of
range under each mode, buckets, trailing dimensions, jit (with num_segments), vmap, gradients
and JAX's errors."""
import numpy as np
import pytest

import gpuarr
from gpuarr import ops

jax = pytest.importorskip("jax")
jops = jax.ops
NAMES = ["segment_sum", "segment_max", "segment_min", "segment_prod"]


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.bool_])
def test_values_match_jax(name, dtype):
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((7, 3)) * 3).astype(dtype)
    ids = np.array([0, 0, 2, 5, 2, 5, 1])
    if dtype == np.bool_ and name in ("segment_sum", "segment_prod"):
        with pytest.raises(TypeError, match="does not accept dtype bool"):
            getattr(ops, name)(data, ids)
        return
    for kwargs in ({}, {"num_segments": 7}, {"num_segments": 3}, {"indices_are_sorted": True}):
        same(getattr(ops, name)(data, ids, **kwargs), getattr(jops, name)(data, ids, **kwargs))


@pytest.mark.parametrize("name", NAMES)
def test_modes_and_buckets_match_jax(name):
    data = np.arange(1, 7, dtype=np.float32)
    ids = np.array([0, -1, 1, 7, 3, 3])
    for kwargs in ({}, {"mode": "clip"}, {"mode": "drop"}, {"mode": "promise_in_bounds"}):
        if kwargs.get("mode") == "promise_in_bounds":
            ids = np.array([0, 2, 1, 3, 3, 3])
        same(getattr(ops, name)(data, ids, num_segments=4, **kwargs),
             getattr(jops, name)(data, ids, num_segments=4, **kwargs))
    ids = np.array([0, 0, 1, 3, 3, 3])
    same(getattr(ops, name)(data, ids, bucket_size=4), getattr(jops, name)(data, ids,
                                                                           bucket_size=4))


@pytest.mark.parametrize("name", NAMES)
def test_transformations_match_jax(name):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([0, 1, 1, 3, 0, 3])

    def f(api_ops):
        return lambda d, s: getattr(api_ops, name)(d, s, num_segments=4)
    same(gpuarr.jit(f(ops))(data, ids), jax.jit(f(jops))(data, ids))
    batch = rng.standard_normal((3, 6, 2)).astype(np.float32)
    same(gpuarr.vmap(f(ops), in_axes=(0, None))(batch, ids),
         jax.vmap(f(jops), in_axes=(0, None))(batch, ids))

    def loss(api, api_ops):
        return lambda d: (f(api_ops)(d, ids) ** 2).sum()
    if name == "segment_prod":  # scatter_mul with repeated ids has no gradient in JAX either
        with pytest.raises(NotImplementedError, match="unique_indices=True"):
            gpuarr.grad(loss(gpuarr, ops))(data)
        return
    same(gpuarr.grad(loss(gpuarr, ops))(data), jax.grad(loss(jax, jops))(data))


def test_errors_match_jax():
    data, ids = np.arange(4.0), np.array([0, 1, 1, 2])
    with pytest.raises(gpuarr.errors.ConcretizationTypeError, match="num_segments"):
        gpuarr.jit(ops.segment_sum)(data, ids)
    with pytest.raises(ValueError, match="num_segments must be non-negative"):
        ops.segment_sum(data, ids, num_segments=-1)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        ops.segment_sum([1.0, 2.0], ids[:2])
    with pytest.raises(ValueError, match="one segment id per row"):
        ops.segment_sum(data, ids[:3])
    with pytest.raises(ValueError, match="zero-size array"):
        ops.segment_sum(np.ones(0), np.zeros(0, np.int32))
