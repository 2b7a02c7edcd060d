"""Probability distributions (jax.scipy.stats): one module per distribution, each offering
the density and distribution functions JAX offers for its SciPy namesake, with `loc`/`scale`
keywords."""
from gpuarr.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    cauchy,
    chi2,
    expon,
    gamma,
    laplace,
    logistic,
    multivariate_normal,
    norm,
    poisson,
    t,
    uniform,
)
