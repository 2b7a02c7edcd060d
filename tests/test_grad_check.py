"""Table-driven gradient checks: every differentiable primitive and every nn function is
checked by finite differences (forward and reverse mode, first and second order) at random
points away from kinks and domain edges."""
import importlib
import pkgutil

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.lax as lax
import gpuarr.nn as nn
import gpuarr.numpy as jnp
from gpuarr.interpreters import ad
from gpuarr.scipy import special
from gpuarr.sharding.data_parallel import sharding_constraint_p

# Import every lax module so that every primitive registered so far is in ad.jvp_rules.
for _pkg in (gpuarr.lax, gpuarr.numpy):
    for _m in pkgutil.iter_modules(_pkg.__path__):
        importlib.import_module(f"{_pkg.__name__}.{_m.name}")
for _m in ("gpuarr.callbacks", "gpuarr.debug", "gpuarr.random", "gpuarr.numpy.linalg"):
    try:
        importlib.import_module(_m)
    except ImportError:  # a module another part of the project has not added yet
        pass


def R(*shape, lo=-2.0, hi=2.0, seed=0):
    """Random float64 values in [lo, hi)."""
    return np.random.RandomState(seed + sum(shape)).uniform(lo, hi, shape)


def P(*shape, seed=0):
    """Positive values away from 0 (domains of log, sqrt, ...)."""
    return R(*shape, lo=0.5, hi=2.0, seed=seed)


def distinct(*shape, seed=0):
    """Values with well separated entries (no ties for max/min/sort)."""
    n = int(np.prod(shape))
    vals = np.random.RandomState(seed).permutation(n).astype(np.float64) * 0.7 - n * 0.3
    return vals.reshape(shape)


def spd(n, seed=0):
    a = R(n, n, seed=seed)
    return a @ a.T + n * np.eye(n)


_I = np.array([[0], [2], [2]], np.int32)
_GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
_SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
_UNIQ = np.array([[0], [2]], np.int32)

# primitive name -> (function, args, order). Each function exercises that primitive.
PRIMITIVE_CASES = {
    "neg": (lax.neg, [R(3)], 2),
    "exp": (lax.exp, [R(3)], 2),
    "exp2": (lax.exp2, [R(3)], 2),
    "log": (lax.log, [P(3)], 2),
    "log1p": (lax.log1p, [P(3)], 2),
    "expm1": (lax.expm1, [R(3)], 2),
    "tanh": (lax.tanh, [R(3)], 2),
    "logistic": (lax.logistic, [R(3)], 2),
    "sin": (lax.sin, [R(3)], 2),
    "cos": (lax.cos, [R(3)], 2),
    "tan": (lax.tan, [R(3, lo=-1, hi=1)], 2),
    "asin": (lax.asin, [R(3, lo=-0.8, hi=0.8)], 2),
    "acos": (lax.acos, [R(3, lo=-0.8, hi=0.8)], 2),
    "atan": (lax.atan, [R(3)], 2),
    "sinh": (lax.sinh, [R(3)], 2),
    "cosh": (lax.cosh, [R(3)], 2),
    "asinh": (lax.asinh, [R(3)], 2),
    "acosh": (lax.acosh, [R(3, lo=1.5, hi=3)], 2),
    "atanh": (lax.atanh, [R(3, lo=-0.8, hi=0.8)], 2),
    "sqrt": (lax.sqrt, [P(3)], 2),
    "rsqrt": (lax.rsqrt, [P(3)], 2),
    "cbrt": (lax.cbrt, [P(3)], 2),
    "square": (lax.square, [R(3)], 2),
    "abs": (lax.abs, [P(3) * np.array([1, -1, 1])], 2),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), [R(3)], 2),
    "add": (lax.add, [R(3), R(3, seed=1)], 2),
    "sub": (lax.sub, [R(3), R(3, seed=1)], 2),
    "mul": (lax.mul, [R(3), R(3, seed=1)], 2),
    "div": (lax.div, [R(3), P(3)], 2),
    "rem": (lax.rem, [R(3, lo=2.1, hi=2.9), R(3, lo=1.1, hi=1.4)], 2),
    "pow": (lax.pow, [P(3), R(3)], 2),
    "max": (lax.max, [distinct(4), distinct(4, seed=1)], 2),
    "min": (lax.min, [distinct(4), distinct(4, seed=1)], 2),
    "atan2": (lax.atan2, [R(3), P(3)], 2),
    "select_n": (lambda x, y: lax.select_n(np.array([True, False, True]), x, y),
                 [R(3), R(3, seed=1)], 2),
    # float64 -> float32: finite differences see float32 rounding, hence the tolerance.
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.float32), [R(3)], 2, 3e-3),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), [R(3)], 2),
    "reshape": (lambda x: lax.reshape(x, (3, 2)), [R(2, 3)], 2),
    "squeeze": (lambda x: lax.squeeze(x, (1,)), [R(2, 1, 3)], 2),
    "transpose": (lambda x: lax.transpose(x, (1, 0)), [R(2, 3)], 2),
    "rev": (lambda x: lax.rev(x, (0,)), [R(3)], 2),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (1,)), [R(2, 3)], 2),
    "reduce_max": (lambda x: lax.reduce_max(x, (1,)), [distinct(2, 3)], 2),
    "reduce_min": (lambda x: lax.reduce_min(x, (0,)), [distinct(2, 3)], 2),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), [R(2, 3)], 2),
    "slice": (lambda x: lax.slice(x, (1,), (5,), (2,)), [R(6)], 2),
    "pad": (lambda x, v: lax.pad(x, v, ((1, 2, 1),)), [R(3), R()], 2),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 0), [R(2), R(3)], 2),
    "split": (lambda x: lax.split(x, (1, 2), 1)[1] * 2 + lax.split(x, (2, 1), 1)[1],
              [R(2, 3)], 2),
    "stack": (lambda x, y: lax.stack([x, y * x], 1), [R(2, 3), R(2, 3)], 2),
    "copy": (lambda x: lax.copy_p.bind(x) * x, [R(2, 3)], 2),
    "unstack": (lambda x: lax.unstack(x, 1)[2] * lax.unstack(x, 0)[1], [R(3, 3)], 2),
    "dot_general": (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
                    [R(2, 3), R(3, 4)], 2),
    "dot_general_batched": (lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                            [R(2, 2, 3), R(2, 3, 4)], 2),
    "ragged_dot_general": (lambda x, y: lax.ragged_dot(x, y, np.array([2, 1], np.int32)),
                           [R(3, 2), R(2, 2, 3)], 2),
    "dot_general_vec_mat": (lambda x, y: lax.dot_general(x, y, (((0,), (1,)), ((), ()))),
                            [R(3), R(4, 3)], 2),
    "erf": (lax.erf, [R(3)], 2),
    "erfc": (lax.erfc, [R(3)], 2),
    "erf_inv": (lax.erf_inv, [R(3, lo=-0.7, hi=0.7)], 2),
    "erf_inv_giles": (gpuarr.random.xla_math.erf_inv_giles, [R(3, lo=-0.7, hi=0.7)], 2),
    "xla_log": (gpuarr.random.xla_math.xla_log, [P(3) + 0.5], 2),
    "xla_log1p": (gpuarr.random.xla_math.xla_log1p, [P(3)], 2),
    "xla_rsqrt": (gpuarr.random.xla_math.xla_rsqrt, [P(3) + 0.5], 2),
    "xla_fma": (gpuarr.random.xla_math.xla_fma, [R(3), R(3), R(3)], 2),
    "lgamma": (lax.lgamma, [P(3) + 1], 2),
    "digamma": (lax.digamma, [P(3) + 1], 1),
    "polygamma": (lambda x: lax.polygamma(np.float64(1), x), [P(3) + 1], 1),
    "clamp": (lambda x: lax.clamp(-1.0, x, 1.0), [R(3, lo=-0.9, hi=0.9)], 2),
    "gather": (lambda x: lax.gather(x, _I, _GDN, (1, 2)), [R(4, 2)], 2),
    "scatter_add": (lambda x, u: lax.scatter_add(x, _I, u, _SDN), [R(4, 2), R(3, 2)], 2),
    "scatter_sub": (lambda x, u: lax.scatter_sub(x, _I, u, _SDN), [R(4, 2), R(3, 2)], 2),
    "scatter_mul": (lambda x, u: lax.scatter_mul(x, _UNIQ, u, _SDN, unique_indices=True),
                    [R(4, 2), R(2, 2)], 1),
    "scatter": (lambda x, u: lax.scatter(x, _UNIQ, u, _SDN, unique_indices=True),
                [R(4, 2), R(2, 2)], 2),
    "scatter_min": (lambda x, u: lax.scatter_min(x, _UNIQ, u, _SDN),
                    [distinct(4, 2), distinct(2, 2, seed=3)], 1),
    "scatter_max": (lambda x, u: lax.scatter_max(x, _UNIQ, u, _SDN),
                    [distinct(4, 2), distinct(2, 2, seed=3)], 1),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(0)), (2, 2)),
                      [R(4, 3)], 2),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(
        x, u, (np.int32(1), np.int32(1))), [R(4, 3), R(2, 2)], 2),
    "sort": (lambda x: lax.sort(x), [distinct(5)], 2),
    "top_k": (lambda x: lax.top_k(x, 2)[0], [distinct(5)], 2),
    "approx_top_k": (lambda x: lax.approx_max_k(x, 2)[0], [distinct(5)], 2),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 11, 52), [R(4)], 2),
    "cumsum": (lambda x: lax.cumsum(x, 0), [R(4)], 2),
    "cumprod": (lambda x: lax.cumprod(x, 0), [R(4)], 2),
    "cummax": (lambda x: lax.cummax(x, 0), [distinct(5)], 2),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 0), [R(5)], 2),
    "cummin": (lambda x: lax.cummin(x, 0, reverse=True), [distinct(5)], 2),
}

# Primitives implemented in gpuarr.lax.linalg (checked when that module is present).
try:
    from gpuarr.lax import linalg as _linalg

    def _sym(f):
        return lambda a: f((a + a.T) / 2 + 3 * jnp.eye(a.shape[0], dtype=a.dtype))

    PRIMITIVE_CASES.update({
        "cholesky": (_sym(_linalg.cholesky), [R(3, 3)], 1),
        "triangular_solve": (lambda a, b: _linalg.triangular_solve(
            a, b, left_side=True, lower=True), [np.tril(R(3, 3)) + 3 * np.eye(3), R(3, 2)], 1),
        "qr": (lambda a: _linalg.qr(a, full_matrices=False)[1], [R(4, 3)], 1),
        "eigh": (lambda a: _sym(lambda s: _linalg.eigh(s)[1])(a), [R(3, 3)], 1),
        "svd": (lambda a: _linalg.svd(a, compute_uv=False), [R(3, 2)], 1),
        "lu": (lambda a: _linalg.lu(a)[0], [R(3, 3) + 3 * np.eye(3)], 1),
        "eig": (lambda a: jnp.real(jnp.exp(_linalg.eig(a, compute_left_eigenvectors=False,
                compute_right_eigenvectors=False)[0])).sum(), [R(3, 3)], 1),
        "tridiagonal_solve": (_linalg.tridiagonal_solve,
                              [R(4), R(4, lo=3.0, hi=5.0), R(4), R(4, 2)], 2),
    })
except ImportError:  # linalg not built yet
    pass

# Convolutions and windowed reductions (gpuarr.lax.windowed).
try:
    from gpuarr.lax import windowed as _win

    PRIMITIVE_CASES.update({
        "conv_general_dilated": (lambda x, k: _win.conv_general_dilated(
            x, k, (1, 1), "SAME", rhs_dilation=(1, 2)), [R(1, 2, 5, 4), R(3, 2, 2, 2)], 2),
        "conv_general_dilated_strided": (lambda x, k: _win.conv_general_dilated(
            x, k, (2, 1), ((1, 0), (0, 1)), lhs_dilation=(1, 2)), [R(2, 1, 4, 3), R(2, 1, 2, 2)], 1),
        "reduce_window_sum": (lambda x: _win.reduce_window(x, 0., lax.add, (2, 2), (1, 2),
                                                           "VALID"), [R(3, 4)], 2),
        "reduce_window_max": (lambda x: _win.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                           "SAME"), [distinct(3, 4)], 2),
        "reduce_window_min": (lambda x: _win.reduce_window(x, np.inf, lax.min, (2,), (2,),
                                                           "VALID"), [distinct(6)], 2),
    })
except ImportError:  # not built yet
    pass


def _fft_kinds(x):
    """A real function of a real array through every fft kind (rfft, fft, ifft, irfft)."""
    z = lax.fft(x, "rfft", (2, 4))
    z = lax.fft(z * lax.fft(z, "fft", (3,)), "ifft", (2, 3))
    return lax.fft(z, "irfft", (2, 4))


PRIMITIVE_CASES["fft"] = (_fft_kinds, [R(2, 4)], 2)


def _constrained(x):
    """sin(x) * x through with_sharding_constraint's primitive, bound directly: on one device
    the public function leaves it out (tests/test_scale_out.py checks it on several)."""
    mesh = gpuarr.make_mesh((1,), ("i",), axis_types=(gpuarr.sharding.AxisType.Auto,))
    sharding = gpuarr.sharding.NamedSharding(mesh, gpuarr.sharding.PartitionSpec("i"))
    return sharding_constraint_p.bind(jnp.sin(x), sharding=sharding, retype=False) * x


PRIMITIVE_CASES["sharding_constraint"] = (_constrained, [R(3)], 2)

# Special functions and complex numbers (gpuarr.lax.special_extra, gpuarr.lax.extras).
PRIMITIVE_CASES.update({
    "bessel_i0e": (lax.bessel_i0e, [R(3)], 2),
    "bessel_i1e": (lax.bessel_i1e, [R(3)], 2),
    # d/da is igamma_grad_a, not differentiable in a (as in JAX), so first order only.
    "igamma": (lax.igamma, [P(3) + 1, P(3)], 1),
    "igammac": (lax.igammac, [P(3) + 1, P(3)], 1),
    "igamma_grad_a": (lambda x: lax.igamma_grad_a(2.5, x), [P(3)], 2),
    # Differentiable in q only, as in JAX (which differentiates neither).
    "zeta": (lambda q: lax.zeta(3.0, q), [P(3) + 0.5], 2),
    # Differentiable in x only, as in JAX.
    "regularized_incomplete_beta": (lambda x: lax.betainc(2.0, 3.0, x), [R(3, lo=0.2, hi=0.8)], 2),
    "complex": (lambda x, y: lax.real(lax.complex(x, y) * lax.complex(y, x)), [R(3), R(3)], 2),
    "conj": (lambda x, y: lax.imag(lax.conj(lax.complex(x, y)) * lax.conj(y)), [R(3), R(3)], 2),
    "real": (lambda x, y: lax.real(lax.complex(x, y) * lax.complex(x, y)), [R(3), R(3)], 2),
    "imag": (lambda x, y: lax.imag(lax.complex(x, y) * lax.complex(y, y)), [R(3), R(3)], 2),
    "optimization_barrier": (lambda x: lax.optimization_barrier(jnp.sin(x)) * x, [R(3)], 2),
})

# Primitives with a JVP rule of their own that this table does not need to cover:
# - defined with ad.defjvp_zero (piecewise constant: comparisons, rounding, integer and bit
#   ops, argmax/argmin, stop_gradient); `test_zero_jvp_primitives` checks they give zeros.
ZERO_JVP = {
    "and", "argmax", "argmin", "bitcast_convert_type", "ceil", "clz", "eq", "floor", "ge", "gt",
    "is_finite", "le", "lt", "ne", "nextafter", "not", "or", "population_count", "reduce_and",
    "reduce_or", "reduce_xor", "round", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign",
    "stop_gradient", "xor", "threefry2x32", "lu_pivots_to_permutation", "mulhi",
    "platform_index", "rng_bit_generator", "dce_sink",
}
# - higher-order primitives whose rules transform a sub-program; they are checked with
#   functions built on them below (COMPOSITE_CASES) and in tests/test_ad_api.py.
HIGHER_ORDER = {"jit", "cond", "while", "scan", "custom_jvp_call", "custom_vjp_call",
                "remat2", "custom_linear_solve", "custom_vmap_call"}
# - internal to differentiation: add_any sums cotangents, custom_lin is custom_vjp's linear
#   part (forward mode through it raises TypeError, as in JAX).
INTERNAL = {"add_any", "custom_lin"}
# - not differentiable (their JVP rules raise, as in JAX): scatter_apply, householder_product,
#   hessenberg, schur, geqrf, geqp3, ormqr, rng_uniform, composite, tridiagonal,
#   symmetric_product, cholesky_update, and host callbacks
#   (pure_callback and io_callback need custom_jvp/custom_vjp); debug_callback has no outputs.
NOT_DIFFERENTIABLE = {"scatter_apply", "pure_callback", "io_callback", "debug_callback",
                      "composite", "householder_product", "hessenberg", "schur", "geqrf",
                      "geqp3", "ormqr", "rng_uniform", "tridiagonal", "symmetric_product",
                      "cholesky_update"}
# - collectives need a vmap-named axis: tests/lax/test_parallel.py and
#   tests/lax/test_parallel_jax_parity.py check their gradients; tests/test_scale_out.py
#   checks gradients inside and outside a shard_map over several devices against JAX.
COLLECTIVES = {"psum", "pmax", "pmin", "axis_index", "all_gather", "reduce_scatter",
               "all_to_all", "ppermute", "pbroadcast", "shard_map", "pvary"}
# - checkify's assertion has no result to differentiate; tests/experimental/test_checkify.py
#   checks grad through functions holding checks.
ASSERTIONS = {"check"}


def test_every_differentiable_primitive_is_in_the_table():
    # gpuarr's own primitives: tests register user primitives (jax.extend) in the same table
    names = {p.name for p in ad.jvp_rules if type(p).__module__ != "gpuarr.extend.core"}
    covered = {n.removesuffix("_batched").removesuffix("_vec_mat").removesuffix("_strided")
               for n in PRIMITIVE_CASES}
    missing = sorted(names - covered - ZERO_JVP - HIGHER_ORDER - INTERNAL
                     - NOT_DIFFERENTIABLE - COLLECTIVES - ASSERTIONS)
    assert not missing, f"add gradient-check entries for: {missing}"
    mislabelled = sorted(n for p in ad.jvp_rules for n in [p.name]
                         if n in ZERO_JVP and not getattr(ad.jvp_rules[p], "zero_jvp", False))
    assert not mislabelled, f"these are not defjvp_zero primitives: {mislabelled}"


@pytest.mark.parametrize("name", sorted(PRIMITIVE_CASES))
def test_primitive_grads(name):
    fun, args, order, *tol = PRIMITIVE_CASES[name]
    tol = tol[0] if tol else 1e-4
    check_grads_x64(fun, args, order, modes=("fwd", "rev"), atol=tol, rtol=tol)


_seq_sin_mul = gpuarr.custom_batching.sequential_vmap(lambda x: jnp.sin(x) * x)

COMPOSITE_CASES = {
    "jit": (gpuarr.jit(lambda x: jnp.sin(x) * x), [R(3)], 2),
    "cond": (lambda x: lax.cond(True, jnp.sin, jnp.cos, x), [R(3)], 2),
    "scan": (lambda x: lax.scan(lambda c, xi: (c * xi + 1.0, jnp.sin(c)), 1.0, x)[1], [R(4)], 2),
    "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, x), [R(3)], 2),
    "custom_jvp_call": (lambda x: nn.relu(x) * x, [P(3) * np.array([1, -1, 1])], 2),
    "remat2": (gpuarr.checkpoint(lambda x: jnp.sin(jnp.sin(x))), [R(3)], 2),
    # Plain and under vmap, where the rule (a loop over the examples) is differentiated.
    "custom_vmap_call": (lambda x: gpuarr.vmap(_seq_sin_mul)(x) + _seq_sin_mul(x), [R(3)], 2),
    "custom_linear_solve": (lambda x: lax.custom_linear_solve(
        lambda v: v * (x * x + 1.0), jnp.sin(x), lambda mv, b: b / mv(jnp.ones_like(b)),
        symmetric=True), [R(3)], 2),
}


@pytest.mark.parametrize("name", sorted(COMPOSITE_CASES))
def test_higher_order_primitive_grads(name):
    fun, args, order = COMPOSITE_CASES[name]
    check_grads_x64(fun, args, order, atol=1e-4, rtol=1e-4)


def test_custom_vjp_grads_rev_only():
    @gpuarr.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (g * c,))
    check_grads_x64(f, [R(3)], 1, modes=("rev",))


ZERO_CASES = [
    (lambda x: lax.floor(x), R(3)),
    (lambda x: lax.ceil(x), R(3)),
    (lambda x: lax.round(x), R(3)),
    (lambda x: lax.sign(x), R(3)),
    (lambda x: lax.stop_gradient(x), R(3)),
    (lambda x: lax.convert_element_type(lax.gt(x, 0.0), np.float32), R(3)),
    (lambda x: lax.convert_element_type(lax.argmax(x, 0, np.int32), np.float32), R(3)),
    (lambda x: lax.convert_element_type(x, np.int32).astype(np.float32), R(3) * 3),
]


@pytest.mark.parametrize("i", range(len(ZERO_CASES)))
def test_zero_jvp_primitives(i):
    fun, x = ZERO_CASES[i]
    x = np.asarray(x, np.float32)
    g = gpuarr.grad(lambda v: fun(v).sum())(x)
    assert g.dtype == np.float32 and g.shape == x.shape
    np.testing.assert_array_equal(np.asarray(g), np.zeros_like(x))
    _, t = gpuarr.jvp(fun, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(np.asarray(t), 0)


# ---------------------------------------------------------------- nn and scipy.special

NN_CASES = {
    "sigmoid": (nn.sigmoid, [R(4)]),
    "log_sigmoid": (nn.log_sigmoid, [R(4)]),
    "softmax": (nn.softmax, [R(2, 3)]),
    "log_softmax": (nn.log_softmax, [R(2, 3)]),
    "logsumexp": (lambda x: nn.logsumexp(x, axis=1), [R(2, 3)]),
    "relu": (nn.relu, [P(4) * np.array([1, -1, 1, -1])]),
    "relu6": (nn.relu6, [np.array([-1.0, 0.5, 3.0, 7.0])]),
    "elu": (nn.elu, [P(4) * np.array([1, -1, 1, -1])]),
    "celu": (lambda x: nn.celu(x, 1.5), [P(4) * np.array([1, -1, 1, -1])]),
    "selu": (nn.selu, [P(4) * np.array([1, -1, 1, -1])]),
    "gelu": (nn.gelu, [R(4)]),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), [R(4)]),
    "silu": (nn.silu, [R(4)]),
    "softplus": (nn.softplus, [R(4)]),
    "soft_sign": (nn.soft_sign, [P(4) * np.array([1, -1, 1, -1])]),
    "squareplus": (nn.squareplus, [R(4)]),
    "leaky_relu": (nn.leaky_relu, [P(4) * np.array([1, -1, 1, -1])]),
    "hard_tanh": (nn.hard_tanh, [np.array([-1.5, -0.5, 0.3, 1.7])]),
    "hard_sigmoid": (nn.hard_sigmoid, [np.array([-4.0, -1.0, 2.0, 4.0])]),
    "hard_silu": (nn.hard_silu, [np.array([-4.0, -1.0, 2.0, 4.0])]),
    "glu": (nn.glu, [R(2, 4)]),
    "standardize": (nn.standardize, [R(2, 4)]),
    "identity": (nn.identity, [R(4)]),
    "tanh": (nn.tanh, [R(4)]),
    "mish": (nn.mish, [R(4)]),
    "sparse_plus": (nn.sparse_plus, [np.array([-1.5, -0.5, 0.3, 1.7])]),
    "sparse_sigmoid": (nn.sparse_sigmoid, [np.array([-1.5, -0.5, 0.3, 1.7])]),
    "log1mexp": (nn.log1mexp, [np.array([0.3, 0.6, 0.8, 2.0])]),
    "logmeanexp": (lambda x: nn.logmeanexp(x, axis=1), [R(2, 3)]),
    "special.logsumexp_b": (lambda x, b: special.logsumexp(x, b=b), [R(3), P(3)]),
    "special.erf": (special.erf, [R(3)]),
    "special.expit": (special.expit, [R(3)]),
    "special.logit": (special.logit, [R(3, lo=0.2, hi=0.8)]),
}


@pytest.mark.parametrize("name", sorted(NN_CASES))
def test_nn_grads(name):
    fun, args = NN_CASES[name]
    check_grads_x64(fun, args, 2, atol=1e-4, rtol=1e-4)


def test_every_nn_function_is_checked():
    checked = {n.split("_exact")[0] for n in NN_CASES}
    skip = {"one_hot", "swish", "hard_swish"}  # one_hot is integer-valued; the rest are aliases
    assert not set(nn.functions.__all__) - checked - skip


@pytest.mark.parametrize("name", sorted(PRIMITIVE_CASES))
def test_vmap_of_grad_matches_loop(name):
    """The JVP and transpose rules also batch: vmap(grad) equals a Python loop of grads."""
    fun, args, *_ = PRIMITIVE_CASES[name]
    args = [np.asarray(a, np.float32) for a in args]
    batch = [np.stack([a, a * np.float32(0.9)]) for a in args]

    def total(*xs):
        return jnp.sum(fun(*xs))

    g = gpuarr.grad(total, argnums=tuple(range(len(args))))
    out = gpuarr.vmap(g)(*batch)
    for i in range(2):
        want = g(*[b[i] for b in batch])
        for o, w in zip(out, want):
            np.testing.assert_allclose(np.asarray(o)[i], np.asarray(w), rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------- check_grads itself, as JAX's

def _chex_hard(np_, lax_, grad):
    """chex's NumericalGradsAssertTest.test_hard function: ten steep steps of an inner loop."""
    def f(lr, x):
        inner_loss = lambda y: np_.sum((y - 1.0) ** 2)  # noqa: E731
        inner_grad = grad(inner_loss)
        for _ in range(10):
            x1 = x - lr * inner_grad(x) + 100 * lr ** 2
            x2 = x - lr * inner_grad(x) - 100 * lr ** 2
            x = lax_.select((x > 3.0).any(), x1, x2 + lr)
        return np_.sum(inner_loss(x))
    return f


def _outcome(check, f, args, **kwargs):
    try:
        check(f, args, order=1, **kwargs)
    except AssertionError as e:
        return "fails", str(e).splitlines()[1:3]
    return "passes", None


@pytest.mark.parametrize("size", [1, 5, 15])
def test_check_grads_computes_in_the_arguments_dtype_as_jax(size):
    # float32 arguments are differentiated and differenced in float32 with float32's
    # tolerance (2e-3 times the number of elements compared), as JAX's check_grads does.
    jax = pytest.importorskip("jax")
    from jax import test_util as jtu

    from gpuarr.test_util import check_grads
    lr = np.float32(0.2)
    x = np.linspace(-1, 2, size, dtype=np.float32)
    seen = []

    def record(f):
        def wrapped(*args):
            seen.append(args[1].dtype)
            return f(*args)
        return wrapped

    ours = _outcome(check_grads, record(_chex_hard(jnp, lax, gpuarr.grad)), (lr, x), atol=0.01 * size)
    assert set(map(np.dtype, seen)) == {np.dtype(np.float32)}
    theirs = _outcome(jtu.check_grads, _chex_hard(jax.numpy, jax.lax, jax.grad), (lr, x),
                      atol=0.01 * size)
    assert ours[0] == theirs[0] == "passes"


def test_check_grads_tolerance_follows_the_dtype_as_jax():
    # A derivative 0.1% off passes float32's tolerance (2e-3) and fails float64's (1e-5), in
    # gpuarr as in JAX.
    jax = pytest.importorskip("jax")
    from jax import test_util as jtu

    from gpuarr.config import enable_x64
    from gpuarr.test_util import check_grads

    def off_by_a_little(custom_jvp, np_):
        @custom_jvp
        def f(x):
            return np_.sin(x)
        f.defjvp(lambda p, t: (np_.sin(p[0]), np_.cos(p[0]) * t[0] * 1.001))
        return f

    ours = off_by_a_little(gpuarr.custom_jvp, jnp)
    theirs = off_by_a_little(jax.custom_jvp, jax.numpy)
    x32 = np.array([0.3], np.float32)
    assert _outcome(check_grads, ours, (x32,), modes=("fwd",))[0] == "passes"
    assert _outcome(jtu.check_grads, theirs, (x32,), modes=("fwd",))[0] == "passes"
    with enable_x64(), jax.enable_x64(True):
        x64 = x32.astype(np.float64)
        assert _outcome(check_grads, ours, (x64,), modes=("fwd",))[0] == "fails"
        assert _outcome(jtu.check_grads, theirs, (x64,), modes=("fwd",))[0] == "fails"
