"""The opencl platform: jitted Programs run as generated kernels on an OpenCL device (PoCL on
the CPU), through the same passes, fusion and templates as CUDA. Buffers are host NumPy
arrays, uploaded and downloaded around each call; eager single operations use the NumPy
implementations (only jit goes through kernels).
"""
from __future__ import annotations

import numpy as np

from gpuarr.backends import float_env, opencl
from gpuarr.backends import numpy as numpy_backend
from gpuarr.compiler import compile_closed, inline_calls
from gpuarr.compiler.fusion import FusionOptions
from gpuarr.platforms import Device
from gpuarr.platforms.host import HostBufferPlatform, computes_floats


class OpenCLDevice(Device):
    kind_name = "OpenCLDevice"


class OpenCLPlatform(HostBufferPlatform):
    """Host NumPy buffers and eager ops as on the cpu platform; jit compiles to kernels."""

    name = "opencl"

    def __init__(self):
        if not opencl.available():
            raise RuntimeError("no OpenCL device: install pyopencl and PoCL "
                               "(pip install 'pyopencl[pocl]')")
        super().__init__(OpenCLDevice("opencl", 0))

    def codegen(self, closed):
        """Fuse and render `closed` (its calls inlined first: a kernel plan cannot run one);
        control-flow bodies go through `compile` (passes, then kernels) as sub-plans."""
        closed = inline_calls(closed)
        plan = compile_closed(closed, FusionOptions(sub_compiler=float_env.unflushed(self.compile)))
        consts = [np.asarray(numpy_backend.as_numpy(c)) for c in closed.consts]

        def run(*buffers):
            return tuple(opencl.run_plan(plan, consts + [np.asarray(b) for b in buffers]))

        run.launch_plan = plan
        # Host steps flush subnormals as XLA's CPU code does.
        return float_env.flushed(run) if computes_floats(closed.program) else run


def make() -> OpenCLPlatform:
    return OpenCLPlatform()
