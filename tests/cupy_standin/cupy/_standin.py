"""Test hooks of the CuPy stand-in; none of these names exist in CuPy.

Settings come from the environment (read when first needed): CUPY_STANDIN_DEVICES (default 1),
CUPY_STANDIN_MEMORY (bytes per device, default 4 GiB), CUPY_STANDIN_DRIVER (driver version,
default 12090). `counters` counts what the program asked of the simulated GPU, at the time it
was issued: transfers each way (count and bytes), kernel launches by kernel name, library calls
by function name, and synchronisations. `reset()` zeroes them.
"""
from __future__ import annotations

import collections
import os
import threading


def device_count() -> int:
    return int(os.environ.get("CUPY_STANDIN_DEVICES", "1"))


def device_memory() -> int:
    return int(os.environ.get("CUPY_STANDIN_MEMORY", str(4 * 2**30)))


def driver_version() -> int:
    return int(os.environ.get("CUPY_STANDIN_DRIVER", "12090"))


class Counters:
    """What was issued to the simulated GPU since the last `reset()`."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.h2d = self.h2d_bytes = 0
        self.d2h = self.d2h_bytes = 0
        self.launches = collections.Counter()  # kernel name -> launches
        self.library = collections.Counter()  # library function name -> calls
        self.syncs = 0

    def transfer(self, direction: str, nbytes: int) -> None:
        with self._lock:
            if direction == "h2d":
                self.h2d += 1
                self.h2d_bytes += int(nbytes)
            else:
                self.d2h += 1
                self.d2h_bytes += int(nbytes)

    def snapshot(self) -> dict:
        return {"h2d": self.h2d, "h2d_bytes": self.h2d_bytes, "d2h": self.d2h,
                "d2h_bytes": self.d2h_bytes, "launches": dict(self.launches),
                "library": dict(self.library), "syncs": self.syncs}


counters = Counters()


def reset() -> None:
    """Zero every counter."""
    counters.reset()


def clear_faults() -> None:
    """Forget sticky device faults and the work they stranded. A real process cannot do this
    (its CUDA context is dead); tests use it to go on after provoking a fault."""
    from cupy.cuda import _queue, runtime
    runtime._sticky.clear()
    for q in list(_queue._queues.values()):
        for op in q.pending:
            op.done = True
        q.pending.clear()
