"""Structured matrices of jax.scipy.linalg: block_diag, toeplitz, hankel, circulant,
companion, leslie, fiedler, fiedler_companion, hilbert, invhilbert, pascal, invpascal,
convolution_matrix, hadamard, helmert and dft."""
from __future__ import annotations

import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import lax
from gpuarr.numpy import creation, manipulation, selection, ufuncs
from gpuarr.numpy.arguments import broadcast_to, check_arraylike, promote_dtypes
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy.linalg._decomp import _inexact, _shape


def _broadcast_leading(x, y):
    """Broadcast the leading axes of x [..., m] and y [..., n] together."""
    batch = tuple(np.broadcast_shapes(_shape(x)[:-1], _shape(y)[:-1]))
    return broadcast_to(x, batch + _shape(x)[-1:]), broadcast_to(y, batch + _shape(y)[-1:])


def _gather_last(x, idx):
    """x[..., idx] for an integer NumPy index array `idx` (any shape)."""
    return selection.take(x, creation.asarray(idx.ravel()), axis=-1).reshape(_shape(x)[:-1] + idx.shape)


def block_diag(*arrs):
    """The block-diagonal matrix with the given (at most 2-D) arrays as blocks; scalars and
    vectors count as 1 x 1 and 1 x n blocks. No arguments give an empty (1, 0) matrix."""
    if len(arrs) == 0:
        arrs = (creation.zeros((1, 0)),)
    arrs = tuple(promote_dtypes(*[creation.asarray(a) for a in arrs]))
    bad = [i for i, a in enumerate(arrs) if np.ndim(a) > 2]
    if bad:
        raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                         f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
    arrs = [manipulation.atleast_2d(a) for a in arrs]
    total = sum(_shape(a)[1] for a in arrs)
    padded, col = [], 0
    for a in arrs:
        cols = _shape(a)[1]
        padded.append(manipulation.pad(a, ((0, 0), (col, total - cols - col))))
        col += cols
    return manipulation.concatenate(padded, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (r[0] is ignored;
    r defaults to conj(c)). Leading axes of c and r broadcast to a batch of matrices."""
    if r is None:
        check_arraylike("toeplitz", c)
        c = manipulation.atleast_1d(c)
        r = ufuncs.conj(c)
    else:
        check_arraylike("toeplitz", c, r)
        c, r = manipulation.atleast_1d(c), manipulation.atleast_1d(r)
    c, r = promote_dtypes(c, r)
    c, r = _broadcast_leading(c, r)
    m, n = _shape(c)[-1], _shape(r)[-1]
    i, j = np.indices((m, n))
    # Entry (i, j) is element i - j of c below the diagonal and j - i of r above it.
    return ufuncs.where(i >= j, _gather_last(c, np.maximum(i - j, 0)),
                        _gather_last(r, np.maximum(j - i, 0)))


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (r[0] is ignored; r defaults
    to zeros). Leading axes of c and r broadcast to a batch of matrices."""
    if r is None:
        check_arraylike("hankel", c)
        c = creation.asarray(c)
        r = creation.zeros_like(c)
    else:
        check_arraylike("hankel", c, r)
        c, r = creation.asarray(c), creation.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    c, r = promote_dtypes(c, r)
    c, r = _broadcast_leading(c, r)
    m = _shape(c)[-1]
    s = np.add.outer(np.arange(m), np.arange(_shape(r)[-1]))
    v = manipulation.concatenate([c, r[..., 1:]], axis=-1)  # the anti-diagonals, in order
    return _gather_last(v, s)


def circulant(c):
    """The circulant matrix with first column c: A[i, j] = c[(i - j) mod n], for each vector
    along the last axis of c."""
    check_arraylike("circulant", c)
    c = manipulation.atleast_1d(c)
    n = _shape(c)[-1]
    return _gather_last(c, np.subtract.outer(np.arange(n), np.arange(n)) % n)


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest degree first):
    first row -a[1:] / a[0], ones on the first subdiagonal. Batched over leading axes."""
    check_arraylike("companion", a)
    (a,) = _inexact(a)
    a = manipulation.atleast_1d(a)
    if _shape(a)[-1] < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2; "
                         f"got shape {_shape(a)}.")
    first_row = -a[..., 1:] / a[..., :1]
    m = _shape(a)[-1] - 1
    sub = broadcast_to(creation.eye(m - 1, m, dtype=first_row.dtype), _shape(a)[:-1] + (m - 1, m))
    return manipulation.concatenate([first_row[..., None, :], sub], axis=-2)


def leslie(f, s):
    """The Leslie matrix with fecundity coefficients f (first row) and survival coefficients
    s (first subdiagonal); len(s) == len(f) - 1. Batched over leading axes."""
    check_arraylike("leslie", f, s)
    f, s = manipulation.atleast_1d(f), manipulation.atleast_1d(s)
    if _shape(f)[-1] < 2:
        raise ValueError("The length of f along the last axis must be at least 2; "
                         f"got shape {_shape(f)}.")
    if _shape(s)[-1] != _shape(f)[-1] - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                         "must be one less than the length of f; got f shape "
                         f"{_shape(f)} and s shape {_shape(s)}.")
    f, s = promote_dtypes(f, s)
    f, s = _broadcast_leading(f, s)
    n = _shape(f)[-1]
    i, j = np.indices((n - 1, n))
    sub = ufuncs.where(j == i, _gather_last(s, i), 0)
    return manipulation.concatenate([f[..., None, :], sub], axis=-2)


def fiedler(a):
    """The symmetric Fiedler matrix |a[i] - a[j]|, for each vector along the last axis."""
    check_arraylike("fiedler", a)
    a = manipulation.atleast_1d(a)
    return ufuncs.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients a (highest degree
    first): a pentadiagonal (n - 1) x (n - 1) matrix whose eigenvalues are the polynomial's
    roots, for each vector along the last axis of a. As in JAX, a[..., 0] == 0 is not
    checked (the result then holds infs or NaNs)."""
    (a,) = promote_args_inexact("fiedler_companion", a)
    a = manipulation.atleast_1d(a)
    if _shape(a)[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {_shape(a)}.")
    n = _shape(a)[-1] - 1
    if n == 0:
        return broadcast_to(a[..., :0, None], _shape(a)[:-1] + (0, 0))
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i, j = np.indices((n, n))
    even = i % 2 == 0
    # Entries -a[k]: the first column's top, and beside the diagonal on even rows.
    first = (i == 0) & (j == 0)
    upper, lower = (j == i + 1) & even, (j == i - 1) & even & (i >= 2)
    coef = np.where(first, 1, np.where(upper, np.minimum(i + 2, n), np.minimum(i + 1, n)))
    # Ones: below the first entry, two right of the diagonal on even rows, two left on odd.
    ones = ((i == 1) & (j == 0)) | ((j == i + 2) & even) | ((j == i - 2) & ~even & (i >= 3))
    return ufuncs.where(first | upper | lower, -_gather_last(a, coef), ufuncs.where(ones, 1, 0))


def _log_factorial(n: int):
    """log(k!) for k = 0 .. n, in float64."""
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])


def _binom(top, k, log_fact):
    """Binomial coefficients C(top, k) of integer arrays (0 where k < 0 or k > top), from
    log-factorials as JAX computes them, rounded to the nearest integer."""
    ok = (k >= 0) & (k <= top)
    top, k = np.where(ok, top, 0), np.where(ok, k, 0)
    return np.where(ok, np.round(np.exp(log_fact[top] - log_fact[k] - log_fact[top - k])), 0.0)


def _check_kind(kind):
    valid = ["symmetric", "lower", "upper"]
    kind = "symmetric" if kind is None else kind
    if kind not in valid:
        raise ValueError(f"Expected kind to be one of: {valid}; got {kind}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The n x n Pascal matrix: binomial coefficients C(i, j) ('lower'), its transpose
    ('upper'), or their product C(i + j, i) ('symmetric', the default). float32, as JAX."""
    kind = _check_kind(kind)
    i, j = np.indices((n, n))
    lower = _binom(i, j, _log_factorial(max(n - 1, 0)))
    mat = {"lower": lower, "upper": lower.T, "symmetric": lower @ lower.T}[kind]
    return creation.asarray(mat, dtype=np.float32)


def invpascal(n: int, kind: str | None = None):
    """The inverse of pascal(n, kind): (-1)^(i - j) C(i, j) for 'lower', its transpose for
    'upper', and their product U^-1 L^-1 for 'symmetric'; in the default float dtype."""
    kind = _check_kind(kind)
    i, j = np.indices((n, n))
    lower = np.where((i - j) % 2, -1.0, 1.0) * _binom(i, j, _log_factorial(max(n - 1, 0)))
    mat = {"lower": lower, "upper": lower.T, "symmetric": lower.T @ lower}[kind]
    return creation.asarray(mat, dtype=dtypes.default_float_dtype())


def invhilbert(n: int):
    """The inverse of the n x n Hilbert matrix, from its closed form
    (-1)^(i+j) (i+j+1) C(n+i, n-j-1) C(n+j, n-i-1) C(i+j, i)^2, in the default float dtype.
    Entries grow fast: past n of about 14 (float64) they are no longer exact integers."""
    i, j = np.indices((n, n))
    s = i + j
    log_fact = _log_factorial(2 * n)
    with np.errstate(over="ignore", invalid="ignore"):
        mat = (np.where(s % 2, -1.0, 1.0) * (s + 1.0) * _binom(n + i, n - j - 1, log_fact)
               * _binom(n + j, n - i - 1, log_fact) * _binom(s, i, log_fact) ** 2)
    return creation.asarray(mat, dtype=dtypes.default_float_dtype())


def hilbert(n: int):
    """The n x n Hilbert matrix 1 / (i + j + 1), in the default float dtype."""
    a = creation.arange(n, dtype=dtypes.default_float_dtype())
    return 1.0 / (a[:, None] + a[None, :] + 1)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix whose product with a length-n vector v is the convolution of a
    and v in `mode` 'full', 'valid' or 'same' (numpy.convolve's modes)."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    check_arraylike("convolution_matrix", a)
    a = creation.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = _shape(a)[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {_shape(a)}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = manipulation.pad(a, pad), manipulation.pad(manipulation.flip(a, axis=-1), pad)
    total = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    col0 = lax.slice_in_dim(az, tb, total - te, axis=a.ndim - 1)
    row0 = lax.slice_in_dim(raz, total - n - tb, total - tb, axis=a.ndim - 1)
    return toeplitz(col0, row0)


def hadamard(n: int, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction); n must be a power of two."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1))
    for _ in range(int(math.log2(n))):
        h = np.block([[h, h], [h, -h]])
    return creation.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of orthonormal contrasts, (n - 1, n), or (n, n) with a first row
    of 1 / sqrt(n) when `full`; in the default float dtype."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i, j = np.indices((n - 1, n))
    k = i + 1.0
    h = np.where(j <= i, 1.0, np.where(j == k, -k, 0.0)) / np.sqrt(k * (k + 1))
    if full:
        h = np.concatenate([np.full((1, n), 1 / np.sqrt(n)), h], axis=0)
    return creation.asarray(h, dtype=dtypes.default_float_dtype())


def dft(n: int, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n), unscaled, or scaled
    by 1 / sqrt(n) ('sqrtn') or 1 / n ('n'); in the default complex dtype unless `dtype`."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    dtype = dtypes.default_complex_dtype() if dtype is None else np.dtype(dtype)
    if not dtypes.is_complex(dtype):
        raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    # Reduce j k mod n first so that the phases stay exact for large n.
    jk = np.multiply.outer(np.arange(n), np.arange(n)) % max(n, 1)
    w = np.exp(-2j * np.pi * jk / max(n, 1))
    w = w / {None: 1, "sqrtn": np.sqrt(n), "n": n}[scale]
    return creation.asarray(w, dtype=dtype)
