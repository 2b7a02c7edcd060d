"""The jax.scipy.stats distributions, KDE and descriptive statistics beyond the first set
(betabinom ... wrapcauchy, gaussian_kde, mode, rankdata, sem) against JAX 0.10.2: values,
dtypes, shapes and weak types on ordinary and edge-case inputs, under jit and vmap, and
gradients."""
import functools
import inspect

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr.scipy import stats as gstats

jax = pytest.importorskip("jax")
scipy_stats = pytest.importorskip("scipy.stats")
jstats = jax.scipy.stats

nan, inf = np.nan, np.inf
f32 = np.float32

# Ten points each: ordinary values and the edges (0, bounds, +-inf, NaN) of each support.
X = f32([-inf, -3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, inf, nan])
POS = f32([0.5, 1.0, 1.5, 2.0, 3.0, 0.2, 4.0, 1.2, 2.5, 0.7])
K = f32([-1, 0, 1, 2, 3, 5, 2.5, 10, inf, nan])  # counts, with a fraction, inf and NaN
N = f32([4, 4, 0, 6, 3, 5, 10, 12, 4, 4])
P = f32([0.3, 0.5, 0.2, 0.0, 1.0, 0.7, 0.9, 0.05, 0.5, 0.5])
BAD_P = f32([0.3, -0.1, 1.1, nan, 0.5, 0.0, 1.0, 0.4, 0.6, 0.5])
BAD_SCALE = f32([1.0, 2.0, 0.0, -1.0, nan, inf, 0.5, 1.5, 1.0, 1.0])
Q = f32([0.0, 1e-4, 0.1, 0.5, 0.9, 0.9999, 1.0, -0.1, 1.1, nan])
LOW = f32([-2, 1, 3, -1, 0, -5, 5, 0, -1, 0])  # truncation bounds: LOW to LOW + width
ANGLE = f32([-0.1, 0.0, 0.5, 1.5, 3.0, 4.5, 6.0, 2 * np.pi, 7.0, nan])


def _fns(path):
    """gpuarr's and JAX's function at `path`, e.g. 'gumbel_r.logsf'."""
    g, j = gstats, jstats
    for part in path.split("."):
        g, j = getattr(g, part), getattr(j, part)
    return g, j


def _assert_type(got, want):
    """Same dtype, shape and weak type (`want` may be a jax.ShapeDtypeStruct)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.weak_type == want.weak_type, (got.weak_type, want.weak_type)


def _assert_same(got, want, rtol, atol=0.0):
    """Same type and (to rtol/atol, NaNs and infinities exactly) values."""
    _assert_type(got, want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


NEW_MODULES = ["betabinom", "binom", "dirichlet", "gennorm", "geom", "gumbel_l", "gumbel_r", "multinomial",
               "nbinom", "pareto", "truncnorm", "vonmises", "wrapcauchy"]


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_names_and_signatures_match_jax():
    assert set(dir(jstats)) - set(dir(gstats)) == set()
    pairs = [(getattr(getattr(gstats, m), name), getattr(getattr(jstats, m), name))
             for m in NEW_MODULES for name in dir(getattr(jstats, m)) if not name.startswith("_")]
    pairs += [(gstats.poisson.entropy, jstats.poisson.entropy)]
    pairs += [(getattr(gstats, name), getattr(jstats, name)) for name in ("mode", "rankdata", "sem")]
    pairs += [(getattr(gstats.gaussian_kde, name), getattr(jstats.gaussian_kde, name))
              for name in ("__init__", "evaluate", "__call__", "pdf", "logpdf", "integrate_gaussian",
                           "integrate_box_1d", "integrate_kde", "resample", "integrate_box", "set_bandwidth")]
    for ours, ref in pairs:
        assert _params(ours) == _params(ref), ref


# (function, arguments, rtol in float32). Arrays all have shape (10,), so JAX compiles each
# of its operations once for the table.
CASES = [
    ("binom.logpmf", (K, N, P), 1e-5), ("binom.pmf", (K, 5.0, BAD_P, 1.0), 1e-5),
    ("betabinom.logpmf", (K, f32([4, -1, 0, 3, 3, 0, 2, 5, 4, 4]), BAD_SCALE, BAD_SCALE[::-1]), 2e-5),
    ("betabinom.pmf", (K, N, POS, POS[::-1], 1.0), 2e-5),
    ("geom.logpmf", (K, P), 1e-5), ("geom.pmf", (K, BAD_P, -1.0), 1e-5),
    ("nbinom.logpmf", (K, N, P), 2e-5), ("nbinom.pmf", (K, POS, BAD_P, 1.0), 2e-5),
    ("gennorm.logpdf", (X, POS), 1e-5), ("gennorm.pdf", (X, BAD_SCALE), 1e-5),
    ("gennorm.cdf", (X, POS), 1e-5),
    ("pareto.logpdf", (X, POS, -1.0, 1.5), 1e-5), ("pareto.pdf", (X, BAD_SCALE), 1e-5),
    ("pareto.cdf", (X, POS, 0.5), 1e-5), ("pareto.logcdf", (X, BAD_SCALE), 1e-5),
    ("pareto.sf", (X, POS, -1.0, 1.5), 1e-5), ("pareto.logsf", (X, POS), 1e-5),
    ("pareto.ppf", (Q, POS, 0.5, 2.0), 1e-5),
    ("vonmises.logpdf", (ANGLE, POS * 20), 1e-5), ("vonmises.pdf", (ANGLE, BAD_SCALE), 1e-5),
    ("wrapcauchy.logpdf", (ANGLE, P), 1e-5), ("wrapcauchy.pdf", (ANGLE, BAD_P), 1e-5),
    # truncnorm's pdf, cdf and sf are exp of these three: see test_truncnorm_exponentiated_forms.
    ("truncnorm.logpdf", (X, LOW, LOW + f32([3, 2, 1, 2, 2, 1, 1, 0, 2, 1]), 0.2, 1.5), 2e-5),
    ("truncnorm.logcdf", (X * 3, LOW, LOW + f32([3, 2, 1, 2, 2, 1, 4, 0, 2, 1])), 2e-5),
    ("truncnorm.logsf", (X, -0.5, POS, 0.1, 0.7), 2e-5),
    ("gumbel_l.logpdf", (X, 0.5, BAD_SCALE), 1e-5), ("gumbel_l.pdf", (X, 0.0, 1.0), 1e-5),
    ("gumbel_l.logcdf", (X * 9, 0.5, 2.0), 1e-5), ("gumbel_l.cdf", (X, 0.5, BAD_SCALE), 1e-5),
    ("gumbel_l.sf", (X, 0.0, 1.0), 1e-5), ("gumbel_l.logsf", (X * 9, -1.0, BAD_SCALE), 1e-5),
    ("gumbel_l.ppf", (Q, 0.5, 2.0), 1e-5),
    ("gumbel_r.logpdf", (X, 0.5, BAD_SCALE), 1e-5), ("gumbel_r.pdf", (X, 0.0, 1.0), 1e-5),
    ("gumbel_r.logcdf", (X * 9, 0.5, 2.0), 1e-5), ("gumbel_r.cdf", (X, 0.5, BAD_SCALE), 1e-5),
    ("gumbel_r.sf", (X, -1.0, BAD_SCALE), 1e-5), ("gumbel_r.logsf", (X * 9, 0.0, 1.0), 1e-5),
    ("gumbel_r.ppf", (Q, 0.5, 2.0), 1e-5),
]


@pytest.mark.parametrize("path,args,rtol", CASES, ids=[c[0] for c in CASES])
def test_distributions_match_jax(path, args, rtol):
    g, j = _fns(path)
    want = j(*args)
    _assert_same(g(*args), want, rtol, atol=1e-6)
    # Under jit, and under vmap over the first two arguments (rows in reverse order).
    _assert_same(gpuarr.jit(g)(*args), want, rtol, atol=1e-6)
    batched = (np.stack([args[0], args[0][::-1]]), np.stack([np.broadcast_to(args[1], (10,))] * 2))
    in_axes = (0, 0) + (None,) * (len(args) - 2)
    out = gpuarr.vmap(g, in_axes)(*batched, *args[2:])
    _assert_same(out[1], g(args[0][::-1], args[1], *args[2:]), 1e-6, 1e-7)
    _assert_same(out[0], want, rtol, atol=1e-6)


def test_truncnorm_exponentiated_forms():
    # JAX compiles each truncnorm function whole; the exp forms are checked against exp of
    # the log forms above (same arguments, so JAX reuses those compilations).
    for name in ("pdf", "cdf", "sf"):
        args = next(c[1] for c in CASES if c[0] == f"truncnorm.log{name}")
        g, j = _fns(f"truncnorm.{name}")
        got = g(*args)
        _assert_type(got, jax.eval_shape(j, *args))
        want = np.exp(np.asarray(getattr(jstats.truncnorm, f"log{name}")(*args)))
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-7)


# Each public function with Python scalars, for the weak types of the results. JAX only
# traces these (eval_shape) to save compiling each; the values are checked against the same
# call with float32 0-d arrays, whose values the table above covers.
SCALAR_CALLS = [
    ("binom.logpmf", (2, 5, 0.3)), ("binom.pmf", (2.0, 5, 0.3, 1)),
    ("betabinom.logpmf", (2, 5, 1.5, 2.0)), ("betabinom.pmf", (2, 5, 1.5, 2.0)),
    ("geom.logpmf", (3, 0.25)), ("geom.pmf", (3, 0.25, 1)),
    ("nbinom.logpmf", (3, 4, 0.25)), ("nbinom.pmf", (3, 4.0, 0.25)),
    ("gennorm.logpdf", (0.5, 1.5)), ("gennorm.pdf", (0.5, 2)), ("gennorm.cdf", (-0.5, 1.5)),
    ("pareto.logpdf", (2.0, 3.0)), ("pareto.pdf", (2, 3)), ("pareto.cdf", (2.0, 3.0, 0.5)),
    ("pareto.logcdf", (2.0, 3.0)), ("pareto.sf", (2.0, 3.0)), ("pareto.logsf", (2.0, 3.0)),
    ("pareto.ppf", (0.3, 3.0)),
    ("vonmises.logpdf", (0.5, 2.0)), ("vonmises.pdf", (0.5, 2)),
    ("wrapcauchy.logpdf", (0.5, 0.3)), ("wrapcauchy.pdf", (1, 0.3)),
    ("truncnorm.logpdf", (0.5, -1.0, 2.0)), ("truncnorm.pdf", (0.5, -1.0, 2.0)),
    ("truncnorm.cdf", (0.5, -1.0, 2.0)), ("truncnorm.logcdf", (0.5, -1.0, 2.0)),
    ("truncnorm.sf", (0.5, -1.0, 2.0)), ("truncnorm.logsf", (0.5, -1.0, 2.0)),
] + [(f"{m}.{f}", (0.3, 0.1, 2.0)) for m in ("gumbel_l", "gumbel_r")
     for f in ("logpdf", "pdf", "logcdf", "cdf", "sf", "logsf", "ppf")]


def test_python_scalars_give_jax_weak_types():
    for path, args in SCALAR_CALLS:
        g, j = _fns(path)
        got = g(*args)
        _assert_type(got, jax.eval_shape(j, *args))
        np.testing.assert_allclose(np.asarray(got), np.asarray(g(*map(np.float32, args))), rtol=1e-6)


# A (3, 1) int32 first argument against a (2,) float32 or integer second: float32 results,
# weak when the rest are Python floats. Values as for the same call with float32 arrays.
MIXED_CALLS = [("binom.logpmf", (5, 0.3)), ("betabinom.pmf", (5, 1.5, 2.0)), ("geom.pmf", (0.25,)),
               ("gennorm.cdf", (1.5,)), ("pareto.logsf", (3.0,)), ("wrapcauchy.logpdf", (0.3,)),
               ("truncnorm.logpdf", (-1.0, 2.0)), ("gumbel_r.logcdf", (0.1, 2.0))]


@pytest.mark.parametrize("second", [np.float32, np.int32])
def test_integer_arguments_promote_and_broadcast(second):
    for path, params in MIXED_CALLS:
        g, j = _fns(path)
        args = (np.arange(3, dtype=np.int32)[:, None] + 1,
                np.asarray(params[0]).astype(second) * np.array([1, 2], second)) + params[1:]
        got = g(*args)
        _assert_type(got, jax.eval_shape(j, *args))
        as_float = [np.float32(a) if isinstance(a, float) else np.asarray(a, np.float32) for a in args]
        np.testing.assert_allclose(np.asarray(got), np.asarray(g(*as_float)), rtol=1e-6)


X64_CASES = ["binom.logpmf", "gennorm.cdf", "vonmises.logpdf", "gumbel_r.logsf"]


def test_float64_matches_jax():
    with gpuarr.enable_x64(), jax.enable_x64():
        for path in X64_CASES:
            args = next(c[1] for c in CASES if c[0] == path)
            args = tuple(np.asarray(a, np.float64) if isinstance(a, np.ndarray) else a for a in args)
            g, j = _fns(path)
            got, want = g(*args), jax.jit(j)(*args)
            assert got.dtype == want.dtype == np.float64
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-13,
                                       err_msg=path)
        # JAX's float64 betaln is good to about 1e-7 only: check betabinom against SciPy instead.
        k, n = np.float64([0, 1, 2.7, 5]), np.float64([4, 4, 6, 9])
        a, b = np.float64([0.5, 2, 3.5, 11]), np.float64([2, 0.7, 4, 30])
        got = gstats.betabinom.logpmf(k, n, a, b)
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), scipy_stats.betabinom.logpmf(np.floor(k), n, a, b),
                                   rtol=1e-13)


# (function, arguments, which arguments to differentiate), all interior points.
GRAD_CASES = [
    ("gennorm.logpdf", (0.7, 1.5), (0, 1)), ("gennorm.cdf", (0.7, 1.5), (0, 1)),
    ("pareto.logpdf", (2.5, 1.5, 0.2, 1.3), (0, 1, 2, 3)), ("pareto.logcdf", (2.5, 1.5), (0, 1)),
    ("pareto.sf", (2.5, 1.5, 0.2, 1.3), (0, 1)), ("pareto.ppf", (0.3, 1.5, 0.2, 1.3), (0, 1)),
    ("vonmises.logpdf", (0.7, 3.0), (0, 1)), ("wrapcauchy.logpdf", (0.7, 0.4), (0, 1)),
    ("gumbel_l.logpdf", (0.4, 0.1, 1.5), (0, 1)), ("gumbel_l.logcdf", (0.4, 0.1, 1.5), (0, 2)),
    ("gumbel_l.ppf", (0.3, 0.1, 1.5), (1, 2)), ("gumbel_l.logsf", (0.4, 0.1, 1.5), (0, 2)),
    ("gumbel_r.logpdf", (0.4, 0.1, 1.5), (0, 1)), ("gumbel_r.logsf", (0.4, 0.1, 1.5), (0, 2)),
    ("gumbel_r.sf", (0.4, 0.1, 1.5), (0, 2)), ("gumbel_r.cdf", (0.4, 0.1, 1.5), (0, 2)),
    ("binom.logpmf", (2.0, 5.0, 0.3), (1, 2)), ("betabinom.logpmf", (2.0, 5.0, 1.5, 2.0), (1, 2, 3)),
    ("nbinom.logpmf", (2.0, 3.5, 0.3), (1, 2)), ("geom.logpmf", (3.0, 0.3), (1,)),
]


def test_gradients_match_jax():
    for path, args, argnums in GRAD_CASES:
        g, j = _fns(path)
        got = gpuarr.grad(g, argnums)(*args)
        want = jax.jit(jax.grad(j, argnums))(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6, err_msg=path)


def test_gradients_through_integer_constants_fail_as_in_jax():
    # JAX writes -log(scale) as xlogy(-1, scale), whose derivative in the integer -1 is
    # float0: differentiating in scale (logpdf) or p (ppf) fails in JAX, and here too.
    for path, args, argnum in [("gumbel_l.logpdf", (0.4, 0.1, 1.5), 2), ("gumbel_r.ppf", (0.3, 0.1, 1.5), 0)]:
        g, j = _fns(path)
        with pytest.raises(TypeError, match="float0"):
            jax.eval_shape(jax.grad(j, argnum), *args)
        with pytest.raises(TypeError, match="float0"):
            gpuarr.grad(g, argnum)(*args)


def test_truncnorm_gradients_under_jit_and_vmap():
    xs, bs = f32([0.2, 0.9, 1.7]), f32([2.0, 1.0, 3.0])
    argnums, in_axes = (0, 1, 2, 3, 4), (0, None, 0, None, None)
    args = (xs, -1.0, bs, 0.1, 1.2)
    got = gpuarr.jit(gpuarr.vmap(gpuarr.grad(gstats.truncnorm.logpdf, argnums), in_axes))(*args)
    want = jax.jit(jax.vmap(jax.grad(jstats.truncnorm.logpdf, argnums), in_axes))(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


# ---------------------------------------------------------------- dirichlet, multinomial


def test_dirichlet_matches_jax():
    alpha = f32([0.5, 2.0, 3.0])
    # Columns: on the simplex, off it (sum), a zero component; then the short form.
    x = f32([[0.2, 0.2, 0.0], [0.3, 0.3, 0.4], [0.5, 0.6, 0.6]])
    g, j = _fns("dirichlet.logpdf")
    for args in [(x, alpha), (x[:2], alpha), (x[:, 0], alpha), (x[:2, 0], np.array([1, 2, 3]))]:
        _assert_same(g(*args), jax.jit(j)(*args), 1e-5)
    _assert_same(gstats.dirichlet.pdf(x, alpha), jax.jit(jstats.dirichlet.pdf)(x, alpha), 1e-5)
    _assert_same(gpuarr.jit(g)(x, alpha), g(x, alpha), 1e-6)
    _assert_same(gpuarr.vmap(g, (1, None))(x, alpha), g(x, alpha), 1e-6)
    got = gpuarr.grad(lambda x, a: g(x, a)[:2].sum(), (0, 1))(x, alpha)
    want = jax.jit(jax.grad(lambda x, a: j(x, a)[:2].sum(), (0, 1)))(x, alpha)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)
    with pytest.raises(ValueError, match="must be one-dimensional"):
        g(x, alpha[None])
    with pytest.raises(ValueError, match="one entry fewer"):
        g(f32([0.5, 0.5, 0, 0]), alpha)
    with pytest.raises(TypeError):
        g([0.25, 0.75], alpha[:2])


def test_multinomial_matches_jax():
    p = f32([0.2, 0.3, 0.5])
    cases = [(np.array([1, 2, 3]), 6, p), (np.array([1, 2, 3]), 5, p), (np.array([0, 0, 4]), 4, p),
             # JAX checks the sum of all of x, so a stack of outcomes is all -inf.
             (np.array([[1, 2, 3], [2, 2, 2]]), 6, p), (np.array([1, 2, 3]), np.array([6, 5, 6]), p),
             (np.array([2, 0, 0], np.int8), np.int16(2), p), (np.array([0, 1, 0]), 1, f32([0.0, 1.0, 0.0]))]
    g, j = _fns("multinomial.logpmf")
    for args in cases:  # JAX's gammaln(2) is 5e-7 off 0, hence atol
        _assert_same(g(*args), jax.jit(j)(*args), 1e-5, 1e-6)
    _assert_same(gstats.multinomial.pmf(*cases[0]), jax.jit(jstats.multinomial.pmf)(*cases[0]), 1e-5)
    xb = np.array([[1, 2, 3], [2, 2, 2], [0, 6, 0]])
    got = gpuarr.vmap(g, (0, None, None))(xb, 6, p)
    _assert_same(got, gnp.stack([g(x, 6, p) for x in xb]), 1e-6)
    _assert_same(gpuarr.jit(g)(xb[0], 6, p), g(xb[0], 6, p), 1e-6)
    got = gpuarr.grad(g, 2)(xb[0], 6, p)
    want = jax.jit(jax.grad(j, 2))(xb[0], 6, p)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    with pytest.raises(ValueError, match="must be of integer type"):
        g(f32([1, 2, 3]), 6, p)


def test_poisson_entropy_matches_jax():
    entropy = gstats.poisson.entropy
    mu = f32([0, 1e-3, 0.5, 3, 9.99, 10, 42, 99.5, 100, 1e4])
    # Float32 sums of small terms: JAX's is the less accurate at mu = 1e-3 (SciPy: 0.0079081018).
    _assert_same(entropy(mu), jstats.poisson.entropy(mu), 2e-5, 1e-6)
    np.testing.assert_allclose(np.asarray(entropy(mu))[1], 0.0079081018, rtol=2e-6)
    _assert_type(entropy(2.5), jax.eval_shape(jstats.poisson.entropy, 2.5))
    args = (f32([[1.0], [20.0]]), f32([0.0, 1.0, 2.0]))
    _assert_type(entropy(*args), jax.eval_shape(jstats.poisson.entropy, *args))
    want = np.broadcast_to(np.asarray(entropy(f32([1, 20])))[:, None], (2, 3))
    np.testing.assert_allclose(np.asarray(entropy(*args)), want)
    _assert_same(gpuarr.jit(entropy)(mu), entropy(mu), 1e-6)
    # In float64 the same sums and series, which are good to about 1e-6 (JAX's method).
    with gpuarr.enable_x64(), jax.enable_x64():
        mu64 = mu.astype(np.float64)
        want = jax.jit(jstats.poisson.entropy)(mu64)
        np.testing.assert_allclose(np.asarray(entropy(mu64)), np.asarray(want), rtol=1e-12)


# ---------------------------------------------------------------- mode, rankdata, sem


def test_mode_matches_jax():
    ints = np.array([[1, 2, 2, 3], [3, 3, 1, 1], [5, 1, 1, 5]])
    floats = f32([[1.5, nan, nan], [2.0, 2.0, nan], [-inf, 0.5, -inf]])
    for a, axis, keepdims in [(ints, 0, False), (ints, None, True), (floats, -1, False),
                              (np.zeros((0, 3), f32), 1, True), (3.5, 0, False)]:
        got, want = gstats.mode(a, axis, keepdims=keepdims), jstats.mode(a, axis, keepdims=keepdims)
        assert type(got).__name__ == "ModeResult" and got._fields == ("mode", "count")
        _assert_same(got.mode, want.mode, 0)
        _assert_same(got.count, want.count, 0)
    got = gpuarr.jit(functools.partial(gstats.mode, axis=1))(ints)
    _assert_same(got.mode, gstats.mode(ints, 1).mode, 0)
    _assert_same(got.count, gstats.mode(ints, 1).count, 0)
    got = gpuarr.vmap(gstats.mode)(ints)
    _assert_same(got.mode, gstats.mode(ints, 1).mode, 0)
    with pytest.raises(ValueError, match="Illegal nan_policy value 'bad'"):
        gstats.mode(ints, nan_policy="bad")
    for policy in ("omit", "raise"):
        with pytest.raises(NotImplementedError):
            gstats.mode(ints, nan_policy=policy)


def test_rankdata_matches_scipy_and_jax():
    a = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9]])
    b = f32([[0.5, -inf, 0.5, 2.0], [1.0, nan, 0.0, 1.0]])
    for method in ("average", "min", "max", "dense", "ordinal"):
        for x, axis in [(a, None), (a, 0), (a, -1), (b, 1), (b, None), (f32([]), None)]:
            got = gstats.rankdata(x, method, axis=axis)
            assert got.dtype == np.float32 and not got.weak_type
            np.testing.assert_array_equal(np.asarray(got), scipy_stats.rankdata(x, method, axis=axis))
    for x, method, axis in [(a, "average", None), (b, "dense", 1), (2, "min", None)]:
        _assert_same(gstats.rankdata(x, method, axis=axis), jstats.rankdata(x, method, axis=axis), 0)
    rank = functools.partial(gstats.rankdata, method="min")
    _assert_same(gpuarr.jit(rank)(b), rank(b), 0)
    _assert_same(gpuarr.vmap(rank)(b), rank(b, axis=1), 0)
    with pytest.raises(ValueError, match="unknown method 'bad'"):
        gstats.rankdata(a, "bad")
    with pytest.raises(ValueError, match="Illegal nan_policy"):
        gstats.rankdata(a, nan_policy="x")
    with pytest.raises(NotImplementedError):
        gstats.rankdata(a, nan_policy="omit")


def test_sem_matches_scipy_and_jax():
    a = f32([[1.0, 2.0, 4.0, 7.0], [0.5, nan, 3.0, 1.0], [2.0, 2.0, 2.0, 9.0]])
    for kwargs in [{}, {"axis": 1}, {"axis": None}, {"axis": -1, "ddof": 0}, {"keepdims": True},
                   {"nan_policy": "omit"}, {"axis": 1, "nan_policy": "omit", "keepdims": True}]:
        got = gstats.sem(a, **kwargs)
        assert got.dtype == np.float32
        want = scipy_stats.sem(a.astype(np.float64), **kwargs)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    ints = np.arange(12).reshape(3, 4)
    for x, kwargs in [(a, {"axis": 1, "nan_policy": "omit"}), (ints, {}),
                      (ints, {"axis": None, "keepdims": True})]:
        _assert_same(gstats.sem(x, **kwargs), jstats.sem(x, **kwargs), 1e-6)
    _assert_same(gpuarr.jit(gstats.sem, static_argnames="axis")(a, axis=1), gstats.sem(a, axis=1), 1e-6)
    _assert_same(gpuarr.vmap(gstats.sem)(a), gstats.sem(a, axis=1), 1e-6)
    np.testing.assert_allclose(np.asarray(gpuarr.grad(lambda x: gstats.sem(x, None))(a[0])),
                               np.asarray(jax.grad(lambda x: jstats.sem(x, None))(a[0])), rtol=1e-6)
    with pytest.raises(ValueError, match="raise is not supported"):
        gstats.sem(a, nan_policy="raise")


# ---------------------------------------------------------------- gaussian_kde


RNG = np.random.default_rng(0)
DATA = RNG.normal(size=(2, 12)).astype(f32)
WEIGHTS = RNG.uniform(0.5, 2.0, size=12).astype(f32)
POINTS = RNG.normal(size=(2, 5)).astype(f32) * 2


def _kde_pair(*args, **kwargs):
    return gstats.gaussian_kde(*args, **kwargs), jstats.gaussian_kde(*args, **kwargs)


def test_kde_densities_match_jax():
    bws = (None, "silverman", 0.4, lambda kde: 0.5 * kde.neff ** -0.2)
    cases = [(DATA, bw, WEIGHTS, POINTS) for bw in bws]
    cases += [(DATA, None, None, POINTS[:, 0]), (DATA[0], "scott", None, POINTS[0])]
    for data, bw, weights, points in cases:
        g, j = _kde_pair(data, bw, weights)
        assert (g.d, g.n) == (j.d, j.n)
        for field in ("neff", "dataset", "weights", "covariance", "inv_cov"):
            _assert_same(getattr(g, field), getattr(j, field), 1e-5)
        want = j.evaluate(points)
        for method in ("evaluate", "pdf", "__call__"):
            _assert_same(getattr(g, method)(points), want, 2e-5, 1e-7)
        _assert_same(g.logpdf(points), j.logpdf(points), 2e-5, 1e-6)
    # Silverman's factor differs from Scott's outside two dimensions.
    g, j = _kde_pair(DATA[0], "silverman")
    _assert_same(g.covariance, j.covariance, 1e-6)
    assert not np.allclose(np.asarray(g.covariance), np.asarray(gstats.gaussian_kde(DATA[0]).covariance))


def test_kde_integrals_match_jax():
    (g, j), (g2, j2) = _kde_pair(DATA, weights=WEIGHTS), _kde_pair(DATA[:, :5] + 1)
    mean, cov = f32([0.3, -0.2]), f32([[1.0, 0.2], [0.2, 0.5]])
    _assert_same(g.integrate_gaussian(mean, cov), j.integrate_gaussian(mean, cov), 1e-5)
    _assert_same(g.integrate_kde(g2), j.integrate_kde(j2), 1e-5)
    _assert_same(g2.integrate_kde(g), g.integrate_kde(g2), 1e-6)
    g1, j1 = _kde_pair(DATA[0], weights=WEIGHTS)
    _assert_same(g1.integrate_box_1d(-0.5, 1.0), j1.integrate_box_1d(-0.5, 1.0), 1e-5)
    _assert_same(g1.integrate_gaussian(0.5, 2.0), j1.integrate_gaussian(0.5, 2.0), 1e-5)
    with pytest.raises(ValueError, match="only handles 1D"):
        g.integrate_box_1d(0.0, 1.0)
    with pytest.raises(ValueError, match="must be scalars"):
        g1.integrate_box_1d(f32([0.0]), 1.0)
    with pytest.raises(ValueError, match="not the same dimensionality"):
        g.integrate_kde(g1)
    with pytest.raises(ValueError, match="mean does not have dimension 2"):
        g.integrate_gaussian(f32([0.0, 0.0, 0.0]), cov)
    with pytest.raises(ValueError, match="covariance does not have dimension 2"):
        g.integrate_gaussian(mean, np.eye(3))


def test_kde_resample_follows_jax_random_streams():
    for data, weights, shape in [(DATA, WEIGHTS, (7,)), (DATA[0], None, ())]:
        g, j = _kde_pair(data, weights=weights)
        gkey, jkey = gpuarr.random.key(11), jax.random.key(11)
        got, want = g.resample(gkey, shape), j.resample(jkey, shape)
        assert got.shape == want.shape and got.dtype == want.dtype
        # The chosen data points are the same bits as JAX's ...
        gind = gpuarr.random.choice(gpuarr.random.split(gkey)[0], g.n, shape, p=g.weights)
        jind = jax.random.choice(jax.random.split(jkey)[0], j.n, shape, p=j.weights)
        np.testing.assert_array_equal(np.asarray(gind), np.asarray(jind))
        # ... the noise is multivariate_normal's draw, bit for bit ...
        eps = gpuarr.random.multivariate_normal(gpuarr.random.split(gkey)[1], gnp.zeros(g.d), g.covariance,
                                                shape=shape).T
        np.testing.assert_array_equal(np.asarray(got), np.asarray(g.dataset[:, gind] + eps))
        # ... and the draws agree with JAX's to float32 rounding (XLA fuses JAX's normal draws,
        # which moves a last bit here and there).
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    resample = gpuarr.jit(lambda kde, key: kde.resample(key, (3,)))
    np.testing.assert_array_equal(np.asarray(resample(g, gkey)), np.asarray(g.resample(gkey, (3,))))


def test_kde_is_a_pytree_under_jit_vmap_and_grad():
    g, j = _kde_pair(DATA, weights=WEIGHTS)
    leaves, treedef = gpuarr.tree_util.tree_flatten(g)
    assert len(leaves) == 5
    rebuilt = gpuarr.tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is gstats.gaussian_kde
    _assert_same(rebuilt.logpdf(POINTS), g.logpdf(POINTS), 0)
    _assert_same(gpuarr.jit(lambda k, x: k.logpdf(x))(g, POINTS), g.logpdf(POINTS), 1e-6)
    got = gpuarr.vmap(lambda x: g.evaluate(x)[0], in_axes=1)(POINTS)
    _assert_same(got, g.evaluate(POINTS), 1e-6, 1e-8)
    got = gpuarr.grad(lambda x: g.logpdf(x).sum())(POINTS)
    want = jax.grad(lambda x: j.logpdf(x).sum())(POINTS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)
    # Gradients with respect to the data flow through the bandwidth and covariance.
    got = gpuarr.grad(lambda d: gstats.gaussian_kde(d).logpdf(POINTS).sum())(DATA)
    want = jax.jit(jax.grad(lambda d: jstats.gaussian_kde(d).logpdf(POINTS).sum()))(DATA)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_kde_errors_follow_jax():
    kde = gstats.gaussian_kde
    with pytest.raises(NotImplementedError, match="complex data"):
        kde(np.array([1j, 2.0]))
    with pytest.raises(ValueError, match="multiple elements"):
        kde(f32([1.0]))
    with pytest.raises(ValueError, match="one-dimensional"):
        kde(DATA, weights=np.ones((1, 12)))
    with pytest.raises(ValueError, match="of length n"):
        kde(DATA, weights=np.ones(5))
    with pytest.raises(ValueError, match="`bw_method` should be"):
        kde(DATA, bw_method="other")
    with pytest.raises(TypeError):
        kde([1.0, 2.0])
    g = kde(DATA)
    with pytest.raises(ValueError, match="points have dimension 3, dataset has dimension 2"):
        g.evaluate(np.ones((3, 4)))
    with pytest.raises(NotImplementedError, match="complex coordinates"):
        g.logpdf(np.ones((2, 2), np.complex64))
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        g.integrate_box(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="bandwidth"):
        g.set_bandwidth("scott")
    with pytest.raises(Exception, match="cannot assign"):
        g.neff = 1.0
