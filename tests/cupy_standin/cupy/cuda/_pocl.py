"""Running a kernel's source on PoCL (the CPU OpenCL driver) over the stand-in's memory.

gpuarr's kernel sources begin with `#if defined(__OPENCL_VERSION__)` dialect switches, so the
text NVRTC compiled also builds as OpenCL C. Pointer arguments are passed as raw SVM pointers
(clSetKernelArgSVMPointer): PoCL's CPU device dereferences them directly, so a kernel reads and
writes the stand-in's device memory in place, at any byte offset, and arguments that alias one
allocation see one memory (the stand-in's tests check this).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

_lock = threading.Lock()
_state: dict = {}
_programs: dict = {}


def _context():
    if not _state:
        import pyopencl as cl
        platforms = [p for p in cl.get_platforms() if "Portable" in p.name] or cl.get_platforms()
        ctx = cl.Context(devices=platforms[0].get_devices()[:1])
        _state.update(cl=cl, ctx=ctx, queue=cl.CommandQueue(ctx))
    return _state


def available() -> bool:
    try:
        _context()
        return True
    except Exception:  # noqa: BLE001 - no pyopencl or no platform
        return False


def kernel(source: str, name: str, flush_denormals: bool):
    """The OpenCL kernel `name` of `source`, built once (denormals flushed when the CUDA
    build flushes them: CuPy passes -ftz=true)."""
    st = _context()
    key = (source, flush_denormals)
    with _lock:
        prg = _programs.get(key)
        if prg is None:
            opts = ["-cl-std=CL1.2"] + (["-cl-denorms-are-zero"] if flush_denormals else [])
            try:
                prg = st["cl"].Program(st["ctx"], source).build(options=opts)
            except st["cl"].Error as e:
                raise RuntimeError(
                    "the CuPy stand-in runs kernels on PoCL, and this source does not build as "
                    f"OpenCL C (kernels need the dialect switch of gpuarr's prelude):\n{e}") from e
            _programs[key] = prg
        return st["cl"].Kernel(prg, name)


def launch(knl, grid, block, args) -> None:
    """Run `knl` over grid x block; `args` are ('ptr', address) or ('val', NumPy scalar)."""
    st = _context()
    cl = st["cl"]
    for i, (kind, value) in enumerate(args):
        if kind == "ptr":
            if value:
                view = np.ctypeslib.as_array((ctypes.c_uint8 * 1).from_address(value))
                knl.set_arg(i, cl.SVM(view))
            else:
                knl.set_arg(i, None)
        else:
            knl.set_arg(i, value)
    gsize = tuple(g * b for g, b in zip(grid, block))
    cl.enqueue_nd_range_kernel(st["queue"], knl, gsize, tuple(block))
    st["queue"].finish()
