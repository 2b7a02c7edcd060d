"""Short floating-point sums add in XLA's CPU order: up to 32 elements per output one after the
other from +0.0, in row-major order of the reduced indices (operands below 4096 elements).
gpuarr's sums must then equal JAX's bit for bit, eagerly and under jit, on every cpu backend
(native kernels and GPUARR_PLATFORMS=cpu's NumPy backend). chex's numerical gradient check of
a float32 sum of 15 elements near 150 depends on the last bit of two such sums."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr.lax.shape_ops import sum_in_order

jax = pytest.importorskip("jax")

# (shape, axes): full sums of vectors and of matrices whose rows XLA does not vectorise, and
# axis sums of small matrices. docs/ecosystem.md lists the shapes XLA orders otherwise.
CASES = [((9,), None), ((15,), None), ((31,), None), ((32,), None), ((3, 5), None),
         ((5, 3), None), ((3, 7), None), ((2, 12), None), ((5, 6), None), ((40, 12), (1,)),
         ((12, 40), (0,)), ((3, 5, 2), (0, 1)), ((6, 5), (1,))]


def _draws(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((64,) + shape) * 100).astype(dtype)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("shape,axes", CASES, ids=[f"{s}-{a}" for s, a in CASES])
def test_a_short_float32_sum_equals_jax_bit_for_bit(shape, axes, jit):
    xs = _draws(shape, np.float32, len(shape) * 100 + shape[-1])

    def total(np_module):
        return lambda x: np_module.sum(x, axis=axes)
    ours = gpuarr.jit(total(gnp)) if jit else total(gnp)
    theirs = jax.jit(total(jax.numpy))
    for x in xs:
        got, want = np.asarray(ours(x)), np.asarray(theirs(x))
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(got, want)


def test_a_short_complex64_sum_equals_jax():
    xs = _draws((3, 5), np.float32, 7) + 1j * _draws((3, 5), np.float32, 8)
    for x in xs.astype(np.complex64)[:16]:
        want = np.asarray(jax.jit(jax.numpy.sum)(x))
        got = np.asarray(gnp.sum(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_sum_of_negative_zeros_is_positive_zero_as_in_xla():
    x = np.full((3, 5), -0.0, np.float32)
    for out in (gnp.sum(x), gpuarr.jit(gnp.sum)(x), sum_in_order(x, (0, 1))):
        assert not np.signbit(np.asarray(out))
    assert not np.signbit(np.asarray(jax.numpy.sum(x)))


def test_the_order_is_sequential_not_pairwise():
    # 1 + 2**-24 * 8 ones: adding the small terms to 1 one at a time loses each of them (ties to
    # even), NumPy's eight partial sums keep them.
    x = np.array([1.0] + [2.0 ** -24] * 15, np.float32)
    assert float(sum_in_order(x, (0,))) == 1.0
    assert float(np.asarray(gnp.sum(x))) == float(np.asarray(jax.numpy.sum(x))) == 1.0
    assert float(np.add.reduce(x)) > 1.0
