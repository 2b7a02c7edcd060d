"""XLA's float environment on the host: subnormal floats flushed to zero.

XLA's CPU runtime computes with the SSE control register's flush-to-zero and
denormals-are-zero bits set (tsl's ScopedFlushDenormal), so under JAX arithmetic on float32
and float64 arrays reads subnormal operands as zero and writes zero for subnormal results:
`jnp.array([1e-39, 1.0], jnp.float32) + 0` is `[0, 1]` and `1e-39 > 0` is False. NumPy has no
switch for this, so `flushing()` sets the same two bits (MXCSR 0x8040) around gpuarr's host
computation and restores the caller's value afterwards, leaving Python's own float
arithmetic alone; gpuarr's pool threads keep them set (`flush_in_this_thread`). The register
is read and written by two tiny x86-64 routines placed in an executable page. Elsewhere (other
architectures, Windows, or where no executable page can be had) `available()` is False and
subnormals survive, as docs/arithmetic.md records. This module imports only the standard library.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import sys

FTZ_DAZ = 0x8040  # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)
# uint32 or_mxcsr(uint32 bits): stmxcsr [rsp-4]; mov eax, [rsp-4]; or [rsp-4], edi;
#                               ldmxcsr [rsp-4]; ret          -> the previous value
# void set_mxcsr(uint32 value): mov [rsp-4], edi; ldmxcsr [rsp-4]; ret
_CODE = bytes.fromhex("0FAE5C24FC" "8B4424FC" "097C24FC" "0FAE5424FC" "C3"
                      "897C24FC" "0FAE5424FC" "C3")
_SET_OFFSET = 19


def _load():
    if sys.platform == "win32" or platform.machine().lower() not in ("x86_64", "amd64"):
        return None, None, None
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, AttributeError, ValueError):  # W^X policies refuse writable code pages
        return None, None, None
    page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    or_bits = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)(address)
    set_value = ctypes.CFUNCTYPE(None, ctypes.c_uint32)(address + _SET_OFFSET)
    return page, or_bits, set_value


_page, _or_bits, _set_value = _load()


def available() -> bool:
    """Whether this machine's host computation flushes subnormals as XLA's does."""
    return _or_bits is not None


class _Flushing:
    """Context manager: FTZ and DAZ set inside, the previous control register restored after."""
    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = _or_bits(FTZ_DAZ)

    def __exit__(self, *exc):
        if self._saved & FTZ_DAZ != FTZ_DAZ:
            _set_value(self._saved)


class _Nothing:
    __slots__ = ()

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


_NOTHING = _Nothing()


def flushing():
    """A context in which this thread's float arithmetic flushes subnormals to zero."""
    return _Flushing() if _or_bits is not None else _NOTHING


def flush_in_this_thread() -> None:
    """Set FTZ and DAZ for good in the calling thread (gpuarr's own pool threads)."""
    if _or_bits is not None:
        _or_bits(FTZ_DAZ)


def flushed(fn):
    """`fn` wrapped to run under `flushing()` (compiled Programs' host callables)."""
    if _or_bits is None:
        return fn

    def run(*args):
        saved = _or_bits(FTZ_DAZ)
        try:
            return fn(*args)
        finally:
            if saved & FTZ_DAZ != FTZ_DAZ:
                _set_value(saved)
    run.__dict__.update(getattr(fn, "__dict__", {}))  # source, launch_plan, donating
    run.__wrapped__ = fn
    return run
