"""The cpu platform: Programs compiled by the NumPy backend, buffers are NumPy arrays.

It has one device unless `jax_num_cpu_devices` (or XLA_FLAGS'
`--xla_force_host_platform_device_count`) asks for more, fixed when the platform starts. After
`distributed.initialize` it lists every process's devices; `local_devices()` are this process's.
"""
from __future__ import annotations

from gpuarr import process_group
from gpuarr.backends import float_env
from gpuarr.backends import numpy as numpy_backend
from gpuarr.platforms import Device
from gpuarr.platforms.host import HostBufferPlatform, computes_floats


class CpuDevice(Device):
    kind_name = "CpuDevice"


class CpuPlatform(HostBufferPlatform):
    name = "cpu"

    def __init__(self):
        here = process_group.state.process_index
        devices = [CpuDevice("cpu", i, p) for i, p in process_group.cpu_device_layout()]
        super().__init__(devices[0])
        self._devices = devices
        self._local = [d for d in devices if d.process_index == here]
        process_group.freeze_cpu_device_count(len(self._local))

    def local_devices(self):
        return self._local

    def codegen(self, closed):
        """The NumPy backend's Python function for `closed`, run with subnormals flushed as
        XLA's CPU code runs (backends/float_env.py)."""
        fn = numpy_backend.compile_closed(closed)
        return float_env.flushed(fn) if computes_floats(closed.program) else fn


def make() -> CpuPlatform:
    return CpuPlatform()
