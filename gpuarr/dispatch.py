"""Eager evaluation: the base trace that runs each primitive as soon as it is bound."""
from __future__ import annotations

import numpy as np

from gpuarr import core, dtypes
from gpuarr.array import Array
from gpuarr.backends import numpy_backend
from gpuarr.config import config
from gpuarr.core import Tracer, default_weak_type_rule, weak_type_rules
from gpuarr.errors import UnexpectedTracerError

_flags = config._values  # read directly: this is the hot path of every eager op


class EvalTrace(core.Trace):
    """Runs primitives on concrete values (NumPy buffers on the cpu platform)."""

    __slots__ = ()

    def process_primitive(self, prim, args, params):
        vals = []
        platform = None
        for a in args:
            if type(a) is Array:
                vals.append(a._buffer)
                if a._platform is not None:
                    platform = a._platform
            elif isinstance(a, Tracer):
                core.check_tracer_alive(a, "outside its transformation")
                raise UnexpectedTracerError(f"A tracer of {a._trace!r} reached eager evaluation of "
                                            f"{prim.name}: {a!r}. Return traced values from the "
                                            "transformed function instead of storing them.")
            else:
                vals.append(a)
        if platform is None:
            out = numpy_backend.impl_rules[prim](*vals, **params)
        else:
            out = platform.apply_primitive(prim, vals, params)
        weak = weak_type_rules.get(prim, default_weak_type_rule)(*args, **params)
        if prim.multiple_results:
            weaks = weak if isinstance(weak, list) else [weak] * len(out)
            outs = [wrap(o, w, platform) for o, w in zip(out, weaks)]
            if _flags["debug_nans"] or _flags["debug_infs"]:
                for o in outs:
                    check_nans(prim, o)
            return outs
        result = wrap(out, weak, platform)
        if _flags["debug_nans"] or _flags["debug_infs"]:
            check_nans(prim, result)
        return result


def wrap(buf, weak_type=False, platform=None) -> Array:
    if platform is None and type(buf) is not np.ndarray:
        buf = np.asarray(buf)
    return Array(buf, weak_type, platform=platform)


def check_nans(prim, x, source_info=None) -> None:
    """Raise FloatingPointError if `x` has a NaN (debug_nans) or an Inf (debug_infs).

    The message names the primitive and where the user's code applied it: `source_info`
    (an equation's), else the innermost caller outside gpuarr, looked up only on a hit."""
    kind = nonfinite_kind(x)
    if kind is not None:
        name = prim if isinstance(prim, str) else prim.name
        raise FloatingPointError(nonfinite_message(kind, name, source_info or core.user_source_info()))


def nonfinite_kind(x) -> str | None:
    """The kind of value ("nan" or "inf") in `x` that debug_nans/debug_infs reject, or None."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        return None
    host = np.asarray(x)
    if _flags["debug_nans"] and np.isnan(host).any():
        return "nan"
    if _flags["debug_infs"] and np.isinf(host).any():
        return "inf"
    return None


def nonfinite_message(kind: str, name: str, source_info=None) -> str:
    """JAX's message (`invalid value (nan) encountered in log`), plus the user's source line."""
    msg = f"invalid value ({kind}) encountered in {name}"
    if source_info is not None:
        msg += f"\nThe operation was applied at {source_info}."
    return msg


eval_trace = EvalTrace(None)
core.set_base_trace(eval_trace)


def to_device_array(x, dtype=None, weak_type=None) -> Array:
    """Wrap host data (NumPy array or scalar) as an Array on the default device."""
    from gpuarr import platforms

    host = np.asarray(x, dtype=dtype)
    if dtype is None:
        host = host.astype(dtypes.canonicalize_dtype(host.dtype), copy=False)
    if weak_type is None:
        weak_type = dtypes.is_weakly_typed(x)
    plat = platforms.default_platform()
    if plat.name == "cpu":
        if host is x:
            host = host.copy()
        return Array(host, weak_type)
    return Array(plat.from_host(host, plat.devices()[0]), weak_type, platform=plat)
