"""gpuarr.experimental: the names JAX keeps in `jax.experimental` (io_callback, enable_x64)."""
from gpuarr.callbacks import io_callback  # noqa: F401
from gpuarr.config import disable_x64, enable_x64  # noqa: F401
from gpuarr.experimental import checkify, mesh_utils, multihost_utils  # noqa: F401
