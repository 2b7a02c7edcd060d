"""`jax.extend.source_info_util`: where operations come from. Source locations of equations
name the innermost frame outside gpuarr; `register_exclusion(path)` skips a library's own
files too, so errors and printed programs point at the user's line."""
from __future__ import annotations

from gpuarr.core import SourceInfo, excluded_source_paths, user_source_info


def register_exclusion(path: str) -> None:
    """Skip frames from files under `path` when finding the user's source location."""
    if path not in excluded_source_paths:
        excluded_source_paths.append(path)


def current() -> SourceInfo | None:
    """The source location of the operation being applied now."""
    return user_source_info()


__all__ = ["SourceInfo", "current", "register_exclusion"]
