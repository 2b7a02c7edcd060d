"""A host stand-in for CuPy 14, used by gpuarr's tests where there is no GPU.

It provides the subset of CuPy that gpuarr calls, with CuPy's semantics copied from CuPy's
sources (each behaviour cites its file): simulated sm_90 devices whose memory is host memory
at real addresses; CuPy's pooled allocator (512-byte rounding, per-stream arenas, best fit
with splitting and merging, limits and OutOfMemoryError); streams and events with deferred,
in-order execution per stream, so a missing synchronisation or event wait reads stale data as
on a GPU; `ndarray` without implicit host conversion; DLPack and __cuda_array_interface__;
RawModule/RawKernel compiled by the real NVRTC (compile errors and ptxas limits are real),
launch limits and argument checks raising CUDA's errors, misaligned accesses as sticky faults,
and kernels run on PoCL from the same source; NumPy-computed library calls (matmul, sort, fft,
linalg) queued like kernels. `cupy._standin` (not a CuPy name) holds counters and settings.

What it proves: gpuarr drives CuPy with correct calls, orders work across streams with events,
keeps memory alive while it is in use, respects CUDA's launch limits and alignment, and gets
the right numbers from kernels that also compile for sm_90. What only a GPU can prove: the
kernels' behaviour under real CUDA semantics (warp shuffles, CUDA math, atomics and timing,
since PoCL runs the OpenCL branch of the source), performance, register pressure beyond
ptxas' report, concurrency between streams, and the real driver's exact error paths.
"""
import numpy as np  # noqa: F401

from cupy import _standin, cuda, fft, lib, linalg  # noqa: F401
from cupy._core.core import ndarray
from cupy._core.dlpack import from_dlpack  # noqa: F401
from cupy._core.raw import RawKernel, RawModule  # noqa: F401
from cupy._creation import (  # noqa: F401
    arange,
    array,
    asarray,
    ascontiguousarray,
    asnumpy,
    copyto,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from cupy._routines import (  # noqa: F401,A004
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argsort,
    broadcast_to,
    clip,
    concatenate,
    cumsum,
    diagonal,
    dot,
    einsum,
    expand_dims,
    flip,
    imag,
    lexsort,
    matmul,
    max,
    mean,
    min,
    moveaxis,
    prod,
    ravel,
    real,
    reshape,
    sort,
    squeeze,
    stack,
    sum,
    swapaxes,
    take,
    take_along_axis,
    transpose,
    where,
)
from cupy.cuda.memory import get_default_memory_pool  # noqa: F401

__version__ = "14.0.0"

# The NumPy functions whose __array_function__ dispatch reaches the stand-in.
_dispatched = ("all", "amax", "amin", "any", "argmax", "argmin", "argsort", "broadcast_to", "clip",
               "concatenate", "copyto", "cumsum", "dot", "einsum", "empty_like", "expand_dims",
               "flip", "full_like", "lexsort", "max", "mean", "min", "moveaxis", "ones_like",
               "prod", "ravel", "reshape", "sort", "squeeze", "stack", "sum", "swapaxes", "take",
               "take_along_axis", "transpose", "where", "zeros_like")

# NumPy's dtypes and ufuncs under CuPy's names (CuPy's ufuncs accept only device arrays).
# (conj and conjugate: cupy/_core/_routines_math.pyx)
for _name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "complex64", "complex128", "dtype", "newaxis",
              "inf", "nan", "pi", "e", "integer", "floating", "complexfloating", "number",
              "add", "subtract", "multiply", "divide", "true_divide", "negative", "exp", "log",
              "sqrt", "sin", "cos", "tanh", "abs", "absolute", "maximum", "minimum", "equal",
              "not_equal", "less", "greater", "isnan", "isfinite", "power", "square", "sign",
              "floor", "ceil", "conj", "conjugate", "result_type", "can_cast", "promote_types"):
    globals()[_name] = getattr(np, _name)


def get_array_module(*args):
    return __import__("cupy") if any(isinstance(a, ndarray) for a in args) else np


def get_default_pinned_memory_pool():
    return None


def is_available() -> bool:
    return cuda.is_available()
