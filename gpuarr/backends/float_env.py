"""XLA's float environment on the host: subnormal floats flushed to zero.

XLA's CPU runtime computes with the SSE control register's flush-to-zero and
denormals-are-zero bits set (tsl's ScopedFlushDenormal), so under JAX arithmetic on float32
and float64 arrays reads subnormal operands as zero and writes zero for subnormal results:
`jnp.array([1e-39, 1.0], jnp.float32) + 0` is `[0, 1]` and `1e-39 > 0` is False. NumPy has no
switch for this, so `flushing()` sets the same two bits (MXCSR 0x8040) around gpuarr's host
computation and restores the caller's value afterwards, leaving Python's own float
arithmetic alone; gpuarr's pool threads keep them set (`flush_in_this_thread`). The register
is read and written through the C math library's `fegetenv`/`fesetenv`, whose x86-64 `fenv_t`
ends with the MXCSR word (glibc's and musl's bits/fenv.h: 32 bytes, the x87 environment
first). Elsewhere (other architectures or systems, a C library without these) `available()` is
False and subnormals survive, as docs/arithmetic.md records. This module imports only the
standard library.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

FTZ_DAZ = 0x8040  # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)


class _FEnv(ctypes.Structure):
    """x86-64 `fenv_t`: the 28-byte x87 environment (fnstenv's layout), then MXCSR."""
    _fields_ = [("x87", ctypes.c_uint8 * 28), ("mxcsr", ctypes.c_uint32)]


def _load():
    # The fenv_t layout below is Linux's (glibc, musl); macOS's and Windows' differ.
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return None, None
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")  # glibc's fenv.h
        get_env, set_env = libm.fegetenv, libm.fesetenv
    except (OSError, AttributeError):
        return None, None
    for fn in (get_env, set_env):
        fn.argtypes, fn.restype = [ctypes.POINTER(_FEnv)], ctypes.c_int
    env = _FEnv()
    if ctypes.sizeof(_FEnv) != 32 or get_env(env) != 0:
        return None, None

    def flush() -> _FEnv | None:
        """Set FTZ and DAZ in this thread; the environment to restore, None if they were set."""
        env = _FEnv()
        get_env(env)
        if env.mxcsr & FTZ_DAZ == FTZ_DAZ:
            return None
        saved = _FEnv.from_buffer_copy(env)
        env.mxcsr |= FTZ_DAZ
        set_env(env)
        return saved

    def unflush() -> _FEnv | None:
        """Clear FTZ and DAZ in this thread; the environment to restore, None if clear."""
        env = _FEnv()
        get_env(env)
        if env.mxcsr & FTZ_DAZ == 0:
            return None
        saved = _FEnv.from_buffer_copy(env)
        env.mxcsr &= ~FTZ_DAZ & 0xFFFFFFFF
        set_env(env)
        return saved
    flush.unflush = unflush
    return flush, set_env


_flush, _restore = _load()


def available() -> bool:
    """Whether this machine's host computation flushes subnormals as XLA's does."""
    return _flush is not None


class _Flushing:
    """Context manager: FTZ and DAZ set inside, the previous environment restored after."""
    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = _flush()

    def __exit__(self, *exc):
        if self._saved is not None:
            _restore(self._saved)


class _Nothing:
    __slots__ = ()

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


_NOTHING = _Nothing()


def flushing():
    """A context in which this thread's float arithmetic flushes subnormals to zero."""
    return _Flushing() if _flush is not None else _NOTHING


def flush_in_this_thread() -> None:
    """Set FTZ and DAZ for good in the calling thread (gpuarr's own pool threads)."""
    if _flush is not None:
        _flush()


def flushed(fn):
    """`fn` wrapped to run under `flushing()` (compiled Programs' host callables)."""
    if _flush is None:
        return fn

    def run(*args):
        saved = _flush()
        try:
            return fn(*args)
        finally:
            if saved is not None:
                _restore(saved)
    run.__dict__.update(getattr(fn, "__dict__", {}))  # source, launch_plan, donating
    run.__wrapped__ = fn
    return run


def unflushed(fn):
    """`fn` wrapped to run with subnormals kept, whatever the calling thread's environment: for
    compiling, which a loop's driver may do inside a flushed program, and whose constant
    folding keeps subnormal constants as XLA's does."""
    if _flush is None:
        return fn

    def run(*args):
        saved = _flush.unflush()
        try:
            return fn(*args)
        finally:
            if saved is not None:
                _restore(saved)
    run.__wrapped__ = fn
    return run
