"""Probability distributions (jax.scipy.stats): one module per distribution, each offering
the density and distribution functions JAX offers for its SciPy namesake, with `loc`/`scale`
keywords; plus the Gaussian KDE and the descriptive statistics mode, rankdata and sem."""
from gpuarr.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from gpuarr.scipy.stats._descriptive import mode, rankdata, sem  # noqa: F401
from gpuarr.scipy.stats._kde import gaussian_kde  # noqa: F401
