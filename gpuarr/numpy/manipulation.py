"""Shape manipulation: reshape, ravel, transpose, moveaxis, swapaxes, squeeze, expand_dims,
broadcast_to, concatenate, stack."""
from __future__ import annotations

import math
import operator

import numpy as np

from gpuarr import core
from gpuarr.array import Array
from gpuarr.core import Tracer, get_aval
from gpuarr.dispatch import eval_trace
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy.arguments import (
    broadcast_all,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    concrete_dim_or_error,
    concrete_or_error,
    concrete_value,
    ensure_array,
    promote_dtypes,
    reject_out,
    static_hashable,
)
from gpuarr.numpy.arguments import (
    broadcast_arrays as _broadcast_arrays,
)
from gpuarr.numpy.arguments import (
    broadcast_to as _broadcast_to,
)


def reshape(a, shape, order="C", *, copy=None, out_sharding=None):
    """Give `a` a new shape; one dimension may be -1 (inferred)."""
    check_arraylike("reshape", a)
    if out_sharding is not None:
        lax_arguments.check_no_sharding("numpy.reshape", out_sharding)
    if isinstance(a, np.ndarray):  # JAX calls the NumPy array's own reshape: NumPy's errors
        np.lib.stride_tricks.as_strided(a, a.shape, a.strides, writeable=False).reshape(shape)
    a = ensure_array(a)
    size = get_aval(a).size
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape}.") from None
    if order not in ("C", "F", "A"):
        raise ValueError(f"order {order!r} is not permitted for reshaping" if order == "K" else
                         f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if shape.count(-1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of shape {get_aval(a).shape} (size {size}) into "
                            f"shape {shape} because the product of specified axis sizes "
                            f"({known}) does not evenly divide {size}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"cannot reshape array of shape {get_aval(a).shape} (size {size}) into shape "
                        f"{shape} (size {math.prod(shape)})")
    if order == "F":
        nd = get_aval(a).ndim
        t = lax_shape_ops.transpose(a, tuple(reversed(range(nd))))
        return lax_shape_ops.transpose(lax_shape_ops.reshape(t, tuple(reversed(shape))),
                                       tuple(reversed(range(len(shape)))))
    return lax_shape_ops.reshape(a, shape)


def ravel(a, order="C", *, out_sharding=None):
    """Flatten to one dimension."""
    check_arraylike("ravel", a)
    if out_sharding is not None:
        lax_arguments.check_no_sharding("numpy.ravel", out_sharding)
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    if order not in ("C", "F", "A"):
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """Permute axes (reverse them by default)."""
    check_arraylike("transpose", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    axes = tuple(reversed(range(nd))) if axes is None else tuple(canonicalize_axis(i, nd) for i in axes)
    return lax_shape_ops.transpose(a, _check_permutation(axes, get_aval(a).shape))


def _check_permutation(axes, shape):
    """`axes` unchanged if it permutes range(len(shape)); JAX's TypeError otherwise."""
    if sorted(axes) != list(range(len(shape))):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {tuple(axes)} for operand shape {tuple(shape)}.")
    return tuple(axes)


def _strict_axes(axis, ndim):
    """canonicalize_axes without the 0-d leniency of reductions: a 0-d array has no axis 0."""
    if ndim == 0 and axis not in (None, (), []):
        first = axis[0] if isinstance(axis, (tuple, list)) else axis
        raise ValueError(f"axis {first} is out of bounds for array of dimension 0")
    return canonicalize_axes(axis, ndim)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    check_arraylike("matrix_transpose", x)
    nd = get_aval(ensure_array(x)).ndim
    if nd < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
    return lax_shape_ops.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def moveaxis(a, source, destination):
    """Move axes `source` to positions `destination`."""
    check_arraylike("moveaxis", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    src = _strict_axes(source, nd)
    dst = _strict_axes(destination, nd)
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax_shape_ops.transpose(a, tuple(order))


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    check_arraylike("swapaxes", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    for ax in (axis1, axis2):  # static in JAX's swapaxes: an array is refused as unhashable
        static_hashable(ax)
    # Swapped in a NumPy array as in JAX, whose errors for bad axes are NumPy's indexing ones.
    perm = np.arange(nd)
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return lax_shape_ops.transpose(a, tuple(int(i) for i in perm))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in `axis`)."""
    check_arraylike("squeeze", a)
    a = ensure_array(a)
    shape = get_aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        # An int or else an iterable of ints, as JAX reads it.
        try:
            axis = (operator.index(axis),)
        except TypeError:
            axis = tuple(map(operator.index, axis))
        axes = tuple(_strict_axes(ax, len(shape))[0] for ax in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"dimensions are not unique: {axes}")
    return lax_shape_ops.squeeze(a, axes)


def expand_dims(a, axis):
    """Insert size-1 axes at `axis` (an int or tuple) of the result."""
    check_arraylike("expand_dims", a)
    a = ensure_array(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = get_aval(a).ndim + len(axes)
    return lax_shape_ops.expand_dims(a, canonicalize_axes(axes, ndim))


def broadcast_to(array, shape, *, out_sharding=None):
    """Broadcast `array` to `shape` with NumPy's rules."""
    check_arraylike("broadcast_to", array)
    if out_sharding is not None:
        lax_arguments.check_no_sharding("numpy.broadcast_to", out_sharding)
    return _broadcast_to(ensure_array(array), (shape,) if isinstance(shape, int) else shape)


def broadcast_arrays(*args):
    """Broadcast all arguments to one shape."""
    check_arraylike("broadcast_arrays", *args)
    return broadcast_all(*[ensure_array(a) for a in args])


def _is_array(x):
    return isinstance(x, (np.ndarray, Array, Tracer))


def _concatenate_array(arr, axis, dtype=None):
    """concatenate of the subarrays of one array: a reshape, as JAX's fast path does."""
    from gpuarr.numpy.creation import asarray
    arr = asarray(arr, dtype=dtype)
    shape = get_aval(arr).shape
    if not shape or shape[0] == 0:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return lax_shape_ops.reshape(arr, (math.prod(shape),))
    if len(shape) == 1:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, len(shape) - 1)
    new_shape = shape[1:axis + 1] + (shape[0] * shape[axis + 1],) + shape[axis + 2:]
    return lax_shape_ops.reshape(arr, new_shape, (*range(1, axis + 1), 0, *range(axis + 1, len(shape))))


def concatenate(arrays, axis=0, dtype=None):
    """Join a sequence of arrays along an existing axis (axis=None flattens first)."""
    if _is_array(arrays):
        return _concatenate_array(arrays, axis, dtype)
    # As JAX's check: a generator is used up by it, and a non-iterable is Python's TypeError.
    check_arraylike("concatenate", *arrays, converts=True)
    arrays = [ensure_array(a) for a in arrays]
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return concatenate([ravel(a) for a in arrays], 0, dtype=dtype)
    nd = get_aval(arrays[0]).ndim
    if nd == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, nd)
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:  # each array cast straight to `dtype`, as in JAX
        from gpuarr.numpy.creation import asarray
        arrays = [asarray(a, dtype=dtype) for a in arrays]
    return lax.concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays along a new axis."""
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    reject_out("stack", out)
    if _is_array(arrays):  # one array: its subarrays, by JAX's reshape fast path
        axis = canonicalize_axis(axis, get_aval(ensure_array(arrays)).ndim)
        return concatenate(expand_dims(arrays, axis + 1), axis=axis, dtype=dtype)
    check_arraylike("stack", *arrays, converts=True)
    arrays = [ensure_array(a) for a in arrays]
    if dtype is None:  # cast first, as JAX's stack does before its lax.stack
        arrays = promote_dtypes(*arrays)
    else:
        from gpuarr.numpy.creation import asarray
        arrays = [asarray(a, dtype=dtype) for a in arrays]
    return lax_extras.stack(arrays, axis=axis)


_ = _broadcast_arrays


# ---------------------------------------------------------------- more shape functions


def _take_static(a, idx, axis):
    """a[..., idx, ...] along `axis` for a host integer index array."""
    full = (slice(None),) * axis + (np.asarray(idx, np.int32),)
    return a[full]


def _atleast(n, arys):
    out = []
    for a in arys:
        check_arraylike(f"atleast_{n}d", a)
        a = ensure_array(a)
        ndim = get_aval(a).ndim
        if ndim < n:  # new axes by expand_dims, as JAX adds them
            dims = {(3, 1): (0, 2), (3, 2): (2,)}.get((n, ndim), tuple(range(n - ndim)))
            a = lax_shape_ops.expand_dims(a, dims)
        out.append(a)
    return out[0] if len(out) == 1 else out


@_jit  # as JAX's
def atleast_1d(*arys):
    """Views with at least one dimension (scalars become shape (1,))."""
    return _atleast(1, arys)


@_jit  # as JAX's
def atleast_2d(*arys):
    """Views with at least two dimensions (1-D becomes a row)."""
    return _atleast(2, arys)


@_jit  # as JAX's
def atleast_3d(*arys):
    """Views with at least three dimensions ((N,) becomes (1, N, 1), (M, N) becomes (M, N, 1))."""
    if len(arys) == 1:
        return _atleast(3, arys)
    check_arraylike("atleast_3d", *arys)
    return [atleast_3d(a) for a in arys]  # one nested jit per array, as in JAX


def _vmap(f, x):
    from gpuarr.vmap_api import vmap
    return vmap(f)(x)


# An array argument to hstack, vstack, dstack and column_stack is mapped over its first axis
# (a vmap of the atleast_nd jit, as in JAX); a sequence is handled array by array.


def hstack(tup, dtype=None):
    """Concatenate along the second axis (the first for 1-D inputs)."""
    if _is_array(tup):
        arrs = _vmap(atleast_1d, tup)
        arr0_ndim = get_aval(arrs).ndim - 1
    else:
        check_arraylike("hstack", *tup)
        arrs = [atleast_1d(m) for m in tup]
        arr0_ndim = get_aval(arrs[0]).ndim
    return concatenate(arrs, axis=0 if arr0_ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Concatenate along the first axis after making inputs at least 2-D."""
    if _is_array(tup):
        arrs = _vmap(atleast_2d, tup)
    else:
        check_arraylike("vstack", *tup)
        arrs = [atleast_2d(m) for m in tup]
    return concatenate(arrs, axis=0, dtype=dtype)


def dstack(tup, dtype=None):
    """Concatenate along the third axis after making inputs at least 3-D."""
    if _is_array(tup):
        arrs = _vmap(atleast_3d, tup)
    else:
        check_arraylike("dstack", *tup, converts=True)
        arrs = [atleast_3d(m) for m in tup]
    return concatenate(arrs, axis=2, dtype=dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns (2-D arrays are concatenated as they are)."""
    if _is_array(tup):
        arrs = _vmap(lambda x: atleast_2d(x).T, tup) if get_aval(ensure_array(tup)).ndim < 3 \
            else tup
    else:
        check_arraylike("column_stack", *tup)
        arrs = [atleast_2d(a).T if get_aval(a).ndim < 2 else a
                for a in map(ensure_array, tup)]
    return concatenate(arrs, axis=1)


def _split_points(name, n, indices_or_sections, even):
    ios = indices_or_sections
    context = f"in jax.numpy.{name} argument 1"
    if isinstance(ios, (tuple, list)) or (hasattr(ios, "ndim") and ios.ndim > 0):
        if hasattr(ios, "ndim"):
            known = ios.to_concrete_value() if isinstance(ios, Tracer) else ios
            # JAX reads a traced array entry by entry: its error shows the first entry.
            ios = list(ios) if known is None else np.asarray(known).tolist()
        # Floats and nested lists fail, as in JAX.
        idx = [concrete_dim_or_error(i, context) for i in ios]
        # Points are read as NumPy reads them: negative ones count from the end, and all are
        # clipped to the axis.
        return [0] + [min(max(i if i >= 0 else i + n, 0), n) for i in idx] + [n]
    sections = concrete_or_error(int, ios, context)
    if sections < 0:
        raise ValueError(f"{name}: number of sections must be larger than 0, got {sections}.")
    size, extra = divmod(n, sections)  # no sections at all: ZeroDivisionError, as in JAX
    if even and extra:
        raise ValueError(f"array split does not result in an equal division: rest is {extra}")
    points = [0]
    for i in range(sections):
        points.append(points[-1] + size + (1 if i < extra else 0))
    return points


def _split(name, ary, indices_or_sections, axis, even):
    check_arraylike(name, ary, converts=True)
    ary = ensure_array(ary)
    nd = get_aval(ary).ndim
    ax = canonicalize_axis(concrete_value(axis, f"in jax.numpy.{name} argument `axis`"), nd)
    n = get_aval(ary).shape[ax]
    points = _split_points(name, n, indices_or_sections, even)
    sizes = np.diff(points)
    if (sizes >= 0).all():  # one split equation, its sizes NumPy integers, as JAX's
        return list(lax_extras.split(ary, list(sizes), axis=ax))
    # Points out of order read as NumPy reads them: each piece from its point to the next.
    return [lax.slice_in_dim(ary, s, max(s, e), axis=ax) for s, e in zip(points[:-1], points[1:])]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int) or at the given indices along `axis`."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    """Like split, but an int need not divide the axis (the first sections get one more)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def _check_split_rank(ary, axis):
    if get_aval(ary).ndim <= axis:  # JAX's error from reading ary.shape[axis]
        raise IndexError("tuple index out of range")


def hsplit(ary, indices_or_sections):
    """split along axis 1 (axis 0 for 1-D)."""
    check_arraylike("hsplit", ary, converts=True)
    ary = ensure_array(ary)
    axis = 0 if get_aval(ary).ndim == 1 else 1
    _check_split_rank(ary, axis)
    return _split("hsplit", ary, indices_or_sections, axis, True)


def vsplit(ary, indices_or_sections):
    """split along axis 0 (1-D input too, as in JAX)."""
    return _split("vsplit", ary, indices_or_sections, 0, True)


def dsplit(ary, indices_or_sections):
    """split along axis 2 (at least 3-D input)."""
    check_arraylike("dsplit", ary, converts=True)
    ary = ensure_array(ary)
    _check_split_rank(ary, 2)
    return _split("dsplit", ary, indices_or_sections, 2, True)


@_jit(static_argnames="axis", inline=True)  # as JAX's
def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple."""
    check_arraylike("unstack", x)
    x = ensure_array(x)
    nd = get_aval(x).ndim
    axis = operator.index(axis)
    if not -nd <= axis < nd:  # a 0-d array too
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd}")
    return lax_extras.unstack(x, axis=axis)


def tile(A, reps):
    """Repeat the whole array `reps` times along each axis."""
    check_arraylike("tile", A)
    A = ensure_array(A)
    try:  # an int or an iterable of ints (a 0-d array is an int), as JAX reads it
        reps = tuple(iter(reps))
    except TypeError:
        reps = (reps,)
    reps = tuple(operator.index(r) for r in reps)
    shape = get_aval(A).shape
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    A = lax_shape_ops.reshape(A, shape)
    # Broadcast to (r0, s0, r1, s1, ...) then merge each pair.
    big = tuple(x for r, s in zip(reps, shape) for x in (r, s))
    out = lax_shape_ops.broadcast_in_dim(A, big, tuple(range(1, 2 * nd, 2)))
    return lax_shape_ops.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
    """Repeat each element `repeats` times (an int or a concrete per-element array) along `axis`."""
    check_arraylike("repeat", a)
    lax_arguments.check_no_sharding("numpy.repeat", out_sharding)
    a = ensure_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = canonicalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[ax]
    try:
        reps = np.asarray(repeats)
    except Exception:  # a tracer: the output shape would depend on its values
        from gpuarr.errors import ConcretizationTypeError
        raise ConcretizationTypeError(repeats, "jnp.repeat needs concrete `repeats` to know the "
                                      "output shape; pass a static value.") from None
    if not np.issubdtype(reps.dtype, np.integer):
        raise TypeError(f"repeats must be integers, got dtype {reps.dtype}.")
    if reps.ndim == 0 or reps.shape == (1,):  # one count for every element, as in NumPy and JAX
        r = int(reps.reshape(()))
        shape = get_aval(a).shape
        expanded = lax_shape_ops.broadcast_in_dim(a, shape[:ax + 1] + (r,) + shape[ax + 1:],
                                                  tuple(range(ax + 1)) + tuple(range(ax + 2, len(shape) + 1)))
        out = lax_shape_ops.reshape(expanded, shape[:ax] + (n * r,) + shape[ax + 1:])
        idx_len = n * r
    else:
        if reps.shape != (n,):
            raise ValueError(f"repeats must be a scalar or have length {n} (the size of axis "
                             f"{axis}), got shape {reps.shape}.")
        idx = np.repeat(np.arange(n), reps)
        idx_len = idx.size
        out = _take_static(a, idx, ax)
    if total_repeat_length is not None and total_repeat_length != idx_len:
        # JAX pads with the last value or truncates to the requested length.
        if total_repeat_length < idx_len:
            return lax.slice_in_dim(out, 0, total_repeat_length, axis=ax)
        fill = np.concatenate([np.arange(idx_len), np.full(total_repeat_length - idx_len, idx_len - 1)])
        return _take_static(out, fill, ax)
    return out


def _optional_axes(axis):
    """`axis` as JAX's flip reads it before its jit: None, an int, or a tuple of ints."""
    def force(x):
        if x is None:
            return None
        try:
            return operator.index(x)
        except TypeError:
            return tuple(operator.index(i) for i in x)
    return concrete_or_error(force, axis, "The axis argument must be known statically.")


@_jit(static_argnames=("axis",))  # as JAX's
def _flip(m, axis=None):
    nd = get_aval(m).ndim
    if axis is None:
        return lax_shape_ops.rev(m, tuple(range(nd)))
    dims = []
    for ax in axis if isinstance(axis, tuple) else (axis,):
        if not -nd <= ax < nd:  # a 0-d array has no axis at all, as in JAX
            raise ValueError(f"axis {ax} is out of bounds for array of dimension {nd}")
        dims.append(ax % nd)
    return lax_shape_ops.rev(m, tuple(dims))  # repeated axes: lax.rev's TypeError, as in JAX


def flip(m, axis=None):
    """Reverse the order of elements along `axis` (all axes by default)."""
    check_arraylike("flip", m, converts=True)
    return _flip(ensure_array(m), _optional_axes(axis))


def fliplr(m):
    """Reverse along axis 1."""
    check_arraylike("fliplr", m, converts=True)
    return _flip(ensure_array(m), 1)


def flipud(m):
    """Reverse along axis 0."""
    check_arraylike("flipud", m, converts=True)
    return _flip(ensure_array(m), 0)


def roll(a, shift, axis=None):
    """Shift elements cyclically by `shift` along `axis` (the flattened array if None)."""
    check_arraylike("roll", a)
    a = ensure_array(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    shifts = np.broadcast_to(np.asarray(shift), np.broadcast_shapes(np.shape(shift), np.shape(axis)))
    axes = np.broadcast_to(np.asarray(axis), shifts.shape)
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = canonicalize_axis(int(ax), get_aval(a).ndim)
        n = get_aval(a).shape[ax]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            a = lax.concatenate([lax.slice_in_dim(a, n - s, n, axis=ax),
                                 lax.slice_in_dim(a, 0, n - s, axis=ax)], ax)
    return a


@_jit(static_argnames=("k", "axes"))  # as JAX's
def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane of `axes` (from the first toward the second)."""
    check_arraylike("rot90", m)
    m = ensure_array(m)
    nd = get_aval(m).ndim
    if nd < 2:
        raise ValueError("rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {tuple(get_aval(m).shape)}, which has ndim {nd}")
    ax0, ax1 = axes  # unpacking gives Python's error for a wrong length, as in JAX
    ax0, ax1 = canonicalize_axis(ax0, nd), canonicalize_axis(ax1, nd)
    if ax0 == ax1:
        raise ValueError("Axes must be different")
    # No int(): JAX takes k % 4 as is, so a non-integral k rotates like k=3.
    k = k % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(nd))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    if k == 1:
        return lax_shape_ops.transpose(flip(m, ax1), tuple(perm))
    return flip(lax_shape_ops.transpose(m, tuple(perm)), ax1)


def rollaxis(a, axis, start=0):
    """Move `axis` to before position `start` (numpy.rollaxis)."""
    check_arraylike("rollaxis", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    axis = canonicalize_axis(axis, nd)
    if not -nd <= start <= nd:
        raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
    start = start + nd if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def permute_dims(a, /, axes):
    """transpose (array API name); unlike transpose, negative axes are not accepted."""
    check_arraylike("permute_dims", a)
    a = ensure_array(a)  # a Python scalar comes back as a weak 0-d Array, as in JAX
    # operator.index rejects float axes with the TypeError JAX gives.
    axes = tuple(operator.index(i) for i in axes)
    return lax_shape_ops.transpose(a, _check_permutation(axes, get_aval(a).shape))


def concat(arrays, /, *, axis=0):
    """concatenate (array API name)."""
    check_arraylike("concat", *arrays, converts=True)  # iterates an array, as JAX's does
    return concatenate(arrays, axis)


def broadcast_shapes(*shapes):
    """The shape that `shapes` broadcast to (ValueError when they don't)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


@_jit(static_argnames=("axis",))  # as JAX's
def append(arr, values, axis=None):
    """`values` added at the end of `arr` (both flattened when axis is None)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([ensure_array(arr), ensure_array(values)], axis)


def _static_indices(name, obj, n):
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    check_arraylike(name, obj)
    try:
        idx = np.asarray(obj)
    except Exception:
        raise TypeError(f"jnp.{name} needs concrete indices `obj` (the output shape depends on "
                        "them); pass a static value.") from None
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise ValueError(f"{name}: boolean index of shape {idx.shape} does not match axis of "
                             f"size {n}.")
        return np.nonzero(idx)[0]
    if not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{name}: indices must be integers, got dtype {idx.dtype}.")
    return idx


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """`arr` without the entries at static indices/slice/mask `obj` along `axis`."""
    check_arraylike("delete", arr)
    arr = ensure_array(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = canonicalize_axis(axis, get_aval(arr).ndim)
    n = get_aval(arr).shape[ax]
    idx = _static_indices("delete", obj, n)
    if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"index out of bounds for axis {ax} with size {n}: {idx}")
    keep = np.setdiff1d(np.arange(n), idx % n if n else idx)
    return _take_static(arr, keep, ax)


def insert(arr, obj, values, axis=None):
    """`values` inserted before static indices `obj` along `axis`."""
    check_arraylike("insert", arr, values)
    arr = ensure_array(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = canonicalize_axis(axis, get_aval(arr).ndim)
    n = get_aval(arr).shape[ax]
    idx = _static_indices("insert", obj, n)
    scalar_obj = idx.ndim == 0
    idx = np.atleast_1d(idx)
    idx = np.where(idx < 0, idx + n, idx)
    if np.any((idx < 0) | (idx > n)):
        raise IndexError(f"index {obj} is out of bounds for axis {ax} with size {n}")
    values = lax_conversions.convert_element_type(ensure_array(values), get_aval(arr).dtype)
    nd = get_aval(arr).ndim
    vnd = get_aval(values).ndim
    if vnd < nd:
        values = lax_shape_ops.reshape(values, (1,) * (nd - vnd) + get_aval(values).shape)
    slot = list(get_aval(arr).shape)
    if scalar_obj:
        # As NumPy: the values' first axis becomes the inserted slices along `axis`.
        values = moveaxis(values, 0, ax)
        slot[ax] = get_aval(values).shape[ax]
        idx = np.full(slot[ax], idx[0])
    else:
        slot[ax] = idx.size
    values = _broadcast_to(values, tuple(slot))
    # Inserted entries go before the original entry at the same index: sort keys 2i+1 vs 2idx.
    keys = np.concatenate([2 * np.arange(n) + 1, 2 * idx])
    order = np.argsort(keys, kind="stable")
    return _take_static(lax.concatenate([arr, values], ax), order, ax)


def resize(a, new_shape):
    """`a` flattened, repeated cyclically and reshaped to `new_shape`."""
    check_arraylike("resize", a)
    a = ravel(a)
    new_shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    total = math.prod(new_shape)
    n = get_aval(a).size
    if total == 0 or n == 0:
        return lax_shape_ops.full(new_shape, 0, get_aval(a).dtype)
    reps = -(-total // n)
    return reshape(lax.slice_in_dim(tile(a, reps), 0, total), new_shape)


def trim_zeros(filt, trim="fb", axis=None):
    """Strip leading ('f') and/or trailing ('b') zeros of a concrete array along `axis` (an
    int, a tuple, or all axes by default): along each such axis, the slices that are zero
    everywhere before the first nonzero one and after the last go."""
    check_arraylike("trim_zeros", filt)
    host = np.asarray(concrete_value(filt, "Error arose in the `filt` argument of trim_zeros()"))
    axes = {canonicalize_axis(ax, host.ndim)
            for ax in (range(host.ndim) if axis is None
                       else axis if isinstance(axis, (tuple, list)) else (axis,))}
    trim = trim.lower()
    if not axes or ("f" not in trim and "b" not in trim):
        return ensure_array(filt)

    def kept(ax):
        if ax not in axes:
            return slice(None)
        nz = np.flatnonzero(host.any(axis=tuple(i for i in range(host.ndim) if i != ax)))
        if not nz.size:
            return slice(0, 0)
        return slice(nz[0] if "f" in trim else None, nz[-1] + 1 if "b" in trim else None)
    return ensure_array(filt)[tuple(kept(ax) for ax in range(host.ndim))]


@_jit(static_argnames=("n", "axis"))  # as JAX's
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along `axis`."""
    check_arraylike("diff", a)
    arr = ensure_array(a)
    n, axis = operator.index(n), operator.index(axis)
    # JAX's order of checks: n == 0 returns even a 0-d input.
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    nd = get_aval(arr).ndim
    if nd == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    a = arr
    ax = canonicalize_axis(axis, nd)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = ensure_array(extra)
        if get_aval(extra).ndim == 0:
            shape = list(get_aval(a).shape)
            shape[ax] = 1
            extra = _broadcast_to(extra, tuple(shape))
        parts.append(extra)
    pieces = [p for p in (parts[0], a, parts[1]) if p is not None]
    if len(pieces) > 1:
        a = concatenate(pieces, ax)
    from gpuarr.numpy.ufuncs import not_equal, subtract
    upper = tuple(slice(1, None) if d == ax else slice(None) for d in range(get_aval(a).ndim))
    lower = tuple(slice(None, -1) if d == ax else slice(None) for d in range(get_aval(a).ndim))
    for _ in range(n):  # indexing, as JAX's diff
        hi, lo = a[upper], a[lower]
        a = not_equal(hi, lo) if get_aval(a).dtype == np.bool_ else subtract(hi, lo)
    return a


@_jit  # as JAX's
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with optional ends."""
    check_arraylike("ediff1d", ary)
    arr = ravel(ary)
    result = lax.sub(arr[1:], arr[:-1])
    dt = get_aval(arr).dtype
    if to_begin is not None:
        check_arraylike("ediff1d", to_begin)
        result = concatenate((ravel(ensure_array(to_begin).astype(dt)), result))
    if to_end is not None:
        check_arraylike("ediff1d", to_end)
        result = concatenate((result, ravel(ensure_array(to_end).astype(dt))))
    return result


def _block(xs):
    """(the block of nested lists `xs`, its list depth), as JAX's _block builds it."""
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if not isinstance(xs, list):
        return ensure_array(xs), 1
    if not xs:
        raise ValueError("jax.numpy.block does not allow empty list arguments")
    blocks, depths = zip(*[_block(x) for x in xs])
    if any(d != depths[0] for d in depths[1:]):
        raise ValueError("Mismatched list depths in jax.numpy.block")
    rank = max(depths[0], max(get_aval(x).ndim for x in blocks))
    # Leading size-1 axes up to `rank` (JAX's _atleast_nd, a lax.broadcast).
    blocks = [lax_shape_ops.broadcast(x, (1,) * (rank - get_aval(x).ndim)) for x in blocks]
    return concatenate(blocks, axis=-depths[0]), depths[0] + 1


@_jit  # as JAX's
def block(arrays):
    """Assemble an array from nested lists of blocks (innermost lists join on the last axis)."""
    return _block(arrays)[0]


# ---------------------------------------------------------------- pad

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
              "minimum", "mean", "median", "empty")


def _pad_widths(pad_width, nd):
    """pad_width as nd (before, after) pairs, with JAX's errors."""
    pw = np.asarray(concrete_value(pad_width, "pad_width argument of jnp.pad"))
    valid = ((nd, 2), (1, 2), (2,), (1,), ())
    if pw.shape not in valid:
        raise ValueError(f"jnp.pad: pad_width with nd={nd} has unsupported shape {pw.shape}. "
                         f"Valid shapes are {', '.join(map(str, valid[:-1]))}, or ().")
    if not np.issubdtype(pw.dtype, np.integer):
        raise TypeError("`pad_width` must be of integral type.")
    if np.any(pw < 0):
        raise ValueError("index can't contain negative values")
    return [(int(b), int(e)) for b, e in np.broadcast_to(pw, (nd, 2))]


# The keyword arguments each mode takes, as in NumPy.
_PAD_KWARGS = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
               "median": {"stat_length"}, "reflect": {"reflect_type"},
               "symmetric": {"reflect_type"}}


def _per_axis(value, nd, name):
    arr = np.asarray(value)
    try:
        return np.broadcast_to(arr, (nd, 2) + arr.shape[2:] if arr.ndim > 2 else (nd, 2))
    except ValueError:
        raise ValueError(f"jnp.pad: {name} {value} does not broadcast to ({nd}, 2).") from None


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad `array` with `mode` in NumPy's modes (constant, edge, reflect, symmetric, wrap,
    linear_ramp, maximum, minimum, mean, median, empty) or a callable, as JAX does."""
    check_arraylike("pad", array)
    a = ensure_array(array)
    nd = get_aval(a).ndim
    widths = _pad_widths(pad_width, nd)
    if callable(mode):
        return _pad_func(a, widths, mode, kwargs)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - _PAD_KWARGS.get(mode, set())
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if nd == 0:
        return a
    if mode == "constant":
        return _pad_constant(a, widths, kwargs.get("constant_values", 0))
    if mode == "empty":
        return _pad_constant(a, widths, 0)
    if mode in ("reflect", "symmetric"):
        # JAX checks this with an assert, so a bad value fails as an AssertionError.
        if kwargs.get("reflect_type", "even") not in ("even", "odd"):
            raise AssertionError()
    if mode in ("maximum", "minimum", "mean", "median"):
        return _pad_stats(a, widths, mode, kwargs.get("stat_length"))
    for ax, (b, e) in enumerate(widths):
        if get_aval(a).shape[ax] == 0:
            if b or e:
                raise ValueError(f"Cannot apply '{mode}' padding to empty axis")
            continue
        if b == 0 and e == 0:
            continue
        a = _pad_axis(a, ax, b, e, mode, kwargs, nd)
    return a


def _pad_constant(a, widths, cv):
    """Constant padding; `cv` may be traced, so it stays an array (cast like JAX's)."""
    aval = get_aval(a)
    nd = aval.ndim
    cv = ensure_array(cv)
    if isinstance(cv, Tracer):
        cv = lax_conversions._convert_weak(cv, aval.dtype, aval.weak_type)
    else:
        # JAX's pad is a jit: a constant value reaches XLA as an argument, converted by XLA's
        # arithmetic (a subnormal reads as zero: `constant_values=1e-39` pads bools False).
        with core.set_current_trace(eval_trace):
            cv = lax_conversions._convert_weak(cv, aval.dtype, aval.weak_type)
    shape = get_aval(cv).shape
    if len(shape) == 0:
        return lax.pad(a, cv, [(b, e, 0) for b, e in widths])
    if len(shape) == 1 and shape[-1] == 1:
        return lax.pad(a, lax_shape_ops.reshape(cv, ()), [(b, e, 0) for b, e in widths])
    if len(shape) == 1 and shape[-1] != 2:
        raise ValueError(f"jnp.pad: constant_values has unsupported shape {tuple(shape)}. If the "
                         "shape is 1D or 2D, the last dimension must be of size 1 or 2.")
    cvs = _broadcast_to(cv, (nd, 2))
    for ax, (b, e) in enumerate(widths):
        for side, width in enumerate((b, e)):
            if width:
                cfg = [(0, 0, 0)] * nd
                cfg[ax] = (width, 0, 0) if side == 0 else (0, width, 0)
                value = lax_shape_ops.reshape(lax.slice(cvs, (ax, side), (ax + 1, side + 1)), ())
                a = lax.pad(a, value, cfg)
    return a


def _pad_func(a, widths, func, kwargs):
    """NumPy's callable protocol, JAX-style: func(row, (before, after), axis, kwargs) gets each
    zero-padded 1-D row and must return the new row (it is vmapped, not run in place)."""
    from gpuarr.numpy.functional import apply_along_axis
    # JAX normalizes the pairs a second time, which rejects a 0-d array's empty tuple.
    widths = _pad_widths(tuple(widths), get_aval(a).ndim)
    padded = _pad_constant(a, widths, 0)
    for ax in range(get_aval(padded).ndim):
        padded = apply_along_axis(func, ax, padded, widths[ax], ax, kwargs)
    return padded


def _pad_stats(a, widths, mode, stat_length):
    from gpuarr import dtypes
    from gpuarr.numpy import reductions
    from gpuarr.numpy.ufuncs import round as jround
    stat_fn = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
               "median": reductions.median}[mode]
    nd = get_aval(a).ndim
    lengths = None if stat_length is None else _per_axis(stat_length, nd, "stat_length")
    for ax, (b, e) in enumerate(widths):
        n = get_aval(a).shape[ax]
        if lengths is None:
            stats = [stat_fn(a, axis=ax, keepdims=True)] * 2
        else:
            lb, la = (int(v) for v in lengths[ax])
            if lb == 0 or la == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            # Python slice rules, as JAX's slice_in_dim: a negative length counts from the end.
            stats = [stat_fn(lax.slice_in_dim(a, *slice(lo, hi).indices(n)[:2], axis=ax),
                             axis=ax, keepdims=True)
                     for lo, hi in ((0, min(lb, n)), (-min(la, n), None))]
        aval = get_aval(a)
        parts = []
        for stat, width in zip(stats, (b, e)):
            # Integers round the statistic; booleans just cast it (nonzero is True), as JAX.
            if dtypes.is_int(aval.dtype):
                stat = jround(stat)
            stat = lax_conversions._convert_weak(stat, aval.dtype, aval.weak_type)
            shape = list(aval.shape)
            shape[ax] = width
            parts.append(_broadcast_to(stat, tuple(shape)))
        a = concatenate([parts[0], a, parts[1]], ax)
    return a


def _pad_axis(a, ax, b, e, mode, kwargs, nd):
    n = get_aval(a).shape[ax]
    if mode in ("edge", "wrap"):
        return _take_static(a, np.pad(np.arange(n), (b, e), mode=mode), ax)
    if mode in ("reflect", "symmetric"):
        odd = kwargs.get("reflect_type", "even") == "odd"
        a = _reflect_side(a, ax, b, mode, odd, True)
        return _reflect_side(a, ax, e, mode, odd, False)
    ends = _per_axis(kwargs.get("end_values", 0), nd, "end_values")[ax]
    return concatenate([_ramp(a, ax, 0, b, ends[0], True), a,
                        _ramp(a, ax, n - 1, e, ends[1], False)], ax)


def _reflect_side(a, ax, padding, mode, odd, before):
    """Reflect padding on one side in chunks of at most the axis length (less one for
    'reflect'), each mirroring the array grown so far, as NumPy and JAX do: wide odd
    reflections keep extrapolating from the newest edge."""
    from gpuarr.numpy.ufuncs import multiply, subtract
    n = get_aval(a).shape[ax]
    dt = get_aval(a).dtype
    offset = 1 if mode == "reflect" and n > 1 else 0
    edge = lax.slice_in_dim(a, 0, 1, axis=ax) if before else lax.slice_in_dim(a, n - 1, n, axis=ax)
    while padding > 0:
        size = get_aval(a).shape[ax]
        cur = min(padding, n - offset)
        padding -= cur
        if before:
            x = lax.slice_in_dim(a, offset, offset + cur, axis=ax)
        else:
            stop = size if mode == "symmetric" or n == 1 else size - 1
            x = lax.slice_in_dim(a, size - cur - offset, stop, axis=ax)
        x = flip(x, ax)
        if odd:
            x = subtract(multiply(2, edge), x).astype(dt)
            if n > 1:
                k = 0 if before else get_aval(x).shape[ax] - 1
                edge = lax.slice_in_dim(x, k, k + 1, axis=ax)
        a = concatenate([x, a] if before else [a, x], ax)
    return a


def _is_inexact(dt):
    from gpuarr import dtypes
    return dtypes.is_float(dt) or dtypes.is_complex(dt)


def _ramp(a, ax, edge_index, width, end_value, before):
    dt = get_aval(a).dtype
    shape = list(get_aval(a).shape)
    shape[ax] = width
    if width == 0:
        return lax_shape_ops.full(tuple(shape), 0, dt)
    from gpuarr import dtypes
    work = dtypes.to_inexact_dtype(dt) if not _is_inexact(dt) else dt
    edge = lax_conversions.convert_element_type(lax.slice_in_dim(a, edge_index, edge_index + 1, axis=ax),
                                                work)
    end = np.asarray(end_value, work)[()]
    # Before: end + (edge - end) * i / width for i = 0..width-1; after: the same, reversed.
    frac = lax.div(lax_shape_ops.iota(work, width), np.asarray(width, work)[()])
    if not before:
        frac = lax_shape_ops.rev(frac, (0,))
    frac = lax_shape_ops.broadcast_in_dim(frac, tuple(shape), (ax,))
    ramp = lax.add(end, lax.mul(lax.sub(_broadcast_to(edge, tuple(shape)), end), frac))
    if work != dt:
        ramp = lax_conversions.convert_element_type(lax.floor(ramp) if dtypes.is_int(dt) else ramp, dt)
    return ramp
