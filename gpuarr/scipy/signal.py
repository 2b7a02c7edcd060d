"""Signal processing (jax.scipy.signal): n-dimensional convolution and correlation, linear
detrending and the windowed-FFT family (stft, istft, csd, welch).

Direct convolutions are one `lax.conv_general_dilated` (so they batch and differentiate through
the convolution's own rules); `fftconvolve` multiplies spectra. The spectral functions follow
jax/_src/scipy/signal.py step by step, including where it departs from SciPy (noted below), so
that their values agree with JAX's. Windows are computed in NumPy; the usual SciPy windows are
built in and any other name is looked up in scipy.signal when SciPy is installed, as JAX does.
"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import windowed as lax_windowed
from gpuarr.numpy import creation, manipulation, reductions, selection, ufuncs
from gpuarr.numpy import fft as jnp_fft
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend", "fftconvolve",
           "istft", "stft", "welch"]

_MODES = ("full", "same", "valid")


def _shape(x) -> tuple:
    return get_aval(x).shape


def _canonical_axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _promote(name: str, *xs):
    """The arguments as Arrays of their common inexact dtype."""
    check_arraylike(name, *xs)
    return [ensure_array(x) for x in promote_dtypes_inexact(*xs)]


def _to_complex(x):
    dt = dtypes.to_complex_dtype(get_aval(x).dtype)
    return x if get_aval(x).dtype == dt else lax_conversions.convert_element_type(x, dt)


# ---------------------------------------------------------------- convolution and correlation


def _convolve_nd(in1, in2, mode, precision):
    """Direct n-dimensional convolution as one lax.conv_general_dilated, the smaller input
    (flipped) sliding over the larger; 'same' output is centred on the first input as SciPy's."""
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    check_arraylike("convolve", in1, in2)
    in1, in2 = ensure_array(in1), ensure_array(in2)
    if get_aval(in1).ndim != get_aval(in2).ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if get_aval(in1).size == 0 or get_aval(in2).size == 0:
        raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                         f"{_shape(in1)} and {_shape(in2)}.")
    in1, in2 = _promote("convolve", in1, in2)
    s1, s2 = _shape(in1), _shape(in2)
    no_swap = all(a >= b for a, b in zip(s1, s2))
    swap = all(a <= b for a, b in zip(s1, s2))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    if swap:
        in1, in2 = in2, in1
    shape = _shape(in2)
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(k - 1 - (k0 - 1) // 2, k - k0 + (k0 - 1) // 2) for k, k0 in zip(shape, s2)]
    else:
        padding = [(k - 1, k - 1) for k in shape]
    kernel = lax_shape_ops.rev(in2, tuple(range(len(shape))))
    out = lax_windowed.conv_general_dilated(lax_shape_ops.expand_dims(in1, (0, 1)),
                                            lax_shape_ops.expand_dims(kernel, (0, 1)),
                                   (1,) * len(shape), padding, precision=precision)
    return lax_shape_ops.squeeze(out, (0, 1))


def _check_fill(name: str, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")


def _check_2d(name: str, in1, in2):
    check_arraylike(name, in1, in2)
    in1, in2 = ensure_array(in1), ensure_array(in2)
    if get_aval(in1).ndim != 2 or get_aval(in2).ndim != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")
    return in1, in2


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-dimensional convolution of two arrays of equal rank (jax.scipy.signal.convolve).

    `mode` is 'full' (every overlap), 'same' (the size of `in1`, centred) or 'valid' (only
    complete overlaps); `method` 'direct' or 'auto' runs one convolution, 'fft' multiplies
    spectra (fftconvolve). Inputs are promoted to a common inexact dtype.
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd(in1, in2, mode, precision)
    raise ValueError(f"Got {method=}; expected 'auto', 'fft', or 'direct'.")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
               precision=None):
    """Two-dimensional convolution (jax.scipy.signal.convolve2d); only zero fill at the
    boundary is supported, as in JAX."""
    _check_fill("convolve2d", boundary, fillvalue)
    in1, in2 = _check_2d("convolve2d", in1, in2)
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-dimensional cross-correlation (jax.scipy.signal.correlate): the convolution of `in1`
    with the flipped complex conjugate of `in2`."""
    check_arraylike("correlate", in1, in2)
    flipped = manipulation.flip(ufuncs.conj(ensure_array(in2)))
    return convolve(in1, flipped, mode, precision=precision, method=method)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
                precision=None):
    """Two-dimensional cross-correlation (jax.scipy.signal.correlate2d), with SciPy's output
    alignment for each mode; only zero fill at the boundary is supported, as in JAX."""
    _check_fill("correlate2d", boundary, fillvalue)
    in1, in2 = _check_2d("correlate2d", in1, in2)
    s1, s2 = _shape(in1), _shape(in2)
    swap = all(a <= b for a, b in zip(s1, s2))
    same_shape = s1 == s2
    # The correlation is the convolution of the flipped first input with the conjugated
    # second, flipped back; when the second input is the larger (and the modes allow), it is
    # the convolution the other way round, conjugated except in 'valid' mode.
    if mode == "same" or not swap or (mode == "valid" and same_shape):
        return manipulation.flip(_convolve_nd(manipulation.flip(in1), ufuncs.conj(in2), mode, precision))
    out = _convolve_nd(manipulation.flip(in2), ufuncs.conj(in1), mode, precision)
    return out if mode == "valid" else ufuncs.conj(out)


def _index_tuple(axes) -> tuple:
    try:
        return (operator.index(axes),)
    except TypeError:
        return tuple(operator.index(a) for a in axes)


def fftconvolve(in1, in2, mode: str = "full", axes: Sequence[int] | None = None):
    """Convolution of two arrays of equal rank through FFTs (jax.scipy.signal.fftconvolve).

    `mode` is read as in convolve; `axes` (default: all) are the axes convolved over, the
    others must have equal sizes and are treated as a batch. Real inputs use rfftn.
    """
    in1, in2 = _promote("fftconvolve", in1, in2)
    ndim = get_aval(in1).ndim
    if ndim != get_aval(in2).ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    if axes is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(_canonical_axis(a, ndim) for a in _index_tuple(axes))
        mapped = set(range(ndim)) - set(axes)
        if any(_shape(in1)[i] != _shape(in2)[i] for i in mapped):
            raise ValueError(f"mapped axes must have same shape; got in1.shape={_shape(in1)} "
                             f"in2.shape={_shape(in2)} axes={axes}")
        axes = tuple(sorted(set(axes)))
    return _fftconvolve_axes(in1, in2, mode, axes)


def _fftconvolve_axes(in1, in2, mode, axes):
    sizes1 = [_shape(in1)[a] for a in axes]
    sizes2 = [_shape(in2)[a] for a in axes]
    if mode == "valid":
        no_swap = all(a >= b for a, b in zip(sizes1, sizes2))
        swap = all(a <= b for a, b in zip(sizes1, sizes2))
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, One input must be at least as large as the other "
                             "in every dimension.")
        if swap:
            in1, in2, sizes1, sizes2 = in2, in1, sizes2, sizes1
    full = [a + b - 1 for a, b in zip(sizes1, sizes2)]
    if all(a == 1 or b == 1 for a, b in zip(sizes1, sizes2)):
        conv = in1 * in2  # no overlap to sum over: the convolution is a broadcast product
    else:
        complex_input = dtypes.is_complex(get_aval(in1).dtype)
        fft = jnp_fft.fftn if complex_input else jnp_fft.rfftn
        ifft = jnp_fft.ifftn if complex_input else jnp_fft.irfftn
        conv = ifft(fft(in1, full, axes) * fft(in2, full, axes), full, axes)
    if mode == "full":
        out = full
    elif mode == "same":
        out = sizes1
    else:
        out = [a - b + 1 for a, b in zip(sizes1, sizes2)]
    shape = _shape(conv)
    start, limit = [0] * len(shape), list(shape)
    for a, f, o in zip(axes, full, out):
        start[a] = (f - o) // 2
        limit[a] = start[a] + o
    return lax.slice(conv, tuple(start), tuple(limit))


# ---------------------------------------------------------------- detrending


def _remove_line(seg):
    """`seg` minus its least-squares straight line along axis 0 (a constant for one point)."""
    npts = _shape(seg)[0]
    if npts == 1:
        return seg - seg
    t = np.arange(1, npts + 1) / npts
    t = t - t.mean()
    tc = t.reshape((npts,) + (1,) * (get_aval(seg).ndim - 1))
    real_dtype = get_aval(ufuncs.real(seg)).dtype
    slope = reductions.sum(seg * tc.astype(real_dtype), axis=0) / np.asarray(np.sum(t * t), real_dtype)
    return seg - reductions.mean(seg, axis=0) - tc.astype(real_dtype) * slope


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data: None = None):
    """Remove a linear trend (type='linear', piecewise between the breakpoints `bp`) or the
    mean (type='constant') from `data` along `axis` (jax.scipy.signal.detrend)."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = promote_dtypes_inexact(creation.asarray(data))
    data = ensure_array(data)
    if type == "constant":
        return data - reductions.mean(data, axis, keepdims=True)
    n = _shape(data)[axis]
    # Breakpoints are static: they decide the pieces' shapes.
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    data = manipulation.moveaxis(data, axis, 0)
    pieces = [_remove_line(data[lo:hi]) for lo, hi in zip(bps[:-1], bps[1:])]
    return manipulation.moveaxis(manipulation.concatenate(pieces, axis=0), 0, axis)


# ---------------------------------------------------------------- windows


def _general_cosine(m: int, coeffs) -> np.ndarray:
    fac = np.linspace(-np.pi, np.pi, m)
    return sum(c * np.cos(k * fac) for k, c in enumerate(coeffs))


def _triang(m: int) -> np.ndarray:
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        w = (2 * n - 1.0) / m
        return np.r_[w, w[::-1]]
    w = 2 * n / (m + 1.0)
    return np.r_[w, w[-2::-1]]


def _bartlett(m: int) -> np.ndarray:
    n = np.arange(m)
    return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _bohman(m: int) -> np.ndarray:
    fac = np.abs(np.linspace(-1, 1, m)[1:-1])
    w = (1 - fac) * np.cos(np.pi * fac) + 1.0 / np.pi * np.sin(np.pi * fac)
    return np.r_[0, w, 0]


def _parzen(m: int) -> np.ndarray:
    n = np.arange(-(m - 1) / 2.0, (m - 1) / 2.0 + 0.5, 1.0)
    outer = n[n < -(m - 1) / 4.0]
    inner = n[np.abs(n) <= (m - 1) / 4.0]
    wa = 2 * (1 - np.abs(outer) / (m / 2.0)) ** 3.0
    wb = 1 - 6 * (np.abs(inner) / (m / 2.0)) ** 2.0 + 6 * (np.abs(inner) / (m / 2.0)) ** 3.0
    return np.r_[wa, wb, wa[::-1]]


def _tukey(m: int, alpha: float = 0.5) -> np.ndarray:
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1.0:
        return _general_cosine(m, (0.5, 0.5))
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    n1, n3 = n[:width + 1], n[m - width - 1:]
    w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * n1 / alpha / (m - 1))))
    w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * n3 / alpha / (m - 1))))
    return np.r_[w1, np.ones(m - len(n1) - len(n3)), w3]


def _gaussian(m: int, std: float) -> np.ndarray:
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-n ** 2 / (2 * std * std))


# Symmetric windows by every name scipy.signal.get_window accepts for them; the periodic
# window of length m (get_window's default) is the symmetric one of length m + 1, truncated.
_WINDOWS: dict[str, Callable] = {}
for _names, _fn in [
    (("boxcar", "box", "ones", "rect", "rectangular"), np.ones),
    (("triang", "triangle", "tri"), _triang),
    (("bartlett", "bart", "brt"), _bartlett),
    (("hann", "han"), partial(_general_cosine, coeffs=(0.5, 0.5))),
    (("hamming", "hamm", "ham"), partial(_general_cosine, coeffs=(0.54, 0.46))),
    (("blackman", "black", "blk"), partial(_general_cosine, coeffs=(0.42, 0.50, 0.08))),
    (("blackmanharris", "blackharr", "bkh"),
     partial(_general_cosine, coeffs=(0.35875, 0.48829, 0.14128, 0.01168))),
    (("nuttall", "nutl", "nut"),
     partial(_general_cosine, coeffs=(0.3635819, 0.4891775, 0.1365995, 0.0106411))),
    (("flattop", "flat", "flt"), partial(_general_cosine, coeffs=(
        0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368))),
    (("bohman", "bman", "bmn"), _bohman),
    (("cosine", "halfcosine"), lambda m: np.sin(np.pi / m * (np.arange(m) + 0.5))),
    (("parzen", "parz", "par"), _parzen),
    (("tukey", "tuk"), _tukey),
    (("gaussian", "gauss", "gss"), _gaussian),
    (("kaiser", "ksr"), np.kaiser),
    (("general hamming", "general_hamming"), lambda m, a: _general_cosine(m, (a, 1.0 - a))),
]:
    _WINDOWS.update(dict.fromkeys(_names, _fn))
del _names, _fn
_NEEDS_PARAMETERS = ("gaussian", "gauss", "gss", "kaiser", "ksr", "general hamming",
                     "general_hamming")


def _get_window(window, nperseg: int) -> np.ndarray:
    """The periodic window `window` (a name or a (name, parameters...) tuple) of length
    `nperseg`, as float64 values of scipy.signal.get_window(window, nperseg)."""
    name, params = (window[0], tuple(window[1:])) if isinstance(window, tuple) else (window, ())
    fn = _WINDOWS.get(name) if isinstance(name, str) else None
    if fn is None:
        try:
            from scipy.signal import get_window
        except ImportError as err:
            raise ImportError(f"scipy must be available to use {window=}") from err
        return np.asarray(get_window(window, nperseg), np.float64)
    if name in _NEEDS_PARAMETERS and not params:
        raise ValueError(f"'{name}' must have parameters, but {window=}!")
    if nperseg <= 1:
        return np.ones(nperseg)
    return np.asarray(fn(nperseg + 1, *params), np.float64)[:-1]


def _triage_segments(window, nperseg, input_length: int, dtype):
    """The window as an array of `dtype` and the segment length, read from `window` (a name, a
    tuple or an array) and `nperseg` as SciPy reads them."""
    if isinstance(window, (str, tuple)):
        nperseg_int = input_length if nperseg is None else int(nperseg)
        if nperseg_int > input_length:
            warnings.warn(f"nperseg={nperseg_int} is greater than {input_length=}, using "
                          f"nperseg={input_length}", stacklevel=4)
            nperseg_int = input_length
        return creation.asarray(_get_window(window, nperseg_int), dtype=dtype), nperseg_int
    win = creation.asarray(window, dtype=dtype)
    nperseg_int = get_aval(win).size if nperseg is None else int(nperseg)
    if get_aval(win).ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < get_aval(win).size:
        raise ValueError("window is longer than input signal")
    if nperseg_int != get_aval(win).size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, nperseg_int


# ---------------------------------------------------------------- windowed FFTs


def _odd_ext(x, n: int, axis: int = -1):
    """Extend `x` by `n` points at each end along `axis`, odd about the end points."""
    if n < 1:
        return x
    if n > _shape(x)[axis] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {_shape(x)[axis] - 1}.")
    left_end = lax.slice_in_dim(x, 0, 1, axis=axis)
    left_ext = manipulation.flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
    right_end = lax.slice_in_dim(x, -1, None, axis=axis)
    right_ext = manipulation.flip(lax.slice_in_dim(x, -(n + 1), -1, axis=axis), axis=axis)
    return manipulation.concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=axis)


def _pad_ends(mode: str, **kwargs):
    def pad(x, n: int, axis: int = -1):
        widths = [(0, 0)] * get_aval(x).ndim
        widths[axis] = (n, n)
        return manipulation.pad(x, widths, mode, **kwargs)
    return pad


_BOUNDARIES = {
    "even": _pad_ends("reflect"),
    "odd": _odd_ext,
    "constant": _pad_ends("edge"),
    "zeros": _pad_ends("constant", constant_values=0.0),
    None: lambda x, *args, **kwargs: x,
}


def _zero_extend(x, length: int):
    """`x` zero-padded at the end of its last axis to `length`."""
    extra = length - _shape(x)[-1]
    return manipulation.concatenate((x, creation.zeros(_shape(x)[:-1] + (extra,), get_aval(x).dtype)), -1)


def _segment_spectra(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, sides: str):
    """FFTs of the detrended, windowed segments of `x` along its last axis:
    [..., segments, frequencies]."""
    length = _shape(x)[-1]
    if nperseg == 1 and noverlap == 0:
        segments = x[..., None]
    else:
        starts = np.arange(0, length - nperseg + 1, nperseg - noverlap)
        segments = selection.take(x, starts[:, None] + np.arange(nperseg), axis=-1)
    segments = detrend_func(segments)
    if dtypes.is_complex(get_aval(win).dtype):
        segments = _to_complex(segments)
    segments = win * segments
    if sides == "twosided":
        return jnp_fft.fft(segments, n=nfft)
    return jnp_fft.rfft(ufuncs.real(segments), n=nfft)


def _detrend_function(detrend_type, axis: int):
    if isinstance(detrend_type, str):
        return partial(detrend, type=detrend_type, axis=-1)
    if callable(detrend_type):
        # As JAX: `axis` is already non-negative here, so a user's function always sees the
        # segments with that axis moved last.
        def moved(d):
            return manipulation.moveaxis(detrend_type(manipulation.moveaxis(d, axis, -1)), -1, axis)
        return moved
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density", axis=-1,
                     mode="psd", boundary=None, padded=False):
    """(frequencies, segment times, spectra) of `x` (cross spectra with `y` when given): the
    common core of stft, csd and welch, as SciPy's function of the same name."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    if y is None:
        (x,) = _promote("spectral_helper", x)
        axis = _canonical_axis(axis, get_aval(x).ndim)
        outershape = _shape(x)[:axis] + _shape(x)[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y = _promote("spectral_helper", x, y)
        axis = _canonical_axis(axis, get_aval(x).ndim)
        if get_aval(x).ndim != get_aval(y).ndim:
            raise ValueError("two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outershape = np.broadcast_shapes(_shape(x)[:axis] + _shape(x)[axis + 1:],
                                             _shape(y)[:axis] + _shape(y)[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = dtypes.to_complex_dtype(get_aval(x).dtype)
    freq_dtype = np.finfo(result_dtype).dtype

    if nperseg is not None:
        nperseg = operator.index(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _triage_segments(window, nperseg, _shape(x)[axis], get_aval(x).dtype)
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    nfft = nperseg if nfft is None else operator.index(nfft)

    if y is None and get_aval(x).size == 0:
        return (creation.zeros(_shape(x), freq_dtype), creation.zeros(_shape(x), freq_dtype),
                creation.zeros(_shape(x), result_dtype))
    if y is not None and (get_aval(x).size == 0 or get_aval(y).size == 0):
        shape = outershape[:axis] + (min(_shape(x)[axis], _shape(y)[axis]),) + outershape[axis:]
        return (creation.zeros(shape, freq_dtype), creation.zeros(shape, freq_dtype),
                creation.zeros(shape, result_dtype))

    x = manipulation.moveaxis(x, axis, -1)
    if y is not None and get_aval(y).ndim > 1:
        y = manipulation.moveaxis(y, axis, -1)
    if y is not None and _shape(x)[-1] != _shape(y)[-1]:
        if _shape(x)[-1] < _shape(y)[-1]:
            x = _zero_extend(x, _shape(y)[-1])
        else:
            y = _zero_extend(y, _shape(x)[-1])

    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap

    if boundary is not None:
        x = _BOUNDARIES[boundary](x, nperseg // 2, axis=-1)
        if y is not None:
            y = _BOUNDARIES[boundary](y, nperseg // 2, axis=-1)
    if padded:
        # Zero-pad to a whole number of segments.
        nadd = (-(_shape(x)[-1] - nperseg) % nstep) % nperseg
        x = _zero_extend(x, _shape(x)[-1] + nadd)
        if y is not None:
            y = _zero_extend(y, _shape(y)[-1] + nadd)

    detrend_func = _detrend_function(detrend_type, axis)
    if scaling == "density":
        scale = 1.0 / (fs * reductions.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / reductions.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = ufuncs.sqrt(scale)
    scale = _to_complex(scale)

    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and (dtypes.is_complex(get_aval(x).dtype)
                            or (y is not None and dtypes.is_complex(get_aval(y).dtype))):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    if sides == "twosided":
        freqs = jnp_fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype)
    else:
        freqs = jnp_fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype)

    result = _segment_spectra(x, win, detrend_func, nperseg, noverlap, nfft, sides)
    if y is not None:
        result_y = _segment_spectra(y, win, detrend_func, nperseg, noverlap, nfft, sides)
        result = ufuncs.conjugate(result) * result_y
    elif mode == "psd":
        result = ufuncs.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        # Fold the negative frequencies onto the positive ones (not the DC term, nor the
        # Nyquist term of an even-length FFT).
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].mul(2)

    time = creation.arange(nperseg / 2, _shape(x)[-1] - nperseg / 2 + 1, nperseg - noverlap,
                           dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = ufuncs.real(result)
    return freqs, time, manipulation.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window: str = "hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: bool = False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1):
    """Short-time Fourier transform of `x` along `axis` (jax.scipy.signal.stft): returns the
    sample frequencies, the segment times and the complex STFT, its frequency axis at `axis`
    and its time axis last. Segments of `nperseg` samples overlap by `noverlap` (default
    nperseg // 2), are windowed and scaled as scipy.signal.stft's 'spectrum' scaling."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling="spectrum", axis=axis, mode="stft",
                            boundary=boundary, padded=padded)


def _median_bias(n: int) -> float:
    """The bias of the median of n periodograms relative to their mean (Allen et al.,
    FINDCHIRP, 2012, appendix B)."""
    ii_2 = np.arange(2.0, n, 2)
    return 1 + np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2)


def csd(x, y, fs=1.0, window: str = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean"):
    """Cross power spectral density of `x` and `y` by Welch's method (jax.scipy.signal.csd):
    returns the sample frequencies and the segment periodograms averaged by `average`
    ('mean' or 'median'). `y` None gives the power spectral density of `x`."""
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, mode="psd")
    if y is not None:
        pxy = _to_complex(pxy)
    if get_aval(pxy).ndim >= 2 and get_aval(pxy).size > 0:
        if _shape(pxy)[-1] > 1:
            if average == "median":
                bias = np.asarray(_median_bias(_shape(pxy)[-1]), get_aval(pxy).dtype)
                if dtypes.is_complex(get_aval(pxy).dtype):
                    pxy = lax_extras.complex(reductions.median(ufuncs.real(pxy), axis=-1),
                                             reductions.median(ufuncs.imag(pxy), axis=-1))
                else:
                    pxy = reductions.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = reductions.mean(pxy, axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = manipulation.reshape(pxy, _shape(pxy)[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean"):
    """Power spectral density of `x` by Welch's method (jax.scipy.signal.welch): the real
    part of csd(x, None, ...)."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, ufuncs.real(pxx)


def _overlap_and_add(x, step: int):
    """Sum the frames of `x` ([..., frames, frame_length]), frame j starting at j * step:
    [..., step * (frames - 1) + frame_length]."""
    *batch, nframes, seglen = _shape(x)
    out_size = step * (nframes - 1) + seglen
    chunks = -(-seglen // step)  # each frame covers this many step-long chunks
    x = manipulation.pad(x, [(0, 0)] * len(batch) + [(0, 0), (0, chunks * step - seglen)])
    x = manipulation.reshape(x, (*batch, nframes, chunks, step))
    # Chunk c of frame j lands on output chunk j + c: shift each chunk column by c and sum.
    total = sum(manipulation.pad(x[..., c, :], [(0, 0)] * len(batch) + [(c, chunks - 1 - c), (0, 0)])
                for c in range(chunks))
    total = manipulation.reshape(total, (*batch, (nframes + chunks - 1) * step))
    return total[..., :out_size]


def istft(Zxx, fs=1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2):
    """Inverse short-time Fourier transform (jax.scipy.signal.istft): returns the sample times
    and the signal rebuilt by overlap-add from the STFT `Zxx` (frequencies along `freq_axis`,
    segments along `time_axis`), normalised by the summed squared window."""
    check_arraylike("istft", Zxx)
    Zxx = ensure_array(Zxx)
    ndim = get_aval(Zxx).ndim
    if ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = _canonical_axis(freq_axis, ndim)
    time_axis = _canonical_axis(time_axis, ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = _to_complex(Zxx)
    nfreq = _shape(Zxx)[freq_axis]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    # As JAX: falsy nperseg and noverlap (0) mean their defaults.
    nperseg_int = operator.index(nperseg or n_default)
    if nperseg_int < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft_int = n_default + (1 if input_onesided and nperseg_int == n_default + 1 else 0)
    else:
        nfft_int = operator.index(nfft)
    if nfft_int < nperseg_int:
        raise ValueError(f"FFT length ({nfft_int}) must be longer than nperseg ({nperseg_int}).")
    noverlap_int = operator.index(noverlap or nperseg_int // 2)
    if noverlap_int >= nperseg_int:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg_int - noverlap_int

    if time_axis != ndim - 1 or freq_axis != ndim - 2:
        outer = tuple(i for i in range(ndim) if i not in (time_axis, freq_axis))
        Zxx = manipulation.transpose(Zxx, outer + (freq_axis, time_axis))
    ifunc = jnp_fft.irfft if input_onesided else jnp_fft.ifft
    # [..., frame length, frames]; as JAX, the transform length is the `nfft` argument itself.
    xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nperseg_int, :]
    real_dtype = get_aval(xsubs).dtype
    if isinstance(window, (str, tuple)):
        win = creation.asarray(_get_window(window, nperseg_int), dtype=real_dtype)
    else:
        win = creation.asarray(window)
        if get_aval(win).ndim != 1:
            raise ValueError("window must be 1-D")
        if _shape(win)[0] != nperseg_int:
            raise ValueError(f"window must have length of {nperseg_int}")
    xsubs = xsubs * reductions.sum(win)  # undo the 'spectrum' scaling
    win = lax_shape_ops.expand_dims(win, (*range(get_aval(xsubs).ndim - 2), -1))
    x = _overlap_and_add(manipulation.swapaxes(xsubs * win, -2, -1), nstep)
    win_squared = manipulation.repeat(win * win, _shape(xsubs)[-1], axis=-1)
    norm = _overlap_and_add(manipulation.swapaxes(win_squared, -2, -1), nstep)
    if boundary:
        x = x[..., nperseg_int // 2:-(nperseg_int // 2)]
        norm = norm[..., nperseg_int // 2:-(nperseg_int // 2)]
    x = x / ufuncs.where(norm > 1e-10, norm, 1.0)
    if get_aval(x).ndim > 1 and time_axis != ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = manipulation.moveaxis(x, -1, time_axis)
    # As JAX, the times count the first axis of the result.
    time = creation.arange(_shape(x)[0], dtype=np.finfo(get_aval(x).dtype).dtype) / fs
    return time, x

