"""NVRTC compilation (copies cupy/cuda/compiler.py's errors and option handling).

The real NVRTC compiles every kernel for the simulated device's architecture, so syntax
errors, unsupported constructs and ptxas limits (more than 48 KiB of static shared memory,
parameter space) fail here exactly as on a GPU machine. ptxas' resource report (`-v`) gives
each entry function's registers and static shared memory for the launch checks.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import sys
import tempfile
import threading
from collections import OrderedDict

from cupy import _standin

_lock = threading.Lock()
_lib = None
# Compiled images kept in memory, least recently used first. CuPy keeps none here (a RawModule
# holds its own module, and compiler.py reads the disk cache for each new one); this memo only
# saves the stand-in the disk read, so it is bounded: a whole test run compiles tens of
# thousands of kernels.
_cache: OrderedDict = OrderedDict()
_CACHED = 1024


def _remember(key, compiled):
    _cache[key] = compiled
    while len(_cache) > _CACHED:
        _cache.popitem(last=False)
    return compiled


class CompileException(Exception):
    # compiler.py: CompileException(msg, source, name, options, backend); str() is the log
    def __init__(self, msg, source, name, options, backend="nvrtc"):
        self._msg, self.source, self.name, self.options, self.backend = msg, source, name, options, backend
        super().__init__()

    def __reduce__(self):
        return (type(self), (self._msg, self.source, self.name, self.options, self.backend))

    def __repr__(self):
        return str(self)

    def __str__(self):
        return self.get_message()

    def get_message(self):
        return self._msg

    def dump(self, f):
        f.write(f"{self.backend.upper()} compilation error: {self}\n-----\nName: {self.name}\n"
                f"Options: {' '.join(self.options)}\nCUDA source:\n{self.source}\n-----\n")


class NVRTCError(RuntimeError):
    def __init__(self, status):
        self.status = status
        super().__init__(f"{_library().nvrtcGetErrorString(status).decode()} ({status})")


def _library():
    """libnvrtc from the nvidia-cuda-nvrtc wheel (or CUDA_HOME)."""
    global _lib
    if _lib is None:
        found = []
        for base in sys.path:
            for sub in ("cuda_nvrtc", "cu13"):
                found += sorted(glob.glob(os.path.join(base or ".", "nvidia", sub, "lib", "libnvrtc.so.*")))
        cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        found += sorted(glob.glob(os.path.join(cuda_home, "lib64", "libnvrtc.so*")))
        found = [f for f in found if "builtins" not in os.path.basename(f)] + ["libnvrtc.so.12"]
        for path in found:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            _lib = lib
            break
        else:
            raise RuntimeError("NVRTC (libnvrtc) not found: pip install nvidia-cuda-nvrtc-cu12")
    return _lib


def available() -> bool:
    try:
        _library()
        return True
    except RuntimeError:
        return False


def _get_nvrtc_version() -> tuple:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def _get_arch() -> str:
    from cupy.cuda import device
    return device.Device().compute_capability


class Compiled:
    """A cubin plus what ptxas reported per entry function: {name: (registers, smem)}."""

    def __init__(self, image: bytes, log: str, resources: dict):
        self.image, self.log, self.resources = image, log, resources


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def _resources(log: str) -> dict:
    out, current = {}, None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = m.group(1)
            out[current] = (0, 0)
        m = _USED.search(line)
        if m and current is not None:
            out[current] = (int(m.group(1)), int(m.group(2) or 0))
    return out


def compile_using_nvrtc(source, options=(), arch=None, filename="kern.cu", name_expressions=None,
                        log_stream=None, cache_in_memory=False, jitify=None, method=None):
    """compiler.py: -arch=sm_XX (cubin) when NVRTC knows the architecture."""
    arch = _get_arch() if arch is None else str(arch)
    options = tuple(options) + (f"-arch=sm_{arch}",)
    return _compile(source, options, filename).image


def get_cache_dir() -> str:
    """compiler.py: CUPY_CACHE_DIR, by default ~/.cupy/kernel_cache."""
    return os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")


def _disk_path(source: str, options: tuple) -> str:
    """compiler.py (_compile_with_cache_cuda): the file is named by a hash of the options, the
    NVRTC version and the source."""
    version = _get_nvrtc_version()
    digest = hashlib.md5(repr((options, version, source)).encode()).hexdigest()
    return os.path.join(get_cache_dir(), f"{digest}.cubin")


def _load_cached(path: str):
    """compiler.py: an entry starts with the hash of the rest; a damaged one is recompiled."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    if hashlib.md5(payload).hexdigest().encode() != digest:
        return None
    image, _, log = payload.partition(b"\0LOG\0")
    text = log.decode(errors="replace")
    return Compiled(image, text, _resources(text))


def _save_cached(path: str, compiled: Compiled) -> None:
    """Written to a temporary file and renamed, as CuPy does, so readers never see a partial one."""
    payload = compiled.image + b"\0LOG\0" + compiled.log.encode()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.md5(payload).hexdigest().encode() + payload)
        os.replace(tmp, path)
    except OSError:
        pass


def _compile(source: str, options: tuple, filename: str = "kern.cu") -> Compiled:
    key = (source, options)
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    path = _disk_path(source, options)
    hit = _load_cached(path)
    if hit is not None:
        return _remember(key, hit)
    _standin.counters.compile()
    lib = _library()
    prog = ctypes.c_void_p()
    status = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None)
    if status:
        raise NVRTCError(status)
    try:
        opts = [o.encode() for o in options + ("--ptxas-options=-v",)]
        status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if status:
            raise CompileException(log, source, filename, options, "nvrtc")
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        image = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, image)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    compiled = _remember(key, Compiled(image.raw, log, _resources(log)))
    _save_cached(path, compiled)
    return compiled
