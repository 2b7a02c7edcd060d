"""`jax.interpreters.xla`: the tables that let libraries' own array-like types enter
operations: `pytype_aval_mappings` gives their abstract values (the same table as
`gpuarr.core.pytype_aval_mappings`), `canonicalize_dtype_handlers` their host values."""
from gpuarr.core import pytype_aval_mappings  # noqa: F401
from gpuarr.dispatch import canonicalize_dtype_handlers  # noqa: F401
