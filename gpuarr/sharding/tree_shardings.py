"""Pytrees of shardings matched against values: jit's in_shardings/out_shardings and
device_put's placement, checked and resolved to one device."""
from __future__ import annotations

import numpy as np

from gpuarr import placement, pytrees
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.process_group import state as process_state
from gpuarr.pytrees.mapping import _prefix_errors
from gpuarr.sharding import piece_exchange
from gpuarr.sharding.mesh import AbstractMesh
from gpuarr.sharding.mesh_context import get_abstract_mesh, get_concrete_mesh, make_mesh
from gpuarr.sharding.partition_spec import _UNCONSTRAINED, PartitionSpec
from gpuarr.sharding.sharding_in_types import type_spec, type_str
from gpuarr.sharding.shardings import NamedSharding, Sharding, _check_unique_resources


class PytreeLeaf:
    """Stands for a leaf of the value when a pytree of shardings is checked against it."""

    def __repr__(self):
        return "pytree leaf"


def _is_none(x) -> bool:
    return x is None


def _broadcast_flat(treedef, axis_tree) -> list:
    """One entry of the prefix tree `axis_tree` (None is a leaf) per leaf of `treedef`;
    ValueError when it is not a prefix."""
    leaves, ptree = pytrees.tree_flatten(axis_tree, is_leaf=_is_none)
    dummy = pytrees.tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
    out = []
    for leaf, sub in zip(leaves, ptree.flatten_up_to(dummy)):
        out.extend([leaf] * pytrees.tree_structure(sub).num_leaves)
    return out


def _prefix_error_messages(prefix, full, name) -> list[str]:
    makers = _prefix_errors((), prefix, full, lambda kp, x: x is None)
    return [make(name) for make in makers]


def flatten_axes(name, treedef, axis_tree, *, tupled_args=False) -> list:
    """`axis_tree` (a prefix of the tree `treedef`) broadcast to one entry per leaf, with
    JAX's error (naming `name`) when it is not a prefix."""
    try:
        return _broadcast_flat(treedef, axis_tree)
    except ValueError:
        pass
    hint = ""
    if tupled_args:
        hint += (f" Note that {name} that are non-trivial pytrees should always be wrapped in a "
                 "tuple representing the argument list.")
        if len(treedef.children()) == 1:
            try:
                _broadcast_flat(treedef, (axis_tree,))
            except ValueError:
                pass
            else:
                hint += (" In particular, you're passing in a single argument which means that "
                         f"{name} might need to be wrapped in a singleton tuple.")
    dummy = pytrees.tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
    msgs = _prefix_error_messages(axis_tree, dummy, name)
    details = "\n  ".join(msgs)
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding value; "
                     f"{hint}\n  Mismatch details ({len(msgs)} found):\n  {details}") from None


def flatten_axis_resources(what, tree, shardings, tupled_args) -> list:
    """jit's and reshard's form of `flatten_axes`, with JAX's messages for a wrong prefix."""
    try:
        return _broadcast_flat(tree, shardings)
    except ValueError:
        pass
    if tupled_args and (type(shardings) is not tuple or len(shardings) != len(tree.children())):
        msg = (f"{what} specification must be a tree prefix of the positional arguments tuple. "
               f"In particular, {what} must either be a Sharding, a PartitionSpec, or a tuple of "
               "length equal to the number of positional arguments.")
        if type(shardings) is not tuple:
            msg += f" But {what} is not a tuple: got {type(shardings)} instead."
        elif len(shardings) != len(tree.children()):
            msg += (f" But {what} is the wrong length: got a tuple or list of length "
                    f"{len(shardings)} for an args tuple of length {len(tree.children())}.")
        if len(tree.children()) == 1:
            try:
                _broadcast_flat(tree, (shardings,))
            except ValueError:
                pass
            else:
                msg += (f" Given the corresponding argument being passed, it looks like {what} "
                        "might need to be wrapped in a singleton tuple.")
        raise ValueError(msg)
    dummy = pytrees.tree_unflatten(tree, [PytreeLeaf()] * tree.num_leaves)
    msgs = _prefix_error_messages(shardings, dummy, what)
    raise ValueError(f"Mismatch details ({len(msgs)} found):\n" + "\n".join(msgs))


class UnspecifiedValue:
    def __repr__(self):
        return "UnspecifiedValue"


UNSPECIFIED = UnspecifiedValue()


class UnsupportedShardingError(NotImplementedError, TypeError):
    """A sharding argument that is neither a Sharding nor a PartitionSpec: a TypeError in JAX,
    and gpuarr (one device, no other kind of sharding) cannot honour it either."""


def prepare_axis_resources(axis_resources, arg_name, allow_unconstrained_dims=False):
    """Check each leaf of a pytree of sharding specifications (None, Sharding or
    PartitionSpec) as JAX does; returns the tree."""
    entries, treedef = pytrees.tree_flatten(axis_resources, is_leaf=_is_none)
    what = f"{arg_name} leaf specifications"
    for entry in entries:
        if entry is None or isinstance(entry, UnspecifiedValue):
            continue
        if isinstance(entry, Sharding):
            if isinstance(entry, NamedSharding) and entry.mesh.empty:
                raise ValueError(f"One of {what} got an empty NamedSharding: {entry} which is "
                                 "not allowed.")
            if (not allow_unconstrained_dims and isinstance(entry, NamedSharding)
                    and _UNCONSTRAINED in entry.spec.partitions):
                raise ValueError(f"Unconstrained dims are not allowed when passed to {arg_name}:"
                                 f" {entry}")
            continue
        if not isinstance(entry, PartitionSpec):
            msg = f"{what} are expected to be PartitionSpec instances or None, but got {entry}"
            if arg_name in ("in_shardings", "out_shardings"):
                msg += (". (gpuarr does not shard arrays with anything else: pass "
                        "gpuarr.sharding Shardings or PartitionSpecs.)")
            raise UnsupportedShardingError(msg)
        if not allow_unconstrained_dims and _UNCONSTRAINED in entry.partitions:
            raise ValueError(f"Unconstrained dims are not allowed when passed to {arg_name}: "
                             f"{entry}")
        _check_unique_resources(entry, arg_name)
    return axis_resources


def sharding_for_spec(mesh, x, name: str, api_name: str):
    """A PartitionSpec (or Sharding, or None) of a jit-like API as a Sharding on the mesh in
    context: RuntimeError for a PartitionSpec without a mesh."""
    if x is None:
        if api_name == "jit" or mesh.empty:
            return UNSPECIFIED
        return NamedSharding(mesh, PartitionSpec())
    if isinstance(x, (UnspecifiedValue, Sharding)):
        return x
    if mesh.empty:
        raise RuntimeError(
            f"{api_name} requires a non-empty mesh in context if you are passing "
            f"`PartitionSpec`s to {name}. You can define a context mesh via "
            f"`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to {name} and then the "
            "mesh context manager is not required.")
    return NamedSharding(mesh, x)


def jit_context_mesh():
    """The mesh bare PartitionSpecs given to jit refer to: set_mesh's, else an abstract mesh
    with an Explicit axis from use_abstract_mesh."""
    mesh = get_concrete_mesh()
    if not mesh.empty:
        return mesh
    abstract = get_abstract_mesh()
    if not abstract.empty and abstract._any_axis_explicit:
        return abstract
    return mesh


def check_aval_sharding(shardings, avals, names, what_aval: str, allow_uneven=False) -> None:
    """The rank (and, unless `allow_uneven`, divisibility) check of each sharding against its
    value's shape."""
    for aval, s, name in zip(avals, shardings, names):
        if s is None or isinstance(s, UnspecifiedValue):
            continue
        name_str = f" with pytree key path {name}" if name else ""
        try:
            s.check_compatible_aval(aval.shape)
        except ValueError as e:
            raise ValueError(f"One of {what_aval}{name_str} is incompatible with its sharding "
                             f"annotation {s}: {e}") from None
        if not allow_uneven:
            s.shard_shape(aval.shape)


def concrete_sharding(s: Sharding) -> Sharding:
    """`s` with a concrete Mesh: a NamedSharding over an AbstractMesh takes the mesh in
    context when it matches, else the default devices."""
    if not isinstance(s, NamedSharding) or not isinstance(s.mesh, AbstractMesh):
        return s
    mesh = get_concrete_mesh()
    if mesh.empty or mesh.abstract_mesh.shape_tuple != s.mesh.shape_tuple:
        mesh = make_mesh(s.mesh.axis_sizes, s.mesh.axis_names, s.mesh.axis_types)
    return NamedSharding(mesh, s.spec, memory_kind=s.memory_kind)


def device_of(s: Sharding, what: str):
    """The device that computations on data placed by Sharding `s` run on outside shard_map
    and pmap: its one device, or for a sharding over several, the first this process holds
    (operations that read the global value put it together there; each device of a NamedSharding
    keeps its own piece, `with_sharding`)."""
    if isinstance(s, NamedSharding):
        s = concrete_sharding(s)
    devices = s._device_assignment
    if len(devices) > 1:
        check_distinct_devices(devices, what)
        devices = [d for d in devices if d.process_index == process_state.process_index] \
            or devices
        if devices[0].platform not in ("cpu", "cuda"):
            raise NotImplementedError(
                f"{what}: {s} spans {len(devices)} {devices[0].platform} devices; gpuarr "
                "splits arrays over cpu and cuda devices only.")
    device = devices[0]
    if s.memory_kind not in (None, "device") and device.platform != "cpu":
        raise NotImplementedError(f"{what}: memory kind {s.memory_kind!r} is not supported on "
                                  f"{device!r}; gpuarr keeps arrays in device memory.")
    return device


def check_distinct_devices(devices, what: str) -> None:
    """ValueError when a mesh names one device at two positions."""
    if len(set(devices)) != len(devices):
        raise ValueError(f"{what}: the mesh names a device at more than one position "
                         f"({list(devices)}); build it from distinct devices, e.g. "
                         "jax.make_mesh(...) after jax.config.update('jax_num_cpu_devices', n).")


def resolve_in_shardings(in_shardings, leaves) -> list:
    """jit's sharding of each argument, as JAX resolves it: the in_sharding given for it, else
    a committed Array's own sharding (UNSPECIFIED for anything else). A committed Array whose
    data the in_sharding places otherwise raises JAX's ValueError: jit reshards only
    uncommitted values (NumPy arrays, `jnp.arange(8)`), so device_put it first."""
    resolved = []
    for leaf, s in zip(leaves, in_shardings):
        committed = type(leaf) is Array and leaf._committed
        if not isinstance(s, Sharding):
            resolved.append(leaf.sharding if committed else UNSPECIFIED)
            continue
        if committed and not same_placement(concrete_sharding(s), leaf.sharding, leaf.shape):
            raise ValueError(
                "Sharding passed to jit does not match the sharding on the respective arg. "
                f"Got jit sharding: {s},\narg sharding: {leaf.sharding} for arg type: "
                f"{type_str(leaf, type_spec(leaf))}")
        resolved.append(s)
    return resolved


def same_placement(a: Sharding, b: Sharding, shape) -> bool:
    """Whether the two shardings lay an array of `shape` out alike, as XLA compares them:
    both replicated (on whichever devices), or each device holding the same block."""
    if a.is_fully_replicated and b.is_fully_replicated:
        return True
    if not (a._is_concrete and b._is_concrete):
        return True  # an abstract mesh: its devices are those in context
    return a.devices_indices_map(shape) == b.devices_indices_map(shape)


def check_device_assignment(arg_shardings, out_shardings, leaves, names, fun_name) -> None:
    """JAX's ValueError when the shardings of a jitted call (each argument's, then the
    out_shardings) do not all use one device assignment (the mesh in context's, when one is
    set), naming the arguments involved as JAX does."""
    context = get_concrete_mesh()
    first = None if context.empty else (context._flat_devices_tuple, "context mesh")
    kinds = [(s, "ARG_SHARDING") for s in arg_shardings] + \
        [(s, "explicit output sharding") for s in out_shardings]
    for s, kind in kinds:
        if not isinstance(s, Sharding) or not s._is_concrete:
            continue
        this = (s._device_assignment, kind)
        if first is None:
            first = this
        elif this[0] != first[0]:
            raise ValueError(_mismatch_message((first, this), leaves, names, fun_name))


def _devices_str(devices) -> str:
    return f"with device ids {[d.id for d in devices]} on platform {devices[0].platform.upper()}"


def _mismatch_message(fails, leaves, names, fun_name) -> str:
    """JAX's text for two shardings on different devices: each that is an argument's
    sharding named by the first Array argument on those devices."""
    args = []
    for devices, kind in fails:
        found = kind == "ARG_SHARDING" and next(
            ((x, n) for x, n in zip(leaves, names)
             if type(x) is Array and x.sharding._device_assignment == devices), None)
        if found:
            leaf, name = found
            args.append(f"argument {name} of {fun_name} with shape "
                        f"{type_str(leaf, type_spec(leaf))} and {_devices_str(devices)}")

    def described(devices, kind):
        owner = " jit's" if kind == "context mesh" else ""
        return f"{owner} {kind} {_devices_str(devices)}"
    if len(args) == 2:
        extra = f" Got {args[0]} and {args[1]}"
    elif len(args) == 1:
        left = fails[1] if fails[0][1] == "ARG_SHARDING" else fails[0]
        extra = f" Got {args[0]} and{described(*left)}"
    else:
        extra = f" Got{described(*fails[0])} and{described(*fails[1])}"
    return f"Received incompatible devices for jitted computation.{extra}"


def common_device(shardings, what: str):
    """The one device of the Shardings among `shardings` (None when there are none);
    ValueError when they name different devices."""
    device = None
    for s in shardings:
        if isinstance(s, Sharding):
            d = device_of(s, what)
            if device is None:
                device = d
            elif d != device:
                raise ValueError(f"Received incompatible devices for {what}: shardings name "
                                 f"{device!r} and {d!r}; gpuarr runs each computation on one "
                                 "device.")
    return device


def with_sharding(x, s: Sharding):
    """A new Array with `x`'s buffer, committed to the device of `s` and reporting `s`. Over
    several GPUs or cpu devices, each device of this process receives its own piece
    (DeviceShards) and none the whole value."""
    s = concrete_sharding(s)
    device = device_of(s, "device_put")
    if held_in_pieces(s):
        stored = x._stored if type(x) is Array else None
        platform = placement.platform_of(device)
        shards = stored.relabelled(s) if type(stored) is DeviceShards else None
        if shards is None and type(stored) is DeviceShards and stored.spans_processes:
            shards = piece_exchange.reshard(stored, s)  # each device's block, over MPI
        if shards is None:
            host = x._host() if type(x) is Array else np.asarray(x)
            shards = DeviceShards.from_host(host, s, platform)
        out = Array(shards, getattr(x, "weak_type", False), device=device, committed=True,
                    platform=shards.array_platform)
    else:
        out = placement.put(x, device)
    out._sharding = s
    return out


def held_in_pieces(s) -> bool:
    """Whether an Array placed with Sharding `s` is held as one piece per device: a
    NamedSharding over several cpu devices or GPUs (those of other processes holding their
    own pieces)."""
    if not isinstance(s, NamedSharding) or not hasattr(s.mesh, "devices"):
        return False
    devices = s._device_assignment
    return len(devices) > 1 and devices[0].platform in ("cpu", "cuda")
