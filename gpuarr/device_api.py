"""Devices and data movement: device_put, device_get, devices, default_backend, block_until_ready;
processes and the environment: process_index, process_count, effects_barrier,
print_environment_info."""
from __future__ import annotations

import logging
import platform
import sys
import warnings

import numpy as np

from gpuarr import core, placement, process_group, pytrees
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import ShapedArray, Tracer
from gpuarr.dispatch import as_array as _as_array  # noqa: F401
from gpuarr.earray import EArray
from gpuarr.version import __version__

# device_put of a traced value with a Sharding (filled by sharding/sharding_constraint.py)
traced_put = [lambda x, sharding: x]

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------- devices and data


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Put a pytree of arrays on `device`. With a Device the results are committed to it (later
    computations run there); with `device=None` they go, uncommitted, to the default device.
    `device` may also be a Sharding (its one device; the results report that sharding), a
    PartitionSpec on the mesh given to `set_mesh`, or a pytree prefix of `x` of these.
    Host data (NumPy arrays, Python scalars) is copied; an Array already in place is reused."""
    if device is None or hasattr(device, "platform") or isinstance(device, str):
        def put(leaf):
            if isinstance(leaf, Tracer):
                return leaf
            if type(leaf) is EArray:  # an extended dtype's array: its data moves
                return EArray(leaf.aval, put(leaf._data))
            _check_array_value(leaf)
            return placement.put(leaf, device)
        return pytrees.tree_map(put, x)
    from gpuarr.sharding import mesh_context, partition_spec, shardings, tree_shardings
    leaves, treedef = pytrees.tree_flatten(x)
    if isinstance(device, shardings.Sharding):
        targets = [device] * len(leaves)
    else:
        targets = tree_shardings.flatten_axes("device_put device", treedef, device)
    out = []
    for leaf, target in zip(leaves, targets):
        if type(leaf) is EArray:
            out.append(EArray(leaf.aval, device_put(leaf._data, target)))
            continue
        if isinstance(target, partition_spec.PartitionSpec):
            mesh = mesh_context.get_concrete_mesh()
            if mesh.empty:
                raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is "
                                 "passed to device_put")
            target = shardings.NamedSharding(mesh, target)
        if target is not None and not isinstance(target, shardings.Sharding) \
                and not hasattr(target, "platform"):
            raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                             "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these "
                             f"values. Received invalid value: {target}")
        if isinstance(target, shardings.Sharding):
            aval = leaf.aval if isinstance(leaf, Tracer) else _abstractify(leaf)
            tree_shardings.check_aval_sharding((target,), (aval,), ("",), "device_put args")
            if isinstance(leaf, Tracer):  # over Explicit axes of several devices: re-laid out
                out.append(traced_put[0](leaf, target))
            else:
                out.append(tree_shardings.with_sharding(leaf, target))
        elif isinstance(leaf, Tracer):
            out.append(leaf)
        else:
            _check_array_value(leaf)
            out.append(placement.put(leaf, target))
    return pytrees.tree_unflatten(treedef, out)


def _abstractify(x) -> ShapedArray:
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type") from None


def _check_array_value(x) -> None:
    """JAX's TypeError for a leaf that is no array value (a type, a string, an object array):
    libraries probe with device_put (chex's with_device variant keeps what it refuses)."""
    if type(x) is Array:
        return
    kind = getattr(_abstractify(x).dtype, "kind", "")
    if kind in ("O", "U", "S", "V", "M", "m"):
        raise TypeError(f"Dtype {np.dtype(x.dtype)} is not a valid JAX array type. Only arrays "
                        "of numeric types are supported by JAX.")


def device_get(x):
    """A pytree of NumPy arrays (copied to host) from a pytree of Arrays; other leaves pass
    through. Each leaf waits only for its own buffer."""
    return pytrees.tree_map(placement.get, x)


def block_until_ready(x):
    """Wait for every Array in the pytree `x`; returns `x`."""
    for leaf in pytrees.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def devices(backend: str | None = None):
    """The devices of `backend` ('cpu', 'gpu'/'cuda', 'opencl'; default: the default platform),
    e.g. `[CudaDevice(id=0)]` or `[CpuDevice(id=0)]`."""
    from gpuarr import platforms
    plat = platforms.get_platform(backend) if backend else platforms.default_platform()
    return list(plat.devices())


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices of process `process_index` (default: this process) on `backend`."""
    if host_id is not None:
        warnings.warn("The argument to jax.local_devices has been renamed from `host_id` to "
                      "`process_index`. This alias will eventually be removed; please update "
                      "your code.", stacklevel=2)
        process_index = host_id
    from gpuarr import platforms
    plat = platforms.get_platform(backend) if backend else platforms.default_platform()
    if process_index is None:
        return list(plat.local_devices())
    if not 0 <= process_index < process_count():
        raise ValueError(f"Unknown process_index {process_index}: there are "
                         f"{process_count()} processes.")
    return [d for d in plat.devices() if d.process_index == process_index]


def device_count(backend=None) -> int:
    """How many devices `backend` (default: the default platform) has, over all processes."""
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    """How many devices this process can use."""
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """The name of the default platform: 'gpu' for cuda (as JAX), 'opencl' or 'cpu'."""
    from gpuarr import platforms
    name = platforms.default_platform().name
    return "gpu" if name == "cuda" else name


default_device = placement.default_device



def typeof(x) -> ShapedArray:
    return core.get_aval(x)


# ---------------------------------------------------------------- processes and environment


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Join the processes of a computation (JAX's `jax.distributed.initialize`), before any
    computation runs. The processes are started by an MPI launcher (`mpiexec -n 4 python
    prog.py`, `srun`) and numbered by MPI rank; `cluster_detection_method="mpi4py"` or no
    arguments take everything from it, and `num_processes`/`process_id` given are checked
    against it (`coordinator_address` is accepted for compatibility; MPI does the
    rendezvous). `local_device_ids` sets how many cpu devices this process contributes
    (default: `jax_num_cpu_devices`). Afterwards `devices()` lists every process's devices,
    `local_devices()` this one's, and collectives over a mesh that spans processes go over MPI.
    A collective that another process does not join within `heartbeat_timeout_seconds`
    raises `ProcessFailureError`. Raises RuntimeError when called twice or after a
    computation has run, ImportError naming the `distributed` extra without mpi4py."""
    from gpuarr import platforms
    process_group.initialize(
        coordinator_address, num_processes, process_id, local_device_ids,
        cluster_detection_method, initialization_timeout, heartbeat_timeout_seconds,
        shutdown_timeout_seconds, coordinator_bind_address, slice_index, partition_index,
        platforms_started="cpu" in platforms._loaded)
    platforms._loaded.pop("cpu", None)  # restarted with every process's devices
    platforms._default.clear()


def shutdown() -> None:
    """Leave the group of processes joined by `initialize` (JAX's
    `jax.distributed.shutdown`); waits for the others, then does nothing more."""
    process_group.shutdown()


def is_initialized() -> bool:
    """Whether `initialize` has joined this process to others."""
    return process_group.is_initialized()



def process_index(backend=None) -> int:
    """The index of this process among those running the computation (0 unless several
    processes were joined by `distributed.initialize`)."""
    return process_group.state.process_index


def process_count(backend=None) -> int:
    """The number of processes running the computation (1 unless several processes were
    joined by `distributed.initialize`)."""
    return process_group.state.process_count


def process_indices(backend=None) -> list[int]:
    """The indices of all processes running the computation."""
    return list(range(process_count(backend)))


def host_ids(backend=None) -> list[int]:
    """The former name of `process_indices` (JAX's warning text, typo included)."""
    warnings.warn("jax.process_indexs has been renamed to jax.process_indices. This alias "
                  "will eventually be removed; please update your code.", stacklevel=2)
    return process_indices(backend)


def effects_barrier() -> None:
    """Wait until the side effects of computations already started have completed.

    gpuarr runs callbacks and debug prints synchronously, in program order, while the
    computation that contains them runs, so there is never a pending effect to wait for:
    this returns None at once."""
    return None


def host_id(backend=None) -> int:
    """The former name of `process_index`."""
    warnings.warn("jax.host_id has been renamed to jax.process_index. This alias will "
                  "eventually be removed; please update your code.", stacklevel=2)
    return process_index(backend)


def host_count(backend=None) -> int:
    """The former name of `process_count`."""
    warnings.warn("jax.host_count has been renamed to jax.process_count. This alias will "
                  "eventually be removed; please update your code.", stacklevel=2)
    return process_count(backend)


def print_environment_info(return_string: bool = False) -> str | None:
    """Print (or, with `return_string=True`, return) the versions of gpuarr, NumPy and Python,
    the devices, the process count and the platform, for bug reports."""
    devs = devices()
    kinds = ", ".join(sorted({f"{getattr(d, 'platform', 'cpu')}-{len(devs)}" for d in devs}))
    info = "\n".join([
        f"gpuarr: {__version__}",
        f"numpy:  {np.__version__}",
        f"python: {sys.version}",
        f"device info: {kinds}, {len(devs)} local devices",
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
    ]) + "\n"
    if return_string:
        return info
    print(info)
    return None
