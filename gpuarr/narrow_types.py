"""Arithmetic on the narrow ml_dtypes types as XLA's CPU backend does it.

The narrow types are the 8-bit floats (float8_e4m3fn and the rest), float4_e2m1fn and the 2- and
4-bit integers. ml_dtypes gives NumPy loops for some operations on them, but those compute in
float32 and round once, or fall back to int8 results. XLA instead computes each operation in a
wider type and converts the result back:

- the 8- and 4-bit floats compute in float16 (which holds each of their values exactly), so a
  result is rounded to float16 first and then to the narrow type, as two conversions; the
  exception is float8_e8m0fnu, whose exponent range needs float32;
- the integers compute in int8 or uint8 and keep the low bits (two's complement wrap-around);
- float32 arithmetic runs with subnormals flushed to zero (so float8_e8m0fnu's smallest value,
  2**-127, reads as 0 in arithmetic, and float8_e8m0fnu has no 0: it becomes NaN);
- conversions round as ml_dtypes does, except that float4_e2m1fn, which has no NaN, stores NaN
  as -0.0; a float becomes an integer by truncation, NaN -> 0, with values at or beyond the
  integer type's bounds (the bounds rounded to the float's type) saturating, and integers wrap
  into narrower integers;
- some operations are expansions that XLA evaluates step by step in the narrow type (exp2,
  logistic, integer_pow, the inverse trigonometric functions), or in float32 with one rounding
  (sinh, cosh, lgamma, digamma, erf_inv, ...);
- sums and products accumulate in the narrow type itself, in XLA's order (`reduce`,
  `cumulative`); matrix products and convolutions accumulate in float32 (`convert_product`).

`elementwise(impl)` wraps an elementwise NumPy implementation accordingly, `convert` is
convert_element_type and `bitcast` bitcast_convert_type. NaN payloads and the sign of NaN may
differ from XLA's, which depend on the operation; values of float8_e8m0fnu in float32's subnormal
range convert as ml_dtypes rounds them (XLA's CPU code does not treat them alike in all paths).
"""
from __future__ import annotations

import functools

import numpy as np

from gpuarr import dtypes

NARROW = dtypes.NARROW_DTYPES
_FLOATS = frozenset(dt for dt in NARROW if dtypes.is_float(dt))
_INTS = frozenset(dt for dt in NARROW if dtypes.is_int(dt))
_E8M0 = np.dtype(dtypes.float8_e8m0fnu) if hasattr(dtypes, "float8_e8m0fnu") else None
_F4 = np.dtype(dtypes.float4_e2m1fn) if hasattr(dtypes, "float4_e2m1fn") else None
_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_TINY32 = np.float32(np.finfo(np.float32).tiny)


def compute_dtype(dt: np.dtype) -> np.dtype:
    """The type XLA computes a narrow type's operations in."""
    if dt in _FLOATS:
        return _F32 if dt == _E8M0 else _F16
    return np.dtype(np.int8) if dtypes.is_signed_int(dt) else np.dtype(np.uint8)


def _is_floating(dt: np.dtype) -> bool:
    return dtypes.is_float(dt)


def flush_subnormals(x: np.ndarray) -> np.ndarray:
    """float32 values below the smallest normal magnitude become zeros of their sign, as
    arithmetic under flush-to-zero reads and writes them."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < _TINY32, np.copysign(np.float32(0), x), x)


def _to_narrow_float(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Round a real array (any float or integer type) to the narrow float `dt`."""
    src = x.dtype
    if src in _INTS:
        x = x.astype(np.int8 if dtypes.is_signed_int(src) else np.uint8)
    elif src in _FLOATS:
        x = x.astype(compute_dtype(src))  # exact; ml_dtypes has no narrow -> narrow loops
    out = x.astype(dt)
    if dt == _F4 and _is_floating(x.dtype):
        # float4_e2m1fn has no NaN: XLA stores it as -0.0 (ml_dtypes keeps the NaN's sign).
        nan = np.isnan(x)
        if nan.any():
            out = np.where(nan, np.array(-0.0, dt), out)
    return out


def _to_int(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Convert to the integer type `dt` as XLA does: floats truncate, NaN -> 0, and values at
    or beyond the bounds (the bounds rounded to the float's type) saturate; integers wrap."""
    info = dtypes.iinfo(dt)
    src = x.dtype
    if _is_floating(src):
        wide = x.astype(np.float64)
        hi = float(convert(np.asarray(int(info.max)), src).astype(np.float64))
        lo = float(convert(np.asarray(int(info.min)), src).astype(np.float64))
        with np.errstate(invalid="ignore"):
            v = np.trunc(np.where(np.isnan(wide), 0.0, wide))
            v = np.where(wide >= hi, float(info.max), np.where(wide <= lo, float(info.min), v))
            v = np.clip(v, float(info.min), float(info.max))  # a NaN bound clamps nothing
        if dt.itemsize == 8:  # float64 cannot hold every int64: exact bounds, as in lax
            out = np.where(v >= float(info.max), int(info.max), 0).astype(dt)
            inner = (v < float(info.max)) & (v > float(info.min))
            out[inner] = v[inner].astype(dt)
            out[v <= float(info.min)] = info.min
            return out
        ints = v.astype(np.int64)
    else:
        ints = x.astype(np.int64)
    if dt in _INTS:
        bits = int(info.bits)
        ints = ((ints - int(info.min)) & ((1 << bits) - 1)) + int(info.min)
    return ints.astype(dt)


def convert(x, dt) -> np.ndarray:
    """convert_element_type where the operand or the result has a narrow type."""
    dt = np.dtype(dt)
    x = np.asarray(x)
    if x.dtype == dt:
        return x
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(dt):
        x = np.real(x)
    src = x.dtype
    if src in _INTS:  # exact in int64, from which NumPy converts every way
        x = x.astype(np.int64)
    if dt == np.bool_:
        # Through float64, where every narrow value is normal: float8_e8m0fnu's 2**-127 is a
        # float32 subnormal, which the host's float environment would compare as zero.
        return (x.astype(np.float64) if src in _FLOATS else x) != 0
    if dtypes.is_int(dt):
        return _to_int(x, dt)
    if dt in _FLOATS:
        return _to_narrow_float(x, dt)
    return x.astype(dt)  # a narrow operand into a standard float type: exact or NumPy's rounding


def _widen(x, dt, ct):
    if type(x) is np.ndarray or isinstance(x, np.generic):
        if x.dtype == dt:
            x = x.astype(ct)
            return flush_subnormals(x) if ct == _F32 and dt == _E8M0 else x
    return x


def _narrow_result(r, dt, ct):
    if isinstance(r, (tuple, list)):
        return type(r)(_narrow_result(v, dt, ct) for v in r)
    r = np.asarray(r)
    if r.dtype != ct:
        return r
    if dt in _INTS:
        return convert(r, dt)
    if ct == _F32:  # float8_e8m0fnu: flushed, then converted
        r = flush_subnormals(r)
    return _to_narrow_float(r, dt)


def _narrow_dtype_of(args):
    for a in args:
        dt = getattr(a, "dtype", None)
        if dt is not None and dt in NARROW:
            return dt
    return None


def elementwise(impl):
    """`impl` (an elementwise NumPy implementation) computing as XLA does on narrow operands:
    those convert to their compute type, and results of that type convert back."""
    @functools.wraps(impl)
    def run(*args, **params):
        dt = _narrow_dtype_of(args)
        if dt is None:
            return impl(*args, **params)
        ct = compute_dtype(dt)
        with np.errstate(all="ignore"):
            out = impl(*[_widen(a, dt, ct) for a in args], **params)
        return _narrow_result(out, dt, ct)
    run.narrow = True
    return run


# ---------------------------------------------------------------- reductions


# XLA's CPU backend rewrites a floating-point reduction over more than this many elements of
# an axis into a reduction of windows of this size (padded evenly at both ends with the
# identity) followed by a reduction of the window results, repeatedly; each window is summed
# in order, rounding to the operand type after every step.
_WINDOW = 32


def _sequential(step, x, axes, dt, ct, init):
    """Reduce `axes` of `x` (compute-type values) in row-major order of the reduced indices,
    rounding the accumulator to `dt` after every step."""
    keep = [i for i in range(x.ndim) if i not in axes]
    xt = np.transpose(x, keep + list(axes)).reshape([x.shape[i] for i in keep] + [-1])
    acc = np.full(xt.shape[:-1], init, ct)  # the accumulator starts from the initial value
    for i in range(xt.shape[-1]):
        acc = _round_to(step(acc, xt[..., i]), dt, ct)
    return acc


def _round_to(v, dt, ct):
    """A compute-type result rounded to the narrow type `dt` and widened back."""
    v = np.asarray(v)
    if dt in _INTS:
        return convert(v, dt).astype(ct)
    if ct == _F32:
        v = flush_subnormals(v)
    return _to_narrow_float(v.astype(ct, copy=False), dt).astype(ct)


def _tree(step, x, axes, dt, ct, init):
    axes = sorted(axes)
    if all(x.shape[a] <= _WINDOW for a in axes):
        return _sequential(step, x, axes, dt, ct, init)
    for a in reversed(axes):
        n = x.shape[a]
        w = min(n, _WINDOW)
        count = -(-n // w)
        total = count * w - n
        pad = [(0, 0)] * x.ndim
        pad[a] = (total // 2, total - total // 2)
        x = np.pad(x, pad, constant_values=init)
        x = x.reshape(x.shape[:a] + (count, w) + x.shape[a + 1:])
    outer = [a + k for k, a in enumerate(axes)]
    windows = [a + k + 1 for k, a in enumerate(axes)]
    partial = _sequential(step, x, windows, dt, ct, init)
    rest = [i for i in range(x.ndim) if i not in windows]
    return _tree(step, partial, [rest.index(a) for a in outer], dt, ct, init)


def reduce(ufunc, x: np.ndarray, axes) -> np.ndarray:
    """`ufunc.reduce` over `axes` of a narrow-typed `x` as XLA computes it: integers in int64
    (wrap-around is independent of the order), floats in windows of 32 (see _WINDOW), in order,
    each step computed in the compute type and rounded to the narrow type."""
    dt = x.dtype
    axes = tuple(sorted(int(a) for a in axes))
    if dt in _INTS:
        wide = x.astype(np.int64)
        if ufunc in (np.add, np.multiply):
            out = ufunc.reduce(wide, axis=axes) if wide.size else \
                np.full(tuple(s for i, s in enumerate(x.shape) if i not in axes),
                        0 if ufunc is np.add else 1, np.int64)
        else:
            out = ufunc.reduce(wide, axis=axes, initial=_int_identity(ufunc, dt))
        return convert(np.asarray(out), dt)
    ct = compute_dtype(dt)
    x = _widen(x, dt, ct)
    init = _widen(np.asarray(_float_identity(ufunc, dt), dt), dt, ct)
    with np.errstate(all="ignore"):
        if ufunc in (np.maximum, np.minimum):  # exact: the order does not matter
            out = _signed_zeros(ufunc, x, ufunc.reduce(x, axis=axes, initial=init[()]),
                                functools.partial(np.any, axis=axes))
        else:
            out = _tree(ufunc, x, list(axes), dt, ct, init) if axes else x
    return _narrow_result(np.asarray(out, ct), dt, ct)


def _signed_zeros(ufunc, x, out, any_of):
    """XLA's max and min order -0.0 below +0.0: a zero maximum is +0.0 where some operand is,
    a zero minimum -0.0 where some operand is (NumPy keeps whichever zero came first)."""
    wanted = np.signbit(x) if ufunc is np.minimum else ~np.signbit(x)
    present = any_of((x == 0) & wanted)
    zero = np.where(present == (ufunc is np.minimum), -0.0, 0.0).astype(out.dtype)
    return np.where(out == 0, zero, out)


def _float_identity(ufunc, dt):
    """JAX's initial value of a reduction (converted to `dt` as NumPy converts it: 0 is NaN
    in float8_e8m0fnu, which has no zero)."""
    if ufunc is np.maximum:
        return -np.inf if dtypes.supports_inf(dt) else dtypes.finfo(dt).min
    if ufunc is np.minimum:
        return np.inf if dtypes.supports_inf(dt) else dtypes.finfo(dt).max
    return 0 if ufunc is np.add else 1


def _int_identity(ufunc, dt):
    info = dtypes.iinfo(dt)
    if ufunc is np.maximum:
        return int(info.min)
    if ufunc is np.minimum:
        return int(info.max)
    if ufunc is np.bitwise_and:
        return -1 if dtypes.is_signed_int(dt) else int(info.max)
    return 0


def widen_for_dot(x: np.ndarray) -> np.ndarray:
    """A narrow operand of a matrix product in the type XLA accumulates in: float32 (read with
    subnormals flushed) for the floats, int64 for the integers (which wrap at the end)."""
    if x.dtype in _FLOATS:
        return flush_subnormals(x.astype(_F32)) if x.dtype == _E8M0 else x.astype(_F32)
    return x.astype(np.int64)


def convert_product(acc: np.ndarray, dt: np.dtype) -> np.ndarray:
    """A float32 (int64) product of narrow operands as the type `dt`: narrow floats round
    through their compute type (float16), as XLA converts the float16 product it computes."""
    acc = np.asarray(acc)
    if dt in _FLOATS:
        ct = compute_dtype(dt)
        return _narrow_result(acc.astype(ct), dt, ct)
    return convert(acc, dt) if dt in NARROW else acc.astype(dt)


# ---------------------------------------------------------------- operations XLA expands


class _Steps:
    """Evaluates a formula on narrow-float values the way XLA evaluates an expansion in a
    narrow type: every operation computes in float32 and rounds to the narrow type (through
    its compute type). Values are float32 arrays holding values of the narrow type."""

    def __init__(self, dt):
        self.dt = dt
        self.ct = compute_dtype(dt)

    def read(self, x):
        x = np.asarray(x)
        x32 = x.astype(_F32)
        return flush_subnormals(x32) if self.ct == _F32 else x32

    def round(self, v):
        v = np.asarray(v, _F32)
        if self.ct == _F32:
            return _to_narrow_float(flush_subnormals(v), self.dt).astype(_F32)
        return _to_narrow_float(v.astype(self.ct), self.dt).astype(_F32)

    def const(self, c):
        """A constant of the narrow type (converted from float64, as XLA's constants are;
        XLA folds constant subexpressions such as sqrt(max) the same way, rounding once)."""
        if self.dt == _F4 and np.isnan(c):
            return np.float32(0)  # a NaN constant folds to +0.0 in a type without NaN
        return np.asarray(c, np.float64).astype(self.dt).astype(_F32)

    def sign(self, x):
        with np.errstate(invalid="ignore"):
            return self.round(np.where(x == 0, x, np.sign(x)))  # keeps the sign of zero

    def out(self, v):
        return _to_narrow_float(np.asarray(v, _F32).astype(self.ct), self.dt) \
            if self.ct != _F32 else _to_narrow_float(flush_subnormals(v), self.dt)

    def __getattr__(self, name):
        fn = getattr(np, name)

        def step(*args):
            with np.errstate(all="ignore"):
                return self.round(fn(*args))
        return step


def _narrow_float_only(rule):
    """`rule` for narrow floats; other operands (narrow integers) take the generic path."""
    generic = {}

    def run(impl, *args, **params):
        dt = _narrow_dtype_of(args)
        if dt in _FLOATS:
            return rule(_Steps(dt), *args, **params)
        fn = generic.get(impl)
        if fn is None:
            fn = generic[impl] = elementwise(impl)
        return fn(*args, **params)
    return run


@_narrow_float_only
def exp2(s, x):
    """JAX lowers exp2(x) to exp(log(2) * x) in the operand's type."""
    return s.out(s.exp(s.multiply(s.const(np.log(2)), s.read(x))))


@_narrow_float_only
def logistic(s, x):
    """JAX lowers logistic(x) to 1 / (1 + exp(-x)) in the operand's type."""
    one = s.const(1)
    return s.out(s.true_divide(one, s.add(one, s.exp(s.negative(s.read(x))))))


@_narrow_float_only
def integer_pow(s, x, y):
    """JAX lowers x ** y to multiplications by repeated squaring (and a division for y < 0),
    each in the operand's type."""
    x = s.read(x)
    if y == 0:
        return s.out(np.ones_like(x))
    neg, y = y < 0, abs(y)
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else s.multiply(acc, x)
        y >>= 1
        if y > 0:
            x = s.multiply(x, x)
    return s.out(s.true_divide(s.const(1), acc) if neg else acc)


# The expansions of CHLO's inverse trigonometric and hyperbolic functions (StableHLO's
# ChloDecompositionPatterns, as XLA compiles them for JAX 0.10.2), evaluated step by step in
# the operand's type. Constants and constant subexpressions are rounded once.
@_narrow_float_only
def asin(s, x):
    x = s.read(x)
    one = s.const(1)
    root = s.sqrt(s.multiply(s.subtract(one, x), s.add(one, x)))
    return s.out(s.multiply(s.const(2), s.arctan2(x, s.add(one, root))))


@_narrow_float_only
def acos(s, x):
    x = s.read(x)
    one = s.const(1)
    root = s.sqrt(s.multiply(s.subtract(one, x), s.add(x, one)))
    return s.out(s.arctan2(root, x))


@_narrow_float_only
def acosh(s, x):
    x = s.read(x)
    one = s.const(1)
    large = s.add(s.log(x), s.const(np.log(2)))
    below = s.sqrt(s.subtract(x, one))
    general = s.log1p(s.multiply(below, s.add(s.sqrt(s.add(x, one)), below)))
    with np.errstate(invalid="ignore"):
        return s.out(np.where(x >= s.const(float(dtypes.finfo(s.dt).max) / 2), large, general))


@_narrow_float_only
def asinh(s, x):
    x = s.read(x)
    one = s.const(1)
    a = s.abs(x)
    large = s.add(s.log(a), s.const(np.log(2)))
    a2 = s.multiply(a, a)
    general = s.log1p(s.add(a, s.true_divide(a2, s.add(one, s.sqrt(s.add(one, a2))))))
    with np.errstate(invalid="ignore"):
        body = np.where(a >= s.const(np.sqrt(float(dtypes.finfo(s.dt).max))), large, general)
    return s.out(s.multiply(s.sign(x), body))


@_narrow_float_only
def atanh(s, x):
    x = s.read(x)
    body = s.multiply(s.subtract(s.log1p(x), s.log1p(s.negative(x))), s.const(0.5))
    with np.errstate(invalid="ignore"):
        return s.out(np.where(s.abs(x) > s.const(1), s.const(np.nan), body))


def in_float32(impl):
    """`impl` for functions XLA expands in float32 for narrow operands (lgamma, digamma,
    erf_inv, ...): computed from float32 operands and rounded once to the narrow type."""
    @functools.wraps(impl)
    def run(*args, **params):
        dt = _narrow_dtype_of(args)
        if dt not in _FLOATS:
            return elementwise(impl)(*args, **params)
        wide = [a.astype(_F32) if getattr(a, "dtype", None) == dt else a for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(impl(*wide, **params))
        return _to_narrow_float(flush_subnormals(out), dt) if out.dtype == _F32 else out
    return run


def _ln2_f32():
    return np.float32(-0.693147182)


def sinh(impl, x):
    """XLA's float32 expansion of sinh for narrow floats, rounded once: for |x| < 1,
    (e + e / (e + 1)) / 2 with e = expm1(x), else exp(x - log 2) - exp(-log 2 - x)."""
    if x.dtype not in _FLOATS:
        return elementwise(impl)(x)
    v = x.astype(_F32)
    with np.errstate(all="ignore"):
        e = np.expm1(v)
        small = (e + e / (e + np.float32(1))) * np.float32(0.5)
        large = np.exp(v + _ln2_f32()) - np.exp(_ln2_f32() - v)
        out = np.where(np.abs(v) < 1, small, large).astype(_F32)
    return _to_narrow_float(flush_subnormals(out), x.dtype)


def cosh(impl, x):
    """XLA's float32 expansion of cosh for narrow floats, rounded once:
    exp(x - log 2) + exp(-log 2 - x)."""
    if x.dtype not in _FLOATS:
        return elementwise(impl)(x)
    v = x.astype(_F32)
    with np.errstate(all="ignore"):
        out = (np.exp(v + _ln2_f32()) + np.exp(_ln2_f32() - v)).astype(_F32)
    return _to_narrow_float(flush_subnormals(out), x.dtype)


def _minmax(pick_x):
    """XLA's max/min on narrow floats: NaN if either operand is NaN, and +0 above -0."""
    @_narrow_float_only
    def rule(s, x, y):
        a, b = s.read(x), s.read(y)
        with np.errstate(invalid="ignore"):
            take_x = pick_x(a, b) | ((a == b) & (np.signbit(b) if pick_x is np.greater
                                                 else np.signbit(a)))
        out = np.where(take_x, a, b)
        return s.out(np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), out))
    return rule


maximum = _minmax(np.greater)
minimum = _minmax(np.less)


def nextafter(x, y):
    """XLA's NextAfter on the narrow type's bits: the neighbour of `x` towards `y`."""
    dt = x.dtype
    ux, uy = x.view(np.uint8).astype(np.int32), y.view(np.uint8).astype(np.int32)
    sign = 0x80 if dtypes.finfo(dt).bits == 8 else 0x8
    x32, y32 = x.astype(_F32), y.astype(_F32)
    ax, ay = ux & ~sign, uy & ~sign
    with np.errstate(invalid="ignore"):
        smaller = (ax > ay) | ((ux & sign) != (uy & sign))
    out = ux + np.where(smaller, -1, 1)
    out = np.where(ax == 0, np.where(ay == 0, uy, (uy & sign) | 1), out)
    out = np.where(ux == uy, uy, out)
    nan_bits = np.asarray(np.nan, np.float64).astype(dt).view(np.uint8).astype(np.int32)
    out = np.where(np.isnan(x32) | np.isnan(y32), nan_bits, out)
    return out.astype(np.uint8).view(dt)


# ---------------------------------------------------------------- bits of the narrow integers


def _pattern(x):
    """The low bits of narrow integers as non-negative int64 values, and their count."""
    bits = int(dtypes.iinfo(x.dtype).bits)
    return x.astype(np.int64) & ((1 << bits) - 1), bits


def _from_pattern(u, dt):
    bits = int(dtypes.iinfo(dt).bits)
    if dtypes.is_signed_int(dt):
        u = np.where(u >= 1 << (bits - 1), u - (1 << bits), u)
    return u.astype(np.int64).astype(dt)


def population_count(impl, x):
    """XLA counts the bits of int4 values sign-extended to int8 (so popcount(int4(-1)) is 8,
    which wraps to -8), but of 2-bit values in their own width."""
    if x.dtype not in _INTS or dtypes.iinfo(x.dtype).bits != 2:
        return elementwise(impl)(x)
    u, _ = _pattern(x)
    return convert(np.asarray((u & 1) + (u >> 1)), x.dtype)


def clz(impl, x):
    """Leading zeros within the type's own width."""
    u, bits = _pattern(x)
    length = np.zeros(u.shape, np.int64)
    for b in range(bits):
        length = np.where(u >> b != 0, b + 1, length)
    return convert(np.asarray(bits - length), x.dtype)


def _shift(kind):
    def rule(impl, x, y):
        if x.dtype not in _INTS:
            return elementwise(impl)(x, y)
        u, bits = _pattern(np.asarray(x))
        amount, _ = _pattern(np.broadcast_to(np.asarray(y), np.shape(y)))
        big = amount >= bits
        safe = np.where(big, 0, amount)
        if kind == "left":
            out = np.where(big, 0, (u << safe) & ((1 << bits) - 1))
        elif kind == "logical":
            out = np.where(big, 0, u >> safe)
        else:  # arithmetic: the top bit of the pattern is the sign, whatever the type
            s = np.where(u >= 1 << (bits - 1), u - (1 << bits), u)
            out = (s >> np.where(big, bits - 1, safe)) & ((1 << bits) - 1)
        return _from_pattern(np.asarray(out), x.dtype)
    return rule


shift_left = _shift("left")
shift_right_logical = _shift("logical")
shift_right_arithmetic = _shift("arithmetic")


# ---------------------------------------------------------------- cumulative reductions


# XLA's CPU backend rewrites a cumulative reduction (a reduce-window over a prefix) into a scan
# of blocks of this many elements, in order, followed by a scan of the block totals (the same
# way, recursively), each block's result combined with the total of the blocks before it.
_SCAN_BLOCK = 16


def _scan(step, x, dt, ct, init):
    """Inclusive scan along the last axis of compute-type values, rounding every step."""
    n = x.shape[-1]
    if n <= _SCAN_BLOCK:
        out = np.empty_like(x)
        acc = np.full(x.shape[:-1], init, ct)
        for i in range(n):
            acc = _round_to(step(acc, x[..., i]), dt, ct)
            out[..., i] = acc
        return out
    blocks = -(-n // _SCAN_BLOCK)
    pad = np.full(x.shape[:-1] + (blocks * _SCAN_BLOCK - n,), init, ct)
    inner = _scan(step, np.concatenate([x, pad], -1).reshape(
        x.shape[:-1] + (blocks, _SCAN_BLOCK)), dt, ct, init)
    totals = _scan(step, inner[..., -1], dt, ct, init)
    before = np.concatenate([np.full(x.shape[:-1] + (1,), init, ct), totals[..., :-1]], -1)
    out = _round_to(step(before[..., None], inner), dt, ct)
    return out.reshape(x.shape[:-1] + (-1,))[..., :n]


def cumulative(ufunc, x, axis, reverse):
    """A cumulative sum, product, maximum, minimum or logaddexp of a narrow-typed `x` along
    `axis`, as XLA computes it (integers wrap, which the order does not change)."""
    x = np.asarray(x)
    dt = x.dtype
    if x.size == 0:
        return x.copy()
    moved = np.moveaxis(x, axis, -1)
    if reverse:
        moved = moved[..., ::-1]
    if dt in _INTS:
        out = convert(ufunc.accumulate(moved.astype(np.int64), axis=-1), dt)
    else:
        ct = compute_dtype(dt)
        wide = _widen(moved, dt, ct)
        with np.errstate(all="ignore"):
            if ufunc in (np.maximum, np.minimum):  # exact: no rounding to order
                out = _signed_zeros(ufunc, wide, ufunc.accumulate(wide, axis=-1),
                                    functools.partial(np.logical_or.accumulate, axis=-1))
                out = _narrow_result(out, dt, ct)
            else:
                init = _widen(np.asarray(_float_identity(ufunc, dt), dt), dt, ct) \
                    if ufunc is not np.logaddexp else np.asarray(-np.inf, ct)
                out = _narrow_result(_scan(ufunc, wide, dt, ct, init), dt, ct)
    if reverse:
        out = out[..., ::-1]
    return np.ascontiguousarray(np.moveaxis(out, -1, axis))


# ---------------------------------------------------------------- bitcasts


def nbits(dt) -> int:
    """The width of a type in bits (4 for int4, 8 for bool)."""
    return int(dtypes.itemsize_bits(dt))


def _bits(x):
    """Each element's bit pattern as a uint64 (ml_dtypes keeps a narrow value in the low bits
    of its byte)."""
    dt = x.dtype
    if dt in NARROW:
        return x.view(np.uint8).astype(np.uint64) & np.uint64((1 << nbits(dt)) - 1)
    return x.view(np.dtype(f"u{dt.itemsize}")).astype(np.uint64)


def _from_bits(u, dt):
    dt = np.dtype(dt)
    if dt in NARROW:
        return (u & np.uint64((1 << nbits(dt)) - 1)).astype(np.uint8).view(dt)
    return u.astype(np.dtype(f"u{dt.itemsize}")).view(dt)


def bitcast(x, new_dtype):
    """bitcast_convert_type by bit widths: a wider type splits into a trailing axis of
    narrower ones (low bits first), narrower ones combine along their last axis."""
    x = np.ascontiguousarray(x)
    old_bits, new_bits = nbits(x.dtype), nbits(new_dtype)
    u = _bits(x)
    if old_bits > new_bits:
        shifts = np.arange(old_bits // new_bits, dtype=np.uint64) * np.uint64(new_bits)
        u = u[..., None] >> shifts
    elif old_bits < new_bits:
        shifts = np.arange(new_bits // old_bits, dtype=np.uint64) * np.uint64(old_bits)
        u = np.bitwise_or.reduce(u << shifts, axis=-1)
    return _from_bits(u, new_dtype)
