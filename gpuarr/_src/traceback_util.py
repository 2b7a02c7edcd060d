"""`jax._src.traceback_util`: libraries register their files so that reported source locations
skip them (`register_exclusion`) and ask whether a frame is the user's (`include_frame`, as
equinox's error messages do); `api_boundary` marks a public entry point. gpuarr does not
rewrite tracebacks, so the boundary returns the function as it is."""
from gpuarr.core import is_user_file as include_filename
from gpuarr.extend.source_info_util import register_exclusion  # noqa: F401


def include_frame(frame) -> bool:
    """Whether `frame` is the user's: its file is outside gpuarr and the registered libraries."""
    return include_filename(frame.f_code.co_filename)


def api_boundary(fun=None, **kwargs):
    """Mark `fun` as a public API entry point (a decorator, usable with or without
    arguments); the function is returned unchanged."""
    if fun is None:
        return lambda f: f
    return fun
