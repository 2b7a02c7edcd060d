"""gpuarr.debug: print and call back with run-time values from inside transformed functions.

`debug.print` and `debug.callback` bind `debug_callback_p`, an effectful primitive with no
outputs whose params hold the Python function (wrapped with the argument structure in a
small hashable object). Eagerly it calls the function at once; under `jit` it is staged
and the compiled Program calls it when it runs, so values are printed at run time, not
at trace time. Under `vmap` it calls once per batch element (the innermost `vmap`'s
index varying slowest, as in JAX); under `jvp`/`grad` it sees primal values only; it is
dropped by transposition. `ordered=True` keeps program order: on the NumPy backend a
compiled Program runs its equations in order, so every callback is ordered there.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import string
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuarr import core, pytrees
from gpuarr.array import Array
from gpuarr.callbacks import _operand
from gpuarr.core import Primitive, abstract_eval_rules, weak_type_rules
from gpuarr.impls import impl_for_values, impl_rules  # noqa: F401  (a name of gpuarr.debug)
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe

__all__ = ["breakpoint", "callback", "print", "debug_callback_p", "inspect_array_sharding",
           "visualize_array_sharding", "visualize_sharding"]

_SCALARS = (bool, int, float, complex)

# ---------------------------------------------------------------- callables held in params


@dataclasses.dataclass(frozen=True, eq=False)
class _DebugCallback:
    """Rebuilds the user's arguments from flat buffers and calls `fn` with them.

    `static` maps leaf positions to non-array leaves (strings, ...), kept out of the
    Program; `weak` holds the weak type of each array leaf, so the callback sees the same
    Arrays as in eager mode. Hashed by identity: static leaves need not be hashable."""

    fn: Callable[..., Any]
    in_tree: pytrees.PyTreeDef
    static: tuple
    weak: tuple
    label: str

    def __call__(self, *bufs):
        static = dict(self.static)
        dyn = iter(Array(np.asarray(b), w) for b, w in zip(bufs, self.weak))
        leaves = [static[i] if i in static else next(dyn)
                  for i in range(len(static) + len(bufs))]
        args, kwargs = pytrees.tree_unflatten(self.in_tree, leaves)
        self.fn(*args, **kwargs)

    def __repr__(self):
        return self.label


@dataclasses.dataclass(frozen=True, eq=False)
class _BatchedDebugCallback:
    """Calls `inner` once per element of a vmapped batch (`dims[i]`: batch axis of arg i)."""

    inner: Callable[..., Any]
    dims: tuple
    axis_size: int

    def __call__(self, *bufs):
        calls: list = []
        self._expand(bufs, (), calls)
        # Indices are collected outermost vmap first; JAX runs the innermost vmap's slowest.
        calls.sort(key=lambda c: c[0][::-1])
        for _, fn, args in calls:
            fn(*args)

    def _expand(self, bufs, index, calls):
        for i in range(self.axis_size):
            sliced = [b if d is None else np.take(np.asarray(b), i, axis=d)
                      for b, d in zip(bufs, self.dims)]
            if isinstance(self.inner, _BatchedDebugCallback):
                self.inner._expand(sliced, index + (i,), calls)
            else:
                calls.append((index + (i,), self.inner, sliced))

    def __repr__(self):
        return f"vmap({self.inner!r})"


# ---------------------------------------------------------------- debug_callback_p

debug_callback_p = Primitive("debug_callback", multiple_results=True, effectful=True)


def _debug_callback_impl(*args, callback, ordered):
    callback(*args)
    return []


def _debug_callback_batch(axis_size, vals, dims, callback, ordered):
    batched = _BatchedDebugCallback(callback, tuple(dims), axis_size)
    debug_callback_p.bind(*vals, callback=batched, ordered=ordered)
    return [], []


def _debug_callback_jvp(primals, tangents, callback, ordered):
    # The callback sees primal values only; it has no outputs, so no tangents.
    debug_callback_p.bind(*primals, callback=callback, ordered=ordered)
    return [], []


impl_rules[debug_callback_p] = _debug_callback_impl
abstract_eval_rules[debug_callback_p] = lambda *avals, callback, ordered: []
weak_type_rules[debug_callback_p] = lambda *args, callback, ordered: []
batching.batch_rules[debug_callback_p] = _debug_callback_batch
ad.jvp_rules[debug_callback_p] = _debug_callback_jvp
ad.transpose_rules[debug_callback_p] = lambda cts, *args, callback, ordered: [None] * len(args)


def _bind_callback(fn, args, kwargs, ordered: bool, label: str) -> None:
    flat, in_tree = pytrees.tree_flatten((args, kwargs))
    static, dyn, weak = [], [], []
    # Weak types are known while tracing only: a callback that runs in a compiled program
    # gets plain Arrays, as JAX's does; one that runs now (eager, eager jvp) keeps them.
    staged = type(core.current_trace()) is pe.StagingTrace
    for i, leaf in enumerate(flat):
        try:
            core.get_aval(leaf)
        except TypeError:
            static.append((i, leaf))
            continue
        abstract = staged or isinstance(leaf, core.Tracer) and leaf.to_concrete_value() is None
        weak.append(not abstract and (isinstance(leaf, _SCALARS) and type(leaf) is not bool
                                      or bool(getattr(leaf, "weak_type", False))))
        dyn.append(_operand(leaf))
    cb = _DebugCallback(fn, in_tree, tuple(static), tuple(weak), label)
    debug_callback_p.bind(*dyn, callback=cb, ordered=bool(ordered))


# ---------------------------------------------------------------- debug.callback


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any):
    """Call `callback(*args, **kwargs)` with run-time values, from eager or staged code.

    Array arguments arrive as concrete gpuarr Arrays (any non-array leaves are passed
    through unchanged); the callback's return value is ignored. Under `jit` it runs each
    time the compiled function runs, under `vmap` once per batch element, under
    `jvp`/`grad` with primal values. Two call forms work, as in JAX:
    `debug.callback(f, x)` and `debug.callback(ordered=True)(f, x)`."""
    def _debug_callback(fn, *c_args, **c_kwargs):
        if not callable(fn):
            raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                            f"object of type {type(fn)}")
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        _bind_callback(fn, c_args, c_kwargs, ordered, name)

    if callback is not None:
        _debug_callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_callback received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return _debug_callback


# ---------------------------------------------------------------- debug.print


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should "
                "pass in a regular string.")


_checker = _FormatChecker()


@dataclasses.dataclass(frozen=True)
class _Printer:
    """Formats and writes one debug.print line, under the NumPy print options of its call."""

    fmt: str
    np_printoptions: tuple
    has_placeholders: bool
    use_logging: bool = False

    def __call__(self, *args, **kwargs):
        if self.has_placeholders:
            with np.printoptions(**dict(self.np_printoptions)):
                msg = self.fmt.format(*args, **kwargs)
        else:
            msg = " ".join((self.fmt, *(str(a) for a in args)))
        if self.use_logging:
            _logger.info(msg)
        else:
            sys.stdout.write(msg + "\n")


_logger = logging.getLogger("gpuarr.debugging")


def print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          skip_format_check: bool = False, _use_logging: bool = False, **kwargs):
    """Print `fmt.format(*args, **kwargs)` with run-time values (JAX's `jax.debug.print`).

    Formatting is delayed until the values exist, so pass a plain format string, not an
    f-string. Under `jit` it prints each time the compiled function runs; under `vmap`
    once per batch element; under `jvp`/`grad` the primal values. With no placeholders
    the arguments are printed after `fmt`, separated by spaces. Arguments the format
    string doesn't use raise `ValueError`. Two call forms work:
    `debug.print("{x}", x=x)` and `debug.print(ordered=True)("{x}", x=x)`."""
    def _debug_print(fmt, *c_args, **c_kwargs):
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        printer = _Printer(fmt, tuple(np.get_printoptions().items()), has_placeholders,
                           _use_logging)
        _bind_callback(printer, c_args, c_kwargs, ordered, f"print({fmt!r})")

    if fmt is not None:
        _debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return _debug_print


log = functools.partial(print, _use_logging=True)
log.__doc__ = """`debug.print`'s message written to the "gpuarr.debugging" logger at INFO level
(JAX's `jax.debug.log`), at the same moments debug.print would print it."""

# ---------------------------------------------------------------- sharding inspection


def _carried(x):
    """The value a vmap, jvp or jet tracer carries (its batch, its primal), else None: those
    traces hand it on to their parent trace."""
    if isinstance(x, batching.BatchTracer):
        return x.val
    jet = sys.modules.get("gpuarr.experimental.jet")
    if isinstance(x, ad.JVPTracer) or (jet is not None and isinstance(x, jet.JetTracer)):
        return x.primal
    return None


def _stages(trace) -> bool:
    """Whether a concrete value bound on `trace` is staged into a Program (by jit, or a
    control-flow body), after the traces that hand concrete values on to their parent."""
    jet = sys.modules.get("gpuarr.experimental.jet")
    forwarding = (batching.BatchTrace, ad.JVPTrace, pe.PartialEvalTrace,
                  *(() if jet is None else (jet.JetTrace,)))
    while isinstance(trace, forwarding):
        trace = trace.parent
    return isinstance(trace, pe.StagingTrace)


def _compiled_sharding():
    """The Sharding of a value inside a compiled Program. JAX asks the compiler, which on one
    device keeps every value whole there: `NamedSharding(mesh, P())` over the devices of the
    mesh given to `set_mesh` (its axes Auto, as JAX rebuilds it), else that device's
    SingleDeviceSharding."""
    from gpuarr import placement
    from gpuarr.sharding import mesh as sharding_mesh
    from gpuarr.sharding import mesh_context, partition_spec, shardings
    mesh = mesh_context.get_concrete_mesh()
    if not mesh.empty:
        return shardings.NamedSharding(sharding_mesh.Mesh(mesh.devices, mesh.axis_names),
                                       partition_spec.PartitionSpec())
    return shardings.SingleDeviceSharding(placement.target_device())


def _sharding_of(x):
    trace = core.current_trace()
    while isinstance(x, core.Tracer):
        inner = _carried(x)
        if inner is None:  # staged: its sharding is chosen when the Program is compiled
            return _compiled_sharding()
        trace, x = x._trace.parent, inner
    if not isinstance(x, (Array, np.ndarray, np.generic, *_SCALARS)):
        raise TypeError("Error interpreting argument to inspect_sharding as a JAX value. The "
                        f"problematic value is of type {type(x)} and was passed to "
                        "inspect_sharding at position 0.")
    if _stages(trace):
        return _compiled_sharding()
    if type(x) is not Array:
        raise AttributeError(f"'{type(x).__name__}' object has no attribute 'sharding': "
                             "inspect_array_sharding takes Arrays (see device_put).")
    return x.sharding


def inspect_array_sharding(value, *, callback: Callable[[Any], None]) -> None:
    """Call `callback(sharding)` with the Sharding of each Array in the pytree `value`, as
    early as it is known (JAX's `jax.debug.inspect_array_sharding`).

    Outside `jit` (also under `vmap`, `grad`, whose values are concrete) it calls back at
    once with the array's own `.sharding`. Inside `jit` it calls back once, when the
    function is traced and compiled (not on cached calls), with the sharding of a value in
    the compiled Program: on gpuarr's one device the whole value on that device
    (`NamedSharding(mesh, P())` when a mesh is set with `set_mesh`). Returns None."""
    for leaf in pytrees.tree_leaves(value):
        callback(_sharding_of(leaf))


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print how `arr` is laid out over devices (`visualize_sharding` of its shape and its
    sharding, the sharding found as `inspect_array_sharding` finds it)."""
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))


def _platform_label(device) -> str:
    return {"cuda": "GPU"}.get(device.platform, device.platform.upper())


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
    """Print a box standing for an array of `shape` (1 or 2 dimensions) laid out as
    `sharding`, each device's piece labelled with its platform and id ("CPU 0").

    Sizes follow JAX's drawing (10 * `scale` rows for a 2-D array, widths by its aspect
    ratio, clamped to `min_width`..`max_width`). On gpuarr's one device the box is a single
    piece. With `rich` installed it draws through rich as JAX does (coloured on a terminal
    when matplotlib is there too); otherwise it prints the same box as plain text."""
    if len(shape) > 2 or len(shape) < 1:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    indices = sharding.devices_indices_map(tuple(shape))
    devices = sorted(indices, key=lambda d: d.id)
    label = f"{_platform_label(devices[0])} " + ",".join(str(d.id) for d in devices)
    base_height = int(10 * scale)
    aspect_ratio = (shape[1] if len(shape) == 2 else 1) / shape[0]
    width = min(max(int(int(base_height * aspect_ratio) * 2.5), min_width), max_width)
    height = base_height if len(shape) == 2 else 1
    left, extra = divmod(width - len(label) - 2, 2)
    top, extra_rows = divmod(height - 2, 2)
    padding = (top, left + extra, top + extra_rows, left)  # top, right, bottom, left
    try:
        import rich.console  # noqa: F401  (optional, as in JAX)
    except ImportError:
        _print_box(label, padding)
    else:
        _print_rich(label, padding, use_color, color_map, max_width)


def _print_box(label: str, padding) -> None:
    """The box rich draws for one piece without colour, as plain text."""
    top, right, bottom, left = (max(p, 0) for p in padding)
    inner = left + len(label) + right
    blank = "│" + " " * inner + "│"
    lines = ["┌" + "─" * inner + "┐", *[blank] * top,
             "│" + " " * left + label + " " * right + "│", *[blank] * bottom,
             "└" + "─" * inner + "┘"]
    sys.stdout.write("\n".join(lines) + "\n")


def _print_rich(label: str, padding, use_color: bool, color_map, max_width: int) -> None:
    import rich.align
    import rich.box
    import rich.console
    import rich.padding
    import rich.style
    import rich.table

    console = rich.console.Console(width=max_width)
    use_color = use_color and console.color_system is not None
    if use_color and not color_map:
        try:
            import matplotlib as mpl
            color_map = mpl.colormaps["tab20b"]
        except ModuleNotFoundError:
            use_color = False
    color = text_color = None
    if use_color:
        r, g, b = (int(a * 255) for a in color_map(0.0)[:3])
        color = f"#{r:02X}{g:02X}{b:02X}"
        text_color = "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"
        padding = tuple(p + 1 for p in padding)
    table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0,
                             highlight=not use_color, pad_edge=False,
                             box=None if use_color else rich.box.SQUARE)
    cell = rich.align.Align(label, "center", vertical="middle")
    table.add_row(rich.padding.Padding(cell, tuple(max(p, 0) for p in padding),
                                       style=rich.style.Style(bgcolor=color, color=text_color)))
    console.print(table, end="\n\n")


# ---------------------------------------------------------------- check_tracer_leaks


def trace_checking_leaks(fun, in_avals, debug_info=None, name: str = "", before_check=None):
    """`partial_eval.trace_to_program`, then raise if a tracer of that trace is still referenced.

    Used by jit and make_jaxpr when `jax_check_tracer_leaks` is on (it costs a garbage
    collection per trace). `before_check` drops references the caller itself still holds."""
    from gpuarr.interpreters import partial_eval as pe

    box = []

    def probed(*args):
        box.append(core.current_trace())
        return fun(*args)

    closed = pe.trace_to_program(probed, in_avals, debug_info=debug_info)
    if before_check is not None:
        before_check()
    _raise_if_leaked(box.pop(), name)
    return closed


def _raise_if_leaked(trace, name: str) -> None:
    import gc

    from gpuarr.errors import UnexpectedTracerError

    gc.collect()
    leaked = [r for r in gc.get_referrers(trace)
              if isinstance(r, core.Tracer) and r._trace is trace]
    if not leaked:
        return
    lines = []
    for tracer in leaked:
        holders = [type(r).__name__ for r in gc.get_referrers(tracer)
                   if r is not leaked and not _is_frame(r)]
        held = f"\nIt is referenced by: {', '.join(holders)}." if holders else ""
        lines.append(f"{tracer!r}\n{_created_where(trace, tracer, name)}{held}")
    raise UnexpectedTracerError(
        f"Leaked trace {trace!r} of {name or 'a function'}. Leaked tracer(s):\n\n"
        + "\n\n".join(lines)
        + "\n\nA traced value escaped the function being traced (for example it was stored in a "
        "global, a list or an object attribute). Return it from the function instead.")


def _is_frame(obj) -> bool:
    return type(obj).__name__ == "frame"


def _created_where(trace, tracer, name: str) -> str:
    var = getattr(tracer, "_var", None)
    for eqn in getattr(trace, "eqns", ()):
        if any(v is var for v in eqn.outvars):
            where = eqn.source_info if eqn.source_info is not None else "an unknown location"
            return f"This tracer was created on line {where} by {eqn.prim.name}."
    invars = getattr(trace, "invars", [])
    if var in invars:
        arg_names = (getattr(trace, "debug_info", None) or (None, []))[1]
        i = invars.index(var)
        arg = f" {arg_names[i]!r}" if i < len(arg_names) and arg_names[i] else ""
        return f"This tracer is the argument{arg} of {name or 'the traced function'}."
    return "This tracer was created while tracing."


# debug_nans: re-running a jitted Program op by op to find the operation (dispatch's).
from gpuarr.debugger import breakpoint  # noqa: E402 - jax.debug.breakpoint
from gpuarr.dispatch import raise_at_nonfinite  # noqa: F401, E402
