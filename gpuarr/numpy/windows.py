"""Window functions: bartlett, hanning, hamming, blackman, kaiser."""
from __future__ import annotations

import builtins

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, ufuncs


def _window(name, M, fn):
    M = int(M)
    dt = dtypes.default_float_dtype()
    if M < 0:  # JAX's error, from the broadcast that builds the window
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"({M},).")
    if M <= 1:
        return lax_shape_ops.full((builtins.max(M, 0),), 1, dt)
    n = lax_shape_ops.iota(dt, M)
    return fn(n, M, dt)


def bartlett(M):
    """The Bartlett (triangular) window of M points."""
    return _window("bartlett", M, lambda n, M, dt: lax.sub(np.asarray(1, dt)[()], lax.abs(
        lax.div(lax.sub(lax.mul(n, np.asarray(2, dt)[()]), np.asarray(M - 1, dt)[()]),
                np.asarray(M - 1, dt)[()]))))


def _cosine_window(coeffs):
    def fn(n, M, dt):
        out = lax_shape_ops.full((M,), 0, dt)
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
