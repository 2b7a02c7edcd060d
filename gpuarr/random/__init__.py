"""gpuarr.random: JAX's explicit-key random numbers, bit for bit.

`key(seed)` makes a typed key, `split`/`fold_in` derive new keys, and each sampler takes a key:
`uniform(key, (3,))`. Streams equal JAX's (threefry2x32 with `jax_threefry_partitionable`),
eagerly and under jit and vmap. See gpuarr/prng.py for the generator and the key type.
"""
from gpuarr.prng import KeyDtype, PRNGKeyArray, threefry2x32, threefry_2x32  # noqa: F401
from gpuarr.prng import PRNGKeyArray as KeyArray  # noqa: F401
from gpuarr.random.binomial import binomial, multinomial  # noqa: F401
from gpuarr.random.distributions import (  # noqa: F401
    bernoulli,
    categorical,
    cauchy,
    choice,
    double_sided_maxwell,
    exponential,
    geometric,
    gumbel,
    laplace,
    logistic,
    lognormal,
    maxwell,
    multivariate_normal,
    normal,
    orthogonal,
    pareto,
    permutation,
    rademacher,
    randint,
    rayleigh,
    shuffle,
    triangular,
    truncated_normal,
    uniform,
    wald,
    weibull_min,
)
from gpuarr.random.keys import (  # noqa: F401
    PRNGKey,
    bits,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    split,
    wrap_key_data,
)
from gpuarr.random.rejection import (  # noqa: F401
    ball,
    beta,
    chisquare,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    poisson,
    t,
)
