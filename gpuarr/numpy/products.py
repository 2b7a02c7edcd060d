"""Products: dot, matmul, vdot, inner, outer, tensordot, kron, trace, cross, vecdot."""
from __future__ import annotations

import numpy as np

from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import dot_products as lax_dot_products
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy.arguments import (
    broadcast_to,
    canonicalize_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
    reject_out,
)


def _named_jit(name, **options):
    """A jit decorator whose program is named `name` (a public function's, as JAX names it)."""
    def wrap(fun):
        fun.__name__ = fun.__qualname__ = name
        return _jit(fun, **options)
    return wrap


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """numpy.dot: scalars multiply, vectors dot, otherwise contract a's last axis with b's
    second-to-last."""
    lax_arguments.check_no_sharding("numpy.dot", out_sharding)
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if an == 0 or bn == 0:
        return _mul(a, b)
    b_axis = 0 if bn == 1 else bn - 2
    _check_contract("dot", get_aval(a).shape, get_aval(b).shape, an - 1, b_axis)
    return lax_dot_products.dot_general(a, b, (((an - 1,), (b_axis,)), ((), ())), precision,
                                        _result_type(preferred_element_type, a))


def _result_type(preferred_element_type, a):
    # jnp's products name their result type in the dot_general (the promoted operand type
    # unless one is given), as JAX's do: their jaxprs show preferred_element_type=float32.
    return get_aval(a).dtype if preferred_element_type is None else preferred_element_type


def _mul(a, b):
    # Booleans multiply as logical and (lax.mul takes no booleans), as JAX's dot of booleans.
    return lax.bitwise_and(a, b) if get_aval(a).dtype == np.bool_ else lax.mul(a, b)


def _check_contract(name, ashape, bshape, ax, bx):
    if ashape[ax] != bshape[bx]:
        _contraction_mismatch(ashape[ax], bshape[bx])


def _contraction_mismatch(a_size, b_size):
    # The error class and text of JAX, whose dot and matmul are a dot_general.
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                    f"({a_size},) and ({b_size},).")


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's broadcasting of leading (batch) dimensions."""
    lax_arguments.check_no_sharding("numpy.matmul", out_sharding)
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    ashape, bshape = get_aval(a).shape, get_aval(b).shape
    for i, shape in enumerate((ashape, bshape)):
        if not shape:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             "ndim 0")
    if len(ashape) <= 2 and len(bshape) <= 2:
        # No batch dimensions: one dot_general contracting a's last axis with b's first
        # matrix axis, with vectors kept as vectors (as JAX writes it).
        b_axis = 0 if len(bshape) == 1 else len(bshape) - 2
        if ashape[-1] != bshape[b_axis]:
            _contraction_mismatch(ashape[-1], bshape[b_axis])
        return lax_dot_products.dot_general(a, b, (((len(ashape) - 1,), (b_axis,)), ((), ())), precision,
                                            _result_type(preferred_element_type, a))
    # As JAX's matmul: batch axes only one operand has (or of size 1 in one) are free axes of
    # the product, so an unbatched matrix is never broadcast; a transpose puts them in order.
    a_mat, b_mat = len(ashape) > 1, len(bshape) > 1
    if ashape[-1] != bshape[-2 if b_mat else 0]:
        _contraction_mismatch(ashape[-1], bshape[-2 if b_mat else 0])
    a_dims, b_dims = (ashape[:-2] if a_mat else ()), (bshape[:-2] if b_mat else ())
    n = max(len(a_dims), len(b_dims))
    a_dims = (None,) * (n - len(a_dims)) + a_dims
    b_dims = (None,) * (n - len(b_dims)) + b_dims
    a_squeeze, b_squeeze, a_batch, b_batch, both = [], [], [], [], []
    idx_batch, idx_a, idx_b = [], [], []  # output positions, in dot_general's order
    for i, (da, db) in enumerate(zip(a_dims, b_dims)):
        if da is None:
            idx_b.append(i)
        elif db is None:
            idx_a.append(i)
        elif da == 1 and db == 1:  # squeezed from both, put back at the end
            a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
            b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
            both.append(i)
        elif da == 1:
            idx_b.append(i)
            a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
        elif db == 1:
            idx_a.append(i)
            b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
        elif da == db:
            a_batch.append(len(idx_batch) + len(idx_a))
            b_batch.append(len(idx_batch) + len(idx_b))
            idx_batch.append(i)
        else:
            raise ValueError(f"Incompatible types for matmul arguments: {get_aval(a)} and "
                             f"{get_aval(b)}")
    if a_mat:
        idx_a.append(n)
    if b_mat:
        idx_b.append(n + a_mat)
    perm = tuple(int(p) for p in np.argsort(idx_batch + idx_a + idx_b))
    a = lax_shape_ops.squeeze(a, tuple(a_squeeze)) if a_squeeze else a
    b = lax_shape_ops.squeeze(b, tuple(b_squeeze)) if b_squeeze else b
    out = lax_dot_products.dot_general(
        a, b, (((get_aval(a).ndim - 1,), (get_aval(b).ndim - 1 - b_mat,)),
               (tuple(a_batch), tuple(b_batch))),
        precision, _result_type(preferred_element_type, a))
    out = lax_shape_ops.transpose(out, perm) if perm != tuple(range(len(perm))) else out
    return lax_shape_ops.expand_dims(out, tuple(both)) if both else out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened inputs."""
    check_arraylike("vdot", a, b)
    from gpuarr.numpy.manipulation import ravel
    from gpuarr.numpy.ufuncs import conj
    a = conj(a)  # vdot conjugates its first argument, as numpy.vdot (real values pass through)
    return dot(ravel(a), ravel(b), precision=precision, preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of a and b."""
    check_arraylike("inner", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if an == 0 or bn == 0:
        return _mul(a, b)
    return lax_dot_products.dot_general(a, b, (((an - 1,), (bn - 1,)), ((), ())), precision,
                                        _result_type(preferred_element_type, a))


def outer(a, b, out=None):
    """Outer product of the flattened inputs."""
    reject_out("outer", out)
    check_arraylike("outer", a, b)
    return _outer(a, b)


@_named_jit("outer", inline=True)  # inlined, as JAX's: its program shows no jit
def _outer(a, b):
    from gpuarr.numpy.manipulation import ravel
    from gpuarr.numpy.ufuncs import multiply
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    return multiply(ravel(a)[:, None], ravel(b)[None, :])


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Sum products over `axes`: an int N (last N of a with first N of b), a pair of ints, or
    a pair of equal-length sequences of axes."""
    lax_arguments.check_no_sharding("numpy.tensordot", out_sharding)
    check_arraylike("tensordot", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if type(axes) is int:
        if axes > min(a_ndim, b_ndim):
            raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                            f"({get_aval(a).shape} and {get_aval(b).shape})")
        dims = tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1, ax2 = axes
        if type(ax1) is int and type(ax2) is int:
            dims = (canonicalize_axis(ax1, a_ndim),), (canonicalize_axis(ax2, b_ndim),)
        elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
            if len(ax1) != len(ax2):
                raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} "
                                f"and {ax2}.")
            dims = (tuple(canonicalize_axis(i, a_ndim) for i in ax1),
                    tuple(canonicalize_axis(i, b_ndim) for i in ax2))
        else:
            raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                            f"lists, got {ax1} and {ax2}")
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                        "lists/tuples of ints.")
    ashape, bshape = get_aval(a).shape, get_aval(b).shape
    if [ashape[i] for i in dims[0]] != [bshape[i] for i in dims[1]]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                        f"{tuple(ashape[i] for i in dims[0])} and {tuple(bshape[i] for i in dims[1])}.")
    return lax_dot_products.dot_general(a, b, (dims, ((), ())), precision,
                                        _result_type(preferred_element_type, a))


def kron(a, b):
    """Kronecker product: blocks a[i, j] * b, for inputs of any (matching-up) rank."""
    check_arraylike("kron", a, b)
    return _kron(a, b)


@_named_jit("kron")  # a jit, as JAX's
def _kron(a, b):
    from gpuarr.numpy.manipulation import expand_dims
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if an < bn:
        a = expand_dims(a, range(bn - an))
    elif bn < an:
        b = expand_dims(b, range(an - bn))
    ashape, bshape = get_aval(a).shape, get_aval(b).shape
    nd = len(ashape)
    a_spread = expand_dims(a, range(1, 2 * nd, 2))
    b_spread = expand_dims(b, range(0, 2 * nd, 2))
    # lax.mul, as JAX's: booleans are refused with its error.
    return lax_shape_ops.reshape(lax.mul(a_spread, b_spread), tuple(x * y for x, y in zip(ashape, bshape)))


def trace(a, offset=0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """Sum along a diagonal (shifted by `offset`) of the 2-D slices over axis1 and axis2."""
    check_arraylike("trace", a)
    reject_out("trace", out)
    a = ensure_array(a)
    shape = get_aval(a).shape
    for ax in (axis1, axis2):  # no 0-d leniency here: JAX's bounds error for either axis
        if not -len(shape) <= ax < len(shape):
            raise ValueError(f"axis {ax} is out of bounds for array of dimension {len(shape)}")
    i, j = canonicalize_axis(axis1, len(shape)), canonicalize_axis(axis2, len(shape))
    if i == j:
        raise ValueError("axis1 and axis2 can not be same. "
                         f"axis1={axis1} and axis2={axis2}")
    # The offset may be a traced integer, as in JAX (whose eye takes a dynamic k).
    k = ensure_array(offset)
    if get_aval(k).ndim or not np.issubdtype(get_aval(k).dtype, np.integer):
        raise ValueError(f"k must be a scalar integer; got {offset}")
    if dtype is not None:
        from gpuarr import dtypes
        dtype = dtypes.check_user_dtype(dtype, "trace")
    # The default offset stays a constant of the program (an argument is traced), as in JAX.
    extra = () if type(offset) is int and offset == 0 else (offset,)
    return _trace(a, *extra, axis1=axis1, axis2=axis2, dtype=dtype)


@_named_jit("trace", static_argnames=("axis1", "axis2", "dtype"))  # as JAX's
def _trace(a, offset=0, *, axis1, axis2, dtype):
    from gpuarr.numpy.creation import eye
    from gpuarr.numpy.manipulation import moveaxis
    from gpuarr.numpy.reductions import sum as _sum
    from gpuarr.numpy.ufuncs import where
    shape = get_aval(a).shape
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    # Mask out all but the diagonal and reduce, as JAX does.
    a = where(eye(shape[axis1], shape[axis2], k=offset, dtype=bool), a, lax_shape_ops.full_like(a, 0))
    return _sum(a, axis=(-2, -1), dtype=dtype)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """Cross product of 2- or 3-vectors along the given axes (2-vectors give the z component)."""
    check_arraylike("cross", a, b)
    return _cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis)


@_named_jit("cross", static_argnames=("axisa", "axisb", "axisc", "axis"))  # as JAX's
def _cross(a, b, axisa, axisb, axisc, axis):
    from gpuarr.numpy.creation import array
    from gpuarr.numpy.manipulation import moveaxis
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(ensure_array(a), axisa, -1), moveaxis(ensure_array(b), axisb, -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if na == 2 and nb == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    # Each product promotes its own operands, as JAX's.
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if na == 3 else lax_shape_ops.full_like(a0, 0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if nb == 3 else lax_shape_ops.full_like(b0, 0)
    c = array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return moveaxis(c, 0, axisc)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Dot products of vectors along `axis`, broadcasting the other axes."""
    check_arraylike("jnp.vecdot", x1, x2)
    from gpuarr.numpy.manipulation import moveaxis
    from gpuarr.numpy.ufuncs import conj
    # The first vector is conjugated, as in JAX (a vdot of each pair) and NumPy.
    x1, x2 = promote_dtypes(conj(ensure_array(x1)), ensure_array(x2))
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if s1[axis] != s2[axis]:
        raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    k = get_aval(x1).shape[-1]
    batch = np.broadcast_shapes(get_aval(x1).shape[:-1], get_aval(x2).shape[:-1])
    x1, x2 = broadcast_to(x1, batch + (k,)), broadcast_to(x2, batch + (k,))
    nb = len(batch)
    return lax_dot_products.dot_general(x1, x2, (((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                                        precision, _result_type(preferred_element_type, x1))
