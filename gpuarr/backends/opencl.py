"""OpenCL executor: runs rendered kernel source on an OpenCL device (PoCL on the CPU in tests).

It takes source text and a launch plan (kernel name, global and local size, argument order)
and numpy arrays; it never sees the Program IR and imports nothing from gpuarr.core or
gpuarr.lax. Programs are built once per source text and kept; buffers are uploaded per call.

Program binaries live in gpuarr's kernel cache (`GPUARR_CACHE_DIR/opencl`, checksummed and
written atomically by `gpuarr.backends.kernel_cache`), not in PoCL's own cache: a damaged file
there aborts the process inside PoCL, and processes building into one PoCL cache at once make
builds fail now and then. So PoCL gets a private cache directory per process (unless
POCL_CACHE_DIR is set), removed at exit; a program is built from its cached binary when that
passes its checksum, else from source (once more if the build fails), and after its kernels
first run the binary, which then holds their compiled code too, is stored again.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading

import numpy as np

from gpuarr import memory_limits
from gpuarr.backends import kernel_cache

_lock = threading.Lock()
_state: dict = {}
_programs: dict = {}
_kernels: dict = {}
_builds = 0
# Subnormals flushed, as XLA's CPU code and the host paths (backends/float_env.py) compute.
_BUILD_OPTIONS = ["-cl-std=CL1.2", "-cl-denorms-are-zero"]
_MAGIC = b"GPUARR-OPENCL1\n"
_entries: dict = {}      # source -> (cache path, size of the binary stored there)
_launched: set = set()   # (source, name, global size, local size) launched so far
_dirty: set = set()      # sources whose kernels compiled new code since their binary was stored


class OpenCLNotFoundError(RuntimeError):
    """pyopencl or an OpenCL platform (PoCL) is missing."""


def _context():
    if "ctx" in _state:
        return _state["ctx"], _state["queue"]
    try:
        import pyopencl as cl
    except ImportError as e:
        raise OpenCLNotFoundError(
            "the opencl platform needs pyopencl and PoCL: pip install 'pyopencl[pocl]'") from e
    with _private_pocl_cache():
        try:
            platforms = cl.get_platforms()
        except cl.Error as e:
            raise OpenCLNotFoundError(f"no OpenCL platform: {e}") from e
        wanted = os.environ.get("GPUARR_OPENCL_PLATFORM", "Portable Computing Language")
        chosen = [p for p in platforms if p.name == wanted] or platforms
        if not chosen:
            raise OpenCLNotFoundError("no OpenCL platform found (install pocl-binary-distribution)")
        ctx = cl.Context(devices=chosen[0].get_devices()[:1])
    queue = cl.CommandQueue(ctx)
    _state.update(ctx=ctx, queue=queue, cl=cl)
    return ctx, queue


class _private_pocl_cache:
    """PoCL reads POCL_CACHE_DIR once, when its devices start (at the first context, not at the
    platform list): point it at this process's directory for that moment only (child processes
    get their own), unless the user set it."""

    path = None

    def __enter__(self):
        self.set = "POCL_CACHE_DIR" not in os.environ
        if self.set:
            if _private_pocl_cache.path is None:
                _private_pocl_cache.path = tempfile.mkdtemp(prefix="gpuarr-pocl-")
                atexit.register(shutil.rmtree, _private_pocl_cache.path, True)
            os.environ["POCL_CACHE_DIR"] = _private_pocl_cache.path

    def __exit__(self, *exc):
        if self.set:
            os.environ.pop("POCL_CACHE_DIR", None)


def available() -> bool:
    try:
        _context()
        return True
    except Exception:  # noqa: BLE001 - any failure to bring up OpenCL means "not available"
        return False


def build_count() -> int:
    """How many OpenCL programs this process has built (cache hits do not count)."""
    return _builds


def program(source: str):
    """The built OpenCL program for `source` (built once, subnormals flushed), from the
    kernel cache's binary when it has a sound one."""
    ctx, _ = _context()
    with _lock:
        prg = _programs.get(source)
        if prg is None:
            path = kernel_cache.entry_path("opencl", _cache_key(source), "bin")
            binary = kernel_cache.read(path, _MAGIC)
            prg = _from_binary(binary) if binary is not None else None
            if prg is None:
                prg = _from_source(source)
                binary = _binary(prg)
                kernel_cache.write(path, _MAGIC, binary)
            _entries[source] = (path, len(binary))
            _programs[source] = prg
        return prg


def _cache_key(source: str) -> str:
    dev = _state["ctx"].devices[0]
    import pyopencl
    return hashlib.sha256(repr((source, _BUILD_OPTIONS, dev.name, dev.driver_version,
                                dev.platform.version, pyopencl.VERSION)).encode()).hexdigest()


def _binary(prg) -> bytes:
    return bytes(prg.get_info(_state["cl"].program_info.BINARIES)[0])


def _from_binary(binary: bytes):
    """The program built from a cached binary, or None when the runtime refuses it."""
    cl = _state["cl"]
    ctx = _state["ctx"]
    try:
        return cl.Program(ctx, ctx.devices[:1], [binary]).build(options=_BUILD_OPTIONS)
    except cl.Error:
        return None


def _from_source(source: str):
    """Build `source`; a failed build is tried once more (builds running in several processes
    at once fail now and then, and succeed when repeated) before its log is raised."""
    global _builds
    cl = _state["cl"]
    for attempt in (0, 1):
        try:
            prg = cl.Program(_state["ctx"], source).build(options=_BUILD_OPTIONS)
            _builds += 1
            return prg
        except cl.RuntimeError as e:
            if attempt:
                numbered = "\n".join(f"{n:5d}  {line}" for n, line in enumerate(source.splitlines(), 1))
                raise RuntimeError(f"OpenCL build failed:\n{e}\n--- source ---\n{numbered}") from e


def _store_compiled() -> None:
    """Store again the binaries of programs whose kernels ran for the first time: PoCL compiles
    a kernel when it first runs, and the program's binary then carries that code."""
    with _lock:
        dirty = list(_dirty)
        _dirty.clear()
        for source in dirty:
            path, size = _entries[source]
            binary = _binary(_programs[source])
            if len(binary) != size:
                kernel_cache.write(path, _MAGIC, binary)
                _entries[source] = (path, len(binary))


def upload(array: np.ndarray):
    ctx, _ = _context()
    cl = _state["cl"]
    array = np.ascontiguousarray(array)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    host = array if array.nbytes else np.zeros(1, np.uint8)
    return _buffer(cl, ctx, flags, max(array.nbytes, 1), host)


def empty(nbytes: int):
    ctx, _ = _context()
    cl = _state["cl"]
    return _buffer(cl, ctx, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))


def _buffer(cl, ctx, flags, nbytes, host=None):
    """A device buffer; one beyond the device's allocation limit is JAX's RESOURCE_EXHAUSTED
    error rather than pyopencl's INVALID_BUFFER_SIZE."""
    try:
        return cl.Buffer(ctx, flags, size=nbytes, hostbuf=host)
    except (cl.LogicError, cl.MemoryError) as e:
        if e.code in (cl.status_code.INVALID_BUFFER_SIZE, cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                      cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY):
            limit = ctx.devices[0].max_mem_alloc_size
            raise memory_limits.out_of_memory(nbytes, limit) from None
        raise


def download(buffer, shape, dtype) -> np.ndarray:
    _, queue = _context()
    out = np.empty(shape, dtype)
    if out.nbytes:
        _state["cl"].enqueue_copy(queue, out, buffer)
    return out


def copy(src, dst, nbytes: int) -> None:
    _, queue = _context()
    if nbytes:
        _state["cl"].enqueue_copy(queue, dst, src, byte_count=int(nbytes))


def launch(source: str, name: str, global_size: int, local_size: int, buffers: list) -> None:
    """Enqueue kernel `name` of `source` over `global_size` work items in groups of `local_size`."""
    _, queue = _context()
    kernel = _kernels.get((source, name))
    if kernel is None:
        kernel = _kernels[(source, name)] = _state["cl"].Kernel(program(source), name)
    kernel(queue, (int(global_size),), (int(local_size),), *buffers)
    shape = (source, name, int(global_size), int(local_size))
    if shape not in _launched:
        _launched.add(shape)
        _dirty.add(source)


def finish() -> None:
    _, queue = _context()
    queue.finish()
    if _dirty:
        _store_compiled()


def run(source: str, name: str, global_size: int, local_size: int, arg_names, arrays: dict,
        outputs=()) -> dict:
    """Upload `arrays` (name -> numpy array, outputs included with their initial contents),
    launch once, and return {name: array} for each name in `outputs`."""
    bufs = {n: upload(a) for n, a in arrays.items()}
    launch(source, name, global_size, local_size, [bufs[n] for n in arg_names])
    result = {n: download(bufs[n], arrays[n].shape, arrays[n].dtype) for n in outputs}
    finish()
    return result


# ---- running a whole launch plan ---------------------------------------------------------------

def run_plan(plan, inputs) -> list:
    """Run a LaunchPlan (gpuarr.compiler.plan) over NumPy `inputs`; return NumPy outputs.

    Buffers live on the device between kernel launches; host steps (library calls, control
    flow, fallbacks) download what they read and their results are uploaded when a kernel
    needs them.
    """
    info = {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in plan.buffers}
    host: dict = {}
    device: dict = {}
    for name, value in zip(plan.inputs, inputs):
        host[name] = np.asarray(value)
    for name, value in plan.constants:
        host[name] = np.asarray(value)

    def on_device(name):
        if name not in device:
            if name in host:
                device[name] = upload(np.asarray(host[name], info[name][1]))
            else:
                shape, dtype = info[name]
                device[name] = empty(int(np.prod(shape)) * dtype.itemsize)
        return device[name]

    def on_host(name):
        if name not in host:
            shape, dtype = info[name]
            host[name] = download(device[name], shape, dtype)
        return host[name]

    for step in plan.steps:
        if step.kind == "launch":
            bufs = [on_device(a) for a in step.args]
            launch(step.source, step.name, step.global_size, step.local_size, bufs)
            for name in step.outputs:
                host.pop(name, None)
        elif step.kind == "copy":
            shape, dtype = info[step.dst]
            if step.src in device:
                dst = empty(int(np.prod(shape)) * dtype.itemsize)
                copy(device[step.src], dst, int(np.prod(shape)) * dtype.itemsize)
                device[step.dst] = dst
            else:
                host[step.dst] = np.array(on_host(step.src), copy=True)
        else:
            args = [on_host(a) for a in step.inputs]
            results = step.fn(*args)
            for name, value in zip(step.outputs, results):
                shape, dtype = info[name]
                host[name] = np.asarray(value, dtype).reshape(shape)
                device.pop(name, None)
    outs = [np.array(on_host(name), copy=True) for name in plan.outputs]
    finish()
    return outs
