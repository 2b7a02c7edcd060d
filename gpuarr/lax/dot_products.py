"""dot_general and dot: contractions over given dimensions with batch dimensions (JAX's
DotDimensionNumbers), their NumPy implementation, bilinear transpose rules and batching.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from gpuarr.impls import fresh_output_prims, impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import is_undefined
from gpuarr.interpreters.batching import batch_rules, not_mapped
from gpuarr.lax.arguments import _check_same_dtypes, check_no_sharding
from gpuarr.lax.conversions import convert_element_type
from gpuarr.lax.dot_precision import algorithm_product, canonicalize_precision, is_algorithm
from gpuarr.lax.shape_ops import transpose

# ---------------------------------------------------------------- dot_general


def _dot_dims(lhs_ndim, rhs_ndim, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lf = tuple(i for i in range(lhs_ndim) if i not in lc and i not in lb)
    rf = tuple(i for i in range(rhs_ndim) if i not in rc and i not in rb)
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb), lf, rf


_NARROW_FLOATS = (np.dtype(np.float16),) + ((np.dtype(dtypes.bfloat16),)
                                             if hasattr(dtypes, "bfloat16") else ())


def _einsum_pays(dtype, out_shape, ndims) -> bool:
    # einsum's loops beat a broadcasting multiply unless the rows it runs along are short.
    return dtype.kind in "fc" and bool(out_shape) and out_shape[-1] >= 16 and ndims <= 26


def _broadcast_product_spec(x_ndim, y_ndim, dimension_numbers) -> str:
    """The einsum subscripts of a dot_general without contraction (batch and free axes only)."""
    _, _, lb, rb, lf, rf = _dot_dims(x_ndim, y_ndim, dimension_numbers)
    letters = [chr(ord("a") + i) for i in range(len(lb) + len(lf) + len(rf))]
    bl, fl, fr = letters[:len(lb)], letters[len(lb):len(lb) + len(lf)], letters[len(lb) + len(lf):]
    xs, ys = [""] * x_ndim, [""] * y_ndim
    for i, c in zip(lb + lf, bl + fl):
        xs[i] = c
    for i, c in zip(rb + rf, bl + fr):
        ys[i] = c
    return f"{''.join(xs)},{''.join(ys)}->{''.join(bl + fl + fr)}"


def _dot_general_impl(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    if precision is not None and is_algorithm(precision):  # None, the common case, costs one test
        out = x.dtype if preferred_element_type is None else preferred_element_type
        return algorithm_product(partial(_dot_general_impl, dimension_numbers=dimension_numbers),
                                 x, y, precision, out)
    (lc, rc), (lb, rb) = dimension_numbers
    if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype.char in "fdFD" \
            and not lb and len(lc) == 1 and x.ndim <= 2 and y.ndim <= 2 \
            and (preferred_element_type is None or preferred_element_type == x.dtype):
        # The common case, kept short: a BLAS matrix/vector product (transposes are views).
        return np.dot(x if lc[0] == x.ndim - 1 else x.T, y if rc[0] == 0 else y.T)
    x, y = np.asarray(x), np.asarray(y)
    out_dtype = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    if x.dtype in narrow_types.NARROW:
        # float8/float4 products accumulate in float32 and round through float16, integers wrap
        # (as XLA on the CPU).
        acc = _dot_general_impl(narrow_types.widen_for_dot(x), narrow_types.widen_for_dot(y),
                                dimension_numbers)
        return narrow_types.convert_product(acc, out_dtype)
    if x.dtype == np.bool_ or x.dtype in _NARROW_FLOATS:
        # NumPy has no bool matmul; half precision accumulates in float32 (as XLA does on CPU).
        acc = np.int32 if x.dtype == np.bool_ else np.float32
        x, y = x.astype(acc), y.astype(acc)
    # Fast paths: plain matrix/vector products go straight to BLAS (transposes are views).
    if not lb and len(lc) == 1 and x.ndim <= 2 and y.ndim <= 2:
        xm = x if lc[0] == x.ndim - 1 else x.T
        ym = y if rc[0] == 0 else y.T
        return np.dot(xm, ym).astype(out_dtype, copy=False)
    lc, rc, lb, rb, lf, rf = _dot_dims(x.ndim, y.ndim, dimension_numbers)
    bshape = tuple(x.shape[i] for i in lb)
    lfs = tuple(x.shape[i] for i in lf)
    rfs = tuple(y.shape[i] for i in rf)
    if not lc:
        # No contraction: a broadcast product, not a batch of 1x1 matrix multiplies (one
        # product per element in einsum and in multiply, so the same values).
        out_shape = bshape + lfs + rfs
        if _einsum_pays(x.dtype, out_shape, x.ndim + y.ndim):
            spec = _broadcast_product_spec(x.ndim, y.ndim, dimension_numbers)
            return np.einsum(spec, x, y).astype(out_dtype, copy=False)
        xt = np.transpose(x, lb + lf).reshape(bshape + lfs + (1,) * len(rfs))
        yt = np.transpose(y, rb + rf).reshape(bshape + (1,) * len(lfs) + rfs)
        return np.multiply(xt, yt).astype(out_dtype, copy=False)
    k = math.prod(x.shape[i] for i in lc)
    xt = np.transpose(x, lb + lf + lc).reshape(bshape + (math.prod(lfs), k))
    yt = np.transpose(y, rb + rc + rf).reshape(bshape + (k, math.prod(rfs)))
    out = np.matmul(xt, yt)
    return out.reshape(bshape + lfs + rfs).astype(out_dtype, copy=False)


def _dot_general_abstract(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    lc, rc, lb, rb, lf, rf = _dot_dims(x.ndim, y.ndim, dimension_numbers)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting and batch "
                        f"dimensions, got dimension_numbers {dimension_numbers}")
    for a, b in zip(lc + lb, rc + rb):
        if x.shape[a] != y.shape[b]:
            raise TypeError(f"dot_general requires contracting/batch dimensions to have the same "
                            f"shape, got {x.shape} and {y.shape} with dimension_numbers "
                            f"{dimension_numbers}.")
    _check_same_dtypes("dot_general", x, y)
    shape = tuple(x.shape[i] for i in lb) + tuple(x.shape[i] for i in lf) + tuple(y.shape[i] for i in rf)
    dtype = preferred_element_type if preferred_element_type is not None else x.dtype
    return [ShapedArray(shape, dtype, x.weak_type and y.weak_type)]


def _ranges_like(*xs):
    start = 0
    for x in xs:
        x_len = len(x)
        yield tuple(range(start, start + x_len))
        start += x_len


def _remaining(original, *removed_lists):
    removed = set(itertools_chain(removed_lists))
    return tuple(i for i in original if i not in removed)


def itertools_chain(lists):
    out = []
    for lst in lists:
        out.extend(lst)
    return out


def _dot_transpose_lhs(ct, x, y, dimension_numbers, precision=None, preferred_element_type=None,
                       swap_ans=False):
    x_aval = x.aval if is_undefined(x) else get_aval(x)
    y_aval = y.aval if is_undefined(y) else get_aval(y)
    x_ndim, y_ndim = x_aval.ndim, y_aval.ndim
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = tuple(np.take(x_contract, np.argsort(y_contract)))
    out_axes = tuple(np.argsort(tuple(x_batch) + x_kept + x_contract_sorted_by_y))
    # As JAX writes it (a transpose after the product): the compiler's passes fold the
    # transpose into the product where that saves a copy.
    val = transpose(dot_general(ct, y, dims, precision, preferred_element_type), out_axes)
    return convert_element_type(val, x_aval.dtype) if get_aval(val).dtype != x_aval.dtype else val


def _dot_transpose_rhs(ct, x, y, dimension_numbers, precision=None, preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_transpose_lhs(ct, y, x, swapped, precision, preferred_element_type,
                              swap_ans=True)


dot_general_p = Primitive("dot_general")
impl_rules[dot_general_p] = _dot_general_impl
fresh_output_prims.add(dot_general_p)
abstract_eval_rules[dot_general_p] = _dot_general_abstract
ad.defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)


def _dot_general_batch(axis_size, vals, dims, dimension_numbers, precision=None,
                       preferred_element_type=None):
    (x, y), (dx, dy) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if dx is not not_mapped and dy is not not_mapped:
        x = batching.moveaxis(x, dx, 0) if dx != 0 else x
        y = batching.moveaxis(y, dy, 0) if dy != 0 else y
        shift = lambda t: tuple(i + 1 for i in t)  # noqa: E731
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return dot_general_p.bind(x, y, dimension_numbers=dn, **params), 0
    # One side batched: its batch axis stays where it is, as one more free dimension.
    shift = lambda t, d: tuple(i + (i >= d) for i in t)  # noqa: E731
    if dx is not not_mapped:
        dn = ((shift(lc, dx), rc), (shift(lb, dx), rb))
        free = [i for i in range(get_aval(x).ndim) if i not in dn[0][0] + dn[1][0]]
        return dot_general_p.bind(x, y, dimension_numbers=dn, **params), len(lb) + free.index(dx)
    dn = ((lc, shift(rc, dy)), (lb, shift(rb, dy)))
    free = [i for i in range(get_aval(y).ndim) if i not in dn[0][1] + dn[1][1]]
    if not lb and free == [dy]:
        # A matrix times a batch of vectors: the batch as rows (y @ x.T), so the result comes
        # out batch-major and contiguous, not transposed (scan hoists such products this way).
        swapped = ((dn[0][1], lc), ((), ()))
        return dot_general_p.bind(y, x, dimension_numbers=swapped, **params), 0
    n_lhs_free = get_aval(x).ndim - len(lc) - len(lb)
    return dot_general_p.bind(x, y, dimension_numbers=dn, **params), \
        len(lb) + n_lhs_free + free.index(dy)


batch_rules[dot_general_p] = _dot_general_batch


def _index_tuple(dims):
    """An int or a sequence of ints as a tuple of ints (dot_general's dimension lists)."""
    return (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(map(int, dims))


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General tensor contraction given by `dimension_numbers` = ((lhs_contract,
    rhs_contract), (lhs_batch, rhs_batch)): batch axes first, then lhs free axes, then rhs free
    axes. `precision` takes a Precision (or its name, or a pair), a DotAlgorithmPreset (or its
    name) or a DotAlgorithm (see `gpuarr.lax.dot_precision`); `preferred_element_type` sets the
    result type."""
    if out_sharding is not None:
        check_no_sharding("lax.dot_general", out_sharding)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    lhs, rhs = _common_operand_dtype(lhs, rhs, pet)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pet)


def _precision_rank(dt):
    """JAX's (and XLA's HigherPrecisionType) order of operand types: complex above real, then
    exponent range, mantissa, width and signedness."""
    real = dtypes.finfo(dt).dtype if dtypes.is_complex(dt) else dt
    floating = dtypes.is_float(real)
    return (dtypes.is_complex(dt), dtypes.finfo(real).maxexp if floating else -1,
            dtypes.finfo(real).nmant if floating else -1, dtypes.itemsize_bits(real),
            not dtypes.is_unsigned_int(real))


def _common_operand_dtype(lhs, rhs, pet):
    """Operands of different types (an float8_e5m2 gradient times a float8_e4m3fn weight in
    flax's fp8 ops) both converted to the result type, the preferred one or else the higher of
    the two, as XLA's operand upcasting computes them; the primitive then sees one type."""
    lt, rt = get_aval(lhs).dtype, get_aval(rhs).dtype
    if lt == rt or isinstance(lt, dtypes.ExtendedDType) or isinstance(rt, dtypes.ExtendedDType):
        return lhs, rhs
    lrank, rrank = _precision_rank(lt), _precision_rank(rt)
    if lrank == rrank:
        raise TypeError(f"lax.dot_general argument type error: {lt}, {rt}")
    target = pet if pet is not None else (lt if lrank > rrank else rt)
    return convert_element_type(lhs, target), convert_element_type(rhs, target)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """A contraction given by `dimension_numbers` (as dot_general's); without them, the
    product of rank-1 or rank-2 arrays over the last axis of `lhs` and the first of `rhs`."""
    if out_sharding is not None:
        check_no_sharding("lax.dot", out_sharding)
    if dimension_numbers is None:
        lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
        if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
                and lhs_shape[-1] == rhs_shape[0]):
            raise ValueError(
                "lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={lhs_shape} rhs_shape={rhs_shape}")
        dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
