"""General (non-symmetric) eigendecomposition: `lax.linalg.eig`, with JAX's rules.

`eig` returns complex eigenvalues `w` and, on request, left eigenvectors `vl` (vl^H A = w vl^H)
and right eigenvectors `vr` (A vr = vr w), normalised as LAPACK's geev does (unit 2-norm,
largest component real). NumPy computes right eigenvectors only; the left ones are the right
eigenvectors of A^H, paired with `w` by eigenvalue, each turned so that its largest component
is real and positive. Matrices whose decomposition fails give NaNs, as in JAX.

Derivatives follow JAX's `eig_jvp_rule`: eigenvalues alone use eq. 4.60 of arXiv:1701.00392;
eigenvectors are differentiable only with `enable_eigvec_derivs=True` (nondegenerate
perturbation theory under geev's normalisation), and raise NotImplementedError otherwise.
"""
from __future__ import annotations

import enum
import warnings

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, get_aval
from gpuarr.lax import conversions, lax, shape_ops
from gpuarr.lax.extras import complex as _complex
from gpuarr.lax.extras import conj, imag, real
from gpuarr.lax.linalg import (
    _T,
    _bind,
    _check_operand,
    _compute_dtype,
    _extract_diagonal,
    _matmul,
    _nan_on_failure,
    _register,
    lu,
    lu_solve,
)


class EigImplementation(enum.Enum):
    """Which library computes the decomposition. On the cuda platform None and CUSOLVER run
    cuSOLVER's geev (right eigenvectors only; left ones, MAGMA and LAPACK use the host's LAPACK);
    elsewhere every choice runs NumPy's LAPACK on the host."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


# ---------------------------------------------------------------- NumPy implementation


def _match(dist):
    """For each row j of `dist` [..., n, n], a distinct column k, taken greedily by distance."""
    n = dist.shape[-1]
    used = np.zeros(dist.shape[:-2] + (n,), bool)
    order = np.zeros(dist.shape[:-2] + (n,), np.intp)
    for j in range(n):
        k = np.argmin(np.where(used, np.inf, np.nan_to_num(dist[..., j, :], nan=np.inf)), -1)
        order[..., j] = k
        np.put_along_axis(used, k[..., None], True, axis=-1)
    return order


def _left_eigenvectors(mats, w):
    """Left eigenvectors of `mats` for eigenvalues `w`: the right eigenvectors of mats^H
    (eigenvalues conj(w)), paired with w by nearest eigenvalue."""
    wl, vl = np.linalg.eig(np.conj(np.swapaxes(mats, -1, -2)))
    order = _match(np.abs(np.conj(wl)[..., None, :] - w[..., :, None]))
    vl = np.take_along_axis(vl.astype(np.result_type(vl, np.complex64)), order[..., None, :], -1)
    # Make each largest component real and positive (zgeev's choice): for real inputs dgeev's
    # sign of a complex pair can flip under a small perturbation, which derivatives can't follow.
    big = np.take_along_axis(vl, np.argmax(np.abs(vl), axis=-2)[..., None, :], axis=-2)
    mag = np.abs(big)
    return vl * np.where(mag == 0, 1, np.conj(big) / np.where(mag == 0, 1, mag))


def _eig_impl(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs,
              implementation):
    out_dtype = dtypes.to_complex_dtype(x.dtype)
    c = x.astype(_compute_dtype(x.dtype))
    n = x.shape[-1]

    def decompose(mats):
        w, vr = np.linalg.eig(mats)
        parts = [vr.astype(out_dtype), w[..., None, :].astype(out_dtype)]
        if compute_left_eigenvectors:
            parts.append(_left_eigenvectors(mats, w).astype(out_dtype))
        return np.concatenate(parts, axis=-2)

    rows = 2 * n + 1 if compute_left_eigenvectors else n + 1
    out = _nan_on_failure(decompose, c, lambda mat: (rows, n)).astype(out_dtype)
    outs = [np.ascontiguousarray(out[..., n, :])]
    if compute_left_eigenvectors:
        outs.append(np.ascontiguousarray(out[..., n + 1:, :]))
    if compute_right_eigenvectors:
        outs.append(np.ascontiguousarray(out[..., :n, :]))
    return outs


def _eig_abstract(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs,
                  implementation):
    _check_operand("eig", x, square=True,
                   square_msg=f"The input to eig must be a square matrix. Got shape "
                              f"{x.shape[-2:]}.")
    dt = dtypes.to_complex_dtype(x.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray(x.shape[:-1], dt)] + [ShapedArray(x.shape, dt)] * count


def _solve(a, b):
    """a^-1 b for batches of square (complex) matrices."""
    lu_, _, perm = lu(a)
    return lu_solve(lu_, perm, b)


def _eig_vec_jvp(w, v, da):
    """(dw, dv) for eigenpairs (w, v) of A under the tangent dA (Giles, NA-08-01, sec. 3.1).

    The eigenvalue equation fixes each v_j only up to a complex scalar; geev picks unit norm
    and a real largest-magnitude component, so dv_j = u_j + c_j v_j with
    c_j = -Re(v_j^H u_j) - i Im(u_{k j}) / v_{k j}, k = argmax_i |v_ij|."""
    shape = get_aval(v).shape
    dt = get_aval(v).dtype
    nd = len(shape)
    eye = np.broadcast_to(np.eye(shape[-1], dtype=dt), shape)  # over any batch axes
    wrow = shape_ops.reshape(w, shape[:-2] + (1, shape[-1]))
    wcol = shape_ops.reshape(w, shape[:-2] + (shape[-1], 1))
    f = lax.sub(lax.div(np.asarray(1, dt)[()], lax.add(lax.sub(wrow, wcol), eye)), eye)
    p = _matmul(_solve(v, da), v)
    dw = _extract_diagonal(p)
    u = _matmul(v, lax.mul(f, p))
    re, im = real(v), imag(v)
    k = lax.argmax(lax.add(lax.mul(re, re), lax.mul(im, im)), nd - 2, np.int32)
    rows = shape_ops.broadcasted_iota(np.int32, shape, nd - 2)
    mask = conversions.convert_element_type(lax.eq(rows, shape_ops.broadcast_in_dim(
        k, shape, tuple(i for i in range(nd) if i != nd - 2))), dt)
    pick_u = shape_ops.reduce_sum(lax.mul(mask, u), (nd - 2,))
    pick_v = real(shape_ops.reduce_sum(lax.mul(mask, v), (nd - 2,)))
    c = _complex(lax.neg(real(shape_ops.reduce_sum(lax.mul(conj(v), u), (nd - 2,)))),
                 lax.neg(lax.div(imag(pick_u), pick_v)))
    return dw, lax.add(u, lax.mul(v, shape_ops.reshape(c, shape[:-2] + (1, shape[-1]))))


def _eig_jvp(primals, tangents, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
    (a,), (da,) = primals, tangents
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
            "input that gpuarr cannot check (see the enable_eigvec_derivs argument to "
            "lax.linalg.eig). Pass enable_eigvec_derivs=True to lax.linalg.eig to opt in, or "
            "differentiate the eigenvalues alone (jnp.linalg.eigvals).")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True, enable_eigvec_derivs=enable_eigvec_derivs,
                      implementation=implementation)
    w, vr = outs[0], outs[-1]
    da = conversions.convert_element_type(da, get_aval(vr).dtype)
    if not vectors:
        nd = len(get_aval(vr).shape)
        return [w], [shape_ops.reduce_sum(lax.mul(_solve(vr, da), _T(vr)), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(conj(w), outs[1], conj(_T(da)))
        primal_out.append(outs[1])
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


eig_p = Primitive("eig", multiple_results=True)
_register(eig_p, _eig_impl, _eig_abstract, _eig_jvp)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of a batch of general square matrices, as lax.linalg.eig.

    Returns the list `[w, vl, vr]`, leaving out `vl` (left eigenvectors, vl^H A = w vl^H)
    and `vr` (right eigenvectors, A vr = vr w) when not requested; all outputs are complex
    (complex64 for 32-bit inputs). Eigenvalues are not sorted. Eigenvector derivatives need
    `enable_eigvec_derivs=True` and distinct eigenvalues; `implementation` and `use_magma`
    choose a GPU library in JAX and are accepted here for compatibility.
    """
    if use_magma is not None:
        warnings.warn("use_magma is deprecated, please use "
                      "implementation=EigImplementation.MAGMA instead.", DeprecationWarning,
                      stacklevel=2)
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    if implementation is not None and not isinstance(implementation, EigImplementation):
        implementation = EigImplementation(implementation)
    return list(_bind(eig_p, x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs),
                      implementation=implementation))
