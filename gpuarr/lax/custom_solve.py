"""`custom_root` and `custom_linear_solve`: solvers differentiated implicitly.

The solver itself (an iteration, a factorisation, a while loop) is never differentiated. For a
linear solve x = A^-1 b the cotangent of b is A^-T x_bar, obtained with `transpose_solve` (or
`solve` when A is symmetric), and the parameters A closes over get -(dA/dtheta)^T applied to
that and x. For a root x* of f(x, theta) = 0 the implicit function theorem gives
theta_bar = -(df/dtheta)^T lambda with lambda solving (df/dx)^T lambda = x_bar through
`tangent_solve`. Both are built on custom_vjp, with the closed-over values of the functions
hoisted by closure_convert, so gradients reach them; forward mode is not available.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuarr.lax import lax


def _ad():
    from gpuarr import ad_api, custom_derivatives
    return ad_api, custom_derivatives


def _transpose_fn(linear_fn, example):
    """v -> A^T v for the linear `linear_fn` at points shaped like `example`."""
    ad_api, _ = _ad()
    lt = ad_api.linear_transpose(linear_fn, example)
    return lambda ct: lt(ct)[0]


def _implicit(run, fn, adjoint, first_cotangent):
    """A custom_vjp function (first, cs, scs, tcs) -> run(first, cs, scs) = (x, aux) whose
    backward pass solves lam = adjoint(x_bar, x, cs, tcs) and gives the closed-over values
    cs the cotangent -(d fn(x, *cs) / d cs)^T lam (implicit differentiation through
    fn(x, cs) = 0, or = b); `first_cotangent(lam)` is the first argument's. The solver
    constants scs and tcs get none."""
    _, cd = _ad()

    @cd.custom_vjp
    def solution(first, cs, scs, tcs):
        return run(first, cs, scs)

    def fwd(first, cs, scs, tcs):
        x, aux = run(first, cs, scs)
        return (x, aux), (x, cs, tcs)

    def bwd(res, cts):
        x, cs, tcs = res
        lam = adjoint(cts[0], x, cs, tcs)
        ct_cs = ()
        if cs:
            ad_api, _ = _ad()
            _, pull = ad_api.vjp(lambda *c: fn(x, *c), *cs)
            ct_cs = tuple(lax.neg(c) for c in pull(lam))
        return first_cotangent(lam), ct_cs, None, None

    solution.defvjp(fwd, bwd)
    return solution


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric=False, has_aux=False):
    """Solve `matvec(x) = b` with `solve(matvec, b)` and differentiate the result implicitly
    (lax.custom_linear_solve): reverse mode uses `transpose_solve(vecmat, cotangent)` with
    vecmat the transpose of matvec (or `solve` again when `symmetric`), so the solver is never
    differentiated. Values that `matvec` closes over receive gradients. With `has_aux`,
    `solve` returns `(x, aux)` and aux is returned alongside x, without gradients."""
    _, cd = _ad()
    mv, consts = cd.closure_convert(matvec, b)
    consts = tuple(consts)
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    # The solvers' own closed-over values are hoisted too (they get no gradient).
    sv, s_consts = cd.closure_convert(
        lambda b_, *cs: solve(lambda v: mv(v, *cs), b_), b, *consts)
    tsv, t_consts = None, []
    if transpose_solve is not None:
        tsv, t_consts = cd.closure_convert(
            lambda ct, *cs: transpose_solve(_transpose_fn(lambda v: mv(v, *cs), ct), ct),
            b, *consts)

    def run(b_, cs, scs):
        out = sv(b_, *cs, *scs)
        return out if has_aux else (out, None)

    def adjoint(ct_x, x, cs, tcs):
        if tsv is None:
            raise TypeError("transpose_solve required for backwards mode automatic "
                            "differentiation of custom_linear_solve")
        return tsv(ct_x, *cs, *tcs)

    lin_solve = _implicit(run, mv, adjoint, first_cotangent=lambda lam: lam)
    x, aux = lin_solve(b, consts, tuple(s_consts), tuple(t_consts))
    return (x, aux) if has_aux else x


def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux=False):
    """Find a root of `f` with `solve(f, initial_guess)` and differentiate it implicitly
    (lax.custom_root): for f(x*) = 0 the gradient with respect to values `f` closes over is
    -(df/dtheta)^T lambda, where `tangent_solve(g, y)` solves the linear system g(lambda) = y
    (g the transposed Jacobian of f in x). The solver is not differentiated and the initial
    guess gets no gradient. With `has_aux`, `solve` returns `(x, aux)`."""
    _, cd = _ad()
    fc, consts = cd.closure_convert(f, initial_guess)
    consts = tuple(consts)
    sv, s_consts = cd.closure_convert(
        lambda g, *cs: solve(lambda v: fc(v, *cs), g), initial_guess, *consts)

    def transposed_jacobian(x, cs):
        ad_api, _ = _ad()
        jac_x = lambda v: ad_api.jvp(lambda y: fc(y, *cs), (x,), (v,))[1]  # noqa: E731
        return _transpose_fn(jac_x, x)

    tsv, t_consts = cd.closure_convert(
        lambda ct, x, *cs: tangent_solve(transposed_jacobian(x, cs), ct),
        initial_guess, initial_guess, *consts)

    def run(guess, cs, scs):
        out = sv(guess, *cs, *scs)
        out = out if has_aux else (out, None)
        return lax.stop_gradient(out[0]), lax.stop_gradient(out[1])

    root = _implicit(run, fc, lambda ct_x, x, cs, tcs: tsv(ct_x, x, *cs, *tcs),
                     first_cotangent=lambda lam: None)  # the initial guess gets none
    x, aux = root(initial_guess, consts, tuple(s_consts), tuple(t_consts))
    return (x, aux) if has_aux else x
