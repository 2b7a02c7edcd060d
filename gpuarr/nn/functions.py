"""Activation functions and friends (jax.nn): same formulas, so the same values and the same
gradients, including at the kinks (relu'(0) = 0 through a custom JVP, as in JAX)."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from gpuarr import dtypes
from gpuarr.config import config
from gpuarr.core import Tracer
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.errors import ConcretizationTypeError
from gpuarr.jit_api import jit
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import canonicalize_axes, canonicalize_axis, check_arraylike
from gpuarr.scipy.special import logsumexp  # noqa: F401  (jax.nn.logsumexp)

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
    "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign",
    "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus", "standardize", "swish",
    "tanh",
]

tanh = ufuncs.tanh  # jax.nn.tanh


def _array(fun_name, x):
    """`x` as an array; lists and tuples are a TypeError naming `fun_name`, as JAX's
    ensure_arraylike in the same function."""
    check_arraylike(fun_name, x)
    return creation.asarray(x)


@jit
def identity(x):
    """The identity activation: `x` as an array (jax.nn.identity)."""
    return _array("identity", x)


@custom_jvp
@jit
def relu(x):
    """Rectified linear unit, max(x, 0); its derivative at 0 is 0 (jax.nn.relu)."""
    return ufuncs.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax_shape_ops.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
    """min(max(x, 0), 6); the derivative is 0 at both kinks (jax.nn.relu6)."""
    return ufuncs.minimum(ufuncs.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax_shape_ops.full_like(g, 0)))


@jit(inline=True)
def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x)) (jax.nn.sigmoid); integer inputs are a
    TypeError, as in JAX."""
    check_arraylike("logistic", x)
    return lax.logistic(creation.asarray(x) if not hasattr(x, "dtype") else x)


@jit
def softplus(x):
    """log(1 + exp(x)) = logaddexp(x, 0), so softplus'(0) = 1/2 (jax.nn.softplus)."""
    return ufuncs.logaddexp(x, 0)


@jit
def sparse_plus(x):
    """0 for x <= -1, x for x >= 1, (x + 1)**2 / 4 in between (jax.nn.sparse_plus)."""
    x = _array("sparse_plus", x)
    return ufuncs.where(x <= -1.0, 0.0, ufuncs.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def sparse_sigmoid(x):
    """clip(x + 1, 0, 2) / 2, the derivative of sparse_plus (jax.nn.sparse_sigmoid)."""
    return 0.5 * ufuncs.clip(x + 1.0, 0.0, 2.0)  # a list is Python's TypeError, as in JAX


@jit
def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x) (jax.nn.log_sigmoid)."""
    return -softplus(-_array("log_sigmoid", x))


@jit
def soft_sign(x):
    """x / (|x| + 1) (jax.nn.soft_sign)."""
    x = _array("soft_sign", x)
    return x / (ufuncs.abs(x) + 1)


@jit
def silu(x):
    """x * sigmoid(x), also called swish (jax.nn.silu)."""
    x = _array("silu", x)
    return x * sigmoid(x)


swish = silu


@jit
def mish(x):
    """x * tanh(softplus(x)) (jax.nn.mish)."""
    x = _array("mish", x)
    return x * ufuncs.tanh(softplus(x))


@jit
def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise; the exp branch sees only safe inputs so
    its gradient never overflows (jax.nn.elu)."""
    x = _array("elu", x)
    return ufuncs.where(x > 0, x, alpha * ufuncs.expm1(ufuncs.where(x > 0, 0., x)))


@jit
def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha) (jax.nn.celu)."""
    x = _array("maximum", x)
    return ufuncs.maximum(x, 0.0) + alpha * ufuncs.expm1(ufuncs.minimum(x, 0.0) / alpha)


@jit
def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants (jax.nn.selu)."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: the tanh approximation by default, or the exact
    x * (1 + erf(x / sqrt(2))) / 2 with approximate=False (jax.nn.gelu)."""
    x = _array("gelu", x)
    if not (dtypes.is_float(x.dtype) or dtypes.is_complex(x.dtype)):  # integers promote
        x = x.astype(dtypes.canonicalize_dtype(np.float64))
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
        cdf = 0.5 * (1.0 + ufuncs.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    # erfc(-x / sqrt(2)) keeps its precision for large negative x, where 1 + erf cancels.
    sqrt_half = np.sqrt(0.5).astype(x.dtype)
    return creation.asarray(0.5 * x * lax_special.erfc(-x * sqrt_half), dtype=x.dtype)


@jit
def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2, a smooth relu (jax.nn.squareplus)."""
    x = _array("squareplus", x)
    return (x + ufuncs.sqrt(ufuncs.square(x) + b)) / 2


@jit
def leaky_relu(x, negative_slope=1e-2):
    """x for x >= 0, negative_slope * x otherwise (jax.nn.leaky_relu)."""
    x = _array("leaky_relu", x)
    return ufuncs.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
    """x clipped to [-1, 1] (jax.nn.hard_tanh)."""
    x = _array("hard_tanh", x)
    return ufuncs.where(x > 1, 1, ufuncs.where(x < -1, -1, x))


@jit
def hard_sigmoid(x):
    """relu6(x + 3) / 6 (jax.nn.hard_sigmoid)."""
    return relu6(x + 3.) / 6.  # a list is Python's TypeError, as in JAX


@jit
def hard_silu(x):
    """x * hard_sigmoid(x), also called hard_swish (jax.nn.hard_silu)."""
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@jit(static_argnames=("axis",))
def glu(x, axis: int = -1):
    """Gated linear unit: the first half of `axis` times the sigmoid of the second half."""
    x = _array("glu", x)
    size = x.shape[axis]  # a bad axis is the tuple's IndexError, as in JAX
    if size % 2:
        raise AssertionError("axis size must be divisible by 2")
    x1, x2 = manipulation.split(x, 2, axis)
    return x1 * sigmoid(x2)


@jit(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x, axis, keepdims=True), shifted by the (non-differentiated) max for
    stability (jax.nn.log_softmax); JAX's formula, so a row with +inf or only -inf is NaN."""
    x = _array("log_softmax", x)
    x_max = reductions.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = ufuncs.log(reductions.sum(ufuncs.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return ufuncs.where(where, result, -np.inf)
    return result


def softmax(x, axis=-1, where=None):
    """exp(x) normalised along `axis` (jax.nn.softmax), with JAX's formula: a row with +inf
    or only -inf is NaN. The max subtracted is not differentiated, or, with the
    `jax_softmax_custom_jvp` option, the JVP is y * (x_dot - sum(y * x_dot, axis))."""
    if config._values["softmax_custom_jvp"]:
        return _softmax(x, axis, where)
    x_max = reductions.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, -np.inf)
    unnormalized = ufuncs.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / reductions.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else ufuncs.where(where, result, 0)


def _softmax_impl(x, axis=-1, where=None, initial=-np.inf):
    x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, initial)
    unnormalized = ufuncs.exp(x_safe - x_max)
    result = unnormalized / reductions.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = ufuncs.where(where, result, 0)
    return result


_softmax = custom_jvp(_softmax_impl, nondiff_argnums=(1,))


def _softmax_jvp(axis, primals, tangents):
    (x, where, initial), (x_dot, _, _) = primals, tangents
    y = _softmax(x, axis, where, initial)
    return y, y * (x_dot - (y * x_dot).sum(axis, where=where, keepdims=True))


_softmax.defjvp(_softmax_jvp)


@jit(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
    """(x - mean) / sqrt(variance + epsilon) along `axis`; the variance is E[x^2] - E[x]^2
    clipped at 0 ("fast") or E[(x - mean)^2] ("stable") (jax.nn.standardize)."""
    x = _array("standardize", x)
    if mean is None:
        mean = reductions.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = reductions.mean(ufuncs.square(ufuncs.subtract(x, mean)), axis, keepdims=True,
                                       where=where)
        elif algorithm == "fast":
            variance = reductions.mean(ufuncs.square(x), axis, keepdims=True, where=where) \
                - ufuncs.square(mean)
            variance = ufuncs.clip(variance, 0)  # rounding can make the one-pass form negative
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return ufuncs.subtract(x, mean) * lax.rsqrt(creation.asarray(variance + epsilon))


@jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) over `axis`: logsumexp minus the log of the number of (`where`-
    selected) elements (jax.nn.logmeanexp)."""
    x = _array("logsumexp", x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    # Without `where` the count is static; a 0-d `x` still goes through jnp.sum, whose axis
    # checks (its errors) are stricter than logsumexp's.
    if where is None and x.ndim:
        axes = canonicalize_axes(axis, x.ndim)
        count = np.asarray(math.prod(x.shape[a] for a in axes), lse.dtype)
    else:
        count = reductions.sum(creation.ones(x.shape, lse.dtype), axis=axis, where=where, keepdims=keepdims)
    return lse - ufuncs.log(count)


@custom_jvp
@jit
def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, by expm1 below log 2 and log1p above (jax.nn.log1mexp)."""
    x = _array("log1mexp", x)
    c = ufuncs.log(2.0)
    return ufuncs.where(x < c, ufuncs.log(-ufuncs.expm1(-x)), ufuncs.log1p(-ufuncs.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / ufuncs.expm1(x))


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """A one-hot encoding of integer `x` along a new axis of length `num_classes`; values
    outside [0, num_classes) give all-zero rows (jax.nn.one_hot)."""
    num_classes = _concrete_int(num_classes)
    x = creation.asarray(x)
    if not dtypes.numpy_issubdtype(x.dtype, np.integer):
        warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                      DeprecationWarning, stacklevel=2)
    dtype = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    axis = canonicalize_axis(axis, x.ndim + 1)
    shape = [1] * x.ndim
    shape.insert(axis, num_classes)
    _check_iota(x.dtype, shape)
    return _one_hot(x, num_classes, dtype=dtype, axis=axis)


@jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
    """x == iota along the new axis, as JAX's _one_hot (a jit of that name)."""
    lhs = lax_shape_ops.expand_dims(x, (axis,))
    shape = [1] * x.ndim
    shape.insert(axis, num_classes)
    return (lhs == lax_shape_ops.broadcasted_iota(x.dtype, tuple(shape), axis)).astype(dtype)


def _check_iota(dtype, shape):
    """The one-hot comparison runs against an iota of x's dtype: JAX's TypeErrors for a
    boolean x and a negative num_classes."""
    if dtype == np.bool_:
        raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    if any(d < 0 for d in shape):
        raise TypeError(f"iota shape must have every element be nonnegative, got "
                        f"{tuple(shape)}.")


def _concrete_int(n) -> int:
    """`n` as a Python int: a float is Python's TypeError and a traced value JAX's
    ConcretizationTypeError, as with jax.core.concrete_dim_or_error."""
    if isinstance(n, Tracer):
        raise ConcretizationTypeError(
            n, "The error arose in jax.nn.one_hot argument `num_classes`.")
    return operator.index(n)
