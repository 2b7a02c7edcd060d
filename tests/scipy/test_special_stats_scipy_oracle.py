"""gpuarr.scipy.special and gpuarr.scipy.stats: values against SciPy (float64 and float32),
dtypes and weak types as in JAX, finite-difference gradients, jit and vmap, edge cases."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.errors import ConcretizationTypeError
from gpuarr.scipy import special, stats

sp = pytest.importorskip("scipy.special")
ss = pytest.importorskip("scipy.stats")

X = np.linspace(-4.3, 4.1, 13)
POS = np.linspace(0.15, 9.5, 13)
P = np.linspace(0.02, 0.97, 13)
ORDERS = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4])

# (name, gpuarr function, SciPy reference, float64 arguments)
SPECIAL = [
    ("gammaln", special.gammaln, sp.gammaln, (X,)),
    ("gamma", special.gamma, sp.gamma, (X,)),
    ("gammasgn", special.gammasgn, sp.gammasgn, (X,)),
    ("digamma", special.digamma, sp.digamma, (POS,)),
    ("polygamma", special.polygamma, sp.polygamma, (ORDERS, POS)),
    ("betaln", special.betaln, sp.betaln, (POS, POS[::-1] * 3)),
    ("betaln_large", special.betaln, sp.betaln, (POS, POS * 1e6)),  # SciPy: ~3e-9 here
    ("beta", special.beta, sp.beta, (POS, POS[::-1])),
    ("xlogy", special.xlogy, sp.xlogy, (X, POS)),
    ("xlog1py", special.xlog1py, sp.xlog1py, (X, P - 0.5)),
    ("entr", special.entr, sp.entr, (P,)),
    ("rel_entr", special.rel_entr, sp.rel_entr, (P, P[::-1])),
    ("kl_div", special.kl_div, sp.kl_div, (P, P[::-1])),
    ("erf", special.erf, sp.erf, (X,)),
    ("erfc", special.erfc, sp.erfc, (X * 2,)),
    ("erfinv", special.erfinv, sp.erfinv, (2 * P - 1,)),
    ("expit", special.expit, sp.expit, (X,)),
    ("logit", special.logit, sp.logit, (P,)),
    ("ndtr", special.ndtr, sp.ndtr, (X * 3,)),
    ("ndtri", special.ndtri, sp.ndtri, (P,)),
    ("log_ndtr", special.log_ndtr, sp.log_ndtr, (np.linspace(-60, 12, 13),)),
    ("multigammaln", lambda a: special.multigammaln(a, 3), lambda a: sp.multigammaln(a, 3),
     (POS + 1.5,)),
    ("gammainc", special.gammainc, sp.gammainc, (POS, POS[::-1])),
    ("gammaincc", special.gammaincc, sp.gammaincc, (POS, POS[::-1])),
    ("betainc", special.betainc, sp.betainc, (POS, POS[::-1], P)),
    ("i0", special.i0, sp.i0, (X,)), ("i0e", special.i0e, sp.i0e, (X * 5,)),
    ("i1", special.i1, sp.i1, (X,)), ("i1e", special.i1e, sp.i1e, (X * 5,)),
    ("zeta", special.zeta, sp.zeta, (POS + 1.1, POS)),
    ("logsumexp", special.logsumexp, sp.logsumexp, (X,)),
    ("softmax", special.softmax, sp.softmax, (X,)),
    ("log_softmax", special.log_softmax, sp.log_softmax, (X,)),
]
IDS = [case[0] for case in SPECIAL]


def _f32(args):
    return tuple(a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                 else a for a in args)


def _name(fn):
    """Test ids: `norm.logpdf` for gpuarr.scipy.stats.norm.logpdf, '' for references."""
    module = getattr(fn, "__module__", "") or ""
    return module.rsplit(".", 1)[-1] + "." + fn.__name__ if module.startswith("gpuarr") else ""


@pytest.mark.parametrize("name,fn,ref,args", SPECIAL, ids=IDS)
def test_special_float64_matches_scipy(name, fn, ref, args):
    with gpuarr.enable_x64():
        out = fn(*args)
        assert out.dtype == np.float64
        rtol = 1e-8 if name == "betaln_large" else 1e-10
        np.testing.assert_allclose(np.asarray(out), ref(*args), rtol=rtol, atol=1e-14)


@pytest.mark.parametrize("name,fn,ref,args", SPECIAL, ids=IDS)
def test_special_float32_keeps_dtype(name, fn, ref, args):
    args = _f32(args)
    out = fn(*args)
    want = ref(*(a.astype(np.float64) if a.dtype.kind == "f" else a for a in args))
    assert out.dtype == np.float32 and out.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(out), want, rtol=3e-5, atol=1e-6)


@pytest.mark.parametrize("call,weak", [
    # Literal weak types from JAX 0.10.2: Python scalars stay weak through promotion; the
    # ndtr family and the functions built on gammasgn use NumPy constants and are strong.
    (lambda: special.gammaln(3), True), (lambda: special.erfc(1), True),
    (lambda: special.xlogy(1, 2), True), (lambda: special.entr(2), True),
    (lambda: special.polygamma(1, 2.0), True), (lambda: special.betaln(2, 3), True),
    (lambda: special.gamma(4), False), (lambda: special.beta(2.0, 3.0), False),
    (lambda: special.ndtr(1.0), False), (lambda: special.log_ndtr(1.0), False),
    (lambda: special.multigammaln(3.0, 2), False), (lambda: special.gammaln(np.arange(3)), False),
    (lambda: stats.norm.logpdf(1.0), True), (lambda: stats.norm.cdf(1.0), False),
    (lambda: stats.poisson.logpmf(np.array([0, 1]), 2.0), True),
    (lambda: stats.bernoulli.logpmf(np.array([0, 1]), 0.3), False),
    (lambda: stats.bernoulli.pmf(1, 0.3), True), (lambda: stats.gamma.pdf(1, 2), True),
])
def test_dtypes_and_weak_types_follow_jax(call, weak):
    out = call()
    assert out.dtype == np.float32 and out.weak_type == weak


def test_argument_errors_follow_jax():
    with pytest.raises(TypeError):
        special.ndtr(1)  # the ndtr family does not promote integers
    with pytest.raises(TypeError):
        special.ndtri(np.float16(0.5))
    with pytest.raises(TypeError):
        special.log_ndtr(np.array([1, 2]))
    with pytest.raises(TypeError):
        special.log_ndtr(1.0, series_order=2.0)
    with pytest.raises(ValueError):
        special.log_ndtr(1.0, series_order=31)
    with pytest.raises(ValueError):
        special.polygamma(1.0, 2.0)
    with pytest.raises(TypeError):
        special.gammaln([1.0, 2.0])  # lists are not arrays
    with pytest.raises(ConcretizationTypeError):
        gpuarr.jit(special.multigammaln)(3.0, 2)
    with pytest.raises(NotImplementedError):
        stats.multivariate_normal.logpdf(np.ones(2), np.zeros(2), np.eye(2), allow_singular=True)
    with pytest.raises(ValueError):
        stats.multivariate_normal.logpdf(np.ones(3), np.zeros(3), np.eye(2))


def test_edge_values():
    nan, inf = np.nan, np.inf
    np.testing.assert_array_equal(
        special.xlogy(np.float32([0, 0, 0, 1]), np.float32([0, 1, nan, 0])), [0, 0, nan, -inf])
    np.testing.assert_array_equal(
        special.xlog1py(np.float32([0, 0, 1]), np.float32([-1, nan, -1])), [0, nan, -inf])
    np.testing.assert_array_equal(special.entr(np.float32([0, -1, 1])), [0, -inf, 0])
    np.testing.assert_array_equal(special.ndtri(np.float32([0, 1, -0.1, 1.1, 0.5])),
                                  [-inf, inf, nan, nan, 0])
    np.testing.assert_array_equal(special.gammasgn(np.float32([-0.0, 0.0, -2, -2.5, -inf])),
                                  [-1, 1, nan, -1, nan])
    # log_ndtr stays finite and accurate where ndtr underflows or rounds to 1.
    far = np.float32([-1e4, -200, -50, -11, -9, 6, 10])
    np.testing.assert_allclose(special.log_ndtr(far), sp.log_ndtr(far.astype(np.float64)),
                               rtol=1e-5)
    with gpuarr.enable_x64():
        # The series (below -20) is JAX's three-term one; above 8, -ndtr(-x) is exact. (Like
        # JAX, log(ndtr(x)) just below 8 keeps only absolute accuracy.)
        far = np.array([-1e5, -1e3, -38, -21, -19, 8.5, 30])
        np.testing.assert_allclose(special.log_ndtr(far), sp.log_ndtr(far), rtol=1e-10)
        tiny = np.array([1e-300, 1e-100, 1e-20, 1 - 1e-12])
        np.testing.assert_allclose(special.ndtri(tiny), sp.ndtri(tiny), rtol=1e-12)


def test_custom_derivatives_at_zero():
    # JAX's rules: d/dx xlogy(x, y) = log y and d/dy = x / y, even at x = 0.
    assert gpuarr.grad(special.xlogy)(0.0, 0.0) == -np.inf
    assert np.isnan(gpuarr.grad(special.xlogy, argnums=1)(0.0, 0.0))
    assert gpuarr.grad(special.xlogy, argnums=1)(0.0, 2.0) == 0.0
    assert gpuarr.grad(special.entr)(0.0) == np.inf
    assert gpuarr.grad(lambda p: stats.bernoulli.logpmf(1.0, p))(0.0) == np.inf
    # log_ndtr's derivative pdf/cdf, formed in log space: about -x far in the lower tail.
    np.testing.assert_allclose(gpuarr.grad(special.log_ndtr)(-50.0), 50.0165, rtol=1e-5)
    np.testing.assert_allclose(gpuarr.grad(special.log_ndtr)(10.0), 7.6946e-23, rtol=1e-4)


GRADS = [
    (special.gammaln, (POS[:4],)), (special.gamma, (X[:4] + 0.05,)),
    (special.digamma, (POS[:4],)), (special.betaln, (POS[:4], POS[-4:])),
    (special.betaln, (POS[:4], POS[-4:] * 100)), (special.beta, (POS[:4], POS[-4:])),
    (special.xlogy, (X[:4], POS[:4])), (special.xlog1py, (X[:4], P[:4])),
    (special.entr, (P[:4],)), (special.rel_entr, (P[:4], P[-4:])),
    (special.kl_div, (P[:4], P[-4:])), (special.erfc, (X[:4],)), (special.erfinv, (P[:4] - 0.5,)),
    (special.ndtr, (X[::3],)), (special.ndtri, (P[3::3],)),
    (special.log_ndtr, (np.array([-45.0, -21, -19, -3, 0, 7.5, 8.5]),)),
    (lambda a: special.multigammaln(a, 3), (POS[:4] + 2,)),
    (lambda x: special.polygamma(1, x), (POS[:4],)),
    (lambda x: special.gammainc(2.5, x), (POS[:4],)),
    (lambda x: special.gammaincc(2.5, x), (POS[:4],)),
    (lambda x: special.betainc(2.0, 3.0, x), (P[:4],)),
    (special.i0e, (X[:4],)), (special.i1e, (X[:4],)), (special.i0, (X[:4],)),
    (lambda x: stats.gamma.cdf(x, 2.5), (POS[:4],)), (lambda x: stats.beta.sf(x, 2.0, 3.0), (P[:4],)),
]


@pytest.mark.parametrize("fn,args", GRADS, ids=_name)
def test_special_gradients_match_finite_differences(fn, args):
    check_grads_x64(fn, args, order=1, rtol=1e-5, atol=1e-6, eps=1e-6)


def test_second_order_gradients():
    check_grads_x64(special.xlogy, (P[:3], POS[:3]), order=2, rtol=1e-5)
    check_grads_x64(special.log_ndtr, (np.array([-30.0, -2, 3, 9]),), order=2, rtol=1e-5)


# (gpuarr function, SciPy reference, float64 arguments); loc/scale where the family has them
STATS = [
    (stats.norm.logpdf, ss.norm.logpdf, (X, 0.3, 1.7)), (stats.norm.pdf, ss.norm.pdf, (X,)),
    (stats.norm.cdf, ss.norm.cdf, (X * 3, -0.2, 0.8)), (stats.norm.logcdf, ss.norm.logcdf, (X * 9,)),
    (stats.norm.sf, ss.norm.sf, (X * 3,)), (stats.norm.logsf, ss.norm.logsf, (X * 9, 1.0, 2.0)),
    (stats.norm.ppf, ss.norm.ppf, (P, 0.3, 1.7)), (stats.norm.isf, ss.norm.isf, (P, 0.3, 1.7)),
    (stats.uniform.logpdf, ss.uniform.logpdf, (X, -1.0, 3.0)),
    (stats.uniform.pdf, ss.uniform.pdf, (X,)), (stats.uniform.cdf, ss.uniform.cdf, (X, -1.0, 3.0)),
    (stats.uniform.ppf, ss.uniform.ppf, (P, -1.0, 3.0)),
    (stats.expon.logpdf, ss.expon.logpdf, (X, -1.0, 2.0)), (stats.expon.pdf, ss.expon.pdf, (X,)),
    (stats.expon.cdf, ss.expon.cdf, (X, -1.0, 2.0)), (stats.expon.logcdf, ss.expon.logcdf, (POS,)),
    (stats.expon.sf, ss.expon.sf, (X,)), (stats.expon.logsf, ss.expon.logsf, (X, 0.5)),
    (stats.expon.ppf, ss.expon.ppf, (P, 0.5, 2.0)),
    (stats.logistic.logpdf, ss.logistic.logpdf, (X * 50, 0.2, 1.5)),
    (stats.logistic.pdf, ss.logistic.pdf, (X,)), (stats.logistic.cdf, ss.logistic.cdf, (X, 0.2)),
    (stats.logistic.sf, ss.logistic.sf, (X,)), (stats.logistic.ppf, ss.logistic.ppf, (P, 1.0, 2.0)),
    (stats.logistic.isf, ss.logistic.isf, (P,)),
    (stats.laplace.logpdf, ss.laplace.logpdf, (X, 0.2, 1.5)), (stats.laplace.pdf, ss.laplace.pdf, (X,)),
    (stats.laplace.cdf, ss.laplace.cdf, (X, 0.2, 1.5)),
    (stats.cauchy.logpdf, ss.cauchy.logpdf, (X, 0.1, 2.0)), (stats.cauchy.pdf, ss.cauchy.pdf, (X,)),
    (stats.cauchy.cdf, ss.cauchy.cdf, (X, 0.1, 2.0)), (stats.cauchy.logcdf, ss.cauchy.logcdf, (X,)),
    (stats.cauchy.sf, ss.cauchy.sf, (X,)), (stats.cauchy.logsf, ss.cauchy.logsf, (X,)),
    (stats.cauchy.ppf, ss.cauchy.ppf, (P, 0.1, 2.0)), (stats.cauchy.isf, ss.cauchy.isf, (P,)),
    (stats.t.logpdf, ss.t.logpdf, (X, POS, 0.1, 2.0)), (stats.t.pdf, ss.t.pdf, (X, 3.0)),
    (stats.gamma.logpdf, ss.gamma.logpdf, (X + 2, POS, 0.1, 1.5)),
    (stats.gamma.pdf, ss.gamma.pdf, (POS, 2.5)),
    (stats.beta.logpdf, ss.beta.logpdf, (P, POS, POS[::-1])),
    (stats.beta.pdf, ss.beta.pdf, (X, 2.0, 3.0, -4.0, 8.0)),
    (stats.bernoulli.logpmf, ss.bernoulli.logpmf, (np.arange(13.0) % 3 - 0.0, P)),
    (stats.bernoulli.pmf, ss.bernoulli.pmf, (np.arange(13.0) % 2, 0.3)),
    (stats.bernoulli.cdf, ss.bernoulli.cdf, (X, 0.3)), (stats.bernoulli.ppf, ss.bernoulli.ppf, (P, 0.3)),
    (stats.poisson.logpmf, ss.poisson.logpmf, (np.arange(13.0) - 1, POS)),
    (stats.poisson.pmf, ss.poisson.pmf, (np.arange(13.0), 3.5, 1.0)),
    (stats.poisson.cdf, ss.poisson.cdf, (np.arange(13.0) - 1.5, POS)),
    (stats.gamma.cdf, ss.gamma.cdf, (X + 2, POS, 0.1, 1.5)),
    (stats.gamma.logcdf, ss.gamma.logcdf, (POS, 2.5)),
    (stats.gamma.sf, ss.gamma.sf, (X + 2, POS, 0.1, 1.5)),
    (stats.gamma.logsf, ss.gamma.logsf, (POS, 2.5)),
    (stats.beta.cdf, ss.beta.cdf, (X, 2.0, 3.0, -4.0, 8.0)),
    (stats.beta.logcdf, ss.beta.logcdf, (P, POS, POS[::-1])),
    (stats.beta.sf, ss.beta.sf, (X, 2.0, 3.0, -4.0, 8.0)),
    (stats.beta.logsf, ss.beta.logsf, (P, POS, POS[::-1])),
    (stats.chi2.logpdf, ss.chi2.logpdf, (POS, 3.0, 0.1, 2.0)), (stats.chi2.pdf, ss.chi2.pdf, (POS, 4.0)),
    (stats.chi2.cdf, ss.chi2.cdf, (POS, POS[::-1])), (stats.chi2.logcdf, ss.chi2.logcdf, (POS, 3.0)),
    (stats.chi2.sf, ss.chi2.sf, (POS, 3.0, 0.5, 2.0)), (stats.chi2.logsf, ss.chi2.logsf, (POS, 2.0)),
]


@pytest.mark.parametrize("fn,ref,args", STATS, ids=_name)
def test_stats_match_scipy(fn, ref, args):
    with gpuarr.enable_x64():
        np.testing.assert_allclose(np.asarray(fn(*args)), ref(*args), rtol=1e-10, atol=1e-14)
    out = fn(*_f32(args))
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), ref(*args), rtol=5e-5, atol=1e-6)


def test_stats_broadcast_loc_and_scale():
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    loc = np.float32([[0.0], [0.5], [1.0]])
    out = stats.norm.logpdf(x, loc=loc, scale=2.0)
    assert out.shape == (3, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, ss.norm.logpdf(x, loc, 2.0), rtol=1e-6)
    assert stats.t.pdf(x, np.float32([[2.0], [5.0]])).shape == (2, 4)
    assert stats.uniform.cdf(np.arange(3), 0, 2).dtype == np.float32  # ints promote


def test_multivariate_normal_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    mean = rng.normal(size=3)
    x = rng.normal(size=(5, 3))
    with gpuarr.enable_x64():
        np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, cov),
                                   ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
        np.testing.assert_allclose(stats.multivariate_normal.pdf(x[0], mean, 2.0),
                                   ss.multivariate_normal.pdf(x[0], mean, 2.0), rtol=1e-12)
        np.testing.assert_allclose(stats.multivariate_normal.logpdf(0.3, 0.5, 2.0),
                                   ss.norm.logpdf(0.3, 0.5, np.sqrt(2.0)), rtol=1e-12)
        batched = stats.multivariate_normal.logpdf(x[:, None], mean, np.stack([cov, 2 * cov]))
        assert batched.shape == (5, 2)
        np.testing.assert_allclose(batched[:, 1], ss.multivariate_normal.logpdf(x, mean, 2 * cov))
    check_grads_x64(lambda x, m, c: stats.multivariate_normal.logpdf(x, m, c @ c.T),
                (x, mean, np.linalg.cholesky(cov)), order=1, rtol=1e-5)


@pytest.mark.parametrize("fn,args", [
    (stats.norm.logpdf, (X, 0.3, 1.7)), (stats.norm.logcdf, (X * 5, 0.3, 1.7)),
    (stats.norm.ppf, (P, 0.3, 1.7)), (stats.logistic.logpdf, (X, 0.2, 1.5)),
    (stats.cauchy.logpdf, (X, 0.1, 2.0)), (stats.t.logpdf, (X, POS, 0.1, 2.0)),
    (stats.gamma.logpdf, (POS, POS[::-1], 0.05, 1.5)), (stats.beta.logpdf, (P, POS, POS[::-1])),
    (lambda p: stats.bernoulli.logpmf(np.arange(13.0) % 2, p), (P,)),
    (lambda mu: stats.poisson.logpmf(np.arange(13.0), mu), (POS,)),
], ids=_name)
def test_stats_gradients_match_finite_differences(fn, args):
    check_grads_x64(fn, args, order=1, rtol=1e-5, atol=1e-6, eps=1e-6)


def test_jit_and_vmap():
    def loss(x, loc, scale):
        return (stats.norm.logpdf(x, loc, scale) + special.log_ndtr(x) - special.xlogy(x, x)
                + stats.gamma.logpdf(x, 2.0) + special.gammaln(x) + special.ndtri(x / 10)).sum()

    x = np.linspace(0.1, 3, 5, dtype=np.float32)
    np.testing.assert_allclose(gpuarr.jit(loss)(x, 0.5, 2.0), loss(x, 0.5, 2.0), rtol=1e-6)
    g = gpuarr.jit(gpuarr.grad(loss, argnums=(0, 1, 2)))(x, 0.5, 2.0)
    for got, want in zip(g, gpuarr.grad(loss, argnums=(0, 1, 2))(x, 0.5, 2.0)):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    locs = np.float32([-1.0, 0.0, 2.0])
    batched = gpuarr.vmap(stats.norm.logpdf, in_axes=(None, 0, None))(x, locs, 2.0)
    np.testing.assert_allclose(batched, [stats.norm.logpdf(x, v, 2.0) for v in locs], rtol=1e-6)
    xs = np.float32([[0, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(gpuarr.vmap(special.xlogy)(xs[:, 0], xs[:, 1]), [0, 0, -np.inf])
    np.testing.assert_allclose(gpuarr.vmap(gpuarr.grad(special.log_ndtr))(x - 20),
                               [gpuarr.grad(special.log_ndtr)(v) for v in x - 20], rtol=1e-6)
    np.testing.assert_array_equal(gpuarr.jit(special.ndtri)(jnp.float32([0, 1])), [-np.inf, np.inf])
