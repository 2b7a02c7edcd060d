"""lax.fft and jnp.fft: values, shapes and dtypes against numpy.fft (float64 reference),
errors as JAX raises them, gradients by finite differences and against JAX, vmap against a
Python loop, and jit."""
import numpy as np
import pytest
from helpers import check_grads_x64
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.lax import FftType

RNG = np.random.default_rng(0)
NORMS = [None, "backward", "ortho", "forward"]


def real(*shape):
    return RNG.normal(size=shape)


def cplx(*shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


def single(x):
    """The float32/complex64 version of a float64/complex128 reference input."""
    return np.asarray(x, np.complex64 if np.iscomplexobj(x) else np.float32)


def assert_matches(out, ref, dtype, tol=2e-5):
    out = np.asarray(out)
    assert out.shape == ref.shape
    assert out.dtype == dtype
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)


# ---------------------------------------------------------------- jnp.fft against numpy.fft

# name -> (input maker, keyword cases); the output dtype follows from the function.
ONE_D = {
    "fft": (cplx, [{}, {"n": 5}, {"n": 9, "axis": 0}, {"axis": 1}]),
    "ifft": (cplx, [{}, {"n": 4}, {"n": 11, "axis": -2}]),
    "rfft": (real, [{}, {"n": 5}, {"n": 10, "axis": 0}, {"axis": 1}]),
    "irfft": (cplx, [{}, {"n": 7}, {"n": 8}, {"n": 3, "axis": 0}]),
    "hfft": (cplx, [{}, {"n": 9}, {"axis": 1}]),
    "ihfft": (real, [{}, {"n": 5}, {"n": 8, "axis": 0}]),
}
MULTI_D = {
    "fft2": (cplx, [{}, {"s": (3, 5)}, {"axes": (0, 2)}, {"s": (4, 2), "axes": (2, 1)}]),
    "ifft2": (cplx, [{}, {"s": (7, 2)}, {"axes": (1, 0)}]),
    "rfft2": (real, [{}, {"s": (3, 5)}, {"axes": (2, 0)}, {"s": (6, 7), "axes": (0, 1)}]),
    "irfft2": (cplx, [{}, {"s": (3, 7)}, {"s": (4, 4), "axes": (0, 2)}]),
    "fftn": (cplx, [{}, {"s": (3, 5)}, {"axes": (0,)}, {"s": (2, 3, 4), "axes": (2, 0, 1)}]),
    "ifftn": (cplx, [{}, {"s": (2, 3)}, {"axes": (1, 2)}]),
    "rfftn": (real, [{}, {"s": (5,)}, {"axes": (1, 0)}, {"s": (2, 5, 3), "axes": (0, 2, 1)}]),
    "irfftn": (cplx, [{}, {"s": (4, 5, 6)}, {"s": (3,), "axes": (1,)}, {"axes": (2, 0)}]),
}
REAL_OUT = {"irfft", "hfft", "irfft2", "irfftn"}


def _cases(table):
    return [(name, i, norm) for name, (_, kws) in table.items() for i in range(len(kws))
            for norm in NORMS]


def _check_against_numpy(table, name, i, norm, shape):
    make, kws = table[name]
    x = make(*shape)
    kw = dict(kws[i], norm=norm)
    if "s" in kw and "axes" not in kw:  # numpy >= 2 wants explicit axes with s
        kw["axes"] = tuple(range(len(shape) - len(kw["s"]), len(shape)))
    ref = getattr(np.fft, name)(x, **kw)
    out = getattr(jnp.fft, name)(single(x), **kw)
    assert_matches(out, ref, np.float32 if name in REAL_OUT else np.complex64)


@pytest.mark.parametrize("name,i,norm", _cases(ONE_D))
def test_one_dimensional_transforms_match_numpy(name, i, norm):
    _check_against_numpy(ONE_D, name, i, norm, (4, 6))


@pytest.mark.parametrize("name,i,norm", _cases(MULTI_D))
def test_multi_dimensional_transforms_match_numpy(name, i, norm):
    _check_against_numpy(MULTI_D, name, i, norm, (3, 5, 4))


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_more_than_three_axes_are_split(name):
    x = (cplx if name in ("ifftn", "irfftn") else real)(2, 3, 2, 4, 3)
    ref = getattr(np.fft, name)(x)
    out = getattr(jnp.fft, name)(single(x))
    assert_matches(out, ref, np.float32 if name == "irfftn" else np.complex64, tol=5e-5)
    prog = gpuarr.make_jaxpr(getattr(jnp.fft, name))(single(x))
    assert all(len(e.params["fft_lengths"]) <= 3 for e in prog.eqns if e.prim.name == "fft")


def test_float64_precision_under_x64():
    x, z = real(4, 6), cplx(3, 5)
    with gpuarr.enable_x64():
        for out, ref in [(jnp.fft.fft(z), np.fft.fft(z)), (jnp.fft.rfft(x), np.fft.rfft(x)),
                         (jnp.fft.irfft(z, 7), np.fft.irfft(z, 7)),
                         (jnp.fft.ifftn(z, norm="ortho"), np.fft.ifftn(z, norm="ortho"))]:
            assert out.dtype == ref.dtype
            np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-12)
        assert jnp.fft.fft(single(x)).dtype == np.complex64  # float32 stays single precision
        assert jnp.fft.fftfreq(4).dtype == np.float64


@pytest.mark.parametrize("dtype,out", [(np.int32, np.complex64), (np.bool_, np.complex64),
                                       (np.float16, np.complex64), (np.float32, np.complex64)])
def test_input_dtypes_are_promoted(dtype, out):
    x = np.arange(6).astype(dtype)
    assert jnp.fft.fft(x).dtype == out
    assert jnp.fft.ifft(x).dtype == out
    if dtype != np.float16:
        assert jnp.fft.rfft(x).dtype == np.complex64
        np.testing.assert_allclose(np.asarray(jnp.fft.rfft(x)), np.fft.rfft(x.astype(float)),
                                   atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
       kind=st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]),
       n=st.none() | st.integers(1, 9), axis=st.integers(-3, 2),
       norm=st.sampled_from(NORMS))
def test_random_one_dimensional_cases(shape, kind, n, axis, norm):
    axis = axis % len(shape)
    if kind in ("irfft", "hfft") and n is None and shape[axis] == 1:
        n = 2  # the default length 2 * (m - 1) is empty, which numpy rejects
    x = (real if kind in ("rfft", "ihfft") else cplx)(*shape)
    ref = getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm)
    out = getattr(jnp.fft, kind)(single(x), n=n, axis=axis, norm=norm)
    assert_matches(out, ref, np.float32 if kind in REAL_OUT else np.complex64)


# ---------------------------------------------------------------- frequencies and shifts


@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_fftfreq_and_rfftfreq(n, d):
    for name in ("fftfreq", "rfftfreq"):
        out = getattr(jnp.fft, name)(n, d)
        assert_matches(out, getattr(np.fft, name)(n, d), np.float32, tol=1e-6)


def test_frequency_dtypes_follow_jax():
    jax = pytest.importorskip("jax")
    for dtype in (np.int32, np.float32, np.complex64, np.float16):
        for name in ("fftfreq", "rfftfreq"):
            ours = getattr(jnp.fft, name)(5, 0.5, dtype=dtype)
            theirs = getattr(jax.numpy.fft, name)(5, 0.5, dtype=dtype)
            assert ours.dtype == theirs.dtype, (name, dtype)
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-3)


def test_fftfreq_with_a_traced_spacing():
    out = gpuarr.jit(lambda d: jnp.fft.fftfreq(6, d))(np.float32(0.5))
    assert_matches(out, np.fft.fftfreq(6, 0.5), np.float32, tol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, 1, (1,), (0, 1), [-1, 0]])
def test_fftshift_and_ifftshift(axes):
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    for name in ("fftshift", "ifftshift"):
        out = getattr(jnp.fft, name)(x, axes=axes)
        ref = getattr(np.fft, name)(x, axes=axes)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(out), ref)
    np.testing.assert_array_equal(np.asarray(jnp.fft.ifftshift(jnp.fft.fftshift(x))), x)


# ---------------------------------------------------------------- lax.fft


@pytest.mark.parametrize("typ", [FftType.FFT, "fft", "FFT", FftType.IFFT, "ifft",
                                 FftType.RFFT, "rfft", FftType.IRFFT, "IRFFT"])
def test_lax_fft_types_and_dtypes(typ):
    kind = typ.name if isinstance(typ, FftType) else typ.upper()
    x = cplx(2, 3, 6) if kind in ("FFT", "IFFT") else real(2, 3, 6)
    if kind == "FFT":
        out, ref, dt = lax.fft(single(x), typ, (3, 6)), np.fft.fftn(x, axes=(1, 2)), np.complex64
    elif kind == "IFFT":
        out, ref, dt = lax.fft(single(x), typ, (6,)), np.fft.ifft(x), np.complex64
    elif kind == "RFFT":
        out, ref, dt = lax.fft(single(x), typ, (3, 6)), np.fft.rfftn(x, axes=(1, 2)), np.complex64
    else:
        spec = np.fft.rfftn(x, axes=(1, 2))
        out = lax.fft(single(spec), typ, (3, 6))
        ref, dt = np.fft.irfftn(spec, s=(3, 6), axes=(1, 2)), np.float32
    assert_matches(out, ref, dt)


def test_lax_fft_odd_irfft_length_and_empty_lengths():
    spec = cplx(2, 4)  # 4 frequencies: lengths 6 and 7 both fit
    for n in (6, 7):
        assert_matches(lax.fft(single(spec), "irfft", (n,)), np.fft.irfft(spec, n), np.float32)
    x = np.arange(3, dtype=np.float32)
    out = lax.fft(x, "fft", ())
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(out), x)


def test_lax_fft_staged_program():
    prog = gpuarr.make_jaxpr(lambda x: lax.fft(x, "rfft", (4,)))(np.ones(4, np.float32))
    assert str(prog) == ("{ lambda ; a:f32[4]. let b:c64[3] = fft[fft_lengths=(4,) fft_type=2] a "
                         "in (b,) }")


LAX_ERRORS = [
    (lambda: lax.fft(np.ones(4, np.complex64), "fft", (5,)), ValueError, "minor dimensions"),
    (lambda: lax.fft(np.ones(4, np.complex64), "rfft", (4,)), ValueError, "only real valued"),
    (lambda: lax.fft(np.ones(4), "blah", (4,)), ValueError, "Unknown FFT type"),
    (lambda: lax.fft(np.ones(4), 3.0, (4,)), TypeError, "Unknown FFT type value"),
    (lambda: lax.fft(np.ones(4), "fft", (2, 2)), ValueError, "at least as many"),
    (lambda: lax.fft(np.ones(4, np.float16), "rfft", (4,)), ValueError, "float32 or float64"),
    (lambda: lax.fft(np.ones(5, np.complex64), "irfft", (4,)), ValueError, "IRFFT input shape"),
    (lambda: lax.fft(np.ones((2, 2, 2, 2)), "fft", (2, 2, 2, 2)), ValueError, "1 to 3"),
]


@pytest.mark.parametrize("i", range(len(LAX_ERRORS)))
def test_lax_fft_errors(i):
    fun, cls, msg = LAX_ERRORS[i]
    with pytest.raises(cls, match=msg):
        fun()


JNP_ERRORS = [
    (lambda: jnp.fft.rfft(np.ones(4, np.float16)), ValueError, "float32 or float64"),
    (lambda: jnp.fft.fft(np.ones(4), n=0), ValueError, "Shape should be positive"),
    (lambda: jnp.fft.fft(np.ones(4), norm="bad"), ValueError, "Invalid norm value bad"),
    (lambda: jnp.fft.fft(np.ones((2, 4)), axis=(0, 1)), ValueError, "Please use"),
    (lambda: jnp.fft.fftn(np.ones((2, 4)), axes=(0, 0)), ValueError, "repeated axes"),
    (lambda: jnp.fft.fft2(np.ones((2, 4)), axes=(0,)), ValueError, "only supports 2 axes"),
    (lambda: jnp.fft.fftn(np.ones((2, 4)), s=(2,), axes=(0, 1)), ValueError, "different lengths"),
    (lambda: jnp.fft.fftfreq([4]), ValueError, "only takes an int"),
    (lambda: jnp.fft.rfftfreq(4, [1.0]), ValueError, "only takes a single value"),
    (lambda: jnp.fft.fft(np.ones(4), axis=3), ValueError, "out of bounds"),
    (lambda: jnp.fft.fft(np.ones(())), ValueError, "out of bounds"),
    (lambda: jnp.fft.fft([1.0, 2.0]), TypeError, "requires ndarray"),
]


@pytest.mark.parametrize("i", range(len(JNP_ERRORS)))
def test_jnp_fft_errors(i):
    fun, cls, msg = JNP_ERRORS[i]
    with pytest.raises(cls, match=msg):
        fun()


def test_empty_transforms():
    out = jnp.fft.fft(np.zeros((0,), np.float32))
    assert out.shape == (0,) and out.dtype == np.complex64
    out = jnp.fft.irfft(np.ones((2, 1), np.complex64))
    assert out.shape == (2, 0) and out.dtype == np.float32
    assert jnp.fft.rfft(np.zeros((0, 4), np.float32)).shape == (0, 3)


# ---------------------------------------------------------------- gradients


def _re(z):
    return lax.convert_element_type(z, np.float64)


def _re_im(z):
    """Real and imaginary parts side by side: a real function the gradient checker can pair
    with real cotangents."""
    minus_i = np.asarray(-1j, gpuarr.core.get_aval(z).dtype)[()]
    return jnp.concatenate([_re(z), _re(z * minus_i)], axis=-1)


def _complex(a, b):
    return lax.convert_element_type(a, np.complex128) + 1j * lax.convert_element_type(
        b, np.complex128)


GRAD_CASES = {
    "fft": (lambda z: lax.fft(z, FftType.FFT, (2, 5)), [cplx(3, 2, 5)]),
    "ifft": (lambda z: lax.fft(z, FftType.IFFT, (4,)), [cplx(3, 4)]),
    "rfft_even": (lambda x: _re_im(lax.fft(x, FftType.RFFT, (6,))), [real(2, 6)]),
    "rfft_odd_2d": (lambda x: _re_im(lax.fft(x, FftType.RFFT, (3, 5))), [real(3, 5)]),
    "irfft_even": (lambda a, b: lax.fft(_complex(a, b), FftType.IRFFT, (6,)),
                   [real(2, 4), real(2, 4)]),
    "irfft_odd_2d": (lambda a, b: lax.fft(_complex(a, b), FftType.IRFFT, (2, 7)),
                     [real(2, 4), real(2, 4)]),
    "rfft_then_irfft": (lambda x: jnp.fft.irfft(jnp.fft.rfft(x) ** 2, n=5), [real(5)]),
    "hfft": (lambda a, b: jnp.fft.hfft(_complex(a, b), n=7, norm="ortho"), [real(4), real(4)]),
    "ihfft": (lambda x: _re_im(jnp.fft.ihfft(x, norm="forward")), [real(6)]),
    "fftn_axes": (lambda z: jnp.fft.fftn(z, s=(3, 4), axes=(1, 0)), [cplx(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_by_finite_differences(name):
    fun, args = GRAD_CASES[name]
    check_grads_x64(fun, args, 1, modes=("fwd", "rev"))


# Real-valued functions through rfft/irfft/hfft/ihfft, whose transposes are subtle; `re`
# takes the real part.
def _grad_funcs(m, re, w, v):
    return {
        "rfft": lambda x: re(m.fft.rfft(x, n=7) * w).sum(),
        "irfft": lambda x: (m.fft.irfft(m.fft.rfft(x) * w, n=7) * v).sum(),
        "rfft2": lambda x: (m.fft.irfft2(m.fft.rfft2(x, norm="ortho") * w, s=(2, 7)) * v).sum(),
        "hfft": lambda x: (m.fft.hfft(m.fft.rfft(x) * w) ** 2).sum(),
        "ihfft": lambda x: (m.fft.irfft(m.fft.ihfft(x) * w, n=7) * v).sum(),
    }


@pytest.mark.parametrize("name", ["rfft", "irfft", "rfft2", "hfft", "ihfft"])
def test_real_transform_gradients_match_jax(name):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6))
    w = rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4))
    v = rng.normal(size=(2, 7))
    with gpuarr.enable_x64():
        fun = _grad_funcs(jnp, _re, w, v)[name]
        ours, jitted = gpuarr.grad(fun)(x), gpuarr.jit(gpuarr.grad(fun))(x)
    with jax.enable_x64(True):
        theirs = np.asarray(jax.grad(_grad_funcs(jax.numpy, jax.numpy.real, w, v)[name])(x))
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(jitted), theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind,lengths", [("fft", (2, 3)), ("ifft", (5,)), ("rfft", (6,)),
                                          ("rfft", (2, 5)), ("irfft", (6,)), ("irfft", (2, 5))])
def test_vjp_matches_jax(kind, lengths):
    """The transpose rules give JAX's cotangents, complex gradient convention included."""
    jax = pytest.importorskip("jax")
    n = lengths[-1]
    shape = (3,) + lengths[:-1] + ((n // 2 + 1,) if kind == "irfft" else (n,))
    x = real(*shape) if kind == "rfft" else cplx(*shape)
    with gpuarr.enable_x64():
        out, pullback = gpuarr.vjp(lambda x: lax.fft(x, kind, lengths), x)
        ct = real(*out.shape) if kind == "irfft" else cplx(*out.shape)
        (ours,) = pullback(ct)
    with jax.enable_x64(True):
        _, jax_pullback = jax.vjp(lambda x: jax.lax.fft(x, kind, lengths), x)
        (theirs,) = jax_pullback(ct)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- vmap and jit

VMAP_CASES = [
    (lambda x: jnp.fft.fft(x), cplx(4, 6), 0),
    (lambda x: jnp.fft.rfft(x, n=5, norm="ortho"), real(3, 6), 1),
    (lambda x: jnp.fft.irfft(x, axis=0), cplx(4, 3, 2), 2),
    (lambda x: jnp.fft.fftn(x, axes=(1, 0)), cplx(2, 3, 4), 1),
    (lambda x: jnp.fft.irfft2(x, s=(3, 4)), cplx(3, 2, 3), 0),
    (lambda x: jnp.fft.hfft(x), cplx(2, 4), 1),
    (lambda x: jnp.fft.ifftshift(jnp.fft.ifft(x)), cplx(5, 3), 1),
    (lambda x: lax.fft(x, "rfft", (3, 4)), real(3, 4, 5), 2),
]


@pytest.mark.parametrize("i", range(len(VMAP_CASES)))
def test_vmap_matches_loop(i):
    fun, x, axis = VMAP_CASES[i]
    x = single(x)
    loop = np.stack([np.asarray(fun(np.take(x, k, axis))) for k in range(x.shape[axis])])
    for f in (gpuarr.vmap(fun, in_axes=axis), gpuarr.jit(gpuarr.vmap(fun, in_axes=axis))):
        out = np.asarray(f(x))
        assert out.dtype == loop.dtype and out.shape == loop.shape
        np.testing.assert_allclose(out, loop, rtol=1e-6, atol=1e-5)


def test_vmap_of_grad_matches_loop():
    def loss(x):
        return (jnp.fft.irfft(jnp.fft.rfft(x) ** 2, n=6) * np.arange(6.0, dtype=np.float32)).sum()

    xs = single(real(3, 6))
    out = np.asarray(gpuarr.vmap(gpuarr.grad(loss))(xs))
    loop = np.stack([np.asarray(gpuarr.grad(loss)(x)) for x in xs])
    np.testing.assert_allclose(out, loop, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2",
                                  "rfftn", "irfftn"])
def test_jit_matches_eager(name):
    x = single(real(3, 4) if name in ("rfft", "ihfft", "rfftn") else cplx(3, 4))
    f = getattr(jnp.fft, name)
    eager = np.asarray(f(x, norm="ortho"))
    jitted = np.asarray(gpuarr.jit(lambda x: f(x, norm="ortho"))(x))
    assert jitted.dtype == eager.dtype
    np.testing.assert_allclose(jitted, eager, rtol=1e-6, atol=1e-6)


def test_jnp_fft_is_the_module():
    assert jnp.fft.fft is gpuarr.numpy.fft.fft
    assert lax.FftType.RFFT == 2 and str(lax.FftType.IRFFT.value) == "3"


@pytest.mark.parametrize("fn", [jnp.fft.rfft, jnp.fft.irfft, jnp.fft.hfft, jnp.fft.ihfft],
                         ids=lambda f: f.__name__)
def test_check_grads_between_real_and_complex_spaces(fn):
    # check_vjp pairs vectors with Re<x, y>, under which a VJP is the JVP's adjoint also for
    # functions from real to complex arrays and back.
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6,))
    if fn in (jnp.fft.irfft, jnp.fft.hfft):
        x = x + 1j * rng.normal(size=(6,))
    check_grads_x64(fn, (x,), order=1, modes=("fwd", "rev"))
