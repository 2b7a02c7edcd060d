"""The Schur decomposition and what jax.scipy.linalg builds on it: schur, rsf2csf, sqrtm,
funm and solve_sylvester.

lax.linalg.schur runs on the host. The triangular recurrences that follow it (Bjorck and
Hammarling's square root, Parlett's recurrence for funm) are filled in one superdiagonal at a
time: every entry of superdiagonal p depends only on the diagonals below it, so one matrix
product per superdiagonal computes all their sums at once, under jit as eagerly.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import dot_precision as lax_dot_precision
from gpuarr.lax import linalg as lax_linalg
from gpuarr.lax import slicing as lax_slicing
from gpuarr.numpy import creation, dtype_functions, functional, manipulation, products, reductions, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.scipy.linalg._decomp import _inexact, _mH, _shape

_HIGHEST = lax_dot_precision.Precision.HIGHEST


def _superdiagonal_offsets(n):
    """col - row for an n x n matrix: entry (i, j) lies on superdiagonal j - i."""
    return np.subtract.outer(np.arange(n), np.arange(n)).T


def schur(a, output: str = "real"):
    """Schur decomposition a = Z T Z^H of a batch of square matrices: (T, Z) with Z unitary
    and T upper triangular (output 'complex', which computes in the complex dtype) or quasi
    upper triangular with 2x2 blocks for complex conjugate eigenvalue pairs (output 'real'
    on real input). Not differentiable."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
    a = creation.asarray(a)
    if output == "complex":
        a = a.astype(dtypes.to_complex_dtype(a.dtype))
    return lax_linalg.schur(a)


def _rsf2csf_2d(t, z):
    dt = dtypes.to_complex_dtype(dtype_functions.result_type(t, z))
    t, z = t.astype(dt), z.astype(dt)
    n = _shape(t)[0]
    if n == 1:
        return t, z
    eps = np.finfo(dt).eps

    def rotate(m, t, z):
        # The Givens rotation that makes the 2x2 block at m - 1 upper triangular, applied to
        # rows m - 1, m (from column m - 1 on), columns m - 1, m (down to row m) and Z.
        mu = jnp_linalg.eigvals(lax_slicing.dynamic_slice(t, (m - 1, m - 1), (2, 2))) - t[m, m]
        r = jnp_linalg.norm(manipulation.stack([mu[0], t[m, m - 1]])).astype(dt)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = manipulation.stack([manipulation.stack([ufuncs.conj(c), s]), manipulation.stack([-s, c])])
        rows = lax_slicing.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
        rows = ufuncs.where(creation.arange(n) >= m - 1, g @ rows, rows)
        t = lax_slicing.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
        cols = lax_slicing.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
        cols = ufuncs.where(creation.arange(n)[:, None] < m + 1, cols @ _mH(g), cols)
        t = lax_slicing.dynamic_update_slice_in_dim(t, cols, m - 1, axis=1)
        zcols = lax_slicing.dynamic_slice_in_dim(z, m - 1, 2, axis=1)
        return t, lax_slicing.dynamic_update_slice_in_dim(z, zcols @ _mH(g), m - 1, axis=1)

    def step(i, tz):
        t, z = tz
        m = n - i  # from the bottom up
        block = ufuncs.abs(t[m, m - 1]) > eps * (ufuncs.abs(t[m - 1, m - 1]) + ufuncs.abs(t[m, m]))
        t, z = lax_control_flow.cond(block, rotate, lambda m, t, z: (t, z), m, t, z)
        return t.at[m, m - 1].set(0), z

    return lax_control_flow.fori_loop(1, n, step, (t, z))


def rsf2csf(T, Z, check_finite: bool = True):
    """Convert a real Schur form (T, Z) into the complex one: each 2x2 block of T is made
    upper triangular by a complex Givens rotation, applied to Z too. Batch axes of T and Z
    broadcast; `check_finite` is ignored."""
    del check_finite
    T, Z = creation.asarray(T), creation.asarray(Z)
    st, sz = _shape(T), _shape(Z)
    if len(st) < 2 or st[-1] != st[-2]:
        raise ValueError("Input 'T' must be square.")
    if len(sz) < 2 or sz[-1] != sz[-2]:
        raise ValueError("Input 'Z' must be square.")
    if st[-1] != sz[-1]:
        raise ValueError(f"Input array shapes must match: Z: {sz} vs. T: {st}")
    return functional.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def _sqrtm_triu(t):
    """The upper triangular U with U @ U = t (Bjorck and Hammarling 1983): U_ii = sqrt(t_ii),
    U_ij = (t_ij - sum_{i<k<j} U_ik U_kj) / (U_ii + U_jj), and 0 where the sum equals t_ij."""
    d = ufuncs.sqrt(creation.diag(t))
    n = _shape(d)[0]
    offsets = _superdiagonal_offsets(n)

    def fill(p, u):
        s = products.matmul(u, u, precision=_HIGHEST)  # superdiagonal p of u is still zero
        on, solved = offsets == p, t == s
        val = ufuncs.where(solved, 0, (t - s) / ufuncs.where(on & ~solved, d[:, None] + d[None, :], 1))
        return ufuncs.where(on, val, u)

    return lax_control_flow.fori_loop(1, n, fill, creation.diag(d))


def sqrtm(A, blocksize: int = 1):
    """Matrix square root of a square matrix by the complex Schur method (Bjorck and
    Hammarling 1983), always complex. Only `blocksize=1` is supported, as in JAX."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    t, z = schur(A, output="complex")
    u = _sqrtm_triu(t)
    return products.matmul(products.matmul(z, u, precision=_HIGHEST), ufuncs.conj(z.T), precision=_HIGHEST)


def _parlett(f, t):
    """Algorithm 11.1.1 of Golub and Van Loan: f(T) for upper triangular T from its diagonal
    f (f_ij (T_jj - T_ii) = T_ij (f_jj - f_ii) + sum_{i<k<j} (T_ik f_kj - f_ik T_kj)), and
    the smallest |T_jj - T_ii| met, which bounds the error."""
    n = _shape(t)[0]
    d = creation.diag(t)
    den = d[None, :] - d[:, None]
    offsets = _superdiagonal_offsets(n)

    def fill(p, carry):
        f, minden = carry
        on = offsets == p
        s = products.matmul(t, f) - products.matmul(f, t)  # superdiagonal p of f is still zero
        f = ufuncs.where(on, ufuncs.where(den != 0, s / ufuncs.where(den != 0, den, 1), s), f)
        return f, ufuncs.minimum(minden, reductions.min(ufuncs.where(on, ufuncs.abs(den), np.inf)))

    return lax_control_flow.fori_loop(1, n, fill, (f, ufuncs.abs(t[0, 0])))


def funm(A, func, disp: bool = True):
    """The matrix function of a square matrix defined by the scalar function `func`: `func`
    on the eigenvalues of the complex Schur form, the rest by Parlett's recurrence; always
    complex. With `disp=False` also returns JAX's estimate of the relative error."""
    A = creation.asarray(A)
    shape = _shape(A)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError("expected square array_like input")
    t, z = rsf2csf(*schur(A))
    f = creation.diag(func(creation.diag(t))).astype(t.dtype)
    f, minden = _parlett(f, t)
    f = z @ f @ ufuncs.conj(z.T)
    if disp:
        return f
    # As JAX: single precision's epsilon for complex64, double precision's otherwise.
    tol = np.finfo(np.float32 if f.dtype == np.complex64 else np.float64).eps
    minden = ufuncs.where(minden == 0.0, tol, minden)
    err = ufuncs.where(reductions.any(ufuncs.isinf(f)), np.inf, ufuncs.minimum(1, ufuncs.maximum(
        tol, (tol / minden) * jnp_linalg.norm(creation.triu(t, 1), 1))))
    return f, err


def _sylvester_triangular(r, s, f):
    """Y with r Y + Y s = f, r upper and s lower triangular, a column at a time from the
    last (Bartels and Stewart): (r + s_jj I) y_j = f_j - sum_{k>j} y_k s_kj."""
    m, n = _shape(f)
    eye = creation.eye(m, dtype=f.dtype)

    def column(k, y):
        j = n - 1 - k
        rhs = f[:, j] - y @ s[:, j]  # columns j and left of y are still zero
        yj = lax_linalg.triangular_solve(r + s[j, j] * eye, rhs[:, None], left_side=True,
                                         lower=False)
        return y.at[:, j].set(yj[:, 0])

    return lax_control_flow.fori_loop(0, n, column, creation.zeros_like(f))


def _solve_sylvester_2d(a, b, c, *, method, tol):
    if method == "schur":
        r, u = schur(a, output="complex")
        s, v = schur(_mH(b), output="complex")
        f = _mH(u) @ c.astype(r.dtype) @ v
        x = u @ _sylvester_triangular(r, _mH(s), f) @ _mH(v)
    elif method == "eigen":
        ra, ua = jnp_linalg.eig(a)
        rb, ub = jnp_linalg.eig(b)
        y = jnp_linalg.solve(ua, c.astype(ra.dtype) @ ub) / (ra[:, None] + rb[None, :])
        x = ua @ y @ jnp_linalg.inv(ub)
    else:
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         "\"schur\" or \"eigen\".")
    if not dtypes.is_complex(c.dtype):
        x = x.real
    # Eigenvalue sums near zero make the equation (nearly) singular: NaNs, as in JAX.
    near_singular = reductions.any(
        ufuncs.abs(jnp_linalg.eigvals(a)[:, None] + jnp_linalg.eigvals(b)[None, :]) < tol)
    return ufuncs.where(near_singular, creation.full_like(x, np.nan), x)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C, for batches of square A [..., m, m], B [..., n, n] and
    C [..., m, n] whose batch axes broadcast. 'schur' (Bartels and Stewart, on the complex
    Schur forms of A and B^H) or 'eigen' (eigendecompositions, faster, less accurate for
    ill-conditioned eigenvectors); X is NaN where some eigenvalue sum of A and B has modulus
    below `tol`."""
    A, B, C = _inexact(A, B, C)
    m, n = _shape(C)[-2:]
    if _shape(A)[-2:] != (m, m) or _shape(B)[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {_shape(A)}\n"
                         f"B: {_shape(B)}\nC: {_shape(C)}")
    return functional.vectorize(partial(_solve_sylvester_2d, method=method, tol=tol),
                                signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)
