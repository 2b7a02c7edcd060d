"""gpuarr.scipy.fft and gpuarr.scipy.signal against jax.scipy (0.10.2, CPU) and SciPy: values,
shapes and dtypes, error classes and messages, and the same results under jit, vmap and grad."""
import warnings
from functools import partial

import numpy as np
import pytest
from helpers import close, rand
from jax_compare import check_signatures

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.scipy import fft as gfft
from gpuarr.scipy import signal as gsig

jax = pytest.importorskip("jax")
jfft = pytest.importorskip("jax.scipy.fft")
jsig = pytest.importorskip("jax.scipy.signal")
sfft = pytest.importorskip("scipy.fft")
ssig = pytest.importorskip("scipy.signal")


def reference(fn, *args):
    """JAX's value of fn(*args), compiled as one program: JAX's op-by-op dispatch compiles
    every primitive for every shape and would dominate the test's time."""
    return jax.jit(fn)(*args)


def vs_jax(ours, theirs, *args, tol=2e-4):
    close(ours(*args), reference(theirs, *args), tol)


def vs_jax_all(cases, tol=2e-4):
    """Check each (ours, theirs, args) case; JAX's values all come from one compiled program."""
    wants = reference(lambda arglists: [theirs(*a) for (_, theirs, _), a in zip(cases, arglists)],
                      [args for _, _, args in cases])
    for (ours, _, args), want in zip(cases, wants):
        close(ours(*args), want, tol)


def outcome(fn, *args):
    """fn(*args) staged (as JAX would be), or the exception it raises while staging."""
    try:
        jax.eval_shape(fn, *args)
    except Exception as err:  # noqa: BLE001  (the reference's error is the expectation)
        return err
    return None


def same_outcome_all(cases, tol=2e-4):
    """Like vs_jax_all, where a case JAX rejects must raise the same error class and message."""
    ok = []
    for ours, theirs, args in cases:
        err = outcome(theirs, *args)
        if err is None:
            ok.append((ours, theirs, args))
            continue
        with pytest.raises(type(err)) as info:
            ours(*args)
        assert str(info.value) == str(err)
    vs_jax_all(ok, tol)


def raises_like(ours, theirs, *args):
    err = outcome(theirs, *args)
    assert err is not None
    with pytest.raises(type(err)) as got:
        ours(*args)
    assert str(got.value) == str(err)


def test_public_names_and_signatures():
    assert sorted(gfft.__all__) == sorted(n for n in dir(jfft) if not n.startswith("_"))
    assert sorted(gsig.__all__) == sorted(n for n in dir(jsig) if not n.startswith("_"))
    check_signatures(gfft, jfft, gfft.__all__)
    check_signatures(gsig, jsig, gsig.__all__)


# ---------------------------------------------------------------- scipy.fft: the DCT


@pytest.mark.parametrize("name", ["dct", "idct"])
def test_dct_1d_matches_jax_and_scipy(name):
    x = rand((5, 6))
    ours, theirs = getattr(gfft, name), getattr(jfft, name)
    cases = []
    for norm in [None, "backward", "ortho"]:
        for n, axis in [(None, -1), (None, 0), (4, 1), (9, 0)]:
            kw = {"n": n, "axis": axis, "norm": norm}
            if norm != "backward" and (n is None) == (axis == -1):
                cases.append((partial(ours, **kw), partial(theirs, **kw), (x,)))
            want = getattr(sfft, name)(x.astype(np.float64), **kw)
            np.testing.assert_allclose(np.asarray(ours(x, **kw)), want, rtol=1e-4, atol=1e-4)
    vs_jax_all(cases)


@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_dctn_matches_scipy_and_jax(name):
    x = rand((3, 4, 5))
    ours, theirs = getattr(gfft, name), getattr(jfft, name)
    cases = []
    for norm in [None, "ortho"]:
        for s, axes in [(None, None), ([3], None), (None, [0]), ([2, 7], None),
                        ([4, 4], [-1, 0]), (6, [1]), ([2, 3, 4], None)]:
            kw = {"s": s, "axes": axes, "norm": norm}
            want = getattr(sfft, name)(x.astype(np.float64), **kw)
            got = ours(x, **kw)
            assert got.dtype == np.float32
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    for kw in [{"norm": "ortho"}, {"s": [2, 7]}, {"s": 6, "axes": [1]}]:
        cases.append((partial(ours, **kw), partial(theirs, **kw), (x,)))
    vs_jax_all(cases)


def test_dct_dtypes():
    cases = []
    for dtype in [np.int32, np.float16, bool, np.complex64]:
        x = (rand((4, 5), dtype if dtype is np.complex64 else np.float32) * 3).astype(dtype)
        cases += [(getattr(gfft, name), getattr(jfft, name), (x,)) for name in ["dct", "idctn"]]
    vs_jax_all(cases, tol=2e-3)


def test_dct_round_trip_and_x64():
    with gpuarr.enable_x64():
        x = rand((6, 7), np.float64)
        y = gfft.dctn(x, norm="ortho")
        assert y.dtype == np.float64
        np.testing.assert_allclose(np.asarray(y), sfft.dctn(x, norm="ortho"), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(np.asarray(gfft.idctn(y, norm="ortho")), x, atol=1e-12)
        np.testing.assert_allclose(np.asarray(gfft.idct(gfft.dct(x))), x, atol=1e-12)


def test_dct_errors():
    x = rand((3, 4))
    for name in ["dct", "idct", "dctn", "idctn"]:
        ours, theirs = getattr(gfft, name), getattr(jfft, name)
        raises_like(partial(ours, type=1), partial(theirs, type=1), x)
        raises_like(partial(ours, norm="forward"), partial(theirs, norm="forward"), x)
    raises_like(partial(gfft.dctn, s=[1, 2, 3]), partial(jfft.dctn, s=[1, 2, 3]), x)
    raises_like(partial(gfft.dct, axis=2), partial(jfft.dct, axis=2), x)
    with pytest.raises(TypeError):
        gfft.dct([1.0, 2.0])


def test_dct_transformations():
    x = rand((4, 5))
    cases = []
    for name in ["dct", "idct", "dctn", "idctn"]:
        ours, theirs = getattr(gfft, name), getattr(jfft, name)
        cases += [
            (gpuarr.jit(partial(ours, norm="ortho")), partial(theirs, norm="ortho"), (x,)),
            (gpuarr.vmap(ours), jax.vmap(theirs), (x,)),
            (gpuarr.grad(lambda v, f=ours: (f(v) ** 3).sum()),
             jax.grad(lambda v, f=theirs: (f(v) ** 3).sum()), (x,)),
        ]
    vs_jax_all(cases, tol=1e-2)


# ---------------------------------------------------------------- convolution and correlation


SHAPES = [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)), ((2, 3), (5, 6)), ((4, 4), (4, 4)),
          ((3, 4, 5), (2, 2, 2)), ((5, 1), (1, 3)), ((4, 2), (2, 4))]


def test_convolve_correlate_match_jax():
    cases = []
    for s1, s2 in SHAPES:
        a, b = rand(s1), rand(s2, seed=1)
        names = ["convolve", "correlate", "fftconvolve"]
        if len(s1) == 2:
            names += ["convolve2d", "correlate2d"]
        for name in names:
            ours, theirs = getattr(gsig, name), getattr(jsig, name)
            for mode in ["full", "same", "valid"]:
                cases.append((partial(ours, mode=mode), partial(theirs, mode=mode), (a, b)))
        for name in ["convolve", "correlate"]:
            ours, theirs = getattr(gsig, name), getattr(jsig, name)
            for mode in ["full", "same", "valid"]:
                cases.append((partial(ours, mode=mode, method="fft"),
                              partial(theirs, mode=mode, method="fft"), (a, b)))
    same_outcome_all(cases)


def test_convolution_complex_and_dtypes():
    a, b = rand((5, 6)), rand((2, 3), np.complex64, seed=2)
    cases = []
    for mode in ["full", "same", "valid"]:
        for u, v in [(a, b), (b, a), (b, b[::-1])]:
            for name in ["convolve2d", "correlate2d", "fftconvolve"]:
                ours, theirs = getattr(gsig, name), getattr(jsig, name)
                cases.append((partial(ours, mode=mode), partial(theirs, mode=mode), (u, v)))
    ai, bi = np.arange(6), np.array([1, 2, 0])
    cases += [(gsig.convolve, jsig.convolve, (ai, bi)),
              (gsig.fftconvolve, jsig.fftconvolve, (ai, bi)),
              (gsig.convolve, jsig.convolve, (a.astype(np.float16), a[:2, :2]))]
    vs_jax_all(cases)


def test_convolve_against_scipy():
    a, b = rand((6, 5)).astype(np.float64), rand((3, 2), seed=1).astype(np.float64)
    for mode in ["full", "same", "valid"]:
        for ours, theirs in [(gsig.convolve, ssig.convolve), (gsig.correlate, ssig.correlate),
                             (gsig.fftconvolve, ssig.fftconvolve),
                             (gsig.correlate2d, ssig.correlate2d)]:
            np.testing.assert_allclose(np.asarray(ours(a.astype(np.float32), b, mode)),
                                       theirs(a, b, mode), atol=1e-4)


def test_fftconvolve_axes():
    a, b = rand((3, 8)), rand((3, 4), seed=1)
    cases = []
    for mode in ["full", "same", "valid"]:
        for axes in [1, [-1]]:
            cases.append((partial(gsig.fftconvolve, mode=mode, axes=axes),
                          partial(jsig.fftconvolve, mode=mode, axes=axes), (a, b)))
        cases.append((partial(gsig.fftconvolve, mode=mode, axes=()),
                      partial(jsig.fftconvolve, mode=mode, axes=()), (a, a[::-1])))
    cases.append((partial(gsig.fftconvolve, axes=1), partial(jsig.fftconvolve, axes=1),
                  (rand((3, 8), np.complex64, seed=3), b)))
    vs_jax_all(cases)


def test_convolution_errors():
    a, b = rand((3, 8)), rand((3, 4), seed=1)
    cases = [
        lambda m, u, v: m.convolve(u, v[0]),
        lambda m, u, v: m.convolve(u, v, "bad"),
        lambda m, u, v: m.convolve(u, v, method="x"),
        lambda m, u, v: m.convolve(u, v.T),
        lambda m, u, v: m.convolve(u, v[:0]),
        lambda m, u, v: m.convolve2d(u, v, boundary="wrap"),
        lambda m, u, v: m.correlate2d(u, v, fillvalue=1),
        lambda m, u, v: m.convolve2d(u[0], v[0]),
        lambda m, u, v: m.fftconvolve(u, v, "valid", axes=0),
        lambda m, u, v: m.fftconvolve(u, v.T, "valid"),
        lambda m, u, v: m.fftconvolve(u, v[0]),
        lambda m, u, v: m.fftconvolve(u, v, "x"),
    ]
    for case in cases:
        raises_like(partial(case, gsig), partial(case, jsig), a, b)


def test_convolution_transformations():
    a, b = rand((6, 5)), rand((3, 2), seed=1)
    bs = np.stack([b, 2 * b])
    cases = []
    for name in ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d"]:
        ours, theirs = getattr(gsig, name), getattr(jsig, name)
        close(gpuarr.jit(ours, static_argnums=2)(a, b, "same"), reference(partial(theirs, mode="same"), a, b),
              2e-4)
        cases += [
            (gpuarr.vmap(ours, (None, 0)), jax.vmap(theirs, (None, 0)), (a, bs)),
            (gpuarr.grad(lambda x, y, f=ours: (f(x, y) ** 2).sum(), (0, 1)),
             jax.grad(lambda x, y, f=theirs: (f(x, y) ** 2).sum(), (0, 1)), (a, b)),
        ]
    vs_jax_all(cases, tol=1e-3)


# ---------------------------------------------------------------- detrend


def test_detrend_matches_jax_and_scipy():
    x = rand((4, 11)) + np.arange(11, dtype=np.float32)
    cases = []
    for kw in [{}, {"type": "constant"}, {"axis": 0}, {"bp": [3, 7]}, {"bp": 5, "axis": 1},
               {"bp": [10]}, {"bp": [0, 1, 11]}]:
        cases.append((partial(gsig.detrend, **kw), partial(jsig.detrend, **kw), (x,)))
        want = ssig.detrend(x.astype(np.float64), **kw)
        np.testing.assert_allclose(np.asarray(gsig.detrend(x, **kw)), want, atol=2e-4)
    cases += [(gsig.detrend, jsig.detrend, (np.array([1, 2, 4]),)),
              (gsig.detrend, jsig.detrend, (rand((9,), np.complex64),))]
    x3 = rand((3, 12))
    cases += [
        (gpuarr.jit(gsig.detrend), jsig.detrend, (x3,)),
        (gpuarr.vmap(partial(gsig.detrend, bp=[4])), jax.vmap(partial(jsig.detrend, bp=[4])),
         (x3,)),
        (gpuarr.grad(lambda v: (gsig.detrend(v) ** 3).sum()),
         jax.grad(lambda v: (jsig.detrend(v) ** 3).sum()), (x3,)),
    ]
    vs_jax_all(cases, tol=1e-3)
    close(gsig.detrend([1, 2, 4]), gsig.detrend(np.array([1, 2, 4])), 2e-4)
    for kw in [{"type": "q"}, {"bp": 20}, {"overwrite_data": True}]:
        raises_like(partial(gsig.detrend, **kw), partial(jsig.detrend, **kw), x)


# ---------------------------------------------------------------- windows and spectra


def test_windows_match_scipy_get_window():
    params = {"gaussian": (2.5,), "kaiser": (4.0,), "general_hamming": (0.6,), "tukey": (0.3,)}
    for name in ["boxcar", "triang", "bartlett", "hann", "hamming", "blackman", "blackmanharris",
                 "nuttall", "flattop", "bohman", "cosine", "parzen", "tukey", "gaussian",
                 "kaiser", "general_hamming"]:
        window = (name, *params[name]) if name in params else name
        for n in [1, 2, 7, 16]:
            np.testing.assert_allclose(gsig._get_window(window, n), ssig.get_window(window, n),
                                       atol=1e-12, err_msg=str((window, n)))
    with pytest.raises(ValueError, match="must have parameters"):
        gsig._get_window("gaussian", 4)


def test_welch_csd_stft_match_jax():
    x, y = rand((2, 64)), rand((2, 50), seed=1)
    cases = []
    for kw in [{"nperseg": 16}, {"nperseg": 15, "noverlap": 5}, {"nperseg": 16, "nfft": 20},
               {"nperseg": 16, "window": ("tukey", 0.3)}, {"window": np.ones(8, np.float32)},
               {"nperseg": 16, "return_onesided": False}, {"nperseg": 16, "fs": 10.0},
               {"nperseg": 100}]:
        for average in ["mean", "median"] if "window" not in kw else ["mean"]:
            cases += [(partial(gsig.welch, average=average, **kw),
                       partial(jsig.welch, average=average, **kw), (x,)),
                      (partial(gsig.csd, average=average, **kw),
                       partial(jsig.csd, average=average, **kw), (x, y))]
    for kw in [{"nperseg": 15, "noverlap": 5}, {"nperseg": 16, "window": "hamming"},
               {"nperseg": 16, "boundary": None, "padded": False},
               {"nperseg": 16, "boundary": "even"}, {"nperseg": 16, "boundary": "odd"},
               {"nperseg": 16, "boundary": "constant"}, {"nperseg": 16, "detrend": "linear"}]:
        cases.append((partial(gsig.stft, **kw), partial(jsig.stft, **kw), (x,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nperseg larger than the input
        vs_jax_all(cases)


def test_spectral_against_scipy_and_options():
    x = rand((2, 64)).astype(np.float64)
    f, p = gsig.welch(x.astype(np.float32), nperseg=16)
    fw, pw = ssig.welch(x, nperseg=16)
    np.testing.assert_allclose(np.asarray(f), fw, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p), pw, rtol=1e-3, atol=1e-5)
    _, _, z = gsig.stft(x.astype(np.float32), nperseg=16)
    np.testing.assert_allclose(np.asarray(z), ssig.stft(x, nperseg=16)[2], atol=1e-5)

    x32 = rand((2, 40))
    demean = lambda d: d - d.mean(-1, keepdims=True)
    cases = [
        (partial(gsig.stft, nperseg=8, axis=0), partial(jsig.stft, nperseg=8, axis=0), (x32.T,)),
        (partial(gsig.welch, nperseg=8, axis=0), partial(jsig.welch, nperseg=8, axis=0), (x32.T,)),
        (partial(gsig.welch, nperseg=8, detrend=False), partial(jsig.welch, nperseg=8,
                                                                detrend=False), (x32,)),
        (partial(gsig.welch, nperseg=8, scaling="spectrum"),
         partial(jsig.welch, nperseg=8, scaling="spectrum"), (x32,)),
        (partial(gsig.welch, nperseg=8), partial(jsig.welch, nperseg=8), (np.arange(20),)),
        (partial(gsig.welch, nperseg=8, detrend=demean), partial(jsig.welch, nperseg=8,
                                                                 detrend=demean), (x32,)),
        (partial(gsig.welch, nperseg=8, detrend=demean), partial(jsig.welch, nperseg=8,
                                                                 detrend=demean), (x32[0],)),
        (gsig.welch, jsig.welch, (np.zeros((2, 0), np.float32),)),
    ]
    xc = rand((2, 40), np.complex64)
    with pytest.warns(UserWarning, match="Input data is complex"):
        gsig.stft(xc, nperseg=8)
    cases += [(partial(gsig.stft, nperseg=8), partial(jsig.stft, nperseg=8), (xc,)),
              (partial(gsig.welch, nperseg=8), partial(jsig.welch, nperseg=8), (xc,))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vs_jax_all(cases)


def test_spectral_errors():
    x = rand((2, 40))
    cases = [
        lambda m, v: m.welch(v, nperseg=8, noverlap=8),
        lambda m, v: m.welch(v, nperseg=8, nfft=4),
        lambda m, v: m.welch(v, nperseg=0),
        lambda m, v: m.welch(v, nperseg=8, scaling="x"),
        lambda m, v: m.welch(v, nperseg=8, average="x"),
        lambda m, v: m.stft(v, nperseg=8, boundary="x"),
        lambda m, v: m.stft(v, nperseg=8, detrend=True),
        lambda m, v: m.welch(v, window=np.ones((2, 2))),
        lambda m, v: m.welch(v, window=np.ones(8), nperseg=4),
        lambda m, v: m.welch(v, window=np.ones(80)),
        lambda m, v: m.welch(v, axis=2),
        lambda m, v: m.istft(v[0].astype(np.complex64)),
        lambda m, v: m.istft(v.astype(np.complex64), time_axis=1, freq_axis=1),
        lambda m, v: m.istft(v.astype(np.complex64), nperseg=8, nfft=6),
    ]
    for case in cases:
        raises_like(partial(case, gsig), partial(case, jsig), x)


def test_istft_matches_jax_and_inverts_stft():
    x = rand((2, 64))
    cases = []
    for kw in [{"nperseg": 16}, {"nperseg": 16, "noverlap": 12}, {"nperseg": 16, "nfft": 20},
               {"nperseg": 16, "window": "hamming"}, {"nperseg": 16, "window": np.ones(16)}]:
        z = np.asarray(gsig.stft(x, **kw)[2])
        for boundary in [True, False]:
            cases.append((partial(gsig.istft, boundary=boundary, **kw),
                          partial(jsig.istft, boundary=boundary, **kw), (z,)))
    z = np.asarray(gsig.stft(x, nperseg=16)[2])
    np.testing.assert_allclose(np.asarray(gsig.istft(z, nperseg=16)[1]), x, atol=1e-5)
    z = np.asarray(gsig.stft(x, nperseg=16, return_onesided=False)[2])
    cases += [(partial(gsig.istft, input_onesided=False), partial(jsig.istft, input_onesided=False),
               (z,)),
              (partial(gsig.istft, input_onesided=False, time_axis=0, freq_axis=1),
               partial(jsig.istft, input_onesided=False, time_axis=0, freq_axis=1),
               (np.swapaxes(z, 0, 2),))]
    vs_jax_all(cases)


def test_spectral_transformations():
    x = rand((3, 40))
    z = np.asarray(gsig.stft(x, nperseg=8)[2])
    cases = []
    for name in ["stft", "welch"]:
        ours, theirs = partial(getattr(gsig, name), nperseg=8), partial(getattr(jsig, name),
                                                                         nperseg=8)
        cases += [
            (gpuarr.jit(ours), theirs, (x,)),
            (gpuarr.vmap(ours), jax.vmap(theirs), (x,)),
            (gpuarr.grad(lambda v, f=ours: jnp.abs(f(v)[-1]).sum()),
             jax.grad(lambda v, f=theirs: jax.numpy.abs(f(v)[-1]).sum()), (x,)),
        ]
    istft_g, istft_j = partial(gsig.istft, nperseg=8), partial(jsig.istft, nperseg=8)
    cases += [
        (gpuarr.jit(lambda v: gsig.csd(v, v[::-1], nperseg=8)),
         lambda v: jsig.csd(v, v[::-1], nperseg=8), (x,)),
        (gpuarr.jit(istft_g), istft_j, (z,)),
        (gpuarr.vmap(lambda v: istft_g(v)[1]), jax.vmap(lambda v: istft_j(v)[1]), (z,)),
        (gpuarr.grad(lambda v: (istft_g(v)[1] ** 2).sum()),
         jax.grad(lambda v: (istft_j(v)[1] ** 2).sum()), (z,)),
    ]
    vs_jax_all(cases, tol=1e-3)
