"""Discrete cosine transforms (jax.scipy.fft): dct, idct and their n-dimensional forms.

Only type 2 (and its inverse) exists, as in JAX. A length-N DCT-II is one length-N complex FFT
of the input reordered evens-then-reversed-odds, twisted by exp(-i pi k / 2N) (Makhoul, "A Fast
Cosine Transform in One and Two Dimensions", 1980); the inverse undoes each step. The
n-dimensional transforms apply the one-dimensional ones axis by axis. Results are real: float32,
or float64 for 64-bit inputs under x64; complex inputs transform their real and imaginary
parts separately.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.numpy import fft, selection, ufuncs
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact

__all__ = ["dct", "dctn", "idct", "idctn"]


# ---------------------------------------------------------------- argument handling


def _check_args(name: str, x, type, norm):
    check_arraylike(name, x)
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented")
    return ensure_array(x)


def _axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _shape_and_axes(x, s, axes):
    """The lengths and axes of an n-dimensional transform, as scipy.fft.dctn reads them: the
    last len(s) axes when only `s` is given, every axis when neither is."""
    ndim = get_aval(x).ndim
    if s is not None:
        try:
            s = list(s)
        except TypeError:
            s = [operator.index(s)]
        if len(s) > ndim:
            raise ValueError(f"s must have at most x.ndim ({ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
    else:
        try:
            axes = (operator.index(axes),)
        except TypeError:
            axes = tuple(axes)
        axes = tuple(_axis(a, ndim) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis: {axes}")
    lengths = dict(zip(axes, s)) if s is not None else {}
    return [(a, lengths.get(a)) for a in axes]


def _resize(x, n, axis: int):
    """Zero-pad or truncate `x` to length `n` along `axis` (n None keeps it)."""
    aval = get_aval(x)
    if n is None or n == aval.shape[axis]:
        return x
    pads = [(0, n - aval.shape[axis] if a == axis else 0, 0) for a in range(aval.ndim)]
    return lax.pad(x, np.zeros((), aval.dtype)[()], pads)


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A 1-D constant shaped to broadcast along `axis` of an ndim-dimensional array."""
    return v.reshape([-1 if a == axis else 1 for a in range(ndim)])


def _ortho_scale(n: int) -> np.ndarray:
    # The orthonormal DCT-II scales its first coefficient by sqrt(1 / 4N), the rest by sqrt(1 / 2N).
    return 1 / np.sqrt(np.where(np.arange(n) == 0, 4.0, 2.0) * n)


def _split_complex(fn, x, **kw):
    """Transform the real and imaginary parts of a complex `x` separately (the DCT is real)."""
    return lax_extras.complex(fn(ufuncs.real(x), **kw), fn(ufuncs.imag(x), **kw))


# ---------------------------------------------------------------- one dimension


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Discrete cosine transform of type 2 of `x` along `axis` (jax.scipy.fft.dct): `n`
    zero-pads or truncates that axis first; `norm` is None/"backward" (unnormalised,
    y_k = 2 sum_j x_j cos(pi k (2j + 1) / 2N)) or "ortho" (an orthonormal transform)."""
    x = _check_args("dct", x, type, norm)
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(dct, x, type=type, n=n, axis=axis, norm=norm)
    ndim = get_aval(x).ndim
    axis = _axis(axis, ndim)
    x = _resize(x, n, axis)
    size = get_aval(x).shape[axis]
    order = np.concatenate([np.arange(0, size, 2), np.arange(1, size, 2)[::-1]])
    spectrum = fft.fft(selection.take(x, order, axis=axis), axis=axis)
    real_dtype = get_aval(ufuncs.real(spectrum)).dtype
    theta = np.pi * np.arange(size) / (2 * size)
    # 2 Re(V_k exp(-i theta_k)), written on real and imaginary parts.
    cos = _along(2 * np.cos(theta), axis, ndim).astype(real_dtype)
    sin = _along(2 * np.sin(theta), axis, ndim).astype(real_dtype)
    out = ufuncs.real(spectrum) * cos + ufuncs.imag(spectrum) * sin
    if norm == "ortho":
        out = out * _along(_ortho_scale(size), axis, ndim).astype(real_dtype)
    return out


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of the type-2 discrete cosine transform along `axis` (jax.scipy.fft.idct), that is
    a type-3 DCT scaled so that idct(dct(x, norm=norm), norm=norm) == x; `n` zero-pads or
    truncates the input first."""
    x = _check_args("idct", x, type, norm)
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(idct, x, type=type, n=n, axis=axis, norm=norm)
    ndim = get_aval(x).ndim
    axis = _axis(axis, ndim)
    x = _resize(x, n, axis)
    (x,) = promote_dtypes_inexact(x)
    size = get_aval(x).shape[axis]
    scale = _ortho_scale(size)
    if norm != "ortho":
        scale = scale * scale
    # Undo the twist (times 2N for ifft's 1/N and the forward transform's factor 2), then
    # the FFT, then the reordering.
    theta = np.pi * np.arange(size) / (2 * size)
    twist = _along(2 * size * scale * np.exp(1j * theta), axis, ndim)
    complex_dtype = dtypes.to_complex_dtype(get_aval(x).dtype)
    y = ufuncs.real(fft.ifft(x * twist.astype(complex_dtype), axis=axis))
    order = np.concatenate([np.arange(0, size, 2), np.arange(1, size, 2)[::-1]])
    return selection.take(y, np.argsort(order), axis=axis)


# ---------------------------------------------------------------- n dimensions


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """Multidimensional type-2 discrete cosine transform (jax.scipy.fft.dctn): one dct per axis
    of `axes` (the last len(s) axes when only `s` is given, all axes by default), each axis
    zero-padded or truncated to the matching length of `s`."""
    x = _check_args("dctn", x, type, norm)
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(dctn, x, type=type, s=s, axes=axes, norm=norm)
    for axis, n in _shape_and_axes(x, s, axes):
        x = dct(x, n=n, axis=axis, norm=norm)
    return x


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """Multidimensional inverse of the type-2 discrete cosine transform (jax.scipy.fft.idctn):
    one idct per axis, with `s` and `axes` read as in dctn."""
    x = _check_args("idctn", x, type, norm)
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(idctn, x, type=type, s=s, axes=axes, norm=norm)
    for axis, n in _shape_and_axes(x, s, axes):
        x = idct(x, n=n, axis=axis, norm=norm)
    return x
