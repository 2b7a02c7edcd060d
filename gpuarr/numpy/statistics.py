"""Covariance and correlation: cov, corrcoef."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact, promote_shapes
from gpuarr.numpy.dtype_functions import astype


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
        X = lax_shape_ops.transpose(X, (1, 0))
    if get_aval(X).shape[0] == 0:
        return creation.zeros((0, 0))
    if y is not None:
        y = manipulation.atleast_2d(y)
        if not rowvar and get_aval(y).shape[0] != 1:
            y = lax_shape_ops.transpose(y, (1, 0))
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
    X = ufuncs.subtract(X, lax_shape_ops.broadcast_in_dim(avg, (rows, 1), (0,)))
    X_T = X if w is None else ufuncs.multiply(X, lax_extras.broadcast_to_rank(w, 2))
    X_T = lax_shape_ops.transpose(X_T, (1, 0))
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
    c = ufuncs.true_divide(c, lax_shape_ops.broadcast_in_dim(stddev, (rows, 1), (0,)))
    c = ufuncs.true_divide(c, lax_shape_ops.broadcast_in_dim(stddev, (1, rows), (1,)))
    # Complex coefficients have their real and imaginary parts clipped separately.
    real_part = ufuncs.clip(ufuncs.real(c), -1, 1)
    if dtypes.is_complex(get_aval(c).dtype):
        return lax_extras.complex(real_part, ufuncs.clip(ufuncs.imag(c), -1, 1))
    return real_part
