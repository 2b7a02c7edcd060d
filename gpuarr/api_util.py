"""Argument helpers shared by jit (jit_api), grad and vjp (ad_api), stages and compile logs:
a call's leaves as avals and buffers, argnums/argnames checked against a signature, readable
argument names, and ShapeDtypeStruct, the shape and dtype that may stand in for an argument."""
from __future__ import annotations

import inspect
import operator
from typing import NamedTuple

import numpy as np

from gpuarr import core, dtypes, pytrees
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.config import config
from gpuarr.core import ShapedArray, Tracer
from gpuarr.earray import EArray
from gpuarr.extend.linear_util import WrappedFun

_flags = config._values
SCALARS = (bool, int, float, complex)

_SCALAR_AVALS: dict = {}


def leaf_signature(x):
    """The part of jit's cache key one argument leaf gives: its aval (weak for Python scalars)."""
    t = type(x)
    if t is Array:
        return x.aval
    if t in (int, float, complex, bool):
        # A weak aval, as JAX abstracts Python scalars: a call with 1.0 and one with a weak
        # float32 tracer share a trace (and print one shared program). It depends only on the
        # type and x64, so it is made once for each (this runs on every call).
        key = (t, _flags["enable_x64"])
        aval = _SCALAR_AVALS.get(key)
        if aval is None:
            aval = _SCALAR_AVALS[key] = core.get_aval(x)
        return aval
    if t is np.ndarray:
        aval = _ARRAY_AVALS.get((x.shape, x.dtype, _flags["enable_x64"]))
        return aval if aval is not None else _array_aval(x.shape, x.dtype)
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    return abstractify(x)


# Avals of NumPy arguments by (shape, dtype, x64): one object each, whose hash is computed
# once, so a call with many NumPy arguments builds and hashes no new avals. Bounded: a program
# called with ever new shapes clears it now and then.
_ARRAY_AVALS: dict = {}
_ARRAY_AVALS_MAX = 4096


def _array_aval(shape, dtype) -> ShapedArray:
    key = (shape, dtype, _flags["enable_x64"])
    aval = _ARRAY_AVALS.get(key)
    if aval is None:
        if len(_ARRAY_AVALS) >= _ARRAY_AVALS_MAX:
            _ARRAY_AVALS.clear()
        aval = _ARRAY_AVALS[key] = ShapedArray(shape, dtypes.canonicalize_dtype(dtype))
    return aval


def abstractify(x) -> ShapedArray:
    """The aval of an argument leaf; JAX's TypeError naming it when it is not an array type."""
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type. Pass arrays, "
                        "Python scalars or pytrees of them, or mark the argument static with "
                        "static_argnums/static_argnames.") from None


def leaf_buffer(x):
    """The host or device buffer a compiled program takes for one argument leaf."""
    t = type(x)
    if t is Array:
        v = x._stored
        return v.program_buffer() if type(v) is DeviceShards else v
    if t is np.ndarray:   # as is when its dtype is canonical already (the common case)
        dtype = dtypes.canonicalize_dtype(x.dtype)
        return x if dtype is x.dtype else x.astype(dtype)
    if t in SCALARS:
        return np.asarray(x, dtypes.dtype(x, canonicalize=True))[()]
    if t is EArray:  # an extended dtype's array: programs take its physical data
        return x._data._buffer
    return np.asarray(x, dtypes.canonicalize_dtype(np.asarray(x).dtype))


def leaf_aval(x):
    """The aval of an argument leaf that may be a ShapeDtypeStruct or a tracer."""
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if type(x) is ShapedArray:  # eval_shape takes avals as JAX's does (flax's ConvLocal)
        return x
    if isinstance(x, Tracer):
        return x.aval
    return abstractify(x)


def donated_positions(args, leaves, donate_argnums) -> tuple:
    """Flat input positions of the leaves of donated positional arguments."""
    donated = {id(x) for i in donate_argnums if i < len(args)
               for x in pytrees.tree_leaves(args[i]) if type(x) is Array}
    return tuple(k for k, leaf in enumerate(leaves) if id(leaf) in donated)


def index_tuple(x) -> tuple:
    """An int or a sequence of ints as a tuple (JAX's TypeError for anything else)."""
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(map(operator.index, x))


def str_tuple(x) -> tuple:
    """A string or a sequence of strings as a tuple (TypeError for anything else)."""
    if isinstance(x, str):
        return (x,)
    for name in x:
        if not isinstance(name, str):
            raise TypeError(f"argument is not a string: {name}")
    return tuple(x)


def infer_names(sig, argnums, argnames, what):
    """Fill in argnums from argnames (and the reverse) using the signature, and check both
    against it, as JAX does when `jit` is called."""
    argnums = index_tuple(argnums) if argnums is not None else None
    argnames = str_tuple(argnames) if argnames is not None else None
    if sig is None:
        return argnums or (), argnames or ()
    params = list(sig.parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if argnums is None and argnames is None:
        return (), ()
    if argnums is None:
        argnums = tuple(positional.index(n) for n in argnames if n in positional)
    elif argnames is None:
        argnames = tuple(positional[i] for i in argnums if -len(positional) <= i < len(positional))
    validate_argnums(params, argnums, f"{what}_argnums")
    validate_argnames(params, argnames, f"{what}_argnames")
    return tuple(i % len(positional) if i < 0 and positional else i for i in argnums), argnames


def validate_argnums(params, argnums, what):
    """JAX's ValueError for argnums outside the positional parameters (any is valid with
    *args)."""
    n_pos = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return
        n_pos += p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    if argnums and (-min(argnums) > n_pos or max(argnums) >= n_pos):
        raise ValueError(f"Jitted function has {what}={argnums}, but only accepts {n_pos} "
                         "positional arguments.")


def validate_argnames(params, argnames, what):
    """JAX's ValueError for argnames that are positional-only or not parameters (any
    keyword-capable name is valid with **kwargs)."""
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    pos_only = {p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
    if bad := pos_only & set(argnames):
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                         "positional-only")
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    if bad := set(argnames) - named:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does "
                         "not take these args.")


def leaf_arg_names(in_tree, arg_names, sig, statics):
    """A readable name for each flattened input (the parameter, plus a key path for pytrees)."""
    if sig is None:
        return []
    n_dyn = in_tree.num_leaves
    params = [p.name for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    static_idx = {k for k, _ in statics if isinstance(k, int)}
    dyn_names = [p for i, p in enumerate(params) if i not in static_idx]
    dummy = pytrees.tree_unflatten(in_tree, list(range(n_dyn)))
    names = [""] * n_dyn
    for path, leaf in pytrees.tree_flatten_with_path(dummy)[0]:
        if len(path) >= 2 and path[0] == pytrees.SequenceKey(0):
            idx = path[1].idx
            base = dyn_names[idx] if idx < len(dyn_names) else f"args[{idx}]"
        elif len(path) >= 2:
            base = path[1].key
        else:
            base = ""
        rest = pytrees.keystr(path[2:]) if len(path) > 2 else ""
        names[leaf] = f"{base}{rest}"
    return names


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (for eval_shape, make_jaxpr, callbacks)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def update(self, **kwargs):
        """A copy with the given fields (shape, dtype, sharding, weak_type) replaced."""
        fields = dict(shape=self.shape, dtype=self.dtype, sharding=self.sharding,
                      weak_type=self.weak_type)
        fields.update(kwargs)
        return ShapeDtypeStruct(**fields)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (
            other.shape, other.dtype, other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


# ---------------------------------------------------------------- JAX's tracing helpers
# Libraries trace a function themselves with these and `partial_eval.trace_to_jaxpr_nounits`
# (flax's scan checks that the broadcast values do not depend on the scanned ones).


class DebugInfo(NamedTuple):
    """What a traced function is, for messages (JAX's `core.DebugInfo`)."""

    traced_for: str
    func_src_info: str
    arg_names: tuple
    result_paths: tuple | None = None


def debug_info(traced_for: str, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None) -> DebugInfo:
    """The DebugInfo of `fun` called with the example `args` and `kwargs`: its name and
    source line, and a name per argument leaf (`x`, `params['w']`), statics left out."""
    del result_paths_thunk
    if sourceinfo is None:
        name = getattr(fun, "__name__", type(fun).__name__)
        code = getattr(fun, "__code__", None)
        sourceinfo = f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name
    try:
        signature = signature or inspect.signature(fun)
        bound = signature.bind(*args, **kwargs).arguments
    except (TypeError, ValueError):  # no signature, or arguments it does not take
        bound = {f"args[{i}]": a for i, a in enumerate(args)} | dict(kwargs)
    statics = [p for i, p in enumerate(bound) if i in set(static_argnums)]
    names = []
    for param, value in bound.items():
        if param in statics or param in static_argnames:
            continue
        for path, _ in pytrees.tree_flatten_with_path(value)[0]:
            names.append(f"{param}{pytrees.keystr(path)}")
    return DebugInfo(traced_for, sourceinfo, tuple(names))


def flatten_fun_nokwargs(fun, in_tree):
    """`(flat, out_tree)`: the wrapped function `fun` over the leaves of arguments of the
    structure `in_tree`, returning its output's leaves; `out_tree()` is that output's treedef
    once it has run (JAX's `api_util.flatten_fun_nokwargs` of a `linear_util.WrappedFun`)."""
    flat, out_tree = pytrees.flatten_fun(getattr(fun, "call_wrapped", fun), in_tree)
    return WrappedFun(flat, {}, getattr(fun, "debug_info", None)), out_tree


def flatten_fun(fun, in_tree):
    """As `flatten_fun_nokwargs`, for arguments `(args, kwargs)` of the structure `in_tree`
    (JAX's `api_util.flatten_fun`): `fun(*args, **kwargs)` over their leaves."""
    call = getattr(fun, "call_wrapped", fun)
    flat, out_tree = pytrees.flatten_fun(lambda args, kwargs: call(*args, **kwargs), in_tree)
    return WrappedFun(flat, {}, getattr(fun, "debug_info", None)), out_tree
