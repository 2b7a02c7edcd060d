"""gpuarr.experimental: the names JAX keeps in `jax.experimental` (io_callback, enable_x64)."""
from gpuarr.callbacks import io_callback  # noqa: F401
from gpuarr.config import enable_x64  # noqa: F401


def disable_x64():
    """Context manager that turns 64-bit types off inside its block (`enable_x64(False)`)."""
    return enable_x64(False)


from gpuarr.experimental import checkify, multihost_utils  # noqa: F401, E402, I001
