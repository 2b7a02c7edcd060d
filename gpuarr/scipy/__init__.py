"""gpuarr.scipy: jax.scipy's linear algebra, special functions, probability distributions,
signal processing, transforms, interpolation, integration, clustering and (imported on
demand, as in JAX) optimization and spatial transforms."""
from gpuarr.scipy import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    signal,
    special,
    stats,
)
