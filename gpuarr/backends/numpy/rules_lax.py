"""lax primitives in the NumPy backend's generated code: the ufunc a compiled Program calls in
place of a general impl, and primitives written as one Python expression (a BLAS product, a
`ufunc.reduce`) without the impl's parameter handling. Each rule computes what the impl does
(`gpuarr.impls.impl_rules`) for the cases it accepts, and declines (None) the others.
"""
from __future__ import annotations

import builtins
from functools import partial

import numpy as np

from gpuarr.backends.host_threads import blas_dot
from gpuarr.backends.numpy.codegen import block_kernel_rules, blocked_ufunc_rules, expr_rules, float_ufuncs
from gpuarr.core import Literal
from gpuarr.lax import lax as lax_prims
from gpuarr.lax.conversions import convert_element_type_p
from gpuarr.lax.dot_precision import is_algorithm
from gpuarr.lax.dot_products import (
    _broadcast_product_spec,
    _dot_general_abstract,
    _einsum_pays,
    dot_general_p,
)
from gpuarr.lax.extras import reduce_xor_p
from gpuarr.lax.lax import (
    acosh_p,
    cosh_p,
    div_p,
    exp_p,
    log_p,
    max_p,
    min_p,
    pow_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    shift_left_p,
    shift_right_arithmetic_p,
    shift_right_logical_p,
    sqrt_p,
    tanh_p,
)
from gpuarr.lax.platform_dependent import platform_index, platform_index_p
from gpuarr.lax.shape_ops import _PARALLEL_REDUCE_SIZE, in_order_sum, reduce_sum_p
from gpuarr.lax.subnormal_operands import follow_xla

# ---------------------------------------------------------------- elementwise: the ufunc itself

float_ufuncs[div_p] = np.true_divide
# Complex operands take the impls (XLA's special values); real ones call the ufuncs. (log1p,
# sinh, acos, asinh, atanh and expm1 take their impls: XLA's values for subnormal operands,
# lax/subnormal_operands.py.)
for _prim, _ufunc in [(exp_p, np.exp), (log_p, np.log), (cosh_p, np.cosh), (sqrt_p, np.sqrt),
                      (acosh_p, np.arccosh)]:
    float_ufuncs[_prim] = _ufunc



def _following_xla_block(name, ufunc):
    """A block kernel: the ufunc into the block's output, then XLA's values for subnormal
    operands (lax/subnormal_operands.py; the check is one comparison where there are none)."""
    def kernel(x, out):
        ufunc(x, out=out)
        fixed = follow_xla(name, x, out)
        if fixed is not out:
            np.copyto(out, fixed)
        return out
    return lambda eqn: kernel if eqn.inputs[0].aval.dtype == eqn.outvars[0].aval.dtype \
        and eqn.inputs[0].aval.dtype.kind == "f" else None


for _name, _ufunc in [("sin", np.sin), ("tan", np.tan), ("atan", np.arctan), ("asin", np.arcsin),
                      ("acos", np.arccos), ("sinh", np.sinh), ("asinh", np.arcsinh),
                      ("atanh", np.arctanh), ("log1p", np.log1p), ("expm1", np.expm1),
                      ("cbrt", np.cbrt)]:
    block_kernel_rules[getattr(lax_prims, f"{_name}_p")] = _following_xla_block(_name, _ufunc)

# Compiled Programs call np.power directly where both operands have one real float type (an
# integer exponent would make NumPy compute in float64; a complex zero base needs the impl).
blocked_ufunc_rules[pow_p] = lambda eqn: (
    np.power if eqn.inputs[0].aval.dtype == eqn.inputs[1].aval.dtype
    and eqn.inputs[0].aval.dtype.kind == "f" else None)


def _real_ufunc(ufunc):
    """Compiled Programs call `ufunc` directly on real operands (complex ones take the impl)."""
    return lambda eqn: None if eqn.inputs[0].aval.dtype.kind == "c" else ufunc


# float32 tanh takes the impl, which is exactly +-1 past XLA's clamp (lax.tanh_real).
blocked_ufunc_rules[tanh_p] = lambda eqn: (
    np.tanh if eqn.inputs[0].aval.dtype.kind == "f" and eqn.inputs[0].aval.dtype != np.float32
    else None)
blocked_ufunc_rules[max_p] = _real_ufunc(np.maximum)
blocked_ufunc_rules[min_p] = _real_ufunc(np.minimum)


def _constant_shift_ufunc(op):
    """The ufunc of a shift by a literal amount in range (what lax's `_shift_impl` calls then)."""
    def rule(eqn):
        x, y = eqn.inputs
        bits = x.aval.dtype.itemsize * 8
        if type(y) is not Literal or not 0 <= int(y.val) < bits:
            return None
        if op == "left":
            return np.left_shift
        return np.right_shift if op == "arith" or x.aval.dtype.kind == "u" else None
    return rule


blocked_ufunc_rules[shift_left_p] = _constant_shift_ufunc("left")
blocked_ufunc_rules[shift_right_arithmetic_p] = _constant_shift_ufunc("arith")
blocked_ufunc_rules[shift_right_logical_p] = _constant_shift_ufunc("logical")

# A change of weak type only (a weak bool meeting a strong one, say) is no step at all in
# compiled code: the value itself, as the impl returns it.
expr_rules[convert_element_type_p] = lambda x, new_dtype, weak_type=False: (
    ("{0}", {}) if x.dtype == np.dtype(new_dtype) else None)


# ---------------------------------------------------------------- reductions


def _reduce_expr(ufunc):
    """`ufunc.reduce` called directly in compiled Programs, where the impl's special cases
    (empty and very large operands) cannot arise. The dtype is passed only where NumPy might
    change it (integer sums and products widen; extension types like bfloat16)."""
    def rule(x, axes):
        if not axes or not 0 < x.size < _PARALLEL_REDUCE_SIZE or (
                ufunc is np.add and in_order_sum(x, axes)):
            return None  # the impl: its special cases, XLA's order for short sums
        keeps = x.dtype.kind in "fc" or (x.dtype.kind in "biu" and ufunc not in (np.add, np.multiply))
        # One axis as an int: NumPy parses it faster than a tuple.
        axis = repr(axes[0]) if len(axes) == 1 else repr(tuple(axes))
        if keeps and x.dtype.type.__module__ == "numpy":
            return f"{{r}}({{0}}, {axis})", {"r": ufunc.reduce}
        return f"{{r}}({{0}}, {axis}, {{dtype}})", {"r": ufunc.reduce, "dtype": x.dtype}
    return rule


for _p, _u in ((reduce_sum_p, np.add), (reduce_max_p, np.maximum), (reduce_min_p, np.minimum),
               (reduce_prod_p, np.multiply), (reduce_and_p, np.bitwise_and),
               (reduce_or_p, np.bitwise_or), (reduce_xor_p, np.bitwise_xor)):
    expr_rules[_p] = _reduce_expr(_u)
for _p in (reduce_max_p, reduce_min_p):  # complex values take the impl (XLA's order)
    expr_rules[_p] = partial(lambda rule, x, axes: None if x.dtype.kind == "c" else rule(x, axes),
                             expr_rules[_p])


# ---------------------------------------------------------------- products


def _dot_general_expr(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    """A plain matrix/vector product as one BLAS call in compiled Programs (transposes are
    views), and a product without contraction as one einsum, without the impl's parameter
    handling; None for the other cases."""
    (lc, rc), (lb, rb) = dimension_numbers
    if x.dtype != y.dtype or x.dtype.char not in "fdFD" or preferred_element_type not in (
            None, x.dtype) or is_algorithm(precision):
        return None
    if not lc:  # a broadcast product (per-example gradients): einsum with fixed subscripts
        out = _dot_general_abstract(x, y, dimension_numbers)[0].shape
        if not _einsum_pays(x.dtype, out, x.ndim + y.ndim):
            return None
        spec = _broadcast_product_spec(x.ndim, y.ndim, dimension_numbers)
        return f"{{einsum}}({spec!r}, {{0}}, {{1}})", {"einsum": np.einsum}
    if lb or len(lc) != 1 or not (1 <= x.ndim <= 2 and 1 <= y.ndim <= 2):
        return None
    lhs = "{0}" if lc[0] == x.ndim - 1 else "{0}.T"
    rhs = "{1}" if rc[0] == 0 else "{1}.T"
    dot = blas_dot(x.size * y.size // builtins.max(x.shape[lc[0]], 1))
    if dot is np.dot:  # the method skips np.dot's __array_function__ dispatch; may take `out`
        return f"{lhs}.dot({rhs}{{out}})", {}
    return f"{{dot}}({lhs}, {rhs})", {"dot": dot}


expr_rules[dot_general_p] = _dot_general_expr


# ---------------------------------------------------------------- platform_dependent


def _platform_index_expr(*, platforms):
    # A Program compiled by the NumPy backend runs on the cpu platform.
    return "{index}", {"index": np.int32(platform_index(platforms, "cpu"))}


expr_rules[platform_index_p] = _platform_index_expr
