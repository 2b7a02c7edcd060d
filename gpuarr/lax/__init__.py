"""gpuarr.lax: the primitive operations, with JAX's names and semantics."""
from gpuarr.lax.lax import (  # noqa: F401
    abs, acos, acosh, add, argmax, argmin, asin, asinh, atan, atan2, atanh, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, concatenate, cos, cosh, div, eq, exp, exp2,
    expm1, floor, ge, gt, integer_pow, is_finite, le, log, log1p, logistic, lt, max, min, mul, ne,
    neg, nextafter, pad, pow, reciprocal, reduce_and, reduce_max, reduce_min, reduce_or,
    reduce_prod, rem, round, rsqrt, select, select_n, shift_left, shift_right_arithmetic,
    shift_right_logical, sign, sin, sinh, slice, slice_in_dim, sqrt, square, stop_gradient, sub,
    tan, tanh, zeros_like,
)
from gpuarr.lax.conversions import convert_element_type  # noqa: F401
from gpuarr.lax.shape_ops import (  # noqa: F401
    broadcast, broadcast_in_dim, broadcasted_iota, expand_dims, full, full_like, iota, reduce_sum,
    reshape, rev, squeeze, transpose,
)
from gpuarr.lax.dot_products import dot, dot_general  # noqa: F401
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
from gpuarr.lax.lax import bitwise_not as not_  # noqa: F401, E402
from gpuarr.lax.fft import FftType, fft  # noqa: F401, E402
from gpuarr.lax.parallel import (  # noqa: F401, E402
    all_gather, all_gather_p, all_to_all, all_to_all_p, axis_index, axis_index_p, pbroadcast,
    pcast, pmax, pmax_p, pmean, pmin, pmin_p, ppermute, ppermute_p, pshuffle, psum, psum_p,
    psum_scatter, pswapaxes,
)
from gpuarr.lax.extras import (  # noqa: F401, E402
    ConvGeneralDilatedDimensionNumbers, DotDimensionNumbers, RoundingMethod, axis_size,
    batch_matmul, broadcast_shapes, broadcast_to_rank, collapse, complex, conj, conv_transpose,
    dtype, empty, imag, optimization_barrier, real, reduce, reduce_xor, split, stack, tile,
    unstack,
)
from gpuarr.lax.dot_precision import (  # noqa: F401, E402
    DotAlgorithm, DotAlgorithmPreset, Precision, PrecisionLike,
)
from gpuarr.lax.special_extra import (  # noqa: F401, E402
    bessel_i0e, bessel_i1e, betainc, igamma, igamma_grad_a, igammac, zeta,
)
from gpuarr.lax.custom_solve import custom_linear_solve, custom_root  # noqa: F401, E402
# dx/da of gamma samples, a host callback (gpuarr.random, above lax, defines it).
from gpuarr.random.gamma_grad import random_gamma_grad  # noqa: F401, E402
from gpuarr.lax.approx_top_k import approx_max_k, approx_min_k, approx_top_k_p  # noqa: F401, E402
from gpuarr.lax.bits import mulhi, mulhi_p, reduce_precision, reduce_precision_p  # noqa: F401, E402
from gpuarr.lax.platform_dependent import platform_dependent  # noqa: F401, E402
from gpuarr.lax.rng import (  # noqa: F401, E402
    RandomAlgorithm, rng_bit_generator, rng_bit_generator_p, rng_uniform, rng_uniform_p,
)
from gpuarr.lax.patches import (  # noqa: F401, E402
    conv_general_dilated_local, conv_general_dilated_patches,
)
from gpuarr.lax.shapes import (  # noqa: F401, E402
    broadcast_like, conv_general_shape_tuple, conv_shape_tuple, conv_transpose_shape_tuple,
    reduce_window_shape_tuple,
)
from gpuarr.lax.windowed import conv_general_permutations  # noqa: F401, E402
from gpuarr.lax.arguments import AccuracyMode, Tolerance  # noqa: F401, E402

# The primitives JAX exports from jax.lax where gpuarr's is the same operation (same name
# and operands; the collectives, whose operands differ, are left out).
from gpuarr.lax.lax import (  # noqa: F401, E402
    abs_p, acos_p, acosh_p, add_p, and_p, argmax_p, argmin_p, asin_p, asinh_p, atan2_p, atan_p,
    atanh_p, cbrt_p, ceil_p, concatenate_p, copy_p, cos_p, cosh_p, div_p, eq_p, exp2_p, exp_p,
    expm1_p, floor_p, ge_p, gt_p, integer_pow_p, is_finite_p, le_p, log1p_p, log_p, logistic_p,
    lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p, pad_p, pow_p, reduce_and_p,
    reduce_max_p, reduce_min_p, reduce_or_p, reduce_prod_p, rem_p, round_p, rsqrt_p, select_n_p,
    shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p, sinh_p, slice_p,
    sqrt_p, square_p, stop_gradient_p, sub_p, tan_p, tanh_p, xor_p,
)
from gpuarr.lax.conversions import convert_element_type_p  # noqa: F401, E402
from gpuarr.lax.shape_ops import (  # noqa: F401, E402
    broadcast_in_dim_p, iota_p, reduce_sum_p, reshape_p, rev_p, squeeze_p, transpose_p,
)
from gpuarr.lax.dot_products import dot_general_p  # noqa: F401, E402
from gpuarr.lax.special import (  # noqa: F401, E402
    bitcast_convert_type_p, clamp_p, clz_p, digamma_p, erf_inv_p, erf_p, erfc_p, lgamma_p,
    polygamma_p, population_count_p,
)
from gpuarr.lax.special_extra import (  # noqa: F401, E402
    bessel_i0e_p, bessel_i1e_p, igamma_grad_a_p, igamma_p, igammac_p,
    regularized_incomplete_beta_p, zeta_p,
)
from gpuarr.lax.extras import (  # noqa: F401, E402
    complex_p, conj_p, imag_p, optimization_barrier_p, real_p, reduce_xor_p, split_p, stack_p,
    unstack_p,
)
from gpuarr.lax.control_flow import cond_p, scan_p, while_p  # noqa: F401, E402
from gpuarr.lax.custom_solve import linear_solve_p  # noqa: F401, E402
from gpuarr.lax.cumulative import (  # noqa: F401, E402
    cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p,
)
from gpuarr.lax.slicing import (  # noqa: F401, E402
    dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_add_p, scatter_max_p,
    scatter_min_p, scatter_mul_p, scatter_p, scatter_sub_p,
)
from gpuarr.lax.sorting import sort_p, top_k_p  # noqa: F401, E402
from gpuarr.lax.windowed import (  # noqa: F401, E402
    conv_general_dilated_p, reduce_window_max_p, reduce_window_min_p, reduce_window_sum_p,
)
from gpuarr.lax.fft import fft_p  # noqa: F401, E402
from gpuarr.lax.ragged import (  # noqa: F401, E402
    RaggedDotDimensionNumbers, ragged_dot, ragged_dot_general, ragged_dot_general_p,
)
from gpuarr.lax.composite import (  # noqa: F401, E402
    composite, composite_p, dce_sink, dce_sink_p, shape_as_value, stage,
)
from gpuarr.sharding.sharding_constraint import with_sharding_constraint  # noqa: F401, E402

# Names JAX 0.10.2 removed from jax.lax, with its message saying what replaces them.
_REMOVED = {"pvary": "jax.lax.pvary was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; "
                     "use `jax.lax.pcast(..., to='varying')"}


def __getattr__(name):
    if name in _REMOVED:
        raise AttributeError(_REMOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
