"""The NumPy backend keeps freed host buffers for reuse (glibc's thresholds raised), unless the
user chose malloc's behaviour; checked in fresh processes through glibc's own accounting."""
import ctypes
import ctypes.util
import os
import subprocess
import sys

import numpy as np
import pytest

from gpuarr.backends import host_memory

pytestmark = pytest.mark.skipif(host_memory._glibc_mallopt() is None,
                                reason="the thresholds are glibc's")

# Runs a jitted program, then allocates 8 MiB and reports whether the thresholds are raised
# and whether glibc served the block by mmap (mallinfo2's hblkhd: bytes in mmapped blocks).
SCRIPT = """
import ctypes
import numpy as np
import gpuarr, gpuarr.numpy as jnp
from gpuarr.backends import host_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
assert float(gpuarr.jit(lambda x: (x + 1).sum())(jnp.ones(3))) == 6.0
before = libc.mallinfo2().hblkhd
block = np.ones(8 << 20, np.uint8)
mapped = libc.mallinfo2().hblkhd - before >= 8 << 20
print(host_memory.keep_freed_memory(), mapped)
"""


def _run(**env):
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc before 2.33 has no mallinfo2")
    full = {k: v for k, v in os.environ.items()
            if k not in ("GPUARR_HOST_ALLOCATOR", "MALLOC_MMAP_THRESHOLD_",
                         "MALLOC_TRIM_THRESHOLD_")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.slow
def test_compiled_programs_raise_the_thresholds():
    # An 8 MiB block then comes from the heap, not from a fresh mapping.
    assert _run() == ["True", "False"]


@pytest.mark.slow
def test_platform_allocator_leaves_malloc_alone():
    assert _run(GPUARR_HOST_ALLOCATOR="platform") == ["False", "True"]


@pytest.mark.slow
def test_users_malloc_settings_win():
    assert _run(MALLOC_TRIM_THRESHOLD_="131072")[0] == "False"
    assert _run(MALLOC_MMAP_THRESHOLD_="131072") == ["False", "True"]


def _address(a) -> int:
    return a.__array_interface__["data"][0]


def test_large_results_reuse_blocks_no_array_uses():
    """Arrays over glibc's mmap threshold come from blocks released by earlier arrays of the
    same size: never one that an array or a view of it still uses."""
    if not host_memory.wanted():
        pytest.skip("malloc's behaviour was chosen by the user")
    n = host_memory.MMAP_THRESHOLD // 4 + 4099  # a size no other test asks for
    a = host_memory.reusable_empty((n,), np.float32)
    a[:] = 1.0
    first = _address(a)
    b = host_memory.reusable_empty((n,), np.float32)
    assert _address(b) != first
    view = a[5:]
    del a
    c = host_memory.reusable_empty((n,), np.float32)
    assert _address(c) not in (first, _address(b))
    del view, c
    d = host_memory.reusable_empty((n,), np.float32)
    assert _address(d) == first and d.shape == (n,) and d.dtype == np.float32
    assert d.flags.c_contiguous and d.flags.writeable
    d[:] = 2.0
    b[:] = 3.0  # b's block is its own
    assert (d == 2.0).all()
    small = host_memory.reusable_empty((3, 4), np.int16)
    assert small.shape == (3, 4) and small.dtype == np.int16 and small.base is None


def test_block_cache_keeps_few_unused_bytes(monkeypatch):
    monkeypatch.setattr(host_memory, "TRIM_THRESHOLD", 3000)
    cache = host_memory._BlockCache()
    cache.MAX_BLOCKS = 4
    held = [cache.empty(1000) for _ in range(6)]  # every block in use
    assert len(cache._blocks) == 4  # the oldest are no longer tracked
    del held
    cache.empty(500)  # 4 unused blocks of 1000 bytes: one is dropped
    assert sorted(b.nbytes for b in cache._blocks) == [500, 1000, 1000, 1000]
    kept = cache.empty(1000)
    assert any(kept is b for b in cache._blocks) and len(cache._blocks) == 4
