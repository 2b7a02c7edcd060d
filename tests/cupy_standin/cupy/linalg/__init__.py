"""cupy.linalg (cuSOLVER/cuBLAS on a GPU): NumPy's routines queued on the device."""
import numpy as np

from cupy._routines import _library

_dispatched = ("qr", "svd", "eigh", "eigvalsh", "solve", "inv", "det", "slogdet", "norm")
for _name in _dispatched:
    globals()[_name] = _library("linalg." + _name, getattr(np.linalg, _name))


def _potf2(a):
    """LAPACK's unblocked Cholesky (dpotf2) of the lower triangle of each matrix of a stack. Where
    a leading minor is not positive definite it stops, leaving the non-positive pivot on the
    diagonal and the later columns as they were, as potrf reports info > 0."""
    a = np.array(a, dtype=np.result_type(a, np.float32), copy=True)
    flat = a.reshape((-1,) + a.shape[-2:])
    for m in flat:
        for j in range(m.shape[0]):
            ajj = (m[j, j] - np.vdot(m[j, :j], m[j, :j])).real
            if not ajj > 0:
                m[j, j] = ajj
                break
            m[j, j] = np.sqrt(ajj)
            m[j + 1:, j] = (m[j + 1:, j] - m[j + 1:, :j] @ m[j, :j].conj()) / m[j, j]
    return np.tril(a)


# cupy/linalg/_decomposition.py: cholesky calls potrf (potrfBatched for stacks) and checks
# dev_info only under cupyx.errstate(linalg="raise"); by default a failed factorization returns
# potrf's partial result, lower triangle kept (_util._tril), without an error.
cholesky = _library("linalg.cholesky", _potf2)


def _geev(a):
    """numpy.linalg.eig as cuSOLVER Xgeev gives it through CuPy: complex eigenvalues even where
    all are real, right eigenvectors normalised as LAPACK's geev. Where geev fails (non-finite
    input, no convergence) its outputs are undefined and dev_info goes unchecked; the stand-in
    leaves zeros, so a caller that does not check gets wrong numbers, not an error."""
    out = np.result_type(a.dtype, np.complex64)
    w = np.zeros(a.shape[:-1], out)
    v = np.zeros(a.shape, out)
    for i in np.ndindex(a.shape[:-2]):
        try:
            w[i], v[i] = np.linalg.eig(a[i])
        except np.linalg.LinAlgError:
            pass
    return w, v


def _common_type(a):
    """cupy/linalg/_util.py linalg_common_type (reject_float16=True): the type geev runs in."""
    if a.dtype == np.float16:
        raise TypeError("float16 is unsupported in linalg")
    return np.dtype(a.dtype if a.dtype.kind in "fc" else np.float64)


def _check_square_stack(a):
    """cupy/linalg/_util.py _assert_stacked_2d and _assert_stacked_square."""
    if a.ndim < 2:
        raise np.linalg.LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def eig(a):
    """cupy/linalg/_eigenvalue.py eig (CuPy 14, cuSOLVER Xgeev): RuntimeError where the
    cuSOLVER is older than geev (cupyx.cusolver.check_availability); an empty input gives empty
    outputs of the input's linalg type, not complex ones."""
    from cupyx.cusolver import check_availability

    from cupy import empty

    _check_square_stack(a)
    dtype = _common_type(a)
    if a.size == 0:
        return empty(a.shape[:-1], dtype), empty(a.shape, dtype)
    if not check_availability("geev"):
        raise RuntimeError("geev is not available")
    return _library("linalg.eig", _geev)(a.astype(dtype, copy=False))


def eigvals(a):
    """cupy/linalg/_eigenvalue.py eigvals: eig's eigenvalues (geev without vectors)."""
    from cupyx.cusolver import check_availability

    from cupy import empty

    _check_square_stack(a)
    dtype = _common_type(a)
    if a.size == 0:
        return empty(a.shape[:-1], dtype)
    if not check_availability("geev"):
        raise RuntimeError("geev is not available")
    return _library("linalg.eigvals", lambda m: _geev(m)[0])(a.astype(dtype, copy=False))
