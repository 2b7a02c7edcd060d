"""Host memory for the NumPy backend: keep freed buffers in the process instead of the OS.

Every call of a compiled Program allocates its results and temporaries afresh. With glibc's
defaults, blocks above a dynamic threshold come straight from the OS (mmap) and go back to it
when freed, and freed memory at the top of the heap is trimmed away: the next call's buffers
then arrive as fresh pages that the kernel faults in and zero-fills one by one. That costs as
much as the arithmetic for mid-sized arrays (`random.split` of 10**5 keys ran twice as long).
Raising both thresholds makes glibc reuse the freed blocks, the way XLA's and CuPy's pools
reuse device memory. Blocks over 32 MiB (glibc's highest mmap threshold) still go back to the
OS when freed; up to 256 MiB of freed memory stays in the heap.

`GPUARR_HOST_ALLOCATOR=platform` leaves malloc as configured (as XLA_PYTHON_CLIENT_ALLOCATOR
does for the GPU pool), and so does any `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_`
set by the user. Other C libraries (musl, macOS) are left alone.

`aligned_empty` gives buffers that start on a cache line, for loops that call BLAS on them
many times.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import numpy as np

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20


def wanted() -> bool:
    """Whether the thresholds should be raised: not when the user chose malloc's behaviour."""
    if os.environ.get("GPUARR_HOST_ALLOCATOR", "cached").lower() == "platform":
        return False
    return not any(var in os.environ
                   for var in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"))


def _glibc_mallopt():
    """glibc's mallopt, or None under another C library."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        version = libc.gnu_get_libc_version  # only glibc has it
        version.restype = ctypes.c_char_p
        version()
        return libc.mallopt
    except (OSError, AttributeError):
        return None


@functools.cache
def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process (see the module docstring);
    return whether they are raised."""
    mallopt = _glibc_mallopt() if wanted() else None
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def aligned_empty(shape, dtype, alignment: int = 64):
    """An uninitialized C-ordered array whose data starts on an `alignment`-byte boundary
    (NumPy only promises 16 bytes; vector loads that straddle cache lines run slower)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes].view(dtype).reshape(shape)
