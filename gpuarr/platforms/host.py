"""Platforms whose buffers are host NumPy arrays (cpu, opencl): eager operations run the NumPy
implementations, and moving data to or from the host is a no-op."""
from __future__ import annotations

import numpy as np

from gpuarr import impls
from gpuarr.backends.float_env import flushing
from gpuarr.compiler import passes
from gpuarr.core import Program
from gpuarr.platforms import Device, Platform


def computes_floats(program) -> bool:
    """Whether `program` (or a sub-program in its equations' params) holds a non-integer value:
    only those need the host's float environment set (`float_env.flushed`)."""
    values = list(program.invars) + list(program.outvars) + list(program.constvars)
    for eqn in program.eqns:
        values += eqn.outvars
        values += [a for a in eqn.inputs if hasattr(a, "aval")]
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                sub = getattr(sub, "program", sub)
                if isinstance(sub, Program) and computes_floats(sub):
                    return True
    return any(np.dtype(v.aval.dtype).kind not in "biu" for v in values)


class HostBufferPlatform(Platform):
    """A platform with one device whose buffers are NumPy arrays; subclasses give `codegen`."""

    def __init__(self, device: Device):
        self._devices = [device]

    def devices(self):
        return self._devices

    def optimize(self, closed):
        return passes.optimize(closed)

    def apply_primitive(self, prim, buffers, params):
        with flushing():  # XLA's CPU arithmetic: subnormals flushed (backends/float_env.py)
            return impls.impl_for_values(prim, buffers)(*buffers, **params)

    def from_host(self, value, device):
        return np.asarray(value)

    def to_host(self, buffer):
        return buffer
