"""Bit-level arithmetic: `reduce_precision` (XLA's ReducePrecision, rounding a float to a
narrower exponent and mantissa) and `mulhi` (the high half of an integer product).

Both work on the integer bits of their operands, so their NumPy implementations are exact
and give XLA's results bit for bit, NaN payloads and signed zeros included.
"""
from __future__ import annotations

import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, abstract_eval_rules
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules, vectorized_rule
from gpuarr.lax import arguments, lax
from gpuarr.lax.slicing import checked_impl

# ---------------------------------------------------------------- reduce_precision


def _float_layout(dtype):
    """(bit width, exponent bits, mantissa bits) of a floating-point dtype."""
    nbits = np.dtype(dtype).itemsize * 8
    nmant = int(dtypes.finfo(dtype).nmant)
    return nbits, nbits - 1 - nmant, nmant


def _round_mantissa(bits, uint, src_m, dest_m):
    """Round to nearest even at `dest_m` mantissa bits: add 0111... plus the last kept bit,
    then clear the dropped bits. A carry into the exponent is the correct rounding."""
    shift = src_m - dest_m
    last_kept = uint.type(1 << shift)
    bias = (bits & last_kept) >> uint.type(shift)
    bias += uint.type((1 << (shift - 1)) - 1)
    keep = uint.type(~((1 << shift) - 1) & np.iinfo(uint).max)
    return (bits + bias) & keep


def _clamp_exponent(bits, uint, nbits, src_e, src_m, dest_e):
    """Exponents above the narrow format's range become infinities, those at or below its
    smallest normal exponent become zeros (subnormals flush, as in XLA)."""
    exp_mask = ((1 << src_e) - 1) << src_m
    bias, narrow_bias = (1 << (src_e - 1)) - 1, (1 << (dest_e - 1)) - 1
    exponent = bits & uint.type(exp_mask)
    overflows = exponent > uint.type((bias + narrow_bias) << src_m)
    underflows = exponent <= uint.type((bias - narrow_bias) << src_m)
    signed_zero = bits & uint.type(1 << (nbits - 1))
    bits = np.where(overflows, signed_zero | uint.type(exp_mask), bits)
    return np.where(underflows, signed_zero, bits)


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    nbits, src_e, src_m = _float_layout(x.dtype)
    uint = np.dtype(f"uint{nbits}")
    bits = x.view(uint)
    with np.errstate(over="ignore"):
        if mantissa_bits < src_m:
            bits = _round_mantissa(bits, uint, src_m, mantissa_bits)
        if exponent_bits < src_e:
            bits = _clamp_exponent(bits, uint, nbits, src_e, src_m, exponent_bits)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(x)
    # NaNs keep their bits. XLA's CPU backend computes bfloat16 in float32 and converts
    # back, which leaves the sign and the canonical quiet NaN (unless the rounding is a no-op
    # even in float32, when the operation is dropped).
    nan_bits = x.view(uint)
    if x.dtype.name == "bfloat16" and (exponent_bits < 8 or mantissa_bits < 23):
        nan_bits = (nan_bits & uint.type(0x8000)) | uint.type(0x7FC0)
    return np.where(nan, nan_bits, bits).astype(uint).view(x.dtype)


def _reduce_precision_abstract(x, *, exponent_bits, mantissa_bits):
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"reduce_precision does not accept dtype {x.dtype.name}. Accepted dtypes "
                        "are subtypes of floating.")
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
    return [x]


def _reduce_precision_transpose(ct, x, **params):
    return [None if type(ct) is Zero else reduce_precision_p.bind(ct, **params)]


reduce_precision_p = Primitive("reduce_precision")
impl_rules[reduce_precision_p] = _reduce_precision_impl
abstract_eval_rules[reduce_precision_p] = _reduce_precision_abstract
checked_impl(reduce_precision_p)  # the bit counts are checked eagerly too
ad.deflinear(reduce_precision_p, _reduce_precision_transpose)  # tangents are rounded alike
batch_rules[reduce_precision_p] = vectorized_rule(reduce_precision_p)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Round `operand` to the float format with `exponent_bits` exponent and `mantissa_bits`
    mantissa bits, keeping its dtype (XLA's ReducePrecision): round to nearest even, overflow
    to infinity, values below the format's smallest normal to zero, NaN kept."""
    exponent_bits = operator.index(exponent_bits)
    mantissa_bits = operator.index(mantissa_bits)
    if isinstance(operand, arguments._SCALARS):
        operand = arguments._scalar_as("reduce_precision", operand,
                                 dtypes.dtype(operand, canonicalize=True))
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)


# ---------------------------------------------------------------- mulhi


def _mulhi_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dtype = x.dtype
    bits = dtype.itemsize * 8
    signed = dtype.kind == "i"
    if bits < 64:  # the exact product fits the double-width type
        wide = np.dtype(f"{'i' if signed else 'u'}{bits // 4}")
        prod = x.astype(wide) * y.astype(wide)
        return (prod >> wide.type(bits)).astype(dtype)
    return _mulhi64(x, y, signed)


def _mulhi64(x, y, signed):
    """High 64 bits from four 32x32-bit partial products; the signed result corrects the
    unsigned one by subtracting y where x < 0 and x where y < 0 (mod 2**64)."""
    u64, lo, s32 = np.uint64, np.uint64(0xFFFFFFFF), np.uint64(32)
    xu, yu = x.astype(u64), y.astype(u64)
    x_lo, x_hi, y_lo, y_hi = xu & lo, xu >> s32, yu & lo, yu >> s32
    lo_lo, lo_hi, hi_lo, hi_hi = x_lo * y_lo, x_lo * y_hi, x_hi * y_lo, x_hi * y_hi
    cross = (lo_hi & lo) + (hi_lo & lo) + (lo_lo >> s32)
    high = hi_hi + (lo_hi >> s32) + (hi_lo >> s32) + (cross >> s32)
    if signed:
        with np.errstate(over="ignore"):
            high = high - np.where(x < 0, yu, u64(0)) - np.where(y < 0, xu, u64(0))
    return high.astype(x.dtype)


mulhi_p = lax.binop("mulhi", _mulhi_impl, "int")
ad.defjvp_zero(mulhi_p)


def mulhi(x, y, /):
    """The upper N bits of the 2N-bit product of N-bit integers `x` and `y` (elementwise, with
    lax's broadcasting rules); signed types give the high half of the signed product."""
    x, y = arguments._coerce_scalars("mulhi", x, y)
    return mulhi_p.bind(x, y)
