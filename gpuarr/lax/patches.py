"""Convolutions through patches: `conv_general_dilated_patches` (the receptive fields of a
convolution, gathered by a grouped convolution with identity kernels) and
`conv_general_dilated_local` (an unshared convolution: one kernel per output position, applied
to those patches by a batched contraction).
"""
from __future__ import annotations

import math

import numpy as np

from gpuarr.core import get_aval
from gpuarr.lax import dot_products, shape_ops
from gpuarr.lax.dot_precision import Precision
from gpuarr.lax.windowed import conv_dimension_numbers, conv_general_dilated


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a `filter_shape` window sees (same arguments as
    `conv_general_dilated`), flattened into the output's feature dimension "C" in the order
    "c" then the window's spatial dimensions in `rhs_spec` order; that dimension has size
    `prod(filter_shape) * channels`."""
    filter_shape = tuple(int(d) for d in filter_shape)
    aval = get_aval(lhs)
    dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    lhs_spec, rhs_spec, _ = dn
    spatial_size = math.prod(filter_shape)
    channels = aval.shape[lhs_spec[1]]
    # Output feature (c, position) copies input channel c at that window position.
    eye = np.eye(spatial_size, dtype=aval.dtype)
    rhs = np.broadcast_to(eye, (channels, spatial_size, spatial_size))
    rhs = rhs.reshape((channels * spatial_size, 1) + filter_shape)
    rhs = np.ascontiguousarray(np.moveaxis(rhs, (0, 1), (rhs_spec[0], rhs_spec[1])))
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
        dimension_numbers=dn, feature_group_count=channels,
        precision=None if precision is None else (precision, Precision.DEFAULT),
        preferred_element_type=preferred_element_type)


def _lhs_precision(precision):
    if precision is None:
        return None
    pair = tuple(precision) if isinstance(precision, (tuple, list)) else (precision, precision)
    if len(pair) != 2:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    return pair[0]


def _move_last_two(x, dst0, dst1):
    """`np.moveaxis(x, (-2, -1), (dst0, dst1))` as a transpose."""
    nd = get_aval(x).ndim
    perm = list(range(nd - 2))
    for dst, src in sorted(((dst0, nd - 2), (dst1, nd - 1))):
        perm.insert(dst, src)
    return shape_ops.transpose(x, tuple(perm))


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
    """An unshared convolution (a locally connected layer): as `conv_general_dilated`, but
    `rhs` holds a separate kernel for every output position. Its spatial dimensions are the
    output's, and its "I" dimension runs over the input channels and the `filter_shape`
    window (in the order of `conv_general_dilated_patches`)."""
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        precision=_lhs_precision(precision))
    _, rhs_spec, out_spec = conv_dimension_numbers(
        get_aval(lhs).shape, (1, 1) + tuple(int(d) for d in filter_shape), dimension_numbers)
    # Contract the patch features with "I"; output positions pair up as batch dimensions.
    out_spatial, rhs_spatial = out_spec[2:], rhs_spec[2:]
    order = sorted(range(len(out_spatial)), key=lambda i: out_spatial[i])
    dn = (((out_spec[1],), (rhs_spec[1],)),
          (tuple(sorted(out_spatial)), tuple(rhs_spatial[i] for i in order)))
    out = dot_products.dot_general(patches, rhs, dn, precision=precision)
    return _move_last_two(out, out_spec[0], out_spec[1])
