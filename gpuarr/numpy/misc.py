"""Comparisons of whole arrays, dtype queries, shape queries, printing and I/O, index helpers,
windows, polynomials, histograms and other small functions of numpy's namespace."""
from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.api import jit as _jit
from gpuarr.array import Array
from gpuarr.core import Tracer, get_aval
from gpuarr.errors import ConcretizationTypeError
from gpuarr.numpy import creation, manipulation, reductions, setops, ufuncs
from gpuarr.numpy._util import (
    broadcast_arrays,
    canonicalize_axis,
    check_arraylike,
    check_core_dims,
    concrete_value,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_shapes,
    static_hashable,
    update_core_sizes,
)

# ---------------------------------------------------------------- whole-array comparisons


@_jit(static_argnames=("equal_nan",))  # as JAX's
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise, with infinities equal only to themselves."""
    check_arraylike("isclose", a, b)
    # Integers compare as floats too (with the tolerances), and the result is never weak,
    # as in JAX.
    a, b = promote_dtypes_inexact(a, b)
    a, b = broadcast_arrays(a, b)
    dt = dtypes.to_floating_dtype(get_aval(a).dtype)  # tolerances are real
    rtol, atol = (lax.convert_element_type(t, dt) for t in (rtol, atol))
    # Computed whether or not it is used, as JAX does.
    both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
    check_fin = ufuncs.isfinite(b)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = ufuncs.logical_or(lax.eq(a, b), ufuncs.logical_and(check_fin, in_range))
    return ufuncs.logical_or(out, both_nan) if equal_nan else out


@_jit(static_argnames=("equal_nan",))  # as JAX's
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when isclose holds everywhere."""
    check_arraylike("allclose", a, b)
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True when both have the same shape and elements."""
    try:
        a1, a2 = ensure_array(a1), ensure_array(a2)
    except TypeError:
        return creation.asarray(False)
    if get_aval(a1).shape != get_aval(a2).shape:
        return creation.asarray(False)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(eq)


def array_equiv(a1, a2):
    """True when the arrays broadcast to one shape and are equal there."""
    a1, a2 = ensure_array(a1), ensure_array(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return creation.asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))


# ---------------------------------------------------------------- dtypes

bool = dtypes.bool_  # noqa: A001  (numpy's name)
int_ = dtypes.int64
uint = dtypes.uint64
single = dtypes.float32
double = dtypes.float64
csingle = dtypes.complex64
cdouble = dtypes.complex128
generic, number, integer, signedinteger = np.generic, np.number, np.integer, np.signedinteger
unsignedinteger, inexact, floating = np.unsignedinteger, np.inexact, np.floating
complexfloating, character, flexible, object_ = np.complexfloating, np.character, np.flexible, np.object_
isdtype = dtypes.isdtype


def result_type(*args):
    """The dtype JAX's promotion gives these arguments (x64-aware)."""
    return dtypes.result_type(*args)


def dtype(x, align=False, copy=False):
    """The dtype of `x` (a dtype, type, name, array or scalar), as numpy.dtype."""
    return dtypes.dtype(x)


def can_cast(from_, to, casting="safe"):
    """Whether numpy.can_cast allows casting `from_` to `to` under `casting`."""
    if isinstance(from_, (Array, Tracer)):
        from_ = get_aval(from_).dtype
    return builtins.bool(np.can_cast(from_, to, casting=casting))


def _aval_of(a):
    if isinstance(a, (Array, Tracer)):
        return get_aval(a)
    return get_aval(np.asarray(a))


def _warn_not_arraylike(name, a):
    """JAX's DeprecationWarning for a list (or other non-array) given to shape, ndim or size."""
    try:
        check_arraylike(name, a)
    except TypeError as e:
        warnings.warn(f"{e} In a future JAX release this will be an error.",
                      category=DeprecationWarning, stacklevel=3)


def shape(a):
    """The shape of `a` (works on lists too, as numpy.shape, with JAX's warning)."""
    # Anything with a .shape (a ShapeDtypeStruct, say) answers for itself, as in JAX.
    if hasattr(a, "shape"):
        return a.shape
    _warn_not_arraylike("shape", a)
    return _aval_of(a).shape


def ndim(a):
    """The number of dimensions of `a`."""
    if hasattr(a, "ndim"):
        return a.ndim
    _warn_not_arraylike("ndim", a)
    return _aval_of(a).ndim


def size(a, axis=None):
    """The number of elements of `a` (along `axis`, an int or a tuple, if given)."""
    _warn_not_arraylike("size", a)
    if axis is None and hasattr(a, "size"):
        return a.size
    s = shape(a)
    if axis is None:
        return math.prod(s)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(ax, len(s)) for ax in axes)
    if not s and axes:  # a 0-d array has no axis 0
        raise ValueError(f"axis {axes[0]} is out of bounds for array of dimension 0")
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis: {axes}")
    return math.prod(s[ax] for ax in axes)


def isscalar(element):
    """True for Python and NumPy scalars and 0-d arrays (JAX counts 0-d arrays as scalars)."""
    if isinstance(element, (Array, Tracer)):
        return get_aval(element).ndim == 0
    return np.isscalar(element) and not isinstance(element, (str, bytes))


def iscomplexobj(x):
    """True when `x` has a complex dtype."""
    if x is None:
        return False
    try:
        return dtypes.is_complex(_aval_of(x).dtype)
    except (TypeError, ValueError):
        return np.iscomplexobj(x)


def isrealobj(x):
    """not iscomplexobj(x)."""
    return not iscomplexobj(x)


def iterable(y):
    """Whether iter(y) works."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------- printing and files


printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """repr of an Array."""
    return repr(ensure_array(arr))


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """str of an Array."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def save(file, arr, allow_pickle=True):
    """numpy.save of the array's values."""
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle=True, **kwds):
    """numpy.savez of the arrays' values."""
    np.savez(file, *[np.asarray(a) for a in args], allow_pickle=allow_pickle,
             **{k: np.asarray(v) for k, v in kwds.items()})


# ---------------------------------------------------------------- index helpers

index_exp = np.index_exp
s_ = np.s_


class _Grid:
    """mgrid/ogrid: `mgrid[0:2, 0:3]` evaluates NumPy's grid and returns Arrays."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        grid = (np.ogrid if self.sparse else np.mgrid)[key]
        if isinstance(grid, (list, tuple)):
            return [creation.asarray(g) for g in grid]
        return creation.asarray(grid)


class _Concat:
    """r_/c_: NumPy's concatenation helpers over Arrays."""

    def __init__(self, helper):
        self.helper = helper

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        host = tuple(np.asarray(k) if isinstance(k, (Array,)) else k for k in key)
        return creation.asarray(self.helper[host])


mgrid, ogrid = _Grid(False), _Grid(True)
r_, c_ = _Concat(np.r_), _Concat(np.c_)


# ---------------------------------------------------------------- functional helpers


def _parse_signature(signature: str):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    import re
    arg = r"\((?:\w+(?:,\w+)*)?\)"
    spec = signature.replace(" ", "")
    if not re.fullmatch(f"{arg}(?:,{arg})*->{arg}(?:,{arg})*", spec):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = spec.split("->")
    parse = lambda side: [tuple(re.findall(r"\w+", group))  # noqa: E731
                          for group in re.findall(r"\(([^)]*)\)", side)]
    return parse(ins), parse(outs)


def _apply_excluded(pyfunc, excluded, args, kwargs):
    """`pyfunc` with the excluded positional and keyword arguments bound, and the others."""
    if not excluded:
        return pyfunc, list(args), kwargs
    static = {i: a for i, a in enumerate(args) if i in excluded}
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}

    def bound(*dyn, **kw):
        it = iter(dyn)
        full = [static[i] if i in static else next(it) for i in range(len(dyn) + len(static))]
        return pyfunc(*full, **kw, **static_kw)
    return (bound, [a for i, a in enumerate(args) if i not in excluded],
            {k: v for k, v in kwargs.items() if k not in excluded})


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """`pyfunc` mapped with vmap over the leading (loop) dimensions of its arguments, which
    broadcast against each other (jnp.vectorize). Without `signature` it is called on scalars;
    with a gufunc signature such as '(m,n),(n)->(m)' on the trailing core dimensions, whose
    sizes must agree, and its outputs must have the core shapes the signature names.
    Positional indices and keyword names in `excluded` are passed through unmapped."""
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    core_in, core_out = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        from gpuarr.api import vmap
        fn, dyn, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
        if not dyn:
            return fn(**kwargs)
        dims = core_in if core_in is not None else [()] * len(dyn)
        if len(dims) != len(dyn):
            raise TypeError(f"wrong number of positional arguments: expected {len(dims)}, "
                            f"got {len(dyn)}")
        dyn = [ensure_array(a) for a in dyn]
        shapes = [get_aval(a).shape for a in dyn]
        sizes, loop = check_core_dims(signature, dims, shapes, excluded)
        dyn = [manipulation.broadcast_to(a, loop + shape[len(shape) - len(d):])
               for a, d, shape in zip(dyn, dims, shapes)]

        def call(*xs):
            out = fn(*xs, **kwargs)
            if core_out is not None:
                _check_outputs(out, core_out, dict(sizes), signature)
            return out

        f = call
        for _ in loop:
            f = vmap(f)
        return f(*dyn)

    return wrapped


def _check_outputs(out, core_out, sizes, signature):
    """The outputs of a vectorized call have the core shapes of the signature."""
    outs = out if len(core_out) > 1 else (out,)
    if len(core_out) > 1 and (not isinstance(out, tuple) or len(out) != len(core_out)):
        raise TypeError(f"output must be a tuple of {len(core_out)} arrays for "
                        f"signature={signature!r}, got {type(out).__name__}")
    context = f"on vectorized function with signature={signature!r}"
    for o, dims in zip(outs, core_out):
        shape = get_aval(o).shape
        if len(shape) != len(dims):
            raise ValueError(f"output shape {shape} does not match core dimensions {dims} {context}")
        update_core_sizes(sizes, dims, shape, context)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to the 1-D slices of `arr` along `axis` (vmapped over the others)."""
    from gpuarr.api import vmap
    arr = ensure_array(arr)
    nd = get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd)
    f = lambda x: func1d(x, *args, **kwargs)
    for _ in range(1, nd - axis):
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return f(arr)


def apply_over_axes(func, a, axes):
    """func(a, axis) applied repeatedly over `axes`, keeping dimensions."""
    a = ensure_array(a)
    for axis in axes:
        b = func(a, axis)
        if get_aval(b).ndim == get_aval(a).ndim - 1:
            b = manipulation.expand_dims(b, axis)
        a = b
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    """Values of funclist[i](x) where condlist[i] holds (an extra function is the default)."""
    check_arraylike("piecewise", x)
    x = ensure_array(x)
    nc, nf = len(condlist), len(funclist)
    # Slot 0 is the default (zero unless an extra function is given), as in JAX.
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = creation.asarray(condlist, dtype=bool)
    # The last true condition wins: the first position where the running count peaks.
    from gpuarr.numpy import selection
    counts = selection.cumsum(manipulation.concatenate([lax.full_like(conds[:1], False), conds]),
                              axis=0)
    indices = reductions.argmax(counts, axis=0)
    dt = get_aval(x).dtype

    def branch(f):
        if callable(f):
            return lambda v: lax.convert_element_type(ensure_array(f(v, *args, **kw)), dt)
        return lambda v: creation.array(f, dtype=dt)

    # A vectorized switch, so that branches whose outputs disagree fail as JAX's do.
    return vectorize(lax.switch, excluded=(1,))(indices, [branch(f) for f in funclist], x)


# ---------------------------------------------------------------- binning


def _digitize(x, bins, right=False):
    """The index of the bin each x falls in (bins monotonic), by counting comparisons."""
    check_arraylike("digitize", x, bins)
    x, bins = promote_dtypes(x, bins)
    b = np.asarray(bins) if not isinstance(bins, Tracer) else None
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {get_aval(bins).shape}.")
    nb = get_aval(bins).shape[0]
    xs = lax.reshape(x, get_aval(x).shape + (1,))
    bs = lax.reshape(bins, (1,) * get_aval(x).ndim + (nb,))
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
    i = lax.clamp(np.asarray(1, get_aval(i).dtype)[()], i, np.asarray(n - 1, get_aval(i).dtype)[()]) \
        if n > 1 else i
    onehot_hi = _onehot(i, n)
    onehot_lo = _onehot(lax.sub(i, np.asarray(1, get_aval(i).dtype)[()]), n)

    def pick(onehot, table):
        return reductions.sum(ufuncs.where(onehot, table, 0), axis=-1)

    x_hi, x_lo = pick(onehot_hi, xp), pick(onehot_lo, xp)
    f_hi, f_lo = pick(onehot_hi, fp), pick(onehot_lo, fp)
    dx = lax.sub(x_hi, x_lo)
    safe = lax.select(lax.eq(dx, lax.full_like(dx, 0)), lax.full_like(dx, 1), dx)
    out = lax.add(f_lo, lax.mul(lax.div(lax.sub(x, x_lo), safe), lax.sub(f_hi, f_lo)))
    out = lax.select(lax.eq(dx, lax.full_like(dx, 0)), f_lo, out)
    if period is None:
        lo_val = fp[0] if left is None else left
        hi_val = fp[-1] if right is None else right
        out = ufuncs.where(lax.lt(x, lax.broadcast_in_dim(xp[0], get_aval(x).shape, ())), lo_val, out)
        out = ufuncs.where(lax.gt(x, lax.broadcast_in_dim(xp[-1], get_aval(x).shape, ())), hi_val, out)
    return lax.convert_element_type(ensure_array(out), get_aval(x).dtype)


def _onehot(idx, n):
    """idx[..., None] == arange(n): a boolean one-hot encoding along a new last axis."""
    aval = get_aval(idx)
    return lax.eq(lax.reshape(idx, aval.shape + (1,)),
                  lax.reshape(lax.iota(aval.dtype, n), (1,) * aval.ndim + (n,)))


# Above this many element pairs `isin` sorts instead of comparing all pairs (whose memory grows
# as the product of the two sizes).
_ISIN_COMPARE_ALL_PAIRS = 1 << 20


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element occurs in test_elements. `method` is "compare_all" (every pair,
    memory len(element) * len(test_elements)), "sort" (one sort of both, O(n log n)), or "auto"
    (compare_all for small inputs, sort otherwise); "binary_search" is taken as "sort"."""
    check_arraylike("isin", element, test_elements, converts=True)
    if method not in ("auto", "compare_all", "sort", "binary_search"):
        raise ValueError(f"isin: unknown method={method!r}; use 'auto', 'compare_all', 'sort' "
                         "or 'binary_search'.")
    out = _in1d(element, test_elements, invert=invert, method=method,
                assume_unique=assume_unique)
    return lax.reshape(out, np.shape(element))


@_jit(static_argnames=("assume_unique", "invert", "method"))  # as JAX's
def _in1d(ar1, ar2, invert, method="auto", assume_unique=False):
    arr1, arr2 = promote_dtypes(ar1, ar2)
    arr1, arr2 = manipulation.ravel(arr1), manipulation.ravel(arr2)
    n1, n2 = get_aval(arr1).shape[0], get_aval(arr2).shape[0]
    if n1 == 0 or n2 == 0:
        return (creation.ones if invert else creation.zeros)((n1,), dtype=np.bool_)
    if method == "compare_all" or (method == "auto" and n1 * n2 <= _ISIN_COMPARE_ALL_PAIRS):
        pairs = (lax.broadcast_in_dim(arr1, (n1, 1), (0,)), lax.broadcast_in_dim(arr2, (1, n2), (1,)))
        if invert:
            return reductions.all(lax.ne(*pairs), axis=-1)
        return reductions.any(lax.eq(*pairs), axis=-1)
    out = setops.sorted_membership(arr1, arr2)
    return lax.bitwise_not(out) if invert else out


# ---------------------------------------------------------------- bit packing


def packbits(a, axis=None, bitorder="big"):
    """Pack the truthiness of elements into uint8 bytes along `axis` (flattened by default)."""
    check_arraylike("packbits", a)
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a = ensure_array(a)
    if not (dtypes.is_int(get_aval(a).dtype) or get_aval(a).dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    ax = canonicalize_axis(axis, get_aval(a).ndim)
    bits = lax.convert_element_type(lax.ne(a, lax.full_like(a, 0)), np.uint8)
    n = get_aval(bits).shape[ax]
    pad_to = -(-n // 8) * 8
    cfg = [(0, 0, 0)] * get_aval(bits).ndim
    cfg[ax] = (0, pad_to - n, 0)
    bits = lax.pad(bits, np.uint8(0), cfg)
    shape = list(get_aval(bits).shape)
    shape[ax:ax + 1] = [pad_to // 8, 8]
    bits = lax.reshape(bits, tuple(shape))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else
                       [1, 2, 4, 8, 16, 32, 64, 128], np.uint8)
    wshape = [1] * len(shape)
    wshape[ax + 1] = 8
    return reductions.sum(lax.mul(bits, weights.reshape(wshape)), axis=ax + 1, dtype=np.uint8)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of uint8 elements as a uint8 array of 0s and 1s along `axis`."""
    check_arraylike("unpackbits", a)
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a = ensure_array(a)
    if get_aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    for static in (axis, count):  # static in JAX's unpackbits: arrays are unhashable
        static_hashable(static)
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    # JAX swaps `axis` with the last one in a NumPy permutation: its bad axes give NumPy's
    # indexing errors, the last axis (-1) being indexed first.
    perm = np.arange(get_aval(a).ndim)
    _, ax = perm[-1], int(perm[axis])
    shifts = np.arange(7, -1, -1, dtype=np.uint8) if bitorder == "big" else np.arange(8, dtype=np.uint8)
    x = lax.reshape(a, get_aval(a).shape[:ax + 1] + (1,) + get_aval(a).shape[ax + 1:])
    sshape = [1] * get_aval(x).ndim
    sshape[ax + 1] = 8
    bits = lax.bitwise_and(lax.shift_right_logical(
        x, lax.broadcast_in_dim(shifts.reshape(sshape), get_aval(x).shape[:ax + 1] + (8,) +
                                get_aval(x).shape[ax + 2:], tuple(range(len(sshape))))),
        np.uint8(1))
    shape = list(get_aval(a).shape)
    shape[ax] *= 8
    out = lax.reshape(bits, tuple(shape))
    if count is not None:
        count = operator.index(count)
        if count > shape[ax]:  # padded with zero bits, as in JAX and NumPy
            widths = [(0, 0, 0)] * len(shape)
            widths[ax] = (0, count - shape[ax], 0)
            return lax.pad(out, np.uint8(0), widths)
        out = lax.slice_in_dim(out, 0, len(range(shape[ax])[:count]), axis=ax)
    return out


# ---------------------------------------------------------------- windows


def _window(name, M, fn):
    M = int(M)
    dt = dtypes.default_float_dtype()
    if M < 0:  # JAX's error, from the broadcast that builds the window
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"({M},).")
    if M <= 1:
        return lax.full((builtins.max(M, 0),), 1, dt)
    n = lax.iota(dt, M)
    return fn(n, M, dt)


def bartlett(M):
    """The Bartlett (triangular) window of M points."""
    return _window("bartlett", M, lambda n, M, dt: lax.sub(np.asarray(1, dt)[()], lax.abs(
        lax.div(lax.sub(lax.mul(n, np.asarray(2, dt)[()]), np.asarray(M - 1, dt)[()]),
                np.asarray(M - 1, dt)[()]))))


def _cosine_window(coeffs):
    def fn(n, M, dt):
        out = lax.full((M,), 0, dt)
        for k, c in enumerate(coeffs):
            term = lax.cos(lax.mul(n, np.asarray(2 * np.pi * k / (M - 1), dt)[()]))
            out = lax.add(out, lax.mul(term, np.asarray(c, dt)[()]))
        return out
    return fn


def hanning(M):
    """The Hann window of M points."""
    return _window("hanning", M, _cosine_window((0.5, -0.5)))


def hamming(M):
    """The Hamming window of M points."""
    return _window("hamming", M, _cosine_window((0.54, -0.46)))


def blackman(M):
    """The Blackman window of M points."""
    return _window("blackman", M, _cosine_window((0.42, -0.5, 0.08)))


def kaiser(M, beta):
    """The Kaiser window of M points with shape parameter beta."""
    def fn(n, M, dt):
        alpha = (M - 1) / 2.0
        r = lax.div(lax.sub(n, np.asarray(alpha, dt)[()]), np.asarray(alpha, dt)[()])
        arg = ufuncs.multiply(beta, ufuncs.sqrt(lax.sub(np.asarray(1, dt)[()], lax.mul(r, r))))
        return ufuncs.true_divide(ufuncs.i0(arg), ufuncs.i0(creation.asarray(beta, dtype=dt)))
    return _window("kaiser", M, fn)


# ---------------------------------------------------------------- polynomials (1-D coefficient arrays)


@_jit(static_argnames=("unroll",))  # as JAX's
def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial with coefficients p (highest power first) at x (Horner, a scan
    over the coefficients as in JAX)."""
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(p, x)
    out_shape = lax.broadcast_shapes(get_aval(p).shape[1:], get_aval(x).shape)
    # A strong-typed start, as JAX's full_like with an explicit dtype: the result is never weak.
    out = lax.full_like(x, 0, shape=out_shape, dtype=get_aval(x).dtype)
    out, _ = lax.scan(lambda y, c: (ufuncs.add(ufuncs.multiply(y, x), c), None), out, p,
                      unroll=unroll)
    return out


def _type_str(shape, dtype):
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


def _add_tail(big, small):
    """big.at[-len(small):].add(small), with the errors JAX's scatter-add raises."""
    bs, ss = get_aval(big).shape, get_aval(small).shape
    dt = get_aval(big).dtype
    if dt == np.bool_:
        raise TypeError("add does not accept dtype bool at position 0. Accepted dtypes at "
                        "position 0 are subtypes of integer, floating, complexfloating.")
    # -0 selects everything, so an empty `small` must match all of `big`.
    start = bs[0] - ss[0] if ss[0] else 0
    target = (bs[0] - start,) + bs[1:]
    if len(ss) > len(target):
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={ss} "
                         f"shape={target}")
    try:
        ok = np.broadcast_shapes(ss, target) == target
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"Incompatible types for broadcasting: input type={_type_str(ss, dt)} "
                         f"and requested type={_type_str(target, dt)}")
    return ensure_array(big).at[start:].add(small)


@_jit  # as JAX's
def polyadd(a1, a2):
    """The sum of two polynomials (the shorter one aligned to the end of the longer)."""
    check_arraylike("polyadd", a1, a2)
    a1, a2 = promote_dtypes(a1, a2)
    if get_aval(a2).shape[0] <= get_aval(a1).shape[0]:
        return _add_tail(a1, a2)
    return _add_tail(a2, a1)


@_jit  # as JAX's
def polysub(a1, a2):
    """The difference of two polynomials."""
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(a1, a2)
    return polyadd(a1, ufuncs.negative(a2))


def _trim_front(a):
    """trim_zeros(a, 'f'), refusing traced input with JAX's ConcretizationTypeError."""
    if isinstance(a, Tracer) and a.to_concrete_value() is None:
        raise ConcretizationTypeError(a, "Error arose in the `filt` argument of trim_zeros()\n")
    return manipulation.trim_zeros(a, trim="f")


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (the full convolution of their coefficients)."""
    check_arraylike("polymul", a1, a2)
    a1, a2 = promote_dtypes_inexact(a1, a2)
    if trim_leading_zeros and (len(a1) > 1 or len(a2) > 1):
        a1, a2 = _trim_front(a1), _trim_front(a2)
    # An empty factor stands for the zero polynomial, as in JAX.
    if get_aval(a1).shape[0] == 0:
        a1 = lax.full((1,), 0, get_aval(a2).dtype)
    if get_aval(a2).shape[0] == 0:
        a2 = lax.full((1,), 0, get_aval(a1).dtype)
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    outer = ufuncs.multiply(lax.reshape(a1, (n1, 1)), lax.reshape(a2, (1, n2)))
    # Sum the anti-diagonals: row i shifted right by i, then summed over rows.
    rows = [lax.pad(outer[i], np.zeros((), get_aval(outer).dtype)[()], ((i, n1 - 1 - i, 0),))
            for i in builtins.range(n1)]
    return reductions.sum(manipulation.stack(rows), axis=0)


def _static_order(m, name):
    """`m` as a Python int, failing as JAX's static (hashed, then operator.index) argument."""
    return operator.index(static_hashable(m))


def _arange(start, stop, dt):
    """arange(start, stop, dtype=dt) for static ints, traced as JAX traces it: an iota, plus
    `start` unless it is 0."""
    iota = lax.iota(dt, builtins.max(0, stop - start))
    return iota if start == 0 else lax.add(lax.convert_element_type(start, dt), iota)


@_jit(static_argnames=("m",))  # as JAX's
def polyder(p, m=1):
    """The m-th derivative of a polynomial (along the first axis)."""
    check_arraylike("polyder", p)
    m = operator.index(m)
    (p,) = promote_dtypes_inexact(p)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    dt = get_aval(p).dtype
    # coeff[i] = (n-1-i)(n-2-i)...(n-m-i): the falling factorials, highest power first.
    coeff = reductions.prod(lax.sub(_arange(m, len(p), dt)[None], _arange(0, m, dt)[:, None]),
                            axis=0)
    return ufuncs.multiply(p[:-m], coeff[::-1])


def polyint(p, m=1, k=None):
    """The m-th antiderivative of a polynomial with integration constants k."""
    m = _static_order(m, "polyint")
    k = 0 if k is None else k
    check_arraylike("polyint", p, k)
    p, k = promote_dtypes_inexact(p, k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = manipulation.atleast_1d(k)
    if len(k) == 1:
        k = manipulation.broadcast_to(k[0], (m,))
    if get_aval(k).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dt = get_aval(p).dtype
    grid = lax.sub(creation.arange(len(p) + m, dtype=dt)[None],
                   creation.arange(m, dtype=dt)[:, None])
    coeff = reductions.prod(ufuncs.maximum(1, grid), axis=0)[::-1]
    return ufuncs.true_divide(manipulation.concatenate([p, k]), coeff)


# ---------------------------------------------------------------- calculus and products


@_jit(static_argnames=("axis",))  # as JAX's
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of y by the trapezoidal rule along `axis` (sample points x or spacing dx),
    computed as JAX does: y and x are promoted together, and a constant spacing takes the
    sum of y less half its end values."""
    if x is None:
        check_arraylike("trapezoid", y)
        (y,) = promote_dtypes_inexact(y)
        d = ensure_array(dx)
        if get_aval(d).ndim:
            d = lax.expand_dims(d, tuple(range(get_aval(y).ndim - get_aval(d).ndim)))
            d = manipulation.moveaxis(d, axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(y, x)
        if get_aval(x).ndim == 1:
            d = manipulation.diff(x)
        else:
            d = manipulation.moveaxis(manipulation.diff(x, axis=axis), axis, -1)
    y = manipulation.moveaxis(y, axis, -1)
    nd, n = get_aval(y).ndim, get_aval(y).shape[-1]
    if get_aval(d).ndim == 0 or get_aval(d).shape[-1] == 1:
        if n == 0:  # JAX reads y[..., 0]
            raise IndexError(f"index is out of bounds for axis {nd - 1} with size 0")
        d = d if get_aval(d).ndim == 0 else _last(d, 0)
        total = reductions.sum(y, axis=-1)
        ends = ufuncs.multiply(0.5, ufuncs.add(_last(y, 0), _last(y, n - 1)))
        return ufuncs.multiply(d, ufuncs.subtract(total, ends))
    mid = ufuncs.add(y[..., 1:], y[..., :-1])  # indexing, as JAX's
    return ufuncs.multiply(0.5, reductions.sum(ufuncs.multiply(d, mid), axis=-1))


def _last(x, i):
    """x[..., i] for a static i (no slice of an axis of length 1, as JAX's indexing)."""
    nd = get_aval(x).ndim
    if get_aval(x).shape[-1] != 1:
        x = x[..., i:i + 1]
    return lax.squeeze(x, (nd - 1,))


def _check_inexact_dtype(name, dtype):
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        raise ValueError(f"{name}: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")


def _cov_weights(w, name, n):
    """A weights argument of cov as an array, with JAX's errors for its rank and length."""
    check_arraylike("cov", w)
    w = ensure_array(w)
    if get_aval(w).ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if get_aval(w).shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    return w


@_jit(static_argnames=("rowvar", "bias", "ddof", "dtype"))  # as JAX's
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows (or columns) of m, computed in
    `dtype` (an inexact type) if one is given."""
    if y is not None:
        check_arraylike("cov", m, y)
        m, y = promote_shapes(*promote_dtypes_inexact(m, y), fun_name="cov")
        if get_aval(y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        check_arraylike("cov", m)
        (m,) = promote_dtypes_inexact(m)
    if get_aval(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    _check_inexact_dtype("cov", dtype)
    X = manipulation.atleast_2d(m)
    if not rowvar and get_aval(m).ndim != 1:  # JAX's test (NumPy's is X.shape[0] != 1)
        X = lax.transpose(X, (1, 0))
    if get_aval(X).shape[0] == 0:
        return creation.zeros((0, 0))
    if y is not None:
        y = manipulation.atleast_2d(y)
        if not rowvar and get_aval(y).shape[0] != 1:
            y = lax.transpose(y, (1, 0))
        X = manipulation.concatenate((X, y), axis=0)
    rows, n = get_aval(X).shape
    if n == 0:
        return creation.full(() if rows == 1 else (rows, rows), np.nan, dtype=get_aval(X).dtype)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        fweights = _cov_weights(fweights, "fweights", n)
        if not dtypes.issubdtype(get_aval(fweights).dtype, np.integer):
            raise TypeError("fweights must be integer.")
        w = ufuncs.abs(fweights)  # NumPy refuses negative weights; JAX takes |w|
    if aweights is not None:
        aweights = ufuncs.abs(_cov_weights(aweights, "aweights", n))
        w = aweights if w is None else ufuncs.multiply(w, aweights)
    if dtype is not None:
        X = astype(X, dtype)
        w = astype(w, dtype) if w is not None else w
    avg, w_sum = reductions.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = n - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = ufuncs.subtract(w_sum, ddof)
    else:
        f = ufuncs.subtract(w_sum, ufuncs.true_divide(
            ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aweights))), w_sum))
    X = ufuncs.subtract(X, lax.broadcast_in_dim(avg, (rows, 1), (0,)))
    X_T = X if w is None else ufuncs.multiply(X, lax.broadcast_to_rank(w, 2))
    X_T = lax.transpose(X_T, (1, 0))
    from gpuarr.numpy.products import dot
    return manipulation.squeeze(ufuncs.true_divide(dot(X, ufuncs.conj(X_T)), f))


@_jit(static_argnames=("rowvar", "dtype"))  # as JAX's
def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients (covariance normalised by the standard deviations),
    computed in `dtype` (an inexact type) if one is given."""
    check_arraylike("corrcoef", x)
    _check_inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:  # nan for nan/nan, inf/inf and 0/0, else 1
        return ufuncs.true_divide(c, c)
    rows = get_aval(c).shape[0]
    stddev = astype(ufuncs.sqrt(ufuncs.real(creation.diag(c))), get_aval(c).dtype)
    c = ufuncs.true_divide(c, lax.broadcast_in_dim(stddev, (rows, 1), (0,)))
    c = ufuncs.true_divide(c, lax.broadcast_in_dim(stddev, (1, rows), (1,)))
    # Complex coefficients have their real and imaginary parts clipped separately.
    real_part = ufuncs.clip(ufuncs.real(c), -1, 1)
    if dtypes.is_complex(get_aval(c).dtype):
        return lax.complex(real_part, ufuncs.clip(ufuncs.imag(c), -1, 1))
    return real_part


@_jit(static_argnames=("axis", "edge_order"))  # as JAX's
def gradient(f, *varargs, axis=None, edge_order=None):
    """Second-order central differences inside, first-order at the edges, per axis; spacings
    are scalars or 1-D coordinate arrays."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(f, *varargs)
    nd = get_aval(a).ndim
    if axis is None:
        axes = tuple(builtins.range(nd))
    else:
        axes = tuple(canonicalize_axis(operator.index(i), nd)
                     for i in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return []
    if builtins.min(get_aval(a).shape[i] for i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 "
                         "elements are required.")
    if not spacing:
        dx = [1.0] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = [_gradient_along_axis(a, h, ax) for ax, h in zip(axes, dx)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_along_axis(a, h, axis):
    sliced = functools.partial(lax.slice_in_dim, a, axis=axis)
    upper_edge = ufuncs.subtract(sliced(1, 2), sliced(0, 1))
    lower_edge = ufuncs.subtract(sliced(-1, None), sliced(-2, -1))
    if np.ndim(h) == 0:
        inner = ufuncs.true_divide(
            ufuncs.multiply(ufuncs.subtract(sliced(2, None), sliced(None, -2)), 0.5), h)
        lower_edge = ufuncs.true_divide(lower_edge, h)
        upper_edge = ufuncs.true_divide(upper_edge, h)
    elif np.ndim(h) == 1:
        n = get_aval(h).shape[0]
        if n != get_aval(a).shape[axis]:
            raise ValueError("Spacing arrays must have the same length as the dimension along "
                             "which the gradient is calculated.")
        h_shape = [1] * get_aval(a).ndim
        h_shape[axis] = n
        sliced_x = functools.partial(lax.slice_in_dim, lax.reshape(h, tuple(h_shape)), axis=axis)
        sub, mul, div = ufuncs.subtract, ufuncs.multiply, ufuncs.true_divide
        upper_edge = div(upper_edge, sub(sliced_x(1, 2), sliced_x(0, 1)))
        lower_edge = div(lower_edge, sub(sliced_x(-1, None), sliced_x(-2, -1)))
        dx1 = sub(sliced_x(1, -1), sliced_x(0, -2))
        dx2 = sub(sliced_x(2, None), sliced_x(1, -1))
        # Second-order differences on a non-uniform grid, as JAX's (and NumPy's).
        ca = div(ufuncs.negative(dx2), mul(dx1, ufuncs.add(dx1, dx2)))
        cb = div(sub(dx2, dx1), mul(dx1, dx2))
        cc = div(dx1, mul(dx2, ufuncs.add(dx1, dx2)))
        inner = ufuncs.add(ufuncs.add(mul(ca, sliced(0, -2)), mul(cb, sliced(1, -1))),
                           mul(cc, sliced(2, None)))
    else:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return manipulation.concatenate((upper_edge, inner, lower_edge), axis=axis)


@_jit(static_argnames=("axis",))  # as JAX's
def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Unwrap phase jumps larger than discont (default period/2) along `axis`. As in JAX, p and
    period are promoted together: integer phases with an integer period stay integers."""
    check_arraylike("unwrap", p)
    p, period = promote_dtypes(p, period)
    if dtypes.is_complex(get_aval(p).dtype):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    shape = get_aval(p).shape
    if shape[axis] == 0:  # indexed as JAX does: its errors for a bad axis
        return p
    ax = axis % len(shape)
    if discont is None:
        discont = ufuncs.true_divide(period, 2)
    is_int = np.issubdtype(get_aval(p).dtype, np.integer)
    interval = (ufuncs.floor_divide if is_int else ufuncs.true_divide)(period, 2)
    dd = manipulation.diff(p, axis=ax)
    ddmod = ufuncs.subtract(ufuncs.mod(ufuncs.add(dd, interval), period), interval)
    ddmod = ufuncs.where(ufuncs.logical_and(ufuncs.equal(ddmod, ufuncs.negative(interval)),
                                            ufuncs.greater(dd, 0)), interval, ddmod)
    correct = ufuncs.where(ufuncs.less(ufuncs.abs(dd), discont), 0, ufuncs.subtract(ddmod, dd))
    from gpuarr.numpy.selection import cumsum
    first = lax.slice_in_dim(p, 0, 1, axis=ax)
    rest = ufuncs.add(lax.slice_in_dim(p, 1, None, axis=ax), cumsum(correct, axis=ax))
    return manipulation.concatenate((first, rest), ax)


def copyto(dst, src, casting=None, where=None):
    """Not possible: arrays are immutable (as in JAX)."""
    raise NotImplementedError("jnp.copyto is not implemented because JAX arrays cannot be modified "
                              "in-place. For functional approaches to updating array values, see "
                              "jax.numpy.ndarray.at.")


# ---------------------------------------------------------------- index arrays


def _index_arrays(host_arrays):
    return tuple(creation.asarray(h.astype(dtypes.default_int_dtype())) for h in host_arrays)


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an n x ... x n array."""
    if n < 0 or ndim < 0:
        raise ValueError(f"n and ndim must be non-negative, got n={n}, ndim={ndim}")
    return _index_arrays(np.diag_indices(n, ndim))


def diag_indices_from(arr):
    """diag_indices for a square array `arr`."""
    check_arraylike("diag_indices_from", arr)
    s = shape(arr)
    if len(s) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(s[0], len(s))


def _tri_indices_dims(n, k, m):
    """n, k and m as ints, known statically (JAX's errors); n x m must be a valid shape."""
    n, k = (operator.index(concrete_value(v, f"{name} argument of jnp.triu_indices"))
            for v, name in ((n, "n"), (k, "k")))
    m = n if m is None else operator.index(concrete_value(m, "m argument of jnp.triu_indices"))
    if n < 0 or m < 0:  # JAX builds ones((n, m))
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{(n, m)}.")
    return n, k, m


def _triu_size(n, m, k):
    """The number of entries of triu(ones((n, m)), k)."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    if k >= m:
        return 0
    mk = builtins.min(n, m - k)
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def tril_indices(n, k=0, m=None):
    """The row and column indices of the lower triangle of an n x m array (the nonzeros of
    tril(ones((n, m)), k), computed as JAX does)."""
    n, k, m = _tri_indices_dims(n, k, m)
    from gpuarr.numpy.selection import nonzero
    return nonzero(creation.tril(creation.ones((n, m)), k=k), size=_triu_size(m, n, -k))


def triu_indices(n, k=0, m=None):
    """The row and column indices of the upper triangle of an n x m array."""
    n, k, m = _tri_indices_dims(n, k, m)
    from gpuarr.numpy.selection import nonzero
    return nonzero(creation.triu(creation.ones((n, m)), k=k), size=_triu_size(n, m, k))


def _shape_2d(name, arr):
    if not hasattr(arr, "shape"):
        check_arraylike(name, arr)
    s = shape(arr)
    if len(s) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return s


def tril_indices_from(arr, k=0):
    """tril_indices for the shape of the 2-D array `arr`."""
    s = _shape_2d("tril_indices_from", arr)
    return tril_indices(s[0], k, s[1])


def triu_indices_from(arr, k=0):
    """triu_indices for the shape of the 2-D array `arr`."""
    s = _shape_2d("triu_indices_from", arr)
    return triu_indices(s[0], k, s[1])


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where mask_func(ones((n, n)), k) is nonzero."""
    from gpuarr.numpy import selection
    # Unpacking into two fails for masks that are not 2-D (jnp.diag), as in JAX.
    i, j = selection.nonzero(mask_func(creation.ones((n, n)), k), size=size)
    return (i, j)


def ix_(*args):
    """Open-mesh index arrays: the i-th has shape 1 except along axis i."""
    out = []
    for i, a in enumerate(args):
        check_arraylike("ix", a)  # JAX's message names it "ix"
        a = ensure_array(a)
        if get_aval(a).dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        if get_aval(a).ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{get_aval(a).shape}")
        s = [1] * len(args)
        s[i] = get_aval(a).shape[0]
        out.append(lax.reshape(a, tuple(s)))
    return tuple(out)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """`a` with its main diagonal set to `val` (needs inplace=False: arrays are immutable)."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a = ensure_array(a)
    s = get_aval(a).shape
    if len(s) < 2:
        raise ValueError("array must be at least 2-d")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    host_mask = np.zeros(s, bool)
    np.fill_diagonal(host_mask, True, wrap=wrap)
    count = int(host_mask.sum())
    vals = manipulation.ravel(lax.convert_element_type(ensure_array(val), get_aval(a).dtype))
    vals = manipulation.resize(vals, (count,)) if get_aval(vals).size else vals
    # Scatter the cycled values onto the diagonal positions by a static permutation.
    flat = manipulation.ravel(a)
    pos = np.flatnonzero(host_mask)
    src = np.arange(flat.size)
    src[pos] = flat.size + np.arange(count)
    joined = manipulation.concatenate([flat, vals])
    return lax.reshape(joined[src], s)


# ---------------------------------------------------------------- more polynomials


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a scalar or 1-D input),
    or the characteristic polynomial of a non-empty square matrix."""
    check_arraylike("poly", seq_of_zeros)
    (z,) = promote_dtypes_inexact(seq_of_zeros)
    z = manipulation.atleast_1d(z)
    sh = get_aval(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        from gpuarr.numpy import linalg
        z = linalg.eigvals(z)
    if get_aval(z).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if get_aval(z).shape[0] == 0:
        return creation.ones((), dtype=get_aval(z).dtype)
    coeffs = creation.ones((1,), dtype=get_aval(z).dtype)
    for i in builtins.range(get_aval(z).shape[0]):
        root = lax.slice(z, (i,), (i + 1,))
        factor = manipulation.concatenate([creation.ones((1,), dtype=get_aval(z).dtype),
                                           ufuncs.negative(root)])
        coeffs = polymul(coeffs, factor)
    return coeffs


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial division u / v (v's leading coefficient nonzero)."""
    check_arraylike("polydiv", u, v)
    u, v = promote_dtypes_inexact(u, v)
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    scale = ufuncs.true_divide(1.0, v[0])
    q = lax.full((builtins.max(m - n + 1, 1),), 0, get_aval(u).dtype)
    r = u
    for k in builtins.range(0, m - n + 1):
        d = ufuncs.multiply(scale, r[k])
        q = manipulation.concatenate([q[:k], manipulation.atleast_1d(d), q[k + 1:]])
        zero = np.zeros((), get_aval(u).dtype)[()]
        shifted = lax.pad(ufuncs.multiply(d, v), zero, ((k, m - n - k, 0),))
        r = ufuncs.subtract(r, shifted)
    if trim_leading_zeros:
        r = _trim_front(r)
    return q, r


def astype(x, dtype, /, *, copy=False, device=None):
    """`x` converted to `dtype` (float -> int saturates)."""
    check_arraylike("astype", x)
    return lax.convert_element_type(ensure_array(x), dtypes.check_user_dtype(dtype, "astype"))


def fromfile(*args, **kwargs):
    """Not supported, as in JAX: read with numpy.fromfile and convert with jnp.asarray."""
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure and "
                              "thus unsafe for use with JIT and other JAX transformations. "
                              "Consider using jnp.asarray(np.fromfile(...)) instead.")
