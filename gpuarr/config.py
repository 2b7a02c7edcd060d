"""Global configuration: flags settable by `config.update`, environment variables and context managers.

Every option has a `gpuarr_*` name and the `jax_*` alias JAX users know; environment variables
`GPUARR_<NAME>` and `JAX_<NAME>` give the start-up value.
"""
from __future__ import annotations

import contextlib
import os

_TRUE = {"1", "true", "yes", "on", "y", "t"}


def _env(name: str, default):
    for prefix in ("GPUARR_", "JAX_"):
        raw = os.environ.get(prefix + name.upper())
        if raw is not None:
            if isinstance(default, bool):
                return raw.strip().lower() in _TRUE
            if isinstance(default, int):
                return int(raw)
            return raw
    return default


# name -> default; the value types are checked on update.
_DEFAULTS = {
    "enable_x64": False,
    "debug_nans": False,
    "debug_infs": False,
    "platforms": "",
    "log_compiles": False,
    "explain_cache_misses": False,
    "check_tracer_leaks": False,
    "disable_jit": False,
    "threefry_partitionable": True,
    "default_matmul_precision": "",
    "enable_passes": True,
}


class Config:
    """Holds the current value of every option as an attribute (`config.enable_x64`)."""

    def __init__(self):
        self._values = {name: _env(name, default) for name, default in _DEFAULTS.items()}
        self._listeners = []
        self._refresh_trace_state()

    def __getattr__(self, name):
        values = self.__dict__.get("_values")
        if values is not None:
            key = _canonical(name, strict=False)
            if key in values:
                return values[key]
        raise AttributeError(f"gpuarr.config has no option {name!r}")

    def update(self, name: str, value) -> None:
        """Set option `name` (`jax_enable_x64`, `gpuarr_enable_x64` or `enable_x64`) to `value`."""
        key = _canonical(name)
        default = _DEFAULTS[key]
        if isinstance(default, bool):
            if isinstance(value, str):
                value = value.strip().lower() in _TRUE
            elif not isinstance(value, (bool, int)):
                raise TypeError(f"config option {name!r} takes a bool, got {value!r}")
            value = bool(value)
        self._values[key] = value
        self._refresh_trace_state()
        for listener in self._listeners:
            listener(key, value)

    def read(self, name: str):
        return self._values[_canonical(name)]

    def add_listener(self, fn) -> None:
        """Call `fn(name, value)` after every update (caches that depend on options use this)."""
        self._listeners.append(fn)

    def trace_state(self) -> tuple:
        """The option values that change what tracing produces; part of every jit cache key."""
        return self._trace_state

    def _refresh_trace_state(self):
        v = self._values
        self.__dict__["_trace_state"] = (v["enable_x64"], v["debug_nans"], v["debug_infs"],
                                         v["enable_passes"], v["platforms"])
        # jit's fast path is off while any option needs the full call path.
        self.__dict__["_fast_dispatch"] = not (v["disable_jit"] or v["debug_nans"]
                                               or v["debug_infs"])

    def __repr__(self):
        return f"Config({self._values})"


def _canonical(name: str, strict: bool = True) -> str:
    for prefix in ("jax_", "gpuarr_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    if name not in _DEFAULTS:
        if strict:
            known = ", ".join(sorted("jax_" + n for n in _DEFAULTS))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}")
        return ""
    return name


config = Config()


@contextlib.contextmanager
def _option(name: str, value):
    old = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


def enable_x64(new_val: bool = True):
    """Context manager that turns 64-bit types on (or off) inside its block."""
    return _option("enable_x64", new_val)


def debug_nans(new_val: bool = True):
    """Context manager for `jax_debug_nans` inside its block."""
    return _option("debug_nans", new_val)


def debug_infs(new_val: bool = True):
    """Context manager for `jax_debug_infs` inside its block."""
    return _option("debug_infs", new_val)


def log_compiles(new_val: bool = True):
    """Context manager for `jax_log_compiles` inside its block."""
    return _option("log_compiles", new_val)
