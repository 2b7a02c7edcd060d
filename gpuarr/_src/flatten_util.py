"""`jax._src.flatten_util`: ravel_pytree."""
from gpuarr.flatten_util import ravel_pytree  # noqa: F401
