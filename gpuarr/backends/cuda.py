"""CUDA executor: NVRTC-compiled kernels launched asynchronously on CuPy streams.

Like the OpenCL backend it takes source text and launch plans (gpuarr.compiler.plan.LaunchPlan),
never the IR, and imports nothing from gpuarr.core or gpuarr.lax. Per device it keeps one
non-blocking stream, a CuPy memory pool (preallocated as GPUARR_MEM_FRACTION /
XLA_PYTHON_CLIENT_MEM_FRACTION says) and the loaded kernel modules. A launch never
synchronises: each output is a `DeviceBuffer` carrying the event recorded after the launch that
wrote it, and `synchronize(buffer)` / `to_host(buffer)` wait for that event only.

The helpers at the top (architecture selection, launch configuration, memory settings, the
out-of-memory message) need no GPU and no CuPy, so they are tested everywhere.
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from gpuarr.backends import cuda_library, device_group, float_env, nccl, nvrtc
from gpuarr.errors import JaxRuntimeError

PIP_HINT = ('pip install "gpuarr[cuda12]" (CUDA 12: cupy-cuda12x, nvidia-cuda-nvrtc-cu12) or '
            'pip install "gpuarr[cuda13]" (CUDA 13: cupy-cuda13x, nvidia-cuda-nvrtc)')
MAX_GRID = 2**31 - 1
ALLOCATION_UNIT = 512  # CuPy's pool rounds every allocation up to this (memory.pyx)
VECTOR_ALIGNMENT = 16  # the widest load a kernel makes (LOAD4 of 32-bit values)
# CuPy appends -ftz=true to every RawModule's options (cupy/cuda/compiler.py,
# _compile_with_cache_cuda), and NVRTC keeps the last setting: float32 subnormals are flushed
# on the cuda platform (SPEC S17 allows it; docs/cuda-standin.md says so), so gpuarr's own
# --ftz=false is not passed where it would be overridden.
RAWMODULE_OPTIONS = tuple(o for o in nvrtc.DEFAULT_OPTIONS if not o.startswith("--ftz"))
# Kernel sources kept loaded per device beyond those a live plan holds: the modules of plans
# still in use stay loaded through their prepared launches however many there are.
LOADED_MODULES = 1024


class CudaNotFoundError(RuntimeError):
    """CuPy, the CUDA driver or a CUDA device is missing."""


class DeviceOutOfMemoryError(JaxRuntimeError):
    """A device allocation failed (JAX raises XlaRuntimeError RESOURCE_EXHAUSTED here)."""


# ---- device-independent helpers ----------------------------------------------------------------

def arch_for(compute_capability, supported=None) -> tuple:
    """(arch, target) to compile for a device of `compute_capability` ('90', (9, 0) or 90).

    A cubin for the exact `sm_XY` when this NVRTC knows the architecture; otherwise PTX for the
    newest virtual architecture it knows (the driver compiles PTX for newer GPUs)."""
    if isinstance(compute_capability, (tuple, list)):
        cc = int(compute_capability[0]) * 10 + int(compute_capability[1])
    else:
        cc = int(str(compute_capability).replace("sm_", "").replace(".", ""))
    if supported is None or cc in supported:
        return f"sm_{cc}", "cubin"
    older = [a for a in supported if a <= cc]
    if not older:
        raise CudaNotFoundError(f"NVRTC supports no architecture up to sm_{cc} "
                                f"(it supports {sorted(supported)}); upgrade it: {PIP_HINT}")
    return f"sm_{max(older)}", "ptx"


def supported_archs() -> list:
    """The real architectures (as ints, 90 for sm_90) that the loaded NVRTC can compile for."""
    import ctypes
    lib = nvrtc.library()
    count = ctypes.c_int()
    if lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)) != 0:
        return []
    archs = (ctypes.c_int * count.value)()
    lib.nvrtcGetSupportedArchs(archs)
    return list(archs)


def launch_config(global_size: int, local_size: int) -> tuple:
    """((grid,), (block,)) for a 1-D launch of `global_size` threads in blocks of `local_size`
    (the OpenCL global/local sizes of the LaunchPlan; kernels use grid-stride loops)."""
    if local_size <= 0 or local_size > 1024:
        raise ValueError(f"block size must be in 1..1024, got {local_size}")
    grid = max(1, -(-int(global_size) // int(local_size)))
    return (min(grid, MAX_GRID),), (int(local_size),)


@dataclass(frozen=True)
class MemorySettings:
    """How the device memory pool is set up (SPEC S24)."""

    preallocate: bool = True
    fraction: float = 0.75


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def memory_settings(environ=None) -> MemorySettings:
    """Read GPUARR_PREALLOCATE / XLA_PYTHON_CLIENT_PREALLOCATE and GPUARR_MEM_FRACTION /
    XLA_PYTHON_CLIENT_MEM_FRACTION (gpuarr's names win); ValueError names a bad value."""
    env = os.environ if environ is None else environ
    preallocate = True
    for var in ("GPUARR_PREALLOCATE", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        value = raw.strip().lower()
        if value not in _TRUE + _FALSE:
            raise ValueError(f"{var}={raw!r}: expected true or false")
        preallocate = value in _TRUE
        break
    fraction = 0.75
    for var in ("GPUARR_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        try:
            fraction = float(raw)
        except ValueError:
            raise ValueError(f"{var}={raw!r}: expected a number between 0 and 1") from None
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"{var}={raw!r}: expected a number between 0 and 1")
        break
    return MemorySettings(preallocate, fraction)


def out_of_memory_message(requested: int, used: int, limit: int, total: int,
                          free: int | None = None) -> str:
    """The message of DeviceOutOfMemoryError: the sizes involved and what to change."""
    free_text = "" if free is None else f"; the device has {free} bytes free"
    return (f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {requested} bytes "
            f"({requested / 2**20:.1f} MiB). The memory pool holds {used} bytes in use and may "
            f"grow to {limit} bytes of the device's {total}{free_text}. Use a smaller batch or "
            "smaller arrays, free arrays you no longer need (del x, or donate_argnums), raise "
            "GPUARR_MEM_FRACTION / XLA_PYTHON_CLIENT_MEM_FRACTION (default 0.75), or set "
            "GPUARR_PREALLOCATE=false / XLA_PYTHON_CLIENT_PREALLOCATE=false to allocate on demand.")


# ---- CuPy and the devices -------------------------------------------------------------------

def cupy():
    """The cupy module; CudaNotFoundError (naming the pip extra) when it is not installed."""
    try:
        import cupy as cp
    except ImportError as e:
        raise CudaNotFoundError(f"the cuda platform needs CuPy: {PIP_HINT}") from e
    return cp


def device_count() -> int:
    """How many CUDA devices CuPy sees; CudaNotFoundError when there is no driver or device."""
    cp = cupy()
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError without a driver, ImportError, ...
        raise CudaNotFoundError(f"no usable CUDA device: {e}") from e
    if n == 0:
        raise CudaNotFoundError("no CUDA device found")
    return n


class PlanKey:
    """An identity for values cached per compiled program (its constants on each device),
    weakly referenceable so that the cache entry goes with the program."""

    __slots__ = ("__weakref__",)


class PerPlan:
    """Values built once per plan (or step, or PlanKey) and dropped when it is collected.

    Keyed by `id(owner)`, as plans are compared by identity, with a finalizer that removes the
    entry: a dict that held its owners would keep every program a process ever ran, with its
    constants' device memory and its loaded kernels, for the life of the process."""

    def __init__(self):
        self._entries: dict = {}

    def get(self, owner, build):
        key = id(owner)
        hit = self._entries.get(key)
        if hit is None:
            hit = self._entries[key] = build()
            weakref.finalize(owner, self._entries.pop, key, None)
        return hit

    def __len__(self) -> int:
        return len(self._entries)


class DeviceBuffer:
    """A CuPy array plus the event recorded after the launch that wrote it."""

    __slots__ = ("data", "event", "context", "__weakref__")

    def __init__(self, data, event, context):
        self.data = data
        self.event = event
        self.context = context

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: np.dtype(self.data.dtype))
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    nbytes = property(lambda self: self.data.nbytes)

    def synchronize(self) -> None:
        if self.event is not None:
            self.event.synchronize()

    def region(self, index) -> DeviceBuffer:
        """A view of the block `index` (basic slices) of this buffer, written by the same launch."""
        return DeviceBuffer(self.data[index], self.event, self.context)

    @property
    def __cuda_array_interface__(self) -> dict:
        cai = dict(self.data.__cuda_array_interface__)
        cai["version"] = 3
        cai["stream"] = self.context.stream.ptr or 1  # consumers order work after this stream
        return cai

    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None and stream != -1 and self.event is not None:
            self.context.cp.cuda.ExternalStream(stream).wait_event(self.event)
        elif self.event is not None:
            self.event.synchronize()
        try:
            return self.data.__dlpack__(**kwargs)
        except TypeError:  # an older CuPy without max_version/dl_device/copy
            return self.data.__dlpack__()

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()


class DeviceContext:
    """One GPU: its stream, copy stream, memory pool and loaded kernels."""

    def __init__(self, index: int, settings: MemorySettings):
        cp = self.cp = cupy()
        self.index = index
        self.device = cp.cuda.Device(index)
        with self.device:
            self.stream = cp.cuda.Stream(non_blocking=True)
            self.copy_stream = cp.cuda.Stream(non_blocking=True)
            # gpuarr's own pool, as XLA has its own allocator: preallocating it leaves the user's
            # CuPy pool (and other streams' arenas) alone. CuPy calls gpuarr makes allocate
            # from it too (`scope`).
            self.pool = cp.cuda.MemoryPool()
            free, total = cp.cuda.runtime.memGetInfo()
            self.total = total
            self.limit = int(total * settings.fraction)
            self.pool.set_limit(size=self.limit)
            if settings.preallocate:  # what the pool holds already counts against the limit
                self._preallocate(min(self.limit - self.pool.total_bytes(), int(free * 0.98)))
        self._modules: OrderedDict = OrderedDict()  # source -> RawModule, oldest first
        self._functions: dict = {}  # (source, name) -> Function, for the modules loaded
        self.launchers = PerPlan()  # plan -> {step index: prepared launch}
        self._constants = PerPlan()  # PlanKey -> the plan's constants on this device
        self._lock = threading.Lock()

    def _preallocate(self, nbytes: int) -> None:
        """Take the pool's memory now, as XLA's BFC allocator does. CuPy keeps free chunks per
        stream (memory.pyx, `_arena`) and rounds requests up to 512 bytes: the block is taken on
        this context's stream, whose allocations then split it, and rounded down so that the
        rounding cannot pass the limit."""
        nbytes -= nbytes % ALLOCATION_UNIT
        if nbytes <= 0:
            return
        with self.stream:
            block = self.pool.malloc(nbytes)
            del block  # back to this stream's free list, still held by the pool

    # memory
    @contextlib.contextmanager
    def scope(self, stream: bool = True):
        """This device current, its pool allocating, and (by default) its stream current."""
        with self.device, self.cp.cuda.using_allocator(self.pool.malloc):
            if stream:
                with self.stream:
                    yield
            else:
                yield

    def empty(self, shape, dtype):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        with self.out_of_memory(nbytes), self.scope():
            return self.cp.empty(shape, dtype)

    @contextlib.contextmanager
    def out_of_memory(self, nbytes=None):
        """Turns CuPy's OutOfMemoryError, from an allocation here or inside a CuPy call, into
        DeviceOutOfMemoryError naming the sizes and what to change."""
        try:
            yield
        except self.cp.cuda.memory.OutOfMemoryError as e:
            if nbytes is None:  # CuPy's message starts "Out of memory allocating N bytes"
                words = str(e).replace(",", "").split()
                nbytes = next((int(w) for w in words if w.isdigit()), 0)
            with self.device:
                used = self.pool.used_bytes()
                free = self.cp.cuda.runtime.memGetInfo()[0]
            raise DeviceOutOfMemoryError(
                out_of_memory_message(nbytes, used, self.limit, self.total, free)) from None

    def upload(self, value) -> object:
        """A device copy of host `value` (asynchronous on the stream); 0-d values stay 0-d."""
        host = np.asarray(value)
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        out = self.empty(host.shape, host.dtype)
        if host.nbytes:
            with self.device:
                out.set(host, stream=self.stream)
        return out

    def as_device(self, value):
        """`value` as a CuPy array on this device that kernels can read: DeviceBuffers of this
        device pass through; others, CuPy arrays that are strided, offset from an aligned
        address or on another GPU, and host values are copied (see `kernel_ready`)."""
        if isinstance(value, DeviceBuffer):
            if value.context is self:
                return value.data  # same stream: ordered after its producer already
            value.synchronize()
            value = value.data
        if isinstance(value, self.cp.ndarray):
            return self.kernel_ready(value)
        return self.upload(value)

    def kernel_ready(self, data):
        """`data` itself when it is C-contiguous, on this device and aligned for the kernels'
        16-byte vector loads; else a copy into fresh pool memory (512-byte aligned). Kernels
        index every buffer as dense row-major memory: a strided view read raw gives wrong
        values, and a misaligned one faults on a GPU."""
        if (data.flags.c_contiguous and data.device.id == self.index
                and data.data.ptr % VECTOR_ALIGNMENT == 0):
            return data
        out = self.empty(data.shape, data.dtype)
        with self.scope():
            if data.device.id != self.index:
                data = self.cp.array(data, copy=True)  # peer copy to this GPU
            self.cp.copyto(out, data)
        return out

    def record(self):
        event = self.cp.cuda.Event(disable_timing=True)
        event.record(self.stream)
        return event

    def buffer(self, data, done) -> DeviceBuffer:
        """`data` (a CuPy array of this device) as a buffer, ready once `done` has fired."""
        return DeviceBuffer(data, done, self)

    def download(self, data) -> np.ndarray:
        """Copy a CuPy array of this device to the host after all work queued on the stream."""
        with self.device:
            return data.get(stream=self.stream)

    def to_host(self, buf: DeviceBuffer) -> np.ndarray:
        """Copy one buffer to the host, waiting only for the launch that wrote it."""
        with self.device:
            if buf.event is not None:
                self.copy_stream.wait_event(buf.event)
            return buf.data.get(stream=self.copy_stream)

    # kernels
    def function(self, source: str, name: str):
        """Kernel `name` of `source`, compiled by CuPy's RawModule (NVRTC for this device's
        architecture, cached on disk by CuPy) and loaded once per device. The modules loaded
        longest ago beyond LOADED_MODULES are let go (CuPy unloads a module with its last
        reference), so a process that compiles many programs does not fill the device."""
        key = (source, name)
        fn = self._functions.get(key)
        if fn is None:
            with self._lock, self.device:
                module = self._modules.get(source)
                if module is None:
                    module = self._modules[source] = self.cp.RawModule(
                        code=source, options=RAWMODULE_OPTIONS)
                    while len(self._modules) > LOADED_MODULES:
                        gone, _ = self._modules.popitem(last=False)
                        for k in [k for k in self._functions if k[0] == gone]:
                            del self._functions[k]
                fn = self._functions[key] = module.get_function(name)
        return fn

    def launch(self, source: str, name: str, global_size: int, local_size: int, args) -> None:
        self.prepare(source, name, global_size, local_size)(tuple(args))

    def prepare(self, source: str, name: str, global_size: int, local_size: int):
        """`go(args)` launching one kernel: loaded and configured once per plan step, so a
        cached call costs one driver launch per kernel and no lookups."""
        grid, block = launch_config(global_size, local_size)
        fn, stream = self.function(source, name), self.stream
        return lambda args: fn(grid, block, args, stream=stream)

    def constants(self, key: PlanKey, values) -> list:
        """Device copies of a plan's constants (host values or DeviceBuffers), made once per
        plan and freed with it."""
        return self._constants.get(key, lambda: [self.as_device(v) for v in values])


# ---- running a launch plan ----------------------------------------------------------------------

def run_plan(ctx: DeviceContext, plan, inputs, aliases, plan_key: PlanKey) -> list:
    """Run a LaunchPlan on `ctx`'s stream; returns one DeviceBuffer per output, without waiting.

    `inputs` may be DeviceBuffers, CuPy arrays or host values. `aliases` maps an output buffer
    name to the index of a donated input whose memory it may use (checked safe by the caller).
    Control flow and library steps stay on the device (see `_host_step`).
    """
    with ctx.out_of_memory(), ctx.scope(stream=False):
        return _run_plan(ctx, plan, inputs, aliases, plan_key)


def _run_plan(ctx, plan, inputs, aliases, plan_key) -> list:
    cp = ctx.cp
    info = _buffer_info(plan)
    device: dict = {}
    for name, value in zip(plan.inputs, inputs):
        device[name] = ctx.as_device(value)
    consts = ctx.constants(plan_key, [v for _, v in plan.constants])
    for (name, _), value in zip(plan.constants, consts):
        device[name] = value
    donated = {out: device[plan.inputs[i]] for out, i in (aliases or {}).items()}

    def buffer(name):
        if name not in device:
            shape, dtype = info[name]
            alias = donated.get(name)
            device[name] = alias.reshape(shape) if alias is not None else ctx.empty(shape, dtype)
        return device[name]

    launchers = _launchers(ctx, plan)
    for i, step in enumerate(plan.steps):
        if step.kind == "launch":
            launchers[i](tuple([buffer(a) for a in step.args]))
        elif step.kind == "copy":
            src = buffer(step.src)
            if step.dst in donated:  # the copy a scatter updates is the donated input itself
                device[step.dst] = buffer(step.dst)
                continue
            dst = ctx.empty(src.shape, src.dtype)
            with ctx.scope():
                cp.copyto(dst, src)
            device[step.dst] = dst
        else:
            results = _host_step(ctx, step, [buffer(a) for a in step.inputs])
            for name, value in zip(step.outputs, results):
                shape, dtype = info[name]
                with ctx.scope():
                    value = value.astype(dtype, copy=False).reshape(shape)
                device[name] = ctx.kernel_ready(value)
    for name in set(plan.outputs) & _passed_through(plan):
        # An output that is an input or a constant gets its own memory: donating it later
        # must not overwrite an array that is still alive, nor the plan's cached constants.
        with ctx.stream:
            device[name] = device[name].copy()
    event = ctx.record()
    return [DeviceBuffer(device[name], event, ctx) for name in plan.outputs]


def _passed_through(plan) -> set:
    return set(plan.inputs) | {name for name, _ in plan.constants}


_infos = PerPlan()  # plan -> {buffer: (shape, dtype)}: computed once per plan


def _buffer_info(plan) -> dict:
    return _infos.get(plan, lambda: {name: (tuple(shape), np.dtype(dtype))
                                     for name, shape, dtype in plan.buffers})


def _launchers(ctx: DeviceContext, plan) -> dict:
    """{step index: prepared launch} of `plan` on `ctx`, built on the plan's first run there."""
    return ctx.launchers.get(plan, lambda: {
        i: ctx.prepare(s.source, s.name, s.global_size, s.local_size)
        for i, s in enumerate(plan.steps) if s.kind == "launch"})


_device_impls = PerPlan()  # step -> CuPy implementation or None: built once per step


def _device_implementation(step):
    return _device_impls.get(step, lambda: (
        cuda_library.implementation(step.name, step.params),))[0]


def _host_step(ctx: DeviceContext, step, args) -> list:
    """A plan step that is not a kernel. Control flow runs its driver over device arrays (the
    sub-plans launch on this device; only predicates and branch indices come back to the host);
    library calls run through CuPy (cuBLAS, cuFFT, cuSOLVER, CUB); anything else copies its
    operands to the host, runs the NumPy implementation and copies the results back."""
    if step.drives_sub_plans:
        with ctx.scope():
            return list(step.fn(*args))
    if step.name in nccl.COLLECTIVES:  # on a GPU of a mesh: NCCL, the data stays on the GPUs
        here = device_group.current()
        if here is not None and here[0].gpu_ids is not None and nccl.supports(args[0].dtype,
                                                                               step.name):
            with ctx.scope():
                return [here[0].gpu_collective(here[1], args[0], step.name, step.params,
                                               ctx.stream.ptr)]
    if step.role == "library":
        impl = _device_implementation(step)
        if impl is not None:
            try:
                with ctx.scope():
                    return list(impl(ctx.cp, *args))
            except cuda_library.NoDeviceForm:
                pass
    host = [ctx.download(a) for a in args]
    with float_env.flushing():  # as the kernels (-ftz) and XLA's CPU code: subnormals flushed
        results = step.fn(*host)
    return [ctx.upload(np.asarray(r)) for r in results]
