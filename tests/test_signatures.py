"""Public signatures as JAX 0.10.2's (parameter names, order, kinds and defaults), so that code
written for JAX runs unchanged, and the behaviour of the parameters that carry meaning
(accuracy, out_dtype, dimension_numbers, allow_negative_indices, static_argnames, sum_match,
promote_integers, weights, ...) compared with JAX. Sharding arguments are accepted as None
only: gpuarr runs each computation on one device."""
import importlib
import inspect
import warnings

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from helpers import close

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax, random
from gpuarr.lax.arguments import _MAX_ULPS, AccuracyMode, Tolerance
from gpuarr.nn import initializers

jlax = jax.lax

# ---------------------------------------------------------------- signatures

_FIXED = {
    "": ["checkpoint", "remat", "vmap"],
    "random": ["ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
               "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
               "gumbel", "key_dtype", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
               "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
               "rademacher", "randint", "rayleigh", "t", "triangular", "truncated_normal",
               "uniform", "wald"],
    "nn.initializers": ["zeros", "ones", "constant", "normal", "orthogonal", "variance_scaling"],
    "lax": ["broadcast", "broadcast_in_dim", "broadcasted_iota", "cbrt", "clz", "conv_general_dilated",
            "cos", "digamma", "dot", "dot_general", "dynamic_index_in_dim", "dynamic_slice_in_dim",
            "dynamic_update_index_in_dim", "dynamic_update_slice_in_dim", "erf", "erf_inv", "erfc",
            "exp", "exp2", "expm1", "full", "full_like", "lgamma", "log", "log1p", "logistic",
            "mul", "nextafter", "population_count", "reduce_sum", "reshape", "rsqrt", "sin", "sqrt",
            "tan", "tanh", "reduce_window", "cond", "switch", "dynamic_slice", "empty", "reduce",
            "unstack", "conv_transpose"],
    "lax.linalg": ["eigh"],
    "scipy.special": ["softmax", "log_softmax"],
    "dtypes": ["issubdtype"],
    "numpy": ["issubdtype", "add", "negative", "maximum", "logical_and", "all", "any", "amax", "amin", "max",
              "min", "sum", "prod", "arange", "array", "asarray", "zeros", "ones", "empty", "full",
              "zeros_like", "ones_like", "empty_like", "full_like", "linspace", "eye", "arctan2",
              "atan2", "bitwise_right_shift", "copysign", "divide", "floor_divide", "fmax", "fmin",
              "fmod", "gcd", "heaviside", "hypot", "lcm", "mod", "remainder", "right_shift",
              "true_divide", "isneginf", "isposinf", "argsort", "bincount", "broadcast_to",
              "corrcoef", "cov", "dot", "matmul", "tensordot", "einsum", "einsum_path", "ravel",
              "repeat", "reshape", "take_along_axis", "trim_zeros", "savez", "std", "var",
              "nanstd", "nanvar", "quantile", "nanquantile", "percentile", "nanpercentile",
              "argmax", "argmin", "i0", "iscomplex", "isreal", "trunc"],
    "numpy.linalg": ["matmul", "matrix_rank", "tensordot"],
}


def _same_default(a, b):
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    if callable(a) or type(a).__name__ in ("object", "DeprecatedArg"):
        return type(b) is type(a) or callable(b) or repr(a) == repr(b)  # sentinels, functions
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("module,name", [(m, n) for m, names in _FIXED.items() for n in names])
def test_signature_matches_jax(module, name):
    suffix = "." + module if module else ""
    ref = getattr(importlib.import_module("jax" + suffix), name)
    ours = getattr(importlib.import_module("gpuarr" + suffix), name)
    ref_params = list(inspect.signature(ref).parameters.values())
    our_params = list(inspect.signature(ours).parameters.values())
    assert [p.name for p in our_params] == [p.name for p in ref_params]
    assert [p.kind for p in our_params] == [p.kind for p in ref_params]
    for r, o in zip(ref_params, our_params):
        assert _same_default(r.default, o.default), (r.name, r.default, o.default)


# ---------------------------------------------------------------- sharding arguments


class _Sharding:
    """Any sharding specification: gpuarr cannot honour one."""


_KEY = random.key(0)
_X = jnp.arange(6.0).reshape(2, 3)

_SHARDED_CALLS = {
    "random.normal": lambda s: random.normal(_KEY, (2,), out_sharding=s),
    "random.uniform": lambda s: random.uniform(_KEY, (2,), out_sharding=s),
    "random.randint": lambda s: random.randint(_KEY, (2,), 0, 5, out_sharding=s),
    "random.gamma": lambda s: random.gamma(_KEY, 2.0, (2,), out_sharding=s),
    "random.bits": lambda s: random.bits(_KEY, (2,), out_sharding=s),
    "random.exponential": lambda s: random.exponential(_KEY, (2,), out_sharding=s),
    "lax.broadcast": lambda s: lax.broadcast(_X, (2,), out_sharding=s),
    "lax.broadcast_in_dim": lambda s: lax.broadcast_in_dim(_X, (4, 2, 3), (1, 2), out_sharding=s),
    "lax.broadcasted_iota": lambda s: lax.broadcasted_iota(np.int32, (2, 3), 1, out_sharding=s),
    "lax.full": lambda s: lax.full((2,), 1.0, sharding=s),
    "lax.full_like": lambda s: lax.full_like(_X, 1.0, None, None, s),
    "lax.reshape": lambda s: lax.reshape(_X, (3, 2), out_sharding=s),
    "lax.reduce_sum": lambda s: lax.reduce_sum(_X, (0,), out_sharding=s),
    "lax.dot": lambda s: lax.dot(_X, _X.T, out_sharding=s),
    "lax.dot_general": lambda s: lax.dot_general(_X, _X, (((1,), (1,)), ((), ())), out_sharding=s),
    "lax.empty": lambda s: lax.empty((2,), np.float32, out_sharding=s),
    "lax.reduce": lambda s: lax.reduce(_X, 0.0, lax.add, (0,), s),
    "lax.conv_general_dilated": lambda s: lax.conv_general_dilated(
        jnp.ones((1, 1, 4)), jnp.ones((1, 1, 2)), (1,), "VALID", out_sharding=s),
    "numpy.zeros": lambda s: jnp.zeros(3, out_sharding=s),
    "numpy.array": lambda s: jnp.array([1, 2], out_sharding=s),
    "numpy.einsum": lambda s: jnp.einsum("ij,kj->ik", _X, _X, out_sharding=s),
    "numpy.reshape": lambda s: jnp.reshape(_X, (6,), out_sharding=s),
    "numpy.percentile": lambda s: jnp.percentile(_X, 50, out_sharding=s),
    "nn.initializers.zeros": lambda s: initializers.zeros(_KEY, (2,), out_sharding=s),
    "nn.initializers.normal": lambda s: initializers.normal()(_KEY, (2,), None, s),
}


@pytest.mark.parametrize("name", sorted(_SHARDED_CALLS))
def test_sharding_arguments_accept_none_only(name):
    call = _SHARDED_CALLS[name]
    assert call(None) is not None
    with pytest.raises(NotImplementedError, match="gpuarr does not shard arrays.*=None"):
        call(_Sharding())


def test_sharded_results_equal_the_unsharded_ones():
    np.testing.assert_array_equal(random.normal(_KEY, (3,), out_sharding=None),
                                  random.normal(_KEY, (3,)))
    np.testing.assert_array_equal(random.normal(_KEY, (3,), out_sharding=None),
                                  jax.random.normal(jax.random.key(0), (3,), out_sharding=None))


# ---------------------------------------------------------------- accuracy

_ACCURACY_OPS = ["exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan",
                 "sqrt", "rsqrt", "cbrt"]


def _float64_reference(name, x):
    x = x.astype(np.float64)
    return {"exp2": np.exp2, "logistic": lambda v: 1 / (1 + np.exp(-v)),
            "rsqrt": lambda v: 1 / np.sqrt(v)}.get(name, getattr(np, name, None))(x)


@pytest.mark.parametrize("name", _ACCURACY_OPS)
def test_accuracy_bound_holds_and_is_accepted(name):
    # The bound the Tolerance check relies on: float32 results within _MAX_ULPS ulps.
    x = np.linspace(0.05, 8.0, 2001, dtype=np.float32)
    if name in ("sin", "cos", "tan", "tanh", "expm1", "cbrt", "logistic"):
        x = np.concatenate([x, -x])
    got = np.asarray(getattr(lax, name)(x), np.float64)
    want = _float64_reference(name, x)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 4  # NumPy's loops (kernels may reach _MAX_ULPS)
    fn = getattr(lax, name)
    for accuracy in (AccuracyMode.HIGHEST, AccuracyMode.DEFAULT, Tolerance(ulps=_MAX_ULPS),
                     Tolerance(rtol=1e-5), Tolerance(atol=1e-3, rtol=1e-4)):
        np.testing.assert_array_equal(fn(x, accuracy=accuracy), fn(x))
        # jit against jit: the same kernel on kernel platforms, where an eager kernel is built
        # differently (the stand-in's PoCL rounds them up to an ulp apart)
        np.testing.assert_array_equal(gpuarr.jit(lambda v: fn(v, accuracy=accuracy))(x),
                                      gpuarr.jit(fn)(x))
    ref = getattr(jlax, name)(x, accuracy=jlax.Tolerance(rtol=1e-5))
    np.testing.assert_allclose(fn(x, accuracy=Tolerance(rtol=1e-5)), ref, rtol=2e-6, atol=1e-7)


def test_accuracy_tighter_than_the_implementation_raises():
    x = np.linspace(0.1, 2.0, 5, dtype=np.float32)
    with pytest.raises(NotImplementedError, match=f"within {_MAX_ULPS} ulps"):
        lax.exp(x, accuracy=Tolerance(ulps=1))
    with pytest.raises(NotImplementedError, match="does not meet"):
        lax.log(x, accuracy=Tolerance(rtol=1e-9))
    # atol alone bounds the error of ops whose results lie in [-1, 1] only.
    lax.sin(x, accuracy=Tolerance(atol=1e-5))
    with pytest.raises(NotImplementedError):
        lax.exp(x, accuracy=Tolerance(atol=1e-5))
    # float16 has a coarser ulp: the same relative tolerance is too tight for it.
    lax.exp(x, accuracy=Tolerance(rtol=1e-5))
    with pytest.raises(NotImplementedError):
        lax.exp(x.astype(np.float16), accuracy=Tolerance(rtol=1e-5))
    with pytest.raises(NotImplementedError, match=f"within {_MAX_ULPS} ulps"):
        gpuarr.jit(lambda v: lax.tanh(v, accuracy=Tolerance(ulps=2)))(x)


def test_accuracy_argument_errors_match_jax():
    x = np.ones(2, np.float32)
    for bad in (3, "high"):
        with pytest.raises(NotImplementedError) as ref:
            jlax.exp(x, accuracy=bad)
        with pytest.raises(NotImplementedError) as ours:
            lax.exp(x, accuracy=bad)
        assert str(ours.value) == str(ref.value)
    for kwargs in (dict(atol=-1.0), dict()):
        with pytest.raises(ValueError) as ref:
            jlax.Tolerance(**kwargs)
        with pytest.raises(ValueError) as ours:
            Tolerance(**kwargs)
        assert str(ours.value) == str(ref.value)


def test_accuracy_under_grad_and_vmap():
    acc = Tolerance(rtol=1e-5)
    g = gpuarr.grad(lambda v: lax.sin(v, accuracy=acc))(1.0)
    np.testing.assert_allclose(g, jax.grad(lambda v: jlax.sin(v, accuracy=jlax.Tolerance(rtol=1e-5)))(1.0),
                               rtol=1e-6)
    x = np.linspace(0.1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(gpuarr.vmap(lambda v: lax.log(v, accuracy=acc))(x), np.log(x),
                               rtol=1e-6)


# ---------------------------------------------------------------- lax parameters


def _check(ours, ref):
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    assert getattr(ours, "weak_type", False) == getattr(ref, "weak_type", False)
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(ref, np.float64),
                               rtol=1e-6)


@pytest.mark.parametrize("x,y,dt", [
    (np.array([1, 2, 100], np.int8), np.array([100, 100, 2], np.int8), np.int32),
    (np.array([1.5, 2.5], np.float16), np.array([3.0, 4.0], np.float32), np.float32),
    (np.array([2.5, -1.5], np.float32), np.array([3, 2], np.int32), np.int32),
    (2, 3.5, np.float32),
    (np.float32(2.0), 3, np.float32),
])
def test_mul_out_dtype_converts_the_operands(x, y, dt):
    _check(lax.mul(x, y, out_dtype=dt), jlax.mul(x, y, out_dtype=dt))
    _check(gpuarr.jit(lambda a, b: lax.mul(a, b, out_dtype=dt))(x, y),
           jax.jit(lambda a, b: jlax.mul(a, b, out_dtype=dt))(x, y))


def test_mul_out_dtype_differentiates_and_batches():
    f = lambda a: lax.mul(a, np.float32(3.0), out_dtype=np.float32)  # noqa: E731
    jf = lambda a: jlax.mul(a, np.float32(3.0), out_dtype=np.float32)  # noqa: E731
    _check(gpuarr.grad(f)(np.float16(2.0)), jax.grad(jf)(np.float16(2.0)))
    a, b = np.ones(3, np.float16), np.arange(3, dtype=np.float32)
    _check(gpuarr.vmap(lambda u, v: lax.mul(u, v, out_dtype=np.float32))(a, b),
           jax.vmap(lambda u, v: jlax.mul(u, v, out_dtype=np.float32))(a, b))
    with pytest.raises(TypeError):  # without out_dtype the operands must agree, as in JAX
        lax.mul(a, b)


def test_dot_dimension_numbers():
    rng = np.random.RandomState(0)
    a, b = rng.randn(4, 2, 3).astype(np.float32), rng.randn(4, 3, 5).astype(np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    _check(lax.dot(a, b, dimension_numbers=dn), jlax.dot(a, b, dimension_numbers=dn))
    # Plain ints are one-axis lists, as in JAX.
    dn_ints = ((2, 1), (0, 0))
    _check(lax.dot(a, b, dimension_numbers=dn_ints), jlax.dot(a, b, dimension_numbers=dn_ints))
    m = rng.randn(3, 4).astype(np.float32)
    _check(lax.dot(m, m.T, preferred_element_type=np.float32), jlax.dot(m, m.T))
    _check(gpuarr.jit(lambda u, v: lax.dot(u, v, dimension_numbers=dn))(a, b),
           jlax.dot(a, b, dimension_numbers=dn))
    with pytest.raises(ValueError, match="dimension_numbers must be specified"):
        lax.dot(a, b)
    with pytest.raises(ValueError, match="dimension_numbers must be specified"):
        jlax.dot(a, b)
    with pytest.raises(TypeError):  # precision is keyword-only, as in JAX
        lax.dot(m, m.T, None)


def test_nextafter_takes_jax_parameter_names():
    x1, x2 = np.float32([1.0, 2.0]), np.float32([2.0, 0.0])
    _check(lax.nextafter(x1=x1, x2=x2), jlax.nextafter(x1=x1, x2=x2))


@pytest.mark.parametrize("allow", [True, False])
def test_allow_negative_indices(allow):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    cases = [
        (lambda L, i: L.dynamic_slice_in_dim(x, i, 2, axis=1, allow_negative_indices=allow)),
        (lambda L, i: L.dynamic_index_in_dim(x, i, 0, False, allow_negative_indices=allow)),
        (lambda L, i: L.dynamic_update_slice_in_dim(x, np.full((4, 2), -1, np.int32), i, 1,
                                                    allow_negative_indices=allow)),
        (lambda L, i: L.dynamic_update_index_in_dim(x, np.full(6, -1, np.int32), i, 0,
                                                    allow_negative_indices=allow)),
    ]
    for case in cases:
        for i in (1, np.int32(2)):
            _check(case(lax, i), case(jlax, i))
        # A traced negative index counts from the end, or is clamped to 0 (as XLA clamps).
        _check(gpuarr.jit(lambda i: case(lax, i))(-3), jax.jit(lambda i: case(jlax, i))(-3))
        if allow:
            _check(case(lax, -3), case(jlax, -3))
        else:
            with pytest.raises(ValueError, match="if allow_negative_indices=False"):
                case(lax, -3)


def test_dynamic_slice_per_axis_allow_negative_indices():
    x = np.arange(12).reshape(3, 4)
    flags = (True, False)
    _check(lax.dynamic_slice(x, (-1, 1), (1, 2), allow_negative_indices=flags),
           jlax.dynamic_slice(x, (-1, 1), (1, 2), allow_negative_indices=flags))
    with pytest.raises(ValueError, match="Index -1 is out of bounds for dimension 4"):
        lax.dynamic_slice(x, (0, -1), (1, 2), allow_negative_indices=flags)


def test_special_functions_take_x():
    x = np.array([0.25, 0.5], np.float32)
    for name in ("erf", "erfc", "erf_inv", "lgamma", "digamma"):
        _check(getattr(lax, name)(x=x), getattr(jlax, name)(x=x))
    i = np.array([1, 255, 1 << 20], np.int32)
    for name in ("clz", "population_count"):
        _check(getattr(lax, name)(x=i), getattr(jlax, name)(x=i))


def test_reduce_window_defaults():
    x = np.arange(12.0).reshape(3, 4)
    _check(lax.reduce_window(x, 0.0, lax.add, (2, 2)), jlax.reduce_window(x, 0.0, jlax.add, (2, 2)))


def test_cond_and_switch_keyword_operand():
    # Passing `operand` (even None) hands the branches that one operand, as in JAX.
    assert lax.cond(True, lambda o: o is None, lambda o: False, operand=None)
    assert lax.switch(1, [lambda o: 0, lambda o: 1], operand=None) == 1
    with pytest.raises(TypeError, match="no positional operands"):
        lax.cond(True, lambda *a: 1, lambda *a: 0, 1.0, operand=2.0)


# ---------------------------------------------------------------- transformations


def _unrolled(x, n):
    for _ in range(n):
        x = jnp.sin(x) * 1.5
    return x


def test_checkpoint_static_argnames():
    f = gpuarr.checkpoint(_unrolled, static_argnames="n")
    want = jax.grad(lambda x: _ref_unrolled(x, 3))(0.7)
    np.testing.assert_allclose(f(0.7, n=3), _ref_unrolled(0.7, 3), rtol=1e-6)
    np.testing.assert_allclose(gpuarr.grad(f)(0.7, n=3), want, rtol=1e-6)
    np.testing.assert_allclose(gpuarr.jit(gpuarr.grad(f), static_argnames="n")(0.7, n=3), want,
                               rtol=1e-6)
    g = gpuarr.checkpoint(_unrolled, static_argnums=-1)  # negative positions count from the end
    np.testing.assert_allclose(gpuarr.grad(g)(0.7, 3), want, rtol=1e-6)
    with pytest.raises(ValueError, match="static_argnums"):
        gpuarr.checkpoint(_unrolled, static_argnums=5)(0.7, 3)


def _ref_unrolled(x, n):
    for _ in range(n):
        x = jnp_ref.sin(x) * 1.5
    return x


def test_checkpoint_concrete_was_removed():
    for fn in (jax.checkpoint, jax.remat):
        with pytest.raises(NotImplementedError) as ref:
            fn(_ref_unrolled, concrete=False)
    for fn in (gpuarr.checkpoint, gpuarr.remat):
        with pytest.raises(NotImplementedError) as ours:
            fn(_unrolled, concrete=False)
        assert str(ours.value) == str(ref.value)
    with pytest.raises(TypeError):
        gpuarr.remat(_unrolled, static_argnames="n")  # remat has none, as in JAX


@pytest.mark.parametrize("fun,in_axes,out_axes,x", [
    (lambda v: v * 2, 0, None, np.arange(6.0).reshape(3, 2)),
    (lambda v: v * 2, 1, None, np.arange(6.0).reshape(3, 2)),
    (lambda v: v > 2, 0, None, np.arange(6.0)),
    (lambda v: (v, v + 1), 0, (None, 0), np.arange(4, dtype=np.int32)),
])
def test_vmap_sum_match(fun, in_axes, out_axes, x):
    ours = gpuarr.vmap(fun, in_axes, out_axes, sum_match=True)(x)
    ref = jax.vmap(fun, in_axes, out_axes, sum_match=True)(jnp_ref.asarray(x))
    for o, r in zip(gpuarr.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        _check(o, r)
    with pytest.raises(ValueError, match="out_axes"):
        gpuarr.vmap(fun, in_axes, out_axes)(x)


def test_vmap_sum_match_under_jit_and_grad():
    x = np.arange(3.0, dtype=np.float32)
    f = gpuarr.vmap(lambda a: a * a, out_axes=None, sum_match=True)
    jf = jax.vmap(lambda a: a * a, out_axes=None, sum_match=True)
    _check(gpuarr.jit(f)(x), jax.jit(jf)(x))
    _check(gpuarr.grad(f)(x), jax.grad(jf)(x))


def test_initializers_default_dtype_and_sharding():
    for name in ("zeros", "ones"):
        ours, ref = getattr(initializers, name)(_KEY, (2, 3)), getattr(jax.nn.initializers, name)(
            jax.random.key(0), (2, 3))
        _check(ours, ref)
    init, ref_init = initializers.normal(0.5), jax.nn.initializers.normal(0.5)
    _check(init(_KEY, (4,), out_sharding=None), ref_init(jax.random.key(0), (4,), out_sharding=None))


def test_key_dtype_impl_spec():
    assert random.key_dtype(impl_spec=None) == random.key_dtype()


# ---------------------------------------------------------------- numpy parameters


def test_sum_and_prod_promote_integers():
    x = np.array([100, 100, 3], np.int8)
    for fn in ("sum", "prod"):
        for kwargs in (dict(), dict(promote_integers=False)):
            for arg in (x, x.astype(np.uint8), x > 50):
                _check(getattr(jnp, fn)(arg, **kwargs), getattr(jnp_ref, fn)(arg, **kwargs))
    _check(jnp.sum(x > 50, dtype=bool), jnp_ref.sum(x > 50, dtype=bool))


def test_var_and_std_take_a_mean():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x[0, 1] = np.nan
    mu = np.nanmean(x, axis=1, keepdims=True)
    for fn in ("var", "std", "nanvar", "nanstd"):
        for kwargs in (dict(axis=1, mean=mu), dict(axis=0, mean=np.zeros((1, 4), np.float32)),
                       dict(mean=1.0)):
            _check(getattr(jnp, fn)(x, **kwargs), getattr(jnp_ref, fn)(x, **kwargs))
    with pytest.raises(ValueError, match="ddof and correction"):
        jnp.var(x, ddof=1, correction=1)


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("axis,keepdims", [(1, False), (1, True), (None, False), (0, False)])
def test_weighted_quantiles(fn, axis, keepdims):
    x = np.array([[3.0, 1, 2, np.nan, 5], [1, 2, 3, 4, 5]], np.float32)
    weights = {1: np.array([1, 2, 1, 1, 3], np.float32), None: np.abs(x) + 1,
               0: np.array([1, 2], np.float32)}[axis]
    q = np.array([0.0, 0.1, 0.5, 0.9, 1.0], np.float32)
    for w in (None, weights):
        kwargs = dict(axis=axis, keepdims=keepdims, method="inverted_cdf", weights=w)
        _check(getattr(jnp, fn)(x, q, **kwargs), getattr(jnp_ref, fn)(x, q, **kwargs))


def test_weighted_percentile_and_errors():
    x, w = np.arange(1.0, 6.0), np.array([1.0, 2, 1, 1, 3])
    _check(jnp.percentile(x, 30, weights=w, method="inverted_cdf"),
           jnp_ref.percentile(x, 30, weights=w, method="inverted_cdf"))
    _check(jnp.quantile(x, 0.3, weights=-w, method="inverted_cdf"),
           jnp_ref.quantile(x, 0.3, weights=-w, method="inverted_cdf"))
    with pytest.raises(NotImplementedError, match="Only method 'inverted_cdf' supports weights"):
        jnp.quantile(x, 0.5, weights=w)
    out = gpuarr.jit(lambda a, b: jnp.quantile(a, 0.5, weights=b, method="inverted_cdf"))(x, w)
    _check(out, jnp_ref.quantile(x, 0.5, weights=w, method="inverted_cdf"))


@pytest.mark.parametrize("kwargs", [dict(), dict(wrap_negative_indices=False), dict(mode="clip"),
                                    dict(mode="clip", wrap_negative_indices=False),
                                    dict(mode="promise_in_bounds", wrap_negative_indices=True)])
def test_take_along_axis_wrap_negative_indices(kwargs):
    x, i = np.arange(10.0, dtype=np.float32) * 1.5, np.array([-1, 2, 12, -12])
    _check(jnp.take_along_axis(x, i, **kwargs), jnp_ref.take_along_axis(x, i, **kwargs))


def test_trim_zeros_axis():
    x = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]], np.int32)
    for args in [(), ("fb", 0), ("fb", 1), ("f", -1), ("b", (0, 1))]:
        _check(jnp.trim_zeros(x, *args), jnp_ref.trim_zeros(x, *args))
    _check(jnp.trim_zeros(np.zeros((2, 3))), jnp_ref.trim_zeros(np.zeros((2, 3))))


def test_argsort_dtype_and_cov_dtype():
    x = np.array([3, 1, 2, 1, 5])
    for kwargs in (dict(dtype=np.int16), dict(dtype=np.uint8, descending=True)):
        _check(jnp.argsort(x, **kwargs), jnp_ref.argsort(x, **kwargs))
    m = np.random.RandomState(0).rand(3, 5)
    for fn in ("cov", "corrcoef"):
        ours, ref = getattr(jnp, fn)(m, dtype=np.float16), getattr(jnp_ref, fn)(m, dtype=np.float16)
        assert ours.dtype == ref.dtype == np.float16
        np.testing.assert_allclose(np.asarray(ours, np.float32), np.asarray(ref, np.float32),
                                   rtol=2e-3, atol=2e-3)
        with pytest.raises(ValueError, match="dtype must be a subclass of float or complex"):
            getattr(jnp, fn)(m, dtype=np.int32)


def test_creation_device_and_positional_array_arguments():
    device = gpuarr.devices()[0]
    for out in (jnp.zeros(3, device=device), jnp.arange(3, device=device),
                jnp.eye(2, device=device), jnp.array([1.0], device=device),
                jnp.full_like(np.ones(2), 3.0, device=device)):
        assert out.devices() == {device} and out.committed
    assert not jnp.zeros(3).committed
    with pytest.warns(DeprecationWarning, match="positionally is deprecated"):
        out = jnp.array([1, 2], None, True, "K", 2)
    assert out.shape == (1, 2)
    with pytest.raises(TypeError):
        jnp.zeros(3, None, device)  # device is keyword-only, as in JAX


def test_einsum_calls_the_given_dot_general():
    calls = []

    def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
        calls.append(dimension_numbers)
        return lax.dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)

    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    _check(jnp.einsum("ij,kj->ik", a, a, _dot_general=dot_general),
           jnp_ref.einsum("ij,kj->ik", a, a))
    assert calls


def test_array_api_linalg_and_ufunc_forms():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    _check(jnp.linalg.matmul(a, a.T), jnp_ref.linalg.matmul(a, a.T))
    _check(jnp.linalg.tensordot(a, a, axes=2), jnp_ref.linalg.tensordot(a, a, axes=2))
    h = np.array([[2.0, 1.0], [1.0, 2.0]], np.float32)
    _check(jnp.linalg.matrix_rank(h, hermitian=True), jnp_ref.linalg.matrix_rank(h, hermitian=True))
    _check(jnp.gcd(x1=np.int32(12), x2=np.int32(18)), jnp_ref.gcd(x1=np.int32(12), x2=np.int32(18)))
    _check(jnp.trunc(x=np.float32(-1.5)), jnp_ref.trunc(x=np.float32(-1.5)))
    with pytest.raises(NotImplementedError, match="'out' argument to isneginf/isposinf"):
        jnp.isneginf(a, out=a)
    _check(jnp.isposinf(np.float32([np.inf, 1.0])), jnp_ref.isposinf(np.float32([np.inf, 1.0])))


def test_savez_allow_pickle(tmp_path):
    path = tmp_path / "arrays.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.savez(path, jnp.arange(3), allow_pickle=False, b=jnp.ones(2))
    with np.load(path) as data:
        np.testing.assert_array_equal(data["arr_0"], np.arange(3))
        np.testing.assert_array_equal(data["b"], np.ones(2))


# ---------------------------------------------------------------- lax extras, special, linalg, dtypes


def test_empty_and_reduce_without_sharding():
    out = lax.empty((2, 3), np.float32, out_sharding=None)
    assert out.shape == (2, 3) and out.dtype == np.float32
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _check(lax.reduce(x, np.float32(0), lax.add, (1,), None),
           jlax.reduce(x, np.float32(0), jlax.add, (1,), None))
    _check(lax.reduce(x, np.float32(1), lax.mul, (0,), out_sharding=None),
           jlax.reduce(x, np.float32(1), jlax.mul, (0,), out_sharding=None))


def test_unstack_takes_x():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for ours, ref in zip(lax.unstack(x=x, axis=1), jlax.unstack(x=x, axis=1)):
        _check(ours, ref)


_CT_X = np.random.RandomState(0).randn(2, 7, 6, 3).astype(np.float32)
_CT_W = np.random.RandomState(1).randn(3, 2, 3, 4).astype(np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((0, 0), (1, 2)), [(2, 1), (0, 3)]])
@pytest.mark.parametrize("consistent", [False, True])
def test_conv_transpose_use_consistent_padding(padding, consistent):
    # Strides (2, 3) and rhs_dilation (2, 1): the forward padding becomes d * (k - 1) - p.
    kwargs = dict(rhs_dilation=(2, 1), use_consistent_padding=consistent)
    ref = jlax.conv_transpose(_CT_X, _CT_W, (2, 3), padding, **kwargs)
    close(lax.conv_transpose(_CT_X, _CT_W, (2, 3), padding, **kwargs), ref, 1e-4)
    close(gpuarr.jit(lambda a, b: lax.conv_transpose(a, b, (2, 3), padding, **kwargs))(
        _CT_X, _CT_W), ref, 1e-4)


def test_conv_transpose_consistent_padding_is_the_gradient_of_conv():
    # With the forward convolution's padding, conv_transpose with transpose_kernel is the
    # gradient of that convolution with respect to its input (PyTorch's convention).
    x, w, pad = _CT_X, _CT_W, ((1, 1), (2, 0))
    dn = ("NHWC", "HWIO", "NHWC")
    y, vjp = gpuarr.vjp(lambda a: lax.conv_general_dilated(a, w, (2, 1), pad, dimension_numbers=dn), x)
    ct = np.random.RandomState(2).randn(*y.shape).astype(np.float32)
    (grad,) = vjp(ct)
    out = lax.conv_transpose(ct, w, (2, 1), pad, dimension_numbers=dn, transpose_kernel=True,
                             use_consistent_padding=True)
    close(out, grad, 1e-4)
    close(out, jlax.conv_transpose(ct, w, (2, 1), pad, dimension_numbers=dn,
                                    transpose_kernel=True, use_consistent_padding=True), 1e-4)
    # And it differentiates like JAX's, here with respect to a kernel taking ct's channels.
    loss = lambda L: lambda k: (L.conv_transpose(ct, k, (2, 1), pad, dimension_numbers=dn,  # noqa: E731
                                                 use_consistent_padding=True) ** 2).sum()
    k = np.ascontiguousarray(np.swapaxes(w, 2, 3))
    close(gpuarr.grad(loss(lax))(k), jax.grad(loss(jlax))(k), 1e-3)


def test_conv_transpose_padding_errors_as_jax():
    for padding in ("same", "SAME_LOWER"):
        with pytest.raises(ValueError, match=f"Invalid padding mode: {padding}"):
            lax.conv_transpose(_CT_X, _CT_W, (1, 1), padding, use_consistent_padding=True)
        with pytest.raises(ValueError, match=f"Invalid padding mode: {padding}"):
            jlax.conv_transpose(_CT_X, _CT_W, (1, 1), padding, use_consistent_padding=True)
    # Without it, other padding strings go to the convolution itself, as in JAX.
    close(lax.conv_transpose(_CT_X, _CT_W, (1, 1), "SAME_LOWER"),
          jlax.conv_transpose(_CT_X, _CT_W, (1, 1), "SAME_LOWER"), 1e-4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_scipy_softmax_signature_and_values(name):
    from gpuarr.scipy import special
    ours, ref = getattr(special, name), getattr(jax.scipy.special, name)
    x = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    for kwargs in (dict(), dict(axis=(0, 2))):  # all axes by default, unlike jax.nn's
        close(ours(x, **kwargs), ref(x, **kwargs), 1e-5)
    close(ours(np.arange(4.0)), ref(np.arange(4.0)), 1e-5)
    close(gpuarr.jit(lambda a: ours(a, axis=-1))(x), ref(x, axis=-1), 1e-5)
    loss = lambda f: lambda a: f(a, axis=(0, 2))[0, 1, 2]  # noqa: E731
    close(gpuarr.grad(loss(ours))(x), jax.grad(loss(ref))(x), 1e-5)
    with pytest.raises(TypeError):
        ours(x, 1)  # axis is keyword-only, as in jax.scipy.special
    with pytest.raises(TypeError):
        ours(x=x)  # x is positional-only


def test_eigh_implementation():
    from gpuarr.lax import linalg
    jlinalg = jax.lax.linalg
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], np.float32)
    assert [m.value for m in linalg.EighImplementation] == [m.value for m in
                                                            jlinalg.EighImplementation]
    _, ref_w = jlinalg.eigh(a)
    for impl in (None, linalg.EighImplementation.QR, jlinalg.EighImplementation.QR):
        v, w = linalg.eigh(a, implementation=impl)
        close(w, ref_w, 1e-5)
        np.testing.assert_allclose(np.asarray(a @ v), np.asarray(v) * np.asarray(w), atol=1e-5)
    close(gpuarr.jit(lambda m: linalg.eigh(m, implementation=linalg.EighImplementation.QR)[1])(a), ref_w,
          1e-5)
    for name in ("JACOBI", "QDWH"):
        with pytest.raises(NotImplementedError) as ours:
            linalg.eigh(a, implementation=getattr(linalg.EighImplementation, name))
        with pytest.raises(NotImplementedError) as ref:
            jlinalg.eigh(a, implementation=getattr(jlinalg.EighImplementation, name))
        assert str(ours.value) == str(ref.value) and name.lower() in str(ours.value).lower()


def test_issubdtype_parameter_names():
    from gpuarr import dtypes
    cases = [(np.float32, np.floating), (np.dtype(np.int8), np.unsignedinteger),
             (jnp_ref.bfloat16, np.inexact), (bool, np.integer), ("float16", np.float16)]
    for a, b in cases:
        assert dtypes.issubdtype(a=a, b=b) == jax.dtypes.issubdtype(a=a, b=b)
        assert dtypes.numpy_issubdtype(arg1=a, arg2=b) == jnp_ref.issubdtype(arg1=a, arg2=b)
    assert (inspect.signature(dtypes.numpy_issubdtype).parameters.keys()
            == inspect.signature(jnp_ref.issubdtype).parameters.keys())
