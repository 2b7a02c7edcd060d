"""The native platform: jitted Programs run as the same fused kernels the cuda and opencl
platforms run, rendered in the C dialect and built by the system C compiler into one shared
object per program (gpuarr/backends/native.py). Buffers are host NumPy arrays; eager single
operations, library calls (matmul, sort, FFT, linear algebra) and host steps use the NumPy
implementations on the same buffers.

Without a working C compiler (none on PATH, `CC` naming a broken one) every program runs on
the NumPy backend, after one log line giving the reason; when one program's kernels cannot be
built (a compiler error), that program runs on the NumPy backend, also after one log line.
"""
from __future__ import annotations

import logging

import numpy as np

from gpuarr.backends import native
from gpuarr.backends import numpy as numpy_backend
from gpuarr.compiler import compile_closed, inline_calls, render
from gpuarr.compiler.fusion import FusionOptions
from gpuarr.platforms import Device
from gpuarr.platforms.host import HostBufferPlatform

logger = logging.getLogger("gpuarr")


class NativeDevice(Device):
    kind_name = "CpuDevice"


class NativePlatform(HostBufferPlatform):
    """Host NumPy buffers and eager ops as on the cpu platform; jit compiles to C kernels."""

    name = "native"

    def __init__(self):
        super().__init__(NativeDevice("native", 0))
        try:
            native.toolchain()
            self.unavailable = None
        except native.NativeCompilerNotFoundError as e:
            self.unavailable = str(e)
            logger.warning("native platform: no working C compiler, jitted programs run on "
                           "the NumPy backend: %s", e)

    def codegen(self, closed):
        """Fuse and render `closed` (its calls inlined first) in the C dialect and build it;
        control-flow bodies go through `compile` (passes, then kernels) as sub-plans. Falls
        back to the NumPy backend, with one log line, when the kernels cannot be built."""
        if self.unavailable is not None:
            return numpy_backend.compile_closed(closed)
        closed = inline_calls(closed)
        plan = compile_closed(closed, FusionOptions(sub_compiler=self.compile), dialect="c")
        try:
            runner = native.PlanRunner(plan, render.prelude("c"))
        except (native.NativeCompileError, native.NativeCompilerNotFoundError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            logger.warning("native platform: running this program on the NumPy backend: %s",
                           reason)
            return numpy_backend.compile_closed(closed)
        consts = [np.asarray(getattr(c, "_value", c)) for c in closed.consts]

        def run(*buffers):
            return tuple(runner(consts + list(buffers)))

        run.launch_plan = plan
        return run


def make() -> NativePlatform:
    return NativePlatform()
