"""The opencl platform: jitted Programs run as generated kernels on an OpenCL device (PoCL on
the CPU), through the same passes, fusion and templates as CUDA. Buffers are host NumPy
arrays, uploaded and downloaded around each call; eager single operations use the NumPy
implementations (only jit goes through kernels).
"""
from __future__ import annotations

import numpy as np

from gpuarr.backends import opencl
from gpuarr.platforms import Device
from gpuarr.platforms.cpu import CpuPlatform


class OpenCLDevice(Device):
    kind_name = "OpenCLDevice"


class OpenCLPlatform(CpuPlatform):
    """Host NumPy buffers and eager ops as on the cpu platform; jit compiles to kernels."""

    name = "opencl"

    def __init__(self):
        if not opencl.available():
            raise RuntimeError("no OpenCL device: install pyopencl and PoCL "
                               "(pip install 'pyopencl[pocl]')")
        self._devices = [OpenCLDevice("opencl", 0)]

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


def make() -> OpenCLPlatform:
    return OpenCLPlatform()
