"""Windowed operations: `conv_general_dilated` (with `conv` and `conv_with_general_padding`) and
`reduce_window` (sum, max and min as primitives; any other computation folded). Shapes,
padding rules and transposes follow JAX."""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from gpuarr import dtypes, narrow_types, pytrees
from gpuarr.array import Array
from gpuarr.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    get_aval,
    weak_type_rules,
)
from gpuarr.impls import impl_rules, narrow_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import arguments, conversions, lax, numpy_impls, shape_ops
from gpuarr.lax.dot_precision import canonicalize_precision
from gpuarr.lax.slicing import checked_impl

# ---------------------------------------------------------------- shared shape helpers


def _dilate_shape(shape, dilation):
    if not all(d > 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(0 if s == 0 else 1 + d * (s - 1) for s, d in zip(shape, dilation))


def _stride_dim(size, window, stride):
    return max(0, (size - window) // stride + 1) if size >= window else 0


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) padding pairs for 'SAME', 'SAME_LOWER' or 'VALID' padding."""
    name = padding.upper() if isinstance(padding, str) else padding
    if name in ("SAME", "SAME_LOWER"):
        pads = []
        for n, w, s in zip(in_shape, window_shape, window_strides):
            out = -(-n // s)
            total = max((out - 1) * s + w - n, 0)
            lo = total // 2 if name == "SAME" else total - total // 2
            pads.append((int(lo), int(total - lo)))
        return pads
    if name == "VALID":
        return [(0, 0)] * len(in_shape)
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', "
                       f"got {padding}.")


def _pad_dilate(x, value, padding, dilation):
    """NumPy: interior-dilate the trailing dims of `x` by `dilation`, then pad by `padding`."""
    lead = x.ndim - len(padding)
    cfg = [(0, 0, 0)] * lead + [(lo, hi, d - 1) for (lo, hi), d in zip(padding, dilation)]
    return numpy_impls._pad_impl(x, np.asarray(value, x.dtype), cfg)


def _windows(x, window, strides, window_dilation):
    """NumPy view (..., out..., window...) of the windows of the trailing dims of `x`."""
    nsp = len(window)
    eff = _dilate_shape(window, window_dilation)
    axes = tuple(range(x.ndim - nsp, x.ndim))
    if any(e > n for e, n in zip(eff, x.shape[-nsp:])) or 0 in eff:
        out = tuple(_stride_dim(n, e, s) for n, e, s in zip(x.shape[-nsp:], eff, strides))
        return np.zeros(x.shape[:-nsp] + out + tuple(window), x.dtype)
    v = np.lib.stride_tricks.sliding_window_view(x, eff, axis=axes)
    lead = (slice(None),) * (x.ndim - nsp)
    v = v[lead + tuple(slice(None, None, s) for s in strides) +
          tuple(slice(None, None, d) for d in window_dilation)]
    return v


# ---------------------------------------------------------------- conv_general_dilated


class ConvDimensionNumbers(NamedTuple):
    """For lhs, rhs and output: the positions of (batch|out-feature, feature|in-feature,
    spatial...) dimensions, spatial ones in the kernel's order."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def conv_general_permutations(dimension_numbers):
    """Positions of N, C, spatial... (lhs, out) and O, I, spatial... (rhs) in spec strings."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
        if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                            f"got {dimension_numbers[i]}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}):
        raise TypeError(f"convolution dimension_numbers elements must each have the same set of "
                        f"spatial characters, got {dimension_numbers}.")

    def getperm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(getperm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """`dimension_numbers` (None, three spec strings such as ('NCHW', 'OIHW', 'NCHW'), or a
    ConvDimensionNumbers) in canonical form."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
                        f"and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (list, tuple)):
        if len(dimension_numbers) != 3:
            raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                            f"{len(dimension_numbers)}.")
        if not all(isinstance(e, str) for e in dimension_numbers):
            if all(isinstance(e, (tuple, list)) for e in dimension_numbers):
                return ConvDimensionNumbers(*(tuple(int(i) for i in e) for e in dimension_numbers))
            raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                            f"{tuple(map(type, dimension_numbers))}.")
        for i, e in enumerate(dimension_numbers):
            if len(e) != len(lhs_shape):
                raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                                f"ndim of lhs and rhs, got {len(e)} for lhs and rhs shapes "
                                f"{lhs_shape} and {rhs_shape}.")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")


def _conv_out_dtype(lhs_dtype, preferred_element_type):
    return np.dtype(preferred_element_type) if preferred_element_type is not None else lhs_dtype


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count, batch_group_count, precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = _conv_out_dtype(lhs.dtype, preferred_element_type)
    acc = np.float32 if lhs.dtype == np.float16 or lhs.dtype.name == "bfloat16" else None
    x = np.transpose(np.asarray(lhs), lhs_spec)
    w = np.transpose(np.asarray(rhs), rhs_spec)
    if acc is not None:
        x, w = x.astype(acc), w.astype(acc)
    if x.dtype == np.bool_:
        x, w = x.astype(np.int32), w.astype(np.int32)
    nsp = x.ndim - 2
    x = _pad_dilate(x, 0, padding, lhs_dilation)
    w = _pad_dilate(w, 0, [(0, 0)] * nsp, rhs_dilation)
    win = _windows(x, w.shape[2:], window_strides, (1,) * nsp)  # N, C, out..., k...
    sp, ks = "xyzuvw"[:nsp], "pqrstl"[:nsp]
    n, c = x.shape[:2]
    o = w.shape[0]
    out_sp = win.shape[2:2 + nsp]
    if batch_group_count > 1:
        b = batch_group_count
        win = win.reshape((b, n // b, c) + win.shape[2:])
        wk = w.reshape((b, o // b) + w.shape[1:])
        out = np.einsum(f"bnc{sp}{ks},boc{ks}->nbo{sp}", win, wk)
        out = out.reshape((n // b, o) + out_sp)
    else:
        g = feature_group_count
        win = win.reshape((n, g, c // g) + win.shape[2:])
        wk = w.reshape((g, o // g) + w.shape[1:])
        out = np.einsum(f"ngc{sp}{ks},goc{ks}->ngo{sp}", win, wk)
        out = out.reshape((n, o) + out_sp)
    return np.ascontiguousarray(np.transpose(out, np.argsort(out_spec))).astype(out_dtype, copy=False)


def _conv_shape(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, batch_group_count):
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    lhs_t = _dilate_shape(tuple(lhs_shape[i] for i in lhs_perm), lhs_dilation)
    rhs_t = _dilate_shape(tuple(rhs_shape[i] for i in rhs_perm), rhs_dilation)
    if len(padding) != len(lhs_t) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(lhs_t) - 2}, "
                        f"got {len(padding)}.")
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_t[2:], padding)]
    if any(p < 0 for p in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={padding} for lhs_shape[2:]={lhs_t[2:]}")
    space = tuple(_stride_dim(p, k, s) for p, k, s in zip(padded, rhs_t[2:], window_strides))
    out_t = (lhs_t[0] // batch_group_count, rhs_t[0]) + space
    return tuple(out_t[i] for i in np.argsort(out_perm))


def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    dn = dimension_numbers
    name = "conv_general_dilated"
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but got "
                         f"{lhs.shape} and {rhs.shape}.")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"{name} requires lhs and rhs to have the same dtype, got "
                        f"{lhs.dtype.name} and {rhs.dtype.name}.")
    if feature_group_count <= 0 or batch_group_count <= 0:
        raise ValueError(f"{name} feature_group_count and batch_group_count must be positive "
                         f"integers, got {feature_group_count} and {batch_group_count}.")
    if feature_group_count > 1 and batch_group_count > 1:
        raise ValueError(f"At most one of batch_group_count and feature_group_count may be > 1, got "
                         f"batch_group_count={batch_group_count} and "
                         f"feature_group_count={feature_group_count}")
    c = lhs.shape[dn.lhs_spec[1]]
    quot, rem = divmod(c, feature_group_count)
    if rem:
        raise ValueError(f"{name} feature_group_count must divide lhs feature dimension size, but "
                         f"{feature_group_count} does not divide {c}.")
    if quot != rhs.shape[dn.rhs_spec[1]]:
        raise ValueError(f"{name} lhs feature dimension size divided by feature_group_count must "
                         f"equal the rhs input feature dimension size, but {c} // "
                         f"{feature_group_count} != {rhs.shape[dn.rhs_spec[1]]}.")
    o = rhs.shape[dn.rhs_spec[0]]
    if o % feature_group_count or o % batch_group_count:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count and batch_group_count, got {o}.")
    if lhs.shape[dn.lhs_spec[0]] % batch_group_count:
        raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, but "
                         f"{batch_group_count} does not divide {lhs.shape[dn.lhs_spec[0]]}.")
    if len(dn.rhs_spec) - 2 != len(window_strides):
        raise ValueError(f"{name} window and window_strides must have the same number of "
                         f"dimensions, but got {len(dn.rhs_spec) - 2} and {len(window_strides)}")
    shape = _conv_shape(lhs.shape, rhs.shape, window_strides, padding, lhs_dilation, rhs_dilation,
                        dn, batch_group_count)
    return [ShapedArray(shape, _conv_out_dtype(lhs.dtype, preferred_element_type),
                        lhs.weak_type and rhs.weak_type)]


conv_general_dilated_p = Primitive("conv_general_dilated")
impl_rules[conv_general_dilated_p] = _conv_impl


def _narrow_conv_impl(lhs, rhs, *, preferred_element_type, **params):
    # Narrow types convolve in float32 (int64), rounding the result through float16, as XLA.
    out = _conv_impl(narrow_types.widen_for_dot(np.asarray(lhs)), narrow_types.widen_for_dot(np.asarray(rhs)),
                     preferred_element_type=None, **params)
    return narrow_types.convert_product(out, _conv_out_dtype(lhs.dtype, preferred_element_type))


narrow_rules[conv_general_dilated_p] = _narrow_conv_impl
abstract_eval_rules[conv_general_dilated_p] = _conv_abstract
checked_impl(conv_general_dilated_p)
weak_type_rules[conv_general_dilated_p] = lambda lhs, rhs, **params: bool(
    getattr(lhs, "weak_type", False) and getattr(rhs, "weak_type", False)
    and params["preferred_element_type"] is None)


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                     lhs_dilation, rhs_dilation):
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
    out_d = _dilate_shape(out_shape, window_strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding)]
    after = [ld + r - 1 - od - b for ld, r, od, b in zip(lhs_d, rhs_d, out_d, before)]
    return [(int(b), int(a)) for b, a in zip(before, after)]


def _vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                     lhs_dilation, rhs_dilation):
    if not in_shape:
        return []
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
    out_d = _dilate_shape(out_shape, window_strides)
    lows = [lo for lo, _ in padding]
    highs = [od - ld + rd - lo - 1 for od, ld, rd, lo in zip(out_d, lhs_d, rhs_d, lows)]
    return [(int(lo), int(hi)) for lo, hi in zip(lows, highs)]


def _reshape_axis_into(src, dst, x):
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [s for i, s in enumerate(shape) if i != src]
    new_shape[dst] *= shape[src]
    return shape_ops.reshape(x, tuple(new_shape), tuple(perm))


def _reshape_axis_out_of(src, size1, x):
    shape = list(get_aval(x).shape)
    size2, ragged = divmod(shape[src], size1)
    assert not ragged
    shape[src:src + 1] = [size1, size2]
    return shape_ops.reshape(x, tuple(shape))


def _conv_transpose_lhs(g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    lhs_shape = lhs.aval.shape
    rhs_shape = get_aval(rhs).shape
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    t_rhs_spec = _spec_transpose(rhs_spec)
    if feature_group_count > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], feature_group_count, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    elif batch_group_count > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], batch_group_count, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        feature_group_count = batch_group_count
    trans_dn = ConvDimensionNumbers(out_spec, t_rhs_spec, lhs_spec)
    pads = _vjp_lhs_padding([lhs_shape[i] for i in lhs_spec[2:]], [rhs_shape[i] for i in rhs_spec[2:]],
                            window_strides, [get_aval(g).shape[i] for i in out_spec[2:]], padding,
                            lhs_dilation, rhs_dilation)
    revd = shape_ops.rev(rhs, tuple(rhs_spec[2:]))
    if get_aval(g).dtype != get_aval(revd).dtype:
        revd = conversions.convert_element_type(revd, get_aval(g).dtype)
    out = conv_general_dilated(g, revd, window_strides=lhs_dilation, padding=pads,
                               lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                               dimension_numbers=trans_dn, feature_group_count=feature_group_count,
                               batch_group_count=1, precision=precision,
                               preferred_element_type=preferred_element_type)
    if get_aval(out).dtype != lhs.aval.dtype:
        out = conversions.convert_element_type(out, lhs.aval.dtype)
    if batch_group_count > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_transpose_rhs(g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    if get_aval(g).size == 0:
        return Zero(rhs.aval)
    lhs_shape = get_aval(lhs).shape
    rhs_shape = rhs.aval.shape
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_t, rhs_t, out_t = map(_spec_transpose, dimension_numbers)
    if batch_group_count > 1:
        feature_group_count, batch_group_count = batch_group_count, 1
    elif feature_group_count > 1:
        batch_group_count, feature_group_count = feature_group_count, 1
    trans_dn = ConvDimensionNumbers(lhs_t, out_t, rhs_t)
    pads = _vjp_rhs_padding([lhs_shape[i] for i in lhs_spec[2:]], [rhs_shape[i] for i in rhs_spec[2:]],
                            window_strides, [get_aval(g).shape[i] for i in out_spec[2:]], padding,
                            lhs_dilation, rhs_dilation)
    if get_aval(g).dtype != get_aval(lhs).dtype:
        lhs = conversions.convert_element_type(lhs, get_aval(g).dtype)
    out = conv_general_dilated(lhs, g, window_strides=rhs_dilation, padding=pads,
                               lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
                               dimension_numbers=trans_dn, feature_group_count=feature_group_count,
                               batch_group_count=batch_group_count, precision=precision,
                               preferred_element_type=preferred_element_type)
    if get_aval(out).dtype != rhs.aval.dtype:
        out = conversions.convert_element_type(out, rhs.aval.dtype)
    return out


ad.defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)


def _conv_batch(axis_size, vals, dims, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
    lhs, rhs = vals
    lb, rb = dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    common = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  precision=precision, preferred_element_type=preferred_element_type)
    if lb is not None and rb is not None:
        if batch_group_count > 1:
            new_lhs = _reshape_axis_into(lb, lhs_spec[0], lhs)
            batch_group_count *= axis_size
        else:
            new_lhs = _reshape_axis_into(lb, lhs_spec[1], lhs)
            feature_group_count *= axis_size
        new_rhs = _reshape_axis_into(rb, rhs_spec[0], rhs)
        out = conv_general_dilated_p.bind(new_lhs, new_rhs, feature_group_count=feature_group_count,
                                          batch_group_count=batch_group_count, **common)
        return _reshape_axis_out_of(out_spec[1], axis_size, out), out_spec[1]
    if lb is not None:
        if batch_group_count == 1:
            new_lhs = _reshape_axis_into(lb, lhs_spec[0], lhs)
        else:
            new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(lb <= lhs_spec[0]), batch_group_count, lhs)
            new_lhs = _reshape_axis_into(lb + int(lhs_spec[0] < lb), lhs_spec[0] + 1, new_lhs)
            new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv_general_dilated_p.bind(new_lhs, rhs, feature_group_count=feature_group_count,
                                          batch_group_count=batch_group_count, **common)
        return _reshape_axis_out_of(out_spec[0], axis_size, out), out_spec[0]
    if feature_group_count == 1 and batch_group_count == 1:
        new_rhs = _reshape_axis_into(rb, rhs_spec[0], rhs)
        out = conv_general_dilated_p.bind(lhs, new_rhs, feature_group_count=1, batch_group_count=1,
                                          **common)
        return _reshape_axis_out_of(out_spec[1], axis_size, out), out_spec[1]
    # Groups must stay outermost in the rhs output features: factor them out, fold the batch
    # into what remains, and undo that on the output.
    group = feature_group_count if feature_group_count > 1 else batch_group_count
    new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rb <= rhs_spec[0]), group, rhs)
    new_rhs = _reshape_axis_into(rb + int(rhs_spec[0] < rb), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv_general_dilated_p.bind(lhs, new_rhs, feature_group_count=feature_group_count,
                                      batch_group_count=batch_group_count, **common)
    out = _reshape_axis_out_of(out_spec[1], group, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, axis_size, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


batch_rules[conv_general_dilated_p] = _conv_batch


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-d convolution with strides, padding ('SAME', 'SAME_LOWER', 'VALID' or (lo, hi)
    pairs), input (lhs) and kernel (rhs) dilation, layouts given by `dimension_numbers` (e.g.
    ('NHWC', 'HWIO', 'NHWC')) and grouped convolutions, as XLA's Conv (cross-correlation)."""
    arguments.check_no_sharding("lax.conv_general_dilated", out_sharding)
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    nsp = len(lhs_shape) - 2
    lhs_dilation = (1,) * nsp if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dilation = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    window_strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using "
                             "this op. Please either exactly specify the required padding or use "
                             "conv_transpose.")
        k = _dilate_shape([rhs_shape[i] for i in dn.rhs_spec[2:]], rhs_dilation)
        padding = padtype_to_pads([lhs_shape[i] for i in dn.lhs_spec[2:]], k, window_strides, padding)
    else:
        try:
            padding = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (ValueError, TypeError) as e:
            raise ValueError("padding argument to conv_general_dilated should be a string or a "
                             f"sequence of (low, high) pairs, got {padding}") from e
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=tuple(tuple(p) for p in padding),
        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(precision), preferred_element_type=pet)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` for NCHW inputs and OIHW kernels without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """`conv_general_dilated` for NCHW inputs and OIHW kernels with explicit dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


# ---------------------------------------------------------------- reduce_window


def _identity(kind, dtype):
    dtype = np.dtype(dtype)
    if kind == "sum":
        return np.zeros((), dtype)[()]
    if dtype == np.bool_:
        return np.asarray(kind == "min")[()]
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return np.asarray(info.min if kind == "max" else info.max, dtype)[()]
    return np.asarray(-np.inf if kind == "max" else np.inf, dtype)[()]


_REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min}


def _reduce_window_impl(kind, x, *, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
    x = np.asarray(x)
    xp = _pad_dilate(x, _identity(kind, x.dtype), padding, base_dilation)
    win = _windows(xp, window_dimensions, window_strides, window_dilation)
    axes = tuple(range(x.ndim, 2 * x.ndim))
    if win.size == 0:
        return np.full(win.shape[:x.ndim], _identity(kind, x.dtype), x.dtype)
    if kind == "sum":
        return np.sum(win, axis=axes, dtype=x.dtype)
    return np.asarray(_REDUCERS[kind](win, axis=axes)).astype(x.dtype)


def _reduce_window_shape(x_shape, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation):
    n = len(x_shape)
    for name, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("padding", padding), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if len(v) != n:
            raise TypeError(f"reduce_window {name} must have one entry per operand dimension; got "
                            f"{name}={tuple(v)} for operand shape {tuple(x_shape)}.")
    if any(s <= 0 for s in window_strides) or any(w < 0 for w in window_dimensions):
        raise TypeError(f"reduce_window window_strides must be positive and window_dimensions "
                        f"non-negative; got {tuple(window_strides)} and {tuple(window_dimensions)}.")
    dilated = _dilate_shape(x_shape, base_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, padding)]
    win = _dilate_shape(window_dimensions, window_dilation)
    return tuple(_stride_dim(p, w, s) for p, w, s in zip(padded, win, window_strides))


def _reduce_window_abstract(kind, x, **params):
    if kind == "sum":
        arguments._check_kind("reduce_window_sum", "number", x)
    return [x.update(shape=_reduce_window_shape(x.shape, **params))]


def _reduce_window_batch(prim, axis_size, vals, dims, *, window_dimensions, window_strides, padding,
                         base_dilation, window_dilation):
    (x,), (d,) = vals, dims

    def ins(t, v):
        t = list(t)
        t.insert(d, v)
        return tuple(t)

    return prim.bind(x, window_dimensions=ins(window_dimensions, 1),
                     window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
                     base_dilation=ins(base_dilation, 1),
                     window_dilation=ins(window_dilation, 1)), d


def _reduce_window_prim(kind):
    prim = Primitive(f"reduce_window_{kind}")
    impl_rules[prim] = lambda x, **params: _reduce_window_impl(kind, x, **params)
    abstract_eval_rules[prim] = lambda x, **params: _reduce_window_abstract(kind, x, **params)
    batch_rules[prim] = lambda axis_size, vals, dims, **params: _reduce_window_batch(
        prim, axis_size, vals, dims, **params)
    checked_impl(prim)
    return prim


reduce_window_sum_p = _reduce_window_prim("sum")
reduce_window_max_p = _reduce_window_prim("max")
reduce_window_min_p = _reduce_window_prim("min")


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    in_shape = x.aval.shape
    if type(ct) is Zero:
        return [Zero(x.aval)]
    ct_shape = get_aval(ct).shape
    pads = _vjp_lhs_padding(in_shape, window_dimensions, window_strides, ct_shape, padding,
                            base_dilation, window_dilation)
    cfg = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    padded = lax.pad(ct, np.zeros((), get_aval(ct).dtype)[()], cfg)
    out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                   window_strides=base_dilation, padding=((0, 0),) * len(in_shape),
                                   base_dilation=(1,) * len(in_shape), window_dilation=window_dilation)
    return [out]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _window_slices(x, fill, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation, out_shape):
    """One strided slice of the padded `x` per window offset; each has the output's shape."""
    cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    xp = lax.pad(x, fill, cfg)
    for offset in itertools.product(*[range(w) for w in window_dimensions]):
        starts = [o * wd for o, wd in zip(offset, window_dilation)]
        limits = [s + (n - 1) * st + 1 if n else s
                  for s, n, st in zip(starts, out_shape, window_strides)]
        yield lax.slice(xp, starts, limits, window_strides)


def _reduce_window_chooser_jvp(prim, kind, primals, tangents, **params):
    # The tangent of each output is the tangent of the first input in its window that attains
    # the output (the element a max/min window selects).
    (x,), (t,) = primals, tangents
    out = prim.bind(x, **params)
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    out_shape = get_aval(out).shape
    dt = get_aval(x).dtype
    vals = _window_slices(x, _identity(kind, dt), out_shape=out_shape, **params)
    tans = _window_slices(t, np.zeros((), dt)[()], out_shape=out_shape, **params)
    found = shape_ops.full(out_shape, False, np.bool_)
    acc = shape_ops.full(out_shape, 0, dt)
    for v, tv in zip(vals, tans):
        hit = lax.bitwise_and(lax.eq(v, out), lax.bitwise_not(found))
        acc = lax.select(hit, tv, acc)
        found = lax.bitwise_or(found, hit)
    return out, acc


ad.jvp_rules[reduce_window_max_p] = lambda p, t, **kw: _reduce_window_chooser_jvp(
    reduce_window_max_p, "max", p, t, **kw)
ad.jvp_rules[reduce_window_min_p] = lambda p, t, **kw: _reduce_window_chooser_jvp(
    reduce_window_min_p, "min", p, t, **kw)


def _computation_kind(computation):
    if computation in (lax.add, np.add) or getattr(computation, "__name__", "") == "add":
        return "sum"
    if computation in (lax.max, np.maximum) or getattr(computation, "__name__", "") in ("max", "maximum"):
        return "max"
    if computation in (lax.min, np.minimum) or getattr(computation, "__name__", "") in ("min", "minimum"):
        return "min"
    return None


def _generic_reduce_window(operands, init_values, computation, window_dimensions,
                           window_strides, padding, base_dilation, window_dilation):
    """reduce_window of any computation over a pytree of operands: each output starts from
    the init values and folds in its window's elements in row-major order; padding and the
    holes of base dilation hold the init values, as in XLA."""
    flat, tree = pytrees.tree_flatten(operands)
    flat_init, init_tree = pytrees.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{tree} vs. {init_tree}")
    if any(get_aval(i).shape for i in flat_init):
        raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                        f"shapes {[get_aval(i).shape for i in flat_init]}.")
    shape = get_aval(flat[0]).shape
    if isinstance(padding, str):
        padding = padtype_to_pads(shape, _dilate_shape(window_dimensions, window_dilation),
                                  window_strides, padding)
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                  base_dilation=base_dilation, window_dilation=window_dilation)
    out_shape = _reduce_window_shape(shape, **params)
    inits = [conversions.convert_element_type(i, get_aval(x).dtype)
             for x, i in zip(flat, flat_init, strict=True)]
    windows = zip(*[_window_slices(x, i, out_shape=out_shape, **params)
                    for x, i in zip(flat, inits)])
    acc = pytrees.tree_unflatten(tree, [shape_ops.full(out_shape, i, get_aval(x).dtype)
                                        for x, i in zip(flat, inits)])
    for window in windows:
        acc = computation(acc, pytrees.tree_unflatten(tree, list(window)))
        acc_tree = pytrees.tree_structure(acc)
        if acc_tree != tree:
            raise ValueError("reduce_window output must have the same tree structure as the "
                             f"operands {tree} vs. {acc_tree}")
    return acc


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce each window of `operand` (an array or a pytree of them) with `computation`
    starting from `init_value`; strides default to 1 and `padding` is 'VALID' (the default),
    'SAME' or (low, high) pairs, as lax.reduce_window. lax.add, lax.max and lax.min are one
    primitive each; other computations fold the window's elements in order."""
    kind = _computation_kind(computation)
    nd = len(window_dimensions)
    if kind is None or not isinstance(operand, (Array, Tracer, np.ndarray, np.generic)):
        return _generic_reduce_window(
            operand, init_value, computation, tuple(int(w) for w in window_dimensions),
            *[(1,) * nd if v is None else tuple(int(x) for x in v) for v in (window_strides,)],
            padding, *[(1,) * nd if v is None else tuple(int(x) for x in v)
                       for v in (base_dilation, window_dilation)])
    nd = get_aval(operand).ndim
    window_dimensions = tuple(int(w) for w in window_dimensions)
    window_strides = (1,) * nd if window_strides is None else tuple(int(s) for s in window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(int(b) for b in base_dilation)
    window_dilation = (1,) * nd if window_dilation is None else tuple(int(w) for w in window_dilation)
    if isinstance(padding, str):
        padding = padtype_to_pads(get_aval(operand).shape,
                                  _dilate_shape(window_dimensions, window_dilation),
                                  window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    prim = {"sum": reduce_window_sum_p, "max": reduce_window_max_p, "min": reduce_window_min_p}[kind]
    out = prim.bind(operand, window_dimensions=window_dimensions, window_strides=window_strides,
                    padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    dt = get_aval(operand).dtype
    ident = _identity(kind, dt)
    with np.errstate(invalid="ignore"):  # an -inf init for an integer operand casts silently
        known = isinstance(init_value, (np.ndarray, np.generic, bool, int, float))
        is_ident = known and np.asarray(init_value).astype(dt) == ident
    if not is_ident:
        init = arguments._coerce_scalars("reduce_window", out, init_value)[1] \
            if isinstance(init_value, (bool, int, float)) else init_value
        out = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind](out, init)
    return out

