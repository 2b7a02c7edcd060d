"""Limited-memory BFGS (Nocedal & Wright, Numerical Optimization, 1999, Algorithm 7.5), as
jax.scipy.optimize.minimize(method="l-bfgs-experimental-do-not-rely-on-this") runs it,
including complex variables (Sorber, Van Barel and De Lathauwer, SIAM J. Optim. 22(3), 2012).

The last `maxcor` steps s and gradient changes y are kept oldest-first in fixed-size arrays;
the search direction is the two-loop recursion over the filled part of them, scaled by
gamma = y.s / y.y from the latest step.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from gpuarr.ad_api import value_and_grad
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import dot_precision as lax_dot_precision
from gpuarr.numpy import creation, manipulation, products, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.scipy.optimize._line_search import line_search

_dot = partial(products.dot, precision=lax_dot_precision.Precision.HIGHEST)


class LBFGSResults(NamedTuple):
    """L-BFGS loop state and result.

    Parameters:
      converged: True once the gradient norm fell below gtol.
      failed: True if a stopping status other than convergence was reached.
      k: number of iterations.
      nfev, ngev: numbers of function and gradient evaluations.
      x_k, f_k, g_k: the last iterate, the function value and the gradient there.
      s_history, y_history, rho_history: the last maxcor steps, gradient changes and 1 / (y.s),
        oldest first.
      gamma: scale of the initial inverse Hessian, y.s / y.y of the latest step.
      status: 0 nominal, 1 iteration limit, 2 function-evaluation limit, 3 gradient-evaluation
        limit, 4 decrease below ftol, 5 line search failed.
      ls_status: status of the last line search.
    """
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    x_k: object
    f_k: object
    g_k: object
    s_history: object
    y_history: object
    rho_history: object
    gamma: object
    status: object
    ls_status: object


def _minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
    """Minimise `fun(x)`, a real scalar function of the 1-D array `x`, from `x0` by L-BFGS with
    `maxcor` stored corrections. Stops when the `norm`-norm of the gradient is below `gtol` or a
    step decreases f by less than `ftol`, or at a limit on iterations (`maxiter`, default 200
    per variable when no limit is given), function or gradient evaluations (`maxfun`,
    `maxgrad`), or when a line search (at most `maxls` steps) fails."""
    d = len(x0)
    dtype = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    maxiter, maxfun, maxgrad = (np.inf if m is None else m for m in (maxiter, maxfun, maxgrad))

    f_0, g_0 = value_and_grad(fun)(x0)
    init = LBFGSResults(
        converged=creation.array(False), failed=creation.array(False), k=0, nfev=1, ngev=1,
        x_k=x0, f_k=f_0, g_k=g_0,
        s_history=creation.zeros((maxcor, d), dtype=dtype),
        y_history=creation.zeros((maxcor, d), dtype=dtype),
        rho_history=creation.zeros((maxcor,), dtype=dtype),
        gamma=1., status=0, ls_status=0)

    def body(s):
        p_k = _two_loop_recursion(s)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        s_k = creation.asarray(ls.a_k).astype(p_k.dtype) * p_k
        y_k = ls.g_k - s.g_k
        ys = ufuncs.real(_dot(y_k, s_k))
        gamma = ys / ufuncs.real(_dot(ufuncs.conj(y_k), y_k))

        # Later tests take precedence: a failed line search outranks every limit.
        status = creation.array(0)
        status = ufuncs.where(s.f_k - ls.f_k < ftol, 4, status)
        status = ufuncs.where(s.ngev >= maxgrad, 3, status)
        status = ufuncs.where(s.nfev >= maxfun, 2, status)
        status = ufuncs.where(s.k >= maxiter, 1, status)
        status = ufuncs.where(ls.failed, 5, status)
        converged = jnp_linalg.norm(ls.g_k, ord=norm) < gtol
        return LBFGSResults(
            converged=converged,
            failed=(status > 0) & (~converged),
            k=s.k + 1,
            nfev=s.nfev + ls.nfev,
            ngev=s.ngev + ls.ngev,
            x_k=(s.x_k + s_k).astype(s.x_k.dtype),
            f_k=ls.f_k.astype(s.f_k.dtype),
            g_k=ls.g_k.astype(s.g_k.dtype),
            s_history=_push(s.s_history, s_k),
            y_history=_push(s.y_history, y_k),
            rho_history=_push(s.rho_history, ufuncs.reciprocal(ys).astype(y_k.dtype)),
            gamma=gamma.astype(s.g_k.dtype),
            status=ufuncs.where(converged, 0, status),
            ls_status=ls.status)

    return lax_control_flow.while_loop(lambda s: (~s.converged) & (~s.failed), body, init)


def _two_loop_recursion(s):
    """The L-BFGS direction -H g from the stored corrections (Nocedal & Wright, Algorithm 7.4):
    newest to oldest, then back, over the min(k, maxcor) filled rows at the end of the history."""
    dtype = s.rho_history.dtype
    size = s.rho_history.shape[0]
    filled = ufuncs.where(s.k < size, s.k, size)

    def newest_first(j, carry):
        q, alphas = carry
        i = size - 1 - j
        alpha = s.rho_history[i] * _dot(ufuncs.conj(s.s_history[i]), q).real.astype(dtype)
        return q - alpha * ufuncs.conj(s.y_history[i]), alphas.at[i].set(alpha)

    q, alphas = lax_control_flow.fori_loop(0, filled, newest_first,
                                           (-ufuncs.conj(s.g_k), creation.zeros_like(s.rho_history)))
    q = s.gamma * q

    def oldest_first(j, q):
        i = size - filled + j
        beta = s.rho_history[i] * _dot(s.y_history[i], q).real.astype(dtype)
        return q + (alphas[i] - beta) * s.s_history[i]

    return lax_control_flow.fori_loop(0, filled, oldest_first, q)


def _push(history, new):
    """Drop the oldest row of `history` and append `new` as the newest."""
    return manipulation.roll(history, -1, axis=0).at[-1].set(new)
