"""`jax._src.tree_util`: gpuarr's pytrees, with `_registry` (node types -> their entries)."""
from gpuarr.pytrees.registry import _registry  # noqa: F401
from gpuarr.tree_util import *  # noqa: F401, F403
