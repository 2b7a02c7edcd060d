"""`jax._src` under `gpuarr.as_jax`: the private JAX names that real libraries import, each
module re-exporting from where the thing lives in gpuarr. Nothing in gpuarr imports this
package; it exists only so that `import jax._src.X` in a library finds gpuarr's X."""
