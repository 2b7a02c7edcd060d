"""Device objects (copies cupy/cuda/device.pyx): a context manager making a device current."""
from __future__ import annotations

from cupy import _standin
from cupy.cuda import _queue, runtime


class Device:
    def __init__(self, device=None):
        self.id = runtime.getDevice() if device is None else int(device)
        self._prev: list = []

    def __int__(self):
        return self.id

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"

    def __enter__(self):
        prev = runtime.getDevice()
        runtime.setDevice(self.id)  # device.pyx: setDevice raises for a bad ordinal here
        self._prev.append(prev)
        return self

    def __exit__(self, *exc):
        runtime.setDevice(self._prev.pop())

    def use(self):
        runtime.setDevice(self.id)

    @property
    def compute_capability(self) -> str:
        props = runtime.getDeviceProperties(self.id)
        return f"{props['major']}{props['minor']}"

    @property
    def mem_info(self) -> tuple:
        with self:
            return runtime.memGetInfo()

    @property
    def attributes(self) -> dict:
        p = runtime.getDeviceProperties(self.id)
        return {"MultiProcessorCount": p["multiProcessorCount"],
                "MaxThreadsPerBlock": p["maxThreadsPerBlock"],
                "MaxSharedMemoryPerBlock": p["sharedMemPerBlock"],
                "WarpSize": p["warpSize"]}

    def synchronize(self) -> None:
        runtime.check_sticky(self.id)
        _queue.flush_device(self.id)
        _standin.counters.sync()
        runtime.check_sticky(self.id)


def get_device_id() -> int:
    return runtime.getDevice()
