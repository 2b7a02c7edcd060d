"""`gpuarr.random.xla_math.xla_fma`: a * b + c rounded once, as XLA's CPU backend fuses the
samplers' multiply-adds."""
import numpy as np
import pytest

import gpuarr
from gpuarr.random.xla_math import xla_fma


@pytest.mark.parametrize("dtype,eps", [(np.float32, 2.0 ** -12), (np.float64, 2.0 ** -27)])
def test_rounds_once(dtype, eps):
    # (1 + eps)^2 = 1 + 2 eps + eps^2: the plain product rounds eps^2 away, the fused one keeps it.
    a = np.array([1 + eps, 2.0], dtype)
    c = np.array([-(1 + 2 * eps), 1.0], dtype)
    plain = a * a + c
    assert plain[0] == 0
    for fn in (xla_fma, gpuarr.jit(xla_fma)):
        with gpuarr.enable_x64(dtype == np.float64):
            out = np.asarray(fn(a, a, c))
        assert out.dtype == dtype and out.shape == (2,)
        np.testing.assert_array_equal(out, [eps * eps, 5.0])


def test_overflowing_product_gives_the_plain_result():
    big = np.array([1e300, 2.0])
    with gpuarr.enable_x64():
        out = np.asarray(xla_fma(big, big, np.array([1.0, 1.0])))
    assert out[0] == np.inf and out[1] == 5.0


def test_scalars_broadcasting_weak_types_and_errors():
    x = np.float32([1.0, 2.0, 3.0])
    out = xla_fma(x, 2.0, 1.0)
    assert out.dtype == np.float32 and not out.weak_type
    np.testing.assert_array_equal(out, [3.0, 5.0, 7.0])
    assert xla_fma(1.0, 2.0, 3.0).weak_type
    np.testing.assert_array_equal(xla_fma(x[:, None], x[None], 0.0), np.outer(x, x))
    with pytest.raises(TypeError, match="Accepted dtypes are subtypes of floating"):
        xla_fma(np.arange(3), 1, 1)
    with pytest.raises(TypeError):
        xla_fma(x, np.float16([1.0, 2.0, 3.0]), 1.0)


def test_gradients():
    a, b, c = np.float32(1.5), np.float32([2.0, 3.0]), np.float32(0.5)
    ga, gb, gc = gpuarr.grad(lambda a, b, c: xla_fma(a, b, c).sum(), argnums=(0, 1, 2))(a, b, c)
    np.testing.assert_allclose([ga, gc], [5.0, 2.0])
    np.testing.assert_allclose(gb, [1.5, 1.5])
