"""Fusion: Program -> KernelPlan.

The algorithm, in the order it runs:

1. Decide which variables get buffers ("materialize"). Inputs, outputs, results of
   reductions, library calls, scatters and host steps always do; so do operands of library
   calls and host steps; so does an elementwise value whose recomputation would cost too much:
   one used by several consumers while being expensive (transcendentals, hashes), or one that
   a broadcast expands (recomputing it once per broadcast copy), unless it is a cheap function
   of reduction results (softmax's `1 / s`: recomputed per element in the reduction's
   epilogue, as XLA's loop fusion does); and one where a fused chain
   grows deeper than CHAIN_DEPTH_LIMIT, so a 10,000-op chain is several kernels of a size a
   compiler handles. Every buffer records why.
2. Every materialized value computed by elementwise/layout ops becomes an elementwise kernel.
   Its expression DAG is found by walking back from the value to materialized values (loads)
   and literals (constants), on an explicit stack (no Python recursion per op); broadcasts,
   reshapes, transposes, slices and reverses on the way become index maps on those loads,
   never copies. Gathers become indexed loads.
3. Every reduction becomes a reduction kernel whose pre-map is the fused DAG of its operand,
   laid out so the reduced axes are last.
4. Consumers are merged into a reduction kernel when legal (merging.py, as is step 5):
   elementwise kernels over the reduction's output space become its post-map, and kernels
   over its input space that read the result only through a broadcast back along the reduced
   axes (softmax's division) become its epilogue. A reduction result no one else reads then
   never touches memory.

Within step 2, pad/concatenate/dynamic_update_slice are index arithmetic plus a select (a
`PadView` on the loads, a mask from coordinates), reduce_window is a `Window` node (an inline
loop), and cumulative ops become scan kernels whose pre-map fuses their producers like a
reduction's.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
from collections import defaultdict

import numpy as np

from gpuarr import dtypes
from gpuarr.compiler import lowering
from gpuarr.compiler.control import control_driver
from gpuarr.compiler.merging import merge_into_reductions, merge_siblings
from gpuarr.compiler.plan import (
    Acc,
    Arg,
    BufferInfo,
    Const,
    CopyStep,
    ElementwiseKernel,
    Gather,
    HostStep,
    IndexMap,
    Iota,
    KernelPlan,
    KernelStep,
    Load,
    Op,
    ReductionKernel,
    ScanKernel,
    ScatterKernel,
    Store,
    Window,
)
from gpuarr.core import Literal, Program, ShapedArray, Var, _Namer, pp_eqn
from gpuarr.impls import host_impl, impl_rules  # the reference semantics of host steps

EXPENSIVE_OPS = {
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "pow",
    "atan2", "erf", "erfc", "lgamma", "div", "rem", "threefry2x32", "gather", "erf_inv",
    "digamma", "polygamma", "erf_inv_giles", "xla_log", "xla_log1p", "xla_rsqrt",
}
RECOMPUTE_LIMIT = 24   # cost units a shared value may be recomputed for each consumer kernel
CHAIN_DEPTH_LIMIT = 512   # cost units along any path of one kernel (see _bound_chain_depth)


@dataclasses.dataclass
class FusionOptions:
    """`sub_compiler(closed) -> fn(*arrays) -> list` compiles the sub-programs of control flow
    (a platform passes its own, so loop bodies run as kernel sub-plans); None runs them on
    the NumPy backend."""

    deterministic_scatter: bool = dataclasses.field(
        default_factory=lambda: os.environ.get("GPUARR_DETERMINISTIC_SCATTER", "") == "1")
    recompute_limit: int = RECOMPUTE_LIMIT
    chain_depth_limit: int = CHAIN_DEPTH_LIMIT
    sub_compiler: object = None
    array_module: object = np  # the arrays sub-programs take and return (CuPy on the cuda platform)
    # Column reductions split into chunks that fill a GPU (`_split_axis`); the native platform
    # turns this off: its threads split the outputs, and its tiled column loop reads each row
    # of the input once, in order.
    split_columns: bool = True


# ---- step 1: which values get buffers --------------------------------------------------------

def _op_cost(eqn) -> int:
    rule = lowering.lowering_of(eqn.prim)
    if rule[0] == "elementwise":
        return 10 if rule[1] in EXPENSIVE_OPS else 1
    if rule[0] in ("indexing", "window"):
        return 10
    if rule[0] == "piecewise":
        return 1
    return 0


def _complex_fusable(eqn, kind, name):
    """None when no complex values are involved; else whether the op has a complex64 kernel."""
    dtypes_ = [np.dtype(v.aval.dtype) for v in list(eqn.inputs) + list(eqn.outvars)]
    if not any(d.kind == "c" for d in dtypes_):
        return None
    if not all(_kernel_dtype(d) or d == np.complex64 for d in dtypes_):
        return False
    if kind == "layout" or name in ("convert", "select_n", "stop_gradient"):
        return kind in ("layout", "elementwise") and (name != "select_n" or len(eqn.inputs) == 3)
    return kind == "elementwise" and lowering.has_expression(name, dtypes_[0])


def _fusable(eqn) -> bool:
    kind, name = lowering.lowering_of(eqn.prim)
    complex_ok = _complex_fusable(eqn, kind, name)
    if complex_ok is not None:
        return complex_ok
    if kind == "elementwise":
        if name == "select_n" and len(eqn.inputs) != 3:
            return False
        if name == "bitcast" and eqn.inputs[0].aval.dtype.itemsize != eqn.outvars[0].aval.dtype.itemsize:
            return False
        return all(_kernel_dtype(v.aval.dtype) for v in list(eqn.inputs) + list(eqn.outvars))
    if kind == "layout":
        return all(_kernel_dtype(v.aval.dtype) for v in eqn.outvars)
    if kind in ("piecewise", "window"):
        return all(_kernel_dtype(v.aval.dtype) for v in list(eqn.inputs) + list(eqn.outvars))
    if kind == "indexing" and name in ("gather", "dynamic_slice"):
        return _gather_supported(eqn)
    return False


KERNEL_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                 "uint64", "float32", "float64", *lowering.HALF_FLOATS)


@functools.cache
def _kernel_dtype(dtype) -> bool:
    return np.dtype(dtype).name in KERNEL_DTYPES


def _gather_supported(eqn) -> bool:
    if eqn.prim.name == "dynamic_slice":
        return all(_kernel_dtype(a.aval.dtype) for a in eqn.inputs)
    dn = eqn.params.get("dimension_numbers")
    return (dn is not None and hasattr(dn, "offset_dims") and _kernel_dtype(eqn.inputs[0].aval.dtype)
            and _kernel_dtype(eqn.inputs[1].aval.dtype))


def materialize(program: Program, options: FusionOptions) -> dict:
    """var id -> the reason that value needs a buffer."""
    reasons: dict = {}
    producer: dict = {}
    consumers: dict = defaultdict(list)
    for v in program.invars:
        reasons[v.id] = "program input"
    for v in program.constvars:
        reasons[v.id] = "program constant"
    for eqn in program.eqns:
        for v in eqn.outvars:
            producer[v.id] = eqn
        for a in eqn.inputs:
            if isinstance(a, Var):
                consumers[a.id].append(eqn)
    cost: dict = {}
    reduced: set = set()   # values on a reduced shape computed from reduction results alone
    constant: set = set()  # values computed from literals alone (a broadcast literal, an iota)
    for eqn in program.eqns:
        kind, name = lowering.lowering_of(eqn.prim)
        if kind == "reduce":
            reduced.update(v.id for v in eqn.outvars)
        if not _fusable(eqn):
            for v in eqn.outvars:
                reasons.setdefault(v.id, f"result of {eqn.prim.name} ({kind})")
            if kind not in ("reduce", "scan"):
                for a in eqn.inputs:
                    if isinstance(a, Var):
                        reasons.setdefault(a.id, f"operand of {eqn.prim.name} ({kind})")
            elif not all(_kernel_dtype(a.aval.dtype) for a in eqn.inputs):
                for a in eqn.inputs:
                    if isinstance(a, Var):
                        reasons.setdefault(a.id, f"operand of {eqn.prim.name} (host)")
            continue
        if name == "concatenate" and len(eqn.inputs) > CONCAT_PIECES:
            reasons.setdefault(eqn.outvars[0].id, f"concatenate of {len(eqn.inputs)} pieces: "
                               f"written by launches of at most {CONCAT_PIECES} pieces each")
        read_by_index = {"indexing": 0, "window": 0}.get(kind)
        if name == "dynamic_update_slice":
            read_by_index = 1
        if read_by_index is not None:
            x = eqn.inputs[read_by_index]
            if isinstance(x, Var):
                reasons.setdefault(x.id, f"operand of {eqn.prim.name}: read by indexed loads")
        c = _op_cost(eqn) + sum(cost.get(a.id, 0) for a in eqn.inputs
                                if isinstance(a, Var) and a.id not in reasons)
        for v in eqn.outvars:
            cost[v.id] = c
        if kind in ("elementwise", "layout") and all(a.id in constant for a in eqn.inputs
                                                        if isinstance(a, Var)):
            constant.update(v.id for v in eqn.outvars)
        elif _of_reductions(eqn, kind, reduced, constant):
            reduced.update(v.id for v in eqn.outvars)
        expanding = eqn.inputs if kind in ("elementwise", "piecewise") else eqn.inputs[:1]
        # Piecewise ops compute every piece in every lane (then select): an expensive piece
        # gets its own buffer once the output is more than twice its size.
        growth = 2 if kind == "piecewise" else 1
        if kind in ("elementwise", "layout", "piecewise") and name not in ("reshape", "transpose"):
            for x in expanding:
                if (isinstance(x, Var) and x.id not in reasons and cost.get(x.id, 0) >= 10
                        and eqn.outvars[0].aval.size > growth * x.aval.size
                        and not (x.id in reduced and cost[x.id] <= options.recompute_limit)):
                    reasons[x.id] = (f"expensive value broadcast from {x.aval.str_short()} to "
                                     f"{eqn.outvars[0].aval.str_short()}: computed once, not per copy")
    for a in program.outvars:
        if isinstance(a, Var):
            reasons.setdefault(a.id, "program output")
    _share_or_recompute(program, consumers, cost, reasons, options.recompute_limit)
    _bound_chain_depth(program, reasons, options.chain_depth_limit)
    return reasons


def _share_or_recompute(program, consumers, cost, reasons, limit) -> None:
    """Give a buffer to each value read by several consumers whose recomputation would cost
    more than `limit`. A kernel computes each value it reads at one index once, so what counts
    is how many times the value would be computed per element: once for all the same-shape
    elementwise consumers whose results reach the same buffered value (kernel root) unbuffered,
    and once for every other consumer (a layout op, a piecewise op, an implicit broadcast or a
    reduction reads it at an index of its own). Values are visited from the end, so their
    consumers' roots are known: in `x = sin(x) * a + cos(x) * b` repeated, each `x` feeds one
    root through both consumers and the chain stays one kernel (until its depth is bounded)
    instead of one per step, while `x[1:] + x[:-1]` still buffers a costly `x`."""
    roots: dict = {}

    def reached(v) -> set:
        out = set()
        for u in consumers.get(v.id, ()):
            w = u.outvars[0]
            if lowering.lowering_of(u.prim)[0] == "elementwise" and _fusable(u) \
                    and len(u.outvars) == 1 and w.aval.shape == v.aval.shape:
                out |= roots.get(w.id, {w.id})
            else:
                out.add(("read", id(u)))
        return out

    for eqn in reversed(program.eqns):
        for v in eqn.outvars:
            if v.id not in reasons and len(consumers.get(v.id, ())) >= 2:
                kernels = reached(v)
                if cost.get(v.id, 0) * (len(kernels) - 1) > limit:
                    reasons[v.id] = (f"shared by {len(consumers[v.id])} consumers, computed "
                                     f"{len(kernels)} times per element; recomputing it (cost "
                                     f"{cost[v.id]}) would exceed the recompute limit")
            roots[v.id] = {v.id} if v.id in reasons else (reached(v) or {v.id})


def _of_reductions(eqn, kind, reduced: set, constant: set) -> bool:
    """Whether `eqn` computes, elementwise on a reduction's result shape, from values in
    `reduced` (reduction results and what was computed from them alone), literals and values
    in `constant` (computed from literals alone). Such a value broadcast back over the reduced
    axes is recomputed per element where it is read, as XLA's loop fusion does, rather than
    buffered: softmax's `1 / s` and a normalization's `rsqrt(var + eps)` then fuse into the
    epilogue of the reduction that produced `s` or `var`."""
    if kind not in ("elementwise", "layout"):
        return False
    size = eqn.outvars[0].aval.size
    vars_ = [a for a in eqn.inputs if isinstance(a, Var) and a.id not in constant]
    return bool(vars_) and all(a.id in reduced and a.aval.size == size for a in vars_)


def _bound_chain_depth(program: Program, reasons: dict, limit: int) -> None:
    """Give buffers to values along long fused chains, so that no path through a kernel's
    expression costs more than `limit` units (each fused op its `_op_cost`, at least 1). A
    chain of 10,000 elementwise ops becomes kernels of a few hundred ops each rather than one
    kernel: NVRTC's time grows faster than a kernel's length (about 13 ms an op at 100 ops of
    a sin/mul/add chain, 50 ms at 400, 150 ms at 1,300), and the source of a 10,000-op kernel
    is megabytes. Depth, not size, is bounded: wide expressions (a concatenate of many fused
    pieces) keep their plans, and ordinary programs stay far below the limit.

    Runs after every other reason is known, in program order: when an op's expression would
    pass the limit, its deepest fused operands get buffers until it fits."""
    depth: dict = {}
    for eqn in program.eqns:
        if not _fusable(eqn):
            continue
        fused = {a.id: depth.get(a.id, 0) for a in eqn.inputs
                 if isinstance(a, Var) and a.id not in reasons}
        own = max(1, _op_cost(eqn))
        for vid in sorted(fused, key=fused.get, reverse=True):
            if own + fused[vid] <= limit:
                break
            reasons[vid] = (f"fused chains deeper than {limit} cost units are split here, so "
                            "each kernel stays a size a compiler handles")
            fused[vid] = 0
        for v in eqn.outvars:
            depth[v.id] = own + max(fused.values(), default=0)


# ---- step 2: expression DAGs -----------------------------------------------------------------

def equation_texts(program: Program) -> dict:
    """id(eqn) -> the equation as `make_jaxpr` prints it, with the same variable names."""
    namer = _Namer()
    for v in program.constvars + program.invars:
        namer.binder(v)
    return {id(e): pp_eqn(e, namer) for e in program.eqns}


class DagBuilder:
    """Builds one kernel's expression DAG by walking back from values to buffers.

    The walk keeps its own stack: expanding an equation (`expand` and the helpers it calls) is
    a generator that yields `(atom, transforms)` for each value it needs and is sent back that
    value's node index, and `value` runs these generators innermost first. A chain of N fused
    ops is then N suspended generators on a list rather than N nested Python calls, so chains
    far deeper than the interpreter's recursion limit fuse (a helper that calls `value` itself
    instead of yielding still works: its operands start a walk of their own)."""

    def __init__(self, fusion, buffer_of):
        self.f = fusion
        self.nodes: list = []
        self.memo: dict = {}
        self.args: dict = {}          # buffer name -> arg name
        self.buffer_of = buffer_of
        self.eqns: dict = {}          # id(eqn) -> eqn (kept in program order later)

    def add(self, node) -> int:
        key = node
        try:
            hash(key)
        except TypeError:
            key = id(node)
        if key in self.memo:
            return self.memo[key]
        self.nodes.append(node)
        self.memo[key] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def arg(self, buffer: str) -> str:
        if buffer not in self.args:
            self.args[buffer] = f"in{len(self.args)}"
        return self.args[buffer]

    def leaf_map(self, shape, transforms) -> IndexMap:
        imap = IndexMap.contiguous(shape)
        for t in reversed(transforms):
            imap = getattr(imap, t[0])(*t[1:])
        return imap

    def value(self, atom, transforms: tuple, root=False) -> int:
        """Node index of `atom` seen through `transforms` (root-first list of layout ops)."""
        return self.walk(self.lookup(atom, transforms, root))

    def run(self, expansion) -> int:
        """Node index that the generator `expansion` (one written like `expand`, such as
        `pieces`) returns, its requests served by the same walk."""
        return self.walk((None, expansion))

    def walk(self, found) -> int:
        """Run `found` (a node index, or (memo key or None, expansion) from `lookup`) to its
        node index, expanding requested equations innermost first on an explicit stack."""
        stack = []   # (memo key, suspended expansion), innermost last
        while True:
            if isinstance(found, tuple):   # an equation to expand first
                stack.append(found)
                sent = None
            elif not stack:
                return found
            else:
                sent = found
            key, expansion = stack[-1]
            try:
                request = expansion.send(sent)
            except StopIteration as done:
                stack.pop()
                found = done.value
                if key is not None:
                    self.memo[key] = found
                continue
            found = self.lookup(*request)

    def lookup(self, atom, transforms: tuple, root=False):
        """The node index of `atom` through `transforms` when no equation has to be expanded
        (a literal, a value seen before, a load of a buffer), else (memo key, the expansion of
        its producer, not started yet)."""
        if isinstance(atom, Literal):
            return self.add(Const(np.asarray(atom.val).item(), atom.aval.dtype.name))
        key = (atom.id, transforms)
        if key in self.memo:
            return self.memo[key]
        buf = self.buffer_of(atom)
        if buf is None or root:
            return key, self.expand(self.f.producer[atom.id], atom, transforms)
        node = Load(self.arg(buf), self.leaf_map(atom.aval.shape, transforms), atom.aval.dtype.name)
        self.memo[key] = k = self.add(node)
        return k

    def expand(self, eqn, out, transforms):
        """Generator: the node index of `out`, computed by `eqn` (see the class docstring)."""
        self.eqns[id(eqn)] = eqn
        kind, op = lowering.lowering_of(eqn.prim)
        p = eqn.params
        x = eqn.inputs[0] if eqn.inputs else None
        text = self.f.text(eqn)
        if kind == "layout":
            name = eqn.prim.name
            if name == "broadcast_in_dim":
                t = ("broadcast", tuple(p["shape"]), tuple(p["broadcast_dimensions"]))
            elif name == "transpose":
                t = ("transpose", tuple(p["permutation"]))
            elif name == "slice":
                t = ("slice", tuple(p["start_indices"]), tuple(p["limit_indices"]),
                     tuple(p["strides"]) if p.get("strides") else None)
            elif name == "rev":
                t = ("rev", tuple(p["dimensions"]))
            else:  # reshape, squeeze, expand_dims: all reshapes of the row-major order
                if name == "reshape" and p.get("dimensions") is not None:
                    x_t = ("transpose", tuple(p["dimensions"]))
                    return (yield x, transforms + (("reshape", tuple(out.aval.shape)), x_t))
                t = ("reshape", tuple(out.aval.shape))
            return (yield x, transforms + (t,))
        if kind == "indexing":
            return (yield from self.gather(eqn, out, transforms, text))
        if kind == "piecewise":
            k = getattr(self, op)(eqn, out, transforms, text)
            return (yield from k) if inspect.isgenerator(k) else k
        if kind == "window":
            return self.window(eqn, out, transforms, text, op)
        if op == "iota":
            shape, dim = tuple(p["shape"]), p["dimension"]
            return self.add(Iota(shape, dim, self.leaf_map(shape, transforms), out.aval.dtype.name))
        if op == "stop_gradient":
            return (yield x, transforms)
        args = []
        for a in eqn.inputs:
            args.append((yield self.operand(a, out, transforms)))
        args = tuple(args)
        if op == "threefry2x32":
            k = self.add(Op("threefry2x32", args, "uint32", (), text))
            return self.add(Op("proj", (k,), "uint32", (eqn.outvars.index(out),), text))
        dtype = out.aval.dtype.name
        if op == "round":
            op = "round_even" if int(p.get("rounding_method", 0)) == 1 else "round_away"
            return self.add(Op(op, args, dtype, (), text))
        if op == "integer_pow":
            return self.add(Op("integer_pow", args, dtype, (int(p["y"]),), text))
        if op == "select_n":
            which = self.nodes[args[0]]
            if np.dtype(which.dtype) != np.bool_:
                zero = self.add(Const(0, which.dtype))
                args = (self.add(Op("ne", (args[0], zero), "bool")),) + args[1:]
        return self.add(Op(op, args, dtype, (), text))

    def operand(self, a, out, transforms) -> tuple:
        """The request for an elementwise operand, broadcast (rank 0 or size-1 dims) to the
        output's shape."""
        if isinstance(a, Literal) or a.aval.shape == out.aval.shape:
            return a, transforms
        dims = tuple(range(len(a.aval.shape)))
        return a, transforms + (("broadcast", tuple(out.aval.shape), dims),)

    def gather(self, eqn, out, transforms, text):
        """Generator: a gather (or dynamic_slice) as one indexed load inside this kernel."""
        p = eqn.params
        operand = eqn.inputs[0]
        buf = self.f.ensure_buffer(operand)
        out_shape = tuple(out.aval.shape)
        coord = functools.partial(self.coord, out_shape, transforms=transforms)
        sizes = tuple(p["slice_sizes"])
        if eqn.prim.name == "dynamic_slice":
            scalar = transforms + (("broadcast", out_shape, ()),)
            starts = []
            for s in eqn.inputs[1:]:
                starts.append((yield s, scalar))
            offsets = [coord(d) for d in range(len(out_shape))]
            mode, fill = "clip", 0
        else:
            dn = p["dimension_numbers"]
            indices = eqn.inputs[1]
            mode = _mode_name(p.get("mode"))
            fill = p.get("fill_value")
            fill = _default_fill(operand.aval.dtype) if fill is None else fill
            batch_dims = tuple(d for d in range(len(out_shape)) if d not in dn.offset_dims)
            starts = [None] * operand.aval.ndim
            for comp, od in enumerate(dn.start_index_map):
                starts[od] = yield from self.index_component(indices, comp, out_shape, batch_dims,
                                                             transforms)
            offsets = [None] * operand.aval.ndim
            batching = tuple(getattr(dn, "operand_batching_dims", ()))
            window = [d for d in range(operand.aval.ndim)
                      if d not in dn.collapsed_slice_dims and d not in batching]
            for od, outd in zip(window, dn.offset_dims):
                offsets[od] = coord(outd)
            # A batching dim is read at the output's coordinate along the matching batch dim
            # (indices dim k is the output's k-th non-offset dim), always in bounds.
            for od, idim in zip(batching, dn.start_indices_batching_dims):
                offsets[od] = coord(batch_dims[idim])
        node = Gather(self.arg(buf), tuple(operand.aval.shape), sizes, tuple(starts),
                      tuple(offsets), mode, np.asarray(fill).item(), out.aval.dtype.name, text)
        return self.add(node)

    # ---- piecewise ops: each output element picks its source by index arithmetic --------

    def op(self, name, args, dtype, text="") -> int:
        return self.add(Op(name, tuple(args), dtype, (), text))

    def const(self, value, dtype="int64") -> int:
        return self.add(Const(value, dtype))

    def coord(self, shape, dim, transforms) -> int:
        """The coordinate along `dim` of the current element, in an array of `shape` that the
        root reaches through `transforms`."""
        return self.add(Iota(tuple(shape), dim, self.leaf_map(tuple(shape), transforms), "int64"))

    def all_of(self, conds) -> int | None:
        acc = None
        for c in conds:
            acc = c if acc is None else self.op("and", (acc, c), "bool")
        return acc

    def pad(self, eqn, out, transforms, text):
        """Generator: pad(x, v): where (c - low) is a multiple of (interior + 1) inside x, x at
        (c - low) / (interior + 1); elsewhere v. Negative low/high crop."""
        x, v = eqn.inputs
        shape = tuple(out.aval.shape)
        fill = yield v, transforms + (("broadcast", shape, ()),)
        if x.aval.size == 0:
            return fill
        config = eqn.params["padding_config"]
        low = tuple(lo for lo, _, _ in config)
        interior = tuple(i for _, _, i in config)
        conds = []
        for d, ((lo, hi, i), n) in enumerate(zip(config, x.aval.shape)):
            if lo <= 0 and hi <= 0 and i == 0:
                continue   # only cropped: every element has a source
            # t = c - low: padding below when t < 0 (only if low > 0), above when t passes the
            # last source element (only if high > 0), interior when t is off the stride.
            t = self.op("sub", (self.coord(shape, d, transforms), self.const(lo)), "int64")
            if lo > 0:
                conds.append(self.op("ge", (t, self.const(0)), "bool"))
            if hi > 0:
                conds.append(self.op("le", (t, self.const((n - 1) * (i + 1))), "bool"))
            if i:
                r = self.op("rem", (t, self.const(i + 1)), "int64")
                conds.append(self.op("eq", (r, self.const(0)), "bool"))
        inner = yield x, _then_pad(transforms, shape, low, interior)
        mask = self.all_of(conds)
        if mask is None:
            return inner
        return self.op("select_n", (mask, fill, inner), out.aval.dtype.name, text)

    def concatenate(self, eqn, out, transforms, text):
        """Generator: concatenate along `dimension`, the piece whose range holds the coordinate."""
        return (yield from self.pieces(eqn.inputs, eqn.params["dimension"], tuple(out.aval.shape),
                                       out.aval.dtype.name, transforms, text))

    def pieces(self, inputs, dim, shape, dtype, transforms, text):
        """Generator: `inputs` side by side along `dim` over `shape`, a chain of selects on the
        coordinate. Each piece is a request of the walk (nested concatenates never recurse);
        a caller outside a walk runs it with `run`."""
        pieces, start = [], 0
        for x in inputs:
            n = x.aval.shape[dim]
            if n:
                low = tuple(start if d == dim else 0 for d in range(len(shape)))
                t = _then_pad(transforms, shape, low, (0,) * len(shape))
                pieces.append((start + n, (yield x, t)))
            start += n
        if not pieces:  # every input is empty along `dim`: so is the output, nothing is read
            return self.const(0, dtype)
        c = self.coord(shape, dim, transforms)
        result = pieces[-1][1]
        for end, value in reversed(pieces[:-1]):
            below = self.op("lt", (c, self.const(end)), "bool")
            result = self.op("select_n", (below, result, value), dtype, text)
        return result

    def dynamic_update_slice(self, eqn, out, transforms, text):
        """Generator: the update where the element lies in its window (starts clamped so the window fits,
        as XLA), the operand elsewhere. The update is read by an indexed load."""
        operand, update, *starts = eqn.inputs
        shape, ushape = tuple(out.aval.shape), tuple(update.aval.shape)
        base = yield operand, transforms
        if update.aval.size == 0:
            return base
        scalar = transforms + (("broadcast", shape, ()),)
        conds, rel = [], []
        for d, (s, n, u) in enumerate(zip(starts, shape, ushape)):
            s = self.op("convert", ((yield s, scalar),), "int64")
            s = self.op("clamp", (self.const(0), s, self.const(n - u)), "int64")
            r = self.op("sub", (self.coord(shape, d, transforms), s), "int64")
            conds.append(self.op("ge", (r, self.const(0)), "bool"))
            conds.append(self.op("lt", (r, self.const(u)), "bool"))
            rel.append(r)
        buf = self.f.ensure_buffer(update)
        load = self.add(Gather(self.arg(buf), ushape, (1,) * len(ushape), tuple(rel),
                               (None,) * len(ushape), "clip", 0, update.aval.dtype.name, text))
        return self.op("select_n", (self.all_of(conds), base, load), out.aval.dtype.name, text)

    def window(self, eqn, out, transforms, text, op) -> int:
        """reduce_window_*: one inline loop over the window of the (buffered) operand."""
        x = eqn.inputs[0]
        p = eqn.params
        shape = tuple(out.aval.shape)
        buf = self.f.ensure_buffer(x)
        dtype = out.aval.dtype.name
        node = Window(self.arg(buf), tuple(x.aval.shape), shape, self.leaf_map(shape, transforms), op,
                      tuple(p["window_dimensions"]), tuple(p["window_strides"]),
                      tuple(tuple(lh) for lh in p["padding"]), tuple(p["base_dilation"]),
                      tuple(p["window_dilation"]), lowering.reduce_identity(op, dtype).item(),
                      dtype, text)
        return self.add(node)

    def index_component(self, indices, comp, out_shape, batch_dims, transforms):
        """Generator: indices[b..., comp] read at the output's batch coordinates: slice out component
        `comp` of the index vector (the last dim), drop that dim, broadcast onto the output."""
        ishape = tuple(indices.aval.shape)
        starts = (0,) * (len(ishape) - 1) + (comp,)
        limits = ishape[:-1] + (comp + 1,)
        t = transforms + (("broadcast", out_shape, batch_dims), ("reshape", ishape[:-1]),
                          ("slice", starts, limits, None))
        return (yield indices, t)


def _then_pad(transforms: tuple, shape, low, interior) -> tuple:
    """`transforms` followed by a pad to `shape`, merged into a pad that ends `transforms` when
    the two compose (`IndexMap.merge_pads`): the transforms of a piece nested N concatenates deep
    stay one pad, not N, so its memo key and index map cost O(1) instead of O(N)."""
    if transforms and transforms[-1][0] == "pad":
        _, outer_shape, outer_low, outer_interior = transforms[-1]
        merged = IndexMap.merge_pads(outer_low, outer_interior, low, interior)
        if merged is not None:
            return transforms[:-1] + (("pad", outer_shape, *merged),)
    return transforms + (("pad", tuple(shape), tuple(low), tuple(interior)),)


def _mode_name(mode) -> str:
    text = str(mode).lower() if mode is not None else "clip"
    return "fill" if ("fill" in text or "drop" in text) else "clip"


def _default_fill(dtype):
    dtype = np.dtype(dtype)
    if lowering.dtype_kind(dtype) in "fc":
        return np.nan
    if dtype.kind == "b":
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


# ---- the fusion driver -----------------------------------------------------------------------

class Fusion:
    def __init__(self, program: Program, consts=(), options: FusionOptions | None = None,
                 inplace=frozenset()):
        self.program = program
        self.options = options or FusionOptions()
        self.producer = {v.id: e for e in program.eqns for v in e.outvars}
        self.reasons = materialize(program, self.options)
        self.buffers: dict = {}       # var id -> buffer name
        self.info: dict = {}          # buffer name -> BufferInfo
        self.constants: list = []
        self.steps: list = []
        self.inplace = inplace
        self.consts = list(consts)
        self.counter = 0
        self.reduction_meta: dict = {}   # id(kernel) -> (operand shape, axes, permutation)
        self.texts = equation_texts(program)

    def text(self, eqn) -> str:
        return self.texts.get(id(eqn)) or pp_eqn(eqn, _Namer())

    def new_buffer(self, aval, prefix="t") -> str:
        name = f"{prefix}{self.counter}"
        self.counter += 1
        self.info[name] = BufferInfo(tuple(aval.shape), aval.dtype.name)
        return name

    def buffer_of(self, atom):
        if isinstance(atom, Literal):
            return None
        if atom.id in self.buffers:
            return self.buffers[atom.id]
        if atom.id in self.reasons:
            self.buffers[atom.id] = self.new_buffer(atom.aval)
            return self.buffers[atom.id]
        return None

    def ensure_buffer(self, atom) -> str:
        if isinstance(atom, Literal):
            name = self.new_buffer(atom.aval, "c")
            self.constants.append((name, np.asarray(atom.val, atom.aval.dtype)))
            return name
        buf = self.buffer_of(atom)
        if buf is None:
            raise AssertionError(f"{atom} should have been materialized")
        return buf

    def kernel_name(self, kind: str) -> str:
        return f"gpuarr_{kind}_{len(self.steps)}"

    def run(self) -> KernelPlan:
        prog = self.program
        inputs = tuple(self.ensure_buffer(v) for v in prog.constvars + prog.invars)
        for i, eqn in enumerate(prog.eqns):
            self.lower(i, eqn)
        outputs = tuple(self.ensure_buffer(a) for a in prog.outvars)
        merge_into_reductions(self, set(outputs))
        merge_siblings(self)
        nbytes = lambda a: a.aval.size * a.aval.dtype.itemsize  # noqa: E731
        min_bytes = sum(nbytes(v) for v in prog.invars + prog.constvars)
        min_bytes += sum(nbytes(a) for a in prog.outvars if isinstance(a, Var))
        return KernelPlan(inputs, outputs, tuple(self.info.items()), tuple(self.steps),
                          tuple(self.constants), min_bytes)

    def lower(self, index, eqn):
        kind, name = lowering.lowering_of(eqn.prim)
        if _fusable(eqn):
            for v in eqn.outvars:
                if v.id in self.reasons:
                    self.elementwise(v)
            return
        kernel_dtypes = all(_kernel_dtype(a.aval.dtype) for a in eqn.inputs + eqn.outvars)
        if kind == "reduce" and kernel_dtypes:
            self.reduction(eqn, name)
            return
        if kind == "scan" and kernel_dtypes:
            self.scan(eqn, name)
            return
        if kind == "indexing" and eqn.prim.name.startswith("scatter") and self.scatter(index, eqn):
            return
        role = {"library": "library", "control": "control"}.get(kind, "fallback")
        self.host(eqn, role)

    def kernel_io(self, dag, out_dtype, out_size, out_buf, eqn=None):
        """(args, equations, bindings) of a kernel whose inputs are `dag`'s buffers and whose
        output `out0` (`out_size` elements of `out_dtype`) is `out_buf`; its equations are the
        fused producers in program order, then `eqn` (the kernel's own) when given."""
        args = tuple(Arg(a, self.info[b].dtype, math.prod(self.info[b].shape))
                     for b, a in dag.args.items())
        args += (Arg("out0", out_dtype, max(1, out_size), True),)
        eqns = tuple(self.text(e) for e in _in_program_order(self.program, dag.eqns))
        if eqn is not None:
            eqns += (self.text(eqn),)
        bindings = tuple((a, b) for b, a in dag.args.items()) + (("out0", out_buf),)
        return args, eqns, bindings

    def elementwise(self, var):
        eqn = self.producer.get(var.id)
        if eqn is not None and eqn.prim.name == "concatenate" and len(eqn.inputs) > CONCAT_PIECES:
            self.wide_concatenate(eqn, var)
            return
        dag = DagBuilder(self, self.buffer_of)
        root = dag.value(var, (), root=True)
        args, eqns, bindings = self.kernel_io(dag, var.aval.dtype.name, var.aval.size,
                                              self.buffer_of(var))
        kernel = ElementwiseKernel(self.kernel_name("elementwise"), tuple(var.aval.shape),
                                   args, tuple(dag.nodes), (Store("out0", root),),
                                   eqns, self.reasons[var.id])
        self.steps.append(KernelStep(kernel, bindings))

    def wide_concatenate(self, eqn, var):
        """A concatenate of more than CONCAT_PIECES pieces: one kernel per run of CONCAT_PIECES
        pieces writes its slice of the output, so no launch passes more than CONCAT_PIECES + 1
        pointers (CUDA's kernel parameters hold 4 KiB; OpenCL C 1.2 cannot keep a table of
        global pointers in a buffer) and no lane selects among more than CONCAT_PIECES pieces."""
        dim, shape = eqn.params["dimension"], tuple(var.aval.shape)
        out_map, start = IndexMap.contiguous(shape), 0
        for g in range(0, len(eqn.inputs), CONCAT_PIECES):
            group = eqn.inputs[g:g + CONCAT_PIECES]
            width = sum(x.aval.shape[dim] for x in group)
            if width == 0:
                continue
            part = shape[:dim] + (width,) + shape[dim + 1:]
            dag = DagBuilder(self, self.buffer_of)
            dag.eqns[id(eqn)] = eqn
            root = dag.run(dag.pieces(group, dim, part, var.aval.dtype.name, (), self.text(eqn)))
            args, eqns, bindings = self.kernel_io(dag, var.aval.dtype.name, var.aval.size,
                                                  self.buffer_of(var))
            window = out_map.slice(tuple(start if d == dim else 0 for d in range(len(shape))),
                                   shape[:dim] + (start + width,) + shape[dim + 1:])
            reason = (f"{self.reasons[var.id]}: pieces {g}..{g + len(group) - 1} "
                      f"(elements {start}..{start + width - 1} along axis {dim})")
            kernel = ElementwiseKernel(self.kernel_name("concatenate"), part, args,
                                       tuple(dag.nodes), (Store("out0", root, window),), eqns, reason)
            self.steps.append(KernelStep(kernel, bindings))
            start += width

    def reduction(self, eqn, op):
        x, out = eqn.inputs[0], eqn.outvars[0]
        axes = tuple(sorted(eqn.params["axes"]))
        shape = tuple(x.aval.shape)
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        perm = kept + axes
        dag = DagBuilder(self, self.buffer_of)
        transforms = () if perm == tuple(range(len(shape))) else (("transpose", perm),)
        red_shape = tuple(shape[d] for d in axes)
        out_shape = tuple(shape[d] for d in kept)
        acc_dtype = out.aval.dtype.name
        reason = f"{eqn.prim.name} over axes {axes}: a reduction is a kernel boundary"
        groups, chunk = _split_groups(out_shape, red_shape, op)
        if groups:
            # Two passes: `groups` blocks reduce `chunk` consecutive elements each (the last
            # block's lanes past the end add the identity), then one block the partials.
            red_size = math.prod(red_shape)
            partial = self.new_buffer(ShapedArray((groups,), acc_dtype))
            self.reduction_kernel(dag, x, transforms, (groups,), (chunk,), op, eqn, partial,
                                  f"{reason} (first of two passes, {groups} blocks of {chunk})",
                                  (shape, axes, perm), final=False, limit=red_size)
            dag = DagBuilder(self, self.buffer_of)
            load = Load(dag.arg(partial), IndexMap.contiguous((groups,)), acc_dtype)
            dag.add(load)
            self.reduction_kernel(dag, None, (), (), (groups,), op, eqn, self.buffer_of(out),
                                  f"{reason} (second pass over {groups} partials)",
                                  ((groups,), (0,), (0,)), final=True)
            return
        probe = DagBuilder(self, self.buffer_of)
        probe.value(x, transforms)
        strategy = _strategy(probe.nodes, out_shape, red_shape)
        chunks, chunk = _split_axis(strategy, out_shape, red_shape, op) \
            if strategy != "column" or self.options.split_columns else (0, 0)
        if chunks:
            # Two passes: each row's reduced elements are cut into `chunks` chunks, each reduced
            # by its own block (row, strided) or thread (column), so the device fills; the
            # second pass reduces each row's partials, laid out (chunk, row) for the column
            # strategy (coalesced), (row, chunk) otherwise. An arg reduction's first pass also
            # stores each chunk's winning value; its second pass reduces (value, index) pairs.
            rows = math.prod(out_shape)
            column = strategy == "column"
            part = (chunks,) + out_shape if column else out_shape + (chunks,)
            partial = self.new_buffer(ShapedArray(part, acc_dtype))
            arg = op in ("argmax", "argmin")
            values = self.new_buffer(ShapedArray(part, x.aval.dtype)) if arg else None
            self.reduction_kernel(dag, x, transforms, (rows * chunks,), (chunk,), op, eqn, partial,
                                  f"{reason} (first of two passes, {chunks} chunks of {chunk} per row)",
                                  (shape, axes, perm), final=False,
                                  strategy="split" if strategy == "full" else strategy,
                                  split=math.prod(red_shape), values=values)
            dag = DagBuilder(self, self.buffer_of)
            imap = IndexMap.contiguous(part)
            if column:
                imap = imap.transpose(tuple(range(1, len(part))) + (0,))
            dag.add(Load(dag.arg(values or partial), imap, x.aval.dtype.name if arg else acc_dtype))
            index_root = dag.add(Load(dag.arg(partial), imap, acc_dtype)) if arg else -1
            self.reduction_kernel(dag, None, (), out_shape, (chunks,), op, eqn, self.buffer_of(out),
                                  f"{reason} (second pass over {chunks} partials per row)",
                                  (out_shape + (chunks,), (len(out_shape),), tuple(range(len(part)))),
                                  final=True, index_root=index_root)
            return
        self.reduction_kernel(dag, x, transforms, out_shape, red_shape, op, eqn,
                              self.buffer_of(out), reason, (shape, axes, perm), final=True)

    def reduction_kernel(self, dag, x, transforms, out_shape, red_shape, op, eqn, out_buf,
                         reason, meta, final, limit=0, strategy=None, split=0, values=None,
                         index_root=-1):
        acc_dtype = eqn.outvars[0].aval.dtype.name
        root = dag.value(x, transforms) if x is not None else 0
        args, eqns, bindings = self.kernel_io(dag, acc_dtype, math.prod(out_shape), out_buf, eqn)
        if values is not None:   # the first pass of a split arg reduction: winners' values too
            args += (Arg("out1", self.info[values].dtype, math.prod(out_shape), True),)
            bindings += (("out1", values),)
        strategy = "split" if limit else strategy or _strategy(dag.nodes, out_shape, red_shape)
        value_dtype = eqn.inputs[0].aval.dtype.name if op in ("argmax", "argmin") else ""
        identity = lowering.reduce_identity(op, value_dtype or acc_dtype).item()
        kernel = ReductionKernel(
            self.kernel_name("reduce"), out_shape, red_shape, args, op, acc_dtype,
            identity, tuple(dag.nodes), root, (Acc(acc_dtype),), (Store("out0", 0),),
            strategy=strategy, equations=eqns, reason=reason, value_dtype=value_dtype,
            limit=limit, split=split, value_out="out1" if values is not None else "",
            index_root=index_root)
        self.steps.append(KernelStep(kernel, bindings))
        if final:
            self.reduction_meta[id(kernel)] = meta

    def scan(self, eqn, op):
        """A cumulative op as a scan kernel whose pre-map fuses the operand's producers."""
        x, out = eqn.inputs[0], eqn.outvars[0]
        axis, shape = eqn.params["axis"], tuple(x.aval.shape)
        dag = DagBuilder(self, self.buffer_of)
        root = dag.value(x, ())
        dtype = out.aval.dtype.name
        args, eqns, bindings = self.kernel_io(dag, dtype, x.aval.size, self.buffer_of(out), eqn)
        kernel = ScanKernel(
            self.kernel_name("scan"), shape, axis, bool(eqn.params["reverse"]), op, dtype,
            lowering.reduce_identity(op, dtype).item(), args, tuple(dag.nodes), root,
            "sequential", eqns, f"{eqn.prim.name} along axis {axis}: a scan is a kernel boundary")
        if kernel.inner == 1 and kernel.length > SCAN_SEQUENTIAL_MAX:  # contiguous, long rows
            kernel = dataclasses.replace(kernel, strategy="block")
        self.steps.append(KernelStep(kernel, bindings))

    def scatter(self, index, eqn) -> bool:
        p = eqn.params
        dn = p.get("dimension_numbers")
        apply = eqn.prim.name == "scatter_apply"
        if (dn is None or not hasattr(dn, "update_window_dims")
                or len(eqn.inputs) != (2 if apply else 3)):
            return False
        operand, indices = eqn.inputs[:2]
        if not all(_kernel_dtype(a.aval.dtype) for a in eqn.inputs):
            return False
        if operand.aval.dtype.name in lowering.HALF_FLOATS:
            return False   # no 16-bit atomics or read-modify-write helpers yet
        combiner = "apply" if apply else lowering.SCATTER_COMBINERS.get(eqn.prim.name)
        if combiner is None or indices.aval.ndim == 0:
            return False
        if operand.aval.dtype == np.bool_ and combiner not in ("set", "apply"):
            return False
        apply_nodes = scalar_function_nodes(p["func_program"]) if apply else ()
        if apply_nodes is None:
            return False
        updates_shape = tuple(p["update_shape"]) if apply else tuple(eqn.inputs[2].aval.shape)
        out = eqn.outvars[0]
        src = self.ensure_buffer(operand)
        ind = self.ensure_buffer(indices)
        upd = None if apply else self.ensure_buffer(eqn.inputs[2])
        if index in self.inplace:
            self.buffers[out.id] = src
        else:
            dst = self.buffer_of(out)
            self.steps.append(CopyStep(src, dst, "scatter operand is still live: update a copy"))
        mode = "clip" if "clip" in str(p.get("mode")).lower() else "drop"
        kernel = ScatterKernel(
            self.kernel_name("scatter"), out.aval.dtype.name, indices.aval.dtype.name,
            tuple(operand.aval.shape), updates_shape, tuple(indices.aval.shape),
            tuple(dn.update_window_dims), tuple(dn.inserted_window_dims),
            tuple(dn.scatter_dims_to_operand_dims), combiner, mode,
            self.options.deterministic_scatter,
            (self.text(eqn),), "scatters are their own kernels"
            + (" (in place: the operand dies here)" if index in self.inplace else ""),
            tuple(getattr(dn, "operand_batching_dims", ())),
            tuple(getattr(dn, "scatter_indices_batching_dims", ())), apply_nodes)
        bindings = (("out", self.buffers[out.id]), ("indices", ind))
        if upd is not None:
            bindings += (("updates", upd),)
        self.steps.append(KernelStep(kernel, bindings))
        return True

    def host(self, eqn, role):
        impl = impl_rules.get(eqn.prim)
        if impl is not None:  # narrow types (float8_*, int4, ...) have their own (narrow_types.py)
            impl = host_impl(eqn.prim, [v.aval.dtype for v in list(eqn.inputs) + list(eqn.outvars)])
        driver = (control_driver(eqn, self.options.sub_compiler, self.options.array_module)
                  if role == "control" else None)
        if driver is not None:
            ins = tuple(self.ensure_buffer(a) for a in eqn.inputs)
            outs = tuple(self.buffer_of(v) or self.new_buffer(v.aval) for v in eqn.outvars)
            self.steps.append(HostStep(role, eqn.prim.name, driver, ins, outs, (self.text(eqn),),
                                       "control flow runs on the host; its sub-programs run as "
                                       "kernel sub-plans", params=dict(eqn.params),
                                       drives_sub_plans=True))
            return
        if impl is None:
            raise NotImplementedError(f"no kernel lowering and no NumPy implementation of {eqn.prim.name}")
        fn = functools.partial(impl, **eqn.params) if eqn.params else impl
        if eqn.prim.multiple_results:
            call = fn
        else:
            call = lambda *a, fn=fn: (fn(*a),)  # noqa: E731
        ins = tuple(self.ensure_buffer(a) for a in eqn.inputs)
        outs = tuple(self.buffer_of(v) or self.new_buffer(v.aval) for v in eqn.outvars)
        reason = {"library": "library call (cuBLAS/cuSOLVER/CUB on CUDA, the host here)",
                  "control": "control flow runs on the host, calling its sub-programs",
                  "fallback": "no kernel lowering yet: the NumPy implementation runs on the host"}[role]
        narrow = sorted({v.aval.dtype.name for v in list(eqn.inputs) + list(eqn.outvars)
                         if not _kernel_dtype(v.aval.dtype) and v.aval.dtype in dtypes.NARROW_DTYPES})
        if role == "fallback" and narrow:
            reason = (f"kernels do not take {', '.join(narrow)}: the NumPy implementation runs on "
                      "the host, rounding as XLA does")
        self.steps.append(HostStep(role, eqn.prim.name, call, ins, outs, (self.text(eqn),), reason,
                                   params=dict(eqn.params)))


def scalar_function_nodes(closed):
    """The DAG of scatter_apply's scalar function, its argument an `Acc` (the current value),
    or None when some equation of it has no elementwise kernel lowering."""
    program = closed.program
    if closed.consts or program.constvars or len(program.invars) != 1 or len(program.outvars) != 1:
        return None
    for eqn in program.eqns:
        kind, _ = lowering.lowering_of(eqn.prim)
        if kind not in ("elementwise", "layout") or not _fusable(eqn):
            return None
    (x,), (out,) = program.invars, program.outvars
    if isinstance(out, Literal):
        return None
    fusion = Fusion(program)
    # Only the argument is "in memory"; every intermediate is recomputed (scalars, memoized).
    dag = DagBuilder(fusion, lambda atom: "x" if atom is x else None)
    dag.value(out, (), root=out is not x)
    return tuple(Acc(n.dtype) if isinstance(n, Load) else n for n in dag.nodes)


def _in_program_order(program, eqns: dict) -> list:
    return [e for e in program.eqns if id(e) in eqns]


CONCAT_PIECES = 64          # a wider concatenate is written by several launches
SPLIT_THRESHOLD = 1 << 16   # full reductions at least this big run in two passes
SPLIT_GROUPS = 1024         # blocks of the first pass
SCAN_SEQUENTIAL_MAX = 16    # rows this short scan sequentially even when contiguous
# Rows shorter than this reduce in order from the identity, one thread each (strategy column):
# XLA's CPU backend adds up to 32 elements per output one after the other (below 4096 operand
# elements), and so does the NumPy backend (lax.shape_ops.IN_ORDER_MAX): short sums round alike.
ORDERED_MAX = 33


def _split_groups(out_shape, red_shape, op) -> tuple:
    """(blocks, elements per block) of the first pass of a two-pass full reduction, or (0, 0)
    for one pass. Any size splits: the chunk is rounded up and the last block runs short, so
    no block is empty. Arg reductions stay in one pass."""
    red_size = math.prod(red_shape)
    if math.prod(out_shape) != 1 or red_size < SPLIT_THRESHOLD or op in ("argmax", "argmin"):
        return 0, 0
    chunk = -(-red_size // SPLIT_GROUPS)
    return -(-red_size // chunk), chunk


TARGET_BLOCKS = 2 * 132     # blocks that fill a GPU of 132 SMs (H100, H200) twice over
AXIS_SPLIT_MIN_CHUNK = {"column": 64, "row": 256, "strided": 256, "full": 256}   # per chunk


def _split_axis(strategy, out_shape, red_shape, op) -> tuple:
    """(chunks per row, elements per chunk) of the first pass when a reduction with several
    outputs would launch fewer than TARGET_BLOCKS blocks on a large input (a 16384 x 16384
    column sum: 64 blocks of 256 threads), or (0, 0) for one pass. Full reductions other than
    argmax/argmin have their own split (`_split_groups`) and never get here."""
    rows, red_size = math.prod(out_shape), math.prod(red_shape)
    if strategy not in AXIS_SPLIT_MIN_CHUNK or rows * red_size < SPLIT_THRESHOLD:
        return 0, 0
    blocks = -(-rows // 256) if strategy == "column" else rows
    chunks = min(-(-TARGET_BLOCKS // blocks), red_size // AXIS_SPLIT_MIN_CHUNK[strategy])
    if blocks >= TARGET_BLOCKS or chunks < 2:
        return 0, 0
    chunk = -(-red_size // chunks)
    return -(-red_size // chunk), chunk


def _strategy(nodes, out_shape, red_shape) -> str:
    out_size, red_size = math.prod(out_shape), math.prod(red_shape)
    if red_size < ORDERED_MAX:
        return "column"
    if out_size == 1:
        return "full"
    loads = [n for n in nodes if isinstance(n, Load)]
    inner_strides = [n.index.views[0].strides[-1] for n in loads if len(n.index.views) == 1
                     and n.index.views[0].shape and n.index.views[0].shape[-1] > 1
                     and n.index.views[0].strides[-1] != 0]
    if red_size > 1 and inner_strides and all(abs(s) == 1 for s in inner_strides):
        return "row" if red_size >= 32 or out_size < 256 else "column"
    return "column" if out_size >= 256 or red_size < 32 else "strided"


def fuse(program: Program, consts=(), options: FusionOptions | None = None,
         inplace=frozenset()) -> KernelPlan:
    """Fuse `program` into a KernelPlan (see the module docstring for the algorithm)."""
    return Fusion(program, consts, options, inplace).run()
