"""Placement: which device an Array lives on and where a computation runs (SPEC S21).

As in JAX: new arrays are *uncommitted* on the default device (`devices()[0]`, or the device of
an enclosing `default_device(...)` block); `device_put(x, d)` *commits* `x` to `d`. A computation
runs where its committed inputs are (its results are committed there too), and inputs committed
to two different devices raise `ValueError` naming both. Uncommitted inputs follow.

The eager hot path only calls into this module when an input is committed.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from gpuarr.array import Array

_local = threading.local()
active = [0]  # open default_device blocks in any thread: the eager path looks only if non-zero


# ---- the default device ----------------------------------------------------------------------

def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def default_device(new_val):
    """Context manager: new (uncommitted) arrays and computations without committed inputs go
    to the device `new_val` inside the block (JAX's `jax.default_device`): a Device, or a
    platform name ('cpu', 'cuda', 'opencl') for that platform's first device. `None` means the
    default platform's first device."""
    device = new_val
    if isinstance(device, str):
        from gpuarr.device_api import devices
        device = devices(device)[0]
    elif device is not None and not hasattr(device, "platform"):
        raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                         "`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or "
                         f"'gpu', got: {new_val!r}")
    stack = _stack()
    stack.append(device)
    active[0] += 1
    try:
        yield device
    finally:
        active[0] -= 1
        stack.pop()


def current_default_device():
    """The device of the innermost `default_device` block, or None outside one."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def platform_of(device):
    """The Platform object that owns `device` (loading it on first use)."""
    from gpuarr import platforms
    return platforms.get_platform(device.platform)


# ---- committed inputs --------------------------------------------------------------------------

def describe(x, name: str | None = None) -> str:
    """How an argument is named in placement errors: `argument x of f with shape float32[3]`."""
    aval = x.aval
    shape = ",".join(map(str, aval.shape))
    what = f"argument {name!r}" if name else "an argument"
    return f"{what} with shape {aval.dtype.name}[{shape}] committed to {x._device!r}"


def incompatible_devices(fun_name: str, first, second, first_name=None, second_name=None):
    """The ValueError for inputs committed to two different devices, naming both devices."""
    return ValueError(
        f"Received incompatible devices for computation {fun_name}. Got "
        f"{describe(first, first_name)} (platform {first._device.platform}) and "
        f"{describe(second, second_name)} (platform {second._device.platform}). Move them to one "
        f"device with gpuarr.device_put(x, {first._device!r}) before combining them.")


def committed_device(arrays, fun_name: str, names=None):
    """The device that the committed Arrays among `arrays` share, or None when none is committed.
    Raises ValueError naming both devices (and, from `names()`, both arguments) on a conflict."""
    first = None
    for i, x in enumerate(arrays):
        if type(x) is not Array or not x._committed:
            continue
        if first is None:
            first, first_index = x, i
        elif x._device != first._device:
            labels = (names() if names else None) or [None] * len(arrays)
            raise incompatible_devices(fun_name, first, x, labels[first_index] or None,
                                       labels[i] or None)
    return None if first is None else first._device


def target_device():
    """Where a computation without committed inputs runs: the default_device block's device,
    else the default platform's first device."""
    device = current_default_device()
    if device is not None:
        return device
    from gpuarr import platforms
    return platforms.default_platform().local_devices()[0]


def buffer_for(x, platform):
    """The buffer of Array (or raw value) `x` as `platform` needs it, transferring if needed."""
    if type(x) is not Array:
        return x
    if x._platform is platform or (x._platform is None and platform.name == "cpu"):
        return x._buffer
    return platform.from_host(x._host(), platform.local_devices()[0])


def eager_inputs(prim_name: str, args, vals):
    """For an eager operation with a committed input or inside a `default_device` block:
    (device, platform or None for host NumPy buffers, buffers moved to that platform), or None
    when neither applies. Raises ValueError on two committed devices."""
    device = committed_device(args, prim_name) or current_default_device()
    if device is None:
        return None
    plat = platform_of(device)
    moved = [buffer_for(a, plat) if type(a) is Array else v for a, v in zip(args, vals)]
    return device, (None if plat.name == "cpu" else plat), moved


def commit(results, device, committed=True):
    """Place output Arrays on `device` (committed unless `committed=False`); returns them."""
    for r in results:
        if type(r) is Array:
            r._device = device
            r._committed = committed
    return results


# ---- device_put and device_get -------------------------------------------------------------

def put(x, device=None):
    """One leaf of `device_put`: to `device` (committed) or the default device (uncommitted)."""
    from gpuarr.dispatch import to_device_array
    if type(x) is not Array:
        if device is None:
            return to_device_array(x)
        if hasattr(device, "platform"):  # host data goes straight there, not through the default
            stack = _stack()
            stack.append(device)
            try:
                x = to_device_array(x)
            finally:
                stack.pop()
        else:
            x = to_device_array(x)
    if device is None:
        return x if not x._committed else Array(x._buffer, x.weak_type, platform=x._platform)
    if not hasattr(device, "platform"):
        raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                         "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these "
                         f"values. Received invalid value: {device}")
    plat = platform_of(device)
    buf = x._buffer
    if plat.name == "cpu":
        if x._platform is not None:
            buf = np.asarray(x._platform.to_host(buf))
        return Array(buf, x.weak_type, device=device, committed=True)
    if x._platform is not plat or getattr(x._device, "id", 0) != device.id:
        buf = plat.from_host(x._host() if x._platform is not plat else buf, device)
    return Array(buf, x.weak_type, device=device, committed=True, platform=plat)


def get(x):
    """One leaf of `device_get`: a host NumPy array (synchronising only this buffer)."""
    if type(x) is Array:
        return x._host()
    return x
