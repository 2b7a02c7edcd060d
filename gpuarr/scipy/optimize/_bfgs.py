"""BFGS minimisation (Nocedal & Wright, Numerical Optimization, 1999, Algorithm 6.1) with the
strong-Wolfe line search, as jax.scipy.optimize.minimize(method="BFGS") runs it.

The dense inverse-Hessian estimate starts at the identity and gets the rank-two BFGS update after
every step, unless that update is not finite (y.s == 0), in which case the estimate is kept.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from gpuarr.ad_api import value_and_grad
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import dot_precision as lax_dot_precision
from gpuarr.numpy import creation, products, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.numpy.einsum import einsum
from gpuarr.scipy.optimize._line_search import line_search

_dot = partial(products.dot, precision=lax_dot_precision.Precision.HIGHEST)
_einsum = partial(einsum, precision=lax_dot_precision.Precision.HIGHEST)


class _BFGSResults(NamedTuple):
    """BFGS loop state and result.

    Parameters:
      converged: True once the gradient norm fell below gtol.
      failed: True if the last line search failed.
      k: number of BFGS iterations.
      nfev, ngev, nhev: numbers of function, gradient and Hessian evaluations.
      x_k, f_k, g_k: the last iterate, the function value and the gradient there.
      H_k: the inverse-Hessian estimate at x_k.
      old_old_fval: the function value one iterate earlier (it sets the first line-search step).
      status: 0 converged, 1 iteration limit reached, 2 + the line search's status when it
        failed, -1 otherwise.
      line_search_status: status of the last line search.
    """
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    nhev: object
    x_k: object
    f_k: object
    g_k: object
    H_k: object
    old_old_fval: object
    status: object
    line_search_status: object


def minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """Minimise `fun(x)`, a real scalar function of the 1-D array `x`, from `x0` by BFGS. Stops
    when the `norm`-norm of the gradient is below `gtol`, after `maxiter` iterations (default
    200 per variable), or when a line search (at most `line_search_maxiter` steps) fails."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    identity = creation.eye(d, dtype=x0.dtype)

    f_0, g_0 = value_and_grad(fun)(x0)
    init = _BFGSResults(
        converged=jnp_linalg.norm(g_0, ord=norm) < gtol,
        failed=False, k=0, nfev=1, ngev=1, nhev=0,
        x_k=x0, f_k=f_0, g_k=g_0, H_k=identity,
        # A fictitious previous value making the first trial step about 1 / |g|.
        old_old_fval=f_0 + jnp_linalg.norm(g_0) / 2,
        status=0, line_search_status=0)

    def cond(s):
        return (~s.converged) & (~s.failed) & (s.k < maxiter)

    def body(s):
        p_k = -_dot(s.H_k, s.g_k)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho_k = ufuncs.reciprocal(_dot(y_k, s_k))
        # H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T
        w = creation.eye(d, dtype=rho_k.dtype) - rho_k * (s_k[:, None] * y_k[None, :])
        h_next = _einsum("ij,jk,lk", w, s.H_k, w) + rho_k * s_k[:, None] * s_k[None, :]
        return s._replace(
            converged=jnp_linalg.norm(ls.g_k, ord=norm) < gtol,
            failed=ls.failed,
            k=s.k + 1,
            nfev=s.nfev + ls.nfev,
            ngev=s.ngev + ls.ngev,
            x_k=s.x_k + s_k,
            f_k=ls.f_k,
            g_k=ls.g_k,
            H_k=ufuncs.where(ufuncs.isfinite(rho_k), h_next, s.H_k),
            old_old_fval=s.f_k,
            line_search_status=ls.status)

    s = lax_control_flow.while_loop(cond, body, init)
    status = ufuncs.where(s.converged, 0,
                          ufuncs.where(s.k == maxiter, 1,
                                       ufuncs.where(s.failed, 2 + s.line_search_status, -1)))
    return s._replace(status=status)
