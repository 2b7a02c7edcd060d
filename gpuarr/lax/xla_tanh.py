"""XLA's float32 tanh on the CPU, in NumPy, bit for bit.

XLA's CPU code computes float32 tanh with a rational approximation (its codegen/intrinsic
tanh, which kernels/dialect_c.h's `xla_tanh_f32` repeats in C): the argument clamped to
+-7.99881172, a numerator of degree 13 and a denominator of degree 6 in x**2 evaluated by
Horner's rule with fused multiply-adds, `x` itself below 0.0004 and +-1 from 20 on. NumPy's
tanh is the C library's, within an ulp of the exact value, so it differs from JAX's in the
last bit for most arguments. NumPy has no fused multiply-add; `fma_f32` computes one exactly
from float64 arithmetic (docs/arithmetic.md, "tanh", gives the cost against `np.tanh`).
"""
from __future__ import annotations

import numpy as np

CLAMP = np.float32(7.99881172180175781)
_NUMERATOR = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
              5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
              4.89352455891786e-03)
_DENOMINATOR = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                4.89352518554385e-03)
# XLA's constants are float32 values.
_NUM32 = [float(np.float32(c)) for c in _NUMERATOR]
_DEN32 = [float(np.float32(c)) for c in _DENOMINATOR]


def _fma_into(acc64, x2_64, c, s, out32, bits):
    """acc = fma(acc, x2, c) in float32, kept in the float64 array `acc64` (float32 values).

    The product of two float32 values is exact in float64 (48 significant bits), and the sum
    with `c` rounds once there, to `s`. Rounding `s` to float32 gives the exactly rounded sum
    unless `s` lies exactly halfway between two float32 values while the exact sum does not
    (a float64 rounding error could only move the sum onto such a midpoint, never across
    one: a midpoint is itself a float64 value, nearer than `s`). There the exact error of the
    float64 sum (Knuth's TwoSum) says which way to round. Results are normal floats here, so
    a float32 midpoint is a float64 value whose low 29 significand bits are 1 << 28."""
    np.multiply(acc64, x2_64, out=acc64)  # p, exact
    np.add(acc64, c, out=s)
    np.bitwise_and(s.view(np.uint64), np.uint64(0x1FFFFFFF), out=bits)
    tie = bits == 0x10000000
    np.copyto(out32, s, casting="same_kind")
    if tie.any():
        p, t = acc64[tie], s[tie]
        back = t - p
        err = (p - (t - back)) + (c - back)
        out32[tie] = np.where(err != 0, np.nextafter(t, np.where(err > 0, np.inf, -np.inf)), t)
    np.copyto(acc64, out32)


def fma_f32(a, b, c):
    """fma(a, b, c) of float32 arrays, rounded once, as the CPU's fused multiply-add."""
    a64, b64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    acc, s = np.array(a64), np.empty(a64.shape)
    out = np.empty(a64.shape, np.float32)
    _fma_into(acc, np.asarray(b64), np.float64(c), s, out, np.empty(a64.shape, np.uint64))
    return out


_BLOCK = 1 << 14  # float64 scratch that stays in cache


def tanh_f32(x):
    """XLA's float32 tanh of the float32 array `x`."""
    x = np.asarray(x, np.float32)
    flat = x.reshape(-1)
    out = np.empty(flat.shape, np.float32)
    m = min(flat.size, _BLOCK)
    x2, num, den, s = (np.empty(m) for _ in range(4))
    bits, o32, c32 = np.empty(m, np.uint64), np.empty(m, np.float32), np.empty(m, np.float32)
    for lo in range(0, flat.size, _BLOCK):
        v = flat[lo:lo + _BLOCK]
        k = v.size
        c = np.clip(v, -CLAMP, CLAMP, out=c32[:k])  # NaN stays NaN
        np.multiply(c, c, out=o32[:k])  # x**2 rounded to float32
        np.copyto(x2[:k], o32[:k])
        num[:k], den[:k] = _NUM32[0], _DEN32[0]
        for coef in _NUM32[1:]:
            _fma_into(num[:k], x2[:k], coef, s[:k], o32[:k], bits[:k])
        n32 = (c * o32[:k]).astype(np.float32)
        for coef in _DEN32[1:]:
            _fma_into(den[:k], x2[:k], coef, s[:k], o32[:k], bits[:k])
        with np.errstate(invalid="ignore"):
            r = np.divide(n32, o32[:k], out=out[lo:lo + k])
        ax = np.abs(v)
        np.copyto(r, v, where=ax < np.float32(0.0004))
        np.copyto(r, np.copysign(np.float32(1), v), where=ax >= np.float32(20))
    return out.reshape(x.shape) if x.ndim else out[0]
