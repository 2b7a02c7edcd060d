"""Argument handling shared by lax's primitives: Python scalars taking the dtype of the array
operands (weakly typed, as in JAX), operand, kind and dtype checks with JAX's messages, the
sharding arguments gpuarr cannot honour, and the `accuracy` argument of the transcendental
ops (Tolerance, AccuracyMode).
"""
from __future__ import annotations

import enum

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.sharding.mesh import empty_abstract_mesh
from gpuarr.sharding.shardings import NamedSharding

_SCALARS = (bool, int, float, complex)

# ---------------------------------------------------------------- argument helpers


def check_no_sharding(name: str, sharding, param: str = "out_sharding") -> None:
    """JAX's `out_sharding`/`sharding` arguments: gpuarr runs each computation on one device
    and has no sharding objects, so None (the default, "let the compiler decide") is the only
    value it can honour, and the sharding in an unsharded value's type (`jax.typeof(x).sharding`,
    which libraries pass on), which splits nothing. (Ops on hot eager paths test `is not None`
    before calling this.)"""
    if sharding is not None and not _splits_nothing(sharding):
        raise NotImplementedError(
            f"{name}: gpuarr does not shard arrays (each computation runs on one device), so "
            f"{param}={sharding!r} cannot be honoured; pass {param}=None.")


def _splits_nothing(sharding) -> bool:
    return (isinstance(sharding, NamedSharding) and sharding.mesh is empty_abstract_mesh
            and not any(sharding.spec))


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.dtype(x, canonicalize=True)


def _coerce_scalars(name, *args):
    """Python scalars take the dtype of the array operands (they are weakly typed), as long as
    that keeps their value: a float into an integer type, a complex into a real one or an int
    out of the type's range is a TypeError, as in JAX, rather than a silently different value."""
    if not any(type(a) in _SCALARS for a in args):  # exact types: np.float64 is not weak
        return args
    arrays = [a for a in args if type(a) not in _SCALARS]
    if not arrays:  # each scalar alone: its default dtype (the primitive checks they agree)
        return tuple(_scalar_as(name, a, dtypes.dtype(a, canonicalize=True)) for a in args)
    dt = np.dtype(_dtype_of(arrays[0]))
    return tuple(_scalar_as(name, a, dt) if type(a) in _SCALARS else a for a in args)


def _scalar_as(name, value, dt):
    whole = dt == np.bool_ or dtypes.is_int(dt)  # int4 and the other narrow ones included
    lossy = ((isinstance(value, complex) and not dtypes.is_complex(dt))
             or (isinstance(value, float) and whole)
             or (type(value) is int and dt == np.bool_)
             or (type(value) is int and dtypes.is_int(dt)
                 and not dtypes.iinfo(dt).min <= value <= dtypes.iinfo(dt).max))
    if lossy:
        got = dtypes.dtype(value, canonicalize=True).name
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {dt.name}, "
                        f"{got}: the Python scalar {value!r} has no exact {dt.name} value. Pass "
                        f"an array of the intended dtype, or use gpuarr.numpy, which promotes.")
    # A 0-d weakly typed Array: results stay weak where JAX's are (lax.add(1.0, 2.0)).
    return Array(np.asarray(value, dt), weak_type=type(value) is not bool)._keep_python_float(value)


def _as_operand(x):
    """A Python scalar as a weakly typed 0-d Array and a NumPy value as an Array of its
    canonical dtype, as JAX converts them; Arrays and tracers pass through."""
    if type(x) in _SCALARS:
        return Array(np.asarray(x, dtypes.dtype(x, canonicalize=True)), weak_type=type(x) is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return Array(np.asarray(x, dtypes.canonicalize_dtype(x.dtype)))
    return x


def _check_same_dtypes(name, *avals):
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {got}. "
                        "(Use gpuarr.numpy, which promotes, or convert with lax.convert_element_type.)")


def _broadcast_shapes(name, *shapes):
    """Elementwise operands have equal shapes, or rank 0, or equal rank with size-1 dims."""
    shapes = [s for s in shapes if len(s)]
    if not shapes:
        return ()
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                        f"{set(map(len, shapes))}; reshape or broadcast the operands to a "
                        "common rank first (jnp functions broadcast implicitly).")
    out = []
    for dims in zip(*shapes):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}.")
        out.append(big.pop() if big else 1)
    return tuple(out)


_KINDS = {
    "float": (dtypes.is_float, "floating"),
    "inexact": (lambda d: dtypes.is_float(d) or dtypes.is_complex(d), "floating, complexfloating"),
    "int": (dtypes.is_int, "integer"),
    "intbool": (lambda d: dtypes.is_int(d) or d == np.bool_, "integer, bool"),
    "number": (lambda d: d != np.bool_, "integer, floating, complexfloating"),
    "real": (lambda d: d != np.bool_ and not dtypes.is_complex(d), "integer, floating"),
    "ordered": (lambda d: not dtypes.is_complex(d), "integer, floating, bool"),
    "any": (lambda d: True, "any"),
}
# Primitives whose accepted types JAX lists differently from their kind's list.
_ACCEPTED_NAMES = {"abs": "floating, complexfloating, signedinteger", "rem": "integer, floating"}


def _check_kind(name, kind, aval, position=None):
    """Raise JAX's TypeError when aval's dtype is not of the kind; binary primitives pass the
    operand's position, which JAX's message names."""
    ok, what = _KINDS[kind]
    if not ok(aval.dtype):
        what = _ACCEPTED_NAMES.get(name, what)
        if position is None:
            raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are "
                            f"subtypes of {what}.")
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position {position}. "
                        f"Accepted dtypes at position {position} are subtypes of {what}.")


def _never_weak(*args, **params):
    """The weak-type rule of primitives whose results are never weakly typed."""
    return False


# ---------------------------------------------------------------- requested accuracy


class Tolerance:
    """The accuracy asked of a unary transcendental op (lax.Tolerance): an absolute error
    `atol`, a relative error `rtol`, or a number of units in the last place `ulps`."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


class AccuracyMode(enum.Enum):
    """The implementation asked of a unary transcendental op (lax.AccuracyMode)."""
    HIGHEST = 1
    DEFAULT = 2


# Each of these ops has one implementation per platform: NumPy's ufuncs on the host (their
# vectorised float32/float64 loops are tested by NumPy to at most 4 ulps) and the device math
# library in kernels (CUDA documents at most 4 ulps for these functions without fast math, the
# OpenCL specification allows up to 5, for tan and tanh); float16 and bfloat16 are computed in
# float32 and rounded. So every result is within _MAX_ULPS ulps of the exact value.
_MAX_ULPS = 5
_BOUNDED_BY_ONE = frozenset({"sin", "cos", "tanh", "logistic"})  # |result| <= 1: atol suffices


def _check_accuracy(name, accuracy, x):
    """The `accuracy` argument of exp, log, sin, ... In JAX it is a primitive parameter that
    picks one of the compiler's implementations, and compilation fails when none meets a
    requested Tolerance. gpuarr has a single implementation per op, so an AccuracyMode
    changes nothing (as on XLA's CPU backend), a Tolerance that its error bound meets is
    accepted, and a tighter one raises NotImplementedError rather than being ignored."""
    if isinstance(accuracy, AccuracyMode):
        return
    if not isinstance(accuracy, Tolerance):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
    dt = np.dtype(_dtype_of(x))
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        return  # not a floating-point operand: the op itself raises its TypeError
    bound = _MAX_ULPS * float(dtypes.finfo(dt).eps)
    if accuracy.ulps >= _MAX_ULPS or accuracy.rtol >= bound or (
            name in _BOUNDED_BY_ONE and accuracy.atol >= bound):
        return
    raise NotImplementedError(
        f"lax.{name}: gpuarr computes {name} to within {_MAX_ULPS} ulps, which does not meet "
        f"the requested {accuracy!r} for {dt.name}; pass a looser lax.Tolerance, an "
        "AccuracyMode, or accuracy=None.")
