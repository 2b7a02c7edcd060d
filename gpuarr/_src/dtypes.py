"""`jax._src.dtypes`: gpuarr's dtype rules (promotion, canonicalisation, extended types) and
TypePromotionError."""
from gpuarr.dtypes import *  # noqa: F401, F403
from gpuarr.dtypes import (
    DType,  # noqa: F401, E402
    TypePromotionError,  # noqa: F401
)
