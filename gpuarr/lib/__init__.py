"""`jax.lib`: the version of the jaxlib whose behaviour gpuarr follows (libraries compare it, as
equinox's tests do)."""
from gpuarr.version import jax_version as __version__  # noqa: F401
