"""NumPy implementations of lax.py's primitives that take more than one NumPy call to match
XLA: sign, round, logistic, rsqrt, integer_pow (by repeated squaring), div and rem, pow,
max and min (complex values, NaNs), atan2, the shifts, select_n, complex reduce_max and
reduce_min in XLA's windowed order, argmax and argmin, slice and pad. lax.py registers each
with its primitive's other rules.
"""
from __future__ import annotations

import builtins

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.lax.shape_ops import _ufunc_reduce
from gpuarr.lax.subnormal_operands import follow_xla_atan2

# ---------------------------------------------------------------- elementwise


def _sign_impl(x):
    if (x.dtype if type(x) is np.ndarray else np.asarray(x).dtype).kind == "c":
        # x / |x| part by part, as XLA computes it: an infinite part over the infinite modulus
        # is NaN (inf + 1j gives nan + 0j); x itself where |x| is 0 (keeping signed zeros).
        x = np.asarray(x)
        mod = np.abs(x)
        unit = np.empty_like(x)
        with np.errstate(all="ignore"):
            np.divide(x.real, mod, out=unit.real)
            np.divide(x.imag, mod, out=unit.imag)
        return np.where(mod == 0, x, unit)
    out = np.sign(x)
    # XLA keeps the sign of zero (sign(-0.0) is -0.0); np.sign gives +0.0.
    return np.copysign(out, x) if out.dtype.kind == "f" else out


def _round_impl(x, rounding_method=0):
    if rounding_method == 1:  # TO_NEAREST_EVEN
        return np.round(x).astype(x.dtype)
    # copysign keeps the sign of zero results (round(-0.25) is -0.0), as XLA's round does.
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x).astype(x.dtype)


def _logistic_impl(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def _rsqrt_impl(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


def _integer_pow_impl(x, y):
    if y < 0 and x.dtype.kind in "iu":  # eager calls then raise the abstract rule's error
        raise TypeError("Integers cannot be raised to negative powers")
    if y == 0:
        return np.ones_like(x)
    if y == 1:
        return x
    if y == 2:
        return np.square(x)  # x * x, as XLA expands small powers: no pow() call
    if y == -1:
        return _reciprocal(x)
    # Real floats always: np.power rounds x ** y once, XLA rounds each multiplication (x ** 3
    # differed from JAX in the last bit for a third of float32 inputs).
    if x.dtype.kind == "f" or (not -100 < y < 100 and not _power_exact(x.dtype, y)):
        return _square_and_multiply(x, y)
    if y > 0:
        return np.power(x, x.dtype.type(y)).astype(x.dtype, copy=False)
    return _reciprocal(np.power(x, x.dtype.type(-y))).astype(x.dtype, copy=False)


def _reciprocal(x):
    """1 / x as XLA divides: np.reciprocal of a complex zero is NaN, 1 / 0j is inf + nanj."""
    return np.true_divide(x.dtype.type(1), x) if x.dtype.kind == "c" else np.reciprocal(x)


def _power_exact(dt, y):
    """Whether np.power computes x ** y as JAX does: the exponent has an exact value of the
    base's type (2**40 has no int32 value; 2**24 + 1 rounds to an even float32), and complex
    powers past 100 would go through exp(y log x) rather than repeated multiplication."""
    y = builtins.abs(y)
    if dtypes.is_int(dt):
        return y <= dtypes.iinfo(dt).max
    if dtypes.is_complex(dt):
        return y < 100
    return y < 2 ** 64 and float(dt.type(y)) == y  # past float64's range NumPy raises


def _square_and_multiply(x, y):
    """x ** y for any Python int y as JAX lowers integer_pow: repeated squaring, each step
    in x's type (integers wrap, floats round), and 1 / x ** -y for negative y."""
    n, acc = builtins.abs(y), None
    with np.errstate(all="ignore"):
        while n:
            if n & 1:
                acc = x if acc is None else np.multiply(acc, x)
            n >>= 1
            if n:
                x = np.multiply(x, x)
        return (_reciprocal(acc) if y < 0 else acc).astype(x.dtype, copy=False)


def _div_impl(x, y):
    if dtypes.is_int(x.dtype):
        # C-style division rounding toward zero; x / 0 is -1 (all ones), as XLA gives.
        safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, safe)
        q = np.where((np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0)), q + 1, q)
        return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype)
    if x.dtype in _RECIPROCAL_DTYPES and np.shape(y) != np.broadcast_shapes(np.shape(x), np.shape(y)):
        # A divisor broadcast to the result: XLA multiplies by its reciprocal, rounded to the
        # dtype (JAX's jnp.divide broadcasts inside a jitted function, so also eagerly), as
        # the jit pass passes._reciprocal_divisor does.
        return np.multiply(x, np.true_divide(np.ones((), x.dtype), y).astype(x.dtype, copy=False)
                           ).astype(x.dtype, copy=False)
    return np.true_divide(x, y).astype(x.dtype, copy=False)


_RECIPROCAL_DTYPES = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


def _rem_impl(x, y):
    if dtypes.is_int(x.dtype):
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype)
    return np.fmod(x, y).astype(x.dtype)


def _pow_impl(x, y):
    out = np.power(x, y).astype(x.dtype, copy=False)
    if out.dtype.kind == "c":
        # XLA's complex power of a zero base: 1 for a zero exponent, 0 for a positive real
        # one, NaN otherwise (NumPy's complex64 power gives 0 for 0 ** (1 + 1j)).
        x, y = np.asarray(x), np.asarray(y)
        zero_x = x == 0
        if zero_x.any():
            positive = (y.real > 0) & (y.imag == 0)
            at_zero = np.where(y == 0, 1, np.where(positive, 0, complex(np.nan, np.nan)))
            out = np.where(zero_x, at_zero.astype(out.dtype), out)
    return out


def _pow_exponent_impl(x, y):
    # XLA converts an integer exponent to the base's type before the power.
    y = np.asarray(y)
    return _pow_impl(x, y.astype(np.asarray(x).dtype) if y.dtype.kind in "iu" else y)


def _complex_pick(compare, x, y):
    """x where compare(x, y) else y, complex values ordered as XLA orders them for JAX: by real
    parts, by imaginary parts where the real parts are equal. A NaN part compares false, so
    NaNs do not propagate as np.maximum's do."""
    return np.where(np.where(x.real == y.real, compare(x.imag, y.imag), compare(x.real, y.real)),
                    x, y)


def _minmax_impl(ufunc, compare, x, y):
    if (x.dtype if type(x) is np.ndarray else np.asarray(x).dtype).kind == "c":
        return _complex_pick(compare, np.asarray(x), np.asarray(y))
    return ufunc(x, y)


def _atan2_impl(x, y):
    if not np.iscomplexobj(x):
        return follow_xla_atan2(x, y, np.arctan2(x, y))
    # The principal branch of -i log((y + i x) / sqrt(y^2 + x^2)), as XLA's complex atan2,
    # evaluated in complex128.
    wide_x, wide_y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
    with np.errstate(all="ignore"):
        out = -1j * np.log((wide_y + 1j * wide_x) / np.sqrt(wide_y * wide_y + wide_x * wide_x))
    return out.astype(np.result_type(x, y))


def _shift_impl(op, x, y):
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    if np.ndim(y) == 0 and 0 <= y < bits:
        # The common case (a constant in-range shift) is a single NumPy pass.
        if op == "left":
            return np.left_shift(x, x.dtype.type(y))
        if op == "arith" or x.dtype.kind == "u":
            return np.right_shift(x, x.dtype.type(y))
        unsigned = np.dtype(f"u{x.dtype.itemsize}")
        return np.right_shift(x.view(unsigned), unsigned.type(y)).view(x.dtype)
    big = (y < 0) | (y >= bits)
    safe = np.where(big, 0, y).astype(x.dtype)
    if op == "left":
        return np.where(big, 0, np.left_shift(x, safe)).astype(x.dtype)
    if op == "arith":
        fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
        return np.where(big, fill, np.right_shift(x, safe)).astype(x.dtype)
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x
    out = np.right_shift(unsigned, safe.view(unsigned.dtype) if safe.dtype != unsigned.dtype else safe)
    return np.where(big, 0, out).astype(unsigned.dtype).view(x.dtype)


# ---------------------------------------------------------------- select_n


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(np.shape(which), np.shape(cases[0])))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(np.clip(which, 0, len(cases) - 1), cases)
# ---------------------------------------------------------------- reductions


# XLA (on the CPU, for JAX) reduces an axis longer than this in windows of this many elements
# (reduce-window, padded evenly at both ends), then reduces the window results the same way.
_REDUCE_WINDOW = 32


def _complex_reduce(compare, init, x, axes):
    """reduce_max/min (`compare` np.greater/np.less) of complex values in XLA's order: each step
    keeps the accumulator where it compares first (lax.max's order) and takes the element
    otherwise, so an element with a NaN part replaces the accumulator and the next element
    replaces it in turn. With NaNs the result depends on the order, which is XLA's: windows of
    _REDUCE_WINDOW, each reduced in row-major order from `init`, skipping the padding."""
    x = np.asarray(x)
    if not axes:
        return x.copy()
    axes = sorted(axes)
    real = None
    if any(x.shape[a] > _REDUCE_WINDOW for a in axes):
        real = np.ones(x.shape, np.bool_)
        for a in reversed(axes):
            count = -(-x.shape[a] // _REDUCE_WINDOW)
            total = count * _REDUCE_WINDOW - x.shape[a]
            pad = [(0, 0)] * x.ndim
            pad[a] = (total // 2, total - total // 2)
            x, real = np.pad(x, pad), np.pad(real, pad)
            x = x.reshape(x.shape[:a] + (count, _REDUCE_WINDOW) + x.shape[a + 1:])
            real = real.reshape(x.shape)
        windows = [a + k + 1 for k, a in enumerate(axes)]
        outer = [a + k for k, a in enumerate(axes)]
        rest = [i for i in range(x.ndim) if i not in windows]
        axes, next_axes = windows, [rest.index(a) for a in outer]
    keep = [i for i in range(x.ndim) if i not in axes]

    def flat(v):  # the reduced indices last, in row-major order
        return np.transpose(v, keep + axes).reshape([v.shape[i] for i in keep] + [-1])
    xs, acc = flat(x), np.full([x.shape[i] for i in keep], init, x.dtype)
    reals = None if real is None else flat(real)
    for i in range(xs.shape[-1]):
        v = xs[..., i]
        first = np.where(acc.real == v.real, compare(acc.imag, v.imag), compare(acc.real, v.real))
        if reals is not None:
            first |= ~reals[..., i]
        acc = np.where(first, acc, v)
    return acc if real is None else _complex_reduce(compare, init, acc, next_axes)


def _minmax_reduce(ufunc):
    compare, init = (np.greater, -np.inf) if ufunc is np.maximum else (np.less, np.inf)
    real_impl = _ufunc_reduce(ufunc)

    def impl(x, axes):
        if type(x) is np.ndarray and x.dtype.kind == "c":  # a 0-d scalar has no axes to reduce
            return _complex_reduce(compare, init, x, axes)
        return real_impl(x, axes)
    return impl


def _argminmax_impl(fn, x, axes, index_dtype):
    (axis,) = axes
    return np.asarray(fn(x, axis=axis)).astype(index_dtype)


def _narrow_argminmax_impl(fn, x, axes, index_dtype):
    # JAX starts the search from -inf (+inf) converted to the type: in float8_e8m0fnu that is
    # NaN, which wins every comparison, so the index stays 0.
    if dtypes.is_float(x.dtype) and dtypes.supports_inf(x.dtype) and np.isnan(
            np.asarray(-np.inf if fn is np.argmax else np.inf).astype(x.dtype).astype(np.float32)):
        return np.zeros(tuple(s for i, s in enumerate(x.shape) if i not in axes), index_dtype)
    wide = narrow_types.convert(x, narrow_types.compute_dtype(x.dtype))
    return _argminmax_impl(fn, wide, axes, index_dtype)


# ---------------------------------------------------------------- slicing and concatenation
# (kept here because reduce_prod's JVP uses them; gather/scatter live in lax/slicing.py)


def _slice_impl(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return x[tuple(builtins.slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides))]


def _pad_impl(x, padding_value, padding_config):
    lo_hi_int = padding_config
    x = np.asarray(x)
    # interior padding first, then (possibly negative) edge padding
    for axis, (_, _, interior) in enumerate(lo_hi_int):
        if interior > 0 and x.shape[axis] > 1:
            n = x.shape[axis]
            shape = list(x.shape)
            shape[axis] = n + (n - 1) * interior
            out = np.full(shape, padding_value, x.dtype)
            idx = [builtins.slice(None)] * x.ndim
            idx[axis] = builtins.slice(None, None, interior + 1)
            out[tuple(idx)] = x
            x = out
    pads = [(builtins.max(lo, 0), builtins.max(hi, 0)) for lo, hi, _ in lo_hi_int]
    x = np.pad(x, pads, constant_values=padding_value)
    idx = tuple(builtins.slice(-lo if lo < 0 else 0, (x.shape[a] + hi) if hi < 0 else None)
                for a, (lo, hi, _) in enumerate(lo_hi_int))
    return x[idx]
