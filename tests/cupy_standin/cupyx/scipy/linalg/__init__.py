"""cupyx.scipy.linalg: SciPy's solve_triangular and lu_factor queued on the device
(cupyx/scipy/linalg/_solve_triangular.py, _decomp_lu.py; cuSOLVER getrf returns int32
pivots)."""
import warnings

import numpy as np
from cupy._core import _device_op


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=False):
    import scipy.linalg

    def run(a, b):
        return scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                             unit_diagonal=unit_diagonal)
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
