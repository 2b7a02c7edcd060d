"""Linear-algebra primitives (JAX's lax.linalg): cholesky, lu, qr, svd, eigh, triangular_solve,
and tridiagonal_solve, lu_pivots_to_permutation, householder_product, hessenberg, schur, ormqr
and the packed QRs geqrf and geqp3 (column pivoting; both internal in JAX too).

Every primitive acts on the last two axes and accepts any number of leading batch axes, so
its batching rule only moves the batch axis to the front. The NumPy implementations use
numpy.linalg's stacked routines (LU, triangular and tridiagonal solves, the Householder
reductions, column-pivoted QR and the Schur decomposition's QR algorithm are written out
after LAPACK in lapack_host.py, as NumPy has none) and keep the input dtype (float32 in,
float32 out). JVP rules follow JAX's derivations, for real and complex inputs alike;
householder_product, hessenberg, schur, geqrf, geqp3 and ormqr have none, as in JAX. The
compiler lowers these as library calls.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval, weak_type_rules
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, is_undefined
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import conversions, dot_products, lapack_host, lax, shape_ops
from gpuarr.lax.extras import conj, real

# ---------------------------------------------------------------- helpers on traced values


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _is_complex(x) -> bool:
    return dtypes.is_complex(_dtype(x))


def _T(x):
    """Swap the last two axes."""
    nd = len(_shape(x))
    return shape_ops.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
    """The complex conjugate; real values pass through untouched (no extra operation)."""
    return conj(x) if _is_complex(x) else x


def _H(x):
    """The adjoint (conjugate transpose) of the last two axes."""
    return _conj(_T(x))


def _as_dtype(x, like):
    """x converted to the dtype of `like` (a real to complex cast; a no-op for real inputs)."""
    return conversions._convert_weak(x, _dtype(like), False)


def symmetrize(x):
    """(x + x^H) / 2."""
    shape = _shape(x)
    if len(shape) < 2:
        raise TypeError(f"The input to symmetrize must have rank at least 2, but got shape={shape}")
    if shape[-1] != shape[-2]:
        # JAX fails here in its `add`, with a TypeError.
        raise TypeError(f"symmetrize needs square matrices: (x + x^H) / 2 got incompatible shapes "
                        f"for broadcasting: {shape}, {shape[:-2] + shape[-2:][::-1]}.")
    return lax.div(lax.add(x, _H(x)), 2)


def _matmul(a, b):
    """Batched matrix product of two arrays with equal leading (batch) axes."""
    nd = len(_shape(a))
    batch = tuple(range(nd - 2))
    return dot_products.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _mask(shape, fn):
    """A boolean NumPy constant of `shape` that is `fn(row, col)` on the last two axes."""
    rows, cols = np.indices(shape[-2:])
    return np.broadcast_to(fn(rows, cols), shape)


def _keep(x, mask):
    """x where mask, zero elsewhere."""
    return lax.select_n(mask, shape_ops.full_like(x, 0), x)


def _tril(x, k: int = 0):
    return _keep(x, _mask(_shape(x), lambda r, c: c <= r + k))


def _triu(x, k: int = 0):
    return _keep(x, _mask(_shape(x), lambda r, c: c >= r + k))


def _eye_like(x):
    """The identity, broadcast to the (square) shape and dtype of `x`."""
    return _mask(_shape(x), lambda r, c: r == c).astype(_dtype(x))


def _extract_diagonal(x):
    """x[..., i, i] for a batch of square matrices."""
    return shape_ops.reduce_sum(_keep(x, _mask(_shape(x), lambda r, c: r == c)), (len(_shape(x)) - 1,))


def _construct_diagonal(s):
    """The batch of diagonal matrices whose diagonals are s[..., :]."""
    shape = _shape(s)
    n, nd = shape[-1], len(shape)
    full = shape_ops.broadcast_in_dim(s, shape[:-1] + (n, n), tuple(range(nd - 1)) + (nd,))
    return _keep(full, _mask(shape[:-1] + (n, n), lambda r, c: r == c))


def _row_vector(s):
    """(..., n) -> (..., 1, n), for broadcasting against matrices."""
    shape = _shape(s)
    return shape_ops.reshape(s, shape[:-1] + (1, shape[-1]))


def _col_vector(s):
    shape = _shape(s)
    return shape_ops.reshape(s, shape + (1,))


def _permutation_matrix(perm, dtype):
    """P with P[..., i, j] = (perm[..., i] == j), so that P @ b == b[..., perm, :]."""
    shape = _shape(perm)
    m = shape[-1]
    cols = shape_ops.broadcasted_iota(_dtype(perm), (1,) * (len(shape) - 1) + (1, m), len(shape))
    return conversions.convert_element_type(lax.eq(_col_vector(perm), cols), dtype)


def _slice_last2(x, rows, cols):
    """x[..., rows[0]:rows[1], cols[0]:cols[1]]."""
    shape = _shape(x)
    start = (0,) * (len(shape) - 2) + (rows[0], cols[0])
    limit = shape[:-2] + (rows[1], cols[1])
    return lax.slice(x, start, limit)


def _pad_last2(x, rows, cols):
    """Zero-pad the last two axes by (low, high) amounts."""
    cfg = ((0, 0, 0),) * (len(_shape(x)) - 2) + ((rows[0], rows[1], 0), (cols[0], cols[1], 0))
    return lax.pad(x, lax._const(x, 0), cfg)


# ---------------------------------------------------------------- shared rules


def _compute_dtype(dt):
    """NumPy's LAPACK wrappers take single, double and complex types only."""
    dt = np.dtype(dt)
    low_precision = (dt.kind == "f" and dt.itemsize < 4) or dt.name == "bfloat16"
    return np.dtype(np.float32) if low_precision else dt


def _check_operand(name, aval, index=0, square=False, square_msg=None):
    if aval.ndim < 2:
        raise TypeError(f"Input {index} to {name} must have rank at least 2, but got "
                        f"shape={aval.shape}")
    if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position {index}. "
                        f"Accepted dtypes at position {index} are subtypes of floating, "
                        "complexfloating. Convert the input with x.astype(jnp.float32) first.")
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ValueError(square_msg or f"The input to {name} must be a square matrix. Got shape "
                                       f"{aval.shape[-2:]}.")


def _real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def _batch_at_front(prim, axis_size, vals, dims, **params):
    """These primitives take leading batch axes: move (or create) the batch axis at 0."""
    vals = [batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims)]
    out = prim.bind(*vals, **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)


def _register(prim, impl, abstract, jvp):
    impl_rules[prim] = impl
    abstract_eval_rules[prim] = abstract
    weak_type_rules[prim] = lambda *args, **params: False
    ad.jvp_rules[prim] = jvp
    batch_rules[prim] = lambda *a, **p: _batch_at_front(prim, *a, **p)


def _bind(prim, *args, **params):
    """Validate with the abstract rule (eager evaluation skips it), then bind."""
    abstract_eval_rules[prim](*map(get_aval, args), **params)
    return prim.bind(*args, **params)


def _nan_on_failure(fn, x, out_like):
    """Run a numpy.linalg routine over a stack; matrices where it fails give NaNs (as JAX does)."""
    try:
        return fn(x)
    except np.linalg.LinAlgError:
        flat = x.reshape((-1,) + x.shape[-2:])
        outs = []
        for mat in flat:
            try:
                outs.append(fn(mat))
            except np.linalg.LinAlgError:
                outs.append(np.full(out_like(mat), np.nan, x.dtype))
        return np.stack(outs).reshape(x.shape[:-2] + outs[0].shape)


# ---------------------------------------------------------------- cholesky


def _cholesky_impl(x):
    c = x.astype(_compute_dtype(x.dtype))
    return _nan_on_failure(np.linalg.cholesky, c, lambda m: m.shape).astype(x.dtype)


def _cholesky_abstract(x):
    _check_operand("cholesky", x, square=True,
                   square_msg=f"The input to cholesky must be a square matrix. Got shape "
                              f"{x.shape[-2:]}.")
    return [ShapedArray(x.shape, x.dtype)]


def _cholesky_jvp(primals, tangents):
    (x,), (sigma_dot,) = primals, tangents
    L = cholesky_p.bind(x)
    # Forward-mode rule of arXiv:1602.07527: L_dot = L . phi(L^-1 sigma_dot L^-H), where phi
    # keeps the lower triangle and halves the diagonal.
    sigma_dot = ad.instantiate(sigma_dot)
    tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    half_diag = np.where(_mask(_shape(x), lambda r, c: r == c), 0.5, 1.0).astype(_dtype(x))
    phi = lax.mul(_tril(inner), half_diag)
    return L, _matmul(L, phi)


cholesky_p = Primitive("cholesky")
_register(cholesky_p, _cholesky_impl, _cholesky_abstract, _cholesky_jvp)


def cholesky(x, *, symmetrize_input: bool = True):
    """Cholesky factor L (lower triangular, A = L L^H) of a batch of positive-definite matrices.

    With `symmetrize_input` the input is first replaced by (x + x^H) / 2; otherwise only its
    lower triangle is read. Where the factorization fails the result is full of NaNs.
    """
    if symmetrize_input:
        x = symmetrize(x)
    return _bind(cholesky_p, x)


# ---------------------------------------------------------------- triangular_solve


def _forward_substitution(m, b):
    """Solve m @ x = b for lower-triangular m (stacks), one row of x at a time."""
    x = np.zeros(np.broadcast_shapes(m.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(m.shape[-1]):
            acc = b[..., i, :] - np.matmul(m[..., i:i + 1, :i], x[..., :i, :])[..., 0, :]
            x[..., i, :] = acc / m[..., i, i, None]
    return x


def _triangular_solve_impl(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    dt = _compute_dtype(b.dtype)
    tri = (np.tril(a) if lower else np.triu(a)).astype(dt)
    if unit_diagonal:
        idx = np.arange(tri.shape[-1])
        tri[..., idx, idx] = 1
    if conjugate_a:
        tri = tri.conj()
    low = lower
    if transpose_a:
        tri, low = np.swapaxes(tri, -1, -2), not low
    rhs = b.astype(dt)
    if not left_side:  # x @ op(a) = b  <=>  op(a)^T @ x^T = b^T
        tri, rhs, low = np.swapaxes(tri, -1, -2), np.swapaxes(rhs, -1, -2), not low
    if low:
        x = _forward_substitution(tri, rhs)
    else:  # reversing rows and columns turns an upper-triangular system into a lower one
        x = _forward_substitution(tri[..., ::-1, ::-1], rhs[..., ::-1, :])[..., ::-1, :]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return np.ascontiguousarray(x).astype(b.dtype)


def _triangular_solve_abstract(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_operand("triangular_solve", a, 0, square=True,
                   square_msg=f"The first input to triangular_solve must be a square matrix. "
                              f"Got shape {a.shape[-2:]}.")
    _check_operand("triangular_solve", b, 1)
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires arguments to have the same dtypes, got "
                        f"{a.dtype.name}, {b.dtype.name}.")
    if a.ndim != b.ndim:
        raise TypeError(f"All inputs to triangular_solve must have the same number of batch "
                        f"dimensions, but got {[a.ndim - 2, b.ndim - 2]} batch dimensions for "
                        "the inputs.")
    common = -2 if left_side else -1
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[common]:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                         f"{b.shape}.")
    return [ShapedArray(b.shape, b.dtype)]


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = Zero.from_primal(ans)
    if type(tb) is not Zero:
        out = ad.add_tangents(out, triangular_solve_p.bind(a, tb, **params))
    if type(ta) is not Zero:
        out = ad.add_tangents(out, _triangular_solve_jvp_a(ta, ans, a, **params))
    return ans, out


def _triangular_solve_jvp_a(g_a, ans, a, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    # d(op(A)^-1 B) = -op(A)^-1 op(dA) X (left side), -X op(dA) op(A)^-1 (right side).
    k = 1 if unit_diagonal else 0
    g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
    g_a = lax.neg(_T(g_a) if transpose_a else g_a)
    g_a = conj(g_a) if conjugate_a else g_a  # the wrapper sets conjugate_a for complex a only

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)

    m, n = _shape(ans)[-2:]
    if left_side:
        return a_inverse(_matmul(g_a, ans)) if m > n else _matmul(a_inverse(g_a), ans)
    return a_inverse(_matmul(ans, g_a)) if m < n else _matmul(ans, a_inverse(g_a))


def _triangular_solve_transpose(ct, a, b, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # Linear in b (like div in its first argument): solve with the transposed operator. This
    # is the plain transpose, not the adjoint, so conjugate_a stays as it is (as in JAX).
    assert not is_undefined(a) and is_undefined(b)
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                          unit_diagonal=unit_diagonal)]


triangular_solve_p = Primitive("triangular_solve")
_register(triangular_solve_p, _triangular_solve_impl, _triangular_solve_abstract,
          _triangular_solve_jvp)
ad.transpose_rules[triangular_solve_p] = _triangular_solve_transpose


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve op(a) @ x = b (left_side) or x @ op(a) = b for x, with a triangular.

    Only the triangle of `a` named by `lower` is read; op transposes (`transpose_a`) and/or
    conjugates (`conjugate_a`) it; `unit_diagonal` takes its diagonal to be ones. A `b` with
    one dimension fewer than `a` is treated as a batch of vectors.
    """
    conjugate_a = bool(conjugate_a) and _is_complex(a)
    singleton = len(_shape(b)) == len(_shape(a)) - 1
    if singleton:
        b = shape_ops.expand_dims(b, (len(_shape(b)) if left_side else len(_shape(b)) - 1,))
    out = _bind(triangular_solve_p, a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = len(_shape(out))
        out = shape_ops.squeeze(out, (nd - 1,) if left_side else (nd - 2,))
    return out


# ---------------------------------------------------------------- lu


def _lu_impl(x):
    *batch, m, n = x.shape
    a = x.astype(_compute_dtype(x.dtype)).reshape((math.prod(batch), m, n)).copy()
    pivots, perm = lapack_host.getrf(a)
    return (a.reshape(x.shape).astype(x.dtype), pivots.reshape(tuple(batch) + (min(m, n),)),
            perm.reshape(tuple(batch) + (m,)))


def _lu_abstract(x):
    _check_operand("lu", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    i32 = np.dtype(np.int32)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), i32),
            ShapedArray(batch + (m,), i32)]


def _lu_jvp(primals, tangents):
    # De Hoog, Anderssen and Lukas, "Differentiation of matrix functionals using triangular
    # factorization": with P A = L U, inv(L) P dA inv(U) = inv(L) dL + dU inv(U), whose
    # strictly lower part gives dL and upper part gives dU.
    (a,), (a_dot,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    *_, m, n = _shape(a)
    k = min(m, n)
    l_full = _pad_last2(_tril(_slice_last2(lu_, (0, m), (0, k)), -1), (0, 0), (0, m - k))
    l_full = lax.add(l_full, _eye_like(l_full))
    u_full = _pad_last2(_triu(_slice_last2(lu_, (0, k), (0, n))), (0, n - k), (0, 0))
    lower_right = _mask(_shape(u_full), lambda r, c: (r == c) & (r >= k))
    u_full = lax.add(u_full, lower_right.astype(_dtype(a)))
    pa_dot = _matmul(_permutation_matrix(perm, _dtype(a)), a_dot)
    la = triangular_solve(l_full, pa_dot, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u_full, la, left_side=False, lower=False)
    lu_dot = lax.add(_matmul(l_full, _tril(lau, -1)), _matmul(_triu(lau), u_full))
    return [lu_, pivots, perm], [lu_dot, Zero.from_primal(pivots), Zero.from_primal(perm)]


lu_p = Primitive("lu", multiple_results=True)
_register(lu_p, _lu_impl, _lu_abstract, _lu_jvp)


def lu(x):
    """LU decomposition with partial pivoting: P A = L U, as lax.linalg.lu.

    Returns (lu, pivots, permutation): `lu` holds L (unit diagonal not stored) below the
    diagonal and U on and above it; `pivots` (int32, [..., min(m, n)]) are LAPACK-style row
    swaps; `permutation` (int32, [..., m]) is the same as a permutation, so A[perm] = L U.
    """
    return tuple(_bind(lu_p, x))


def lu_solve(lu, permutation, b, trans: int = 0):
    """Solve A x = b (trans=0) or A^T x = b (trans=1), A^H x = b (trans=2) from lu(A).

    `b` has the batch axes of `lu` followed by [m, k]."""
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    p = _permutation_matrix(permutation, _dtype(lu))
    if trans == 0:
        x = triangular_solve(lu, _matmul(p, b), left_side=True, lower=True, unit_diagonal=True)
        return triangular_solve(lu, x, left_side=True, lower=False)
    conj = trans == 2
    x = triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                         conjugate_a=conj)
    return _matmul(_T(p), x)


# ---------------------------------------------------------------- qr


def _qr_impl(x, full_matrices, pivoting=False):
    *batch, m, n = x.shape
    c = x.astype(_compute_dtype(x.dtype))
    if c.size == 0:
        k = m if full_matrices else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=c.dtype), tuple(batch) + (m, k))
        out = [q.astype(x.dtype), np.zeros(tuple(batch) + (k, n), x.dtype)]
        return out + [np.zeros(tuple(batch) + (n,), np.int32)] if pivoting else out
    if pivoting:
        q, r, p = lapack_host.pivoted_qr(c, full_matrices)
        return q.astype(x.dtype), r.astype(x.dtype), p
    q, r = np.linalg.qr(c, mode="complete" if full_matrices else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


def _qr_abstract(x, full_matrices, pivoting=False):
    _check_operand("qr", x)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    batch = tuple(batch)
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    return out + [ShapedArray(batch + (n,), np.dtype(np.int32))] if pivoting else out


def _thin_qr_jvp(q, r, dx):
    """JVP of the QR decomposition of [..., m, n] matrices with m >= n (j-towns' derivation)."""
    dx_rinv = triangular_solve(r, dx)  # right-side solve
    qt_dx_rinv = _matmul(_H(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    do = lax.sub(lower, _H(lower))  # skew-Hermitian
    if _is_complex(q):
        # R's diagonal stays real, so do also takes the imaginary part of the diagonal.
        imag_part = lax.div(lax.sub(qt_dx_rinv, conj(qt_dx_rinv)), lax._const(qt_dx_rinv, 2))
        do = lax.add(do, _keep(imag_part, _mask(_shape(do), lambda r, c: r == c)))
    dq = lax.add(_matmul(q, lax.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _matmul(lax.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, full_matrices, pivoting=False):
    (x,), (dx,) = primals, tangents
    out = qr_p.bind(x, full_matrices=full_matrices, pivoting=pivoting)
    if not pivoting:
        return out, _unpivoted_qr_jvp(x, dx, out, full_matrices)
    # A[:, p] = Q R: differentiate the QR of the permuted matrix, the permutation held fixed.
    q, r, perm = out
    x, dx = _permute_columns(x, perm), _permute_columns(dx, perm)
    dq, dr = _unpivoted_qr_jvp(x, dx, (q, r), full_matrices)
    return out, [dq, dr, Zero.from_primal(perm)]


def _permute_columns(x, perm):
    """x[..., :, perm], as a product with the permutation matrix."""
    return _matmul(x, _T(_permutation_matrix(perm, _dtype(x))))


def _unpivoted_qr_jvp(x, dx, qr_out, full_matrices):
    """The tangents [dQ, dR] of the decomposition x = Q R, given Q and R."""
    q, r = qr_out
    *_, m, n = _shape(x)
    if m < n:
        # X = [X1 X2] with X1 square: X1 = Q R1 is a square QR, and R2 = Q^H X2.
        x2 = _slice_last2(x, (0, m), (m, n))
        dx1 = _slice_last2(dx, (0, m), (0, m))
        dx2 = _slice_last2(dx, (0, m), (m, n))
        dq, dr1 = _thin_qr_jvp(q, _slice_last2(r, (0, m), (0, m)), dx1)
        dr2 = lax.add(_matmul(_H(dq), x2), _matmul(_H(q), dx2))
        return [dq, lax.concatenate([dr1, dr2], len(_shape(x)) - 1)]
    q_mn = _slice_last2(q, (0, m), (0, n)) if full_matrices else q
    r_nn = _slice_last2(r, (0, n), (0, n)) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return [dq_mn, dr_nn]
    # The extra columns of a complete Q (arXiv:2409.13374, eqs. 32-33).
    q_nn = _slice_last2(q_mn, (0, n), (0, n))
    q_pn = _slice_last2(q_mn, (n, m), (0, n))
    q_mp = _slice_last2(q, (0, m), (n, m))
    dq_nn = _slice_last2(dq_mn, (0, n), (0, n))
    dq_pn = _slice_last2(dq_mn, (n, m), (0, n))
    lu_, _, perm = lu(lax.sub(q_nn, _eye_like(q_nn)))
    z_pn_h = lu_solve(lu_, perm, _H(q_pn), trans=2)
    z_pn = _H(z_pn_h)
    dq_mp = lax.sub(_matmul(dq_mn, z_pn_h),
                    _matmul(lax.add(q_mn, _matmul(q_mp, z_pn)),
                            _H(lax.sub(dq_pn, _matmul(z_pn, dq_nn)))))
    nd = len(_shape(x))
    dq = lax.concatenate([dq_mn, dq_mp], nd - 1)
    dr = _pad_last2(dr_nn, (0, m - n), (0, 0))
    return [dq, dr]


qr_p = Primitive("qr", multiple_results=True)
_register(qr_p, _qr_impl, _qr_abstract, _qr_jvp)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition A = Q R of a batch of matrices, as lax.linalg.qr.

    Q is orthogonal (unitary) with shape [..., m, m] when `full_matrices`, else
    [..., m, min(m, n)]; R is upper triangular, [..., m, n] or [..., min(m, n), n]. With
    `pivoting`, returns (q, r, p) with A[..., :, p] = Q R, p ([..., n], int32) chosen by
    LAPACK's geqp3 so that |diag(R)| does not increase. `use_magma` is accepted and ignored.
    """
    if pivoting:
        return tuple(_bind(qr_p, x, full_matrices=bool(full_matrices), pivoting=True))
    return tuple(_bind(qr_p, x, full_matrices=bool(full_matrices)))


# ---------------------------------------------------------------- svd


def _svd_impl(x, full_matrices, compute_uv):
    *batch, m, n = x.shape
    c = x.astype(_compute_dtype(x.dtype))
    real = _real_dtype(x.dtype)
    if not compute_uv:
        return (np.linalg.svd(c, compute_uv=False).astype(real),)
    u, s, vh = np.linalg.svd(c, full_matrices=full_matrices)
    return s.astype(real), u.astype(x.dtype), vh.astype(x.dtype)


def _svd_abstract(x, full_matrices, compute_uv):
    _check_operand("svd", x)
    *batch, m, n = x.shape
    batch, k = tuple(batch), min(m, n)
    s = ShapedArray(batch + (k,), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray(batch + (m, m if full_matrices else k), x.dtype)
    vh = ShapedArray(batch + (n if full_matrices else k, n), x.dtype)
    return [s, u, vh]


def _safe_reciprocal(x):
    """1 / x where x != 0, else 0."""
    zero = conversions.convert_element_type(lax.eq(x, lax._const(x, 0)), _dtype(x))
    return lax.sub(lax.div(lax._const(x, 1), lax.add(x, zero)), zero)


def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    (a,), (da,) = primals, tangents
    *_, m, n = _shape(a)
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                                  "matrices; use full_matrices=False.")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    ut, v = _H(u), _H(vt)
    ds_mat = _matmul(_matmul(ut, da), v)
    ds = _extract_diagonal(real(ds_mat) if _is_complex(a) else ds_mat)
    if not compute_uv:
        return [s], [ds]
    s_row = _row_vector(s)
    s_col = _T(s_row)
    eye = _mask(_shape(ds_mat), lambda r, c: r == c).astype(_dtype(s))
    # F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it.
    s_diffs = lax.mul(lax.add(s_row, s_col), lax.sub(s_row, s_col))
    f = _as_dtype(lax.sub(lax.div(lax._const(s, 1), lax.add(s_diffs, eye)), eye), a)
    s_row, s_col = _as_dtype(s_row, a), _as_dtype(s_col, a)
    dss = lax.mul(s_row, ds_mat)
    sds = lax.mul(s_col, ds_mat)
    s_inv_mat = _as_dtype(_construct_diagonal(_safe_reciprocal(s)), a)
    # The diagonal of (dS - dS^H) / 2 is the imaginary part of diag(dS): the change of phase
    # that complex singular vectors pick up (zero for real inputs).
    du_dv_diag = lax.mul(lax.mul(lax._const(ds_mat, 0.5), lax.sub(ds_mat, _H(ds_mat))), s_inv_mat)
    du = _matmul(u, lax.add(lax.mul(f, lax.add(dss, _H(dss))), du_dv_diag))
    dv = _matmul(v, lax.mul(f, lax.add(sds, _H(sds))))
    if m > n:
        dav = _matmul(da, v)
        du = lax.add(du, lax.div(lax.sub(dav, _matmul(u, _matmul(ut, dav))), s_row))
    if n > m:
        dahu = _matmul(_H(da), u)
        dv = lax.add(dv, lax.div(lax.sub(dahu, _matmul(v, _matmul(vt, dahu))), s_row))
    return [s, u, vt], [ds, du, _H(dv)]


svd_p = Primitive("svd", multiple_results=True)
_register(svd_p, _svd_impl, _svd_abstract, _svd_jvp)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular value decomposition, as lax.linalg.svd: (u, s, vh), or s if not `compute_uv`.

    `s` is sorted in descending order and has the real dtype of `x`; `u` and `vh` are square
    when `full_matrices`, else [..., m, k] and [..., k, n] with k = min(m, n). `algorithm`
    is None or an SvdAlgorithm; every algorithm runs the same host routine, whose results
    agree with each of them to rounding.
    """
    _check_svd_algorithm(algorithm)
    if subset_by_index is not None and tuple(subset_by_index) != (0, min(_shape(x)[-2:])):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    outs = _bind(svd_p, x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if compute_uv:
        s, u, vh = outs
        return u, s, vh
    return outs[0]


# ---------------------------------------------------------------- eigh


def _eigh_impl(x, lower, sort_eigenvalues):
    c = x.astype(_compute_dtype(x.dtype))
    n = x.shape[-1]

    def decompose(mats):
        w, v = np.linalg.eigh(mats, UPLO="L" if lower else "U")
        return np.concatenate([v, w[..., None, :]], axis=-2)

    vw = _nan_on_failure(decompose, c, lambda mat: (n + 1, n))
    return vw[..., :n, :].astype(x.dtype), vw[..., n, :].real.astype(_real_dtype(x.dtype))


def _eigh_abstract(x, lower, sort_eigenvalues):
    _check_operand("eigh", x, square=True,
                   square_msg=f"Argument to symmetric eigendecomposition must have shape "
                              f"[..., n, n], got shape {x.shape}")
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-1], _real_dtype(x.dtype))]


def _eigh_jvp(primals, tangents, lower, sort_eigenvalues):
    # Nondegenerate perturbation theory (Giles, NA-08-01): with V^H dA V = M,
    # dw = Re diag(M) and dV = V (F o M), F[i, j] = 1 / (w_j - w_i) off the diagonal.
    (a,), (a_dot,) = primals, tangents
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues)
    w = _as_dtype(w_real, a)
    eye = _eye_like(v)
    f = lax.sub(lax.integer_pow(lax.add(eye, lax.sub(_row_vector(w), _col_vector(w))), -1), eye)
    vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
    dv = _matmul(v, lax.mul(f, vdag_adot_v))
    dw = _extract_diagonal(real(vdag_adot_v) if _is_complex(a) else vdag_adot_v)
    return [v, w_real], [dv, dw]


eigh_p = Primitive("eigh", multiple_results=True)
_register(eigh_p, _eigh_impl, _eigh_abstract, _eigh_jvp)


class EighImplementation(enum.Enum):
    """Algorithm of the symmetric eigendecomposition (lax.linalg.eigh's `implementation`): QR
    is LAPACK's, the CPU default; JACOBI (GPU/TPU) and QDWH (TPU) are not available on the
    host, as in JAX on CPU."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


def _check_eigh_implementation(implementation):
    """JAX's CPU choices: None and QR run LAPACK; the others raise NotImplementedError. Values
    are read by their string value, so JAX's own enum members are understood too."""
    if implementation is None:
        return
    impl = EighImplementation(getattr(implementation, "value", implementation))
    if impl is EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if impl is EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None, implementation=None):
    """Eigendecomposition of symmetric (Hermitian) matrices, as lax.linalg.eigh: returns (v, w).

    `v[..., :, i]` is the normalized eigenvector of eigenvalue `w[..., i]`; eigenvalues are in
    ascending order. Without `symmetrize_input`, only the triangle named by `lower` is read.
    `implementation` may be None or EighImplementation.QR (LAPACK, the only host algorithm).
    """
    n = _shape(x)[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")
    _check_eigh_implementation(implementation)
    if symmetrize_input:
        x = symmetrize(x)
    v, w = _bind(eigh_p, x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    return v, w


# ---------------------------------------------------------------- shared checks (JAX's linalg rules)


def _check_args(name, avals, ranks, core_rule, accepted=None):
    """JAX's checks for a linalg primitive, in its order: each input's minimum rank and equal
    numbers of batch axes (TypeError), `core_rule` on the core dimensions, equal batch shapes
    (ValueError), then dtypes (TypeError). `accepted` is (predicate, names), by default the
    float and complex types; all inputs must share one dtype."""
    for i, (aval, rank) in enumerate(zip(avals, ranks)):
        if aval.ndim < rank:
            raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got "
                            f"shape={aval.shape}")
    nbatch = [aval.ndim - rank for aval, rank in zip(avals, ranks)]
    if len(set(nbatch)) > 1:
        raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, "
                        f"but got {nbatch} batch dimensions for the inputs.")
    core_rule(*[aval.shape[aval.ndim - rank:] for aval, rank in zip(avals, ranks)])
    batches = [aval.shape[:n] for aval, n in zip(avals, nbatch)]
    if any(b != batches[0] for b in batches):
        raise ValueError(f"All inputs to {name} must have the same batch dimensions, but got "
                         f"{batches}.")
    ok, names = accepted or (lambda dt: dtypes.is_float(dt) or dtypes.is_complex(dt),
                             "floating, complexfloating")
    for i, aval in enumerate(avals):
        if not ok(aval.dtype):
            raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position {i}. "
                            f"Accepted dtypes at position {i} are subtypes of {names}.")
    if len({aval.dtype for aval in avals}) > 1:
        got = ", ".join(aval.dtype.name for aval in avals)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {got}.")


def _not_differentiable(name):
    """The JVP rule of a primitive JAX does not differentiate: it raises JAX's error."""
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{name}' not implemented")
    return rule


# ---------------------------------------------------------------- tridiagonal_solve


def _tridiagonal_solve_impl(dl, d, du, b, perturb_singular):
    *batch, m, k = b.shape
    count, dt = math.prod(batch), _compute_dtype(b.dtype)
    diags = [v.astype(dt).reshape((count, m)) for v in (dl, d, du)]
    rhs = b.astype(dt).reshape((count, m, k))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if perturb_singular:
            x = lapack_host.gtsv_perturbed(*diags, rhs)
        else:
            x, failed = lapack_host.gtsv(*diags, rhs)
            x[failed] = np.nan  # as JAX, where gtsv reports a zero pivot
    return x.reshape(b.shape).astype(b.dtype)


def _tridiagonal_solve_core(dl, d, du, b):
    if dl != d or dl != du:
        raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                        "shape.")
    if dl != b[:-1]:
        raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        "equal the dimensions of the diagonal arguments.")


def _tridiagonal_solve_abstract(dl, d, du, b, perturb_singular):
    _check_args("tridiagonal_solve", (dl, d, du, b), (1, 1, 1, 2), _tridiagonal_solve_core)
    return [ShapedArray(b.shape, b.dtype)]


def _tridiagonal_product(dl, d, du, x):
    """A @ x for the tridiagonal A given by its diagonals (dl[0] and du[-1] are not read)."""
    nd = len(_shape(x))
    y = lax.mul(_col_vector(d), x)
    m = _shape(x)[-2]
    if m < 2:
        return y
    lo = lax.mul(_col_vector(lax.slice_in_dim(dl, 1, m, axis=nd - 2)),
                 lax.slice_in_dim(x, 0, m - 1, axis=nd - 2))
    hi = lax.mul(_col_vector(lax.slice_in_dim(du, 0, m - 1, axis=nd - 2)),
                 lax.slice_in_dim(x, 1, m, axis=nd - 2))
    return lax.add(y, lax.add(_pad_last2(lo, (1, 0), (0, 0)), _pad_last2(hi, (0, 1), (0, 0))))


def _tridiagonal_solve_jvp(primals, tangents, perturb_singular):
    # A x = b gives A dx = db - dA x: one more solve with the same matrix.
    *diags, _ = primals
    *diag_dots, b_dot = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = b_dot
    if not all(type(t) is Zero for t in diag_dots):
        dA_x = _tridiagonal_product(*map(ad.instantiate, diag_dots), ans)
        rhs = ad.add_tangents(b_dot, lax.neg(dA_x))
    return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, perturb_singular):
    # Linear in b: solve with A^T, whose sub- and superdiagonals are A's shifted by one.
    assert not any(map(is_undefined, (dl, d, du))) and is_undefined(b)
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    nd, m = len(_shape(d)), _shape(d)[-1]
    if m == 0:
        return [None, None, None, ct]
    zero = shape_ops.full_like(lax.slice_in_dim(d, 0, 1, axis=nd - 1), 0)
    dl_t = lax.concatenate([zero, lax.slice_in_dim(du, 0, m - 1, axis=nd - 1)], nd - 1)
    du_t = lax.concatenate([lax.slice_in_dim(dl, 1, m, axis=nd - 1), zero], nd - 1)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                       perturb_singular=perturb_singular)]


def _tridiagonal_solve_batch(axis_size, vals, dims, perturb_singular):
    dl, d, du, b = vals
    if all(dim is batching.not_mapped for dim in dims[:3]):
        # Only b is batched: its batch becomes more right-hand sides of the same systems.
        nd = len(_shape(b))
        b = batching.moveaxis(b, dims[3], nd - 2)  # (..., m, batch, k)
        shape = _shape(b)
        flat = shape_ops.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
        out = tridiagonal_solve_p.bind(dl, d, du, flat, perturb_singular=perturb_singular)
        return shape_ops.reshape(out, shape), nd - 2
    vals = [batching.move_to(v, dim, 0, axis_size) for v, dim in zip(vals, dims)]
    return tridiagonal_solve_p.bind(*vals, perturb_singular=perturb_singular), 0


tridiagonal_solve_p = Primitive("tridiagonal_solve")
_register(tridiagonal_solve_p, _tridiagonal_solve_impl, _tridiagonal_solve_abstract,
          _tridiagonal_solve_jvp)
ad.transpose_rules[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batch_rules[tridiagonal_solve_p] = _tridiagonal_solve_batch


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve A x = b for a batch of tridiagonal matrices A, as lax.linalg.tridiagonal_solve.

    A is given by its diagonals, each [..., m]: `dl[i] = A[i, i-1]` (dl[0] is not read),
    `d[i] = A[i, i]` and `du[i] = A[i, i+1]` (du[m-1] is not read); `b` is [..., m, k]. A
    singular system gives NaNs, unless `perturb_singular` nudges its tiny pivots by about
    eps * max|U| to give a finite answer (inverse iteration needs this).
    """
    return _bind(tridiagonal_solve_p, dl, d, du, b, perturb_singular=bool(perturb_singular))


# ---------------------------------------------------------------- lu_pivots_to_permutation


def _lu_pivots_to_permutation_impl(pivots, permutation_size):
    *batch, k = pivots.shape
    m, count = permutation_size, math.prod(batch)
    perm = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    swaps = pivots.reshape((count, k)).astype(np.int64)
    rows = np.arange(count)
    for i in range(k if m else 0):
        # JAX swaps with perm.at[j]: a negative j counts from the end, the read clamps an
        # out-of-range j and the write drops it.
        j = swaps[:, i]
        j = np.where(j < 0, j + m, j)
        x, y = perm[:, i].copy(), perm[rows, np.clip(j, 0, m - 1)]
        perm[:, i] = y
        ok = (j >= 0) & (j < m)
        perm[rows[ok], j[ok]] = x[ok]
    return perm.reshape(tuple(batch) + (m,))


def _lu_pivots_to_permutation_abstract(pivots, permutation_size):
    def core(shape):
        if not permutation_size >= shape[0]:
            raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                             f"trailing dimension of the pivots. Got pivots size {shape[0]}")

    _check_args("lu_pivots_to_permutation", (pivots,), (1,), core,
                accepted=(lambda dt: dt == np.int32, "int32"))
    return [ShapedArray(pivots.shape[:-1] + (permutation_size,), np.dtype(np.int32))]


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")
impl_rules[lu_pivots_to_permutation_p] = _lu_pivots_to_permutation_impl
abstract_eval_rules[lu_pivots_to_permutation_p] = _lu_pivots_to_permutation_abstract
weak_type_rules[lu_pivots_to_permutation_p] = lambda *args, **params: False
ad.defjvp_zero(lu_pivots_to_permutation_p)  # integer in, integer out: float0 tangents
batch_rules[lu_pivots_to_permutation_p] = lambda *a, **p: _batch_at_front(
    lu_pivots_to_permutation_p, *a, **p)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32, [..., permutation_size]) made by the row swaps `pivots`.

    `pivots` (int32, [..., k] with k <= permutation_size) are LAPACK-style swaps as lu
    returns them: row i was swapped with row pivots[i], for i = 0, 1, ..., k - 1 in turn.
    """
    return _bind(lu_pivots_to_permutation_p, pivots, permutation_size=int(permutation_size))


# ---------------------------------------------------------------- householder_product


def _householder_product_impl(a, taus):
    *batch, m, n = a.shape
    k, count = taus.shape[-1], math.prod(batch)
    dt = _compute_dtype(a.dtype)
    q = lapack_host.org2r(a.astype(dt).reshape((count, m, n)), taus.astype(dt).reshape((count, k)),
                          n)
    return q.reshape(a.shape).astype(a.dtype)


def _householder_product_core(a, taus):
    m, n = a
    if m < n:
        raise ValueError("The first argument to householder_product must have at least as many "
                         f"rows as columns, got shape {a}")
    if taus[0] > min(m, n):
        raise ValueError("The second argument to householder_product must not have more rows "
                         "than the minimum of the first argument's rows and columns.")


def _householder_product_abstract(a, taus):
    _check_args("householder_product", (a, taus), (2, 1), _householder_product_core)
    return [ShapedArray(a.shape, a.dtype)]


householder_product_p = Primitive("householder_product")
_register(householder_product_p, _householder_product_impl, _householder_product_abstract,
          _not_differentiable("householder_product"))


def householder_product(a, taus):
    """The product of elementary Householder reflectors, as lax.linalg.householder_product.

    Column i of `a` ([..., m, n], m >= n) below the diagonal holds reflector v_i (its
    leading 1 is implicit) and `taus` ([..., k], k <= n) its scale factors; the result is the
    first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^H, as LAPACK's orgqr
    (ungqr) forms them from the output of geqrf or gehrd. Not differentiable, as in JAX.
    """
    return _bind(householder_product_p, a, taus)


# ---------------------------------------------------------------- hessenberg


def _hessenberg_impl(a):
    *batch, n, _ = a.shape
    count = math.prod(batch)
    h = a.astype(_compute_dtype(a.dtype)).reshape((count, n, n)).copy()
    taus = lapack_host.gehd2(h)
    return (h.reshape(a.shape).astype(a.dtype),
            taus.reshape(tuple(batch) + (max(n - 1, 0),)).astype(a.dtype))


def _hessenberg_core(shape):
    if shape[0] != shape[-1]:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got "
                         f"shape {shape}")


def _hessenberg_abstract(a):
    _check_args("hessenberg", (a,), (2,), _hessenberg_core)
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]


hessenberg_p = Primitive("hessenberg", multiple_results=True)
_register(hessenberg_p, _hessenberg_impl, _hessenberg_abstract,
          _not_differentiable("hessenberg"))


def hessenberg(a):
    """Reduce a batch of square matrices to upper Hessenberg form, as lax.linalg.hessenberg.

    Returns (a, taus) in LAPACK's packed gehrd form: the upper triangle and first
    subdiagonal of `a` hold the Hessenberg matrix H, the entries below hold Householder
    reflectors, and `taus` ([..., n - 1]) their scale factors, so that
    A = Q H Q^H with Q = householder_product(a[..., 1:, :-1], taus) bordered by a leading 1.
    Not differentiable, as in JAX.
    """
    return tuple(_bind(hessenberg_p, a))


# ---------------------------------------------------------------- geqrf


def _geqrf_impl(a):
    # NumPy's raw QR is LAPACK's geqrf, its packed matrix transposed (Fortran order).
    h, taus = np.linalg.qr(a.astype(_compute_dtype(a.dtype)), mode="raw")
    return np.swapaxes(h, -1, -2).astype(a.dtype), taus.astype(a.dtype)


def _geqrf_abstract(a):
    _check_args("geqrf", (a,), (2,), lambda shape: None)
    m, n = a.shape[-2:]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (min(m, n),), a.dtype)]


geqrf_p = Primitive("geqrf", multiple_results=True)
_register(geqrf_p, _geqrf_impl, _geqrf_abstract, _not_differentiable("geqrf"))


def _geqrf(a):
    """LAPACK's geqrf, as JAX's internal lax.linalg.geqrf (not public in JAX either): R in the
    upper triangle of the result, the Householder vectors below it, and their scale factors
    `taus` ([..., min(m, n)]), a nonzero tau marking a reflection. Not differentiable."""
    return tuple(_bind(geqrf_p, a))


# ---------------------------------------------------------------- geqp3


def _geqp3_impl(a, jpvt, use_magma=None):
    *batch, m, n = a.shape
    count = math.prod(batch)
    h = a.astype(_compute_dtype(a.dtype)).reshape((count, m, n)).copy()
    perms, taus = lapack_host.geqp3(h, jpvt.reshape((count, n)) != 0)
    return (h.reshape(a.shape).astype(a.dtype), (perms + 1).reshape(jpvt.shape).astype(jpvt.dtype),
            taus.reshape(tuple(batch) + (min(m, n),)).astype(a.dtype))


def _geqp3_abstract(a, jpvt, use_magma=None):
    _check_operand("geqp3", a)
    if jpvt.shape != a.shape[:-2] + a.shape[-1:]:
        raise ValueError("geqp3 needs one pivot entry per column of each matrix: got shapes "
                         f"{a.shape} and {jpvt.shape}.")
    if not dtypes.is_int(jpvt.dtype):
        raise TypeError(f"geqp3 does not accept dtype {jpvt.dtype.name} at position 1. Accepted "
                        "dtypes at position 1 are subtypes of integer.")
    m, n = a.shape[-2:]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(jpvt.shape, jpvt.dtype),
            ShapedArray(a.shape[:-2] + (min(m, n),), a.dtype)]


geqp3_p = Primitive("geqp3", multiple_results=True)
_register(geqp3_p, _geqp3_impl, _geqp3_abstract, _not_differentiable("geqp3"))


def _geqp3(a, jpvt, *, use_magma=None):
    """LAPACK's geqp3, Householder QR with column pivoting, as JAX's internal
    lax.linalg.geqp3: R and the reflectors packed as geqrf packs them, the 1-based column
    permutation `jpvt` (a[..., :, jpvt - 1] = Q R; nonzero input entries mark columns fixed
    at the front) and the taus. Not differentiable; `use_magma` is accepted and ignored."""
    return tuple(_bind(geqp3_p, a, jpvt, use_magma=use_magma))


# ---------------------------------------------------------------- ormqr


def _ormqr_impl(a, taus, c, *, left, transpose):
    *batch, m, _ = a.shape
    k, count = taus.shape[-1], math.prod(batch)
    dt = _compute_dtype(a.dtype)
    v_all = a.astype(dt).reshape((count, m, a.shape[-1]))
    tau = taus.astype(dt).reshape((count, k))
    out = lapack_host.orm2r(v_all, tau, c.astype(dt).reshape((count,) + c.shape[-2:]).copy(),
                            left, transpose)
    return out.reshape(c.shape).astype(c.dtype)


def _ormqr_abstract(a, taus, c, *, left, transpose):
    def core(a_shape, taus_shape, c_shape):
        m = a_shape[0]
        if left and c_shape[0] != m:
            raise ValueError("ormqr with left=True expects c to have the same number of rows as "
                             f"the Householder matrix a. Got a shape {a_shape} and c shape "
                             f"{c_shape}.")
        if not left and c_shape[1] != m:
            raise ValueError("ormqr with left=False expects c to have the same number of "
                             "columns as the Householder matrix a has rows. Got a shape "
                             f"{a_shape} and c shape {c_shape}.")
    _check_args("ormqr", (a, taus, c), (2, 1, 2), core)
    return [ShapedArray(c.shape, c.dtype)]


ormqr_p = Primitive("ormqr")
_register(ormqr_p, _ormqr_impl, _ormqr_abstract, _not_differentiable("ormqr"))


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """Multiply `c` by the Q of a packed QR factorization without forming Q, as
    lax.linalg.ormqr: Q @ c (left), c @ Q (not left), with Q^T (Q^H for complex) when
    `transpose`. `a` [..., m, n] holds the Householder vectors below its diagonal and `taus`
    [..., k] their scale factors, as geqrf (or jnp.linalg.qr(mode='raw'), transposed) gives
    them. Not differentiable, as in JAX."""
    return _bind(ormqr_p, a, taus, c, left=bool(left), transpose=bool(transpose))


# ---------------------------------------------------------------- schur
# LAPACK's gees, one matrix at a time in double precision (lapack_host.gees).


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    # Scalar, sequential work: NumPy arrays only (np.asarray refuses device arrays, so a
    # device platform runs this on the host).
    x = np.asarray(x)
    if sort_eig_vals:  # as JAX, whose LAPACK call never asks gees to sort
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise NotImplementedError(KeyError(x.dtype.type), f"Unsupported dtype {x.dtype.name}.")
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    flat = x.reshape((math.prod(x.shape[:-2]),) + x.shape[-2:]).astype(wide)
    t, z = np.empty_like(flat), np.empty_like(flat)
    for b, mat in enumerate(flat):
        converged = False
        if np.isfinite(mat).all():  # the iteration cannot converge on NaNs
            t[b], z[b], converged = lapack_host.gees(mat)
        if not converged:  # gees' info > 0: JAX returns NaNs
            t[b], z[b] = np.nan, np.nan
    out = [t.reshape(x.shape).astype(x.dtype), z.reshape(x.shape).astype(x.dtype)]
    return out if compute_schur_vectors else out[:1]


def _schur_core(shape):
    if shape[0] != shape[1]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {shape}.")


def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    _check_args("schur", (x,), (2,), _schur_core)
    return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


schur_p = Primitive("schur", multiple_results=True)
_register(schur_p, _schur_impl, _schur_abstract, _not_differentiable("schur"))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition A = Q U Q^H of a batch of square matrices, as lax.linalg.schur.

    Returns (U, Q), or (U,) when not `compute_schur_vectors`. U is upper triangular for
    complex input and quasi upper triangular for real input, with a standardized 2x2 block
    (equal diagonal entries, off-diagonal entries of opposite signs) for each complex
    conjugate pair of eigenvalues; Q is unitary. Matrices where the QR iteration fails give
    NaNs. `sort_eig_vals=True` raises NotImplementedError and `select_callable` is unused, as
    in JAX. Not differentiable.
    """
    return tuple(_bind(schur_p, x, compute_schur_vectors=bool(compute_schur_vectors),
                       sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable))


# The general eigendecomposition lives in its own module (it needs lu and lu_solve above).
from gpuarr.lax.eig import EigImplementation, eig, eig_p  # noqa: E402, F401
from gpuarr.lax.linalg_extra import (  # noqa: E402, F401
    SvdAlgorithm,
    _check_svd_algorithm,
    cholesky_update,
    cholesky_update_p,
    qdwh,
    symmetric_product,
    symmetric_product_p,
    tridiagonal,
    tridiagonal_p,
)
