"""Building one Array from per-device pieces (JAX's `jax.make_array_from_callback`,
`jax.make_array_from_single_device_arrays`, `jax.make_array_from_process_local_data`).

A global Array is assembled from one buffer per addressable device of a Sharding. With one
device the piece is the array itself. Over several devices each device keeps its own copy of
its piece (`DeviceShards`; over devices of several processes, this process's pieces). The
functions keep JAX's checks and messages (wrong
shard shape, dtype, count), and the result is committed and reports `sharding`.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from gpuarr import dtypes, placement, pytrees
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards, own_copy
from gpuarr.core import Tracer
from gpuarr.errors import UnexpectedTracerError
from gpuarr.pytrees.mapping import _prefix_errors
from gpuarr.sharding import sharding_in_types, tree_shardings
from gpuarr.sharding.shardings import NamedSharding, Sharding

__all__ = ["make_array_from_callback", "make_array_from_process_local_data",
           "make_array_from_single_device_arrays"]

_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------- shared checks


def _type_str(shape, dtype, sharding) -> str:
    """`float32[4@x,3]`: the type JAX's messages print, naming the Explicit mesh axes that
    each dimension is split over."""
    axes = [()] * len(shape)
    if isinstance(sharding, NamedSharding) and len(sharding.spec) <= len(shape):
        spec = sharding.spec._normalized_spec_for_aval(len(shape))
        spec = sharding_in_types.modify_spec_for_auto_manual(spec, sharding.mesh)
        axes = [() if p is None else p if isinstance(p, tuple) else (p,)
                for p in spec.partitions]
    dims = [f"{n}" if not a else f"{n}@{a[0]}" if len(a) == 1 else f"{n}@({','.join(a)})"
            for n, a in zip(shape, axes)]
    return f"{np.dtype(dtype).name}[{','.join(dims)}]"


def _check_sharding(sharding) -> None:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of "
                        f"type {type(sharding)}")


def _check_rank(shape, sharding) -> None:
    check = getattr(sharding, "check_compatible_aval", None)
    if check is not None:
        check(shape)


def _get_and_check_dtype(pieces, dtype, fname: str) -> np.dtype:
    """The dtype of the result: `dtype` (canonicalised, and it must match the pieces'),
    else the first piece's."""
    if dtype is None:
        if not pieces:
            raise ValueError("If the Array has no addressable shards, `dtype` must be provided "
                             f"via the `dtype` argument to `jax.{fname}`.")
        return np.dtype(pieces[0].dtype)
    dtype = dtypes.check_user_dtype(dtype, fname)
    if pieces and pieces[0].dtype != dtype:
        raise ValueError(f"If `dtype` is provided to `jax.{fname}`, it must match the dtype of "
                         f"the addressable shards. Got dtype={dtype} and shard "
                         f"dtype={pieces[0].dtype}`.")
    return dtype


def _check_pieces(pieces, shape, dtype, sharding) -> None:
    """Each per-device piece has the result's dtype and the sharding's shard shape."""
    expected_shape = sharding.shard_shape(shape)
    for piece in pieces:
        if piece.dtype != dtype:
            raise ValueError("Input buffers to `Array` must have matching dtypes. Got "
                             f"{piece.dtype}, expected {dtype} for buffer: {piece}")
        if tuple(piece.shape) != expected_shape:
            raise ValueError(
                f"Expected shard shape {expected_shape} doesn't match the single device array "
                f"shape {tuple(piece.shape)}. Shape of Array is "
                f"{_type_str(shape, dtype, sharding)} with sharding {sharding}")


def _assemble_pieces(pieces, shape, dtype, sharding) -> Array:
    """The Array of `shape` made of one piece per addressable device of `sharding` (in
    `addressable_devices_indices_map` order)."""
    if sharding.num_devices == 1:
        return _assemble(pieces[0], sharding)
    indices = sharding.addressable_devices_indices_map(shape)
    hosts = [p._host() if type(p) is Array else np.asarray(p) for p in pieces]
    if tree_shardings.held_in_pieces(sharding):  # each device: its own copy
        platform = placement.platform_of(next(iter(indices)))
        shards = DeviceShards({d: platform.from_host(own_copy(h), d)
                               for d, h in zip(indices, hosts)}, shape, dtype, sharding,
                              platform)
        out = Array(shards, False, device=next(iter(indices)), committed=True,
                    platform=shards.array_platform)
        out._sharding = sharding
        return out
    buf = np.empty(shape, dtype)
    for idx, piece in zip(indices.values(), hosts):
        buf[idx] = piece
    out = Array(buf, False, device=next(iter(indices)), committed=True)
    out._sharding = sharding
    return out


def _assemble(piece, sharding) -> Array:
    """The result Array: `piece`'s buffer (not copied when it is already on the device),
    committed to the device of `sharding`, strongly typed, reporting `sharding`."""
    if type(piece) is not Array:
        from gpuarr.dispatch import to_device_array
        piece = to_device_array(piece, weak_type=False)
    elif piece.weak_type:
        piece = Array(piece._buffer, False, device=piece._device, committed=piece._committed,
                      platform=piece._platform)
    return tree_shardings.with_sharding(piece, sharding)


# ---------------------------------------------------------------- make_array_from_callback


def _callback_value(value):
    """What a data callback returned, as an Array or a host array of a canonical dtype."""
    if isinstance(value, Tracer):
        raise UnexpectedTracerError("jax.make_array_from_callback cannot be called within a "
                                    "traced context.")
    if type(value) is Array:
        return value
    if isinstance(value, (np.ndarray, np.generic, *_SCALARS)):
        host = np.asarray(value)
        if host.dtype not in dtypes._VALID_DTYPES:
            raise TypeError(f"Dtype {host.dtype} is not a valid JAX array type. Only arrays of "
                            "numeric types are supported by JAX.")
        return host.astype(dtypes.canonicalize_dtype(host.dtype), copy=False)
    raise TypeError(f"Argument '{value}' of type {type(value)} is not a valid JAX type.")


def make_array_from_callback(shape, sharding, data_callback: Callable, dtype=None) -> Array:
    """An Array of `shape` placed as `sharding`, with data fetched from `data_callback`.

    `data_callback(index)` is called once per addressable device of `sharding` with that
    device's index into the global array (a tuple of slices, from
    `sharding.addressable_devices_indices_map(shape)`) and returns the data there (a NumPy
    array, a Python scalar or an Array; on one device an Array is used without a copy).
    `dtype` defaults to the data's
    dtype and must match it when given. Raises ValueError when the data has the wrong shape
    or dtype, as JAX does; the result is committed to the sharding's device."""
    _check_sharding(sharding)
    shape = tuple(operator.index(d) for d in shape)
    indices = sharding.addressable_devices_indices_map(shape)
    pieces = [_callback_value(data_callback(index)) for index in indices.values()]
    dtype = _get_and_check_dtype(pieces, dtype, "make_array_from_callback")
    _check_rank(shape, sharding)
    _check_pieces(pieces, shape, dtype, sharding)
    return _assemble_pieces(pieces, shape, dtype, sharding)


# ---------------------------------------------------------------- single-device arrays


def make_array_from_single_device_arrays(shape, sharding, arrays: Sequence[Array], *,
                                         dtype=None) -> Array:
    """An Array of `shape` placed as `sharding`, made of `arrays`: one Array per addressable
    device of `sharding`, each on its device with the shard shape `sharding.shard_shape(shape)`.

    With one device `arrays` holds one Array, the whole value, and the result shares its
    buffer; it is committed and reports `sharding`. `dtype` defaults to the arrays' dtype and
    must match it when given. Raises TypeError when `arrays` is not a list or tuple of
    Arrays and ValueError (with JAX's messages) for the wrong number of arrays, a shape or
    dtype that does not match, or arrays on other devices."""
    fname = "make_array_from_single_device_arrays"
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"jax.{fname} `arrays` argument must be a list or tuple, but got "
                        f"{type(arrays)}.")
    dtype = _get_and_check_dtype(arrays, dtype, fname)
    shape = tuple(operator.index(d) for d in shape)
    _check_rank(shape, sharding)
    if any(isinstance(a, Tracer) for a in arrays):
        raise ValueError(f"jax.{fname} requires a list of concrete arrays as input, but got "
                         f"types {set(map(type, arrays))}")
    for a in arrays:
        if type(a) is not Array:
            raise TypeError(f"Unsupported type for elements in `arrays`: {type(a)}")
    devices = sharding.addressable_devices
    if len(arrays) != len(devices):
        raise ValueError(f"Expected {len(devices)} per-device arrays (this is how many devices "
                         f"are addressable by the sharding), but got {len(arrays)}")
    in_arrays = {a.device for a in arrays}
    if in_arrays != set(devices):
        raise ValueError(
            "Addressable devices and per-device arrays devices do not match. Sharding contains "
            f"devices {set(devices) - in_arrays} that are not present in per-device arrays. "
            f"Per-device arrays contain devices {in_arrays - set(devices)} that are not "
            "present in the sharding.")
    for a in arrays:
        if a.sharding.memory_kind != sharding.memory_kind:
            raise ValueError(f"Memory kind mismatch with the per-device arrays. Got sharding "
                             f"with memory kind '{sharding.memory_kind}' and a buffer with "
                             f"memory_kind '{a.sharding.memory_kind}'")
    _check_pieces(arrays, shape, dtype, sharding)
    by_device = {a.device: a for a in arrays}
    return _assemble_pieces([by_device[d] for d in
                             sharding.addressable_devices_indices_map(shape)], shape, dtype,
                            sharding)


# ---------------------------------------------------------------- process-local data


def _broadcast_prefix(prefix, full, is_leaf=None) -> list:
    """One entry of the prefix tree `prefix` per leaf of `full`, with JAX's message when
    `prefix` is not a prefix of `full`."""
    leaves, treedef = pytrees.tree_flatten(prefix, is_leaf=is_leaf)
    try:
        subtrees = treedef.flatten_up_to(full)
    except ValueError:
        leaf_at = None if is_leaf is None else (lambda _, x: is_leaf(x))
        makers = list(_prefix_errors((), prefix, full, leaf_at))
        if not makers:
            raise
        raise ValueError(makers[0]("broadcast_prefix prefix_tree")) from None
    out = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * pytrees.tree_structure(sub).num_leaves)
    return out


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """Arrays placed as `sharding` from the data this process holds (a pytree of NumPy
    arrays or Arrays; `sharding` and `global_shape` may be pytree prefixes of it).

    On one process the local data is the whole value: each `global_shape` must be None or
    the data's own shape (ValueError otherwise), and the data is put on the sharding's
    device. When the sharding spans several processes, each passes the block of the global
    array that its devices hold (for `P('data')` over every process: its rows, in process
    order); `global_shape` defaults to the blocks put together. The result holds this
    process's pieces; compute on it with shard_map, read it with
    `multihost_utils.process_allgather`."""
    data_flat, treedef = pytrees.tree_flatten(local_data)
    shardings = _broadcast_prefix(sharding, local_data)
    shapes = _broadcast_prefix(global_shape, local_data,
                               is_leaf=lambda x: x is None or isinstance(x, tuple))
    out = []
    for d, sh, s in zip(data_flat, shardings, shapes):
        if isinstance(sh, NamedSharding) and sh.mesh.is_multi_process:
            out.append(_from_process_block(sh, d, s))
            continue
        if s is not None and s != np.shape(d):
            raise ValueError(
                "When calling `make_array_from_process_local_data` on a single process, "
                "global_shape should be None or equal to local_data.shape.Got "
                f"global_shape={s} and local_data.shape={np.shape(d)}.")
        from gpuarr.device_api import device_put
        out.append(device_put(d, sh))
    return pytrees.tree_unflatten(treedef, out)


def _from_process_block(sharding, data, global_shape) -> Array:
    """A global Array from this process's block `data` of it (see above)."""
    from gpuarr.sharding.spmd import _index
    data = np.asarray(data)
    data = data.astype(dtypes.canonicalize_dtype(data.dtype), copy=False)
    mesh, ndim = sharding.mesh, data.ndim
    local = [f for f, d in enumerate(mesh.devices.flat) if d in sharding.addressable_devices]
    where = {f: _index(mesh, sharding.spec, ndim, f) for f in local}
    ways = where[local[0]] and [w for _, w in where[local[0]]]
    first = [min(where[f][i][0] for f in local) for i in range(ndim)]
    held = [len({where[f][i][0] for f in local}) for i in range(ndim)]
    inferred = tuple(n * w // h for n, w, h in zip(data.shape, ways, held))
    if global_shape is not None and tuple(global_shape) != inferred:
        raise ValueError(f"make_array_from_process_local_data: this process's data of shape "
                         f"{data.shape} under {sharding} makes a global array of shape "
                         f"{inferred}, not global_shape={tuple(global_shape)}.")
    pieces = {}
    for f in local:
        idx = tuple(slice((k - k0) * (n // w), (k - k0 + 1) * (n // w))
                    for (k, w), k0, n in zip(where[f], first, inferred))
        pieces[mesh.devices.flat[f]] = np.ascontiguousarray(data[idx])
    device = mesh.devices.flat[local[0]]
    platform = placement.platform_of(device)  # each piece on its device, as in one process
    host = not getattr(platform, "device_buffers", False)
    shards = DeviceShards({d: platform.from_host(own_copy(p) if host else p, d)
                           for d, p in pieces.items()}, inferred, data.dtype, sharding, platform)
    out = Array(shards, False, device=device, committed=True, platform=shards.array_platform)
    out._sharding = sharding
    return out
