"""gpuarr.lax: the primitive operations, with JAX's names and semantics."""
from gpuarr.lax.lax import (  # noqa: F401
    abs, acos, acosh, add, argmax, argmin, asin, asinh, atan, atan2, atanh, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, broadcast, broadcast_in_dim, broadcasted_iota, cbrt,
    ceil, concatenate, convert_element_type, cos, cosh, div, dot, dot_general, eq, exp, exp2,
    expand_dims, expm1, floor, full, full_like, ge, gt, integer_pow, iota, is_finite, le, log,
    log1p, logistic, lt, max, min, mul, ne, neg, nextafter, pad, pow, reciprocal, reduce_and,
    reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum, rem, reshape, rev, round, rsqrt,
    select, select_n, shift_left, shift_right_arithmetic, shift_right_logical, sign, sin, sinh,
    slice, slice_in_dim, sqrt, square, squeeze, stop_gradient, sub, tan, tanh, transpose,
    zeros_like,
)
from gpuarr.lax import lax  # noqa: F401
from gpuarr.lax.special import (  # noqa: F401
    bitcast_convert_type, clamp, clz, digamma, erf, erf_inv, erfc, lgamma, polygamma,
    population_count,
)
from gpuarr.lax.control_flow import (  # noqa: F401, E402
    associative_scan, cond, fori_loop, map, scan, switch, while_loop,
)
from gpuarr.lax.slicing import (  # noqa: F401, E402
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, dynamic_index_in_dim,
    dynamic_slice, dynamic_slice_in_dim, dynamic_update_index_in_dim, dynamic_update_slice,
    dynamic_update_slice_in_dim, gather, index_in_dim, index_take, scatter, scatter_add,
    scatter_apply, scatter_max, scatter_min, scatter_mul, scatter_sub,
)
from gpuarr.lax.sorting import sort, sort_key_val, top_k  # noqa: F401, E402
from gpuarr.lax.cumulative import (  # noqa: F401, E402
    cumlogsumexp, cummax, cummin, cumprod, cumsum,
)
from gpuarr.lax import linalg  # noqa: F401, E402
from gpuarr.lax.windowed import (  # noqa: F401, E402
    ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated,
    conv_with_general_padding, padtype_to_pads, reduce_window,
)

not_ = bitwise_not
from gpuarr.lax.fft import FftType, fft  # noqa: F401, E402
from gpuarr.lax.parallel import axis_index, pmax, pmean, pmin, psum  # noqa: F401, E402
from gpuarr.lax.extras import (  # noqa: F401, E402
    ConvGeneralDilatedDimensionNumbers, DotDimensionNumbers, Precision, RoundingMethod, axis_size,
    batch_matmul, broadcast_shapes, broadcast_to_rank, collapse, complex, conj, conv_transpose,
    dtype, empty, imag, optimization_barrier, real, reduce, reduce_xor, split, stack, tile,
    unstack,
)
from gpuarr.lax.special_extra import (  # noqa: F401, E402
    bessel_i0e, bessel_i1e, betainc, igamma, igamma_grad_a, igammac, random_gamma_grad, zeta,
)
from gpuarr.lax.custom_solve import custom_linear_solve, custom_root  # noqa: F401, E402
