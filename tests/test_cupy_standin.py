"""The CuPy stand-in (tests/cupy_standin) against NumPy and CuPy 14's documented behaviour.

The stand-in is imported only inside the `cp` fixture, which puts tests/cupy_standin first on
sys.path and afterwards removes it and every cupy/cupyx module again, so the rest of the suite
(which picks platforms by whether `import cupy` works) never sees it, or, when the suite runs
on the stand-in, sees the session's copy again.
"""
import pathlib
import sys

import numpy as np
import pytest

STANDIN = pathlib.Path(__file__).parent / "cupy_standin"
KERNELS = pathlib.Path(__file__).parent.parent / "kernels"


def _drop_modules():
    for name in list(sys.modules):
        if name.split(".")[0] in ("cupy", "cupyx"):
            del sys.modules[name]


@pytest.fixture(scope="module")
def cp():
    # Under GPUARR_CUDA_STANDIN=1 the cuda platform holds the session's stand-in: it is put
    # back afterwards, else a later `import cupy` would load a third copy, whose arrays, streams
    # and pools the platform's kernels and allocator do not know.
    session = {name: sys.modules[name] for name in list(sys.modules)
               if name.split(".")[0] in ("cupy", "cupyx")}
    _drop_modules()
    sys.path.insert(0, str(STANDIN))
    try:
        import cupy
        yield cupy
    finally:
        sys.path.remove(str(STANDIN))
        _drop_modules()
        sys.modules.update(session)


@pytest.fixture
def kernels(cp):
    """Skip where the stand-in cannot compile (NVRTC) or run (PoCL) kernels."""
    if not cp.cuda.compiler.available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    if not cp.cuda._pocl.available():
        pytest.skip("PoCL/pyopencl is not available (pip install 'pyopencl[pocl]')")
    cp._standin.clear_faults()
    yield cp
    cp._standin.clear_faults()


PRELUDE = ("#if defined(__OPENCL_VERSION__)\n" + (KERNELS / "dialect_opencl.h").read_text()
           + "#else\n" + (KERNELS / "dialect_cuda.h").read_text() + "#endif\n")
SOURCE = PRELUDE + """
KERNEL void axpy(GLOBAL const f32 *x, GLOBAL f32 *y, f32 a, i32 n) {
  GRID_STRIDE_LOOP(i32, i, n) { y[i] = a * x[i] + y[i]; }
}
KERNEL void copy4(GLOBAL const f32 *x, GLOBAL f32 *y, i32 nq) {
  GRID_STRIDE_LOOP(i32, q, nq) { STORE4(f32x4, y, q, LOAD4(f32x4, x, q)); }
}
"""


def test_module_does_not_leak_into_the_suite(cp):
    assert cp.__file__.startswith(str(STANDIN))
    assert "gpuarr" not in "".join(m for m in sys.modules if m.startswith("cupy"))


# ---- ndarray ------------------------------------------------------------------------------------

def test_no_implicit_host_conversion(cp):
    x = cp.arange(4, dtype=np.float32)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        x + np.ones(4, np.float32)
    with pytest.raises(TypeError):
        np.histogram(x)  # not implemented by the stand-in: __array_function__ declines
    assert (x + np.float32(1) + 2).get().tolist() == [3, 4, 5, 6]


def test_zero_d_results_stay_on_the_device(cp):
    x = cp.arange(6, dtype=np.float64).reshape(2, 3)
    for r in (x.sum(), x.max(), x.min(), x.any(), x.all(), x[1, 2], np.sum(x)):
        assert isinstance(r, cp.ndarray) and r.shape == ()
    assert float(x.sum()) == 15.0 and int(x[1, 2]) == 5 and bool(x.any())
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(x.sum())
    assert x.sum(axis=0).get().tolist() == [3.0, 5.0, 7.0]


def test_views_keep_strides_and_offsets(cp):
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = cp.asarray(host)
    v = x[1, :, 1:3]
    assert v.strides == (16, 4) and v.data.ptr - x.data.ptr == 48 + 4
    assert not v.flags.owndata and not v.flags.c_contiguous
    np.testing.assert_array_equal(v.get(), host[1, :, 1:3])
    t = x.T
    assert t.strides == (4, 16, 48) and t.flags.f_contiguous and t.data.ptr == x.data.ptr
    r = x.reshape(6, 4)
    assert r.data.ptr == x.data.ptr and r.strides == (16, 4)
    c = v.reshape(-1)  # not expressible as a view: a copy
    assert c.data.ptr != x.data.ptr and c.flags.c_contiguous
    np.testing.assert_array_equal(c.get(), host[1, :, 1:3].reshape(-1))
    u = x.view(np.uint32)
    assert u.data.ptr == x.data.ptr and u.dtype == np.uint32
    np.testing.assert_array_equal(cp.flip(x, 2).get(), host[:, :, ::-1])
    np.testing.assert_array_equal(cp.moveaxis(x, 0, -1).get(), np.moveaxis(host, 0, -1))


def test_setitem_and_integer_indexing(cp):
    ys = cp.zeros((3, 4), np.float32)
    ys[1] = cp.arange(4, dtype=np.float32)
    ys[2] = 5.0
    ys[0, 1:3] = np.float32(2)
    np.testing.assert_array_equal(ys.get(), [[0, 2, 2, 0], [0, 1, 2, 3], [5, 5, 5, 5]])
    assert float(ys[1][3]) == 3.0
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        ys[0] = np.ones(4, np.float32)
    np.testing.assert_array_equal(ys[cp.asarray(np.array([2, 0]))].get(), ys.get()[[2, 0]])


def test_creation_and_copies_match_numpy(cp):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = cp.array(a)
    np.testing.assert_array_equal(cp.where(x > 5, x, -1).get(), np.where(a > 5, a, -1))
    np.testing.assert_array_equal(cp.concatenate([x, x], axis=1).get(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(cp.stack([x, x]).get(), np.stack([a, a]))
    idx = np.argsort(a, axis=1)[:, ::-1].copy()
    np.testing.assert_array_equal(cp.take_along_axis(x, cp.asarray(idx), 1).get(),
                                  np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(cp.full((2, 2), 7, np.int8).get(), np.full((2, 2), 7, np.int8))
    d = cp.empty((3, 4), np.float64)
    cp.copyto(d, x)
    np.testing.assert_array_equal(cp.asnumpy(d), a)
    with pytest.raises(TypeError, match="Cannot cast"):
        cp.copyto(x, d)
    assert x.astype(np.float32).dtype == np.float32
    assert cp.ascontiguousarray(x.T).flags.c_contiguous


# ---- memory -------------------------------------------------------------------------------------

def test_pool_rounds_to_512_and_splits_and_merges(cp):
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    with cp.cuda.Stream(non_blocking=True):  # a fresh arena
        used = pool.used_bytes()
        a = pool.malloc(1)
        assert pool.used_bytes() - used == 512
        del a
        big = pool.malloc(4096)
        base = big.ptr
        assert base % 256 == 0
        del big
        n = pool.n_free_blocks()
        small = pool.malloc(1024)  # best fit splits the 4096-byte chunk
        assert small.ptr == base and pool.n_free_blocks() == n
        other = pool.malloc(1024)
        assert other.ptr == base + 1024
        del small, other  # merged back into one 4096-byte chunk
        again = pool.malloc(4096)
        assert again.ptr == base
        del again


def test_out_of_memory_past_the_limit(cp):
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    pool.set_limit(size=2**20)
    try:
        assert pool.get_limit() == 2**20
        with pytest.raises(cp.cuda.memory.OutOfMemoryError,
                           match=r"^Out of memory allocating 2,097,152 bytes \(allocated so far: "
                                 r"[\d,]+ bytes, limit set to: 1,048,576 bytes\)\.$"):
            cp.empty(2**21, np.uint8)
    finally:
        pool.set_limit(size=0)


def test_out_of_memory_past_the_device(cp, monkeypatch):
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cp.cuda.runtime.memGetInfo()
    assert total == 4 * 2**30 and free == total - cp.cuda.memory.allocated_on(0)
    monkeypatch.setenv("CUPY_STANDIN_MEMORY", str(total - free + 2**20))
    with pytest.raises(cp.cuda.memory.OutOfMemoryError, match=r"^Out of memory allocating 4,194,304"):
        cp.empty(2**22, np.uint8)
    before = cp.cuda.Device(0).mem_info[0]
    x = cp.empty(2**19, np.uint8)  # what fits is still allocated
    assert x.nbytes == 2**19 and cp.cuda.Device(0).mem_info[0] <= before - 2**19


def test_arenas_are_per_stream(cp):
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with s1:
        a = cp.empty(1000, np.float32)
        ptr = a.data.ptr
        del a
    with s2:
        b = cp.empty(1000, np.float32)
    with s1:
        c = cp.empty(1000, np.float32)
    assert b.data.ptr != ptr and c.data.ptr == ptr


# ---- streams and events -------------------------------------------------------------------------

def test_work_is_deferred_until_synchronised(cp):
    cp._standin.reset()
    producer, consumer = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(4, np.float32)
    cp.cuda.Stream.null.synchronize()
    with producer:
        x += 1
    stale = x.get(stream=consumer)  # no wait: the producer's work has not run
    np.testing.assert_array_equal(stale, 0)
    consumer.wait_event(producer.record())
    np.testing.assert_array_equal(x.get(stream=consumer), 1)
    assert cp._standin.counters.syncs == 3


def test_null_stream_orders_after_blocking_streams_only(cp):
    blocking, non_blocking = cp.cuda.Stream(), cp.cuda.Stream(non_blocking=True)
    x, y = cp.zeros(2, np.float32), cp.zeros(2, np.float32)
    cp.cuda.Device().synchronize()
    with blocking:
        x += 1
    with non_blocking:
        y += 1
    np.testing.assert_array_equal(x.get(), 1)  # the legacy stream waits for blocking streams
    np.testing.assert_array_equal(y.get(), 0)  # but not for non-blocking ones
    non_blocking.synchronize()
    np.testing.assert_array_equal(y.get(), 1)


def test_events(cp):
    s = cp.cuda.Stream(non_blocking=True)
    assert cp.cuda.Event().done  # never recorded
    x = cp.zeros(3, np.float32)
    cp.cuda.Stream.null.synchronize()
    with s:
        x.fill(3)
        e = cp.cuda.Event(disable_timing=True)
        e.record()
    assert not e.done  # still queued; asking lets the simulated GPU make progress
    assert e.done and s.done
    e.synchronize()
    np.testing.assert_array_equal(x.get(), 3)
    with pytest.raises(ValueError, match="Timing must be disabled"):
        cp.cuda.Event(interprocess=True)


def test_freed_memory_reused_while_another_stream_still_reads_it(cp):
    """Queued work holds pointers: freeing an array that another stream has not finished
    reading hands its memory to the next allocation of the allocating stream."""
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with s1:
        a = cp.zeros(256, np.float32)
        a += 1
    s1.synchronize()
    with s2:
        out = a * 2  # pending on s2, reads a by pointer
    ptr = a.data.ptr
    del a
    with s1:
        b = cp.full(256, 10, np.float32)
        assert b.data.ptr == ptr
    s1.synchronize()
    np.testing.assert_array_equal(out.get(stream=s2), 20)  # reads the reused memory


def test_devices(cp, monkeypatch):
    monkeypatch.setenv("CUPY_STANDIN_DEVICES", "2")
    props = cp.cuda.runtime.getDeviceProperties(1)
    assert isinstance(props["name"], bytes) and b"stand-in" in props["name"]
    assert (props["major"], props["minor"], props["multiProcessorCount"]) == (9, 0, 132)
    assert props["maxGridSize"] == (2**31 - 1, 65535, 65535) and props["sharedMemPerBlock"] == 49152
    with cp.cuda.Device(1) as d:
        assert cp.cuda.runtime.getDevice() == 1 and d.compute_capability == "90"
        x = cp.ones(3)
        assert x.data.device_id == 1 and x.device.id == 1
    assert cp.cuda.runtime.getDevice() == 0
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError,
                       match="cudaErrorInvalidDevice: invalid device ordinal"):
        with cp.cuda.Device(5):
            pass
    assert cp.cuda.runtime.driverGetVersion() == 12090


# ---- kernels ------------------------------------------------------------------------------------

def test_kernel_runs_on_pocl_and_checks_arguments(kernels):
    cp = kernels
    cp._standin.reset()
    f = cp.RawModule(code=SOURCE, options=("--std=c++17",)).get_function("axpy")
    x, y = cp.arange(10, dtype=np.float32), cp.ones(10, dtype=np.float32)
    f((1,), (32,), (x, y, np.float32(2), 10))  # Python int: int64, low bytes are the value
    np.testing.assert_array_equal(y.get(), 2 * np.arange(10) + 1)
    assert cp._standin.counters.launches_by_name == {"axpy": 1} and cp._standin.counters.launches == 1
    with pytest.raises(TypeError, match="float64 value would pass the wrong bytes"):
        f((1,), (32,), (x, y, 2.0, 10))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        f((1,), (32,), (x, y, np.float32(2)))
    with pytest.raises(TypeError, match="Only numpy.ndarrays of size one"):
        f((1,), (32,), (np.ones(3), y, np.float32(2), 10))
    with pytest.raises(TypeError, match="expected tuple"):
        f([1], (32,), (x, y, np.float32(2), 10))
    k = cp.RawKernel(SOURCE, "axpy")
    k((1,), (16,), (x, y, np.float32(-2), np.int32(10)))
    np.testing.assert_array_equal(y.get(), 1)
    with pytest.raises(cp.cuda.driver.CUDADriverError, match="CUDA_ERROR_NOT_FOUND"):
        cp.RawModule(code=SOURCE).get_function("nope")


def test_rawmodule_appends_ftz_true_as_cupy_does(kernels):
    """CuPy appends -ftz=true after the caller's options (compiler.py), so denormals are
    flushed even when the caller asked for --ftz=false; PoCL builds with denormals-as-zero."""
    cp = kernels
    src = PRELUDE + "KERNEL void half_of(GLOBAL const f32 *x, GLOBAL f32 *y) { y[0] = x[0] * 0.5f; }"
    x, y = cp.asarray(np.array([2e-39], np.float32)), cp.ones(1, np.float32)
    cp.RawModule(code=src, options=("--ftz=false",)).get_function("half_of")((1,), (1,), (x, y))
    assert y.get()[0] == 0.0


def test_pocl_programs_are_kept_as_checksummed_binaries(kernels, tmp_path, monkeypatch):
    """A process that has not built a kernel's source loads the PoCL binary an earlier build
    stored (its program has no source); a damaged binary is built from source again."""
    cp = kernels
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    pocl = cp.cuda._pocl
    cl = pocl._context()["cl"]
    src = PRELUDE + "KERNEL void twice(GLOBAL const f32 *x, GLOBAL f32 *y) { y[0] = 2.0f * x[0]; }"

    def run():
        pocl._programs.pop((src, True), None)  # as in a process that has not built it yet
        x, y = cp.full(1, 3, np.float32), cp.zeros(1, np.float32)
        cp.RawModule(code=src).get_function("twice")((1,), (1,), (x, y))
        assert y.get()[0] == 6
        return pocl._programs[(src, True)].get_info(cl.program_info.SOURCE)

    assert run() != ""  # built from the source, then stored
    (stored,) = tmp_path.glob("pocl/*/*.bin")
    assert run() == ""  # loaded from the binary
    stored.write_bytes(stored.read_bytes()[:-16] + bytes(16))
    assert run() != ""  # the checksum refused it: built again, and stored soundly again
    assert run() == ""


def test_gpuarr_plan_runs_on_one_stream_and_needs_waits_across_streams(kernels):
    """A rendered gpuarr plan compiles with NVRTC and runs on PoCL; an upload queued on
    another stream without an event wait leaves its kernels reading stale memory."""
    cp = kernels
    import gpuarr
    import gpuarr.numpy as jnp
    from gpuarr import platforms
    from gpuarr.compiler import passes, plan_closed, render
    loaded = set(platforms._loaded)
    x = np.random.default_rng(0).standard_normal((16, 40)).astype(np.float32)
    closed = passes.optimize(gpuarr.make_jaxpr(lambda a: gpuarr.nn.softmax(a) + jnp.sum(a, 0))(x))
    plan = render.render_plan(plan_closed(closed))
    info = {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in plan.buffers}
    want = np.exp(x - x.max(-1, keepdims=True))
    want = want / want.sum(-1, keepdims=True) + x.sum(0)

    def run(stream, upload_stream):
        with upload_stream:
            bufs = {plan.inputs[0]: cp.asarray(x)}
        with stream:
            for step in plan.steps:
                for a in step.args:
                    if a not in bufs:
                        bufs[a] = cp.empty(*info[a])
                fn = cp.RawModule(code=step.source).get_function(step.name)
                grid = max(1, -(-step.global_size // step.local_size))
                fn((grid,), (step.local_size,), tuple(bufs[a] for a in step.args))
            return bufs[plan.outputs[0]].get()

    s = cp.cuda.Stream(non_blocking=True)
    np.testing.assert_allclose(run(s, s), want, rtol=1e-5, atol=1e-5)
    assert not np.allclose(run(s, cp.cuda.Stream(non_blocking=True)), want)
    assert set(platforms._loaded) == loaded  # tracing never made the stand-in a gpuarr platform


def test_real_nvrtc_errors(kernels):
    cp = kernels
    bad = cp.RawModule(code='extern "C" __global__ void k(float *x) { x[0] = y; }')
    with pytest.raises(cp.cuda.compiler.CompileException, match='identifier "y" is undefined'):
        bad.get_function("k")
    big = cp.RawModule(code='extern "C" __global__ void k(float *x) { __shared__ float s[13000];'
                            ' s[threadIdx.x] = x[0]; __syncthreads(); x[threadIdx.x] = s[1]; }')
    with pytest.raises(cp.cuda.compiler.CompileException):
        big.get_function("k")  # 52,000 bytes of static shared memory: ptxas refuses


@pytest.mark.parametrize("grid,block,shared", [((1,), (2048,), 0), ((1,), (32, 32, 2), 0),
                                               ((1, 70000), (32,), 0), ((2**31,), (32,), 0),
                                               ((1,), (32,), 50000)])
def test_launch_limits(kernels, grid, block, shared):
    cp = kernels
    f = cp.RawModule(code=SOURCE).get_function("axpy")
    x = cp.zeros(4, np.float32)
    with pytest.raises(cp.cuda.driver.CUDADriverError,
                       match="^CUDA_ERROR_INVALID_VALUE: invalid argument$"):
        f(grid, block, (x, x, np.float32(1), np.int32(4)), shared_mem=shared)


def test_kernel_parameter_space_depends_on_the_driver(kernels, monkeypatch):
    cp = kernels
    n = 513  # 4,104 bytes of pointers
    src = PRELUDE + "KERNEL void many(" + ", ".join(f"GLOBAL f32 *p{i}" for i in range(n)) + \
        ") { p0[0] = 1.0f; }"
    f = cp.RawModule(code=src).get_function("many")
    x = cp.zeros(1, np.float32)
    monkeypatch.setenv("CUPY_STANDIN_DRIVER", "12000")
    with pytest.raises(cp.cuda.driver.CUDADriverError, match="CUDA_ERROR_INVALID_VALUE"):
        f((1,), (1,), (x,) * n)


def test_misaligned_address_is_sticky(kernels):
    cp = kernels
    m = cp.RawModule(code=SOURCE)
    axpy, copy4 = m.get_function("axpy"), m.get_function("copy4")
    a, b = cp.arange(16, dtype=np.float32), cp.zeros(16, np.float32)
    copy4((1,), (4,), (a, b, np.int32(4)))
    np.testing.assert_array_equal(b.get(), np.arange(16))
    copy4((1,), (4,), (a[1:], b, np.int32(2)))  # 4-byte aligned, but LOAD4 needs 16
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="misaligned address"):
        cp.cuda.Device().synchronize()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="misaligned address"):
        cp.empty(4)  # the context is dead: every later call fails
    with pytest.raises(cp.cuda.driver.CUDADriverError,
                       match="CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address"):
        axpy((1,), (4,), (a, b, np.float32(1), np.int32(4)))
    cp._standin.clear_faults()
    odd = cp.zeros(8, np.float32).view(np.uint8)[2:6].view(np.float32)  # 2-byte offset
    axpy((1,), (1,), (odd, b, np.float32(1), np.int32(1)))
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="misaligned address"):
        b.get()


def test_aliasing_arguments_share_one_memory(kernels):
    cp = kernels
    f = cp.RawModule(code=SOURCE).get_function("axpy")
    x = cp.arange(8, dtype=np.float32)
    f((1,), (8,), (x, x, np.float32(1), np.int32(8)))  # donated: y is x
    np.testing.assert_array_equal(x.get(), 2 * np.arange(8))
    a = cp.arange(16, dtype=np.float32)
    f((1,), (8,), (a[:8], a[8:], np.float32(10), np.int32(8)))  # two views of one allocation
    np.testing.assert_array_equal(a.get(), np.r_[2 * np.arange(8) * 0 + np.arange(8),
                                                 10 * np.arange(8) + np.arange(8, 16)])


# ---- interchange --------------------------------------------------------------------------------

def test_dlpack_round_trip_of_strided_offset_views(cp):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = cp.asarray(host)[1:, ::2]
    assert x.__dlpack_device__() == (2, 0)
    y = cp.from_dlpack(x)
    assert y.data.ptr == x.data.ptr and y.strides == x.strides and y.shape == x.shape
    np.testing.assert_array_equal(y.get(), host[1:, ::2])
    cap = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    z = cp.from_dlpack(cap)
    assert z.data.ptr == x.data.ptr
    with pytest.raises(ValueError, match="cannot be consumed multiple times"):
        cp.from_dlpack(cap)
    assert "dltensor" in repr(x.__dlpack__())
    with pytest.raises(TypeError, match="CPU arrays cannot be directly imported"):
        cp.from_dlpack(np.arange(3))
    with pytest.raises(BufferError, match="copy=True only supported for copy to CPU"):
        x.__dlpack__(copy=True)


def test_cuda_array_interface(cp):
    x = cp.arange(6, dtype=np.int64).reshape(2, 3)
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["stream"] == 1 and cai["strides"] is None
    assert cai["data"] == (x.data.ptr, False) and cai["typestr"] == "<i8"
    assert x.T.__cuda_array_interface__["strides"] == (8, 24)

    class Foreign:
        __cuda_array_interface__ = x.T.__cuda_array_interface__

    y = cp.asarray(Foreign())
    assert y.data.ptr == x.data.ptr and y.strides == (8, 24)
    np.testing.assert_array_equal(y.get(), np.arange(6).reshape(2, 3).T)

    class NotOurs:
        __cuda_array_interface__ = dict(cai, data=(np.zeros(6).ctypes.data, False))

    with pytest.raises(ValueError, match="not device memory of the CuPy stand-in"):
        cp.asarray(NotOurs())


def test_torch_dlpack(cp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device to exchange stand-in memory with")


# ---- libraries ----------------------------------------------------------------------------------

def test_libraries_match_numpy(cp):
    import scipy.linalg
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    d = cp.asarray(spd)
    db = cp.asarray(b)
    cp._standin.reset()
    np.testing.assert_allclose((d @ db).get(), spd @ b)
    np.testing.assert_allclose(cp.dot(d, db).get(), spd @ b)
    np.testing.assert_allclose(cp.einsum("ij,jk->ik", d, db).get(), spd @ b)
    np.testing.assert_allclose(np.matmul(d, db).get(), spd @ b)
    np.testing.assert_array_equal(cp.sort(d).get(), np.sort(spd))
    np.testing.assert_array_equal(np.argsort(d, axis=0).get(), np.argsort(spd, axis=0))
    np.testing.assert_array_equal(cp.lexsort(d).get(), np.lexsort(spd))
    for name in ("fft", "ifft", "rfft", "fftn", "ifftn", "rfftn"):
        np.testing.assert_allclose(getattr(cp.fft, name)(d).get(), getattr(np.fft, name)(spd))
    np.testing.assert_allclose(cp.fft.irfft(cp.fft.rfft(d)).get(), spd)
    np.testing.assert_allclose(cp.fft.irfftn(cp.fft.rfftn(d)).get(), spd)
    assert cp.fft.rfft(d.astype(np.float32)).dtype == np.complex64
    np.testing.assert_allclose(cp.linalg.cholesky(d).get(), np.linalg.cholesky(spd))
    q, r = cp.linalg.qr(d)
    np.testing.assert_allclose((q @ r).get(), spd, atol=1e-12)
    u, s, vt = cp.linalg.svd(d)
    np.testing.assert_allclose(s.get(), np.linalg.svd(spd)[1])
    w, v = cp.linalg.eigh(d)
    np.testing.assert_allclose(w.get(), np.linalg.eigh(spd)[0])
    np.testing.assert_allclose(cp.linalg.solve(d, db).get(), np.linalg.solve(spd, b))
    np.testing.assert_allclose(np.linalg.inv(d).get(), np.linalg.inv(spd))
    np.testing.assert_allclose(float(cp.linalg.det(d)), np.linalg.det(spd))
    from cupyx.scipy import linalg as cpx_linalg
    lower = np.tril(spd)
    np.testing.assert_allclose(
        cpx_linalg.solve_triangular(cp.asarray(lower), db, lower=True).get(),
        scipy.linalg.solve_triangular(lower, b, lower=True))
    lu, piv = cpx_linalg.lu_factor(d)
    np.testing.assert_allclose(lu.get(), scipy.linalg.lu_factor(spd)[0])
    assert piv.dtype == np.int32
    lib = cp._standin.counters.library
    assert lib["linalg.cholesky"] == 1 and lib["matmul"] == 3 and lib["fft.rfft"] == 3
    assert cp._standin.counters.library_calls == sum(lib.values())


def test_solve_triangular_is_trsm_without_checks_by_default(cp):
    # cupyx/scipy/linalg/_solve_triangular.py: check_finite defaults to False and cuBLAS trsm
    # runs on an infinite or zero diagonal (SciPy's default checks and LAPACK's trtrs raise).
    from cupyx.scipy import linalg as cpx_linalg
    a = np.array([[2.0, 1.0], [0.0, np.inf]])
    b = np.array([[4.0], [3.0]])
    x = cpx_linalg.solve_triangular(cp.asarray(a), cp.asarray(b)).get()
    np.testing.assert_array_equal(x, [[2.0], [0.0]])
    with pytest.raises(ValueError, match="infs or NaNs"):
        cpx_linalg.solve_triangular(cp.asarray(a), cp.asarray(b), check_finite=True).get()
    singular = np.array([[1.0, 1.0], [0.0, 0.0]])
    x = cpx_linalg.solve_triangular(cp.asarray(singular), cp.asarray(b)).get()
    np.testing.assert_array_equal(x, [[-np.inf], [np.inf]])
    u = np.array([[2.0, 1.0], [0.0, 3.0]])
    upper_t = cpx_linalg.solve_triangular(cp.asarray(u), cp.asarray(b), trans="T").get()
    np.testing.assert_allclose(upper_t, np.linalg.solve(u.T, b))


def test_square_integer_indices_of_one_column(cp):
    # Output shapes are found on stand-in operands: square integer ones must stay valid
    # indices, as sort's order of a (k, 1) batch is (cupy/_manipulation: take_along_axis).
    keys = cp.asarray(np.array([[3.0], [1.0]]))
    order = cp.asarray(np.zeros((1, 1), np.int64))
    np.testing.assert_array_equal(cp.take_along_axis(keys[:1], order, axis=-1).get(), [[3.0]])
    two = cp.asarray(np.array([[5, 7], [9, 11]]))
    idx = cp.asarray(np.array([[1, 0], [1, 1]]))
    np.testing.assert_array_equal(cp.take_along_axis(two, idx, axis=-1).get(), [[7, 5], [11, 11]])


def test_real_and_imag(cp):
    # cupy/_math/arithmetic.py: real/imag are the array's attributes; core.pyx's _imag_getter
    # gives a strided view of a complex array and new zeros for a real one
    z = cp.asarray(np.array([1 + 2j, -3 - 4j], np.complex64))
    re, im = cp.real(z), cp.imag(z)
    assert re.dtype == im.dtype == np.float32 and im.strides == (8,)
    np.testing.assert_array_equal(im.get(), [2, -4])
    np.testing.assert_array_equal(re.get(), [1, -3])
    x = cp.asarray(np.array([1.5, 2.5], np.float32))
    assert cp.real(x) is x
    zeros = cp.imag(x)
    assert zeros.dtype == np.float32 and zeros.data.ptr != x.data.ptr
    np.testing.assert_array_equal(zeros.get(), [0, 0])


def test_eig_is_geev_with_complex_results(cp, monkeypatch):
    # cupy/linalg/_eigenvalue.py (CuPy 14): eig/eigvals are cuSOLVER Xgeev, whose eigenvalues
    # are complex even where NumPy's are real; right eigenvectors only; empty inputs keep their
    # linalg type; float16 is refused; cupyx/_cusolver.pyx makes geev need cuSOLVER >= 11.7.
    sym = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    w, v = cp.linalg.eig(cp.asarray(sym))
    assert w.dtype == np.complex64 and v.dtype == np.complex64 and v.shape == (2, 2)
    want_w, want_v = np.linalg.eig(sym)
    np.testing.assert_allclose(w.get(), want_w, rtol=1e-6)
    np.testing.assert_allclose(v.get(), want_v, rtol=1e-6)
    rot = np.array([[[0.0, -1.0], [1.0, 0.0]]] * 2)
    np.testing.assert_allclose(cp.linalg.eigvals(cp.asarray(rot)).get(), [[1j, -1j]] * 2)
    w0 = cp.linalg.eigvals(cp.asarray(np.zeros((0, 0), np.float32)))
    assert w0.dtype == np.float32 and w0.shape == (0,)
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        cp.linalg.eig(cp.asarray(np.ones((2, 3))))
    with pytest.raises(TypeError, match="float16"):
        cp.linalg.eig(cp.asarray(sym.astype(np.float16)))
    bad = cp.linalg.eig(cp.asarray(np.array([[np.nan, 0.0], [0.0, 1.0]])))
    assert not np.isnan(bad[0].get()).any()  # undefined, unchecked: no NaNs promised
    monkeypatch.setenv("CUPY_STANDIN_CUSOLVER", "11600")
    with pytest.raises(RuntimeError, match="geev is not available"):
        cp.linalg.eig(cp.asarray(sym))


def test_library_calls_are_queued_on_the_current_stream(cp):
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.asarray(np.eye(3) * 4)
    cp.cuda.Stream.null.synchronize()
    with s:
        c = cp.linalg.cholesky(d)
    assert cp.cuda.stream._queue.pending(s._queue().last)
    np.testing.assert_allclose(c.get(stream=s), np.eye(3) * 2)


def test_counters(cp):
    cp._standin.reset()
    x = cp.asarray(np.ones(8, np.float32))
    y = x.get()
    assert y.sum() == 8
    snap = cp._standin.counters.snapshot()
    assert (snap["h2d"], snap["h2d_bytes"], snap["d2h"], snap["d2h_bytes"]) == (1, 32, 1, 32)
    assert snap["syncs"] == 1
    cp._standin.reset()
    assert cp._standin.counters.snapshot()["h2d"] == 0


# ---- cupy.cuda.nccl: NCCL's semantics between the simulated GPUs of this process


@pytest.fixture
def two_gpus(cp, monkeypatch):
    monkeypatch.setenv("CUPY_STANDIN_DEVICES", "2")
    from cupy.cuda import nccl
    comms = nccl.NcclCommunicator.initAll(2)
    streams = []
    for d in range(2):
        with cp.cuda.Device(d):
            streams.append(cp.cuda.Stream(non_blocking=True))
    return nccl, comms, streams


def _on(cp, d, stream, fn):
    with cp.cuda.Device(d), stream:
        return fn()


def test_nccl_collectives_run_in_stream_order_after_every_rank_called(cp, two_gpus):
    nccl, comms, streams = two_gpus
    assert [c.rank_id() for c in comms] == [0, 1] and [c.device_id() for c in comms] == [0, 1]
    assert comms[0].size() == 2
    xs = [_on(cp, d, streams[d], lambda d=d: cp.arange(6, dtype=cp.float32) + 10 * d)
          for d in range(2)]
    sums = [_on(cp, d, streams[d], lambda: cp.empty(6, cp.float32)) for d in range(2)]
    gathered = [_on(cp, d, streams[d], lambda: cp.empty(12, cp.float32)) for d in range(2)]
    scattered = [_on(cp, d, streams[d], lambda: cp.empty(3, cp.float32)) for d in range(2)]
    nccl.groupStart()
    for d in range(2):
        with cp.cuda.Device(d):
            c, s = comms[d], streams[d].ptr
            c.allReduce(xs[d].data.ptr, sums[d].data.ptr, 6, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s)
            c.allGather(xs[d].data.ptr, gathered[d].data.ptr, 6, nccl.NCCL_FLOAT32, s)
            c.reduceScatter(xs[d].data.ptr, scattered[d].data.ptr, 3, nccl.NCCL_FLOAT32,
                            nccl.NCCL_MAX, s)
            # In-place: later work on the stream sees the collective's result.
            c.broadcast(xs[d].data.ptr, xs[d].data.ptr, 6, nccl.NCCL_FLOAT32, 1, s)
    nccl.groupEnd()
    host = [np.arange(6, dtype=np.float32) + 10 * d for d in range(2)]
    for d in range(2):
        get = lambda a, d=d: _on(cp, d, streams[d], lambda: a.get(stream=streams[d]))  # noqa: E731
        np.testing.assert_array_equal(get(sums[d]), host[0] + host[1])
        np.testing.assert_array_equal(get(gathered[d]), np.concatenate(host))
        np.testing.assert_array_equal(get(scattered[d]),
                                      np.maximum(host[0], host[1])[3 * d:3 * d + 3])
        np.testing.assert_array_equal(get(xs[d]), host[1])


def test_nccl_send_recv_pairs_and_group_rule(cp, two_gpus):
    nccl, comms, streams = two_gpus
    xs = [_on(cp, d, streams[d], lambda d=d: cp.full(4, d + 1, cp.int32)) for d in range(2)]
    ys = [_on(cp, d, streams[d], lambda: cp.zeros(4, cp.int32)) for d in range(2)]
    nccl.groupStart()
    for d in range(2):
        with cp.cuda.Device(d):
            comms[d].send(xs[d].data.ptr, 4, nccl.NCCL_INT32, 1 - d, streams[d].ptr)
            comms[d].recv(ys[d].data.ptr, 4, nccl.NCCL_INT32, 1 - d, streams[d].ptr)
    nccl.groupEnd()
    for d in range(2):
        got = _on(cp, d, streams[d], lambda d=d: ys[d].get(stream=streams[d]))
        np.testing.assert_array_equal(got, np.full(4, 2 - d, np.int32))
    # One thread driving both ranks outside a group would block on a GPU: an error here.
    with cp.cuda.Device(0):
        comms[0].allReduce(xs[0].data.ptr, ys[0].data.ptr, 4, nccl.NCCL_INT32, nccl.NCCL_SUM,
                           streams[0].ptr)
    with cp.cuda.Device(1), pytest.raises(nccl.NcclError, match="NCCL_ERROR_INVALID_USAGE"):
        comms[1].allReduce(xs[1].data.ptr, ys[1].data.ptr, 4, nccl.NCCL_INT32, nccl.NCCL_SUM,
                           streams[1].ptr)
    # ... and the stream of the rank that did call cannot get past it.
    with pytest.raises(nccl.NcclError, match="before ranks \\[1\\] called it"):
        streams[0].synchronize()


def test_nccl_argument_errors(cp, two_gpus):
    nccl, comms, streams = two_gpus
    x = _on(cp, 0, streams[0], lambda: cp.ones(4, cp.float32))
    on_other = _on(cp, 1, streams[1], lambda: cp.ones(4, cp.float32))
    bad = [  # (call, NCCL's complaint)
        (lambda: comms[0].allReduce(x.data.ptr, x.data.ptr, 4, 42, nccl.NCCL_SUM,
                                    streams[0].ptr), "invalid type 42"),
        (lambda: comms[0].allReduce(x.data.ptr, x.data.ptr, 4, nccl.NCCL_FLOAT32, 9,
                                    streams[0].ptr), "invalid reduction operation 9"),
        (lambda: comms[0].allReduce(on_other.data.ptr, x.data.ptr, 4, nccl.NCCL_FLOAT32,
                                    nccl.NCCL_SUM, streams[0].ptr), "is not memory of device 0"),
        (lambda: comms[0].broadcast(x.data.ptr, x.data.ptr, 4, nccl.NCCL_FLOAT32, 2,
                                    streams[0].ptr), "root or peer 2 of 2 ranks"),
        (lambda: comms[0].allReduce(x.data.ptr, x.data.ptr, 4, nccl.NCCL_FLOAT32,
                                    nccl.NCCL_SUM, streams[1].ptr), "stream of device 1"),
    ]
    for call, detail in bad:
        with cp.cuda.Device(0), pytest.raises(nccl.NcclError) as info:
            call()
        assert str(info.value).startswith("NCCL_ERROR_INVALID_ARGUMENT: invalid argument")
        assert detail in str(info.value) and info.value.status == nccl.ncclInvalidArgument
    # Ranks that disagree on the count of one operation.
    y = _on(cp, 1, streams[1], lambda: cp.ones(2, cp.float32))
    nccl.groupStart()
    with cp.cuda.Device(0):
        comms[0].allReduce(x.data.ptr, x.data.ptr, 4, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                           streams[0].ptr)
    with cp.cuda.Device(1):
        comms[1].allReduce(y.data.ptr, y.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                           streams[1].ptr)
    with pytest.raises(nccl.NcclError, match="the ranks called"):
        nccl.groupEnd()
    # A communicator made from a unique id, one rank per device.
    uid = nccl.get_unique_id()
    assert len(uid) == nccl.NCCL_UNIQUE_ID_BYTES
    with cp.cuda.Device(1):
        one = nccl.NcclCommunicator(2, uid, 1)
    assert (one.rank_id(), one.device_id(), one.size()) == (1, 1, 2)
    with pytest.raises(nccl.NcclError, match="joined twice"):
        nccl.NcclCommunicator(2, uid, 1)
