"""XLA's HLO text of a lowered Program: `jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text()`
and `Lowered.as_text(dialect="hlo")`.

The optimized Program is written as the HLO module JAX would hand to XLA for it: one HLO
instruction per value, HLO's opcodes and shapes with layouts (`f32[2,3]{1,0}`), parameters
named after the arguments, instructions in XLA's post order, unused arguments left out (as
jit's keep_unused=False does), reductions with their combiner regions, jit calls as `call` of
the callee's computation. `LOWERINGS` is the lowering table, one entry per primitive: most
are a single HLO opcode; a few write several
instructions, as JAX's lowering does (`square` and `integer_pow` become `multiply`s, so `x * x`,
`square(x)` and `x ** 2` print the same, `conj` is real/imag/negate/complex). A primitive
without an entry is written as `custom-call(...)`, custom_call_target="<primitive name>"
(a tuple and its get-tuple-elements when it has several results); control flow (cond,
while, scan) is among them. Instruction numbering (`mul.1`) counts per name, so it can differ
from XLA's where JAX's lowering made and dropped intermediate operations; the opcodes, shapes,
operands and attributes are what XLA prints.
"""
from __future__ import annotations

import re

import numpy as np

from gpuarr import stages
from gpuarr.core import ClosedProgram, Literal, Program

# ------------------------------------------------------------------------- types as HLO prints them

_DTYPE_NAMES = {"bool": "pred", "bfloat16": "bf16", "int4": "s4", "uint4": "u4", "int2": "s2",
                "uint2": "u2"}


def dtype_name(dtype) -> str:
    """HLO's element type name: f32, s32, u8, pred, c64, bf16, f8e4m3fn, ..."""
    name = np.dtype(dtype).name
    if name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    m = re.fullmatch(r"(float|int|uint|complex)(\d+)(.*)", name)
    if m is None:
        return name
    kind, bits, rest = m.groups()
    return {"float": "f", "int": "s", "uint": "u", "complex": "c"}[kind] + bits + rest


def shape_text(dtype, shape, layout=None) -> str:
    """`f32[2,3]{1,0}`: element type, dimensions and layout (minor to major), as XLA prints."""
    dims = ",".join(map(str, shape))
    if not shape:
        return f"{dtype_name(dtype)}[]"
    layout = tuple(reversed(range(len(shape)))) if layout is None else layout
    return f"{dtype_name(dtype)}[{dims}]{{{','.join(map(str, layout))}}}"


def _scalar_text(value, dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "true" if value else "false"
    if dtype.kind in "iu":
        return str(int(value))
    if dtype.kind == "c":
        v = complex(value)
        return f"({_scalar_text(v.real, np.float64)}, {_scalar_text(v.imag, np.float64)})"
    v = float(value)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    # The shortest %g text that reads back as the same value of the dtype (XLA's round trip).
    exact = float(np.array(v, dtype))
    for digits in range(1, 18):
        text = f"{v:.{digits}g}"
        if float(np.array(float(text), dtype)) == exact:
            return text
    return repr(v)


def _array_text(values: np.ndarray) -> str:
    if values.ndim == 0:
        return _scalar_text(values[()], values.dtype)
    if values.size > 10:  # XLA leaves large constants out of the text
        return "{...}"
    if values.ndim == 1:
        return "{" + ", ".join(_scalar_text(v, values.dtype) for v in values) + "}"
    return "{ " + ", ".join(_array_text(v) for v in values) + " }"


# ------------------------------------------------------------------------- instructions and modules

class Instruction:
    """One HLO instruction: `name = shape opcode(operands), attributes`."""

    __slots__ = ("name", "dtype", "shape", "opcode", "operands", "attrs", "literal", "layout",
                 "tuple_shapes", "users")

    def __init__(self, name, dtype, shape, opcode, operands=(), attrs="", literal=None,
                 layout=None, tuple_shapes=None):
        self.name, self.dtype, self.shape, self.opcode = name, dtype, tuple(shape), opcode
        self.operands, self.attrs, self.literal = list(operands), attrs, literal
        self.layout, self.tuple_shapes, self.users = layout, tuple_shapes, 0

    def shape_text(self) -> str:
        if self.tuple_shapes is not None:
            return "(" + ", ".join(self.tuple_shapes) + ")"
        return shape_text(self.dtype, self.shape, self.layout)

    def text(self, root: bool) -> str:
        inside = self.literal if self.literal is not None else ", ".join(
            o.name for o in self.operands)
        attrs = f", {self.attrs}" if self.attrs else ""
        return (f"  {'ROOT ' if root else ''}{self.name} = {self.shape_text()} "
                f"{self.opcode}({inside}){attrs}")


class Computation:
    """An HLO computation: its instructions and the one that is its result."""

    def __init__(self, name: str):
        self.name = name
        self.instructions: list[Instruction] = []
        self.root: Instruction | None = None

    def post_order(self) -> list[Instruction]:
        """XLA's instruction order: a depth-first post order from each instruction nobody
        uses, taken in the order they were made (unused parameters first, the root last)."""
        seen, order = set(), []

        def visit(ins):
            stack = [(ins, iter(ins.operands))]
            seen.add(id(ins))
            while stack:
                node, operands = stack[-1]
                for op in operands:
                    if id(op) not in seen:
                        seen.add(id(op))
                        stack.append((op, iter(op.operands)))
                        break
                else:
                    stack.pop()
                    order.append(node)

        for ins in self.instructions:
            if ins.users == 0 and ins is not self.root and id(ins) not in seen:
                visit(ins)
        if self.root is not None and id(self.root) not in seen:
            visit(self.root)
        return order

    def text(self, entry: bool = False) -> str:
        lines = [f"{'ENTRY ' if entry else ''}{self.name} {{"]
        lines += [ins.text(ins is self.root) for ins in self.post_order()]
        return "\n".join(lines + ["}"])


class Builder:
    """Makes the instructions of one computation, naming them `base.N` with counters shared by
    the whole module (HLO names are unique in a module)."""

    def __init__(self, module: HloModule, computation: Computation):
        self.module = module
        self.computation = computation

    def add(self, base, dtype, shape, opcode, operands=(), attrs="", **kw) -> Instruction:
        ins = Instruction(self.module.fresh_name(base), dtype, shape, opcode, operands, attrs, **kw)
        for op in ins.operands:
            op.users += 1
        self.computation.instructions.append(ins)
        return ins

    def op(self, base, aval, opcode, operands, attrs="") -> Instruction:
        """An instruction whose result has `aval`'s type."""
        return self.add(base, aval.dtype, aval.shape, opcode, operands, attrs)

    def constant(self, value, dtype) -> Instruction:
        values = np.asarray(value, dtype)
        return self.add("constant", values.dtype, values.shape, "constant",
                        literal=_array_text(values))

    def broadcast(self, ins: Instruction, shape) -> Instruction:
        """A scalar operand broadcast to `shape` (JAX broadcasts scalars before elementwise
        operations); anything of that shape already is returned as it is."""
        if tuple(shape) == ins.shape:
            return ins
        dims = ",".join(map(str, range(len(shape) - len(ins.shape), len(shape))))
        return self.add("broadcast", ins.dtype, shape, "broadcast", [ins], f"dimensions={{{dims}}}")


class HloModule:
    """An HLO module (JAX's `XlaComputation` of `compiler_ir(dialect="hlo")`): `as_hlo_text()`
    is its text, as XLA prints it."""

    def __init__(self, name: str):
        self._name = name
        self._counts: dict[str, int] = {}
        self.computations: list[Computation] = []
        self.entry: Computation | None = None
        self.layout = ""

    def fresh_name(self, base: str) -> str:
        base = _sanitize(base) or "Arg"
        self._counts[base] = self._counts.get(base, 0) + 1
        return f"{base}.{self._counts[base]}"

    def name(self) -> str:
        return self._name

    def as_hlo_text(self) -> str:
        """The module's text: header, the called computations, then the entry computation."""
        parts = [f"HloModule {self._name}, entry_computation_layout={{{self.layout}}}", ""]
        for comp in self.computations:
            parts += [comp.text(entry=comp is self.entry), ""]
        return "\n".join(parts) + "\n"

    def __str__(self):
        return self.as_hlo_text()

    def __repr__(self):
        return f"<HloModule {self._name}>"


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


# ------------------------------------------------------------------------- lowering Programs

def _operands(b: Builder, env: dict, atoms) -> list[Instruction]:
    out = []
    for a in atoms:
        if isinstance(a, Literal):
            out.append(b.constant(a.val, a.aval.dtype))
        else:
            out.append(env[a])
    return out


def lower_program(module: HloModule, comp: Computation, program: Program, consts,
                  params: list[Instruction] | None, arg_names=()) -> list[Instruction]:
    """Write `program` into `comp` (its parameters, unless `params` gives the values of its
    inputs); the instructions of its outputs."""
    b = Builder(module, comp)
    env = {}
    for var, value in zip(program.constvars, consts):
        env[var] = b.constant(np.asarray(value), var.aval.dtype)
    if params is None:
        params = []
        for i, var in enumerate(program.invars):
            base = arg_names[i] if i < len(arg_names) and arg_names[i] else f"Arg_{i}"
            params.append(b.add(base, var.aval.dtype, var.aval.shape, "parameter",
                                literal=str(i)))
    env.update(zip(program.invars, params))
    for eqn in program.eqns:
        ins = _operands(b, env, eqn.inputs)
        rule = LOWERINGS.get(eqn.prim.name, _custom_call)
        outs = rule(b, eqn, ins)
        env.update(zip(eqn.outvars, outs))
    return _operands(b, env, program.outvars)


def _set_root(b: Builder, outs: list[Instruction], multiple: bool) -> Instruction:
    if len(outs) == 1 and not multiple:
        root = outs[0]
    else:
        root = b.add("tuple", None, (), "tuple", outs,
                     tuple_shapes=[o.shape_text() for o in outs])
    b.computation.root = root
    return root


def hlo_module(closed: ClosedProgram, fun_name: str, arg_names=()) -> HloModule:
    """The HLO module of a lowered ClosedProgram, for `jit` of the function `fun_name`."""
    module = HloModule(_sanitize(f"jit_{fun_name}").rstrip("_"))
    entry = Computation("main")
    outs = lower_program(module, entry, closed.program, closed.consts, None, arg_names)
    root = _set_root(Builder(module, entry), outs, multiple=len(outs) != 1)
    # jit leaves unused arguments out of the module it compiles (keep_unused=False).
    entry.instructions = [i for i in entry.instructions if i.opcode != "parameter"
                          or i.users or i is root]
    params = [i for i in entry.instructions if i.opcode == "parameter"]
    for k, p in enumerate(params):
        p.literal = str(k)
    module.computations.append(entry)
    entry.name = f"main.{len(module.computations)}"
    module.entry = entry
    module.layout = "(" + ", ".join(p.shape_text() for p in params) + ")->" + root.shape_text()
    return module


# ------------------------------------------------------------------------- the lowering table

def _elementwise(opcode: str, attrs: str = ""):
    def rule(b, eqn, ins):
        aval = eqn.outvars[0].aval
        shape = max((i.shape for i in ins), key=len)
        return [b.op(eqn.prim.name, aval, opcode, [b.broadcast(i, shape) for i in ins], attrs)]
    return rule


def _identity(b, eqn, ins):
    return ins[:len(eqn.outvars)]


def _square(b, eqn, ins):
    return [b.op("square", eqn.outvars[0].aval, "multiply", [ins[0], ins[0]])]


def _ones(b, aval):
    return b.broadcast(b.constant(1, aval.dtype), aval.shape)


def _integer_pow(b, eqn, ins):
    # JAX's lowering: y = 2 and 3 directly, others by repeated squaring (a decomposition whose
    # operations are `mul` and `div`).
    x, y, aval = ins[0], eqn.params["y"], eqn.outvars[0].aval
    if y == 1:
        return [x]
    if y in (2, 3):
        out = b.op("integer_pow", aval, "multiply", [x, x])
        return [b.op("integer_pow", aval, "multiply", [out, x]) if y == 3 else out]
    if y == -1:
        return [b.op("integer_pow", aval, "divide", [_ones(b, aval), x])]
    if y == 0:
        return [_ones(b, aval)]
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else b.op("mul", aval, "multiply", [acc, x])
        n >>= 1
        if n > 0:
            x = b.op("mul", aval, "multiply", [x, x])
    return [b.op("div", aval, "divide", [_ones(b, aval), acc]) if y < 0 else acc]


def _conj(b, eqn, ins):
    aval, x = eqn.outvars[0].aval, ins[0]
    part = np.finfo(aval.dtype).dtype
    re_ = b.add("real", part, aval.shape, "real", [x])
    im = b.add("imag", part, aval.shape, "imag", [x])
    neg = b.add("neg", part, aval.shape, "negate", [im])
    return [b.op("complex", aval, "complex", [re_, neg])]


def _select_n(b, eqn, ins):
    pred, *cases = ins
    aval = eqn.outvars[0].aval
    if len(cases) == 1:
        return [cases[0]]
    if len(cases) != 2 or np.dtype(pred.dtype) != np.bool_:
        return _custom_call(b, eqn, ins)
    pred = b.broadcast(pred, aval.shape)
    return [b.op("select_n", aval, "select", [pred, cases[1], cases[0]])]


def _clamp(b, eqn, ins):
    aval = eqn.outvars[0].aval
    lo, x, hi = (b.broadcast(i, aval.shape) for i in ins)
    return [b.op("clamp", aval, "clamp", [lo, x, hi])]


def _dims(values) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _with_attrs(opcode: str, attrs):
    """A rule writing one `opcode` instruction with the attributes `attrs(params)` returns."""
    def rule(b, eqn, ins):
        return [b.op(eqn.prim.name, eqn.outvars[0].aval, opcode, ins, attrs(eqn.params))]
    return rule


def _transpose(b, eqn, ins):
    perm = eqn.params["permutation"]
    inverse = np.argsort(perm)
    layout = ins[0].layout or tuple(reversed(range(len(perm))))
    ins_ = b.op("transpose", eqn.outvars[0].aval, "transpose", ins, f"dimensions={_dims(perm)}")
    ins_.layout = tuple(int(inverse[d]) for d in layout)  # a transpose is a relayout in XLA
    return [ins_]


def _slice_attrs(params) -> str:
    strides = params.get("strides") or (1,) * len(params["start_indices"])
    parts = [f"[{s}:{e}:{st}]" for s, e, st in zip(params["start_indices"],
                                                   params["limit_indices"], strides)]
    return "slice={" + ", ".join(parts) + "}"


def _pad_attrs(params) -> str:
    return "padding=" + "x".join(f"{lo}_{hi}" + (f"_{inner}" if inner else "")
                                 for lo, hi, inner in params["padding_config"])


def _dot_attrs(params) -> str:
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    named = [("lhs_batch_dims", lb), ("lhs_contracting_dims", lc), ("rhs_batch_dims", rb),
             ("rhs_contracting_dims", rc)]
    return ", ".join(f"{k}={_dims(v)}" for k, v in named if len(v))


def _round(b, eqn, ins):
    opcode = "round-nearest-even" if int(eqn.params.get("rounding_method", 0)) == 1 else \
        "round-nearest-afz"
    return [b.op("round", eqn.outvars[0].aval, opcode, ins)]


_REDUCERS = {  # primitive -> (combiner opcode, initial value for floats, ints, bools)
    "reduce_sum": ("add", lambda d: 0),
    "reduce_prod": ("multiply", lambda d: 1),
    "reduce_max": ("maximum", lambda d: -np.inf if d.kind in "fc" else
                   (False if d.kind == "b" else np.iinfo(d).min)),
    "reduce_min": ("minimum", lambda d: np.inf if d.kind in "fc" else
                   (True if d.kind == "b" else np.iinfo(d).max)),
    "reduce_and": ("and", lambda d: True if d.kind == "b" else -1 if d.kind == "i" else
                   np.iinfo(d).max),
    "reduce_or": ("or", lambda d: 0),
    "reduce_xor": ("xor", lambda d: 0),
}


def _reduce(b, eqn, ins):
    name = eqn.prim.name
    opcode, init = _REDUCERS[name]
    dtype = np.dtype(ins[0].dtype)
    region = Computation(f"region_{_region_count(b.module)}.{len(b.module.computations) + 1}")
    rb = Builder(b.module, region)
    lhs = rb.add(name, dtype, (), "parameter", literal="0")
    rhs = rb.add(name, dtype, (), "parameter", literal="1")
    region.root = rb.add(name, dtype, (), opcode, [lhs, rhs])
    b.module.computations.append(region)
    start = b.constant(init(dtype), dtype)
    axes = eqn.params["axes"]
    return [b.op(name, eqn.outvars[0].aval, "reduce", [ins[0], start],
                 f"dimensions={_dims(axes)}, to_apply={region.name}")]


def _region_count(module: HloModule) -> int:
    return sum(c.name.startswith("region_") for c in module.computations)


def _call(b, eqn, ins):
    closed = eqn.params["jaxpr"]
    program, consts = (closed.program, closed.consts) if isinstance(closed, ClosedProgram) \
        else (closed, [])
    callee = Computation(f"{_sanitize(str(eqn.params.get('name', 'jit')))}."
                         f"{len(b.module.computations) + 1}")
    cb = Builder(b.module, callee)
    params = [cb.add("Arg", i.dtype, i.shape, "parameter", literal=str(k), layout=i.layout)
              for k, i in enumerate(ins)]
    for k, p in enumerate(params):
        p.name = f"Arg_{k}.{p.name.rsplit('.', 1)[1]}"
    outs = lower_program(b.module, callee, program, consts, params)
    _set_root(cb, outs, multiple=len(outs) != 1)
    b.module.computations.append(callee)
    name = f"jit({eqn.params.get('name', '')})"
    if len(outs) == 1:
        return [b.add(name, outs[0].dtype, outs[0].shape, "call", ins,
                      f"to_apply={callee.name}")]
    return _tuple_results(b, name, "call", ins, f"to_apply={callee.name}", eqn.outvars)


def _tuple_results(b, base, opcode, ins, attrs, outvars):
    whole = b.add(base, None, (), opcode, ins, attrs,
                  tuple_shapes=[shape_text(v.aval.dtype, v.aval.shape) for v in outvars])
    return [b.add("get-tuple-element", v.aval.dtype, v.aval.shape, "get-tuple-element", [whole],
                  f"index={k}") for k, v in enumerate(outvars)]


def _custom_call(b, eqn, ins):
    """A primitive without a lowering: a custom call whose target is the primitive's name."""
    target = f'custom_call_target="{eqn.prim.name}"'
    if len(eqn.outvars) == 1 and not eqn.prim.multiple_results:
        return [b.op(eqn.prim.name, eqn.outvars[0].aval, "custom-call", ins, target)]
    return _tuple_results(b, eqn.prim.name, "custom-call", ins, target, eqn.outvars)


_OPCODES = {  # primitives that are one elementwise HLO instruction
    "neg": "negate", "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
    "rem": "remainder", "max": "maximum", "min": "minimum", "pow": "power", "abs": "abs",
    "sign": "sign", "floor": "floor", "ceil": "ceil", "is_finite": "is-finite",
    "exp": "exponential", "log": "log", "log1p": "log-plus-one", "expm1": "exponential-minus-one",
    "tanh": "tanh", "logistic": "logistic", "sin": "sine", "cos": "cosine", "tan": "tan",
    "atan2": "atan2", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "not": "not",
    "and": "and", "or": "or", "xor": "xor", "shift_left": "shift-left",
    "shift_right_arithmetic": "shift-right-arithmetic",
    "shift_right_logical": "shift-right-logical", "population_count": "popcnt",
    "clz": "count-leading-zeros", "real": "real", "imag": "imag", "complex": "complex",
    "convert_element_type": "convert", "bitcast_convert_type": "bitcast-convert",
    "copy": "copy", "copy_p": "copy", "nextafter": "next-after",
}
_COMPARISONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}

# The lowering table: primitive name -> rule(builder, eqn, operand instructions) -> the
# instructions of its results. Primitives missing here become custom calls.
LOWERINGS = {
    **{name: _elementwise(opcode) for name, opcode in _OPCODES.items()},
    **{name: _elementwise("compare", f"direction={d}") for name, d in _COMPARISONS.items()},
    "square": _square,
    "integer_pow": _integer_pow,
    "conj": _conj,
    "round": _round,
    "select_n": _select_n,
    "clamp": _clamp,
    "device_put": _identity,
    "optimization_barrier": _identity,
    "pvary": _identity,
    "reshape": _with_attrs("reshape", lambda p: ""),
    "squeeze": _with_attrs("reshape", lambda p: ""),
    "expand_dims": _with_attrs("reshape", lambda p: ""),
    "broadcast_in_dim": _with_attrs(
        "broadcast", lambda p: f"dimensions={_dims(p['broadcast_dimensions'])}"),
    "transpose": _transpose,
    "rev": _with_attrs("reverse", lambda p: f"dimensions={_dims(p['dimensions'])}"),
    "iota": _with_attrs("iota", lambda p: f"iota_dimension={p['dimension']}"),
    "concatenate": _with_attrs("concatenate", lambda p: f"dimensions={{{p['dimension']}}}"),
    "slice": _with_attrs("slice", _slice_attrs),
    "pad": _with_attrs("pad", _pad_attrs),
    "dot_general": _with_attrs("dot", _dot_attrs),
    **{name: _reduce for name in _REDUCERS},
    "jit": _call,
}

stages._hlo_module = hlo_module  # Lowered.compiler_ir(dialect="hlo")
