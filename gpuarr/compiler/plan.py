"""KernelPlan: what the fusion pass hands to the renderer, as frozen dataclasses (never strings).

A plan is a list of steps over named buffers. A kernel step names a kernel spec and binds the
kernel's arguments to buffers. Kernel specs are small data: the iteration shape, the arguments,
an expression DAG (a tuple of nodes; a node's inputs are indices of earlier nodes) and stores.
Loads read a buffer through an `IndexMap` (a stack of strided `View`s, as tinygrad's
ShapeTracker), so broadcasts, transposes, reshapes and slices fused into a kernel are index
arithmetic, never copies. Library calls (dot, sort, ...) and host steps (control flow, ops with
no kernel lowering) are steps too; every boundary records why it exists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Union


def _contiguous_strides(shape: tuple) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc if n != 1 else 0)
        acc *= n
    return tuple(reversed(strides))


# ---- index maps ----------------------------------------------------------------------------

@dataclass(frozen=True)
class View:
    """A strided window: coordinate `c` over `shape` maps to `offset + sum(c[d] * strides[d])`."""

    shape: tuple
    strides: tuple
    offset: int = 0

    @staticmethod
    def contiguous(shape) -> View:
        shape = tuple(int(n) for n in shape)
        return View(shape, _contiguous_strides(shape), 0)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        return self.offset == 0 and self.strides == _contiguous_strides(self.shape)


@dataclass(frozen=True)
class PadView:
    """The inverse of lax.pad: coordinate `c` over `shape` reads element
    `(c[d] - low[d]) / (interior[d] + 1)` of `source` (row-major), clamped into `source` so a
    load is always in bounds. Whether `c` really has a source element (not padding) is a
    separate mask in the kernel's DAG; this view only says where to read."""

    shape: tuple
    low: tuple
    interior: tuple
    source: tuple

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        return False


@dataclass(frozen=True)
class IndexMap:
    """Where element `i` of an iteration space lives in a buffer.

    `views[0]` is indexed by the coordinates of the iteration space; it yields a linear index
    into the shape of `views[1]`, which is unravelled and mapped again, and so on; the last view
    yields the element offset in the buffer. One view covers broadcast, transpose, slice and
    reshape of contiguous data; a second view appears only when a reshape splits or merges
    dimensions that a transpose made non-contiguous.
    """

    views: tuple

    @staticmethod
    def contiguous(shape) -> IndexMap:
        return IndexMap((View.contiguous(shape),))

    @property
    def shape(self) -> tuple:
        return self.views[0].shape

    def is_identity(self) -> bool:
        return len(self.views) == 1 and self.views[0].is_contiguous()

    def _replace_first(self, view: View) -> IndexMap:
        return IndexMap((view,) + self.views[1:])

    def _strided(self) -> IndexMap:
        """This map with a strided View in front (a PadView head gets a contiguous one)."""
        if isinstance(self.views[0], View):
            return self
        return IndexMap((View.contiguous(self.views[0].shape),) + self.views)

    @staticmethod
    def merge_pads(low, interior, inner_low, inner_interior) -> tuple | None:
        """(low, interior) of one pad reading what a pad of (`low`, `interior`) reads through a
        pad of (`inner_low`, `inner_interior`), or None when along some dim both have interior
        padding. Source coordinate `(c - lo) / (i + 1)`, then `(c' - lo') / (i' + 1)`, with `i`
        or `i'` zero, is `(c - lo - lo' * (i + 1)) / (i + i' + 1)`."""
        if not all(i == 0 or j == 0 for i, j in zip(interior, inner_interior)):
            return None
        return (tuple(lo + lo_in * (i + 1) for lo, lo_in, i in zip(low, inner_low, interior)),
                tuple(i + j for i, j in zip(interior, inner_interior)))

    def pad(self, shape, low, interior) -> IndexMap:
        """Index the padded array of `shape`: see PadView. A pad of a pad is one PadView when
        along each dim at least one of the two has no interior padding (a nested concatenate's
        pieces, pads of pads): each load then stays one clamp per dim however deep the
        nesting. Where both masks say "source" the composed view reads the same element;
        elsewhere (masked lanes) it still reads in bounds."""
        inner = self.views[0]
        if isinstance(inner, PadView):
            merged = IndexMap.merge_pads(low, interior, inner.low, inner.interior)
            if merged is not None:
                return self._replace_first(PadView(tuple(shape), *merged, inner.source))
        head = PadView(tuple(shape), tuple(low), tuple(interior), self.shape)
        return IndexMap((head,) + self.views)

    def broadcast(self, shape, broadcast_dimensions) -> IndexMap:
        """Index `shape` coordinates; operand dim `k` sits at output dim `broadcast_dimensions[k]`."""
        self = self._strided()
        v = self.views[0]
        strides = [0] * len(shape)
        for k, d in enumerate(broadcast_dimensions):
            if v.shape[k] != 1:
                strides[d] = v.strides[k]
        return self._replace_first(View(tuple(shape), tuple(strides), v.offset))

    def transpose(self, permutation) -> IndexMap:
        self = self._strided()
        v = self.views[0]
        return self._replace_first(View(tuple(v.shape[p] for p in permutation),
                                        tuple(v.strides[p] for p in permutation), v.offset))

    def slice(self, starts, limits, steps=None) -> IndexMap:
        self = self._strided()
        v = self.views[0]
        steps = steps or (1,) * len(starts)
        shape = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, limits, steps))
        offset = v.offset + sum(lo * s for lo, s in zip(starts, v.strides))
        strides = tuple(s * st for s, st in zip(v.strides, steps))
        return self._replace_first(View(shape, strides, offset))

    def rev(self, dimensions) -> IndexMap:
        self = self._strided()
        v = self.views[0]
        offset = v.offset + sum((v.shape[d] - 1) * v.strides[d] for d in dimensions)
        strides = tuple(-s if d in dimensions else s for d, s in enumerate(v.strides))
        return self._replace_first(View(v.shape, strides, offset))

    def reshape(self, shape) -> IndexMap:
        shape = tuple(int(n) for n in shape)
        if self.shape == shape:
            return self
        self = self._strided()
        v = self.views[0]
        merged = _reshape_view(v, shape)
        if merged is not None:
            return self._replace_first(merged)
        return IndexMap((View.contiguous(shape),) + self.views)


def _reshape_view(v: View, shape: tuple) -> View | None:
    """Reshape a single view without a second one, when its strides allow it (else None)."""
    if v.is_contiguous() or 0 in shape:  # an empty result reads nothing
        return View.contiguous(shape)
    # Drop size-1 dims, then match groups of old dims against groups of new dims.
    old = [(n, s) for n, s in zip(v.shape, v.strides) if n != 1]
    new_strides, i = [], 0
    for n in shape:
        if n == 1:
            new_strides.append(0)
            continue
        if i >= len(old):
            return None
        # Split: the new dim divides the current old dim.
        on, os_ = old[i]
        if on % n == 0 and on != n:
            old[i] = (on // n, os_)
            new_strides.append(os_ * (on // n))
            continue
        # Merge: consecutive old dims whose strides chain.
        size, stride = on, os_
        i += 1
        while size < n and i < len(old) and old[i][1] * old[i][0] == stride:
            size, stride = size * old[i][0], old[i][1]
            i += 1
        if size != n:
            return None
        new_strides.append(stride)
    if i != len(old):
        return None
    return View(shape, tuple(new_strides), v.offset)


# ---- expression DAG nodes --------------------------------------------------------------------

@dataclass(frozen=True)
class Load:
    """Read argument `arg` at this kernel's current index, mapped through `index`."""

    arg: str
    index: IndexMap
    dtype: str


@dataclass(frozen=True)
class Const:
    value: Any
    dtype: str

    # Equal by their text, not by ==: 0.0 and -0.0 are different constants (merged, they
    # would turn min(x, -0.0) into min(x, 0.0)).
    def __eq__(self, other):
        return type(other) is Const and (self.dtype, repr(self.value)) == \
            (other.dtype, repr(other.value))

    def __hash__(self):
        return hash((self.dtype, repr(self.value)))


@dataclass(frozen=True)
class Iota:
    """The coordinate along `dimension` of an array of `shape`, read through `index`."""

    shape: tuple
    dimension: int
    index: IndexMap
    dtype: str


@dataclass(frozen=True)
class Op:
    """`op(*args)` from the per-op expression table; `args` are indices of earlier nodes."""

    op: str
    args: tuple
    dtype: str
    attrs: tuple = ()
    eqn: str = ""


@dataclass(frozen=True)
class Gather:
    """An indexed load: operand element at `start[d] + offset[d]` per operand dim `d`.

    `starts[d]` is the node holding the start index along dim `d` (or None for 0), `offsets[d]`
    the node holding the window coordinate (or None for 0). Mode 'clip' clamps a start so the
    whole slice fits; 'fill' reads `fill` when the slice would not fit.
    """

    arg: str
    operand_shape: tuple
    slice_sizes: tuple
    starts: tuple
    offsets: tuple
    mode: str
    fill: Any
    dtype: str
    eqn: str = ""


@dataclass(frozen=True)
class Window:
    """reduce_window: `op` over the window of buffer `arg` (of `operand_shape`) that belongs to
    the output coordinate read through `index`: an index map from the kernel's iteration space
    into the row-major output of `shape` (a transpose or broadcast of the result on the way
    makes the iteration space differ from `shape`; the output coordinate `o` is unravelled
    from the mapped offset over `shape`).

    Window element `w` of output `o` sits at `o * strides + w * window_dilation - low` in the
    padded, base-dilated operand; positions in the padding or between dilated elements add
    `identity`, as XLA pads with the init value."""

    arg: str
    operand_shape: tuple
    shape: tuple
    index: IndexMap
    op: str
    window_dimensions: tuple
    window_strides: tuple
    padding: tuple
    base_dilation: tuple
    window_dilation: tuple
    identity: Any
    dtype: str
    eqn: str = ""


@dataclass(frozen=True)
class Acc:
    """The reduction result, inside a reduction's post-map and epilogue."""

    dtype: str


Node = Union[Load, Const, Iota, Op, Gather, Window, Acc]


@dataclass(frozen=True)
class Store:
    """Write node `node` to argument `arg`, at the current index mapped by `index` (None: as is)."""

    arg: str
    node: int
    index: IndexMap | None = None


# ---- kernels ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Arg:
    name: str
    dtype: str
    size: int
    output: bool = False


@dataclass(frozen=True)
class ElementwiseKernel:
    name: str
    shape: tuple
    args: tuple
    nodes: tuple
    stores: tuple
    equations: tuple = ()
    reason: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class ReductionKernel:
    """Reduce `pre_nodes[pre_root]` over the trailing `red_shape` of `shape + red_shape`.

    Loads in `pre_nodes` and `epilogue_nodes` index the iteration space `shape + red_shape`
    (reduced dims last, already permuted there by the index maps); loads in `post_nodes` index
    the output space `shape`. `post_stores` write once per output element, `epilogue_stores`
    once per iterated element (consumers that broadcast the result back, as softmax does).

    `value_dtype` marks an arg reduction (argmax/argmin): the pre-map yields values of that
    dtype, the kernel reduces (value, index) pairs, and `acc` (the result) is the index along
    the reduced axis. `limit`, when non-zero, bounds the flat iteration index: the first pass
    of a two-pass reduction pads its grid to `out_size * red_size >= limit` elements, and the
    lanes past `limit` contribute the identity. `split`, when non-zero, makes this the first
    pass of a reduction whose rows of `split` elements are cut into chunks of `red_size`:
    output `o` is (row, chunk) in row-major order (chunk, row) for the column strategy, so
    neighbouring threads keep neighbouring columns), reading elements `row * split + chunk *
    red_size + r`; the last chunk of a row stops at its end. For arg reductions, `value_out` names
    the argument such a first pass also stores each winner's value to, and `index_root` (when
    not -1) is the pre-map node holding a candidate's index (the second pass reads the indices
    the first one found).
    """

    name: str
    shape: tuple
    red_shape: tuple
    args: tuple
    reduce_op: str
    acc_dtype: str
    identity: Any
    pre_nodes: tuple
    pre_root: int
    post_nodes: tuple = ()
    post_stores: tuple = ()
    epilogue_nodes: tuple = ()
    epilogue_stores: tuple = ()
    strategy: str = "row"
    equations: tuple = ()
    reason: str = ""
    value_dtype: str = ""
    limit: int = 0
    split: int = 0
    value_out: str = ""
    index_root: int = -1

    @property
    def out_size(self) -> int:
        return math.prod(self.shape)

    @property
    def red_size(self) -> int:
        return math.prod(self.red_shape)


@dataclass(frozen=True)
class ScatterKernel:
    """Combine `updates` into `out` (which already holds the operand) at indices from `indices`.

    Dimension numbers follow XLA's ScatterDimensionNumbers with the index vector as the last
    dim of `indices`. `combiner` is 'set', 'add', 'mul', 'min', 'max' or 'apply' (scatter_apply:
    no updates; `apply_nodes` is the scalar function's DAG, its `Acc` the current value, its
    last node the new one); mode 'clip' clamps,
    'drop' skips updates whose window would fall outside the operand. Operand batching dim
    `operand_batching_dims[k]` takes the update's coordinate along the scatter dim that matches
    indices dim `scatter_indices_batching_dims[k]` (vmap of a scatter).
    """

    name: str
    dtype: str
    index_dtype: str
    operand_shape: tuple
    updates_shape: tuple
    indices_shape: tuple
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    combiner: str
    mode: str
    deterministic: bool
    equations: tuple = ()
    reason: str = ""
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()
    apply_nodes: tuple = ()

    @property
    def args(self) -> tuple:
        size = math.prod
        updates = () if self.combiner == "apply" else (
            Arg("updates", self.dtype, size(self.updates_shape)),)
        return (Arg("out", self.dtype, size(self.operand_shape), True), *updates,
                Arg("indices", self.index_dtype, size(self.indices_shape)))


@dataclass(frozen=True)
class ScanKernel:
    """Cumulative `op` ('sum', 'prod', 'max', 'min') of `pre_nodes[pre_root]` along `axis` of
    `shape`, written to argument `out0` (from the end when `reverse`).

    Loads in `pre_nodes` index the flat row-major position `i` in `shape`, so elementwise
    producers fuse in. Strategy 'block': the axis is the contiguous last one and one block per
    row runs a shared-memory Hillis-Steele scan over tiles of `block` elements, carrying the
    running total from tile to tile; 'sequential': one thread per row loops along the axis.
    """

    name: str
    shape: tuple
    axis: int
    reverse: bool
    op: str
    dtype: str
    identity: Any
    args: tuple
    pre_nodes: tuple
    pre_root: int
    strategy: str = "block"
    equations: tuple = ()
    reason: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def length(self) -> int:
        return self.shape[self.axis]

    @property
    def inner(self) -> int:
        return math.prod(self.shape[self.axis + 1:])

    @property
    def rows(self) -> int:
        return self.size // max(1, self.length)


Kernel = Union[ElementwiseKernel, ReductionKernel, ScatterKernel, ScanKernel]


# At most this many pointer arguments per kernel: 2 KiB of CUDA's 4 KiB kernel parameter space
# (wider concatenates are split into several launches; sibling fusion stops at the cap).
MAX_KERNEL_ARGS = 256


# ---- plan steps ------------------------------------------------------------------------------

@dataclass(frozen=True)
class BufferInfo:
    shape: tuple
    dtype: str


@dataclass(frozen=True)
class KernelStep:
    """Launch `kernel`; `bindings` maps each kernel argument name to a plan buffer."""

    kernel: Any
    bindings: tuple


@dataclass(frozen=True)
class CopyStep:
    """Copy buffer `src` to `dst` (a scatter whose operand is still live needs its own copy)."""

    src: str
    dst: str
    reason: str = ""
    kind: str = "copy"


@dataclass(frozen=True)
class HostStep:
    """Run `fn(*inputs) -> outputs` on the host over NumPy arrays (library call, control flow,
    or an op with no kernel lowering yet). `role` is 'library', 'control' or 'fallback'."""

    role: str
    name: str
    fn: Any = field(compare=False, repr=False)
    inputs: tuple = ()
    outputs: tuple = ()
    equations: tuple = ()
    reason: str = ""
    kind: str = "host"
    # The equation's params, so a backend with its own library (CuPy on a GPU) can run the
    # step without the NumPy implementation that `fn` closes over.
    params: Any = field(default=None, compare=False, repr=False)
    # True for the drivers of loops and branches (compiler/control.py): `fn` takes and returns
    # the platform's own arrays and calls sub-plans, so a device backend runs it on the device.
    drives_sub_plans: bool = False


@dataclass(frozen=True)
class KernelPlan:
    inputs: tuple
    outputs: tuple
    buffers: tuple  # ((name, BufferInfo), ...)
    steps: tuple
    constants: tuple = ()  # ((buffer name, numpy array), ...)
    min_bytes: int = 0

    def buffer(self, name: str) -> BufferInfo:
        return dict(self.buffers)[name]

    @property
    def kernels(self) -> list:
        return [s.kernel for s in self.steps if isinstance(s, KernelStep)]


# ---- launch plans: what a kernel-running backend receives ------------------------------------

@dataclass(frozen=True)
class Launch:
    """One rendered kernel: source text, entry point, launch shape, argument buffers in order."""

    name: str
    source: str
    global_size: int
    local_size: int
    args: tuple
    outputs: tuple
    kind: str = "launch"


@dataclass(frozen=True)
class LaunchPlan:
    """A KernelPlan with every kernel rendered. Steps are `Launch`, `CopyStep` or `HostStep`;
    `buffers` is ((name, shape, dtype name), ...). Backends run this and never see the IR."""

    inputs: tuple
    outputs: tuple
    buffers: tuple
    constants: tuple
    steps: tuple
