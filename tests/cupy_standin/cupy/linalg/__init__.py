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
