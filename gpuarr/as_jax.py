"""`import gpuarr.as_jax` at the top of a script makes `import jax`, every `jax.*` submodule,
`from jax import ...` and `importlib.import_module("jax.X")` resolve to gpuarr in this process,
so JAX code and the libraries built on it (optax, flax, equinox, ...) run unchanged. It raises
ImportError when the real jax is already imported."""
from gpuarr.jax_finder import install as _install

_install()
