"""gpuarr.extend (JAX's `jax.extend`): the pieces libraries use to define their own primitives
and inspect programs: `core` (Primitive, Jaxpr, ClosedJaxpr, avals, trace identity),
`linear_util` (wrapped functions) and `source_info_util` (where operations come from)."""
from gpuarr.extend import core, linear_util, source_info_util  # noqa: F401
