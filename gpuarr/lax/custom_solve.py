"""`custom_linear_solve` and `custom_root`: solvers differentiated implicitly, as in JAX
(jax/_src/lax/control_flow/solves.py).

`custom_linear_solve` is the primitive `custom_linear_solve` (`linear_solve_p`); its params are
the ClosedPrograms of matvec, vecmat, solve and transpose_solve (`jaxprs`, a
`_LinearSolveTuple`, None where not given), how many leading operands each one takes
(`const_lengths`), and `transpose` (below; None for custom_linear_solve); the right-hand side
b comes last. Values the functions close over are hoisted into those operands, as control
flow does, so every transformation sees them. Evaluating it runs the solve program only. For
A x = b its JVP is x_dot = A^-1 (b_dot - A_dot x), one more solve; it is linear in b, and its
transpose solves with transpose_solve (the transposed program tuple), so reverse mode never
differentiates a solver.

`custom_root` is a custom_jvp function of the closed-over values of f and the solver: its JVP
is the implicit function theorem, x_dot = -(df/dx)^-1 (df/dtheta theta_dot). As in JAX,
`tangent_solve(g, b)` (g is df/dx at x, here a JVP of f: `linearize` cannot stage a
while_loop) is traced at call time, which checks its output structure, and the JVP evaluates
it, so forward mode transposes nothing: f may hold anything jvp handles, a while_loop over x
say. The JVP binds it as a custom_linear_solve of matvec g with no transposed programs; its
`transpose` param transposes in reverse mode only: tangent_solve itself, as JAX does, or,
where tangent_solve cannot be transposed (a while_loop solver; JAX fails there), by solving
g^T y = ct with tangent_solve. Building g^T up front instead, as custom_linear_solve does for
transpose_solve, would break forward mode whenever g has no transpose.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from gpuarr import pytrees
from gpuarr.core import Primitive, abstract_eval_rules, eval_closed, get_aval, weak_type_rules
from gpuarr.custom_derivatives import SymbolicZero, _eval_call, custom_jvp
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax import conversions, lax
from gpuarr.lax.control_flow.common import _avals, _operand, _trace_body


def _split(args, lengths):
    """Leading groups of `lengths` items, and the rest."""
    groups, i = [], 0
    for n in lengths:
        groups.append(list(args[i:i + n]))
        i += n
    return groups, list(args[i:])


def _flatten(groups):
    return [x for g in groups for x in g]


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
    if has_aux:
        children = actual_tree.children()
        if len(children) != 2:
            raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, but a "
                             "pytree tuple with auxiliary output was expected because has_aux "
                             "was set to True.")
        actual_tree = children[0]
    if actual_tree != expected_tree:
        raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got "
                        f"{actual_tree} and {expected_tree}.")


def _shape_checked(fun, name, expected, has_aux=False):
    """`fun`, checking that its result (without aux) has the leaf shapes `expected`."""
    def checked(x):
        y = fun(x)
        shapes = [np.shape(leaf) for leaf in pytrees.tree_leaves(y[0] if has_aux else y)]
        if shapes != expected:
            raise ValueError(f"{name}() output shapes must match b, got {shapes} and {expected}")
        return y
    return checked


# ================================================================ custom_linear_solve


class _LinearSolveTuple(NamedTuple):
    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self):
        return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric=False, has_aux=False):
    """Solve `matvec(x) = b` with `solve(matvec, b)` and differentiate the result implicitly
    (lax.custom_linear_solve): tangents and cotangents are found with more solves, never by
    differentiating the solver. Reverse mode needs `transpose_solve(vecmat, ct)`, vecmat the
    transpose of matvec (`solve` serves when `symmetric`). Values `matvec` closes over get
    derivatives. With `has_aux`, `solve` (and `transpose_solve`) return `(x, aux)`."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_flat, tree = pytrees.tree_flatten(b)
    b_flat = [_operand(x) for x in b_flat]
    b_avals = _avals(b_flat)
    shapes = [a.shape for a in b_avals]
    in_tree = pytrees.tree_structure((b,))

    def trace(fun, name, aux=False):
        closed, consts, out_tree = _trace_body(_shape_checked(fun, name, shapes, aux), in_tree,
                                               b_avals)
        _check_tree(name, "b", out_tree, tree, aux)
        return closed, consts, out_tree

    matvec_jaxpr, matvec_consts, _ = trace(matvec, "matvec")
    solve_jaxpr, solve_consts, out_tree = trace(lambda x: solve(matvec, x), "solve", has_aux)
    vecmat_jaxpr = tr_solve_jaxpr = None
    vecmat_consts = tr_solve_consts = []
    if transpose_solve is not None:
        if symmetric:
            vecmat, vecmat_jaxpr, vecmat_consts = matvec, matvec_jaxpr, matvec_consts
        else:
            from gpuarr.ad_api import linear_transpose
            transposed = linear_transpose(matvec, pytrees.tree_unflatten(tree, b_flat))
            vecmat = lambda x: transposed(x)[0]  # noqa: E731
            vecmat_jaxpr, vecmat_consts, _ = trace(vecmat, "vecmat")
        tr_solve_jaxpr, tr_solve_consts, _ = trace(lambda x: transpose_solve(vecmat, x),
                                                   "transpose_solve", has_aux)
    all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
    outs = linear_solve_p.bind(
        *_flatten(all_consts), *b_flat,
        const_lengths=_LinearSolveTuple(*(len(c) for c in all_consts)),
        jaxprs=_LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr),
        transpose=None)
    return pytrees.tree_unflatten(out_tree, outs)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)


def _split_solve_args(args, const_lengths):
    groups, b = _split(args, const_lengths)
    return _LinearSolveTuple(*groups), b


def _aux_avals(jaxprs):
    return jaxprs.solve.out_avals[len(jaxprs.matvec.out_avals):]


def _linear_solve_abstract(*avals, const_lengths, jaxprs, transpose):
    # x has b's types; auxiliary outputs have solve's.
    return list(avals[sum(const_lengths):]) + list(_aux_avals(jaxprs))


def _linear_solve_impl(*args, const_lengths, jaxprs, transpose):
    params, b = _split_solve_args(args, const_lengths)
    return _eval_call(*params.solve, *b, call_jaxpr=jaxprs.solve)


def _linear_solve_weak_types(*args, const_lengths, jaxprs, transpose):
    return ([bool(getattr(x, "weak_type", type(x) in (int, float, complex)))
             for x in args[sum(const_lengths):]] + [a.weak_type for a in _aux_avals(jaxprs)])


abstract_eval_rules[linear_solve_p] = _linear_solve_abstract
weak_type_rules[linear_solve_p] = _linear_solve_weak_types
impl_rules[linear_solve_p] = _linear_solve_impl


def _linear_solve_jvp(primals, tangents, const_lengths, jaxprs, transpose):
    # A x = b  =>  A_dot x + A x_dot = b_dot  =>  x_dot = A^-1 (b_dot - A_dot x). The solver
    # consts' tangents do not matter: solve is A^-1 whatever it closes over.
    x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs,
                            transpose=transpose)
    params, _ = _split_solve_args(primals, const_lengths)
    params_dot, rhs = _split_solve_args(tangents, const_lengths)
    n = len(rhs)
    if any(type(t) is not Zero for t in params_dot.matvec):
        _, a_dot_x = ad.jvp_flat(lambda *ps: eval_closed(jaxprs.matvec, *ps, *x[:n]),
                                 params.matvec, params_dot.matvec)
        rhs = [r if type(t) is Zero else ad.add_tangents(r, lax.neg(t))
               for r, t in zip(rhs, a_dot_x, strict=True)]
    zeros = [Zero.from_primal(o) for o in x]
    if all(type(r) is Zero for r in rhs):
        return x, zeros
    x_dot = linear_solve_p.bind(*_flatten(params), *map(ad.instantiate, rhs),
                                const_lengths=const_lengths, jaxprs=jaxprs, transpose=transpose)
    return x, x_dot[:n] + zeros[n:]  # aux values have no tangents


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs, transpose):
    if jaxprs.transpose_solve is None and transpose is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    params, b = _split_solve_args(args, const_lengths)
    if any(ad.is_undefined(x) for x in _flatten(params)):
        raise NotImplementedError("custom_linear_solve is linear in b only; the values matvec "
                                  "closes over cannot be linear inputs")
    if any(type(c) is not Zero for c in cts[len(b):]):
        raise NotImplementedError("custom_linear_solve: auxiliary outputs have no cotangents")
    ct_x = [ad.instantiate(c) for c in cts[:len(b)]]
    if jaxprs.transpose_solve is None:  # custom_root's tangent system: transposed on demand
        ct_b = transpose(_flatten(params), ct_x)
    else:
        # x = A^-1 b  =>  b_bar = A^-T x_bar: the same primitive over the transposed programs.
        ct_b = linear_solve_p.bind(*_flatten(params.transpose()), *ct_x,
                                   const_lengths=const_lengths.transpose(),
                                   jaxprs=jaxprs.transpose(), transpose=None)
    return [None] * sum(const_lengths) + [c if ad.is_undefined(x) else None
                                          for x, c in zip(b, ct_b[:len(b)], strict=True)]


ad.jvp_rules[linear_solve_p] = _linear_solve_jvp
ad.transpose_rules[linear_solve_p] = _linear_solve_transpose


def _linear_solve_batch(axis_size, vals, dims, const_lengths, jaxprs, transpose):
    vals = [v if d is not_mapped else batching.move_to(v, d, 0, axis_size)
            for v, d in zip(vals, dims, strict=True)]
    params, b = _split_solve_args(vals, const_lengths)
    params_bat, b_bat = _split_solve_args([d is not not_mapped for d in dims], const_lengths)
    n = len(b)

    def batch(closed, consts_bat, vec_bat):
        # Auxiliary outputs are always batched, vector outputs where `vec_bat` says.
        force = list(vec_bat) + [True] * (len(closed.out_avals) - n)
        in_dims = [0 if bt else not_mapped for bt in consts_bat + vec_bat]
        prog, out_dims = batching.batch_closed(closed, axis_size, in_dims, force)
        return prog, [d is not not_mapped for d in out_dims[:n]]

    # x and b share one vector space: a leaf is batched in all four programs, or in none.
    # Iterate until no program batches a vector leaf the others do not. A `transpose` runs
    # per example under vmap, so there every leaf is batched.
    vec_bat = list(b_bat) if transpose is None else [True] * n
    while True:
        batched = [None if closed is None else batch(closed, consts_bat, vec_bat)
                   for closed, consts_bat in zip(jaxprs, params_bat)]
        grown = [any(col) for col in zip(vec_bat, *(j[1] for j in batched if j is not None))]
        if grown == vec_bat:
            break
        vec_bat = grown
    b = [batching.move_to(x, not_mapped, 0, axis_size) if now and not was else x
         for x, was, now in zip(b, b_bat, vec_bat, strict=True)]
    if transpose is not None:
        transpose = _batched_transpose(transpose, axis_size, _flatten(params_bat))
    outs = linear_solve_p.bind(
        *_flatten(params), *b, const_lengths=const_lengths,
        jaxprs=_LinearSolveTuple(*(None if j is None else j[0] for j in batched)),
        transpose=transpose)
    return outs, [0 if bt else not_mapped for bt in vec_bat] + [0] * (len(outs) - n)


def _batched_transpose(transpose, axis_size, consts_bat):
    """`transpose` (consts, cts) -> b cotangents for the batched equation: run per example
    under vmap; the cotangents and results are batched at 0, as the vectors are."""
    def batched(consts, cts):
        k = len(consts)
        dims = [0 if bt else not_mapped for bt in consts_bat] + [0] * len(cts)
        outs, out_dims = batching.batch_flat(lambda *xs: transpose(list(xs[:k]), list(xs[k:])),
                                             axis_size, list(consts) + list(cts), dims)
        return [batching.move_to(o, d, 0, axis_size) for o, d in zip(outs, out_dims, strict=True)]
    batched.__name__ = transpose.__name__
    return batched


batching.batch_rules[linear_solve_p] = _linear_solve_batch


# ================================================================ custom_root


class _RootTuple(NamedTuple):
    f: Any
    solve: Any
    l_and_s: Any


def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux=False):
    """Find a root of `f` with `solve(f, initial_guess)` and differentiate it implicitly
    (lax.custom_root): derivatives reach the values `f` closes over through the implicit
    function theorem, `tangent_solve(g, y)` solving the linear system g(x) = y for g the
    linearization of f at the root. The solver is not differentiated and the initial guess
    gets no derivative. With `has_aux`, `solve` returns `(x, aux)`."""
    guess_flat, tree = pytrees.tree_flatten(initial_guess)
    guess_flat = [_operand(x) for x in guess_flat]
    guess_avals = _avals(guess_flat)
    in_tree = pytrees.tree_structure((initial_guess,))
    f_jaxpr, f_consts, f_tree = _trace_body(f, in_tree, guess_avals)
    _check_tree("f", "initial_guess", f_tree, tree)
    solve_jaxpr, solve_consts, out_tree = _trace_body(lambda x: solve(f, x), in_tree, guess_avals)
    _check_tree("solve", "initial_guess", out_tree, tree, has_aux)

    def linearize_and_solve(x, b):  # JAX's, with a JVP of f for its linearization
        g = _jvp_in_x(lambda *xs: pytrees.tree_leaves(f(pytrees.tree_unflatten(tree, xs))),
                      pytrees.tree_leaves(x))
        return tangent_solve(lambda v: pytrees.tree_unflatten(tree, g(pytrees.tree_leaves(v))),
                             b)

    l_and_s_jaxpr, l_and_s_consts, l_and_s_tree = _trace_body(
        linearize_and_solve, pytrees.tree_structure((initial_guess, initial_guess)),
        guess_avals + guess_avals)
    _check_tree("tangent_solve", "x", l_and_s_tree, tree)
    all_consts = [f_consts, solve_consts, l_and_s_consts]
    outs = _custom_root(_RootTuple(*(len(c) for c in all_consts)),
                        _RootTuple(f_jaxpr, solve_jaxpr, l_and_s_jaxpr), tangent_solve, tree,
                        *_flatten(all_consts), *guess_flat)
    return pytrees.tree_unflatten(out_tree, outs)


def _jvp_in_x(f_flat, x):
    """v -> df/dx(x) v over flat lists; v takes x's dtypes (tangent_solve may pass 1.0)."""
    def g(v):
        v = [_cast(_operand(t), get_aval(s).dtype) for t, s in zip(v, x, strict=True)]
        _, out = ad.jvp_flat(f_flat, x, v)
        return [ad.instantiate(o) for o in out]
    return g


def _custom_root_fun(const_lengths, jaxprs, tangent_solve, tree, *args):
    (_, solve_consts, _), guess = _split(args, const_lengths)
    return eval_closed(jaxprs.solve, *solve_consts, *guess)


_custom_root = custom_jvp(_custom_root_fun, nondiff_argnums=(0, 1, 2, 3))


def _root_jvp(const_lengths, jaxprs, tangent_solve, tree, primals, tangents):
    # f(theta, x*(theta)) = 0  =>  df/dx x_dot = -df/dtheta theta_dot.
    sol = _custom_root(const_lengths, jaxprs, tangent_solve, tree, *primals)
    n = tree.num_leaves
    solution = sol[:n]
    aux_zeros = [SymbolicZero(ad.tangent_aval(get_aval(a))) for a in sol[n:]]
    (params, _, l_and_s_params), _ = _split(primals, const_lengths)
    (params_dot, _, _), _ = _split(tangents, const_lengths)
    params_dot = [Zero(t.aval) if type(t) is SymbolicZero else t for t in params_dot]
    f = jaxprs.f
    _, rhs = ad.jvp_flat(lambda *ps: eval_closed(f, *ps, *solution), params, params_dot)
    if all(type(r) is Zero for r in rhs):
        return sol, [SymbolicZero(ad.tangent_aval(get_aval(x))) for x in solution] + aux_zeros
    rhs = [ad.instantiate(r) for r in rhs]
    b_avals = [get_aval(r) for r in rhs]
    # The tangent takes x_dot's types from b; JAX's custom_jvp check would reject others.
    got, want = ([a.strip_weak_type().str_short() for a in avals]
                 for avals in (jaxprs.l_and_s.out_avals, b_avals))
    if got != want:
        raise TypeError(f"tangent_solve() output shapes and dtypes must match x's tangents, "
                        f"got {got} and {want}")
    # The solve x = tangent_solve(g, rhs) as a custom_linear_solve of matvec g, which
    # forward mode differentiates through f, not tangent_solve; `transpose` serves reverse mode.
    matvec = _matvec_program(f, [get_aval(x) for x in params + solution], b_avals)
    lengths = _LinearSolveTuple(len(params) + n, 0, len(l_and_s_params) + n, 0)
    programs = _LinearSolveTuple(matvec, None, jaxprs.l_and_s, None)
    x_dot = linear_solve_p.bind(
        *params, *solution, *l_and_s_params, *solution, *rhs, const_lengths=lengths,
        jaxprs=programs, transpose=_root_transpose(lengths, programs, tangent_solve, tree))
    return sol, [lax.neg(t) for t in x_dot] + aux_zeros


_custom_root.defjvp(_root_jvp, symbolic_zeros=True)


def _matvec_program(f, in_avals, v_avals):
    """(f's consts, x, v) -> df/dx(x) v as a program; `in_avals` are those of f's inputs."""
    k, n = len(in_avals), len(v_avals)

    def matvec(*args):
        consts, x, v = args[:k - n], args[k - n:k], args[k:]
        return _jvp_in_x(lambda *xs: eval_closed(f, *consts, *xs), x)(v)
    return pe.trace_to_program(matvec, list(in_avals) + list(v_avals))


def _root_transpose(const_lengths, jaxprs, tangent_solve, tree):
    """The `transpose` of the root's tangent system x = tangent_solve(g, b)."""
    from gpuarr.ad_api import linear_transpose

    def transpose_tangent_solve(consts, cts):  # x cotangents -> b cotangents
        params, _ = _split_solve_args(consts, const_lengths)
        try:  # as JAX: transpose tangent_solve, linear in b
            return list(linear_transpose(
                lambda *b: eval_closed(jaxprs.solve, *params.solve, *b), *cts)(list(cts)))
        except (NotImplementedError, TypeError, ValueError):
            # tangent_solve has no transpose (a while_loop, whose transpose raises JAX's
            # ValueError; a custom_linear_solve without transpose_solve): solve g^T y = ct
            # with it, in a custom_linear_solve.
            def matvec(v):
                out = eval_closed(jaxprs.matvec, *params.matvec, *pytrees.tree_leaves(v))
                return pytrees.tree_unflatten(tree, out)

            ct = pytrees.tree_unflatten(tree, cts)
            vecmat = linear_transpose(matvec, ct)
            y = custom_linear_solve(lambda v: vecmat(v)[0], ct, tangent_solve, tangent_solve)
            return pytrees.tree_leaves(y)
    return transpose_tangent_solve


def _cast(x, dtype):
    return x if get_aval(x).dtype == dtype else conversions.convert_element_type(x, dtype)
