"""`cupy.lib` (cupy/lib/__init__.py): only `stride_tricks` is provided."""
from cupy.lib import stride_tricks  # noqa: F401
