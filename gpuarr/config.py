"""Global configuration: flags settable by `config.update`, environment variables and context managers.

Every option has a `gpuarr_*` name and the `jax_*` alias JAX users know; environment variables
`GPUARR_<NAME>` and `JAX_<NAME>` give the start-up value.
"""
from __future__ import annotations

import contextlib
import enum
import os
import sys

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


class LegacyPrngKeyState(str, enum.Enum):
    """Values of `jax_legacy_prng_key` (JAX's enum; each compares equal to its string)."""

    ALLOW = "allow"
    WARN = "warn"
    ERROR = "error"

    __str__ = str.__str__
    __format__ = str.__format__


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
    "default_matmul_precision": None,
    "enable_passes": True,
    "numpy_rank_promotion": "allow",
    "numpy_dtype_promotion": "standard",
    # JAX options below are honoured where gpuarr has the mechanism (no_tracing, no_execution,
    # threefry_partitionable, default_prng_impl); the others are validated and stored, and their
    # context managers say so.
    "enable_checks": False,
    "debug_key_reuse": False,
    "enable_custom_prng": False,
    "legacy_prng_key": LegacyPrngKeyState.ALLOW,
    "default_prng_impl": "threefry2x32",
    "softmax_custom_jvp": False,
    "allow_f16_reductions": True,
    "no_tracing": False,
    "no_execution": False,
    "thread_guard": False,
    "auto_pcast": True,
    "remove_size_one_mesh_axis_from_type": False,
    "num_cpu_devices": -1,
    "jax2tf_associative_scan_reductions": False,
    "array_garbage_collection_guard": None,
    "transfer_guard": None,
    "transfer_guard_host_to_device": None,
    "transfer_guard_device_to_device": None,
    "transfer_guard_device_to_host": None,
}
_TRANSFER_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_DIRECTIONS = ("transfer_guard_host_to_device", "transfer_guard_device_to_device",
                        "transfer_guard_device_to_host")
# Options that take one of a few strings.
_ENUMS = {"numpy_rank_promotion": ("allow", "warn", "raise"),
          "numpy_dtype_promotion": ("standard", "strict"),
          "default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg",
                                "philox2x32", "philox4x32")}
# default_matmul_precision: the legacy precision names, then lax.DotAlgorithmPreset's members.
_PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
               "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
               "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
               "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
               "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
# Options that take None or one of a few strings.
_OPTIONAL_ENUMS = {"array_garbage_collection_guard": ("allow", "log", "fatal"),
                   "default_matmul_precision": _PRECISIONS,
                   "transfer_guard": _TRANSFER_LEVELS,
                   **{d: _TRANSFER_LEVELS for d in _TRANSFER_DIRECTIONS}}
# Options that take a member (or the value string) of an enum class.
_ENUM_CLASSES = {"legacy_prng_key": LegacyPrngKeyState}


def _check_prng_impl(value):
    if value != "threefry2x32":
        raise NotImplementedError(
            f"jax_default_prng_impl={value!r} is not supported: gpuarr implements only the "
            "'threefry2x32' PRNG (JAX's default).")


# Options that may no longer change, with the reason (the cpu platform fixes its device count
# when it starts, as JAX's backends do).
_frozen: dict[str, tuple] = {}

# make_user_context's contexts: their values are part of every jit cache key.
_user_contexts: list = []

# Checks beyond the value's type, for values gpuarr cannot honour.
_EXTRA_CHECKS = {"default_prng_impl": _check_prng_impl}


def _parse(key: str, value, name: str, refuse_unsupported: bool = True):
    """`value` as option `key` stores it; raises JAX's error for a value it does not take
    (and NotImplementedError for one gpuarr cannot honour, if `refuse_unsupported`)."""
    default = _DEFAULTS[key]
    if isinstance(default, bool):
        if isinstance(value, str):
            value = value.strip().lower() in _TRUE
        elif not isinstance(value, (bool, int)):
            raise TypeError(f"config option {name!r} takes a bool, got {value!r}")
        return bool(value)
    if type(default) is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise TypeError(f"config option {name!r} takes an int, got {value!r}")
        return int(value)
    if key in _ENUMS:
        if type(value) is not str or value not in _ENUMS[key]:
            raise ValueError(f"new enum value must be in {list(_ENUMS[key])}, got {value} of "
                             f"type {type(value)}.")
    elif key in _OPTIONAL_ENUMS:
        if value is not None and (type(value) is not str or value not in _OPTIONAL_ENUMS[key]):
            raise ValueError(f"new enum value must be None or in {list(_OPTIONAL_ENUMS[key])}, "
                             f"got {value} of type {type(value)}.")
    elif key in _ENUM_CLASSES:
        cls = _ENUM_CLASSES[key]
        if isinstance(value, str):
            value = cls(value)
        elif not isinstance(value, cls):
            raise TypeError(f"new enum value must be an instance of {cls}, got {value} of type "
                            f"{type(value)}.")
    check = _EXTRA_CHECKS.get(key)
    if check is not None and refuse_unsupported:
        check(value)
    return value


def _initial(name: str, default):
    # An unsupported value from the environment is refused where it matters (the random
    # functions), not at import: the variable may be meant for JAX in the same environment.
    value = _env(name, default)
    return value if value is default or isinstance(default, (bool, int)) else _parse(
        name, value, "jax_" + name, refuse_unsupported=False)


class Config:
    """Holds the current value of every option as an attribute (`config.enable_x64`)."""

    def __init__(self):
        self._values = {name: _initial(name, default) for name, default in _DEFAULTS.items()}
        if self._values["transfer_guard"] is not None:  # JAX_TRANSFER_GUARD sets every direction
            for direction in _TRANSFER_DIRECTIONS:
                self._values[direction] = self._values["transfer_guard"]
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
        value = _parse(key, value, name)
        if key in _frozen and value != _frozen[key][0]:
            raise RuntimeError(_frozen[key][1])
        # jax_transfer_guard is set-only: it sets the level of every transfer direction.
        changed = (key, *_TRANSFER_DIRECTIONS) if key == "transfer_guard" else (key,)
        for k in changed:
            self._values[k] = value
        self._refresh_trace_state()
        for listener in self._listeners:
            for k in changed:
                listener(k, value)

    def read(self, name: str):
        return self._values[_canonical(name)]

    def parse_flags_with_absl(self) -> None:
        """Apply the `--jax_<option>[=value]` flags of the command line (those before a `--`),
        as JAX's parse_flags_with_absl does (test files call it at import); the other
        arguments, and flags naming no option of gpuarr, are left alone."""
        for arg in sys.argv[1:]:
            if arg == "--":
                break
            name, has_value, value = arg[2:].partition("=")
            if arg.startswith("--jax_") and _canonical(name, strict=False):
                self.update(name, value if has_value else True)

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
                                         v["numpy_rank_promotion"], v["numpy_dtype_promotion"],
                                         v["threefry_partitionable"],
                                         v["default_matmul_precision"],
                                         tuple(u._value for u in _user_contexts))
        # jit's fast path is off while any option needs the full call path, and while a
        # profiler trace records the calls.
        self.__dict__["_fast_dispatch"] = not (v["disable_jit"] or v["debug_nans"]
                                               or v["debug_infs"] or v["no_execution"]
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


_NO_DEFAULT = object()


class State:
    """A config option as a context manager factory (JAX's `config.State`): `with
    state(value): ...` sets the option inside the block and restores it after, and
    `state.value` reads the current value. gpuarr's options are process-wide, where JAX's
    context managers set a thread-local value."""

    def __init__(self, name: str, doc: str, validate=None):
        self._key = name
        self.__name__ = name
        self.__doc__ = doc
        self._validate = validate

    @property
    def name(self) -> str:
        return self._key if self._key.startswith("jax2tf_") else "jax_" + self._key

    def __call__(self, new_val=_NO_DEFAULT):
        if new_val is _NO_DEFAULT:
            if not isinstance(_DEFAULTS[self._key], bool):
                raise TypeError(f"Context manager for {self._key} config option requires an "
                                "argument representing the new value for the config option.")
            new_val = True
        # The value is checked here, as JAX does, not only when the block is entered.
        _parse(self._key, new_val, self.name)
        if self._validate is not None:
            self._validate(new_val)
        return _option(self._key, new_val)

    def __bool__(self):
        raise TypeError("bool() not supported for instances of type 'State' (did you mean to "
                        "use 'State.value' instead?)")

    @property
    def value(self):
        return config.read(self._key)

    def __repr__(self):
        return f"State({self.name}={self.value!r})"


def enable_x64(new_val: bool = True):
    """Context manager that turns 64-bit types on (or off) inside its block."""
    return _option("enable_x64", new_val)


def disable_x64():
    """Context manager that turns 64-bit types off inside its block (`enable_x64(False)`)."""
    return enable_x64(False)


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
    "precision of matrix products and convolutions that do not give one (None, 'default', "
    "'high', 'highest', 'bfloat16', 'tensorfloat32', 'float32' or the name of a "
    "lax.DotAlgorithmPreset).")
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


# ---------------------------------------------------------------- JAX's other options

enable_checks = State(
    "enable_checks", "Context manager for `jax_enable_checks` (JAX: invariant checks of its "
    "internals). gpuarr stores the value only; its own Program checks do not depend on it.")
debug_key_reuse = State(
    "debug_key_reuse", "Context manager for `jax_debug_key_reuse` (JAX: raise KeyReuseError "
    "when a typed key is used twice). gpuarr stores the value only and does not track key use.")
enable_custom_prng = State(
    "enable_custom_prng", "Context manager for `jax_enable_custom_prng` (JAX: an upgrade for "
    "user-defined PRNG implementations). gpuarr stores the value only.")
legacy_prng_key = State(
    "legacy_prng_key", "Context manager for `jax_legacy_prng_key`: what jax.random does with "
    "raw uint32 keys ('allow', 'warn' or 'error'; a LegacyPrngKeyState). gpuarr stores the "
    "value only and always accepts raw keys.")
default_prng_impl = State(
    "default_prng_impl", "Context manager for `jax_default_prng_impl`: the PRNG of keys made "
    "without an explicit implementation. gpuarr implements only 'threefry2x32' (JAX's "
    "default); setting another of JAX's names raises NotImplementedError.")
threefry_partitionable = State(
    "threefry_partitionable", "Context manager for `jax_threefry_partitionable` (default True). "
    "gpuarr.random implements only the partitionable threefry layout, JAX's default: drawing "
    "random bits or splitting keys with it False raises NotImplementedError rather than giving "
    "numbers different from JAX's.")
softmax_custom_jvp = State(
    "softmax_custom_jvp", "Context manager for `jax_softmax_custom_jvp` (JAX: which derivative "
    "rule jax.nn.softmax uses; both give the same values). gpuarr stores the value only.")
allow_f16_reductions = State(
    "allow_f16_reductions", "Context manager for `jax_allow_f16_reductions` (default True; JAX: "
    "False makes reduce_sum of float16/bfloat16 raise). gpuarr stores the value only.")
no_tracing = State(
    "no_tracing", "Context manager for `jax_no_tracing`: a jitted function that has to be "
    "traced (a cache miss, or a call under a transformation) raises RuntimeError; calls that "
    "hit jit's cache run as usual.")
no_execution = State(
    "no_execution", "Context manager for `jax_no_execution`: running a jitted computation "
    "(jit calls, also under vmap, and ahead-of-time compiled functions) raises RuntimeError. "
    "gpuarr's eager operations run without compiling and are not affected, where JAX's would "
    "raise; so are the operations of a jitted function under grad, which gpuarr runs one by "
    "one.")
thread_guard = State(
    "thread_guard", "Context manager for `jax_thread_guard` (JAX: raise when a multi-process "
    "operation runs on another thread). gpuarr runs in one process and stores the value only.")
auto_pcast = State(
    "auto_pcast", "Context manager for `jax_auto_pcast` (default True; JAX: insert `pvary` to "
    "match varying manual axes under shard_map). gpuarr stores the value only.")
remove_size_one_mesh_axis_from_type = State(
    "remove_size_one_mesh_axis_from_type", "Context manager for "
    "`jax_remove_size_one_mesh_axis_from_type` (JAX: drop mesh axes of size 1 from sharding "
    "types). gpuarr has no sharding in types and stores the value only.")
jax2tf_associative_scan_reductions = State(
    "jax2tf_associative_scan_reductions", "Context manager for "
    "`jax2tf_associative_scan_reductions` (jax2tf: lower cumulative reductions as associative "
    "scans). gpuarr has no jax2tf and stores the value only.")
array_garbage_collection_guard = State(
    "array_garbage_collection_guard", "Context manager for "
    "`jax_array_garbage_collection_guard` (None, 'allow', 'log' or 'fatal'; JAX: what happens "
    "when the garbage collector, not reference counting, frees an Array). gpuarr stores the "
    "value only.")
_TRANSFER_DOC = (
    "Context manager for `jax_transfer_guard_{}`: None, 'allow', 'log', 'disallow', "
    "'log_explicit' or 'disallow_explicit' (None means 'allow'). gpuarr stores the value and "
    "checks no transfers: on the cpu platform arrays are host memory, and host values become "
    "arrays in several places (eager operands, jit arguments, jnp.asarray) rather than one "
    "transfer point.")
transfer_guard_host_to_device = State("transfer_guard_host_to_device",
                                      _TRANSFER_DOC.format("host_to_device"))
transfer_guard_device_to_device = State("transfer_guard_device_to_device",
                                        _TRANSFER_DOC.format("device_to_device"))
transfer_guard_device_to_host = State("transfer_guard_device_to_host",
                                      _TRANSFER_DOC.format("device_to_host"))


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """Context manager that sets the transfer guard level of every direction (host to device,
    device to device, device to host) inside its block; see `transfer_guard_host_to_device`
    for the levels and for what gpuarr checks."""
    with contextlib.ExitStack() as stack:
        for direction in _TRANSFER_DIRECTIONS:
            stack.enter_context(_option(direction, new_val))
        # Entered last, so restored first: its update resets the directions, which are then
        # restored to their own previous levels.
        stack.enter_context(_option("transfer_guard", new_val))
        yield


# ---------------------------------------------------------------- user contexts


class UserConfig:
    """A value that is part of every jit cache key (made by `make_user_context`): calling a
    jitted function under another value traces and compiles it again."""

    def __init__(self, default_value):
        self._value = default_value
        _user_contexts.append(self)
        config._refresh_trace_state()

    @property
    def value(self):
        return self._value

    def get_global(self):
        return self._value

    def set_global(self, new_value) -> None:
        self._value = new_value
        config._refresh_trace_state()

    def __call__(self, new_value):
        return _UserContext(self, new_value)


class _UserContext:
    __slots__ = ("_config", "_new_value", "_prev_value")

    def __init__(self, config_, new_value):
        self._config = config_
        self._new_value = new_value

    def __enter__(self):
        self._prev_value = self._config._value
        self._config.set_global(self._new_value)

    def __exit__(self, *exc):
        self._config.set_global(self._prev_value)


def make_user_context(default_value=None) -> UserConfig:
    """A context (`with ctx(value): ...`) whose value is part of jit's cache key: a jitted
    function called under a new value is traced and compiled again (JAX's
    `make_user_context`). Values must be hashable. gpuarr's contexts are process-wide."""
    return UserConfig(default_value)
