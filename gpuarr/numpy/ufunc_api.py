"""`jnp.ufunc`: NumPy's universal-function object with JAX's semantics.

A ufunc wraps an elementwise function of `nin` arguments and adds the methods `reduce`,
`accumulate`, `at` (functional: `inplace=False` is required), `reduceat` and `outer`. Each
method takes a fast path when one is given (jnp.add.reduce is jnp.sum, jnp.add.accumulate is
jnp.cumsum, jnp.add.at is x.at[i].add); otherwise it is derived from the binary function with
a `fori_loop`/`scan` over the axis, as JAX does. The built-in ufuncs (add, multiply, ...) are
instances made in gpuarr.numpy.ufuncs.
"""
from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import slicing as lax_slicing
from gpuarr.numpy import reductions, selection
from gpuarr.numpy.arguments import (
    broadcast_to,
    canonicalize_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
)

_AT_INPLACE_WARNING = """\
Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like
np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.
>>> arr = jnp.add.at(arr, ind, val, inplace=False)
"""


class ufunc:
    """Universal functions, which operate element by element on arrays (numpy.ufunc).

    `ufunc(func, nin, nout, *, name, nargs, identity, call, reduce, accumulate, at, reduceat)`
    wraps `func`, a function of `nin` broadcast arrays; `call` and the method arguments are
    optional faster implementations. Binary ufuncs support `reduce`, `accumulate`, `at`,
    `reduceat` and `outer`; see gpuarr.numpy.add for an example.
    """

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None, reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None, at: Callable[..., Any] | None = None,
                 reduceat: Callable[..., Any] | None = None):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        # Read-only after construction, so a ufunc can be a static argument of jit.
        self.__static_props = {
            "func": func, "nin": operator.index(nin), "nout": operator.index(nout),
            "nargs": operator.index(nargs or nin), "identity": identity, "call": call,
            "reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat,
        }

    _func = property(lambda self: self.__static_props["func"])
    nin = property(lambda self: self.__static_props["nin"])
    nout = property(lambda self: self.__static_props["nout"])
    nargs = property(lambda self: self.__static_props["nargs"])
    identity = property(lambda self: self.__static_props["identity"])

    def __hash__(self) -> int:
        # call, reduce, ... are implementation details, not part of a ufunc's identity.
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and (
            (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs) ==
            (other._func, other.__name__, other.identity, other.nin, other.nout, other.nargs))

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self.__static_props["call"] or self._call_vectorized
        return call(*args)

    def _call_vectorized(self, *args):
        check_arraylike(self.__name__, *args)
        from gpuarr.numpy.functional import vectorize
        return vectorize(self._func)(*args)

    def _require_binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *args):
        """The dtype `func` gives for scalar arguments of the dtypes of `args`."""
        from gpuarr.dispatch import wrap
        from gpuarr.jit_api import eval_shape
        # Weak types stay weak: jnp.maximum.at(float16 array, i, 2.0) stays float16.
        ones = [wrap(np.ones((), get_aval(a).dtype), get_aval(a).weak_type) for a in args]
        return np.dtype(eval_shape(self._func, *ones).dtype)

    # ------------------------------------------------------------ reduce

    def reduce(self, a, axis: int | None = 0, dtype=None, out=None, keepdims: bool = False,
               initial=None, where=None):
        """Reduce `a` along `axis` (0 by default; None for all axes) by repeated application
        of this binary ufunc, as numpy.ufunc.reduce (jnp.add.reduce is jnp.sum)."""
        check_arraylike(f"{self.__name__}.reduce", a)
        self._require_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'.")
            if get_aval(ensure_array(where)).dtype != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"dtype={get_aval(ensure_array(where)).dtype}")
        reduce = self.__static_props["reduce"] or self._reduce_via_scan
        return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

    def _reduce_via_scan(self, arr, axis=0, dtype=None, keepdims=False, initial=None,
                         where=None):
        from gpuarr.lax.control_flow import fori_loop
        from gpuarr.numpy.manipulation import moveaxis, ravel
        from gpuarr.numpy.ufuncs import where as jwhere
        arr = ensure_array(arr)
        if initial is None:
            initial = self.identity
        dtype = self._result_dtype(arr, arr) if dtype is None else dtypes.canonicalize_dtype(dtype)
        shape = get_aval(arr).shape
        if where is not None:
            where = broadcast_to(ensure_array(where), shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final_shape = (1,) * len(shape) if keepdims else ()
            arr, axis = ravel(arr), 0
            where = None if where is None else ravel(where)
        else:
            axis = canonicalize_axis(axis, len(shape))
            final_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
            if axis != 0:
                arr = moveaxis(arr, axis, 0)
                where = None if where is None else moveaxis(where, axis, 0)
        length = get_aval(arr).shape[0]
        if length == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return lax_shape_ops.full(final_shape, initial, dtype)

        def body(i, val):
            new = self(val, lax_conversions.convert_element_type(arr[i], dtype))
            return new if where is None else jwhere(where[i], new, val)

        start = 1 if initial is None else 0
        first = arr[0] if initial is None else ensure_array(initial)
        first = broadcast_to(lax_conversions.convert_element_type(first, dtype), get_aval(arr).shape[1:])
        result = fori_loop(start, length, body, first)
        return lax_shape_ops.reshape(result, final_shape) if keepdims else result

    # ------------------------------------------------------------ accumulate

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """Running reduction along `axis`, keeping every partial result, as
        numpy.ufunc.accumulate (jnp.add.accumulate is jnp.cumsum)."""
        self._require_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        accumulate = self.__static_props["accumulate"] or self._accumulate_via_scan
        return accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, arr, axis=0, dtype=None):
        from gpuarr.lax.control_flow import scan
        from gpuarr.numpy.manipulation import moveaxis
        check_arraylike(f"{self.__name__}.accumulate", arr)
        arr = ensure_array(arr)
        dtype = self._result_dtype(arr, arr) if dtype is None else dtypes.canonicalize_dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        shape = get_aval(arr).shape
        axis = canonicalize_axis(axis, len(shape))
        if math.prod(shape) == 0:
            return lax_shape_ops.full(shape, 0, dtype)
        arr = lax_conversions.convert_element_type(moveaxis(arr, axis, 0), dtype)
        first = lax_slicing.index_in_dim(arr, 0, keepdims=False)
        rest = lax.slice_in_dim(arr, 1, shape[axis])

        def step(carry, x):
            y = self(carry, x)
            return y, y

        _, tail = scan(step, first, rest)
        out = lax.concatenate([lax_shape_ops.expand_dims(first, (0,)), tail], 0)
        return moveaxis(out, 0, axis)

    # ------------------------------------------------------------ at

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """`a` with this ufunc applied at `indices` (with operand `b` for binary ufuncs), as
        numpy.ufunc.at; repeated indices all apply. Arrays are immutable, so the updated copy
        is returned and `inplace=False` must be passed."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE_WARNING)
        at = self.__static_props["at"] or self._at_via_scan
        return at(a, indices) if b is None else at(a, indices, b)

    def _at_via_scan(self, a, indices, *args):
        from gpuarr.lax.control_flow import scan
        check_arraylike(f"{self.__name__}.at", a, *args)
        a = ensure_array(a)
        args = tuple(ensure_array(arg) for arg in args)
        dtype = self._result_dtype(a, *args)
        a = lax_conversions.convert_element_type(a, dtype)
        args = tuple(lax_conversions.convert_element_type(arg, dtype) for arg in args)
        indices = _index_tuple(indices)
        if not indices:
            return a
        shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
        shape = np.broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        if args:
            tail = get_aval(args[0]).shape[len(shape):]
            arg = broadcast_to(args[0], shape + tail)
            args = (lax_shape_ops.reshape(arg, (math.prod(shape),) + tail),)
        flat = [idx if isinstance(idx, slice) else
                lax_shape_ops.reshape(broadcast_to(ensure_array(idx), shape), (math.prod(shape),))
                for idx in indices]

        def step(carry, i):
            idx = tuple(ind if isinstance(ind, slice) else ind[i] for ind in flat)
            return carry.at[idx].set(self(carry.at[idx].get(), *(arg[i] for arg in args))), None

        out, _ = scan(step, a, np.arange(math.prod(shape), dtype=np.int32))
        return out

    # ------------------------------------------------------------ reduceat

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions over the slices [indices[i], indices[i + 1]) of `axis` (to the end for
        the last index), as numpy.ufunc.reduceat; where indices[i] >= indices[i + 1] the
        result is a[indices[i]]."""
        self._require_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        reduceat = self.__static_props["reduceat"] or self._reduceat_via_scan
        return reduceat(a, indices, axis=axis, dtype=dtype)

    def _reduceat_via_scan(self, a, indices, axis=0, dtype=None):
        from gpuarr.lax.control_flow import fori_loop
        from gpuarr.numpy.ufuncs import where as jwhere
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = ensure_array(a)
        idx_tuple = _index_tuple(indices)
        assert len(idx_tuple) == 1
        indices = ensure_array(idx_tuple[0])
        shape = get_aval(a).shape
        if not shape:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={shape}")
        if get_aval(indices).ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got "
                             f"indices.shape={get_aval(indices).shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = canonicalize_axis(axis, len(shape))
        if dtype is not None:
            a = lax_conversions.convert_element_type(a, dtypes.canonicalize_dtype(dtype))
        out = selection.take(a, indices, axis=axis)
        bounds = lax.concatenate([lax_conversions.convert_element_type(indices, np.int32),
                                  np.array([shape[axis]], np.int32)], 0)
        others = tuple(d for d in range(get_aval(out).ndim) if d != axis)
        bounds = lax_shape_ops.expand_dims(bounds, others)
        count = get_aval(indices).shape[0]
        start = lax.slice_in_dim(bounds, 0, count, axis=axis)
        end = lax.slice_in_dim(bounds, 1, count + 1, axis=axis)

        def body(i, acc):
            inside = lax.bitwise_and(lax.gt(i, start), lax.lt(i, end))
            row = selection.take(a, lax_shape_ops.expand_dims(i, (0,)), axis=axis)
            return jwhere(inside, self(acc, row), acc)

        return fori_loop(0, shape[axis], body, out)

    # ------------------------------------------------------------ outer

    def outer(self, A, B, /):
        """This binary ufunc applied to every pair (A[i...], B[j...]); the result has shape
        A.shape + B.shape, as numpy.ufunc.outer."""
        self._require_binary("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = ensure_array(A), ensure_array(B)
        ashape, bshape = get_aval(A).shape, get_aval(B).shape
        if self.__static_props["call"] is not None:
            # A known elementwise function: broadcasting A against B is the outer product.
            return self(lax_shape_ops.reshape(A, ashape + (1,) * len(bshape)), B)
        from gpuarr.vmap_api import vmap
        flat_a = lax_shape_ops.reshape(A, (math.prod(ashape),))
        flat_b = lax_shape_ops.reshape(B, (math.prod(bshape),))
        result = vmap(vmap(self, (None, 0)), (0, None))(flat_a, flat_b)
        return lax_shape_ops.reshape(result, ashape + bshape)


def _index_tuple(idx):
    """Indices as a tuple; non-tuple sequences are refused, as JAX refuses them."""
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, (Array, np.ndarray, str)):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[array(seq)]` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    return (idx,)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A ufunc from a function of `nin` scalar arguments (applied elementwise with vmap)."""
    return ufunc(func, nin, nout, identity=identity)


# ---------------------------------------------------------------- fast paths of the built-ins


def _reduction(fn):
    """ufunc.reduce through an existing reduction, in the form that takes every reduction
    argument (reductions._sum, reductions._all, ...: jnp.max and jnp.all take no dtype)."""
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        return fn(a, axis, dtype, None, keepdims, initial, where)
    return reduce


def _bitwise_reduction(prim_fn, combine, identity, name):
    """bitwise_and/or.reduce: the lax reduction `prim_fn` on integers (logical on booleans),
    masked entries filled with `identity` and `initial` folded in with `combine`. The result
    is never weakly typed, as in JAX."""
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        (a,) = promote_dtypes(ensure_array(a))
        aval = get_aval(a)
        if not (dtypes.is_int(aval.dtype) or aval.dtype == np.bool_):
            raise TypeError(f"jnp.{name}.reduce requires integer or boolean arguments, got "
                            f"{aval.dtype.name}.")
        dt = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
        if dt != aval.dtype or aval.weak_type:
            a = lax_conversions.convert_element_type(a, dt)
        if where is not None:
            from gpuarr.numpy.ufuncs import where as jwhere
            # astype wraps: -1 is all ones for unsigned types, True for booleans.
            a = jwhere(where, a, np.asarray(identity).astype(dt)[()])
        axes = _axes(axis, aval.ndim)
        out = prim_fn(a, axes)
        if initial is not None:
            init = lax_conversions.convert_element_type(ensure_array(initial), dt)
            out = combine(out, broadcast_to(init, get_aval(out).shape))
        return lax_shape_ops.expand_dims(out, tuple(sorted(axes))) if keepdims else out
    return reduce


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(canonicalize_axis(ax, ndim) for ax in axis)
    return (canonicalize_axis(axis, ndim),)


def _accumulation(fn):
    def accumulate(a, axis=0, dtype=None):
        return fn(a, axis=axis, dtype=dtype)
    return accumulate


def _at_update(method, bool_as_int=False):
    """ufunc.at through x.at[indices].<method>(b); booleans go through int32 like JAX."""
    def at(a, indices, b):
        check_arraylike("at", a, b)
        a = ensure_array(a)
        if bool_as_int and get_aval(a).dtype == np.bool_:
            a = lax_conversions.convert_element_type(a, np.int32)
            b = lax_conversions.convert_element_type(lax_conversions.convert_element_type(ensure_array(b),
                                                                                          np.bool_),
                                         np.int32)
            return lax_conversions.convert_element_type(getattr(a.at[indices], method)(b), np.bool_)
        return getattr(a.at[indices], method)(b)
    return at


# Keyword arguments of ufunc() for the built-in binary ufuncs with fast methods.
FAST_METHODS = {
    "add": dict(identity=0, reduce=_reduction(reductions._sum),
                accumulate=_accumulation(selection.cumsum), at=_at_update("add", True)),
    "multiply": dict(identity=1, reduce=_reduction(reductions._prod),
                     accumulate=_accumulation(selection.cumprod), at=_at_update("multiply", True)),
    "subtract": dict(identity=None, at=_at_update("subtract")),
    "maximum": dict(identity=None, reduce=_reduction(reductions._max)),
    "minimum": dict(identity=None, reduce=_reduction(reductions._min)),
    "logical_and": dict(identity=True, reduce=_reduction(reductions._all)),
    "logical_or": dict(identity=False, reduce=_reduction(reductions._any)),
    "logical_xor": dict(identity=False),
    "bitwise_and": dict(identity=-1, reduce=_bitwise_reduction(lax.reduce_and, lax.bitwise_and, -1,
                                                               "bitwise_and")),
    "bitwise_or": dict(identity=0, reduce=_bitwise_reduction(lax.reduce_or, lax.bitwise_or, 0,
                                                             "bitwise_or")),
    "bitwise_xor": dict(identity=0),
    "logaddexp": dict(identity=-np.inf),
    "logaddexp2": dict(identity=-np.inf),
}


# What inspect.signature reports for a ufunc instance: ufunc.__call__'s parameters (a class
# whose __call__ is a staticmethod would otherwise show `fn`'s first parameter as `self`).
_CALL_SIGNATURE = inspect.signature(ufunc.__call__).replace(
    parameters=list(inspect.signature(ufunc.__call__).parameters.values())[1:])


def _direct(fn: Callable[..., Any], nin: int, **methods) -> ufunc:
    """A built-in ufunc whose class calls `fn` itself: eager calls (jnp.add(x, y)) pay for no
    extra Python frame. `fn` takes the `out`/`where` keywords of ufunc.__call__."""
    cls = type("ufunc", (ufunc,), {"__call__": staticmethod(fn), "__slots__": (),
                                   "__signature__": _CALL_SIGNATURE,
                                   "__qualname__": f"ufunc[{fn.__name__}]"})
    return cls(fn, nin, 1, name=fn.__name__, call=fn, **methods)


def binary_ufunc(fn: Callable[..., Any]) -> ufunc:
    """The built-in binary ufunc named fn.__name__ (with its fast methods, if any)."""
    return _direct(fn, 2, **FAST_METHODS[fn.__name__])


def unary_ufunc(fn: Callable[..., Any]) -> ufunc:
    """A built-in unary ufunc."""
    return _direct(fn, 1)
