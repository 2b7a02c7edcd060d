"""Factorizations and solvers of jax.scipy.linalg, on top of gpuarr.lax.linalg.

The lax primitives take any number of leading batch axes but need them equal across
operands, so the solvers here broadcast the batch axes first (JAX's jnp.vectorize does the
same job there). Gradients come from the primitives' JVP rules.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import linalg as lax_linalg
from gpuarr.numpy import creation, dtype_functions, manipulation, products, scalar_types, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.numpy.arguments import broadcast_to, ensure_array, promote_dtypes_inexact


def _inexact(*args):
    """Arrays of the arguments (lists allowed, as jnp.asarray allows them), promoted to their
    common inexact dtype."""
    return [ensure_array(a) for a in promote_dtypes_inexact(*[creation.asarray(a) for a in args])]


def _shape(x):
    return get_aval(x).shape


def _mH(x):
    """The conjugate transpose of the last two axes."""
    x = manipulation.swapaxes(x, -1, -2)
    return lax_extras.conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


def _broadcast_batch(a, b):
    """Broadcast the leading (batch) axes of a [..., n, n] and b [..., n, k] together."""
    sa, sb = _shape(a), _shape(b)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    return broadcast_to(a, batch + sa[-2:]), broadcast_to(b, batch + sb[-2:])


def _matrix_solve(name, solve, a, b, warn_vectors=True):
    """Apply `solve(a, b)` (a [..., n, n], b [..., n, k] with equal batch axes) to a right-hand
    side `b` that is a vector [n], a stack of matrices [..., n, k], or a stack of vectors
    [..., n] when a.ndim == b.ndim + 1 (deprecated in JAX, hence the warning, except for
    solve)."""
    sa, sb = _shape(a), _shape(b)
    vector = len(sb) == 1
    if not vector and len(sa) == len(sb) + 1 and sa[-1] == sb[-1]:
        vector = True
        if warn_vectors:
            warnings.warn(f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are "
                          "deprecated, and in the future will be treated as a batched 2D "
                          f"solve. Use {name}(..., b[..., None]).squeeze(-1) to avoid this "
                          "warning.",
                          category=FutureWarning, stacklevel=3)
    if len(sa) < 2 or sa[-1] != sa[-2]:
        raise ValueError(f"{name}: a must be a (batched) square matrix, got a.shape={sa}.")
    if vector:
        b = b[..., None]
    if _shape(b)[-2] != sa[-1]:
        raise ValueError(f"{name}: inconsistent size for core dimension 'n': a.shape={sa}, "
                         f"b.shape={sb}.")
    x = solve(*_broadcast_batch(a, b))
    return x[..., 0] if vector else x


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Cholesky factor of a batch of Hermitian positive-definite matrices: upper U with
    a = U^H U, or lower L with a = L L^H when `lower`. Only the triangle named by `lower` is
    read; where the factorization fails the result is full of NaNs. `overwrite_a` and
    `check_finite` are accepted for SciPy compatibility and ignored."""
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    # The lax factorization reads the lower triangle: hand it a^H for the upper one.
    c = lax_linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
    return c if lower else _mH(c)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Cholesky factorization for cho_solve: returns (c, lower) with c the factor of
    `cholesky(a, lower)`. Unlike SciPy, the other triangle of c holds zeros."""
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def _cho_solve(c, b, lower):
    # c c^H x = b (lower) or c^H c x = b (upper): two triangular solves.
    first = dict(transpose_a=not lower, conjugate_a=not lower)
    second = dict(transpose_a=lower, conjugate_a=lower)
    b = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, **first)
    return lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, **second)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve a x = b given (c, lower) = cho_factor(a). `b` is [n], or [..., n, k] with batch
    axes broadcast against those of c."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = _inexact(c, b)
    return _matrix_solve("cho_solve", partial(_cho_solve, lower=bool(lower)), c, b)


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve op(a) x = b for triangular a, where op is the identity (trans 0 or 'N'), the
    transpose (1 or 'T') or the conjugate transpose (2 or 'C'). Only the triangle named by
    `lower` is read; `unit_diagonal` takes the diagonal to be ones. `b` is [n] or [..., n, k]
    with batch axes broadcast against those of a."""
    del overwrite_b, debug, check_finite
    if not isinstance(trans, (int, str)) or trans not in _TRANS:
        raise ValueError(f"Invalid 'trans' value {trans}")
    transpose_a, conjugate_a = _TRANS[trans]
    a, b = _inexact(a, b)
    solve = partial(lax_linalg.triangular_solve, left_side=True, lower=bool(lower),
                    transpose_a=transpose_a, conjugate_a=conjugate_a,
                    unit_diagonal=bool(unit_diagonal))
    return _matrix_solve("solve_triangular", solve, a, b)


@partial(custom_jvp, nondiff_argnums=(2,))
def _solve_pos(a, b, lower):
    """Solve a x = b through a Cholesky factorization; a [..., n, n], b [..., n, k]."""
    return cho_solve(cho_factor(a, lower=lower), b)


@_solve_pos.defjvp
def _solve_pos_jvp(lower, primals, tangents):
    # Differentiate a x = b with the operator a as given (not its triangle), as JAX's
    # custom_linear_solve does: dx = a^-1 (db - da x), reusing the factorization.
    (a, b), (da, db) = primals, tangents
    factors = cho_factor(a, lower=lower)
    x = cho_solve(factors, b)
    return x, cho_solve(factors, db - products.matmul(da, x))


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solve a x = b for square a. `assume_a='pos'` uses a Cholesky factorization (reading
    the triangle named by `lower`); 'gen', 'sym' and 'her' use an LU factorization, as JAX
    does. `b` is [..., n] or [..., n, k]; batch axes broadcast."""
    del overwrite_a, overwrite_b, debug, check_finite
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
    if assume_a != "pos":
        return jnp_linalg.solve(a, b)
    a, b = _inexact(a, b)
    sa, sb = _shape(a), _shape(b)
    if not (len(sa) >= 2 and len(sb) in (len(sa), len(sa) - 1)
            and sa[-1] == sa[-2] == sb[len(sa) - 2]):
        raise ValueError("The arguments to solve must have shapes a=[..., m, m] and "
                         f"b=[..., m, k] or b=[..., m]; got a={sa} and b={sb}")
    lower = bool(lower)
    return _matrix_solve("solve", lambda a, b: _solve_pos(a, b, lower), a, b, warn_vectors=False)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """Inverse of a batch of square matrices (inf/NaN where singular)."""
    del overwrite_a, check_finite
    return jnp_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """Determinant of a batch of square matrices, from an LU factorization."""
    del overwrite_a, check_finite
    return jnp_linalg.det(a)


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """LU factorization with partial pivoting for lu_solve: returns (lu, piv), with L (unit
    diagonal not stored) and U packed in `lu` and LAPACK-style row swaps in `piv` (int32)."""
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """Solve a x = b (trans=0), a^T x = b (1) or a^H x = b (2) from (lu, piv) = lu_factor(a).
    `b` is [n] or [..., n, k] with batch axes broadcast against those of lu."""
    del overwrite_b, check_finite
    lu_, pivots = lu_and_piv
    lu_, b = _inexact(lu_, b)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    m = _shape(lu_)[-2]
    perm = lax_linalg.lu_pivots_to_permutation(creation.asarray(pivots, dtype=np.int32), m)

    def solve_(lu_b, b_b):
        batch = _shape(lu_b)[:-2]
        return lax_linalg.lu_solve(lu_b, broadcast_to(perm, batch + (m,)), b_b, trans=trans)

    return _matrix_solve("lu_solve", solve_, lu_, b)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """LU decomposition with partial pivoting, a = p @ l @ u: returns (p, l, u), or
    (p @ l, u) when `permute_l`. For a [..., m, n] and k = min(m, n), p is [..., m, m],
    l is [..., m, k] with unit diagonal and u is [..., k, n]."""
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    lu_, _, permutation = lax_linalg.lu(a)
    dt = get_aval(a).dtype
    m, n = _shape(a)[-2:]
    k = min(m, n)
    # p[i, j] = (permutation[j] == i): a = p @ l @ u since a[permutation] = l @ u.
    # p is real even for complex a, as in JAX.
    p = ufuncs.real((permutation[..., None, :] == creation.arange(m, dtype=np.int32)[:, None]).astype(dt))
    l_ = creation.tril(lu_, -1)[..., :, :k] + creation.eye(m, k, dtype=dt)
    u = creation.triu(lu_)[..., :k, :]
    if permute_l:
        return products.matmul(p, l_), u
    return p, l_, u


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR decomposition a = q @ r: (q, r) for mode 'full' (q [..., m, m]) or 'economic'
    (q [..., m, k], r [..., k, n] with k = min(m, n)); (r,) for mode 'r'. With `pivoting`,
    a[..., :, p] = q @ r with |diag(r)| non-increasing (LAPACK's geqp3), and the int32
    permutation p is appended: (q, r, p), or (r, p) for mode 'r'."""
    del overwrite_a, lwork, check_finite
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact(a)
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
    return (r, *p) if mode == "r" else (q, r, *p)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """QR-decompose `a` and multiply its Q with `c` without forming Q, as
    jax.scipy.linalg.qr_multiply: mode 'left' gives (Q @ c, R) for c [..., k, p], 'right'
    (c @ Q, R) for c [..., p, m], with k = min(m, n) and R [..., k, n]; `conjugate` uses
    conj(Q). A 1-D c is a column (left) or a row (right) and the result is 1-D. With
    `pivoting`, the decomposition is a[..., :, P] = Q R (LAPACK's geqp3) and P (int32) is
    returned third."""
    del overwrite_a, overwrite_c
    a, c = _inexact(a, c)
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    onedim = dtype_functions.ndim(c) == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = dtype_functions.shape(a)[-2:]
    k = min(m, n)
    if mode == "left" and dtype_functions.shape(c)[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(dtype_functions.shape(a))} so Q has {k} columns, but c has "
                         f"{dtype_functions.shape(c)[-2]} rows (expected {k}).")
    if mode == "right" and dtype_functions.shape(c)[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(dtype_functions.shape(a))} so Q has {m} rows, but c has "
                         f"{dtype_functions.shape(c)[-1]} columns (expected {m}).")
    batch = np.broadcast_shapes(dtype_functions.shape(a)[:-2], dtype_functions.shape(c)[:-2])
    a = manipulation.broadcast_to(a, batch + dtype_functions.shape(a)[-2:])
    c = manipulation.broadcast_to(c, batch + dtype_functions.shape(c)[-2:])
    if pivoting:
        jpvt = creation.zeros(batch + (n,), scalar_types.int32)
        r, p, taus = lax_linalg._geqp3(a, jpvt)
        p = p - 1  # geqp3's pivots are 1-based
    else:
        (r, taus), p = lax_linalg._geqrf(a), None
    if m > n and mode == "left":  # Q's first k columns: pad c to m rows with zeros
        c = manipulation.concatenate([c, creation.zeros(batch + (m - k, dtype_functions.shape(c)[-1]),
                                                        c.dtype)], axis=-2)
    if conjugate:  # c @ conj(Q) = (Q^H @ c^T)^T, and Q @ c swaps the same way
        c = manipulation.swapaxes(c, -1, -2)
    out = lax_linalg.ormqr(r, taus, c, left=(mode == "left") != conjugate, transpose=conjugate)
    if conjugate:
        out = manipulation.swapaxes(out, -1, -2)
    if mode == "right":
        out = out[..., :k]
    if onedim:
        out = out.ravel()
    r = creation.triu(r[..., :k, :])
    return (out, r, p) if pivoting else (out, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition a = u @ diag(s) @ vh: returns (u, s, vh), or s alone
    when not `compute_uv`; s is descending with the real dtype of a. `lapack_driver` is
    ignored."""
    del overwrite_a, check_finite, lapack_driver
    (a,) = _inexact(a)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """Eigenvalues (ascending, real) and eigenvectors of a batch of symmetric or Hermitian
    matrices: (w, v) with v[..., :, i] the eigenvector of w[..., i], or w alone when
    `eigvals_only`. As in JAX, only the standard problem (b=None, type=1) with all
    eigenvalues (eigvals=None) is implemented."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (a,) = _inexact(a)
    v, w = lax_linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (ascending), and eigenvectors unless `eigvals_only`, of the Hermitian
    tridiagonal matrix with diagonal d and superdiagonal e. `select='i'` with
    select_range=(lo, hi) keeps eigenvalues lo..hi (inclusive); 'v' is not implemented, as in
    JAX. The matrix is formed densely and handed to eigh; `tol` and `key` are not needed."""
    del tol, key
    alpha, beta = creation.asarray(d), creation.asarray(e)
    dt = get_aval(alpha).dtype
    if dt != get_aval(beta).dtype:
        raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                        f"{dt} and {get_aval(beta).dtype}")
    if dt not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {dt} and {dt}")
    n = _shape(alpha)[0]
    if select == "a":
        lo, hi = 0, n - 1
    elif select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        lo, hi = int(select_range[0]), int(select_range[1])
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    else:
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    if n <= 1:
        w = ufuncs.real(alpha)
        return w if eigvals_only else (w, creation.eye(n, dtype=dt))
    # Lower triangle of the Hermitian matrix: conj(e) below the diagonal.
    sub = lax_extras.conj(beta) if dtypes.is_complex(dt) else beta
    t = creation.diag(alpha) + creation.diag(sub, k=-1)
    v, w = lax_linalg.eigh(t, lower=True, symmetrize_input=False)
    w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    return w if eigvals_only else (w, v)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The upper Hessenberg form H of a batch of square matrices, a = Q H Q^H with Q unitary:
    returns H, or (H, Q) when `calc_q`. H is zero below its first subdiagonal; Q is formed
    from the reflectors of lax.linalg.hessenberg. `overwrite_a` and `check_finite` are
    accepted for SciPy compatibility and ignored."""
    del overwrite_a, check_finite
    a = creation.asarray(a)
    n = _shape(a)[-1]
    if n == 0:
        return (creation.zeros_like(a), creation.zeros_like(a)) if calc_q else creation.zeros_like(a)
    packed, taus = lax_linalg.hessenberg(a)
    h = creation.triu(packed, -1)
    if not calc_q:
        return h
    # Q = diag(1, Q1), Q1 the product of the reflectors stored below the subdiagonal.
    q1 = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    q = manipulation.pad(q1, [(0, 0)] * (q1.ndim - 2) + [(1, 0), (1, 0)])
    return h, q.at[..., 0, 0].set(1)
