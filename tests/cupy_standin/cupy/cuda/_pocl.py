"""Running a kernel's source on PoCL (the CPU OpenCL driver) over the stand-in's memory.

gpuarr's kernel sources begin with `#if defined(__OPENCL_VERSION__)` dialect switches, so the
text NVRTC compiled also builds as OpenCL C. Pointer arguments are passed as raw SVM pointers
(clSetKernelArgSVMPointer): PoCL's CPU device dereferences them directly, so a kernel reads and
writes the stand-in's device memory in place, at any byte offset, and arguments that alias one
allocation see one memory (the stand-in's tests check this).

Built programs are kept as PoCL binaries beside CuPy's cubins (`CUPY_CACHE_DIR/pocl`), keyed by
the source, the build options and the OpenCL device and driver, and checksummed: a later process
loads a binary in about 2 ms, where a build from source costs about 100 ms even when PoCL's own
cache has it (PoCL preprocesses the source to find its entry). Only a successful build from
source is stored, so the source's OpenCL build errors still come from a build.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading
from collections import OrderedDict

import numpy as np

_lock = threading.Lock()
_state: dict = {}
# Built programs, least recently used first. A Function holds its kernel (and so its program)
# for as long as gpuarr keeps the Function, as a loaded CUDA module lives with its RawModule;
# this memo only saves rebuilding a source that comes back, and is bounded because a whole
# test run builds tens of thousands of programs, each holding PoCL's compiled code.
_programs: OrderedDict = OrderedDict()
_PROGRAMS = 256
_MAGIC = b"CUPY-STANDIN-POCL1\n"


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
        if prg is not None:
            _programs.move_to_end(key)
        else:
            opts = ["-cl-std=CL1.2"] + (["-cl-denorms-are-zero"] if flush_denormals else [])
            path = _cache_path(source, opts)
            binary = _read_binary(path)
            prg = _from_binary(binary, opts) if binary is not None else None
            if prg is None:
                try:
                    prg = st["cl"].Program(st["ctx"], source).build(options=opts)
                except st["cl"].Error as e:
                    raise RuntimeError(
                        "the CuPy stand-in runs kernels on PoCL, and this source does not build "
                        "as OpenCL C (kernels need the dialect switch of gpuarr's prelude):\n"
                        f"{e}") from e
                _write_binary(path, bytes(prg.get_info(st["cl"].program_info.BINARIES)[0]))
            _programs[key] = prg
            while len(_programs) > _PROGRAMS:
                _programs.popitem(last=False)
        return st["cl"].Kernel(prg, name)


def _cache_path(source: str, opts: list) -> str:
    from cupy.cuda import compiler
    st = _state
    dev = st["ctx"].devices[0]
    digest = hashlib.sha256(repr((source, opts, dev.name, dev.driver_version,
                                  dev.platform.version, st["cl"].VERSION)).encode()).hexdigest()
    return os.path.join(compiler.get_cache_dir(), "pocl", digest[:2], digest + ".bin")


def _read_binary(path: str):
    """The stored binary, or None when missing or damaged (PoCL aborts the process on some
    damaged binaries instead of failing the build, so a checksum guards them)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head, digest, payload = data[:len(_MAGIC)], data[len(_MAGIC):len(_MAGIC) + 64], \
        data[len(_MAGIC) + 64:]
    if head != _MAGIC or hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def _write_binary(path: str, binary: bytes) -> None:
    """Written to a temporary file and renamed, so a reader never sees part of one."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(binary).hexdigest().encode() + binary)
        os.replace(tmp, path)
    except OSError:
        pass


def _from_binary(binary: bytes, opts: list):
    """The program built from a stored binary, or None when PoCL refuses it."""
    cl, ctx = _state["cl"], _state["ctx"]
    try:
        return cl.Program(ctx, ctx.devices[:1], [binary]).build(options=opts)
    except cl.Error:
        return None


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
