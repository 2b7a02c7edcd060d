"""Polynomial roots and least-squares fits (numpy.roots, numpy.polyfit) with JAX's algorithms:
roots are the eigenvalues of the companion matrix; polyfit solves a column-scaled Vandermonde
system with `linalg.lstsq`."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.core import get_aval
from gpuarr.numpy import linalg, reductions, ufuncs
from gpuarr.numpy._util import (
    check_arraylike,
    concrete_int,
    ensure_array,
    promote_dtypes_inexact,
)
from gpuarr.numpy.creation import vander
from gpuarr.numpy.manipulation import atleast_1d
from gpuarr.numpy.selection import take

# ---------------------------------------------------------------- roots


def _empty_roots(p):
    return ensure_array(np.zeros((0,), dtypes.to_complex_dtype(get_aval(p).dtype)))


def _companion_roots(p):
    """Eigenvalues of the companion matrix of p (whose leading coefficient is nonzero)."""
    n = get_aval(p).shape[0]
    if n < 2:
        return _empty_roots(p)
    dt = get_aval(p).dtype
    first_row = lax.neg(lax.div(lax.slice_in_dim(p, 1, n), lax.slice_in_dim(p, 0, 1)))
    sub_diagonal = np.eye(n - 1, n - 1, -1, dtype=dt)[1:]
    a = lax.concatenate([lax.reshape(first_row, (1, n - 1)), sub_diagonal], 0)
    return linalg.eigvals(a)


def _roots_with_zeros(p, num_leading_zeros):
    """Roots of p with its (traced) leading zeros rolled to the end; the roots they stand for
    come out as NaN, last."""
    n = get_aval(p).shape[0]
    dt = get_aval(p).dtype
    # An all-zero p would make the companion matrix singular: use ones instead.
    p = ufuncs.where(lax.eq(num_leading_zeros, np.int32(n)), np.ones((), dt)[()], p)
    rolled = take(p, lax.rem(lax.add(np.arange(n, dtype=np.int32), num_leading_zeros),
                             np.int32(n)))
    roots = _companion_roots(rolled)
    zero = np.zeros((), get_aval(roots).dtype)[()]
    roots = lax.sort_key_val(lax.eq(roots, zero), roots, 0)[1]  # zero roots to the end
    m = get_aval(roots).shape[0]
    keep = lax.lt(np.arange(m, dtype=np.int32), lax.sub(np.int32(m), num_leading_zeros))
    nan = np.asarray(complex(np.nan, np.nan), get_aval(roots).dtype)[()]
    return ufuncs.where(keep, roots, nan)


def roots(p, *, strip_zeros: bool = True):
    """Roots of the polynomial with coefficients `p` (highest degree first), as numpy.roots.

    The result is always complex. With `strip_zeros` (the default) leading zero coefficients
    are dropped, as NumPy does, which needs a concrete `p`; pass `strip_zeros=False` under
    jit and other transformations, and the roots that leading zeros stand for come out as NaN.
    """
    check_arraylike("roots", p)
    (p,) = promote_dtypes_inexact(ensure_array(p))
    p = atleast_1d(p)
    if get_aval(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    n = get_aval(p).shape[0]
    if n < 2:
        return _empty_roots(p)
    is_zero = lax.eq(p, np.zeros((), get_aval(p).dtype)[()])
    num_leading_zeros = ufuncs.where(reductions.all(is_zero), np.int32(n),
                                     lax.convert_element_type(reductions.argmin(is_zero),
                                                              np.int32))
    if not strip_zeros:
        return _roots_with_zeros(p, num_leading_zeros)
    start = concrete_int(
        num_leading_zeros,
        "The error occurred in the jnp.roots() function. To use this within a JIT-compiled "
        "context, pass strip_zeros=False, but be aware that leading zeros will result in "
        "some returned roots being set to NaN.")
    return _companion_roots(lax.slice_in_dim(p, start, n))


# ---------------------------------------------------------------- polyfit


def _column(v):
    return lax.reshape(v, (get_aval(v).shape[0], 1))


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares fit of a polynomial of degree `deg` to points (x, y), as numpy.polyfit.

    Returns the coefficients p (highest power first; [deg + 1] or [deg + 1, K] for y of shape
    [M, K]); with `full`, (p, residuals, rank, singular values, rcond); with `cov`, (p, C),
    the covariance matrix scaled by residuals / (M - deg - 1) (or unscaled with
    cov='unscaled'). `w` weights the unsquared residuals. `deg`, `rcond`, `full` and `cov` are
    static. Rank deficiency is not warned about.
    """
    check_arraylike("polyfit", x, y, *(() if w is None else (w,)))
    x, y = ensure_array(x), ensure_array(y)
    deg = concrete_int(deg, "deg must be int")
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    xshape, yshape = get_aval(x).shape, get_aval(y).shape
    if len(xshape) != 1:
        raise TypeError("expected 1D vector for x")
    if xshape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if len(yshape) < 1 or len(yshape) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xshape[0] != yshape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        xdt = get_aval(x).dtype
        if not (dtypes.is_float(xdt) or dtypes.is_complex(xdt)):  # JAX reads finfo(x.dtype)
            raise ValueError(f"data type {xdt.type} not inexact")
        rcond = xshape[0] * float(dtypes.finfo(xdt).eps)
    rcond = float(rcond)
    # The Vandermonde matrix stays in x's type; the solve promotes it with y's.
    dt = get_aval(promote_dtypes_inexact(x, y)[0]).dtype
    if dt in (np.float16, dtypes.bfloat16):  # no least-squares solver in these types, as JAX
        raise NotImplementedError(KeyError(dt.type), f"Unsupported dtype {dt.name}.")
    lhs, rhs = vander(promote_dtypes_inexact(x)[0], order), y
    if w is not None:
        (w,) = promote_dtypes_inexact(ensure_array(w))
        if get_aval(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if get_aval(w).shape[0] != yshape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = ufuncs.multiply(lhs, _column(w))
        rhs = ufuncs.multiply(rhs, _column(w) if len(yshape) == 2 else w)
    # Scaling the columns to unit norm improves the condition number.
    scale = ufuncs.sqrt(reductions.sum(ufuncs.square(ufuncs.abs(lhs)), axis=0))
    lhs = ufuncs.true_divide(lhs, scale)
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = ufuncs.true_divide(c, _column(scale) if len(yshape) == 2 else scale)
    if full:
        return c, resids, rank, s, ensure_array(rcond)
    if not cov:
        return c
    vbase = linalg.inv(linalg.matmul(lax.transpose(lhs, (1, 0)), lhs))
    vbase = ufuncs.true_divide(vbase, ufuncs.multiply(_column(scale), scale))
    if cov == "unscaled":
        fac = ensure_array(1.0)
    else:
        if xshape[0] <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = ufuncs.true_divide(resids, xshape[0] - order)
    fac = atleast_1d(fac)
    if len(yshape) == 1:
        return c, ufuncs.multiply(vbase, lax.reshape(fac, (1,) + get_aval(fac).shape))
    return c, ufuncs.multiply(lax.reshape(vbase, (order, order, 1)),
                              lax.reshape(fac, (1, 1) + get_aval(fac).shape))
