"""gpuarr.distributed: joining the processes of a computation (JAX's `jax.distributed`)."""
from gpuarr.device_api import initialize, is_initialized, shutdown  # noqa: F401
from gpuarr.process_group import ProcessFailureError  # noqa: F401
