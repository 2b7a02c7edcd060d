"""gpuarr.numpy: NumPy's API with JAX's semantics (immutable arrays, JAX's dtype promotion)."""
import numpy as _np

from gpuarr.array import Array as ndarray  # noqa: F401
from gpuarr.array import Array  # noqa: F401
from gpuarr.dtypes import (  # noqa: F401
    bool_, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8,
    uint16, uint32, uint64, finfo, iinfo, issubdtype, promote_types,
)
from gpuarr.numpy.creation import (  # noqa: F401
    arange, array, asarray, copy, empty, empty_like, eye, full, full_like, identity, linspace,
    ones, ones_like, zeros, zeros_like,
)
from gpuarr.numpy.ufuncs import (  # noqa: F401
    abs, absolute, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, around,
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, clip, cos, cosh, divide, equal,
    exp, exp2, expm1, float_power, floor, floor_divide, fmod, greater, greater_equal, invert,
    isfinite, isinf, isnan, less, less_equal, log, log1p, logical_and, logical_not, logical_or,
    logical_xor, maximum, minimum, mod, multiply, negative, not_equal, positive, pow, power,
    reciprocal, remainder, round, sign, sin, sinh, sqrt, square, subtract, tan, tanh, true_divide,
    where,
)
from gpuarr.numpy.reductions import (  # noqa: F401
    all, amax, amin, any, argmax, argmin, max, mean, min, prod, std, sum, var,
)
from gpuarr.numpy.manipulation import (  # noqa: F401
    broadcast_arrays, broadcast_to, concatenate, expand_dims, matrix_transpose, moveaxis, ravel,
    reshape, squeeze, stack, swapaxes, transpose,
)
from gpuarr.numpy.products import dot, inner, matmul, outer, vdot  # noqa: F401
from gpuarr.numpy.indexing import nonzero  # noqa: F401
from gpuarr.numpy import array_methods as _array_methods  # noqa: F401

try:
    from gpuarr.dtypes import bfloat16  # noqa: F401
except ImportError:  # ml_dtypes not installed
    pass

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None


def result_type(*args):
    """The dtype JAX's promotion gives these arguments."""
    from gpuarr import dtypes
    return dtypes.result_type(*args)


def dtype(x):
    from gpuarr import dtypes
    return dtypes.dtype(x)
