"""Core lax primitives: elementwise math, comparisons, select_n, the static slices, pads and
concatenation, and the reductions but reduce_sum. Each primitive is a short stanza
registering its rules right after its definition: NumPy implementation, abstract evaluation,
JVP, transpose, batching.

The rest of lax's core lives in modules this one builds on: arguments.py (argument checks,
requested accuracy), conversions.py (convert_element_type), shape_ops.py (broadcast_in_dim,
reshape, transpose, ..., reduce_sum, iota and full), dot_products.py (dot_general) and
numpy_impls.py (the NumPy implementations that are more than one NumPy call). The
primitives imported here with `noqa: F401` are looked up on this module by name (the
compiler's rewrites, compiler/passes.py, and the kernel tests).
"""
from __future__ import annotations

import builtins
import enum
import math
from functools import partial

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.array import Array
from gpuarr.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    get_aval,
    rank_checked_prims,
    weak_type_rules,
)
from gpuarr.impls import elementwise_prims, impl_rules, narrow_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, defjvp, defjvp_zero, deflinear, is_undefined
from gpuarr.interpreters.batching import batch_rules, not_mapped, vectorized_rule
from gpuarr.lax import complex_functions
from gpuarr.lax.arguments import (
    _SCALARS,
    _as_operand,
    _broadcast_shapes,
    _check_accuracy,
    _check_kind,
    _check_same_dtypes,
    _coerce_scalars,
    _dtype_of,
    _never_weak,
    _scalar_as,
)
from gpuarr.lax.conversions import (
    _convert_weak,
    convert_element_type,
    convert_element_type_p,  # noqa: F401
)
from gpuarr.lax.dot_products import dot_general_p  # noqa: F401
from gpuarr.lax.numpy_impls import (
    _argminmax_impl,
    _atan2_impl,
    _div_impl,
    _integer_pow_impl,
    _logistic_impl,
    _minmax_impl,
    _minmax_reduce,
    _narrow_argminmax_impl,
    _pad_impl,
    _pow_exponent_impl,
    _rem_impl,
    _round_impl,
    _rsqrt_impl,
    _select_n_impl,
    _shift_impl,
    _sign_impl,
    _slice_impl,
)
from gpuarr.lax.shape_ops import (
    _axes,
    _reduce_batch,
    _ufunc_reduce,
    broadcast_in_dim,
    broadcast_in_dim_p,  # noqa: F401
    expand_dims,
    full,
    full_like,
    reduce_sum,
    reduce_sum_p,  # noqa: F401
    reducer,
    reshape,
    reshape_p,  # noqa: F401
    squeeze_p,  # noqa: F401
    transpose,
    transpose_p,  # noqa: F401
)
from gpuarr.lax.subnormal_operands import following_xla

# ---------------------------------------------------------------- elementwise families


def unop(name: str, impl, kind: str = "inexact") -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = impl
    elementwise_prims.add(prim)

    def abstract(x, **params):
        _check_kind(name, kind, x)
        return [x]

    abstract_eval_rules[prim] = abstract
    batch_rules[prim] = vectorized_rule(prim)
    return prim


def binop(name: str, impl, kind: str = "number", out_dtype=None) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = impl
    elementwise_prims.add(prim)

    def abstract(x, y):
        _check_kind(name, kind, x, 0)
        _check_same_dtypes(name, x, y)
        shape = _broadcast_shapes(name, x.shape, y.shape)
        # A comparison of two weak operands is a weak bool, as in JAX (lax.eq(1., 2.)).
        return [ShapedArray(shape, out_dtype or x.dtype, x.weak_type and y.weak_type)]

    abstract_eval_rules[prim] = abstract
    batch_rules[prim] = partial(broadcast_batch_rule, prim)
    rank_checked_prims.add(prim)
    return prim


def broadcast_batch_rule(prim, axis_size, vals, dims, **params):
    """Batch elementwise ops as JAX's broadcast_batcher does: operands of one shape batched
    along one axis keep it; otherwise batch axes go first (an unbatched operand gets a unit
    axis there, a scalar stays a scalar) and a batched operand of lower rank gets trailing
    unit axes, which the op broadcasts."""
    shape, dim = next((np.shape(v), d) for v, d in zip(vals, dims) if d is not not_mapped)
    if builtins.all(np.shape(v) == shape and d == dim for v, d in zip(vals, dims) if np.ndim(v)):
        out = prim.bind(*vals, **params)
        return out, ([dim] * len(out) if prim.multiple_results else dim)
    # An unbatched operand gets a batch axis of size 1, which the op broadcasts.
    front = [batching.move_to(v, d, 0, 1) if np.ndim(v) else v for v, d in zip(vals, dims)]
    rank = builtins.max(np.ndim(v) for v in front)
    front = [v if d is not_mapped or np.ndim(v) == rank
             else expand_dims(v, tuple(range(np.ndim(v), rank))) for v, d in zip(front, dims)]
    out = prim.bind(*front, **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)


def _unary(prim):
    def f(x):
        return prim.bind(x)
    f.__name__ = prim.name
    f.__doc__ = f"Elementwise {prim.name} (lax.{prim.name})."
    return f


def _binary(prim):
    def f(x, y):
        x, y = _coerce_scalars(prim.name, x, y)
        return prim.bind(x, y)
    f.__name__ = prim.name
    f.__doc__ = f"Elementwise {prim.name} (lax.{prim.name}); operands share one dtype."
    return f


def _unary_accuracy(prim):
    """The wrapper of a transcendental op: `accuracy` is checked, never bound (it cannot
    change the computation), so the common call binds exactly as `_unary`'s does."""
    name = prim.name

    def f(x, *, accuracy=None):
        if accuracy is not None:
            _check_accuracy(name, accuracy, x)
        return prim.bind(x)
    f.__name__ = name
    f.__doc__ = f"Elementwise {name} (lax.{name}); `accuracy` is a lax.Tolerance or AccuracyMode."
    return f


# --- unary math ------------------------------------------------------------------------
neg_p = unop("neg", np.negative, "number")
deflinear(neg_p, lambda ct, x: [neg(ct)])


sign_p = unop("sign", _sign_impl, "number")
defjvp_zero(sign_p)
floor_p = unop("floor", np.floor, "float")
defjvp_zero(floor_p)
ceil_p = unop("ceil", np.ceil, "float")
defjvp_zero(ceil_p)
is_finite_p = unop("is_finite", np.isfinite, "float")
abstract_eval_rules[is_finite_p] = lambda x: (
    _check_kind("is_finite", "float", x) or [ShapedArray(x.shape, np.bool_, x.weak_type)])
defjvp_zero(is_finite_p)


round_p = unop("round", _round_impl, "float")
defjvp_zero(round_p)

def _xla_complex_nans(ufunc, nan_where):
    """`ufunc`, except that complex inputs where `nan_where(real, imag)` holds give NaN + NaN j:
    XLA's formulas there, where the array API standard (and NumPy) give infinities or signed
    zeros."""
    def impl(x):
        out = ufunc(x)
        if out.dtype.kind == "c":
            nans = nan_where(np.real(x), np.imag(x))
            if nans.any():
                out = np.where(nans, np.asarray(complex(np.nan, np.nan), out.dtype), out)
        return out
    impl.__name__ = ufunc.__name__
    return impl


def _complex_by_xla(ufunc, complex_impl):
    """`ufunc` for real operands; `complex_impl` (XLA's expansion, lax/complex_functions.py)
    for complex ones."""
    def impl(x):
        if (x.dtype if type(x) is np.ndarray else np.asarray(x).dtype).kind == "c":
            return complex_impl(x)
        return ufunc(x)
    impl.__name__ = ufunc.__name__
    return impl


def _inf_and_nonfinite(re, im):
    return np.isinf(re) & ~np.isfinite(im)


def _inf_and_nan(re, im):
    return (np.isinf(re) & np.isnan(im)) | (np.isnan(re) & np.isinf(im))


exp_p = unop("exp", _xla_complex_nans(np.exp, _inf_and_nonfinite))
defjvp(exp_p, lambda g, ans, x: mul(g, ans), with_ans=True)
exp2_p = unop("exp2", np.exp2)
# JVP rules are written as JAX writes them: in narrow types each step rounds, so the order
# of the operations shows in the result.
defjvp(exp2_p, lambda g, ans, x: mul(log(_const(x, 2)), mul(g, ans)), with_ans=True)
log_p = unop("log", _xla_complex_nans(np.log, _inf_and_nan))
defjvp(log_p, lambda g, x: div(g, x))
log1p_p = unop("log1p", following_xla("log1p", _xla_complex_nans(np.log1p, _inf_and_nan)))
defjvp(log1p_p, lambda g, x: div(g, add(x, _const(x, 1))))
def _expm1_impl(x):
    out = np.expm1(x)
    if out.dtype.kind == "c":  # XLA: expm1(x + 0j) is expm1(x) + 0j, never NaN or -0
        real_axis = np.imag(x) == 0
        if real_axis.any():
            out = np.where(real_axis, np.expm1(np.real(x)) + 0.0 + 0.0j, out)
    return out


expm1_p = unop("expm1", following_xla("expm1", _expm1_impl))
defjvp(expm1_p, lambda g, ans, x: mul(g, add(ans, _const(x, 1))), with_ans=True)
# XLA's float32 tanh clamps its argument and returns exactly +-1 past 7.99881172, where the C
# library's gives 1 - ulp (so jax.nn.gelu's 1 + tanh(-large) is 0 there); kernels/common.h's
# tanh_f32 clamps at the same point. float64 rounds to +-1 there in both.
TANH_ONE_F32 = np.float32(7.99881172180175781)


def tanh_real(x):
    """np.tanh, exactly +-1 past XLA's float32 clamp. Below it, the C library's float32 tanh
    is within an ulp of XLA's rational approximation (docs/arithmetic.md, "tanh")."""
    out = np.tanh(x)
    if out.dtype == np.float32:
        out = np.where(np.abs(x) > TANH_ONE_F32, np.copysign(np.float32(1), x), out)
    return out


tanh_p = unop("tanh", following_xla("tanh", _xla_complex_nans(
    tanh_real, lambda re, im: np.isfinite(re) & ~np.isfinite(im))))
defjvp(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_const(x, 1), ans)), with_ans=True)


logistic_p = unop("logistic", _logistic_impl)
defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_const(x, 1), ans))), with_ans=True)
sin_p = unop("sin", following_xla("sin", np.sin))
defjvp(sin_p, lambda g, x: mul(g, cos(x)))
cos_p = unop("cos", np.cos)
defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
tan_p = unop("tan", following_xla("tan", np.tan))
defjvp(tan_p, lambda g, ans, x: mul(g, add(_const(x, 1), square(ans))), with_ans=True)
asin_p = unop("asin", following_xla("asin", np.arcsin))
defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
acos_p = unop("acos", following_xla("acos", _complex_by_xla(np.arccos, complex_functions.acos)))
defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(_const(x, 1), square(x))))))
atan_p = unop("atan", following_xla("atan", np.arctan))
defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))
sinh_p = unop("sinh", following_xla("sinh", _xla_complex_nans(np.sinh, lambda re, im: ~np.isfinite(im))))
defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
cosh_p = unop("cosh", _xla_complex_nans(np.cosh, lambda re, im: ~np.isfinite(im)))
defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
asinh_p = unop("asinh", following_xla("asinh", _complex_by_xla(np.arcsinh, complex_functions.asinh)))
defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _const(x, 1)))))
acosh_p = unop("acosh", _complex_by_xla(np.arccosh, complex_functions.acosh))
defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _const(x, 1)))))
atanh_p = unop("atanh", following_xla("atanh", _complex_by_xla(np.arctanh, complex_functions.atanh)))
defjvp(atanh_p, lambda g, x: mul(reciprocal(add(_const(x, 1), x)), div(g, sub(_const(x, 1), x))))
sqrt_p = unop("sqrt", _complex_by_xla(np.sqrt, complex_functions.sqrt))
defjvp(sqrt_p, lambda g, ans, x: mul(g, div(_const(x, 0.5), ans)), with_ans=True)


rsqrt_p = unop("rsqrt", _rsqrt_impl)
defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(x, -0.5), div(ans, x))), with_ans=True)
square_p = unop("square", np.square, "number")
defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))
cbrt_p = unop("cbrt", following_xla("cbrt", np.cbrt), "float")
defjvp(cbrt_p, lambda g, ans, x: mul(g, mul(_const(x, 1 / 3), integer_pow(ans, -2))),
       with_ans=True)
abs_p = unop("abs", np.abs, "number")


def _abs_abstract(x):
    _check_kind("abs", "number", x)
    if x.dtype in narrow_types.NARROW and dtypes.is_int(x.dtype):
        raise TypeError(f"abs does not accept dtype {x.dtype.name}. Support for narrow-width "
                        "integers is platform-dependent and limited to a few specific "
                        "operations, e.g. basic arithmetic and type casting.")
    if dtypes.is_complex(x.dtype):  # the modulus is real: complex64 -> float32, as JAX
        return [ShapedArray(x.shape, dtypes._TO_REAL[x.dtype], x.weak_type)]
    return [x]


def _abs_jvp(g, ans, x):
    if dtypes.is_float(_dtype_of(x)):  # g where x >= 0 (so |x|'(0) = 1), else -g, as JAX
        return select_n(ge(x, _const(x, 0)), neg(g), g)
    if not dtypes.is_complex(_dtype_of(x)):
        return g
    from gpuarr.lax.extras import imag, real  # extras imports this module
    # d|x| = Re(conj(x) g) / |x| = (Re x Re g + Im x Im g) / |x|; 0 at 0
    dot = add(mul(real(x), real(g)), mul(imag(x), imag(g)))
    zero = eq(ans, _const(ans, 0))
    return div(dot, select_n(zero, ans, full_like(ans, 1)))


abstract_eval_rules[abs_p] = _abs_abstract
defjvp(abs_p, _abs_jvp, with_ans=True)
not_p = unop("not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
             "intbool")
defjvp_zero(not_p)
stop_gradient_p = unop("stop_gradient", lambda x: x, "any")
narrow_rules[stop_gradient_p] = impl_rules[stop_gradient_p]
defjvp_zero(stop_gradient_p)
# A copy into a new buffer (jnp.array and jnp.copy of an array, as JAX's `copy`): linear.
copy_p = unop("copy", lambda x: np.array(x, copy=True), "any")
narrow_rules[copy_p] = impl_rules[copy_p]
deflinear(copy_p, lambda ct, x: [Zero(x.aval) if type(ct) is Zero else copy_p.bind(ct)])


def _integer_pow_abstract(x, y):
    _check_kind("integer_pow", "number", x)
    if y < 0 and dtypes.is_int(x.dtype):
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({x}, {y})")
    return [x]


integer_pow_p = unop("integer_pow", _integer_pow_impl, "number")
abstract_eval_rules[integer_pow_p] = _integer_pow_abstract


def _integer_pow_jvp(g, x, y):
    if y == 0:
        return ad.zeros_like_aval(get_aval(g))
    if y == 1:
        return g
    return mul(g, mul(_const(x, y), x if y == 2 else integer_pow(x, y - 1)))  # JAX's equations


defjvp(integer_pow_p, _integer_pow_jvp)
batch_rules[integer_pow_p] = vectorized_rule(integer_pow_p)

# --- binary arithmetic -------------------------------------------------------------------
add_p = binop("add", np.add)


def _unbroadcast(aval, ct):
    """Sum `ct` down to `aval`'s shape (undoing rank-0 and size-1 broadcasting)."""
    if type(ct) is Zero:
        return ct
    shape = tuple(np.shape(ct)) if not isinstance(ct, Tracer) else ct.aval.shape
    if shape == aval.shape:
        return ct
    if not aval.shape:
        return reduce_sum(ct, tuple(range(len(shape))))
    axes = tuple(i for i, (a, b) in enumerate(zip(aval.shape, shape)) if a == 1 and b != 1)
    return reshape(reduce_sum(ct, axes), aval.shape)


def _add_transpose(ct, x, y):
    return [_unbroadcast(x.aval, ct) if is_undefined(x) else None,
            _unbroadcast(y.aval, ct) if is_undefined(y) else None]


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = add(x, y)
    return out, _sum_tangents(out, tx, ty)


def _sum_tangents(out, tx, ty, negate_y=False):
    """The tangent of x + y (x - y with `negate_y`), as JAX writes it."""
    shape = get_aval(out).shape
    if type(tx) is Zero:
        return _bcast_tangent(neg(ty) if negate_y and type(ty) is not Zero else ty, shape)
    if type(ty) is Zero:
        return _bcast_tangent(tx, shape)
    return sub(tx, ty) if negate_y else add(tx, ty)


def _bcast_tangent(t, shape):
    """A tangent of a broadcast operand at the result's shape, as JAX writes it: unit axes are
    reshaped away, then broadcast_in_dim (so the transpose sums, then reshapes)."""
    if type(t) is Zero:
        return t
    tshape = get_aval(t).shape
    if tshape == shape:
        return t
    if not tshape:
        return broadcast_in_dim(t, shape, ())
    dims = tuple(i for i, (a, b) in enumerate(zip(tshape, shape)) if a == b)
    return broadcast_in_dim(reshape(t, tuple(tshape[i] for i in dims)), shape, dims)


ad.jvp_rules[add_p] = _add_jvp
ad.transpose_rules[add_p] = _add_transpose
sub_p = binop("sub", np.subtract)
def _sub_jvp(primals, tangents):
    out = sub(*primals)
    return out, _sum_tangents(out, *tangents, negate_y=True)


ad.jvp_rules[sub_p] = _sub_jvp
ad.transpose_rules[sub_p] = lambda ct, x, y: [
    _unbroadcast(x.aval, ct) if is_undefined(x) else None,
    _unbroadcast(y.aval, neg(ct)) if is_undefined(y) and type(ct) is not Zero else None]
mul_p = binop("mul", np.multiply)
ad.defbilinear(mul_p, lambda ct, x, y: _unbroadcast(x.aval, mul(ct, y)),
               lambda ct, x, y: _unbroadcast(y.aval, mul(x, ct)))


div_p = binop("div", _div_impl)


def _div_transpose(ct, x, y):
    assert is_undefined(x) and not is_undefined(y)
    return [_unbroadcast(x.aval, div(ct, y)) if type(ct) is not Zero else None, None]


defjvp(div_p, lambda g, x, y: _bcast_tangent(div(g, y), _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(mul(neg(g), x), integer_pow(y, -2)), _bshape(x, y)))
ad.transpose_rules[div_p] = _div_transpose


def _bshape(x, y):
    return _broadcast_shapes("", get_aval(x).shape, get_aval(y).shape)


rem_p = binop("rem", _rem_impl, "real")  # JAX's rem refuses complex operands
defjvp(rem_p, lambda g, x, y: _bcast_tangent(g, _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))),
                                      _bshape(x, y)))


def _pow_abstract(x, y):
    """JAX's types for pow: an inexact base, and an exponent of the base's type or of any
    integer type; the result has the base's type."""
    _check_kind("pow", "inexact", x, 0)
    _check_kind("pow", "number", y, 1)
    if not dtypes.is_int(y.dtype) and y.dtype != x.dtype:
        raise TypeError("the first argument to pow must have an inexact dtype (float or complex), "
                        "and the second argument must have an inexact or integer dtype, and two "
                        f"inexact dtypes must match, but got {x.dtype.name} and {y.dtype.name} "
                        "respectively.")
    shape = _broadcast_shapes("pow", x.shape, y.shape)
    return [ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)]


pow_p = binop("pow", _pow_exponent_impl, "inexact")
abstract_eval_rules[pow_p] = _pow_abstract


def _ones(x):
    return full_like(x, 1)


def _replace_zero(x):
    return select(eq(x, _const(x, 0)), _ones(x), x)


def _pow_jvp_x(g, ans, x, y):
    # JAX's rule: an integer exponent is converted, and y = 0 has derivative 0 (0 * 0 ** -1
    # would be NaN); a float exponent of 0 at x = 0 gives NaN, as in JAX.
    y_dtype = _dtype_of(y)
    result = dtypes.result_type(x, y)
    if result == np.bool_:
        result = np.dtype(np.int32)
    x, y = _convert_operand(x, result), _convert_operand(y, result)
    if dtypes.is_int(y_dtype):
        shape = _bshape(x, y)
        x, y = _broadcast_to(x, shape), _broadcast_to(y, shape)
        jac = select(eq(y, _const(y, 0)), full_like(y, 0),
                     mul(_replace_zero(y), pow(x, sub(y, _ones(y)))))
    else:
        jac = mul(y, pow(x, sub(y, _ones(y))))
    return mul(g, jac)


def _convert_operand(v, dtype):
    """convert_element_type, done at once for a Python scalar's 0-d constant, which JAX's
    rules receive as the Python value and convert at trace time."""
    if type(v) is Array and v._platform is None and not get_aval(v).shape:
        return Array(np.asarray(v._value).astype(dtype))
    return convert_element_type(v, dtype)


def _pow_jvp_y(g, ans, x, y):
    return convert_element_type(mul(g, mul(log(_replace_zero(x)), ans)), _dtype_of(y))


def _broadcast_to(x, shape):
    """`x` broadcast to `shape` as JAX's _maybe_broadcast writes it: a scalar directly, else
    the axes of other sizes reshaped away first."""
    xshape = get_aval(x).shape
    if xshape == tuple(shape):
        return x
    if not xshape:
        return broadcast_in_dim(x, shape, ())
    dims = tuple(i for i, (a, b) in enumerate(zip(xshape, shape)) if a == b)
    return broadcast_in_dim(reshape(x, tuple(xshape[i] for i in dims)), shape, dims)


defjvp(pow_p, lambda g, ans, x, y: _bcast_tangent(_pow_jvp_x(g, ans, x, y), _bshape(x, y)),
       lambda g, ans, x, y: _bcast_tangent(_pow_jvp_y(g, ans, x, y), _bshape(x, y)),
       with_ans=True)


max_p = binop("max", partial(_minmax_impl, np.maximum, np.greater), "any")
min_p = binop("min", partial(_minmax_impl, np.minimum, np.less), "any")


def _balanced_eq(x, out, y):
    """The weight of x's tangent in max/min's, as JAX's rule: 1 where x is the result, 1/2
    where y is too (a tie), 0 elsewhere (a NaN result included)."""
    x_is_out = select(eq(x, out), full_like(out, 1), full_like(out, 0))  # JAX's order
    return div(x_is_out, select(eq(y, out), full_like(out, 2), full_like(out, 1)))


def _minmax_jvp(op, primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = op(x, y)
    shape = get_aval(out).shape
    t = Zero.from_primal(out)
    if type(tx) is not Zero:
        t = ad.add_tangents(t, _bcast_tangent(mul(tx, _balanced_eq(x, out, y)), shape))
    if type(ty) is not Zero:
        t = ad.add_tangents(t, _bcast_tangent(mul(ty, _balanced_eq(y, out, x)), shape))
    return out, t


atan2_p = binop("atan2", _atan2_impl, "inexact")
defjvp(atan2_p, lambda g, x, y: _bcast_tangent(mul(g, div(y, add(square(x), square(y)))), _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(g, div(neg(x), add(square(x), square(y)))), _bshape(x, y)))
nextafter_p = binop("nextafter", np.nextafter, "float")
defjvp_zero(nextafter_p)

# The bitwise ufuncs are the logical ones on booleans (compiled Programs call ufuncs directly).
and_p = binop("and", np.bitwise_and, "intbool")
or_p = binop("or", np.bitwise_or, "intbool")
xor_p = binop("xor", np.bitwise_xor, "intbool")


shift_left_p = binop("shift_left", partial(_shift_impl, "left"), "int")
shift_right_arithmetic_p = binop("shift_right_arithmetic", partial(_shift_impl, "arith"), "int")
shift_right_logical_p = binop("shift_right_logical", partial(_shift_impl, "logical"), "int")
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
    defjvp_zero(_p)

# --- comparisons ---------------------------------------------------------------------------
eq_p = binop("eq", np.equal, "any", np.bool_)
ne_p = binop("ne", np.not_equal, "any", np.bool_)
lt_p = binop("lt", np.less, "ordered", np.bool_)
le_p = binop("le", np.less_equal, "ordered", np.bool_)
gt_p = binop("gt", np.greater, "ordered", np.bool_)
ge_p = binop("ge", np.greater_equal, "ordered", np.bool_)
for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    defjvp_zero(_p)

# --- user-facing elementwise functions ------------------------------------------------------
neg, sign, floor, ceil, is_finite = map(_unary, (neg_p, sign_p, floor_p, ceil_p, is_finite_p))
exp, exp2, log, log1p, expm1, tanh = map(_unary_accuracy,
                                         (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p))
logistic, sin, cos, tan = map(_unary_accuracy, (logistic_p, sin_p, cos_p, tan_p))
sqrt, rsqrt, cbrt = map(_unary_accuracy, (sqrt_p, rsqrt_p, cbrt_p))
asin, acos = map(_unary, (asin_p, acos_p))
atan, sinh, cosh, asinh, acosh, atanh = map(_unary, (atan_p, sinh_p, cosh_p, asinh_p, acosh_p, atanh_p))
abs, bitwise_not = map(_unary, (abs_p, not_p))
add, sub, div, rem = map(_binary, (add_p, sub_p, div_p, rem_p))
max, min, atan2 = map(_binary, (max_p, min_p, atan2_p))
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (and_p, or_p, xor_p))
shift_left, shift_right_arithmetic = map(_binary, (shift_left_p, shift_right_arithmetic_p))
shift_right_logical = _binary(shift_right_logical_p)
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
ad.jvp_rules[max_p] = partial(_minmax_jvp, max)
ad.jvp_rules[min_p] = partial(_minmax_jvp, min)
# On the narrow types XLA evaluates these step by step in the operand's own type (JAX's and
# StableHLO's expansions) or on its bits; see gpuarr.narrow_types.
for _p, _rule in ((exp2_p, narrow_types.exp2), (logistic_p, narrow_types.logistic),
                  (integer_pow_p, narrow_types.integer_pow), (asin_p, narrow_types.asin),
                  (acos_p, narrow_types.acos), (asinh_p, narrow_types.asinh), (acosh_p, narrow_types.acosh),
                  (atanh_p, narrow_types.atanh), (max_p, narrow_types.maximum), (min_p, narrow_types.minimum),
                  (shift_left_p, narrow_types.shift_left),
                  (shift_right_logical_p, narrow_types.shift_right_logical),
                  (shift_right_arithmetic_p, narrow_types.shift_right_arithmetic)):
    narrow_rules[_p] = partial(_rule, impl_rules[_p])
narrow_rules[nextafter_p] = narrow_types.nextafter
narrow_rules[sinh_p] = partial(narrow_types.sinh, impl_rules[sinh_p])
narrow_rules[cosh_p] = partial(narrow_types.cosh, impl_rules[cosh_p])


def mul(x, y, *, out_dtype=None):
    """Elementwise x * y (lax.mul); operands share one dtype. With `out_dtype`, both are
    first converted to it (so they may differ), as JAX describes and XLA does by default."""
    if out_dtype is not None:
        return _mul_as(x, y, dtypes.canonicalize_dtype(out_dtype))
    x, y = _coerce_scalars("mul", x, y)
    return mul_p.bind(x, y)


def _mul_as(x, y, dt):
    # Each operand keeps its weak type, so the product is weak only if both were (as JAX).
    x, y = (_convert_weak(a, dt, get_aval(a).weak_type)
            for a in (_coerce_scalars("mul", x)[0], _coerce_scalars("mul", y)[0]))
    return mul_p.bind(x, y)


def nextafter(x1, x2):
    """The next representable value after `x1` in the direction of `x2` (lax.nextafter)."""
    x1, x2 = _coerce_scalars("nextafter", x1, x2)
    return nextafter_p.bind(x1, x2)


class RoundingMethod(enum.IntEnum):
    """How `lax.round` rounds halfway cases: AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Round to the nearest integer; ties away from zero (0) or to even (1), as lax.round."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def pow(x, y):
    """Elementwise x ** y (lax.pow): x floating or complex, y of x's dtype or of any integer
    type (which XLA converts to x's); Python scalars take their default types, as in JAX."""
    x, y = (_scalar_as("pow", a, dtypes.dtype(a, canonicalize=True)) if type(a) in _SCALARS
            else a for a in (x, y))
    return pow_p.bind(x, y)


def integer_pow(x, y: int):
    """x ** y for a static Python integer y."""
    return integer_pow_p.bind(x, y=int(y))


def square(x):
    """x * x, elementwise (the square primitive, as JAX's)."""
    return square_p.bind(_as_operand(x))


def reciprocal(x):
    """1 / x."""
    return integer_pow(x, -1)


def stop_gradient(x):
    """The identity whose derivative is zero; applied to every leaf of a pytree. Outside a
    trace a Python scalar comes back as itself, as in JAX (its primitive's impl is the
    identity there)."""
    from gpuarr import pytrees

    def leaf_stop(leaf):
        out = stop_gradient_p.bind(leaf)  # checks the leaf (an int too large raises)
        return leaf if type(out) is Array and type(leaf) in (bool, int, float, complex) else out
    return pytrees.tree_map(leaf_stop, x)


def _const(like, value):
    """A scalar with the dtype of `like` for a rule: a Python number where `like` is weakly
    typed, so the rule's constants keep weak results weak (x ** 3's tangent), as in JAX."""
    c = np.asarray(value, _dtype_of(like))[()]
    return c.item() if get_aval(like).weak_type else c


def zeros_like(x):
    aval = get_aval(x)
    return full(aval.shape, 0, aval.dtype)


# ---------------------------------------------------------------- select_n


def _select_n_abstract(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    _check_same_dtypes("select_n", *cases)
    if which.dtype != np.bool_ and not dtypes.is_int(which.dtype):
        raise TypeError(f"select_n `which` must be boolean or integer, got {which.dtype.name}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean `which` takes at most 2 cases")
    shape = _broadcast_shapes("select_n", which.shape, *[c.shape for c in cases])
    return [ShapedArray(shape, cases[0].dtype, builtins.all(c.weak_type for c in cases))]


select_n_p = Primitive("select_n")
impl_rules[select_n_p] = _select_n_impl
abstract_eval_rules[select_n_p] = _select_n_abstract
weak_type_rules[select_n_p] = lambda which, *cases: builtins.all(
    getattr(c, "weak_type", False) for c in cases)


def _select_n_batch(axis_size, vals, dims):
    # JAX's rule: keep a shared batch axis; otherwise every operand batched in front, at full
    # size (a per-example scalar, which gpuarr's select_n also takes as a case, is broadcast
    # along the rest).
    (which, *cases), (wd, *cds) = vals, dims
    same = builtins.all(np.shape(c) == np.shape(cases[0]) for c in cases)
    if wd is not not_mapped and same and builtins.all(d == wd for d in cds):
        if np.shape(which) != np.shape(cases[0]):  # a per-example scalar `which`
            which = broadcast_in_dim(which, tuple(np.shape(cases[0])), (wd,))
        return select_n_p.bind(which, *cases), wd
    if np.ndim(which) == 0 and same and builtins.all(d is not not_mapped for d in cds):
        if builtins.all(d == cds[0] for d in cds):
            return select_n_p.bind(which, *cases), cds[0]
        return select_n_p.bind(which, *[batching.move_to(c, d, 0, axis_size) for c, d in zip(cases, cds)]), 0
    which = batching.move_to(which, wd, 0, axis_size) if np.shape(which) else which
    if not builtins.all(np.shape(c) == () for c in cases):
        cases = [batching.move_to(c, d, 0, axis_size) for c, d in zip(cases, cds)]
    full = builtins.max([np.shape(which)] + [np.shape(c) for c in cases], key=len)
    # Lower-rank operands lead with the batch axis: they broadcast along the trailing axes.
    which, *cases = [x if np.ndim(x) in (0, len(full)) and np.shape(x) in ((), full)
                     else broadcast_in_dim(x, full, tuple(range(np.ndim(x))))
                     for x in (which, *cases)]
    return select_n_p.bind(which, *cases), 0


batch_rules[select_n_p] = _select_n_batch


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    shape = get_aval(out).shape
    if builtins.all(type(t) is Zero for t in tangents[1:]):
        return out, Zero.from_primal(out)
    ts = [_bcast_tangent(ad.instantiate(t) if type(t) is Zero else t, shape) for t in tangents[1:]]
    ts = [broadcast_in_dim(t, shape, ()) if get_aval(t).shape != shape else t for t in ts]
    return out, select_n_p.bind(which, *ts)


def _select_n_transpose(ct, which, *cases):
    if type(ct) is Zero:
        return [None] + [Zero(c.aval) if is_undefined(c) else None for c in cases]
    zeros = zeros_like(ct)
    outs = [None]
    for i, c in enumerate(cases):
        if is_undefined(c):
            picks = [zeros] * len(cases)
            picks[i] = ct
            outs.append(_unbroadcast(c.aval, select_n_p.bind(which, *picks)))
        else:
            outs.append(None)
    return outs


ad.jvp_rules[select_n_p] = _select_n_jvp
ad.transpose_rules[select_n_p] = _select_n_transpose


def select_n(which, *cases):
    """Pick, elementwise, `cases[which]` (bool `which`: False -> cases[0], True -> cases[1])."""
    return select_n_p.bind(which, *_coerce_scalars("select_n", *cases))


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (lax.select)."""
    return select_n(pred, on_false, on_true)


# ---------------------------------------------------------------- reductions (reduce_sum: shape_ops)


reduce_max_p = reducer("reduce_max", _minmax_reduce(np.maximum), "any")
reduce_min_p = reducer("reduce_min", _minmax_reduce(np.minimum), "any")
reduce_prod_p = reducer("reduce_prod", _ufunc_reduce(np.multiply), "number")
reduce_and_p = reducer("reduce_and", _ufunc_reduce(np.bitwise_and), "intbool")
reduce_or_p = reducer("reduce_or", _ufunc_reduce(np.bitwise_or), "intbool")


defjvp_zero(reduce_and_p)
defjvp_zero(reduce_or_p)
for _p, _u in ((reduce_max_p, np.maximum), (reduce_min_p, np.minimum),
               (reduce_prod_p, np.multiply), (reduce_and_p, np.bitwise_and),
               (reduce_or_p, np.bitwise_or)):
    narrow_rules[_p] = partial(narrow_types.reduce, _u)  # XLA's order and rounding (see there)


def _reduce_chooser_jvp(prim, primals, tangents, axes):
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axes=axes)
    kept = tuple(1 if i in axes else d for i, d in enumerate(get_aval(x).shape))
    location = convert_element_type(eq(x, reshape(out, kept)), _dtype_of(t))  # lax broadcasts
    counts = reduce_sum(location, axes)
    return out, div(reduce_sum(mul(t, location), axes), counts)


ad.jvp_rules[reduce_max_p] = partial(_reduce_chooser_jvp, reduce_max_p)
ad.jvp_rules[reduce_min_p] = partial(_reduce_chooser_jvp, reduce_min_p)


def _reduce_prod_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    out = reduce_prod(x, axes)
    shape = get_aval(x).shape
    keep = tuple(i for i in range(len(shape)) if i not in axes)
    # d prod = sum_i t_i * prod_{j != i} x_j, computed without dividing by x (zeros are safe).
    moved = transpose(x, keep + tuple(axes))
    tmoved = transpose(t, keep + tuple(axes))
    outer = tuple(shape[i] for i in keep)
    n = math.prod(shape[i] for i in axes)
    xs = reshape(moved, outer + (n,))
    ts = reshape(tmoved, outer + (n,))
    others = _prod_of_others(xs)
    return out, reduce_sum(mul(ts, others), (len(outer),))


def _prod_of_others(xs):
    """prod_{j != i} xs[..., j] for each i via exclusive prefix and suffix products (two
    cumulative products, so the Program stays small however long the reduced axis is)."""
    from gpuarr.lax.cumulative import cumprod  # cumulative.py builds on this module
    shape = get_aval(xs).shape
    n, axis = shape[-1], len(shape) - 1
    one = full(shape[:-1] + (1,), 1, _dtype_of(xs))
    if n == 1:
        return one
    prefix = concatenate([one, slice_in_dim(cumprod(xs, axis), 0, n - 1, axis=axis)], axis)
    suffix = concatenate([slice_in_dim(cumprod(xs, axis, reverse=True), 1, n, axis=axis), one],
                         axis)
    return mul(prefix, suffix)


ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp


def _argminmax_abstract(name):
    def rule(x, axes, index_dtype):
        if len(axes) != 1:
            raise ValueError(f"{name} takes exactly one axis")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, index_dtype)]
    return rule


argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")
for _p, _fn in ((argmax_p, np.argmax), (argmin_p, np.argmin)):
    impl_rules[_p] = partial(_argminmax_impl, _fn)
    narrow_rules[_p] = partial(_narrow_argminmax_impl, _fn)
    abstract_eval_rules[_p] = _argminmax_abstract(_p.name)
    weak_type_rules[_p] = _never_weak
    batch_rules[_p] = partial(_reduce_batch, _p)
    defjvp_zero(_p)


def reduce_max(operand, axes):
    """Maximum over `axes`."""
    return reduce_max_p.bind(operand, axes=_axes(axes))


def reduce_min(operand, axes):
    """Minimum over `axes`."""
    return reduce_min_p.bind(operand, axes=_axes(axes))


def reduce_prod(operand, axes):
    """Product over `axes`."""
    return reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_and(operand, axes):
    """Logical/bitwise and over `axes`."""
    return reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand, axes):
    """Logical/bitwise or over `axes`."""
    return reduce_or_p.bind(operand, axes=_axes(axes))


def argmax(operand, axis: int, index_dtype):
    """Index of the maximum along `axis` (first occurrence)."""
    return argmax_p.bind(operand, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis: int, index_dtype):
    """Index of the minimum along `axis` (first occurrence)."""
    return argmin_p.bind(operand, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


# ---------------------------------------------------------------- slicing and concatenation


def _slice_abstract(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise ValueError(f"slice start_indices, limit_indices and strides must have length "
                         f"{x.ndim} for operand shape {x.shape}")
    for s, e, d in zip(start_indices, limit_indices, x.shape):
        if not 0 <= s <= e <= d:
            raise TypeError(f"slice indices out of bounds: start {start_indices}, limit "
                            f"{limit_indices} for operand shape {x.shape}")
    shape = tuple(builtins.max(0, -(-(e - s) // st))
                  for s, e, st in zip(start_indices, limit_indices, strides))
    return [x.update(shape=shape)]


def _slice_transpose(ct, x, start_indices, limit_indices, strides=None):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    unit = (0,) * x.aval.ndim if strides is None or all(st == 1 for st in strides) else None
    strides = strides or (1,) * x.aval.ndim
    shape = x.aval.shape
    ct_shape = get_aval(ct).shape
    lo = start_indices
    # NumPy integers where JAX computes them with NumPy, so printed programs match JAX's.
    hi = tuple(np.int64(d - (s + (n - 1) * st + 1) if n else d - s)
               for d, s, n, st in zip(shape, start_indices, ct_shape, strides))
    interior = tuple(np.int64(st - 1) for st in strides) if unit is None else unit
    return [pad(ct, _const(ct, 0), tuple(zip(lo, hi, interior)))]


def _slice_batch(axis_size, vals, dims, start_indices, limit_indices, strides=None):
    (x,), (d,) = vals, dims
    starts = list(start_indices)
    limits = list(limit_indices)
    starts.insert(d, 0)
    limits.insert(d, axis_size)
    sts = None if strides is None else tuple(strides[:d]) + (1,) + tuple(strides[d:])
    return slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                        strides=sts), d


slice_p = Primitive("slice")
impl_rules[slice_p] = _slice_impl
abstract_eval_rules[slice_p] = _slice_abstract
deflinear(slice_p, _slice_transpose)
batch_rules[slice_p] = _slice_batch


def slice(operand, start_indices, limit_indices, strides=None):
    """Static slice `operand[start:limit:stride]` along every axis."""
    start_indices = tuple(map(int, start_indices))
    limit_indices = tuple(map(int, limit_indices))
    strides = None if strides is None else tuple(map(int, strides))
    shape = get_aval(operand).shape
    # Eager calls check shapes once per dtype (dispatch._check_dtypes), and NumPy would clamp
    # a slice past the end: the bounds are checked on every call, as JAX's shape rule does.
    if len(start_indices) != len(shape) or len(limit_indices) != len(shape) or any(
            not 0 <= s <= e <= d for s, e, d in zip(start_indices, limit_indices, shape)):
        _slice_abstract(get_aval(operand), start_indices, limit_indices, strides)
    return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices,
                        strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """Static slice along one axis; negative indices count from the end. The strides are
    explicit (ones but on `axis`), as JAX's slice_in_dim prints them."""
    shape = get_aval(operand).shape
    axis = int(axis)
    start, limit, strides = [0] * len(shape), list(shape), [1] * len(shape)
    lo = int(start_index) if start_index is not None else 0
    hi = int(limit_index) if limit_index is not None else shape[axis]
    start[axis] = lo + shape[axis] if lo < 0 else lo
    limit[axis] = hi + shape[axis] if hi < 0 else hi
    strides[axis] = int(stride)
    return slice(operand, start, limit, strides)


def _pad_abstract(x, padding_value, padding_config):
    if len(padding_config) != x.ndim:
        raise ValueError(f"length of padding_config must equal the number of axes of operand, got "
                         f"padding_config {padding_config} for operand shape {x.shape}")
    _check_same_dtypes("pad", x, padding_value)
    shape = tuple(int(lo + hi + d + builtins.max(0, d - 1) * interior)
                  for d, (lo, hi, interior) in zip(x.shape, padding_config))
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"pad: resulting shape {shape} has negative dimensions")
    return [x.update(shape=shape)]


def _pad_transpose(ct, x, padding_value, padding_config):
    if type(ct) is Zero:
        return [Zero(x.aval) if is_undefined(x) else None,
                Zero(padding_value.aval) if is_undefined(padding_value) else None]
    unpadded = pad(ct, _const(ct, 0), tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    starts = (0,) * len(padding_config)
    t_x = slice(unpadded, starts, get_aval(unpadded).shape, tuple(i + 1 for _, _, i in padding_config))
    t_pad = None
    if is_undefined(padding_value):
        t_pad = sub(reduce_sum(ct, tuple(range(get_aval(ct).ndim))),
                    reduce_sum(t_x, tuple(range(get_aval(t_x).ndim))))
    return [t_x if is_undefined(x) else None, t_pad]


def _pad_batch(axis_size, vals, dims, padding_config):
    x, pv = vals
    dx, dp = dims
    if dp is not not_mapped:
        # Pad with zeros, then put each example's padding value where a padded mask is False.
        x = batching.move_to(x, dx, 0, axis_size)
        cfg = ((0, 0, 0),) + tuple(padding_config)
        padded = pad_p.bind(x, _const(x, 0), padding_config=cfg)
        inside = pad_p.bind(full(get_aval(x).shape, True, np.bool_), np.bool_(False),
                            padding_config=cfg)
        fill = broadcast_in_dim(batching.move_to(pv, dp, 0, axis_size), get_aval(padded).shape,
                                (0,))
        return select_n(inside, fill, padded), 0
    cfg = list(padding_config)
    cfg.insert(dx, (0, 0, 0))
    return pad_p.bind(x, pv, padding_config=tuple(cfg)), dx


pad_p = Primitive("pad")
impl_rules[pad_p] = _pad_impl
abstract_eval_rules[pad_p] = _pad_abstract
deflinear(pad_p, _pad_transpose)
batch_rules[pad_p] = _pad_batch


def pad(operand, padding_value, padding_config):
    """Pad with (low, high, interior) amounts per axis; negative amounts crop."""
    padding_value = _coerce_scalars("pad", operand, padding_value)[1] \
        if isinstance(padding_value, _SCALARS) else padding_value
    # NumPy integers stay as given: JAX prints them as such (`np.int64(3)`).
    cfg = tuple(tuple(v if isinstance(v, (int, np.integer)) else int(v) for v in amounts)
                for amounts in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=cfg)


def _concatenate_abstract(*xs, dimension):
    if not xs:
        raise ValueError("concatenate requires at least one operand")
    _check_same_dtypes("concatenate", *xs)
    ref = xs[0].shape
    shapes = ", ".join(str(x.shape) for x in xs)
    if builtins.any(x.ndim != len(ref) for x in xs):
        raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{shapes}.")
    for x in xs:
        if builtins.any(a != b for i, (a, b) in enumerate(zip(x.shape, ref)) if i != dimension):
            raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions "
                            "other than the one being concatenated: concatenating along "
                            f"dimension {dimension} for shapes {shapes}.")
    shape = list(ref)
    shape[dimension] = builtins.sum(x.shape[dimension] for x in xs)
    return [ShapedArray(shape, xs[0].dtype, builtins.all(x.weak_type for x in xs))]


def _concatenate_transpose(ct, *xs, dimension):
    outs, start = [], 0
    for x in xs:
        size = (x.aval if is_undefined(x) else get_aval(x)).shape[dimension]
        if is_undefined(x):
            outs.append(Zero(x.aval) if type(ct) is Zero
                        else slice_in_dim(ct, start, start + size, axis=dimension))
        else:
            outs.append(None)
        start += size
    return outs


def _concatenate_batch(axis_size, vals, dims, dimension):
    xs = [batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims)]
    return concatenate(xs, dimension + 1), 0


concatenate_p = Primitive("concatenate")
impl_rules[concatenate_p] = lambda *xs, dimension: np.concatenate(xs, axis=dimension)
abstract_eval_rules[concatenate_p] = _concatenate_abstract
weak_type_rules[concatenate_p] = lambda *xs, dimension: builtins.all(
    getattr(x, "weak_type", False) for x in xs)
batch_rules[concatenate_p] = _concatenate_batch
ad.transpose_rules[concatenate_p] = _concatenate_transpose


def _concatenate_jvp(primals, tangents, dimension):
    out = concatenate_p.bind(*primals, dimension=dimension)
    ts = [ad.instantiate(t) if type(t) is not Zero else zeros_like(p)
          for p, t in zip(primals, tangents)]
    return out, concatenate_p.bind(*ts, dimension=dimension)


ad.jvp_rules[concatenate_p] = _concatenate_jvp


def concatenate(operands, dimension: int):
    """Join arrays along `dimension`."""
    operands = list(operands)
    if not operands:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1 and isinstance(operands[0], (Array, Tracer)):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))
