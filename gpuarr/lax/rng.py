"""XLA's random-number operations: `rng_bit_generator` (stateless: a key in, the next key and
random bits out) and `rng_uniform` (stateful, from a process-wide generator).

`rng_bit_generator` computes XLA's bit generators exactly, so its bits and keys equal JAX's on
CPU. The key is uint32[4] (or uint64[2] with x64), read as two 64-bit words: `key` (words 0, 1)
and `state` (words 2, 3). The output key keeps `key` and advances `state` past the counters used.
- RNG_PHILOX (also RNG_DEFAULT, as on XLA's CPU and GPU backends): Philox-4x32 with 10 rounds,
  keyed by `key`, over the 128-bit counters with low half `state + i` and high half `key`
  (plus the carry of that sum) for i < ceil(n / 4); the four words of each block (low word
  first) are consecutive outputs. 64-bit outputs join
  consecutive pairs of words (low first) and use twice as many words.
- RNG_THREE_FRY: Threefry-2x32 keyed by `key`, counter `state + i` (low word first). 32-bit
  outputs of shape s come in pairs: s is halved along its first even dimension (else its
  largest one) and the two output words of counter i go to neighbouring positions along that
  dimension; 64-bit outputs take both words of counter i (low first) for element i.
8- and 16-bit outputs are the low bits of 32-bit ones.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, weak_type_rules
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import arguments, lax, shape_ops
from gpuarr.lax.slicing import checked_impl


class RandomAlgorithm(enum.IntEnum):
    """Which bit generator `rng_bit_generator` runs: the platform's default (Philox on CPU
    and GPU), Threefry-2x32 or Philox-4x32."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_MASK32, _MASK64 = (1 << 32) - 1, (1 << 64) - 1
_BIT_DTYPES = tuple(np.dtype(f"uint{b}") for b in (8, 16, 32, 64))

# ---------------------------------------------------------------- the bit generators


def _split64(values):
    """uint64 values -> (low, high) uint32 words."""
    return (values & np.uint64(_MASK32)).astype(np.uint32), (values >> np.uint64(32)).astype(np.uint32)


def _join64(low, high):
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


def _counters(start: int, count: int):
    """(start + i) mod 2**64 for i < count, and whether each addition wrapped around."""
    values = np.uint64(start) + np.arange(count, dtype=np.uint64)  # wraps modulo 2**64
    return values, values < np.uint64(start)


_PHILOX_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_BUMP = (0x9E3779B9, 0xBB67AE85)


def _philox4x32(words, key0: int, key1: int):
    """Ten Philox-4x32 rounds over four uint32 arrays."""
    x0, x1, x2, x3 = words
    for _ in range(10):
        p0, p1 = x0.astype(np.uint64) * _PHILOX_MUL[0], x2.astype(np.uint64) * _PHILOX_MUL[1]
        (lo0, hi0), (lo1, hi1) = _split64(p0), _split64(p1)
        x0, x1, x2, x3 = hi1 ^ x1 ^ np.uint32(key0), lo1, hi0 ^ x3 ^ np.uint32(key1), lo0
        key0, key1 = (key0 + _PHILOX_BUMP[0]) & _MASK32, (key1 + _PHILOX_BUMP[1]) & _MASK32
    return x0, x1, x2, x3


def _philox_words(key: int, state: int, n32: int):
    """`n32` uint32 words of Philox and the advanced state."""
    blocks = -(-n32 // 4)
    low, wrapped = _counters(state, blocks)
    high = np.where(wrapped, np.uint64((key + 1) & _MASK64), np.uint64(key))
    out = _philox4x32((*_split64(low), *_split64(high)), key & _MASK32, key >> 32)
    return np.stack(out, axis=-1).reshape(-1)[:n32], (state + blocks) & _MASK64


def _philox_bits(key: int, state: int, shape, wide: bool):
    n = math.prod(shape)
    if not wide:
        words, state = _philox_words(key, state, n)
        return words.reshape(shape), state
    words, state = _philox_words(key, state, 2 * n)
    return _join64(words[0::2], words[1::2]).reshape(shape), state


def _threefry(key: int, counters):
    from gpuarr.prng import threefry2x32_p  # prng builds on lax: look it up at call time
    low, high = _split64(counters)
    return impl_rules[threefry2x32_p](np.uint32(key & _MASK32), np.uint32(key >> 32), low, high)


def _threefry_bits(key: int, state: int, shape, wide: bool):
    if wide:
        counters, _ = _counters(state, math.prod(shape))
        low, high = _threefry(key, counters)
        return _join64(low, high).reshape(shape), (state + counters.size) & _MASK64
    if not shape:
        first, _ = _threefry(key, _counters(state, 1)[0])
        return first.reshape(()), (state + 1) & _MASK64
    split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    if split is None:
        split = int(np.argmax(shape))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    counters, _ = _counters(state, math.prod(half))
    low, high = _threefry(key, counters)
    pairs = np.stack([low.reshape(half), high.reshape(half)], axis=split + 1)
    full = list(shape)
    full[split] = 2 * half[split]
    out = pairs.reshape(full)[tuple(slice(0, d) for d in shape)]
    return out, (state + counters.size) & _MASK64


_GENERATORS = {RandomAlgorithm.RNG_DEFAULT: _philox_bits, RandomAlgorithm.RNG_PHILOX: _philox_bits,
               RandomAlgorithm.RNG_THREE_FRY: _threefry_bits}

# ---------------------------------------------------------------- rng_bit_generator


def _key_words(key):
    """(key, state) as Python ints from uint32[4] or uint64[2] key data."""
    k = [int(v) for v in np.asarray(key).reshape(-1)]
    if len(k) == 2:
        return k[0], k[1]
    return k[0] | k[1] << 32, k[2] | k[3] << 32


def _rng_bit_generator_impl(key, *, algorithm, dtype, shape):
    key = np.asarray(key)
    k, state = _key_words(key)
    wide = np.dtype(dtype).itemsize == 8
    bits, state = _GENERATORS[RandomAlgorithm(algorithm)](k, state, tuple(shape), wide)
    if key.dtype == np.uint64:
        new_key = np.array([k, state], np.uint64)
    else:
        new_key = np.array([k & _MASK32, k >> 32, state & _MASK32, state >> 32], np.uint32)
    return [new_key, np.asarray(bits).astype(dtype)]


def _rng_bit_generator_abstract(key, *, algorithm, dtype, shape):
    if (key.shape, key.dtype) not in (((4,), np.uint32), ((2,), np.uint64)):
        raise TypeError(f"rng_bit_generator: the key must be uint32[4] (or uint64[2] with x64 "
                        f"enabled), got {key.str_short()}")
    if np.dtype(dtype) not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {np.dtype(dtype)}")
    return [key, ShapedArray(tuple(shape), np.dtype(dtype))]


def _rng_bit_generator_batch(axis_size, vals, dims, *, algorithm, dtype, shape):
    # As JAX: the first key draws the bits of every example, and only it advances.
    (keys,), (d,) = vals, dims
    keys = batching.move_to(keys, d, 0, axis_size)
    first = shape_ops.squeeze(lax.slice_in_dim(keys, 0, 1, axis=0), (0,))
    new_key, bits = rng_bit_generator_p.bind(first, algorithm=algorithm, dtype=dtype,
                                             shape=(axis_size, *shape))
    rest = lax.slice_in_dim(keys, 1, axis_size, axis=0)
    new_keys = lax.concatenate([shape_ops.broadcast(new_key, (1,)), rest], 0)
    return [new_keys, bits], [0, 0]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
impl_rules[rng_bit_generator_p] = _rng_bit_generator_impl
abstract_eval_rules[rng_bit_generator_p] = _rng_bit_generator_abstract
checked_impl(rng_bit_generator_p)
weak_type_rules[rng_bit_generator_p] = lambda key, **params: [
    bool(getattr(key, "weak_type", False)), False]
ad.defjvp_zero(rng_bit_generator_p)
batch_rules[rng_bit_generator_p] = _rng_bit_generator_batch


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """Random bits of `shape` and unsigned `dtype` from XLA's stateless bit generator
    `algorithm`, keyed by uint32[4] `key`; returns (next key, bits), equal to JAX's."""
    arguments.check_no_sharding("lax.rng_bit_generator", out_sharding)
    shape = tuple(int(d) for d in shape)
    dtype = dtypes.check_user_dtype(dtype, "rng_bit_generator")
    if dtype not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    new_key, bits = rng_bit_generator_p.bind(key, algorithm=RandomAlgorithm(algorithm),
                                             dtype=dtype, shape=shape)
    return new_key, bits


# ---------------------------------------------------------------- rng_uniform

_generator = np.random.default_rng()


def _uniform_floats(a, b, shape, dtype):
    """Uniform in [a, b): values that round up to b are drawn again."""
    out = np.asarray(a + (b - a) * _generator.random(shape), dtype)
    if not b > a:  # an empty interval: JAX leaves the result unspecified
        return out
    high = out >= b
    while high.any():
        out[high] = np.asarray(a + (b - a) * _generator.random(int(high.sum())), dtype)
        high = out >= b
    return out


def _rng_uniform_impl(a, b, *, shape):
    a, b = np.asarray(a), np.asarray(b)
    if dtypes.is_float(a.dtype):
        wide = np.float64 if a.dtype == np.float64 else np.float32
        return _uniform_floats(a.astype(wide), b.astype(wide), shape, a.dtype)
    if b <= a:
        return np.full(shape, a, a.dtype)
    return _generator.integers(a, b, shape, dtype=a.dtype)


def _rng_uniform_abstract(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got "
                         f"{a.dtype} and {b.dtype}.")
    if a.shape != () or b.shape != ():
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                         f"{b.shape}.")
    if not (dtypes.is_float(a.dtype) or dtypes.is_int(a.dtype)):
        raise TypeError(f"rng_uniform does not accept dtype {a.dtype.name}: it draws integers "
                        "or floating-point numbers.")
    return [ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)]


def _rng_uniform_no_jvp(primals, tangents, **params):
    raise NotImplementedError("Differentiation rule for 'rng_uniform' not implemented")


def _rng_uniform_no_batch(axis_size, vals, dims, **params):
    raise NotImplementedError("Batching rule for 'rng_uniform' not implemented")


# Effectful: every evaluation draws new numbers, so programs never merge, hoist or fold it.
rng_uniform_p = Primitive("rng_uniform", effectful=True)
impl_rules[rng_uniform_p] = _rng_uniform_impl
abstract_eval_rules[rng_uniform_p] = _rng_uniform_abstract
checked_impl(rng_uniform_p)
# JAX defines neither rule for this stateful primitive: derivatives and vmap of it (with
# traced bounds) raise, as there.
ad.jvp_rules[rng_uniform_p] = _rng_uniform_no_jvp
batch_rules[rng_uniform_p] = _rng_uniform_no_batch


def rng_uniform(a, b, shape):
    """Uniform random numbers in [a, b) of `shape` and the dtype of the scalars `a` and `b`,
    drawn from a process-wide generator (stateful, as XLA's Rng: every call, jitted or not,
    gives new numbers). Prefer gpuarr.random."""
    return rng_uniform_p.bind(a, b, shape=tuple(int(d) for d in shape))
