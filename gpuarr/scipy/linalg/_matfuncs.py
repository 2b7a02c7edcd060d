"""Matrix functions of jax.scipy.linalg: expm, expm_frechet and polar."""
from __future__ import annotations

from functools import partial

import numpy as np

from gpuarr import dtypes
from gpuarr.ad_api import jvp
from gpuarr.core import get_aval
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import linalg as lax_linalg
from gpuarr.numpy import creation, manipulation, products, sorting, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.scipy.linalg._decomp import _inexact, _mH, _shape, solve_triangular
from gpuarr.vmap_api import vmap


def _map_matrices(fn, x):
    """Apply `fn`, written for one [n, n] matrix, to each matrix of a stack [..., n, n]."""
    shape = _shape(x)
    if len(shape) == 2:
        return fn(x)
    out = vmap(fn)(manipulation.reshape(x, (-1,) + shape[-2:]))
    return manipulation.reshape(out, shape[:-2] + _shape(out)[-2:])


# Numerator coefficients b_0..b_m of the [m/m] Pade approximants of exp (Higham 2005); the
# denominator has the same coefficients with alternating signs, hence U (odd) and V (even).
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}

# 1-norm bounds (theta_m) below which each approximant is accurate, and the largest of them,
# beyond which the matrix is scaled by a power of two, for double and single precision.
_THETAS = {
    "double": ((1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                2.097847961257068e+000), 5.371920351148152, (3, 5, 7, 9, 13)),
    "single": ((4.258730016922831e-001, 1.880152677804762e+000), 3.925724783138660, (3, 5, 7)),
}


def _pade(m, a):
    b = _PADE[m]
    ident = creation.eye(_shape(a)[0], dtype=get_aval(a).dtype)
    a2 = products.dot(a, a)
    if m == 13:
        a4 = products.dot(a2, a2)
        a6 = products.dot(a4, a2)
        u = products.dot(a, products.dot(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                         + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = (products.dot(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
             + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident)
        return u, v
    powers = [ident, a2]  # A^0, A^2, A^4, ...
    for _ in range(m // 2 - 1):
        powers.append(products.dot(powers[-1], a2))
    odd = sum(b[2 * i + 1] * p for i, p in enumerate(powers))
    even = sum(b[2 * i] * p for i, p in enumerate(powers))
    return products.dot(a, odd), even


_THETA_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _expm_2d(a, upper_triangular, max_squarings):
    dt = get_aval(a).dtype
    if dt in (np.float64, np.complex128):
        conds, maxnorm, orders = _THETAS["double"]
    elif dt in (np.float32, np.complex64):
        conds, maxnorm, orders = _THETAS["single"]
    else:
        raise TypeError(f"A.dtype={dt} is not supported.")
    a_l1 = jnp_linalg.norm(a, 1)
    n_squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(a_l1 / maxnorm)))
    a = a / (2 ** n_squarings).astype(dt)
    idx = sorting.digitize(a_l1, creation.array(conds, dtype=get_aval(a_l1).dtype))
    u, v = lax_control_flow.switch(idx, [partial(_pade, m) for m in orders], a)
    p, q = u + v, v - u  # numerator and denominator of the approximant

    def compute(args):
        p, q = args
        r = solve_triangular(q, p) if upper_triangular else jnp_linalg.solve(q, p)

        # Undo the scaling by squaring n_squarings times (a static number of steps).
        def square(r, i):
            return lax_control_flow.cond(i < n_squarings, lambda x: products.dot(x, x), lambda x: x, r), None
        r, _ = lax_control_flow.scan(square, r, creation.arange(max_squarings,
                                                                dtype=get_aval(n_squarings).dtype))
        return r

    return lax_control_flow.cond(n_squarings > max_squarings, lambda args: creation.full_like(args[0],
                                                                                              np.nan),
                    compute, (p, q))


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """Matrix exponential of a batch of square matrices, by Pade approximation with scaling
    and squaring (Higham 2005) as JAX computes it: the approximant's order is chosen from the
    1-norm, and matrices that would need more than `max_squarings` squarings give NaNs.
    `upper_triangular` tells the solver that A is upper triangular. Differentiable."""
    (A,) = _inexact(A)
    shape = _shape(A)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
    if shape[-1] == 0 and get_aval(A).dtype in _THETA_DTYPES:  # exp of an empty matrix
        return A
    return _map_matrices(partial(_expm_2d, upper_triangular=upper_triangular,
                                 max_squarings=max_squarings), A)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """Frechet derivative of expm at A in the direction E, as the JVP of expm: returns
    (expm(A), L(A, E)), or L(A, E) alone when not `compute_expm`. `method` is ignored."""
    del method
    A, E = creation.asarray(A), creation.asarray(E)
    sa, se = _shape(A), _shape(E)
    if len(sa) < 2 or sa[-2] != sa[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={sa}")
    if len(se) < 2 or se[-2] != se[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={se}")
    if sa != se:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={sa} E.shape={se}")
    A, E = _inexact(A, E)
    expm_a, frechet = jvp(partial(expm, upper_triangular=False, max_squarings=16), (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


def _check_polar_dtype(dt, method):
    """JAX's polar takes inexact input only: QDWH's ValueError or the SVD's TypeError."""
    if dtypes.numpy_issubdtype(dt, np.inexact):
        return
    if method == "qdwh":
        raise ValueError(f"data type {dt.type} not inexact")
    raise TypeError(f"svd does not accept dtype {dt} at position 0. Accepted dtypes at "
                    "position 0 are subtypes of floating, complexfloating.")


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """Polar decomposition: (u, p) with a = u @ p (side 'right', p [..., n, n]) or a = p @ u
    (side 'left', p [..., m, m]), u with orthonormal columns (rows when n > m) and p positive
    semidefinite. Both methods are computed from the SVD (u = u_svd @ vh_svd); 'qdwh' keeps
    JAX's shape restrictions, and `eps` and `max_iterations` are ignored."""
    del eps, max_iterations
    a = creation.asarray(a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    m, n = shape[-2:]
    if method == "qdwh":
        if not ((m >= n and side == "right") or (m < n and side == "left")):
            raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n "
                                      "where side='right' and m >= n side='left', got "
                                      f"{shape[-2:]} with side={side!r}")
    elif method != "svd":
        raise ValueError(f"Unknown polar decomposition method {method}.")
    _check_polar_dtype(get_aval(a).dtype, method)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    s = s.astype(get_aval(u).dtype)
    unitary = products.matmul(u, vh)
    if side == "right":
        posdef = products.matmul(_mH(vh) * s[..., None, :], vh)
    else:
        posdef = products.matmul(u * s[..., None, :], _mH(u))
    return unitary, posdef
