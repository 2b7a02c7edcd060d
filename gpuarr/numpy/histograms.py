"""Binning: histogram, histogram2d, histogramdd, histogram_bin_edges, and interp (which finds
each point's bin the same way)."""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Tracer, get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import (
    check_arraylike,
    concrete_value,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
)
from gpuarr.numpy.dtype_functions import astype
from gpuarr.numpy.index_tricks import ix_


def _digitize(x, bins, right=False):
    """The index of the bin each x falls in (bins monotonic), by counting comparisons."""
    check_arraylike("digitize", x, bins)
    x, bins = promote_dtypes(x, bins)
    b = np.asarray(bins) if not isinstance(bins, Tracer) else None
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {get_aval(bins).shape}.")
    nb = get_aval(bins).shape[0]
    xs = lax_shape_ops.reshape(x, get_aval(x).shape + (1,))
    bs = lax_shape_ops.reshape(bins, (1,) * get_aval(x).ndim + (nb,))
    decreasing = b is not None and nb > 1 and b[0] > b[-1]
    if decreasing:
        cmp = lax.lt(xs, bs) if right else lax.le(xs, bs)
    else:
        cmp = lax.ge(xs, bs) if not right else lax.gt(xs, bs)
    return reductions.sum(cmp, axis=-1, dtype=dtypes.default_int_dtype())


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges histogram() would use."""
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = ensure_array(a)
    dt = dtypes.to_inexact_dtype(get_aval(arr).dtype)
    if np.ndim(bins) == 1:
        return creation.asarray(bins, dtype=dt)
    bins_int = operator.index(concrete_value(bins, "bins argument of histogram_bin_edges"))
    if range is None:
        range = [reductions.min(arr), reductions.max(arr)]
    range = creation.asarray(range, dtype=dt)
    if np.shape(range) != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    # An empty range is widened by 1/2 each way, as NumPy and JAX do.
    lo = ufuncs.where(ufuncs.equal(reductions.ptp(range), 0), ufuncs.subtract(range[0], 0.5),
                      range[0])
    hi = ufuncs.where(ufuncs.equal(reductions.ptp(range), 0), ufuncs.add(range[1], 0.5), range[1])
    return creation.linspace(lo, hi, bins_int + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts (or weight sums) of `a` in `bins`; the last bin includes its right edge."""
    if weights is None:
        check_arraylike("histogram", a, bins, converts=True)
        (a,) = promote_dtypes_inexact(a)
        weights = creation.ones_like(a)
    else:
        check_arraylike("histogram", a, bins, weights, converts=True)
        if np.shape(a) != np.shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, weights = promote_dtypes_inexact(a, weights)
    from gpuarr.numpy.sorting import searchsorted
    bin_edges = histogram_bin_edges(a, bins, range, weights)
    n = get_aval(bin_edges).shape[0]
    bin_idx = searchsorted(bin_edges, a, side="right")
    # Values equal to the last edge belong to the last bin.
    bin_idx = ufuncs.where(lax.eq(a, bin_edges[-1]), n - 1, bin_idx)
    counts = creation.zeros(n, get_aval(weights).dtype).at[bin_idx].add(weights)[1:]
    if density:
        widths = manipulation.diff(bin_edges)
        counts = ufuncs.true_divide(ufuncs.true_divide(counts, widths), reductions.sum(counts))
    return counts, bin_edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """A 2-D histogram of (x, y)."""
    sample = manipulation.stack([ensure_array(x), ensure_array(y)], axis=1)
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """A D-dimensional histogram of the rows of `sample` (N, D)."""
    if weights is None:
        check_arraylike("histogramdd", sample, converts=True)
        (sample,) = promote_dtypes_inexact(sample)
    else:
        check_arraylike("histogramdd", sample, weights, converts=True)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = promote_dtypes_inexact(sample, weights)
    N, D = np.shape(sample)
    if range is not None and (len(range) != D or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                         f"Nones; got {range=}")
    try:
        bins_per_dimension = list(bins)
    except TypeError:  # one bin count for every dimension
        bins_per_dimension = D * [bins]
    else:
        if len(bins_per_dimension) != D:
            raise ValueError("should be a bin for each dimension.")
    from gpuarr.numpy.index_tricks import ravel_multi_index
    from gpuarr.numpy.sorting import bincount, searchsorted
    bin_idx_by_dim, bin_edges_by_dim = [], []
    for i in builtins.range(D):
        range_i = None if range is None else range[i]
        column = sample[:, i]
        bin_edges = histogram_bin_edges(column, bins_per_dimension[i], range_i, weights)
        bin_idx = searchsorted(bin_edges, column, side="right")
        # Values equal to the last edge belong to the last bin.
        bin_idx = ufuncs.where(lax.eq(sample[:, i], bin_edges[-1]),
                               ufuncs.subtract(bin_idx, 1), bin_idx)
        bin_idx_by_dim.append(bin_idx)
        bin_edges_by_dim.append(bin_edges)
    # One more bin each side for the values outside the edges, dropped at the end.
    nbins = tuple(get_aval(e).shape[0] + 1 for e in bin_edges_by_dim)
    dedges = [manipulation.diff(e) for e in bin_edges_by_dim]
    xy = ravel_multi_index(tuple(bin_idx_by_dim), nbins, mode="clip")
    hist = bincount(xy, weights, length=math.prod(nbins))
    hist = manipulation.reshape(hist, nbins)[D * (slice(1, -1),)]
    if density:
        hist = astype(hist, get_aval(sample).dtype)
        hist = ufuncs.true_divide(hist, reductions.sum(hist))
        for norm in ix_(*dedges):
            hist = ufuncs.true_divide(hist, norm)
    return hist, bin_edges_by_dim


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (xp increasing)."""
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = promote_dtypes_inexact(x, xp, fp)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1 or get_aval(xp).shape != get_aval(fp).shape:
        raise ValueError(f"xp and fp must be one-dimensional arrays of equal size, got shapes "
                         f"{get_aval(xp).shape} and {get_aval(fp).shape}.")
    if period is not None:
        p = np.asarray(period, get_aval(x).dtype)[()]
        x = ufuncs.remainder(x, p)
        xp = ufuncs.remainder(xp, p)
        order = np.argsort(np.asarray(xp)) if not isinstance(xp, Tracer) else None
        if order is not None:
            xp, fp = xp[order], fp[order]
        xp = manipulation.concatenate([lax.sub(xp[-1:], p), xp, lax.add(xp[:1], p)])
        fp = manipulation.concatenate([fp[-1:], fp, fp[:1]])
    n = get_aval(xp).shape[0]
    i = _digitize(x, xp, right=False)
    i = lax_special.clamp(np.asarray(1, get_aval(i).dtype)[()], i, np.asarray(n - 1, get_aval(i).dtype)[()]) \
        if n > 1 else i
    onehot_hi = _onehot(i, n)
    onehot_lo = _onehot(lax.sub(i, np.asarray(1, get_aval(i).dtype)[()]), n)

    def pick(onehot, table):
        return reductions.sum(ufuncs.where(onehot, table, 0), axis=-1)

    x_hi, x_lo = pick(onehot_hi, xp), pick(onehot_lo, xp)
    f_hi, f_lo = pick(onehot_hi, fp), pick(onehot_lo, fp)
    dx = lax.sub(x_hi, x_lo)
    safe = lax.select(lax.eq(dx, lax_shape_ops.full_like(dx, 0)), lax_shape_ops.full_like(dx, 1), dx)
    out = lax.add(f_lo, lax.mul(lax.div(lax.sub(x, x_lo), safe), lax.sub(f_hi, f_lo)))
    out = lax.select(lax.eq(dx, lax_shape_ops.full_like(dx, 0)), f_lo, out)
    if period is None:
        lo_val = fp[0] if left is None else left
        hi_val = fp[-1] if right is None else right
        out = ufuncs.where(lax.lt(x, lax_shape_ops.broadcast_in_dim(xp[0], get_aval(x).shape, ())), lo_val,
                           out)
        out = ufuncs.where(lax.gt(x, lax_shape_ops.broadcast_in_dim(xp[-1], get_aval(x).shape, ())), hi_val,
                           out)
    return lax_conversions.convert_element_type(ensure_array(out), get_aval(x).dtype)


def _onehot(idx, n):
    """idx[..., None] == arange(n): a boolean one-hot encoding along a new last axis."""
    aval = get_aval(idx)
    return lax.eq(lax_shape_ops.reshape(idx, aval.shape + (1,)),
                  lax_shape_ops.reshape(lax_shape_ops.iota(aval.dtype, n), (1,) * aval.ndim + (n,)))
