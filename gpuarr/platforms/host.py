"""Platforms whose buffers are host NumPy arrays (cpu, opencl): eager operations run the NumPy
implementations, and moving data to or from the host is a no-op."""
from __future__ import annotations

import numpy as np

from gpuarr import impls
from gpuarr.compiler import passes
from gpuarr.platforms import Device, Platform


class HostBufferPlatform(Platform):
    """A platform with one device whose buffers are NumPy arrays; subclasses give `codegen`."""

    def __init__(self, device: Device):
        self._devices = [device]

    def devices(self):
        return self._devices

    def optimize(self, closed):
        return passes.optimize(closed)

    def apply_primitive(self, prim, buffers, params):
        return impls.impl_for_values(prim, buffers)(*buffers, **params)

    def from_host(self, value, device):
        return np.asarray(value)

    def to_host(self, buffer):
        return buffer
