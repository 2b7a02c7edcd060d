"""Kernel ops as data: the C expression of each op, and which Program primitive lowers to which.

`EXPRESSIONS` is the per-op expression table the renderer reads: `(op, kind) -> C text`,
where `kind` is the kind of the op's first operand ('f' float, 'i' signed int, 'u' unsigned,
'b' bool, '*' any). In the text `{0}`, `{1}`, ... are the operand variables, `{t}` the C type
of the result and `{s}` the C type of the first operand; helpers such as `div_i32` or
`sat_f32_u8` live in kernels/common.h. Rendering is a lookup plus `str.format`, so adding an
op is one line here.

`kernel_rules` maps each primitive to its lowering rule, `(kind, detail)`: elementwise (with
the kernel op), layout, piecewise (pad, concatenate, dynamic_update_slice), reduce (argmax and
argmin included), scan, window, indexing, library, control, or fallback (the NumPy
implementation runs on the host). The rules come from the name tables below.
"""
from __future__ import annotations

import numpy as np

_UNARY_FLOAT = {
    "exp": "exp_{t}({0})", "exp2": "exp2({0})", "log": "log_{t}({0})", "log1p": "log1p_{t}({0})",
    "expm1": "expm1_{t}({0})", "sqrt": "sqrt({0})", "rsqrt": "rsqrt({0})", "cbrt": "cbrt_{t}({0})",
    "sin": "sin_{t}({0})", "cos": "cos({0})", "tan": "tan_{t}({0})", "asin": "asin_{t}({0})",
    "acos": "acos_{t}({0})", "atan": "atan_{t}({0})", "sinh": "sinh_{t}({0})", "cosh": "cosh({0})",
    "tanh": "tanh_{t}({0})", "asinh": "asinh_{t}({0})", "acosh": "acosh({0})", "atanh": "atanh_{t}({0})",
    "floor": "floor({0})", "ceil": "ceil({0})", "abs": "fabs({0})", "sign": "sign_{t}({0})",
    # Computed in double and rounded, as the NumPy backend does, so float32 results agree.
    "erf": "({t})erf((f64){0})", "erfc": "({t})erfc((f64){0})", "lgamma": "({t})lgamma((f64){0})",
    "logistic": "logistic_{t}({0})", "is_finite": "(u8)MATH_ISFINITE({0})",
    "round_away": "round_away_{t}({0})", "round_even": "round_even_{t}({0})",
    # Device functions in kernels/special.h: erf_inv is Giles' polynomial (as XLA) in the
    # operand's precision; digamma runs in double and is rounded, as the NumPy backend does.
    "erf_inv": "tiny_zero_{t}({0}, erf_inv_{t}({0}))", "digamma": "({t})digamma_f64((f64){0})",
    # The samplers' functions, step for step as their NumPy emulation of XLA's CPU code
    # (gpuarr/random/xla_math.py), so kernels draw the cpu platform's streams bit for bit.
    "erf_inv_giles": "erf_inv_giles_{t}({0})", "xla_log": "xla_log_{t}({0})",
    "xla_log1p": "xla_log1p_{t}({0})", "xla_rsqrt": "xla_rsqrt_{t}({0})",
}

_BINARY_FLOAT = {
    "div": "{0} / {1}", "rem": "fmod({0}, {1})", "pow": "pow({0}, {1})",
    "max": "max_{t}({0}, {1})", "min": "min_{t}({0}, {1})", "atan2": "atan2_{t}({0}, {1})",
    "nextafter": "nextafter({0}, {1})",
    "polygamma": "({t})polygamma_f64((f64){0}, (f64){1})",
}

_INT_ONLY = {
    "div": "div_{t}({0}, {1})", "rem": "rem_{t}({0}, {1})",
    "shift_left": "shl_{t}({0}, {1})", "shift_right_logical": "shr_logical_{t}({0}, {1})",
    "shift_right_arithmetic": "shr_arith_{t}({0}, {1})",
    "max": "({0} > {1} ? {0} : {1})", "min": "({0} < {1} ? {0} : {1})",
    "not": "({t})~{0}", "and": "({t})({0} & {1})", "or": "({t})({0} | {1})",
    "xor": "({t})({0} ^ {1})", "sign": "({t})(({0} > 0) - ({0} < 0))",
}

EXPRESSIONS: dict = {
    ("add", "*"): "{0} + {1}", ("sub", "*"): "{0} - {1}", ("mul", "*"): "{0} * {1}",
    ("neg", "*"): "-{0}", ("square", "*"): "{0} * {0}",
    ("eq", "*"): "(u8)({0} == {1})", ("ne", "*"): "(u8)({0} != {1})",
    ("lt", "*"): "(u8)({0} < {1})", ("le", "*"): "(u8)({0} <= {1})",
    ("gt", "*"): "(u8)({0} > {1})", ("ge", "*"): "(u8)({0} >= {1})",
    ("select_n", "*"): "{0} ? {2} : {1}",
    ("clamp", "*"): "({1} < {0} ? {0} : {1} > {2} ? {2} : {1})",
    ("clamp", "f"): "min_{t}(max_{t}({1}, {0}), {2})",
    ("fma", "f"): "xla_fma_{t}({0}, {1}, {2})",  # rounded as xla_fma on the host (special.h)
    ("abs", "i"): "({0} < 0 ? neg_wrap_{t}({0}) : {0})", ("abs", "u"): "{0}",
    # Signed integers wrap, and unsigned 16-bit products are not promoted to a signed int
    # (kernels/common.h); OpenCL C and CUDA have no -fwrapv.
    ("add", "i"): "add_wrap_{t}({0}, {1})", ("sub", "i"): "sub_wrap_{t}({0}, {1})",
    ("mul", "i"): "mul_wrap_{t}({0}, {1})", ("mul", "u"): "mul_wrap_{t}({0}, {1})",
    ("neg", "i"): "neg_wrap_{t}({0})", ("square", "i"): "mul_wrap_{t}({0}, {0})",
    ("square", "u"): "mul_wrap_{t}({0}, {0})",
    # Bit counts see the operand's own width: go through the unsigned type `{u}` first, and
    # discount the zero bits that widening an 8- or 16-bit value to 32 bits adds (`{pad}`).
    ("population_count", "i"): "({t})MATH_POPCOUNT{bits}(({u}){0})",
    ("population_count", "u"): "({t})MATH_POPCOUNT{bits}(({u}){0})",
    ("clz", "i"): "({t})(MATH_CLZ{bits}(({u}){0}) - {pad})",
    ("clz", "u"): "({t})(MATH_CLZ{bits}(({u}){0}) - {pad})",
    ("not", "b"): "(u8)!{0}", ("and", "b"): "(u8)({0} & {1})", ("or", "b"): "(u8)({0} | {1})",
    ("xor", "b"): "(u8)({0} ^ {1})",
    ("max", "b"): "({0} | {1})", ("min", "b"): "({0} & {1})",
    ("proj", "*"): "{0}[{k}]",
    ("bitcast_f32_u32", "*"): "BITS_F32({0})", ("bitcast_u32_f32", "*"): "F32_BITS({0})",
    ("bitcast_f64_u64", "*"): "BITS_F64({0})", ("bitcast_u64_f64", "*"): "F64_BITS({0})",
    ("bitcast_int", "*"): "({t}){0}",
}
# complex64 (kernels/complex.h); an op without a ("op", "c") entry keeps complex values on
# the host.
_COMPLEX = {
    "add": "c64_add({0}, {1})", "sub": "c64_sub({0}, {1})", "mul": "c64_mul({0}, {1})",
    "div": "c64_div({0}, {1})", "neg": "c64_neg({0})", "conj": "c64_conj({0})",
    "eq": "c64_eq({0}, {1})", "ne": "c64_ne({0}, {1})",
    "exp": "c64_exp({0})", "real": "{0}.x", "imag": "{0}.y", "square": "c64_mul({0}, {0})",
}
EXPRESSIONS.update({(k, "c"): v for k, v in _COMPLEX.items()})
EXPRESSIONS.update({("complex", "f"): "MAKE_c64({0}, {1})", ("conj", "f"): "MAKE_c64({0}, 0.0f)"})
EXPRESSIONS.update({(k, "f"): v for k, v in _UNARY_FLOAT.items()})
EXPRESSIONS.update({(k, "f"): v for k, v in _BINARY_FLOAT.items()})
for _kind in "iu":
    EXPRESSIONS.update({(k, _kind): v for k, v in _INT_ONLY.items()})

# Reductions: (op, kind) -> combining expression of `a` and `b`, and the identity.
REDUCERS: dict = {
    ("sum", "*"): "a + b", ("prod", "*"): "a * b",
    # Integers wrap (kernels/common.h): a signed overflow would be undefined behaviour.
    ("sum", "i"): "add_wrap_{t}(a, b)", ("prod", "i"): "mul_wrap_{t}(a, b)",
    ("prod", "u"): "mul_wrap_{t}(a, b)",
    ("max", "f"): "max_{t}(a, b)", ("min", "f"): "min_{t}(a, b)",
    ("max", "*"): "(a > b ? a : b)", ("min", "*"): "(a < b ? a : b)",
    ("and", "*"): "a & b", ("or", "*"): "a | b", ("xor", "*"): "a ^ b",
    ("logaddexp", "f"): "logaddexp_{t}(a, b)",
}
# A vector lane's step of a row reduction on the C dialect (kernels/reduction_lanes.cu), where
# it differs from REDUCERS: float max/min keep a NaN (its test first) and otherwise pick the
# larger (smaller) operand, a compare and a blend per vector where max_{t} also costs the
# subnormal flush of SELECTED_FLOAT (kernels/common.h) on every element. The lanes combine
# with the full reducer, which flushes once per row; under the kernels' DAZ environment the
# comparisons already read a subnormal as zero.
LANE_REDUCERS: dict = {
    ("max", "f"): "(b) != (b) || (b) > (a) ? (b) : (a)",
    ("min", "f"): "(b) != (b) || (b) < (a) ? (b) : (a)",
}

# Arg reductions: (op, kind) -> when the candidate (vb, ib) beats the current best (va, ia).
# JAX's rule: the larger (smaller) value wins, NaN beats every number, and ties (equal values
# or two NaNs) go to the lower index.
_NAN_TIE = "(((vb) == (va) || ((vb) != (vb) && (va) != (va))) && (ib) < (ia))"
ARG_BETTER: dict = {
    ("argmax", "f"): "(vb) > (va) || ((vb) != (vb) && (va) == (va)) || " + _NAN_TIE,
    ("argmin", "f"): "(vb) < (va) || ((vb) != (vb) && (va) == (va)) || " + _NAN_TIE,
    ("argmax", "*"): "(vb) > (va) || ((vb) == (va) && (ib) < (ia))",
    ("argmin", "*"): "(vb) < (va) || ((vb) == (va) && (ib) < (ia))",
}


def reduce_identity(op: str, dtype) -> object:
    """The identity element of reduction `op` over `dtype` (as a NumPy scalar)."""
    dtype = np.dtype(dtype)
    op = {"argmax": "max", "argmin": "min"}.get(op, op)
    if op == "logaddexp":
        return dtype.type(-np.inf)
    if dtype.name in HALF_FLOATS:
        return dtype.type(reduce_identity(op, np.float32))
    if op in ("sum", "or", "xor"):
        return dtype.type(0)
    if op == "prod":
        return dtype.type(1)
    if op == "and":
        if dtype == np.bool_:
            return np.bool_(True)
        return dtype.type(-1 if dtype.kind == "i" else np.iinfo(dtype).max)
    big = op == "min"
    if dtype.kind == "f":
        return dtype.type(np.inf if big else -np.inf)
    if dtype == np.bool_:
        return np.bool_(big)
    info = np.iinfo(dtype)
    return dtype.type(info.max if big else info.min)


# 16-bit floats are stored as 16 bits and computed in float32 (kernels/half.h converts).
HALF_FLOATS = ("float16", "bfloat16")


def dtype_kind(dtype) -> str:
    if np.dtype(dtype).name in HALF_FLOATS:
        return "f"
    kind = np.dtype(dtype).kind
    return {"f": "f", "i": "i", "u": "u", "b": "b", "c": "c"}[kind]


def has_expression(op: str, dtype) -> bool:
    """Whether the table has `op` for operands of `dtype` (complex needs its own entries)."""
    kind = dtype_kind(dtype)
    return (op, kind) in EXPRESSIONS or (kind != "c" and (op, "*") in EXPRESSIONS)


def expression(op: str, arg_dtype) -> str:
    """The table entry for `op` applied to operands of `arg_dtype` (KeyError when there is none)."""
    kind = dtype_kind(arg_dtype)
    for key in ((op, kind), (op, "*")):
        if key in EXPRESSIONS:
            return EXPRESSIONS[key]
    raise KeyError(f"no kernel expression for op {op!r} on {np.dtype(arg_dtype).name}")


def arg_better(op: str, dtype) -> str:
    kind = dtype_kind(dtype)
    return ARG_BETTER.get((op, kind)) or ARG_BETTER[(op, "*")]


def reducer(op: str, dtype) -> str:
    kind = dtype_kind(dtype)
    for key in ((op, kind), (op, "*")):
        if key in REDUCERS:
            return REDUCERS[key]
    raise KeyError(f"no reducer {op!r} for {np.dtype(dtype).name}")


def lane_reducer(op: str, dtype) -> str:
    """A vector lane's step of a row reduction (LANE_REDUCERS), else the reducer itself."""
    return LANE_REDUCERS.get((op, dtype_kind(dtype))) or reducer(op, dtype)


# ---- per-primitive lowering rules ------------------------------------------------------------
# What the fusion pass does with each primitive, keyed by primitive name here and by the
# Primitive object in `kernel_rules` (filled from gpuarr.lax on first use).

# Elementwise primitives: name -> kernel op (same name when None).
ELEMENTWISE = {
    **{n: None for n in (
        "neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2", "log", "log1p", "expm1",
        "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "abs", "not", "add", "sub", "mul",
        "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and", "or", "xor",
        "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le",
        "gt", "ge", "erf", "erfc", "lgamma", "square", "population_count", "clz", "clamp",
        "erf_inv", "digamma", "polygamma", "real", "imag", "conj", "complex")},
    "round": None,                 # round_away / round_even by rounding_method
    "integer_pow": None,           # attrs (y,)
    "convert_element_type": "convert",
    "add_any": "add",              # the tangent sum of reverse-mode AD
    "erf_inv_giles": None,         # the samplers' XLA CPU functions (kernels/special.h)
    "xla_log": None,
    "xla_log1p": None,
    "xla_rsqrt": None,
    "xla_fma": "fma",
    "bitcast_convert_type": "bitcast",   # same-width reinterpretation only
    "select_n": None,
    "stop_gradient": None,         # the identity
    "copy": "stop_gradient",       # a fused identity: its output is a buffer of its own
    "pvary": "stop_gradient",      # a per-device no-op (shard_map's check_vma typing)
    "iota": None,
    "threefry2x32": None,
}

# Layout primitives become index maps on loads.
LAYOUT = ("broadcast_in_dim", "reshape", "transpose", "slice", "rev", "squeeze", "expand_dims")

REDUCTIONS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
              "reduce_prod": "prod", "reduce_and": "and", "reduce_or": "or", "reduce_xor": "xor",
              "argmax": "argmax", "argmin": "argmin"}

# Cumulative ops: scan kernels (name -> the reducer that combines neighbours).
SCANS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min",
         "cumlogsumexp": "logaddexp"}

# Each output element picks its source by index arithmetic: fused like layout ops, with a mask.
PIECEWISE = ("pad", "concatenate", "dynamic_update_slice")

# Windowed reductions: one inline loop over the window per output element.
WINDOWS = {"reduce_window_sum": "sum", "reduce_window_max": "max", "reduce_window_min": "min"}

# Library calls (cuBLAS/cuSOLVER/CUB on CUDA; the NumPy implementation on the host elsewhere).
LIBRARY = ("dot_general", "sort", "argsort", "conv_general_dilated", "cholesky",
           "triangular_solve", "lu", "qr", "svd", "eigh", "eig", "fft", "top_k",
           "tridiagonal_solve", "lu_pivots_to_permutation", "householder_product", "hessenberg",
           "schur", "geqrf", "geqp3", "ormqr")

# Primitives the fusion hands to the host as they are (control flow runs its sub-programs).
CONTROL = ("cond", "while", "scan", "pjit", "closed_call", "custom_jvp_call", "custom_vjp_call",
           "custom_vmap_call",
           "remat2", "custom_lin", "jit", "custom_vjp_call_jaxpr", "for_loop", "debug_callback",
           "pure_callback", "io_callback", "custom_linear_solve",
           "optimization_barrier",  # a host step of its own: nothing fuses across it
           "composite",  # inlined by the passes; with them off, its host step runs it
           "dce_sink")  # keeps its operand computed; the step itself does nothing

# Indexing primitives with kernel lowerings in fusion.py.
SCATTER_COMBINERS = {"scatter": "set", "scatter_add": "add", "scatter_sub": "sub",
                     "scatter_mul": "mul", "scatter_min": "min", "scatter_max": "max",
                     "scatter-add": "add", "scatter-sub": "sub", "scatter-mul": "mul",
                     "scatter-min": "min", "scatter-max": "max"}
INDEXING = ("gather", "dynamic_slice", "scatter_apply", *SCATTER_COMBINERS)

# Primitives the kernel compiler first writes as the layout and piecewise operations above
# (`passes.KERNEL_DECOMPOSITIONS`, which `plan_closed` always runs); seen here, they run on the
# host.
DECOMPOSED = ("split", "stack", "unstack", "empty2")

# Primitives known to have no kernel lowering yet: they run on the host through the NumPy
# backend. The coverage test lists these explicitly.
HOST_FALLBACK = ("igamma", "igammac", "igamma_grad_a",
                 "bessel_i0e", "bessel_i1e", "zeta", "regularized_incomplete_beta",
                 "reduce_precision", "mulhi", "approx_top_k", "rng_bit_generator",
                 "rng_uniform", "platform_index", "ragged_dot_general", "cholesky_update",
                 "symmetric_product", "tridiagonal",
                 # Collectives: vmap rewrites them away; left in a program, the axis name is
                 # unbound and their host step raises JAX's NameError.
                 "psum", "pmax", "pmin", "axis_index", "all_gather", "reduce_scatter",
                 "all_to_all", "ppermute", "pbroadcast")


def _elementwise_rule(name):
    return ("elementwise", ELEMENTWISE[name] or name)


def rule_for_name(name: str):
    """('elementwise'|'layout'|'piecewise'|'reduce'|'scan'|'window'|'library'|'control'|
    'indexing'|'decomposed'|'fallback', detail)."""
    if name in ELEMENTWISE:
        return _elementwise_rule(name)
    if name in LAYOUT:
        return ("layout", name)
    if name in PIECEWISE:
        return ("piecewise", name)
    if name in REDUCTIONS:
        return ("reduce", REDUCTIONS[name])
    if name in SCANS:
        return ("scan", SCANS[name])
    if name in WINDOWS:
        return ("window", WINDOWS[name])
    if name in INDEXING:
        return ("indexing", name)
    if name in LIBRARY:
        return ("library", name)
    if name in CONTROL:
        return ("control", name)
    if name in DECOMPOSED:
        return ("decomposed", name)
    return None


def lax_modules() -> list:
    """The modules of gpuarr.lax (found beside gpuarr.lax.lax, not through the package)."""
    import importlib
    import pkgutil
    from pathlib import Path

    from gpuarr.lax import lax
    folder = str(Path(lax.__file__).parent)
    return [importlib.import_module(f"gpuarr.lax.{m.name}") for m in pkgutil.iter_modules([folder])]


def all_primitives() -> list:
    """Every Primitive object defined in the modules of gpuarr.lax (and gpuarr.random)."""
    import importlib
    import pkgutil
    from pathlib import Path

    from gpuarr.core import Primitive
    from gpuarr.random import distributions
    mods = lax_modules()
    folder = str(Path(distributions.__file__).parent)
    mods += [importlib.import_module(f"gpuarr.random.{m.name}") for m in pkgutil.iter_modules([folder])]
    mods += [importlib.import_module("gpuarr.prng")]
    seen, prims = set(), []
    for mod in mods:
        for value in vars(mod).values():
            if isinstance(value, Primitive) and id(value) not in seen:
                seen.add(id(value))
                prims.append(value)
    return prims


# Primitive -> (kind, detail): the lowering rule table, filled from the name tables above
# (`register_all` for every known primitive; `lowering_of` for one seen first in a Program).
kernel_rules: dict = {}


def register_all() -> dict:
    """Fill `kernel_rules` for every primitive of gpuarr that has a kernel lowering."""
    for prim in all_primitives():
        rule = rule_for_name(prim.name)
        if rule is not None:
            kernel_rules[prim] = rule
    return kernel_rules


def lowering_of(prim):
    """The lowering rule of `prim`, or ('fallback', name): run its NumPy implementation."""
    rule = kernel_rules.get(prim)
    if rule is None:
        rule = kernel_rules[prim] = rule_for_name(prim.name) or ("fallback", prim.name)
    return rule
