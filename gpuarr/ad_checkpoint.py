"""Rematerialisation: `checkpoint` (alias `remat`), as jax.checkpoint / jax.ad_checkpoint.

The wrapped function is bound as one `remat2` equation (the name JAX prints). Its
partial-evaluation rule, used when linearizing, saves only the values the policy allows
(by default just the inputs) and stages a `remat2` equation into the linear Program that
recomputes everything else; that equation's transpose linearizes its body again, so the
primal work is redone during the backward pass instead of being kept in memory. Control flow
in the body (scan, cond, while) is first split into known and unknown equations by its own
partial-evaluation rules.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from gpuarr import impls, pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Program,
    Var,
    abstract_eval_rules,
    eval_program,
    get_aval,
    weak_type_rules,
)
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name"]

remat_p = Primitive("remat2", multiple_results=True)


def _remat_impl(*args, jaxpr, prevent_cse, differentiated, policy):
    args = [np.asarray(a, v.dtype) if not isinstance(a, np.ndarray) else a
            for a, v in zip(args, jaxpr.in_avals, strict=True)]
    return impls.compile_closed(jaxpr)(*args)


impls.impl_rules[remat_p] = _remat_impl
abstract_eval_rules[remat_p] = lambda *avals, jaxpr, **_: list(jaxpr.out_avals)
weak_type_rules[remat_p] = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    jvp_prog = ad.jvp_program(jaxpr, nonzeros)
    nz = [t for t in tangents if type(t) is not Zero]
    outs = remat_p.bind(*primals, *nz, differentiated=True, jaxpr=jvp_prog, policy=policy,
                        prevent_cse=prevent_cse)
    n = len(jaxpr.out_avals)
    return outs[:n], outs[n:]


def _remat_batch(axis_size, vals, dims, *, differentiated, jaxpr, policy, prevent_cse):
    batched = batching.batch_program(jaxpr, axis_size, tuple(dims))
    outs = remat_p.bind(*vals, differentiated=differentiated, jaxpr=batched, policy=policy,
                        prevent_cse=prevent_cse)
    return outs, [0] * len(outs)


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    # Split the body by which inputs are linear: the known (primal) part is recomputed
    # here, during the backward pass, and the linear part is transposed.
    undefined = [ad.is_undefined(a) for a in args]
    known, unknown, out_unknowns, num_res = pe.partial_eval_program(jaxpr.program, undefined)
    known_vals = eval_program(known, jaxpr.consts, [a for a in args if not ad.is_undefined(a)])
    res_vals = known_vals[len(known_vals) - num_res:]
    linear = ClosedProgram(Program(unknown.invars[:num_res], unknown.invars[num_res:],
                                   unknown.eqns, unknown.outvars), res_vals)
    cts = [ct for ct, u in zip(cts, out_unknowns, strict=True) if u]
    cts_in = iter(ad.backward_pass(linear, cts))
    return [next(cts_in) if u else None for u in undefined]


def _saveable(policy, eqn) -> bool:
    if policy is None:
        return False
    return bool(policy(eqn.prim, *[a.aval for a in eqn.inputs], **eqn.params))


def _split_nested(closed: ClosedProgram, unknown) -> ClosedProgram:
    """`closed` with each equation that mixes known and unknown values (a scan carrying
    primal and tangent values, a cond, a nested call) split by its own partial-evaluation
    rule into a known equation and an unknown one, so that the split by dataflow below can
    save or recompute the known part."""
    known, unk, out_uk, _, n_res = pe.partial_eval_closed(closed, unknown,
                                                          [False] * len(closed.out_avals))
    invars = [Var(a) for a in closed.in_avals]
    k_prog, u_prog = known.program, unk.program
    rename = dict(zip((v.id for v in k_prog.invars),
                      (v for v, u in zip(invars, unknown, strict=True) if not u), strict=True))
    k_eqns = [pe._rename_eqn(e, rename) for e in k_prog.eqns]
    k_outs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in k_prog.outvars]
    res = k_outs[len(k_outs) - n_res:]
    rename = dict(zip((v.id for v in u_prog.invars),
                      res + [v for v, u in zip(invars, unknown, strict=True) if u], strict=True))
    u_eqns = [pe._rename_eqn(e, rename) for e in u_prog.eqns]
    u_outs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in u_prog.outvars]
    k_it, u_it = iter(k_outs), iter(u_outs)
    outs = [next(u_it) if u else next(k_it) for u in out_uk]
    return ClosedProgram(Program(k_prog.constvars + u_prog.constvars, invars, k_eqns + u_eqns,
                                 outs), list(known.consts) + list(unk.consts))


def _remat_partial_eval(trace, args, params):
    """Known outputs are computed now; the unknown ones are staged as a `remat2` equation
    that recomputes every known intermediate the policy does not save."""
    unknown = [type(a) is pe.StagingTracer and a._trace is trace for a in args]
    jaxpr, policy = _split_nested(params["jaxpr"], unknown), params["policy"]
    prog = jaxpr.program
    known_eqns, unknown_eqns, unknown_ids = pe.split_eqns(prog, unknown)
    producer = {v.id: e for e in known_eqns for v in e.outvars}
    # Residuals: known values read by the unknown side. A residual made by an equation
    # the policy does not save is recomputed (with whatever it needs) on the unknown side.
    saved, recompute, seen = [], set(), set()

    def need(atom):
        if not isinstance(atom, Var) or atom.id in unknown_ids or atom.id in seen:
            return
        seen.add(atom.id)
        eqn = producer.get(atom.id)
        if eqn is None or _saveable(policy, eqn):
            saved.append(atom)
            return
        recompute.add(id(eqn))
        for a in eqn.inputs:
            need(a)

    for eqn in unknown_eqns:
        for a in eqn.inputs:
            need(a)
    # Known side: run now on the parent (concretely, or staged into an outer jit).
    known_ins = [v for v, u in zip(prog.invars, unknown, strict=True) if not u]
    known_outs = [a for a in prog.outvars if not (isinstance(a, Var) and a.id in unknown_ids)]
    known_prog, _ = pe.dce_program(
        Program(prog.constvars, known_ins, known_eqns, known_outs + saved))
    known_vals = eval_program(known_prog, jaxpr.consts,
                              [a for a, u in zip(args, unknown, strict=True) if not u])
    known_out_vals, saved_vals = known_vals[:len(known_outs)], known_vals[len(known_outs):]
    # Unknown side: saved residuals and unknown inputs in, unknown outputs out.
    res_vars = [Var(v.aval) for v in saved]
    rename = {v.id: r for v, r in zip(saved, res_vars, strict=True)}
    recompute.update(id(e) for e in unknown_eqns)
    body = [e for e in prog.eqns if id(e) in recompute]
    body = [pe._rename_eqn(e, rename) for e in body]
    unknown_outs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in prog.outvars
                    if isinstance(a, Var) and a.id in unknown_ids]
    unknown_ins = [v for v, u in zip(prog.invars, unknown, strict=True) if u]
    unk_prog = Program([], res_vars + unknown_ins, body, unknown_outs)
    unk_prog, _ = pe.dce_program(unk_prog)
    unk_closed = ClosedProgram(Program(prog.constvars, unk_prog.invars, unk_prog.eqns,
                                       unk_prog.outvars), jaxpr.consts)
    staged = pe.StagingTrace.process_primitive(
        trace, remat_p, list(saved_vals) + [a for a, u in zip(args, unknown) if u],
        dict(params, jaxpr=unk_closed, differentiated=True))
    it_known, it_unknown = iter(known_out_vals), iter(staged)
    return [next(it_unknown) if isinstance(a, Var) and a.id in unknown_ids else next(it_known)
            for a in prog.outvars]


ad.jvp_rules[remat_p] = _remat_jvp
ad.transpose_rules[remat_p] = _remat_transpose
batching.batch_rules[remat_p] = _remat_batch
pe.partial_eval_rules[remat_p] = _remat_partial_eval


# ---------------------------------------------------------------- policies


def _is_dot(prim) -> bool:
    return prim.name == "dot_general"


class checkpoint_policies:
    """Which intermediate values `checkpoint` may keep for the backward pass. A policy is
    `policy(prim, *avals, **params) -> bool` (True: save the primitive's output)."""

    @staticmethod
    def everything_saveable(prim, *avals, **params) -> bool:
        return True

    @staticmethod
    def nothing_saveable(prim, *avals, **params) -> bool:
        return False

    @staticmethod
    def dots_saveable(prim, *avals, **params) -> bool:
        return _is_dot(prim)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
        if not _is_dot(prim):
            return False
        (_, _), (lb, _) = params["dimension_numbers"]
        return not lb

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    # Name-based policies. `checkpoint_name` records no name in the Program, so no value is
    # ever named: these policies decide as they would for unnamed values. Results are the
    # same under any policy; only what is kept versus recomputed differs.
    @staticmethod
    def save_anything_except_these_names(*names_not_to_save) -> Callable:
        """Save every value except those named in `names_not_to_save`."""
        return checkpoint_policies.everything_saveable

    @staticmethod
    def save_any_names_but_these(*names_not_to_save) -> Callable:
        """Save named values except those in `names_not_to_save` (unnamed ones are not)."""
        return checkpoint_policies.nothing_saveable

    @staticmethod
    def save_only_these_names(*names_which_can_be_saved) -> Callable:
        """Save only the values named in `names_which_can_be_saved`."""
        return checkpoint_policies.nothing_saveable

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                          names_which_can_be_offloaded, offload_src,
                                          offload_dst) -> Callable:
        """Save (or offload to host memory) only the named values; one device memory here."""
        return checkpoint_policies.nothing_saveable

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src, offload_dst) -> Callable:
        """Keep dot products without batch dimensions (offloading is keeping, here)."""
        return checkpoint_policies.dots_with_no_batch_dims_saveable

    @staticmethod
    def save_from_both_policies(policy_1, policy_2) -> Callable:
        """Save a value when either policy would."""
        def policy(prim, *avals, **params):
            return policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params)
        return policy


class _DeprecatedArg:
    """The default of `concrete`, an argument JAX removed (any value passed is an error)."""

    def __repr__(self):
        return "Deprecated"


_DEPRECATED = _DeprecatedArg()


_CONCRETE_REMOVED = (
    "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed in "
    "JAX v0.10.0. In its place please use `static_argnums`; for details refer to "
    "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html.")


def checkpoint(fun: Callable, *, prevent_cse: bool | Sequence[bool] = True,
               policy: Callable | None = None, static_argnums: int | tuple[int, ...] = (),
               static_argnames: str | Iterable[str] = (),
               concrete: bool | _DeprecatedArg = _DEPRECATED) -> Callable:
    """Make `fun` recompute its intermediate values in the backward pass instead of storing
    them (jax.checkpoint). `policy` (see `checkpoint_policies`) names values that may be
    saved; the positional arguments at `static_argnums` and the keyword arguments named in
    `static_argnames` are passed through as Python values (Python control flow may depend on
    them); `concrete` was removed from JAX and raises NotImplementedError if passed."""
    if not isinstance(concrete, _DeprecatedArg):
        raise NotImplementedError(_CONCRETE_REMOVED)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must "
                        f"be an int, tuple of ints or, bool, but got value {static_argnums}")
    static_argnames = ((static_argnames,) if isinstance(static_argnames, str)
                       else tuple(static_argnames))
    if isinstance(prevent_cse, Sequence):
        prevent_cse = tuple(prevent_cse)
    if not isinstance(prevent_cse, (tuple, bool)):
        raise TypeError(f"prevent_cse must be a bool or tuple of bools, got "
                        f"type(prevent_cse)={type(prevent_cse)}")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        static = _static_positions(static_argnums, len(args))
        dyn = [a for i, a in enumerate(args) if i not in static]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        flat, in_tree = pytrees.tree_flatten((tuple(dyn), dyn_kwargs))

        def call(dargs, kw):
            it = iter(dargs)
            kw = {k: kw[k] if k in kw else v for k, v in kwargs.items()}  # keep the call's order
            return fun(*[a if i in static else next(it) for i, a in enumerate(args)], **kw)

        flat_fun, out_tree = pytrees.flatten_fun(call, in_tree)
        closed = pe.trace_to_program(flat_fun, [get_aval(x) for x in flat])
        closed, hoisted = pe.hoist_tracer_consts(closed)
        outs = remat_p.bind(*hoisted, *flat, differentiated=False, jaxpr=closed, policy=policy,
                            prevent_cse=prevent_cse)
        return pytrees.tree_unflatten(out_tree(), outs)

    return wrapped


def _static_positions(static_argnums, nargs) -> frozenset[int]:
    """`static_argnums` as non-negative positions of a call with `nargs` positional arguments."""
    if not all(-nargs <= d < nargs for d in static_argnums):
        raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can "
                         "only take integer values greater than or equal to `-len(args)` and "
                         f"less than `len(args)`, but got {static_argnums}, while `len(args)` "
                         f"= {nargs}")
    return frozenset(d % nargs for d in static_argnums)


def remat(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
          static_argnums: int | tuple[int, ...] = (),
          concrete: bool | _DeprecatedArg = _DEPRECATED) -> Callable:
    """Alias of `checkpoint` (jax.remat), without `static_argnames`."""
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy,
                      static_argnums=static_argnums, concrete=concrete)


def checkpoint_name(x, name):
    """Identity that names `x` for policies (names are not used by the built-in policies)."""
    return x

