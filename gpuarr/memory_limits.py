"""How much memory a device has, and JAX's RESOURCE_EXHAUSTED error for a buffer beyond it.

XLA allocates every output buffer, so an array far larger than memory fails at once with
`RESOURCE_EXHAUSTED: Out of memory allocating N bytes.`; gpuarr's host buffers can be
broadcast views that allocate nothing, and device allocators raise their own errors, so the
sizes are checked here against the device's memory on every platform."""
from __future__ import annotations

import functools
import os

from gpuarr.errors import JaxRuntimeError


@functools.cache
def host_memory_bytes() -> int:
    """The machine's physical memory (the cpu and opencl platforms' buffers live there)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): no limit known
        return 1 << 62


def out_of_memory(nbytes: int, limit: int | None = None) -> JaxRuntimeError:
    """JAX's error for an allocation of `nbytes`; the second line says what to do."""
    where = "" if limit is None else f" (the limit is {limit} bytes)"
    return JaxRuntimeError(f"RESOURCE_EXHAUSTED: Out of memory allocating {nbytes} bytes.\n"
                           f"The array needs more memory than is available{where}; make it "
                           "smaller, or compute it in pieces (lax.map, a scan over chunks).")


def check_allocation(nbytes: int, limit: int) -> None:
    """Raise `out_of_memory` when a buffer of `nbytes` cannot fit in `limit` bytes."""
    if nbytes > limit:
        raise out_of_memory(nbytes, limit)
