"""User-defined derivative rules: `custom_jvp` and `custom_vjp`, as in jax.custom_derivatives.

A decorated function is bound as one primitive (`custom_jvp_call` / `custom_vjp_call`) whose
params hold the traced primal function and the user's rules. Evaluating it runs the primal
function; its JVP rule calls the user's rule; under vmap both the function and the rules are
batched; under jit it stays one equation of the Program. For custom_vjp, the JVP rule runs
`fwd` and emits a `custom_lin` equation on the tangents whose transpose calls `bwd` with the
residuals: linearize stages it into the linear Program, and `backward_pass` transposes it.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuarr import core, dispatch, dtypes, impls, pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    abstract_eval_rules,
    current_trace,
    eval_closed,
    eval_program,
    get_aval,
    weak_type_rules,
)
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "custom_gradient",
           "closure_convert", "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]

# ---------------------------------------------------------------- shared helpers


def _eager() -> bool:
    from gpuarr.dispatch import eval_trace
    return current_trace() is eval_trace


def _split_nondiff(args, nondiff_argnums):
    """(static args in order, the remaining args, and a function merging them back)."""
    nondiff = tuple(args[i] for i in nondiff_argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

    def merge(dargs):
        it = iter(dargs)
        return tuple(args[i] if i in nondiff_argnums else next(it) for i in range(len(args)))

    return nondiff, diff, merge


def _signature(fun):
    """`fun`'s signature and how many positional parameters it has (None: not inspectable)."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return None
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return sig, len(positional)


def _nondiff_positions(fun, argnums, argnames) -> tuple:
    """`nondiff_argnums` joined by the positions of the parameters `nondiff_argnames` names
    (arguments given by keyword are made positional before the rules see them)."""
    argnums = tuple(argnums)
    if isinstance(argnames, str):
        argnames = (argnames,)
    if not argnames:
        return argnums
    names = list(inspect.signature(fun).parameters)
    for name in argnames:
        if name not in names:
            raise ValueError(f"nondiff_argnames {name!r} is not a parameter of {_name(fun)}")
    return tuple(sorted(set(argnums) | {names.index(n) for n in argnames}))


def _resolve_args(found, args, kwargs):
    """Fold keyword arguments and defaults into positional ones using `found`, what
    `_signature` gave for the function, as JAX does: the rules (and nondiff_argnums) see every
    argument, given or defaulted."""
    if found is None or (not kwargs and len(args) >= found[1]):
        return tuple(args)
    bound = found[0].bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _stage(fun, args, nondiff_argnums, all_consts=False):
    """Trace `fun` over its flattened differentiable arguments (nondiff ones stay Python values).

    Returns (nondiff, merge, flat_args, in_tree, out_tree, closed, hoisted)."""
    nondiff, diff, merge = _split_nondiff(args, nondiff_argnums)
    flat_args, in_tree = pytrees.tree_flatten(diff)
    flat_fun, out_tree = pytrees.flatten_fun(lambda *diff: fun(*merge(diff)), in_tree)
    closed, hoisted = _trace_flat(flat_fun, flat_args, all_consts)
    return nondiff, merge, flat_args, in_tree, out_tree(), closed, hoisted


def _trace_flat(flat_fun, flat_args, all_consts=False):
    """Stage `flat_fun` over the avals of `flat_args`; tracer consts (with `all_consts`, every
    const, as JAX's custom_jvp passes them) become leading inputs."""
    closed = pe.trace_to_program(flat_fun, [get_aval(x) for x in flat_args])
    closed, hoisted = pe.hoist_tracer_consts(closed)
    if all_consts and closed.consts:  # constvars lead the invars, so their values lead too
        hoisted = list(closed.consts) + hoisted
        closed = ClosedProgram(pe.consts_as_inputs(closed), [])
    return closed, hoisted


def _zeros_for(aval):
    """A zero tangent value for a primal of type `aval` (float0 for integer primals)."""
    return ad.instantiate(Zero(ad.tangent_aval(aval)))


def _eval_call(*args, call_jaxpr, **_):
    # Python scalars reach impl rules as they are; the compiled Program wants NumPy values.
    args = [np.asarray(a, v.dtype) if not isinstance(a, np.ndarray) else a
            for a, v in zip(args, call_jaxpr.in_avals, strict=True)]
    return impls.compile_closed(call_jaxpr)(*args)


def _call_abstract(*avals, call_jaxpr, **_):
    return list(call_jaxpr.out_avals)


def _call_weak_types(*args, call_jaxpr, **_):
    return [a.weak_type for a in call_jaxpr.out_avals]


class _CallFun:
    """A call equation's Program as a function of all its inputs, with linear_util's
    `call_wrapped` (JAX's `subfuns[0]`)."""

    __slots__ = ("closed",)

    def __init__(self, closed):
        self.closed = closed

    def call_wrapped(self, *args):
        return core.eval_closed(self.closed, *args)

    __call__ = call_wrapped


class _CallPrimitive(Primitive):
    """custom_jvp_call and custom_vjp_call: `get_bind_params` adds JAX's `subfuns`, led by
    the call as a function of its inputs (interpreters of jaxprs such as equinox's evaluate
    it), and binding ignores them: the equation's own parameters define the call."""

    __slots__ = ()

    def get_bind_params(self, params):
        return dict(params, subfuns=(_CallFun(params["call_jaxpr"]),))

    def bind(self, *args, subfuns=None, **params):
        return super().bind(*args, **params)


# ---------------------------------------------------------------- custom_jvp

custom_jvp_call_p = _CallPrimitive("custom_jvp_call", multiple_results=True)
impls.impl_rules[custom_jvp_call_p] = _eval_call
abstract_eval_rules[custom_jvp_call_p] = _call_abstract
weak_type_rules[custom_jvp_call_p] = _call_weak_types


class SymbolicZero:
    """A zero tangent handed to a custom JVP rule defined with `symbolic_zeros=True`, so the
    rule can skip work (jax.custom_derivatives.SymbolicZero). A rule may return one too."""

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def instantiate(self):
        """An array of zeros of this tangent's shape and dtype."""
        return ad.instantiate(Zero(self.aval))

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """An input of a custom_vjp fwd rule defined with `symbolic_zeros=True`: its `value`, and
    whether it is `perturbed` (has a nonzero tangent, so its cotangent is wanted). A leaf of
    pytrees, as in JAX, so that `tree_map` over fwd's arguments sees each one whole."""

    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """`tree` with each CustomVJPPrimal replaced by its value."""
    return pytrees.tree_map(lambda x: x.value if isinstance(x, CustomVJPPrimal) else x, tree,
                              is_leaf=lambda x: isinstance(x, CustomVJPPrimal))


def zero_from_primal(val, symbolic_zeros: bool = False):
    """Zero tangents for the primal pytree `val`: SymbolicZeros if `symbolic_zeros`, else
    arrays of zeros (float0 for integer primals)."""
    def zero(x):
        aval = ad.tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else ad.instantiate(Zero(aval))
    return pytrees.tree_map(zero, val)


def _instantiate(t):
    return t.instantiate() if type(t) is SymbolicZero else ad.instantiate(t)


def _staged_operands(primals):
    """The primals a custom rule sees: under a staging trace, the literals of the Program
    being transformed (Python and NumPy scalars) as Arrays of their types, as JAX's rules see
    every input of a jitted function as an array (equinox's rules read `.shape` of each and
    partition them with `isinstance(x, jax.Array)`); eagerly, the values as given."""
    if _eager():
        return list(primals)
    out = []
    for p in primals:
        if isinstance(p, (bool, int, float, complex)):
            p = dispatch.wrap(np.asarray(p, dtypes.dtype(p, canonicalize=True)), type(p) is not bool)
        elif isinstance(p, np.generic):
            p = dispatch.wrap(np.asarray(p, dtypes.canonicalize_dtype(p.dtype)))
        out.append(p)
    return out


def _custom_jvp_call_jvp(primals, tangents, *, name, call_jaxpr, jvp, symbolic_zeros,
                         num_consts=0):
    # The constants' tangents stay symbolic: a zero one needs no work from the function.
    c_tans, tangents = list(tangents[:num_consts]), tangents[num_consts:]
    if symbolic_zeros:
        tangents = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
    else:
        tangents = [ad.instantiate(t) for t in tangents]
    tangents = c_tans + tangents
    outs, touts = jvp(_staged_operands(primals), tangents)
    touts = [Zero(ad.tangent_aval(get_aval(o)))
             if type(t) is SymbolicZero or getattr(t, "dtype", None) == dtypes.float0
             else t for o, t in zip(outs, touts, strict=True)]
    return outs, touts


def _custom_jvp_call_batch(axis_size, vals, dims, *, name, call_jaxpr, jvp, symbolic_zeros,
                           num_consts=0):
    vals = [batching.move_to(v, d, 0, axis_size) if d is not not_mapped else v
            for v, d in zip(vals, dims, strict=True)]
    in_dims = tuple(not_mapped if d is not_mapped else 0 for d in dims)
    batched_call = batching.batch_program(call_jaxpr, axis_size, in_dims)
    n_out = len(call_jaxpr.out_avals)

    def batched_jvp(primals, tangents):
        # A tangent has its primal's shape one level up, so it is batched where its primal is.
        tangents = [_instantiate(t) for t in tangents]
        t_dims = tuple(not_mapped if getattr(t, "dtype", None) == dtypes.float0 else d
                       for t, d in zip(tangents, in_dims, strict=True))
        tangents = [np.zeros(np.shape(t)[1:], dtypes.float0)
                    if getattr(t, "dtype", None) == dtypes.float0 and d is not not_mapped else t
                    for t, d in zip(tangents, in_dims, strict=True)]
        n = len(primals)

        def flat(*xs):
            p, t = jvp(list(xs[:n]), list(xs[n:]))
            return list(p) + [_instantiate(x) for x in t]

        outs, out_dims = batching.batch_flat(flat, axis_size, list(primals) + tangents,
                                             in_dims + t_dims)
        outs = [batching.move_to(o, d, 0, axis_size) if getattr(o, "dtype", None) != dtypes.float0
                else o for o, d in zip(outs, out_dims, strict=True)]
        return outs[:n_out], outs[n_out:]

    batched_jvp.__name__ = getattr(jvp, "__name__", "jvp")
    outs = custom_jvp_call_p.bind(*vals, name=name, call_jaxpr=batched_call, jvp=batched_jvp,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.batch_rules[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_jvp:
    """Give `fun` a custom forward-mode rule: `@f.defjvp` takes `rule(primals, tangents) ->
    (primal_out, tangent_out)`; `nondiff_argnums` marks arguments passed to the rule as
    leading static values. Reverse mode works through the rule too (it must be linear in the
    tangents), and the function composes with jit, vmap and grad, as jax.custom_jvp."""

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.__name__ = _name(fun)  # callable objects have none for update_wrapper to copy
        self.fun = fun
        self._signature = _signature(fun)
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Register `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: `jvps[i](g_i, primal_out, *primals)` is tangent term i
        (None for an argument whose tangent contributes nothing)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents, strict=True):
                if rule is None or getattr(t, "dtype", None) == dtypes.float0:
                    continue
                term = rule(t, out, *primals)
                total = term if total is None else pytrees.tree_map(
                    lambda a, b: a + b, total, term)
            if total is None:
                total = pytrees.tree_map(lambda o: _zeros_for(get_aval(o)), out)
            return out, total

        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 "using defjvp.")
        args = _resolve_args(self._signature, args, kwargs)
        if _eager():
            return self.fun(*args)
        nondiff, merge, flat_args, in_tree, out_tree, closed, hoisted = _stage(
            self.fun, args, self.nondiff_argnums, all_consts=True)
        jvp = _flat_jvp_rule(self, nondiff, in_tree, out_tree, closed, len(hoisted))
        # The function's constants are leading operands (num_consts of them), as in JAX.
        outs = custom_jvp_call_p.bind(*hoisted, *flat_args, name=self.__name__,
                                      call_jaxpr=closed, jvp=jvp, num_consts=len(hoisted),
                                      symbolic_zeros=self.symbolic_zeros)
        return pytrees.tree_unflatten(out_tree, outs)


def _flat_jvp_rule(cj: custom_jvp, nondiff, in_tree, out_tree, closed, n_consts):
    """The user's rule over flat lists (consts first), checking what it returns."""
    out_avals = closed.out_avals

    def jvp(primals, tangents):
        consts, c_tans = primals[:n_consts], tangents[:n_consts]
        primals, tangents = primals[n_consts:], tangents[n_consts:]
        p_tree = pytrees.tree_unflatten(in_tree, list(primals))
        t_tree = pytrees.tree_unflatten(in_tree, list(tangents))
        res = cj.jvp(*nondiff, tuple(p_tree), tuple(t_tree))
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"Custom JVP rule {_name(cj.jvp)} for function {cj.__name__} must "
                            "produce a pair (list or tuple of length two) representing primal "
                            f"and tangent outputs, but got {res}.")
        p_out, t_out = res
        p_flat, p_tree_out = pytrees.tree_flatten(p_out)
        t_flat, t_tree_out = pytrees.tree_flatten(t_out)
        if p_tree_out != out_tree:
            raise TypeError(f"Custom JVP rule {_name(cj.jvp)} for function {cj.__name__} must "
                            "produce primal outputs with equal container (pytree) structures "
                            f"to those of the primal function: {out_tree} vs {p_tree_out}.")
        if t_tree_out != p_tree_out:
            raise TypeError(f"Custom JVP rule {_name(cj.jvp)} for function {cj.__name__} must "
                            "produce primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {p_tree_out} and {t_tree_out} respectively.")
        t_flat = [t.instantiate() if type(t) is SymbolicZero and not cj.symbolic_zeros else t
                  for t in t_flat]
        _check_jvp_types([get_aval(p) for p in p_flat],
                         [t.aval if type(t) is SymbolicZero else get_aval(t) for t in t_flat],
                         out_avals)
        t_flat = [t if type(t) is SymbolicZero or get_aval(t).dtype == aval.dtype
                  or not dtypes.is_float(aval.dtype) else _cast(t, aval.dtype)
                  for t, aval in zip(t_flat, out_avals)]
        if n_consts and any(type(t) is not Zero and getattr(t, "dtype", None) != dtypes.float0
                            for t in c_tans):
            # Closed-over differentiated values: their part of the derivative comes from the
            # primal function itself (the rule only covers the explicit arguments).
            def of_consts(*cs):
                return eval_closed(closed, *cs, *primals)
            _, extra = ad.jvp_flat(of_consts, list(consts), list(c_tans))
            t_flat = [ad.add_tangents(Zero(t.aval) if type(t) is SymbolicZero else t, e)
                      for t, e in zip(t_flat, extra, strict=True)]
        return p_flat, t_flat

    jvp.__name__ = _name(cj.jvp)
    return jvp


def _check_jvp_types(p_avals, t_avals, out_avals):
    """Each tangent must have the tangent type of its primal output, shapes and dtypes
    exactly (weak types aside), as JAX checks custom JVP rules."""
    want = [ad.tangent_aval(a) for a in p_avals]
    bad = [(p, w, t) for p, w, t, o in zip(p_avals, want, t_avals, out_avals, strict=True)
           if p.shape != o.shape or t.shape != w.shape or t.dtype != w.dtype]
    if not bad:
        return
    if len(p_avals) == 1:
        (p, w, t), = bad
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {_type_str(w)} (tangent type "
                        f"of {_type_str(p)}) but got {_type_str(t)}.")
    lines = "\n".join(f"  primal {_type_str(p)} with tangent {_type_str(t)}, expecting tangent "
                      f"{_type_str(w)}" for p, w, t in bad)
    raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding "
                    f"shapes and dtypes, but got:\n{lines}")


def _cast(x, dtype):
    from gpuarr.lax import conversions as lax_conversions
    return lax_conversions.convert_element_type(x, dtype)


def _type_str(aval) -> str:
    """`float32[3]`, as JAX's messages print types (`float0[]` for float0)."""
    name = "float0" if aval.dtype == dtypes.float0 else aval.dtype.name
    return f"{name}[{','.join(map(str, aval.shape))}]"


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


# ---------------------------------------------------------------- custom_vjp

custom_vjp_call_p = _CallPrimitive("custom_vjp_call", multiple_results=True)
impls.impl_rules[custom_vjp_call_p] = _eval_call
abstract_eval_rules[custom_vjp_call_p] = _call_abstract
weak_type_rules[custom_vjp_call_p] = _call_weak_types

# The linear part of a custom_vjp function: inputs are residuals then tangents; its transpose
# calls the user's bwd. Forward-mode evaluation of it is an error, as in JAX.
custom_lin_p = Primitive("custom_lin", multiple_results=True)


def _custom_lin_impl(*args, num_res, bwd, out_avals, in_float):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_float):
    res = args[:num_res]
    cts = [Zero(ad.tangent_aval(a)) if type(c) is Zero else c
           for c, a in zip(cts, out_avals, strict=True)]
    cts_in = bwd(list(res), cts)  # zero cotangents stay Zero: bwd instantiates or keeps them
    cts_in = [c for c, f in zip(cts_in, in_float, strict=True) if f]
    return [None] * num_res + cts_in


impls.impl_rules[custom_lin_p] = _custom_lin_impl
abstract_eval_rules[custom_lin_p] = lambda *avals, num_res, bwd, out_avals, in_float: [
    ad.tangent_aval(a) for a in out_avals]
ad.transpose_rules[custom_lin_p] = _custom_lin_transpose
ad.transposed_without_cotangents.add(custom_lin_p)


def _custom_lin_jvp(primals, tangents, **params):
    _custom_lin_impl(**params)


ad.jvp_rules[custom_lin_p] = _custom_lin_jvp


def _custom_lin_batch(axis_size, vals, dims, *, num_res, bwd, out_avals, in_float):
    # Batch every input at 0; bwd then runs per example on residuals and cotangents.
    vals = [batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims, strict=True)]

    def batched_bwd(res, cts):
        cts = [ad.instantiate(c) for c in cts]

        def flat(*xs):
            return [ad.instantiate(c) if c is not None else c
                    for c in bwd(list(xs[:num_res]), list(xs[num_res:]))]

        outs, out_dims = batching.batch_flat(flat, axis_size, list(res) + list(cts),
                                             (0,) * (len(res) + len(cts)))
        return [o if o is None else batching.move_to(o, d, 0, axis_size)
                for o, d in zip(outs, out_dims, strict=True)]

    batched_bwd.__name__ = _name(bwd)
    avals = tuple(a.update(shape=(axis_size,) + a.shape) for a in out_avals)
    outs = custom_lin_p.bind(*vals, num_res=num_res, bwd=batched_bwd, out_avals=avals,
                             in_float=in_float)
    return outs, [0] * len(outs)


batching.batch_rules[custom_lin_p] = _custom_lin_batch


def _custom_vjp_call_jvp(primals, tangents, *, name, bwd, call_jaxpr, fwd, symbolic_zeros):
    outs, res = fwd(_staged_operands(primals), [type(t) is not Zero for t in tangents])
    in_float = tuple(ad.tangent_aval(get_aval(p)).dtype != dtypes.float0 for p in primals)
    tans = [ad.instantiate(t) for t, f in zip(tangents, in_float, strict=True) if f]
    out_avals = tuple(get_aval(o).strip_weak_type() for o in outs)
    touts = custom_lin_p.bind(*res, *tans, num_res=len(res), bwd=bwd, out_avals=out_avals,
                              in_float=in_float)
    touts = [Zero(ad.tangent_aval(a)) if ad.tangent_aval(a).dtype == dtypes.float0 else t
             for t, a in zip(touts, out_avals, strict=True)]
    return outs, touts


def _custom_vjp_call_batch(axis_size, vals, dims, *, name, bwd, call_jaxpr, fwd, symbolic_zeros):
    vals = [batching.move_to(v, d, 0, axis_size) if d is not not_mapped else v
            for v, d in zip(vals, dims, strict=True)]
    in_dims = tuple(not_mapped if d is not_mapped else 0 for d in dims)
    batched_call = batching.batch_program(call_jaxpr, axis_size, in_dims)
    n_out = len(call_jaxpr.out_avals)
    res_dims = []

    def batched_fwd(primals, perturbed=None):
        def flat(*xs):
            outs, res = fwd(list(xs), perturbed)
            return list(outs) + list(res)

        outs, out_dims = batching.batch_flat(flat, axis_size, list(primals), in_dims)
        res_dims[:] = out_dims[n_out:]
        outs = [batching.move_to(o, d, 0, axis_size) if i < n_out else o
                for i, (o, d) in enumerate(zip(outs, out_dims, strict=True))]
        return outs[:n_out], outs[n_out:]

    def batched_bwd(res, cts):
        # Output cotangents are batched at 0 (the outputs are); inputs that were not batched
        # get the sum over the batch of their per-example cotangents.
        def flat(*xs):
            return [ad.instantiate(c) if c is not None else c
                    for c in bwd(list(xs[:len(res)]), list(xs[len(res):]))]

        cts_in, ct_dims = batching.batch_flat(flat, axis_size, list(res) + list(cts),
                                              tuple(res_dims) + (0,) * len(cts))
        out = []
        for c, d, want in zip(cts_in, ct_dims, in_dims, strict=True):
            if c is None or getattr(c, "dtype", None) == dtypes.float0:
                out.append(c)
            elif want is not_mapped:
                out.append(c if d is not_mapped else _sum_axis(c, d))
            else:
                out.append(batching.move_to(c, d, 0, axis_size))
        return out

    batched_fwd.__name__ = _name(fwd)
    batched_bwd.__name__ = _name(bwd)
    outs = custom_vjp_call_p.bind(*vals, name=name, bwd=batched_bwd, call_jaxpr=batched_call,
                                  fwd=batched_fwd, symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


def _sum_axis(x, axis):
    from gpuarr.lax import shape_ops as lax_shape_ops
    return lax_shape_ops.reduce_sum(x, (axis,))


ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
batching.batch_rules[custom_vjp_call_p] = _custom_vjp_call_batch


class custom_vjp:
    """Give `fun` a custom reverse-mode rule: `f.defvjp(fwd, bwd)` with `fwd(*args) ->
    (out, residuals)` and `bwd(residuals, out_cotangent) -> tuple of input cotangents` (one
    per argument; None means zero). `nondiff_argnums` arguments are passed first to both
    rules. Forward mode (jvp, jacfwd) raises TypeError, as in jax.custom_vjp."""

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.__name__ = _name(fun)  # callable objects have none for update_wrapper to copy
        self.fun = fun
        self._signature = _signature(fun)
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Register the forward pass `fwd` and the backward pass `bwd`."""
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 "using defvjp.")
        args = _resolve_args(self._signature, args, kwargs)
        if _eager():
            return self.fun(*args)
        nondiff, merge, flat_args, in_tree, out_tree, closed, hoisted = _stage(
            self.fun, args, self.nondiff_argnums)
        if hoisted:
            raise TypeError(
                f"custom_vjp function {self.__name__} closes over values that are being "
                "transformed (traced values from an enclosing grad/jvp/vmap). Pass them as "
                "explicit arguments, or use gpuarr.closure_convert to hoist them.")
        fwd, bwd = _flat_vjp_rules(self, nondiff, merge, in_tree, out_tree, closed)
        outs = custom_vjp_call_p.bind(*flat_args, name=self.__name__, bwd=bwd,
                                      call_jaxpr=closed, fwd=fwd,
                                      symbolic_zeros=self.symbolic_zeros)
        return pytrees.tree_unflatten(out_tree, outs)


def _flat_vjp_rules(cv: custom_vjp, nondiff, merge, in_tree, out_tree, closed):
    in_avals = closed.in_avals
    res_trees = []

    def fwd(primals, perturbed=None):
        if cv.symbolic_zeros:  # each input leaf as (value, whether it has a nonzero tangent)
            perturbed = [True] * len(primals) if perturbed is None else perturbed
            primals = [CustomVJPPrimal(p, q) for p, q in zip(primals, perturbed, strict=True)]
        args = merge(pytrees.tree_unflatten(in_tree, list(primals)))
        # fwd takes the arguments where the function takes them (only bwd takes the
        # non-differentiable ones first), as in JAX.
        res = cv.fwd(*args)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"Custom VJP fwd rule {_name(cv.fwd)} for function {cv.__name__} "
                            "must produce a pair (list or tuple of length two) where the first "
                            "element represents the primal output (equal to those of the "
                            f"custom_vjp-decorated function {cv.__name__}) and the second "
                            "element represents residuals (i.e. values stored from the forward "
                            "pass for use on the backward pass), but instead of a pair the fwd "
                            f"rule {_name(cv.fwd)} produced {res}.")
        out, residuals = res
        o_flat, o_tree = pytrees.tree_flatten(out)
        if o_tree != out_tree:
            raise TypeError(f"Custom VJP fwd rule {_name(cv.fwd)} for function {cv.__name__} "
                            "must produce a pair where the first element has the same container "
                            f"(pytree) structure as the primal function output: {out_tree} vs "
                            f"{o_tree}.")
        r_flat, r_tree = pytrees.tree_flatten(residuals)
        res_trees[:] = [r_tree]
        return o_flat, r_flat

    def bwd(res, cts):
        residuals = pytrees.tree_unflatten(res_trees[0], list(res))
        cts = [(SymbolicZero(c.aval) if cv.symbolic_zeros else ad.instantiate(c))
               if type(c) is Zero else c for c in cts]
        ct = pytrees.tree_unflatten(out_tree, list(cts))
        got = cv.bwd(*nondiff, residuals, ct)
        n_args = len(pytrees.tree_unflatten(in_tree, [0] * len(in_avals)))
        if isinstance(got, list) and len(got) == n_args:  # JAX takes a list of that length
            got = tuple(got)
        flat = _flatten_cts(got, in_tree)
        paths = [pytrees.keystr(k) for k, _ in pytrees.tree_flatten_with_path(
            pytrees.tree_unflatten(in_tree, [object()] * len(in_avals)))[0]]
        return [None if c is None else _match_ct(c, a, k)
                for c, a, k in zip(flat, in_avals, paths, strict=True)]

    fwd.__name__ = _name(cv.fwd)
    bwd.__name__ = _name(cv.bwd)
    return fwd, bwd


def _flatten_cts(cts, in_tree):
    """bwd's output flattened against the arguments, as JAX does: a None stands for a zero
    subtree (a None leaf where the argument has one adds nothing), and a leaf where the
    argument has a subtree stands for each of its leaves."""
    dummy = pytrees.tree_unflatten(in_tree, [object()] * in_tree.num_leaves)
    flat = []

    def append(x, d):
        n = len(pytrees.tree_leaves(d))
        if x is not None or d is not None:
            flat.extend([x] * n)
        return x

    try:
        if not isinstance(cts, tuple):
            raise ValueError
        pytrees.tree_map(append, cts, dummy, is_leaf=lambda x: x is None)
    except ValueError:
        raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                        "(pytree) structure as the args tuple of the primal function, and in "
                        "particular must produce a tuple of length equal to the number of "
                        "arguments to the primal function, but got bwd output structure "
                        f"{pytrees.tree_structure(cts)} for primal input structure "
                        f"{in_tree}.") from None
    return flat


def _match_ct(ct, aval, path=""):
    if type(ct) is SymbolicZero:
        if ct.aval.shape != aval.shape or ct.aval.dtype != ad.tangent_aval(aval).dtype:
            raise ValueError("Custom VJP bwd rule produced a SymbolicZero with a shape/dtype "
                             "that does not match the corresponding input tangent shape/dtype: "
                             f"at output{path} the SymbolicZero had shape/dtype "
                             f"{_type_str(ct.aval)} while the corresponding input had "
                             f"shape/dtype {_type_str(aval)}. Consider just returning a None "
                             "here instead of a SymbolicZero object.")
        return None
    if getattr(ct, "dtype", None) == dtypes.float0:
        return None
    shape = get_aval(ct).shape
    if shape != aval.shape:
        raise ValueError("Custom VJP bwd rule must produce an output with the same type as the "
                         f"args tuple of the primal function, but at output{path} the bwd rule "
                         f"produced an output of type {_type_str(get_aval(ct))} corresponding to "
                         f"an input of type {_type_str(aval)}, so the shapes do not match")
    if get_aval(ct).dtype != aval.dtype and dtypes.is_float(aval.dtype):
        return _cast(ct, aval.dtype)
    return ct


# ---------------------------------------------------------------- closure_convert


def closure_convert(fun: Callable, *example_args):
    """Return `(converted, consts)`: `converted(*args, *consts)` equals `fun(*args)`, with the
    floating-point values `fun` closes over (including traced ones) hoisted into `consts`,
    so a custom_vjp function can differentiate with respect to them."""
    flat_args, in_tree = pytrees.tree_flatten(example_args)
    flat_fun, out_tree = pytrees.flatten_fun(fun, in_tree)
    avals = [get_aval(x) for x in flat_args]
    closed = pe.trace_to_program(flat_fun, avals)
    prog = closed.program
    hoist = [dtypes.is_float(v.aval.dtype) or dtypes.is_complex(v.aval.dtype)
             for v in prog.constvars]
    consts = [c for c, h in zip(closed.consts, hoist) if h]
    kept = [c for c, h in zip(closed.consts, hoist) if not h]
    n_args = len(flat_args)

    def converted(*args_and_consts):
        split = len(args_and_consts) - len(consts)
        args, cs = args_and_consts[:split], args_and_consts[split:]
        flat, tree = pytrees.tree_flatten(tuple(args))
        if len(flat) != n_args:
            raise TypeError(f"closure-converted function expects {n_args} argument leaves "
                            f"followed by {len(consts)} consts, got {len(flat)} leaves.")
        it_c, it_k = iter(cs), iter(kept)
        all_consts = [next(it_c) if h else next(it_k) for h in hoist]
        from gpuarr.core import eval_program
        outs = eval_program(prog, all_consts, flat)
        return pytrees.tree_unflatten(out_tree(), outs)

    return converted, consts


# ---------------------------------------------------------------- linear_call


def linear_call(fun: Callable, fun_transpose: Callable, residual_args, linear_args):
    """Call `fun(residual_args, linear_args)`, a function linear in `linear_args`, whose
    transpose is `fun_transpose(residual_args, cotangent)` (jax.custom_derivatives.linear_call).
    Implemented with custom_vjp: the transpose is used as the backward pass."""
    @custom_vjp
    def call(res, lin):
        return fun(res, lin)

    def fwd(res, lin):
        return fun(res, lin), res

    def bwd(res, ct):
        return None, fun_transpose(res, ct)

    call.defvjp(fwd, bwd)
    return call(residual_args, linear_args)


# ---------------------------------------------------------------- custom_gradient


class _VjpResiduals:
    """The vjp function returned by a custom_gradient function, staged: its captured arrays
    are the children (residuals), the Program and the trees are static."""

    def __init__(self, program, in_tree, out_tree, consts):
        self.program, self.in_tree, self.out_tree, self.consts = program, in_tree, out_tree, consts


pytrees.register_pytree_node(
    _VjpResiduals,
    lambda r: (tuple(r.consts), (r.program, r.in_tree, r.out_tree)),
    lambda aux, consts: _VjpResiduals(*aux, list(consts)))


def custom_gradient(fun: Callable) -> Callable:
    """Define a function's gradient together with it: `fun(*args)` returns `(value, vjp_fn)`
    where `vjp_fn(cotangent)` returns the cotangents of the arguments (a tuple, or a single
    value for a function of one argument). The result computes `value`; reverse-mode
    differentiation uses `vjp_fn`. Built on `custom_vjp`, so forward mode is not supported."""
    @custom_vjp
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        ans, _ = fun(*args, **kwargs)
        return ans

    def fwd(*args, **kwargs):
        ans, rule = fun(*args, **kwargs)
        ans_flat, out_tree = pytrees.tree_flatten((ans,))
        ct_avals = [ad.tangent_aval(get_aval(x)) for x in ans_flat]
        flat_rule, in_tree = pytrees.flatten_fun(rule, out_tree)
        closed = pe.trace_to_program(flat_rule, ct_avals)
        return ans, _VjpResiduals(closed.program, in_tree(), out_tree, list(closed.consts))

    def bwd(res, cts):
        cts_flat, tree = pytrees.tree_flatten((cts,))
        if tree != res.out_tree:
            raise TypeError(f"{res.out_tree}\n!=\n{tree}")
        out = eval_program(res.program, res.consts, cts_flat)
        out = pytrees.tree_unflatten(res.in_tree, out)
        if pytrees.treedef_is_leaf(res.in_tree):
            out = (out,)
        return tuple(out)

    wrapped.defvjp(fwd, bwd)
    return wrapped
