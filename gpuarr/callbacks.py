"""Host callbacks: `pure_callback` and `io_callback` call Python functions from staged programs.

Each is a primitive whose params hold the Python function (wrapped in a small hashable
`_FlatCallback`) and the declared result types. Eagerly the function runs at once; under
`jit` the equation is staged into the Program and the NumPy backend calls the function
when the compiled Program runs, with NumPy arrays, checking every result against the
declared shape and dtype. `pure_callback` is pure: it may be removed when its results
are unused, and it batches under `vmap` as `vmap_method` says. `io_callback` is
effectful: it is never removed, and it runs once per batch element under `vmap`.
Ordering (`ordered=True`) holds on the NumPy backend because a compiled Program is
straight-line Python code run in program order.
"""
from __future__ import annotations

import dataclasses
import logging
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuarr import core, dtypes, pytrees
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, weak_type_rules
from gpuarr.errors import JaxRuntimeError
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.lax import shape_ops

# JAX's logger name for a failed callback: filters and levels set on it (libraries silence
# it while they raise a callback's error again with a message of their own) apply here too.
logger = logging.getLogger("jax._src.callback")
_SCALARS = (bool, int, float, complex)
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)

# ---------------------------------------------------------------- callables held in params


@dataclasses.dataclass(frozen=True)
class _FlatCallback:
    """The user's function, called with flat arguments; returns the flat leaves of its result.

    Equal for the same function and argument structure, so identical callback equations
    compare equal (CSE may merge pure ones)."""

    callback_func: Callable[..., Any]
    in_tree: pytrees.PyTreeDef

    def __call__(self, *flat_args):
        args, kwargs = pytrees.tree_unflatten(self.in_tree, list(flat_args))
        return pytrees.tree_leaves(self.callback_func(*args, **kwargs))


@dataclasses.dataclass(frozen=True)
class _Sequential:
    """Calls `inner` once per element of a vmapped batch, in order, and stacks the results.

    `dims[i]` is the batch axis of argument i (None: the argument is not batched)."""

    inner: Callable[..., Any]
    dims: tuple
    axis_size: int
    result_avals: tuple

    def __call__(self, *args):
        per_elem = []
        for i in range(self.axis_size):
            sliced = [a if d is None else np.take(a, i, axis=d) for a, d in zip(args, self.dims)]
            per_elem.append(_call_checked(self.inner, sliced, self.result_avals))
        return [np.stack([r[k] for r in per_elem]) if per_elem else
                np.empty((0,) + aval.shape, aval.dtype)
                for k, aval in enumerate(self.result_avals)]


def call_checked(callback, args, result_avals, kind="pure_callback") -> list:
    """Call `callback` on NumPy arrays and check its results against `result_avals`. Whatever
    it raises (or a wrong result) comes back as JAX's JaxRuntimeError, whose message ends with
    the Python traceback, after a log line naming the callback's kind."""
    try:
        return _call_checked(callback, args, result_avals)
    except Exception as e:
        logger.exception("jax.%s failed", kind)
        trace = "".join(traceback.format_exception(e))
        raise JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {trace}") from e


def _call_checked(callback, args, result_avals) -> list:
    outs = callback(*[np.asarray(a) for a in args])
    if len(outs) != len(result_avals):
        raise RuntimeError(f"Mismatched number of outputs from callback. Expected: "
                           f"{len(result_avals)}, Actual: {len(outs)}. Return a pytree matching "
                           "result_shape_dtypes.")
    checked = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        val = np.asarray(out)
        # Python scalars and 64-bit NumPy values follow the x64 setting, as arguments do.
        val = val.astype(dtypes.canonicalize_dtype(val.dtype), copy=False)
        if val.shape != aval.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: "
                               f"{aval.shape}, Actual: {val.shape}. Make the callback return "
                               "the shape declared in result_shape_dtypes.")
        if val.dtype != aval.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: "
                               f"{aval.dtype}, Actual: {val.dtype}. Cast the callback's result "
                               "(e.g. with .astype) to the dtype declared in result_shape_dtypes.")
        checked.append(val)
    return checked


# ---------------------------------------------------------------- shared helpers


def _operand(x):
    """A callback argument as a bindable value (Python scalars take their JAX dtype)."""
    if isinstance(x, _SCALARS):
        return np.asarray(x, dtypes.dtype(x, canonicalize=True))
    core.get_aval(x)  # raises TypeError for values that are not arrays
    if isinstance(x, np.ndarray):
        return x.astype(dtypes.canonicalize_dtype(x.dtype), copy=False)
    return x


def _result_avals(result_shape_dtypes):
    leaves, out_tree = pytrees.tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError(f"result_shape_dtypes leaves must have .shape and .dtype (use "
                            f"gpuarr.ShapeDtypeStruct), got {leaf!r}")
        dt = np.dtype(leaf.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        avals.append(ShapedArray(tuple(leaf.shape), dt))
    return tuple(avals), out_tree


def _flatten_call(callback, args, kwargs):
    if not callable(callback):
        raise TypeError(f"callback must be callable, got an object of type {type(callback)}")
    flat, in_tree = pytrees.tree_flatten((args, kwargs))
    return [_operand(x) for x in flat], _FlatCallback(callback, in_tree)


def _batched_avals(avals, axis_size):
    return tuple(a.update(shape=(axis_size,) + a.shape) for a in avals)


def _no_outputs_weak(*args, result_avals, **params):
    return [False] * len(result_avals)


# ---------------------------------------------------------------- pure_callback

pure_callback_p = Primitive("pure_callback", multiple_results=True)


def _pure_callback_impl(*args, callback, result_avals, sharding, vmap_method):
    return call_checked(callback, args, result_avals)


def _pure_callback_abstract(*avals, callback, result_avals, sharding, vmap_method):
    return list(result_avals)


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                     "use callbacks while taking gradients.")


def _pure_callback_batch(axis_size, vals, dims, callback, result_avals, sharding, vmap_method):
    batched = _batched_avals(result_avals, axis_size)
    params = dict(result_avals=batched, sharding=sharding, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        seq = _Sequential(callback, tuple(dims), axis_size, tuple(result_avals))
        outs = pure_callback_p.bind(*vals, callback=seq, **params)
    elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        moved = [x if d is None or d == 0 else batching.moveaxis(x, d, 0)
                 for x, d in zip(vals, dims)]
        if vmap_method != "legacy_vectorized":
            size = axis_size if vmap_method == "broadcast_all" else 1
            moved = [shape_ops.broadcast(x, (size,)) if d is None else x for x, d in zip(moved, dims)]
        outs = pure_callback_p.bind(*moved, callback=callback, **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return outs, [0] * len(outs)


impl_rules[pure_callback_p] = _pure_callback_impl
abstract_eval_rules[pure_callback_p] = _pure_callback_abstract
weak_type_rules[pure_callback_p] = _no_outputs_weak
ad.jvp_rules[pure_callback_p] = _pure_callback_jvp
ad.transpose_rules[pure_callback_p] = _pure_callback_transpose
batching.batch_rules[pure_callback_p] = _pure_callback_batch


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding=None, vmap_method: str | None = None, **kwargs: Any):
    """Call the pure host function `callback(*args, **kwargs)` from eager or staged code.

    The callback receives NumPy arrays and must return a pytree matching
    `result_shape_dtypes` (leaves with `.shape` and `.dtype`, e.g. `gpuarr.ShapeDtypeStruct`);
    a mismatch raises `RuntimeError`. Being pure, it may be skipped when its results are
    unused. Under `vmap`, `vmap_method` chooses: "sequential" (one call per batch element),
    "expand_dims" (one call; unbatched arguments get a leading axis of size 1),
    "broadcast_all" (one call; every argument broadcast to the batch) or
    "legacy_vectorized"; without one `vmap` raises `NotImplementedError`. Differentiating
    through it raises `ValueError`: wrap it in `custom_jvp`/`custom_vjp`."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    flat, flat_cb = _flatten_call(callback, args, kwargs)
    result_avals, out_tree = _result_avals(result_shape_dtypes)
    outs = pure_callback_p.bind(*flat, callback=flat_cb, result_avals=result_avals,
                                sharding=sharding, vmap_method=vmap_method)
    return pytrees.tree_unflatten(out_tree, outs)


# ---------------------------------------------------------------- io_callback

io_callback_p = Primitive("io_callback", multiple_results=True, effectful=True)


def _io_callback_impl(*args, callback, result_avals, sharding, ordered):
    return call_checked(callback, args, result_avals, "io_callback")


def _io_callback_abstract(*avals, callback, result_avals, sharding, ordered):
    return list(result_avals)


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batch(axis_size, vals, dims, callback, result_avals, sharding, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    seq = _Sequential(callback, tuple(dims), axis_size, tuple(result_avals))
    outs = io_callback_p.bind(*vals, callback=seq, ordered=False,
                              result_avals=_batched_avals(result_avals, axis_size),
                              sharding=sharding)
    return outs, [0] * len(outs)


impl_rules[io_callback_p] = _io_callback_impl
abstract_eval_rules[io_callback_p] = _io_callback_abstract
weak_type_rules[io_callback_p] = _no_outputs_weak
ad.jvp_rules[io_callback_p] = _io_callback_jvp
ad.transpose_rules[io_callback_p] = _io_callback_transpose
batching.batch_rules[io_callback_p] = _io_callback_batch


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding=None, ordered: bool = False, **kwargs: Any):
    """Call the impure host function `callback(*args, **kwargs)` (JAX's `experimental.io_callback`).

    Like `pure_callback` (NumPy arrays in, results checked against `result_shape_dtypes`),
    but effectful: the call is never removed from a Program, even when its results are
    unused. Under `vmap` it runs once per batch element, in order; `ordered=True` keeps
    program order relative to other ordered effects, and `vmap` of an ordered callback
    raises `ValueError`. It can't be differentiated."""
    flat, flat_cb = _flatten_call(callback, args, kwargs)
    result_avals, out_tree = _result_avals(result_shape_dtypes)
    # Params in alphabetical order: the order Programs print them in, as JAX does.
    outs = io_callback_p.bind(*flat, callback=flat_cb, ordered=bool(ordered),
                              result_avals=result_avals, sharding=sharding)
    return pytrees.tree_unflatten(out_tree, outs)
