"""cupy.fft (cuFFT on a GPU): NumPy's FFTs queued on the device, single precision kept as
NumPy 2 and CuPy both do."""
import numpy as np

from cupy._routines import _library

_dispatched = ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
               "rfft2", "irfft2")
for _name in _dispatched:
    globals()[_name] = _library("fft." + _name, getattr(np.fft, _name))
