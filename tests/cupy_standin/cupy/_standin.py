"""Test hooks of the CuPy stand-in; none of these names exist in CuPy.

Settings come from the environment (read when first needed): CUPY_STANDIN_DEVICES (default 1),
CUPY_STANDIN_MEMORY (bytes per device, default 4 GiB), CUPY_STANDIN_DRIVER (driver version,
default 12090), CUPY_STANDIN_CUSOLVER (cuSOLVER's version number, default 11704: CUDA
12.9's). `counters` counts what the program asked of the simulated GPU, at the time it was
issued: transfers each way (`h2d`, `h2d_bytes`, `d2h`, `d2h_bytes`), kernel launches
(`launches`, and `launches_by_name`), library calls (`library_calls`, and `library` by
function name), bytes NCCL sent to ranks in other processes (`peer_bytes`), synchronisations
(`syncs`) and NVRTC compilations that missed both of CuPy's kernel caches (`compiles`).
`reset()` zeroes them.
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


def cusolver_version() -> int:
    return int(os.environ.get("CUPY_STANDIN_CUSOLVER", "11704"))


class Counters:
    """What was issued to the simulated GPU since the last `reset()`."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.h2d = self.h2d_bytes = 0
        self.d2h = self.d2h_bytes = 0
        self.launches_by_name = collections.Counter()  # kernel name -> launches
        self.library = collections.Counter()  # library function name -> calls
        self.syncs = 0
        self.compiles = 0
        self.peer_bytes = 0

    @property
    def launches(self) -> int:
        return sum(self.launches_by_name.values())

    @property
    def library_calls(self) -> int:
        return sum(self.library.values())

    def launch(self, name: str) -> None:
        with self._lock:
            self.launches_by_name[name] += 1

    def sync(self) -> None:
        with self._lock:
            self.syncs += 1

    def compile(self) -> None:
        with self._lock:
            self.compiles += 1

    def peer(self, nbytes: int) -> None:
        with self._lock:
            self.peer_bytes += int(nbytes)

    def library_call(self, name: str) -> None:
        with self._lock:
            self.library[name] += 1

    def __repr__(self):
        return f"Counters({self.snapshot()})"

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
                "d2h_bytes": self.d2h_bytes, "launches": self.launches,
                "launches_by_name": dict(self.launches_by_name), "library_calls": self.library_calls,
                "library": dict(self.library), "syncs": self.syncs, "compiles": self.compiles,
                "peer_bytes": self.peer_bytes}


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
