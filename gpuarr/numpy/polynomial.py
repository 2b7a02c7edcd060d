"""Polynomials as 1-D coefficient arrays, highest power first (numpy's poly* functions):
evaluation (polyval), arithmetic (polyadd, polysub, polymul, polydiv), calculus (polyder,
polyint), construction from roots (poly), and roots and least-squares fits (roots, polyfit) with
JAX's algorithms: roots are the eigenvalues of the companion matrix; polyfit solves a
column-scaled Vandermonde system with `linalg.lstsq`."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Tracer, get_aval
from gpuarr.errors import ConcretizationTypeError
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import sorting as lax_sorting
from gpuarr.numpy import creation, linalg, manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import (
    check_arraylike,
    concrete_int,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
    static_hashable,
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
    a = lax.concatenate([lax_shape_ops.reshape(first_row, (1, n - 1)), sub_diagonal], 0)
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
    roots = lax_sorting.sort_key_val(lax.eq(roots, zero), roots, 0)[1]  # zero roots to the end
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
                                     lax_conversions.convert_element_type(reductions.argmin(is_zero),
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
    return lax_shape_ops.reshape(v, (get_aval(v).shape[0], 1))


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
    vbase = linalg.inv(linalg.matmul(lax_shape_ops.transpose(lhs, (1, 0)), lhs))
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
        return c, ufuncs.multiply(vbase, lax_shape_ops.reshape(fac, (1,) + get_aval(fac).shape))
    return c, ufuncs.multiply(lax_shape_ops.reshape(vbase, (order, order, 1)),
                              lax_shape_ops.reshape(fac, (1, 1) + get_aval(fac).shape))


# ---------------------------------------------------------------- polynomials (1-D coefficient arrays)


@_jit(static_argnames=("unroll",))  # as JAX's
def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial with coefficients p (highest power first) at x (Horner, a scan
    over the coefficients as in JAX)."""
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(p, x)
    out_shape = lax_extras.broadcast_shapes(get_aval(p).shape[1:], get_aval(x).shape)
    # A strong-typed start, as JAX's full_like with an explicit dtype: the result is never weak.
    out = lax_shape_ops.full_like(x, 0, shape=out_shape, dtype=get_aval(x).dtype)
    out, _ = lax_control_flow.scan(lambda y, c: (ufuncs.add(ufuncs.multiply(y, x), c), None), out, p,
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
        a1 = lax_shape_ops.full((1,), 0, get_aval(a2).dtype)
    if get_aval(a2).shape[0] == 0:
        a2 = lax_shape_ops.full((1,), 0, get_aval(a1).dtype)
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    outer = ufuncs.multiply(lax_shape_ops.reshape(a1, (n1, 1)), lax_shape_ops.reshape(a2, (1, n2)))
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
    iota = lax_shape_ops.iota(dt, builtins.max(0, stop - start))
    return iota if start == 0 else lax.add(lax_conversions.convert_element_type(start, dt), iota)


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
    q = lax_shape_ops.full((builtins.max(m - n + 1, 1),), 0, get_aval(u).dtype)
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
