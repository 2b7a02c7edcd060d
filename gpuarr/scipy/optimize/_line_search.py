"""The strong-Wolfe line search of jax.scipy.optimize (Nocedal & Wright, Numerical Optimization,
1999, Algorithms 3.5 and 3.6), written with gpuarr.lax.while_loop so it runs eagerly, under jit
and under vmap.

Both the bracketing phase and the zoom phase are loops whose every branch is computed and then
picked with `where` (no `cond`), so a batched search stays one program. Counts and dtypes follow
JAX: steps start at 1 (or an estimate from the previous decrease) and double; a zoom gives up
after 30 steps or once its bracket is narrower than 1e-5 (1e-10 in 64-bit).
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

from gpuarr import dtypes
from gpuarr.ad_api import value_and_grad
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import dot_precision as lax_dot_precision
from gpuarr.numpy import creation, products, ufuncs
from gpuarr.numpy.arguments import promote_dtypes_inexact

_dot = partial(products.dot, precision=lax_dot_precision.Precision.HIGHEST)

# Zoom safeguards: a cubic (quadratic) trial step must keep this fraction of the bracket
# between itself and either end, else the next interpolant (bisection) is used.
_CUBIC_MARGIN = 0.2
_QUAD_MARGIN = 0.1
_ZOOM_MAXITER = 30


class _LineSearchResults(NamedTuple):
    """What `line_search` returns.

    Parameters:
      failed: True unless a step satisfying the strong Wolfe conditions was found.
      nit: number of bracketing iterations.
      nfev: number of function evaluations.
      ngev: number of gradient evaluations.
      k: bracketing iteration counter (nit + 1).
      a_k: step size.
      f_k: function value at the step.
      g_k: gradient at the step.
      status: 0 found, 1 zoom failed, 3 iteration limit reached.
    """
    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


class _Zoom(NamedTuple):
    """Loop state of the zoom phase: the bracket end with the lower value (lo), the other end
    (hi), the previous trial point kept for cubic interpolation (rec), and the accepted step."""
    done: object
    failed: object
    j: object
    a_lo: object
    phi_lo: object
    dphi_lo: object
    a_hi: object
    phi_hi: object
    dphi_hi: object
    a_rec: object
    phi_rec: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object
    nfev: object
    ngev: object


class _Bracket(NamedTuple):
    """Loop state of the bracketing phase: the previous trial step (i1) and the accepted one."""
    done: object
    failed: object
    i: object
    a_i1: object
    phi_i1: object
    dphi_i1: object
    nfev: object
    ngev: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """Minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc); NaN when
    the cubic has none (the caller's bounds check then rejects it)."""
    dtype = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    # Solve for the cubic and quadratic coefficients A, B of f(a + t) = A t^3 + B t^2 + fpa t + fa.
    rows = creation.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
    rhs = creation.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
    coef_a, coef_b = _dot(rows, rhs) / denom
    radical = coef_b * coef_b - 3. * coef_a * fpa
    return a + (-coef_b + ufuncs.sqrt(radical)) / (3. * coef_a)


def _quadmin(a, fa, fpa, b, fb):
    """Minimiser of the parabola through (a, fa) with slope fpa at a and through (b, fb)."""
    db = b - a
    curvature = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2. * curvature)


def _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, a_lo, phi_lo, dphi_lo,
          a_hi, phi_hi, dphi_hi, g_0, skip):
    """Shrink the bracket [a_lo, a_hi] until a step satisfies the strong Wolfe conditions
    (Nocedal & Wright, Algorithm 3.6). With `skip` true the loop does not run."""
    init = _Zoom(
        done=False, failed=False, j=0,
        a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo,
        a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2., phi_rec=(phi_lo + phi_hi) / 2.,
        a_star=creation.ones_like(a_lo), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
        nfev=0, ngev=0)

    def body(s):
        width = s.a_hi - s.a_lo  # signed, as in JAX: a bracket given high-to-low fails here
        left, right = ufuncs.minimum(s.a_hi, s.a_lo), ufuncs.maximum(s.a_hi, s.a_lo)
        threshold = 1e-5 if dtypes.finfo(width.dtype).bits < 64 else 1e-10
        failed = s.failed | (width <= threshold)

        # Trial step: cubic (after the first step), else quadratic, else bisection.
        cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = ((s.j > 0) & (cubic > left + _CUBIC_MARGIN * width)
                     & (cubic < right - _CUBIC_MARGIN * width))
        quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ((~use_cubic) & (quad > left + _QUAD_MARGIN * width)
                    & (quad < right - _QUAD_MARGIN * width))
        a_j = ufuncs.where(use_cubic, cubic, s.a_rec)
        a_j = ufuncs.where(use_quad, quad, a_j)
        a_j = ufuncs.where((~use_cubic) & (~use_quad), (s.a_lo + s.a_hi) / 2., a_j)

        phi_j, dphi_j, g_j = phi_dphi(a_j)
        phi_j = phi_j.astype(s.phi_lo.dtype)
        dphi_j = dphi_j.astype(s.dphi_lo.dtype)
        g_j = g_j.astype(s.g_star.dtype)

        # Exactly one of four moves: a_j becomes hi; a_j is accepted; a_j becomes lo and the
        # old lo becomes hi (slope points away from hi); a_j becomes lo.
        to_hi = sufficient_decrease_fails(a_j, phi_j) | (phi_j >= s.phi_lo)
        accept = curvature_holds(dphi_j) & (~to_hi)
        to_lo = (~to_hi) & (~accept)
        flip = (dphi_j * (s.a_hi - s.a_lo) >= 0.) & to_lo
        keep_lo = to_lo & (~flip)

        def pick(new_hi, new_lo, old):
            return ufuncs.where(to_hi, new_hi, ufuncs.where(flip, new_lo, old))

        j = s.j + 1
        return _Zoom(
            done=s.done | accept,
            failed=failed | (j >= _ZOOM_MAXITER),
            j=j,
            a_lo=ufuncs.where(to_lo, a_j, s.a_lo),
            phi_lo=ufuncs.where(to_lo, phi_j, s.phi_lo),
            dphi_lo=ufuncs.where(to_lo, dphi_j, s.dphi_lo),
            a_hi=pick(a_j, s.a_lo, s.a_hi),
            phi_hi=pick(phi_j, s.phi_lo, s.phi_hi),
            dphi_hi=pick(dphi_j, s.dphi_lo, s.dphi_hi),
            a_rec=ufuncs.where(to_hi | flip, s.a_hi, ufuncs.where(keep_lo, s.a_lo, s.a_rec)),
            phi_rec=ufuncs.where(to_hi | flip, s.phi_hi, ufuncs.where(keep_lo, s.phi_lo, s.phi_rec)),
            a_star=ufuncs.where(accept, a_j, s.a_star),
            phi_star=ufuncs.where(accept, phi_j, s.phi_star),
            dphi_star=ufuncs.where(accept, dphi_j, s.dphi_star),
            g_star=ufuncs.where(accept, g_j, s.g_star),
            nfev=s.nfev + 1,
            ngev=s.ngev + 1)

    return lax_control_flow.while_loop(lambda s: (~s.done) & (~skip) & (~s.failed), body, init)


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
    """Inexact line search from `xk` along the descent direction `pk` for a step satisfying the
    strong Wolfe conditions with constants `c1` and `c2` (Nocedal & Wright, Algorithm 3.5).
    `old_fval` and `gfk` are f and its gradient at `xk` (computed when either is missing);
    `old_old_fval`, the previous value of f, sets the first trial step. Returns a
    `_LineSearchResults` (failed, nit, nfev, ngev, k, a_k, f_k, g_k, status)."""
    xk, pk = promote_dtypes_inexact(xk, pk)

    def phi_dphi(t):
        value, grad = value_and_grad(f)(xk + creation.array(t, dtype=pk.dtype) * pk)
        return value, ufuncs.real(_dot(grad, pk)), grad

    evaluate_start = old_fval is None or gfk is None
    if evaluate_start:
        phi_0, dphi_0, gfk = phi_dphi(0)
    else:
        phi_0, dphi_0 = old_fval, ufuncs.real(_dot(gfk, pk))
    if old_old_fval is None:
        first_step = 1
    else:
        # 1.01 times the step a quadratic would take to repeat the last decrease, at most 1.
        guess = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        first_step = ufuncs.where(guess > 1, 1.0, guess)

    def sufficient_decrease_fails(a, phi):
        return phi > phi_0 + c1 * a * dphi_0

    def curvature_holds(dphi):
        return ufuncs.abs(dphi) <= -c2 * dphi_0

    # Steps carry the type of f and its slope from the start, so every loop keeps its types.
    a_0 = creation.zeros((), dtypes.result_type(phi_0, dphi_0))
    init = _Bracket(
        done=creation.array(False), failed=creation.array(False), i=1,
        a_i1=a_0, phi_i1=phi_0, dphi_i1=dphi_0,
        nfev=int(evaluate_start), ngev=int(evaluate_start),
        a_star=a_0, phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

    def body(s):
        a_i = ufuncs.where(s.i == 1, first_step, s.a_i1 * 2.)
        phi_i, dphi_i, g_i = phi_dphi(a_i)

        # The step overshoots (zoom between the previous step and it), is accepted, or the
        # slope turned positive (zoom between it and the previous step); else double it.
        zoom_up = sufficient_decrease_fails(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        accept = curvature_holds(dphi_i) & (~zoom_up)
        zoom_down = (dphi_i >= 0.) & (~zoom_up) & (~accept)
        up = _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, s.a_i1, s.phi_i1,
                   s.dphi_i1, a_i, phi_i, dphi_i, gfk, ~zoom_up)
        down = _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, a_i, phi_i, dphi_i,
                     s.a_i1, s.phi_i1, s.dphi_i1, gfk, ~zoom_down)

        def pick(field, at_i, old):
            chosen = ufuncs.where(zoom_up, getattr(up, field), old)
            chosen = ufuncs.where(accept, at_i, chosen)
            return ufuncs.where(zoom_down, getattr(down, field), chosen)

        return _Bracket(
            done=s.done | zoom_up | accept | zoom_down,
            failed=s.failed | (zoom_up & up.failed) | (zoom_down & down.failed),
            i=s.i + 1,
            a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i,
            nfev=s.nfev + 1 + up.nfev + down.nfev,
            ngev=s.ngev + 1 + up.ngev + down.ngev,
            a_star=pick("a_star", a_i, s.a_star),
            phi_star=pick("phi_star", phi_i, s.phi_star),
            dphi_star=pick("dphi_star", dphi_i, s.dphi_star),
            g_star=pick("g_star", g_i, s.g_star))

    s = lax_control_flow.while_loop(lambda s: (~s.done) & (s.i <= maxiter) & (~s.failed), body, init)

    status = ufuncs.where(s.failed, 1, ufuncs.where(s.i > maxiter, 3, 0))
    a_k = creation.asarray(s.a_star)
    if dtypes.finfo(a_k.dtype).bits != 64:
        # Below 64 bits a tiny step can leave the iterate where it is forever; keep it >= 1e-8.
        a_k = ufuncs.where(ufuncs.abs(a_k) < 1e-8, ufuncs.sign(a_k) * 1e-8, a_k)
    return _LineSearchResults(
        failed=s.failed | (~s.done), nit=s.i - 1, nfev=s.nfev, ngev=s.ngev, k=s.i,
        a_k=a_k, f_k=s.phi_star, g_k=s.g_star, status=status)
