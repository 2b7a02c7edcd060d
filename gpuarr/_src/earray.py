"""`jax._src.earray`: EArray, an array of an extended dtype over its physical data."""
from gpuarr.earray import EArray  # noqa: F401
