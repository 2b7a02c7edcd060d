"""Shape helpers of lax: the output shapes of convolutions and windowed reductions
(`conv_shape_tuple`, `conv_general_shape_tuple`, `conv_transpose_shape_tuple`,
`reduce_window_shape_tuple`) and `broadcast_like`.
"""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import get_aval
from gpuarr.lax import arguments, shape_ops
from gpuarr.lax.extras import _conv_transpose_padding
from gpuarr.lax.windowed import _dilate_shape, _stride_dim, conv_general_permutations, padtype_to_pads

# ---------------------------------------------------------------- output shapes


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The output shape of a convolution with operands in canonical order (NC... and OI...):
    `pads` is 'SAME', 'SAME_LOWER', 'VALID' or one (low, high) pair per spatial dimension."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(d < 0 for d in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    spatial = tuple(_stride_dim(d, k, s) for d, k, s in zip(padded, rhs_shape[2:], strides))
    batch = int(lhs_shape[0])
    if batch_group_count > 1:
        if batch % batch_group_count:
            raise ValueError(f"the batch size {batch} is not a multiple of batch_group_count="
                             f"{batch_group_count}")
        batch //= batch_group_count
    return (batch, int(rhs_shape[0])) + spatial


def _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers):
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs = tuple(int(lhs_shape[i]) for i in lhs_perm)
    rhs = tuple(int(rhs_shape[i]) for i in rhs_perm)
    return lhs, rhs, out_perm


def _in_layout(shape, out_perm):
    return tuple(shape[i] for i in np.argsort(out_perm))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of `conv_general_dilated` (without dilation) for operands laid out as
    `dimension_numbers` (three spec strings such as ('NHWC', 'HWIO', 'NHWC')) says."""
    lhs, rhs, out_perm = _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers)
    return _in_layout(conv_shape_tuple(lhs, rhs, window_strides, padding), out_perm)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of `conv_transpose` for operands laid out as `dimension_numbers`
    says, with 'SAME'/'VALID' or explicit (low, high) padding."""
    lhs, rhs, out_perm = _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
    totals = [int(np.sum(p)) for p in padding]
    spatial = tuple((i - 1) * s - k + 2 + p
                    for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides, totals))
    return _in_layout((lhs[0], rhs[0]) + spatial, out_perm)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of `reduce_window` with explicit (low, high) `padding`."""
    if base_dilation is not None:
        operand_shape = _dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate_shape(window_dimensions, window_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(operand_shape, padding)]
    return tuple(_stride_dim(d, w, s) for d, w, s in zip(padded, window_dimensions, window_strides))


# ---------------------------------------------------------------- broadcast_like


def _type_str(dtype, shape) -> str:
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy-style, aligning trailing dimensions) to the shape of
    `like_arr`."""
    shape = tuple(get_aval(like_arr).shape)
    if isinstance(arr, arguments._SCALARS):  # stays weakly typed, as a Python scalar is in JAX
        arr = Array(np.asarray(arr, dtypes.dtype(arr, canonicalize=True)),
                    weak_type=type(arr) is not bool)
    aval = get_aval(arr)
    if aval.ndim > len(shape):
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape="
                         f"{aval.shape} shape={shape}")
    lead = len(shape) - aval.ndim
    if any(d not in (1, s) for d, s in zip(aval.shape, shape[lead:])):
        raise ValueError(f"Incompatible types for broadcasting: input type="
                         f"{_type_str(aval.dtype, aval.shape)} and requested type="
                         f"{_type_str(aval.dtype, shape)}")
    kept = [i for i, d in enumerate(aval.shape) if d == shape[lead + i]]
    if len(kept) != aval.ndim:  # size-1 dimensions that grow are dropped, then broadcast
        arr = shape_ops.reshape(arr, tuple(aval.shape[i] for i in kept))
    return shape_ops.broadcast_in_dim(arr, shape, tuple(lead + i for i in kept))
