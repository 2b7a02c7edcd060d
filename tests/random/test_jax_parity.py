"""gpuarr.random against jax.random run side by side: the same values (bit for bit where the
sampler is built on random bits, within 2 ulp where it goes through log, exp, pow or tan),
shapes, dtypes and weak types, for typed and raw keys, eagerly and under jit and vmap; and the
same exception classes (and JAX's text at the start of the message) for bad keys, shapes,
dtypes and parameters."""
import warnings

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gjnp
from gpuarr import random as grandom

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jrandom = pytest.importorskip("jax.random")

LIBS = {"gpuarr": (gpuarr, grandom, gjnp), "jax": (jax, jrandom, jjnp)}
L2 = [[.1, .2, .7], [.5, .25, .25]]
COV = [[2., .5], [.5, 1.]]
P5 = [.1, .2, .3, .2, .2]


def _run(lib, fn):
    api, random, jnp = LIBS[lib]
    return fn(api, random, jnp)


def _is_key(x):
    return isinstance(x, grandom.PRNGKeyArray) or (
        hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key))


def _unwrap(x, random):
    """(kind, dtype name, shape, NumPy values, weak type) of an array or key array."""
    if _is_key(x):
        return "key", str(x.dtype), tuple(x.shape), np.asarray(random.key_data(x)), False
    return "array", str(x.dtype), tuple(x.shape), np.asarray(x), bool(x.weak_type)


def _ulps(ours, want):
    if want.dtype.kind == "c":
        return max(_ulps(ours.real, want.real), _ulps(ours.imag, want.imag))
    o, w = ours.astype(np.float64), want.astype(np.float64)
    same = (o == w) | (np.isnan(o) & np.isnan(w))
    spacing = np.spacing(np.maximum(np.abs(want), np.ones((), want.dtype))).astype(np.float64)
    err = np.where(same, 0.0, np.abs(o - w) / spacing)
    return float(err.max()) if err.size else 0.0


def same_values(fn, ulps=0):
    """`fn(api, random, jnp)` gives JAX's kind, dtype, shape, weak type and values."""
    got = _unwrap(_run("gpuarr", fn), grandom)
    want = _unwrap(_run("jax", fn), jrandom)
    assert got[:3] == want[:3] and got[4] == want[4], (got[:3], got[4], want[:3], want[4])
    ours, theirs = got[3], want[3]
    if ulps == 0 or theirs.dtype.kind not in "fcV":
        np.testing.assert_array_equal(ours.astype(np.float64) if ours.dtype.name == "bfloat16"
                                      else ours, theirs.astype(np.float64)
                                      if theirs.dtype.name == "bfloat16" else theirs)
    else:
        assert _ulps(ours, theirs) <= ulps


# ---------------------------------------------------------------- values, shapes and dtypes

# id -> (fn(api, random, jnp), ulps): 0 is bit for bit.
VALUES = {
    "key": (lambda a, r, n: r.key(2**31 + 7), 0),
    "prngkey": (lambda a, r, n: r.PRNGKey(-3), 0),
    "split_shape": (lambda a, r, n: r.split(r.key(1), (2, 3)), 0),
    "split_zero": (lambda a, r, n: r.split(r.key(1), 0), 0),
    "fold_in_big": (lambda a, r, n: r.fold_in(r.key(1), 2**32 - 1), 0),
    "fold_in_np_negative": (lambda a, r, n: r.fold_in(r.key(1), np.int32(-5)), 0),
    "fold_in_np_wide": (lambda a, r, n: r.fold_in(r.PRNGKey(1), np.uint64(2**40 + 5)), 0),
    "wrap_round_trip": (lambda a, r, n: r.wrap_key_data(r.key_data(r.split(r.key(3), 4))), 0),
    "key_data_raw": (lambda a, r, n: r.key_data(r.split(r.PRNGKey(3), 2)), 0),
    "clone_scalar": (lambda a, r, n: r.clone(3), 0),
    "keys_eq_broadcast": (lambda a, r, n: r.split(r.key(1), 3) == r.split(r.key(1), 3)[1], 0),
    "bits_uint8": (lambda a, r, n: r.bits(r.key(0), (3, 4), "uint8"), 0),
    "uniform_bf16": (lambda a, r, n: r.uniform(r.key(0), (7,), "bfloat16", -2., 3.), 0),
    "uniform_bounds_bcast": (lambda a, r, n: r.uniform(r.key(0), (3, 4), minval=n.zeros(4),
                                                       maxval=n.arange(1., 5.)), 0),
    "randint_int4": (lambda a, r, n: r.randint(r.key(0), (9,), 0, 10, "int4"), 0),
    "rademacher_bool": (lambda a, r, n: r.rademacher(r.key(0), (6,), bool), 0),
    "bernoulli_bcast": (lambda a, r, n: r.bernoulli(r.key(0), n.array([[.1], [.9]]), (2, 3)), 0),
    "choice_empty": (lambda a, r, n: r.choice(r.key(0), n.arange(12).reshape(3, 4), (0,),
                                              axis=1), 0),
    "categorical_no_replace": (lambda a, r, n: r.categorical(
        r.key(0), n.log(n.array(L2)), shape=(2, 2), replace=False), 0),
    "lognormal_sigma_bcast": (lambda a, r, n: r.lognormal(r.key(0), n.array([.5, 1.]),
                                                          (3, 2)), 2),
    "lognormal_complex": (lambda a, r, n: r.lognormal(r.key(0), shape=(3,), dtype="complex64"),
                          2),
    "truncated_normal_bcast": (lambda a, r, n: r.truncated_normal(
        r.key(0), n.array([-1., 0.]), 2., (3, 2)), 0),
    "weibull_complex_concentration": (lambda a, r, n: r.weibull_min(r.key(0), 1., 2. + 1j,
                                                                    (4,)), 2),
    "weibull_f16_scale_f32": (lambda a, r, n: r.weibull_min(r.key(0), n.ones(4), 2., (4,),
                                                            "float16"), 2),
    "generalized_normal_array_p": (lambda a, r, n: r.generalized_normal(
        r.key(0), n.array([1., 2.]), (2,)), 2),
    "dirichlet_empty": (lambda a, r, n: r.dirichlet(r.key(0), n.zeros((0,))), 0),
    "geometric_int8": (lambda a, r, n: r.geometric(r.key(0), .3, (6,), "int8"), 0),
    "jit_split_fold": (lambda a, r, n: a.jit(lambda k: r.fold_in(r.split(k)[1], 7))(r.key(2)), 0),
    "vmap_raw_bits": (lambda a, r, n: a.vmap(lambda k: r.bits(k, (2,)))(
        r.split(r.PRNGKey(1), 3)), 0),
    "vmap_seeds": (lambda a, r, n: a.vmap(r.key)(n.arange(3)), 0),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_jax(name):
    fn, ulps = VALUES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        same_values(fn, ulps)


def test_x64_streams_match_jax():
    cases = [lambda a, r, n: r.key(2**40 + 3), lambda a, r, n: r.bits(r.key(0), (4,)),
             lambda a, r, n: r.uniform(r.key(0), (4,)), lambda a, r, n: r.randint(
                 r.key(0), (4,), 0, 2**40), lambda a, r, n: r.rademacher(r.key(0), (6,)),
             lambda a, r, n: r.choice(r.key(0), 5, (3,), p=n.array(P5))]
    with jax.enable_x64(True), gpuarr.enable_x64(True):
        for fn in cases:
            same_values(fn)


def _warnings(lib, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(lib, fn)
    return [(w.category, str(w.message).split(". To enable")[0]) for w in caught]


def test_truncation_warnings_match_jax():
    for fn in (lambda a, r, n: r.uniform(r.key(0), (2,), "float64"),
               lambda a, r, n: r.bits(r.key(0), (2,), "uint64"),
               lambda a, r, n: r.randint(r.key(0), (2,), 0, 5, "int64"),
               lambda a, r, n: r.normal(r.key(0), (2,), "float64")):
        assert _warnings("gpuarr", fn) == _warnings("jax", fn)


def test_key_array_behaviour_matches_jax():
    for lib in LIBS:
        _, r, _ = LIBS[lib]
        keys = r.split(r.key(1), 3)
        assert str(keys.dtype) == "key<fry>" and keys.shape == (3,) and len(keys) == 3
        assert r.key_impl(keys) == "threefry2x32" and r.key_impl(r.PRNGKey(0)) == "threefry2x32"
        assert r.key_dtype() == keys.dtype
    same_error(lambda a, r, n: np.asarray(r.key(0)))


# ---------------------------------------------------------------- errors

def same_error(fn, prefix=True):
    """gpuarr raises the class JAX raises (by name, and the same built-in base) and, with
    `prefix`, a message that starts with JAX's (gpuarr may add what to do)."""
    with pytest.raises(Exception) as want:
        _run("jax", fn)
    with pytest.raises(Exception) as got:
        _run("gpuarr", fn)
    assert type(got.value).__name__ == type(want.value).__name__, (got.value, want.value)
    builtin = next(c for c in type(want.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(got.value, builtin)
    if prefix:  # the first line: JAX's later lines describe its own tracing
        got_line, want_line = (str(e.value).split("\n")[0] for e in (got, want))
        assert got_line.startswith(want_line.rstrip(".")), (got.value, want.value)


K = lambda r: r.key(0)  # noqa: E731

# id -> (fn(api, random, jnp), whether gpuarr's message starts with JAX's)
ERRORS = {
    # keys: raw ints, wrong shapes and dtypes, batches where one key is needed
    "int_as_key": (lambda a, r, n: r.normal(3, (2,)), True),
    "float_as_key": (lambda a, r, n: r.split(1.5), True),
    "uint32_3_as_key": (lambda a, r, n: r.uniform(np.zeros(3, "uint32")), False),
    "float32_2_as_key": (lambda a, r, n: r.uniform(np.zeros(2, "float32")), True),
    "int32_2_as_key": (lambda a, r, n: r.split(np.zeros(2, "int32")), True),
    "list_as_key": (lambda a, r, n: r.key_data([0, 0]), True),
    "typed_batch": (lambda a, r, n: r.normal(r.split(r.key(0), 3), (2,)), True),
    "raw_batch": (lambda a, r, n: r.split(r.split(r.PRNGKey(0), 3)), True),
    "raw_batch_sampler": (lambda a, r, n: r.randint(r.split(r.PRNGKey(0), 2), (2,), 0, 3), True),
    "wrap_list": (lambda a, r, n: r.wrap_key_data([1, 2]), True),
    "wrap_int32": (lambda a, r, n: r.wrap_key_data(np.array([1, 2], "int32")), True),
    "key_of_key": (lambda a, r, n: r.key(r.key(0)), True),
    "key_of_array": (lambda a, r, n: r.PRNGKey(np.array([1, 2])), True),
    "key_of_float": (lambda a, r, n: r.key(1.5), False),
    "key_of_none": (lambda a, r, n: r.key(None), True),
    "key_too_big": (lambda a, r, n: r.key(2**64), False),
    "impl_type": (lambda a, r, n: r.key(0, impl=3), True),
    "impl_unknown": (lambda a, r, n: r.key(0, impl="nope"), False),
    "impl_and_dtype": (lambda a, r, n: r.key(0, impl="threefry2x32", dtype=r.key_dtype()), True),
    "fold_in_negative": (lambda a, r, n: r.fold_in(K(r), -1), True),
    "fold_in_too_big": (lambda a, r, n: r.fold_in(K(r), 2**32), True),
    "fold_in_array": (lambda a, r, n: r.fold_in(K(r), np.array([1, 2])), False),
    "fold_in_none": (lambda a, r, n: r.fold_in(K(r), None), True),
    "fold_in_str": (lambda a, r, n: r.fold_in(K(r), "a"), True),
    "split_float": (lambda a, r, n: r.split(K(r), 2.5), False),
    "split_negative": (lambda a, r, n: r.bernoulli(K(r), .5, (-1,)), True),
    # shapes
    "negative_shape": (lambda a, r, n: r.pareto(K(r), 2., (-1,)), True),
    "non_int_shape": (lambda a, r, n: r.bits(K(r), (2.,)), True),
    "uniform_bcast": (lambda a, r, n: r.uniform(K(r), (3,), minval=n.ones(4)), True),
    "uniform_bcast_2d": (lambda a, r, n: r.uniform(K(r), (3, 4), minval=n.zeros((4, 3))), True),
    "uniform_bounds_bcast": (lambda a, r, n: r.uniform(K(r), (3,), minval=n.zeros(3),
                                                       maxval=n.ones(4)), True),
    "uniform_str_bound": (lambda a, r, n: r.uniform(K(r), (3,), minval="a"), False),
    "param_shape": (lambda a, r, n: r.gamma(K(r), n.ones(3), (2, 1)), True),
    "param_bcast": (lambda a, r, n: r.triangular(K(r), n.zeros(3), .5, 1., (2,)), True),
    # dtypes
    "uniform_int": (lambda a, r, n: r.uniform(K(r), (2,), "int32"), True),
    "normal_int": (lambda a, r, n: r.normal(K(r), (2,), "int32"), True),
    "randint_float": (lambda a, r, n: r.randint(K(r), (2,), 0, 5, "float32"), True),
    "bits_float": (lambda a, r, n: r.bits(K(r), (2,), "float32"), True),
    "bits_int": (lambda a, r, n: r.bits(K(r), (2,), "int8"), True),
    "geometric_float": (lambda a, r, n: r.geometric(K(r), .3, (2,), "float32"), True),
    "poisson_float": (lambda a, r, n: r.poisson(K(r), 3., (2,), "float32"), False),
    "loggamma_int": (lambda a, r, n: r.loggamma(K(r), 2., (2,), "int32"), True),
    "ball_int": (lambda a, r, n: r.ball(K(r), 3, dtype="int32"), True),
    "orthogonal_int": (lambda a, r, n: r.orthogonal(K(r), 3, dtype="int32"), True),
    "lognormal_narrow": (lambda a, r, n: r.lognormal(K(r), shape=(2,), dtype="float16"), True),
    "pareto_complex": (lambda a, r, n: r.pareto(K(r), 2. + 1j, (2,)), True),
    "rayleigh_complex": (lambda a, r, n: r.rayleigh(K(r), 2. + 1j, (2,)), True),
    "chisquare_complex": (lambda a, r, n: r.chisquare(K(r), 2. + 1j, (2,)), True),
    "f_complex": (lambda a, r, n: r.f(K(r), 2. + 1j, 3., (2,)), True),
    "bernoulli_int_p": (lambda a, r, n: r.bernoulli(K(r), 1), True),
    "categorical_int_logits": (lambda a, r, n: r.categorical(K(r), n.zeros(4, "int32")), True),
    # parameters
    "choice_too_many": (lambda a, r, n: r.choice(K(r), 5, (6,), replace=False), True),
    "choice_p_length": (lambda a, r, n: r.choice(K(r), 5, (3,), p=n.array(P5[:4])), True),
    "choice_int_shape": (lambda a, r, n: r.choice(K(r), 5, 3), True),
    "choice_empty_population": (lambda a, r, n: r.choice(K(r), 0, (3,)), True),
    "choice_traced_a": (lambda a, r, n: a.jit(lambda k, x: r.choice(k, x, (2,)))(K(r), 5), True),
    "categorical_axis": (lambda a, r, n: r.categorical(K(r), n.zeros((2, 3)), axis=2), False),
    "categorical_mode": (lambda a, r, n: r.categorical(K(r), n.zeros(3), mode="bad"), True),
    "categorical_shape": (lambda a, r, n: r.categorical(K(r), n.zeros((2, 3)), shape=(3,)),
                          True),
    "categorical_too_many": (lambda a, r, n: r.categorical(K(r), n.zeros(3), shape=(4,),
                                                           replace=False), True),
    "gumbel_mode": (lambda a, r, n: r.gumbel(K(r), (2,), mode="bad"), True),
    "bernoulli_mode": (lambda a, r, n: r.bernoulli(K(r), .5, mode="x"), True),
    "permutation_float": (lambda a, r, n: r.permutation(K(r), 2.5), True),
    "permutation_list": (lambda a, r, n: r.permutation(K(r), [1, 2]), False),
    "permutation_axis": (lambda a, r, n: r.permutation(K(r), n.arange(5), axis=1), True),
    "permutation_traced": (lambda a, r, n: a.jit(lambda k, x: r.permutation(k, x))(K(r), 6),
                           True),
    "mvn_mismatch": (lambda a, r, n: r.multivariate_normal(K(r), n.zeros(2), n.eye(3)), True),
    "mvn_scalar_mean": (lambda a, r, n: r.multivariate_normal(K(r), 1., n.eye(2)), True),
    "mvn_method": (lambda a, r, n: r.multivariate_normal(K(r), n.zeros(2), n.eye(2),
                                                         method="lu"), True),
    "dirichlet_scalar": (lambda a, r, n: r.dirichlet(K(r), 2.), True),
    "orthogonal_float_n": (lambda a, r, n: r.orthogonal(K(r), 2.5), True),
    "ball_float_d": (lambda a, r, n: r.ball(K(r), 2.5), True),
    "binomial_list": (lambda a, r, n: r.binomial(K(r), [5, 10], .3), False),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_jax(name):
    fn, prefix = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(fn, prefix)
