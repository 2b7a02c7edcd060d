"""The NumPy backend keeps freed host buffers for reuse (glibc's thresholds raised), unless the
user chose malloc's behaviour; checked in fresh processes through glibc's own accounting."""
import ctypes
import ctypes.util
import os
import subprocess
import sys

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
