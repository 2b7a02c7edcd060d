"""gpuarr.scipy.optimize: jax.scipy.optimize's `minimize` (BFGS and an experimental L-BFGS),
built on gpuarr.lax.while_loop and automatic differentiation so it runs eagerly, under jit and
under vmap over the starting point.

As in JAX, only `minimize` and `OptimizeResults` are public; the strong-Wolfe line search both
solvers use is `gpuarr.scipy.optimize._line_search.line_search`.
"""
from gpuarr.scipy.optimize._minimize import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
