"""Small example libraries on top of gpuarr, as JAX's `jax.example_libraries`: `optimizers`
(first-order optimizers as init/update/get_params triples) and `stax` (neural-network layers as
init/apply pairs and combinators). Import the submodules directly."""
