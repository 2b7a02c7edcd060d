"""Core lax primitives: elementwise math, comparisons, select, conversions, shapes, reductions,
dot_general and iota. Each primitive is a short stanza registering its rules right after
its definition: NumPy implementation, abstract evaluation, JVP, transpose, batching.
"""
from __future__ import annotations

import builtins
import enum
import math
import operator
from functools import partial

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.array import Array
from gpuarr.backends.host_threads import submit
from gpuarr.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    get_aval,
    rank_checked_prims,
    weak_type_rules,
)
from gpuarr.impls import elementwise_prims, fresh_output_prims, impl_rules, narrow_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, defjvp, defjvp_zero, deflinear, is_undefined
from gpuarr.interpreters.batching import batch_rules, not_mapped, vectorized_rule
from gpuarr.lax.dot_precision import algorithm_product, canonicalize_precision, is_algorithm

_SCALARS = (bool, int, float, complex)

# ---------------------------------------------------------------- argument helpers


def check_no_sharding(name: str, sharding, param: str = "out_sharding") -> None:
    """JAX's `out_sharding`/`sharding` arguments: gpuarr runs each computation on one device
    and has no sharding objects, so None (the default, "let the compiler decide") is the only
    value it can honour. (Ops on hot eager paths test `is not None` before calling this.)"""
    if sharding is not None:
        raise NotImplementedError(
            f"{name}: gpuarr does not shard arrays (each computation runs on one device), so "
            f"{param}={sharding!r} cannot be honoured; pass {param}=None.")


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.dtype(x, canonicalize=True)


def _coerce_scalars(name, *args):
    """Python scalars take the dtype of the array operands (they are weakly typed), as long as
    that keeps their value: a float into an integer type, a complex into a real one or an int
    out of the type's range is a TypeError, as in JAX, rather than a silently different value."""
    if not any(type(a) in _SCALARS for a in args):  # exact types: np.float64 is not weak
        return args
    arrays = [a for a in args if type(a) not in _SCALARS]
    if not arrays:  # each scalar alone: its default dtype (the primitive checks they agree)
        return tuple(_scalar_as(name, a, dtypes.dtype(a, canonicalize=True)) for a in args)
    dt = np.dtype(_dtype_of(arrays[0]))
    return tuple(_scalar_as(name, a, dt) if type(a) in _SCALARS else a for a in args)


def _scalar_as(name, value, dt):
    whole = dt == np.bool_ or dtypes.is_int(dt)  # int4 and the other narrow ones included
    lossy = ((isinstance(value, complex) and not dtypes.is_complex(dt))
             or (isinstance(value, float) and whole)
             or (type(value) is int and dt == np.bool_)
             or (type(value) is int and dtypes.is_int(dt)
                 and not dtypes.iinfo(dt).min <= value <= dtypes.iinfo(dt).max))
    if lossy:
        got = dtypes.dtype(value, canonicalize=True).name
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {dt.name}, "
                        f"{got}: the Python scalar {value!r} has no exact {dt.name} value. Pass "
                        f"an array of the intended dtype, or use gpuarr.numpy, which promotes.")
    # A 0-d weakly typed Array: results stay weak where JAX's are (lax.add(1.0, 2.0)).
    return Array(np.asarray(value, dt), weak_type=type(value) is not bool)._keep_python_float(value)


def _as_operand(x):
    """A Python scalar as a weakly typed 0-d Array and a NumPy value as an Array of its
    canonical dtype, as JAX converts them; Arrays and tracers pass through."""
    if type(x) in _SCALARS:
        return Array(np.asarray(x, dtypes.dtype(x, canonicalize=True)), weak_type=type(x) is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return Array(np.asarray(x, dtypes.canonicalize_dtype(x.dtype)))
    return x


def _check_same_dtypes(name, *avals):
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {got}. "
                        "(Use gpuarr.numpy, which promotes, or convert with lax.convert_element_type.)")


def _broadcast_shapes(name, *shapes):
    """Elementwise operands have equal shapes, or rank 0, or equal rank with size-1 dims."""
    shapes = [s for s in shapes if len(s)]
    if not shapes:
        return ()
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                        f"{set(map(len, shapes))}; reshape or broadcast the operands to a "
                        "common rank first (jnp functions broadcast implicitly).")
    out = []
    for dims in zip(*shapes):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}.")
        out.append(big.pop() if big else 1)
    return tuple(out)


_KINDS = {
    "float": (dtypes.is_float, "floating"),
    "inexact": (lambda d: dtypes.is_float(d) or dtypes.is_complex(d), "floating, complexfloating"),
    "int": (dtypes.is_int, "integer"),
    "intbool": (lambda d: dtypes.is_int(d) or d == np.bool_, "integer, bool"),
    "number": (lambda d: d != np.bool_, "integer, floating, complexfloating"),
    "real": (lambda d: d != np.bool_ and not dtypes.is_complex(d), "integer, floating"),
    "ordered": (lambda d: not dtypes.is_complex(d), "integer, floating, bool"),
    "any": (lambda d: True, "any"),
}
# Primitives whose accepted types JAX lists differently from their kind's list.
_ACCEPTED_NAMES = {"abs": "floating, complexfloating, signedinteger", "rem": "integer, floating"}


def _check_kind(name, kind, aval, position=None):
    """Raise JAX's TypeError when aval's dtype is not of the kind; binary primitives pass the
    operand's position, which JAX's message names."""
    ok, what = _KINDS[kind]
    if not ok(aval.dtype):
        what = _ACCEPTED_NAMES.get(name, what)
        if position is None:
            raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are "
                            f"subtypes of {what}.")
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position {position}. "
                        f"Accepted dtypes at position {position} are subtypes of {what}.")


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


def _never_weak(*args, **params):
    return False


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


# ---------------------------------------------------------------- requested accuracy


class Tolerance:
    """The accuracy asked of a unary transcendental op (lax.Tolerance): an absolute error
    `atol`, a relative error `rtol`, or a number of units in the last place `ulps`."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


class AccuracyMode(enum.Enum):
    """The implementation asked of a unary transcendental op (lax.AccuracyMode)."""
    HIGHEST = 1
    DEFAULT = 2


# Each of these ops has one implementation per platform: NumPy's ufuncs on the host (their
# vectorised float32/float64 loops are tested by NumPy to at most 4 ulps) and the device math
# library in kernels (CUDA documents at most 4 ulps for these functions without fast math, the
# OpenCL specification allows up to 5, for tan and tanh); float16 and bfloat16 are computed in
# float32 and rounded. So every result is within _MAX_ULPS ulps of the exact value.
_MAX_ULPS = 5
_BOUNDED_BY_ONE = frozenset({"sin", "cos", "tanh", "logistic"})  # |result| <= 1: atol suffices


def _check_accuracy(name, accuracy, x):
    """The `accuracy` argument of exp, log, sin, ... In JAX it is a primitive parameter that
    picks one of the compiler's implementations, and compilation fails when none meets a
    requested Tolerance. gpuarr has a single implementation per op, so an AccuracyMode
    changes nothing (as on XLA's CPU backend), a Tolerance that its error bound meets is
    accepted, and a tighter one raises NotImplementedError rather than being ignored."""
    if isinstance(accuracy, AccuracyMode):
        return
    if not isinstance(accuracy, Tolerance):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
    dt = np.dtype(_dtype_of(x))
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        return  # not a floating-point operand: the op itself raises its TypeError
    bound = _MAX_ULPS * float(dtypes.finfo(dt).eps)
    if accuracy.ulps >= _MAX_ULPS or accuracy.rtol >= bound or (
            name in _BOUNDED_BY_ONE and accuracy.atol >= bound):
        return
    raise NotImplementedError(
        f"lax.{name}: gpuarr computes {name} to within {_MAX_ULPS} ulps, which does not meet "
        f"the requested {accuracy!r} for {dt.name}; pass a looser lax.Tolerance, an "
        "AccuracyMode, or accuracy=None.")


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


def _round_impl(x, rounding_method=0):
    if rounding_method == 1:  # TO_NEAREST_EVEN
        return np.round(x).astype(x.dtype)
    # copysign keeps the sign of zero results (round(-0.25) is -0.0), as XLA's round does.
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x).astype(x.dtype)


round_p = unop("round", _round_impl, "float")
defjvp_zero(round_p)

exp_p = unop("exp", np.exp)
defjvp(exp_p, lambda g, ans, x: mul(g, ans), with_ans=True)
exp2_p = unop("exp2", np.exp2)
# JVP rules are written as JAX writes them: in narrow types each step rounds, so the order
# of the operations shows in the result.
defjvp(exp2_p, lambda g, ans, x: mul(log(_const(x, 2)), mul(g, ans)), with_ans=True)
log_p = unop("log", np.log)
defjvp(log_p, lambda g, x: div(g, x))
log1p_p = unop("log1p", np.log1p)
defjvp(log1p_p, lambda g, x: div(g, add(x, _const(x, 1))))
expm1_p = unop("expm1", np.expm1)
defjvp(expm1_p, lambda g, ans, x: mul(g, add(ans, _const(x, 1))), with_ans=True)
tanh_p = unop("tanh", np.tanh)
defjvp(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_const(x, 1), ans)), with_ans=True)


def _logistic_impl(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


logistic_p = unop("logistic", _logistic_impl)
defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_const(x, 1), ans))), with_ans=True)
sin_p = unop("sin", np.sin)
defjvp(sin_p, lambda g, x: mul(g, cos(x)))
cos_p = unop("cos", np.cos)
defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
tan_p = unop("tan", np.tan)
defjvp(tan_p, lambda g, ans, x: mul(g, add(_const(x, 1), square(ans))), with_ans=True)
asin_p = unop("asin", np.arcsin)
defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
acos_p = unop("acos", np.arccos)
defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(_const(x, 1), square(x))))))
atan_p = unop("atan", np.arctan)
defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))
sinh_p = unop("sinh", np.sinh)
defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
cosh_p = unop("cosh", np.cosh)
defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
asinh_p = unop("asinh", np.arcsinh)
defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _const(x, 1)))))
acosh_p = unop("acosh", np.arccosh)
defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _const(x, 1)))))
atanh_p = unop("atanh", np.arctanh)
defjvp(atanh_p, lambda g, x: mul(reciprocal(add(_const(x, 1), x)), div(g, sub(_const(x, 1), x))))
sqrt_p = unop("sqrt", np.sqrt)
defjvp(sqrt_p, lambda g, ans, x: mul(g, div(_const(x, 0.5), ans)), with_ans=True)


def _rsqrt_impl(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


rsqrt_p = unop("rsqrt", _rsqrt_impl)
defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(x, -0.5), div(ans, x))), with_ans=True)
square_p = unop("square", np.square, "number")
defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))
cbrt_p = unop("cbrt", np.cbrt, "float")
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


def _div_impl(x, y):
    if dtypes.is_int(x.dtype):
        # C-style division rounding toward zero; x / 0 is -1 (all ones), as XLA gives.
        safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, safe)
        q = np.where((np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0)), q + 1, q)
        return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype)
    return np.true_divide(x, y).astype(x.dtype, copy=False)


div_p = binop("div", _div_impl)


def _div_transpose(ct, x, y):
    assert is_undefined(x) and not is_undefined(y)
    return [_unbroadcast(x.aval, div(ct, y)) if type(ct) is not Zero else None, None]


defjvp(div_p, lambda g, x, y: _bcast_tangent(div(g, y), _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(mul(neg(g), x), integer_pow(y, -2)), _bshape(x, y)))
ad.transpose_rules[div_p] = _div_transpose


def _bshape(x, y):
    return _broadcast_shapes("", get_aval(x).shape, get_aval(y).shape)


def _rem_impl(x, y):
    if dtypes.is_int(x.dtype):
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype)
    return np.fmod(x, y).astype(x.dtype)


rem_p = binop("rem", _rem_impl, "real")  # JAX's rem refuses complex operands
defjvp(rem_p, lambda g, x, y: _bcast_tangent(g, _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))),
                                      _bshape(x, y)))


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


def _atan2_impl(x, y):
    if not np.iscomplexobj(x):
        return np.arctan2(x, y)
    # The principal branch of -i log((y + i x) / sqrt(y^2 + x^2)), as XLA's complex atan2,
    # evaluated in complex128.
    wide_x, wide_y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
    with np.errstate(all="ignore"):
        out = -1j * np.log((wide_y + 1j * wide_x) / np.sqrt(wide_y * wide_y + wide_x * wide_x))
    return out.astype(np.result_type(x, y))


atan2_p = binop("atan2", _atan2_impl, "inexact")
defjvp(atan2_p, lambda g, x, y: _bcast_tangent(mul(g, div(y, add(square(x), square(y)))), _bshape(x, y)),
       lambda g, x, y: _bcast_tangent(mul(g, div(neg(x), add(square(x), square(y)))), _bshape(x, y)))
nextafter_p = binop("nextafter", np.nextafter, "float")
defjvp_zero(nextafter_p)

# The bitwise ufuncs are the logical ones on booleans (compiled Programs call ufuncs directly).
and_p = binop("and", np.bitwise_and, "intbool")
or_p = binop("or", np.bitwise_or, "intbool")
xor_p = binop("xor", np.bitwise_xor, "intbool")


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


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(np.shape(which), np.shape(cases[0])))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(np.clip(which, 0, len(cases) - 1), cases)


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


# ---------------------------------------------------------------- convert_element_type


def _convert_impl(x, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    src = x.dtype
    if src == new_dtype:
        return x
    if src in narrow_types.NARROW or new_dtype in narrow_types.NARROW:
        return narrow_types.convert(x, new_dtype)  # XLA's conversions, not ml_dtypes' (see there)
    if new_dtype == np.bool_:
        return x != 0
    if dtypes.is_complex(src) and not dtypes.is_complex(new_dtype):
        x = np.real(x)
        src = x.dtype
    if dtypes.is_float(src) and dtypes.is_int(new_dtype):
        # Saturating cast (SPEC S16): NaN -> 0, out-of-range values clamp to the type's range.
        info = np.iinfo(new_dtype)
        wide = x.astype(np.float64)
        out = np.clip(np.nan_to_num(wide, nan=0.0), float(info.min), float(info.max))
        out = np.where(out >= float(info.max), info.max, np.trunc(out))
        return out.astype(new_dtype) if new_dtype.itemsize < 8 else _exact_to_int64(wide, info, new_dtype)
    return x.astype(new_dtype)


def _exact_to_int64(wide, info, new_dtype):
    out = np.zeros(wide.shape, new_dtype)
    ok = np.isfinite(wide) & (wide > float(info.min)) & (wide < float(info.max))
    out[ok] = wide[ok].astype(new_dtype)
    out[~np.isnan(wide) & (wide >= float(info.max))] = info.max
    out[~np.isnan(wide) & (wide <= float(info.min))] = info.min
    return out


convert_element_type_p = Primitive("convert_element_type")
impl_rules[convert_element_type_p] = _convert_impl
elementwise_prims.add(convert_element_type_p)
abstract_eval_rules[convert_element_type_p] = lambda x, new_dtype, weak_type=False: [
    ShapedArray(x.shape, new_dtype, weak_type)]
weak_type_rules[convert_element_type_p] = lambda x, new_dtype, weak_type=False: weak_type
narrow_rules[convert_element_type_p] = _convert_impl  # which converts narrow types itself
batch_rules[convert_element_type_p] = vectorized_rule(convert_element_type_p)


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not (dtypes.is_float(new_dtype) or dtypes.is_complex(new_dtype)) \
            or not (dtypes.is_float(_dtype_of(x)) or dtypes.is_complex(_dtype_of(x))):
        return out, Zero.from_primal(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


ad.jvp_rules[convert_element_type_p] = _convert_jvp
ad.transpose_rules[convert_element_type_p] = lambda ct, x, new_dtype, weak_type=False: [
    convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)
    if type(ct) is not Zero else Zero(x.aval)]


_CONSTANTS = (*_SCALARS, np.generic)


def convert_element_type(operand, new_dtype):
    """Cast to `new_dtype` (float -> int saturates; NaN becomes 0), as lax.convert_element_type."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if isinstance(operand, _CONSTANTS) and new_dtype != dtypes.float0 and not (
            dtypes.is_int(new_dtype) and not np.isfinite(operand)):
        # A constant converts at once, as in JAX: no equation, a literal of the new type.
        try:
            return Array(np.asarray(operand).astype(new_dtype))
        except (OverflowError, TypeError):
            pass
    if isinstance(operand, _SCALARS):
        operand = np.asarray(operand, dtypes.dtype(operand, canonicalize=True))[()]
    aval = get_aval(operand)
    if aval.dtype == new_dtype and not aval.weak_type and hasattr(operand, "aval"):
        return operand  # already an Array (or tracer) of that type; NumPy values still convert
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=False)


def _convert_weak(operand, new_dtype, weak_type):
    """Internal: convert keeping (or setting) the weak-type flag."""
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    if (type(operand) is Array and aval.dtype == new_dtype and not aval.shape
            and operand._platform is None):  # a constant's flag: a literal when staged, as in JAX
        return Array(operand._value, weak_type=weak_type)
    return convert_element_type_p.bind(operand, new_dtype=np.dtype(new_dtype), weak_type=weak_type)


# ---------------------------------------------------------------- shape operations


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), shape)


def _check_broadcast_nonnegative(shape, broadcast_dimensions):
    for arg, value in (("shape", shape), ("broadcast_dimensions", broadcast_dimensions)):
        if builtins.any(d < 0 for d in value):
            raise TypeError(f"broadcast_in_dim {arg} must have every element be nonnegative, "
                            f"got {value}.")


def _broadcast_in_dim_abstract(x, shape, broadcast_dimensions):
    _check_broadcast_nonnegative(shape, broadcast_dimensions)
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
                        f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
                        f"{x.ndim}.")
    for src, dst in enumerate(broadcast_dimensions):
        if not (0 <= dst < len(shape)) or x.shape[src] not in (1, shape[dst]):
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {x.shape}, target broadcast shape "
                            f"{shape}, broadcast_dimensions {broadcast_dimensions}")
    return [x.update(shape=shape)]


def _broadcast_in_dim_transpose(ct, x, shape, broadcast_dimensions):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    # As JAX: sum over the new axes and those broadcast from size 1, then put the unit axes back.
    unit_dims = tuple(i for i, n in enumerate(x.aval.shape) if n == 1)
    kept = {d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims}
    summed = reduce_sum(ct, tuple(i for i in range(len(shape)) if i not in kept))
    return [expand_dims(summed, unit_dims)]


def _broadcast_in_dim_batch(axis_size, vals, dims, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    # np.add, as JAX's rule: the shifted dimensions print as NumPy integers.
    return broadcast_in_dim(x, (axis_size,) + tuple(shape),
                            (0,) + tuple(np.add(1, broadcast_dimensions))), 0


broadcast_in_dim_p = Primitive("broadcast_in_dim")
impl_rules[broadcast_in_dim_p] = _broadcast_in_dim_impl
abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_abstract
deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batch_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """Broadcast `operand` to `shape`, its axis i landing on `broadcast_dimensions[i]`."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcast_in_dim", out_sharding)
    shape = tuple(int(d) for d in shape)
    # NumPy integers stay as given: JAX prints them as such.
    broadcast_dimensions = tuple(d if isinstance(d, (int, np.integer)) else int(d)
                                 for d in broadcast_dimensions)
    if broadcast_dimensions and builtins.min(broadcast_dimensions) < 0:
        # NumPy would index from the end: eager calls never reach the abstract rule's check
        _check_broadcast_nonnegative(shape, broadcast_dimensions)
    if get_aval(operand).shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return _as_operand(operand)
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast(operand, sizes, *, out_sharding=None):
    """Add leading dimensions of the given sizes."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcast", out_sharding)
    shape = tuple(sizes) + get_aval(operand).shape
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(shape))))


def _reshape_abstract(x, new_sizes, dimensions=None):
    if math.prod(new_sizes) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                        f"shape {x.shape}.")
    return [x.update(shape=new_sizes)]


def _reshape_impl(x, new_sizes, dimensions=None):
    if type(x) is not np.ndarray:
        x = np.asarray(x)
    if dimensions is not None:
        x = x.transpose(dimensions)
    return x.reshape(new_sizes)


def _reshape_batch(axis_size, vals, dims, new_sizes, dimensions=None):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    if dimensions is not None:
        x = transpose(x, (0,) + tuple(i + 1 for i in dimensions))
    return reshape(x, (axis_size,) + tuple(new_sizes)), 0


reshape_p = Primitive("reshape")
impl_rules[reshape_p] = _reshape_impl
abstract_eval_rules[reshape_p] = _reshape_abstract
deflinear(reshape_p, lambda ct, x, new_sizes, dimensions=None: [
    Zero(x.aval) if type(ct) is Zero else
    (reshape(ct, x.aval.shape) if dimensions is None else
     transpose(reshape(ct, tuple(x.aval.shape[i] for i in dimensions)), tuple(np.argsort(dimensions))))])
batch_rules[reshape_p] = _reshape_batch


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """Reshape to `new_sizes` (after transposing by `dimensions`, if given)."""
    if out_sharding is not None:
        check_no_sharding("lax.reshape", out_sharding)
    new_sizes = tuple(int(d) for d in new_sizes)
    operand = _as_operand(operand)
    if dimensions is not None:
        dimensions = tuple(int(d) for d in dimensions)
        if dimensions == tuple(range(len(dimensions))):
            dimensions = None
    if dimensions is None and get_aval(operand).shape == new_sizes:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dimensions)


def _transpose_abstract(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {permutation} for operand shape {x.shape}.")
    return [x.update(shape=tuple(x.shape[i] for i in permutation))]


transpose_p = Primitive("transpose")
impl_rules[transpose_p] = lambda x, permutation: np.transpose(x, permutation)
abstract_eval_rules[transpose_p] = _transpose_abstract
deflinear(transpose_p, lambda ct, x, permutation: [
    Zero(x.aval) if type(ct) is Zero else transpose(ct, tuple(np.argsort(permutation)))])


def _transpose_batch(axis_size, vals, dims, permutation):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


batch_rules[transpose_p] = _transpose_batch


def transpose(operand, permutation):
    """Permute the axes of `operand`."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


def _canonical_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _squeeze_shape(shape, dimensions):
    for d in dimensions:
        if shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                             f"one, got shape={shape} and dimensions={dimensions}")
    return tuple(s for i, s in enumerate(shape) if i not in dimensions)


def _squeeze_batch(axis_size, vals, dims, dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    return squeeze(x, tuple(i + 1 for i in dimensions)), 0


squeeze_p = Primitive("squeeze")
impl_rules[squeeze_p] = lambda x, dimensions: np.asarray(x).reshape(
    _squeeze_shape(np.shape(x), dimensions))
abstract_eval_rules[squeeze_p] = lambda x, dimensions: [
    x.update(shape=_squeeze_shape(x.shape, dimensions))]
deflinear(squeeze_p, lambda ct, x, dimensions: [
    Zero(x.aval) if type(ct) is Zero else expand_dims(ct, dimensions)])
batch_rules[squeeze_p] = _squeeze_batch


def squeeze(array, dimensions):
    """Remove the given size-1 dimensions."""
    ndim = get_aval(array).ndim
    dimensions = tuple(sorted(_canonical_axis(d, ndim) for d in dimensions))
    if not dimensions:
        return _as_operand(array)
    return squeeze_p.bind(array, dimensions=dimensions)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at the given positions of the result (a broadcast_in_dim)."""
    shape = list(get_aval(array).shape)
    ndim = len(shape) + len(dimensions)
    dims = [_canonical_axis(d, ndim) for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
    for d in sorted(dims):
        shape.insert(d, 1)
    return broadcast_in_dim(array, tuple(shape), tuple(i for i in range(ndim) if i not in dims))


def _moveaxis(x, src, dst):
    ndim = get_aval(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def _broadcast_batched(x, axis_size, dst):
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(dst, axis_size)
    # np.delete, as JAX's batching.broadcast: the dimensions print as NumPy integers.
    return broadcast_in_dim(x, shape, tuple(np.delete(np.arange(len(shape)), dst)))


batching.moveaxis = _moveaxis
batching.broadcast_batched = _broadcast_batched


# ---------------------------------------------------------------- reductions


def _reduce_abstract(name, kind=None, out_dtype=None):
    def rule(x, axes):
        if kind is not None:
            _check_kind(name, kind, x)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {x.ndim}")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, out_dtype or x.dtype, x.weak_type and out_dtype is None)]
    return rule


def _reduce_batch(prim, axis_size, vals, dims, axes, **params):
    (x,), (d,) = vals, dims
    # np.where, as JAX's rule: the shifted axes print as NumPy integers.
    new_axes = tuple(np.where(np.less(axes, d), axes, np.add(axes, 1))) if axes else ()
    out_d = d - builtins.sum(a < d for a in axes)
    return prim.bind(x, axes=new_axes, **params), out_d


def reducer(name, impl, kind=None, out_dtype=None) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = impl
    fresh_output_prims.add(prim)  # ufunc.reduce never returns a view of its operand
    abstract_eval_rules[prim] = _reduce_abstract(name, kind, out_dtype)
    batch_rules[prim] = partial(_reduce_batch, prim)
    return prim


def _ufunc_reduce(ufunc):
    """`ufunc.reduce` over `axes` keeping the dtype; max/min of nothing give their identity
    (-inf/+inf or the integer range's end), as XLA does, where NumPy would raise."""
    bounded = ufunc in (np.maximum, np.minimum)

    def impl(x, axes):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if bounded and x.size == 0:
            return np.asarray(ufunc.reduce(x, axis=axes, initial=_reduce_identity(ufunc, x.dtype)))
        if x.size >= _PARALLEL_REDUCE_SIZE and axes and x.shape[0] > 1:
            if 0 not in axes:
                return _reduce_in_halves(ufunc, x, axes)
            return np.asarray(ufunc(*_reduce_in_halves(ufunc, x, axes, combine=False)))
        return np.asarray(ufunc.reduce(x, axis=axes, dtype=x.dtype))
    return impl


# Large reductions split their leading axis between two threads (NumPy releases the GIL
# inside reductions). When the leading axis is kept, every output element is computed exactly
# as in one call; when it is reduced, two partial results are combined (sums round differently
# from one NumPy call, as any other summation order would).
_PARALLEL_REDUCE_SIZE = 1 << 20


def _reduce_in_halves(ufunc, x, axes, combine=True):
    half = x.shape[0] // 2
    first = submit(ufunc.reduce, x[:half], axes, x.dtype)
    second = ufunc.reduce(x[half:], axis=axes, dtype=x.dtype)
    return np.concatenate([first.result(), second]) if combine else (first.result(), second)


def _reduce_identity(ufunc, dtype):
    lowest = ufunc is np.maximum
    if dtype == np.bool_:
        return not lowest
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return info.min if lowest else info.max
    return -np.inf if lowest else np.inf


reduce_sum_p = reducer("reduce_sum", _ufunc_reduce(np.add), "number")
deflinear(reduce_sum_p, lambda ct, x, axes: [
    Zero(x.aval) if type(ct) is Zero else
    # NumPy integers, as JAX computes them (np.delete), so printed programs match.
    broadcast_in_dim(ct, x.aval.shape, tuple(np.delete(np.arange(x.aval.ndim), axes)))])
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


reduce_max_p = reducer("reduce_max", _minmax_reduce(np.maximum), "any")
reduce_min_p = reducer("reduce_min", _minmax_reduce(np.minimum), "any")
reduce_prod_p = reducer("reduce_prod", _ufunc_reduce(np.multiply), "number")
reduce_and_p = reducer("reduce_and", _ufunc_reduce(np.bitwise_and), "intbool")
reduce_or_p = reducer("reduce_or", _ufunc_reduce(np.bitwise_or), "intbool")


defjvp_zero(reduce_and_p)
defjvp_zero(reduce_or_p)
for _p, _u in ((reduce_sum_p, np.add), (reduce_max_p, np.maximum), (reduce_min_p, np.minimum),
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


def _argminmax_impl(fn, x, axes, index_dtype):
    (axis,) = axes
    return np.asarray(fn(x, axis=axis)).astype(index_dtype)


def _argminmax_abstract(name):
    def rule(x, axes, index_dtype):
        if len(axes) != 1:
            raise ValueError(f"{name} takes exactly one axis")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, index_dtype)]
    return rule


def _narrow_argminmax_impl(fn, x, axes, index_dtype):
    # JAX starts the search from -inf (+inf) converted to the type: in float8_e8m0fnu that is
    # NaN, which wins every comparison, so the index stays 0.
    if dtypes.is_float(x.dtype) and dtypes.supports_inf(x.dtype) and np.isnan(
            np.asarray(-np.inf if fn is np.argmax else np.inf).astype(x.dtype).astype(np.float32)):
        return np.zeros(tuple(s for i, s in enumerate(x.shape) if i not in axes), index_dtype)
    wide = narrow_types.convert(x, narrow_types.compute_dtype(x.dtype))
    return _argminmax_impl(fn, wide, axes, index_dtype)


argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")
for _p, _fn in ((argmax_p, np.argmax), (argmin_p, np.argmin)):
    impl_rules[_p] = partial(_argminmax_impl, _fn)
    narrow_rules[_p] = partial(_narrow_argminmax_impl, _fn)
    abstract_eval_rules[_p] = _argminmax_abstract(_p.name)
    weak_type_rules[_p] = _never_weak
    batch_rules[_p] = partial(_reduce_batch, _p)
    defjvp_zero(_p)


def _axes(axes):
    return tuple(sorted(int(a) for a in axes))


def reduce_sum(operand, axes, *, out_sharding=None):
    """Sum over `axes`."""
    if out_sharding is not None:
        check_no_sharding("lax.reduce_sum", out_sharding)
    return reduce_sum_p.bind(operand, axes=_axes(axes))


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
# (kept here because reduce_prod's JVP uses them; gather/scatter live in lax/slicing.py)


def _slice_impl(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return x[tuple(builtins.slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides))]


def _slice_abstract(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice start_indices, limit_indices and strides must have length "
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
    return slice_p.bind(operand, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)),
                        strides=None if strides is None else tuple(map(int, strides)))


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


def _pad_abstract(x, padding_value, padding_config):
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: padding_config has length {len(padding_config)} but operand has "
                         f"{x.ndim} dimensions")
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


# ---------------------------------------------------------------- dot_general


def _dot_dims(lhs_ndim, rhs_ndim, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lf = tuple(i for i in range(lhs_ndim) if i not in lc and i not in lb)
    rf = tuple(i for i in range(rhs_ndim) if i not in rc and i not in rb)
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb), lf, rf


_NARROW_FLOATS = (np.dtype(np.float16),) + ((np.dtype(dtypes.bfloat16),)
                                             if hasattr(dtypes, "bfloat16") else ())


def _einsum_pays(dtype, out_shape, ndims) -> bool:
    # einsum's loops beat a broadcasting multiply unless the rows it runs along are short.
    return dtype.kind in "fc" and bool(out_shape) and out_shape[-1] >= 16 and ndims <= 26


def _broadcast_product_spec(x_ndim, y_ndim, dimension_numbers) -> str:
    """The einsum subscripts of a dot_general without contraction (batch and free axes only)."""
    _, _, lb, rb, lf, rf = _dot_dims(x_ndim, y_ndim, dimension_numbers)
    letters = [chr(ord("a") + i) for i in range(len(lb) + len(lf) + len(rf))]
    bl, fl, fr = letters[:len(lb)], letters[len(lb):len(lb) + len(lf)], letters[len(lb) + len(lf):]
    xs, ys = [""] * x_ndim, [""] * y_ndim
    for i, c in zip(lb + lf, bl + fl):
        xs[i] = c
    for i, c in zip(rb + rf, bl + fr):
        ys[i] = c
    return f"{''.join(xs)},{''.join(ys)}->{''.join(bl + fl + fr)}"


def _dot_general_impl(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    if precision is not None and is_algorithm(precision):  # None, the common case, costs one test
        out = x.dtype if preferred_element_type is None else preferred_element_type
        return algorithm_product(partial(_dot_general_impl, dimension_numbers=dimension_numbers),
                                 x, y, precision, out)
    (lc, rc), (lb, rb) = dimension_numbers
    if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype.char in "fdFD" \
            and not lb and len(lc) == 1 and x.ndim <= 2 and y.ndim <= 2 \
            and (preferred_element_type is None or preferred_element_type == x.dtype):
        # The common case, kept short: a BLAS matrix/vector product (transposes are views).
        return np.dot(x if lc[0] == x.ndim - 1 else x.T, y if rc[0] == 0 else y.T)
    x, y = np.asarray(x), np.asarray(y)
    out_dtype = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    if x.dtype in narrow_types.NARROW:
        # float8/float4 products accumulate in float32 and round through float16, integers wrap
        # (as XLA on the CPU).
        acc = _dot_general_impl(narrow_types.widen_for_dot(x), narrow_types.widen_for_dot(y),
                                dimension_numbers)
        return narrow_types.convert_product(acc, out_dtype)
    if x.dtype == np.bool_ or x.dtype in _NARROW_FLOATS:
        # NumPy has no bool matmul; half precision accumulates in float32 (as XLA does on CPU).
        acc = np.int32 if x.dtype == np.bool_ else np.float32
        x, y = x.astype(acc), y.astype(acc)
    # Fast paths: plain matrix/vector products go straight to BLAS (transposes are views).
    if not lb and len(lc) == 1 and x.ndim <= 2 and y.ndim <= 2:
        xm = x if lc[0] == x.ndim - 1 else x.T
        ym = y if rc[0] == 0 else y.T
        return np.dot(xm, ym).astype(out_dtype, copy=False)
    lc, rc, lb, rb, lf, rf = _dot_dims(x.ndim, y.ndim, dimension_numbers)
    bshape = tuple(x.shape[i] for i in lb)
    lfs = tuple(x.shape[i] for i in lf)
    rfs = tuple(y.shape[i] for i in rf)
    if not lc:
        # No contraction: a broadcast product, not a batch of 1x1 matrix multiplies (one
        # product per element in einsum and in multiply, so the same values).
        out_shape = bshape + lfs + rfs
        if _einsum_pays(x.dtype, out_shape, x.ndim + y.ndim):
            spec = _broadcast_product_spec(x.ndim, y.ndim, dimension_numbers)
            return np.einsum(spec, x, y).astype(out_dtype, copy=False)
        xt = np.transpose(x, lb + lf).reshape(bshape + lfs + (1,) * len(rfs))
        yt = np.transpose(y, rb + rf).reshape(bshape + (1,) * len(lfs) + rfs)
        return np.multiply(xt, yt).astype(out_dtype, copy=False)
    k = math.prod(x.shape[i] for i in lc)
    xt = np.transpose(x, lb + lf + lc).reshape(bshape + (math.prod(lfs), k))
    yt = np.transpose(y, rb + rc + rf).reshape(bshape + (k, math.prod(rfs)))
    out = np.matmul(xt, yt)
    return out.reshape(bshape + lfs + rfs).astype(out_dtype, copy=False)


def _dot_general_abstract(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    lc, rc, lb, rb, lf, rf = _dot_dims(x.ndim, y.ndim, dimension_numbers)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting and batch "
                        f"dimensions, got dimension_numbers {dimension_numbers}")
    for a, b in zip(lc + lb, rc + rb):
        if x.shape[a] != y.shape[b]:
            raise TypeError(f"dot_general requires contracting/batch dimensions to have the same "
                            f"shape, got {x.shape} and {y.shape} with dimension_numbers "
                            f"{dimension_numbers}.")
    _check_same_dtypes("dot_general", x, y)
    shape = tuple(x.shape[i] for i in lb) + tuple(x.shape[i] for i in lf) + tuple(y.shape[i] for i in rf)
    dtype = preferred_element_type if preferred_element_type is not None else x.dtype
    return [ShapedArray(shape, dtype, x.weak_type and y.weak_type)]


def _ranges_like(*xs):
    start = 0
    for x in xs:
        x_len = len(x)
        yield tuple(range(start, start + x_len))
        start += x_len


def _remaining(original, *removed_lists):
    removed = set(itertools_chain(removed_lists))
    return tuple(i for i in original if i not in removed)


def itertools_chain(lists):
    out = []
    for lst in lists:
        out.extend(lst)
    return out


def _dot_transpose_lhs(ct, x, y, dimension_numbers, precision=None, preferred_element_type=None,
                       swap_ans=False):
    x_aval = x.aval if is_undefined(x) else get_aval(x)
    y_aval = y.aval if is_undefined(y) else get_aval(y)
    x_ndim, y_ndim = x_aval.ndim, y_aval.ndim
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = tuple(np.take(x_contract, np.argsort(y_contract)))
    out_axes = tuple(np.argsort(tuple(x_batch) + x_kept + x_contract_sorted_by_y))
    # As JAX writes it (a transpose after the product): the compiler's passes fold the
    # transpose into the product where that saves a copy.
    val = transpose(dot_general(ct, y, dims, precision, preferred_element_type), out_axes)
    return convert_element_type(val, x_aval.dtype) if get_aval(val).dtype != x_aval.dtype else val


def _dot_transpose_rhs(ct, x, y, dimension_numbers, precision=None, preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_transpose_lhs(ct, y, x, swapped, precision, preferred_element_type,
                              swap_ans=True)


dot_general_p = Primitive("dot_general")
impl_rules[dot_general_p] = _dot_general_impl
fresh_output_prims.add(dot_general_p)
abstract_eval_rules[dot_general_p] = _dot_general_abstract
ad.defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)


def _dot_general_batch(axis_size, vals, dims, dimension_numbers, precision=None,
                       preferred_element_type=None):
    (x, y), (dx, dy) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if dx is not not_mapped and dy is not not_mapped:
        x = batching.moveaxis(x, dx, 0) if dx != 0 else x
        y = batching.moveaxis(y, dy, 0) if dy != 0 else y
        shift = lambda t: tuple(i + 1 for i in t)  # noqa: E731
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return dot_general_p.bind(x, y, dimension_numbers=dn, **params), 0
    # One side batched: its batch axis stays where it is, as one more free dimension.
    shift = lambda t, d: tuple(i + (i >= d) for i in t)  # noqa: E731
    if dx is not not_mapped:
        dn = ((shift(lc, dx), rc), (shift(lb, dx), rb))
        free = [i for i in range(get_aval(x).ndim) if i not in dn[0][0] + dn[1][0]]
        return dot_general_p.bind(x, y, dimension_numbers=dn, **params), len(lb) + free.index(dx)
    dn = ((lc, shift(rc, dy)), (lb, shift(rb, dy)))
    free = [i for i in range(get_aval(y).ndim) if i not in dn[0][1] + dn[1][1]]
    if not lb and free == [dy]:
        # A matrix times a batch of vectors: the batch as rows (y @ x.T), so the result comes
        # out batch-major and contiguous, not transposed (scan hoists such products this way).
        swapped = ((dn[0][1], lc), ((), ()))
        return dot_general_p.bind(y, x, dimension_numbers=swapped, **params), 0
    n_lhs_free = get_aval(x).ndim - len(lc) - len(lb)
    return dot_general_p.bind(x, y, dimension_numbers=dn, **params), \
        len(lb) + n_lhs_free + free.index(dy)


batch_rules[dot_general_p] = _dot_general_batch


def _index_tuple(dims):
    """An int or a sequence of ints as a tuple of ints (dot_general's dimension lists)."""
    return (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(map(int, dims))


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General tensor contraction given by `dimension_numbers` = ((lhs_contract,
    rhs_contract), (lhs_batch, rhs_batch)): batch axes first, then lhs free axes, then rhs free
    axes. `precision` takes a Precision (or its name, or a pair), a DotAlgorithmPreset (or its
    name) or a DotAlgorithm (see `gpuarr.lax.dot_precision`); `preferred_element_type` sets the
    result type."""
    if out_sharding is not None:
        check_no_sharding("lax.dot_general", out_sharding)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pet)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """A contraction given by `dimension_numbers` (as dot_general's); without them, the
    product of rank-1 or rank-2 arrays over the last axis of `lhs` and the first of `rhs`."""
    if out_sharding is not None:
        check_no_sharding("lax.dot", out_sharding)
    if dimension_numbers is None:
        lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
        if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
                and lhs_shape[-1] == rhs_shape[0]):
            raise ValueError(
                "lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={lhs_shape} rhs_shape={rhs_shape}")
        dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


# ---------------------------------------------------------------- iota and full


def _iota_impl(dtype, shape, dimension):
    if np.dtype(dtype) in narrow_types.NARROW:  # each index converted (ml_dtypes' arange accumulates)
        idx = narrow_types.convert(np.arange(shape[dimension]), dtype)
    else:
        idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape)


iota_p = Primitive("iota")
impl_rules[iota_p] = _iota_impl
abstract_eval_rules[iota_p] = lambda dtype, shape, dimension: [ShapedArray(shape, dtype)]
weak_type_rules[iota_p] = _never_weak


def iota(dtype, size: int):
    """[0, 1, ..., size - 1] of `dtype`."""
    return broadcasted_iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
    """An array of `shape` whose values count along `dimension`."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcasted_iota", out_sharding)
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=tuple(map(int, shape)),
                       dimension=int(dimension))


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of `shape` filled with `fill_value` (a broadcast of a scalar)."""
    if sharding is not None:
        check_no_sharding("lax.full", sharding, "sharding")
    if dtype is None:
        return _full(shape, fill_value, _dtype_of(fill_value), dtypes.is_weakly_typed(fill_value))
    return _full(shape, fill_value, dtypes.canonicalize_dtype(dtype), False)


def _full(shape, fill_value, dtype, weak):
    """`full` with the result's dtype and weak type given."""
    shape = tuple(int(d) for d in shape)
    if isinstance(fill_value, (_SCALARS, np.generic, np.ndarray)):
        scalar = (None if np.ndim(fill_value) != 0 else
                  narrow_types.convert(np.asarray(fill_value), dtype)[()]
                  if np.dtype(dtype) in narrow_types.NARROW
                  else np.asarray(fill_value).astype(dtype)[()])
        if scalar is None:
            raise TypeError(f"full requires a scalar fill_value, got shape {np.shape(fill_value)}")
        from gpuarr.core import current_trace
        from gpuarr.dispatch import eval_trace, wrap
        if current_trace() is eval_trace or not shape:  # 0-d: a literal when staged, as in JAX
            return wrap(np.broadcast_to(scalar, shape), weak)
        # A 0-d Array keeps the weak type when staged (it becomes a weak literal).
        value = wrap(np.asarray(scalar), weak) if weak else scalar
    else:
        if get_aval(fill_value).shape != ():
            raise TypeError(f"full requires a scalar fill_value, got shape {get_aval(fill_value).shape}")
        value = _convert_weak(fill_value, dtype, weak)
        if not shape:
            return value
    return broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """`full` with the shape and dtype of `x` unless given; without `dtype` the result keeps
    the weak type of `x`, as in JAX."""
    if sharding is not None:
        check_no_sharding("lax.full_like", sharding, "sharding")
    aval = get_aval(x)
    shape = aval.shape if shape is None else shape
    if dtype is None and aval.weak_type:  # one weak broadcast, not a broadcast and a convert
        out = _full(shape, fill_value, dtypes.canonicalize_dtype(aval.dtype), True)
        return _convert_weak(out, aval.dtype, True)  # a no-op unless x has a 64-bit dtype, x64 off
    return full(shape, fill_value, aval.dtype if dtype is None else dtype)


class MemorySpace(enum.Enum):
    """Where an array lives, as JAX's core.MemorySpace (gpuarr keeps every array on its
    device); printed `MemorySpace.Device`."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self):
        return f"MemorySpace.{self.name}"


# A scalar whose value does not matter, broadcast to fill an output slot nobody reads: JAX's
# placeholder for the residuals a cond branch does not compute. Every backend makes it zero.
empty2_p = Primitive("empty2")
impl_rules[empty2_p] = lambda *, dtype, memory_space: np.zeros((), dtype)
abstract_eval_rules[empty2_p] = lambda *, dtype, memory_space: [ShapedArray((), dtype)]


def empty_like_aval(aval):
    """An array of `aval`'s type whose contents do not matter (zeros): `empty2` broadcast to
    the shape, as JAX's ad_util.empty_like_aval."""
    scalar = empty2_p.bind(dtype=np.dtype(aval.dtype), memory_space=MemorySpace.Device)
    if not aval.shape:
        return scalar
    return broadcast_in_dim_p.bind(scalar, shape=tuple(aval.shape), broadcast_dimensions=())


def _zeros_like_aval(aval):
    # Instantiated zeros keep the weak type, as JAX's zeros_like_shaped_array does.
    return _full(aval.shape, 0, dtypes.canonicalize_dtype(aval.dtype), aval.weak_type)


ad.zeros_like_aval = _zeros_like_aval


# ---------------------------------------------------------------- rev

rev_p = Primitive("rev")
impl_rules[rev_p] = lambda x, dimensions: np.flip(x, dimensions) if dimensions else x


def _rev_abstract(x, dimensions):
    if builtins.any(d < 0 for d in dimensions):
        raise TypeError(f"rev dimensions must have every element be nonnegative, got "
                        f"{dimensions}.")
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if dimensions and not builtins.max(dimensions) < x.ndim:
        raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                        f"{dimensions} for operand ndim {x.ndim}.")
    return [x]


abstract_eval_rules[rev_p] = _rev_abstract
deflinear(rev_p, lambda ct, x, dimensions: [
    Zero(x.aval) if type(ct) is Zero else rev(ct, dimensions)])


def _rev_batch(axis_size, vals, dims, dimensions):
    (x,), (d,) = vals, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


batch_rules[rev_p] = _rev_batch


def rev(operand, dimensions):
    """Reverse the order of elements along `dimensions` (kept in the order given, and bound
    even when empty, as JAX binds them)."""
    return rev_p.bind(operand, dimensions=tuple(dimensions))


# add_any's batching rule lives with it in ad.py: its operands have equal shapes, so both get
# the batch axis (broadcast_batch_rule would leave an unbatched scalar operand rank 0).
