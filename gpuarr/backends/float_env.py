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
False and subnormals survive, as docs/arithmetic.md records.

XLA also computes 0/0, log(0) and overflows silently, where NumPy reports each as a
RuntimeWarning, which a program that turns warnings into errors (pytest's `filterwarnings =
error`) sees; the same contexts turn NumPy's floating-point error handling off
(`np.errstate(all="ignore")`, set through NumPy's context variable, at a fraction of the
cost of entering an errstate).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

import numpy as np

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


def _numpy_errors():
    """NumPy's context variable holding its floating-point error handling, and its value with
    every error ignored (None, None where NumPy keeps it elsewhere)."""
    try:
        from numpy._core import _ufunc_config
        var = _ufunc_config._extobj_contextvar
    except (ImportError, AttributeError):
        return None, None
    with np.errstate(all="ignore"):
        return var, var.get()


_errors_var, _IGNORE_ALL = _numpy_errors()


def _quiet():
    """Ignore NumPy's floating-point errors in this thread; the token that `_unquiet` takes."""
    if _errors_var is not None:
        return _errors_var.set(_IGNORE_ALL)
    state = np.errstate(all="ignore")
    state.__enter__()
    return state


def _unquiet(token) -> None:
    if _errors_var is not None:
        _errors_var.reset(token)
    else:
        token.__exit__(None, None, None)


class _Flushing:
    """Context manager: FTZ and DAZ set and NumPy's floating-point warnings off inside, the
    previous environment restored after."""
    __slots__ = ("_saved", "_token")

    def __enter__(self):
        self._token = _quiet()
        self._saved = _flush() if _flush is not None else None

    def __exit__(self, *exc):
        if self._saved is not None:
            _restore(self._saved)
        _unquiet(self._token)


def flushing():
    """A context in which this thread's float arithmetic flushes subnormals to zero and
    raises no NumPy floating-point warnings."""
    return _Flushing()


def flush_in_this_thread() -> None:
    """Set FTZ and DAZ, and NumPy's floating-point warnings off, for good in the calling
    thread (gpuarr's own pool threads)."""
    _quiet()
    if _flush is not None:
        _flush()


def flushed(fn):
    """`fn` wrapped to run under `flushing()` (compiled Programs' host callables)."""
    def run(*args):
        token = _quiet()
        saved = _flush() if _flush is not None else None
        try:
            return fn(*args)
        finally:
            if saved is not None:
                _restore(saved)
            _unquiet(token)
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
