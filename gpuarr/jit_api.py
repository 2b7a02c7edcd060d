"""jit: the jit primitive and its transformation rules, `PjitFunction` (its caches, the call path
and the ahead-of-time stages), `jit`, `disable_jit`, `clear_caches`; `make_jaxpr` and
`eval_shape`. Compiling is the platform's (`Platform.compile` runs the passes, then codegen)."""
from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import logging
import warnings
import weakref
from collections.abc import Callable

import numpy as np

from gpuarr import (
    compilation,
    core,
    dispatch,
    dtypes,
    impls,
    monitoring,
    placement,
    platforms,
    profiler,
    pytrees,
    stages,
)
from gpuarr.api_util import (
    ShapeDtypeStruct,
    abstractify,
    donated_positions,
    index_tuple,
    infer_names,
    leaf_arg_names,
    leaf_aval,
    leaf_buffer,
    leaf_signature,
    validate_argnums,
)
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.compile_log import _clock, _log_compile, _log_trace
from gpuarr.config import config
from gpuarr.core import ClosedProgram, Primitive, ShapedArray, Tracer, abstract_eval_rules
from gpuarr.dispatch import eval_trace, raise_at_nonfinite
from gpuarr.earray import logical_result
from gpuarr.interpreters import ad, batching, physical
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.lax import linalg_extra
from gpuarr.lax.control_flow.common import _check_returned
from gpuarr.sharding import data_parallel, tree_shardings

logger = logging.getLogger("gpuarr")
_flags = config._values

# ---------------------------------------------------------------- the jit primitive

jit_p = Primitive("jit", multiple_results=True)


def _jit_impl(*args, jaxpr: ClosedProgram, name: str):
    if _flags["no_execution"]:
        _refuse_execution(name)
    return impls.compile_closed(jaxpr)(*args)


impls.impl_rules[jit_p] = _jit_impl


def _guard_execution(jaxpr, name):
    if _flags["no_execution"]:
        _refuse_execution(name)


dispatch.platform_guards[jit_p] = _guard_execution
abstract_eval_rules[jit_p] = lambda *avals, jaxpr, name: list(jaxpr.out_avals)
core.weak_type_rules[jit_p] = lambda *args, jaxpr, name: [a.weak_type for a in jaxpr.out_avals]


def _jit_jvp(primals, tangents, jaxpr, name):
    program = jaxpr
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    # Tangents known to be zero (of integer results, say) are not outputs, as in JAX.
    jvp_prog, out_nonzeros = ad.jvp_program_nonzero(program, nonzeros)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, name=name, jaxpr=jvp_prog)
    n = len(program.out_avals)
    out_tangents = iter(outs[n:])
    return outs[:n], [next(out_tangents) if nz else Zero(ad.tangent_aval(a))
                      for nz, a in zip(out_nonzeros, program.out_avals)]


def _jit_batch(axis_size, vals, dims, jaxpr, name):
    # Outputs that do not depend on the mapped inputs stay unbatched (no broadcast copies).
    batched, out_dims = batching.batch_closed(jaxpr, axis_size, tuple(dims),
                                              [False] * len(jaxpr.out_avals))
    outs = jit_p.bind(*vals, name=name, jaxpr=batched)
    return outs, list(out_dims)


# Programs derived from a jit's Program, kept while it lives, so that transforming the same
# call again reuses them (and their compiled code): {closed: {(kind, mask): derived}}.
_derived: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _derive(closed: ClosedProgram, key, make):
    cache = _derived.setdefault(closed, {})
    out = cache.get(key)
    if out is None:
        out = make()
        if not any(isinstance(c, Tracer) for p in out if isinstance(p, ClosedProgram)
                   for c in p.consts):
            cache[key] = out
    return out


def _jit_partial_eval(trace, args, params):
    # As JAX: one jit computes the known outputs and the residuals, another is staged for
    # the rest (for grad: the forward and the linear part, transposed next by _jit_transpose).
    closed, name = params["jaxpr"], params["name"]
    uk = tuple(not pe.is_known(trace, x) for x in args)
    n_out = len(closed.out_avals)
    known, unknown, out_uk, forwarded = _derive(closed, ("partial_eval", uk), lambda: (
        _split_jit(closed, uk, n_out)))
    known_args = [a for a, u in zip(args, uk) if not u]
    known_outs = []
    if known.program.outvars or known.program.effectful:  # else nothing is known to compute
        with core.set_current_trace(trace.parent):
            known_outs = jit_p.bind(*known_args, name=name, jaxpr=known)
    n_known = len(out_uk) - sum(out_uk)
    computed = iter(known_outs[n_known:])
    residuals = [known_args[i] if i is not None else next(computed) for i in forwarded]
    staged = pe.StagingTrace.process_primitive(
        trace, jit_p, [*residuals, *[a for a, u in zip(args, uk) if u]],
        {"name": name, "jaxpr": unknown}) if any(out_uk) else []
    known_it, staged_it = iter(known_outs[:n_known]), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_uk]


def _split_jit(closed, uk, n_out):
    """partial_eval_closed's known and unknown Programs, trimmed as JAX trims them: residuals
    the unknown Program does not read are dropped (and what computes them), and residuals that
    are known inputs go to the unknown jit directly rather than out of the known one.
    `forwarded` lists, per residual kept, the known input it is (its index) or None."""
    known, unknown, out_uk, _, n_res = pe.partial_eval_closed(closed, list(uk), [False] * n_out)
    u_prog, used = pe.dce_program(unknown.program)
    keep = used[:n_res]
    u_prog = core.Program(u_prog.constvars, [v for v, k in zip(u_prog.invars, keep) if k]
                          + u_prog.invars[n_res:], u_prog.eqns, u_prog.outvars)
    prog = known.program
    n_known = len(prog.outvars) - n_res
    residuals = [v for v, k in zip(prog.outvars[n_known:], keep) if k]
    position = {v.id: i for i, v in enumerate(prog.invars)}
    forwarded = [position.get(v.id) if isinstance(v, core.Var) else None for v in residuals]
    outvars = prog.outvars[:n_known] + [v for v, i in zip(residuals, forwarded) if i is None]
    k_prog, _ = pe.dce_program(core.Program(prog.constvars, prog.invars, prog.eqns, outvars))
    return (ClosedProgram(k_prog, known.consts), ClosedProgram(u_prog, unknown.consts), out_uk,
            forwarded)


ad.jvp_rules[jit_p] = _jit_jvp
batching.batch_rules[jit_p] = _jit_batch
pe.partial_eval_rules[jit_p] = _jit_partial_eval


def _jit_transpose(cts, *args, jaxpr, name):
    # A jit of the transposed Program, taking the known inputs and the nonzero cotangents.
    from gpuarr.lax.control_flow.common import _backward
    undefined = tuple(ad.is_undefined(a) for a in args)
    zero_cts = tuple(type(c) is Zero for c in cts)
    known = [a for a in args if not ad.is_undefined(a)]
    ct_avals = tuple(core.get_aval(c) for c in cts if type(c) is not Zero)

    def make():
        n_known = len(known)

        def transposed(*values):
            it = iter(values[n_known:])
            cts_in = [Zero(a) if z else next(it) for a, z in zip(jaxpr.out_avals, zero_cts)]
            return _backward(jaxpr, list(undefined), values[:n_known], cts_in)
        avals = [core.get_aval(a) for a in known] + list(ct_avals)
        return (pe.trace_to_program(transposed, avals),)
    (t_closed,) = _derive(jaxpr, ("transpose", undefined, zero_cts, ct_avals), make)
    outs = iter(jit_p.bind(*known, *[c for c in cts if type(c) is not Zero], name=name,
                           jaxpr=t_closed))
    return [next(outs) if u else None for u in undefined]


ad.transpose_rules[jit_p] = _jit_transpose

# ---------------------------------------------------------------- jit


class _CacheEntry:
    """One compiled signature of a jit: the Program, the platform's callable, and what turns
    its output buffers into the caller's Arrays."""

    __slots__ = ("closed", "fn", "out_tree", "out_weak", "single", "platform", "platform_obj",
                 "extended", "float0_outs")

    def __init__(self, closed, fn, out_tree, out_weak, platform=None, out_avals=None):
        self.closed = closed
        self.fn = fn
        self.out_tree = out_tree
        self.out_weak = out_weak
        self.single = out_tree == pytrees.tree_structure(0)
        # Outputs of an extended dtype (their position and logical aval): the program returns
        # their physical data, which the dtype's result handler makes into its arrays.
        out_avals = closed.out_avals if out_avals is None else out_avals
        self.extended = [(i, a) for i, a in enumerate(out_avals) if core.has_extended_dtype(a)]
        if self.extended:
            self.single = False
        # float0 outputs (gradients of integer inputs) leave as NumPy arrays, as JAX's do:
        # they support no operation.
        self.float0_outs = [i for i, a in enumerate(out_avals) if a.dtype == dtypes.float0]
        if self.float0_outs:
            self.single = False
        self.platform_obj = platform
        # Only platforms whose buffers live on a device (cuda) wrap outputs with the platform;
        # cpu and opencl return host NumPy arrays.
        self.platform = platform if getattr(platform, "device_buffers", False) else None

    def wrap_outputs(self, outs, flat=False):
        """The output buffers `outs` as Arrays: the entry's pytree of them, or their list when
        `flat`. Every call path (the fast path, `_call`, a stage's `Compiled`) wraps here."""
        plat = self.platform
        if plat is None:  # host NumPy buffers
            if self.single and not flat:  # the common case, kept short for the fast path
                o = outs[0]
                return Array(o if type(o) is np.ndarray else _host_buffer(o), self.out_weak[0])
            results = [Array(o if type(o) is np.ndarray else _host_buffer(o), w)
                       for o, w in zip(outs, self.out_weak)]
        else:  # device buffers (cuda) stay where they are
            results = [Array(o, w, platform=plat) for o, w in zip(outs, self.out_weak)]
        for i, aval in self.extended:
            results[i] = logical_result(results[i], aval)
        for i in self.float0_outs:
            results[i] = np.zeros(results[i].shape, dtypes.float0)
        if flat:
            return results
        if self.single:
            return results[0]
        return pytrees.tree_unflatten(self.out_tree, results)

    def buffers(self, leaves, move=False) -> list:
        """The argument leaves as the buffers `fn` takes; Arrays are moved to its platform's
        device when it has device buffers, or when `move` (a call committed to a device)."""
        bufs = [leaf_buffer(x) for x in leaves]
        if move or self.platform is not None:  # host pieces spanning processes stay pieces
            bufs = [placement.buffer_for(x, self.platform_obj)
                    if type(x) is Array and type(b) is not DeviceShards else b
                    for x, b in zip(leaves, bufs)]
        elif any(type(x) is Array and x._platform is not None for x in leaves):
            # a host-buffer platform (cpu, opencl) given Arrays in device memory (cuda's)
            bufs = [placement.buffer_for(x, self.platform_obj)
                    if type(x) is Array and x._platform is not None else b
                    for x, b in zip(leaves, bufs)]
        return bufs


# Leaf types that are never tracers: a call whose leaves are all of these skips the test.
_PLAIN_LEAVES = frozenset((Array, np.ndarray, int, float, bool, complex))


def _fast_key(args, sigs) -> list | None:
    """The fast path's key for positional `args` with leaf signatures `sigs` (see
    PjitFunction.__call__), or None when they are not all Arrays and NumPy arrays of a
    canonical dtype (those are converted on every call, so they take the full path)."""
    key = []
    for a, sig in zip(args, sigs):
        if type(a) is Array:
            key.append(sig)
        elif type(a) is np.ndarray and leaf_buffer(a) is a:
            key += [a.shape, a.dtype]
        else:
            return None
    return key


class _HashableStatic:
    """Wraps a static argument: hash plus strict type equality, as JAX does."""

    __slots__ = ("val", "_hash")

    def __init__(self, val):
        self.val = val
        try:
            self._hash = hash(val)
        except TypeError as e:
            raise ValueError(
                "Non-hashable static arguments are not supported. An error occurred while trying "
                f"to hash an object of type {type(val)}, {val}. The error was:\n"
                f"{type(e).__name__}: {e}\n") from e

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return type(other) is _HashableStatic and type(self.val) is type(other.val) \
            and bool(self.val == other.val)


class _JitState:
    """What the jits of one function with the same options share, as JAX's jit cache is
    keyed on the function and jit's options: `jit(f)` twice traces and compiles once. It
    never holds the function, so that the weak table below lets functions be collected."""

    __slots__ = ("sig", "static_argnums", "static_argnames", "donate_argnums", "cache", "staged",
                 "fast", "out_shardings_cache", "__weakref__")

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames):
        try:
            self.sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self.sig = None
        self.static_argnums, self.static_argnames = infer_names(
            self.sig, static_argnums, static_argnames, "static")
        self.donate_argnums, donate_names = infer_names(self.sig, donate_argnums,
                                                         donate_argnames, "donate")
        if both := set(self.static_argnames) & set(donate_names):
            raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                             f"names {both} appear in both static_argnames and donate_argnames")
        self.cache: dict = {}
        self.staged: dict = {}  # key -> (ClosedProgram, out tree) staged under transformations
        self.fast: dict = {}  # (arg avals..., trace state) -> entry, for all-Array positional calls
        self.out_shardings_cache: dict = {}

    def clear(self):
        self.cache.clear()
        self.staged.clear()
        self.fast.clear()
        self.out_shardings_cache.clear()


# {function: {jit options: _JitState}}: weak in the function (a bound method's entry goes with
# that method object, a partial's with that partial, as in JAX).
_JIT_STATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jit_state(fun, options, static_argnums, static_argnames, donate_argnums, donate_argnames):
    """The shared state of `fun` jitted with `options` (a hashable key, or None for a state
    of its own, as for a function that is not hashable or not weakly referable)."""
    by_options = None
    if options is not None:
        try:
            by_options = _JIT_STATES.get(fun)
            if by_options is None:
                by_options = _JIT_STATES[fun] = {}
        except TypeError:
            by_options = None
    state = by_options.get(options) if by_options is not None else None
    if state is None:
        state = _JitState(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
        if by_options is not None:
            by_options[options] = state
    return state


class PjitFunction:
    """A function compiled once per input signature; calls with a cached signature are cheap.
    Jits of one function with the same options share their caches (see _JitState). Named and
    printed as JAX's jit object, which libraries recognise by its type's name."""

    def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused=False, inline=False, device=None,
                 shardings=None, options=None):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        # Copy the name and docstring, and only public attributes: a private one of `fun`
        # would shadow this object's own methods.
        functools.update_wrapper(self, fun, updated=())
        fun_dict = getattr(fun, "__dict__", None)
        if fun_dict:
            self.__dict__.update({k: v for k, v in fun_dict.items() if not k.startswith("_")})
        self._fun = fun
        self._inline = inline
        state = _jit_state(fun, options, static_argnums, static_argnames, donate_argnums,
                           donate_argnames)
        self._state = state
        self._sig = state.sig
        self._static_argnums, self._static_argnames = state.static_argnums, state.static_argnames
        self._donate_argnums = state.donate_argnums
        self._cache = state.cache
        self._staged = state.staged
        self._fast = state.fast
        # (in_shardings, out_shardings) when either is given: such calls skip the fast path.
        self._shardings = shardings
        self._out_shardings_cache = state.out_shardings_cache
        self._plain = not (self._static_argnums or self._static_argnames or self._donate_argnums
                           or shardings is not None)
        self._device = device  # jit(device=...): where every call runs
        self._name = getattr(fun, "__name__", type(fun).__name__)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<PjitFunction of {self._fun!r}>"  # as JAX prints it (libraries match it)

    @property
    def __signature__(self):
        """The wrapped function's signature, as JAX's jit reports it: `inspect.signature(f,
        follow_wrapped=False)` reads it (this class's `__get__` makes inspect take it for a
        builtin otherwise)."""
        return self._sig if self._sig is not None else inspect.signature(self._fun)

    # --- the call path ---------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # Fast path: positional arguments that are Arrays (keyed by aval) or NumPy arrays
        # (keyed by shape and dtype: no aval to find or hash), eager, nothing special to do.
        if not kwargs and self._plain:
            sig, bufs = [], []
            for a in args:
                t = type(a)
                if t is Array:
                    if a._deleted or a._committed:
                        break
                    sig.append(a._aval or a.aval)
                    bufs.append(a._value)
                elif t is np.ndarray:
                    sig.append(a.shape)
                    sig.append(a.dtype)
                    bufs.append(a)
                else:
                    break
            else:
                entry = self._fast.get((*sig, config._trace_state))
                if entry is not None and config._fast_dispatch and core._ctx.trace is eval_trace \
                        and not placement.active[0]:
                    return entry.wrap_outputs(entry.fn(*bufs))
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _flags["disable_jit"]:
            return self._fun(*args, **kwargs)
        if self._static_argnums or self._static_argnames or kwargs:
            dyn_args, dyn_kwargs, statics, arg_names = self._split_static(args, kwargs)
        else:
            dyn_args, dyn_kwargs, statics, arg_names = args, {}, (), None
        leaves, in_tree = pytrees.tree_flatten((dyn_args, dyn_kwargs))
        try:
            sigs = tuple(map(leaf_signature, leaves))
        except TypeError:
            self._bad_argument(leaves, in_tree, arg_names, statics)
            raise
        in_flat = None
        if self._shardings is not None:  # runs on the devices the shardings name
            device, in_flat = self._sharding_device(kwargs, in_tree, leaves, arg_names, statics)
        else:  # computation follows committed inputs; two committed devices raise ValueError
            device = placement.committed_device(
                leaves, self._name, lambda: leaf_arg_names(in_tree, arg_names, self._sig,
                                                           statics))
            if device is not None and any(type(x) is Array and type(x._value) is DeviceShards
                                          for x in leaves):
                self._check_split_devices(in_tree, leaves, arg_names, statics)
        where = device or self._device or (
            placement.current_default_device() if placement.active[0] else None)
        state = config.trace_state() if where is None else config.trace_state() + (where,)
        if batching._axis_env:  # collectives inside may depend on the named axes' sizes
            state += (batching.axis_env(),)
        key = (in_tree, sigs, statics, state)
        entry = self._cache.get(key)
        trace = core.current_trace()
        if trace is eval_trace and (set(map(type, leaves)) <= _PLAIN_LEAVES
                                    or not any(isinstance(x, Tracer) for x in leaves)):
            split = data_parallel.mesh_and_specs(leaves, in_flat)
            if split is not None:  # inputs split over several devices: a program per device
                out = self._call_split(split, key, leaves, in_tree, sigs, statics, arg_names,
                                       in_flat is None)
                if out is not _NOT_SPLIT:
                    return out
            if entry is None:
                entry = self._compile(key, leaves, in_tree, sigs, statics, arg_names, where)
            if self._plain and not kwargs and len(leaves) == len(args) and where is None:
                # also when compiled already: NumPy arrays of a signature first seen as Arrays
                fast_key = _fast_key(args, sigs)
                if fast_key is not None:
                    self._fast.setdefault((*fast_key, key[3]), entry)
            bufs = entry.buffers(leaves, move=where is not None)
            if _flags["no_execution"]:
                _refuse_execution(self._name)
            fn = entry.fn
            if self._donate_argnums and hasattr(fn, "donating"):  # outputs take donated buffers
                fn = fn.donating(donated_positions(args, leaves, self._donate_argnums))
            if profiler.recording():
                with profiler.TraceAnnotation(f"jit({self._name})"):
                    outs = fn(*bufs)
            else:
                outs = fn(*bufs)
            results = entry.wrap_outputs(outs, flat=True)
            if where is not None:
                placement.commit(results, where, committed=device is not None)
            if self._donate_argnums:
                self._donate(args, results)
            if _flags["debug_nans"] or _flags["debug_infs"]:
                self._check_nans(entry, bufs, results)
            if self._shardings is not None and self._shardings[1] is not None:
                _attach_shardings(results, self._out_shardings(entry.out_tree, entry.closed))
            return pytrees.tree_unflatten(entry.out_tree, results)
        # Under a transformation: stage a jit equation; its rules transform the Program.
        staged_programs = self._staged_programs()
        staged = staged_programs.get(key)
        if staged is None:
            closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
            if self._shardings is not None and self._shardings[1] is not None:
                self._out_shardings(out_tree, closed)  # checked; values carry no sharding
            closed, hoisted = pe.hoist_tracer_consts(closed)
            if not hoisted:  # closes over no tracer: later calls stage the same Program, as in
                staged_programs[key] = closed, out_tree  # JAX (printed once: `let f = ...`)
        else:
            (closed, out_tree), hoisted = staged, []
        if self._inline:
            outs = core.eval_program(closed.program, closed.consts, [*hoisted, *leaves])
        else:
            outs = jit_p.bind(*hoisted, *leaves, name=self._name, jaxpr=closed)
        return pytrees.tree_unflatten(out_tree, list(outs))

    def _bad_argument(self, leaves, in_tree, arg_names, statics):
        """Raise JAX's TypeError naming the first argument that is not an array type."""
        names = leaf_arg_names(in_tree, arg_names, self._sig, statics) or [""] * len(leaves)
        for leaf, name in zip(leaves, names):
            try:
                core.get_aval(leaf)
            except TypeError:
                raise TypeError(
                    f"Error interpreting argument to {self._fun!r} as an abstract array. The "
                    f"problematic value is of type {type(leaf)} and was passed to the function "
                    f"at path {name}.\nThis typically means that a jit-wrapped function was "
                    "called with a non-array argument, and this argument was not marked as "
                    "static using the static_argnums or static_argnames parameters of "
                    "jax.jit.") from None

    # --- in_shardings and out_shardings ---------------------------------------------
    def _sharding_device(self, kwargs, in_tree, leaves, arg_names, statics):
        """Check in_shardings against this call's arguments as JAX does (a committed argument
        held otherwise raises; every sharding on one device assignment) and return the
        device the call runs on (the first of the shardings', None when none is given) and
        the flat in_shardings (None when not given)."""
        in_s, out_s = self._shardings
        mesh = tree_shardings.jit_context_mesh()
        names = leaf_arg_names(in_tree, arg_names, self._sig, statics) or [""] * len(leaves)
        in_flat = None
        if in_s is not None:
            if kwargs:
                raise ValueError("pjit does not support kwargs when in_shardings is specified.")
            in_flat = tree_shardings.flatten_axis_resources(
                "pjit in_shardings", in_tree.children()[0], in_s, tupled_args=True)
            in_flat = [tree_shardings.sharding_for_spec(mesh, x, "in_shardings", "jit")
                       for x in in_flat]
            tree_shardings.check_aval_sharding(in_flat, [leaf_aval(x) for x in leaves], names,
                                               "pjit arguments")
        out_flat = [] if out_s is None else [
            tree_shardings.sharding_for_spec(mesh, x, "out_shardings", "jit")
            for x in pytrees.tree_leaves(out_s, is_leaf=lambda x: x is None)]
        resolved = tree_shardings.resolve_in_shardings(
            in_flat or [tree_shardings.UNSPECIFIED] * len(leaves), leaves)
        fun_name = getattr(self._fun, "__qualname__", self._name)
        tree_shardings.check_device_assignment(resolved, out_flat, leaves, names, fun_name)
        device = tree_shardings.common_device(resolved + out_flat, f"jit({self._name})")
        return device, in_flat

    def _check_split_devices(self, in_tree, leaves, arg_names, statics) -> None:
        """JAX's ValueError when committed arguments, one of them split over devices, are not
        all on the same device assignment (committed_device compares only first devices)."""
        names = leaf_arg_names(in_tree, arg_names, self._sig, statics) or [""] * len(leaves)
        resolved = tree_shardings.resolve_in_shardings(
            [tree_shardings.UNSPECIFIED] * len(leaves), leaves)
        tree_shardings.check_device_assignment(
            resolved, [], leaves, names, getattr(self._fun, "__qualname__", self._name))

    def _call_split(self, split, key, leaves, in_tree, sigs, statics, arg_names, typed):
        """The call on inputs split over a mesh of several devices (sharding/data_parallel.py):
        the Program traced once per signature, then run as one program per device."""
        mesh, specs = split
        staged = self._staged_programs()
        if key not in staged:
            staged[key] = self._trace(leaves, in_tree, sigs, statics, arg_names)
        closed, out_tree = staged[key]
        out_flat = None
        if self._shardings is not None and self._shardings[1] is not None:
            out_flat = self._out_shardings(out_tree, closed)
        if data_parallel.has_shard_map(closed):  # already a program per device
            outs = data_parallel.run_shard_maps(closed, leaves, out_flat, typed)
            return _NOT_SPLIT if outs is None else pytrees.tree_unflatten(out_tree, outs)
        outs = data_parallel.run(closed, leaves, mesh, specs, out_flat,
                                 data_parallel.typed_leaves(leaves))
        return pytrees.tree_unflatten(out_tree, outs)

    def _out_shardings(self, out_tree, closed) -> list:
        """out_shardings as one Sharding (or UNSPECIFIED) per output, checked against the
        outputs as JAX does (cached per output structure and mesh in context)."""
        from gpuarr.sharding.shardings import Sharding
        mesh = tree_shardings.jit_context_mesh()
        key = (out_tree, tuple(a.shape for a in closed.out_avals), mesh)
        flat = self._out_shardings_cache.get(key)
        if flat is None:
            out_s = self._shardings[1]
            if isinstance(out_s, Sharding):
                flat = [out_s] * out_tree.num_leaves
            else:
                flat = tree_shardings.flatten_axis_resources("pjit out_shardings", out_tree, out_s,
                                                             tupled_args=False)
            flat = [tree_shardings.sharding_for_spec(mesh, x, "out_shardings", "jit") for x in flat]
            tree_shardings.check_aval_sharding(flat, closed.out_avals, _result_paths(out_tree),
                                               "pjit outputs")
            self._out_shardings_cache[key] = flat
        return flat

    def _split_static(self, args, kwargs):
        statics = []
        dyn_args = []
        names = self._arg_names(len(args), kwargs)
        for i, a in enumerate(args):
            if i in self._static_argnums or (i - len(args)) in self._static_argnums:
                statics.append((i, _HashableStatic(a)))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_argnames:
                statics.append((k, _HashableStatic(v)))
            else:
                dyn_kwargs[k] = v
        for i in self._static_argnums:
            if i >= len(args) and self._sig is not None:
                pass  # supplied by keyword or default; handled through static_argnames
        return tuple(dyn_args), dyn_kwargs, tuple(statics), names

    def _leaf_names(self, in_tree, statics) -> list:
        """A readable name for each flattened input of a call (for compile logs)."""
        return leaf_arg_names(in_tree, None, self._sig, statics)

    def _arg_names(self, nargs, kwargs):
        if self._sig is None:
            return None
        params = [p.name for p in self._sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return params[:nargs] + list(kwargs)

    def _trace(self, leaves, in_tree, sigs, statics, arg_names):
        if _flags["no_tracing"]:
            code = getattr(self._fun, "__code__", None)
            where = f"{self._name} at {code.co_filename}:{code.co_firstlineno}" if code \
                else repr(self._fun)
            raise RuntimeError(f"re-tracing function {where} for `jit`, but 'no_tracing' is set")
        avals = [s if isinstance(s, ShapedArray) else abstractify(leaves[i])
                 for i, s in enumerate(sigs)]
        static_pos = {k: s.val for k, s in statics}
        out_tree_box = []

        def flat_fun(*flat):
            dyn_args, dyn_kwargs = pytrees.tree_unflatten(in_tree, list(flat))
            args, it = [], iter(dyn_args)
            total = len(dyn_args) + sum(1 for k in static_pos if isinstance(k, int))
            for i in range(total):
                args.append(static_pos[i] if i in static_pos else next(it))
            kwargs = dict(dyn_kwargs)
            kwargs.update({k: v for k, v in static_pos.items() if isinstance(k, str)})
            out = self._fun(*args, **kwargs)
            out_leaves, out_tree = pytrees.tree_flatten(out)
            out_tree_box.append(out_tree)
            _check_returned(out, "jit", self._fun)
            return out_leaves

        leaf_names = leaf_arg_names(in_tree, arg_names, self._sig, statics)
        watched = _flags["log_compiles"] or monitoring.has_duration_listeners()
        start = _clock() if watched else None
        if _flags["check_tracer_leaks"]:
            from gpuarr.debug import trace_checking_leaks
            closed = trace_checking_leaks(flat_fun, avals, (self._name, leaf_names), self._name)
        else:
            closed = pe.trace_to_program(flat_fun, avals, debug_info=(self._name, leaf_names))
        if start is not None:
            elapsed = _clock() - start
            if _flags["log_compiles"]:
                _log_trace(self, elapsed)
            monitoring.record_event_duration_secs(
                "/jax/core/compile/jaxpr_trace_duration", elapsed, fun_name=self._name)
        return closed, out_tree_box[0]

    def _compile(self, key, leaves, in_tree, sigs, statics, arg_names, device=None):
        with profiler.TraceAnnotation(f"compile jit({self._name})"):
            return self._compile_entry(key, leaves, in_tree, sigs, statics, arg_names, device)

    def _compile_entry(self, key, leaves, in_tree, sigs, statics, arg_names, device):
        if _flags["log_compiles"] or _flags["explain_cache_misses"]:
            _log_compile(self, key)
        closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
        platform = placement.platform_of(device or placement.target_device())
        start = _clock() if monitoring.has_duration_listeners() else None
        # the passes, then codegen, of the program over physical data
        fn = compilation.backend_compile_and_load(platform, physical.physicalize(closed))
        if start is not None:
            monitoring.record_event_duration_secs(
                "/jax/core/compile/backend_compile_duration", _clock() - start,
                fun_name=f"jit({self._name})")
        entry = _CacheEntry(closed, fn, out_tree, [a.weak_type for a in closed.out_avals], platform)
        self._cache[key] = entry
        return entry

    def _donate(self, args, results):
        # Keyword arguments are never donated (as in JAX); a donated pytree donates every leaf.
        donated = []
        for i in self._donate_argnums:
            if i < len(args):
                donated.extend(x for x in pytrees.tree_leaves(args[i]) if type(x) is Array)
        usable = [(r.shape, r.dtype) for r in results]
        unusable = []
        for x in donated:
            sig = (x.shape, x.dtype)
            if sig in usable:
                usable.remove(sig)
            else:
                unusable.append(_layout_str(x))
            x.delete()
        if unusable:
            shapes = ", ".join(unusable)
            warnings.warn(f"Some donated buffers were not usable: {shapes}.\n"
                          "Donation is not implemented for some buffers of this shape and dtype; "
                          "remove them from donate_argnums.", UserWarning, stacklevel=3)

    def _check_nans(self, entry, bufs, results):
        """On a NaN/Inf in the outputs (debug_nans/debug_infs), run the de-optimized Program
        (traced again, without the compiler's passes) op by op on the NumPy backend and raise
        FloatingPointError naming the primitive that produced it and the user's source line."""
        from gpuarr.dispatch import nonfinite_kind, nonfinite_message
        kind = next((k for k in map(nonfinite_kind, results) if k is not None), None)
        if kind is None:
            return
        print("Invalid nan value encountered in the output of a gpuarr.jit function. "
              "Calling the de-optimized version.")
        key = next((k for k, e in self._cache.items() if e is entry), None)
        closed = entry.closed
        if key is not None:
            in_tree, sigs, statics, _ = key
            leaves = [s(b) if isinstance(s, type) else b for s, b in zip(sigs, bufs)]
            closed, _ = self._trace(leaves, in_tree, sigs, statics, None)
        if entry.platform is not None:  # device buffers: the op-by-op run is on the host
            bufs = [entry.platform.to_host(b) for b in bufs]
        raise_at_nonfinite(closed, bufs)
        raise FloatingPointError(
            f"{nonfinite_message(kind, f'jit({self._name})')}. Because jax_debug_nans and/or "
            "jax_debug_infs is set, the de-optimized function (the function as if the `jit` "
            "decorator were removed) was run op by op to find the operation that produced it. "
            "However, it produced no invalid values: the compiler's optimizations may have "
            "produced the value, or it came from nan/inf inputs or literals (like "
            "`jit(lambda x: jnp.nan)(x)`). Removing the `jit` decorator may avoid it.")

    # --- ahead-of-time stages (gpuarr.stages) ---------------------------------------------
    def trace(self, *args, **kwargs) -> stages.Traced:
        """Trace for the signature of `args` (arrays or ShapeDtypeStructs) without compiling."""
        dyn_args, dyn_kwargs, statics, arg_names = self._split_static(args, kwargs)
        leaves, in_tree = pytrees.tree_flatten((dyn_args, dyn_kwargs))
        sigs = tuple(leaf_aval(x) if isinstance(x, ShapeDtypeStruct) else leaf_signature(x)
                     for x in leaves)
        if self._shardings is not None:
            self._sharding_device(kwargs, in_tree, leaves, arg_names, statics)
        closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
        out_flat = None
        if self._shardings is not None and self._shardings[1] is not None:
            out_flat = self._out_shardings(out_tree, closed)
        donated = set(donated_positions(args, leaves, self._donate_argnums))
        args_info = pytrees.tree_unflatten(in_tree, [
            stages.ArgInfo(a, i in donated) for i, a in enumerate(closed.in_avals)])
        out_info = pytrees.tree_unflatten(out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                             sharding=None if out_flat is None else _sharding_or_none(out_flat[i]))
            for i, a in enumerate(closed.out_avals)])
        names = leaf_arg_names(in_tree, arg_names, self._sig, statics)
        common = (in_tree, out_tree, args_info, self._name, self._donate_argnums, out_info)

        def platform():
            return placement.platform_of(self._device or placement.target_device())

        def compile(lowered):  # the lowered Program has been through the passes already
            plat = platform()
            fn = compilation.backend_compile_and_load(plat, lowered.compiler_ir(), optimized=True)
            entry = _CacheEntry(lowered.compiler_ir(), fn, out_tree,
                                [a.weak_type for a in closed.out_avals], plat, closed.out_avals)
            run = functools.partial(_run_entry, entry, name=self._name)
            if out_flat is not None:
                run = functools.partial(_run_with_shardings, run, out_flat)
            return stages.Compiled(entry.closed, *common, run, names,
                                   functools.partial(_compiled_text, entry))

        def lower(traced):
            return stages.Lowered(platform().optimize(physical.physicalize(traced.jaxpr)),
                                  *common, compile,
                                  arg_names=names)

        return stages.Traced(closed, *common, lower)

    def eval_shape(self, *args, **kwargs):
        """The output shapes and dtypes (ShapeDtypeStructs) of a call with `args`, traced
        without compiling or running (jit(f).eval_shape, as in JAX)."""
        return self.trace(*args, **kwargs).out_info

    def lower(self, *args, **kwargs) -> stages.Lowered:
        """Trace and run the compiler's passes for the signature of `args`:
        `jit(f).lower(x).compile()(x)` compiles ahead of the first call."""
        return self.trace(*args, **kwargs).lower()

    def _staged_programs(self) -> dict:
        """The Programs staged under transformations, by call signature: shared by the plain
        jits of one function, as JAX's tracing cache is."""
        if self._plain and self._device is None:
            try:
                return _STAGED.setdefault(self._fun, {})
            except TypeError:  # not weakly referable
                pass
        return self._staged

    def clear_cache(self):
        """Drop the compiled programs of this function's jits (with these options)."""
        self._state.clear()
        with contextlib.suppress(TypeError):  # a function that is not weakly referable
            _STAGED.pop(self._fun, None)

    def _cache_size(self):
        return len(self._cache)


_NOT_SPLIT = object()


def _refuse_execution(name: str):
    raise RuntimeError(f"JAX tried to execute function jit({name}), but the no_execution "
                       "config option is set")


def _run_entry(entry: _CacheEntry, leaves, name: str = ""):
    """Run a compiled entry on flat arguments; the outputs as the entry's pytree of Arrays."""
    if _flags["no_execution"]:
        _refuse_execution(name)
    return entry.wrap_outputs(entry.fn(*entry.buffers(leaves)))


def _run_with_shardings(run, shardings, leaves):
    """A compiled entry's outputs, each reporting its out_sharding."""
    out = run(leaves)
    _attach_shardings(pytrees.tree_leaves(out), shardings)
    return out


def _sharding_or_none(s):
    from gpuarr.sharding.shardings import Sharding
    return tree_shardings.concrete_sharding(s) if isinstance(s, Sharding) else None


# ClosedProgram -> text of its fused kernels with their source: filled by gpuarr.compiler.explain
# at import (the compiler sits above this module).
kernel_plan_text = None


def _compiled_text(entry: _CacheEntry) -> str:
    """The code an entry runs: the NumPy backend's Python source, or the fused kernels."""
    source = getattr(entry.fn, "source", None)
    if source is not None:
        return source
    return kernel_plan_text(entry.closed)


class config_disable_passes:
    """Context manager that turns the compiler's passes off (`config.enable_passes`)."""

    def __enter__(self):
        self._old = _flags["enable_passes"]
        config.update("enable_passes", False)

    def __exit__(self, *exc):
        config.update("enable_passes", self._old)


def _layout_str(x) -> str:
    """`f32[2,3]{1,0}`: the short type and the (row-major) layout, as XLA prints buffers."""
    aval = x.aval
    layout = ",".join(str(i) for i in reversed(range(aval.ndim)))
    return f"{aval.str_short()}{{{layout}}}"


class _NotSpecified:
    """The default of jit's `fun`: `jit(static_argnums=...)` returns a decorator, while an
    explicit `jit(None)` is JAX's TypeError."""

    def __repr__(self):
        return "<not-specified>"


_NOT_SPECIFIED = _NotSpecified()


def jit(fun: Callable | _NotSpecified = _NOT_SPECIFIED, /, *, in_shardings=None, out_shardings=None,
        static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
        keep_unused=False, device=None, backend=None, inline=False, compiler_options=None):
    """Compile `fun` with tracing: it runs once per input signature (pytree structure, shapes,
    dtypes, weak types, static argument values and tracing-relevant config), and later calls
    with the same signature reuse the compiled Program. `static_argnums`/`static_argnames`
    mark arguments whose Python values are part of the signature (they must be hashable);
    `donate_argnums`/`donate_argnames` let outputs reuse input buffers, after which the
    donated arrays can't be used; `device` or `backend` (deprecated, as in JAX) choose where
    it runs. `in_shardings`/`out_shardings` (Shardings, PartitionSpecs on the mesh given to
    `set_mesh`, or pytree prefixes of them) are checked as JAX checks them; the call runs on
    their one device and the outputs report out_shardings. Works as `jit(f, ...)`, `@jit`
    and `@partial(jit, ...)`."""
    options = dict(in_shardings=in_shardings, out_shardings=out_shardings,
                   static_argnums=static_argnums, static_argnames=static_argnames,
                   donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                   keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                   compiler_options=compiler_options)
    if fun is _NOT_SPECIFIED:
        return functools.partial(jit, **options)
    where = _jit_device(device, backend)
    shardings = None
    if in_shardings is not None or out_shardings is not None:
        shardings = _jit_shardings(in_shardings, out_shardings, device, backend)
    compilation.check_compiler_options(compiler_options)
    options = _options_key(static_argnums, static_argnames, donate_argnums, donate_argnames,
                           keep_unused, inline, where, shardings)
    return PjitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                  keep_unused, inline, where, shardings, options)


def _options_key(*options):
    """jit's options as a hashable key of its cache (None where one is not hashable: that
    jit then has a cache of its own). Shardings in dicts or lists key by their leaves."""
    key = []
    for x in options:
        if isinstance(x, list):
            x = tuple(x)
        try:
            hash(x)
        except TypeError:
            leaves, tree = pytrees.tree_flatten(x, is_leaf=lambda v: v is None)
            x = (tree, tuple(leaves))
            try:
                hash(x)
            except TypeError:
                return None
        key.append(x)
    return tuple(key)


def _jit_shardings(in_shardings, out_shardings, device, backend):
    """jit's in_shardings/out_shardings checked as JAX checks them when jit is called:
    Shardings, PartitionSpecs (on the mesh given to set_mesh) or None, in pytrees. Each call
    then runs on their one device and its outputs report out_shardings."""
    if device is not None or backend is not None:
        for name, value in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
            if value is not None:
                raise ValueError(f"If backend or device is specified on jit, then {name} should "
                                 "not be specified.")
    if isinstance(in_shardings, list):  # a list is taken as the tuple of the arguments
        in_shardings = tuple(in_shardings)
    tree_shardings.prepare_axis_resources(in_shardings, "in_shardings")
    tree_shardings.prepare_axis_resources(out_shardings, "out_shardings")
    return in_shardings, out_shardings


def _host_buffer(o):
    """An output buffer of a host platform as an Array holds it: a NumPy array, or this
    process's pieces of a global array spanning processes."""
    return o if type(o) is DeviceShards else np.asarray(o)


def _result_paths(out_tree) -> list[str]:
    """`result`, `result[0]`, `result['a']`: how JAX names each output in messages."""
    dummy = pytrees.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    return [f"result{pytrees.keystr(path)}"
            for path, _ in pytrees.tree_flatten_with_path(dummy)[0]]


def _attach_shardings(results, shardings) -> None:
    """Make each output Array report its out_sharding (committed to its device)."""
    from gpuarr.sharding.shardings import Sharding
    for r, s in zip(results, shardings):
        if type(r) is Array and isinstance(s, Sharding):
            r._device = tree_shardings.device_of(s, "jit")
            r._committed = True
            r._sharding = tree_shardings.concrete_sharding(s)


def _jit_device(device, backend):
    """The device that jit's deprecated `device`/`backend` arguments name, or None."""
    if device is None and backend is None:
        return None
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  "`jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the inputs to "
                  "the jitted function to get the same behavior.", DeprecationWarning, stacklevel=3)
    if device is not None and backend is not None:
        raise ValueError("can't specify both a device and a backend for jit, got "
                         f"device={device} and backend={backend!r}")
    if device is None:
        from gpuarr.device_api import devices
        device = devices(backend)[0]
    return device


class disable_jit:
    """Context manager (and decorator) that runs jitted functions as plain Python."""

    def __init__(self, disable: bool = True):
        self._disable = disable

    def __enter__(self):
        self._old = _flags["disable_jit"]
        config.update("disable_jit", self._disable)

    def __exit__(self, *exc):
        config.update("disable_jit", self._old)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


_STAGED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> staged Programs


def clear_caches():
    """Drop every compiled-program cache (jit caches are emptied lazily by key change)."""
    for by_options in list(_JIT_STATES.values()):
        for state in by_options.values():
            state.clear()
    for obj in gc.get_objects():  # the jits with a state of their own
        if type(obj) is PjitFunction and hasattr(obj, "_state"):  # none: its __init__ raised
            obj._state.clear()
    impls.clear_compiled()
    platforms.clear_caches()
    _STAGED.clear()
    ad._jvp_program_cache.clear()
    batching._batch_closed_cache.clear()


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape=False):
    """A function that returns the ClosedProgram (printed in jaxpr syntax) `fun` traces to."""
    static_argnums = index_tuple(static_argnums)
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:  # checked as jit checks it (JAX traces make_jaxpr with jit)
        validate_argnums(list(sig.parameters.values()), static_argnums, "static_argnums")

    @functools.wraps(fun)
    def make(*args, **kwargs):
        nums = {i % len(args) if i < 0 else i for i in static_argnums} if args else set()
        statics = {i: a for i, a in enumerate(args) if i in nums}
        dyn = [a for i, a in enumerate(args) if i not in nums]
        leaves, in_tree = pytrees.tree_flatten((dyn, kwargs))
        avals = [leaf_aval(x) for x in leaves]
        out_box = []

        def flat_fun(*flat):
            dyn_args, kw = pytrees.tree_unflatten(in_tree, list(flat))
            it = iter(dyn_args)
            full = [statics[i] if i in statics else next(it) for i in range(len(args))]
            out = fun(*full, **kw)
            out_leaves, out_tree = pytrees.tree_flatten(out)
            out_box.append((out, out_tree))
            return out_leaves

        if _flags["check_tracer_leaks"]:
            from gpuarr.debug import trace_checking_leaks

            def drop_outputs():  # out_box keeps the output tree only
                out_box[0] = (None, out_box[0][1])
            closed = trace_checking_leaks(flat_fun, avals, None, getattr(fun, "__name__", ""),
                                          before_check=drop_outputs)
        else:
            closed = pe.trace_to_program(flat_fun, avals)
        if return_shape:
            out_tree = out_box[0][1]
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
            return closed, pytrees.tree_unflatten(out_tree, shapes)
        return closed

    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """The output shapes and dtypes of `fun(*args)` as ShapeDtypeStructs, without computing."""
    closed, shapes = make_jaxpr(lambda *a, **k: fun(*a, **k), return_shape=True)(*args, **kwargs)
    return shapes


linalg_extra.jit = jit  # lax.linalg.qdwh runs under jit, as JAX's does
