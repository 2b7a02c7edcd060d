"""gpuarr.numpy.linalg: numpy.linalg's API with JAX's semantics, on top of gpuarr.lax.linalg.

Factorizations call the lax.linalg primitives; det, slogdet, solve and inv are built from
lu + triangular_solve so that gradients flow through them. As in JAX, slogdet's JVP goes
through a solve and det's through the adjugate, which stays finite for singular matrices.
"""
from __future__ import annotations

import operator
import string
from typing import NamedTuple

import numpy as np

from gpuarr.core import get_aval
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import cumulative as lax_cumulative
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import linalg as lax_linalg
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.linalg import _H, _extract_diagonal, _is_complex, _mask, _matmul, _permutation_matrix
from gpuarr.numpy import products, reductions
from gpuarr.numpy.arguments import (
    broadcast_all,
    broadcast_to,
    canonicalize_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes_inexact,
)
from gpuarr.numpy.manipulation import matrix_transpose, moveaxis  # noqa: F401
from gpuarr.numpy.products import vecdot  # noqa: F401


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _inexact(name, *args):
    check_arraylike(name, *args)
    return promote_dtypes_inexact(*[ensure_array(a) for a in args])


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _check_square(name, a, what="Argument to {name} must have shape [..., n, n], got {shape}."):
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(what.format(name=name, shape=shape))


def _const(like, value):
    """A scalar of the dtype of `like`."""
    return np.asarray(value, _dtype(like))[()]


def _eye(n, batch, dtype):
    return broadcast_to(np.eye(n, dtype=dtype), tuple(batch) + (n, n))


def _where(cond, x, y):
    cond, x, y = broadcast_all(cond, x, y)
    return lax.select_n(cond, y, x)


# ---------------------------------------------------------------- factorizations


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of a batch of positive-definite matrices: lower L with a = L L^H
    (or upper U = L^H with a = U^H U when `upper`). Failure gives NaNs."""
    (a,) = _inexact("jnp.linalg.cholesky", a)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
    """QR decomposition; mode 'reduced' or 'complete' gives QRResult(Q, R), 'r' gives R, and
    'raw' LAPACK's packed form (the geqrf matrix transposed, and the reflectors' taus)."""
    (a,) = _inexact("jnp.linalg.qr", a)
    if mode == "raw":
        packed, taus = lax_linalg._geqrf(a)
        return QRResult(matrix_transpose(packed), taus)
    if mode not in ("reduced", "complete", "r", "full"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition: SVDResult(U, S, Vh) with a = U diag(S) Vh, or S alone
    when not `compute_uv`. `hermitian` is accepted as a hint and does not change the result."""
    (a,) = _inexact("jnp.linalg.svd", a)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
    """The singular values of a batch of matrices, in descending order."""
    return svd(x, compute_uv=False)


def _lower(UPLO):
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of symmetric/Hermitian matrices:
    EighResult(eigenvalues, eigenvectors)."""
    (a,) = _inexact("jnp.linalg.eigh", a)
    v, w = lax_linalg.eigh(a, lower=_lower(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of symmetric/Hermitian matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


# ---------------------------------------------------------------- determinants
# As JAX: closed forms for det of 2x2 and 3x3 and slogdet of 1x1 and 2x2, LU otherwise. For
# complex input the sign is a phase, sign * exp(logabsdet) = det.


def _det_2x2(a):
    return lax.sub(lax.mul(a[..., 0, 0], a[..., 1, 1]), lax.mul(a[..., 0, 1], a[..., 1, 0]))


def _det_3x3(a):
    def term(i, j, k):
        return lax.mul(lax.mul(a[..., 0, i], a[..., 1, j]), a[..., 2, k])
    plus = lax.add(lax.add(term(0, 1, 2), term(1, 2, 0)), term(2, 0, 1))
    return lax.sub(lax.sub(lax.sub(plus, term(2, 1, 0)), term(0, 2, 1)), term(1, 0, 2))


def _pivot_parity(pivots):
    """The number of row swaps in LAPACK-style pivots, as int32."""
    iota = lax_shape_ops.broadcasted_iota(_dtype(pivots), _shape(pivots), len(_shape(pivots)) - 1)
    return reductions.sum(lax.ne(pivots, iota), axis=-1, dtype=np.int32)


def _parity_sign(parity, dtype):
    """(-1) ** parity in `dtype`."""
    odd = lax_conversions.convert_element_type(lax.rem(parity, np.int32(2)), dtype)
    return lax.sub(np.asarray(1, dtype)[()], lax.mul(odd, np.asarray(2, dtype)[()]))


@custom_jvp
def _slogdet_small(a):
    det = a[..., 0, 0] if _shape(a)[-1] == 1 else _det_2x2(a)
    abs_det = lax.abs(det)
    zero = lax.eq(abs_det, _const(abs_det, 0))
    # log(0) = -inf without a divide-by-zero warning.
    return lax.sign(det), _where(zero, _const(abs_det, -np.inf),
                                 lax.log(_where(zero, _const(abs_det, 1), abs_det)))


@custom_jvp
def _slogdet_lu(a):
    lu, pivots, _ = lax_linalg.lu(a)
    diag = _extract_diagonal(lu)
    zero = lax.eq(diag, _const(diag, 0))
    is_zero = reductions.any(zero, axis=-1)
    # |diag| with zeros replaced by ones: the sign and log are finite, then masked below.
    safe_abs = _where(zero, _const(lax.abs(diag), 1), lax.abs(diag))
    parity = _pivot_parity(pivots)
    if _is_complex(a):
        sign = reductions.prod(lax.div(diag, lax_conversions.convert_element_type(safe_abs, _dtype(a))),
                               axis=-1)
    else:
        sign = _const(diag, 1)
        parity = lax.add(parity, reductions.sum(lax.lt(diag, _const(diag, 0)), axis=-1,
                                                dtype=np.int32))
    sign = _where(is_zero, _const(diag, 0), lax.mul(sign, _parity_sign(parity, _dtype(a))))
    logdet = _where(is_zero, _const(safe_abs, -np.inf), reductions.sum(lax.log(safe_abs), axis=-1))
    return sign, logdet


def _slogdet_tangents(x, sign, logdet_dot):
    """(sign_dot, logdet_dot) from the complex d log det = tr(A^-1 dA): its imaginary part turns
    the phase; for real input the sign is piecewise constant."""
    if not _is_complex(x):
        return lax_shape_ops.full_like(sign, 0), logdet_dot
    imag_part = lax.sub(logdet_dot, lax_conversions.convert_element_type(lax_extras.real(logdet_dot),
                                                                         _dtype(x)))
    return lax.mul(imag_part, sign), lax_extras.real(logdet_dot)


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    sign, logdet = _slogdet_small(x)
    if _shape(x)[-1] == 1:
        dot = lax.div(g[..., 0, 0], x[..., 0, 0])
    else:
        # d det = tr(adj(x) g) for 2x2 x.
        x00, x01, x10, x11 = (x[..., i, j] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
        g00, g01, g10, g11 = (g[..., i, j] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
        adj_g = lax.sub(lax.add(lax.mul(g00, x11), lax.mul(g11, x00)),
                        lax.add(lax.mul(g01, x10), lax.mul(g10, x01)))
        dot = lax.div(adj_g, _det_2x2(x))
    return (sign, logdet), _slogdet_tangents(x, sign, dot)


def _solve_jvp(slogdet_fn):
    """The JVP of a slogdet, d log det = tr(A^-1 dA), whichever factorization gave the primal."""
    def jvp(primals, tangents):
        (x,), (g,) = primals, tangents
        sign, logdet = slogdet_fn(x)
        dot = products.trace(solve(x, g), axis1=-1, axis2=-2)
        return (sign, logdet), _slogdet_tangents(x, sign, dot)
    return jvp


_slogdet_lu.defjvp(_solve_jvp(_slogdet_lu))


def _slogdet(a):
    return _slogdet_small(a) if _shape(a)[-1] in (1, 2) else _slogdet_lu(a)


def slogdet(a, *, method: str | None = None):
    """Sign and natural log of the absolute value of the determinant: SlogdetResult. For complex
    input the sign has modulus one (zero where singular) and logabsdet is real."""
    (a,) = _inexact("jnp.linalg.slogdet", a)
    _check_square("slogdet()", a, "Argument to {name} must have shape [..., n, n], got {shape}")
    if method == "qr":
        if _is_complex(a):
            raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
        return SlogdetResult(*_slogdet_qr(a))
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    return SlogdetResult(*_slogdet(a))


@custom_jvp
def _slogdet_qr(x):
    # det(x) = det(Q) det(R): |det| is the product of R's diagonal, and each Householder
    # reflection (a nonzero tau; the last one is the identity for n x n) flips the sign.
    n = _shape(x)[-1]
    packed, taus = lax_linalg._geqrf(x)
    diag = _extract_diagonal(packed)
    zero = lax.eq(diag, _const(diag, 0))
    safe_abs = _where(zero, _const(diag, 1), lax.abs(diag))  # log(0) masked, not warned about
    logdet = _where(reductions.any(zero, axis=-1), _const(diag, -np.inf),
                    reductions.sum(lax.log(safe_abs), axis=-1))
    flips = lax.ne(taus[..., :n - 1], _const(taus, 0))
    sign = lax.mul(reductions.prod(lax.sign(diag), axis=-1),
                   reductions.prod(_where(flips, _const(diag, -1), _const(diag, 1)), axis=-1))
    return sign, logdet


_slogdet_qr.defjvp(_solve_jvp(_slogdet_qr))


def _cofactor_solve(a, b):
    """det(a) and adj(a) @ b (= det(a) * solve(a, b) where a is invertible), finite for singular
    a, as JAX computes them: with P a = L U, the last pivot u_nn is replaced by
    1 / prod_{i<n} u_ii, so the triangular solve gives the adjugate's rows for rank n - 1 without
    dividing by zero; where rank < n - 1 the adjugate is zero, found by a solve that overflows."""
    n = _shape(a)[-1]
    if n == 1:
        return a[..., 0, 0], b
    dtype = _dtype(a)
    lu, pivots, perm = lax_linalg.lu(a)
    batch = np.broadcast_shapes(_shape(lu)[:-2], _shape(b)[:-2])
    x = broadcast_to(b, batch + _shape(b)[-2:])
    lu = broadcast_to(lu, batch + (n, n))
    perm = broadcast_to(perm, batch + (n,))
    sign = broadcast_to(_parity_sign(_pivot_parity(pivots), dtype), batch)
    # partial_det[..., i] = sign * u_00 ... u_ii; the last entry is det(a).
    partial_det = lax.mul(lax_cumulative.cumprod(_extract_diagonal(lu), axis=len(batch)),
                          lax_shape_ops.expand_dims(sign, (len(batch),)))
    det_a = partial_det[..., n - 1]
    corner = _mask((n, n), lambda r, c: (r == n - 1) & (c == n - 1))
    before_last = partial_det[..., n - 2, None, None]
    zero = lax.eq(before_last, _const(lu, 0))
    # 1 / before_last, with inf (and no warning) where it is zero: the solve below overflows.
    inverse = lax.div(_const(lu, 1), _where(zero, _const(lu, 1), before_last))
    lu = _where(corner, _where(zero, _const(lu, np.inf), inverse), lu)
    d = lax_linalg.triangular_solve(lu, broadcast_to(_const(lu, 1), batch + (n,)),
                                    left_side=True, lower=False)
    low_rank = reductions.any(lax.bitwise_not(_is_finite(d)), axis=-1)[..., None, None]
    x = _where(low_rank, _const(x, 0), x)
    x = _matmul(_permutation_matrix(perm, dtype), x)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    # Every row but the last scaled by det(a); the last one's factor is in the new corner.
    last_row = _mask((n, 1), lambda r, c: r == n - 1)
    x = lax.mul(x, _where(last_row, _const(x, 1), det_a[..., None, None]))
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return det_a, _where(low_rank, _const(x, 0), x)


def _is_finite(x):
    if _is_complex(x):
        return lax.bitwise_and(lax.is_finite(lax_extras.real(x)), lax.is_finite(lax_extras.imag(x)))
    return lax.is_finite(x)


@custom_jvp
def _det(a):
    sign, logdet = _slogdet(a)
    return lax.mul(sign, lax_conversions.convert_element_type(lax.exp(logdet), _dtype(sign)))


@_det.defjvp
def _det_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    # d det(A) = tr(adj(A) dA), which stays finite where A is singular.
    y, z = _cofactor_solve(x, g)
    return y, products.trace(z, axis1=-1, axis2=-2)


def det(a):
    """Determinant of a batch of square matrices."""
    (a,) = _inexact("jnp.linalg.det", a)
    _check_square("_det()", a, "Argument to {name} must have shape [..., n, n], got {shape}")
    n = _shape(a)[-1]
    if n == 2:
        return _det_2x2(a)
    if n == 3:
        return _det_3x3(a)
    return _det(a)


# ---------------------------------------------------------------- solves and inverses


def solve(a, b):
    """Solve a @ x = b for x; b is [n] or [..., n, k] (batch axes broadcast)."""
    a, b = _inexact("jnp.linalg.solve", a, b)
    ashape, bshape = _shape(a), _shape(b)
    if len(ashape) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={ashape}")
    if (len(bshape) > 1 and len(ashape) == len(bshape) + 1 and ashape[-1] == bshape[-1]
            and ashape[-1] != bshape[-2]):
        raise ValueError(f"Invalid shapes for solve: {ashape}, {bshape}. Prior to JAX v0.5.0, "
                         "this would have been treated as a batched 1-dimensional solve. To "
                         "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
    vector = len(bshape) == 1
    if vector:
        b = lax_shape_ops.reshape(b, bshape + (1,))
        bshape = _shape(b)
    if ashape[-1] != ashape[-2] or ashape[-1] != bshape[-2]:
        raise ValueError("The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                         f"or b=[..., m]; got a={ashape} and b={_shape(b) if not vector else bshape[:-1]}")
    batch = np.broadcast_shapes(ashape[:-2], bshape[:-2])
    a = broadcast_to(a, batch + ashape[-2:])
    b = broadcast_to(b, batch + bshape[-2:])
    lu, _, perm = lax_linalg.lu(a)
    x = lax_linalg.lu_solve(lu, perm, b)
    return lax_shape_ops.squeeze(x, (len(batch) + 1,)) if vector else x


def inv(a):
    """Inverse of a batch of square matrices (inf/NaN where singular)."""
    (a,) = _inexact("jnp.linalg.inv", a)
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    return solve(a, _eye(shape[-1], shape[:-2], _dtype(a)))


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse from the SVD; singular values at or below
    rtol * largest are dropped (default rtol = 10 * max(m, n) * eps)."""
    (a,) = _inexact("jnp.linalg.pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    *batch, m, n = _shape(a)
    dt = _dtype(a)
    real = np.finfo(dt).dtype  # singular values and tolerances are real for complex `a`
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(np.finfo(dt).eps)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    rtol = np.asarray(rtol, real) if not hasattr(rtol, "aval") else rtol
    largest = lax.slice_in_dim(s, 0, 1, axis=len(_shape(s)) - 1)
    cutoff = lax.mul(_broadcast_rtol(rtol, _shape(largest), real), largest)
    # Dividing by inf zeroes the dropped singular values.
    s = _where(lax.gt(s, lax_shape_ops.broadcast_in_dim(cutoff, _shape(s), tuple(range(len(_shape(s)))))),
               s, _const(s, np.inf))
    s = lax_conversions.convert_element_type(lax_shape_ops.reshape(s, _shape(s) + (1,)), dt)
    return _matmul(_H(vh), lax.div(_H(u), s))


def _broadcast_rtol(rtol, shape, dt):
    rtol = lax_conversions.convert_element_type(ensure_array(rtol), dt)
    rshape = _shape(rtol)
    return lax_shape_ops.broadcast_in_dim(rtol, shape, tuple(range(len(rshape))))


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of a @ x = b from the SVD: (x, residuals, rank, s)."""
    a, b = _inexact("jnp.linalg.lstsq", a, b)
    ashape, bshape = _shape(a), _shape(b)
    if ashape[0] != bshape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_vector = len(bshape) == 1
    if b_vector:
        b = lax_shape_ops.reshape(b, bshape + (1,))
    if len(ashape) != 2:
        raise TypeError(f"{len(ashape)}-dimensional array given. Array must be two-dimensional")
    if len(_shape(b)) != 2:
        raise TypeError(f"{len(bshape)}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = ashape
    dt = _dtype(a)
    eps = float(np.finfo(dt).eps)
    rcond = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    largest = lax_shape_ops.broadcast_in_dim(lax.slice_in_dim(s, 0, 1), _shape(s), (0,))
    mask = lax.ge(s, lax.mul(largest, _const(s, rcond)))
    rank = reductions.sum(mask)
    safe_s = _where(mask, s, _const(s, 1))
    s_inv = _where(mask, lax.div(_const(s, 1), safe_s), _const(s, 0))
    # Singular values are real: complex systems scale by them in their own type.
    s_inv = lax_conversions.convert_element_type(lax_shape_ops.reshape(s_inv, _shape(s) + (1,)), dt)
    x = products.matmul(_H(vt), lax.mul(s_inv, products.matmul(_H(u), b)))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = ensure_array(np.zeros((0,), dt))
    else:
        resid = lax.integer_pow(norm(lax.sub(b, products.matmul(a, x)), axis=0), 2)
    if b_vector:
        x = lax_shape_ops.reshape(x, (n,))
    return x, resid, rank, s


def matrix_power(a, n: int):
    """a raised to the integer power n by repeated squaring (inverse first for n < 0)."""
    check_arraylike("jnp.linalg.matrix_power", a)
    a = ensure_array(a)
    shape = _shape(a)
    if len(shape) < 2:
        raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                        "two-dimensional")
    if shape[-2] != shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return _eye(shape[-1], shape[:-2], _dtype(a))
    if n < 0:
        a, n = inv(a), -n
    result, z = None, None
    while n > 0:
        z = a if z is None else products.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else products.matmul(result, z)
    return result


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """Number of singular values above rtol * largest (default max(m, n) * eps * largest);
    `hermitian` says M is Hermitian (passed on to svd)."""
    (M,) = _inexact("jnp.linalg.matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    shape = _shape(M)
    if len(shape) < 2:
        return lax_conversions.convert_element_type(reductions.any(lax.ne(M, _const(M, 0))), np.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        largest = reductions.max(s, axis=-1, keepdims=True)
        threshold = lax.mul(largest, _const(s, max(shape[-2:]) * float(np.finfo(_dtype(s)).eps)))
    else:
        rt = lax_conversions.convert_element_type(ensure_array(rtol), _dtype(s))
        threshold = lax_shape_ops.reshape(rt, _shape(rt) + (1,))
    (s, threshold) = broadcast_all(s, threshold)
    return reductions.sum(lax.gt(s, threshold), axis=-1)


# ---------------------------------------------------------------- norms


def _abs_squared(x):
    """|x|^2 in x's real dtype: x * conj(x) keeps only its real part for complex x."""
    return lax_extras.real(lax.mul(x, lax_extras.conj(x))) if _is_complex(x) else lax.mul(x, x)


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return lax.sqrt(reductions.sum(_abs_squared(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        msg = f"Invalid order '{ord}' for vector norm."
        if ord in ("inf", "-inf"):
            msg += f" Use '{ord.replace('inf', 'jnp.inf')}' instead."
        raise ValueError(msg)
    if ord == np.inf:
        return reductions.max(lax.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(lax.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(lax.ne(x, _const(x, 0)), axis=axis, keepdims=keepdims,
                              dtype=np.finfo(_dtype(x)).dtype)
    if ord == 1:
        return reductions.sum(lax.abs(x), axis=axis, keepdims=keepdims)
    magnitude = lax.abs(x)
    total = reductions.sum(lax.pow(magnitude, _const(magnitude, ord)), axis=axis,
                           keepdims=keepdims)
    return lax.pow(total, _const(magnitude, 1.0 / ord))


def _matrix_norm(x, ord, axis, keepdims):
    row_axis, col_axis = axis
    if ord is None or ord in ("f", "fro"):
        return lax.sqrt(reductions.sum(_abs_squared(x), axis=axis, keepdims=keepdims))
    if ord in (1, -1):
        pick = reductions.max if ord == 1 else reductions.min
        if not keepdims and col_axis > row_axis:
            col_axis -= 1
        return pick(reductions.sum(lax.abs(x), axis=row_axis, keepdims=keepdims), axis=col_axis,
                    keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        pick = reductions.max if ord == np.inf else reductions.min
        if not keepdims and row_axis > col_axis:
            row_axis -= 1
        return pick(reductions.sum(lax.abs(x), axis=col_axis, keepdims=keepdims), axis=row_axis,
                    keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svd(moveaxis(x, axis, (-2, -1)), compute_uv=False)
        if ord == 2:
            y = reductions.max(s, axis=-1)
        elif ord == -2:
            y = reductions.min(s, axis=-1)
        else:
            y = reductions.sum(s, axis=-1)
        if keepdims:
            y = lax_shape_ops.expand_dims(y, tuple(sorted(axis)))
        return y
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


@_jit(static_argnames=("ord", "axis", "keepdims"))  # as JAX's
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norms (one axis: ord None/2, 1, inf, -inf, 0, p) and matrix norms (two axes:
    None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf), as numpy.linalg.norm."""
    (x,) = _inexact("jnp.linalg.norm", x)
    ndim = len(_shape(x))
    if axis is None:
        if ord is None:
            return lax.sqrt(reductions.sum(_abs_squared(x), keepdims=keepdims))
        axis = tuple(range(ndim))
    elif isinstance(axis, (tuple, list)):
        axis = tuple(canonicalize_axis(a, ndim) for a in axis)
    else:
        axis = (canonicalize_axis(axis, ndim),)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to compute a "
                     "vector-norm, or two axes to compute a matrix-norm.")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm over `axis`: all axes (flattened) by default, the elements of an axis
    tuple taken together as one vector, and each element alone for `axis=()`."""
    from gpuarr.numpy import ufuncs
    check_arraylike("jnp.linalg.vector_norm", x)
    x = ensure_array(x)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=axis,
                                          keepdims=keepdims))
    if isinstance(ord, str):
        hint = {"inf": " Use 'jax.numpy.inf' instead.", "-inf": " Use '-jax.numpy.inf' instead."}
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint.get(ord, '')}")
    if ord == np.inf:
        return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # the number of nonzero elements, in x's floating type
        return reductions.sum(x != 0, dtype=np.finfo(_dtype(x)).dtype, axis=axis,
                              keepdims=keepdims)
    if ord == 1:
        return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    abs_x = ufuncs.abs(x)
    dt = _dtype(abs_x)
    total = reductions.sum(abs_x ** np.asarray(ord, dt), axis=axis, keepdims=keepdims)
    return ufuncs.power(total, np.asarray(1.0 / ord, dt))


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)



# ---------------------------------------------------------------- array-API style helpers


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sum of the diagonal (shifted by `offset`) over the last two axes."""
    return products.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
    """The diagonal (shifted by `offset`) over the last two axes, as a trailing axis."""
    check_arraylike("jnp.linalg.diagonal", x)
    x = ensure_array(x)
    *_, n, m = _shape(x)
    rows = (min(max(-offset, 0), n), n)  # an offset past the matrix gives an empty diagonal
    cols = (min(max(offset, 0), m), m)
    size = max(0, min(rows[1] - rows[0], cols[1] - cols[0]))
    window = lax_linalg._slice_last2(x, (rows[0], rows[0] + size), (cols[0], cols[0] + size))
    if _dtype(window) == np.bool_:  # the extraction sums a masked matrix: booleans as uint8
        return lax.ne(_extract_diagonal(lax.convert_element_type(window, np.uint8)), np.uint8(0))
    return _extract_diagonal(window)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """The matrix product of x1 and x2 (numpy.linalg.matmul): jnp.matmul with positional-only
    operands, as the array API's."""
    return products.matmul(x1, x2, precision=precision,
                           preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    """Sum of products over `axes` (numpy.linalg.tensordot): jnp.tensordot with positional-only
    operands and keyword-only `axes`, as the array API's."""
    return products.tensordot(x1, x2, axes, precision=precision,
                              preferred_element_type=preferred_element_type,
                              out_sharding=out_sharding)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of 3-vectors along `axis`."""
    check_arraylike("jnp.linalg.cross", x1, x2)
    s1, s2 = np.shape(x1) if isinstance(x1, np.ndarray) else _shape(ensure_array(x1)), \
        np.shape(x2) if isinstance(x2, np.ndarray) else _shape(ensure_array(x2))
    if s1[axis] != 3 or s2[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={s1[axis]} and x2.shape[axis]={s2[axis]}")
    return products.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays."""
    check_arraylike("jnp.linalg.outer", x1, x2)
    x1, x2 = ensure_array(x1), ensure_array(x2)
    if len(_shape(x1)) != 1 or len(_shape(x2)) != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={len(_shape(x1))} x2.ndim={len(_shape(x2))}")
    return products.outer(x1, x2)


def multi_dot(arrays, *, precision=None):
    """Product of a chain of matrices (the first and last may be vectors), contracted in the
    cheapest order found by einsum's path search."""
    from gpuarr.numpy.einsum import einsum
    arrs = [ensure_array(a) for a in arrays]
    shapes = [_shape(a) for a in arrs]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2)
            and all(len(s) == 2 for s in shapes[1:-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                         "first and last array which may be 1 or 2 dimensional. Got array shapes "
                         f"{shapes}")
    if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:])):
        raise ValueError("multi_dot: last dimension of each array must match first dimension of "
                         f"following array. Got array shapes {shapes}")
    if len(arrs) > 50:  # more indices than letters: multiply left to right
        out = arrs[0]
        for a in arrs[1:]:
            out = products.matmul(out, a, precision=precision)
        return out
    letters = string.ascii_letters
    terms = [letters[i] + letters[i + 1] for i in range(len(arrs))]
    if len(shapes[0]) == 1:
        terms[0] = terms[0][1:]
    if len(shapes[-1]) == 1:
        terms[-1] = terms[-1][:1]
    out = (terms[0][:1] if len(shapes[0]) == 2 else "") + (terms[-1][-1:] if len(shapes[-1]) == 2
                                                           else "")
    return einsum(",".join(terms) + "->" + out, *arrs, precision=precision)


def cond(x, p=None):
    """Condition number: ratio of extreme singular values (p None, 2, -2), else
    norm(x, p) * norm(inv(x), p)."""
    (x,) = _inexact("jnp.linalg.cond", x)
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")
    if p is None or p == 2 or p == -2:
        s = svdvals(x)
        k = _shape(s)[-1]
        axis = len(_shape(s)) - 1
        first, last = (lax_shape_ops.squeeze(lax.slice_in_dim(s, i, i + 1, axis=axis), (axis,))
                       for i in (0, k - 1))
        return lax.div(first, last) if p != -2 else lax.div(last, first)
    if shape[-1] != shape[-2]:
        raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got arr.shape={shape}")
    r = lax.mul(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
    # NaN from an infinite inverse means the matrix is singular: report inf (unless x has NaNs).
    x_nan = reductions.any(lax.ne(x, x), axis=(-2, -1))
    r_nan = lax.ne(r, r)
    return _where(lax.bitwise_and(r_nan, lax.bitwise_not(x_nan)), _const(r, np.inf), r)


# ---------------------------------------------------------------- general eigendecomposition


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices, as numpy.linalg.eig.

    Returns EigResult(eigenvalues [..., M], eigenvectors [..., M, M]) with column v[..., :, i]
    the eigenvector of w[..., i]; unlike NumPy, both are always complex (complex64 for 32-bit
    inputs). Eigenvector derivatives are not supported (use lax.linalg.eig to opt in).
    """
    (a,) = _inexact("jnp.linalg.eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices, always complex (numpy.linalg.eigvals);
    differentiable."""
    (a,) = _inexact("jnp.linalg.eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


# ---------------------------------------------------------------- tensor inverses and solves


def tensorinv(a, ind=2):
    """The inverse of `a` under tensordot over its first `ind` axes: the result `x` has
    shape a.shape[ind:] + a.shape[:ind] and tensordot(x, a, ind) is the identity; the two
    groups of axes must hold the same number of elements."""
    (a,) = _inexact("jnp.linalg.tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = _shape(a)
    contracting, batch = shape[:ind], shape[ind:]
    rows, cols = int(np.prod(contracting)), int(np.prod(batch))
    if rows != cols:
        raise ValueError("tensorinv is only possible when the product of the first `ind` "
                         "dimensions equals that of the remaining dimensions. got "
                         f"a.shape={shape} with ind={ind}.")
    return lax_shape_ops.reshape(inv(lax_shape_ops.reshape(a, (rows, cols))), batch + contracting)


def tensorsolve(a, b, axes=None):
    """Solve tensordot(a, x, x.ndim) = b for x: x has shape a.shape[b.ndim:] (after moving the
    `axes` of `a` to the end); a's leading axes must equal b's shape."""
    a, b = _inexact("jnp.linalg.tensorsolve", a, b)
    if axes is not None:
        a = moveaxis(a, axes, len(axes) * (len(_shape(a)) - 1,))
    ashape, bshape = _shape(a), _shape(b)
    out_shape = ashape[len(bshape):]
    if ashape[:len(bshape)] != bshape:
        raise ValueError(f"b must match the leading dimensions of a.\na.shape={ashape}\n"
                         f"b.shape={bshape}")
    size = int(np.prod(bshape))
    flat = lax_shape_ops.reshape(a, (size, int(np.prod(out_shape))))
    return lax_shape_ops.reshape(solve(flat, lax_shape_ops.reshape(b, (size,))), out_shape)
