"""NVRTC through ctypes: CUDA C source -> cubin (or PTX), with a memory and an on-disk cache.

No GPU or driver is needed to compile, so every generated kernel is compile-checked on any
machine with the NVRTC wheel (`pip install "gpuarr[cuda12]"`, i.e. nvidia-cuda-nvrtc-cu12).
The disk cache (`gpuarr.backends.kernel_cache`, in `GPUARR_CACHE_DIR`) keys entries by source,
options, arch and NVRTC version; a truncated or corrupt entry is recompiled, never trusted.
`compile_count()` counts real NVRTC invocations, so tests can show that a warm cache compiles
nothing. This module imports nothing from gpuarr but the kernel cache.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import sys
import threading
from pathlib import Path

from gpuarr.backends import kernel_cache

DEFAULT_ARCH = "sm_90"
# 177 (function declared but never referenced) and 186 (unsigned compared with zero) come from
# the shared headers' helpers for every type, a hundred or more per kernel: silenced so that a
# warning about the kernel itself stands out.
DEFAULT_OPTIONS = ("--std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
                   "--fmad=false", "--diag-suppress=177,186")
_MAGIC = b"GPUARR-NVRTC1\n"

_lock = threading.Lock()
_lib = None
_memory_cache: dict = {}
_logs: dict = {}  # kernel name -> the log of its last successful compilation, if not empty
_compiles = 0


class NVRTCError(RuntimeError):
    """A compilation failed; the message carries the NVRTC log and the numbered source."""


class NVRTCNotFoundError(RuntimeError):
    """libnvrtc could not be loaded."""


def _candidates() -> list:
    found = []
    for base in sys.path:
        if not base or not os.path.isdir(os.path.join(base, "nvidia")):
            continue
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.*")))
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cu13", "lib", "libnvrtc.so.*")))
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "lib*", "libnvrtc.so*")))
    found = [f for f in found if "builtins" not in os.path.basename(f)]
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    found += sorted(glob.glob(os.path.join(cuda_home, "lib64", "libnvrtc.so*")))
    found += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    return found


def library():
    """Load libnvrtc (pip wheel first, then the system); raise naming the package if absent."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        _lib = lib
        return lib
    raise NVRTCNotFoundError(
        "NVRTC (libnvrtc) was not found. Install it with `pip install \"gpuarr[cuda12]\"` "
        "(the nvidia-cuda-nvrtc-cu12 wheel) or `pip install \"gpuarr[cuda13]\"`, or set CUDA_HOME.")


def available() -> bool:
    try:
        library()
        return True
    except NVRTCNotFoundError:
        return False


def version() -> tuple:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
    return (major.value, minor.value)


def compile_count() -> int:
    """How many times this process has invoked NVRTC (cache hits do not count)."""
    return _compiles


def _check(status: int, what: str = "nvrtc") -> None:
    if status != 0:
        msg = library().nvrtcGetErrorString(status).decode()
        raise NVRTCError(f"{what} failed: {msg}")


def numbered(source: str) -> str:
    return "\n".join(f"{n:5d}  {line}" for n, line in enumerate(source.splitlines(), 1))


def _nvrtc_compile(source: str, name: str, options: tuple, target: str) -> bytes:
    global _compiles
    lib = library()
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), (name + ".cu").encode(),
                                  0, None, None), "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        with _lock:
            _compiles += 1
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if status != 0:
            raise NVRTCError(
                f"NVRTC could not compile kernel {name!r} "
                f"({lib.nvrtcGetErrorString(status).decode()}):\n"
                f"{log.value.decode(errors='replace')}\n--- source ---\n{numbered(source)}")
        _keep_log(name, log.value.decode(errors="replace").strip())
        get_size, get = ((lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if target == "cubin"
                         else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX))
        _check(get_size(prog, ctypes.byref(size)), "nvrtcGet" + target.upper() + "Size")
        out = ctypes.create_string_buffer(size.value)
        _check(get(prog, out), "nvrtcGet" + target.upper())
        return out.raw[: size.value]
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def compile(source: str, name: str = "kernel", arch: str = DEFAULT_ARCH, target: str = "cubin",
            options: tuple = DEFAULT_OPTIONS, use_disk_cache: bool = True) -> bytes:
    """Compile CUDA C `source` to a cubin (or `target='ptx'`) for `arch`, through both caches.

    Raises NVRTCError with the compiler log and the numbered source when compilation fails,
    and NVRTCNotFoundError (naming the pip package) when libnvrtc is missing.
    """
    if target not in ("cubin", "ptx"):
        raise ValueError(f"target must be 'cubin' or 'ptx', not {target!r}")
    arch_opt = f"--gpu-architecture={arch if target == 'cubin' else arch.replace('sm_', 'compute_')}"
    options = tuple(options) + (arch_opt,)
    key = hashlib.sha256(repr((source, options, target, version())).encode()).hexdigest()
    hit = _memory_cache.get(key)
    if hit is not None:
        return hit
    path = kernel_cache.entry_path("nvrtc", key, target)
    payload = kernel_cache.read(path, _MAGIC) if use_disk_cache else None
    if payload is None:
        payload = _nvrtc_compile(source, name, options, target)
        if use_disk_cache:
            kernel_cache.write(path, _MAGIC, payload)
    _memory_cache[key] = payload
    return payload


def _keep_log(name: str, text: str) -> None:
    """Keep a successful compilation's warnings: `compile_log(name)` returns them and, with
    GPUARR_DUMP_DIR set, they are written beside the dumped source as `<name>.log`."""
    if not text:
        _logs.pop(name, None)
        return
    _logs[name] = text
    dump_dir = os.environ.get("GPUARR_DUMP_DIR")
    if dump_dir:
        try:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
            (Path(dump_dir) / f"{name}.log").write_text(text + "\n")
        except OSError:
            pass  # the log stays available through compile_log


def compile_log(name: str) -> str:
    """The NVRTC log (warnings) of the last successful compilation of kernel `name`; empty
    when it compiled cleanly."""
    return _logs.get(name, "")


def clear_memory_cache() -> None:
    _memory_cache.clear()
