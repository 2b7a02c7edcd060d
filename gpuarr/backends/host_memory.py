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
many times. `reusable_empty` gives buffers over glibc's threshold from a small cache of
blocks that no array uses any more (a collective's 64 MiB result would otherwise be faulted in
afresh on every call, and unmapped when dropped); `cached_block` tells whether an array is the
whole of such a block, which then belongs to it alone for as long as it lives.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import threading

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


class _BlockCache:
    """Blocks over MMAP_THRESHOLD handed out as arrays, each reused once nothing refers to it
    but this cache: every array made from a block (and every view of those) holds the block
    itself as its `base`, so the block's reference count says whether one is alive. At most
    MAX_BLOCKS are kept, and at most TRIM_THRESHOLD bytes of them unused."""

    MAX_BLOCKS = 16

    def __init__(self):
        self._blocks: list = []  # least recently handed out first
        self._lock = threading.Lock()

    def _unused(self, i: int) -> bool:
        return sys.getrefcount(self._blocks[i]) == 2  # the list's reference and the argument's

    def empty(self, nbytes: int):
        with self._lock:
            blocks = self._blocks
            for i in range(len(blocks)):
                if blocks[i].nbytes == nbytes and self._unused(i):
                    blocks.append(blocks.pop(i))
                    return blocks[-1]
            blocks.append(np.empty(nbytes, np.uint8))
            unused = [i for i in range(len(blocks) - 1) if self._unused(i)]
            spare = sum(blocks[i].nbytes for i in unused)
            drop = set()
            for i in unused:  # oldest first
                if spare <= TRIM_THRESHOLD and len(blocks) - len(drop) <= self.MAX_BLOCKS:
                    break
                drop.add(i)
                spare -= blocks[i].nbytes
            blocks[:] = [b for i, b in enumerate(blocks) if i not in drop]
            del blocks[:max(0, len(blocks) - self.MAX_BLOCKS)]
            return blocks[-1]

    def holds(self, block) -> bool:
        with self._lock:
            return any(b is block for b in self._blocks)


_blocks = _BlockCache()


def reusable_empty(shape, dtype):
    """An uninitialized C-ordered array; one over MMAP_THRESHOLD bytes comes from blocks that
    earlier results of the same size have released (see _BlockCache), when malloc's behaviour
    is gpuarr's to choose."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes <= MMAP_THRESHOLD or not wanted():
        return np.empty(shape, dtype)
    return _blocks.empty(nbytes).view(dtype).reshape(shape)


def cached_block(value):
    """The cache's block when `value` is a C-ordered view of the whole of one (as
    `reusable_empty` hands them out), else None. Such a block belongs to the arrays made from
    it: the cache hands it out again only once nothing else refers to it."""
    block = getattr(value, "base", None)
    if (type(block) is not np.ndarray or block.dtype != np.uint8 or block.ndim != 1
            or not value.flags.c_contiguous or value.nbytes != block.nbytes
            or value.ctypes.data != block.ctypes.data):
        return None
    return block if _blocks.holds(block) else None
