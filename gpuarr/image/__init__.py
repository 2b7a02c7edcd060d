"""gpuarr.image: image resampling as jax.image (resize, scale_and_translate, ResizeMethod)."""
from gpuarr.image._scale import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
