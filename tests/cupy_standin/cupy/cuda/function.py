"""Kernel functions and their launches (copies cupy/cuda/function.pyx and the launch checks
of cuLaunchKernel).

A launch is checked now, as the driver checks it: block and grid dimensions, shared memory
(ptxas' static amount plus the dynamic request, at most 48 KiB), registers per block, and the
kernel parameter space (4,096 bytes, or 32,764 with a driver >= 12.1); failures raise
CUDADriverError with CUDA's names. Arguments are converted as CuPy's `_pointer` converts them
and checked against the kernel's parameter list, parsed from the source (on a GPU a wrong count
or width silently passes garbage). The launch is then queued; when it runs, a pointer that is
not aligned to its element type (16 bytes for LOAD4/STORE4 operands) is a misaligned access,
which kills the context (a sticky CUDA_ERROR_MISALIGNED_ADDRESS); otherwise the kernel runs on
PoCL over the device memory.
"""
from __future__ import annotations

import re

import numpy as np

from cupy import _standin
from cupy.cuda import _pocl, _queue, memory, runtime
from cupy.cuda import stream as stream_mod
from cupy.cuda.driver import (
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_MISALIGNED_ADDRESS,
    CUDA_ERROR_NOT_FOUND,
    CUDADriverError,
)

_SCALARS = {
    "i8": "i1", "char": "i1", "signed char": "i1", "u8": "u1", "unsigned char": "u1", "uchar": "u1",
    "bool": "?", "i16": "i2", "short": "i2", "u16": "u2", "unsigned short": "u2", "ushort": "u2",
    "i32": "i4", "int": "i4", "u32": "u4", "unsigned int": "u4", "unsigned": "u4", "uint": "u4",
    "i64": "i8", "long long": "i8", "u64": "u8", "unsigned long long": "u8", "size_t": "u8",
    "ptrdiff_t": "i8", "long": "i8", "ulong": "u8", "f32": "f4", "float": "f4", "f64": "f8",
    "double": "f8", "c64": "c8", "float2": "c8", "half": "f2", "__half": "f2",
}
_ALIGN = {"f32x4": 16, "i32x4": 16, "u32x4": 16, "float4": 16, "int4": 16, "uint4": 16}
_QUALIFIERS = {"GLOBAL", "__global", "global", "const", "__restrict__", "restrict", "volatile",
               "__restrict"}


class Param:
    """One kernel parameter: a pointer to `elem` or a scalar of NumPy dtype `dtype`."""

    def __init__(self, name, pointer, ctype):
        self.name, self.pointer, self.ctype = name, pointer, ctype
        self.dtype = None if pointer else np.dtype(_SCALARS.get(ctype, "V8"))
        elem = _SCALARS.get(ctype)
        self.align = _ALIGN.get(ctype, np.dtype(elem).itemsize if elem else 1)
        if ctype == "c64" or ctype == "float2":
            self.align = 8

    @property
    def size(self) -> int:
        return 8 if self.pointer else self.dtype.itemsize


def parse_params(source: str, name: str) -> list:
    """The parameter list of kernel `name` in `source` (before preprocessing: gpuarr writes
    `GLOBAL const f32 *x`)."""
    m = re.search(r"\bvoid\s+" + re.escape(name) + r"\s*\(([^)]*)\)\s*\{", source)
    if m is None:
        raise CUDADriverError(CUDA_ERROR_NOT_FOUND)
    params = []
    for raw in filter(None, (p.strip() for p in m.group(1).split(","))):
        pointer = "*" in raw
        words = [w for w in re.findall(r"[A-Za-z_]\w*", raw) if w not in _QUALIFIERS]
        params.append(Param(words[-1], pointer, " ".join(words[:-1])))
    return params


def vector_params(source: str) -> set:
    """Names used as LOAD4/STORE4 operands (16-byte accesses)."""
    return set(re.findall(r"(?:LOAD4|STORE4)\(\s*\w+\s*,\s*(\w+)", source))


def _convert(arg, param: Param, kernel: str):
    """function.pyx `_pointer` and _scalar.pyx `CScalar`, plus the width check a GPU lacks."""
    from cupy._core.core import ndarray
    from cupy.cuda.memory import MemoryPointer
    where = f"argument {param.name!r} of kernel {kernel!r}"
    if isinstance(arg, np.ndarray):
        if arg.size != 1:
            raise TypeError(
                f"You are trying to pass a numpy.ndarray of shape {arg.shape} as a kernel "
                "parameter. Only numpy.ndarrays of size one can be passed by value. If you meant "
                "to pass a pointer to __global__ memory, you need to pass a cupy.ndarray instead.")
        arg = arg.reshape(()).dtype.type(arg.reshape(()).item())
    if param.pointer:
        if arg is None:
            return ("ptr", 0)
        if isinstance(arg, ndarray):
            return ("ptr", arg.data.ptr)
        if isinstance(arg, MemoryPointer):
            return ("ptr", arg.ptr)
        raise TypeError(f"{where} is a pointer; got {type(arg).__name__} (on a GPU this value "
                        "would be dereferenced as an address)")
    if isinstance(arg, ndarray) or arg is None:
        raise TypeError(f"{where} is a {param.ctype} scalar; got {type(arg).__name__}")
    if type(arg) is bool:
        src = np.dtype(np.bool_)
    elif type(arg) is int:
        src = np.dtype(np.uint64 if arg >= 2**63 else np.int64)
    elif type(arg) is float:
        src = np.dtype(np.float64)
    elif type(arg) is complex:
        src = np.dtype(np.complex128)
    elif isinstance(arg, np.generic):
        src = arg.dtype
    else:
        raise TypeError(f"Unsupported type {type(arg)}")
    dst = param.dtype
    # The driver copies sizeof(param) bytes from the converted value: a narrower value reads
    # past it, and a wider one is only right when its low bytes are the value (integers).
    same = src == dst
    fits = (src.kind in "biu" and dst.kind in "biu" and src.itemsize >= dst.itemsize
            and np.can_cast(np.min_scalar_type(int(arg)), dst, "safe"))
    if not (same or fits):
        raise TypeError(f"{where} is {param.ctype} ({dst}); a {src} value would pass the wrong "
                        f"bytes (CuPy converts Python int to int64 and float to float64)")
    return ("val", dst.type(arg))


class Function:
    """A kernel of a compiled module (function.pyx: Function)."""

    def __init__(self, source, name, compiled, flush_denormals):
        self.source, self.name, self.compiled = source, name, compiled
        if name not in compiled.resources:
            raise CUDADriverError(CUDA_ERROR_NOT_FOUND)  # cuModuleGetFunction
        self.registers, self.static_smem = compiled.resources[name]
        self.params = parse_params(source, name)
        self.vector = vector_params(source)
        self.flush_denormals = flush_denormals
        self._kernel = None

    def _check_launch(self, grid, block, shared_mem, args) -> None:
        props = runtime.getDeviceProperties(runtime.getDevice())
        if any(b < 1 or b > m for b, m in zip(block, props["maxThreadsDim"])) or \
                block[0] * block[1] * block[2] > props["maxThreadsPerBlock"]:
            raise CUDADriverError(CUDA_ERROR_INVALID_VALUE)
        if any(g < 1 or g > m for g, m in zip(grid, props["maxGridSize"])):
            raise CUDADriverError(CUDA_ERROR_INVALID_VALUE)
        if shared_mem + self.static_smem > props["sharedMemPerBlock"]:
            raise CUDADriverError(CUDA_ERROR_INVALID_VALUE)
        threads = block[0] * block[1] * block[2]
        if self.registers * (-(-threads // 32) * 32) > props["regsPerBlock"]:
            raise CUDADriverError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
        limit = 32764 if _standin.driver_version() >= 12010 else 4096
        if sum(p.size for p in self.params) > limit:
            raise CUDADriverError(CUDA_ERROR_INVALID_VALUE)

    def __call__(self, grid, block, args, shared_mem=0, stream=None,
                 enable_cooperative_groups=False):
        if not isinstance(grid, tuple):
            raise TypeError(f"Argument 'grid' has incorrect type (expected tuple, got "
                            f"{type(grid).__name__})")
        if not isinstance(block, tuple):
            raise TypeError(f"Argument 'block' has incorrect type (expected tuple, got "
                            f"{type(block).__name__})")
        # function.pyx: missing dimensions are 1 and every dimension is at least 1
        grid = tuple(max(1, int(g)) for g in (grid + (1, 1))[:3])
        block = tuple(max(1, int(b)) for b in (block + (1, 1))[:3])
        args = tuple(args)
        if len(args) != len(self.params):
            raise TypeError(f"kernel {self.name!r} takes {len(self.params)} arguments, got "
                            f"{len(args)} (a GPU would read garbage for the difference)")
        converted = [_convert(a, p, self.name) for a, p in zip(args, self.params)]
        dev = runtime.getDevice()
        runtime.check_sticky(dev, driver=True)
        self._check_launch(grid, block, int(shared_mem), args)
        s = stream_mod.get_current_stream() if stream is None else stream
        checks = [(v, 16 if p.name in self.vector else p.align)
                  for (kind, v), p in zip(converted, self.params) if kind == "ptr" and v]

        def run():
            if any(ptr % align for ptr, align in checks):
                runtime.record_fault(dev, CUDA_ERROR_MISALIGNED_ADDRESS)
                return
            # Another GPU's memory without peer access (CuPy enables none by itself) faults.
            if any((memory.owner_of(ptr) or (dev,))[0] != dev for ptr, _ in checks):
                runtime.record_fault(dev, CUDA_ERROR_ILLEGAL_ADDRESS)
                return
            if self._kernel is None:
                self._kernel = _pocl.kernel(self.source, self.name, self.flush_denormals)
            _pocl.launch(self._kernel, grid, block, converted)

        _queue.submit(run, s._queue())
        _standin.counters.launch(self.name)

    def linear_launch(self, size, args, shared_mem=0, block_max_size=128, stream=None):
        gridx = min(0x7FFFFFFF, (size + block_max_size - 1) // block_max_size)
        self((gridx,), (min(block_max_size, size),), args, shared_mem, stream)


class Module:
    """cupy.cuda.function.Module. The stand-in cannot run a cubin (it runs kernels from their
    source on PoCL), so loading one is refused: use cupy.RawModule(code=...)."""

    def load(self, cubin):
        raise NotImplementedError("the CuPy stand-in runs kernels from source; load them with "
                                  "cupy.RawModule(code=...) instead of Module.load(cubin)")

    load_file = load
