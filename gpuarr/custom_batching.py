"""User-defined batching rules: `custom_vmap` and `sequential_vmap`, as in jax.custom_batching.

A decorated function is bound as one primitive, `custom_vmap_call` (JAX's `custom_vmap_p`),
whose params hold the traced function (`call`) and a batching rule over flat lists (`rule`).
Evaluating it runs `call`; under vmap the rule runs instead; under jit it stays one equation.

Differentiation follows JAX's `custom_vmap_jvp`: the JVP of the equation is another
`custom_vmap_call` whose program is the JVP of `call` and whose rule is the JVP of its rule,
so vmap of jvp still uses the user's rule. JAX stops there; here reverse mode works too.
Partial evaluation (linearize) splits that JVP equation into the primal call, evaluated now,
and an equation for the tangents alone, staged into the linear Program; transposing that one
gives a third equation computing the VJP of `call`, whose rule is the VJP of the user's rule.
So vmap(grad(f)) batches both passes with the user's rule, and grad(f) differentiates `f` as
written. `sequential_vmap`'s rule loops over the examples, and so do the rules of its JVP and
VJP equations.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from gpuarr import dtypes, impls, pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Program,
    abstract_eval_rules,
    eval_closed,
    get_aval,
    set_current_trace,
    weak_type_rules,
)
from gpuarr.custom_derivatives import _eager, _name, _resolve_args, _signature, _trace_flat
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped

__all__ = ["custom_vmap", "sequential_vmap"]

# ---------------------------------------------------------------- the primitive

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)


def _custom_vmap_impl(*args, call, rule):
    # Python scalars reach impl rules as they are; the compiled Program wants NumPy values.
    args = [a if isinstance(a, np.ndarray) else np.asarray(a, aval.dtype)
            for a, aval in zip(args, call.in_avals, strict=True)]
    return impls.compile_closed(call)(*args)


impls.impl_rules[custom_vmap_call_p] = _custom_vmap_impl
abstract_eval_rules[custom_vmap_call_p] = lambda *avals, call, rule: list(call.out_avals)
weak_type_rules[custom_vmap_call_p] = lambda *args, call, rule: [
    a.weak_type for a in call.out_avals]


def _is_inexact(aval) -> bool:
    return dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)


def _unknown(trace, x) -> bool:
    return type(x) is pe.StagingTracer and x._trace is trace


# ---------------------------------------------------------------- batching rules over flat lists
# Every rule is called as `rule(axis_size, in_batched, vals) -> (outs, out_batched)`, with
# flat lists and batched values carrying their batch axis first. Each rule belongs to one
# `call` Program. The equations derived from it (its JVP, the tangent part of that JVP, the
# transpose of the tangent part) get rules made by `make_rule`; the rule of a derived
# equation records what it was derived from in `form`, which partial evaluation and
# transposition read. A derived rule returns None where it cannot apply (a closed-over value
# would be batched), and the equation's Program is then batched as written.


class _Form(NamedTuple):
    kind: str         # "jvp": primal and tangent outputs; "tangents": the inexact tangents only
    call: ClosedProgram  # the function differentiated
    rule: _Rule       # its rule
    nonzeros: tuple   # which of its inputs have a tangent input


class _Rule:
    fixed = 0  # how many leading inputs must stay unbatched (values the function closes over)
    form: _Form | None = None

    def __init__(self, name: str):
        self.__name__ = name
        self._derived: dict = {}

    def derived(self, key, make):
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = make()
        return found

    def make_rule(self, kind, derived_call, form=None, diff=()):
        """The rule of an equation derived from this one: "jvp" and "tangents" (`form` says
        of what), or "transpose" (the VJP with respect to the inputs at `diff`)."""
        if kind == "transpose":
            return _VjpRule(self, diff, form.call)
        return _JvpRule(form.call, self, form.nonzeros, tangents_only=kind == "tangents")

    def __repr__(self):
        return self.__name__


def _jvp_form(call, rule, nonzeros):
    """(call, rule) of the JVP: inputs the primals then the tangents marked in `nonzeros`,
    outputs the primal outputs then every tangent output."""
    def make():
        jvp_call = ad.jvp_program(call, nonzeros)
        form = _Form("jvp", call, rule, nonzeros)
        jvp_rule = rule.make_rule("jvp", jvp_call, form)
        jvp_rule.form = form
        return jvp_call, jvp_rule
    return rule.derived(("jvp", nonzeros), make)


def _tangent_form(call, rule, nonzeros):
    """(call, rule) of the tangent part of the JVP: the same inputs, and the tangents of the
    inexact outputs."""
    def make():
        jvp_call = ad.jvp_program(call, nonzeros)
        n_out = len(call.out_avals)
        used = [False] * n_out + [_is_inexact(a) for a in call.out_avals]
        prog, _ = pe.dce_program(jvp_call.program, used)
        t_call = ClosedProgram(prog, jvp_call.consts)
        form = _Form("tangents", call, rule, nonzeros)
        t_rule = rule.make_rule("tangents", t_call, form)
        t_rule.form = form
        return t_call, t_rule
    return rule.derived(("tangents", nonzeros), make)


def _transpose_form(form, diff):
    """(call, rule) of the transpose of a tangent part with respect to the tangents of the
    primals at positions `diff`: inputs are the primals and the cotangents of the inexact
    outputs, outputs the cotangents of those primals."""
    def make():
        vjp_call = _vjp_program(form.call, diff)
        return vjp_call, form.rule.make_rule("transpose", vjp_call, form, diff)
    return form.rule.derived(("transpose", diff), make)


def _out_cotangents(call, cts):
    """Cotangents for every output of `call` from those of its inexact outputs."""
    it = iter(cts)
    return [next(it) if _is_inexact(a) else Zero(ad.tangent_aval(a)) for a in call.out_avals]


def _vjp_program(call, diff):
    n = len(call.in_avals)
    ct_avals = [ad.tangent_aval(a) for a in call.out_avals if _is_inexact(a)]

    def fun(*xs):
        primals, cts = list(xs[:n]), xs[n:]

        def of_diff(*dx):
            full = list(primals)
            for i, d in zip(diff, dx):
                full[i] = d
            return eval_closed(call, *full)

        _, pullback = ad.vjp_flat(of_diff, [primals[i] for i in diff])
        return [ad.instantiate(c) for c in pullback(_out_cotangents(call, cts))]

    return pe.trace_to_program(fun, list(call.in_avals) + ct_avals)


class _UserRule(_Rule):
    """The user's `rule(axis_size, in_batched, *args) -> (out, out_batched)` over flat lists;
    the first `fixed` inputs are closed-over values the rule does not see."""

    def __init__(self, rule, n_consts, in_tree, out_tree):
        super().__init__(_name(rule))
        self.rule, self.fixed, self.in_tree, self.out_tree = rule, n_consts, in_tree, out_tree

    def __call__(self, axis_size, in_batched, vals):
        if any(in_batched[:self.fixed]):
            raise ValueError(
                f"custom_vmap function with rule {self.__name__} closes over a value that an "
                "enclosing vmap batches; its rule cannot see that value. Pass it to the "
                "function as an explicit argument instead.")
        args = pytrees.tree_unflatten(self.in_tree, list(vals[self.fixed:]))
        batched = pytrees.tree_unflatten(self.in_tree, list(in_batched[self.fixed:]))
        out, out_batched = self.rule(axis_size, list(batched), *args)
        flat_out, tree = pytrees.tree_flatten(out)
        flat_batched, batched_tree = pytrees.tree_flatten(out_batched)
        # JAX's messages (custom_batching.check_vmap_rule_trees).
        if tree != batched_tree:
            raise ValueError(
                "structure of output value and output batching specification returned by "
                f"custom vmap rule ({self.__name__}) do not match.\n"
                f"Output values: {tree}\nBatching spec: {batched_tree}")
        if tree != self.out_tree:
            raise ValueError(
                f"structure of output returned by custom vmap rule ({self.__name__}) does not "
                "match that of original custom-vmapped function.\n"
                f"Original output: {self.out_tree}\nRule output: {tree}")
        return flat_out, [bool(b) for b in flat_batched]


class _JvpRule(_Rule):
    """The rule of the JVP of `call` (or of its tangent part, `tangents_only`): the JVP of
    `rule`. Where only one of a primal and its tangent is batched, the other is batched too
    first, so the rule sees every batched input. (JAX's `jvp_of_rule_rule` instead vmaps the
    rule's JVP over those inputs, which calls the rule with nothing batched when no input is
    batched in both, and stacks the two batches as an outer product when some are.)"""

    def __init__(self, call, rule, nonzeros, tangents_only=False):
        super().__init__(f"jvp({rule.__name__})")
        self.call, self.rule, self.nonzeros, self.tangents_only = call, rule, nonzeros, tangents_only
        self.fixed = rule.fixed

    def __call__(self, axis_size, in_batched, vals):
        n, nonzeros = len(self.nonzeros), self.nonzeros
        flags = iter(in_batched[n:])
        t_batched = [next(flags) if nz else False for nz in nonzeros]
        if any(in_batched[:self.fixed]) or any(t_batched[:self.fixed]):
            return None
        primals, batched = list(vals[:n]), list(in_batched[:n])
        tans, tangents = iter(vals[n:]), []
        for i, (p, nz) in enumerate(zip(primals, nonzeros)):
            if not nz:
                tangents.append(Zero(ad.tangent_aval(get_aval(p))))
                continue
            t = next(tans)
            if t_batched[i] and not batched[i]:
                primals[i], batched[i] = batching.move_to(p, not_mapped, 0, axis_size), True
            elif batched[i] and not t_batched[i]:
                t = batching.move_to(t, not_mapped, 0, axis_size)
            tangents.append(t)
        rule_batched = []

        def of_primals(*xs):
            outs, out_batched = self.rule(axis_size, batched, list(xs))
            rule_batched[:] = out_batched
            return outs

        outs, touts = ad.jvp_flat(of_primals, primals, tangents)
        touts = [ad.instantiate(t) for t in touts]
        if self.tangents_only:
            keep = [i for i, a in enumerate(self.call.out_avals) if _is_inexact(a)]
            return [touts[i] for i in keep], [rule_batched[i] for i in keep]
        return outs + touts, rule_batched + rule_batched


class _VjpRule(_Rule):
    """The rule of the VJP of `call` with respect to its inputs at `diff`: the VJP of the
    batched function that `rule` computes. Each example needs its own cotangent, so the
    differentiated inputs and the output cotangents are all batched first."""

    def __init__(self, rule, diff, call):
        super().__init__(f"transpose({rule.__name__})")
        self.rule, self.diff, self.call = rule, diff, call
        self.fixed = rule.fixed

    def __call__(self, axis_size, in_batched, vals):
        n, diff = len(self.call.in_avals), self.diff
        if any(i < self.fixed for i in diff) or any(in_batched[:self.fixed]):
            return None
        primals = [batching.move_to(v, not_mapped, 0, axis_size) if i in diff and not b else v
                   for i, (v, b) in enumerate(zip(vals[:n], in_batched[:n]))]
        flags = [b or i in diff for i, b in enumerate(in_batched[:n])]
        cts = [c if b else batching.move_to(c, not_mapped, 0, axis_size)
               for c, b in zip(vals[n:], in_batched[n:])]

        def of_diff(*dx):
            full = list(primals)
            for i, d in zip(diff, dx):
                full[i] = d
            outs, out_batched = self.rule(axis_size, flags, full)
            return [o if b else batching.move_to(o, not_mapped, 0, axis_size)
                    for o, b in zip(outs, out_batched)]

        _, pullback = ad.vjp_flat(of_diff, [primals[i] for i in diff])
        cts_in = pullback(_out_cotangents(self.call, cts))
        return [ad.instantiate(c) for c in cts_in], [True] * len(diff)


def _sequential_loop(fun, in_batched, vals):
    """`fun` applied to one example at a time, stacked: a scan over the batched `vals`
    (batch axis first), the unbatched ones passed to every step."""
    from gpuarr.lax import control_flow, extras

    def step(i, xs):
        # Tying each step to the loop counter keeps the call in the loop: the NumPy backend
        # would otherwise batch it out of the loop with this very rule, again and again.
        i, xs = extras.optimization_barrier((i, xs))
        it = iter(xs)
        return i, fun(*[next(it) if b else v for v, b in zip(vals, in_batched, strict=True)])

    _, ys = control_flow.scan(step, np.int32(0), [v for v, b in zip(vals, in_batched) if b])
    return list(ys)


class _SequentialRule(_Rule):
    """sequential_vmap's rule for `call`: a loop binding `call` once per example. The rules
    of its JVP and transpose loop the same way over their own Programs."""

    def __init__(self, call, name):
        super().__init__(name)
        self.call = call

    def __call__(self, axis_size, in_batched, vals):
        def one(*xs):
            return custom_vmap_call_p.bind(*xs, call=self.call, rule=self)

        outs = _sequential_loop(one, in_batched, vals)
        return outs, [True] * len(outs)

    def make_rule(self, kind, derived_call, form=None, diff=()):
        return _SequentialRule(derived_call, f"{kind}({self.__name__})")


# ---------------------------------------------------------------- rules of custom_vmap_call


def _custom_vmap_batch(axis_size, vals, dims, *, call, rule):
    vals = [v if d is not_mapped else batching.move_to(v, d, 0, axis_size)
            for v, d in zip(vals, dims, strict=True)]
    in_batched = [d is not not_mapped for d in dims]
    result = rule(axis_size, in_batched, vals)
    if result is None:
        # The derived rule cannot apply: batch the equation's Program as written.
        outs, out_dims = batching.batch_flat(lambda *xs: eval_closed(call, *xs), axis_size,
                                             vals, [0 if b else not_mapped for b in in_batched])
        return outs, out_dims
    outs, out_batched = result
    for o, b, aval in zip(outs, out_batched, call.out_avals, strict=True):
        want = ((axis_size,) if b else ()) + aval.shape
        shape = tuple(get_aval(o).shape)
        if shape != want:
            state = "batched" if b else "unbatched"
            raise ValueError(f"custom vmap rule ({rule.__name__}) returned an output of shape "
                             f"{shape} marked {state}; with axis size {axis_size} "
                             f"the function's output of shape {aval.shape} needs {want}.")
    return outs, [0 if b else not_mapped for b in out_batched]


def _custom_vmap_jvp(primals, tangents, *, call, rule):
    nonzeros = tuple(type(t) is not Zero and get_aval(t).dtype != dtypes.float0
                     for t in tangents)
    jvp_call, jvp_rule = _jvp_form(call, rule, nonzeros)
    nz_tangents = [t for t, nz in zip(tangents, nonzeros) if nz]
    outs = custom_vmap_call_p.bind(*primals, *nz_tangents, call=jvp_call, rule=jvp_rule)
    n = len(call.out_avals)
    return outs[:n], [t if _is_inexact(a) else Zero(ad.tangent_aval(a))
                      for t, a in zip(outs[n:], call.out_avals, strict=True)]


def _custom_vmap_partial_eval(trace, args, params):
    form = params["rule"].form
    if form is not None and form.kind == "jvp":
        n = len(form.nonzeros)
        if not any(_unknown(trace, x) for x in args[:n]):
            # Known primals: the primal call runs now (with its rule under an outer vmap);
            # the tangents are one equation of the linear Program.
            with set_current_trace(trace.parent):
                primal_outs = custom_vmap_call_p.bind(*args[:n], call=form.call, rule=form.rule)
            t_call, t_rule = _tangent_form(form.call, form.rule, form.nonzeros)
            t_outs = iter(pe.StagingTrace.process_primitive(
                trace, custom_vmap_call_p, list(args), {"call": t_call, "rule": t_rule}))
            return list(primal_outs) + [
                next(t_outs) if _is_inexact(a) else ad.instantiate(Zero(ad.tangent_aval(a)))
                for a in form.call.out_avals]
    return pe.StagingTrace.process_primitive(trace, custom_vmap_call_p, args, params)


def _custom_vmap_transpose(cts, *args, call, rule):
    undefined = [ad.is_undefined(a) for a in args]
    form = rule.form
    if form is not None and form.kind == "tangents":
        n = len(form.nonzeros)
        if not any(undefined[:n]):
            positions = [i for i, nz in enumerate(form.nonzeros) if nz]
            diff = tuple(i for i, u in zip(positions, undefined[n:]) if u)
            vjp_call, vjp_rule = _transpose_form(form, diff)
            cts = [ad.instantiate(c) for c in cts]
            outs = iter(custom_vmap_call_p.bind(*args[:n], *cts, call=vjp_call, rule=vjp_rule))
            return [None] * n + [next(outs) if u else None for u in undefined[n:]]
    # Some other linear use: transpose the Program as written.
    prog = call.program
    lin_vars = [v for v, u in zip(prog.invars, undefined) if u]
    known_vars = [v for v, u in zip(prog.invars, undefined) if not u]
    known = [a for a in args if not ad.is_undefined(a)]
    linear = ClosedProgram(Program(prog.constvars + known_vars, lin_vars, prog.eqns,
                                   prog.outvars), list(call.consts) + known)
    cts_in = iter(ad.backward_pass(linear, list(cts)))
    return [next(cts_in) if u else None for u in undefined]


batching.batch_rules[custom_vmap_call_p] = _custom_vmap_batch
ad.jvp_rules[custom_vmap_call_p] = _custom_vmap_jvp
pe.partial_eval_rules[custom_vmap_call_p] = _custom_vmap_partial_eval
ad.transpose_rules[custom_vmap_call_p] = _custom_vmap_transpose


# ---------------------------------------------------------------- the decorators


class custom_vmap:
    """Customize how `fun` batches: `@f.def_vmap` takes `rule(axis_size, in_batched, *args)
    -> (out, out_batched)`, where `in_batched` is a list with one pytree of bools per argument
    (whether it carries a leading batch axis of size `axis_size`) and `out_batched` a pytree
    of bools matching `out`. Outside vmap the function runs as written; under vmap (nested,
    of jit, under jit) the rule runs instead, as jax.custom_batching.custom_vmap. jvp uses the
    JVP of the rule under vmap; grad differentiates `fun` (JAX has no reverse mode here)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.__name__ = _name(fun)  # callable objects have none for update_wrapper to copy
        self.fun = fun
        self.vmap_rule = None
        self._signature = _signature(fun)

    def __getattr__(self, name):
        # Attributes of the wrapped function show through, as JAX's forward_attr.
        return getattr(object.__getattribute__(self, "fun"), name)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Register the batching rule `vmap_rule(axis_size, in_batched, *args) -> (out,
        out_batched)` and return it unchanged."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        try:
            args = _resolve_args(self._signature, args, kwargs)
        except TypeError as e:
            raise TypeError(
                "The input arguments to the custom_vmap-decorated function "
                f"{self.__name__} could not be resolved to positional-only arguments. "
                f"Binding failed with the error:\n{e}") from e
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function "
                                 f"{self.__name__} using def_vmap.")
        if _eager():
            return pytrees.tree_map(_as_array, self.fun(*args))
        flat_args, in_tree = pytrees.tree_flatten(args)
        flat_fun, out_tree = pytrees.flatten_fun(self.fun, in_tree)
        closed, hoisted = _trace_flat(flat_fun, flat_args)
        if getattr(self.vmap_rule, "sequential", False):
            rule = _SequentialRule(closed, _name(self.vmap_rule))
        else:
            rule = _UserRule(self.vmap_rule, len(hoisted), in_tree, out_tree())
        outs = custom_vmap_call_p.bind(*hoisted, *flat_args, call=closed, rule=rule)
        return pytrees.tree_unflatten(out_tree(), outs)


def _as_array(x):
    # Outputs are arrays, as when JAX evaluates the traced function (Python scalars weak).
    from gpuarr.array import Array
    from gpuarr.dispatch import wrap
    if type(x) is Array:
        return x
    aval = get_aval(x)
    return wrap(np.asarray(x, aval.dtype), aval.weak_type)


def sequential_vmap(f: Callable) -> custom_vmap:
    """A `custom_vmap` whose rule loops: under vmap, `f` runs once per example in a scan over
    the batched arguments (the unbatched ones are passed to every call), and every output is
    batched; nested vmap nests the loops, and jvp or grad under vmap loop over per-example
    derivatives. For functions with no batched form of their own, as
    jax.custom_batching.sequential_vmap."""
    f = custom_vmap(f)

    @f.def_vmap
    def sequential_rule(axis_size, in_batched, *args):
        flat, in_tree = pytrees.tree_flatten(args)
        flat_batched = pytrees.tree_leaves(in_batched)
        out_trees = []

        def one(*xs):
            leaves, tree = pytrees.tree_flatten(f(*pytrees.tree_unflatten(in_tree, xs)))
            out_trees[:] = [tree]
            return leaves

        outs = _sequential_loop(one, flat_batched, flat)
        out = pytrees.tree_unflatten(out_trees[0], outs)
        return out, pytrees.tree_map(lambda _: True, out)

    # Calls of `f` bind a `_SequentialRule`, which loops the same way over the traced
    # function and gives its derivatives sequential rules too.
    sequential_rule.sequential = True
    return f
