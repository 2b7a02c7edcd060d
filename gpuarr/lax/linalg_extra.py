"""More of JAX's lax.linalg: tridiagonal, symmetric_product, cholesky_update, qdwh and the
SvdAlgorithm enum.

`tridiagonal` reduces a Hermitian matrix to real tridiagonal form in LAPACK's packed sytrd
(hetrd) layout, as JAX's CPU backend returns it; its NumPy implementation follows LAPACK's
unblocked sytd2/hetd2 (the blocked routine LAPACK uses for larger matrices agrees to
rounding). `symmetric_product` is alpha A A^T + beta C and `cholesky_update` the rank-one
update of an upper Cholesky factor by Givens rotations, both computed as JAX's CPU lowering
computes them. None of the three has a JVP, as in JAX; `cholesky_update` has no batching rule
either (JAX's takes exactly one matrix). `qdwh` is JAX's QR-based dynamically weighted Halley
iteration for the polar decomposition, written with lax operations so that it traces.
"""
from __future__ import annotations

import enum
import functools
import math

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, get_aval
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import conversions, lapack_host, lax, shape_ops
from gpuarr.lax.control_flow import fori_loop, while_loop
from gpuarr.lax.linalg import (
    _H,
    _T,
    _bind,
    _check_args,
    _compute_dtype,
    _conj,
    _matmul,
    _not_differentiable,
    _real_dtype,
    _register,
    _tril,
    cholesky,
    qr,
    triangular_solve,
)
from gpuarr.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice_in_dim,
    dynamic_update_slice_in_dim,
    index_in_dim,
)


class SvdAlgorithm(enum.Enum):
    """Algorithm of the singular value decomposition (lax.linalg.svd's `algorithm`)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _check_svd_algorithm(algorithm):
    """None or an SvdAlgorithm member (JAX's own members are read by their value). Every
    algorithm runs the same LAPACK routine on the host: the results of the algorithms agree
    to rounding, so the choice does not change what svd returns."""
    if algorithm is None:
        return
    value = algorithm.value if isinstance(algorithm, enum.Enum) else None
    if value not in {a.value for a in SvdAlgorithm}:
        raise NotImplementedError(f"Unsupported SVD algorithm: {algorithm!r}")


# `_check_args`'s accepted dtypes for the primitives that take real floating types only.
_FLOATING = (dtypes.is_float, "floating")


# ---------------------------------------------------------------- tridiagonal


# LAPACK's block size for sytrd/hetrd: larger matrices take the blocked path.
_HETRD_BLOCK = 32


def _hermitian_from_triangle(a, lower):
    """The full Hermitian matrices that the `lower` (or upper) triangle of `a` stands for; the
    diagonal's imaginary part is dropped, as hetrd does."""
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    full = tri + np.conj(np.swapaxes(tri, -1, -2))
    idx = np.arange(a.shape[-1])
    full[..., idx, idx] = a[..., idx, idx].real
    return full


def _rank2_update(s, tau, v):
    """sytd2's step on the trailing block s (count, k, k): with x = tau s v and
    w = x - (tau / 2) (x^H v) v, s <- s - v w^H - w v^H (in place)."""
    x = tau[:, None] * np.einsum("crj,cj->cr", s, v)
    alpha = -0.5 * tau * np.einsum("cr,cr->c", x.conj(), v)
    w = x + alpha[:, None] * v
    s -= v[:, :, None] * w.conj()[:, None, :] + w[:, :, None] * v.conj()[:, None, :]


def _tridiagonal_impl(a, lower):
    *batch, n, _ = a.shape
    count = math.prod(batch)
    h = a.astype(_compute_dtype(a.dtype)).reshape((count, n, n))
    work = _hermitian_from_triangle(h, lower)
    packed = h.copy()
    e = np.zeros((count, n - 1), _real_dtype(h.dtype))
    taus = np.zeros((count, n - 1), h.dtype)
    one = np.ones((count, 1), h.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if lower:
            # Reflector i zeroes column i below the subdiagonal; its tail is stored there.
            for i in range(n - 1):
                beta, tau, v_tail = lapack_host.larfg(work[:, i + 1, i], work[:, i + 2:, i])
                _rank2_update(work[:, i + 1:, i + 1:], tau,
                              np.concatenate([one, v_tail], axis=1))
                packed[:, i + 2:, i] = v_tail
                e[:, i], taus[:, i] = beta.real, tau
        else:
            # From the last column back: reflector i zeroes column i + 1 above the
            # superdiagonal; its 1 sits at row i and its tail above it is stored there.
            for i in reversed(range(n - 1)):
                beta, tau, v_tail = lapack_host.larfg(work[:, i, i + 1], work[:, :i, i + 1])
                _rank2_update(work[:, :i + 1, :i + 1], tau,
                              np.concatenate([v_tail, one], axis=1))
                packed[:, :i, i + 1] = v_tail
                e[:, i], taus[:, i] = beta.real, tau
    idx = np.arange(n)
    d = work[:, idx, idx].real
    packed[:, idx, idx] = d
    off = (idx[1:], idx[:-1]) if lower else (idx[:-1], idx[1:])
    packed[:, off[0], off[1]] = e
    if not lower and n > _HETRD_BLOCK and np.iscomplexobj(h):
        # hetrd's blocked path (taken above its block size) never reads the last diagonal
        # entry of the upper form, so that entry keeps its imaginary part.
        packed[:, n - 1, n - 1] = h[:, n - 1, n - 1]
    real = _real_dtype(a.dtype)
    batch = tuple(batch)
    return (packed.reshape(a.shape).astype(a.dtype), d.reshape(batch + (n,)).astype(real),
            e.reshape(batch + (n - 1,)).astype(real),
            taus.reshape(batch + (n - 1,)).astype(a.dtype))


def _tridiagonal_core(shape):
    if shape[0] != shape[1] or shape[1] == 0:
        raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {shape}.")


def _tridiagonal_abstract(a, lower):
    _check_args("tridiagonal", (a,), (2,), _tridiagonal_core)
    batch, n = a.shape[:-2], a.shape[-1]
    real = _real_dtype(a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (n,), real),
            ShapedArray(batch + (n - 1,), real), ShapedArray(batch + (n - 1,), a.dtype)]


tridiagonal_p = Primitive("tridiagonal", multiple_results=True)
_register(tridiagonal_p, _tridiagonal_impl, _tridiagonal_abstract,
          _not_differentiable("tridiagonal"))


def tridiagonal(a, *, lower: bool = True):
    """Reduce a batch of symmetric (Hermitian) matrices to tridiagonal form, as
    lax.linalg.tridiagonal: returns [a, d, e, taus] in LAPACK's sytrd/hetrd layout.

    Only the triangle named by `lower` is read. With `lower`, the diagonal and first
    subdiagonal of the returned `a` hold the (real) tridiagonal matrix T, the entries below
    hold the Householder reflectors and the upper triangle is the input's; `d` is T's
    diagonal, `e` its off-diagonal (both real) and `taus` the reflectors' scale factors, so
    that A = Q T Q^H with Q = householder_product(a[..., 1:, :-1], taus) bordered by a
    leading 1. With `lower=False` the roles of the triangles swap. Not differentiable, as in
    JAX.
    """
    return list(_bind(tridiagonal_p, a, lower=bool(lower)))


# ---------------------------------------------------------------- symmetric_product


def _symmetric_product_impl(a, c, alpha, beta):
    dt = _compute_dtype(c.dtype)
    a = a.astype(dt)
    # Both triangles are computed, as JAX's CPU lowering does (cuBLAS's syrk writes only the
    # lower one; symmetric_product documents the lower triangle as the valid one).
    prod = np.matmul(a, np.swapaxes(a, -1, -2))
    out = np.asarray(alpha, dt) * prod + np.asarray(beta, dt) * c.astype(dt)
    return out.astype(c.dtype)


def _symmetric_product_core(a, c):
    if a[0] != c[1] or c[0] != c[1]:
        raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a "
                         f"square matrix of shape (n, n). Got shapes {a} and {c}.")


def _symmetric_product_abstract(a, c, alpha, beta):
    _check_args("symmetric_product", (a, c), (2, 2), _symmetric_product_core,
                _FLOATING)
    return [ShapedArray(c.shape, c.dtype)]


symmetric_product_p = Primitive("symmetric_product")
_register(symmetric_product_p, _symmetric_product_impl, _symmetric_product_abstract,
          _not_differentiable("symmetric_product"))


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1., beta: float = 0.,
                      symmetrize_output: bool = False):
    """alpha A A^T + beta C for a batch of matrices A ([..., m, n]) and C ([..., m, m]), as
    lax.linalg.symmetric_product.

    Only the lower triangle of the result is guaranteed (on GPUs the library routine writes
    no other); with `symmetrize_output` the upper triangle is replaced by the transpose of
    the lower one, so the whole matrix is valid. Real floating types only; not
    differentiable, as in JAX.
    """
    result = _bind(symmetric_product_p, a_matrix, c_matrix, alpha=alpha, beta=beta)
    if symmetrize_output:
        result = lax.add(_tril(result), _T(_tril(result, -1)))
    return result


# ---------------------------------------------------------------- cholesky_update


def _givens(x, y):
    """JAX's drotg: (c, s) with c x - s y = r >= 0 and s x + c y = 0, scaled against
    overflow; (1, 0) when y is zero."""
    if y == 0:
        return x.dtype.type(1), x.dtype.type(0)
    denominator = max(abs(x), abs(y))
    x, y = x / denominator, y / denominator
    rh = 1 / np.sqrt(x * x + y * y)
    return x * rh, -y * rh


def _cholesky_update_impl(r, w):
    dt = _compute_dtype(r.dtype)
    r_new, z = r.astype(dt), w.astype(dt)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Row k of R and the running vector z are rotated together so that z[k] vanishes; the
        # whole row is rotated (as JAX does), so entries below R's diagonal take part.
        for k in range(r.shape[0]):
            c, s = _givens(r_new[k, k], z[k])
            row = r_new[k]
            r_new[k], z = c * row - s * z, c * z + s * row
    return r_new.astype(r.dtype)


def _cholesky_update_core(r, w):
    if r[0] != r[1] or w[0] != r[1]:
        raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                         f"vector of the same size as input. Got shapes {r} and {w} instead")


def _cholesky_update_abstract(r, w):
    for i, (aval, rank) in enumerate(((r, 2), (w, 1))):
        if aval.ndim < rank:
            raise TypeError(f"Input {i} to cholesky_update must have rank at least {rank}, but "
                            f"got shape={aval.shape}")
        if aval.ndim != rank:
            raise TypeError(f"Input {i} to cholesky_update must have a rank of exactly {rank}, "
                            f"but got shape={aval.shape}")
    _check_args("cholesky_update", (r, w), (2, 1), _cholesky_update_core,
                _FLOATING)
    return [ShapedArray(r.shape, r.dtype)]


def _cholesky_update_no_batch(axis_size, vals, dims, **params):
    raise NotImplementedError("Batching rule for 'cholesky_update' not implemented")


cholesky_update_p = Primitive("cholesky_update")
_register(cholesky_update_p, _cholesky_update_impl, _cholesky_update_abstract,
          _not_differentiable("cholesky_update"))
batch_rules[cholesky_update_p] = _cholesky_update_no_batch


def cholesky_update(r_matrix, w_vector):
    """Rank-one update of a Cholesky factor, as lax.linalg.cholesky_update: given upper
    triangular R with A = R^T R and a vector w, the upper triangular factor of A + w w^T, in
    O(n^2) by Givens rotations.

    One matrix at a time (no batch axes, no vmap) and real floating types only; not
    differentiable, as in JAX.
    """
    return _bind(cholesky_update_p, r_matrix, w_vector)


# ---------------------------------------------------------------- qdwh


def _mask_to(x, dims, alternative=0):
    """x where every index is below the (possibly traced) sizes `dims`, `alternative` (a
    scalar or an array like x) elsewhere. A None size, or a static one that covers the whole
    axis, masks nothing."""
    shape = get_aval(x).shape
    mask = None
    for axis, d in enumerate(dims):
        if d is None or (isinstance(d, (int, np.integer)) and d >= shape[axis]):
            continue
        inside = lax.lt(shape_ops.broadcasted_iota(np.int32, shape, axis),
                        conversions.convert_element_type(d, np.int32))
        mask = inside if mask is None else lax.bitwise_and(mask, inside)
    if mask is None:
        return x
    other = shape_ops.full_like(x, alternative) if np.ndim(alternative) == 0 else alternative
    return lax.select(mask, x, other)


def _use_qr(u, m, n, params):
    """One QDWH step through a QR factorization of [sqrt(c) u; I] (for large c)."""
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    big_m, big_n = get_aval(u).shape
    top = lax.mul(u, sqrt_c)
    eye = np.eye(big_n, dtype=get_aval(u).dtype)
    if isinstance(m, (int, np.integer)) and m == big_m:
        y = lax.concatenate([top, eye], 0)
    else:  # the identity goes right below the true rows
        padded = lax.pad(top, lax._const(top, 0), ((0, big_n, 0), (0, 0, 0)))
        y = dynamic_update_slice_in_dim(padded, eye, m, 0)
    q, _ = qr(y, full_matrices=False)
    q1 = _mask_to(lax.slice(q, (0, 0), (big_m, big_n)), (m, n))
    q2 = _H(_mask_to(dynamic_slice_in_dim(q, m, big_n, axis=0), (n, n)))
    return lax.add(lax.mul(u, e), lax.mul(_matmul(q1, q2), a_minus_e_by_sqrt_c))


def _use_cholesky(u, m, n, params):
    """One QDWH step through a Cholesky factorization of c u^H u + I."""
    a_minus_e, c, e = params
    eye = np.eye(get_aval(u).shape[1], dtype=get_aval(u).dtype)
    x = lax.add(lax.mul(_matmul(_H(u), u), c), eye)
    # The padded corner gets the identity, so the factorization does not fail there.
    x = _mask_to(x, (n, n), eye)
    y = cholesky(x, symmetrize_input=False)  # lower triangular
    z = _conj(triangular_solve(y, _T(u), left_side=True, lower=True, conjugate_a=True))
    z = _H(triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                            conjugate_a=True))
    return lax.add(lax.mul(u, e), lax.mul(z, a_minus_e))


def _frobenius(x):
    x = lax.abs(x)
    return lax.sqrt(shape_ops.reduce_sum(lax.mul(x, x), (0, 1)))


def _qdwh_coefficients(eps, max_iterations):
    """The static weights (a, b, c) of each step, from the lower bound l on the smallest
    singular value (Nakatsukasa, Bai and Gygi, 2010), split as JAX splits them: steps with
    c > 100 use QR, the rest Cholesky."""
    chol_cutoff = 100
    tol_l = 10.0 * eps / 2.0
    l, k = eps, 0
    qr_coefs, chol_coefs = [], []
    while l + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        if c > chol_cutoff:
            qr_coefs.append(((a - b / c) / c ** (1 / 2), c ** (1 / 2), b / c))
        else:
            chol_coefs.append((a - b / c, c, b / c))
    return qr_coefs, chol_coefs


def _qdwh(x, dynamic_shape, *, max_iterations, eps):
    (big_m, big_n), dt = get_aval(x).shape, get_aval(x).dtype
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask_to(x, (m, n))
    else:
        m, n = big_m, big_n
    real = _real_dtype(dt)
    if eps is None:
        eps = float(dtypes.finfo(real).eps)
    # alpha = sqrt(|x|_1 |x|_inf) >= |x|_2 scales the singular values into (0, 1].
    ax = lax.abs(x)
    one_norm = lax.reduce_max(shape_ops.reduce_sum(ax, (0,)), (0,))
    inf_norm = lax.reduce_max(shape_ops.reduce_sum(ax, (1,)), (0,))
    alpha_inverse = lax.mul(lax.rsqrt(one_norm), lax.rsqrt(inf_norm))
    alpha_inverse = lax.select(lax.eq(one_norm, lax._const(one_norm, 0)),
                               shape_ops.full_like(alpha_inverse, 1), alpha_inverse)
    u = lax.mul(x, conversions.convert_element_type(alpha_inverse, dt))
    tol_norm = np.asarray(np.cbrt(10.0 * eps / 2.0), real)[()]
    qr_coefs, chol_coefs = _qdwh_coefficients(eps, max_iterations)

    def step(k, u, update, coefs):
        if coefs is None:  # as l -> 1 the weights tend to (3, 1, 3): Halley's method
            params = (3 - 1 / 3, 3, 1 / 3)
        else:
            row = dynamic_index_in_dim(coefs, k, keepdims=False)
            params = tuple(index_in_dim(row, j, keepdims=False) for j in range(3))
        return update(u, m, n, params)

    def iterate(u, coefs, update):
        coefs = np.asarray(coefs, np.float64).astype(dt)

        def body(k, state):
            u_prev, _ = state
            u_new = step(k, u_prev, update, coefs)
            return u_new, lax.gt(_frobenius(lax.sub(u_new, u_prev)), tol_norm)

        return fori_loop(0, len(coefs), body, (u, np.bool_(True)))

    # The QR steps do not test convergence (JAX's first loop ignores its flag).
    if qr_coefs:
        u, _ = iterate(u, qr_coefs, _use_qr)
    is_not_converged = np.bool_(True)
    if chol_coefs:
        u, is_not_converged = iterate(u, chol_coefs, _use_cholesky)

    # If l has converged but u has not, continue with Halley's method until it does.
    def cond_fun(state):
        k, _, not_converged = state
        limit = np.asarray(max_iterations, get_aval(k).dtype)
        return lax.bitwise_and(not_converged, lax.lt(k, limit))

    def body_fun(state):
        k, u_prev, _ = state
        u_new = step(k, u_prev, _use_cholesky, None)
        not_converged = lax.gt(_frobenius(lax.sub(u_new, u_prev)), tol_norm)
        return lax.add(k, np.asarray(1, get_aval(k).dtype)), u_new, not_converged

    k0 = np.asarray(len(qr_coefs) + len(chol_coefs), dtypes.default_int_dtype())
    num_iters, u, is_not_converged = while_loop(cond_fun, body_fun,
                                                (k0, u, conversions.convert_element_type(
                                                    is_not_converged, np.bool_)))

    # A Newton-Schulz step refines the orthogonality of u.
    u = lax.sub(lax.mul(u, 1.5), lax.mul(_matmul(u, _matmul(_H(u), u)), 0.5))
    h = _matmul(_H(u), x)
    h = lax.div(lax.add(h, _H(h)), lax._const(h, 2))
    return u, h, num_iters, lax.bitwise_not(is_not_converged)


# gpuarr.jit_api.jit, set by that module at import (the API layer sits above lax).
jit = None


@functools.cache
def _qdwh_compiled():
    """`_qdwh` under jit (as JAX's qdwh is), built on first use."""
    return jit(_qdwh, static_argnames=("max_iterations", "eps"))


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
    """Polar decomposition x = u h of an M x N matrix (M >= N) by the QR-based dynamically
    weighted Halley iteration, as lax.linalg.qdwh: returns (u, h, num_iters, is_converged).

    `u` has orthonormal columns and `h` is Hermitian positive semidefinite; the iteration
    stops once successive iterates differ by less than (5 eps)^(1/3) (eps defaults to the
    machine epsilon of x's type) or after `max_iterations` (default 10) steps, and
    `is_converged` says which. `dynamic_shape` (m, n) is the true size of an `x` padded up to
    M x N. `is_hermitian` is accepted and unused, as in JAX.
    """
    bool(is_hermitian)  # must be static (a concrete value), as in JAX
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    shape = np.shape(x) if not hasattr(x, "shape") else x.shape
    big_m, big_n = shape
    if big_m < big_n:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    eps = None if eps is None else float(eps)
    return tuple(_qdwh_compiled()(x, dynamic_shape, max_iterations=max_iterations, eps=eps))
