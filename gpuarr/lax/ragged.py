"""Ragged matrix products: `ragged_dot` (the mixture-of-experts product [m,k] x [g,k,n] -> [m,n],
where consecutive runs of rows use different right-hand matrices) and `ragged_dot_general`,
with JAX's `RaggedDotDimensionNumbers` and its three modes, named by the kind of the lhs
ragged dimension:

1. non-contracting: [b...,m...,k...], [g,b...,k...,n...], [b...,x...,g] -> [b...,m...,n...]
2. contracting:     [b...,m...,k...], [b...,k...,n...],   [b...,x...,g] -> [g,b...,m...,n...]
3. batch:           [b...,m...,k...], [b...,k...,n...],   [x...,g]      -> [b...,m...,n...]

Group i covers the indices [sum(gs[:i]), sum(gs[:i+1])) of the ragged dimension (JAX's mask
semantics: indices past the last group belong to none, and in mode 3 the product is plain
dot_general). A group_sizes of shape [g] applies to every prefix position ([b...,x...]).
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import Primitive, ShapedArray, Tracer, abstract_eval_rules, get_aval
from gpuarr.impls import fresh_output_prims, impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, add_tangents, is_undefined
from gpuarr.interpreters.batching import batch_rules, not_mapped
from gpuarr.lax import arguments, conversions, dot_products, shape_ops
from gpuarr.lax.dot_precision import algorithm_product, canonicalize_precision, is_algorithm
from gpuarr.lax.slicing import checked_impl

# ---------------------------------------------------------------- dimension numbers


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """Describes the ragged, group and dot dimensions of `ragged_dot_general`:
    `dot_dimension_numbers` as dot_general's ((lhs_contracting, rhs_contracting), (lhs_batch,
    rhs_batch)), `lhs_ragged_dimensions` (exactly one lhs dimension, split into groups) and
    `rhs_group_dimensions` (the rhs dimension indexed by group: one in mode 1, none otherwise).
    Sequences are stored as tuples, so equal numbers compare and hash equal."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


# What lax.ragged_dot uses: [m,k] x [g,k,n] -> [m,n], rows ragged.
_BASIC_RAGGED_DOT_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(
    dot_dimension_numbers=(([1], [1]), ([], [])),
    lhs_ragged_dimensions=[0],
    rhs_group_dimensions=[0],
)


class RaggedDotMode(enum.Enum):
    """The kind of the lhs ragged dimension, which decides what the groups mean."""

    RAGGED_NONCONTRACTING = 1  # [b,m,k], [g,b,k,n], [b,g] -> [b,m,n]
    RAGGED_CONTRACTING = 2  #    [b,m,k], [b,k,n],   [b,g] -> [g,b,m,n]
    RAGGED_BATCH = 3  #          [b,m,k], [b,k,n],   [g]   -> [b,m,n]


_NONCONTRACTING = RaggedDotMode.RAGGED_NONCONTRACTING
_CONTRACTING = RaggedDotMode.RAGGED_CONTRACTING
_BATCH = RaggedDotMode.RAGGED_BATCH


def _remaining(n, *removed):
    """The axes 0..n-1 in none of `removed`, in order."""
    gone = set().union(*map(set, removed))
    return [i for i in range(n) if i not in gone]


def _mode_and_dim(lhs_ndim, dn):
    (lc, _), (lb, _) = dn.dot_dimension_numbers
    r = dn.lhs_ragged_dimensions[0]
    noncontracting = _remaining(lhs_ndim, lc, lb)
    if r in noncontracting:
        return _NONCONTRACTING, r
    if r in lc:
        return _CONTRACTING, r
    if r in lb:
        return _BATCH, r
    raise TypeError(f"lhs_ragged_dim {r} not found in lhs_noncontracting {noncontracting}, "
                    f"lhs_contracting {lc}, or lhs_batch {lb}.")


def _prefix_dims(mode, ndim, ragged_dim, batch, contract):
    """The operand axes group_sizes' leading dimensions [b...,x...] stand for, in order."""
    batch, contract = list(batch), list(contract)
    if mode is _NONCONTRACTING:
        noncontract = _remaining(ndim, contract, batch)
        return batch + noncontract[:noncontract.index(ragged_dim)]
    if mode is _CONTRACTING:
        return batch + contract[:contract.index(ragged_dim)]
    return batch[:batch.index(ragged_dim)]


# ---------------------------------------------------------------- shape and dtype rules


def _check_in_range(dim, rank, dim_name, arg_name):
    if dim < 0 or dim >= rank:
        raise TypeError(f"ragged_dot_general requires {dim_name} numbers to be nonnegative and "
                        f"less than the number of axes of the {arg_name} value, got {dim} for "
                        f"{arg_name} of rank {rank}.")


def _dot_shape_checks(lhs, rhs, dot_dimension_numbers):
    """dot_general's checks of the dimension numbers, with JAX's messages."""
    (lc, rc), (lb, rb) = dot_dimension_numbers
    if not all(all(0 <= i < lhs.ndim for i in d) for d in (lc, lb)):
        raise TypeError("dot_general requires lhs dimension numbers to be nonnegative and less "
                        "than the number of axes of the lhs value, got "
                        f"lhs_batch of {lb} and lhs_contracting of {lc} for lhs of rank "
                        f"{lhs.ndim}")
    if not all(all(0 <= i < rhs.ndim for i in d) for d in (rc, rb)):
        raise TypeError("dot_general requires rhs dimension numbers to be nonnegative and less "
                        "than the number of axes of the rhs value, got "
                        f"rhs_batch of {rb} and rhs_contracting of {rc} for rhs of rank "
                        f"{rhs.ndim}")
    if len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs_batch and rhs_batch "
                        f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
    for side, dims, kind in (("lhs", lb, "batch"), ("rhs", rb, "batch"),
                             ("lhs", lc, "contracting"), ("rhs", rc, "contracting")):
        if len(set(dims)) != len(dims):
            raise TypeError(f"dot_general requires {side} {kind} dimensions to be distinct, got "
                            f"{side}_{kind} {dims}.")
    if set(lc) & set(lb):
        raise TypeError("dot_general requires lhs batch dimensions to be disjoint from "
                        f"contracting dimensions, got lhs_batch {lb} and lhs_contracting {lc}.")
    if set(rc) & set(rb):
        raise TypeError("dot_general requires rhs batch dimensions to be disjoint from "
                        f"contracting dimensions, got rhs_batch {rb} and rhs_contracting {rc}.")
    lbs, rbs = tuple(lhs.shape[i] for i in lb), tuple(rhs.shape[i] for i in rb)
    if lbs != rbs:
        raise TypeError("dot_general requires lhs batch dimensions and rhs batch dimensions to "
                        f"have the same shape, got {lbs} and {rbs}.")
    lcs, rcs = tuple(lhs.shape[i] for i in lc), tuple(rhs.shape[i] for i in rc)
    if lcs != rcs:
        raise TypeError("dot_general requires contracting dimensions to have the same shape, "
                        f"got {lcs} and {rcs}.")


def _ragged_shape(lhs, rhs, group_sizes, dn):
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    r = dn.lhs_ragged_dimensions[0]
    _check_in_range(r, lhs.ndim, "lhs ragged dimension", "lhs")
    mode, _ = _mode_and_dim(lhs.ndim, dn)
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    if group_sizes.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if group_sizes.ndim != 1:
        prefix = _prefix_dims(mode, lhs.ndim, r, lb, lc)
        expected = tuple(lhs.shape[i] for i in prefix) + (group_sizes.shape[-1],)
        if tuple(group_sizes.shape) != expected:
            raise TypeError(f"expected group_sizes to have shape {expected}, got "
                            f"{tuple(group_sizes.shape)}.")
    num_groups = group_sizes.shape[-1]
    group_dims = dn.rhs_group_dimensions
    if mode is _NONCONTRACTING:
        if len(group_dims) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when "
                            "lhs ragged dimension is noncontracting.")
        gd = group_dims[0]
        _check_in_range(gd, rhs.ndim, "rhs group dimension", "rhs")
        if gd in rb or gd in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                            "distinct from contracting and batch dimensions.")
        if rhs.shape[gd] != num_groups:
            raise TypeError(f"expected rhs group dimension size to be {num_groups}, got "
                            f"{rhs.shape[gd]}.")
    elif group_dims:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                        "ragged dimension is contracting or batch.")
    _dot_shape_checks(lhs, rhs, dn.dot_dimension_numbers)
    shape = (tuple(lhs.shape[i] for i in lb)
             + tuple(lhs.shape[i] for i in _remaining(lhs.ndim, lc, lb))
             + tuple(rhs.shape[i] for i in _remaining(rhs.ndim, rc, rb, group_dims)))
    return (num_groups,) + shape if mode is _CONTRACTING else shape


def _bit_width(dt):
    if dt == np.bool_:
        return 1
    return dtypes.finfo(dt).bits if dtypes.is_float(dt) else np.dtype(dt).itemsize * 8


def _type_properties(dt):
    """XLA's order of operand types (HigherPrecisionType): complex first, then exponent range,
    mantissa, width and signedness."""
    c = np.dtype(dtypes.to_floating_dtype(dt)) if dtypes.is_complex(dt) else np.dtype(dt)
    is_float = dtypes.is_float(c)
    return (dtypes.is_complex(dt), int(dtypes.finfo(c).maxexp) if is_float else -1,
            int(dtypes.finfo(c).nmant) if is_float else -1, _bit_width(c),
            not dtypes.is_unsigned_int(c))


def _operand_dtype(lhs_dtype, rhs_dtype, name="lax.ragged_dot_general"):
    """The product's type before preferred_element_type: the more precise operand type."""
    lp, rp = _type_properties(lhs_dtype), _type_properties(rhs_dtype)
    if lp > rp:
        return np.dtype(lhs_dtype)
    if rp > lp:
        return np.dtype(rhs_dtype)
    if lhs_dtype != rhs_dtype:
        raise TypeError(f"{name} argument type error: {lhs_dtype}, {rhs_dtype}")
    return np.dtype(lhs_dtype)


def _ragged_dtype(lhs, rhs, group_sizes, preferred_element_type):
    if not dtypes.is_int(group_sizes.dtype):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                        "np.integer.")
    result = _operand_dtype(lhs.dtype, rhs.dtype)
    if preferred_element_type is None or result == preferred_element_type:
        return result
    if not dtypes.is_float(result) and \
            _bit_width(preferred_element_type) < _bit_width(result):
        raise TypeError("`preferred_element_type` must not be narrower than the original "
                        f"type, got preferred_element_type of {preferred_element_type} for "
                        f"result type of {result}.")
    return np.dtype(preferred_element_type)


def _ragged_abstract(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
                     preferred_element_type=None):
    shape = _ragged_shape(lhs, rhs, group_sizes, ragged_dot_dimension_numbers)
    dtype = _ragged_dtype(lhs, rhs, group_sizes, preferred_element_type)
    weak = lhs.weak_type and rhs.weak_type and group_sizes.weak_type
    return [ShapedArray(shape, dtype, weak)]


# ---------------------------------------------------------------- NumPy implementation

_NARROW_FLOATS = dot_products._NARROW_FLOATS


def _accumulation_dtype(operand, out):
    """The type products are summed in: bool counts in int32 and half precision in float32
    (as XLA on CPU); a wider preferred type of the same kind (or a float preferred for
    integers) is used for the whole product, so int8 products do not wrap before widening."""
    acc = np.dtype(np.int32) if operand == np.bool_ else operand
    if out != operand and out != np.bool_:
        if (dtypes.is_int(acc) and (dtypes.is_int(out) and out.itemsize >= acc.itemsize
                                    or dtypes.is_inexact(out))) \
                or (dtypes.is_float(acc) and dtypes.is_inexact(out) and _bit_width(out) > _bit_width(acc)) \
                or (dtypes.is_complex(acc) and dtypes.is_complex(out) and out.itemsize > acc.itemsize):
            acc = out
    return np.dtype(np.float32) if acc in _NARROW_FLOATS else acc


def _group_bounds(group_sizes):
    """(starts, ends) of each group along the last axis, in int64 (sums as in the sizes' type)."""
    ends = np.cumsum(group_sizes, axis=-1, dtype=group_sizes.dtype).astype(np.int64)
    return ends - group_sizes.astype(np.int64), ends


def _along(ndim, axis, index):
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _dot(x, y, lc, rc, lb, rb):
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return dot_products._dot_general_impl(x, y, dn)


def _expand(a, dim, group_sizes, prefix):
    """`a` with a leading group axis: slice g keeps the indices of group g along `dim` (the
    groups of each prefix position, from group_sizes [*prefix_shape, g]) and zeros the rest."""
    starts, ends = _group_bounds(group_sizes)
    order = (0,) + tuple(1 + i for i in np.argsort(prefix, kind="stable"))
    shape = (group_sizes.shape[-1],) + tuple(a.shape[i] if i in prefix else 1
                                             for i in range(a.ndim))
    starts, ends = (np.moveaxis(b, -1, 0).transpose(order).reshape(shape) for b in (starts, ends))
    iota = np.arange(a.shape[dim]).reshape((1,) * (dim + 1) + (-1,) + (1,) * (a.ndim - dim - 1))
    return np.where((starts <= iota) & (iota < ends), a, np.zeros((), a.dtype))


def _ragged_noncontracting(x, y, gs, r, gd, lc, rc, lb, rb):
    lf = _remaining(x.ndim, lc, lb)
    if gs.ndim > 1:  # groups differ between prefix positions: mask a copy per group
        ex = _expand(x, r, gs, _prefix_dims(_NONCONTRACTING, x.ndim, r, lb, lc))
        inc = [d + 1 for d in lc]
        return _dot(ex, y, inc + [0], list(rc) + [gd], [d + 1 for d in lb], rb)
    # One product per group over its run of rows (the mixture-of-experts case).
    rc2, rb2 = ([d - (d > gd) for d in dims] for dims in (rc, rb))
    rf = _remaining(y.ndim, rc, rb, [gd])
    out_shape = ([x.shape[i] for i in lb] + [x.shape[i] for i in lf] + [y.shape[i] for i in rf])
    out = np.zeros(out_shape, x.dtype)
    pos = len(lb) + lf.index(r)
    m = x.shape[r]
    overlapping = bool((gs < 0).any())  # a negative size makes the next group reuse rows
    for g, (s, e) in enumerate(zip(*_group_bounds(gs))):
        s, e = max(int(s), 0), min(int(e), m)
        if s < e:
            part = _dot(x[_along(x.ndim, r, slice(s, e))], y[_along(y.ndim, gd, g)],
                        lc, rc2, lb, rb2)
            where = _along(out.ndim, pos, slice(s, e))
            if overlapping:
                out[where] += part
            else:
                out[where] = part
    return out


def _ragged_contracting(x, y, gs, r, lc, rc, lb, rb):
    rr = rc[lc.index(r)]
    if gs.ndim > 1:
        ex = _expand(x, r, gs, _prefix_dims(_CONTRACTING, x.ndim, r, lb, lc))
        ey = _expand(y, rr, gs, _prefix_dims(_CONTRACTING, y.ndim, rr, rb, rc))
        return _dot(ex, ey, [d + 1 for d in lc], [d + 1 for d in rc],
                    [0] + [d + 1 for d in lb], [0] + [d + 1 for d in rb])
    # One product per group over its run of the contracted dimension.
    base = _dot(x[_along(x.ndim, r, slice(0, 0))], y[_along(y.ndim, rr, slice(0, 0))],
                lc, rc, lb, rb)
    out = np.zeros((gs.shape[0],) + base.shape, base.dtype)
    k = x.shape[r]
    for g, (s, e) in enumerate(zip(*_group_bounds(gs))):
        s, e = max(int(s), 0), min(int(e), k)
        if s < e:
            out[g] = _dot(x[_along(x.ndim, r, slice(s, e))], y[_along(y.ndim, rr, slice(s, e))],
                          lc, rc, lb, rb)
    return out


def _ragged_impl(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
                 preferred_element_type=None):
    x, y, gs = np.asarray(lhs), np.asarray(rhs), np.asarray(group_sizes)
    dn = ragged_dot_dimension_numbers
    if is_algorithm(precision):
        def product(a, b):
            return _ragged_impl(a, b, gs, ragged_dot_dimension_numbers=dn)
        out = _operand_dtype(x.dtype, y.dtype) if preferred_element_type is None \
            else preferred_element_type
        return algorithm_product(product, x, y, precision, out)
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    mode, r = _mode_and_dim(x.ndim, dn)
    operand = _operand_dtype(x.dtype, y.dtype)
    out_dtype = operand if preferred_element_type is None else np.dtype(preferred_element_type)
    acc = _accumulation_dtype(operand, out_dtype)
    x, y = x.astype(acc, copy=False), y.astype(acc, copy=False)
    if mode is _NONCONTRACTING:
        out = _ragged_noncontracting(x, y, gs, r, dn.rhs_group_dimensions[0], lc, rc, lb, rb)
    elif mode is _CONTRACTING:
        out = _ragged_contracting(x, y, gs, r, lc, rc, lb, rb)
    else:  # a ragged batch dimension changes nothing: every batch index is in one product
        out = _dot(x, y, lc, rc, lb, rb)
    if dtypes.is_complex(out.dtype) and not dtypes.is_complex(out_dtype):
        out = out.real
    return np.asarray(out).astype(out_dtype, copy=False)


ragged_dot_general_p = Primitive("ragged_dot_general")
impl_rules[ragged_dot_general_p] = _ragged_impl
abstract_eval_rules[ragged_dot_general_p] = _ragged_abstract
checked_impl(ragged_dot_general_p)  # eager calls raise the traced errors too
fresh_output_prims.add(ragged_dot_general_p)


# ---------------------------------------------------------------- JVP and transpose


def _ragged_jvp(primals, tangents, **params):
    x, y, gs = primals
    tx, ty, _ = tangents  # group sizes are integers: no tangent
    out = ragged_dot_general_p.bind(x, y, gs, **params)
    t = Zero.from_primal(out)
    if type(tx) is not Zero:
        t = add_tangents(t, ragged_dot_general_p.bind(tx, y, gs, **params))
    if type(ty) is not Zero:
        t = add_tangents(t, ragged_dot_general_p.bind(x, ty, gs, **params))
    return out, t


def _ranges_like(*xs):
    start, out = 0, []
    for x in xs:
        out.append(list(range(start, start + len(x))))
        start += len(x)
    return out


def _grad_dims(mode, r, x_ndim, y_ndim, ct_ndim, dn, wrt_x):
    """How the cotangent of x (`wrt_x`) or of y is computed: as a ragged product of the output
    cotangent with the other operand (first transposed by `perm` when that is not None), with
    dimension numbers `dims`, whose result axes are the operand's axes `unsorted` (so the
    cotangent is that result transposed by argsort(unsorted))."""
    (xc, yc), (xb, yb) = dn.dot_dimension_numbers
    yg = list(dn.rhs_group_dimensions)
    x_kept, y_kept = _remaining(x_ndim, xc, xb), _remaining(y_ndim, yc, yb, yg)
    xc_by_y = [xc[i] for i in np.argsort(yc, kind="stable")]
    yc_by_x = [yc[i] for i in np.argsort(xc, kind="stable")]
    if mode is _CONTRACTING:
        # ct is [g, b..., m..., n...]. The operand's contracted axes hold the groups, so it
        # is the ragged (non-contracting) lhs of a mode-1 product with ct, whose group axis
        # is 0; the operand goes first in [b..., k... (in xc/yc order), free...] layout so
        # group_sizes' prefix [b..., x...] is unchanged.
        nb, nc, nxf = len(xb), len(xc), len(x_kept)
        if wrt_x:  # contract the n... axes of y and ct
            perm, ct_free = list(yb) + list(yc) + y_kept, range(1 + nb + nxf, ct_ndim)
            unsorted = list(xb) + list(xc) + x_kept
        else:  # contract the m... axes of x and ct
            perm, ct_free = list(xb) + list(xc) + x_kept, range(1 + nb, 1 + nb + nxf)
            unsorted = list(yb) + list(yc) + y_kept
        dims = RaggedDotDimensionNumbers(
            dot_dimension_numbers=((list(range(nb + nc, len(perm))), list(ct_free)),
                                   (list(range(nb)), list(range(1, 1 + nb)))),
            lhs_ragged_dimensions=[nb + list(xc).index(r)], rhs_group_dimensions=[0])
        return perm, dims, unsorted
    ans_batch, ans_x, ans_y = _ranges_like(xb, x_kept, y_kept)
    if wrt_x:  # ct (lhs) times y: ct's x_kept axes keep the ragged dimension
        ragged = (len(xb) + x_kept.index(r) if mode is _NONCONTRACTING
                  else list(xb).index(r))
        dims = RaggedDotDimensionNumbers(
            dot_dimension_numbers=((ans_y, y_kept), (ans_batch, list(yb))),
            lhs_ragged_dimensions=[ragged], rhs_group_dimensions=yg)
        return None, dims, list(xb) + x_kept + xc_by_y
    # x (lhs) times ct: in mode 1 the ragged dimension is contracted now (mode 2), which
    # puts the group axis first, where y's group dimension goes back.
    dims = RaggedDotDimensionNumbers(
        dot_dimension_numbers=((x_kept, ans_x), (list(xb), ans_batch)),
        lhs_ragged_dimensions=[r], rhs_group_dimensions=[])
    return None, dims, yg + list(yb) + yc_by_x + y_kept


def _ragged_transpose(ct, x, y, gs, *, ragged_dot_dimension_numbers, precision=None,
                      preferred_element_type=None):
    dn = ragged_dot_dimension_numbers
    x_aval = x.aval if is_undefined(x) else get_aval(x)
    y_aval = y.aval if is_undefined(y) else get_aval(y)
    mode, r = _mode_and_dim(x_aval.ndim, dn)
    ct_ndim = get_aval(ct).ndim

    def grad(wrt_x):
        perm, dims, unsorted = _grad_dims(mode, r, x_aval.ndim, y_aval.ndim, ct_ndim, dn, wrt_x)
        other = y if wrt_x else x
        if perm is not None:  # mode 2: the other operand is the lhs, in a standard layout
            other = shape_ops.transpose(other, tuple(perm))
            lhs, rhs = other, ct
        else:
            lhs, rhs = (ct, other) if wrt_x else (other, ct)
        out = ragged_dot_general_p.bind(lhs, rhs, gs, ragged_dot_dimension_numbers=dims,
                                        precision=precision,
                                        preferred_element_type=preferred_element_type)
        perm_back = tuple(int(i) for i in np.argsort(unsorted, kind="stable"))
        if perm_back != tuple(range(len(perm_back))):
            out = shape_ops.transpose(out, perm_back)
        aval = x_aval if wrt_x else y_aval
        return conversions.convert_element_type(out, aval.dtype) if get_aval(out).dtype != aval.dtype \
            else out

    x_bar = grad(True) if is_undefined(x) else None
    y_bar = grad(False) if is_undefined(y) else None
    return [x_bar, y_bar, None]


ad.jvp_rules[ragged_dot_general_p] = _ragged_jvp
ad.transpose_rules[ragged_dot_general_p] = _ragged_transpose


# ---------------------------------------------------------------- batching


def _ragged_batch(axis_size, vals, dims, *, ragged_dot_dimension_numbers, **params):
    x, y, gs = vals
    dx, dy, dg = dims
    dn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    gd = list(dn.rhs_group_dimensions)
    x_ndim = get_aval(x).ndim - (dx is not not_mapped)
    mode, r = _mode_and_dim(x_ndim, dn)
    lead = 1 if mode is _CONTRACTING else 0  # the group axis comes first in mode 2
    bump = lambda t, d: [i + (i >= d) for i in t]  # noqa: E731
    gs_ndim = get_aval(gs).ndim

    if dg is not_mapped and dy is not_mapped:
        # Only x is batched: its batch axis is one more free dimension of x. With per-prefix
        # group sizes it goes last, out of group_sizes' prefix.
        if gs_ndim > 1 and dx != x_ndim:
            x, dx = batching.moveaxis(x, dx, x_ndim), x_ndim
        new = RaggedDotDimensionNumbers(((bump(lc, dx), rc), (bump(lb, dx), rb)),
                                        bump([r], dx), gd)
        free = _remaining(x_ndim + 1, new.dot_dimension_numbers[0][0],
                          new.dot_dimension_numbers[1][0])
        out_dim = lead + len(lb) + free.index(dx)
    elif dg is not_mapped and dx is not_mapped:
        # Only y is batched: its batch axis is one more free dimension of y (never in the prefix).
        new = RaggedDotDimensionNumbers(((lc, bump(rc, dy)), (lb, bump(rb, dy))), [r],
                                        bump(gd, dy))
        y_ndim = get_aval(y).ndim
        free = _remaining(y_ndim, new.dot_dimension_numbers[0][1],
                          new.dot_dimension_numbers[1][1], new.rhs_group_dimensions)
        out_dim = lead + x_ndim - len(lc) + free.index(dy)
    else:
        # The batch axis becomes a leading batch dimension of both operands (and so the first
        # prefix dimension of group_sizes).
        x = batching.move_to(x, dx, 0, axis_size)
        y = batching.move_to(y, dy, 0, axis_size)
        inc = lambda t: [i + 1 for i in t]  # noqa: E731
        new = RaggedDotDimensionNumbers(((inc(lc), inc(rc)), ([0] + inc(lb), [0] + inc(rb))),
                                        inc([r]), inc(gd))
        if dg is not_mapped:
            if gs_ndim > 1:
                gs = batching.move_to(gs, dg, 0, axis_size)
        else:
            gs = batching.move_to(gs, dg, 0, axis_size)
            prefix = _prefix_dims(mode, x_ndim + 1, r + 1, [0] + inc(lb), inc(lc))
            full = tuple(get_aval(x).shape[i] for i in prefix) + (get_aval(gs).shape[-1],)
            if get_aval(gs).shape != full:  # [batch, g] for a prefix of more dimensions
                gs = shape_ops.broadcast_in_dim(gs, full, (0, len(full) - 1))
        out_dim = lead
    out = ragged_dot_general_p.bind(x, y, gs, ragged_dot_dimension_numbers=new, **params)
    return out, out_dim


batch_rules[ragged_dot_general_p] = _ragged_batch


# ---------------------------------------------------------------- public functions


def _operand(x, position):
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic) + arguments._SCALARS):
        return arguments._as_operand(x)
    raise TypeError("Error interpreting argument to ragged_dot_general as a JAX value. The "
                    f"problematic value is of type {type(x)} and was passed to "
                    f"ragged_dot_general at position {position}.")


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision=None, preferred_element_type=None, group_offset=None,
                       out_sharding=None):
    """A dot_general in which one lhs dimension is split into consecutive groups of sizes
    `group_sizes`: each group of a non-contracting dimension is multiplied by its own slice of
    the rhs group dimension (mode 1), each group of a contracting dimension gives its own
    partial product along a new leading axis (mode 2), and a ragged batch dimension is a
    plain dot_general (mode 3); see `RaggedDotDimensionNumbers`. group_sizes has shape [g] or
    [b..., x..., g] (one row of sizes per prefix position)."""
    if out_sharding is not None:
        arguments.check_no_sharding("lax.ragged_dot_general", out_sharding)
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
        raise TypeError("ragged_dot_general requires ragged_dot_dimension_numbers to be a "
                        "lax.RaggedDotDimensionNumbers, got "
                        f"{type(ragged_dot_dimension_numbers).__name__}.")
    lhs, rhs, group_sizes = (_operand(a, i) for i, a in enumerate((lhs, rhs, group_sizes)))
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    return ragged_dot_general_p.bind(lhs, rhs, group_sizes,
                                     ragged_dot_dimension_numbers=ragged_dot_dimension_numbers,
                                     precision=canonicalize_precision(precision),
                                     preferred_element_type=pet)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """Ragged matrix product [m,k] x [g,k,n] -> [m,n]: rows sum(group_sizes[:i]) up to
    sum(group_sizes[:i+1]) of `lhs` are multiplied by rhs[i]; rows past the last group are
    zero in the result (the mixture-of-experts product, with tokens sorted by expert)."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_RAGGED_DOT_DIMENSION_NUMBERS,
                              precision=precision, preferred_element_type=preferred_element_type,
                              group_offset=group_offset, out_sharding=out_sharding)
