"""Render kernel specs (gpuarr.compiler.plan) into source text by filling the kernels/ templates.

The C comes from three places only: the templates in kernels/ (`${slot}`s, string.Template),
the dialect and helper headers they include, and the per-op expression table in
`lowering.EXPRESSIONS`. This module computes slot values: the parameter list, one line per
node of the expression DAG (`const f32 v3 = exp(v2);  // c = exp b`), index arithmetic for
each load, and the launch shape. The result is one self-contained translation unit that
compiles as CUDA C++ under NVRTC and as OpenCL C under PoCL (dialect "gpu": the header is
picked by `__OPENCL_VERSION__`), or as C11 for the host (dialect "c", kernels/dialect_c.h).
The differences the C header cannot hide are the choices `dialect` makes here: blocks of one
thread, launch sizes counted in work items, no 16-byte vector path (the C compiler vectorises
the scalar loop), non-temporal stores through tiles for elementwise launches past the
last-level cache (`stream_slots`) and an exported `<entry>_run(args, begin, end)` per entry point.
"""
from __future__ import annotations

import functools
import hashlib
import math
import os
import string
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gpuarr.compiler import lowering
from gpuarr.compiler.plan import (
    Acc,
    Arg,
    Const,
    ElementwiseKernel,
    Gather,
    IndexMap,
    Iota,
    KernelPlan,
    KernelStep,
    Launch,
    LaunchPlan,
    Load,
    Op,
    PadView,
    ReductionKernel,
    ScanKernel,
    ScatterKernel,
    View,
    Window,
)


def _kernels_dir() -> Path:
    """kernels/ beside the package in a checkout; the installed gpuarr.kernels package in a wheel."""
    checkout = Path(__file__).resolve().parents[2] / "kernels"
    if checkout.is_dir():
        return checkout
    import importlib.util
    spec = importlib.util.find_spec("gpuarr.kernels")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    raise FileNotFoundError("gpuarr's kernel templates (kernels/) were not found; reinstall gpuarr")


KERNELS_DIR = _kernels_dir()

CTYPES = {
    "bool": "u8", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
    "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64",
    "float32": "f32", "float64": "f64", "float16": "f32", "bfloat16": "f32", "complex64": "c64",
}
# 16-bit floats live in memory as their bits (kernels/half.h) and in registers as float32.
STORAGE = {"float16": "f16", "bfloat16": "bf16"}

ELEMENTWISE_BLOCK = 256
MAX_GROUPS = 4096
INT32_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class RenderedKernel:
    """Source text plus the launch plan a backend needs; backends see nothing else."""

    name: str
    source: str
    global_size: int
    local_size: int
    arg_names: tuple
    outputs: tuple
    # Entry points of the same source launched before `name`, in order: (entry, global size).
    setup: tuple = ()
    # Arguments that are scratch buffers of this kernel alone: (arg name, elements, dtype).
    scratch: tuple = ()


def ctype(dtype) -> str:
    """The C type a value of `dtype` has in registers."""
    name = np.dtype(dtype).name
    if name not in CTYPES:
        raise NotImplementedError(f"kernels do not support dtype {name}")
    return CTYPES[name]


def storage(dtype) -> str:
    """The C type of `dtype` in memory (buffers and kernel parameters)."""
    return STORAGE.get(np.dtype(dtype).name) or ctype(dtype)


def load_expr(array: str, index: str, dtype) -> str:
    """Read `array[index]` as a register value (16-bit floats widen to float32)."""
    half = STORAGE.get(np.dtype(dtype).name)
    return f"{half}_to_f32({array}[{index}])" if half else f"{array}[{index}]"


def store_expr(value: str, dtype) -> str:
    """A register value converted for storing into memory of `dtype`."""
    half = STORAGE.get(np.dtype(dtype).name)
    return f"f32_to_{half}({value})" if half else value


@functools.cache
def template(name: str) -> string.Template:
    return string.Template((KERNELS_DIR / name).read_text())


DIALECTS = ("gpu", "c")


@functools.cache
def prelude(dialect: str = "gpu") -> str:
    """The headers every kernel starts with, inlined so the source is self-contained."""
    read = lambda n: (KERNELS_DIR / n).read_text()  # noqa: E731
    if dialect == "c":
        head = read("dialect_c.h")
    elif dialect == "gpu":
        head = ("#if defined(__OPENCL_VERSION__)\n" + read("dialect_opencl.h") + "#else\n"
                + read("dialect_cuda.h") + "#endif\n")
    else:
        raise ValueError(f"unknown kernel dialect {dialect!r}; expected one of {DIALECTS}")
    return head + read("common.h") + read("half.h") + read("special.h") + read("complex.h")


def launch_shape(dialect: str, items: int, block: int, per_block: bool = False) -> tuple:
    """(global size, local size) of a launch over `items` work items (threads, or blocks when
    `per_block`). On the GPU dialect at most MAX_GROUPS blocks run and the loops stride over
    the rest; on C the global size is the item count, which the host splits among threads."""
    if dialect == "c":
        return max(1, items), 1
    groups = items if per_block else -(-items // block)
    return max(1, min(MAX_GROUPS, groups)) * block, block


def c_entry_points(entries, args) -> str:
    """C dialect: an exported `<entry>_run(args, begin, end)` per entry point, which runs work
    items [begin, end) of the kernel with its arguments taken from the pointer array `args`,
    subnormals flushed as in XLA (GPUARR_FLUSH_BEGIN/END, kernels/dialect_c.h)."""
    casts = ", ".join(f"({'' if a.output else 'const '}{storage(a.dtype)} *)args[{j}]"
                      for j, a in enumerate(args))
    return "".join(
        f"\nGPUARR_EXPORT void {e}_run(void *const *args, i64 begin, i64 end) {{\n"
        f"  GPUARR_FLUSH_BEGIN\n  gpuarr_begin = begin;\n  gpuarr_end = end;\n  {e}({casts});\n"
        f"  GPUARR_FLUSH_END\n}}\n" for e in entries)


def _finish(dialect: str, source: str, entries, args) -> str:
    """The translation unit: prelude, kernel text and (C dialect) the entry points."""
    tail = c_entry_points(entries, args) if dialect == "c" else ""
    return prelude(dialect) + source + tail


def literal(value, dtype) -> str:
    """A C literal for `value` of `dtype` that means exactly that value on both dialects."""
    dtype = np.dtype(dtype)
    value = np.asarray(value).astype(dtype).item()
    if dtype.kind == "c":
        return f"MAKE_c64({literal(value.real, np.float32)}, {literal(value.imag, np.float32)})"
    if dtype.name in STORAGE:
        dtype = np.dtype(np.float32)   # 16-bit values are exact float32 literals
        value = float(value)
    if dtype.kind == "b":
        return "(u8)1" if value else "(u8)0"
    if dtype.kind in "iu":
        if dtype.itemsize == 8:
            suffix = "ull" if dtype.kind == "u" else "ll"
            if dtype.kind == "i" and value == -(2**63):
                return "(-9223372036854775807ll - 1)"
            return f"({value}{suffix})"
        return f"(({ctype(dtype)}){value})" if value < 0 or dtype.itemsize < 4 else (
            f"{value}u" if dtype.kind == "u" else str(value))
    bits = "F32" if dtype == np.float32 else "F64"
    if math.isnan(value):
        return f"NAN_{bits}"
    if math.isinf(value):
        return f"INF_{bits}" if value > 0 else f"(-INF_{bits})"
    if dtype == np.float32:
        # The shortest text that reads back as the same float32.
        text = np.format_float_positional(np.float32(value), unique=True, trim="0")
        text = text if "." in text else text + ".0"
        text += "f"
    else:
        text = repr(float(value))
    return f"({text})" if text.startswith("-") else text


# The largest global size any kernel launches (MAX_GROUPS blocks of at most 256 threads).
MAX_GLOBAL_SIZE = MAX_GROUPS * 256


def index_type(*sizes, dialect: str = "gpu") -> str:
    """`i32` when every index a kernel forms fits in 32 bits, else `i64`; always `i64` on the C
    dialect, whose -fwrapv would make the compiler treat a 32-bit `o * n + r` as possibly
    wrapping and load contiguous rows with gathers.

    Grid-stride loops (`i += GLOBAL_SIZE`) and block loops (`o += NUM_GROUPS()`,
    `r += block`) step past the last index by up to one global size before the test ends the
    loop, so a size counts with MAX_GLOBAL_SIZE added: sizes within 2^20 of 2^31 take i64."""
    if dialect == "c":
        return "i64"
    return "i32" if max([1, *sizes]) + MAX_GLOBAL_SIZE <= INT32_LIMIT else "i64"


# ---- index arithmetic ------------------------------------------------------------------------

def index_expr(imap: IndexMap, linear: str, t: str, lines: list, prefix: str) -> str:
    """C expression for the buffer offset of iteration element `linear` through `imap`."""
    expr = linear
    for k, view in enumerate(imap.views):
        if k > 0:
            lines.append(f"const {t} {prefix}_l{k} = {expr};")
            expr = f"{prefix}_l{k}"
        if isinstance(view, PadView):
            expr = pad_view_expr(view, expr, t, lines, f"{prefix}_p{k}")
            continue
        if view.is_contiguous():
            continue
        if view.size == 0:
            return "0"
        terms, inner = [], 1
        for d in reversed(range(len(view.shape))):
            n, s = view.shape[d], view.strides[d]
            if n != 1 and s != 0:
                coord = expr if inner == 1 else f"{expr} / {inner}"
                if d > 0 and inner * n < view.size:
                    coord = f"({coord}) % {n}" if inner != 1 else f"{expr} % {n}"
                terms.append(coord if s == 1 else f"({coord}) * {s}")
            inner *= n
        if view.offset:
            terms.append(str(view.offset))
        expr = " + ".join(reversed(terms)) if terms else "0"
    return expr


def pad_view_expr(view: PadView, linear: str, t: str, lines: list, prefix: str) -> str:
    """The source offset of padded element `linear`: one clamped source coordinate per dim."""
    terms = []
    for d, (lo, i, m) in enumerate(zip(view.low, view.interior, view.source)):
        if m == 1:
            continue
        c = coord_expr(view.shape, d, linear)
        src = f"({c} - {lo})" if lo > 0 else f"({c} + {-lo})" if lo < 0 else c
        src = f"{src} / {i + 1}" if i else src
        lines.append(f"const {t} {prefix}_{d} = ({t})clamp_index((i64)({src}), {m - 1});")
        stride = math.prod(view.source[d + 1:])
        terms.append(f"{prefix}_{d}" if stride == 1 else f"{prefix}_{d} * {stride}")
    return " + ".join(terms) or "0"


def coord_expr(shape: tuple, dimension: int, linear: str) -> str:
    inner = math.prod(shape[dimension + 1:])
    linear = linear if linear.isidentifier() else f"({linear})"
    coord = linear if inner == 1 else f"{linear} / {inner}"
    return coord if dimension == 0 else f"({coord}) % {shape[dimension]}"


# ---- expression DAGs -------------------------------------------------------------------------

def render_nodes(nodes, prefix: str, linear: str, t: str, lane_loads=None) -> list:
    """One C line (or a few, for gathers and index maps) per node, naming node k `{prefix}{k}`.

    `lane_loads` maps Load nodes to an expression that already holds their value (a lane of a
    vector load)."""
    lines: list = []
    var = lambda k: f"{prefix}{k}"  # noqa: E731
    for k, node in enumerate(nodes):
        name = var(k)
        if lane_loads and k in lane_loads:
            lines.append(f"const {ctype(node.dtype)} {name} = {lane_loads[k]};")
        elif isinstance(node, Load):
            idx = index_expr(node.index, linear, t, lines, name)
            lines.append(f"const {ctype(node.dtype)} {name} = {load_expr(node.arg, idx, node.dtype)};")
        elif isinstance(node, Const):
            lines.append(f"const {ctype(node.dtype)} {name} = {literal(node.value, node.dtype)};")
        elif isinstance(node, Acc):
            lines.append(f"const {ctype(node.dtype)} {name} = ({ctype(node.dtype)})acc;")
        elif isinstance(node, Iota):
            idx = index_expr(node.index, linear, t, lines, name)
            lines.append(f"const {ctype(node.dtype)} {name} = "
                         f"({ctype(node.dtype)})({coord_expr(node.shape, node.dimension, idx)});")
        elif isinstance(node, Gather):
            lines.extend(render_gather(node, name, t, var))
        elif isinstance(node, Window):
            lines.extend(render_window(node, name, linear, t))
        elif isinstance(node, Op):
            lines.extend(render_op(node, name, [var(a) for a in node.args],
                                   [nodes[a].dtype for a in node.args]))
        else:
            raise TypeError(f"unknown node {node!r}")
    return lines


# Ops whose 16-bit float result needs no rounding: one of their operands, an integer value, or
# a value that is rounded already (conversions round themselves; bitcasts are 16-bit values).
_EXACT_OPS = {"select_n", "neg", "abs", "max", "min", "clamp", "floor", "ceil", "round_away",
              "round_even", "sign", "proj", "convert", "bitcast"}


def render_op(node: Op, name: str, args: list, arg_dtypes: list) -> list:
    comment = f"  // {node.eqn.splitlines()[0]}" if node.eqn else ""
    if node.op == "threefry2x32":
        a = ", ".join(args)
        return [f"u32 {name}[2];{comment}", f"threefry2x32({a}, &{name}[0], &{name}[1]);"]
    decl = f"const {ctype(node.dtype)} {name} ="
    if node.op == "convert":
        return [f"{decl} {convert_expr(args[0], arg_dtypes[0], node.dtype)};{comment}"]
    if node.op == "bitcast":
        return [f"{decl} {bitcast_expr(args[0], arg_dtypes[0], node.dtype)};{comment}"]
    if node.op == "proj":
        return [f"const u32 {name} = {args[0]}[{node.attrs[0]}];{comment}"]
    half = STORAGE.get(np.dtype(node.dtype).name)
    if half and node.op == "nextafter":  # the float32 step would round back to x: step the bits
        return [f"{decl} nextafter_{half}({args[0]}, {args[1]});{comment}"]
    lines = []
    if node.op == "integer_pow":
        y = node.attrs[0]
        times = _multiply(node.dtype)
        if abs(y) > 64:  # one named square per bit: the nested product doubles with each bit
            lines, squares = _named_squares(name, args[0], abs(y), ctype(node.dtype), times)
        else:
            squares = _nested_squares(args[0], abs(y), times)
        expr = integer_pow_expr(squares, y, node.dtype)
    else:
        text = lowering.expression(node.op, arg_dtypes[0] if arg_dtypes else node.dtype)
        width = np.dtype(arg_dtypes[0]).itemsize * 8 if arg_dtypes else 32
        unsigned = ctype(f"uint{width}") if width > 1 and arg_dtypes and \
            np.dtype(arg_dtypes[0]).kind in "iu" else ""
        expr = text.format(*args, t=ctype(node.dtype),
                           s=ctype(arg_dtypes[0]) if arg_dtypes else "",
                           bits=64 if width == 64 else 32, u=unsigned, pad=max(0, 32 - width))
    if half and node.op not in _EXACT_OPS:
        # Compute in float32, round the result to 16 bits, as each NumPy float16 op does.
        expr = f"round_{half}({expr})"
    return lines + [f"{decl} {expr};{comment}"]


def convert_expr(arg: str, src, dst) -> str:
    src, dst = np.dtype(src), np.dtype(dst)
    if dst == np.bool_:
        return f"(u8)({arg} != 0)"
    if dst.kind == "c":
        return arg if src.kind == "c" else f"MAKE_c64((f32){arg}, 0.0f)"
    if src.kind == "c":   # the real part, as NumPy and XLA
        arg, src = f"{arg}.x", np.dtype(np.float32)
    if dst.name in STORAGE:
        return f"round_{STORAGE[dst.name]}((f32){arg})"
    if src.name in STORAGE:
        src = np.dtype(np.float32)
    if src.kind == "f" and dst.kind in "iu":
        return f"sat_{ctype(src)}_{ctype(dst)}({arg})"
    return f"({ctype(dst)}){arg}"


def bitcast_expr(arg: str, src, dst) -> str:
    """Reinterpret the bits of `arg` (same width) as `dst`."""
    src, dst = np.dtype(src), np.dtype(dst)
    bits = src.itemsize * 8
    if src.name in STORAGE:
        return f"({ctype(dst)})f32_to_{STORAGE[src.name]}({arg})"
    if dst.name in STORAGE:
        return f"{STORAGE[dst.name]}_to_f32(({STORAGE[dst.name]}){arg})"
    if src.kind == "f" and dst.kind == "f":
        return arg
    if src.kind == "f":
        return f"({ctype(dst)})BITS_F{bits}({arg})"
    if dst.kind == "f":
        return f"F{bits}_BITS({arg})"
    return f"({ctype(dst)}){arg}"


def integer_pow_expr(squares: list, y: int, dtype) -> str:
    """x**y as a product by repeated squaring, exact for the integer exponent `y`, from
    `squares[k]`, the expression of x**(2**k)."""
    if y == 0:
        return literal(1, dtype)
    expr = functools.reduce(_multiply(dtype),
                            [sq for k, sq in enumerate(squares) if abs(y) >> k & 1])
    return f"({literal(1, dtype)} / ({expr}))" if y < 0 else f"({expr})"


def _multiply(dtype):
    """The product of two expressions of `dtype`: integers wrap through their unsigned type
    (kernels/common.h), since signed overflow is undefined behaviour in C, OpenCL C and CUDA."""
    if np.dtype(dtype).kind in "iu":
        return lambda a, b: f"mul_wrap_{ctype(dtype)}({a}, {b})"
    return lambda a, b: f"({a} * {b})"


def _nested_squares(arg: str, n: int, times) -> list:
    """x, x*x, (x*x)*(x*x), ... up to the top bit of `n`, written inline with `times`."""
    squares = [arg]
    for _ in range(1, n.bit_length()):
        squares.append(times(squares[-1], squares[-1]))
    return squares


def _named_squares(name: str, arg: str, n: int, t: str, times) -> tuple:
    """(statements naming x**(2**k) `{name}_sq_{k}` up to the top bit of `n`, those names)."""
    names = [f"{name}_sq_{k}" for k in range(n.bit_length())]
    lines = [f"const {t} {names[0]} = {arg};"]
    lines += [f"const {t} {b} = {times(a, a)};" for a, b in zip(names, names[1:])]
    return lines, names


def render_gather(node: Gather, name: str, t: str, var) -> list:
    dims = []
    strides = [math.prod(node.operand_shape[d + 1:]) for d in range(len(node.operand_shape))]
    for d, (n, size) in enumerate(zip(node.operand_shape, node.slice_sizes)):
        start = f"(i64){var(node.starts[d])}" if node.starts[d] is not None else "(i64)0"
        offset = var(node.offsets[d]) if node.offsets[d] is not None else "0"
        hi = n - size
        if node.mode == "clip":
            bound = f"s = s < 0 ? 0 : s > {hi} ? {hi} : s;"
        else:
            bound = f"if (s < 0 || s > {hi}) {name}_ok = 0;"
        dims.append(f"      {{ i64 s = {start}; {bound} {name}_idx += ({t})(s + {offset}) * {strides[d]}; }}")
    text = template("gather.cu").substitute(
        comment=node.eqn or f"gather from {node.arg} (mode {node.mode})", index_t=t, name=name,
        dims="\n".join(dims), ctype=ctype(node.dtype), load=load_expr(node.arg, f"{name}_idx", node.dtype),
        fill=literal(node.fill, node.dtype))
    return [line.strip() for line in text.strip("\n").splitlines()]


def render_window(node: Window, name: str, linear: str, t: str) -> list:
    """Nested loops over the window of output element `linear` (see plan.Window)."""
    lines: list = []
    idx = index_expr(node.index, linear, t, lines, name)
    acc_t = ctype(node.dtype)
    combine = lowering.reducer(node.op, node.dtype).format(t=acc_t)
    lines.append(f"{acc_t} {name} = {literal(node.identity, node.dtype)};  // {node.eqn}")
    offset = []
    for d, n in enumerate(node.operand_shape):
        pad = "  " * d
        (low, _), base = node.padding[d], node.base_dilation[d]
        o = coord_expr(node.shape, d, idx)   # the output coordinate, not the iteration's
        pos = f"{name}_w{d} * {node.window_dilation[d]} - {low}" if low else \
            f"{name}_w{d} * {node.window_dilation[d]}"
        lines.append(f"{pad}for (i64 {name}_w{d} = 0; {name}_w{d} < {node.window_dimensions[d]}; "
                     f"++{name}_w{d}) {{")
        lines.append(f"{pad}  const i64 {name}_d{d} = (i64)({o}) * {node.window_strides[d]} + {pos};")
        skip = f"{name}_d{d} < 0 || {name}_d{d} > {(n - 1) * base}"
        if base > 1:
            skip += f" || {name}_d{d} % {base} != 0"   # between base-dilated elements
        lines.append(f"{pad}  if ({skip}) continue;")
        stride = math.prod(node.operand_shape[d + 1:])
        term = f"{name}_d{d}" + (f" / {base}" if base > 1 else "")
        offset.append(term if stride == 1 else f"({term}) * {stride}")
    if not node.operand_shape:
        lines.append("{")   # a rank-0 window is the element itself, in a scope of its own
    pad = "  " * len(node.operand_shape)
    lines.append(f"{pad}const {acc_t} a = {name};")
    lines.append(f"{pad}const {acc_t} b = {load_expr(node.arg, ' + '.join(offset) or '0', node.dtype)};")
    lines.append(f"{pad}{name} = {combine};")
    lines.extend("  " * d + "}" for d in reversed(range(len(node.operand_shape))))
    if not node.operand_shape:
        lines.append("}")
    return lines


# ---- kernels ---------------------------------------------------------------------------------

def params(args) -> str:
    return ", ".join(f"GLOBAL {'' if a.output else 'const '}{storage(a.dtype)} *{a.name}" for a in args)


def indent(lines, n: int) -> str:
    return "\n".join(" " * n + line for line in lines)


def equations(kernel) -> str:
    # An equation with a sub-program prints over several lines: each stays a comment.
    lines = [line for e in kernel.equations for line in e.splitlines()]
    return "\n".join(f"//   {line}" for line in lines) or "//   (hand-built)"


def store_lines(stores, nodes_prefix: str, linear: str, t: str, args=()) -> list:
    dtypes = {a.name: a.dtype for a in args}
    lines = []
    for st in stores:
        idx = linear if st.index is None else index_expr(st.index, linear, t, lines, f"{st.arg}_{st.node}")
        value = f"{nodes_prefix}{st.node}"
        if st.arg in dtypes:
            value = store_expr(value, dtypes[st.arg])
        lines.append(f"{st.arg}[{idx}] = {value};")
    return lines


_VECTOR_TYPES = ("f32", "i32", "u32")
_LANES = "xyzw"


def _contiguous(imap) -> bool:
    return imap is None or all(v.is_contiguous() for v in imap.views)


def _vector_plan(k: ElementwiseKernel):
    """The Load nodes and Stores that can move as 16-byte vectors, or None when none can.

    A kernel qualifies when its size is a multiple of 4 and some operand is read or written
    contiguously from element 0 in a 32-bit type (buffers are allocated 16-byte aligned)."""
    if k.size % 4 or any(isinstance(n, (Gather, Window)) for n in k.nodes):
        return None
    dtypes_by_arg = {a.name: storage(a.dtype) for a in k.args}
    loads = {j: n.arg for j, n in enumerate(k.nodes) if isinstance(n, Load)
             and _contiguous(n.index) and storage(n.dtype) in _VECTOR_TYPES}
    stores = [st for st in k.stores
              if _contiguous(st.index) and dtypes_by_arg[st.arg] in _VECTOR_TYPES]
    return (loads, stores) if loads or stores else None


def render_elementwise_vec4(k: ElementwiseKernel, t: str, plan) -> str:
    loads, vec_stores = plan
    dtypes_by_arg = {a.name: storage(a.dtype) for a in k.args}
    load_lines = [f"const {dtypes_by_arg[arg]}x4 {arg}_q = LOAD4({dtypes_by_arg[arg]}x4, {arg}, q);"
                  for arg in dict.fromkeys(loads.values())]
    body, stores = [], []
    for u in range(4):
        lanes = {j: f"{arg}_q.{_LANES[u]}" for j, arg in loads.items()}
        body += render_nodes(k.nodes, f"v{u}_", f"(i0 + {u})", t, lanes)
        scalar = [st for st in k.stores if st not in vec_stores]
        stores += store_lines(scalar, f"v{u}_", f"(i0 + {u})", t, k.args)
    for st in vec_stores:
        vt = f"{dtypes_by_arg[st.arg]}x4"
        lanes = ", ".join(f"v{u}_{st.node}" for u in range(4))
        stores.append(f"STORE4({vt}, {st.arg}, q, MAKE_{vt}({lanes}));")
    return template("elementwise_vec4.cu").substitute(
        name=k.name, shape=tuple(k.shape), size=k.size, quads=k.size // 4, index_t=t,
        equations=equations(k), reason=k.reason or "end of program", params=params(k.args),
        loads=indent(load_lines, 4), body=indent(body, 4), stores=indent(stores, 4))


# C dialect: an elementwise launch moving at least this many bytes (inputs and outputs) writes
# its contiguous outputs with non-temporal stores (STREAM_TILES in kernels/dialect_c.h), saving
# the read for ownership of each output line. None: never. They lost on the idle benchmark
# machine at every size where they would apply (docs/kernels.md, "Streaming stores"), so they
# are off until a machine shows a gain; bench/bench_native_stream.py --stores [--fma] compares.
STREAM_MIN_BYTES = None


def streamed_outputs(k: ElementwiseKernel) -> list:
    """The outputs of `k` to write with non-temporal stores: none below STREAM_MIN_BYTES (or
    when it is None), and none unless every output is written whole, only at the loop's own
    index, and never read (each then goes through a tile, see STREAM_TILE in dialect_c.h)."""
    nbytes = sum(a.size * np.dtype(a.dtype).itemsize for a in k.args)
    outputs = {a.name: a for a in k.args if a.output}
    if STREAM_MIN_BYTES is None or nbytes < STREAM_MIN_BYTES or not outputs:
        return []
    if any(isinstance(n, Load) and n.arg in outputs for n in k.nodes) \
            or any(a.size != k.size for a in outputs.values()) \
            or any(not _contiguous(st.index) for st in k.stores if st.arg in outputs) \
            or set(outputs) - {st.arg for st in k.stores}:
        return []
    return list(outputs.values())


def stream_slots(k: ElementwiseKernel) -> tuple:
    """The C dialect's `${stream_open}` and `${stream_close}` slots of elementwise.cu: the
    kernel's loop inside STREAM_TILES with a tile per streamed output, or empty."""
    outs = streamed_outputs(k)
    if not outs:
        return "", ""
    tiles = "".join(f"\n    STREAM_TILE({storage(a.dtype)}, {a.name})" for a in outs)
    flush = "".join(f"\n    STREAM_FLUSH({a.name})" for a in outs)
    return (f"\n  STREAM_TILES({k.size}) {{\n    STREAM_RANGE(){tiles}",
            f"{flush}\n  }}\n  STREAM_FENCE();")


def render_elementwise(k: ElementwiseKernel, dialect: str = "gpu") -> RenderedKernel:
    t = index_type(k.size, *(a.size for a in k.args), dialect=dialect)
    plan = _vector_plan(k) if dialect == "gpu" else None
    if plan is not None:
        size, block = launch_shape(dialect, k.size // 4, ELEMENTWISE_BLOCK)
        return RenderedKernel(k.name, _finish(dialect, render_elementwise_vec4(k, t, plan),
                                              (k.name,), k.args),
                              size, block, tuple(a.name for a in k.args),
                              tuple(a.name for a in k.args if a.output))
    body = render_nodes(k.nodes, "v", "i", t)
    body += store_lines(k.stores, "v", "i", t, k.args)
    stream_open, stream_close = stream_slots(k) if dialect == "c" else ("", "")
    source = template("elementwise.cu").substitute(
        name=k.name, shape=tuple(k.shape), size=k.size, index_t=t, equations=equations(k),
        reason=k.reason or "end of program", params=params(k.args), body=indent(body, 4),
        stream_open=stream_open, stream_close=stream_close)
    size, block = launch_shape(dialect, k.size, ELEMENTWISE_BLOCK)
    return RenderedKernel(k.name, _finish(dialect, source, (k.name,), k.args), size, block,
                          tuple(a.name for a in k.args),
                          tuple(a.name for a in k.args if a.output))


def reduction_block(k: ReductionKernel, dialect: str = "gpu") -> int:
    if dialect == "c":
        return 1   # one thread per block: the block's loop over its row is sequential C
    block = 64
    while block < 256 and block < k.red_size:
        block *= 2
    return block


def reduction_chunk(k: ReductionKernel, by_block: bool) -> tuple:
    """(flat index of output o's first element, the number of elements it reduces, the position
    of its first element along its row), as C."""
    c = k.red_size
    if k.limit:   # a padded full first pass stops at the end of the data
        return f"o * {c}", f"(o * {c} + {c} <= {k.limit} ? {c} : {k.limit} - o * {c})", f"o * {c}"
    if not k.split:
        return f"o * {c}", str(c), "0"
    chunks = -(-k.split // c)
    rows = k.out_size // chunks
    row, chunk = (f"(o / {chunks})", f"(o % {chunks})") if by_block else \
        (f"(o % {rows})", f"(o / {rows})")
    return (f"{row} * {k.split} + {chunk} * {c}",
            f"({chunk} * {c} + {c} <= {k.split} ? {c} : {k.split} - {chunk} * {c})", f"{chunk} * {c}")


# Outputs a tiled column reduction keeps in flight (C dialect): up to a whole 4096-wide row
# (16 KiB of float32 accumulators, in L1), so a thread that owns every output reads its input
# as one contiguous stream; 256 outputs (1 KiB of each row, then a 16 KiB jump) cost one
# thread 5.2-5.8 ms of CPU for a 4096x4096 float32 column sum against 3.7-4.0 ms (docs/kernels.md).
COLUMN_TILE = 4096


def split_offsets(imap: IndexMap, out_rank: int, t: str, prefix: str):
    """(C offset of the output coordinate `o`, C offset of the reduced coordinate `r`) of a load
    whose index map is one strided view over the iteration space `out_shape + red_shape`: its
    buffer offset is then the sum of the two. None for other index maps."""
    if len(imap.views) != 1 or not isinstance(imap.views[0], View):
        return None
    v = imap.views[0]
    out = View(v.shape[:out_rank], v.strides[:out_rank], v.offset)
    red = View(v.shape[out_rank:], v.strides[out_rank:], 0)
    lines: list = []
    out_expr = index_expr(IndexMap((out,)), "o", t, lines, prefix) if out.shape else \
        str(v.offset)
    red_expr = index_expr(IndexMap((red,)), "r", t, lines, prefix) if red.shape else "0"
    return None if lines else (out_expr, red_expr)


def tiled_column(k: ReductionKernel, t: str):
    """The tiled column form of `k` on the C dialect: (lines hoisted per reduced element,
    pre-map lines), or None when some node of the pre-map is not a load whose offset splits
    into an output part and a reduced part (see `split_offsets`), a constant or an op."""
    if k.value_dtype or k.split or k.limit or k.strategy != "column":
        return None
    hoisted, lanes = [], {}
    for j, node in enumerate(k.pre_nodes):
        if isinstance(node, Load):
            parts = split_offsets(node.index, len(k.shape), t, f"p{j}")
            if parts is None:
                return None
            hoisted.append(f"const {t} p{j}_r = {parts[1]};")
            lanes[j] = load_expr(node.arg, f"{parts[0]} + p{j}_r", node.dtype)
        elif not isinstance(node, (Const, Op)):
            return None
    return hoisted, render_nodes(k.pre_nodes, "p", "i", t, lanes)


def row_loads(nodes, out_rank: int, t: str, prefix: str) -> dict:
    """C dialect: for the loads of a reduction's pre-map or epilogue (iteration element
    `i = o * red_size + r`) whose offset splits into an output part and a reduced part (see
    `split_offsets`), the load written with `o` and `r`, not `i`: no division or remainder per
    element (a row's broadcast operand is one load per row, and `in[o * n + r]` vectorises)."""
    lanes = {}
    for j, node in enumerate(nodes):
        parts = split_offsets(node.index, out_rank, t, f"{prefix}{j}") \
            if isinstance(node, Load) else None
        if parts is not None:
            lanes[j] = load_expr(node.arg, f"({parts[0]}) + ({parts[1]})", node.dtype)
    return lanes


# Reducers whose partial results may be combined in any order in vector lanes (as XLA's
# reductions reassociate), declared as OpenMP reductions on the C dialect.
_SIMD_REDUCERS = ("sum", "prod", "max", "min", "and", "or", "xor")


def simd_reduction_hint(k: ReductionKernel, acc_t: str) -> str:
    """C dialect: the pragmas that let a row's loop keep one partial result per vector lane."""
    if k.reduce_op not in _SIMD_REDUCERS:
        return ""
    if k.reduce_op == "sum":
        return '_Pragma("omp simd reduction(+:acc)")'
    identity = literal(k.identity, k.acc_dtype)
    return (f'_Pragma("omp declare reduction(gpuarr_reduce : {acc_t} : '
            f'omp_out = REDUCE(omp_out, omp_in)) initializer(omp_priv = {identity})")\n'
            f'    _Pragma("omp simd reduction(gpuarr_reduce:acc)")')


# Bytes of partial results a row reduction keeps in flight on the C dialect (`row_lanes`):
# four AVX-512 or eight AVX2 registers, enough independent adds to cover the add's latency.
ROW_LANE_BYTES = 256


def row_lanes(k: ReductionKernel) -> int:
    """C dialect, one-pass row reduction by an order-free reducer: how many partial results
    its row loop keeps (kernels/reduction_lanes.cu), or 0 to keep reduction.cu's single
    accumulator (other reducers, complex values, rows shorter than the lanes)."""
    if k.reduce_op not in _SIMD_REDUCERS or np.dtype(k.acc_dtype).kind not in "biuf":
        return 0
    lanes = min(64, ROW_LANE_BYTES // np.dtype(k.acc_dtype).itemsize)
    return lanes if k.red_size >= lanes else 0


# Ops whose value a row reduction keeps for its epilogue rather than computing it twice.
_COSTLY_OPS = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc", "lgamma", "logistic",
    "erf_inv", "digamma", "pow", "atan2"})
# The most a kept row may take (a local array per row: it stays in the L1 cache).
KEEP_ROW_BYTES = 32 << 10


def _node_keys(nodes) -> list:
    """A structural key per node (ops by what they compute from their operands' keys), so
    nodes of two lists that compute the same value at the same element compare equal."""
    keys: list = []
    for n, node in enumerate(nodes):
        if isinstance(node, Op):
            keys.append(("op", node.op, node.dtype, node.attrs, tuple(keys[a] for a in node.args)))
        elif isinstance(node, (Load, Const)):
            keys.append(node)
        else:   # accumulators, iotas, gathers, windows: never matched
            keys.append(("node", n, id(nodes)))
    return keys


def kept_premap(k: ReductionKernel) -> int | None:
    """C dialect, one-pass row reduction: the epilogue node that computes the pre-map's value
    again (softmax's `exp(x - max)`, read by the row sum and by the epilogue's division),
    when that value costs a transcendental and a row of it fits in KEEP_ROW_BYTES; the row
    loop then keeps its values in a local array for the epilogue. None otherwise."""
    if not k.epilogue_nodes or k.split or k.limit or k.value_dtype:
        return None
    pre = k.pre_nodes
    root = pre[k.pre_root]
    if not isinstance(root, Op) or k.red_size * np.dtype(root.dtype).itemsize > KEEP_ROW_BYTES:
        return None
    stack, costly = [k.pre_root], False
    while stack and not costly:
        node = pre[stack.pop()]
        if isinstance(node, Op):
            costly = node.op in _COSTLY_OPS
            stack.extend(node.args)
    if not costly:
        return None
    root_key = _node_keys(pre)[k.pre_root]
    return next((j for j, key in enumerate(_node_keys(k.epilogue_nodes)) if key == root_key),
                None)


def render_reduction(k: ReductionKernel, dialect: str = "gpu") -> RenderedKernel:
    t = index_type(k.out_size * k.red_size, *(a.size for a in k.args), dialect=dialect)
    acc_t = ctype(k.acc_dtype)
    # C dialect: loads by output and reduced coordinates where the pre-map's element is
    # `o * red_size + r` (one pass, not an arg reduction) and in every epilogue.
    c_split = dialect == "c" and not (k.split or k.limit or k.value_dtype)
    pre = render_nodes(k.pre_nodes, "p", "i", t,
                       row_loads(k.pre_nodes, len(k.shape), t, "p") if c_split else None)
    post = render_nodes(k.post_nodes, "q", "o", t) + store_lines(k.post_stores, "q", "o", t, k.args)
    by_block = k.strategy != "column"
    epi_lanes = row_loads(k.epilogue_nodes, len(k.shape), t, "e") if c_split else None
    kept = kept_premap(k) if c_split and by_block else None
    if kept is not None:   # the epilogue reads the row's kept pre-map values
        epi_lanes[kept] = "kept[r]"
    epi = render_nodes(k.epilogue_nodes, "e", "i", t, epi_lanes)
    epi += store_lines(k.epilogue_stores, "e", "i", t, k.args)
    block = reduction_block(k, dialect) if by_block else ELEMENTWISE_BLOCK
    slots = dict(
        name=k.name, reduce_op=k.reduce_op, out_size=k.out_size, red_size=k.red_size,
        strategy=k.strategy, block=block, index_t=t, equations=equations(k),
        reason=k.reason or "end of program", params=params(k.args), acc_t=acc_t,
        pre_body=indent(pre, 6), pre_value=f"p{k.pre_root}", post_body=indent(post, 6),
        epilogue_body=indent(epi, 6))
    if k.value_dtype:
        row_base, red_end, start = reduction_chunk(k, by_block)
        candidate = f"({ctype(k.acc_dtype)})p{k.index_root}" if k.index_root >= 0 else \
            f"({ctype(k.acc_dtype)})r" if start == "0" else f"({ctype(k.acc_dtype)})({start} + r)"
        if k.value_out:   # the first pass of a split arg reduction also stores the winner's value
            best = store_expr("best", k.value_dtype)
            slots["post_body"] = indent(post + [f"{k.value_out}[o] = {best};"], 6)
        source = template("reduction_arg.cu").substitute(
            slots, per_block=int(by_block), value_t=ctype(k.value_dtype), row_base=row_base,
            red_end=red_end, candidate=candidate,
            better_expr=lowering.arg_better(k.reduce_op, k.value_dtype),
            identity=literal(k.identity, k.value_dtype),
            no_index=literal(np.iinfo(np.dtype(k.acc_dtype)).max, k.acc_dtype))
    else:
        row_base, red_end, _ = reduction_chunk(k, by_block)
        # C dialect: a row's reduction may reassociate (as XLA's), so the compiler keeps one
        # partial result per vector lane, and epilogue iterations are independent.
        c_row = dialect == "c" and by_block
        tiled = tiled_column(k, t) if dialect == "c" else None
        name = "reduction.cu" if by_block else "reduction_column.cu"
        if tiled is not None:
            name = "reduction_tiled.cu"
            slots.update(red_offsets=indent(tiled[0], 6), pre_body=indent(tiled[1], 8),
                         tile=COLUMN_TILE, post_body=indent(post, 8),
                         epilogue_body=indent(epi, 8))
        lanes = row_lanes(k) if c_split and c_row else 0
        if lanes:
            name = "reduction_lanes.cu"
            slots.update(lanes=lanes, pre_body=indent(pre, 8),
                         lane_expr=lowering.lane_reducer(k.reduce_op, k.acc_dtype).format(t=acc_t))
        keep_t = ctype(k.pre_nodes[k.pre_root].dtype) if kept is not None else ""
        source = template(name).substitute(
            slots, loop_hint=simd_reduction_hint(k, acc_t) if c_row else "",
            keep_decl=f"{keep_t} kept[{k.red_size}];" if kept is not None else "",
            keep_store=f"kept[r] = p{k.pre_root};" if kept is not None else "",
            epilogue_hint='_Pragma("omp simd")' if c_row else "",
            reduce_expr=lowering.reducer(k.reduce_op, k.acc_dtype).format(t=acc_t),
            identity=literal(k.identity, k.acc_dtype), red_end=red_end, row_base=row_base)
    size, block = launch_shape(dialect, k.out_size, block, per_block=by_block)
    return RenderedKernel(k.name, _finish(dialect, source, (k.name,), k.args), size, block,
                          tuple(a.name for a in k.args), tuple(a.name for a in k.args if a.output))


SCAN_BLOCK = 256


def scan_block(k: ScanKernel, dialect: str = "gpu") -> int:
    """Threads per row of a block scan: the row length rounded up to a power of two, 32..256
    (one on the C dialect, whose block scans its row sequentially)."""
    if dialect == "c":
        return 1
    block = 32
    while block < SCAN_BLOCK and block < k.length:
        block *= 2
    return block


def render_scan(k: ScanKernel, dialect: str = "gpu") -> RenderedKernel:
    t = index_type(k.size, *(a.size for a in k.args), dialect=dialect)
    acc_t = ctype(k.dtype)
    per_block = k.strategy == "block"
    block = scan_block(k, dialect) if per_block else ELEMENTWISE_BLOCK
    out = next(a for a in k.args if a.output)
    source = template("scan.cu").substitute(
        name=k.name, op=k.op, axis=k.axis, shape=tuple(k.shape),
        direction=", from the end" if k.reverse else "", rows=k.rows, length=k.length,
        inner=k.inner, strategy=k.strategy, index_t=t, equations=equations(k),
        reason=k.reason or "end of program",
        combine_expr=lowering.reducer(k.op, k.dtype).format(t=acc_t),
        position=f"{k.length} - 1 - (k)" if k.reverse else "(k)", per_block=int(per_block),
        block=block, params=params(k.args), acc_t=acc_t, identity=literal(k.identity, k.dtype),
        pre_body=indent(render_nodes(k.pre_nodes, "p", "i", t), 6),
        pre_value=f"p{k.pre_root}", out=out.name, store_value=store_expr("acc", out.dtype))
    size, block = launch_shape(dialect, k.rows, block, per_block=per_block)
    return RenderedKernel(k.name, _finish(dialect, source, (k.name,), k.args), size, block,
                          tuple(a.name for a in k.args), (out.name,))


_COMBINE = {"set": "b", "add": "a + b", "sub": "a - b", "mul": "a * b"}
# Combiners whose result does not depend on the order colliding updates land in, per kind.
_ORDER_FREE = {"add": "iub", "sub": "iu", "mul": "iu", "min": "iufb", "max": "iufb"}
_LANE_MASKS = {1: "0xffu", 2: "0xffffu", 4: "0xffffffffu", 8: "0xffffffffffffffffull"}


def scatter_variant(k: ScatterKernel) -> str:
    """How a scatter combines colliding updates: 'atomic' (ATOMIC_ADD_*), 'cas' (a
    compare-and-swap loop per update), 'owner' (set: the last update claims its element) or
    'deterministic' (one thread per operand element scanning every update in order).

    Every variant but the last costs the updates only. Order-free combiners (integer sums and
    products, min, max), `set` and `apply` (its function ignores the updates, so repeated hits
    commute) take them whatever `deterministic` says; float sums, products and differences
    combine in whatever order colliding updates land, as XLA's GPU scatter does, unless
    `deterministic` (GPUARR_DETERMINISTIC_SCATTER=1) asks for index order. Complex and 16-bit
    floats have no atomic word helpers yet and take the deterministic variant."""
    kind = lowering.dtype_kind(k.dtype)
    half = np.dtype(k.dtype).name in STORAGE
    if k.combiner == "set":
        return "owner"
    if kind == "c" or half:
        return "deterministic"
    if k.combiner == "apply":
        return "cas"
    if k.combiner == "add" and kind in "iuf" and (kind != "f" or not k.deterministic):
        return "atomic"
    if kind in _ORDER_FREE.get(k.combiner, "") or not k.deterministic:
        return "cas"
    return "deterministic"


def _cas_slots(k: ScatterKernel) -> dict:
    """Slots of the compare-and-swap variant: the word holding an element, the element read
    from and written to its lane."""
    ct, width = ctype(k.dtype), np.dtype(k.dtype).itemsize
    word_t, bits = ("u64", "U64") if width == 8 else ("u32", "U32")
    if lowering.dtype_kind(k.dtype) == "f":
        f = "F64" if width == 8 else "F32"
        from_word, to_word = f"{f}_BITS(assumed)", f"(({word_t})BITS_{f}(value))"
    else:
        from_word = f"({ct})(assumed >> shift)"
        to_word = f"(({word_t})({ctype(f'uint{width * 8}')})value)"
    if k.combiner == "apply":   # the function of the current value, one node per line
        body = render_nodes(k.apply_nodes, "f", "t", index_type(math.prod(k.operand_shape)))
        combine = [f"const {ct} acc = a;", *body, f"const {ct} value = f{len(k.apply_nodes) - 1};"]
    else:
        expr = {"min": lowering.reducer("min", k.dtype).format(t=ct),
                "max": lowering.reducer("max", k.dtype).format(t=ct)}.get(k.combiner)
        if k.combiner == "add" and k.dtype == "bool":
            expr = "(u8)(a | b)"   # bool sums are logical or, as on the NumPy backend
        combine = [f"const {ct} value = {expr or _COMBINE[k.combiner]};"]
    return dict(word_t=word_t, word_bits=bits, lane_mask=_LANE_MASKS[width], from_word=from_word,
                to_word=to_word, cas_body=indent(combine, 4))


def render_scatter(k: ScatterKernel, dialect: str = "gpu") -> RenderedKernel:
    num_updates = math.prod(k.updates_shape)
    operand_size = math.prod(k.operand_shape)
    variant = scatter_variant(k)
    t = index_type(num_updates, operand_size, math.prod(k.indices_shape), dialect=dialect)
    batch_dims = [d for d in range(len(k.updates_shape)) if d not in k.update_window_dims]
    batch_shape = [k.updates_shape[d] for d in batch_dims]
    num_components = k.indices_shape[-1] if k.indices_shape else 0
    lines = [f"{t} rest = u;"]
    coords = {}
    for d in reversed(range(len(k.updates_shape))):
        lines.append(f"const {t} u{d} = rest % {k.updates_shape[d]}; rest /= {k.updates_shape[d]};")
        coords[d] = f"u{d}"
    batch_linear = " + ".join(
        f"u{d} * {math.prod(batch_shape[j + 1:])}" for j, d in enumerate(batch_dims)) or "0"
    lines.append(f"const {t} batch = {batch_linear};")
    window = iter(k.update_window_dims)
    window_sizes = {}
    for d in range(len(k.operand_shape)):
        if d not in k.inserted_window_dims and d not in k.operand_batching_dims:
            window_sizes[d] = next(window)
    # A batching dim sits at the update's coordinate along the matching scatter dim.
    batch_of = {od: batch_dims[idim] for od, idim in
                zip(k.operand_batching_dims, k.scatter_indices_batching_dims)}
    strides = [math.prod(k.operand_shape[d + 1:]) for d in range(len(k.operand_shape))]
    for d, n in enumerate(k.operand_shape):
        wdim = window_sizes.get(d)
        size = k.updates_shape[wdim] if wdim is not None else 1
        offset = f"u{wdim}" if wdim is not None else f"u{batch_of[d]}" if d in batch_of else "0"
        start = "0"
        if d in k.scatter_dims_to_operand_dims:
            comp = k.scatter_dims_to_operand_dims.index(d)
            start = f"(i64)indices[batch * {num_components} + {comp}]"
        hi = n - size
        bound = (f"s = s < 0 ? 0 : s > {hi} ? {hi} : s;" if k.mode == "clip"
                 else f"if (s < 0 || s > {hi}) ok = 0;")
        lines.append(f"{{ i64 s = {start}; {bound} target += ({t})(s + {offset}) * {strides[d]}; }}")
    ct = ctype(k.dtype)
    combine_body: list
    if k.combiner == "apply":
        combine_body = [f"const {ct} acc = value;"] + render_nodes(k.apply_nodes, "f", "t", t)
        combine_body.append(f"value = f{len(k.apply_nodes) - 1};")
    elif variant == "deterministic":
        combine_expr = _COMBINE.get(k.combiner) or lowering.reducer(k.combiner, k.dtype).format(t=ct)
        combine_body = [f"const {ct} a = value;", f"const {ct} b = updates[u];",
                        f"value = {combine_expr};"]
    else:
        combine_body = []
    cas = _cas_slots(k) if variant == "cas" else dict(
        word_t="u32", word_bits="U32", lane_mask="0u", from_word="", to_word="", cas_body="")
    owner_t = "i32" if num_updates <= INT32_LIMIT else "i64"
    args = k.args
    scratch = ()
    if variant == "owner":
        args += (Arg("owner", np.dtype(owner_t.replace("i", "int")).name, operand_size, True),)
        scratch = (("owner", operand_size, np.dtype(owner_t.replace("i", "int")).name),)
    source = template("scatter.cu").substitute(
        cas, name=k.name, combiner=k.combiner, num_updates=num_updates, operand_size=operand_size,
        mode=k.mode, variant=variant, index_t=t,
        equations=equations(k), reason=k.reason or "scatters are their own kernels",
        index_params=f"GLOBAL const {ctype(k.index_dtype)} *indices",
        index_args="indices", target_body=indent(lines, 2), atomic=int(variant == "atomic"),
        cas=int(variant == "cas"), owner=int(variant == "owner"), params=params(args),
        atomic_add=f"ATOMIC_ADD_{ct.upper()}", ctype=ct,
        update_value=f"({ct})0" if k.combiner == "apply" else "updates[u]", owner_t=owner_t,
        owner_bits=owner_t.upper(), combine_body=indent(combine_body, 8))

    def grid(n):
        return launch_shape(dialect, n, ELEMENTWISE_BLOCK)[0]

    setup = ((f"{k.name}_init", grid(operand_size)), (f"{k.name}_claim", grid(num_updates))) \
        if variant == "owner" else ()
    size = operand_size if variant == "deterministic" else num_updates
    entries = tuple(e for e, _ in setup) + (k.name,)
    return RenderedKernel(k.name, _finish(dialect, source, entries, args), grid(size),
                          launch_shape(dialect, size, ELEMENTWISE_BLOCK)[1],
                          tuple(a.name for a in args), ("out",), setup, scratch)


def render(kernel, dialect: str = "gpu") -> RenderedKernel:
    """Render any kernel spec of gpuarr.compiler.plan to a `RenderedKernel` in `dialect`
    ("gpu": CUDA C++ and OpenCL C; "c": C11 for the host)."""
    if isinstance(kernel, ElementwiseKernel):
        return render_elementwise(kernel, dialect)
    if isinstance(kernel, ReductionKernel):
        return render_reduction(kernel, dialect)
    if isinstance(kernel, ScatterKernel):
        return render_scatter(kernel, dialect)
    if isinstance(kernel, ScanKernel):
        return render_scan(kernel, dialect)
    raise TypeError(f"cannot render {type(kernel).__name__}")


def render_plan(plan: KernelPlan, dump_dir: str | None = None,
                dialect: str = "gpu", regroup=None) -> LaunchPlan:
    """Render every kernel of `plan` into a LaunchPlan a backend can run without the IR.

    Kernel argument names are replaced by the plan's buffer names; a kernel's scratch buffers
    (see `RenderedKernel.scratch`) become plan buffers of their own, and its setup entries
    launches before it. With `dump_dir` (or the
    environment variable GPUARR_DUMP_DIR) every rendered kernel is also written there as
    `<name>.cu`. `regroup` may replace runs of steps by objects that render themselves into
    one Launch (`render_launch()`: the native platform's row groups, compiler/row_groups.py).
    """
    dump_dir = dump_dir or os.environ.get("GPUARR_DUMP_DIR")
    steps, scratch = [], []
    plan_steps = regroup(plan.steps) if regroup is not None else plan.steps
    for step in plan_steps:
        if hasattr(step, "render_launch"):
            launch, rendered = step.render_launch()
            steps.append(launch)
            if dump_dir:
                dump(replace(rendered[0], name=launch.name, source=launch.source), dump_dir)
            continue
        if not isinstance(step, KernelStep):
            steps.append(step)
            continue
        rk = render(step.kernel, dialect)
        binds = dict(step.bindings)
        for arg, size, dtype in rk.scratch:
            binds[arg] = f"{rk.name}_{arg}"
            scratch.append((binds[arg], (size,), dtype))
        launch_args = tuple(binds[a] for a in rk.arg_names)
        for entry, global_size in rk.setup:
            steps.append(Launch(entry, rk.source, global_size, rk.local_size, launch_args,
                                tuple(binds[a] for a, _, _ in rk.scratch)))
        steps.append(Launch(rk.name, rk.source, rk.global_size, rk.local_size, launch_args,
                            tuple(binds[a] for a in rk.outputs)))
        if dump_dir:
            dump(rk, dump_dir)
    buffers = tuple((name, tuple(info.shape), info.dtype) for name, info in plan.buffers)
    buffers += tuple(scratch)
    return LaunchPlan(plan.inputs, plan.outputs, buffers, plan.constants, tuple(steps))


def dump(rk: RenderedKernel, dump_dir: str) -> Path:
    """Write `rk`'s source to `dump_dir/<name>.cu` (atomically) and return the path."""
    directory = Path(dump_dir)
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(rk.source.encode()).hexdigest()[:10]
    path = directory / f"{rk.name}_{digest}.cu"
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(rk.source)
    os.replace(tmp, path)
    return path
