"""cupy.linalg (cuSOLVER/cuBLAS on a GPU): NumPy's routines queued on the device."""
import numpy as np

from cupy._routines import _library

_dispatched = ("cholesky", "qr", "svd", "eigh", "eigvalsh", "solve", "inv", "det", "slogdet", "norm")
for _name in _dispatched:
    globals()[_name] = _library("linalg." + _name, getattr(np.linalg, _name))
