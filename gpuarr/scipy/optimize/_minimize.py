"""jax.scipy.optimize.minimize: SciPy's minimize interface over the BFGS and L-BFGS solvers."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from gpuarr.numpy import ufuncs
from gpuarr.scipy.optimize._bfgs import minimize_bfgs
from gpuarr.scipy.optimize._lbfgs import _minimize_lbfgs


class OptimizeResults(NamedTuple):
    """The outcome of `minimize`.

    Parameters:
      x: the solution found.
      success: True if the solver converged.
      status: solver-specific code: 0 converged, 1 iteration limit reached, -1 undefined; for
        BFGS 3 zoom failed, 4 saddle point reached, 5 line-search iteration limit reached; for
        L-BFGS 2 and 3 function and gradient evaluation limits, 4 insufficient decrease,
        5 line search failed.
      fun: the objective at x.
      jac: its gradient at x.
      hess_inv: the final inverse-Hessian estimate (None for L-BFGS).
      nfev: number of objective evaluations.
      njev: number of gradient evaluations.
      nit: number of solver iterations.
    """
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


_SOLVERS = {
    "bfgs": minimize_bfgs,
    "l-bfgs-experimental-do-not-rely-on-this": _minimize_lbfgs,
}


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimise `fun(x, *args)`, a real scalar function of the 1-D array `x`, starting from
    `x0`, with `method` "BFGS" or "l-bfgs-experimental-do-not-rely-on-this" (case-insensitive).
    Gradients come from automatic differentiation. `options` are passed to the solver (BFGS:
    maxiter, norm, gtol, line_search_maxiter; L-BFGS: maxiter, norm, maxcor, ftol, gtol, maxfun,
    maxgrad, maxls); `tol` is accepted and, as in JAX, unused. Works eagerly, under jit and
    under vmap over `x0`; returns an `OptimizeResults`."""
    options = {} if options is None else options
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
    solver = _SOLVERS.get(method.lower())
    if solver is None:
        raise ValueError(f"Method {method} not recognized")

    result = solver(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(
        x=result.x_k,
        success=result.converged & ufuncs.logical_not(result.failed),
        status=result.status,
        fun=result.f_k,
        jac=result.g_k,
        hess_inv=getattr(result, "H_k", None),
        nfev=result.nfev,
        njev=result.ngev,
        nit=result.k)
