"""Probability distributions (jax.scipy.stats): one module per distribution, each offering
the density functions (and, where they need no incomplete gamma or beta function, the
distribution functions) of its SciPy namesake with `loc`/`scale` keywords."""
from gpuarr.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    cauchy,
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
