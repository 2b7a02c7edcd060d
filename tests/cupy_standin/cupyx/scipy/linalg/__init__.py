"""cupyx.scipy.linalg: SciPy's solve_triangular and lu_factor queued on the device
(cupyx/scipy/linalg/_solve_triangular.py, _decomp_lu.py; cuSOLVER getrf returns int32
pivots)."""
import warnings

import numpy as np
from cupy._core import _device_op


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=False):
    """_solve_triangular.py: with check_finite (False by default, unlike SciPy) non-finite
    inputs raise; otherwise cuBLAS trsm runs on whatever is there, a zero or infinite diagonal
    included (IEEE arithmetic, no singularity check, unlike LAPACK's trtrs behind SciPy)."""
    import scipy.linalg

    def run(a, b):
        if check_finite and a.dtype.char in "fdFD" and not (
                np.isfinite(a).all() and np.isfinite(b).all()):
            raise ValueError("array must not contain infs or NaNs")
        dtype = np.result_type(a, b)
        trsm = scipy.linalg.get_blas_funcs("trsm", (a.astype(dtype), b.astype(dtype)))
        b2 = b.reshape(b.shape[0], -1).astype(dtype)
        trans_a = {"N": 0, "T": 1, "C": 2}.get(trans, trans)
        x = trsm(1.0, a.astype(dtype), b2, side=0, lower=int(bool(lower)), trans_a=int(trans_a),
                 diag=int(bool(unit_diagonal)))
        return x.reshape(b.shape)
    return _device_op.apply(run, (a, b), name="scipy.linalg.solve_triangular", library=True)


def lu_factor(a, overwrite_a=False, check_finite=True):
    import scipy.linalg

    def run(a):
        # _decomp_lu.py checks getrf's dev_info only under errstate(linalg="raise"): a singular
        # matrix factors silently, where SciPy would warn.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu, piv = scipy.linalg.lu_factor(a)
        return lu, piv.astype(np.int32)
    return _device_op.apply(run, (a,), name="scipy.linalg.lu_factor", library=True)
