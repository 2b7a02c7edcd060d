"""Key construction and key operations: key, PRNGKey, split, fold_in, key_data, wrap_key_data,
clone, and `bits`. Typed keys are `prng.PRNGKeyArray`; raw keys are uint32[..., 2] arrays."""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes, prng
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import Tracer, get_aval
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.arguments import check_no_sharding
from gpuarr.numpy import key_functions
from gpuarr.prng import PRNGKeyArray

_IMPL_NAMES = ("threefry2x32", "fry", None)
# JAX's other generators: known names that gpuarr does not implement.
_OTHER_IMPLS = ("philox2x32", "philox4x32", "rbg", "unsafe_rbg", "threefry4x32")


def canonicalize_shape(shape, name: str = "shape") -> tuple:
    """A tuple of non-negative Python ints from an int or a sequence of ints."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, Sequence) else \
            tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape!r}. Pass a tuple of ints such as (3, 4).") from None
    if any(d < 0 for d in dims):
        # JAX's TypeError (from broadcasting the sampler's parameters to the shape).
        raise TypeError("Only non-negative indices are allowed when broadcasting static shapes, "
                        f"but got shape {dims}. Pass non-negative sizes for {name}.")
    return dims


def _arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def check_key(name: str, key, allow_batched: bool = False):
    """(raw key data, was_raw) for a typed or raw key; raises JAX's errors for anything else."""
    if isinstance(key, PRNGKeyArray):
        data, wrapped = key._base_array, False
    elif _arraylike(key):
        prng.check_key_data(key)
        data, wrapped = key, True
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}. Pass a key made by "
                        "random.key(seed) (or a raw uint32[2] key from random.PRNGKey(seed)).")
    shape = tuple(get_aval(data).shape)
    if len(shape) > 1 and not allow_batched:
        # As JAX, a raw key's shape is printed with its trailing key-data axis.
        shown = shape if wrapped else shape[:-1]
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shown} != (). Use jax.vmap for batching.")
    return data, wrapped


def _return_keys(wrapped: bool, data):
    return data if wrapped else PRNGKeyArray(data)


def _check_impl(impl):
    if impl in _IMPL_NAMES or isinstance(impl, prng.KeyDtype):
        return
    if not isinstance(impl, str):
        raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation. "
                        "Pass a name such as 'threefry2x32' or a dtype from random.key_dtype().")
    if impl in _OTHER_IMPLS:
        raise NotImplementedError(f'PRNG implementation "{impl}" is not available: gpuarr '
                                  'implements only "threefry2x32" (the default). Omit impl=.')
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                     '"threefry2x32"? (gpuarr implements threefry2x32 only.)')


def _none_to_array(x, what: str):
    """JAX's ValueError for None where an array is expected (as jnp.asarray(None))."""
    if x is None:
        raise ValueError(f"None is not a valid value for jnp.array. Pass an integer {what}.")


def _seed(ctor_name: str, seed, impl):
    _check_impl(impl)
    _none_to_array(seed, "seed")
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not isinstance(seed, Tracer) else seed.ndim:
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed) if not isinstance(seed, Tracer) else seed.shape} != (). "
                        "Use jax.vmap for batching")
    if isinstance(seed, bool):
        seed = int(seed)
    if isinstance(seed, int):
        # JAX converts Python ints through int64, then to the default int type: without x64
        # a seed is truncated to its low 32 bits.
        if not -2**63 <= seed < 2**63:
            raise OverflowError(f"{ctor_name} seed {seed} does not fit in int64. Pass a seed in "
                                "[-2**63, 2**63), e.g. seed % 2**63.")
        seed = np.asarray(seed, np.int64)
        if not config.enable_x64:
            seed = seed.astype(np.int32)
    elif isinstance(seed, float):
        seed = np.asarray(seed, np.float32)
    elif isinstance(seed, (np.ndarray, np.generic)):
        # As jnp.asarray: without x64 a 64-bit seed is narrowed to 32 bits (its low word).
        seed = np.asarray(seed).astype(dtypes.canonicalize_dtype(np.asarray(seed).dtype))
    return prng.seed_data(seed)


def key(seed, *, impl=None, dtype=None):
    """Create a typed PRNG key (shape (), dtype `key<fry>`) from an integer seed. Seeds of
    more than 32 bits (with x64 on) give the key data [seed >> 32, seed & 0xFFFFFFFF]."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    return PRNGKeyArray(_seed("key", seed, impl if dtype is None else dtype))


def PRNGKey(seed, *, impl=None):
    """Create a legacy raw key, a uint32[2] array, from an integer seed (as `key`, unwrapped)."""
    return _seed("PRNGKey", seed, impl)


def key_data(keys):
    """The raw uint32[..., 2] data underlying a key array (raw keys are returned as they are)."""
    data, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Wrap raw uint32[..., 2] key data into a typed key array of the leading shape."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                         "jax.random.wrap_key_data")
    _check_impl(impl if dtype is None else dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data expects raw uint32 key data, but was given a key array; "
                        "use it directly (or random.key_data(keys) to get its data).")
    prng.check_key_data(key_bits_array)  # as JAX, lists are not key data
    return PRNGKeyArray(key_bits_array)


def key_impl(keys):
    """The name of the PRNG implementation of `keys`: always 'threefry2x32'."""
    check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def key_dtype(impl_spec=None):
    """The dtype of typed keys of implementation `impl_spec` (only threefry2x32): `key<fry>`."""
    _check_impl(impl_spec)
    return prng.KEY_DTYPE


def split_raw(data, num=2):
    """Split one raw key into raw keys of shape `num` (an int or a tuple)."""
    shape = canonicalize_shape(num if isinstance(num, Sequence) else (num,), "num")
    return prng.split_data(data, shape)


def split(key, num=2):
    """Split a key into `num` new keys (an int, or a tuple giving the shape of the result);
    `split(key, n)[i]` equals JAX's for the same key, bit for bit."""
    data, wrapped = check_key("split", key)
    return _return_keys(wrapped, split_raw(data, num))


def fold_in(key, data):
    """A new key that is a deterministic function of `key` and the 32-bit integer `data`;
    `fold_in(key, i)` equals `split(key, n)[i]` for small i, as in JAX."""
    raw, wrapped = check_key("fold_in", key)
    _none_to_array(data, "to fold in")
    if isinstance(data, str):  # as jnp.asarray(data, 'uint32')
        raise ValueError(f"invalid literal for int() with base 10: {data!r}. fold_in takes a "
                         "32-bit integer.")
    if np.ndim(data) if not isinstance(data, Tracer) else data.ndim:
        raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data) if not isinstance(data, Tracer) else data.shape} != (). "
                        "Use jax.vmap for batching.")
    if isinstance(data, int) and not isinstance(data, bool) and not 0 <= data < 2**32:
        # As jnp.asarray(data, 'uint32'): NumPy integers wrap, Python ints must fit.
        raise OverflowError(f"Python integer {data} out of bounds for uint32. fold_in takes a "
                            "32-bit value: pass data % 2**32, or a NumPy integer to wrap.")
    if isinstance(data, (int, np.integer)):
        data = np.asarray(int(data) & 0xFFFFFFFF, np.uint32)
    return _return_keys(wrapped, prng.fold_in_data(raw, data))


def clone(key):
    """A copy of `key` for deliberate reuse (an identity outside key-reuse checking); a raw key
    comes back as an array, as from JAX."""
    if isinstance(key, PRNGKeyArray):
        return key.copy()
    if not _arraylike(key):
        raise TypeError(f"clone expects a PRNG key, got a value of type {type(key).__name__}. "
                        "Pass a key made by random.key(seed) or random.PRNGKey(seed).")
    if isinstance(key, (Array, Tracer)):
        return key
    return key_functions.asarray(key)  # Python scalars stay weakly typed, as in JAX


def bits(key, shape=(), dtype=None, *, out_sharding=None):
    """Uniformly random unsigned integers of `shape` and `dtype` (default uint32, uint64 with
    x64); every bit is random."""
    check_no_sharding("random.bits", out_sharding)
    data, _ = check_key("bits", key)
    dtype = dtypes.default_uint_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    if not dtypes.is_unsigned_int(dtype):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    shape = canonicalize_shape(shape)
    return prng.random_bits(data, dtype.itemsize * 8, shape)


def random_bits(data, bit_width: int, shape):
    """Raw-key form of `bits` used by the samplers."""
    return prng.random_bits(data, bit_width, shape)


def split_n(data, n: int):
    """`n` raw subkeys of one raw key, as a list."""
    keys = prng.split_data(data, (n,))
    return [lax_shape_ops.reshape(lax.slice_in_dim(keys, i, i + 1, axis=0), (2,)) for i in range(n)]
