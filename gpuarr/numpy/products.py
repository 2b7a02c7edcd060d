"""Products: dot, matmul, vdot, inner, outer."""
from __future__ import annotations

from gpuarr import lax
from gpuarr.core import get_aval
from gpuarr.numpy._util import check_arraylike, ensure_array, promote_dtypes


def dot(a, b, *, precision=None, preferred_element_type=None):
    """numpy.dot: scalars multiply, vectors dot, otherwise contract a's last axis with b's
    second-to-last."""
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if an == 0 or bn == 0:
        return lax.mul(a, b)
    b_axis = 0 if bn == 1 else bn - 2
    _check_contract("dot", get_aval(a).shape, get_aval(b).shape, an - 1, b_axis)
    return lax.dot_general(a, b, (((an - 1,), (b_axis,)), ((), ())), precision,
                           preferred_element_type)


def _check_contract(name, ashape, bshape, ax, bx):
    if ashape[ax] != bshape[bx]:
        raise TypeError(f"{name} requires contracting dimensions to have the same shape, got "
                        f"{ashape} and {bshape}.")


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's broadcasting of leading (batch) dimensions."""
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    ashape, bshape = get_aval(a).shape, get_aval(b).shape
    if not ashape or not bshape:
        raise ValueError(f"matmul: inputs must be at least 1-dimensional, got shapes {ashape} "
                         f"and {bshape}")
    a_vec, b_vec = len(ashape) == 1, len(bshape) == 1
    if a_vec:
        a = lax.reshape(a, (1,) + ashape)
    if b_vec:
        b = lax.reshape(b, bshape + (1,))
    ashape, bshape = get_aval(a).shape, get_aval(b).shape
    if ashape[-1] != bshape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {bshape[-2]} is "
                         f"different from {ashape[-1]})")
    import numpy as np
    batch = np.broadcast_shapes(ashape[:-2], bshape[:-2])
    a = lax.broadcast_in_dim(a, batch + ashape[-2:], tuple(range(len(batch) - len(ashape) + 2, len(batch) + 2))) \
        if ashape[:-2] != batch else a
    b = lax.broadcast_in_dim(b, batch + bshape[-2:], tuple(range(len(batch) - len(bshape) + 2, len(batch) + 2))) \
        if bshape[:-2] != batch else b
    nb = len(batch)
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                          precision, preferred_element_type)
    if a_vec:
        out = lax.squeeze(out, (nb,))
    if b_vec:
        out = lax.squeeze(out, (get_aval(out).ndim - 1,))
    return out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened inputs."""
    check_arraylike("vdot", a, b)
    from gpuarr.numpy.manipulation import ravel
    return dot(ravel(a), ravel(b), precision=precision, preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of a and b."""
    check_arraylike("inner", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if an == 0 or bn == 0:
        return lax.mul(a, b)
    return lax.dot_general(a, b, (((an - 1,), (bn - 1,)), ((), ())), precision, preferred_element_type)


def outer(a, b, out=None):
    """Outer product of the flattened inputs."""
    check_arraylike("outer", a, b)
    from gpuarr.numpy.manipulation import ravel
    a, b = promote_dtypes(ravel(ensure_array(a)), ravel(ensure_array(b)))
    n, m = get_aval(a).shape[0], get_aval(b).shape[0]
    return lax.mul(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))
