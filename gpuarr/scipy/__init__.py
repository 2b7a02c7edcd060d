"""gpuarr.scipy: the parts of jax.scipy built so far."""
from gpuarr.scipy import special  # noqa: F401
