"""Selecting and accumulating: take, take_along_axis, put_along_axis, nonzero, argwhere,
flatnonzero, select, choose, compress, extract, cumsum/cumprod (and nan- versions), nanargmin,
nanargmax. Sizes that depend on values need a static `size=` under jit, as in JAX."""
from __future__ import annotations

import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Tracer, get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import cumulative, lax, slicing
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import advanced_indexing, ufuncs
from gpuarr.numpy.arguments import (
    broadcast_all,
    broadcast_arrays,
    canonicalize_axis,
    check_arraylike,
    concrete_dim_or_error,
    concrete_value,
    ensure_array,
    promote_dtypes,
    reject_out,
    static_hashable,
    widen_narrow_int,
)


def _int_dtype():
    return dtypes.default_int_dtype()


def _ravel(a):
    return lax_shape_ops.reshape(a, (get_aval(a).size,))


def _moveaxis(a, src, dst):
    nd = get_aval(a).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return lax_shape_ops.transpose(a, perm)


# ---------------------------------------------------------------- take


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of `a` at `indices` along `axis` (the flattened array when None).

    As in JAX, out-of-bounds indices give `fill_value` (NaN for floats) by default (`mode='fill'`),
    where negative indices count from the end; `mode='clip'` clamps the raw indices to
    [0, n - 1] (so -1 gives the first entry) and `mode='wrap'` wraps them.
    """
    axis = None if axis is None else operator.index(axis)
    check_arraylike("take", a, indices)
    reject_out("take", out)
    a, indices = ensure_array(a), ensure_array(indices)
    if axis is None:
        a, axis = _ravel(a), 0
    aval = get_aval(a)
    if aval.ndim == 0:  # a 0-d array has no axis to take along, whatever canonicalize allows
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = canonicalize_axis(axis, aval.ndim)
    n = aval.shape[axis]
    is_bool = get_aval(indices).dtype == np.bool_
    if mode is None or mode == "fill":
        mode = "fill"
        _check_fill_value(fill_value, aval.dtype)
        if is_bool:  # JAX's negative-index wrap promotes them: True gathers 1, False 0
            indices = lax_conversions.convert_element_type(indices, np.int32)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    elif mode == "wrap":
        if is_bool:  # JAX takes them modulo the length cast to bool (True): always index 0
            indices = lax_shape_ops.full_like(indices, 0, np.int32)
        indices = lax.rem(lax.add(lax.rem(indices, _scalar(n, indices)), _scalar(n, indices)),
                          _scalar(n, indices))
        mode = "clip"
    elif mode == "clip":
        # JAX clamps the raw indices: a negative one gives the first entry, not one from the end.
        if dtypes.is_signed_int(get_aval(indices).dtype):
            indices = lax.max(indices, lax_shape_ops.full_like(indices, 0))
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    # JAX checks the axis and the index count before the gather looks at the index dtype.
    if n == 0:
        if get_aval(indices).size:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return a  # as JAX: the operand itself, whatever the indices' shape
    if get_aval(indices).size == 0:
        indices = lax_conversions.convert_element_type(indices, np.int32)
    if not dtypes.is_int(get_aval(indices).dtype):
        raise ValueError("indices must have an integer type")
    idx = (slice(None),) * axis + (indices,)
    return advanced_indexing.getitem(a, idx, mode=mode, fill_value=fill_value,
                                     indices_are_sorted=indices_are_sorted,
                                     unique_indices=unique_indices)


def _check_fill_value(fill_value, dtype):
    """JAX converts the fill value with NumPy, which refuses a Python complex for a real (but
    not boolean) array: the same TypeError here."""
    if type(fill_value) is complex and not dtypes.is_complex(dtype) and dtype != np.bool_:
        np.array(fill_value, dtype)


def _scalar(n, like):
    return np.asarray(max(n, 1), get_aval(like).dtype)[()]


def _check_along_axis(name, a_aval, i_aval):
    """JAX's errors, in its order: take_along_axis checks the dtype first, put_along_axis
    the ranks."""
    bad_dtype = not dtypes.is_int(i_aval.dtype)
    if name == "take_along_axis":
        if bad_dtype:
            raise TypeError(f"take_along_axis indices must be of integer type, got {i_aval.dtype}")
        if a_aval.ndim != i_aval.ndim:
            raise ValueError("indices and arr must have the same number of dimensions; "
                             f"{i_aval.ndim} vs. {a_aval.ndim}")
        return
    if a_aval.ndim != i_aval.ndim:
        raise ValueError(f"{name} arguments 'arr' and 'indices' must have same ndim. Got "
                         f"arr.ndim={a_aval.ndim} and indices.ndim={i_aval.ndim}.")
    if bad_dtype:
        raise TypeError("Indexer must have integer or boolean type, got indexer with type "
                        f"{i_aval.dtype}")


def _along_axis_operands(name, arr, indices, axis, wrap_negative=True):
    check_arraylike(name, arr, indices)
    arr, indices = ensure_array(arr), ensure_array(indices)
    if axis is None:
        arr, indices, axis = _ravel(arr), _ravel(indices), 0
    a_aval, i_aval = get_aval(arr), get_aval(indices)
    _check_along_axis(name, a_aval, i_aval)
    axis = canonicalize_axis(axis, a_aval.ndim)
    try:
        shape = np.broadcast_shapes(tuple(s for i, s in enumerate(a_aval.shape) if i != axis),
                                    tuple(s for i, s in enumerate(i_aval.shape) if i != axis))
    except ValueError:
        raise ValueError(f"{name}: arr shape {a_aval.shape} and indices shape {i_aval.shape} do "
                         f"not broadcast outside axis {axis}.") from None
    shape = list(shape)
    a_shape = tuple(shape[:axis] + [a_aval.shape[axis]] + shape[axis:])
    i_shape = tuple(shape[:axis] + [i_aval.shape[axis]] + shape[axis:])
    arr = lax_shape_ops.broadcast_in_dim(arr, a_shape, tuple(range(len(a_shape)))) \
        if a_aval.shape != a_shape else arr
    indices = lax_shape_ops.broadcast_in_dim(indices, i_shape, tuple(range(len(i_shape)))) \
        if i_aval.shape != i_shape else indices
    n = a_shape[axis]
    indices = advanced_indexing._as_index_array(indices, n, wrap_negative)
    return arr, indices, axis


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
    """`arr` gathered at `indices` along `axis`, matching the other axes (which broadcast).

    Out-of-bounds indices give `fill_value` (NaN for floats) unless `mode='clip'`; negative
    indices count from the end when `wrap_negative_indices` is True (by default, unless
    `mode='promise_in_bounds'`).
    """
    check_arraylike("take_along_axis", arr, indices)
    arr, indices = ensure_array(arr), ensure_array(indices)
    a_aval, i_aval = get_aval(arr), get_aval(indices)
    if not dtypes.is_int(i_aval.dtype):  # JAX checks the dtype first
        raise TypeError(f"take_along_axis indices must be of integer type, got {i_aval.dtype}")
    if axis is None:
        if i_aval.ndim != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{i_aval.shape}")
        arr, axis = _ravel(arr), 0
        a_aval = get_aval(arr)
    _check_along_axis("take_along_axis", a_aval, i_aval)
    if a_aval.ndim == 0:  # canonicalize_axis lets axis 0 or -1 through for 0-d arrays
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = canonicalize_axis(axis, a_aval.ndim)
    arr_shape = a_aval.shape[:axis] + (1,) + a_aval.shape[axis + 1:]
    try:
        out_shape = np.broadcast_shapes(i_aval.shape, arr_shape)
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting: shapes="
                         f"{[i_aval.shape, arr_shape]}") from None
    if a_aval.shape[axis] == 0 or 0 in out_shape:  # nothing to gather: zeros, as in JAX
        return lax_shape_ops.full(out_shape, 0, a_aval.dtype)
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    if mode is None or mode == "fill":
        _check_fill_value(fill_value, a_aval.dtype)
    arr, indices, axis = _along_axis_operands("take_along_axis", arr, indices, axis,
                                              bool(wrap_negative_indices))
    mode = "fill" if mode is None else mode
    return slicing.take_along_axis(arr, indices, axis, mode=mode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """`arr` with `values` written at `indices` along `axis` (the functional form: pass
    inplace=False, since arrays are immutable)."""
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays "
                         "are immutable. Pass inplace=False to instead return an updated array.")
    shape0 = get_aval(ensure_array(arr)).shape
    flat = axis is None  # the flattened array is written, then given arr's shape back
    arr, indices, axis = _along_axis_operands("put_along_axis", arr, indices, axis)
    if not flat and get_aval(arr).shape != shape0:
        raise ValueError("put_along_axis: indices must not broadcast arr to a larger shape.")
    aval = get_aval(arr)
    nd = aval.ndim
    values = ensure_array(values)
    (arr_p, values) = promote_dtypes(arr, values)
    i_shape = get_aval(indices).shape
    values = advanced_indexing._broadcast_values(values, i_shape)
    others = tuple(d for d in range(nd) if d != axis)
    idx = lax_shape_ops.reshape(indices, i_shape + (1,))
    dn = slicing.ScatterDimensionNumbers((), (axis,), (axis,), others, others)
    out = slicing.scatter(arr_p, idx, values, dn, mode=mode)
    out = lax_conversions.convert_element_type(out, aval.dtype)
    return lax_shape_ops.reshape(out, shape0) if flat else out


# ---------------------------------------------------------------- nonzero and friends


def _nonzero_mask(a):
    aval = get_aval(a)
    return a if aval.dtype == np.bool_ else lax.ne(a, lax_shape_ops.full(aval.shape, 0, aval.dtype))


_NONZERO_SIZE = ("The size argument of jnp.nonzero must be statically specified to use "
                 "jnp.nonzero within JAX transformations.")


def _nonzero_count(mask):
    """The number of True entries of the 1-D `mask`: a Python int, or under jit (no concrete
    value) the traced count, whose error names it as JAX's does."""
    if isinstance(mask, Tracer) and mask.to_concrete_value() is None:
        return lax_shape_ops.reduce_sum(lax_conversions.convert_element_type(mask, _int_dtype()), (0,))
    return int(np.count_nonzero(np.asarray(concrete_value(mask, _NONZERO_SIZE))))


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of `a`, one int32 array per axis.

    The result's length depends on the values, so under jit pass a static `size`: the result is
    cut or padded to it with `fill_value` (default 0; a tuple gives one per axis).
    """
    check_arraylike("nonzero", a, converts=True)
    a = ensure_array(a)
    aval = get_aval(a)
    if aval.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. "
                         "Use jnp.atleast_1d(scalar).nonzero() instead.")
    mask = _ravel(_nonzero_mask(a))
    size = concrete_dim_or_error(_nonzero_count(mask) if size is None else size, _NONZERO_SIZE)
    if size < 0:  # JAX's error, from building the padded result
        raise TypeError("broadcast_in_dim shape must have every element be nonnegative, got "
                        f"({size},).")
    if aval.size == 0 or size == 0:  # as JAX, before looking at fill_value
        return tuple(lax_shape_ops.full((size,), 0, _int_dtype()) for _ in aval.shape)
    fills = (None,) * aval.ndim
    if fill_value is not None:
        fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * aval.ndim
        if any(np.shape(f) != () for f in fills) or len(fills) != aval.ndim:
            raise ValueError(f"fill_value must be a scalar or a tuple of length {aval.ndim}; "
                             f"got {fill_value}")
    flat = _compact_positions(mask, size)
    out = []
    for d, fill in zip(_unravel(flat, aval.shape), fills):
        valid = lax.lt(flat, lax_shape_ops.full((size,), aval.size, np.int32))
        d = lax_conversions.convert_element_type(lax.select(valid, d, lax_shape_ops.full((size,), 0,
                                                                                         np.int32)),
                                     _int_dtype())
        # A fill value takes part in type promotion, as in JAX's where(fill_mask, fill, d).
        out.append(d if fill is None else ufuncs.where(valid, d, fill))
    return tuple(out)


def _compact_positions(mask, size):
    """Flat positions of the True entries of the 1-D `mask`, padded with len(mask) to `size`."""
    n = get_aval(mask).shape[0]
    counts = cumulative.cumsum(lax_conversions.convert_element_type(mask, np.int32), 0)
    slot = lax.select(mask, lax.sub(counts, lax_shape_ops.full((n,), 1, np.int32)),
                      lax_shape_ops.full((n,), size, np.int32))
    dn = slicing.ScatterDimensionNumbers((), (0,), (0,))
    return slicing.scatter(lax_shape_ops.full((size,), n, np.int32), lax_shape_ops.reshape(slot, (n, 1)),
                           lax_shape_ops.iota(np.int32, n), dn, mode="drop")


def _unravel(flat, shape):
    out, rest = [], flat
    for k in range(len(shape) - 1, -1, -1):
        n = np.int32(max(shape[k], 1))
        out.append(lax.rem(rest, lax_shape_ops.full(get_aval(rest).shape, n, np.int32)))
        rest = lax.div(rest, lax_shape_ops.full(get_aval(rest).shape, n, np.int32))
    return out[::-1]


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened `a` (see `nonzero` for `size`)."""
    check_arraylike("ravel", a)  # JAX's flatnonzero is nonzero(ravel(a)): ravel checks `a`
    return nonzero(_ravel(ensure_array(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements as rows of a (count, ndim) array (see `nonzero`)."""
    check_arraylike("argwhere", a, converts=True)
    a = ensure_array(a)
    ndim = get_aval(a).ndim
    # As JAX: a 0-d `a` goes through nonzero as 1-d, keeping the row count and the dtype.
    cols = nonzero(a if ndim else lax_shape_ops.reshape(a, (1,)), size=size, fill_value=fill_value)
    n = get_aval(cols[0]).shape[0]
    out = lax.concatenate([lax_shape_ops.reshape(c, (n, 1)) for c in cols], 1)
    return out if ndim else lax.slice(out, (0, 0), (n, 0))


# ---------------------------------------------------------------- select, choose, compress


def select(condlist, choicelist, default=0):
    """Per element, the choice for the first true condition, else `default`. Conditions of any
    dtype count where nonzero, and everything broadcasts together, as in JAX."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:  # len: condlist may be an array, whose truth is ambiguous
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    from gpuarr.numpy.manipulation import stack
    from gpuarr.numpy.reductions import argmax
    conds = [ensure_array(c) for c in condlist]
    choices = [ensure_array(c) for c in choicelist]
    # As JAX: the default goes first with a False condition, and the first true condition
    # wins (argmax gives the first maximum, 0 when none is true). The conditions broadcast
    # first, then the winning index with the default and choices, so a shape error lists
    # the shapes in that order.
    choices = promote_dtypes(default, *choices)
    conds = stack(broadcast_all(ensure_array(False), *conds))
    idx = argmax(lax_conversions.convert_element_type(conds, np.bool_), axis=0)
    return lax.select_n(*broadcast_all(idx, *choices))




def choose(a, choices, out=None, mode="raise"):
    """Per element, `choices[a]` (with broadcasting); `mode` is 'raise', 'wrap' or 'clip'."""
    reject_out("choose", out)
    check_arraylike("choose", a, *choices)
    a = ensure_array(a)
    if not dtypes.is_int(get_aval(a).dtype):
        raise TypeError(f"choose: `a` must be integers, got {get_aval(a).dtype.name}.")
    n = len(choices)
    if mode == "raise":
        host = np.asarray(concrete_value(a, "\njnp.choose with mode='raise' needs concrete "
                                            "indices; use mode='wrap' or mode='clip' under jit."))
        if np.any((host < 0) | (host >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = lax.rem(lax.add(lax.rem(a, _scalar(n, a)), _scalar(n, a)), _scalar(n, a))
    elif mode != "clip":
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    choices = promote_dtypes(*choices)
    a, *choices = broadcast_arrays(a, *choices)
    shape = np.broadcast_shapes(*[get_aval(x).shape for x in [a, *choices]])
    a, *choices = [lax_shape_ops.broadcast_in_dim(x, shape, tuple(range(len(shape) - get_aval(x).ndim,
                                                                        len(shape))))
                   if get_aval(x).shape != shape else x for x in [a, *choices]]
    a = lax_conversions.convert_element_type(a, np.int32)
    a = lax.max(lax.min(a, lax_shape_ops.full(shape, n - 1, np.int32)), lax_shape_ops.full(shape, 0,
                                                                                           np.int32))
    return lax.select_n(a, *choices)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of `a` along `axis` where `condition` is true; a static `size` pads the result
    with `fill_value` (needed under jit)."""
    reject_out("compress", out)
    check_arraylike("compress", condition, a)
    condition, a = ensure_array(condition), ensure_array(a)
    if get_aval(condition).ndim != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a, axis = _ravel(a), 0
    aval = get_aval(a)
    axis = canonicalize_axis(axis, aval.ndim)
    n = aval.shape[axis]
    m = get_aval(condition).shape[0]
    cond = _nonzero_mask(condition)
    if m > n:
        cond = lax.slice_in_dim(cond, 0, n)
    elif m < n:
        cond = lax.concatenate([cond, lax_shape_ops.full((n - m,), False, np.bool_)], 0)
    if size is not None and not 0 < int(size) <= n:
        raise ValueError("size must be positive and not greater than the size of the array axis; "
                         f"got size={size} for a.shape[axis]={n}")
    (idx,) = nonzero(cond, size=size, fill_value=n)
    return take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of `arr` where `condition` is true, flattened (see `compress` for `size`)."""
    check_arraylike("extract", condition, arr)
    return compress(_ravel(ensure_array(condition)), _ravel(ensure_array(arr)), size=size,
                    fill_value=fill_value)


# ---------------------------------------------------------------- cumulative reductions


def _cumulative_reduce(name, lax_fn, a, axis, dtype, nan_fill=None, promote_integers=False,
                       scalar=False):
    if scalar or axis is None:
        a = _ravel(a)
    if axis is None:
        axis = 0
    aval = get_aval(a)
    axis = canonicalize_axis(axis, aval.ndim) if aval.ndim else _bad_axis(axis)
    if nan_fill is not None:
        # JAX's where (for every dtype: a != a is never true for exact ones) with a constant
        # of a's dtype, so its program prints alike.
        a = ufuncs._where(lax.ne(a, a), np.array(nan_fill, aval.dtype), a)
    if dtype is None:
        out_dt = widen_narrow_int(aval.dtype) if promote_integers or aval.dtype == np.bool_ else aval.dtype
        comp_dt = out_dt
    elif np.dtype(dtype) == np.bool_:
        # Accumulate "nonzero" as integers: [-1, 1] must not cancel out.
        out_dt = np.dtype(np.bool_)
        if aval.dtype != np.bool_:
            a = lax.ne(a, np.zeros((), aval.dtype)[()])
        comp_dt = _int_dtype()
    else:
        out_dt = comp_dt = dtypes.canonicalize_dtype(dtype)
    # The result is never weakly typed, as JAX's.
    out = lax_fn(lax_conversions.convert_element_type(a, comp_dt), axis)
    return lax_conversions.convert_element_type(out, out_dt)


def _bad_axis(axis):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")


def _cumulative(name, lax_fn, nan_fill=None):
    def body(a, axis, dtype):
        (a,) = promote_dtypes(ensure_array(a))
        # Python scalars (weak 0-d arrays here) are 1-d whatever the axis, as in JAX.
        scalar = get_aval(a).ndim == 0 and get_aval(a).weak_type
        return _cumulative_reduce(name, lax_fn, a, axis, dtype, nan_fill, scalar=scalar)
    body.__name__ = body.__qualname__ = name
    # A jit named as the function, with axis and dtype static, as JAX's.
    body = _jit(body, static_argnames=("axis", "dtype"))

    def fn(a, axis=None, dtype=None, out=None):
        # JAX's jit takes axis and dtype statically, so it hashes them before anything else.
        static_hashable(axis), static_hashable(dtype)
        check_arraylike(name, a)
        if out is not None:  # JAX's message for the cumulative functions has no full stop
            raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported")
        return body(a, axis=axis, dtype=dtype)
    fn.__name__ = fn.__qualname__ = name
    what = "sum" if "sum" in name else "product"
    nan_note = " treating NaNs as " + ("zero" if nan_fill == 0 else "one") if nan_fill is not None else ""
    fn.__doc__ = (f"The cumulative {what} along `axis` (of the flattened array when None){nan_note}, "
                  f"as numpy.{name}; booleans accumulate as integers.")
    return fn


cumsum = _cumulative("cumsum", cumulative.cumsum)
cumprod = _cumulative("cumprod", cumulative.cumprod)
nancumsum = _cumulative("nancumsum", cumulative.cumsum, 0)
nancumprod = _cumulative("nancumprod", cumulative.cumprod, 1)


def _array_api_cumulative(name, lax_fn, what, initial, promote_integers):
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        check_arraylike(name, x)
        x = ensure_array(x)
        ndim = get_aval(x).ndim
        if ndim == 0:
            raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a "
                             "scalar value or scalar array was given.")
        if axis is None:
            if ndim > 1:
                raise ValueError(f"The input array has rank {ndim}, however axis was not set to an "
                                 "explicit value. The axis argument is only optional for "
                                 "one-dimensional arrays.")
            axis = 0
        axis = canonicalize_axis(axis, ndim)
        out = _cumulative_reduce(name, lax_fn, x, axis, dtype, promote_integers=promote_integers)
        if include_initial:
            shape = list(get_aval(out).shape)
            shape[axis] = 1
            out = lax.concatenate([lax_shape_ops.full(tuple(shape), initial, get_aval(out).dtype), out], axis)
        return out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The cumulative {what} along `axis` (required unless x is 1-d), as the array "
                  f"API's {name} (cumulative_sum promotes narrow integers as sum does); "
                  f"`include_initial` prepends the identity.")
    return fn


cumulative_sum = _array_api_cumulative("cumulative_sum", cumulative.cumsum, "sum", 0, True)
cumulative_prod = _array_api_cumulative("cumulative_prod", cumulative.cumprod, "product", 1, False)


def _nanarg(name, reduce_name, fill):
    def body(a, axis, keepdims):
        from gpuarr.numpy import reductions
        from gpuarr.numpy.ufuncs import isnan, where
        arg = getattr(reductions, reduce_name)
        if not dtypes.is_inexact(get_aval(a).dtype):
            return arg(a, axis=axis, keepdims=keepdims)
        nan = isnan(a)
        res = arg(where(nan, fill, a), axis=axis, keepdims=keepdims)
        # An all-NaN slice has no answer; JAX returns -1 where NumPy raises.
        return where(reductions.all(nan, axis=axis, keepdims=keepdims), -1, res)
    body.__name__ = body.__qualname__ = "_" + name
    body = _jit(body, static_argnames=("axis", "keepdims"))  # as JAX's _nanargmax

    def fn(a, axis=None, out=None, keepdims=None):
        check_arraylike(name, a)
        reject_out(name, out)
        return body(ensure_array(a), None if axis is None else operator.index(axis),
                    keepdims=bool(keepdims))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Index of the {reduce_name[3:]}imum along `axis` ignoring NaNs, as "
                  f"numpy.{name}; an all-NaN slice gives -1 (NumPy raises).")
    return fn


nanargmax = _nanarg("nanargmax", "argmax", -float("inf"))
nanargmin = _nanarg("nanargmin", "argmin", float("inf"))
