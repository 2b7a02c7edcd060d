"""`jax._src.xla_bridge`: `_backends`, the platforms initialised so far in this process (name ->
platform), read by libraries that must act before the first computation (chex's fake CPU
devices)."""
from gpuarr.platforms import _loaded as _backends  # noqa: F401
