"""gpuarr.scipy: jax.scipy's special functions and probability distributions."""
from gpuarr.scipy import special, stats  # noqa: F401
