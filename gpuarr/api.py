"""User-facing transformations: jit, make_jaxpr, grad, vjp, jvp, linearize, vmap, device_put."""
from __future__ import annotations

import functools
import inspect
import logging
import warnings
from collections.abc import Callable

import numpy as np

from gpuarr import core, dtypes, placement, tree_util
from gpuarr.array import Array
from gpuarr.backends import numpy_backend
from gpuarr.config import config
from gpuarr.core import ClosedProgram, Primitive, ShapedArray, Tracer, abstract_eval_rules
from gpuarr.dispatch import eval_trace, to_device_array
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)

# ---------------------------------------------------------------- the jit primitive

jit_p = Primitive("jit", multiple_results=True)


def _jit_impl(*args, jaxpr: ClosedProgram, name: str):
    return numpy_backend.compile_closed(jaxpr)(*args)


numpy_backend.impl_rules[jit_p] = _jit_impl
abstract_eval_rules[jit_p] = lambda *avals, jaxpr, name: list(jaxpr.out_avals)
core.weak_type_rules[jit_p] = lambda *args, jaxpr, name: [a.weak_type for a in jaxpr.out_avals]


def _jit_jvp(primals, tangents, jaxpr, name):
    program = jaxpr
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    jvp_prog = ad.jvp_program(program, nonzeros)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, name=f"jvp({name})", jaxpr=jvp_prog)
    n = len(program.out_avals)
    return outs[:n], outs[n:]


def _jit_batch(axis_size, vals, dims, jaxpr, name):
    batched = batching.batch_program(jaxpr, axis_size, tuple(dims))
    outs = jit_p.bind(*vals, name=name, jaxpr=batched)
    return outs, [0] * len(outs)


def _jit_partial_eval(trace, args, params):
    # Inline: known parts then run on the parent (concretely, or staged in an outer jit).
    program = params["jaxpr"]
    return core.eval_program(program.program, program.consts, args)


ad.jvp_rules[jit_p] = _jit_jvp
batching.batch_rules[jit_p] = _jit_batch
pe.partial_eval_rules[jit_p] = _jit_partial_eval


def _jit_transpose(cts, *args, jaxpr, name):
    program = jaxpr
    undefined = [ad.is_undefined(a) for a in args]
    known = [a for a in args if not ad.is_undefined(a)]

    def linear_fn(*lin):
        it_lin, it_known = iter(lin), iter(known)
        full = [next(it_lin) if u else next(it_known) for u in undefined]
        return core.eval_closed(program, *full)

    lin_avals = [a.aval for a in args if ad.is_undefined(a)]
    _, linear = ad.linearize_flat(linear_fn, [np.zeros(a.shape, a.dtype) for a in lin_avals])
    cts_in = iter(ad.backward_pass(linear, cts))
    return [next(cts_in) if u else None for u in undefined]


ad.transpose_rules[jit_p] = _jit_transpose

# ---------------------------------------------------------------- passes hook


def _optimize(closed: ClosedProgram) -> ClosedProgram:
    if not _flags["enable_passes"]:
        return closed
    try:
        from gpuarr.compiler import passes
    except ImportError:
        return closed
    return passes.optimize(closed)


# ---------------------------------------------------------------- jit


def _leaf_signature(x):
    t = type(x)
    if t is Array:
        return x.aval
    if t in (int, float, complex, bool):
        return t
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    return _abstractify(x)


def _abstractify(x) -> ShapedArray:
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type. Pass arrays, "
                        "Python scalars or pytrees of them, or mark the argument static with "
                        "static_argnums/static_argnames.") from None


def _leaf_buffer(x):
    t = type(x)
    if t is Array:
        return x._buffer
    if t in _SCALARS:
        return np.asarray(x, dtypes.dtype(x, canonicalize=True))[()]
    return np.asarray(x, dtypes.canonicalize_dtype(np.asarray(x).dtype))


class _CacheEntry:
    __slots__ = ("closed", "fn", "out_tree", "out_weak", "single", "platform", "platform_obj")

    def __init__(self, closed, fn, out_tree, out_weak, platform=None):
        self.closed = closed
        self.fn = fn
        self.out_tree = out_tree
        self.out_weak = out_weak
        self.single = out_tree == tree_util.tree_structure(0)
        self.platform_obj = platform
        # Only platforms whose buffers live on a device (cuda) wrap outputs with the platform;
        # cpu and opencl return host NumPy arrays.
        self.platform = platform if getattr(platform, "device_buffers", False) else None

    def wrap_outputs(self, outs, flat=False):
        """Output buffers of a device platform as Arrays (a pytree unless `flat`)."""
        plat = self.platform
        results = [Array(o, w, platform=plat) for o, w in zip(outs, self.out_weak)]
        if flat:
            return results
        return results[0] if self.single else tree_util.tree_unflatten(self.out_tree, results)


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


class Jitted:
    """A function compiled once per input signature; calls with a cached signature are cheap."""

    def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused=False, inline=False):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._inline = inline
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self._static_argnums, self._static_argnames = _infer_names(
            self._sig, static_argnums, static_argnames, "static")
        self._donate_argnums, _ = _infer_names(self._sig, donate_argnums, donate_argnames, "donate")
        self._cache: dict = {}
        self._fast: dict = {}  # (arg avals..., trace state) -> entry, for all-Array positional calls
        self._plain = not (self._static_argnums or self._static_argnames or self._donate_argnums)
        self._name = getattr(fun, "__name__", type(fun).__name__)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<gpuarr.jit of {self._fun!r}>"

    # --- the call path ---------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # Fast path: positional Array arguments, eager, nothing special to do.
        if not kwargs and self._plain:
            sig = []
            for a in args:
                if type(a) is not Array or a._deleted or a._committed:
                    break
                sig.append(a._aval or a.aval)
            else:
                entry = self._fast.get((*sig, config._trace_state))
                if entry is not None and core._ctx.trace is eval_trace and not placement.active[0] \
                        and not (
                        _flags["disable_jit"] or _flags["debug_nans"] or _flags["debug_infs"]):
                    outs = entry.fn(*[a._value for a in args])
                    if entry.platform is not None:  # device buffers (cuda) stay where they are
                        return entry.wrap_outputs(outs)
                    if entry.single:
                        o = outs[0]
                        return Array(o if type(o) is np.ndarray else np.asarray(o), entry.out_weak[0])
                    results = [Array(o if type(o) is np.ndarray else np.asarray(o), w)
                               for o, w in zip(outs, entry.out_weak)]
                    return tree_util.tree_unflatten(entry.out_tree, results)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _flags["disable_jit"]:
            return self._fun(*args, **kwargs)
        if self._static_argnums or self._static_argnames or kwargs:
            dyn_args, dyn_kwargs, statics, arg_names = self._split_static(args, kwargs)
        else:
            dyn_args, dyn_kwargs, statics, arg_names = args, {}, (), None
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        sigs = tuple(map(_leaf_signature, leaves))
        # Computation follows committed inputs; two committed devices raise ValueError.
        device = placement.committed_device(
            leaves, self._name, lambda: _leaf_arg_names(in_tree, arg_names, self._sig, statics))
        where = device or (placement.current_default_device() if placement.active[0] else None)
        state = config.trace_state() if where is None else config.trace_state() + (where,)
        key = (in_tree, sigs, statics, state)
        entry = self._cache.get(key)
        trace = core.current_trace()
        if trace is eval_trace and not any(isinstance(x, Tracer) for x in leaves):
            if entry is None:
                entry = self._compile(key, leaves, in_tree, sigs, statics, arg_names, where)
                if self._plain and not kwargs and all(type(x) is Array for x in args) \
                        and len(leaves) == len(args) and where is None:
                    self._fast[(*sigs, key[3])] = entry
            bufs = [_leaf_buffer(x) for x in leaves]
            if where is not None or entry.platform is not None:
                bufs = [placement.buffer_for(x, entry.platform_obj) if type(x) is Array else b
                        for x, b in zip(leaves, bufs)]
            fn = entry.fn
            if self._donate_argnums and hasattr(fn, "donating"):  # outputs take donated buffers
                fn = fn.donating(_donated_positions(args, leaves, self._donate_argnums))
            outs = fn(*bufs)
            if entry.platform is not None:
                results = entry.wrap_outputs(outs, flat=True)
            else:
                results = [Array(o if type(o) is np.ndarray else np.asarray(o), w)
                           for o, w in zip(outs, entry.out_weak)]
            if where is not None:
                placement.commit(results, where, committed=device is not None)
            if self._donate_argnums:
                self._donate(args, results)
            if _flags["debug_nans"] or _flags["debug_infs"]:
                self._check_nans(entry, bufs, results)
            return tree_util.tree_unflatten(entry.out_tree, results)
        # Under a transformation: stage a jit equation; its rules transform the Program.
        closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
        closed, hoisted = pe.hoist_tracer_consts(closed)
        if self._inline:
            outs = core.eval_program(closed.program, closed.consts, [*hoisted, *leaves])
        else:
            outs = jit_p.bind(*hoisted, *leaves, name=self._name, jaxpr=closed)
        return tree_util.tree_unflatten(out_tree, list(outs))

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

    def _arg_names(self, nargs, kwargs):
        if self._sig is None:
            return None
        params = [p.name for p in self._sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return params[:nargs] + list(kwargs)

    def _trace(self, leaves, in_tree, sigs, statics, arg_names):
        avals = [s if isinstance(s, ShapedArray) else _abstractify(leaves[i])
                 for i, s in enumerate(sigs)]
        static_pos = {k: s.val for k, s in statics}
        out_tree_box = []

        def flat_fun(*flat):
            dyn_args, dyn_kwargs = tree_util.tree_unflatten(in_tree, list(flat))
            args, it = [], iter(dyn_args)
            total = len(dyn_args) + sum(1 for k in static_pos if isinstance(k, int))
            for i in range(total):
                args.append(static_pos[i] if i in static_pos else next(it))
            kwargs = dict(dyn_kwargs)
            kwargs.update({k: v for k, v in static_pos.items() if isinstance(k, str)})
            out = self._fun(*args, **kwargs)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            for leaf in out_leaves:
                _check_output(leaf, self._name)
            return out_leaves

        leaf_names = _leaf_arg_names(in_tree, arg_names, self._sig, statics)
        start = _clock() if _flags["log_compiles"] else None
        if _flags["check_tracer_leaks"]:
            from gpuarr.debug import trace_checking_leaks
            closed = trace_checking_leaks(flat_fun, avals, (self._name, leaf_names), self._name)
        else:
            closed = pe.trace_to_program(flat_fun, avals, debug_info=(self._name, leaf_names))
        if start is not None:
            _log_trace(self, _clock() - start)
        return closed, out_tree_box[0]

    def _compile(self, key, leaves, in_tree, sigs, statics, arg_names, device=None):
        if _flags["log_compiles"] or _flags["explain_cache_misses"]:
            _log_compile(self, key)
        closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
        closed = _optimize(closed)
        platform = placement.platform_of(device or placement.target_device())
        fn = platform.compile(closed)
        entry = _CacheEntry(closed, fn, out_tree, [a.weak_type for a in closed.out_avals], platform)
        self._cache[key] = entry
        return entry

    def _donate(self, args, results):
        # Keyword arguments are never donated (as in JAX); a donated pytree donates every leaf.
        donated = []
        for i in self._donate_argnums:
            if i < len(args):
                donated.extend(x for x in tree_util.tree_leaves(args[i]) if type(x) is Array)
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
        from gpuarr.debug import raise_at_nonfinite
        raise_at_nonfinite(closed, bufs)
        raise FloatingPointError(
            f"{nonfinite_message(kind, f'jit({self._name})')}. Because jax_debug_nans and/or "
            "jax_debug_infs is set, the de-optimized function (the function as if the `jit` "
            "decorator were removed) was run op by op to find the operation that produced it. "
            "However, it produced no invalid values: the compiler's optimizations may have "
            "produced the value, or it came from nan/inf inputs or literals (like "
            "`jit(lambda x: jnp.nan)(x)`). Removing the `jit` decorator may avoid it.")

    # --- AOT-style inspection ------------------------------------------------------------
    def trace(self, *args, **kwargs):
        """Trace without compiling; returns an object with `.jaxpr` (the ClosedProgram)."""
        return _Traced(self, *self._flatten_for_trace(args, kwargs))

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs)

    def _flatten_for_trace(self, args, kwargs):
        dyn_args, dyn_kwargs, statics, arg_names = self._split_static(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        sigs = tuple(map(_leaf_signature, leaves))
        closed, out_tree = self._trace(leaves, in_tree, sigs, statics, arg_names)
        return closed, out_tree

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    def _cache_size(self):
        return len(self._cache)


class _Traced:
    def __init__(self, jitted, closed, out_tree):
        self.jaxpr = closed
        self.out_tree = out_tree
        self._jitted = jitted

    def compile(self):
        return self

    def as_text(self):
        return str(self.jaxpr)


class config_disable_passes:
    def __enter__(self):
        self._old = _flags["enable_passes"]
        _flags["enable_passes"] = False

    def __exit__(self, *exc):
        _flags["enable_passes"] = self._old


def _layout_str(x) -> str:
    """`f32[2,3]{1,0}`: the short type and the (row-major) layout, as XLA prints buffers."""
    aval = x.aval
    layout = ",".join(str(i) for i in reversed(range(aval.ndim)))
    return f"{aval.str_short()}{{{layout}}}"


def _check_output(leaf, name):
    if isinstance(leaf, (Array, Tracer, np.ndarray, np.generic) + _SCALARS):
        return
    raise TypeError(f"The function {name} returned a value of type {type(leaf).__name__}, which "
                    "is not a valid JAX type. Return arrays, scalars or pytrees of them.")


def _infer_names(sig, argnums, argnames, what):
    """Fill in argnums from argnames (and the reverse) using the signature, as JAX does."""
    if isinstance(argnums, int):
        argnums = (argnums,)
    if isinstance(argnames, str):
        argnames = (argnames,)
    argnums = tuple(argnums) if argnums is not None else None
    argnames = tuple(argnames) if argnames is not None else None
    if sig is None:
        return argnums or (), argnames or ()
    params = list(sig.parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if argnums is None and argnames is None:
        return (), ()
    if argnums is None:
        argnums = tuple(positional.index(n) for n in argnames if n in positional)
    elif argnames is None:
        argnames = tuple(positional[i] for i in argnums if -len(positional) <= i < len(positional))
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    for i in argnums:
        if not has_varargs and not -len(positional) <= i < len(positional) and what == "static":
            warnings.warn(f"{what}_argnums {i} is out of range for {len(positional)} positional "
                          "parameters", SyntaxWarning, stacklevel=4)
    return tuple(i % len(positional) if i < 0 and positional else i for i in argnums), argnames


def _leaf_arg_names(in_tree, arg_names, sig, statics):
    """A readable name for each flattened input (the parameter, plus a key path for pytrees)."""
    if sig is None:
        return []
    n_dyn = in_tree.num_leaves
    params = [p.name for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    static_idx = {k for k, _ in statics if isinstance(k, int)}
    dyn_names = [p for i, p in enumerate(params) if i not in static_idx]
    dummy = tree_util.tree_unflatten(in_tree, list(range(n_dyn)))
    names = [""] * n_dyn
    for path, leaf in tree_util.tree_flatten_with_path(dummy)[0]:
        if len(path) >= 2 and path[0] == tree_util.SequenceKey(0):
            idx = path[1].idx
            base = dyn_names[idx] if idx < len(dyn_names) else f"args[{idx}]"
        elif len(path) >= 2:
            base = path[1].key
        else:
            base = ""
        rest = tree_util.keystr(path[2:]) if len(path) > 2 else ""
        names[leaf] = f"{base}{rest}"
    return names


def _clock() -> float:
    import time
    return time.perf_counter()


def _log_trace(jitted, seconds: float) -> None:
    """Log one trace of a jitted function (jax_log_compiles), saying why it was traced."""
    trace = core.current_trace()
    why = "" if trace is eval_trace else (
        f" (called under {trace!r}: under a transformation jit traces on every call)")
    logger.warning(f"Finished tracing {jitted._name} for jit in {seconds:.9f} sec{why}")


def _log_compile(jitted, key):
    """Log a jit cache miss on the "gpuarr" logger at WARNING level, as JAX does.

    With jax_log_compiles: one line naming the function, its argument types and the reason.
    With jax_explain_cache_misses: JAX's "TRACING CACHE MISS" report, saying which part of
    the key changed (argument shape, dtype or weak type, a static argument, the pytree
    structure or a config option), compared with the closest key seen before."""
    in_tree, sigs, statics, state = key
    summary, report = _explain_miss(jitted, key)
    if _flags["explain_cache_misses"]:
        where = core.user_source_info()
        callsite = f"{where.file}:{where.line} ({where.function})" if where else "<unknown>"
        logger.warning(f"TRACING CACHE MISS at {callsite}:\n{report}")
    if _flags["log_compiles"]:
        types = [repr(_sig_aval(s)) for s in sigs]
        shown = "(" + ", ".join(types) + ("," if len(types) == 1 else "") + ")"
        logger.warning(f"Compiling jit({jitted._name}) with global shapes and types {shown}. "
                       f"Reason: {summary}.")


# Names of the values in config.trace_state(), in order.
_TRACE_STATE_NAMES = ("jax_enable_x64", "jax_debug_nans", "jax_debug_infs",
                      "gpuarr_enable_passes", "jax_platforms")


def _sig_aval(sig) -> ShapedArray:
    """The abstract value of a cache-key entry (a Python scalar's type stands for a weak scalar)."""
    return sig if isinstance(sig, ShapedArray) else core.get_aval(sig())


def _explain_miss(jitted, key):
    """Why `key` missed the cache: (a one-line summary, JAX's multi-line report)."""
    fun = jitted._fun
    code = getattr(fun, "__code__", None)
    defined = f" defined at {code.co_filename}:{code.co_firstlineno}" if code else ""
    if not jitted._cache:
        return ("first call", f"  never seen function:\n    {jitted._name} id={id(fun)}{defined}")
    # The closest previous key: fewest differences, in the order JAX ranks them.
    severity, title, diffs = min((_key_diffs(jitted, key, old) for old in jitted._cache),
                                 key=lambda d: (d[0], sum(cost for _, _, cost in d[2])))
    summary = "; ".join(short for short, _, _ in diffs) or "cache miss explanation unavailable"
    lines = [f"  for {jitted._name}{defined}",
             "  all previously seen cache keys differ. For the closest previous key:",
             f"  {title}:"] + [f"  * {long}" for _, long, _ in diffs]
    if any("weak_type" in long for _, long, _ in diffs):
        lines.append("  See https://docs.jax.dev/en/latest/type_promotion.html#weak-types")
    return summary, "\n".join(lines)


def _key_diffs(jitted, new, old):
    """(severity, title, [(short, long, cost) per difference]) between two cache keys."""
    new_tree, new_sigs, new_statics, new_state = new
    old_tree, old_sigs, old_statics, old_state = old
    if new_state != old_state:
        diffs = [(f"config option {n} changed from {b} to {a}",
                  f"{n} differs: now {a} and before {b}", 1)
                 for n, a, b in zip(_TRACE_STATE_NAMES, new_state, old_state) if a != b]
        return 0, "Tracing context doesn't match, e.g. due to config or context manager", diffs
    if new_tree != old_tree:
        return 1, "different input pytree", [("the pytree structure of the arguments changed",
                                              f"now {new_tree} and before {old_tree}", 1)]
    diffs = _static_diffs(jitted, new_statics, old_statics) + \
        _type_diffs(jitted, new_tree, new_statics, new_sigs, old_sigs)
    kinds = [k for k, ds in (("static arguments", new_statics != old_statics),
                             ("input types", new_sigs != old_sigs)) if ds]
    return 2, "different " + " and ".join(kinds), diffs


def _static_diffs(jitted, new_statics, old_statics) -> list:
    names = _positional_names(jitted)
    now = {k: s.val for k, s in new_statics}
    before = {k: s.val for k, s in old_statics}
    diffs = []
    for k in sorted(set(now) | set(before), key=str):
        a, b = now.get(k, "<absent>"), before.get(k, "<absent>")
        if k in now and k in before and type(a) is type(b) and bool(a == b):
            continue
        name = k if isinstance(k, str) else (names[k] if k < len(names) else f"args[{k}]")
        diffs.append((f"static argument {name} changed from {b!r} to {a!r}",
                      f"at {name}, now {a!r} and before {b!r}", 1))
    return diffs


def _type_diffs(jitted, in_tree, statics, new_sigs, old_sigs) -> list:
    arg_names = _leaf_arg_names(in_tree, None, jitted._sig, statics)
    diffs = []
    for i, (a_sig, b_sig) in enumerate(zip(new_sigs, old_sigs)):
        if a_sig == b_sig:
            continue
        name = arg_names[i] if i < len(arg_names) and arg_names[i] else f"args[{i}]"
        a, b = _sig_aval(a_sig), _sig_aval(b_sig)
        now, before = a.str_short(), b.str_short()
        aspects = [what for what, differs in (("shape", a.shape != b.shape),
                                              ("dtype", a.dtype != b.dtype),
                                              ("weak type", a.weak_type != b.weak_type)) if differs]
        if aspects == ["weak type"]:
            now += f"{{weak_type={a.weak_type}}}"
            before += f"{{weak_type={b.weak_type}}}"
        if aspects:
            short = f"argument {name} changed {' and '.join(aspects)} from {before} to {now}"
        else:  # same abstract value, but a Python scalar on one side and an array on the other
            now, before = f"{now} ({_kind(a_sig)})", f"{before} ({_kind(b_sig)})"
            short = f"argument {name} changed from {before} to {now}"
        diffs.append((short, f"at {name}, now {now} and before {before}", max(len(aspects), 1)))
    return diffs


def _kind(sig) -> str:
    return f"Python {sig.__name__}" if isinstance(sig, type) else "array"


def _positional_names(jitted) -> list:
    if jitted._sig is None:
        return []
    return [p.name for p in jitted._sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def jit(fun: Callable | None = None, *, static_argnums=None, static_argnames=None,
        donate_argnums=None, donate_argnames=None, keep_unused=False, device=None, backend=None,
        inline=False, abstracted_axes=None):
    """Compile `fun` with tracing: it runs once per input signature (pytree structure, shapes,
    dtypes, weak types, static argument values and tracing-relevant config), and later calls
    with the same signature reuse the compiled Program. `static_argnums`/`static_argnames`
    mark arguments whose Python values are part of the signature (they must be hashable);
    `donate_argnums`/`donate_argnames` let outputs reuse input buffers, after which the
    donated arrays can't be used. Works as `jit(f, ...)`, `@jit` and `@partial(jit, ...)`."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 keep_unused=keep_unused, inline=inline)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                  keep_unused, inline)


class disable_jit:
    """Context manager (and decorator) that runs jitted functions as plain Python."""

    def __init__(self, disable: bool = True):
        self._disable = disable

    def __enter__(self):
        self._old = _flags["disable_jit"]
        _flags["disable_jit"] = self._disable

    def __exit__(self, *exc):
        _flags["disable_jit"] = self._old

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


_all_jitted_caches: list = []


def clear_caches():
    """Drop every compiled-program cache (jit caches are emptied lazily by key change)."""
    import gc
    for obj in gc.get_objects():
        if type(obj) is Jitted:
            obj.clear_cache()
    numpy_backend._compiled.clear()
    ad._jvp_program_cache.clear()
    batching._batch_program_cache.clear()


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
    """A function that returns the ClosedProgram (printed in jaxpr syntax) `fun` traces to."""
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        statics = {i: a for i, a in enumerate(args) if i in static_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static_argnums]
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        avals = [_leaf_aval(x) for x in leaves]
        out_box = []

        def flat_fun(*flat):
            dyn_args, kw = tree_util.tree_unflatten(in_tree, list(flat))
            it = iter(dyn_args)
            full = [statics[i] if i in statics else next(it) for i in range(len(args))]
            out = fun(*full, **kw)
            out_leaves, out_tree = tree_util.tree_flatten(out)
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
            return closed, tree_util.tree_unflatten(out_tree, shapes)
        return closed

    return make


def _leaf_aval(x):
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if isinstance(x, Tracer):
        return x.aval
    return _abstractify(x)


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (for eval_shape, make_jaxpr, callbacks)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, sharding=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (
            other.shape, other.dtype, other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


def eval_shape(fun: Callable, *args, **kwargs):
    """The output shapes and dtypes of `fun(*args)` as ShapeDtypeStructs, without computing."""
    closed, shapes = make_jaxpr(lambda *a, **k: fun(*a, **k), return_shape=True)(*args, **kwargs)
    return shapes


# ---------------------------------------------------------------- differentiation


def _argnums_tuple(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _check_input_dtype(x, allow_int: bool, name: str):
    aval = core.get_aval(x)
    dt = aval.dtype
    if dtypes.is_float(dt) or dtypes.is_complex(dt):
        return
    if allow_int and (dtypes.is_int(dt) or dt == np.bool_):
        return
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def vjp(fun: Callable, *primals, has_aux: bool = False, reduce_axes=()):
    """Evaluate `fun(*primals)` and return (outputs, vjp_fn[, aux]); `vjp_fn(cotangents)` gives
    the cotangents of the inputs (a tuple, one per primal)."""
    flat_primals, in_tree = tree_util.tree_flatten(primals)
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "vjp")
    flat_primals = [_as_array(p) for p in flat_primals]
    primals_out, pullback_all = ad.vjp_flat(flat_fun, flat_primals)
    out_tree, n_out = store["out_tree"], store["n_out"]
    aux_out = primals_out[n_out:]
    primals_out = primals_out[:n_out]
    in_avals = [core.get_aval(p) for p in flat_primals]

    def pullback(cts):
        return pullback_all(list(cts) + [Zero(ad.tangent_aval(core.get_aval(a))) for a in aux_out])

    def vjp_fn(cotangents):
        cts, ct_tree = tree_util.tree_flatten(cotangents)
        if ct_tree != out_tree:
            raise ValueError(f"Expected pytree structure of cotangent to match the primal output "
                             f"structure {out_tree}, got {ct_tree}.")
        for c, p in zip(cts, primals_out):
            ca, want = core.get_aval(c), ad.tangent_aval(core.get_aval(p))
            if ca.shape != want.shape or (ca.dtype != want.dtype and not ca.weak_type
                                          and ca.dtype != dtypes.float0):
                def name(a):
                    return f"{a.dtype.name}[{','.join(map(str, a.shape))}]"
                raise ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                                 f"function: got {name(ca)}, but expected {name(want)} because "
                                 f"the corresponding output of the differentiated function had "
                                 f"JAX type {name(core.get_aval(p))}")
        cts = [_match_aval(_as_array(c), ad.tangent_aval(core.get_aval(p)))
               if core.get_aval(c).weak_type else c for c, p in zip(cts, primals_out)]
        cts_in = pullback(cts)
        cts_in = [_match_aval(_zero_or(ct, aval), aval) for ct, aval in zip(cts_in, in_avals)]
        return tree_util.tree_unflatten(in_tree, cts_in)

    out = tree_util.tree_unflatten(out_tree, primals_out)
    if has_aux:
        return out, vjp_fn, tree_util.tree_unflatten(store["aux_tree"], aux_out)
    return out, vjp_fn


def _flatten_fun_aux(fun, in_tree, has_aux, store, what):
    """`fun` over flat inputs returning its output leaves followed by its aux leaves (aux
    values leave the transformation as plain primal values, as in JAX)."""
    def flat_fun(*flat):
        out = fun(*tree_util.tree_unflatten(in_tree, list(flat)))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError(f"{what} with has_aux=True requires the function to return a "
                                 "pair (output, auxiliary data)")
            out, aux = out
            aux_leaves, store["aux_tree"] = tree_util.tree_flatten(aux)
        leaves, store["out_tree"] = tree_util.tree_flatten(out)
        store["n_out"] = len(leaves)
        return leaves + aux_leaves

    return flat_fun


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
    from gpuarr.lax import lax as lax_internal
    return lax_internal._convert_weak(ct, aval.dtype, aval.weak_type)


def _as_array(x):
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic) + _SCALARS):
        return to_device_array(x)
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
    """A function returning `(fun(*args), gradient)`, the gradient with respect to the
    positional arguments `argnums` (an int or a tuple) of a scalar-output `fun`. With
    `has_aux`, `fun` returns `(value, aux)` and the result is `((value, aux), gradient)`."""
    argnums_t = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        if max(argnums_t) >= len(args):
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                            f"{max(argnums_t) + 1} positional arguments to be passed by the "
                            f"caller, but got only {len(args)} positional arguments.")
        diff_args = tuple(args[i] for i in argnums_t)
        for leaf in tree_util.tree_leaves(diff_args):
            _check_input_dtype(leaf, allow_int, "grad")

        def partial_fun(*dargs):
            full = list(args)
            for i, d in zip(argnums_t, dargs):
                full[i] = d
            return fun(*full, **kwargs)

        if has_aux:
            ans, vjp_fn, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            ans, vjp_fn = vjp(partial_fun, *diff_args)
        leaves = tree_util.tree_leaves(ans)
        aval = core.get_aval(ans) if len(leaves) == 1 and not isinstance(ans, (tuple, list, dict)) \
            else None
        if aval is None or aval.shape != ():
            shape = aval.shape if aval is not None else type(ans).__name__
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                            f"{shape}. Reduce the output to a scalar (e.g. with .sum()), or use "
                            "jacrev/vjp for non-scalar outputs.")
        if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a "
                            f"sub-dtype of np.floating), but got {aval.dtype.name}. For "
                            "differentiation of functions with integer outputs, use jax.vjp "
                            "directly.")
        from gpuarr import lax
        g = vjp_fn(lax.full((), 1, aval.dtype))
        g = g[0] if isinstance(argnums, int) else g
        if has_aux:
            return (ans, aux), g
        return ans, g

    return value_and_grad_f


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
    """The gradient of scalar-output `fun` with respect to positional argument(s) `argnums`.
    Integer inputs need `allow_int=True` (their gradients have dtype float0); with `has_aux`
    the result is `(gradient, aux)`."""
    vg = value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)

    @functools.wraps(fun)
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
    flat_p, in_tree = tree_util.tree_flatten(tuple(primals))
    flat_t, t_tree = tree_util.tree_flatten(tuple(tangents))
    if in_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {in_tree} whereas tangents have "
                        f"tree structure {t_tree}.")
    for p, t in zip(flat_p, flat_t):
        pa, ta = core.get_aval(p), core.get_aval(t)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes;Got primal "
                             f"shape {pa.shape} and tangent shape as {ta.shape}")
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "jvp")
    flat_p = [_as_array(p) for p in flat_p]
    tangents_in = [Zero(ad.tangent_aval(core.get_aval(p))) if getattr(t, "dtype", None) == dtypes.float0
                   else _as_array(t) for p, t in zip(flat_p, flat_t)]
    outs_p, outs_t = ad.jvp_flat(flat_fun, flat_p, tangents_in)
    n_out, out_tree = store["n_out"], store["out_tree"]
    aux = outs_p[n_out:]
    outs_p, outs_t = outs_p[:n_out], outs_t[:n_out]
    outs_t = [_zero_or(t, core.get_aval(p)) for t, p in zip(outs_t, outs_p)]
    res = (tree_util.tree_unflatten(out_tree, outs_p), tree_util.tree_unflatten(out_tree, outs_t))
    return res + (tree_util.tree_unflatten(store["aux_tree"], aux),) if has_aux else res


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` evaluates the staged linear map."""
    flat_p, in_tree = tree_util.tree_flatten(primals)
    store: dict = {}
    flat_fun = _flatten_fun_aux(fun, in_tree, has_aux, store, "linearize")
    flat_p = [_as_array(p) for p in flat_p]
    outs_p, linear = ad.linearize_flat(flat_fun, flat_p)
    n_out, out_tree = store["n_out"], store["out_tree"]
    aux = outs_p[n_out:]
    outs_p = outs_p[:n_out]

    def f_jvp(*tangents):
        flat_t, t_tree = tree_util.tree_flatten(tangents)
        if t_tree != in_tree:
            raise ValueError(f"linearized function called on tangent values inconsistent with "
                             f"the original primal values: expected {in_tree}, got {t_tree}")
        outs = core.eval_closed(linear, *flat_t)[:n_out]
        return tree_util.tree_unflatten(out_tree, outs)

    res = (tree_util.tree_unflatten(out_tree, outs_p), f_jvp)
    return res + (tree_util.tree_unflatten(store["aux_tree"], aux),) if has_aux else res


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


def _jac_check(x, name, holomorphic=False):
    dt = core.get_aval(x).dtype
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                        f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                        "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of `fun` by forward mode (vmap of jvp over a basis of input tangents).
    For output leaf shape `o` and input leaf shape `i` the block has shape `o + i`; the
    result mirrors the output pytree, then the `argnums` structure, as jax.jacfwd."""
    argnums_t = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        diff_args = tuple(args[i] for i in argnums_t)
        flat_in, in_tree = tree_util.tree_flatten(diff_args)
        flat_in = [_as_array(x) for x in flat_in]
        for x in flat_in:
            _jac_check(x, "jacfwd")
        in_avals = [core.get_aval(x) for x in flat_in]

        def partial_flat(*flat):
            full = list(args)
            for i, d in zip(argnums_t, tree_util.tree_unflatten(in_tree, list(flat))):
                full[i] = d
            return fun(*full, **kwargs)

        def push(*basis):
            res = jvp(partial_flat, tuple(flat_in), tuple(basis), has_aux=has_aux)
            return res if has_aux else res[:2]

        basis = _std_basis(in_avals)
        # The primal output (and aux) come back stacked, one copy per basis vector: keep one.
        out_axes = (0, -1, 0) if has_aux else (0, -1)
        out = vmap(push, in_axes=0, out_axes=out_axes)(*basis)
        first = functools.partial(tree_util.tree_map, lambda v: v[0])
        y, jac_flat = first(out[0]), out[1]
        out = (y, jac_flat, first(out[2])) if has_aux else out
        y_leaves, y_tree = tree_util.tree_flatten(y)
        jac_leaves = tree_util.tree_leaves(jac_flat)
        from gpuarr import lax
        per_out = []
        for yl, jl in zip(y_leaves, jac_leaves):
            shape = core.get_aval(yl).shape
            blocks, start = [], 0
            for a in in_avals:
                piece = lax.slice_in_dim(jl, start, start + a.size, axis=len(shape))
                blocks.append(lax.reshape(piece, shape + a.shape))
                start += a.size
            per_out.append(_pack_argnums(tree_util.tree_unflatten(in_tree, blocks), argnums))
        jac = tree_util.tree_unflatten(y_tree, per_out)
        return (jac, out[2]) if has_aux else jac

    return jacfun


def _pack_argnums(diff_tree, argnums):
    return diff_tree[0] if isinstance(argnums, int) else tuple(diff_tree)


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian of `fun` by reverse mode (vmap of the vjp over a basis of output
    cotangents); block shapes and pytree layout as in `jacfwd` (jax.jacrev)."""
    argnums_t = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        diff_args = tuple(args[i] for i in argnums_t)
        for x in tree_util.tree_leaves(diff_args):
            if not allow_int:
                _jac_check(x, "jacrev")

        def partial_fun(*dargs):
            full = list(args)
            for i, d in zip(argnums_t, dargs):
                full[i] = d
            return fun(*full, **kwargs)

        if has_aux:
            y, pullback, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            y, pullback = vjp(partial_fun, *diff_args)
        y_leaves, y_tree = tree_util.tree_flatten(y)
        y_avals = [core.get_aval(v) for v in y_leaves]
        basis = _std_basis(y_avals)

        def pull(*cts):
            return tree_util.tree_leaves(pullback(tree_util.tree_unflatten(y_tree, list(cts))))

        cts_flat = vmap(pull)(*basis)
        in_leaves, in_tree = tree_util.tree_flatten(diff_args)
        from gpuarr import lax
        per_out, start = [], 0
        for ya in y_avals:
            blocks = []
            for c, xa in zip(cts_flat, in_leaves):
                shape = ya.shape + core.get_aval(xa).shape
                if getattr(c, "dtype", None) == dtypes.float0:  # integer input (allow_int)
                    blocks.append(np.zeros(shape, dtypes.float0))
                    continue
                blocks.append(lax.reshape(lax.slice_in_dim(c, start, start + ya.size, axis=0),
                                          shape))
            start += ya.size
            per_out.append(_pack_argnums(tree_util.tree_unflatten(in_tree, blocks), argnums))
        jac = tree_util.tree_unflatten(y_tree, per_out)
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
    flat_p, in_tree = tree_util.tree_flatten(primals)
    in_avals = [core.get_aval(p).strip_weak_type() for p in flat_p]
    for a in in_avals:
        if not (dtypes.is_float(a.dtype) or dtypes.is_complex(a.dtype)):
            raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                            f"complex], and integer -> integer functions, but got {a.dtype.name}.")
    out_box = []

    def flat_fun(*flat):
        out = fun(*tree_util.tree_unflatten(in_tree, list(flat)))
        leaves, out_tree = tree_util.tree_flatten(out)
        out_box.append(out_tree)
        return leaves

    # Stage the function with every input unknown; what does not depend on the inputs is
    # evaluated now, and the rest (linear in the inputs) is what gets transposed.
    closed = pe.trace_to_program(flat_fun, in_avals)
    known, unknown, out_unknowns, num_res = pe.partial_eval_program(
        closed.program, [True] * len(in_avals))
    known_vals = core.eval_program(known, closed.consts, [])
    linear = ClosedProgram(core.Program(unknown.invars[:num_res], unknown.invars[num_res:],
                                        unknown.eqns, unknown.outvars),
                           known_vals[len(known_vals) - num_res:])
    out_tree = out_box[0]
    out_avals = closed.out_avals

    def transposed(out_cotangent):
        cts, ct_tree = tree_util.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected {out_tree} "
                            f"but got {ct_tree}")
        for c, a in zip(cts, out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(f"cotangent type does not match function output, expected "
                                f"{a.str_short()} but got {ca.str_short()}")
        cts = [c for c, u in zip(cts, out_unknowns) if u]
        cts_in = ad.backward_pass(linear, cts)
        return tree_util.tree_unflatten(in_tree, [_zero_or(c, a) for c, a in zip(cts_in, in_avals)])

    return transposed


# ---------------------------------------------------------------- vmap


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorise `fun` over a mapped axis of its inputs. `in_axes` is an int, None, or a
    pytree prefix of the arguments giving each input's mapped axis (None: not mapped;
    negative axes count from the end); `out_axes` likewise places the batch axis in the
    outputs (None: the output must not vary along the batch). Keyword arguments are mapped
    over axis 0; `axis_size` gives the batch size when no input is mapped."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")

    @functools.wraps(fun)
    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
        axes_prefix = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
                       {k: 0 for k in kwargs})
        flat_axes = _broadcast_prefix(axes_prefix, (args, kwargs), "vmap in_axes")
        flat_args = [_as_array(a) if not isinstance(a, (Array, Tracer)) else a for a in flat_args]
        size = _mapped_size(flat_args, flat_axes, axis_size, _flat_arg_names(fun, args, kwargs))
        dims = [None if ax is None else ax % core.get_aval(x).ndim
                for x, ax in zip(flat_args, flat_axes)]
        out_box = []

        def flat_fun(*flat):
            a, kw = tree_util.tree_unflatten(in_tree, list(flat))
            out = fun(*a, **kw)
            leaves, out_tree = tree_util.tree_flatten(out)
            out_box.append((out, out_tree))
            return leaves

        outs, out_dims = batching.batch_flat(flat_fun, size, flat_args, dims, axis_name)
        out, out_tree = out_box[0]
        flat_out_axes = _broadcast_prefix(out_axes, out, "vmap out_axes")
        results = []
        for o, d, dst in zip(outs, out_dims, flat_out_axes):
            if dst is not None and isinstance(o, _SCALARS):  # broadcast, still weakly typed
                o = to_device_array(o)
            if dst is None:
                if d is not not_mapped:
                    raise ValueError(f"at vmap out_axes, got axis spec None but output was "
                                     f"batched on axis {d}")
                results.append(o)
                continue
            ndim = core.get_aval(o).ndim + (d is not_mapped)
            if not -ndim <= dst < ndim:
                raise ValueError(f"axis {dst} is out of bounds for array of dimension {ndim}")
            results.append(batching.move_to(o, d, dst % ndim, size))
        return tree_util.tree_unflatten(out_tree, results)

    return vmap_f


def _check_axes_spec(axes, name):
    for leaf in tree_util.tree_leaves(axes):
        if not isinstance(leaf, int) or isinstance(leaf, bool):
            raise TypeError(f"vmap {name} must be an int, None, or a tuple of entries "
                            "corresponding to the positional arguments passed to the function, "
                            f"but got {axes}.")


def _broadcast_prefix(prefix, tree, what):
    """Expand an axes prefix tree to one entry per leaf of `tree`."""
    result = []

    def visit(p, t):
        if p is None or isinstance(p, int):
            result.extend([p] * len(tree_util.tree_leaves(t)))
            return
        p_children, p_def = tree_util.tree_flatten(p, is_leaf=lambda x: x is None)
        try:
            subtrees = p_def.flatten_up_to(t)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                             f"value, got specification {prefix} for value tree "
                             f"{tree_util.tree_structure(tree)}.") from e
        for pc, st in zip(p_children, subtrees):
            visit(pc, st)

    visit(prefix, tree)
    return result


def _flat_arg_names(fun, args, kwargs):
    """A name per flattened argument leaf (the parameter it came from), for error messages."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        name = params[i] if i < len(params) else f"args[{i}]"
        names += [name] * len(tree_util.tree_leaves(a))
    for k, v in kwargs.items():
        names += [k] * len(tree_util.tree_leaves(v))
    return names


def _mapped_size(flat_args, flat_axes, axis_size, names=None):
    sizes, where = set(), []
    for i, (x, ax) in enumerate(zip(flat_args, flat_axes)):
        if ax is None:
            continue
        aval = core.get_aval(x)
        shape = aval.shape
        if not -len(shape) <= ax < len(shape):
            raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {max(ax + 1, -ax)}, but "
                             f"is only {len(shape)} (its shape is {shape})")
        sizes.add(shape[ax])
        name = names[i] if names and i < len(names) else f"args[{i}]"
        typ = f"{aval.dtype.name}[{','.join(str(d) for d in shape)}]"
        where.append(f"  * one axis had size {shape[ax]}: axis {ax} of argument {name} of type "
                     f"{typ}")
    if axis_size is not None and sizes and sizes != {axis_size}:
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join([f"  * the `axis_size` argument was {axis_size}"] + where))
    if axis_size is not None:
        return axis_size
    if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                         "must be specified")
    if len(sizes) > 1:
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join(where))
    return sizes.pop()


# ---------------------------------------------------------------- devices and data


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Put a pytree of arrays on `device`. With a Device the results are committed to it (later
    computations run there); with `device=None` they go, uncommitted, to the default device.
    Host data (NumPy arrays, Python scalars) is copied; an Array already in place is reused."""
    def put(leaf):
        if isinstance(leaf, Tracer):
            return leaf
        return placement.put(leaf, device)
    return tree_util.tree_map(put, x)


def device_get(x):
    """A pytree of NumPy arrays (copied to host) from a pytree of Arrays; other leaves pass
    through. Each leaf waits only for its own buffer."""
    return tree_util.tree_map(placement.get, x)


def block_until_ready(x):
    """Wait for every Array in the pytree `x`; returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def devices(backend: str | None = None):
    """The devices of `backend` ('cpu', 'gpu'/'cuda', 'opencl'; default: the default platform),
    e.g. `[CudaDevice(id=0)]` or `[CpuDevice(id=0)]`."""
    from gpuarr import platforms
    plat = platforms.get_platform(backend) if backend else platforms.default_platform()
    return list(plat.devices())


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices attached to this process (every device: gpuarr runs in one process)."""
    return devices(backend)


def device_count(backend=None) -> int:
    """How many devices `backend` (default: the default platform) has."""
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    """How many devices this process can use (same as `device_count`)."""
    return device_count(backend)


def default_backend() -> str:
    """The name of the default platform: 'gpu' for cuda (as JAX), 'opencl' or 'cpu'."""
    from gpuarr import platforms
    name = platforms.default_platform().name
    return "gpu" if name == "cuda" else name


default_device = placement.default_device


def _donated_positions(args, leaves, donate_argnums) -> tuple:
    """Flat input positions of the leaves of donated positional arguments."""
    donated = {id(x) for i in donate_argnums if i < len(args)
               for x in tree_util.tree_leaves(args[i]) if type(x) is Array}
    return tuple(k for k, leaf in enumerate(leaves) if id(leaf) in donated)


def typeof(x) -> ShapedArray:
    return core.get_aval(x)

