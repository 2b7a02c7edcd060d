"""Elementwise functions with NumPy's names and JAX's dtype promotion."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.core import get_aval
from gpuarr.numpy._util import (
    broadcast_arrays,
    check_arraylike,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)


def _unary(name, op, promote=promote_dtypes_inexact):
    def fn(x, /):
        check_arraylike(name, x)
        (x,) = promote(x)
        return op(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, as numpy.{name} (integer inputs become floats where NumPy's do)."
    return fn


def _binary(name, op, promote=promote_dtypes):
    def fn(x, y, /):
        check_arraylike(name, x, y)
        x, y = promote(x, y)
        x, y = broadcast_arrays(x, y)
        return op(x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, as numpy.{name}, with broadcasting and JAX's promotion."
    return fn


def _same(x):
    return [x]


negative = _unary("negative", lax.neg, promote_dtypes_numeric)
positive = _unary("positive", lambda x: x, promote_dtypes_numeric)
sign = _unary("sign", lax.sign, promote_dtypes_numeric)
floor = _unary("floor", lambda x: lax.floor(x) if dtypes.is_float(get_aval(x).dtype) else x, promote_dtypes)
ceil = _unary("ceil", lambda x: lax.ceil(x) if dtypes.is_float(get_aval(x).dtype) else x, promote_dtypes)
exp = _unary("exp", lax.exp)
exp2 = _unary("exp2", lax.exp2)
log = _unary("log", lax.log)
log1p = _unary("log1p", lax.log1p)
expm1 = _unary("expm1", lax.expm1)
sqrt = _unary("sqrt", lax.sqrt)
cbrt = _unary("cbrt", lax.cbrt)
sin = _unary("sin", lax.sin)
cos = _unary("cos", lax.cos)
tan = _unary("tan", lax.tan)
arcsin = _unary("arcsin", lax.asin)
arccos = _unary("arccos", lax.acos)
arctan = _unary("arctan", lax.atan)
sinh = _unary("sinh", lax.sinh)
cosh = _unary("cosh", lax.cosh)
tanh = _unary("tanh", lax.tanh)
arcsinh = _unary("arcsinh", lax.asinh)
arccosh = _unary("arccosh", lax.acosh)
arctanh = _unary("arctanh", lax.atanh)
isfinite = _unary("isfinite", lambda x: lax.is_finite(x) if dtypes.is_float(get_aval(x).dtype)
                  else lax.full(get_aval(x).shape, True, np.bool_), promote_dtypes)


def _abs(x):
    return x if get_aval(x).dtype == np.bool_ or dtypes.is_unsigned(get_aval(x).dtype) else lax.abs(x)


absolute = _unary("absolute", _abs, promote_dtypes)
abs = absolute
square = _unary("square", lambda x: lax.integer_pow(x, 2), promote_dtypes_numeric)
reciprocal = _unary("reciprocal", lambda x: lax.integer_pow(x, -1), promote_dtypes_inexact)

add = _binary("add", lambda x, y: lax.bitwise_or(x, y) if get_aval(x).dtype == np.bool_ else lax.add(x, y))
subtract = _binary("subtract", lax.sub)
multiply = _binary("multiply", lambda x, y: lax.bitwise_and(x, y) if get_aval(x).dtype == np.bool_
                   else lax.mul(x, y))
true_divide = _binary("true_divide", lax.div, promote_dtypes_inexact)
divide = true_divide
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)
arctan2 = _binary("arctan2", lax.atan2, promote_dtypes_inexact)
power_float = _binary("float_power", lax.pow, promote_dtypes_inexact)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
logical_and = _binary("logical_and", lambda x, y: lax.bitwise_and(_to_bool(x), _to_bool(y)))
logical_or = _binary("logical_or", lambda x, y: lax.bitwise_or(_to_bool(x), _to_bool(y)))
logical_xor = _binary("logical_xor", lambda x, y: lax.bitwise_xor(_to_bool(x), _to_bool(y)))
invert = _unary("invert", lax.bitwise_not, promote_dtypes)
bitwise_not = invert
logical_not = _unary("logical_not", lambda x: lax.bitwise_not(_to_bool(x)), promote_dtypes)


def _to_bool(x):
    return x if get_aval(x).dtype == np.bool_ else lax.ne(x, np.zeros((), get_aval(x).dtype)[()])


def _floor_divide(x, y):
    dt = get_aval(x).dtype
    if dtypes.is_int(dt):
        # Python's rule: round toward negative infinity.
        q = lax.div(x, y)
        zero = np.zeros((), dt)[()]
        fix = lax.bitwise_and(lax.ne(lax.rem(x, y), zero), lax.ne(lax.lt(x, zero), lax.lt(y, zero)))
        return lax.select(fix, lax.sub(q, np.ones((), dt)[()]), q)
    if dt == np.bool_:
        return lax.bitwise_and(x, y)
    return lax.floor(lax.div(x, y))


def _remainder(x, y):
    dt = get_aval(x).dtype
    r = lax.rem(x, y)
    zero = np.zeros((), dt)[()]
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


floor_divide = _binary("floor_divide", _floor_divide, promote_dtypes_numeric)
remainder = _binary("remainder", _remainder, promote_dtypes_numeric)
mod = remainder
fmod = _binary("fmod", lax.rem, promote_dtypes_numeric)


def _power(x, y):
    dt = get_aval(x).dtype
    if dtypes.is_int(dt):
        from gpuarr.numpy._util import broadcast_arrays as bcast
        return _int_power(*bcast(x, y))
    return lax.pow(x, y)


def _int_power(x, y):
    # Exponentiation by squaring over the bits of y (y >= 0), as JAX does for integers.
    dt = get_aval(x).dtype
    one = np.ones((), dt)[()]
    acc = lax.full_like(x, 1)
    base = x
    for _ in range(dt.itemsize * 8):
        bit = lax.ne(lax.bitwise_and(y, one), np.zeros((), dt)[()])
        acc = lax.select(bit, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        y = lax.shift_right_logical(y, one)
    return acc


def power(x1, x2, /):
    """x1 ** x2 elementwise; a static Python integer exponent uses repeated multiplication."""
    check_arraylike("power", x1, x2)
    if isinstance(x2, int) and not isinstance(x2, bool) and not isinstance(x1, (int, float)):
        (x1,) = promote_dtypes(x1)
        if x2 >= 0 or not dtypes.is_int(get_aval(x1).dtype):
            return lax.integer_pow(x1, x2)
    x1, x2 = promote_dtypes_numeric(x1, x2)
    x1, x2 = broadcast_arrays(x1, x2)
    return _power(x1, x2)


pow = power
float_power = power_float


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """`x` where `condition` else `y` (3 arguments); with one argument, the indices of nonzeros."""
    if x is None and y is None:
        from gpuarr.numpy.indexing import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided to "
                         "jax.numpy.where, got {} and {}.".format(x, y))
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes(x, y)
    cond = _to_bool(promote_dtypes(condition)[0])
    cond, x, y = broadcast_arrays(cond, x, y)
    return lax.select(cond, x, y)


def clip(arr=None, /, min=None, max=None):
    """Limit values to [min, max]."""
    check_arraylike("clip", arr)
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return arr


def isnan(x, /):
    """True where x is NaN."""
    check_arraylike("isnan", x)
    (x,) = promote_dtypes(x)
    return lax.ne(x, x)


def isinf(x, /):
    """True where x is +inf or -inf."""
    check_arraylike("isinf", x)
    (x,) = promote_dtypes(x)
    dt = get_aval(x).dtype
    if not dtypes.is_float(dt):
        return lax.full(get_aval(x).shape, False, np.bool_)
    return lax.eq(lax.abs(x), np.asarray(np.inf, dt)[()])


def round(a, decimals=0, out=None):
    """Round to `decimals` decimal places, ties to even (as numpy.round)."""
    check_arraylike("round", a)
    (a,) = promote_dtypes(a)
    dt = get_aval(a).dtype
    if not dtypes.is_float(dt):
        return a
    if decimals == 0:
        return lax.round(a, 1)
    factor = np.asarray(10.0 ** decimals, dt)[()]
    return lax.div(lax.round(lax.mul(a, factor), 1), factor)


around = round
