"""gpuarr.random: JAX's explicit-key random numbers, bit for bit.

`key(seed)` makes a typed key, `split`/`fold_in` derive new keys, and each sampler takes a key:
`uniform(key, (3,))`. Streams equal JAX's (threefry2x32 with `jax_threefry_partitionable`),
eagerly and under jit and vmap. See gpuarr/prng.py for the generator and the key type.
"""
from gpuarr.prng import KeyDtype, PRNGKeyArray, threefry_2x32, threefry2x32  # noqa: F401
from gpuarr.random.keys import (  # noqa: F401
    PRNGKey, bits, clone, fold_in, key, key_data, key_dtype, key_impl, split, wrap_key_data,
)
from gpuarr.random.distributions import (  # noqa: F401
    ball, bernoulli, beta, categorical, cauchy, chisquare, choice, dirichlet, exponential, gamma,
    generalized_normal, gumbel, laplace, loggamma, logistic, lognormal, multivariate_normal,
    normal, orthogonal, permutation, poisson, rademacher, randint, shuffle, t, truncated_normal,
    uniform,
)

KeyArray = PRNGKeyArray
