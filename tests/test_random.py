"""gpuarr.random samplers: JAX's known answers, the same streams as JAX itself, the same streams
eagerly, under jit and under vmap, statistical checks against closed forms, and argument errors."""
import math
import warnings

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import random
from tests.jax_compare import FLOAT16_CONTRACTION_TOL, xla_contracts_float16

KEY = random.key(0)
P4 = np.array([.1, .2, .3, .4], np.float32)
COUNTS = np.array([0, 1, 3, 20, 50, 1000, 7.5, -1, np.nan, np.inf, 30, 30], np.float32)
PROBS = np.array([.5, .2, .9, .7, .5, .01, .3, .5, .5, .3, np.nan, -.1], np.float32)


def _ulp_error(ours, theirs):
    """|ours - theirs| in units of the float spacing at max(|theirs|, 1): ulps for values of
    magnitude >= 1, and a multiple of the spacing of 1.0 (epsilon) below, where transcendental
    intermediates of order 1 (log(u) in gumbel) set the absolute error."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if np.iscomplexobj(theirs):
        return max(_ulp_error(ours.real, theirs.real), _ulp_error(ours.imag, theirs.imag))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    wide_o, wide_t = ours.astype(np.float64), theirs.astype(np.float64)
    same = (wide_o == wide_t) | (np.isnan(wide_o) & np.isnan(wide_t))
    scale = np.spacing(np.maximum(np.abs(theirs), np.ones((), theirs.dtype))).astype(np.float64)
    err = np.where(same, 0.0, np.abs(wide_o - wide_t) / scale)
    return float(err.max()) if err.size else 0.0


# ---------------------------------------------------------------- the known answers


def test_uniform_known_answer():
    u = random.uniform(KEY, (5,))
    assert u.dtype == np.float32 and u.shape == (5,)
    assert u.tolist() == [0.9476670026779175, 0.9785798788070679, 0.33229148387908936,
                          0.46866846084594727, 0.569888710975647]


def test_randint_known_answer():
    r = random.randint(KEY, (3, 3), 0, 8)
    assert r.dtype == np.int32
    assert r.tolist() == [[5, 0, 0], [5, 3, 3], [0, 7, 5]]


# ---------------------------------------------------------------- the same streams as JAX

P5 = np.array([.1, .2, .3, .2, .2], np.float32)
COV = np.array([[2., .5, 0.], [.5, 1., .2], [0., .2, 1.]], np.float32)
LOGITS = np.log(np.array([[.1, .2, .7], [.5, .25, .25]], np.float32))

# name -> (sampler(random_module, key), tolerance): tolerance None means bit-exact.
CASES = {
    "uniform": (lambda r, k: r.uniform(k, (4, 5)), None),
    "uniform_range": (lambda r, k: r.uniform(k, (4, 5), minval=-2., maxval=3.), None),
    "uniform_array_bounds": (lambda r, k: r.uniform(k, (2, 3), minval=np.float32([0, 1, 2]),
                                                    maxval=np.float32(5)), None),
    "uniform_float16": (lambda r, k: r.uniform(k, (9,), dtype="float16"), None),
    "uniform_bfloat16": (lambda r, k: r.uniform(k, (9,), dtype="bfloat16"), None),
    # XLA's CPU code fuses float16's scale-and-shift (one rounding) on some processors and
    # rounds twice on others; gpuarr rounds twice, as the jaxpr's mul and add do.
    "uniform_float16_range": (lambda r, k: r.uniform(k, (50,), "float16", -3., 2.), 1),
    "uniform_bfloat16_range": (lambda r, k: r.uniform(k, (50,), "bfloat16", -3., 2.), None),
    "randint": (lambda r, k: r.randint(k, (50,), -5, 1000), None),
    "randint_uint8_full_range": (lambda r, k: r.randint(k, (40,), 0, 256, "uint8"), None),
    "randint_int16": (lambda r, k: r.randint(k, (40,), -300, 300, "int16"), None),
    "randint_array_bounds": (lambda r, k: r.randint(k, (2, 3), np.array([0, 10, 20]),
                                                    np.array([5, 15, 100])), None),
    "randint_empty_range": (lambda r, k: r.randint(k, (4,), 3, 3), None),
    "bernoulli": (lambda r, k: r.bernoulli(k, 0.3, (20,)), None),
    "bernoulli_array_p": (lambda r, k: r.bernoulli(k, np.linspace(0, 1, 10).astype(np.float32)),
                          None),
    "bernoulli_high": (lambda r, k: r.bernoulli(k, 0.3, (20,), mode="high"), None),
    "rademacher": (lambda r, k: r.rademacher(k, (30,)), None),
    "categorical": (lambda r, k: r.categorical(k, LOGITS, shape=(6, 2)), None),
    "categorical_axis0": (lambda r, k: r.categorical(k, LOGITS, axis=0), None),
    "categorical_no_replace": (lambda r, k: r.categorical(k, np.zeros((4, 10), np.float32),
                                                          shape=(3, 4), replace=False), None),
    "choice": (lambda r, k: r.choice(k, 10, (5,)), None),
    "choice_array_axis1": (lambda r, k: r.choice(k, np.arange(20).reshape(4, 5), (3,), axis=1),
                           None),
    "choice_no_replace": (lambda r, k: r.choice(k, 10, (5,), replace=False), None),
    "choice_p": (lambda r, k: r.choice(k, 5, (8,), p=P5), None),
    "choice_p_no_replace": (lambda r, k: r.choice(k, 5, (3,), replace=False, p=P5), None),
    "permutation_int": (lambda r, k: r.permutation(k, 10), None),
    "permutation_array_axis1": (lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1),
                                None),
    "permutation_independent": (lambda r, k: r.permutation(
        k, np.arange(12).reshape(3, 4), axis=1, independent=True), None),
    "gumbel": (lambda r, k: r.gumbel(k, (100,)), 2),
    "gumbel_high": (lambda r, k: r.gumbel(k, (100,), mode="high"), 2),
    "normal": (lambda r, k: r.normal(k, (100,)), None),
    "normal_complex": (lambda r, k: r.normal(k, (10,), dtype="complex64"), None),
    "normal_bfloat16": (lambda r, k: r.normal(k, (10,), dtype="bfloat16"), None),
    "truncated_normal": (lambda r, k: r.truncated_normal(k, -1., 2., (100,)), None),
    "exponential": (lambda r, k: r.exponential(k, (100,)), 2),
    "laplace": (lambda r, k: r.laplace(k, (100,)), 2),
    "logistic": (lambda r, k: r.logistic(k, (100,)), 2),
    "cauchy": (lambda r, k: r.cauchy(k, (100,)), 2),
    "lognormal": (lambda r, k: r.lognormal(k, 0.5, (20,)), 2),
    "multivariate_normal": (lambda r, k: r.multivariate_normal(k, np.zeros(3, np.float32), COV,
                                                               (4,)), 4),
    "gamma": (lambda r, k: r.gamma(k, np.array([0.3, 1., 2.5, 10.], np.float32)), 4),
    "beta": (lambda r, k: r.beta(k, 2., 3., (5,)), 4),
    "poisson": (lambda r, k: r.poisson(k, np.array([0.5, 3., 20., 100.], np.float32)), None),
    "pareto": (lambda r, k: r.pareto(k, 3., (50,)), 2),
    "rayleigh": (lambda r, k: r.rayleigh(k, 2., (50,)), 2),
    "maxwell": (lambda r, k: r.maxwell(k, (50,)), 2),
    "weibull_min": (lambda r, k: r.weibull_min(k, 2., 1.5, (50,)), 2),
    "geometric": (lambda r, k: r.geometric(k, 0.3, (50,)), None),
    "f": (lambda r, k: r.f(k, 3., 5., (5,)), 4),
}

SLOW_IN_JAX = {"gamma", "beta", "poisson", "f"}

# Binomial and multinomial (while loops and scans in JAX), triangular, wald and
# double_sided_maxwell.
CASES.update({
    "binomial_inversion": (lambda r, k: r.binomial(k, 5., .3, (64,)), None),
    "binomial_btrs": (lambda r, k: r.binomial(k, 200., .4, (64,)), None),
    "binomial_p_above_half": (lambda r, k: r.binomial(k, 40., .95, (32,)), None),
    "binomial_edge_cases": (lambda r, k: r.binomial(k, COUNTS, PROBS), None),
    "multinomial": (lambda r, k: r.multinomial(k, 20., P4), None),
    "multinomial_batched": (lambda r, k: r.multinomial(k, np.float32([10, 300]),
                                                       np.float32([.5, .25, .25]),
                                                       shape=(3, 2, 3)), None),
    "triangular": (lambda r, k: r.triangular(k, -1., .3, 2., (500,)), None),
    "triangular_arrays": (lambda r, k: r.triangular(k, np.float32([0, 1]), np.float32([.5, 3]),
                                                    np.float32([1, 4]), (3, 2)), None),
    "wald": (lambda r, k: r.wald(k, np.float32([.5, 1, 3, 10]), (200, 4)), 2),
    "double_sided_maxwell": (lambda r, k: r.double_sided_maxwell(k, np.float32([0, 1]), 2.,
                                                                 (50,)), 2),
})
SLOW_IN_JAX |= {"binomial_btrs", "binomial_p_above_half", "multinomial", "multinomial_batched"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_stream_matches_jax(name):
    jax = pytest.importorskip("jax")
    sampler, tol = CASES[name]
    # JAX takes seconds to compile its rejection samplers (while loops): one key for those.
    for seed in (0,) if name in SLOW_IN_JAX else (0, 42):
        ours = sampler(random, random.key(seed))
        theirs = np.asarray(sampler(jax.random, jax.random.key(seed)))
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
        if ours.dtype == np.float16 and xla_contracts_float16():
            tol = max(tol or 0, FLOAT16_CONTRACTION_TOL)
        if tol is None:
            np.testing.assert_array_equal(np.asarray(ours), theirs, err_msg=name)
        else:
            assert _ulp_error(ours, theirs) <= tol, (name, seed, _ulp_error(ours, theirs))


def test_large_uniform_and_normal_streams_match_jax():
    jax = pytest.importorskip("jax")
    n = 20000
    np.testing.assert_array_equal(np.asarray(random.uniform(KEY, (n,), minval=-1., maxval=1.)),
                                  np.asarray(jax.random.uniform(jax.random.key(0), (n,),
                                                                minval=-1., maxval=1.)))
    # erf_inv follows XLA's float32 steps (gpuarr/random/xla_math.py): equal bit for bit.
    np.testing.assert_array_equal(np.asarray(random.normal(random.key(7), (n,))),
                                  np.asarray(jax.random.normal(jax.random.key(7), (n,))))


def test_float64_streams_with_x64_match_jax():
    jax = pytest.importorskip("jax")
    with gpuarr.enable_x64(), jax.enable_x64(True):
        ours, theirs = random.uniform(KEY, (50,)), jax.random.uniform(jax.random.key(0), (50,))
        assert ours.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        np.testing.assert_array_equal(np.asarray(random.randint(KEY, (20,), 0, 2**40)),
                                      np.asarray(jax.random.randint(jax.random.key(0), (20,), 0,
                                                                    2**40)))
        assert random.randint(KEY, (2,), 0, 5).dtype == np.int64
        ours = random.normal(KEY, (50,))
        theirs = jax.random.normal(jax.random.key(0), (50,))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-14, atol=1e-14)


# ---------------------------------------------------------------- eager, jit and vmap agree

TRANSFORM_CASES = {
    "uniform": lambda k: random.uniform(k, (3, 2), minval=-1., maxval=2.),
    "normal": lambda k: random.normal(k, (4,)),
    "randint": lambda k: random.randint(k, (5,), 0, 10),
    "bernoulli": lambda k: random.bernoulli(k, 0.4, (6,)),
    "categorical": lambda k: random.categorical(k, jnp.asarray(LOGITS)),
    "choice": lambda k: random.choice(k, 7, (3,), replace=False),
    "permutation": lambda k: random.permutation(k, 6),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "truncated_normal": lambda k: random.truncated_normal(k, 0., 1., (3,)),
    "gamma": lambda k: random.gamma(k, jnp.float32([0.5, 3.])),
    "beta": lambda k: random.beta(k, 2., 0.5, (2,)),
    "poisson": lambda k: random.poisson(k, jnp.float32([1., 30.])),
    "split": lambda k: random.key_data(random.split(k, 3)),
    "binomial": lambda k: random.binomial(k, jnp.float32([4., 200.]), .3),
    "multinomial": lambda k: random.multinomial(k, 12., jnp.asarray(P4)),
    "triangular": lambda k: random.triangular(k, 0., .2, 1., (3,)),
    "wald": lambda k: random.wald(k, 1.5, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0., 1., (2,)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_streams_equal_eager_jit_vmap(name):
    f = TRANSFORM_CASES[name]
    keys = random.split(random.key(11), 3)
    eager = [np.asarray(f(k)) for k in keys]
    jitted = [np.asarray(gpuarr.jit(f)(k)) for k in keys]
    batched = np.asarray(gpuarr.vmap(f)(keys))
    for e, j, b in zip(eager, jitted, batched):
        np.testing.assert_array_equal(e, j)
        np.testing.assert_array_equal(e, b)


def test_sampler_under_jit_takes_traced_bounds():
    f = gpuarr.jit(lambda k, lo, hi: random.uniform(k, (4,), minval=lo, maxval=hi))
    np.testing.assert_array_equal(np.asarray(f(KEY, -1., 3.)),
                                  np.asarray(random.uniform(KEY, (4,), minval=-1., maxval=3.)))
    g = gpuarr.jit(lambda k, p: random.bernoulli(k, p, (8,)))
    np.testing.assert_array_equal(np.asarray(g(KEY, 0.25)), np.asarray(random.bernoulli(KEY, 0.25, (8,))))


def test_gradients_through_reparameterised_samplers():
    # d/dx sum(x * normal) = sum(normal); uniform(lo, lo + 1) moves one for one with lo.
    z = np.asarray(random.normal(KEY, (5,)), np.float64)
    g = gpuarr.grad(lambda x: (random.normal(KEY, (5,)) * x).sum())(2.)
    np.testing.assert_allclose(float(g), z.sum(), rtol=1e-5)
    g = gpuarr.grad(lambda lo: random.uniform(KEY, (4,), minval=lo, maxval=lo + 1.).sum())(0.5)
    assert abs(float(g) - 4.0) < 1e-5


# ---------------------------------------------------------------- statistics

N = 20000


def _ks(samples, cdf):
    """Kolmogorov-Smirnov distance between the samples and a closed-form CDF."""
    x = np.sort(np.asarray(samples, np.float64))
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_LIMIT = 1.63 / math.sqrt(N)  # the 1% critical value
_erf = np.vectorize(math.erf)

KS_CASES = {
    "uniform": (lambda k: random.uniform(k, (N,), minval=-1., maxval=3.),
                lambda x: (x + 1) / 4),
    "normal": (lambda k: random.normal(k, (N,)), lambda x: 0.5 * (1 + _erf(x / math.sqrt(2)))),
    "truncated_normal": (lambda k: random.truncated_normal(k, -0.5, 1.5, (N,)),
                         lambda x: (_erf(x / math.sqrt(2)) - math.erf(-0.5 / math.sqrt(2)))
                         / (math.erf(1.5 / math.sqrt(2)) - math.erf(-0.5 / math.sqrt(2)))),
    "exponential": (lambda k: random.exponential(k, (N,)), lambda x: 1 - np.exp(-x)),
    "laplace": (lambda k: random.laplace(k, (N,)),
                lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
    "logistic": (lambda k: random.logistic(k, (N,)), lambda x: 1 / (1 + np.exp(-x))),
    "cauchy": (lambda k: random.cauchy(k, (N,)), lambda x: 0.5 + np.arctan(x) / np.pi),
    "gumbel": (lambda k: random.gumbel(k, (N,)), lambda x: np.exp(-np.exp(-x))),
    "gumbel_high": (lambda k: random.gumbel(k, (N,), mode="high"), lambda x: np.exp(-np.exp(-x))),
    # Gamma(2): 1 - e^-x (1 + x); Beta(2, 1): x^2; chi-square(2) = Exponential(1/2).
    "gamma": (lambda k: random.gamma(k, 2., (N // 4,)), lambda x: 1 - np.exp(-x) * (1 + x)),
    "beta": (lambda k: random.beta(k, 2., 1., (N // 4,)), lambda x: x ** 2),
    "chisquare": (lambda k: random.chisquare(k, 2., (N // 4,)), lambda x: 1 - np.exp(-x / 2)),
    "pareto": (lambda k: random.pareto(k, 3., (N,)), lambda x: 1 - x ** -3.),
    "rayleigh": (lambda k: random.rayleigh(k, 2., (N,)), lambda x: 1 - np.exp(-x ** 2 / 8)),
    "weibull_min": (lambda k: random.weibull_min(k, 2., 1.5, (N,)),
                    lambda x: 1 - np.exp(-(x / 2) ** 1.5)),
    "loggamma": (lambda k: jnp.exp(random.loggamma(k, 2., (N // 4,))),
                 lambda x: 1 - np.exp(-x) * (1 + x)),
    "maxwell": (lambda k: random.maxwell(k, (N,)),
                lambda x: _erf(x / math.sqrt(2)) - np.sqrt(2 / np.pi) * x * np.exp(-x ** 2 / 2)),
    "generalized_normal_p2": (lambda k: random.generalized_normal(k, 2., (N // 4,)),
                              lambda x: 0.5 * (1 + _erf(x))),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)),
                  lambda x: 0.5 * (1 + _erf(np.log(x) / (0.5 * math.sqrt(2))))),
}


@pytest.mark.parametrize("name", sorted(KS_CASES))
def test_kolmogorov_smirnov(name):
    sampler, cdf = KS_CASES[name]
    samples = np.asarray(sampler(random.key(3)))
    assert np.isfinite(samples).all()
    limit = 1.63 / math.sqrt(len(samples))
    assert _ks(samples, cdf) < limit, name


def test_moments_of_integer_and_discrete_samplers():
    k = random.key(5)
    r = np.asarray(random.randint(k, (N,), -3, 7))
    assert r.min() == -3 and r.max() == 6
    np.testing.assert_allclose(np.bincount(r + 3) / N, 0.1, atol=0.012)
    b = np.asarray(random.bernoulli(k, 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.012
    s = np.asarray(random.rademacher(k, (N,)))
    assert set(np.unique(s)) == {-1, 1} and abs(s.mean()) < 0.03
    p = np.asarray(random.poisson(k, 4., (N // 2,)))
    assert abs(p.mean() - 4) < 0.1 and abs(p.var() - 4) < 0.3
    p = np.asarray(random.poisson(k, 50., (N // 2,)))
    assert abs(p.mean() - 50) < 0.4 and abs(p.var() - 50) < 3
    g = np.asarray(random.geometric(k, 0.3, (N,)))
    assert g.dtype == np.int32 and g.min() >= 1 and abs(g.mean() - 1 / 0.3) < 0.1
    bits = np.asarray(random.bits(k, (N // 4,)))
    np.testing.assert_allclose(np.unpackbits(bits.view(np.uint8)).mean(), 0.5, atol=0.005)
    c = np.asarray(random.categorical(k, jnp.log(jnp.float32([.1, .2, .7])), shape=(N,)))
    np.testing.assert_allclose(np.bincount(c) / N, [.1, .2, .7], atol=0.012)
    ch = np.asarray(random.choice(k, 5, (N,), p=jnp.asarray(P5)))
    np.testing.assert_allclose(np.bincount(ch, minlength=5) / N, P5, atol=0.012)


def test_moments_of_continuous_samplers():
    k = random.key(6)
    g = np.asarray(random.gamma(k, 0.5, (N // 4,)), np.float64)
    assert abs(g.mean() - 0.5) < 0.04 and abs(g.var() - 0.5) < 0.08
    ff = np.asarray(random.f(k, 3., 10., (N // 4,)), np.float64)
    assert abs(ff.mean() - 10 / 8) < 0.06
    tt = np.asarray(random.t(k, 6., (N // 4,)), np.float64)
    assert abs(tt.mean()) < 0.05 and abs(tt.var() - 1.5) < 0.2
    d = np.asarray(random.dirichlet(k, jnp.float32([1., 2., 3.]), (N // 4,)), np.float64)
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    m = np.asarray(random.multivariate_normal(k, jnp.float32([1., -1., 0.]), jnp.asarray(COV),
                                              (N,)), np.float64)
    np.testing.assert_allclose(m.mean(0), [1, -1, 0], atol=0.04)
    np.testing.assert_allclose(np.cov(m.T), COV, atol=0.06)
    c = np.asarray(random.normal(k, (N,), dtype=jnp.complex64))
    assert c.dtype == np.complex64 and abs(np.mean(np.abs(c) ** 2) - 1) < 0.03


def test_permutations_and_choices_without_replacement():
    k = random.key(8)
    p = np.asarray(random.permutation(k, 50))
    assert sorted(p.tolist()) == list(range(50))
    x = np.arange(24).reshape(4, 6)
    px = np.asarray(random.permutation(k, x, axis=1))
    assert (np.sort(px, axis=1) == x).all() and len({tuple(c) for c in px.T}) == 6
    pi = np.asarray(random.permutation(k, x, axis=1, independent=True))
    assert (np.sort(pi, axis=1) == x).all()
    c = np.asarray(random.choice(k, 30, (10,), replace=False))
    assert len(set(c.tolist())) == 10
    c = np.asarray(random.choice(k, 5, (5,), replace=False, p=jnp.asarray(P5)))
    assert sorted(c.tolist()) == [0, 1, 2, 3, 4]
    # Every position of a permutation is uniform over the values.
    firsts = np.asarray(gpuarr.vmap(lambda kk: random.permutation(kk, 4)[0])(random.split(k, 4000)))
    np.testing.assert_allclose(np.bincount(firsts) / 4000, 0.25, atol=0.03)
    sh = np.asarray(random.shuffle(k, jnp.arange(10)))
    assert sorted(sh.tolist()) == list(range(10))


def test_orthogonal_and_ball():
    linalg = pytest.importorskip("gpuarr.numpy.linalg")
    del linalg
    q = np.asarray(random.orthogonal(KEY, 4, (2,)), np.float64)
    assert q.shape == (2, 4, 4)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (2, 4, 4)),
                               atol=1e-5)
    b = np.asarray(random.ball(KEY, 3, shape=(1000,)), np.float64)
    assert b.shape == (1000, 3) and (np.linalg.norm(b, axis=-1) <= 1 + 1e-6).all()


# ---------------------------------------------------------------- dtypes and bad arguments


def test_default_dtypes_and_float64_request_without_x64():
    assert random.uniform(KEY).dtype == np.float32 and random.uniform(KEY).shape == ()
    assert random.randint(KEY, (), 0, 3).dtype == np.int32
    assert random.bits(KEY).dtype == np.uint32
    assert random.poisson(KEY, 3.).dtype == np.int32
    assert random.normal(KEY, (2,), jnp.bfloat16).dtype == jnp.bfloat16
    assert random.uniform(KEY, 3).shape == (3,)  # an int shape is accepted, as in JAX
    with pytest.warns(UserWarning, match="float64 .*truncated to dtype float32"):
        x = random.normal(KEY, (3,), jnp.float64)
    assert x.dtype == np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        random.normal(KEY, (3,))


def test_bad_dtypes_raise_like_jax():
    with pytest.raises(ValueError, match="dtype argument to `uniform` must be a float dtype"):
        random.uniform(KEY, (3,), jnp.int32)
    with pytest.raises(ValueError, match="dtype argument to `normal` must be a float or complex"):
        random.normal(KEY, (3,), jnp.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        random.randint(KEY, (3,), 0, 5, jnp.float32)
    with pytest.raises(ValueError, match="`bits` must be an unsigned int dtype"):
        random.bits(KEY, (3,), jnp.int32)
    with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating dtype"):
        random.bernoulli(KEY, 1)
    with pytest.raises(ValueError, match="`poisson` must be an int dtype"):
        random.poisson(KEY, 3., dtype=jnp.float32)


def test_bad_shapes_and_bounds_raise():
    with pytest.raises(TypeError, match="broadcast-compatible with shape"):
        random.uniform(KEY, (3,), minval=jnp.zeros((2, 3)))
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
        random.uniform(KEY, (3,), minval=jnp.zeros(4))
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.randint(KEY, (2,), jnp.zeros((3, 2), jnp.int32), 5)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.gamma(KEY, jnp.ones(3), (2, 1))
    with pytest.raises(TypeError, match="non-negative"):
        random.normal(KEY, (-1,))
    with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
        random.normal(KEY, (2.5,))
    with pytest.raises(ValueError, match="Cannot take a larger sample"):
        random.choice(KEY, 5, (6,), replace=False)
    with pytest.raises(TypeError, match="must be a sequence"):
        random.choice(KEY, 5, 6)
    with pytest.raises(ValueError, match="p must be None or a 1D vector"):
        random.choice(KEY, 5, (2,), p=jnp.ones(4) / 4)
    with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
        random.permutation(KEY, 2.5)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        random.categorical(KEY, jnp.zeros((3, 4)), shape=(5,))
    with pytest.raises(ValueError, match="cannot exceed number of categories"):
        random.categorical(KEY, jnp.zeros((3,)), shape=(4,), replace=False)
    with pytest.raises(ValueError, match="mean.ndim >= 1"):
        random.multivariate_normal(KEY, 0., jnp.eye(2))
    with pytest.raises(ValueError, match=r"cov.shape == \(..., n, n\)"):
        random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(3))
    with pytest.raises(ValueError, match="alpha.ndim >= 1"):
        random.dirichlet(KEY, 1.)
    with pytest.raises(ValueError, match="expected 'high' or 'low'"):
        random.bernoulli(KEY, 0.5, mode="medium")


# ---------------------------------------------------------------- gamma's derivative


def _lower_gamma(a, x):
    from gpuarr.lax.special_extra import regularized_gamma
    return regularized_gamma(a, x, False)


def test_incomplete_gamma_closed_forms():
    x = np.array([0.01, 0.5, 1.0, 2.0, 3.5, 10.0, 40.0])
    np.testing.assert_allclose(_lower_gamma(np.ones_like(x), x), 1 - np.exp(-x),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_lower_gamma(np.full_like(x, 2.), x),
                               1 - np.exp(-x) * (1 + x), rtol=1e-11, atol=1e-15)


def test_gamma_gradient_keeps_the_cdf_level():
    # Implicit reparameterisation: moving a by h and the sample by h * dx/da keeps P(a, x).
    from gpuarr.random.gamma_grad import _dsample_da
    a = np.array([0.3, 1.0, 2.5, 10.0, 100.0])
    x = np.array([0.05, 0.7, 3.1, 8.0, 110.0])
    g = _dsample_da(a, x)
    h = 1e-4
    moved = _lower_gamma(a + h, x + h * g) - _lower_gamma(a, x)
    assert np.abs(moved).max() < 1e-7


def test_gamma_gradients_match_jax():
    jax = pytest.importorskip("jax")
    a = np.float32([0.3, 1., 2.5, 10.])
    ours = gpuarr.grad(lambda a: random.gamma(KEY, a).sum())(a)
    theirs = jax.grad(lambda a: jax.random.gamma(jax.random.key(0), a).sum())(a)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-5)
    ours = gpuarr.jit(gpuarr.grad(lambda a: random.beta(KEY, a, 2.)))(2.)
    theirs = jax.grad(lambda a: jax.random.beta(jax.random.key(0), a, 2.))(2.)
    np.testing.assert_allclose(float(ours), float(theirs), rtol=2e-5)
