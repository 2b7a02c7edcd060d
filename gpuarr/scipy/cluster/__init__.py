"""gpuarr.scipy.cluster: jax.scipy.cluster's vector quantization (vq)."""
from gpuarr.scipy.cluster import vq  # noqa: F401
