"""Adaptive-step ODE integration, as `jax.experimental.ode`.

`odeint` integrates dy/dt = func(y, t, *args) with the Dormand-Prince 5(4) Runge-Kutta pair
(Dormand & Prince 1980; dense output by Shampine 1986, doi:10.1090/S0025-5718-1986-0815836-3),
with JAX's tableau, error norm, initial step (Hairer, Norsett & Wanner, Solving ODEs I, II.4),
step-size controller and 4th-order interpolation at the requested times. The state may be
any pytree: it is raveled to one vector for the solver.

Reverse-mode derivatives use the adjoint method (Chen et al. 2018, arXiv:1806.07366,
appendix C) through `custom_vjp`: the backward pass integrates the augmented system
(y, dL/dy, dL/dt0, dL/dargs) backwards in time between consecutive output times. Values
`func` closes over are hoisted with `closure_convert`, so they get gradients too.
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import numpy as np

from gpuarr import core, dtypes, pytrees
from gpuarr.ad_api import vjp
from gpuarr.config import config
from gpuarr.custom_derivatives import closure_convert, custom_vjp
from gpuarr.jit_api import jit
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import conversions as lax_conversions
from gpuarr.numpy import creation, dtype_functions, manipulation, products, reductions, ufuncs
from gpuarr.numpy.arguments import promote_dtypes_inexact

__all__ = ["odeint"]

# ---------------------------------------------------------------- Dormand-Prince tableau

# Stage times (as fractions of the step) of stages 2..7.
_ALPHA = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1.])
# Row i: the weights of stages 1..i+1 that give the state at which stage i+2 is evaluated.
_BETA = [
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
]
# 5th-order solution weights, and their difference from the embedded 4th-order ones.
_C_SOL = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_C_ERROR = np.array([35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                     125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
                     11 / 84 - 649 / 6300, -1. / 60.])
# Weights giving the solution at the middle of the step (dense output).
_C_MID = np.array([6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
                   -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
                   -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2])


# ---------------------------------------------------------------- pytree raveling


def _ravel(tree):
    """`(flat, unravel)`: the leaves of `tree` concatenated into one vector of their common
    dtype, and the inverse, which also accepts leading batch axes (`(..., n)` arrays)."""
    leaves, treedef = pytrees.tree_flatten(tree)
    if not leaves:
        return creation.zeros((0,), np.float32), lambda flat: pytrees.tree_unflatten(treedef, [])
    from_dtypes = [dtypes.dtype(x, canonicalize=True) for x in leaves]
    to_dtype = dtypes.result_type(*from_dtypes)
    shapes = [tuple(np.shape(x)) for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    flat = manipulation.concatenate(
        [manipulation.ravel(lax_conversions.convert_element_type(x, to_dtype)) for x in leaves])

    def unravel(flat):
        lead, out, start = flat.shape[:-1], [], 0
        for shape, size, dtype in zip(shapes, sizes, from_dtypes, strict=True):
            piece = flat[..., start:start + size].reshape(lead + shape)
            if dtypes.is_complex(piece.dtype) and not dtypes.is_complex(dtype):
                piece = ufuncs.real(piece)
            out.append(lax_conversions.convert_element_type(piece, dtype))
            start += size
        return pytrees.tree_unflatten(treedef, out)

    return flat, unravel


def _ravel_first_arg(func, unravel):
    """`func` on a raveled first argument, returning its result raveled."""
    def flat_func(y_flat, *args):
        return _ravel(func(unravel(y_flat), *args))[0]
    return flat_func


# ---------------------------------------------------------------- one Runge-Kutta step


def _runge_kutta_step(func, y0, f0, t0, dt):
    """One Dormand-Prince step: (y1, f1 = func(y1), error estimate, the 7 stage slopes)."""
    dt_y = dt.astype(f0.dtype)
    alpha = _ALPHA.astype(dt.dtype)
    ks = [f0]
    for i, row in enumerate(_BETA):
        yi = y0 + dt_y * products.dot(np.asarray(row, f0.dtype), manipulation.stack(ks))
        ks.append(func(yi, t0 + dt * alpha[i]))
    k = manipulation.stack(ks)
    y1 = dt_y * products.dot(_C_SOL.astype(f0.dtype), k) + y0
    y1_error = dt_y * products.dot(_C_ERROR.astype(f0.dtype), k)
    return y1, ks[-1], y1_error, k


def _interp_fit(y0, y1, k, dt):
    """Coefficients (highest power first) of the quartic through the step, in the fraction
    of the step: matches y and slope at both ends and the 5th-order midpoint value."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * products.dot(_C_MID.astype(y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
    b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
    c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
    return manipulation.stack([a, b, c, dt * dy0, y0])


def _horner(coeffs, x):
    """The polynomial with coefficient rows `coeffs` (highest power first) at `x`."""
    y = creation.zeros_like(x)
    for i in range(coeffs.shape[0]):
        y = y * x + coeffs[i]
    return y


def _norm(x):
    # The 2-norm, real for complex x (as jnp.linalg.norm's vector case).
    return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x))))


def _abs2(x):
    return x.real ** 2 + x.imag ** 2 if dtype_functions.iscomplexobj(x) else x ** 2


def _error_ratio(error, rtol, atol, y0, y1):
    """RMS of the error estimate relative to the mixed tolerance; a step passes at <= 1."""
    tol = atol + rtol * ufuncs.maximum(ufuncs.abs(y0), ufuncs.abs(y1))
    return ufuncs.sqrt(reductions.mean(_abs2(error / tol.astype(error.dtype))))


def _next_step_size(last_step, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    """The step after one with error ratio `ratio`: grows at most 10x; after a rejected step
    it shrinks at most 5x, after an accepted one it does not shrink."""
    dfactor = ufuncs.where(ratio < 1, 1.0, dfactor)
    factor = ufuncs.minimum(ifactor, ufuncs.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return ufuncs.where(ratio == 0, last_step * ifactor, last_step * factor)


def _initial_step_size(func, t0, y0, order, rtol, atol, f0):
    """Hairer, Norsett & Wanner's starting step: from the sizes of y0, f0 and a difference
    estimate of the second derivative."""
    y0, f0 = promote_dtypes_inexact(y0, f0)
    dtype = y0.dtype
    scale = (atol + ufuncs.abs(y0) * rtol).astype(dtype)
    d0 = _norm(y0 / scale)
    d1 = _norm(f0 / scale)
    h0 = ufuncs.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = func(y0 + h0.astype(dtype) * f0, t0 + h0)
    d2 = _norm((f1 - f0) / scale) / h0
    h1 = ufuncs.where((d1 <= 1e-15) & (d2 <= 1e-15), ufuncs.maximum(1e-6, h0 * 1e-3),
                      (0.01 / ufuncs.maximum(d1, d2)) ** (1. / (order + 1.)))
    return ufuncs.minimum(100. * h0, h1)


# ---------------------------------------------------------------- the solver on flat states


def _odeint_impl(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    def f(y, t):
        return func(y, t, *args)

    def to_target(carry, target_t):
        def cond_fun(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def body_fun(state):
            i, y, fy, t, dt, last_t, coeffs = state
            next_y, next_f, error, k = _runge_kutta_step(f, y, fy, t, dt)
            ratio = _error_ratio(error, rtol, atol, y, next_y)
            new_coeffs = _interp_fit(y, next_y, k, dt)
            next_dt = ufuncs.clip(_next_step_size(dt, ratio), min=0., max=hmax)
            accept = ratio <= 1.
            new = [next_y, next_f, t + dt, next_dt, t, new_coeffs]
            old = [y, fy, t, next_dt, last_t, coeffs]
            return [i + 1] + [ufuncs.where(accept, a, b) for a, b in zip(new, old, strict=True)]

        _, *carry = lax_control_flow.while_loop(cond_fun, body_fun, [0] + carry)
        _, _, t, _, last_t, coeffs = carry
        # The last accepted step spans [last_t, t] and contains target_t.
        s = (target_t - last_t) / (t - last_t)
        return carry, _horner(coeffs, s.astype(coeffs.dtype))

    f0 = f(y0, ts[0])
    dt = ufuncs.clip(_initial_step_size(f, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    init = [y0, f0, ts[0], dt, ts[0], manipulation.stack([y0] * 5)]
    _, ys = lax_control_flow.scan(to_target, init, ts[1:])
    return manipulation.concatenate((y0[None], ys))


_odeint = custom_vjp(_odeint_impl, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
    ys, ts, args = res
    # Indexed below by a loop counter, so they must be arrays, not NumPy values.
    ys, ts, g = creation.asarray(ys), creation.asarray(ts), creation.asarray(g)

    def aug_dynamics(state, minus_t, *args):
        # Integrated in negated time, so that the solver's times increase.
        y, y_bar, *_ = state
        y_dot, pullback = vjp(func, y, -minus_t, *args)
        return (-y_dot, *pullback(y_bar))

    def step_back(carry, i):
        y_bar, t0_bar, args_bar = carry
        # Moving output time i moves ys[i] along func.
        t_bar = products.dot(func(ys[i], ts[i], *args), g[i]).real
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = _solve(
            aug_dynamics, rtol, atol, mxstep, hmax, (ys[i], y_bar, t0_bar, args_bar),
            creation.array([-ts[i], -ts[i - 1]]), *args)
        y_bar, t0_bar, args_bar = pytrees.tree_map(lambda x: x[1], (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], 0., pytrees.tree_map(creation.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = lax_control_flow.scan(
        step_back, init, creation.arange(len(ts) - 1, 0, -1))
    ts_bar = manipulation.concatenate([creation.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)


def _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The solver on a pytree state: ravel, integrate, unravel with a leading time axis."""
    y0_flat, unravel = _ravel(y0)
    ys = _odeint(_ravel_first_arg(func, unravel), rtol, atol, mxstep, hmax, y0_flat, ts, *args)
    return unravel(ys)


# ---------------------------------------------------------------- entry point

# func -> {(argument structure, avals, trace state): (jitted solver, hoisted consts)}. Keyed
# weakly on func, so a solver (and its compiled Programs) lives as long as the function.
_solvers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _solver_for(func, y0, t0, args):
    """A jitted solver for `func` with its closed-over values hoisted, and those values;
    reused for the same function and argument types unless the values are traced."""
    leaves, in_tree = pytrees.tree_flatten((y0, t0, args))
    key = (in_tree, tuple(core.get_aval(x) for x in leaves), config.trace_state())
    try:
        per_func = _solvers.get(func)
        found = per_func.get(key) if per_func is not None else None
    except TypeError:  # unhashable or not weakly referenceable: no reuse
        per_func = found = None
    if found is not None:
        return found
    converted, consts = closure_convert(func, y0, t0, *args)
    # Eager calls run one compiled Program; under a transformation (or an enclosing jit) the
    # solver's equations go straight into the caller's program.
    solver = jit(functools.partial(_solve, converted), static_argnums=(0, 1, 2, 3), inline=True)
    if not any(isinstance(c, core.Tracer) for c in consts):
        try:
            _solvers.setdefault(func, {})[key] = (solver, consts)
        except TypeError:
            pass
    return solver, consts


def _valid_jaxtype(x) -> bool:
    try:
        aval = core.get_aval(x)
    except TypeError:
        return False
    return aval.dtype.kind not in "OSUV"


def odeint(func: Callable, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf,
           hmax=np.inf):
    """Solve dy/dt = func(y, t, *args) from y(t[0]) = y0 and return y at every time in `t`
    (strictly increasing floats), with a new leading axis of length len(t) on each leaf of
    the pytree y0. Adaptive Dormand-Prince with local error tolerances `rtol`/`atol`, at most
    `mxstep` steps per output interval and steps no longer than `hmax`; `args` must be arrays,
    scalars or pytrees of them. Reverse-mode derivatives with respect to y0, t, args and
    values `func` closes over use the adjoint method."""
    for arg in pytrees.tree_leaves(args):
        if not _valid_jaxtype(arg):
            raise TypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
    if not dtypes.numpy_issubdtype(t.dtype, dtype_functions.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    solver, consts = _solver_for(func, y0, t[0], args)
    return solver(rtol, atol, mxstep, hmax, y0, t, *args, *consts)
