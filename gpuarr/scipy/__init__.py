"""gpuarr.scipy: jax.scipy's linear algebra, special functions and probability distributions."""
from gpuarr.scipy import linalg, special, stats  # noqa: F401
