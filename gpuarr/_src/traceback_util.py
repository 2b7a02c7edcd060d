"""`jax._src.traceback_util`: libraries register their files so that reported source locations
skip them (`register_exclusion`); `api_boundary` marks a public entry point. gpuarr does not
rewrite tracebacks, so the boundary returns the function as it is."""
from gpuarr.extend.source_info_util import register_exclusion  # noqa: F401


def api_boundary(fun=None, **kwargs):
    """Mark `fun` as a public API entry point (a decorator, usable with or without
    arguments); the function is returned unchanged."""
    if fun is None:
        return lambda f: f
    return fun
