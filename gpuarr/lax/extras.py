"""More of lax: the RoundingMethod enum, complex-number primitives (complex, conj, real,
imag), reduce_xor and the general `reduce`, optimization_barrier, shape helpers
(batch_matmul, broadcast_shapes, broadcast_to_rank, collapse, stack, unstack, split, tile,
empty, dtype), conv_transpose and axis_size.
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.core import Primitive, ShapedArray, Tracer, abstract_eval_rules, get_aval, weak_type_rules
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, defjvp_zero
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import arguments, conversions, dot_products, lax, shape_ops
from gpuarr.lax.arguments import _broadcast_shapes, _check_same_dtypes, _coerce_scalars
from gpuarr.lax.lax import _bcast_tangent, _unbroadcast, broadcast_batch_rule
from gpuarr.lax.shape_ops import _axes, _ufunc_reduce, reducer
from gpuarr.lax.slicing import checked_impl
from gpuarr.lax.windowed import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated

# ---------------------------------------------------------------- enums and type aliases


RoundingMethod = lax.RoundingMethod  # defined beside lax.round, its default


# ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), as dot_general takes it.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
# Three layout strings such as ('NHWC', 'HWIO', 'NHWC'), a ConvDimensionNumbers, or None.
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]

# ---------------------------------------------------------------- complex numbers

# dtypes' complex64 -> float32, complex128 -> float64, and back; unlike
# dtypes.to_floating_dtype these do not canonicalize (a complex128 value made under x64 keeps
# its width outside it, as the NumPy implementations do).
_TO_REAL = dtypes._TO_REAL
_TO_COMPLEX = {v: k for k, v in _TO_REAL.items()}


def _accept(name, aval, allowed, what, position=None):
    if aval.dtype not in allowed:
        where = "" if position is None else f" at position {position}"
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}{where}. Accepted "
                        f"dtypes{where} are {what}.")


def _real_part_abstract(name):
    def rule(x):
        _accept(name, x, _TO_REAL, "subtypes of complexfloating")
        return [ShapedArray(x.shape, _TO_REAL[x.dtype], x.weak_type)]
    return rule


real_p = Primitive("real")
imag_p = Primitive("imag")
impl_rules[real_p] = lambda x: np.real(x).copy()
impl_rules[imag_p] = lambda x: np.imag(x).copy()
abstract_eval_rules[real_p] = _real_part_abstract("real")
abstract_eval_rules[imag_p] = _real_part_abstract("imag")


def _complex_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    # Set the parts directly: x + y * 1j would turn an infinite y into NaN (inf * 0).
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _TO_COMPLEX[x.dtype])
    out.real, out.imag = x, y
    return out


def _complex_abstract(x, y):
    for i, v in enumerate((x, y)):
        _accept("complex", v, _TO_COMPLEX, "subtypes of float32, float64", i)
    _check_same_dtypes("complex", x, y)
    shape = _broadcast_shapes("complex", x.shape, y.shape)
    return [ShapedArray(shape, _TO_COMPLEX[x.dtype], x.weak_type and y.weak_type)]


complex_p = Primitive("complex")
impl_rules[complex_p] = _complex_impl
abstract_eval_rules[complex_p] = _complex_abstract


def _conj_abstract(x, input_dtype):
    if x.dtype not in _TO_COMPLEX and x.dtype not in _TO_REAL:
        raise TypeError(f"conj does not accept dtype {x.dtype.name}. Accepted dtypes are "
                        "subtypes of float32, float64, complex64, complex128.")
    return [ShapedArray(x.shape, _TO_COMPLEX.get(x.dtype, x.dtype), x.weak_type)]


conj_p = Primitive("conj")
impl_rules[conj_p] = lambda x, input_dtype: np.conj(x.astype(_TO_COMPLEX.get(x.dtype, x.dtype)))
abstract_eval_rules[conj_p] = _conj_abstract

for _p in (real_p, imag_p, conj_p):
    batch_rules[_p] = batching.vectorized_rule(_p)
batch_rules[complex_p] = lambda axis_size, vals, dims: broadcast_batch_rule(
    complex_p, axis_size, vals, dims)


def _zeros(t):
    return shape_ops.full_like(t, 0)


ad.deflinear(real_p, lambda ct, x: [complex(ct, _zeros(ct))])
ad.deflinear(imag_p, lambda ct, x: [complex(_zeros(ct), lax.neg(ct))])


def _complex_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = complex_p.bind(x, y)
    if type(tx) is Zero and type(ty) is Zero:
        return out, Zero.from_primal(out)
    shape = get_aval(out).shape
    tx = shape_ops.full(shape, 0, get_aval(x).dtype) if type(tx) is Zero else _bcast_tangent(tx, shape)
    ty = shape_ops.full(shape, 0, get_aval(y).dtype) if type(ty) is Zero else _bcast_tangent(ty, shape)
    return out, complex_p.bind(tx, ty)


def _complex_transpose(ct, x, y):
    if type(ct) is Zero:
        return [None, None]
    return [_unbroadcast(x.aval, real(ct)) if ad.is_undefined(x) else None,
            _unbroadcast(y.aval, imag(lax.neg(ct))) if ad.is_undefined(y) else None]


ad.jvp_rules[complex_p] = _complex_jvp
ad.transpose_rules[complex_p] = _complex_transpose


def _conj_transpose(ct, x, input_dtype):
    if type(ct) is Zero:
        return [None]
    return [conj(ct) if dtypes.is_complex(input_dtype) else real(ct)]


ad.deflinear(conj_p, _conj_transpose)


def complex(x, y):
    """The complex number x + i y from real and imaginary parts of one float dtype
    (lax.complex); float32 gives complex64 and float64 complex128."""
    x, y = _coerce_scalars("complex", x, y)
    return complex_p.bind(x, y)


def conj(x):
    """The complex conjugate (lax.conj); a real operand gives a complex result."""
    (x,) = _coerce_scalars("conj", x)
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


def real(x):
    """The real part of a complex array (lax.real)."""
    return real_p.bind(*_coerce_scalars("real", x))


def imag(x):
    """The imaginary part of a complex array (lax.imag)."""
    return imag_p.bind(*_coerce_scalars("imag", x))


# ---------------------------------------------------------------- reductions

reduce_xor_p = reducer("reduce_xor", _ufunc_reduce(np.bitwise_xor), "intbool")
defjvp_zero(reduce_xor_p)


def reduce_xor(operand, axes: Sequence[int]):
    """Bitwise (for booleans, logical) exclusive or over `axes` (lax.reduce_xor)."""
    return reduce_xor_p.bind(operand, axes=_axes(axes))


def _monoid_reducer(computation, init):
    """The reduce primitive for `computation` when `init` is its identity, else None."""
    try:
        val = np.asarray(init)
    except Exception:
        return None
    if val.ndim or isinstance(init, Tracer):
        return None
    v = val.item()
    is_bool = val.dtype == np.bool_
    ident = {
        lax.add: (0, shape_ops.reduce_sum), lax.mul: (1, lax.reduce_prod),
        lax.bitwise_or: (0 if not is_bool else False, lax.reduce_or),
        lax.bitwise_and: (True if is_bool else -1, lax.reduce_and),
        lax.bitwise_xor: (0 if not is_bool else False, reduce_xor),
    }
    if computation in ident:
        want, fn = ident[computation]
        if computation in (lax.bitwise_or, lax.bitwise_and, lax.bitwise_xor) \
                and val.dtype.kind == "f":
            return None
        return fn if v == want else None
    if computation is lax.max:
        lowest = -np.inf if val.dtype.kind == "f" else (
            False if is_bool else np.iinfo(val.dtype).min)
        return lax.reduce_max if v == lowest else None
    if computation is lax.min:
        highest = np.inf if val.dtype.kind == "f" else (
            True if is_bool else np.iinfo(val.dtype).max)
        return lax.reduce_min if v == highest else None
    return None


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int], out_sharding=None) -> Any:
    """Reduce `operands` (an array or a pytree of arrays of one shape) over `dimensions` with
    `computation`, a function of two values of the operands' structure, starting from
    `init_values` (lax.reduce). A lax monoid (add, mul, max, min, bitwise and/or/xor) with its
    identity as the initial value becomes the matching reduce primitive; any other
    computation is folded over the reduced elements in order. `out_sharding` must be None."""
    if out_sharding is not None:
        arguments.check_no_sharding("lax.reduce", out_sharding)
    flat_ops, tree = pytrees.tree_flatten(operands)
    flat_inits, init_tree = pytrees.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError("reduce: operands and init_values must have the same tree structure, "
                         f"got {tree} and {init_tree}.")
    dims = tuple(int(d) for d in dimensions)
    if len(flat_ops) == 1:
        fn = _monoid_reducer(computation, flat_inits[0])
        if fn is not None:
            return pytrees.tree_unflatten(tree, [fn(flat_ops[0], dims)])
    flat_ops = [_coerce_scalars("reduce", o)[0] for o in flat_ops]
    shapes = {get_aval(o).shape for o in flat_ops}
    if len(shapes) != 1:
        raise ValueError(f"reduce: all operands must have the same shape, got {sorted(shapes)}.")
    (shape,) = shapes
    keep = tuple(i for i in range(len(shape)) if i not in dims)
    out_shape = tuple(shape[i] for i in keep)
    n = math.prod(shape[i] for i in dims)
    inits = []
    for o, i in zip(flat_ops, flat_inits):
        dt = get_aval(o).dtype
        if not isinstance(i, (bool, int, float, builtins.complex)) and get_aval(i).dtype != dt:
            raise TypeError(f"reduce: init value dtype {get_aval(i).dtype.name} does not match "
                            f"operand dtype {dt.name}.")
        inits.append(shape_ops.full(out_shape, i, dt))
    if n == 0:
        return pytrees.tree_unflatten(tree, inits)
    # Reduced axes last, flattened to one, then moved to the front to scan over.
    moved = [shape_ops.reshape(shape_ops.transpose(o, keep + dims), out_shape + (n,)) for o in flat_ops]
    moved = [shape_ops.transpose(m, (len(out_shape),) + tuple(range(len(out_shape)))) for m in moved]

    def step(carry, xs):
        acc = computation(pytrees.tree_unflatten(tree, carry), pytrees.tree_unflatten(tree, xs))
        acc_flat, acc_tree = pytrees.tree_flatten(acc)
        if acc_tree != tree:
            raise ValueError("reduce: computation must return the structure of the operands, "
                             f"got {acc_tree} for {tree}.")
        return [conversions.convert_element_type(a, get_aval(c).dtype) for a, c in zip(acc_flat, carry)], None

    from gpuarr.lax.control_flow import scan
    out, _ = scan(step, inits, moved)
    return pytrees.tree_unflatten(tree, list(out))


# ---------------------------------------------------------------- optimization_barrier

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
impl_rules[optimization_barrier_p] = lambda *xs: list(xs)
abstract_eval_rules[optimization_barrier_p] = lambda *avals: list(avals)
weak_type_rules[optimization_barrier_p] = lambda *xs: [get_aval(x).weak_type for x in xs]
batch_rules[optimization_barrier_p] = lambda axis_size, vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))


def _barrier_jvp(primals, tangents):
    return optimization_barrier_p.bind(*primals), list(tangents)


ad.jvp_rules[optimization_barrier_p] = _barrier_jvp


def optimization_barrier(operand, /):
    """`operand` (a pytree) unchanged, but no computation is moved or fused across this point
    (lax.optimization_barrier): the compiler keeps it as a host step of its own."""
    leaves, tree = pytrees.tree_flatten(operand)
    leaves = [_coerce_scalars("optimization_barrier", x)[0] for x in leaves]
    return pytrees.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


# ---------------------------------------------------------------- shape helpers


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product over all leading dimensions: both operands at least 2-D and of
    the same rank (lax.batch_matmul)."""
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if builtins.min(len(ls), len(rs)) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ls}, {rs}")
    if len(ls) != len(rs):
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ls}, {rs}")
    batch = tuple(range(len(ls) - 2))
    return dot_products.dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)),
                           precision=precision)


def broadcast_shapes(*shapes):
    """The shape NumPy-style broadcasting gives `shapes` (lax.broadcast_shapes); ValueError
    when they do not broadcast."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_to_rank(x, rank: int):
    """`x` with leading size-1 dimensions added up to `rank` (lax.broadcast_to_rank)."""
    ndim = len(get_aval(x).shape)
    if ndim == rank:
        return x
    return shape_ops.broadcast(x, (1,) * (rank - ndim))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """`operand` with dimensions start_dimension .. stop_dimension - 1 merged into one
    (lax.collapse; stop defaults to the rank)."""
    shape = get_aval(operand).shape
    lo, hi = slice(start_dimension, stop_dimension).indices(len(shape))[:2]
    return shape_ops.reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def _stack_abstract(*operands, axis):
    if not operands:
        raise ValueError("stack expects at least one operand, got 0.")
    shapes = ", ".join(str(o.shape) for o in operands)
    if len({o.ndim for o in operands}) != 1:
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got {shapes}.")
    if len({o.shape for o in operands}) != 1:
        raise ValueError(f"All input arrays must have the same shape. Got {shapes}.")
    _check_same_dtypes("stack", *operands)
    shape = list(operands[0].shape)
    shape.insert(axis, len(operands))
    return [ShapedArray(tuple(shape), operands[0].dtype,
                        builtins.all(o.weak_type for o in operands))]


def _stack_jvp(primals, tangents, axis):
    out = stack_p.bind(*primals, axis=axis)
    if builtins.all(type(t) is Zero for t in tangents):
        return out, Zero.from_primal(out)
    return out, stack_p.bind(*[ad.instantiate(t) for t in tangents], axis=axis)


def _stack_transpose(ct, *operands, axis):
    if type(ct) is Zero:
        return [Zero(o.aval) if ad.is_undefined(o) else None for o in operands]
    return unstack_p.bind(ct, axis=axis)


def _stack_batch(axis_size, vals, dims, axis):
    if dims[0] is not None and builtins.all(d == dims[0] for d in dims):
        d = dims[0]
        return stack_p.bind(*vals, axis=axis if axis <= d else axis + 1), d + (axis <= d)
    vals = [batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims)]
    return stack_p.bind(*vals, axis=axis + 1), 0


stack_p = Primitive("stack")
impl_rules[stack_p] = lambda *xs, axis: np.stack(xs, axis)
abstract_eval_rules[stack_p] = _stack_abstract
checked_impl(stack_p)
weak_type_rules[stack_p] = lambda *xs, axis: builtins.all(
    getattr(x, "weak_type", False) for x in xs)
ad.jvp_rules[stack_p] = _stack_jvp
ad.transpose_rules[stack_p] = _stack_transpose
batch_rules[stack_p] = _stack_batch


def stack(operands: Sequence, axis: int = 0):
    """The same-shaped `operands` joined along a new axis `axis` (lax.stack): one `stack`
    equation."""
    operands = list(operands)
    ndim = get_aval(operands[0]).ndim  # no operands: IndexError, as in JAX
    return stack_p.bind(*operands, axis=shape_ops._canonical_axis(axis, ndim + 1))


def _unstack_abstract(operand, *, axis):
    if operand.ndim == 0:
        raise ValueError("unstack requires arrays with rank > 0, however a scalar array of "
                         f"shape {operand.shape} was passed.")
    shape = list(operand.shape)
    count = shape.pop(axis)
    return [operand.update(shape=tuple(shape))] * count


def _unstack_jvp(primals, tangents, axis):
    (x,), (t,) = primals, tangents
    outs = unstack_p.bind(x, axis=axis)
    if type(t) is Zero:
        return outs, [Zero.from_primal(o) for o in outs]
    return outs, unstack_p.bind(ad.instantiate(t), axis=axis)


def _unstack_transpose(cts, operand, *, axis):
    if builtins.all(type(ct) is Zero for ct in cts):
        return [Zero(operand.aval)]
    return [stack_p.bind(*[ad.instantiate(ct) for ct in cts], axis=axis)]


def _unstack_batch(axis_size, vals, dims, axis):
    (x,), (d,) = vals, dims
    outs = unstack_p.bind(x, axis=axis if axis < d else axis + 1)
    return outs, [d - (axis < d)] * len(outs)


unstack_p = Primitive("unstack", multiple_results=True)
impl_rules[unstack_p] = lambda x, *, axis: [np.take(x, i, axis) for i in range(x.shape[axis])]
abstract_eval_rules[unstack_p] = _unstack_abstract
checked_impl(unstack_p)
weak_type_rules[unstack_p] = lambda x, *, axis: [bool(getattr(x, "weak_type", False))] * \
    np.shape(x)[axis]
ad.jvp_rules[unstack_p] = _unstack_jvp
ad.transpose_rules[unstack_p] = _unstack_transpose
batch_rules[unstack_p] = _unstack_batch


def unstack(x, axis: int = 0):
    """The slices of `x` along `axis`, as a tuple (lax.unstack): one `unstack` equation."""
    return tuple(unstack_p.bind(x, axis=shape_ops._canonical_axis(axis, get_aval(x).ndim)))


def _split_abstract(operand, *, sizes, axis):
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {operand.ndim}")
    if builtins.any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if builtins.sum(sizes) != operand.shape[axis]:
        # np.sum, as JAX's message has it: the sum of no sizes prints as 0.0
        raise ValueError(f"Sum of sizes {np.sum(sizes)} must be equal to dimension "
                         f"{axis} of the operand shape {list(operand.shape)}")
    shape = list(operand.shape)
    return [operand.update(shape=tuple(shape[:axis] + [int(s)] + shape[axis + 1:]))
            for s in sizes]


def _split_jvp(primals, tangents, sizes, axis):
    (x,), (t,) = primals, tangents
    outs = split_p.bind(x, sizes=sizes, axis=axis)
    if type(t) is Zero:
        return outs, [Zero.from_primal(o) for o in outs]
    return outs, split_p.bind(ad.instantiate(t), sizes=sizes, axis=axis)


def _split_transpose(cts, operand, *, sizes, axis):
    return [lax.concatenate([ad.instantiate(ct) for ct in cts], axis)]


def _split_batch(axis_size, vals, dims, sizes, axis):
    (x,), (d,) = vals, dims
    outs = split_p.bind(x, sizes=sizes, axis=axis + (d <= axis))
    return outs, [d] * len(outs)


split_p = Primitive("split", multiple_results=True)
impl_rules[split_p] = lambda x, *, sizes, axis: np.split(x, np.cumsum(sizes[:-1]), axis)
abstract_eval_rules[split_p] = _split_abstract
checked_impl(split_p)
weak_type_rules[split_p] = lambda x, *, sizes, axis: [bool(getattr(x, "weak_type", False))] * len(
    sizes)
ad.jvp_rules[split_p] = _split_jvp
ad.transpose_rules[split_p] = _split_transpose
batch_rules[split_p] = _split_batch


def split(operand, sizes: Sequence[int], axis: int = 0):
    """`operand` cut along `axis` into pieces of the given `sizes`, which must add up to the
    axis length (lax.split). One `split` equation with every piece as an output; sizes keep
    their Python or NumPy integer type, as JAX prints them."""
    ndim = get_aval(operand).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return split_p.bind(operand, sizes=tuple(sizes), axis=int(axis) % ndim)


def tile(operand, reps: Sequence[int]):
    """`operand` repeated `reps[i]` times along each axis i (lax.tile; like np.tile with as
    many repetitions as dimensions)."""
    shape = get_aval(operand).shape
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape):
        raise ValueError(f"reps must have one entry per dimension of the operand, got {reps} "
                         f"for shape {shape}")
    # Broadcast to (r0, d0, r1, d1, ...) and merge each pair.
    inter = builtins.sum(((r, d) for r, d in zip(reps, shape)), ())
    out = shape_ops.broadcast_in_dim(operand, inter, tuple(range(1, 2 * len(shape), 2)))
    return shape_ops.reshape(out, tuple(r * d for r, d in zip(reps, shape)))


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose contents are unspecified (lax.empty): zeros.
    `out_sharding` must be None."""
    if out_sharding is not None:
        arguments.check_no_sharding("lax.empty", out_sharding)
    return shape_ops.full(tuple(shape), 0, dtypes.canonicalize_dtype(dtype))


def dtype(x):
    """The dtype of `x` as lax sees it (lax.dtype): Python scalars and NumPy values take the
    canonical dtypes (no 64-bit types unless x64 is on)."""
    return np.dtype(dtypes.dtype(x, canonicalize=True))


# ---------------------------------------------------------------- conv_transpose


def _conv_transpose_padding(k: int, s: int, padding):
    """(low, high) padding of the dilated input of a stride-`s` transpose convolution with a
    kernel of effective size `k`, given the padding of the forward convolution it transposes:
    'SAME', 'VALID' or a (low, high) pair, which becomes (k - 1 - low, k - 1 - high)."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else math.ceil(total / 2)
    elif padding == "VALID":
        total = k + s - 2 + builtins.max(k - s, 0)
        low = k - 1
    elif isinstance(padding, (tuple, list)) and not isinstance(padding, str):
        low, high = (k - int(p) - 1 for p in padding)
        total = low + high
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


_CONV_DEFAULT_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                         4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """The transpose of a strided convolution (lax.conv_transpose): `lhs` dilated by `strides`
    and convolved with `rhs`, in layouts NHWC/HWIO by default. 'SAME' and 'VALID' name the
    padding of the forward convolution being transposed; explicit (low, high) pairs pad the
    dilated input directly, unless `use_consistent_padding`, which reads them as the forward
    convolution's padding too (PyTorch's convention). With `transpose_kernel` the kernel is
    flipped spatially and its input and output channels swapped (the gradient of
    conv_general_dilated)."""
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if len(ls) != len(rs) or len(ls) < 2:
        raise ValueError(f"conv_transpose needs operands of one rank >= 2, got {ls} and {rs}")
    if dimension_numbers is None:
        if len(ls) not in _CONV_DEFAULT_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _CONV_DEFAULT_LAYOUTS[len(ls)]
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    spatial = [rs[i] for i in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = (1,) * len(spatial)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        effective = [0 if k == 0 else 1 + r * (k - 1) for k, r in zip(spatial, rhs_dilation)]
        forward = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = [_conv_transpose_padding(k, s, p) for k, s, p in zip(effective, strides, forward)]
    else:
        pads = padding  # other strings, and explicit pairs, pad the dilated input as given
    if transpose_kernel:
        rhs = shape_ops.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(len(rs)))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = shape_ops.transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * len(spatial), pads, tuple(strides),
                                tuple(rhs_dilation), dn, precision=precision,
                                preferred_element_type=preferred_element_type)


# ---------------------------------------------------------------- axis_size


def axis_size(axis_name):
    """The size of the vmapped axis `axis_name` (or the product over a tuple of names), as
    lax.axis_size: a Python int when the enclosing vmap is on the trace stack, else (inside a
    jit staged under the vmap) psum(1, axis_name)."""
    from gpuarr.core import current_trace
    from gpuarr.lax.parallel import psum
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    sizes = {}
    trace = current_trace()
    while trace is not None:
        if isinstance(trace, batching.BatchTrace) and trace.axis_name in names:
            sizes.setdefault(trace.axis_name, trace.axis_size)
        trace = getattr(trace, "parent", None)
    if len(sizes) == len(names):
        return math.prod(sizes[n] for n in names)
    return psum(1, names)
