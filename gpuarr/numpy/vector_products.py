"""Batched matrix-vector products with NumPy 2.2's gufunc semantics: matvec and vecmat.

Each is one matmul over the broadcast batch dimensions; shape errors name the gufunc signature
as JAX's (vectorize-based) versions do."""
from __future__ import annotations

from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy.arguments import check_arraylike, check_core_dims, ensure_array
from gpuarr.numpy.products import matmul
from gpuarr.numpy.ufuncs import conjugate


def matvec(x1, x2, /):
    """Batched matrix-vector product: x1 [..., M, N] times x2 [..., N] gives [..., M].

    Leading dimensions broadcast against each other (numpy.matvec)."""
    check_arraylike("matvec", x1, x2)
    x1, x2 = ensure_array(x1), ensure_array(x2)
    check_core_dims("(n,m),(m)->(n)", (("n", "m"), ("m",)),
                    (get_aval(x1).shape, get_aval(x2).shape))
    return _matvec(x1, x2)


def _matvec(x1, x2):
    # matmul vectorized over the batch dimensions, as JAX builds it.
    from gpuarr.numpy.functional import vectorize
    return vectorize(matmul, signature="(n,m),(m)->(n)")(x1, x2)


_matvec.__name__ = "matvec"  # a jit named as the function, as JAX's
_matvec = _jit(_matvec)


def vecmat(x1, x2, /):
    """Batched conjugate vector-matrix product: conj(x1) [..., M] times x2 [..., M, N] gives
    [..., N]. Leading dimensions broadcast against each other (numpy.vecmat)."""
    check_arraylike("vecmat", x1, x2)
    x1, x2 = ensure_array(x1), ensure_array(x2)
    shape1 = get_aval(x1).shape
    check_core_dims("(n),(n,m)->(m)", (("n",), ("n", "m")), (shape1, get_aval(x2).shape))
    out = matmul(lax_shape_ops.reshape(conjugate(x1), shape1[:-1] + (1,) + shape1[-1:]), x2)
    return lax_shape_ops.squeeze(out, (get_aval(out).ndim - 2,))
