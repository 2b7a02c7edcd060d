"""sph_harm_y of jax.scipy.special and the normalized associated Legendre functions behind
it.

P_l^m here carries the spherical-harmonic normalization sqrt((2l + 1) (l - m)! / (4 pi (l + m)!))
(and the Condon-Shortley phase), which keeps the recurrences in range: P_0^0 = 1 / (2 sqrt(pi)),
P_l^l = -sqrt(1 + 1/(2l)) sqrt(1 - x^2) P_{l-1}^{l-1}, and for m < l
P_l^m = d0 x P_{l-1}^m - d1 P_{l-2}^m with d0 = sqrt((4l^2 - 1) / (l^2 - m^2)) and
d1 = sqrt((2l + 1) ((l - 1)^2 - m^2) / ((2l - 3) (l^2 - m^2))), the same recurrences as JAX."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import extras as lax_extras
from gpuarr.numpy import creation, dtype_functions, manipulation, ufuncs
from gpuarr.numpy.arguments import concrete_int, concrete_value


def _recurrence_coefficients(l_max: int, dtype):
    """Per degree l = 1 .. l_max, vectors over the order m of d0 (m < l), d1 (m < l - 1) and
    the diagonal factor -sqrt(1 + 1/(2l)) (m = l), computed in float64 and rounded."""
    m = np.arange(l_max + 1, dtype=np.float64)[None, :]
    ell = np.arange(1, l_max + 1, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        d0 = np.sqrt((4 * ell ** 2 - 1) / (ell ** 2 - m ** 2))
        d1 = np.sqrt((2 * ell + 1) * ((ell - 1) ** 2 - m ** 2) / ((2 * ell - 3) * (ell ** 2 - m ** 2)))
    d0 = np.where(m < ell, d0, 0.0)
    d1 = np.where(m < ell - 1, d1, 0.0)
    diag = np.where(m == ell, -np.sqrt(1 + 0.5 / ell), 0.0)
    return tuple(c.astype(dtype) for c in (d0, d1, diag))


def _normalized_legendre(l_max: int, x):
    """P_l^m(x) for 0 <= m, l <= l_max (zero for m > l), shape (l_max + 1, l_max + 1, len(x))
    indexed [m, l, point]."""
    p00 = np.zeros((l_max + 1, 1), x.dtype)
    p00[0] = 0.5 / np.sqrt(np.pi)
    first = manipulation.broadcast_to(creation.asarray(p00), (l_max + 1,) + x.shape)
    if l_max == 0:
        return first[:, None]
    sin = ufuncs.sqrt(1.0 - x * x)

    def degree(carry, coeffs):
        prev1, prev2 = carry
        d0, d1, diag = (c[:, None] for c in coeffs)
        below = manipulation.concatenate([creation.zeros_like(prev1[:1]), prev1[:-1]],
                                         axis=0)  # P_{l-1}^{m-1}
        row = d0 * (x * prev1) - d1 * prev2 + diag * (sin * below)
        return (row, prev1), row

    _, rows = lax_control_flow.scan(degree, (first, creation.zeros_like(first)),
                                    _recurrence_coefficients(l_max, x.dtype))
    return manipulation.moveaxis(manipulation.concatenate([first[None], rows], axis=0), 0, 1)


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonics Y_n^m(theta, phi) = N P_n^|m|(cos theta) exp(i m phi) of degree
    `n` and order `m` (1-D integer arrays, |m| <= n) at colatitude `theta` and longitude
    `phi`, with Y_n^-m = (-1)^m conj(Y_n^m). `n_max` (the largest n, a concrete int; taken
    from `n` when None) bounds the recurrence, and degrees above it are clipped to it;
    `diff_n` is not supported (jax.scipy.special.sph_harm_y)."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    if dtype_functions.isscalar(theta):
        theta = creation.array([theta])
    if n_max is None:
        n_max = np.max(concrete_value(n, "The `n_max` argument of `jnp.scipy.special.sph_harm` "
                                         "must be statically specified to use `sph_harm` within "
                                         "JAX transformations."))
    n_max = concrete_int(n_max, "The `n_max` argument of `jnp.scipy.special.sph_harm` must be "
                                "statically specified to use `sph_harm` within JAX "
                                "transformations.")
    theta = creation.asarray(theta)
    legendre = _normalized_legendre(n_max, ufuncs.cos(theta))
    value = legendre.at[abs(m), n, creation.arange(len(n))].get(mode="clip")
    angle = abs(m) * phi
    harmonics = lax_extras.complex(value * ufuncs.cos(angle), value * ufuncs.sin(angle))
    return ufuncs.where(m < 0, (-1.0) ** abs(m) * ufuncs.conjugate(harmonics), harmonics)
