"""Threefry-2x32 and PRNG keys: the counter-based generator behind gpuarr.random.

`threefry2x32_p` is the Threefry-2x32 block cipher with 20 rounds (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC 2011; the Random123 library): it maps a 64-bit key
(two uint32 words) and a 64-bit counter (two uint32 words) to 64 pseudo-random bits.
Everything else is built on it exactly as JAX builds it with `jax_threefry_partitionable`
on (its default): element `i` of an array of random bits of shape `s` is the hash of the
counter `i` (the row-major flat index written as two words, high then low), so `split`,
`fold_in` and `bits` give JAX's numbers bit for bit.

Typed keys. JAX gives key arrays an extended dtype (`key<fry>`). gpuarr's abstract values only
hold NumPy dtypes, so a typed key is a `PRNGKeyArray` object wrapping its raw `uint32[..., 2]`
data and registered with gpuarr.pytrees as a pytree node whose single child is that data.
This lets keys flow through jit, vmap, scan and every other transformation with no change to
the core: their programs take and return the data (`u32[2]` where JAX prints `key<fry>[]`).
Users see keys as JAX shows them: `gpuarr.tree_util` treats them as leaves
(`pytrees.present_as_leaf`), so `tree_leaves(key)` is `[key]`.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.array import register_virtual_subclass
from gpuarr.backends.host_threads import run_in_cache_blocks, thread_buffer
from gpuarr.config import _check_prng_impl, config
from gpuarr.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    get_aval,
    pytype_aval_mappings,
)
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.arguments import _broadcast_shapes
from gpuarr.lax.lax import broadcast_batch_rule

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}

# ---------------------------------------------------------------- the threefry2x32 primitive

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)  # semantics: see threefry2x32

# Scalar operands of the passes are 0-d arrays: ufuncs take a NumPy scalar shift amount about
# 0.35 us more slowly, time in which the calling thread holds the GIL.
_SHIFTS = tuple(tuple((np.array(r, np.uint32), np.array(32 - r, np.uint32)) for r in rots)
                for rots in _ROTATIONS)


def _injections(k1, k2):
    """Key-schedule additions (to x0, to x1) before the rounds and after each group of four."""
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(_PARITY))
    return [(ks[0], ks[1])] + [(ks[i % 3], ks[(i + 1) % 3] + np.uint32(i)) for i in range(1, 6)]


def _rounds(x0, x1, inject, tmp, out0, out1):
    """Run the 20 rounds in place on the uint32 blocks x0, x1 (already holding the counter plus
    the first injection), the last key injection writing the results to out0, out1 (which may
    be x0, x1); `inject` as from `_injections` (scalars or blocks)."""
    add, shl, shr, bor, bxor = np.add, np.left_shift, np.right_shift, np.bitwise_or, np.bitwise_xor
    for i in range(1, 6):
        for left, right in _SHIFTS[(i - 1) % 2]:
            add(x0, x1, x0)
            shl(x1, left, tmp)
            shr(x1, right, x1)
            bor(x1, tmp, x1)
            bxor(x1, x0, x1)
        add(x0, inject[i][0], x0 if i < 5 else out0)
        add(x1, inject[i][1], x1 if i < 5 else out1)


def _flat_operand(x, shape):
    """A scalar for a size-1 operand, else the operand broadcast to `shape` and flattened."""
    x = np.asarray(x, np.uint32)
    if x.size == 1:
        return np.uint32(x.reshape(()))
    return np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1)


def _part(x, s, e):
    return x if np.ndim(x) == 0 else x[s:e]


def _threefry2x32_impl(k1, k2, x1, x2):
    shape = np.broadcast_shapes(*(np.shape(a) for a in (k1, k2, x1, x2)))
    n = math.prod(shape)
    out1 = np.empty(n, np.uint32)
    out2 = np.empty(n, np.uint32)
    ops = [_flat_operand(a, shape) for a in (k1, k2, x1, x2)]

    def block(s, e, _):  # cache-sized blocks, each hashed by the blocked runs' kernel
        _threefry2x32_block(*(_part(op, s, e) for op in ops), out1[s:e], out2[s:e])

    run_in_cache_blocks(block, n)
    return out1.reshape(shape), out2.reshape(shape)


def _threefry2x32_abstract(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != np.uint32 for a in avals):
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"Arguments to threefry2x32 must have uint32 type, got {got}. "
                        "Convert keys and counters with lax.convert_element_type(x, jnp.uint32).")
    shape = _broadcast_shapes("threefry2x32", *(a.shape for a in avals))
    return [ShapedArray(shape, np.uint32)] * 2


def _threefry2x32_batch(axis_size, vals, dims):
    # Elementwise in all four operands: batched like any broadcasting op, two outputs.
    return broadcast_batch_rule(threefry2x32_p, axis_size, vals, dims)


def _threefry2x32_block(k1, k2, x1, x2, out1, out2):
    """One block of a compiled Program's blocked run, on the calling thread: the counters (the
    run's own index range, for random bits) and the results stay in cache for what follows."""
    if np.ndim(k1) == 0 and np.ndim(k2) == 0:
        inject = _scalar_injections(int(k1), int(k2))
    else:
        with np.errstate(over="ignore"):
            inject = _injections(k1, k2)
    shape = out1.shape
    tmp = thread_buffer("threefry", out1.size, np.uint32).reshape(shape)
    if out1.size < _SCRATCH_MIN or (_on_cache_lines(out1) and _on_cache_lines(out2)):
        s1, s2 = out1, out2  # the rounds run in the outputs themselves
    else:  # the rounds run in aligned contiguous scratch, the last pass writes the outputs
        s1 = thread_buffer("threefry_s1", out1.size, np.uint32).reshape(shape)
        s2 = thread_buffer("threefry_s2", out1.size, np.uint32).reshape(shape)
    np.add(x1, inject[0][0], out=s1)
    np.add(x2, inject[0][1], out=s2)
    _rounds(s1, s2, inject, tmp, out1, out2)


# Blocks shorter than this run in place wherever they start: their passes cost the call, not
# the loads, and `random.split(key)` would pay for the alignment check.
_SCRATCH_MIN = 1 << 12


def _on_cache_lines(x) -> bool:
    """Whether `x` is contiguous from a 64-byte boundary. The rounds' passes ran 30% slower on
    blocks starting 16 bytes past one (vector loads straddle cache lines), so blocks that are
    not run in aligned scratch instead."""
    return x.flags.c_contiguous and x.ctypes.data % 64 == 0


@functools.lru_cache(maxsize=64)
def _scalar_injections(k1: int, k2: int):
    with np.errstate(over="ignore"):
        return [tuple(np.asarray(k) for k in pair)
                for pair in _injections(np.uint32(k1), np.uint32(k2))]


impl_rules[threefry2x32_p] = _threefry2x32_impl
abstract_eval_rules[threefry2x32_p] = _threefry2x32_abstract
ad.defjvp_zero(threefry2x32_p)
batch_rules[threefry2x32_p] = _threefry2x32_batch


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32, 20 rounds: (key1, key2, x1, x2) -> (y1, y2).

    All four operands are uint32 and broadcast together (equal shapes, size-1 dimensions or
    scalars). For each element, (key1, key2) is the key and (x1, x2) the counter; the outputs are
    the two words of the encrypted counter. Key schedule: ks = (key1, key2, key1 ^ key2 ^
    0x1BD11BDA); x += (ks0, ks1); then five times: four rounds of `x0 += x1; x1 = rotl(x1, r) ^
    x0` with rotations (13, 15, 26, 6) and (17, 29, 16, 24) alternately, followed by the key
    injection `x0 += ks[i % 3]; x1 += ks[(i + 1) % 3] + i` for i = 1..5. Integer op: no tangents.
    """
    return threefry2x32_p.bind(key1, key2, x1, x2)


def threefry_2x32(keypair, count):
    """JAX's `prng.threefry_2x32(keypair, count)`: hash the uint32 array `count` (its flat
    values taken as two halves of counter words, padded with a zero when odd) under the key
    `keypair` (a uint32[2] array); returns uint32 of count's shape."""
    key1, key2 = _key_words(keypair)
    count = _as_array(count)
    if get_aval(count).dtype != np.uint32 or get_aval(key1).dtype != np.uint32:
        raise TypeError("threefry_2x32 requires uint32 arguments, got "
                        f"{[get_aval(key1).dtype.name, get_aval(count).dtype.name]}")
    shape = get_aval(count).shape
    flat = lax_shape_ops.reshape(count, (math.prod(shape),))
    odd = flat.shape[0] % 2
    if odd:
        flat = lax.concatenate([flat, np.zeros((1,), np.uint32)], 0)
    half = flat.shape[0] // 2
    y1, y2 = threefry2x32(key1, key2, lax.slice(flat, (0,), (half,)),
                          lax.slice(flat, (half,), (2 * half,)))
    out = lax.concatenate([y1, y2], 0)
    if odd:
        out = lax.slice(out, (0,), (2 * half - 1,))
    return lax_shape_ops.reshape(out, shape)


# ---------------------------------------------------------------- raw key operations


def _as_array(x):
    if isinstance(x, (Tracer,)) or hasattr(x, "aval"):
        return x
    return np.asarray(x)


def _key_words(data):
    """The two uint32 words of raw key data uint32[..., 2], as arrays of the leading shape."""
    shape = get_aval(data).shape
    lead = shape[:-1]
    k1 = lax_shape_ops.reshape(lax.slice_in_dim(data, 0, 1, axis=len(lead)), lead)
    k2 = lax_shape_ops.reshape(lax.slice_in_dim(data, 1, 2, axis=len(lead)), lead)
    return k1, k2


def _iota_2x32(shape):
    """The row-major flat index over `shape` as two uint32 words (high, low)."""
    if not config._values["threefry_partitionable"]:  # the counters of split and random bits
        raise NotImplementedError(
            "gpuarr.random implements only the partitionable threefry layout "
            "(jax_threefry_partitionable=True, JAX's default); with it False JAX draws "
            "different numbers. Set jax_threefry_partitionable to True.")
    if config._values["default_prng_impl"] != "threefry2x32":
        _check_prng_impl(config._values["default_prng_impl"])
    size = math.prod(shape)
    if size >= 1 << 32:
        raise NotImplementedError(f"random bits for {size} elements (at most 2**32 - 1 per call)")
    low = lax_shape_ops.reshape(lax_shape_ops.iota(np.uint32, size), tuple(shape))
    return np.uint32(0), low


def seed_data(seed):
    """Raw key data uint32[2] for an integer seed, as JAX's threefry_seed."""
    aval = get_aval(seed)
    if aval.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got shape {aval.shape}.")
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"PRNG key seed must be an integer; got dtype {aval.dtype.name}. "
                        "Pass an int, e.g. random.key(int(seed)).")
    if aval.dtype.itemsize == 8:
        k1 = lax_conversions.convert_element_type(lax.shift_right_logical(seed, aval.dtype.type(32)),
                                                  np.uint32)
    else:
        k1 = np.zeros((), np.uint32)
    k2 = lax_conversions.convert_element_type(seed, np.uint32)
    return lax.concatenate([lax_shape_ops.broadcast(k1, (1,)), lax_shape_ops.broadcast(k2, (1,))], 0)


def split_data(data, shape):
    """Raw data of `split(key, shape)` for one raw key uint32[2]: uint32[*shape, 2]."""
    k1, k2 = _key_words(data)
    hi, lo = _iota_2x32(shape)
    y1, y2 = threefry2x32(k1, k2, hi, lo)
    nd = len(shape)
    return lax.concatenate([lax_shape_ops.broadcast_in_dim(y1, (*shape, 1), tuple(range(nd))),
                            lax_shape_ops.broadcast_in_dim(y2, (*shape, 1), tuple(range(nd)))], nd)


def fold_in_data(data, value):
    """Raw data of `fold_in(key, value)`: hash the seed words of `value` under the key."""
    return threefry_2x32(data, seed_data(lax_conversions.convert_element_type(value, np.uint32)))


def random_bits(data, bit_width: int, shape):
    """`bit_width` uniformly random bits per element of `shape`, as JAX's partitionable
    threefry_random_bits: element i hashes counter i, giving words (y1, y2)."""
    if bit_width not in (8, 16, 32, 64):
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    k1, k2 = _key_words(data)
    hi, lo = _iota_2x32(tuple(shape))
    if not shape:
        lo = lax_shape_ops.reshape(lo, ())
    y1, y2 = threefry2x32(k1, k2, hi, lo)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        hi64 = lax_conversions.convert_element_type(y1, dtype)
        lo64 = lax_conversions.convert_element_type(y2, dtype)
        return lax.bitwise_or(lax.shift_left(hi64, dtype.type(32)), lo64)
    bits = lax.bitwise_xor(y1, y2)
    return bits if bit_width == 32 else lax_conversions.convert_element_type(bits, dtype)


# ---------------------------------------------------------------- typed keys


class KeyDtype(dtypes.ExtendedDType):
    """The dtype of a typed key array; prints as `key<fry>` (threefry2x32), as in JAX."""

    __slots__ = ()
    name = "key<fry>"
    type = dtypes.prng_key  # issubdtype(key.dtype, dtypes.prng_key) is True, as in JAX
    impl = "threefry2x32"
    tag = "fry"
    itemsize = 8
    kind = "V"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDtype) or other == self.name

    def __hash__(self):
        return hash(self.name)


KEY_DTYPE = KeyDtype()


class PRNGKeyArray:
    """An array of threefry2x32 keys (dtype `key<fry>`), backed by raw uint32[..., 2] data.

    Indexing, reshaping and iterating act on the key axes only; `random.key_data(keys)`
    returns the raw data. Key arrays are pytree nodes whose child is the raw data.
    """

    __slots__ = ("_base_array",)
    dtype = KEY_DTYPE

    def __init__(self, base_array):
        self._base_array = base_array

    @property
    def shape(self):
        return tuple(get_aval(self._base_array).shape[:-1])

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: KEY_DTYPE.itemsize)
    T = property(lambda self: self.transpose())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            idx = idx + (slice(None),)  # keep the trailing key-data axis
        return PRNGKeyArray(self._base_array[idx])

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if order != "C":
            raise NotImplementedError("key arrays reshape only in C order")
        size = self.size
        shape = tuple(int(d) for d in shape)
        if shape.count(-1) == 1:
            known = math.prod(d for d in shape if d != -1)
            shape = tuple(size // known if d == -1 else d for d in shape)
        return PRNGKeyArray(lax_shape_ops.reshape(self._base_array, (*shape, 2)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = axes or tuple(reversed(range(self.ndim)))
        return PRNGKeyArray(lax_shape_ops.transpose(self._base_array, (*axes, self.ndim)))

    # squeeze, swapaxes and take are jnp's functions on key arrays: gpuarr.numpy.key_functions
    # installs them (gpuarr.numpy sits above this module), as it does `.at[idx].set`.

    @property
    def at(self):
        return _KeyIndexUpdate(self)

    def astype(self, dtype):
        raise NotImplementedError("Cannot call abstract method astype")

    __add__ = __radd__ = lambda self, other: _no_arithmetic("add", other)
    __sub__ = __rsub__ = lambda self, other: _no_arithmetic("sub", other)
    __mul__ = __rmul__ = lambda self, other: _no_arithmetic("mul", other)

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        # Key arrays broadcast against each other like arrays (the key-data axis aligns).
        shapes = (self.shape, other.shape)
        try:
            shape = (*np.broadcast_shapes(*shapes), 2)
        except ValueError:
            raise TypeError(f"eq got incompatible shapes for broadcasting: {shapes[0]}, "
                            f"{shapes[1]}.") from None
        same = lax.eq(_broadcast_to(self._base_array, shape), _broadcast_to(other._base_array, shape))
        return lax.reduce_and(same, (len(shape) - 1,))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else lax.bitwise_not(eq)

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype=None, copy=None):
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                        "jax.random.key_data(arr) if you wish to extract the underlying integer "
                        "array.")

    def block_until_ready(self):
        block = getattr(self._base_array, "block_until_ready", None)
        if block is not None:
            block()
        return self

    def copy(self):
        return PRNGKeyArray(self._base_array)

    def __repr__(self):
        data = self._base_array
        if isinstance(data, Tracer):
            return f"Traced<key<fry>[{','.join(map(str, self.shape))}]>with<{data._trace!r}>"
        return (f"Array({self.shape}, dtype={KEY_DTYPE.name}) overlaying:\n"
                f"{np.asarray(data)}")

    __str__ = __repr__


def _no_arithmetic(op: str, other):
    """JAX's TypeError for arithmetic on keys (they hold no numbers to compute with)."""
    try:
        other_dtype = (KEY_DTYPE.name if isinstance(other, PRNGKeyArray)
                       else dtypes.dtype(other, canonicalize=True).name)
    except TypeError:
        other_dtype = type(other).__name__
    raise TypeError(f"{op} does not accept dtypes key<fry>, {other_dtype}. Keys hold no numbers: "
                    "derive new keys with random.split or random.fold_in.")


class _KeyIndexUpdate:
    """`keys.at[idx]`: `.get()` and `.set(new_keys)`, as for arrays."""

    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, idx):
        return _KeyIndexed(self.keys, idx)


class _KeyIndexed:
    def __init__(self, keys, idx):
        self.keys, self.idx = keys, idx

    def get(self):
        return self.keys[self.idx]


def _broadcast_to(x, shape):
    """`x` broadcast (NumPy rules) to `shape`."""
    ndim = get_aval(x).ndim
    return lax_shape_ops.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - ndim, len(shape))))


pytrees.register_pytree_node(
    PRNGKeyArray, lambda k: ((k._base_array,), None), lambda _, children: PRNGKeyArray(children[0]))
pytrees.present_as_leaf(PRNGKeyArray)  # a leaf to users, as in JAX (gpuarr.tree_util)
register_virtual_subclass(PRNGKeyArray)  # isinstance(key, jax.Array), as in JAX


class KeyShapedArray(ShapedArray):
    """The abstract value of a key array (`jax.typeof(key)`): its key shape and dtype
    `key<fry>`."""

    __slots__ = ()

    def __init__(self, shape, dtype=KEY_DTYPE, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = KEY_DTYPE
        self.weak_type = False
        self._hash = None

    def update(self, shape=None, dtype=None, weak_type=None) -> KeyShapedArray:
        return KeyShapedArray(self.shape if shape is None else shape)

    def __eq__(self, other):
        return type(other) is KeyShapedArray and self.shape == other.shape

    def __hash__(self):
        return hash(("key<fry>", self.shape))

    def str_short(self) -> str:
        return f"key<fry>[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


pytype_aval_mappings[PRNGKeyArray] = lambda k: KeyShapedArray(k.shape)


def check_key_data(data):
    """Raise JAX's TypeError unless `data` is raw threefry key data: uint32[..., 2]."""
    if not all(hasattr(data, attr) for attr in ("ndim", "shape", "dtype")):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                        f"shape, and dtype attributes. Got {data!r}. Pass a key made by "
                        "random.key(seed) or random.PRNGKey(seed).")
    if len(data.shape) < 1:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={len(data.shape)}")
    if tuple(data.shape[-1:]) != (2,):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                        f"with (2,); got shape={tuple(data.shape)} for impl=threefry2x32. "
                        "Pass a key made by random.key(seed) or random.PRNGKey(seed).")
    if np.dtype(data.dtype) != np.uint32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={np.dtype(data.dtype).name}")

