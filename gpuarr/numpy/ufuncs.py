"""Elementwise functions with NumPy's names and JAX's dtype promotion."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.api import jit as _jit
from gpuarr.core import Tracer, get_aval
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.numpy import ufunc_api
from gpuarr.numpy._util import (
    _weak_scalar,
    broadcast_all,
    broadcast_arrays,
    check_arraylike,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
    promote_shapes,
    reject_out,
    static_hashable,
)


def _unary(name, op, promote=promote_dtypes_inexact, positional_only=True):
    if positional_only:
        def fn(x, /):
            check_arraylike(name, x)
            (x,) = promote(x)
            return op(x)
    else:  # JAX's `f(x)` (trunc, i0)
        def fn(x):
            check_arraylike(name, x)
            (x,) = promote(x)
            return op(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, as numpy.{name} (integer inputs become floats where NumPy's do)."
    return fn


def _binary(name, op, promote=promote_dtypes, params="x, y, /"):
    """An elementwise function of two arrays; `params` is JAX's parameter list for `name`
    ("x, y, /", "x1, x2, /" or "x1, x2")."""
    if params == "x, y, /":
        def fn(x, y, /):
            check_arraylike(name, x, y)
            x, y = promote(x, y)
            x, y = promote_shapes(x, y, fun_name=name)
            return op(x, y)
    elif params == "x1, x2, /":
        def fn(x1, x2, /):
            check_arraylike(name, x1, x2)
            x1, x2 = promote(x1, x2)
            x1, x2 = promote_shapes(x1, x2, fun_name=name)
            return op(x1, x2)
    else:
        assert params == "x1, x2", params

        def fn(x1, x2):
            check_arraylike(name, x1, x2)
            x1, x2 = promote(x1, x2)
            x1, x2 = promote_shapes(x1, x2, fun_name=name)
            return op(x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, as numpy.{name}, with broadcasting and JAX's promotion."
    return fn


def _ufunc_args(name, out, where):
    if out is not None:
        raise NotImplementedError(f"out argument of <jnp.ufunc '{name}'>")
    if where is not None:
        raise NotImplementedError(f"where argument of <jnp.ufunc '{name}'>")


# The names JAX makes jnp.ufunc instances (jnp.add.reduce, jnp.multiply.outer, ...). Their
# classes call `fn` itself, with no extra Python frame, so `fn` also takes the call's `out`
# and `where` (unsupported, as in JAX).

def _alias(name, fn):
    """`fn` under JAX's other name for it, which its argument errors name (acos, not arccos)."""
    def alias(x, /):
        check_arraylike(name, x)
        return fn(x)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = fn.__doc__
    return alias



def _binary_ufunc(name, op, promote=promote_dtypes):
    def fn(x, y, /, *, out=None, where=None):
        if out is not None or where is not None:
            _ufunc_args(name, out, where)
        check_arraylike(name, x, y)
        x, y = promote(x, y)
        x, y = promote_shapes(x, y, fun_name=name)
        return op(x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise {name}, as numpy.{name}, with broadcasting and JAX's promotion; "
                  "a jnp.ufunc with reduce, accumulate, at, reduceat and outer methods.")
    return ufunc_api.binary_ufunc(fn)


def _unary_ufunc(name, op, promote=promote_dtypes):
    def fn(x, /, *, out=None, where=None):
        if out is not None or where is not None:
            _ufunc_args(name, out, where)
        check_arraylike(name, x)
        (x,) = promote(x)
        return op(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, as numpy.{name}; a jnp.ufunc (with an `at` method)."
    return ufunc_api.unary_ufunc(fn)


def _same(x):
    return [x]


def _is_int_or_bool(x):
    dt = get_aval(x).dtype
    return dtypes.is_int(dt) or dt == np.bool_


# Booleans reach lax.neg and lax.sign, whose dtype errors JAX raises too.
negative = _unary_ufunc("negative", lax.neg, promote_dtypes)
positive = _unary("positive", lambda x: ensure_array(x), promote_dtypes)


sign = _unary("sign", lax.sign, promote_dtypes)
# Integers and booleans pass through (as arrays); complex values reach lax and its TypeError,
# as in JAX.
floor = _unary("floor", lambda x: ensure_array(x) if _is_int_or_bool(x) else lax.floor(x),
               promote_dtypes)
trunc = _unary("trunc", lambda x: ensure_array(x) if _is_int_or_bool(x) else _trunc(x),
               promote_dtypes, positional_only=False)
ceil = _unary("ceil", lambda x: ensure_array(x) if _is_int_or_bool(x) else lax.ceil(x),
              promote_dtypes)
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
def _isfinite(x):
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):  # finite only when both parts are
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x) if dtypes.is_float(dt) else lax.full(get_aval(x).shape, True, np.bool_)


isfinite = _unary("isfinite", _isfinite, promote_dtypes)


def _abs(x):
    return x if get_aval(x).dtype == np.bool_ or dtypes.is_unsigned(get_aval(x).dtype) else lax.abs(x)


absolute = _unary("absolute", _abs, promote_dtypes)
abs = absolute
square = _unary("square", lax.square, promote_dtypes_numeric)
reciprocal = _unary("reciprocal", lambda x: lax.integer_pow(x, -1), promote_dtypes_inexact)

add = _binary_ufunc("add", lambda x, y: lax.bitwise_or(x, y) if get_aval(x).dtype == np.bool_
                    else lax.add(x, y))
subtract = _binary_ufunc("subtract", lax.sub)
multiply = _binary_ufunc("multiply", lambda x, y: lax.bitwise_and(x, y) if get_aval(x).dtype == np.bool_
                   else lax.mul(x, y))
true_divide = _binary("true_divide", lax.div, promote_dtypes_inexact, params="x1, x2, /")
divide = true_divide


maximum = _binary_ufunc("maximum", lax.max)
minimum = _binary_ufunc("minimum", lax.min)
arctan2 = _binary("arctan2", lax.atan2, promote_dtypes_inexact, params="x1, x2, /")
power_float = _binary("float_power", lax.pow, promote_dtypes_inexact)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
def _ordered(compare):
    """`compare` (lax.lt, ...), with complex values ordered by (real, imag) as in NumPy and
    JAX (lax's comparisons refuse complex operands)."""
    def op(x, y):
        if not dtypes.is_complex(get_aval(x).dtype):
            return compare(x, y)
        same_real = lax.eq(lax.real(x), lax.real(y))
        return lax.select(same_real, compare(lax.imag(x), lax.imag(y)),
                          compare(lax.real(x), lax.real(y)))
    return op


less = _binary("less", _ordered(lax.lt))
less_equal = _binary("less_equal", _ordered(lax.le))
greater = _binary("greater", _ordered(lax.gt))
greater_equal = _binary("greater_equal", _ordered(lax.ge))
bitwise_and = _binary_ufunc("bitwise_and", lax.bitwise_and)
bitwise_or = _binary_ufunc("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary_ufunc("bitwise_xor", lax.bitwise_xor)
logical_and = _binary_ufunc("logical_and", lambda x, y: lax.bitwise_and(_to_bool(x), _to_bool(y)))
logical_or = _binary_ufunc("logical_or", lambda x, y: lax.bitwise_or(_to_bool(x), _to_bool(y)))
logical_xor = _binary_ufunc("logical_xor", lambda x, y: lax.bitwise_xor(_to_bool(x), _to_bool(y)))
invert = _unary("invert", lax.bitwise_not, promote_dtypes)
bitwise_not = _alias("bitwise_not", invert)
logical_not = _unary("logical_not", lambda x: lax.bitwise_not(_to_bool(x)), promote_dtypes)


def _to_bool(x):
    return x if get_aval(x).dtype == np.bool_ else lax.ne(x, _scalar(x, 0))


def _floor_divide(x, y):
    dt = get_aval(x).dtype
    if dt == np.bool_:
        return lax.bitwise_and(x, y)
    if dtypes.is_unsigned(dt):
        return lax.div(x, y)
    if dtypes.is_int(dt):
        # Python's rule: round toward negative infinity (as JAX: fix up where signs differ).
        q = lax.div(x, y)
        zero = np.zeros((), dt)[()]
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
        return lax.select(fix, lax.sub(q, 1), q)  # a Python 1 keeps q's weak type, as in JAX
    return _float_divmod(x, y)[0]


def _float_divmod(x, y):
    mod = lax.rem(x, y)
    # x / 0 keeps its infinity instead of the NaN that x - fmod(x, 0) would give.
    div = lax.div(lax.select(lax.eq(y, _scalar(y, 0)), x, lax.sub(x, mod)), y)
    fix = lax.bitwise_and(lax.ne(mod, _scalar(mod, 0)), lax.ne(lax.sign(y), lax.sign(mod)))
    mod = lax.select(fix, lax.add(mod, y), mod)
    div = lax.select(fix, lax.sub(div, 1.0), div)  # keeps div's weak type, as in JAX
    # div is within rounding error of an integer: snap it to the nearest one (halves, which
    # narrow types can produce, away from zero, as JAX's lax.round).
    return lax.round(div), mod


def _remainder(x, y):
    dt = get_aval(x).dtype
    if dtypes.is_int(dt):  # x % 0 is 0 for integers, as in JAX
        y = lax.select(lax.eq(y, _scalar(y, 0)), lax.full_like(y, 1), y)
    r = lax.rem(x, y)
    zero = np.zeros((), dt)[()]
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


floor_divide = _binary("floor_divide", _floor_divide, promote_dtypes_numeric, params="x1, x2, /")
remainder = _binary("remainder", _remainder, promote_dtypes_numeric, params="x1, x2, /")
mod = remainder
def _fmod(x, y):
    # An integer division by zero gives 0, as JAX divides by 1 there.
    if dtypes.is_int(get_aval(y).dtype):
        zero = lax.full_like(y, 0)
        y = lax.select(lax.eq(y, zero), lax.full_like(y, 1), y)
    return lax.rem(x, y)


fmod = _jit(_binary("fmod", _fmod, promote_dtypes_numeric, params="x1, x2, /"))  # jits, as JAX's


def _power(x, y):
    dt = get_aval(x).dtype
    if dt in dtypes.NARROW_DTYPES and dtypes.is_int(dt):
        # JAX checks the width with NumPy's iinfo, which does not know int4 and the like.
        raise ValueError(f"Invalid integer data type {dt.kind!r}.")
    if dtypes.is_int(dt):
        from gpuarr.numpy._util import broadcast_arrays as bcast
        return _int_power(*bcast(x, y))
    return lax.pow(x, y)


def _int_power(x, y):
    """JAX's integer power: exponentiation by squaring over the low 6 bits of y (more would
    overflow for any |x| > 1), so a negative or a large y gives the same value as in JAX."""
    zero, one = _strong_scalar(y, 0), _strong_scalar(y, 1)
    # JAX's accumulator starts from strong constants (0 ** y is 0 for y != 0), so the result is
    # never weakly typed.
    aval = get_aval(x)
    acc = lax.select(lax.bitwise_and(lax.eq(x, zero), lax.ne(y, zero)),
                     lax.full(aval.shape, 0, aval.dtype), lax.full(aval.shape, 1, aval.dtype))
    for _ in range(6):
        acc = lax.select(lax.ne(lax.bitwise_and(y, one), zero), lax.mul(acc, x), acc)
        x = lax.mul(x, x)
        y = lax.shift_right_logical(y, one)
    return acc


def _static_exponent(x2):
    """x2 as a Python int where JAX raises by it with lax.integer_pow: a concrete integer
    scalar (a Python bool, or a 0-d integer array outside jit); otherwise None."""
    if isinstance(x2, Tracer):
        x2 = x2.to_concrete_value()
    if getattr(x2, "dtype", None) == np.bool_:
        return None  # a boolean array is no index to JAX
    try:
        return operator.index(x2)
    except TypeError:
        return None


def power(x1, x2, /):
    """x1 ** x2 elementwise; a static Python integer exponent uses repeated multiplication."""
    check_arraylike("power", x1, x2)
    exponent = _static_exponent(x2)
    if exponent is not None:
        # A concrete integer exponent (bool included) keeps x1's dtype, as in JAX; a negative one
        # with an integer base is lax.integer_pow's TypeError.
        (x1,) = promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, exponent)
    x1_dt = dtypes.dtype(x1) if isinstance(x1, (int, float, complex)) else get_aval(x1).dtype
    x2_dt = dtypes.dtype(x2) if isinstance(x2, (float, complex)) else get_aval(x2).dtype
    if dtypes.is_int(x2_dt) and (dtypes.is_float(x1_dt) or dtypes.is_complex(x1_dt)):
        # An inexact base with an integer exponent array: lax.pow without promoting the
        # exponent, so the result is weak only if both are (as JAX).
        (x1,) = promote_dtypes(x1)
        return lax.pow(*promote_shapes(x1, promote_dtypes(x2)[0], fun_name="power"))
    x1, x2 = promote_dtypes_numeric(x1, x2)
    x1, x2 = promote_shapes(x1, x2, fun_name="power")
    return _power(x1, x2)


def pow(x1, x2, /):
    """Alias of power (a function of its own, so argument errors name pow, as in JAX)."""
    return power(x1, x2)
float_power = power_float


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """`x` where `condition` else `y` (3 arguments); with one argument, the indices of nonzeros."""
    if x is None and y is None:
        from gpuarr.numpy.indexing import nonzero
        check_arraylike("where", condition)
        return nonzero(condition, size=size, fill_value=fill_value)
    check_arraylike("where", condition, x, y)  # a missing x or y is this TypeError, as in JAX
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    return _where(condition, x, y)


@_jit
def _where(condition, x, y):
    """Three-term where's body, a jit named _where as in JAX (so op-by-op calls do not build
    broadcast copies of scalars): every operand is broadcast to the result's shape."""
    (condition,) = promote_dtypes(condition)
    condition = _to_bool(condition)
    x, y = promote_dtypes(x, y)
    if get_aval(condition).ndim == 0:  # lax.select takes a scalar condition as it is
        x, y = broadcast_all(x, y)
    else:
        condition, x, y = broadcast_all(condition, x, y)
    return x if 0 in get_aval(x).shape else lax.select(condition, x, y)




@_jit
def clip(arr=None, /, min=None, max=None):
    """Limit values to [min, max] (a jit, as JAX's); complex values have no order to clip by."""
    if arr is None:
        raise ValueError("No input was provided to the clip function.")
    check_arraylike("clip", arr)
    if builtins.any(t is not None and dtypes.is_complex(dtypes.dtype(t)) for t in (arr, min, max)):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. "
            "Complex values have no ordering and cannot be clipped. Please convert to a real "
            "value or array by taking the real or imaginary components via "
            "jax.numpy.real/imag respectively.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return ensure_array(arr)


def isnan(x, /):
    """True where x is NaN."""
    check_arraylike("isnan", x)
    (x,) = promote_dtypes(x)
    return lax.ne(x, x)


@_jit
def isinf(x, /):
    """True where x is +inf or -inf."""
    check_arraylike("isinf", x)
    (x,) = promote_dtypes(x)
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):  # infinite when either part is
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    if not dtypes.is_float(dt):
        return lax.full(get_aval(x).shape, False, np.bool_)
    return lax.eq(lax.abs(x), np.asarray(np.inf, dt)[()])


@_jit(static_argnames=("decimals",))
def round(a, decimals=0, out=None):
    """Round to `decimals` decimal places, ties to even (as numpy.round; a jit, as JAX's)."""
    check_arraylike("round", a)
    decimals = operator.index(static_hashable(decimals))  # JAX's decimals is a static int argument
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    (a,) = promote_dtypes(a)
    dt = get_aval(a).dtype
    if dtypes.is_int(dt):
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return ensure_array(a)
    if dt == np.bool_:
        raise ValueError(f"data type {dt.type} not inexact")  # JAX prints the class
    if decimals > np.log10(dtypes.finfo(dt).max):
        return ensure_array(a)  # rounding beyond the type's precision changes nothing, as in JAX
    if dtypes.is_complex(dt):  # real and imaginary parts round separately, as in JAX
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return lax.round(a, 1)
    # float16 scales in float32 so the factor itself stays exact enough.
    x = lax.convert_element_type(a, np.float32) if dt == np.float16 else a
    factor = _scalar(x, 10 ** decimals)  # weak for a weak scalar, as JAX's constant
    out = lax.div(lax.round(lax.mul(x, factor), 1), factor)
    return lax.convert_element_type(out, dt) if dt == np.float16 else out


around = round


# ---------------------------------------------------------------- more ufuncs


def _trunc(x):
    return lax.select(lax.lt(x, _scalar(x, 0)), lax.ceil(x), lax.floor(x))


def _scalar(x, value):
    """`value` as a 0-d constant of x's dtype: weakly typed when x is a weak 0-d value, else a
    NumPy scalar (strongly typed), as JAX's constants."""
    aval = get_aval(x)
    if aval.weak_type and not aval.shape:
        return _weak_scalar(value, aval.dtype)
    return np.asarray(value, aval.dtype)[()]


def _strong_scalar(x, value):
    """`value` as a NumPy scalar of x's dtype, where JAX's code uses a strongly typed constant."""
    return np.asarray(value, get_aval(x).dtype)[()]


def _is_float(x):
    return dtypes.is_float(get_aval(x).dtype)


def _ln_const(x, base):
    return _strong_scalar(x, np.log(base))


log10 = _unary("log10", lambda x: lax.div(lax.log(x), _ln_const(x, 10)))
log2 = _unary("log2", lambda x: lax.div(lax.log(x), _ln_const(x, 2)))
def _rint(x):
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):  # rounds the real and imaginary parts, as in JAX
        return lax.complex(lax.round(lax.real(x), 1), lax.round(lax.imag(x), 1))
    return lax.round(x, 1)


def _no_complex(name, op):
    def f(x):
        if dtypes.is_complex(get_aval(x).dtype):
            raise TypeError(f"ufunc '{name}' does not support complex dtypes")
        return op(x)
    return f


def _promote_rint(x):
    """Integers and booleans become the default float, strongly typed (JAX converts them)."""
    (x,) = promote_dtypes(x)
    dt = get_aval(x).dtype
    if dtypes.is_int(dt) or dt == np.bool_:
        return (lax.convert_element_type(x, dtypes.default_float_dtype()),)
    return (x,)


rint = _jit(_unary("rint", _rint, _promote_rint))
fabs = _unary("fabs", _no_complex("fabs", lax.abs))
deg2rad = _unary("deg2rad", lambda x: lax.mul(x, _scalar(x, np.pi / 180)))
rad2deg = _unary("rad2deg", lambda x: lax.mul(x, _scalar(x, 180 / np.pi)))


radians, degrees = deg2rad, rad2deg  # JAX names deg2rad and rad2deg in their errors
acos, acosh, asin = _alias("acos", arccos), _alias("acosh", arccosh), _alias("asin", arcsin)
asinh, atan, atanh = _alias("asinh", arcsinh), _alias("atan", arctan), _alias("atanh", arctanh)
atan2 = arctan2
bitwise_invert = _alias("bitwise_invert", invert)


def _sinc(x):
    # The double select keeps the gradient at 0 finite (sinc'(0) = 0).
    zero = lax.eq(x, _scalar(x, 0))
    safe = lax.select(zero, lax.full_like(x, 1), x)
    pix = lax.mul(safe, _scalar(x, np.pi))
    return lax.select(zero, lax.full_like(x, 1), lax.div(lax.sin(pix), pix))


sinc = _unary("sinc", _sinc)


def _signbit(x):
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
    if dt == np.bool_ or dtypes.is_unsigned(dt):
        return lax.full(get_aval(x).shape, False, np.bool_)
    if dtypes.is_int(dt):
        return lax.lt(x, _strong_scalar(x, 0))
    if dtypes.finfo(dt).bits not in (16, 32, 64):  # the 8- and 4-bit floats, as JAX
        raise NotImplementedError("jax.numpy.signbit only supports 16, 32, and 64-bit types.")
    # The sign bit itself, so -0.0 and -nan count as negative, as in NumPy.
    bits = lax.bitcast_convert_type(x, np.dtype(f"int{dt.itemsize * 8}"))
    return lax.lt(bits, np.asarray(0, bits.dtype)[()])


signbit = _unary("signbit", _signbit, promote_dtypes)


def _isposneg(name, value):
    def op(x):
        if dtypes.is_complex(get_aval(x).dtype):
            raise ValueError("isposinf/isneginf are not well defined for complex types")
        if not _is_float(x):
            return lax.full(get_aval(x).shape, False, np.bool_)
        return lax.eq(x, _strong_scalar(x, value))
    unary = _unary(name, op, promote_dtypes)

    def fn(x, /, out=None):
        if out is not None:
            raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
        return unary(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise x == {value} for floats (False for other types), as numpy.{name}."
    return fn


isposinf = _isposneg("isposinf", np.inf)
isneginf = _isposneg("isneginf", -np.inf)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by `nan` and +-inf by `posinf`/`neginf` (default: the dtype's extremes)."""
    check_arraylike("nan_to_num", x)
    (x,) = promote_dtypes(x)
    if not _is_float(x):
        return x
    info = dtypes.finfo(get_aval(x).dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = lax.select(lax.ne(x, x), lax.full_like(x, nan), x)
    x = lax.select(lax.eq(x, _scalar(x, np.inf)), lax.full_like(x, posinf), x)
    out = lax.select(lax.eq(x, _scalar(x, -np.inf)), lax.full_like(x, neginf), x)
    return lax.lax._convert_weak(out, get_aval(out).dtype, False)  # JAX's constants are strong


def _hypot(x, y):
    if dtypes.is_complex(get_aval(x).dtype):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                         "to real values first, such as by using abs(x)")
    x, y = lax.abs(x), lax.abs(y)
    big, small = lax.max(x, y), lax.min(x, y)
    safe = lax.select(lax.eq(big, _scalar(big, 0)), lax.full_like(big, 1), big)
    ratio = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(_scalar(big, 1), lax.mul(ratio, ratio))))
    out = lax.select(lax.eq(big, _scalar(big, 0)), big, out)
    inf = lax.bitwise_or(lax.eq(x, _scalar(x, np.inf)), lax.eq(y, _scalar(y, np.inf)))
    return lax.select(inf, lax.full_like(out, np.inf), out)


hypot = _binary("hypot", _hypot, promote_dtypes_inexact, params="x1, x2, /")
def _copysign(x, y):
    if dtypes.is_complex(get_aval(x).dtype):
        raise TypeError("copysign does not support complex-valued inputs")
    return lax.select(_signbit(y), lax.neg(lax.abs(x)), lax.abs(x))


copysign = _binary("copysign", _copysign, promote_dtypes_inexact, params="x1, x2, /")
nextafter = _binary("nextafter", lax.nextafter, promote_dtypes_inexact)


def _fminmax(pick):
    def op(x, y):
        out = pick(x, y)
        if not _is_float(x):
            return out
        out = lax.select(lax.ne(y, y), x, out)
        return lax.select(lax.ne(x, x), y, out)
    return op


fmax = _binary("fmax", _fminmax(lax.max), params="x1, x2")
fmin = _binary("fmin", _fminmax(lax.min), params="x1, x2")


def _heaviside(x1, x2):
    zero = _scalar(x1, 0)
    sign = lax.select(lax.lt(x1, zero), lax.full_like(x1, 0),
                      lax.select(lax.gt(x1, zero), lax.full_like(x1, 1), x1))  # NaN stays NaN
    return lax.select(lax.eq(x1, zero), x2, sign)


heaviside = _binary("heaviside", _heaviside, promote_dtypes_inexact, params="x1, x2, /")


def _logaddexp_complex(log1p_of_exp, x, y):
    big = lax.max(x, y)
    delta = lax.sub(x, y)
    out = lax.add(big, log1p_of_exp(lax.sub(lax.min(x, y), big)))
    # delta is NaN when both are the same infinity: then x + y is right (and NaN stays NaN).
    return lax.select(lax.ne(delta, delta), lax.add(x, y), out)


def _log1p_exp(d):
    return lax.log1p(lax.exp(d))


def _log1p_exp2(d):
    return lax.div(lax.log1p(lax.exp2(d)), _scalar(d, np.log(2)))


def _replace_inf(x):
    return lax.select(lax.eq(x, _scalar(x, np.inf)), lax.full_like(x, 0), x)


def _custom_logaddexp(name, exp, log_scale):
    """logaddexp (exp, log_scale=None) or logaddexp2 (exp2, log2(e)) of real operands with JAX's
    custom JVP: each tangent weighted by exp(x - out), with +inf read as 0. (Differentiating
    the max and abs of the primal instead would give a zero second derivative at x == y.)"""
    def primal(x1, x2):
        amax = lax.max(x1, x2)
        delta = lax.sub(x1, x2)
        # delta is NaN when both are the same infinity: then x1 + x2 is right (NaN stays NaN).
        same_inf, total = lax.ne(delta, delta), lax.add(x1, x2)
        soft = lax.log1p(exp(lax.neg(lax.abs(delta))))
        if log_scale is not None:
            soft = lax.mul(log_scale, soft)
        return lax.select(same_inf, total, lax.add(amax, soft))
    primal.__name__ = primal.__qualname__ = name
    fn = custom_jvp(primal)

    def jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        w1 = exp(lax.sub(_replace_inf(x1), _replace_inf(out)))
        w2 = exp(lax.sub(_replace_inf(x2), _replace_inf(out)))
        return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))
    jvp.__name__ = jvp.__qualname__ = f"_{name}_jvp"
    fn.defjvp(jvp)

    def op(x, y):
        return fn(x, y) if _is_float(x) else _logaddexp_complex(_LOG1P[name], x, y)
    return op


_LOG1P = {"logaddexp": _log1p_exp, "logaddexp2": _log1p_exp2}
logaddexp = _binary_ufunc("logaddexp", _custom_logaddexp("logaddexp", lax.exp, None),
                          promote_dtypes_inexact)
logaddexp2 = _binary_ufunc("logaddexp2", _custom_logaddexp("logaddexp2", lax.exp2, float(np.log2(np.e))),
                           promote_dtypes_inexact)


def _check_int_args(name, x):
    dt = get_aval(x).dtype
    if not (dtypes.is_int(dt) or dt == np.bool_):
        raise TypeError(f"population_count does not accept dtype {dt.name}. Accepted dtypes are "
                        "subtypes of integer.")  # JAX's message: its bitwise_count is that primitive


def _shift(name, signed_op):
    def op(x, y):
        # Float operands reach the lax shift, whose dtype error JAX raises too.
        if get_aval(x).dtype == np.bool_:
            x, y = lax.convert_element_type(x, np.int32), lax.convert_element_type(y, np.int32)
        dt = get_aval(x).dtype
        # JAX asks NumPy whether the type is unsigned, which uint4 and uint2 are not to NumPy:
        # they shift arithmetically (their top bit is copied), as in JAX.
        if name == "right_shift" and dtypes.is_unsigned(dt) and dt not in dtypes.NARROW_DTYPES:
            return lax.shift_right_logical(x, y)
        return signed_op(x, y)
    return op


left_shift = _binary("left_shift", _shift("left_shift", lax.shift_left), promote_dtypes)
right_shift = _binary("right_shift", _shift("right_shift", lax.shift_right_arithmetic), promote_dtypes,
                      params="x1, x2, /")
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def _gcd(x, y, name="gcd"):
    if not dtypes.is_int(get_aval(x).dtype):
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    a, b = lax.abs(x), lax.abs(y)
    zero = _scalar(a, 0)
    # Euclid's algorithm needs at most ~1.44 * bits steps (Lame's theorem); unrolled.
    for _ in range(int(get_aval(x).dtype.itemsize * 8 * 1.45) + 2):
        done = lax.eq(b, zero)
        safe_b = lax.select(done, lax.full_like(b, 1), b)
        a, b = lax.select(done, a, b), lax.select(done, b, lax.rem(a, safe_b))
    return a


def _lcm(x, y):
    g = _gcd(x, y, "lcm")
    zero = _scalar(g, 0)
    safe = lax.select(lax.eq(g, zero), lax.full_like(g, 1), g)
    return lax.select(lax.eq(g, zero), g, lax.abs(lax.mul(lax.div(x, safe), y)))


gcd = _binary("gcd", _gcd, promote_dtypes, params="x1, x2")
lcm = _binary("lcm", _lcm, promote_dtypes, params="x1, x2")


def divmod(x1, x2, /):
    """(floor_divide(x1, x2), remainder(x1, x2)) with Python's rules for negatives."""
    check_arraylike("divmod", x1, x2)
    a, b = promote_dtypes_numeric(x1, x2)
    if _is_float(a):
        return _float_divmod(*broadcast_arrays(a, b))
    return floor_divide(a, b), remainder(a, b)  # broadcasting keeps weak types, as in JAX


def modf(x, /, out=None):
    """The fractional and integral parts of x, both with x's sign."""
    reject_out("modf", out)
    check_arraylike("modf", x)
    (x,) = promote_dtypes_inexact(x)
    whole = _trunc(x)
    return lax.sub(x, whole), whole


def frexp(x, /):
    """Mantissa in [0.5, 1) and integer exponent with x == mantissa * 2**exponent."""
    check_arraylike("frexp", x)
    (x,) = promote_dtypes_inexact(x)
    dt = get_aval(x).dtype
    special = lax.bitwise_or(lax.eq(x, _scalar(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    ax = lax.abs(lax.select(special, lax.full_like(x, 1), x))
    # Work in float32/float64 so the exponent of small float16 values is representable.
    wide = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    axw = lax.convert_element_type(ax, wide)
    e = lax.add(lax.floor(lax.div(lax.log(axw), _scalar(axw, np.log(2)))), _scalar(axw, 1))
    m = _scale2(axw, lax.neg(e))
    # log2 may be off by one next to powers of two: renormalise into [0.5, 1).
    low = lax.lt(m, _scalar(m, 0.5))
    m, e = lax.select(low, lax.mul(m, _scalar(m, 2)), m), lax.select(low, lax.sub(e, _scalar(e, 1)), e)
    high = lax.ge(m, _scalar(m, 1))
    m, e = lax.select(high, lax.mul(m, _scalar(m, 0.5)), m), lax.select(high, lax.add(e, _scalar(e, 1)), e)
    m = lax.select(lax.lt(x, _scalar(x, 0)), lax.neg(m), m)
    m = lax.select(special, x, lax.convert_element_type(m, dt))
    e = lax.select(special, lax.full(get_aval(x).shape, 0, np.int32), lax.convert_element_type(e, np.int32))
    return m, e


def _scale2(x, e):
    """x * 2**e for a float exponent array, in two halves so 2**e never overflows."""
    half = lax.floor(lax.div(e, _scalar(e, 2)))
    return lax.mul(lax.mul(x, lax.exp2(half)), lax.exp2(lax.sub(e, half)))


def ldexp(x1, x2, /):
    """x1 * 2**x2 for an integer exponent x2."""
    check_arraylike("ldexp", x1, x2)
    x2_dt = dtypes.dtype(x2) if not hasattr(x2, "dtype") else x2.dtype
    if not (dtypes.is_int(x2_dt) or x2_dt == np.bool_):
        raise ValueError(f"jnp.ldexp requires an integer exponent x2, got dtype {np.dtype(x2_dt).name}")
    (x1,) = promote_dtypes_inexact(x1)
    x1_dt = get_aval(x1).dtype
    e = lax.convert_element_type(promote_dtypes(x2)[0], x1_dt)
    x1, e = broadcast_arrays(x1, e)
    return _scale2(x1, e)


def spacing(x, /):
    """The distance from x to the next representable value away from zero (NumPy's rule)."""
    check_arraylike("spacing", x)
    (x,) = promote_dtypes_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    if get_aval(x).dtype == np.float16:  # NumPy's float16 rule: always the step toward +inf
        return lax.sub(lax.nextafter(x, lax.full_like(x, np.inf)), x)
    inf = lax.full_like(x, np.inf)
    away = lax.select(_signbit(x), lax.neg(inf), inf)
    out = lax.sub(lax.nextafter(x, away), x)
    tiny = lax.full_like(x, dtypes.finfo(get_aval(x).dtype).smallest_subnormal)
    out = lax.select(lax.eq(out, _scalar(x, 0)), lax.select(_signbit(x), lax.neg(tiny), tiny), out)
    return lax.lax._convert_weak(out, get_aval(out).dtype, False)  # strong, as JAX's


def bitwise_count(x, /):
    """The number of set bits in each element's absolute value, as uint8."""
    check_arraylike("bitwise_count", x)
    (x,) = promote_dtypes(x)
    _check_int_args("bitwise_count", x)
    if get_aval(x).dtype == np.bool_:
        return lax.convert_element_type(x, np.uint8)
    if not dtypes.is_unsigned(get_aval(x).dtype):
        x = lax.abs(x)
    return lax.convert_element_type(lax.population_count(x), np.uint8)


def real(val, /):
    """The real part (the value itself for real inputs)."""
    check_arraylike("real", val)
    (val,) = promote_dtypes(val)
    return lax.real(val) if dtypes.is_complex(get_aval(val).dtype) else ensure_array(val)


def imag(val, /):
    """The imaginary part (zeros for real inputs)."""
    check_arraylike("imag", val)
    (val,) = promote_dtypes(val)
    return lax.imag(val) if dtypes.is_complex(get_aval(val).dtype) else lax.full_like(val, 0)


def conjugate(x, /):
    """The complex conjugate (the value itself for real inputs)."""
    check_arraylike("conjugate", x)
    (x,) = promote_dtypes(x)
    return lax.conj(x) if dtypes.is_complex(get_aval(x).dtype) else ensure_array(x)


conj = conjugate


@_jit(static_argnames=("deg",))
def angle(z, deg=False):
    """The argument of z, atan2(imag(z), real(z)): 0 for non-negative reals and pi for negative
    ones (in degrees with deg)."""
    check_arraylike("angle", z)
    z = ensure_array(z)
    aval = get_aval(z)
    if dtypes.is_complex(aval.dtype):
        out = lax.atan2(lax.imag(z), lax.real(z))
    else:
        # JAX computes non-float and 0-d float input in the strong default float type.
        if not dtypes.is_float(aval.dtype) or not aval.shape:
            z = lax.convert_element_type(z, dtypes.default_float_dtype())
        out = lax.atan2(lax.full_like(z, 0), z)
    return rad2deg(out) if deg else out


def iscomplex(x):
    """True where the imaginary part is nonzero (False everywhere for real inputs)."""
    check_arraylike("iscomplex", x)
    im = imag(x)  # a comparison, so a weak input gives a weak result as in JAX
    return lax.ne(im, lax.full_like(im, 0))


def isreal(x):
    """True where the imaginary part is zero (True everywhere for real inputs)."""
    check_arraylike("isreal", x)
    im = imag(x)
    return lax.eq(im, lax.full_like(im, 0))


def _i0(x):
    # I0(x) = sum_k ((x/2)^2)^k / (k!)^2 for |x| <= 15 and the asymptotic series beyond.
    wide = np.dtype(np.float64) if get_aval(x).dtype == np.float64 else np.dtype(np.float32)
    xw = lax.abs(lax.convert_element_type(x, wide))
    small = lax.le(xw, _scalar(xw, 15))
    xs = lax.select(small, xw, lax.full_like(xw, 0))
    q = lax.mul(lax.mul(xs, xs), _scalar(xs, 0.25))
    term, total = lax.full_like(xs, 1), lax.full_like(xs, 1)
    for k in range(1, 60):
        term = lax.div(lax.mul(term, q), _scalar(xs, k * k))
        total = lax.add(total, term)
    xl = lax.select(small, lax.full_like(xw, 20), xw)
    series, term = lax.full_like(xl, 1), lax.full_like(xl, 1)
    for k in range(1, 12):
        term = lax.div(lax.mul(term, _scalar(xl, (2 * k - 1) ** 2)), lax.mul(xl, _scalar(xl, 8 * k)))
        series = lax.add(series, term)
    big = lax.div(lax.mul(lax.exp(xl), series), lax.sqrt(lax.mul(xl, _scalar(xl, 2 * np.pi))))
    aval = get_aval(x)  # a weak input gives a weak result, as JAX's
    return lax.lax._convert_weak(lax.select(small, total, big), aval.dtype, aval.weak_type)


i0 = _unary("i0", _i0, positional_only=False)

