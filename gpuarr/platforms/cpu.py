"""The cpu platform: Programs compiled by the NumPy backend, buffers are NumPy arrays."""
from __future__ import annotations

import numpy as np

from gpuarr import impls
from gpuarr.backends import numpy as numpy_backend
from gpuarr.platforms import Device, Platform


class CpuDevice(Device):
    kind_name = "CpuDevice"


class CpuPlatform(Platform):
    name = "cpu"

    def __init__(self):
        self._devices = [CpuDevice("cpu", 0)]

    def devices(self):
        return self._devices

    def compile(self, closed):
        return numpy_backend.compile_closed(closed)

    def apply_primitive(self, prim, buffers, params):
        return impls.impl_for_values(prim, buffers)(*buffers, **params)

    def from_host(self, value, device):
        return np.asarray(value)

    def to_host(self, buffer):
        return buffer


def make() -> CpuPlatform:
    return CpuPlatform()
