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


def check_nans(prim, x, where: str = "") -> None:
    """Raise FloatingPointError if `x` has a NaN (debug_nans) or Inf (debug_infs)."""
    if not (dtypes.is_float(x.dtype) or dtypes.is_complex(x.dtype)):
        return
    host = np.asarray(x)
    name = prim if isinstance(prim, str) else prim.name
    if _flags["debug_nans"] and np.isnan(host).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {name}{where}")
    if _flags["debug_infs"] and np.isinf(host).any():
        raise FloatingPointError(f"divide by zero (inf) encountered in {name}{where}")


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
