"""Elementwise functions with NumPy's names and JAX's dtype promotion."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Tracer, get_aval
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.lax import special_extra as lax_special_extra
from gpuarr.numpy import ufunc_api
from gpuarr.numpy.arguments import (
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



def _has_bool(*args):
    # Arrays only: JAX folds a Python or NumPy bool scalar into a float constant first.
    return builtins.any(getattr(a, "dtype", None) == np.bool_ and not isinstance(a, np.generic)
                        for a in args)


def _jitted_with_bool(fn):
    """`fn`, run as a jitted function where an operand is boolean: JAX's jnp functions are
    jitted, and under jit XLA rewrites float(pred) * a (also x / c -> x * (1 / c)) into
    select(pred, a, 0), so `b * inf` and `b / False` give 0 where `b` is False, not NaN."""
    jitted = _jit(fn)

    def call(*args, **kwargs):
        # Any other call goes to `fn` as it is, so its errors name JAX's parameters.
        if (len(args) == 2 and not kwargs and _has_bool(*args)
                and not builtins.any(isinstance(a, Tracer) for a in args)):
            return jitted(*args)
        return fn(*args, **kwargs)
    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn  # inspect.signature shows fn's: JAX's parameter names
    return call


def _binary_ufunc(name, op, promote=promote_dtypes, bool_jit=False):
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
    return ufunc_api.binary_ufunc(_jitted_with_bool(fn) if bool_jit else fn)


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


@_jit
def arccosh(x, /):
    """Elementwise arccosh, as numpy.arccosh (a jit, as JAX's); complex results take
    NumPy's branch, with a non-negative real part."""
    check_arraylike("arccosh", x)
    (x,) = promote_dtypes_inexact(x)
    result = lax.acosh(x)
    if dtypes.is_complex(get_aval(result).dtype):
        result = _where(lax.lt(lax_extras.real(result), 0), lax.neg(result), result)
    return result


arctanh = _unary("arctanh", lax.atanh)
def _isfinite(x):
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):  # finite only when both parts are
        return lax.bitwise_and(lax.is_finite(lax_extras.real(x)), lax.is_finite(lax_extras.imag(x)))
    return lax.is_finite(x) if dtypes.is_float(dt) else lax_shape_ops.full(get_aval(x).shape, True, np.bool_)


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
                   else lax.mul(x, y), bool_jit=True)
true_divide = _binary("true_divide", lax.div, promote_dtypes_inexact, params="x1, x2, /")
true_divide = _jitted_with_bool(true_divide)
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
        same_real = lax.eq(lax_extras.real(x), lax_extras.real(y))
        return lax.select(same_real, compare(lax_extras.imag(x), lax_extras.imag(y)),
                          compare(lax_extras.real(x), lax_extras.real(y)))
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


@_jit
def floor_divide(x1, x2, /):
    """x1 // x2 elementwise, rounding toward negative infinity (a jit, as JAX's)."""
    check_arraylike("floor_divide", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes_numeric(x1, x2), fun_name="floor_divide")
    dt = get_aval(x1).dtype
    if dtypes.is_unsigned(dt):
        return lax.div(x1, x2)
    if dtypes.is_int(dt):
        # Python's rule: the truncated quotient less one where the signs differ and the
        # division is inexact.
        quotient = lax.div(x1, x2)
        # jnp's logical_and, which makes weak comparisons strong, as JAX's.
        select = logical_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                             lax.ne(lax.rem(x1, x2), _python_scalar(x1, 0)))
        return _where(select, lax.sub(quotient, 1), quotient)  # a Python 1 keeps the weak type
    if dtypes.is_complex(dt):
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


def _float_divmod(x, y):
    mod = lax.rem(x, y)
    # x / 0 keeps its infinity instead of the NaN that x - fmod(x, 0) would give.
    div = lax.div(_where(lax.eq(y, _python_scalar(y, 0)), x, lax.sub(x, mod)), y)
    fix = lax.bitwise_and(lax.ne(mod, _python_scalar(mod, 0)),
                          lax.ne(lax.sign(y), lax.sign(mod)))
    mod = lax.select(fix, lax.add(mod, y), mod)
    div = lax.select(fix, lax.sub(div, 1.0), div)  # keeps div's weak type, as in JAX
    # div is within rounding error of an integer: snap it to the nearest one (halves, which
    # narrow types can produce, away from zero, as JAX's lax.round).
    return lax.round(div), mod


@_jit
def remainder(x1, x2, /):
    """x1 % x2 elementwise, with x2's sign (Python's rule); a jit, as JAX's."""
    check_arraylike("remainder", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes_numeric(x1, x2), fun_name="remainder")
    zero = _strong_scalar(x1, 0)
    if dtypes.is_int(get_aval(x2).dtype):  # x % 0 is 0 for integers, as in JAX
        x2 = _where(lax.eq(x2, _python_scalar(x2, 0)), lax_shape_ops.full_like(x2, 1), x2)
    trunc_mod = lax.rem(x1, x2)
    trunc_mod_not_zero = lax.ne(trunc_mod, zero)
    do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                              trunc_mod_not_zero)
    return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder  # JAX's mod calls remainder, so its program is remainder's


def _fmod(x, y):
    # An integer division by zero gives 0, as JAX divides by 1 there.
    if dtypes.is_int(get_aval(y).dtype):
        zero = lax_shape_ops.full_like(y, 0)
        y = lax.select(lax.eq(y, zero), lax_shape_ops.full_like(y, 1), y)
    return lax.rem(x, y)


fmod = _jit(_binary("fmod", _fmod, promote_dtypes_numeric, params="x1, x2, /"))  # jits, as JAX's


def _power(x, y):
    dt = get_aval(x).dtype
    if dt in dtypes.NARROW_DTYPES and dtypes.is_int(dt):
        # JAX checks the width with NumPy's iinfo, which does not know int4 and the like.
        raise ValueError(f"Invalid integer data type {dt.kind!r}.")
    if dtypes.is_int(dt):
        from gpuarr.numpy.arguments import broadcast_arrays as bcast
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
                     lax_shape_ops.full(aval.shape, 0, aval.dtype), lax_shape_ops.full(aval.shape, 1,
                                                                                       aval.dtype))
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
        return lax.bitwise_or(isinf(lax_extras.real(x)), isinf(lax_extras.imag(x)))
    if not dtypes.is_float(dt):
        return lax_shape_ops.full(get_aval(x).shape, False, np.bool_)
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
        return lax_extras.complex(_round_float(lax_extras.real(a), decimals),
                                  _round_float(lax_extras.imag(a), decimals))
    return _round_float(a, decimals)


def _round_float(x, decimals):
    """Real floats rounded to `decimals` places, ties to even, inline in round's jit."""
    if decimals == 0:
        return lax.round(x, 1)
    dt = get_aval(x).dtype
    # float16 scales in float32 so the factor itself stays exact enough.
    x = lax_conversions.convert_element_type(x, np.float32) if dt == np.float16 else x
    factor = _scalar(x, 10 ** decimals)  # weak for a weak scalar, as JAX's constant
    out = lax.div(lax.round(lax.mul(x, factor), 1), factor)
    return lax_conversions.convert_element_type(out, dt) if dt == np.float16 else out


@_jit(static_argnames=("decimals",))
def around(a, decimals=0, out=None):
    """Alias of round (a jit of its own, as JAX's)."""
    return round(a, decimals, out)


# ---------------------------------------------------------------- more ufuncs


@_jit
def trunc(x):
    """Round toward zero; integers and booleans pass through (a jit, as JAX's)."""
    check_arraylike("trunc", x)
    (x,) = promote_dtypes(x)
    if _is_int_or_bool(x):
        return x
    return _where(lax.lt(x, _strong_scalar(x, 0)), lax.ceil(x), lax.floor(x))


def _scalar(x, value):
    """`value` as a 0-d constant of x's dtype: weakly typed when x is a weak 0-d value, else a
    NumPy scalar (strongly typed), as JAX's constants."""
    aval = get_aval(x)
    if aval.weak_type and not aval.shape:
        return _weak_scalar(value, aval.dtype)
    return np.asarray(value, aval.dtype)[()]


def _python_scalar(x, value):
    """`value` as a weakly typed 0-d constant of x's dtype, as a Python scalar in JAX's jnp
    arithmetic (x + 1): the result keeps x's weak type, even for a weak array x."""
    return _weak_scalar(value, get_aval(x).dtype)


def _strong_scalar(x, value):
    """`value` as a NumPy scalar of x's dtype, where JAX's code uses a strongly typed constant."""
    return np.asarray(value, get_aval(x).dtype)[()]


def _is_float(x):
    return dtypes.is_float(get_aval(x).dtype)


def _real_const(x, value):
    """`value` as a NumPy scalar of x's real dtype (float32 for complex64)."""
    return np.asarray(value, dtypes.finfo(get_aval(x).dtype).dtype)[()]


@_jit(inline=True)
def log10(x, /):
    """Elementwise base-10 logarithm: log(x) times 1/log(10), as JAX's (a complex log scales
    its real and imaginary parts)."""
    check_arraylike("log10", x)
    (x,) = promote_dtypes_inexact(x)
    one_over_log10 = _real_const(x, 0.4342944819032518)
    r = lax.log(x)
    if dtypes.is_complex(get_aval(x).dtype):
        re, im = lax_extras.real(r), lax_extras.imag(r)
        return lax_extras.complex(lax.mul(re, one_over_log10), lax.mul(im, one_over_log10))
    return lax.mul(r, one_over_log10)


@_jit(inline=True)
def log2(x, /):
    """Elementwise base-2 logarithm: log(x) / log(2), as JAX's (a complex log scales its real
    and imaginary parts)."""
    check_arraylike("log2", x)
    (x,) = promote_dtypes_inexact(x)
    r = lax.log(x)
    if dtypes.is_complex(get_aval(x).dtype):
        re, im = lax_extras.real(r), lax_extras.imag(r)
        ln2 = lax.log(_strong_scalar(re, 2))
        return lax_extras.complex(lax.div(re, ln2), lax.div(im, ln2))
    return lax.div(r, lax.log(_strong_scalar(x, 2)))


def _rint(x):
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):  # rounds the real and imaginary parts, as in JAX
        return lax_extras.complex(lax.round(lax_extras.real(x), 1), lax.round(lax_extras.imag(x), 1))
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
        return (lax_conversions.convert_element_type(x, dtypes.default_float_dtype()),)
    return (x,)


rint = _jit(_unary("rint", _rint, _promote_rint))
fabs = _unary("fabs", _no_complex("fabs", lax.abs))
deg2rad = _unary("deg2rad", lambda x: lax.mul(x, _scalar(x, np.pi / 180)))
rad2deg = _unary("rad2deg", lambda x: lax.mul(x, _scalar(x, 180 / np.pi)))


radians, degrees = deg2rad, rad2deg  # JAX names deg2rad and rad2deg in their errors
acos, asin = _alias("acos", arccos), _alias("asin", arcsin)
asinh, atan, atanh = _alias("asinh", arcsinh), _alias("atan", arctan), _alias("atanh", arctanh)
atan2 = arctan2


@_jit(inline=True)
def acosh(x, /):
    """Alias of arccosh (argument errors name acosh, as in JAX)."""
    check_arraylike("acosh", x)
    return arccosh(*promote_dtypes(x))


bitwise_invert = _alias("bitwise_invert", invert)


def _sinc_maclaurin(k, x):
    """The k-th derivative of sin(x)/x at zero, shaped like x; its custom JVP (the next term
    times the tangent) gives sinc finite derivatives of every order at 0, as JAX's."""
    if k % 2:
        return lax.mul(x, _python_scalar(x, 0))
    return lax.add(lax.mul(x, _python_scalar(x, 0)), _scalar(x, (-1) ** (k // 2) / (k + 1)))


_sinc_maclaurin = custom_jvp(_sinc_maclaurin, nondiff_argnums=(0,))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_maclaurin(k, x), lax.mul(_sinc_maclaurin(k + 1, x), t)


@_jit
def sinc(x, /):
    """sin(pi x) / (pi x), 1 at 0 (a jit, as JAX's)."""
    check_arraylike("sinc", x)
    (x,) = promote_dtypes_inexact(x)
    eq_zero = lax.eq(x, _scalar(x, 0))
    pi_x = lax.mul(_scalar(x, np.pi), x)
    safe_pi_x = _where(eq_zero, _scalar(x, 1), pi_x)
    return _where(eq_zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe_pi_x), safe_pi_x))


@_jit
def signbit(x, /):
    """True where the sign bit is set (so for -0.0 and -nan too, as in NumPy); a jit, as JAX's."""
    check_arraylike("signbit", x)
    (x,) = promote_dtypes(x)
    dt = get_aval(x).dtype
    if dtypes.is_int(dt):
        return lax.lt(x, _strong_scalar(x, 0))
    if dt == np.bool_:
        return lax_shape_ops.full_like(x, False, np.bool_)
    if not dtypes.is_float(dt):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
    info = dtypes.finfo(dt)
    if info.bits not in (16, 32, 64):  # the 8- and 4-bit floats, as JAX
        raise NotImplementedError("jax.numpy.signbit only supports 16, 32, and 64-bit types.")
    # The top bit, shifted arithmetically down: 0 or -1, as JAX's x >> (nexp + nmant).
    bits = lax_special.bitcast_convert_type(x, np.dtype(f"int{info.bits}"))
    shift = np.asarray(info.nexp + info.nmant, bits.dtype)[()]
    return lax_conversions.convert_element_type(lax.shift_right_arithmetic(bits, shift), np.bool_)


def _isposneg(name, value):
    def op(x):
        if dtypes.is_complex(get_aval(x).dtype):
            raise ValueError("isposinf/isneginf are not well defined for complex types")
        if not _is_float(x):
            return lax_shape_ops.full(get_aval(x).shape, False, np.bool_)
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


@_jit
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by `nan` and +-inf by `posinf`/`neginf` (default: the dtype's extremes); a
    jit with every argument traced, as JAX's."""
    from gpuarr.numpy.creation import asarray
    del copy
    check_arraylike("nan_to_num", x)
    x = ensure_array(x)
    dt = get_aval(x).dtype
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        return x
    if dtypes.is_complex(dt):
        return lax_extras.complex(nan_to_num(lax_extras.real(x), nan=nan, posinf=posinf, neginf=neginf),
                                  nan_to_num(lax_extras.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _where(lax.ne(x, x), asarray(nan, dtype=dt), x)
    out = _where(lax.eq(out, _strong_scalar(out, np.inf)), asarray(posinf, dtype=dt), out)
    return _where(lax.eq(out, _strong_scalar(out, -np.inf)), asarray(neginf, dtype=dt), out)


@_jit
def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) elementwise without overflow (a jit, as JAX's)."""
    check_arraylike("hypot", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes_inexact(x1, x2), fun_name="hypot")
    if dtypes.is_complex(get_aval(x1).dtype):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                         "to real values first, such as by using abs(x)")
    x1, x2 = lax.abs(x1), lax.abs(x2)
    idx_inf = lax.bitwise_or(lax.eq(x1, _strong_scalar(x1, np.inf)),
                             lax.eq(x2, _strong_scalar(x2, np.inf)))
    x1, x2 = lax.max(x1, x2), lax.min(x1, x2)
    is_zero = lax.eq(x1, _python_scalar(x1, 0))
    safe = _where(lax.eq(x1, _python_scalar(x1, 0)), lax_shape_ops.full_like(x1, 1), x1)
    x = _where(is_zero, x1, lax.mul(x1, lax.sqrt(lax.add(_python_scalar(x1, 1),
                                                         lax.square(lax.div(x2, safe))))))
    return _where(idx_inf, _scalar(x, np.inf), x)


@_jit
def copysign(x1, x2, /):
    """x1's magnitude with x2's sign bit (a jit, as JAX's)."""
    check_arraylike("copysign", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes_inexact(x1, x2), fun_name="copysign")
    if dtypes.is_complex(get_aval(x1).dtype):
        raise TypeError("copysign does not support complex-valued inputs")
    return _where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


nextafter = _binary("nextafter", lax.nextafter, promote_dtypes_inexact)


@_jit
def fmax(x1, x2):
    """The elementwise maximum, ignoring NaNs (a jit, as JAX's)."""
    return where(bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


@_jit
def fmin(x1, x2):
    """The elementwise minimum, ignoring NaNs (a jit, as JAX's)."""
    return where(bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


@_jit
def heaviside(x1, x2, /):
    """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0 (NaN stays NaN); a jit, as JAX's."""
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(x1, x2)
    zero = _scalar(x1, 0)
    return _where(lax.lt(x1, zero), zero,
                  _where(lax.gt(x1, zero), _scalar(x1, 1),
                         _where(lax.ne(x1, x1), x1, x2)))


def _logaddexp_complex(log1p_of_exp, x, y):
    big = lax.max(x, y)
    delta = lax.sub(x, y)
    out = lax.add(big, log1p_of_exp(lax.sub(lax.min(x, y), big)))
    # delta is NaN when both are the same infinity: then x + y is right (and NaN stays NaN).
    return lax.select(lax.ne(delta, delta), lax.add(x, y), out)


def _log1p_exp(d):
    return lax.log1p(lax.exp(d))


def _replace_inf(x):
    re_x = lax_extras.real(x) if dtypes.is_complex(get_aval(x).dtype) else x
    return lax.select(lax.eq(re_x, _scalar(re_x, np.inf)), lax_shape_ops.full_like(x, 0), x)


def _wrap_between(x, a):
    """x wrapped into [-a, a], as JAX's complex logaddexp2 wraps its imaginary part."""
    a, two_a, zero = _scalar(x, a), _scalar(x, 2 * a), _scalar(x, 0)
    rem = lax.rem(lax.add(x, a), two_a)
    rem = lax.select(lax.lt(rem, zero), lax.add(rem, two_a), rem)
    return lax.sub(rem, a)


def _custom_logaddexp(name, exp, log_base=None, complex_in_jvp=False):
    """logaddexp (exp, log_base=None) or logaddexp2 (exp2, log(2)) with JAX's custom JVP:
    each tangent weighted by exp(x - out), with +inf read as 0. (Differentiating the max and
    abs of the primal instead would give a zero second derivative at x == y.) Complex operands
    take JAX's formula inside the custom JVP where `complex_in_jvp` (logaddexp2)."""
    def primal(x1, x2):
        amax = lax.max(x1, x2)
        # Python floats, so a weak literal prints JAX's digits.
        scale = None if log_base is None else _scalar(amax, float(1 / log_base))
        if dtypes.is_complex(get_aval(x1).dtype):
            delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _scalar(amax, 2)))
            soft = lax.log1p(exp(delta))
            out = lax.add(amax, soft if scale is None else lax.mul(scale, soft))
            half_period = np.pi if log_base is None else float(np.pi / log_base)
            return lax_extras.complex(lax_extras.real(out), _wrap_between(lax_extras.imag(out), half_period))
        delta = lax.sub(x1, x2)
        # delta is NaN when both are the same infinity: then x1 + x2 is right (NaN stays NaN).
        same_inf, total = lax.ne(delta, delta), lax.add(x1, x2)
        soft = lax.log1p(exp(lax.neg(lax.abs(delta))))
        if scale is not None:
            soft = lax.mul(scale, soft)
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
        if _is_float(x) or complex_in_jvp:
            return fn(x, y)
        return _logaddexp_complex(_LOG1P[name], x, y)
    return op


_LOG1P = {"logaddexp": _log1p_exp}
logaddexp = _binary_ufunc("logaddexp", _custom_logaddexp("logaddexp", lax.exp),
                          promote_dtypes_inexact)
logaddexp2 = _binary_ufunc("logaddexp2", _custom_logaddexp("logaddexp2", lax.exp2, np.log(2),
                                                            complex_in_jvp=True),
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
            x, y = (lax_conversions.convert_element_type(x, np.int32),
                    lax_conversions.convert_element_type(y, np.int32))
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
        safe_b = lax.select(done, lax_shape_ops.full_like(b, 1), b)
        a, b = lax.select(done, a, b), lax.select(done, b, lax.rem(a, safe_b))
    return a


def _lcm(x, y):
    g = _gcd(x, y, "lcm")
    zero = _scalar(g, 0)
    safe = lax.select(lax.eq(g, zero), lax_shape_ops.full_like(g, 1), g)
    return lax.select(lax.eq(g, zero), g, lax.abs(lax.mul(lax.div(x, safe), y)))


gcd = _binary("gcd", _gcd, promote_dtypes, params="x1, x2")
lcm = _binary("lcm", _lcm, promote_dtypes, params="x1, x2")


@_jit
def divmod(x1, x2, /):
    """(floor_divide(x1, x2), remainder(x1, x2)) with Python's rules for negatives (a jit, as
    JAX's)."""
    check_arraylike("divmod", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes_numeric(x1, x2), fun_name="divmod")
    if dtypes.is_int(get_aval(x1).dtype):
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


@_jit
def modf(x, /, out=None):
    """The fractional and integral parts of x, both with x's sign (a jit, as JAX's)."""
    check_arraylike("modf", x)
    (x,) = promote_dtypes_inexact(x)
    reject_out("modf", out)
    whole = _where(lax.ge(x, _strong_scalar(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def _normalize_float(x):
    """x's bits as an integer, subnormals scaled up by 2**nmant, and the exponent offset that
    scaling needs (JAX's frexp helper)."""
    info = dtypes.finfo(get_aval(x).dtype)
    int_type = np.dtype(f"int{info.bits}")
    cond = less(lax.abs(x), info.tiny)  # tiny is a NumPy scalar: a weak x becomes strong
    x1 = _where(cond, multiply(x, _scalar(x, 1 << info.nmant)), x)
    x2 = _where(cond, int_type.type(-info.nmant), int_type.type(0))
    return lax_special.bitcast_convert_type(x1, int_type), x2


@custom_jvp
def _frexp(x):
    dt = get_aval(x).dtype
    info = dtypes.finfo(dt)
    mask = (1 << info.nexp) - 1
    bias = 1 - info.minexp
    x1, x2 = _normalize_float(x)
    exponent = lax.bitwise_and(lax.shift_right_arithmetic(x1, _scalar(x1, info.nmant)),
                               _scalar(x1, mask))
    x2 = lax.add(x2, lax.add(lax.sub(exponent, _scalar(x1, bias)), _scalar(x1, 1)))
    # The exponent field set to bias - 1 puts the mantissa in [0.5, 1).
    x1 = lax.bitwise_and(x1, _scalar(x1, ~(mask << info.nmant)))
    x1 = lax.bitwise_or(x1, _scalar(x1, (bias - 1) << info.nmant))
    x1 = lax_special.bitcast_convert_type(x1, dt)
    # jnp's |, which makes the weak comparisons of a weak x strong, as JAX's.
    cond = bitwise_or(bitwise_or(isinf(x), lax.ne(x, x)), lax.eq(x, _python_scalar(x, 0)))
    x2 = _where(cond, lax_shape_ops.full_like(x2, 0), x2)
    return _where(cond, x, x1), lax_conversions.convert_element_type(x2, np.int32)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    m, e = frexp(x)
    mdot = lax.mul(t, lax.exp2(lax.neg(lax_conversions.convert_element_type(e, get_aval(t).dtype))))
    edot = lax_shape_ops.full_like(e, 0, dtypes.float0)
    return (m, e), (mdot, edot)


@_jit
def frexp(x, /):
    """Mantissa in [0.5, 1) and integer exponent with x == mantissa * 2**exponent, read from
    the bits as JAX's (a jit)."""
    check_arraylike("frexp", x)
    (x,) = promote_dtypes_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        raise TypeError("frexp does not support complex-valued inputs")
    return _frexp(x)


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
    e = lax_conversions.convert_element_type(promote_dtypes(x2)[0], x1_dt)
    x1, e = broadcast_arrays(x1, e)
    return _scale2(x1, e)


@_jit(inline=True)
def spacing(x, /):
    """The distance from x to the next representable value away from zero (NumPy's rule)."""
    check_arraylike("spacing", x)
    (x,) = promote_dtypes_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = _scalar(x, np.inf)
    if get_aval(x).dtype == np.float16:  # NumPy's float16 rule: always the step toward +inf
        return subtract(lax.nextafter(x, inf), x)
    result = subtract(lax.nextafter(x, copysign(inf, x)), x)  # jnp's -, which promotes x
    tiny = dtypes.finfo(get_aval(x).dtype).smallest_subnormal
    # tiny is a NumPy scalar, so the result is strongly typed, as JAX's.
    return _where(lax.eq(result, _scalar(result, 0)), copysign(tiny, x), result)


def bitwise_count(x, /):
    """The number of set bits in each element's absolute value, as uint8."""
    check_arraylike("bitwise_count", x)
    (x,) = promote_dtypes(x)
    _check_int_args("bitwise_count", x)
    if get_aval(x).dtype == np.bool_:
        return lax_conversions.convert_element_type(x, np.uint8)
    if not dtypes.is_unsigned(get_aval(x).dtype):
        x = lax.abs(x)
    return lax_conversions.convert_element_type(lax_special.population_count(x), np.uint8)


def real(val, /):
    """The real part (the value itself for real inputs)."""
    check_arraylike("real", val)
    (val,) = promote_dtypes(val)
    return lax_extras.real(val) if dtypes.is_complex(get_aval(val).dtype) else ensure_array(val)


def imag(val, /):
    """The imaginary part (zeros for real inputs)."""
    check_arraylike("imag", val)
    (val,) = promote_dtypes(val)
    return lax_extras.imag(val) if dtypes.is_complex(get_aval(val).dtype) else lax_shape_ops.full_like(val, 0)


def conjugate(x, /):
    """The complex conjugate (the value itself for real inputs)."""
    check_arraylike("conjugate", x)
    (x,) = promote_dtypes(x)
    return lax_extras.conj(x) if dtypes.is_complex(get_aval(x).dtype) else ensure_array(x)


conj = conjugate


@_jit(static_argnames=("deg",))
def angle(z, deg=False):
    """The argument of z, atan2(imag(z), real(z)): 0 for non-negative reals and pi for negative
    ones (in degrees with deg)."""
    check_arraylike("angle", z)
    z = ensure_array(z)
    aval = get_aval(z)
    if dtypes.is_complex(aval.dtype):
        out = lax.atan2(lax_extras.imag(z), lax_extras.real(z))
    else:
        # JAX computes non-float and 0-d float input in the strong default float type.
        if not dtypes.is_float(aval.dtype) or not aval.shape:
            z = lax_conversions.convert_element_type(z, dtypes.default_float_dtype())
        out = lax.atan2(lax_shape_ops.full_like(z, 0), z)
    return rad2deg(out) if deg else out


@_jit
def iscomplex(x):
    """True where the imaginary part is nonzero (False everywhere for real inputs)."""
    check_arraylike("iscomplex", x)
    im = imag(x)
    return lax.ne(im, _scalar(im, 0))


@_jit
def isreal(x):
    """True where the imaginary part is zero (True everywhere for real inputs)."""
    check_arraylike("isreal", x)
    im = imag(x)
    return lax.eq(im, _scalar(im, 0))


@custom_jvp
def _i0(x):
    abs_x = lax.abs(x)
    return lax.mul(lax.exp(abs_x), lax_special_extra.bessel_i0e(abs_x))


@_i0.defjvp
def _i0_jvp(primals, tangents):
    # abs has no derivative at 0, where I0's is 0.
    from gpuarr.ad_api import jvp
    primal_out, tangent_out = jvp(_i0.fun, primals, tangents)
    return primal_out, where(lax.eq(primals[0], _scalar(primals[0], 0)), 0.0, tangent_out)


@_jit
def i0(x):
    """The modified Bessel function of the first kind, order 0: exp(|x|) * i0e(|x|), as JAX's
    (a jit)."""
    check_arraylike("i0", x)
    (x,) = promote_dtypes_inexact(x)
    dt = get_aval(x).dtype
    if not dtypes.is_float(dt):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {dt}")
    return _i0(x)

