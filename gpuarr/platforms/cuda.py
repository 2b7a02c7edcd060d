"""The cuda platform: jitted Programs run as fused kernels (the same KernelPlans the opencl
platform runs), compiled by NVRTC and launched asynchronously on each GPU's CuPy stream.

Buffers are `backends.cuda.DeviceBuffer`s (a CuPy array plus the event of the launch that wrote
it). Eager operations compile a one-equation Program per (primitive, input types, params) and
keep it, so they take the same kernel path as jit. Donated inputs become output buffers when
the plan shows it is safe (see `donation_aliases`).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gpuarr import process_group
from gpuarr.backends import cuda, nvrtc
from gpuarr.compiler import passes
from gpuarr.compiler.plan import ElementwiseKernel, KernelStep, Load
from gpuarr.core import ClosedProgram
from gpuarr.platforms import Device, Platform

# Compiled single operations kept, as JAX keeps its primitives' executables (jax._src.util.cache,
# 4,096 entries by default): each holds its kernels and their device constants.
EAGER_PROGRAMS = 4096


class CudaDevice(Device):
    kind_name = "CudaDevice"

    def __init__(self, platform: str, id: int = 0, process_index: int = 0,
                 local_hardware_id: int | None = None):
        super().__init__(platform, id, process_index)
        # the GPU's CUDA ordinal in its own process (JAX's name); ids number every process's
        self.local_hardware_id = id if local_hardware_id is None else local_hardware_id

    @property
    def device_kind(self):
        return cuda.cupy().cuda.runtime.getDeviceProperties(self.id)["name"].decode()


class CudaPlatform(Platform):
    name = "cuda"
    device_buffers = True  # Arrays keep DeviceBuffers; jit wraps outputs with this platform

    def __init__(self):
        count = cuda.device_count()  # CudaNotFoundError without CuPy, a driver or a GPU
        nvrtc.library()  # NVRTCNotFoundError naming the pip extra
        self.settings = cuda.memory_settings()
        here = process_group.state.process_index
        counts = [count]
        if process_group.state.process_count > 1:  # every process's GPUs, in process order
            counts = [int(c) for c in process_group.allgather_array(
                np.array([count], np.int64), "the cuda platform's GPU counts")[:, 0]]
        self._devices = [CudaDevice("cuda", sum(counts[:p]) + i, p, i)
                         for p, n in enumerate(counts) for i in range(n)]
        self._local = [d for d in self._devices if d.process_index == here]
        self._contexts: dict = {}
        self._eager: OrderedDict = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def optimize(self, closed):
        return passes.optimize(closed)

    def clear_caches(self) -> None:
        self._eager.clear()

    # ---- devices and buffers
    def devices(self):
        return self._devices

    def local_devices(self):
        return self._local

    def check_memory(self, closed) -> None:
        """Nothing in advance: the device allocator raises DeviceOutOfMemoryError (JAX's
        RESOURCE_EXHAUSTED, with the bytes free and the memory settings) for any buffer."""

    def context(self, index: int = 0) -> cuda.DeviceContext:
        ctx = self._contexts.get(index)
        if ctx is None:
            with self._lock:
                ctx = self._contexts.get(index)
                if ctx is None:
                    ctx = self._contexts[index] = cuda.DeviceContext(index, self.settings)
        return ctx

    def device_of(self, buffer):
        return self._local[buffer.context.index] if isinstance(buffer, cuda.DeviceBuffer) \
            else self._local[0]

    def from_host(self, value, device):
        if device.process_index != process_group.state.process_index:
            raise ValueError(f"{device!r} is a GPU of process {device.process_index}: this "
                             "process can place data on its own GPUs only "
                             "(jax.local_devices()); make an array spanning processes with "
                             "jax.make_array_from_process_local_data.")
        ctx = self.context(device.local_hardware_id)
        data = ctx.as_device(value)
        return cuda.DeviceBuffer(data, ctx.record(), ctx)

    def to_host(self, buffer):
        if isinstance(buffer, cuda.DeviceBuffer):
            return buffer.context.to_host(buffer)
        return np.asarray(buffer)

    def block_until_ready(self, buffer) -> None:
        if isinstance(buffer, cuda.DeviceBuffer):
            buffer.synchronize()

    def cuda_array_interface(self, buffer) -> dict:
        return buffer.__cuda_array_interface__

    def _context_for(self, buffers) -> cuda.DeviceContext:
        """The context a call runs on: that of its first device operand (a DeviceBuffer, or a
        CuPy array that a control-flow driver passes to its sub-plans), else the default."""
        for b in buffers:
            if isinstance(b, cuda.DeviceBuffer):
                return b.context
        cp = cuda.cupy()
        for b in buffers:
            if isinstance(b, cp.ndarray):
                return self.context(b.device.id)  # a CuPy device: the ordinal
        from gpuarr.placement import current_default_device
        device = current_default_device()
        return self.context(device.local_hardware_id if device is not None
                            and device.platform == "cuda" else 0)

    # ---- compiling Programs
    def codegen(self, closed):
        """Fuse and render `closed` (its calls inlined first); returns `run(*buffers) -> tuple
        of DeviceBuffers` that launches without waiting. `run.donating(positions)` is the
        variant whose outputs may reuse the donated inputs at those flat positions.
        Control-flow bodies go through `compile` (passes, then kernels) as sub-plans."""
        from gpuarr.compiler import inline_calls, plan_closed, render
        from gpuarr.compiler.fusion import FusionOptions
        closed = inline_calls(closed)
        options = FusionOptions(sub_compiler=lambda sub: self._device_callable(
            self.compile(sub)), array_module=cuda.cupy())
        kernel_plan = plan_closed(closed, options)
        launch_plan = render.render_plan(kernel_plan)
        consts = [self._constant(c) for c in closed.consts]
        nconsts = len(consts)
        const_key, plan_key = cuda.PlanKey(), cuda.PlanKey()  # constants: once per device

        def make(aliases):
            def run(*buffers):
                ctx = self._context_for(buffers)
                inputs = ctx.constants(const_key, consts) + list(buffers)
                return tuple(cuda.run_plan(ctx, launch_plan, inputs, aliases, plan_key))
            return run

        variants: dict = {}

        def donating(positions):
            positions = tuple(positions)
            fn = variants.get(positions)
            if fn is None:
                names = [launch_plan.inputs[nconsts + p] for p in positions]
                aliases = donation_aliases(kernel_plan, names)
                fn = variants[positions] = make(aliases)
                fn.aliases = aliases
            return fn

        run = make(None)
        run.launch_plan = launch_plan
        run.kernel_plan = kernel_plan
        run.donating = donating
        return run

    def _device_callable(self, fn):
        """Control-flow drivers call sub-plans with CuPy arrays and get CuPy arrays back,
        ordered on the same stream: loop state never leaves the device."""
        def device_fn(*args):
            return [b.data for b in fn(*args)]
        return device_fn

    def _constant(self, c):
        """A program constant as `run_plan` takes it: device data stays on its device (an
        Array of this platform holds a DeviceBuffer), anything else becomes a host array."""
        from gpuarr.array import Array
        if type(c) is Array:
            c = c._buffer if c._platform is self else c._host()  # pieces over GPUs: joined
        return c if isinstance(c, cuda.DeviceBuffer) else np.asarray(c)

    # ---- eager operations
    def apply_primitive(self, prim, buffers, params):
        """One primitive through the kernel path; its compiled plan is cached by (primitive,
        input types, params). Unhashable params fall back to the NumPy implementation, and so do
        effectful primitives (checks, callbacks): eagerly they act on the host, as in JAX."""
        if prim.effectful:
            return self._apply_on_host(prim, buffers, params)
        avals = tuple(_aval_key(b) for b in buffers)
        try:
            key = (prim, avals, tuple(sorted(params.items())))
            with self._lock:
                fn = self._eager.get(key)
                if fn is not None:
                    self._eager.move_to_end(key)
        except TypeError:
            return self._apply_on_host(prim, buffers, params)
        if fn is None:
            fn = self._compile_primitive(prim, avals, params)
            with self._lock:
                self._eager[key] = fn
                while len(self._eager) > EAGER_PROGRAMS:
                    self._eager.popitem(last=False)
        outs = fn(*[b if isinstance(b, cuda.DeviceBuffer) else np.asarray(b, a[1])
                    for b, a in zip(buffers, avals)])
        return list(outs) if prim.multiple_results else outs[0]

    def _compile_primitive(self, prim, avals, params):
        from gpuarr.core import ShapedArray
        from gpuarr.interpreters import partial_eval as pe

        def body(*xs):
            out = prim.bind(*xs, **params)
            return list(out) if prim.multiple_results else [out]
        closed = pe.trace_to_program(body, [ShapedArray(s, d) for s, d in avals])
        if prim.name == "div":
            # A divisor broadcast to the result is multiplied by its reciprocal eagerly too, as
            # the cpu platform's impl does (docs/arithmetic.md, "Division").
            closed = ClosedProgram(passes.simplify(closed.program), closed.consts)
        return self.codegen(closed)  # other primitives as traced: the passes would only cost time

    def _apply_on_host(self, prim, buffers, params):
        from gpuarr import impls
        host = [self.to_host(b) for b in buffers]
        out = impls.impl_for_values(prim, host)(*host, **params)
        device = self._local[0]
        if prim.multiple_results:
            return [self.from_host(np.asarray(o), device) for o in out]
        return self.from_host(np.asarray(out), device)


def _aval_key(buffer) -> tuple:
    if isinstance(buffer, cuda.DeviceBuffer):
        return (tuple(buffer.shape), np.dtype(buffer.dtype))
    from gpuarr import dtypes
    host = np.asarray(buffer)
    return (host.shape, np.dtype(dtypes.canonicalize_dtype(host.dtype)))


# ---- donation -----------------------------------------------------------------------------------

def _reads(step) -> tuple:
    if isinstance(step, KernelStep):
        return tuple(buf for _, buf in step.bindings)
    return (step.src,) if step.kind == "copy" else tuple(step.inputs)


def _writes(step) -> tuple:
    if isinstance(step, KernelStep):
        outs = {a.name for a in step.kernel.args if getattr(a, "output", False)}
        return tuple(buf for name, buf in step.bindings if name in outs) or \
            tuple(buf for name, buf in step.bindings if name == "out")
    return (step.dst,) if step.kind == "copy" else tuple(step.outputs)


def _same_index_only(step, donated: str, output: str) -> bool:
    """True when `step` reads `donated` and writes `output` only at the same element: an
    elementwise kernel whose loads of it and stores to `output` are all identity index maps,
    or the copy of it that a scatter would update (the scatter then updates it in place)."""
    if getattr(step, "kind", None) == "copy":
        return step.src == donated and step.dst == output
    if not isinstance(step, KernelStep) or not isinstance(step.kernel, ElementwiseKernel):
        return False
    k = step.kernel
    names = {buf: name for name, buf in step.bindings}
    arg_in, arg_out = names.get(donated), names.get(output)
    loads_ok = all(n.index.is_identity() and n.index.shape == tuple(k.shape)
                   for n in k.nodes if isinstance(n, Load) and n.arg == arg_in)
    uses = [n for n in k.nodes if getattr(n, "arg", None) == arg_in and not isinstance(n, Load)]
    stores_ok = all(s.index is None or s.index.is_identity() for s in k.stores if s.arg == arg_out)
    return loads_ok and not uses and stores_ok


def donation_aliases(kernel_plan, donated: list) -> dict:
    """{output buffer: input position} for donated inputs whose memory an output can take.

    An output may take a donated input of the same shape and dtype when no step after the one
    that writes the output reads the input, and that step either does not read it or reads it
    only at the element it writes (see `_same_index_only`). Outputs that are program inputs
    themselves keep their buffers."""
    info = dict(kernel_plan.buffers)
    steps = list(kernel_plan.steps)
    writer = {}
    for i, step in enumerate(steps):
        for b in _writes(step):
            writer.setdefault(b, i)
    aliases: dict = {}
    taken = set()
    for out in kernel_plan.outputs:
        if out in kernel_plan.inputs or out in aliases or out not in writer:
            continue
        w = writer[out]
        for d in donated:
            if d in taken or d in kernel_plan.outputs:
                continue
            if (tuple(info[d].shape), info[d].dtype) != (tuple(info[out].shape), info[out].dtype):
                continue
            if any(d in _reads(s) for s in steps[w + 1:]):
                continue
            if d in _reads(steps[w]) and not _same_index_only(steps[w], d, out):
                continue
            aliases[out] = kernel_plan.inputs.index(d)
            taken.add(d)
            break
    return aliases


def make() -> CudaPlatform:
    return CudaPlatform()
