"""gpuarr.numpy: NumPy's API with JAX's semantics (immutable arrays, JAX's dtype promotion)."""
import numpy as _np

from gpuarr.array import Array as ndarray  # noqa: F401
from gpuarr.array import Array  # noqa: F401
from gpuarr.numpy.array_api_metadata import (  # noqa: F401
    __array_api_version__, __array_namespace_info__,
)
from gpuarr.dtypes import finfo, iinfo, promote_types  # noqa: F401
from gpuarr.dtypes import numpy_issubdtype as issubdtype  # noqa: F401
from gpuarr.numpy.scalar_types import (  # noqa: F401
    bool_, complex64, complex128, complex_, float16, float32, float64, float_, int8, int16, int32,
    int64, uint8, uint16, uint32, uint64,
)
from gpuarr.numpy.creation import (  # noqa: F401
    arange, array, asarray, copy, copyto, diag, diagflat, diagonal, empty, empty_like, eye, from_dlpack,
    frombuffer, fromfunction, fromiter, fromstring, full, full_like, geomspace, identity, indices,
    linspace, load, logspace, meshgrid, ones, ones_like, tri, tril, triu, vander, zeros,
    zeros_like,
)
from gpuarr.numpy.ufuncs import (  # noqa: F401
    abs, absolute, acos, acosh, add, angle, arccos, arccosh, arcsin, arcsinh, arctan, arctan2,
    arctanh, around, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_count, bitwise_invert,
    bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor, cbrt, ceil,
    clip, conj, conjugate, copysign, cos, cosh, deg2rad, degrees, divide, divmod, equal, exp,
    exp2, expm1, fabs, float_power, floor, floor_divide, fmax, fmin, fmod, frexp, gcd,
    greater, greater_equal, heaviside, hypot, i0, imag, invert, iscomplex, isfinite, isinf, isnan,
    isneginf, isposinf, isreal, lcm, ldexp, left_shift, less, less_equal, log, log10, log1p, log2,
    logaddexp, logaddexp2, logical_and, logical_not, logical_or, logical_xor, maximum, minimum,
    mod, modf, multiply, nan_to_num, negative, nextafter, not_equal, positive, pow, power,
    rad2deg, radians, real, reciprocal, remainder, right_shift, rint, round, sign, signbit, sin,
    sinc, sinh, spacing, sqrt, square, subtract, tan, tanh, true_divide, trunc, where,
)
from gpuarr.numpy.reductions import (  # noqa: F401
    all, amax, amin, any, argmax, argmin, average, count_nonzero, max, mean, median, min,
    nanmax, nanmean, nanmedian, nanmin, nanpercentile, nanprod, nanquantile, nanstd, nansum,
    nanvar, percentile, prod, ptp, quantile, std, sum, var,
)
from gpuarr.numpy.manipulation import (  # noqa: F401
    append, array_split, atleast_1d, atleast_2d, atleast_3d, block, broadcast_arrays,
    broadcast_shapes, broadcast_to, column_stack, concat, concatenate, delete, diff, dsplit,
    dstack, ediff1d, expand_dims, flip, fliplr, flipud, hsplit, hstack, insert, matrix_transpose,
    moveaxis, pad, permute_dims, ravel, repeat, reshape, resize, roll, rollaxis, rot90, split,
    squeeze, stack, swapaxes, tile, transpose, trim_zeros, unstack, vsplit, vstack,
)
# Whole-array comparisons, dtypes and type queries, printing and files, functional helpers.
from gpuarr.numpy.comparisons import allclose, array_equal, array_equiv, isclose  # noqa: F401
from gpuarr.numpy.dtype_functions import (  # noqa: F401
    astype, bool, can_cast, cdouble, character, complexfloating, csingle, double, dtype,
    flexible, floating, generic, inexact, int_, integer, iscomplexobj, isdtype, isrealobj,
    isscalar, iterable, ndim, number, object_, result_type, shape, signedinteger, single, size,
    uint, unsignedinteger,
)
from gpuarr.numpy.io import (  # noqa: F401
    array_repr, array_str, fromfile, get_printoptions, printoptions, save, savez,
    set_printoptions,
)
from gpuarr.numpy.functional import apply_along_axis, apply_over_axes, piecewise, vectorize  # noqa: F401
# Binning, bit packing, windows, calculus and statistics.
from gpuarr.numpy.histograms import (  # noqa: F401
    histogram, histogram2d, histogram_bin_edges, histogramdd, interp,
)
from gpuarr.numpy.bit_packing import packbits, unpackbits  # noqa: F401
from gpuarr.numpy.windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401
from gpuarr.numpy.calculus import gradient, trapezoid, unwrap  # noqa: F401
from gpuarr.numpy.statistics import corrcoef, cov  # noqa: F401
from gpuarr.numpy.products import dot, inner, matmul, outer, vdot  # noqa: F401
from gpuarr.numpy.products import cross, kron, tensordot, trace, vecdot  # noqa: F401
from gpuarr.numpy.einsum import einsum, einsum_path  # noqa: F401
from gpuarr.numpy import linalg  # noqa: F401
from gpuarr.numpy import array_methods as _array_methods  # noqa: F401

try:
    from gpuarr.numpy.scalar_types import bfloat16  # noqa: F401
except ImportError:  # ml_dtypes not installed
    pass
# float8_e4m3fn, int4 and the other narrow types ml_dtypes provides (none without it).
from gpuarr.numpy import scalar_types as _scalar_types  # noqa: E402
globals().update({_name: getattr(_scalar_types, _name) for _name in _scalar_types.NARROW_NAMES})

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
ComplexWarning = _np.exceptions.ComplexWarning  # what casting complex to real warns

# Indexing, .at updates, selection, sorting and searching.
from gpuarr.numpy import at as _at  # noqa: F401, E402
from gpuarr.numpy.selection import (  # noqa: F401, E402
    argwhere, choose, compress, cumprod, cumsum, cumulative_prod, cumulative_sum, extract,
    flatnonzero, nanargmax, nanargmin, nancumprod, nancumsum, nonzero, put_along_axis, select,
    take, take_along_axis,
)
from gpuarr.numpy.sorting import (  # noqa: F401, E402
    argpartition, argsort, bincount, digitize, lexsort, partition, searchsorted, sort, unique,
)

# Set operations, the unique_* family and index helpers.
from gpuarr.numpy.setops import (  # noqa: F401, E402
    intersect1d, isin, setdiff1d, setxor1d, union1d, unique_all, unique_counts, unique_inverse,
    unique_values,
)
from gpuarr.numpy.index_tricks import (  # noqa: F401, E402
    c_, diag_indices, diag_indices_from, fill_diagonal, index_exp, ix_, mask_indices, mgrid, ogrid,
    place, put, r_, ravel_multi_index, s_, sort_complex, tril_indices, tril_indices_from,
    triu_indices, triu_indices_from, unravel_index,
)
from gpuarr.numpy import fft  # noqa: F401, E402

# Convolutions, matrix-vector products, polynomial roots and fits, the ufunc class.
from gpuarr.numpy.signal import convolve, correlate  # noqa: F401, E402
from gpuarr.numpy.vector_products import matvec, vecmat  # noqa: F401, E402
from gpuarr.numpy.polynomial import (  # noqa: F401, E402
    poly, polyadd, polyder, polydiv, polyfit, polyint, polymul, polysub, polyval, roots,
)
# jnp.frompyfunc returns a jnp.ufunc, as in JAX.
from gpuarr.numpy.ufunc_api import frompyfunc, ufunc  # noqa: F401, E402

# Typed key arrays pass through the shape and selection functions and compare, as in JAX.
from gpuarr.numpy.key_functions import (  # noqa: F401, E402, F811
    append, array, array_equal, array_split, asarray, atleast_1d, atleast_2d, atleast_3d,
    broadcast_arrays, broadcast_to, concat, concatenate, copy, delete, diagonal, dsplit,
    empty_like, equal, expand_dims, flip, fliplr, flipud, hsplit, hstack, insert,
    matrix_transpose, moveaxis, not_equal, permute_dims, ravel, repeat, reshape, roll, rot90,
    split, squeeze, stack, swapaxes, take, take_along_axis, tile,
    transpose, unstack, vsplit, vstack, where, zeros_like,
)
