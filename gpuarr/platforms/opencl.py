"""The opencl platform: jitted Programs run as generated kernels on an OpenCL device (PoCL on
the CPU), through the same passes, fusion and templates as CUDA. Buffers are host NumPy
arrays, uploaded and downloaded around each call; eager single operations use the NumPy
implementations (only jit goes through kernels).
"""
from __future__ import annotations

import numpy as np

from gpuarr.backends import numpy_backend, opencl
from gpuarr.platforms import Device, Platform


class OpenCLDevice(Device):
    kind_name = "OpenCLDevice"


class OpenCLPlatform(Platform):
    name = "opencl"

    def __init__(self):
        if not opencl.available():
            raise RuntimeError("no OpenCL device: install pyopencl and PoCL "
                               "(pip install 'pyopencl[pocl]')")
        self._devices = [OpenCLDevice("opencl", 0)]

    def devices(self):
        return self._devices

    def compile(self, closed):
        """Fuse and render `closed`; control-flow bodies compile the same way, as sub-plans."""
        from gpuarr.compiler import compile_closed, passes
        from gpuarr.compiler.fusion import FusionOptions
        options = FusionOptions(sub_compiler=lambda sub: self.compile(passes.optimize(sub)))
        plan = compile_closed(closed, options)
        consts = [np.asarray(getattr(c, "_value", c)) for c in closed.consts]

        def run(*buffers):
            return tuple(opencl.run_plan(plan, consts + [np.asarray(b) for b in buffers]))

        run.launch_plan = plan
        return run

    def apply_primitive(self, prim, buffers, params):
        return numpy_backend.impl_rules[prim](*buffers, **params)

    def from_host(self, value, device):
        return np.asarray(value)

    def to_host(self, buffer):
        return buffer


def make() -> OpenCLPlatform:
    return OpenCLPlatform()
