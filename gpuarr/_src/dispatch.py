"""`jax._src.dispatch`: `wait_for_tokens` waits for outstanding effects (effects_barrier)."""
from gpuarr.device_api import effects_barrier as wait_for_tokens  # noqa: F401
from gpuarr.dispatch import EvalTrace, as_array  # noqa: F401
