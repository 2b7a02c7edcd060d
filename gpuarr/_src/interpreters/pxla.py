"""`jax._src.interpreters.pxla`: `global_result_handlers`, the result handlers by aval type
that an extended dtype's own result handler builds on (flax's fp8 meta dtypes)."""
from gpuarr.earray import global_result_handlers  # noqa: F401
