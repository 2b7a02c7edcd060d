"""Array: an immutable buffer on a device with an abstract value (shape, dtype, weak type).

Arithmetic operators and methods (`x + y`, `x.sum()`) are installed by gpuarr.numpy,
which knows JAX's promotion rules; this module only holds data and conversions.
"""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.core import ShapedArray, Tracer
from gpuarr.process_group import state

# Classes whose instances are also `Array`s to isinstance, as in JAX: tracers (a traced value
# is a jax.Array) and key arrays (registered by gpuarr.prng). Code that needs a concrete
# buffer tests `type(x) is Array`.
_virtual_subclasses: list = [Tracer]


class _ArrayMeta(type):
    def __instancecheck__(cls, instance):
        return type.__instancecheck__(cls, instance) or (
            cls is Array and isinstance(instance, tuple(_virtual_subclasses)))


def register_virtual_subclass(cls: type) -> None:
    """Make instances of `cls` count as Arrays for isinstance (`jax.Array`)."""
    _virtual_subclasses.append(cls)


class Array(metaclass=_ArrayMeta):
    """A gpuarr array (JAX's `jax.Array`): immutable, on one device, possibly weakly typed.
    `isinstance(x, Array)` is also true for tracers and key arrays, as in JAX."""

    # `_sharding` (a Sharding given by device_put, jit's out_shardings, reshard, shard_map) is
    # left unset by __init__ so that making an Array costs nothing more; unset means the
    # default SingleDeviceSharding of `device`. So is `_python_float`: the Python float a weak
    # scalar of the default float type was made from, which its jaxpr literal prints.
    __slots__ = ("_value", "weak_type", "_device", "_committed", "_deleted", "_aval",
                 "_platform", "_sharding", "_python_float", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value, weak_type: bool = False, device=None, committed: bool = False,
                 platform=None):
        self._value = value
        self.weak_type = weak_type
        self._device = device
        self._committed = committed
        self._deleted = False
        self._aval = None
        self._platform = platform

    # --- abstract value -------------------------------------------------------------
    @property
    def aval(self) -> ShapedArray:
        aval = self._aval
        if aval is None:
            v = self._stored
            aval = self._aval = ShapedArray(v.shape, v.dtype, self.weak_type)
        return aval

    @property
    def _buffer(self):
        v = self._stored
        return v.assemble() if type(v) is DeviceShards else v

    @property
    def _stored(self):
        """The value as held: for an Array split over several GPUs, their pieces
        (DeviceShards), which `_buffer` puts together for an operation."""
        if self._deleted:
            raise RuntimeError("Array has been deleted (it was donated to a jitted function or "
                               "deleted with .delete()); use the function's output instead.")
        return self._value

    def _keep_python_float(self, value) -> Array:
        """Remember `value` if this weak scalar of the default float type was made from that
        Python float: its jaxpr literal prints it, as JAX's does (0.1, not 0.10000000149...)."""
        if type(value) is float and self.dtype == dtypes.canonicalize_dtype(np.float64):
            self._python_float = value
        return self

    shape = property(lambda self: tuple(self._stored.shape))
    dtype = property(lambda self: np.dtype(self._stored.dtype))
    ndim = property(lambda self: len(self._stored.shape))
    size = property(lambda self: int(np.prod(self._stored.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    itemsize = property(lambda self: self.dtype.itemsize)

    # --- host conversion ------------------------------------------------------------
    def _host(self) -> np.ndarray:
        buf = self._stored
        if type(buf) is DeviceShards:
            return buf.to_host()
        if self._platform is not None:
            buf = self._platform.to_host(buf)
        return np.asarray(buf)

    def __array__(self, dtype=None, copy=None):
        out = self._host()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        if copy:
            return out.copy()
        if out.flags.writeable and out.ndim:
            out = out.view()
            out.flags.writeable = False
        return out

    def item(self, *args):
        return self._host().item(*args)

    def tolist(self):
        return self._host().tolist()

    def __bool__(self):
        return bool(self._host())

    def __int__(self):
        return int(self._scalar_host())

    def __float__(self):
        return float(self._scalar_host())

    def __complex__(self):
        return complex(self._scalar_host())

    def _scalar_host(self):
        if self.shape:  # JAX refuses one-element arrays too, unlike NumPy
            raise TypeError(f"Only scalar arrays can be converted to Python scalars; got "
                            f"arr.ndim={len(self.shape)}")
        return self._host()

    def __index__(self):
        # As JAX: only 0-d integer arrays (not booleans, not one-element arrays) are indices.
        if self.shape != () or not dtypes.is_int(self.dtype):
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return int(self._host())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'. Arrays can't be dict keys or static arguments; "
                        "use a tuple of Python numbers, or x.item() for a scalar.")

    def __setitem__(self, idx, value):
        raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                        "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

    def __reduce__(self):
        return (_reconstruct, (self._host(), self.weak_type))

    # --- devices and lifetime ---------------------------------------------------------
    def block_until_ready(self) -> Array:
        """Wait until the value has been computed, then return self."""
        buf = self._stored
        if self._platform is not None:
            for b in buf.shards.values() if type(buf) is DeviceShards else (buf,):
                self._platform.block_until_ready(b)
        return self

    def devices(self) -> set:
        """The devices of the array's sharding."""
        s = getattr(self, "_sharding", None) or getattr(self._value, "sharding", None)
        return {self.device} if s is None else set(s.device_set)

    @property
    def device(self):
        """The Device holding this array (`CpuDevice(id=0)`, `CudaDevice(id=0)`, ...)."""
        if self._device is None:
            plat = self._platform
            v = self._stored
            if type(v) is DeviceShards:
                self._device = v.first_device()
            elif plat is not None:
                self._device = plat.device_of(v)
            else:
                from gpuarr import platforms
                self._device = platforms.default_platform().local_devices()[0]
        return self._device

    @property
    def committed(self) -> bool:
        return self._committed

    @property
    def sharding(self):
        """How the array is placed: the Sharding it was put with (`device_put(x, sharding)`,
        jit's `out_shardings`, `reshard`, `shard_map`), else `SingleDeviceSharding(device)`."""
        s = getattr(self, "_sharding", None) or getattr(self._value, "sharding", None)
        if s is None:
            from gpuarr.sharding.shardings import default_sharding
            return default_sharding(self.device)
        return s

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device of the sharding holds the whole array (always, on one device)."""
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process addresses every device of the sharding (not when the array
        spans the devices of several processes)."""
        return self.sharding.is_fully_addressable

    @property
    def addressable_shards(self) -> list:
        """The pieces of the array on the devices this process addresses, in the sharding's
        device order: each Shard names its device, its index into the array, which copy of
        that piece it is (`replica_id`) and its data, an Array committed to that device."""
        s = self.sharding
        if s.num_devices == 1:
            device = self.device
            index = s.devices_indices_map(self.shape).get(device, (slice(None),) * self.ndim)
            return [Shard(device, index, 0, self)]
        copies: dict = {}
        out = []
        for device, index in s.devices_indices_map(self.shape).items():
            key = tuple((i.start, i.stop) for i in index)
            replica = copies[key] = copies.get(key, -1) + 1
            if device.process_index == state.process_index:
                out.append(Shard(device, index, replica, self._shard_data(device, index)))
        return out

    global_shards = addressable_shards

    def _shard_data(self, device, index) -> Array:
        buf = self._stored
        if type(buf) is DeviceShards:  # split over GPUs: the piece where it is
            return Array(buf.shards[device], self.weak_type, device=device, committed=True,
                         platform=self._platform)
        local = getattr(buf, "shards", None)  # a global array spanning processes
        piece = local[device] if local is not None else np.array(self._host()[index])
        return Array(piece, self.weak_type, device=device, committed=True)

    def addressable_data(self, index: int) -> Array:
        """The data of addressable shard `index` (the array itself: it has one shard)."""
        return self.addressable_shards[index].data

    def delete(self) -> None:
        self._deleted = True
        self._value = None

    def is_deleted(self) -> bool:
        return self._deleted

    def copy_to_host_async(self) -> None:
        """Start copying the value to host memory; the copy is made when the value is read
        (`np.asarray(x)`), so this returns None without waiting."""
        return None

    # --- interchange (CUDA array interface, DLPack) -----------------------------------
    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA array interface v3 (pointer, shape, typestr, stream) of an array on a GPU."""
        plat = self._platform
        if plat is None or not getattr(plat, "device_buffers", False):
            raise AttributeError("__cuda_array_interface__ is only defined for arrays on a CUDA "
                                 f"device; this array is on {self.device!r}.")
        if type(self._stored) is DeviceShards:
            raise AttributeError("__cuda_array_interface__ is only defined for an array on one "
                                 f"device; this one is split over {len(self._stored.shards)} "
                                 "GPUs: use its pieces, x.addressable_shards[i].data.")
        return plat.cuda_array_interface(self._buffer)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the buffer through DLPack without copying (host arrays: NumPy's exporter)."""
        buf = self._buffer
        if self._platform is not None and not getattr(self._platform, "device_buffers", False):
            buf = np.asarray(self._platform.to_host(buf))
        kwargs = {"stream": stream} if stream is not None else {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        if not hasattr(buf, "__dlpack__"):
            buf = np.asarray(buf)
        if isinstance(buf, np.ndarray) and not buf.flags.writeable and copy is not False \
                and (max_version is None or tuple(max_version) < (1, 0)):
            # DLPack before 1.0 cannot mark a tensor read-only, so NumPy refuses to export
            # gpuarr's immutable host buffers that way; a copy keeps them immutable.
            buf = buf.copy()
        return buf.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        """(device type, device id): (1, 0) for host memory, (2, n) for CUDA device n."""
        buf = self._buffer
        if not hasattr(buf, "__dlpack_device__"):
            buf = np.asarray(buf)
        return tuple(buf.__dlpack_device__())

    # --- printing ---------------------------------------------------------------------
    def __repr__(self):
        if self._deleted:
            return "Array(<deleted>)"
        dt = self.dtype
        extra = f", dtype={dt.name}" + (", weak_type=True" if self.weak_type else "")
        if getattr(self._value, "shards", None) is not None and not (
                self.is_fully_addressable or self.is_fully_replicated):
            return f"Array(shape={self.shape}{extra})"  # JAX's, for other processes' pieces
        value = self._host()
        body = np.array2string(value, separator=", ", prefix="Array(", suffix=extra + ")",
                               threshold=1000)
        if value.size == 0:
            body = f"[], shape={value.shape}"  # JAX names the shape of every empty array
        return f"Array({body}{extra})"

    def __str__(self):
        return str(self._host())

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._host().item(), spec)
        return format(str(self), spec)


class Shard:
    """One piece of an Array: the device holding it, its index into the array, which copy it
    is (`replica_id`) and its `data`."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


def _reconstruct(value, weak_type):
    return Array(value, weak_type)


def live_arrays(platform=None) -> list:
    """The Arrays not deleted and not freed that are on a device of `platform` ('cpu',
    'gpu'/'cuda', 'opencl'; default: the default platform), in no particular order. Arrays are
    found through the garbage collector's list of objects when this is called, so making an
    Array costs nothing extra."""
    import gc

    from gpuarr import platforms
    plat = platforms.get_platform(platform) if platform else platforms.default_platform()
    devices = set(plat.devices())
    return [x for x in gc.get_objects()
            if type(x) is Array and not x._deleted and x.device in devices]


def copy_to_host_async(x):
    """Call `copy_to_host_async()` on every leaf of the pytree `x` that has one; returns `x`."""
    from gpuarr import pytrees
    for leaf in pytrees.tree_leaves(x):
        copy = getattr(leaf, "copy_to_host_async", None)
        if copy is not None:
            copy()
    return x
