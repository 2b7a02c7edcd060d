"""`jax._src.compiler`: JAX's compilation entry points. gpuarr compiles through its platforms
(`gpuarr.platforms`), so this module holds none of XLA's; libraries import it to patch
`backend_compile`, which finds no attribute here (AttributeError) and so reports clearly that
gpuarr does not restrict compilation by backend."""
