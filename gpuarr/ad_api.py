"""Differentiation API: vjp, fwd_and_bwd, grad, value_and_grad, jvp, linearize, jacfwd, jacrev,
hessian."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import numpy as np

from gpuarr import core, dtypes, pytrees
from gpuarr.api_util import index_tuple, leaf_aval
from gpuarr.config import config
from gpuarr.core import ClosedProgram
from gpuarr.dispatch import as_array, to_device_array, wrap
from gpuarr.interpreters import ad
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.jit_api import jit
from gpuarr.lax import conversions, lax
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.vmap_api import vmap, wraps

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------- differentiation


def _resolve_argnums(argnums_t, nargs):
    """`argnums_t` as non-negative positions of a call with `nargs` positional arguments;
    JAX's ValueError for one out of range."""
    for i in argnums_t:
        if not -nargs <= i < nargs:
            raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have "
                             "value greater than or equal to -len(args) and less than len(args), "
                             f"but got value {i} for len(args) == {nargs}.")
    return tuple(i % nargs for i in argnums_t)


def _no_reduce_axes(reduce_axes, what):
    # JAX removed reduce_axes; passing any raises as it does.
    if reduce_axes:
        raise NotImplementedError(f"reduce_axes argument to {what} is deprecated")


def _is_traceable(x) -> bool:
    """Whether `x` can pass through a trace as a value (else aux keeps it as it is)."""
    if isinstance(x, (core.Tracer, np.ndarray, np.generic) + _SCALARS):
        return True
    try:
        core.get_aval(x)
    except TypeError:
        return False
    return True


def _check_input_dtype(x, allow_int: bool, name: str, holomorphic: bool = False):
    aval = core.get_aval(x)
    dt = aval.dtype
    if holomorphic and not dtypes.is_complex(dt):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if dtypes.is_float(dt) or dtypes.is_complex(dt):
        return
    if allow_int and (dtypes.is_int(dt) or dt == np.bool_):
        return
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def vjp(fun: Callable, *primals, has_aux: bool = False, reduce_axes=()):
    """Evaluate `fun(*primals)` and return (outputs, vjp_fn[, aux]); `vjp_fn(cotangents)` gives
    the cotangents of the inputs (a tuple, one per primal). `vjp_fn` is a pytree (a `VJP`)
    whose leaves are the residuals of the forward pass, so it can be returned from a jitted
    function and passed into one, as in JAX."""
    _no_reduce_axes(reduce_axes, "vjp")
    flat_primals, in_tree = pytrees.tree_flatten(primals)
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "vjp")
    flat_primals = [_as_array(p) for p in flat_primals]
    primals_out, linear = ad.linearize_flat(flat_fun, flat_primals)
    primals_out, aux_out, out_tree = _split_aux(store, primals_out)
    meta = _VJPMeta(linear.program, in_tree, out_tree,
                    tuple(core.get_aval(p) for p in flat_primals),
                    tuple(core.get_aval(p) for p in primals_out),
                    tuple(core.get_aval(a) for a in aux_out))
    vjp_fn = VJP(meta, list(linear.consts))
    return _attach_aux((pytrees.tree_unflatten(out_tree, primals_out), vjp_fn), store, aux_out,
                       has_aux)


class _VJPMeta(tuple):
    """What a VJP keeps besides its residuals: its linear Program and the trees and types of
    its function (compared by identity, so one traced forward pass gives one pytree type)."""

    def __new__(cls, *fields):
        return super().__new__(cls, fields)

    __eq__ = object.__eq__
    __hash__ = object.__hash__


class VJP:
    """The function `vjp` returns: output cotangents in, input cotangents out (a tuple with one
    entry per primal). A pytree whose leaves are the residuals of the forward pass."""

    def __init__(self, meta: _VJPMeta, residuals: list):
        self._meta = meta
        self.residuals = residuals

    def __call__(self, cotangents):
        program, in_tree, out_tree, in_avals, out_avals, aux_avals = self._meta
        cts, ct_tree = pytrees.tree_flatten(cotangents)
        if ct_tree != out_tree:
            raise ValueError(f"unexpected tree structure.\n\nThe argument to a VJP function "
                             f"returned by `jax.vjp` must match the pytree structure of the "
                             f"differentiated function's output {out_tree}, got {ct_tree}.")
        for c, p in zip(cts, out_avals):
            ca, want = core.get_aval(c), ad.tangent_aval(p)
            # An integer output takes a float0 cotangent or (as JAX allows) one of its dtype.
            if ca.shape != want.shape or (ca.dtype != want.dtype and not ca.weak_type
                                          and ca.dtype != dtypes.float0 and ca.dtype != p.dtype):
                def name(a):
                    return f"{a.dtype.name}[{','.join(map(str, a.shape))}]"
                raise ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                                 f"function: got {name(ca)}, but expected {name(want)} because "
                                 f"the corresponding output of the differentiated function had "
                                 f"JAX type {name(p)}")
        cts = [Zero(ad.tangent_aval(p)) if ad.tangent_aval(p).dtype == dtypes.float0
               else _match_aval(_as_array(c), ad.tangent_aval(p)) if core.get_aval(c).weak_type
               else c for c, p in zip(cts, out_avals)]
        cts += [Zero(ad.tangent_aval(a)) for a in aux_avals]
        cts_in = ad.backward_pass(ClosedProgram(program, list(self.residuals)), cts)
        cts_in = [_match_aval(_zero_or(ct, aval), aval) for ct, aval in zip(cts_in, in_avals)]
        return pytrees.tree_unflatten(in_tree, cts_in)


pytrees.register_pytree_node(VJP, lambda f: (f.residuals, f._meta),
                               lambda meta, residuals: VJP(meta, list(residuals)))


def fwd_and_bwd(fun: Callable, argnums, has_aux: bool = False, jitted: bool = True):
    """The forward and backward passes of `fun` as two functions: `fwd(*args)` returns
    `(fun(*args), residuals)` (and `aux` with `has_aux`), `bwd(residuals, cotangent)` the
    cotangents of the arguments `argnums` names (one value for an int, a tuple for a
    sequence). Both are jitted unless `jitted=False`, so a loop calling them compiles each once,
    where `jit(vjp_fn)` would compile again for every new forward pass."""
    single = isinstance(argnums, int)
    nums = index_tuple(argnums)

    def fwd(*args):
        def partial_fun(*dyn):
            full = list(args)
            for i, a in zip(nums, dyn):
                full[i] = a
            return fun(*full)
        return vjp(partial_fun, *(args[i] for i in nums), has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if single else g

    if jitted:
        fwd, bwd = jit(fwd), jit(bwd)
    return fwd, bwd


def _flatten_fun_aux(fun, in_tree, has_aux, store, what):
    """`fun` over flat inputs returning its output leaves followed by its aux leaves (aux
    values leave the transformation as plain primal values, as in JAX)."""
    def flat_fun(*flat):
        out = fun(*pytrees.tree_unflatten(in_tree, list(flat)))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("expected function with aux output to return a two-element "
                                f"tuple, but got type {type(out)} with value {out!r}")
            out, aux = out
            aux_leaves, store["aux_tree"] = pytrees.tree_flatten(aux)
            # Aux leaves that are not arrays (strings, objects) skip the trace, as in JAX.
            store["aux_kept"] = [None if _is_traceable(a) else a for a in aux_leaves]
            aux_leaves = [a for a in aux_leaves if _is_traceable(a)]
        leaves, store["out_tree"] = pytrees.tree_flatten(out)
        store["n_out"] = len(leaves)
        return leaves + aux_leaves

    return flat_fun


def _split_aux(store, leaves):
    """(output leaves, aux leaves, output tree) of what a `_flatten_fun_aux` function gave."""
    n_out = store["n_out"]
    return leaves[:n_out], leaves[n_out:], store["out_tree"]


def _attach_aux(res, store, aux_leaves, has_aux):
    """The tuple `res`, followed by the aux pytree when has_aux."""
    if not has_aux:
        return res
    traced = iter(aux_leaves)
    leaves = [next(traced) if k is None else k for k in store["aux_kept"]]
    return res + (pytrees.tree_unflatten(store["aux_tree"], leaves),)


def _zero_or(ct, aval):
    if type(ct) is Zero:
        if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
            return np.zeros(aval.shape, dtypes.float0)
        return ad.instantiate(Zero(aval))
    return ct


def _match_aval(ct, aval):
    """Give an input cotangent its primal's dtype and weak type, as JAX's vjp does."""
    if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
        return ct
    ct_aval = core.get_aval(ct)
    if ct_aval.dtype == aval.dtype and ct_aval.weak_type == aval.weak_type:
        return ct
    return conversions._convert_weak(ct, aval.dtype, aval.weak_type)


_as_array = as_array


def _with_args_at(fun, args, kwargs, argnums):
    """`fun` as a function of the positional arguments `argnums` only, the rest fixed."""
    def partial_fun(*dargs):
        full = list(args)
        for i, d in zip(argnums, dargs):
            full[i] = d
        return fun(*full, **kwargs)
    return partial_fun


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
    """A function returning `(fun(*args), gradient)`, the gradient with respect to the
    positional arguments `argnums` (an int or a tuple) of a scalar-output `fun`. With
    `has_aux`, `fun` returns `(value, aux)` and the result is `((value, aux), gradient)`."""
    _no_reduce_axes(reduce_axes, "grad")
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    argnums_all = index_tuple(argnums)

    @wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        if max(argnums_all) >= len(args):  # max(()) raises ValueError, as in JAX
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                            f"{max(argnums_all) + 1} positional arguments to be passed by the "
                            f"caller, but got only {len(args)} positional arguments.")
        argnums_t = _resolve_argnums(argnums_all, len(args))
        diff_args = tuple(args[i] for i in argnums_t)
        for leaf in pytrees.tree_leaves(diff_args):
            _check_input_dtype(leaf, allow_int, "grad", holomorphic)

        partial_fun = _with_args_at(fun, args, kwargs, argnums_t)

        if has_aux:
            ans, vjp_fn, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            ans, vjp_fn = vjp(partial_fun, *diff_args)
        aval = _check_scalar(ans)
        _check_output_dtype(aval, holomorphic)
        g = vjp_fn(_one(aval))
        g = g[0] if isinstance(argnums, int) else g
        if has_aux:
            return (ans, aux), g
        return ans, g

    return value_and_grad_f


def _check_scalar(ans):
    """The aval of `ans`, which must be one scalar array (JAX's messages otherwise)."""
    msg = "Gradient only defined for scalar-output functions. Output {}.".format
    if isinstance(ans, (tuple, list, dict)) or len(pytrees.tree_leaves(ans)) != 1:
        raise TypeError(msg(f"was {ans}"))
    aval = core.get_aval(ans)
    if aval.shape != ():
        raise TypeError(msg(f"had shape: {aval.shape}"))
    return aval


def _check_output_dtype(aval, holomorphic, name="grad"):
    dt = aval.dtype
    if holomorphic:
        if not dtypes.is_complex(dt):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                            f"but got {dt.name}.")
    elif dtypes.is_complex(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex outputs, use jax.vjp directly.")
    elif not dtypes.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For differentiation of functions "
                        "with integer outputs, use jax.vjp directly.")


def _one(aval):
    """The seed cotangent 1 of a scalar output, of its type: staged, it is a literal."""
    one = np.ones((), aval.dtype)
    return wrap(one, True) if aval.weak_type else one[()]


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
    """The gradient of scalar-output `fun` with respect to positional argument(s) `argnums`.
    Integer inputs need `allow_int=True` (their gradients have dtype float0); with `has_aux`
    the result is `(gradient, aux)`."""
    _no_reduce_axes(reduce_axes, "grad")
    vg = value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)

    @wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward mode: `(fun(*primals), J @ tangents)`; primals and tangents are tuples/lists."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    flat_p, in_tree = pytrees.tree_flatten(tuple(primals))
    flat_t, t_tree = pytrees.tree_flatten(tuple(tangents))
    if in_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {in_tree} whereas tangents have "
                        f"tree structure {t_tree}.")
    for p, t in zip(flat_p, flat_t):
        pa, ta = core.get_aval(p), core.get_aval(t)
        want = ad.tangent_aval(pa).dtype
        if ta.dtype != want:
            expected = str(want) if want == dtypes.float0 else want.name
            raise TypeError(f"primal and tangent arguments to jax.jvp do not match; dtypes must "
                            f"be equal, or in case of int/bool primal dtype the tangent dtype "
                            f"must be float0.Got primal dtype {pa.dtype.name} and so expected "
                            f"tangent dtype {expected}, but got tangent dtype {ta.dtype.name} "
                            "instead.")
        if pa.shape != ta.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes;Got primal "
                             f"shape {pa.shape} and tangent shape as {ta.shape}")
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "jvp")
    # Primals and tangents reach the function as given (a custom rule may compute on a Python
    # float, and an output that is an input returns its tangent unchanged), as in JAX.
    tangents_in = [Zero(ad.tangent_aval(core.get_aval(p))) if getattr(t, "dtype", None) == dtypes.float0
                   else t for p, t in zip(flat_p, flat_t)]
    outs_p, outs_t = ad.jvp_flat(flat_fun, flat_p, tangents_in)
    outs_p, aux, out_tree = _split_aux(store, outs_p)
    outs_t = outs_t[:len(outs_p)]
    outs_t = [_zero_or(t, core.get_aval(p)) for t, p in zip(outs_t, outs_p)]
    res = (pytrees.tree_unflatten(out_tree, outs_p), pytrees.tree_unflatten(out_tree, outs_t))
    return _attach_aux(res, store, aux, has_aux)


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` evaluates the staged linear map."""
    flat_p, in_tree = pytrees.tree_flatten(primals)
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "linearize")
    flat_p = [_as_array(p) for p in flat_p]
    outs_p, linear = ad.linearize_flat(flat_fun, flat_p)
    outs_p, aux, out_tree = _split_aux(store, outs_p)
    # A Partial over the residuals, so f_jvp is a pytree (it can leave a jitted function).
    f_jvp = pytrees.Partial(_LinearJVP(linear.program, linear.out_avals, in_tree, out_tree,
                                         len(outs_p), [core.get_aval(p) for p in flat_p]),
                              list(linear.consts))
    return _attach_aux((pytrees.tree_unflatten(out_tree, outs_p), f_jvp), store, aux, has_aux)


def _check_linearized_tangent(t_aval, p_aval):
    """A tangent given to linearize's function must have its primal's tangent shape and dtype
    (weak types aside), as JAX checks; otherwise eager broadcasting would hide the mistake."""
    want = ad.tangent_aval(p_aval)
    if t_aval.shape != want.shape or t_aval.dtype != want.dtype:
        raise ValueError("linearized function called on tangent values inconsistent with the "
                         f"original primal values:\nGot tangent aval {t_aval} for primal aval "
                         f"{p_aval} but expected {want}.")


class _LinearJVP:
    """The function `linearize` returns, given its residuals first (compared by identity: one
    linearization, one pytree type)."""

    def __init__(self, program, out_avals, in_tree, out_tree, n_out, in_avals):
        self.program, self.out_avals = program, out_avals
        self.in_tree, self.out_tree, self.n_out = in_tree, out_tree, n_out
        self.in_avals = in_avals

    def __call__(self, residuals, *tangents):
        flat_t, t_tree = pytrees.tree_flatten(tangents)
        if t_tree != self.in_tree:
            raise TypeError(f"expected {self.in_tree}, got {t_tree}")
        for t, p in zip(flat_t, self.in_avals):
            _check_linearized_tangent(core.get_aval(t), p)
        linear = ClosedProgram(self.program, list(residuals))
        outs = core.eval_closed(linear, *flat_t)[:self.n_out]
        # The staged types, not the given tangents', decide the outputs' dtypes and weak
        # types: a tangent that is a Python scalar, a strongly typed scalar for a weakly typed
        # primal or a narrower float passes through eager evaluation with its own type.
        # A constant tangent (a literal of the Program) comes back as an Array too.
        outs = [_match_aval(_as_array(o) if isinstance(o, (int, float, complex)) else o, a)
                for o, a in zip(outs, self.out_avals)]
        return pytrees.tree_unflatten(self.out_tree, outs)


def _std_basis(flat_avals):
    """Rows of an identity matrix, one per input element, split back into the input leaves."""
    sizes = [a.size for a in flat_avals]
    total = sum(sizes)
    dtype = dtypes.result_type(*[a.dtype for a in flat_avals]) if flat_avals else np.float32
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for a, n in zip(flat_avals, sizes):
        out.append(to_device_array(eye[:, start:start + n].reshape((total,) + a.shape)
                                   .astype(a.dtype)))
        start += n
    return out


def _jacfwd_check(x, holomorphic):
    if holomorphic:
        _check_input_dtype(x, False, "jacfwd", holomorphic)
        return
    dt = core.get_aval(x).dtype
    if not dtypes.is_float(dt):
        raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex inputs or integer inputs, use jax.jvp "
                        "directly.")


def _downcast(x, example):
    """A Jacobian block in the dtype and weak type of `example` (the output leaf for jacfwd,
    the input leaf for jacrev), as JAX unravels them: integer inputs get zeros of their own
    dtype, and a real example takes the real part of a complex block."""
    aval = core.get_aval(example)
    if getattr(x, "dtype", None) == dtypes.float0:
        return lax_shape_ops.full(x.shape, 0, aval.dtype)
    if dtypes.is_complex(core.get_aval(x).dtype) and not dtypes.is_complex(aval.dtype):
        x = lax_extras.real(x)
    return conversions._convert_weak(x, aval.dtype, aval.weak_type)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of `fun` by forward mode (vmap of jvp over a basis of input tangents).
    For output leaf shape `o` and input leaf shape `i` the block has shape `o + i`; the
    result mirrors the output pytree, then the `argnums` structure, as jax.jacfwd."""
    argnums_all = index_tuple(argnums)

    @wraps(fun)
    def jacfun(*args, **kwargs):
        argnums_t = _resolve_argnums(argnums_all, len(args))
        diff_args = tuple(args[i] for i in argnums_t)
        flat_in, in_tree = pytrees.tree_flatten(diff_args)
        flat_in = [_as_array(x) for x in flat_in]
        for x in flat_in:
            _jacfwd_check(x, holomorphic)
        in_avals = [core.get_aval(x) for x in flat_in]

        partial_fun = _with_args_at(fun, args, kwargs, argnums_t)

        def partial_flat(*flat):
            return partial_fun(*pytrees.tree_unflatten(in_tree, list(flat)))

        def push(*basis):
            res = jvp(partial_flat, tuple(flat_in), tuple(basis), has_aux=has_aux)
            return res if has_aux else res[:2]

        if sum(a.size for a in in_avals):
            # The primal output (and aux) come back stacked, one copy per basis vector: keep one.
            out_axes = (0, -1, 0) if has_aux else (0, -1)
            out = vmap(push, in_axes=0, out_axes=out_axes)(*_std_basis(in_avals))
            first = functools.partial(pytrees.tree_map, lambda v: v[0])
            out = (first(out[0]), out[1]) + ((first(out[2]),) if has_aux else ())
        else:  # no basis vectors to map over: one jvp gives the outputs, the blocks are empty
            out = push(*[np.zeros(a.shape, a.dtype) for a in in_avals])
            out = (out[0], pytrees.tree_map(
                lambda t: np.zeros(np.shape(t) + (0,), t.dtype), out[1])) + tuple(out[2:])
        y, jac_flat = out[0], out[1]
        y_leaves, y_tree = pytrees.tree_flatten(y)
        if holomorphic:  # otherwise jacfwd takes outputs of any dtype
            for yl in y_leaves:
                _check_output_dtype(core.get_aval(yl), holomorphic, "jacfwd")
        jac_leaves = pytrees.tree_leaves(jac_flat)
        per_out = []
        for yl, jl in zip(y_leaves, jac_leaves):
            shape = core.get_aval(yl).shape
            blocks, start = [], 0
            for a in in_avals:
                piece = lax.slice_in_dim(jl, start, start + a.size, axis=len(shape))
                blocks.append(_downcast(lax_shape_ops.reshape(piece, shape + a.shape), yl))
                start += a.size
            per_out.append(_pack_argnums(pytrees.tree_unflatten(in_tree, blocks), argnums))
        jac = pytrees.tree_unflatten(y_tree, per_out)
        return (jac, out[2]) if has_aux else jac

    return jacfun


def _pack_argnums(diff_tree, argnums):
    return diff_tree[0] if isinstance(argnums, int) else tuple(diff_tree)


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian of `fun` by reverse mode (vmap of the vjp over a basis of output
    cotangents); block shapes and pytree layout as in `jacfwd` (jax.jacrev)."""
    argnums_all = index_tuple(argnums)

    @wraps(fun)
    def jacfun(*args, **kwargs):
        argnums_t = _resolve_argnums(argnums_all, len(args))
        diff_args = tuple(args[i] for i in argnums_t)
        for x in pytrees.tree_leaves(diff_args):
            _check_input_dtype(x, allow_int, "jacrev", holomorphic)

        partial_fun = _with_args_at(fun, args, kwargs, argnums_t)

        if has_aux:
            y, pullback, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            y, pullback = vjp(partial_fun, *diff_args)
        y_leaves, y_tree = pytrees.tree_flatten(y)
        y_avals = [core.get_aval(v) for v in y_leaves]
        for a in y_avals:
            _check_output_dtype(a, holomorphic, "jacrev")
        basis = _std_basis(y_avals)

        def pull(*cts):
            return pytrees.tree_leaves(pullback(pytrees.tree_unflatten(y_tree, list(cts))))

        cts_flat = vmap(pull)(*basis)
        in_leaves, in_tree = pytrees.tree_flatten(diff_args)
        per_out, start = [], 0
        for ya in y_avals:
            blocks = []
            for c, xa in zip(cts_flat, in_leaves):
                shape = ya.shape + core.get_aval(xa).shape
                if getattr(c, "dtype", None) == dtypes.float0:  # integer input (allow_int)
                    blocks.append(lax_shape_ops.full(shape, 0, core.get_aval(xa).dtype))
                    continue
                blocks.append(_downcast(lax_shape_ops.reshape(
                    lax.slice_in_dim(c, start, start + ya.size, axis=0), shape), xa))
            start += ya.size
            per_out.append(_pack_argnums(pytrees.tree_unflatten(in_tree, blocks), argnums))
        jac = pytrees.tree_unflatten(y_tree, per_out)
        return (jac, aux) if has_aux else jac

    return jacfun


jacobian = jacrev


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Hessian of scalar `fun`: `jacfwd(jacrev(fun))` (jax.hessian)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


def linear_transpose(fun: Callable, *primals, reduce_axes=()):
    """The transpose of the linear function `fun`, whose inputs have the shapes and dtypes of
    `primals`: returns `f_t(cotangent) -> tuple of input cotangents` (jax.linear_transpose)."""
    _no_reduce_axes(reduce_axes, "transpose")
    flat_p, in_tree = pytrees.tree_flatten(primals)
    # Primals may be ShapeDtypeStructs, as in JAX; results take their weak types.
    given_avals = [leaf_aval(p) for p in flat_p]
    in_avals = [a.strip_weak_type() for a in given_avals]
    flat_fun, out_tree_of = pytrees.flatten_fun(fun, in_tree)
    # Stage the function with every input unknown; what does not depend on the inputs is
    # evaluated now, and the rest (linear in the inputs) is what gets transposed.
    closed = pe.trace_to_program(flat_fun, in_avals)
    _check_transpose_dtypes([a.dtype for a in in_avals], [a.dtype for a in closed.out_avals])
    known, unknown, out_unknowns, num_res = pe.partial_eval_program(
        closed.program, [True] * len(in_avals))
    known_vals = core.eval_program(known, closed.consts, [])
    linear = ClosedProgram(core.Program(unknown.invars[:num_res], unknown.invars[num_res:],
                                        unknown.eqns, unknown.outvars),
                           known_vals[len(known_vals) - num_res:])
    # A Partial over the constants of the linear map, so the transpose is a pytree.
    return pytrees.Partial(_LinearTranspose(linear.program, in_tree, out_tree_of(),
                                              closed.out_avals, out_unknowns, given_avals),
                             list(linear.consts))


def _check_transpose_dtypes(in_dtypes, out_dtypes):
    """linear_transpose maps inexact to inexact or integer to integer (JAX's TypeError)."""
    every = in_dtypes + out_dtypes
    if all(dtypes.is_float(d) or dtypes.is_complex(d) for d in every) or \
            all(dtypes.is_int(d) for d in every):
        return
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {in_dtypes} -> {out_dtypes}.")


class _LinearTranspose:
    """The function `linear_transpose` returns, given its constants first."""

    def __init__(self, program, in_tree, out_tree, out_avals, out_unknowns, in_avals):
        self.program, self.in_tree, self.out_tree = program, in_tree, out_tree
        self.out_avals, self.out_unknowns, self.in_avals = out_avals, out_unknowns, in_avals

    def __call__(self, consts, out_cotangent):
        cts, ct_tree = pytrees.tree_flatten(out_cotangent)
        if ct_tree != self.out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{self.out_tree} but got {ct_tree}")
        for c, a in zip(cts, self.out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                expected = tuple(a.strip_weak_type() for a in self.out_avals)
                raise TypeError(f"cotangent type does not match function output, expected "
                                f"{expected} but got {cts}")
        cts = [c for c, u in zip(cts, self.out_unknowns) if u]
        cts_in = ad.backward_pass(ClosedProgram(self.program, list(consts)), cts)
        # Arrays of the inputs' types (JAX instantiates zeros of the input type, not float0).
        cts_in = [_as_array(ad.instantiate(c) if type(c) is Zero else c) for c in cts_in]
        return pytrees.tree_unflatten(self.in_tree, [_match_aval(c, a)
                                                       for c, a in zip(cts_in, self.in_avals)])
