"""jnp.fft: NumPy's discrete Fourier transforms with JAX's signatures and dtypes.

Every transform is one `lax.fft` over the trailing axes: the requested axes are moved to the
end, cropped or zero-padded to the requested lengths, transformed, scaled for `norm` and
moved back (jax/_src/numpy/fft.py does the same). Results are complex64 (complex128 for 64-bit
inputs under x64); the inverse real transforms give the matching real type.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax.fft import FftType
from gpuarr.lax.fft import fft as _lax_fft
from gpuarr.numpy.arguments import check_arraylike, ensure_array
from gpuarr.numpy.manipulation import moveaxis, roll

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift",
    "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]

_NORMS = ("backward", "ortho", "forward")
# lax.fft transforms at most this many axes at once; fftn splits larger transforms.
_MAX_LAX_DIMS = 3


# ---------------------------------------------------------------- the shared core


def _norm_scale(func_name: str, norm, lengths) -> float | None:
    """The factor `norm` applies to a transform that lax.fft leaves unnormalised (forward)
    or scaled by 1/n (inverse); None when there is nothing to apply."""
    if norm is None or norm == "backward":
        return None
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
    n = float(math.prod(lengths))
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    return n if inverse else 1 / n


def _scale(x, factor):
    return lax.mul(x, np.asarray(factor, get_aval(x).dtype)[()])


def _crop_or_pad(arr, in_shape):
    """Slice `arr` down to `in_shape` along each axis, then zero-pad it up to `in_shape`."""
    shape = get_aval(arr).shape
    if any(n < d for n, d in zip(in_shape, shape)):
        arr = lax.slice(arr, (0,) * len(shape), tuple(min(n, d) for n, d in zip(in_shape, shape)))
        shape = get_aval(arr).shape
    if any(n > d for n, d in zip(in_shape, shape)):
        zero = np.zeros((), get_aval(arr).dtype)[()]
        arr = lax.pad(arr, zero, tuple((0, n - d, 0) for n, d in zip(in_shape, shape)))
    return arr


def _canonical_axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _fit_to_lengths(arr, fft_type, s, k: int):
    """Crop or zero-pad the trailing `k` axes of `arr` to the lengths `s` (IRFFT's last axis
    to `s[-1] // 2 + 1` frequencies); return it with the transform lengths, which default to
    the axes' sizes (2 * (m - 1) for IRFFT's last axis of `m` frequencies)."""
    shape = get_aval(arr).shape
    lead = len(shape) - k
    if s is not None:
        in_shape = shape[:lead] + tuple(s)
        if fft_type == FftType.IRFFT:
            in_shape = in_shape[:-1] + (in_shape[-1] // 2 + 1,)
        return _crop_or_pad(arr, in_shape), tuple(s)
    lengths = shape[lead:]
    if fft_type == FftType.IRFFT and k:
        lengths = lengths[:-1] + (max(0, 2 * (lengths[-1] - 1)),)
    return arr, lengths


def _check_shape_and_axes(full_name, s, axes, ndim: int):
    """Validate `s` and `axes` as JAX does; axes default to all of them, or the last len(s)."""
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(n <= 0 for n in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    given = axes
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = tuple(_canonical_axis(ax, ndim) for ax in axes)
    if len(axes) != len(set(axes)):
        shown = given if given is not None else axes
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {shown}.")
    return s, axes


def _fft_core(func_name, fft_type, a, s, axes, norm):
    full_name = f"jax.numpy.fft.{func_name}"
    check_arraylike(full_name, a)
    arr = ensure_array(a)
    ndim = get_aval(arr).ndim
    s, axes = _check_shape_and_axes(full_name, s, axes, ndim)
    # lax.fft transforms trailing axes: move the requested ones to the end, in their order.
    trailing = tuple(range(ndim - len(axes), ndim))
    moved = axes != trailing
    if moved:
        arr = moveaxis(arr, axes, trailing)
    arr, lengths = _fit_to_lengths(arr, fft_type, s, len(axes))
    out = _fft_nd(arr, fft_type, lengths)
    factor = _norm_scale(func_name, norm, lengths)
    if factor is not None:
        out = _scale(out, factor)
    return moveaxis(out, trailing, axes) if moved else out


def _fft_nd(arr, fft_type, lengths):
    """lax.fft over any number of trailing axes: transforms of more than three axes are
    split into transforms of at most three (four as two 2-D transforms), as JAX does."""
    if len(lengths) <= _MAX_LAX_DIMS:
        return _lax_fft(arr, fft_type, lengths)
    n = 2 if len(lengths) == 4 else _MAX_LAX_DIMS
    ndim = get_aval(arr).ndim
    src = tuple(range(ndim - len(lengths), ndim - n))
    dst = tuple(range(ndim - len(lengths) + n, ndim))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = _lax_fft(arr, fft_type, lengths[-n:])
        arr = moveaxis(_fft_nd(moveaxis(arr, src, dst), FftType.FFT, lengths[:-n]), dst, src)
        return arr
    arr = moveaxis(_fft_nd(moveaxis(arr, src, dst), FftType.IFFT, lengths[:-n]), dst, src)
    return _lax_fft(arr, fft_type, lengths[-n:])


def _check_1d_axis(func_name, axis):
    if isinstance(axis, (list, tuple)):
        full_name = f"jax.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
    _check_1d_axis(func_name, axis)
    axes = None if axis is None else [axis]
    s = None if n is None else [n]
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


# ---------------------------------------------------------------- one-dimensional transforms


def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform of `a` along `axis`, as
    `numpy.fft.fft`: `n` crops or zero-pads that axis first; `norm` is "backward" (default,
    no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n). Returns complex64 (complex128 for
    64-bit inputs)."""
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform along `axis`, as
    `numpy.fft.ifft`: scaled by 1/n with norm="backward" (default), 1/sqrt(n) with "ortho"
    and not at all with "forward"; `n` crops or zero-pads the input axis."""
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of real `a` along `axis`, keeping the `n // 2 + 1`
    non-negative frequencies, as `numpy.fft.rfft`. Complex input raises ValueError; float16
    input raises ValueError as in JAX (convert it to float32 first)."""
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of `rfft`: a real array of length `n` (default 2 * (m - 1) for `m` input
    frequencies) along `axis`, as `numpy.fft.irfft`. The input is cropped or zero-padded to
    `n // 2 + 1` frequencies first."""
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a signal whose spectrum is Hermitian, given by its `m` non-negative
    frequencies `a`: a real array of length `n` (default 2 * (m - 1)), as `numpy.fft.hfft`."""
    check_arraylike("jax.numpy.fft.hfft", a)
    a = ensure_array(a)
    _check_1d_axis("hfft", axis)
    conj_a = lax_extras.conj(a) if dtypes.is_complex(get_aval(a).dtype) else a
    nn = (get_aval(conj_a).shape[axis] - 1) * 2 if n is None else n
    out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
    return _scale(out, nn)


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of `hfft`: the `n // 2 + 1` non-negative frequencies of the Hermitian
    spectrum of the real signal `a`, as `numpy.fft.ihfft`."""
    check_arraylike("jax.numpy.fft.ihfft", a)
    _check_1d_axis("ihfft", axis)
    arr = ensure_array(a)
    nn = get_aval(arr).shape[axis] if n is None else n
    out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return _scale(lax_extras.conj(out), 1 / nn)


# ---------------------------------------------------------------- two- and n-dimensional


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional discrete Fourier transform over `axes`, as `numpy.fft.fft2`; `s`
    gives the lengths the two axes are cropped or zero-padded to."""
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse discrete Fourier transform over `axes`, as
    `numpy.fft.ifft2`."""
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional transform of real `a` over `axes`, keeping the non-negative
    frequencies of the last axis, as `numpy.fft.rfft2`."""
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of `rfft2`: a real array with lengths `s` over `axes`, as
    `numpy.fft.irfft2`."""
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional discrete Fourier transform over `axes` (all axes, or the last
    `len(s)`, when None), as `numpy.fft.fftn`; `s` crops or zero-pads each axis."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse discrete Fourier transform over `axes`, as
    `numpy.fft.ifftn`."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform of real `a` over `axes`, keeping the non-negative
    frequencies of the last one, as `numpy.fft.rfftn`."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of `rfftn`: a real array with lengths `s` over `axes` (the last one
    2 * (m - 1) by default), as `numpy.fft.irfftn`."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# ---------------------------------------------------------------- frequencies and shifts


def _check_freq_args(func_name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{func_name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{func_name} only takes a single "
                         f"value. Got d = {list(d)}.")
    return operator.index(n)


def _frequencies(k: np.ndarray, n: int, d, dtype, device, compute_dtype):
    """`k / (d * n)` with both operands in `compute_dtype(dtype)` (the default float type when
    `dtype` is None), as JAX computes them."""
    from gpuarr.numpy.creation import asarray
    from gpuarr.numpy.ufuncs import true_divide
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    compute = compute_dtype(dtype)
    result = true_divide(asarray(k.astype(compute)), asarray(d * n, dtype=compute))
    if device is not None:
        from gpuarr.device_api import device_put
        result = device_put(result, device)
    return result


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `n`-point `fft` with sample spacing `d`:
    [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n), as `numpy.fft.fftfreq`. They are
    computed in the real floating type of `dtype` (default: the default float type) and
    returned as `dtype`."""
    n = _check_freq_args("fftfreq", n, d)
    k = (np.arange(n) + n // 2) % max(n, 1) - n // 2
    out = _frequencies(k, n, d, dtype, device, dtypes.to_floating_dtype)
    return out if dtype is None else lax_conversions.convert_element_type(out, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `n`-point `rfft` with sample spacing `d`:
    [0, 1, ..., n//2] / (d * n), as `numpy.fft.rfftfreq`. As in JAX, both operands of the
    division have `dtype` (so an integer `dtype` truncates d * n and gives floats)."""
    n = _check_freq_args("rfftfreq", n, d)
    return _frequencies(np.arange(n // 2 + 1), n, d, dtype, device, lambda dt: dt)


def _shifts(func_name, x, axes, sign):
    check_arraylike(func_name, x)
    x = ensure_array(x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    if isinstance(axes, int):
        return x, sign * (shape[axes] // 2), axes
    return x, [sign * (shape[ax] // 2) for ax in axes], tuple(axes)


def fftshift(x, axes=None):
    """Move the zero-frequency entry to the centre of `axes` (all axes when None), as
    `numpy.fft.fftshift`."""
    x, shift, axes = _shifts("fftshift", x, axes, 1)
    return roll(x, shift, axes) if axes != () else x


def ifftshift(x, axes=None):
    """The inverse of `fftshift` (they differ for odd lengths), as `numpy.fft.ifftshift`."""
    x, shift, axes = _shifts("ifftshift", x, axes, -1)
    return roll(x, shift, axes) if axes != () else x
