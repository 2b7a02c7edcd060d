"""Library primitives on the GPU: CuPy implementations of the plan steps that are library calls
(cuBLAS for products and convolutions, CUB/thrust for sorts, cuFFT for transforms, cuSOLVER
for triangular solves, Cholesky, LU, QR, SVD, symmetric and general eigendecompositions), so
a jitted program's matrices never leave the device.

Each implementation takes the cupy module, the operands (CuPy arrays) and the equation's
params, and returns its results in the primitive's order; the plan runner casts them to the
output buffers' dtypes. `implementation(name, params)` is None where a case has no device
form here (an algorithm-precision product, narrow types, batched triangular solves, QR with
column pivoting and left eigenvectors, which cuSOLVER does not compute, or a cuSOLVER older
than geev): the runner then uses the NumPy implementation on the host, which is slower but
never different, and copies the operands down and the results up.
Like the other backends this module imports nothing from gpuarr.core or gpuarr.lax, so the
primitives' params are read by name.
"""
from __future__ import annotations

import math

import numpy as np

# Types the device products accumulate in a wider type, as the NumPy backend does (XLA's CPU
# behaviour): half precision in float32, bool as int32.
_ACCUMULATE = {"bool": np.int32, "float16": np.float32, "bfloat16": np.float32}
_DEVICE_TYPES = frozenset(
    ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
     "bfloat16", "float32", "float64", "complex64", "complex128"))


def implementation(name: str, params):
    """`impl(cp, *operands) -> results` of library primitive `name` with `params`, or None."""
    rule = _RULES.get(name)
    return None if rule is None or params is None else rule(**params)


def _dot_general(dimension_numbers, precision=None, preferred_element_type=None):
    if not _plain_precision(precision):
        return None
    (lc, rc), (lb, rb) = dimension_numbers

    def impl(cp, x, y):
        if not {x.dtype.name, y.dtype.name} <= _DEVICE_TYPES:
            raise NoDeviceForm
        acc = np.result_type(x.dtype, y.dtype)
        acc = _ACCUMULATE.get(acc.name, acc)
        x, y = x.astype(acc, copy=False), y.astype(acc, copy=False)
        lf = [d for d in range(x.ndim) if d not in lc and d not in lb]
        rf = [d for d in range(y.ndim) if d not in rc and d not in rb]
        batch = [x.shape[d] for d in lb]
        lfs, rfs = [x.shape[d] for d in lf], [y.shape[d] for d in rf]
        k = math.prod(x.shape[d] for d in lc)
        xm = cp.transpose(x, (*lb, *lf, *lc)).reshape((*batch, math.prod(lfs), k))
        ym = cp.transpose(y, (*rb, *rc, *rf)).reshape((*batch, k, math.prod(rfs)))
        return (cp.matmul(xm, ym).reshape((*batch, *lfs, *rfs)),)
    return impl


def _plain_precision(precision) -> bool:
    """True for None, a Precision or a pair of them; dot algorithms run on the host."""
    if precision is None:
        return True
    items = precision if isinstance(precision, (tuple, list)) else (precision,)
    return all(p is None or type(p).__name__ == "Precision" or isinstance(p, str) for p in items)


def _sort_keys(cp, x) -> list:
    """Stable-sort keys, least significant first, ordering `x` as XLA's total order does (NaNs
    last, -0.0 equal to 0.0): the same keys as the NumPy backend's sort."""
    if x.dtype.kind == "c":
        return [cp.imag(x), cp.real(x)]
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        xf = x.astype(np.float64)
        nan = cp.isnan(xf)
        return [cp.where(nan, 0.0, xf) + 0.0, nan.astype(np.uint8)]
    return [x.astype(np.uint8) if x.dtype.kind == "b" else x]


def _sort(dimension, is_stable, num_keys):
    def impl(cp, *operands):
        moved = [cp.moveaxis(o, dimension, -1) for o in operands]
        order = None
        for key in reversed(moved[:num_keys]):  # least significant operand first
            for k in _sort_keys(cp, key):
                if order is not None:
                    k = cp.take_along_axis(k, order, axis=-1)
                step = cp.argsort(k, axis=-1, kind="stable")
                order = step if order is None else cp.take_along_axis(order, step, axis=-1)
        return tuple(cp.moveaxis(cp.take_along_axis(o, order, axis=-1), -1, dimension)
                     for o in moved)
    return impl


_FFTS = ("fftn", "ifftn", "rfftn", "irfftn")  # by FftType: FFT, IFFT, RFFT, IRFFT


def _fft(fft_type, fft_lengths):
    name = _FFTS[int(fft_type)]

    def impl(cp, x):
        if x.size == 0 or 0 in fft_lengths:
            raise NoDeviceForm
        axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
        if name == "irfftn":
            return (cp.fft.irfftn(x, s=tuple(fft_lengths), axes=axes),)
        return (getattr(cp.fft, name)(x, axes=axes),)
    return impl


def _triangular_solve(left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    def impl(cp, a, b):
        if a.ndim != 2 or b.ndim != 2 or not left_side or a.dtype.kind not in "fc":
            raise NoDeviceForm
        from cupyx.scipy.linalg import solve_triangular
        if conjugate_a:
            a = cp.conj(a)
        return (solve_triangular(a, b.astype(a.dtype, copy=False), trans=1 if transpose_a else 0,
                                 lower=lower, unit_diagonal=unit_diagonal),)
    return impl


def _conv(window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
          feature_group_count, batch_group_count, precision=None, preferred_element_type=None):
    """The NumPy backend's convolution on the device: pad and dilate, take the windows as a
    strided view, contract them with the kernel in one einsum (cuBLAS underneath)."""
    if not _plain_precision(precision):
        return None
    lhs_spec, rhs_spec, out_spec = dimension_numbers

    def impl(cp, lhs, rhs):
        if lhs.dtype.name not in _DEVICE_TYPES:
            raise NoDeviceForm
        acc = _ACCUMULATE.get(lhs.dtype.name, lhs.dtype)
        x = cp.transpose(lhs, lhs_spec).astype(acc, copy=False)
        w = cp.transpose(rhs, rhs_spec).astype(acc, copy=False)
        nsp = x.ndim - 2
        x = _pad_dilate(cp, x, padding, lhs_dilation)
        w = _pad_dilate(cp, w, [(0, 0)] * nsp, rhs_dilation)
        win = _windows(cp, x, w.shape[2:], window_strides)  # N, C, out..., k...
        sp, ks = "xyzuvw"[:nsp], "pqrstl"[:nsp]
        n, c, o = x.shape[0], x.shape[1], w.shape[0]
        out_sp = win.shape[2:2 + nsp]
        if batch_group_count > 1:
            b = batch_group_count
            win = win.reshape((b, n // b, c) + win.shape[2:])
            wk = w.reshape((b, o // b) + w.shape[1:])
            out = cp.einsum(f"bnc{sp}{ks},boc{ks}->nbo{sp}", win, wk).reshape((n // b, o) + out_sp)
        else:
            g = feature_group_count
            win = win.reshape((n, g, c // g) + win.shape[2:])
            wk = w.reshape((g, o // g) + w.shape[1:])
            out = cp.einsum(f"ngc{sp}{ks},goc{ks}->ngo{sp}", win, wk).reshape((n, o) + out_sp)
        return (cp.transpose(out, tuple(np.argsort(out_spec))),)
    return impl


def _pad_dilate(cp, x, padding, dilation):
    """`x` with its spatial dims (2...) dilated by `dilation` and padded by `padding` (negative
    padding crops), as lax.pad does."""
    inner = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape[2:], dilation)]
    low = [max(lo, 0) for lo, _ in padding]
    shape = x.shape[:2] + tuple(lo + n + max(hi, 0) for lo, n, (_, hi) in zip(low, inner, padding))
    out = cp.zeros(shape, x.dtype)
    out[(slice(None),) * 2 + tuple(slice(lo, lo + n, d) for lo, n, d in zip(low, inner, dilation))] = x
    crop = tuple(slice(max(-lo, 0), size - max(-hi, 0)) for (lo, hi), size in zip(padding, shape[2:]))
    return out[(slice(None),) * 2 + crop]


def _windows(cp, x, window, strides):
    """A strided view (N, C, out..., window...) of the windows of `x`'s spatial dims."""
    if any(k > n for k, n in zip(window, x.shape[2:])) or 0 in window:
        out = tuple(max(0, (n - k) // s + 1) for n, k, s in zip(x.shape[2:], window, strides))
        return cp.zeros(x.shape[:2] + out + tuple(window), x.dtype)
    x = cp.ascontiguousarray(x)
    out = tuple((n - k) // s + 1 for n, k, s in zip(x.shape[2:], window, strides))
    st = x.strides
    return cp.lib.stride_tricks.as_strided(
        x, x.shape[:2] + out + tuple(window),
        st[:2] + tuple(st[2 + i] * s for i, s in enumerate(strides)) + st[2:])


def _decomposition_dtype(x):
    """The type cuSOLVER decomposes `x` in (half precision in float32, as the NumPy backend);
    NoDeviceForm for empty or non-float operands, which the host handles."""
    if x.size == 0 or x.dtype.kind not in "fc":
        raise NoDeviceForm
    return np.float32 if x.dtype.itemsize < 4 else x.dtype


def _qr(full_matrices, pivoting=False):
    if pivoting:  # column pivoting (geqp3) has no CuPy form
        return None

    def impl(cp, x):
        c = x.astype(_decomposition_dtype(x), copy=False)
        return tuple(cp.linalg.qr(c, mode="complete" if full_matrices else "reduced"))
    return impl


def _svd(full_matrices, compute_uv):
    def impl(cp, x):
        c = x.astype(_decomposition_dtype(x), copy=False)
        if not compute_uv:
            return (cp.linalg.svd(c, compute_uv=False),)
        u, s, vh = cp.linalg.svd(c, full_matrices=full_matrices)
        return s, u, vh
    return impl


def _eigh(lower, sort_eigenvalues):
    def impl(cp, x):
        w, v = cp.linalg.eigh(x.astype(_decomposition_dtype(x), copy=False),
                              UPLO="L" if lower else "U")
        return v, w  # ascending, as the primitive's eigenvalues are
    return impl


def _eig(compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs=False,
         implementation=None):
    # cuSOLVER's geev (CuPy 14's cupy.linalg.eig) computes right eigenvectors only; JAX's
    # EigImplementation.LAPACK and MAGMA ask for the host's LAPACK.
    choice = getattr(implementation, "value", implementation)
    if compute_left_eigenvectors or choice not in (None, "cusolver"):
        return None

    def impl(cp, x):
        from cupyx.cusolver import check_availability
        if not hasattr(cp.linalg, "eig") or not check_availability("geev"):
            raise NoDeviceForm  # CuPy < 14 or cuSOLVER < 11.7 (CUDA 12.6 update 2)
        c = x.astype(_decomposition_dtype(x), copy=False)
        # geev's dev_info goes unchecked (CuPy raises only under errstate) and its outputs are
        # undefined where it fails: JAX's NaNs for matrices with non-finite entries.
        ok = cp.all(cp.isfinite(c), axis=(-2, -1))
        if not compute_right_eigenvectors:
            return (cp.where(ok[..., None], cp.linalg.eigvals(c), cp.nan),)
        w, v = cp.linalg.eig(c)
        return cp.where(ok[..., None], w, cp.nan), cp.where(ok[..., None, None], v, cp.nan)
    return impl


def _cholesky():
    def impl(cp, x):
        # CuPy (cupy/linalg/_decomposition.py) does not raise where potrf fails: like LAPACK's
        # potf2 it stops at the first non-positive pivot and leaves it on the diagonal. JAX
        # fills such matrices with NaNs; a factor with a positive, finite diagonal succeeded.
        c = x.astype(_decomposition_dtype(x), copy=False)
        factor = cp.linalg.cholesky(c)
        diag = cp.diagonal(factor, axis1=-2, axis2=-1).real
        ok = cp.all((diag > 0) & cp.isfinite(diag), axis=-1)
        return (cp.where(ok[..., None, None], factor, cp.nan),)
    return impl


def _lu():
    def impl(cp, x):
        from cupyx.scipy.linalg import lu_factor

        *batch, m, n = x.shape
        c = x.astype(_decomposition_dtype(x), copy=False).reshape((-1, m, n))
        factors, pivots = zip(*(lu_factor(a) for a in c))  # getrf: one matrix per call
        lu = cp.stack(factors).reshape(x.shape)
        pivots = cp.stack(pivots)[:, :min(m, n)].astype(np.int32)
        # The row swaps compose into a permutation in min(m, n) sequential steps: a few bytes,
        # applied on the host and uploaded back (the one transfer of a device LU).
        perm = np.tile(np.arange(m, dtype=np.int32), (c.shape[0], 1))
        host_pivots = cp.asnumpy(pivots)
        rows = np.arange(c.shape[0])
        for j in range(host_pivots.shape[1]):
            p = host_pivots[:, j]
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
        return (lu, pivots.reshape(tuple(batch) + (min(m, n),)),
                cp.asarray(perm.reshape(tuple(batch) + (m,))))
    return impl


class NoDeviceForm(Exception):
    """Raised before any device work by an implementation whose operands have no device form."""


_RULES = {"dot_general": _dot_general, "sort": _sort, "fft": _fft,
          "triangular_solve": _triangular_solve, "conv_general_dilated": _conv, "qr": _qr,
          "svd": _svd, "eigh": _eigh, "eig": _eig, "cholesky": _cholesky, "lu": _lu}
