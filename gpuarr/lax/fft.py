"""The fast Fourier transform primitive (lax.fft) and its rules.

`fft_p` transforms the trailing `len(fft_lengths)` axes of its operand (at most three, as XLA
and cuFFT allow). Its four kinds follow XLA: FFT and IFFT are complex to complex, RFFT takes a
real array to the non-negative half of its spectrum (last axis `n // 2 + 1`), IRFFT takes such
a half spectrum back to a real array of the given lengths. Every kind is linear, so the JVP
applies the transform to the tangent; the transposes are JAX's (jax/_src/lax/fft.py).
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from gpuarr.impls import fresh_output_prims, impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero
from gpuarr.lax import arguments, conversions, lax
from gpuarr.lax.extras import _TO_COMPLEX, _TO_REAL
from gpuarr.lax.extras import conj as _conj  # gpuarr.numpy.fft imports it from here

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """Which transform `lax.fft` computes."""

    FFT = 0  # forward, complex to complex
    IFFT = 1  # inverse, complex to complex
    RFFT = 2  # forward, real to complex (the non-negative frequencies)
    IRFFT = 3  # inverse, complex (non-negative frequencies) to real


_FFT_TYPE_NAMES = {name: t for t in FftType for name in (t.name, t.name.lower())}
_MAX_FFT_DIMS = 3


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        if fft_type not in _FFT_TYPE_NAMES:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        return _FFT_TYPE_NAMES[fft_type]
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def fft(x, fft_type, fft_lengths):
    """The FFT of kind `fft_type` (a `FftType` or one of 'fft', 'ifft', 'rfft', 'irfft') over
    the trailing `len(fft_lengths)` axes of `x`, as `jax.lax.fft`. FFT, IFFT and IRFFT take
    `x` as complex (complex64, or complex128 for 64-bit inputs); RFFT takes a real `x` and
    rejects complex input with ValueError. IRFFT's input holds `fft_lengths[-1] // 2 + 1`
    frequencies on its last axis and its output has the `fft_lengths`; IFFT and IRFFT scale by
    1 / prod(fft_lengths). Empty `fft_lengths` return `x` converted."""
    typ = _fft_type(fft_type)
    in_dtype = arguments._dtype_of(x)
    if typ == FftType.RFFT:
        if dtypes.is_complex(in_dtype):
            raise ValueError("only real valued inputs supported for rfft")
        x = conversions.convert_element_type(x, dtypes.to_inexact_dtype(in_dtype))
    else:
        x = conversions.convert_element_type(x, dtypes.to_complex_dtype(in_dtype))
    lengths = tuple(operator.index(n) for n in fft_lengths)
    if not lengths:
        return x
    return fft_p.bind(x, fft_lengths=lengths, fft_type=typ)


# ---------------------------------------------------------------- abstract evaluation


def _fft_abstract(x, fft_type, fft_lengths):
    k = len(fft_lengths)
    if not 1 <= k <= _MAX_FFT_DIMS:
        raise ValueError(f"lax.fft transforms 1 to {_MAX_FFT_DIMS} trailing axes, got "
                         f"fft_lengths {fft_lengths}; jnp.fft.fftn splits larger transforms.")
    if any(n < 0 for n in fft_lengths):
        raise ValueError(f"fft_lengths must be non-negative, got {fft_lengths}")
    if k > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {fft_lengths}.")
    name = FftType(fft_type).name
    if fft_type == FftType.RFFT:
        if x.dtype not in (np.float32, np.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if x.shape[-k:] != fft_lengths:
            raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {fft_lengths}")
        shape = x.shape[:-k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        return [ShapedArray(shape, _TO_COMPLEX[x.dtype], x.weak_type)]
    if not dtypes.is_complex(x.dtype):
        raise ValueError(f"{name} input must be complex64 or complex128, got {x.dtype}")
    if fft_type == FftType.IRFFT:
        if x.shape[-k:-1] != fft_lengths[:-1] or x.shape[-1] != fft_lengths[-1] // 2 + 1:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"all except the last fft_length, and the last one must be "
                             f"fft_lengths[-1] // 2 + 1; got fft_lengths={fft_lengths}")
        shape = x.shape[:-k] + fft_lengths
        return [ShapedArray(shape, _TO_REAL[x.dtype], x.weak_type)]
    if x.shape[-k:] != fft_lengths:
        raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {fft_lengths}")
    return [x]


# ---------------------------------------------------------------- NumPy implementation

_NUMPY_FFTS = {
    FftType.FFT: lambda x, s, axes: np.fft.fftn(x, axes=axes),
    FftType.IFFT: lambda x, s, axes: np.fft.ifftn(x, axes=axes),
    FftType.RFFT: lambda x, s, axes: np.fft.rfftn(x, axes=axes),
    FftType.IRFFT: lambda x, s, axes: np.fft.irfftn(x, s=s, axes=axes),
}


def _fft_impl(x, fft_type, fft_lengths):
    x = np.asarray(x)
    out = _fft_abstract(ShapedArray(x.shape, x.dtype), fft_type, fft_lengths)[0]
    if out.size == 0 or 0 in fft_lengths:
        return np.zeros(out.shape, out.dtype)  # NumPy rejects empty transforms
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    # NumPy keeps single precision (and computes in double before NumPy 2.0): cast back.
    return _NUMPY_FFTS[fft_type](x, fft_lengths, axes).astype(out.dtype, copy=False)


# ---------------------------------------------------------------- transposition


def _hermitian_mask(m: int, n: int, dtype) -> np.ndarray:
    """Weights of a half spectrum's entries in the full one: the zero and (for even n) Nyquist
    frequencies appear once, every other entry twice."""
    mask = np.full(m, 2, dtype)
    mask[0] = 1
    if n % 2 == 0:
        mask[-1] = 1
    return mask


def _rfft_transpose(ct, fft_lengths):
    # JAX's formula: the IRFFT of the conjugated cotangent, whose duplicated frequencies are
    # halved, scaled by the transform size.
    aval = get_aval(ct)
    mask = _hermitian_mask(aval.shape[-1], fft_lengths[-1], aval.dtype)
    weights = (1 / mask).astype(aval.dtype).reshape((1,) * (aval.ndim - 1) + mask.shape)
    out = fft(lax.mul(_conj(ct), weights), FftType.IRFFT, fft_lengths)
    return lax.mul(out, np.asarray(math.prod(fft_lengths), _TO_REAL[aval.dtype])[()])


def _irfft_transpose(ct, fft_lengths):
    # JAX's formula: the RFFT of the cotangent with the de-duplicated frequencies doubled and
    # the inverse's scale applied, conjugated (JAX's convention for complex gradients).
    x = fft(ct, FftType.RFFT, fft_lengths)
    aval = get_aval(x)
    mask = _hermitian_mask(aval.shape[-1], fft_lengths[-1], aval.dtype)
    weights = (mask / math.prod(fft_lengths)).astype(aval.dtype)
    return _conj(lax.mul(x, weights.reshape((1,) * (aval.ndim - 1) + mask.shape)))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    # The DFT matrix is symmetric: FFT and IFFT are their own transposes.
    return [fft_p.bind(ct, fft_lengths=fft_lengths, fft_type=fft_type)]


# ---------------------------------------------------------------- batching


def _fft_batch(axis_size, vals, dims, fft_type, fft_lengths):
    (x,), (d,) = vals, dims
    # The transform acts on the trailing axes, so a leading batch axis is left alone.
    x = batching.move_to(x, d, 0, axis_size)
    return fft_p.bind(x, fft_lengths=fft_lengths, fft_type=fft_type), 0


fft_p = Primitive("fft")
impl_rules[fft_p] = _fft_impl
fresh_output_prims.add(fft_p)
abstract_eval_rules[fft_p] = _fft_abstract
ad.deflinear(fft_p, _fft_transpose)
batching.batch_rules[fft_p] = _fft_batch
