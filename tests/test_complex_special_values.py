"""Complex sqrt, arccos, arccosh, arcsinh, arctanh and sign on IEEE special inputs (signed
zeros, infinities and NaN in each part, huge and tiny finite parts, the branch cuts), compared
with JAX eagerly and under jit in complex64 and complex128: the same dtype, NaN in the same
parts, the same signs of zeros and infinities, and finite parts equal to a few ulps (exactly
for sqrt and sign; the others call log1p and atan2, which XLA rounds with its own
polynomials). Under GPUARR_PLATFORMS=opencl/native/cuda the same tests check the kernel
platforms. docs/arithmetic.md lists where JAX differs from C99's Annex G here."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

PARTS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1e-30, -1e-30,
         1e30, -1e30, 3e38, -3e38, 1e300, -1e300, 1e-300, 1e-20, 5e19, -7.25]
FUNCTIONS = ["sqrt", "arccos", "arccosh", "arcsinh", "arctanh", "sign"]
EXACT = {"sqrt", "sign"}


def _grid(dtype):
    real = np.finfo(dtype).dtype.type
    with np.errstate(over="ignore"):
        parts = np.array(PARTS, np.float64).astype(real)
    re, im = np.meshgrid(parts, parts, indexing="ij")
    out = np.empty(re.size, dtype)
    out.real, out.imag = re.ravel(), im.ravel()
    return out


def _random(dtype, n=500):
    rng = np.random.default_rng(7)
    scale = 10.0 ** rng.integers(-6, 7, (2, n))
    out = np.empty(n, dtype)
    out.real, out.imag = rng.standard_normal(n) * scale[0], rng.standard_normal(n) * scale[1]
    return out


def _check_parts(got, want, x, ulps):
    for part in ("real", "imag"):
        g, w = getattr(got, part), getattr(want, part)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        bad = nan_g != nan_w
        both = ~nan_g & ~nan_w
        bad |= both & (np.signbit(g) != np.signbit(w))
        bad |= both & (np.isinf(g) != np.isinf(w))
        finite = both & np.isfinite(g) & np.isfinite(w)
        spacing = np.abs(np.spacing(w.astype(g.dtype)))
        with np.errstate(invalid="ignore", over="ignore"):
            bad |= finite & (np.abs(g - w) > ulps * spacing)
        assert not bad.any(), (
            f"{part} parts differ at {x[bad][:5]}: gpuarr {g[bad][:5]}, JAX {w[bad][:5]}")


@pytest.fixture
def x64():
    """64-bit types on, here and in JAX, for one test: both flags are put back after it."""
    old = (bool(gpuarr.config.jax_enable_x64), bool(jax.config.jax_enable_x64))
    gpuarr.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        gpuarr.config.update("jax_enable_x64", old[0])
        jax.config.update("jax_enable_x64", old[1])


@pytest.mark.parametrize("inputs", ["special", "random"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["complex64", "complex128"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_matches_jax(name, dtype, jit, inputs, x64):
    x = _grid(dtype) if inputs == "special" else _random(dtype)
    ours, theirs = getattr(jnp, name), getattr(jjnp, name)
    if jit:
        ours, theirs = gpuarr.jit(ours), jax.jit(theirs)
    want = np.asarray(theirs(x))
    got = ours(x)
    assert got.dtype == want.dtype
    got = np.asarray(got)
    assert got.shape == want.shape
    _check_parts(got, want, x, 0 if name in EXACT else 4)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_scalars_and_0d(name, x64):
    """A 0-d complex operand and a Python complex go through the same expansion."""
    for value in (complex(-1.0, -0.0), complex(np.inf, np.nan), complex(-0.0, np.inf)):
        want = np.asarray(getattr(jjnp, name)(value))
        got = getattr(jnp, name)(value)
        assert got.dtype == want.dtype and got.shape == want.shape == ()
        _check_parts(np.asarray(got)[None], want[None], np.array([value]),
                     0 if name in EXACT else 4)


def test_real_sign_of_zeros_and_nan():
    x = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 2.5, -3.0], np.float32)
    for jit in (False, True):
        ours, theirs = (gpuarr.jit(jnp.sign), jax.jit(jjnp.sign)) if jit else (jnp.sign, jjnp.sign)
        got, want = np.asarray(ours(x)), np.asarray(theirs(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


def test_gradients_at_finite_points_match_jax(x64):
    """The derivatives (JVP rules of the primitives) are unchanged by the complex expansion."""
    z = np.array([0.3 + 0.4j, -2.0 + 1.5j, 1.5 - 0.25j], np.complex128)
    for name in ("sqrt", "arccos", "arccosh", "arcsinh", "arctanh"):
        got = gpuarr.jvp(getattr(jnp, name), (z,), (np.ones_like(z),))
        want = jax.jvp(getattr(jjnp, name), (z,), (np.ones_like(z),))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
