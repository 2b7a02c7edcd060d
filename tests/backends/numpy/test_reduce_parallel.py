"""Reductions of at least 2^20 elements split their leading axis between two threads. When
that axis is kept, every output element must equal one NumPy call's exactly; when it is
reduced, two partial results are combined: max/min stay exact and sums agree to rounding."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

# The split between two host threads is the NumPy backend's; kernels split reductions their own
# way (tests/kernels/test_kernel_limits.py compares them with this backend).
pytestmark = pytest.mark.numpy_backend

REDUCERS = [(jnp.sum, np.sum), (jnp.max, np.max), (jnp.min, np.min), (jnp.prod, np.prod)]
CASES = [((1024, 1024), 0), ((1024, 1024), 1), ((4, 512, 600), (0, 2)), ((2048, 600), (1,)),
         ((2 ** 20, 1), 0), ((1, 2 ** 20), 1), ((2, 2 ** 19), (0,))]


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("ours,ref", REDUCERS, ids=lambda f: getattr(f, "__name__", ""))
def test_split_reductions_match_numpy(shape, axis, ours, ref):
    x = np.random.default_rng(0).uniform(0.999, 1.001, size=shape).astype(np.float32)
    got = np.asarray(gpuarr.jit(lambda v: ours(v, axis=axis))(x))
    want = ref(x, axis=axis)
    assert got.shape == want.shape and got.dtype == want.dtype
    leading_reduced = 0 in np.atleast_1d(axis) and shape[0] > 1
    if leading_reduced and ours in (jnp.sum, jnp.prod):
        # float32 accumulation over 2^20 terms: compare with the float64 result loosely
        np.testing.assert_allclose(got, ref(x.astype(np.float64), axis=axis), rtol=3e-4)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(1024, 1024), (3, 2 ** 19)])
def test_full_reduction_combines_halves(shape):
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    got = np.asarray(gpuarr.jit(jnp.sum)(x))
    assert got.shape == () and got.dtype == np.float32
    np.testing.assert_allclose(got, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)
    assert np.asarray(gpuarr.jit(jnp.max)(x)) == x.max()
