"""The cpu platform: buffers are NumPy arrays, eager operations run the NumPy implementations,
and jitted Programs run as the native platform's C kernels when a working C compiler is found
(gpuarr/platforms/native.py), else on the NumPy backend, after one log line saying why.
`GPUARR_PLATFORMS=cpu` (any explicit platform list naming cpu) forces the NumPy backend, which
stays the reference every backend is compared with (`compile_numpy`).

It has one device unless `jax_num_cpu_devices` (or XLA_FLAGS'
`--xla_force_host_platform_device_count`) asks for more, fixed when the platform starts. After
`distributed.initialize` it lists every process's devices; `local_devices()` are this process's.
"""
from __future__ import annotations

from gpuarr import process_group
from gpuarr.backends import float_env
from gpuarr.backends import numpy as numpy_backend
from gpuarr.config import config
from gpuarr.platforms import Device, get_platform
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
        """The native platform's kernels for `closed` (see `kernels`), else the NumPy
        backend's Python function."""
        kernels = self.kernels()
        return kernels.codegen(closed) if kernels is not None else self.numpy_codegen(closed)

    def kernels(self):
        """The native platform, which compiles this platform's jitted programs when no
        platform list is given and a working C compiler is found; None for the NumPy backend
        (`GPUARR_PLATFORMS=cpu`, or no compiler: the native platform logs the reason once)."""
        if (config.platforms or "").strip():
            return None
        try:
            native = get_platform("native")
        except RuntimeError:
            return None
        return native if native.unavailable is None else None

    def numpy_codegen(self, closed):
        """The NumPy backend's Python function for `closed`, run with subnormals flushed as
        XLA's CPU code runs (backends/float_env.py)."""
        fn = numpy_backend.compile_closed(closed)
        return float_env.flushed(fn) if computes_floats(closed.program) else fn

    def compile_numpy(self, closed):
        """`compile(closed)` on the NumPy backend, whatever compiles jitted programs: the
        reference the kernel platforms are compared with."""
        self.check_memory(closed)
        return self.numpy_codegen(self.optimize(closed))


def make() -> CpuPlatform:
    return CpuPlatform()
