"""Spence's function (the real dilogarithm) of jax.scipy.special, from Cephes' spence.c as
in JAX: a rational approximation of -w P(w) / Q(w) on [1/2, 3/2] around w = 0, reached from
the rest of x > 0 by the reflection x -> 1 - x and the inversion x -> 1/x. Its derivative
is automatic; unlike JAX's it is finite on 1 < x <= 2."""
from __future__ import annotations

import numpy as np

from gpuarr.numpy import creation, functional, polynomial, ufuncs

_SPENCE_A = (4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0)
_SPENCE_B = (6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1)


def spence(x):
    """Spence's function integral_1^x log(t) / (1 - t) dt for real x >= 0 (NaN for x < 0,
    where SciPy continues it); float32 or float64 input only, else TypeError
    (jax.scipy.special.spence)."""
    x = creation.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
    return functional.piecewise(x, [x < 0.0, x == 1.0, x == 0.0],
                                [np.nan, 0, np.pi ** 2 / 6, _spence_positive])


def _spence_positive(x):
    inverted = x > 2.0
    x = functional.piecewise(x, [inverted], [lambda v: 1.0 / v, lambda v: v])
    above = x > 1.5
    below = x < 0.5
    inverted = inverted | above
    w = functional.piecewise(x, [above, below], [lambda v: 1.0 / v - 1.0, lambda v: -v,
                                                 lambda v: v - 1.0])
    y = _spence_poly(w)
    # spence(x) = pi^2/6 - log(x) log(1 - x) - spence(1 - x). Elsewhere log(1 - x) is NaN,
    # and its (zero-weighted) derivative would make the gradient NaN, as it is in JAX for
    # 1 < x <= 2: a stand-in x keeps that branch finite.
    xb = ufuncs.where(below, x, 0.25)
    y = ufuncs.where(below, np.pi ** 2 / 6.0 - ufuncs.log(xb) * ufuncs.log(1.0 - xb) - y, y)
    # spence(x) = -log(x)^2 / 2 - spence(1 / x)
    return ufuncs.where(inverted, -0.5 * ufuncs.log(x) ** 2 - y, y)


def _spence_poly(w):
    a = creation.array(_SPENCE_A, dtype=w.dtype)
    b = creation.array(_SPENCE_B, dtype=w.dtype)
    return -w * polynomial.polyval(a, w) / polynomial.polyval(b, w)
