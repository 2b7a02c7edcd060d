"""Compile logging (`jax_log_compiles`) and cache-miss explanations (`jax_explain_cache_misses`)."""
from __future__ import annotations

import logging

from gpuarr import core
from gpuarr.config import config
from gpuarr.core import ShapedArray
from gpuarr.dispatch import eval_trace

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)


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
                      "gpuarr_enable_passes", "jax_platforms", "jax_numpy_rank_promotion",
                      "jax_numpy_dtype_promotion", "jax_threefry_partitionable",
                      "make_user_context values")


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
    arg_names = jitted._leaf_names(in_tree, statics)
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
