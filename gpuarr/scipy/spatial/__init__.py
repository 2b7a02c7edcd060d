"""gpuarr.scipy.spatial: jax.scipy.spatial's rotations (the `transform` module)."""
from gpuarr.scipy.spatial import transform  # noqa: F401
