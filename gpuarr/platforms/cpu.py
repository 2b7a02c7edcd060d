"""The cpu platform: Programs compiled by the NumPy backend, buffers are NumPy arrays."""
from __future__ import annotations

from gpuarr.backends import numpy as numpy_backend
from gpuarr.platforms import Device
from gpuarr.platforms.host import HostBufferPlatform


class CpuDevice(Device):
    kind_name = "CpuDevice"


class CpuPlatform(HostBufferPlatform):
    name = "cpu"

    def __init__(self):
        super().__init__(CpuDevice("cpu", 0))

    def codegen(self, closed):
        """The NumPy backend's Python function for `closed`."""
        return numpy_backend.compile_closed(closed)


def make() -> CpuPlatform:
    return CpuPlatform()
