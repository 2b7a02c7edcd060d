"""`jax._src.dtypes`: gpuarr's dtype rules (promotion, canonicalisation, extended types),
TypePromotionError and `supports_inf` (flax's fp8 meta dtype reads it for its zero)."""
from gpuarr.dtypes import *  # noqa: F401, F403
from gpuarr.dtypes import (
    DType,  # noqa: F401, E402
    TypePromotionError,  # noqa: F401
    supports_inf,  # noqa: F401
)
