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
    "numpy_rank_promotion": "allow",
    "numpy_dtype_promotion": "standard",
}
# Options that take one of a few strings.
_ENUMS = {"numpy_rank_promotion": ("allow", "warn", "raise"),
          "numpy_dtype_promotion": ("standard", "strict")}


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
        elif key in _ENUMS and value not in _ENUMS[key]:
            raise ValueError(f"new enum value must be in {list(_ENUMS[key])}, got {value} of "
                             f"type {type(value)}.")
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
                                         v["enable_passes"], v["platforms"],
                                         v["numpy_rank_promotion"], v["numpy_dtype_promotion"])
        # jit's fast path is off while any option needs the full call path, and while a
        # profiler trace records the calls.
        self.__dict__["_fast_dispatch"] = not (v["disable_jit"] or v["debug_nans"]
                                               or v["debug_infs"]
                                               or self.__dict__.get("_profiling", False))

    def _set_profiling(self, on: bool) -> None:
        """gpuarr.profiler: a trace starts or stops."""
        self.__dict__["_profiling"] = on
        self._refresh_trace_state()

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


class State:
    """A config option as a context manager factory (JAX's `config.State`): `with
    state(value): ...` sets the option inside the block and restores it after, and
    `state.value` reads the current value."""

    def __init__(self, name: str, doc: str, validate=None):
        self.name = name
        self.__doc__ = doc
        self._validate = validate

    def __call__(self, new_val=True):
        if self._validate is not None:
            self._validate(new_val)
        return _option(self.name, new_val)

    @property
    def value(self):
        return config.read(self.name)

    def __repr__(self):
        return f"State(jax_{self.name}={self.value!r})"


def enable_x64(new_val: bool = True):
    """Context manager that turns 64-bit types on (or off) inside its block."""
    return _option("enable_x64", new_val)


_PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32")


def _check_precision(value):
    if value is not None and value not in _PRECISIONS:
        raise ValueError(f"new enum value must be None or in {list(_PRECISIONS)}, got {value} "
                         f"of type {type(value)}.")


debug_nans = State("debug_nans", "Context manager for `jax_debug_nans`: raise "
                   "FloatingPointError where an operation produces a NaN.")
debug_infs = State("debug_infs", "Context manager for `jax_debug_infs`: raise "
                   "FloatingPointError where an operation produces an infinity.")
log_compiles = State("log_compiles", "Context manager for `jax_log_compiles`: log each "
                     "compilation of a jitted function.")
explain_cache_misses = State("explain_cache_misses", "Context manager for "
                             "`jax_explain_cache_misses`: log why a jitted function was traced "
                             "again.")
check_tracer_leaks = State("check_tracer_leaks", "Context manager for `jax_check_tracer_leaks`: "
                           "raise when a tracer outlives the transformation that made it.")
default_matmul_precision = State(
    "default_matmul_precision", "Context manager for `jax_default_matmul_precision`: the "
    "precision of matrix products that do not give one (None, 'default', 'high', 'highest', "
    "'bfloat16', 'tensorfloat32' or 'float32').", _check_precision)
numpy_rank_promotion = State(
    "numpy_rank_promotion", "Context manager for `jax_numpy_rank_promotion`: what jax.numpy "
    "does when it broadcasts operands of different nonzero ranks against each other ('allow', "
    "'warn' or 'raise').")
numpy_dtype_promotion = State(
    "numpy_dtype_promotion", "Context manager for `jax_numpy_dtype_promotion`: 'standard' "
    "promotes mixed dtypes on JAX's lattice, 'strict' allows only weakly typed values (Python "
    "scalars) to promote and raises TypePromotionError for two different strong dtypes.")


def checking_leaks():
    """Context manager that turns `jax_check_tracer_leaks` on inside its block."""
    return check_tracer_leaks(True)
