"""`jax._src.interpreters`: gpuarr's interpreters."""
