"""XLA's results for subnormal operands of transcendental functions on the CPU.

XLA computes with subnormals read as zero (backends/float_env.py), but its expansions of
several functions test the operand's size before any arithmetic and return the operand itself
for a tiny one (a select, which passes the bits through), while others compute with it and
get a zero of its sign. Measured on JAX 0.10.2 for every subnormal, eagerly and under jit, at
every size (docs/arithmetic.md, "Subnormal floats"): `keep` functions return `x`, `zero`
functions `copysign(0, x)`; float32 `cbrt` gives -5.5951735e-16 whatever the sign (XLA's
float32 cbrt reads the exponent of a flushed value), and `acos` rounds pi/2 one ulp low for a
negative float32 subnormal; float64 `atan` of one element gives a zero. NumPy's (and the C
library's) functions give a zero under the flushed environment where XLA keeps `x`, and `x`
where their scalar paths skip arithmetic, so the host's implementations pass their results
through `follow_xla` (and float32 `atan2` through `follow_xla_atan2`).
"""
from __future__ import annotations

import numpy as np

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
_HALF_PI_F32 = np.float32(np.pi / 2)

# name -> (float32 rule, float64 rule): "keep", "zero", or a function of the operand's sign.
RULES = {
    "sin": ("keep", "keep"), "tan": ("keep", "keep"), "atan": ("keep", "keep"),
    "expm1": ("keep", "keep"), "tanh": ("keep", "zero"),
    "asin": ("zero", "zero"), "sinh": ("zero", "zero"), "asinh": ("zero", "zero"),
    "atanh": ("zero", "zero"), "log1p": ("zero", "zero"), "erf_inv": ("zero", "zero"),
    "cbrt": (lambda negative: np.float32(-5.595173541877215e-16), "zero"),
    "acos": (lambda negative: np.nextafter(_HALF_PI_F32, np.float32(0)) if negative else _HALF_PI_F32,
             lambda negative: np.float64(np.pi / 2)),
}


def _flushing(dtype) -> bool:
    # Only XLA's flushed arithmetic reads the operand as zero; constants folded exactly (and
    # hosts without the flushed environment) keep the C library's answer.
    return not bool(np.asarray(np.finfo(dtype).smallest_subnormal, dtype) > 0)


def follow_xla(name: str, x, out):
    """`out` (the function `name` of `x`) with XLA's values where `x` is subnormal."""
    x = np.asarray(x)
    if x.dtype not in (F32, F64):
        return out
    tiny = np.finfo(x.dtype).tiny
    small = np.abs(x) < tiny  # zeros too: f(+-0) is left as computed
    if not small.any() or not _flushing(x.dtype):
        return out
    bits = x.view(np.uint32 if x.dtype == F32 else np.uint64)
    sub = small & ((bits << 1) != 0)  # the sign shifted out: subnormal, not a zero
    if not sub.any():
        return out
    rule = RULES[name][x.dtype == F64]
    if name == "atan" and x.dtype == F64 and x.size == 1:
        rule = "zero"  # XLA's one-element float64 atan calls the C library's, flushed
    if rule == "keep":
        sub, value = small, x  # f(+-0) is +-0 as well (erf_inv's impl loses the sign)
    elif rule == "zero":
        sub, value = small, np.copysign(np.zeros((), x.dtype), x)
    else:
        value = np.where(np.signbit(x), rule(True), rule(False)).astype(x.dtype)
    result = np.where(sub, value, out).astype(np.asarray(out).dtype)
    return result if result.ndim else result[()]


def following_xla(name: str, fn):
    """`fn` (a NumPy function of one real or complex operand) with `follow_xla` on its result."""
    def impl(x):
        return follow_xla(name, x, fn(x))
    impl.__name__ = getattr(fn, "__name__", name)
    return impl


_PI_F32, _PI_LO_F32 = np.float32(np.pi), np.float32(-8.7422776573e-08)


def follow_xla_atan2(y, x, out):
    """`out` (float32 atan2(y, x)) with XLA's values where an operand is subnormal. XLA's CPU
    code calls its own `atan2f`, fdlibm's algorithm, under the flushed environment: the zero
    and infinity tests read bits (a subnormal is not zero there), the quotient `y / x` reads a
    subnormal as zero (`atan2(1e-39, 1e-39)` is NaN, `atan2(1, -1e-39)` pi/2 one ulp low)."""
    y, x = np.asarray(y), np.asarray(x)
    if y.dtype != F32 or x.dtype != F32:
        return out
    tiny = np.finfo(F32).tiny
    if not ((np.abs(y) < tiny) | (np.abs(x) < tiny)).any() or not _flushing(F32):
        return out
    y, x = np.broadcast_arrays(y, x)
    by, bx = y.view(np.uint32) & 0x7FFFFFFF, x.view(np.uint32) & 0x7FFFFFFF
    ysub, xsub = (by != 0) & (by < 0x800000), (bx != 0) & (bx < 0x800000)
    sub = (ysub | xsub) & (by <= 0x7F800000) & (bx <= 0x7F800000)  # NaN operands give NaN
    if not sub.any():
        return out
    with np.errstate(invalid="ignore"):
        # |y / x| as the flushed division reads it: NaN (0 / 0), 0, or infinite (atan: pi/2).
        z = np.where(ysub & xsub, np.float32(np.nan), np.where(ysub, np.float32(0), _PI_F32 / 2))
        neg_y, neg_x = np.signbit(y), np.signbit(x)
        r = np.where(neg_x, np.where(neg_y, (z - _PI_LO_F32) - _PI_F32, _PI_F32 - (z - _PI_LO_F32)),
                     np.where(neg_y, -z, z))
    half_pi = np.copysign(_PI_F32 / 2, y)
    r = np.where(bx == 0x7F800000, np.where(neg_x, np.copysign(_PI_F32, y), np.copysign(F32.type(0), y)), r)
    r = np.where((bx == 0) | (by == 0x7F800000), half_pi, r)
    r = np.where(x.view(np.uint32) == 0x3F800000, y, r)  # x == 1: atanf(y) returns tiny y itself
    r = np.where(by == 0, out, r)  # y == +-0: the C library's answer, the same
    result = np.where(sub, r, out).astype(F32)
    return result if result.ndim else result[()]
