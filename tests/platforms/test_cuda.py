"""The cuda platform. Device-independent parts (architecture selection, launch configuration,
memory settings, error messages, cache keys, donation analysis, NVRTC compilation of the plans
the GPU runs) run everywhere; `gpu`-marked tests run programs on a CUDA device against the
NumPy backend and skip, with the reason, where there is none."""
import gc
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import close

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import platforms
from gpuarr.backends import cuda, nvrtc, opencl
from gpuarr.compiler import passes, plan_closed, render
from gpuarr.platforms.cuda import CudaPlatform, donation_aliases

STANDIN = Path(__file__).parents[1] / "cupy_standin"
STANDIN_ON = os.environ.get("GPUARR_CUDA_STANDIN") == "1"

# ---- device-independent -------------------------------------------------------------------------


@pytest.mark.parametrize("cc,want", [("90", ("sm_90", "cubin")), ((8, 0), ("sm_80", "cubin")),
                                     (86, ("sm_86", "cubin")), ("sm_75", ("sm_75", "cubin"))])
def test_arch_for_known_architectures(cc, want):
    assert cuda.arch_for(cc, [75, 80, 86, 90]) == want
    assert cuda.arch_for(cc) == want  # nothing known about NVRTC: trust the device


def test_arch_for_newer_device_uses_ptx_of_the_newest_known():
    assert cuda.arch_for("120", [75, 80, 90, 100]) == ("sm_100", "ptx")
    with pytest.raises(cuda.CudaNotFoundError, match="gpuarr\\[cuda12\\]"):
        cuda.arch_for("50", [75, 80])


def test_supported_archs_include_hopper():
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    archs = cuda.supported_archs()
    assert 90 in archs and archs == sorted(archs)
    assert cuda.arch_for("90", archs) == ("sm_90", "cubin")


@pytest.mark.parametrize("global_size,local_size,grid", [
    (1024, 256, 4), (1000, 256, 4), (1, 64, 1), (0, 256, 1), (4096 * 256, 256, 4096)])
def test_launch_config(global_size, local_size, grid):
    assert cuda.launch_config(global_size, local_size) == ((grid,), (local_size,))


def test_launch_config_limits():
    with pytest.raises(ValueError, match="block size"):
        cuda.launch_config(100, 2048)
    assert cuda.launch_config(2**40, 32)[0] == (2**31 - 1,)


def test_launch_config_of_rendered_plans():
    """Every launch of a plan maps to whole blocks covering its global size."""
    closed = passes.optimize(jax.make_jaxpr(lambda x: jax.nn.softmax(x) + jnp.sum(x, 0))(
        np.ones((300, 50), np.float32)))
    launch_plan = render.render_plan(plan_closed(closed))
    for step in launch_plan.steps:
        if step.kind == "launch":
            (grid,), (block,) = cuda.launch_config(step.global_size, step.local_size)
            assert grid * block == step.global_size and block <= 1024


@pytest.mark.parametrize("env,want", [
    ({}, cuda.MemorySettings(True, 0.75)),
    ({"GPUARR_PREALLOCATE": "false"}, cuda.MemorySettings(False, 0.75)),
    ({"XLA_PYTHON_CLIENT_PREALLOCATE": "0"}, cuda.MemorySettings(False, 0.75)),
    ({"GPUARR_PREALLOCATE": "true", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
     cuda.MemorySettings(True, 0.75)),
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}, cuda.MemorySettings(True, 0.5)),
    ({"GPUARR_MEM_FRACTION": "0.9", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.2"},
     cuda.MemorySettings(True, 0.9)),
    ({"GPUARR_MEM_FRACTION": "", "XLA_PYTHON_CLIENT_MEM_FRACTION": "1"},
     cuda.MemorySettings(True, 1.0)),
])
def test_memory_settings(env, want):
    assert cuda.memory_settings(env) == want


@pytest.mark.parametrize("env,var", [
    ({"GPUARR_PREALLOCATE": "maybe"}, "GPUARR_PREALLOCATE"),
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "1.5"}, "XLA_PYTHON_CLIENT_MEM_FRACTION"),
    ({"GPUARR_MEM_FRACTION": "0"}, "GPUARR_MEM_FRACTION"),
    ({"GPUARR_MEM_FRACTION": "lots"}, "GPUARR_MEM_FRACTION"),
])
def test_memory_settings_errors_name_the_variable(env, var):
    with pytest.raises(ValueError, match=var):
        cuda.memory_settings(env)


def test_out_of_memory_message_names_sizes_and_variables():
    msg = cuda.out_of_memory_message(2**30, 5 * 2**30, 6 * 2**30, 8 * 2**30)
    for text in ("RESOURCE_EXHAUSTED", str(2**30), str(5 * 2**30), str(6 * 2**30),
                 "GPUARR_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION", "GPUARR_PREALLOCATE",
                 "XLA_PYTHON_CLIENT_PREALLOCATE"):
        assert text in msg


def test_nvrtc_cache_is_keyed_by_architecture(tmp_path, monkeypatch):
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    monkeypatch.setenv("GPUARR_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }'
    before = nvrtc.compile_count()
    a = nvrtc.compile(src, "k", arch="sm_80")
    b = nvrtc.compile(src, "k", arch="sm_90")
    assert a != b and nvrtc.compile_count() == before + 2
    nvrtc.compile(src, "k", arch="sm_90")
    assert nvrtc.compile_count() == before + 2


def test_missing_cupy_names_the_pip_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(cuda.CudaNotFoundError, match=r"gpuarr\[cuda12\]"):
        cuda.cupy()
    with pytest.raises(cuda.CudaNotFoundError, match=r"gpuarr\[cuda12\]"):
        cuda.device_count()


def test_device_buffer_describes_its_data():
    buf = cuda.DeviceBuffer(np.zeros((2, 3), np.float32), None, None)
    assert buf.shape == (2, 3) and buf.dtype == np.float32 and buf.ndim == 2
    assert buf.size == 6 and buf.nbytes == 24
    buf.synchronize()  # no event: nothing to wait for


def _plan(f, *args):
    return plan_closed(passes.optimize(jax.make_jaxpr(f)(*args)))


X = np.ones((4, 5), np.float32)


@pytest.mark.parametrize("f,args,want", [
    (lambda a, g: a - 0.1 * g, (X, X), {"out": 0}),       # SGD update: in place
    (lambda a: a.at[1].set(0.0), (X,), {"out": 0}),       # scatter updates the donated buffer
    (lambda a: (a + 1, a * 2), (X,), {"one": 0}),         # one output takes it
    (lambda a: a.T, (np.ones((4, 4), np.float32),), {}),  # transposed read: not in place
    (lambda a: a[::-1], (X,), {}),                        # reversed read
    (lambda a: jnp.sum(a, 1), (X,), {}),                  # shape differs
    (lambda a: a - jnp.sum(a, 1, keepdims=True), (X,), {}),  # read again by an epilogue
    (lambda a: a, (X,), {}),                              # the output is the input
    (lambda a: a.astype(jnp.int32), (X,), {}),            # dtype differs
])
def test_donation_aliases(f, args, want):
    plan = _plan(f, *args)
    first = len(plan.inputs) - len(args)  # program constants come first
    aliases = donation_aliases(plan, [plan.inputs[first]])
    assert len(aliases) == len(want)
    assert all(i == first for i in aliases.values())
    assert all(out in plan.outputs for out in aliases)


def test_mlp_step_kernels_compile_for_hopper():
    """The kernels the MLP benchmark launches compile with NVRTC for the H200 (sm_90)."""
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    params, batch = _mlp_inputs(np.random.default_rng(0), (12, 8, 8, 4), 6)
    closed = passes.optimize(jax.make_jaxpr(_sgd_step)(params, batch))
    launch_plan = render.render_plan(plan_closed(closed))
    launches = [s for s in launch_plan.steps if s.kind == "launch"]
    assert launches
    for step in launches:
        assert nvrtc.compile(step.source, step.name, arch="sm_90")[:4] == b"\x7fELF"


@pytest.mark.slow
def test_cuda_platform_unavailable_without_a_device():
    if _cuda_reason() is None:
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="cuda"):
        platforms.get_platform("cuda")
    code = "import gpuarr; print(gpuarr.default_backend())"
    env = {k: v for k, v in os.environ.items() if k not in ("GPUARR_PLATFORMS", "JAX_PLATFORMS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() in ("cpu", "opencl")
    env["GPUARR_PLATFORMS"] = "cuda"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "cuda" in out.stderr


# ---- programs shared with the GPU tests -----------------------------------------------------------

def _mlp_inputs(rng, sizes, batch):
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return params, (x, y)


def _loss(params, batch):
    x, y = batch
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


def _sgd_step(params, batch):
    grads = jax.grad(_loss)(params, batch)
    return jax.tree_map(lambda p, g: p - 0.01 * g, params, grads)


def _softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _scan_cumsum(x):
    return jax.lax.scan(lambda c, v: (c + v, c * v), jnp.zeros(x.shape[1:], x.dtype), x)


def _while(x):
    return jax.lax.fori_loop(0, 5, lambda i, v: v * 0.5 + i, x)


RNG = np.random.default_rng(0)
F = RNG.standard_normal((64, 300)).astype(np.float32)
I = RNG.integers(-50, 50, (64, 300)).astype(np.int32)

PROGRAMS = {
    "chain6": (lambda x: jnp.tanh(jnp.exp(-x * x) * 3.0 + jnp.sin(x)) - 1.0, (F,)),
    "broadcast": (lambda x, b: x * b[None, :] + b.sum(), (F, F[0])),
    "saturating_cast": (lambda x: (x * 100).astype(jnp.uint8), (F,)),
    "int_ops": (lambda a: (a // 7, a % 7, a >> 2, a & 5, jnp.abs(a)), (I,)),
    "full_sum": (lambda x: jnp.sum(x), (F,)),
    "row_sum": (lambda x: jnp.sum(x, axis=1), (F,)),
    "col_sum": (lambda x: jnp.sum(x, axis=0), (F,)),
    "max_min_prod": (lambda x: (jnp.max(x, 0), jnp.min(x, 1), jnp.prod(x[:4, :4], 1)), (F,)),
    "argmax": (lambda x: jnp.argmax(x, axis=1), (F,)),
    "softmax": (_softmax, (F,)),
    "logsumexp": (lambda x: jax.nn.logsumexp(x, axis=0), (F,)),
    "matmul": (lambda a, b: a @ b.T, (F, F)),
    "gather": (lambda x, i: x[i % 64, 3:40:2], (F, I[:, 0])),
    "scatter_add": (lambda x, i: x.at[i % 64].add(1.0), (F, I[:10, 0])),
    "sort": (lambda x: jnp.sort(x, axis=1), (F,)),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), (F,)),
    "scan": (_scan_cumsum, (F[:8, :16],)),
    "while": (_while, (F,)),
    "cond": (lambda x: jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x), (F,)),
    "random": (lambda k: jax.random.normal(jax.random.key_data(k), (1000,)),
               (np.asarray(jax.random.key_data(jax.random.key(0))),)),
    "grad": (jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)), (F,)),
}


@pytest.mark.parametrize("name", ["chain6", "softmax", "scatter_add", "scan"])
def test_program_table_on_the_opencl_platform(name):
    """The GPU tests' harness, run where PoCL is: committed inputs, the platform's kernels,
    results compared with the NumPy backend."""
    if not opencl.available():
        pytest.skip("PoCL / pyopencl not installed")
    dev = jax.devices("opencl")[0]
    f, args = PROGRAMS[name]
    want = jax.jit(f)(*_on_cpu(args))
    got = jax.jit(f)(*jax.device_put(args, dev))
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        assert g.device == dev and g.committed
        close(g, w, 2e-5, err_msg=name)


# ---- the cuda platform on the CuPy stand-in (tests/cupy_standin, docs/cuda-standin.md) ----------

def _cupy_modules():
    return [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupyx")]


def _fresh_standin(monkeypatch):
    """A new CuPy stand-in (fresh devices and pools) behind a new cuda platform, registered as
    platform 'cuda' until the test ends; the `cupy` modules are put back afterwards."""
    if not (opencl.available() and nvrtc.available()):
        pytest.skip("the CuPy stand-in runs kernels on PoCL and compiles them with NVRTC")
    platforms.default_platform()  # settled first: the stand-in must not become the default
    monkeypatch.syspath_prepend(str(STANDIN))
    for name in _cupy_modules():
        monkeypatch.delitem(sys.modules, name)
    plat = CudaPlatform()
    monkeypatch.setitem(platforms._loaded, "cuda", plat)
    monkeypatch.delitem(platforms._failures, "cuda", raising=False)
    return plat


@pytest.fixture
def standin(monkeypatch):
    """The real cuda platform over the CuPy stand-in, registered as platform 'cuda': under
    GPUARR_CUDA_STANDIN=1 the session's, otherwise a fresh one removed after the test, so the
    rest of the run never sees a `cupy` module."""
    if STANDIN_ON:
        yield platforms.get_platform("cuda")
        return
    yield _fresh_standin(monkeypatch)
    for name in _cupy_modules():
        del sys.modules[name]


@pytest.fixture
def fresh_standin(monkeypatch):
    """A stand-in of its own, for tests of device setup that must not share memory or pools."""
    yield _fresh_standin(monkeypatch)
    for name in _cupy_modules():
        del sys.modules[name]


def _cp():
    return cuda.cupy()


@pytest.mark.parametrize("name", ["chain6", "softmax", "scatter_add", "matmul", "while"])
def test_cuda_platform_runs_plans(standin, name):
    f, args = PROGRAMS[name]
    closed = passes.optimize(jax.make_jaxpr(f)(*args))
    outs = standin.compile(closed)(*args)
    assert all(isinstance(o, cuda.DeviceBuffer) for o in outs)
    want = jax.jit(f)(*_on_cpu(args))
    for g, w in zip(outs, jax.tree_leaves(want)):
        close(standin.to_host(g), w, 2e-5, err_msg=name)


def test_cuda_platform_donation_reuses_memory(standin):
    closed = passes.optimize(jax.make_jaxpr(lambda p, g: p - 0.5 * g)(F, F))
    run = standin.compile(closed)
    p = standin.from_host(F, standin.devices()[0])
    g = standin.from_host(F, standin.devices()[0])
    donating = run.donating((0,))
    assert donating.aliases == {run.launch_plan.outputs[0]: 0}
    (out,) = donating(p, g)
    assert out.data.data.ptr == p.data.data.ptr
    np.testing.assert_allclose(standin.to_host(out), F - 0.5 * F)


def test_arrays_on_the_cuda_platform(standin):
    dev = standin.devices()[0]
    x = jax.device_put(F, dev)
    assert isinstance(x._buffer, cuda.DeviceBuffer) and x.device == dev and x.committed
    y = jax.jit(lambda a: jnp.tanh(a) * 2)(x)  # jit outputs stay device buffers
    assert isinstance(y._buffer, cuda.DeviceBuffer) and y.device == dev
    z = jnp.sum(y + 1, axis=0)  # eager: one-equation programs through the same kernels
    assert isinstance(z._buffer, cuda.DeviceBuffer) and z.committed
    close(z, np.sum(np.tanh(F) * 2 + 1, axis=0), 2e-5, err_msg="eager")
    assert z.block_until_ready() is z
    assert "Array(" in repr(z) and np.asarray(z).dtype == np.float32
    assert type(jax.device_get(z)) is np.ndarray
    back = jax.device_put(z, jax.devices("cpu")[0])
    assert type(back._buffer) is np.ndarray and back.device == jax.devices("cpu")[0]


def test_jit_donation_on_the_cuda_platform(standin):
    dev = standin.devices()[0]
    p, g = jax.device_put((F, F), dev)
    step = jax.jit(lambda a, b: a - 0.5 * b, donate_argnums=0)
    ptr = p._buffer.data.data.ptr
    out = step(p, g)
    assert out._buffer.data.data.ptr == ptr
    np.testing.assert_allclose(np.asarray(out), F - 0.5 * F)
    with pytest.raises(RuntimeError):
        p + 1


def test_outputs_that_pass_inputs_through_get_their_own_memory(standin):
    closed = passes.optimize(jax.make_jaxpr(lambda a, b: (a, b + 1))(F, F))
    p = standin.from_host(F, standin.devices()[0])
    out, _ = standin.compile(closed)(p, p)
    assert out.data.data.ptr != p.data.data.ptr
    np.testing.assert_array_equal(standin.to_host(out), F)


def test_device_arrays_refuse_implicit_host_conversion(standin):
    """CuPy's ndarray.__array__ raises TypeError: gpuarr must always copy with .get()."""
    x = jax.device_put(F, standin.devices()[0])
    with pytest.raises(TypeError):
        np.asarray(x._buffer.data)
    np.testing.assert_array_equal(np.asarray(x), F)


# D1: 0-d values keep their shape on the device; scan and fori_loop carries are 0-d.
@pytest.mark.parametrize("value", [np.float32(1.5), np.array(2, np.int32), 3.0, True])
def test_scalars_stay_0d_on_the_device(standin, value):
    x = jax.device_put(value, standin.devices()[0])
    assert x.shape == () and x._buffer.data.shape == ()
    assert np.asarray(x) == np.asarray(value)


def test_scalar_carries_on_the_device(standin):
    dev = standin.devices()[0]
    n = jax.device_put(np.int32(0), dev)
    total = jax.jit(lambda n: jax.lax.fori_loop(0, 7, lambda i, c: c + i, n))(n)
    assert total.shape == () and int(total) == 21
    xs = jax.device_put(np.arange(5, dtype=np.float32), dev)
    carry, ys = jax.jit(lambda xs: jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs))(xs)
    assert carry.shape == () and float(carry) == 10.0
    np.testing.assert_array_equal(np.asarray(ys), [0, 0, 2, 9, 24])


# D2: device arrays captured as constants of a jitted function.
def test_device_constants_in_jitted_programs(standin):
    dev = standin.devices()[0]
    w = jax.device_put(jnp.arange(3.0), dev)
    x = jax.device_put(np.ones(3, np.float32), dev)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a * w)(x)), [0, 1, 2])
    # and on the cpu platform, where the constant is copied to the host
    got = jax.jit(lambda a: a * w)(_on_cpu(np.ones(3, np.float32)))
    assert got.device == jax.devices("cpu")[0]
    np.testing.assert_array_equal(np.asarray(got), [0, 1, 2])


def test_dropped_programs_free_their_device_constants(standin):
    """A jitted function's constants live on the device as long as its compiled program, and
    leave with it: they were kept for the life of the process."""
    dev = standin.devices()[0]
    pool = standin.context(dev.id).pool
    w = np.random.default_rng(0).standard_normal(1 << 18).astype(np.float32)  # 1 MiB
    x = jax.device_put(np.ones(1 << 18, np.float32), dev)
    f = jax.jit(lambda a: a * w + 1.0)
    jax.block_until_ready(f(x))
    gc.collect()
    before = pool.used_bytes()
    np.testing.assert_array_equal(np.asarray(f(x)), w + np.float32(1.0))
    del f
    jax.clear_caches()
    gc.collect()
    assert pool.used_bytes() <= before - w.nbytes


def test_loaded_kernels_stay_bounded(standin, monkeypatch):
    """Each device keeps at most LOADED_MODULES kernel sources loaded besides those of live
    programs, and programs still cached keep running after their module left the table."""
    monkeypatch.setattr(cuda, "LOADED_MODULES", 3)
    dev = standin.devices()[0]
    ctx = standin.context(dev.id)
    x = jax.device_put(np.arange(8, dtype=np.float32), dev)
    fs = [jax.jit(lambda a, k=k: jnp.sin(a) * (k + 0.5) + k) for k in range(6)]
    for k, f in enumerate(fs):
        close(np.asarray(f(x)), (np.sin(np.arange(8.0)) * (k + 0.5) + k).astype(np.float32), 1e-6)
        assert len(ctx._modules) <= 3
    close(np.asarray(fs[0](x)), (np.sin(np.arange(8.0)) * 0.5).astype(np.float32), 1e-6)


def test_eager_operations_cache_is_bounded_and_cleared(standin, monkeypatch):
    """Eager operations' compiled kernels are kept as JAX keeps its primitives' executables:
    a bounded number, least recently used first to go, all dropped by clear_caches."""
    from gpuarr.platforms import cuda as cuda_platform
    monkeypatch.setattr(cuda_platform, "EAGER_PROGRAMS", 2)
    x = jax.device_put(np.arange(4, dtype=np.float32), standin.devices()[0])
    for op, want in [(jnp.sin, np.sin), (jnp.cos, np.cos), (jnp.exp, np.exp)]:
        close(np.asarray(op(x)), want(np.arange(4, dtype=np.float32)), 1e-6)
        assert len(standin._eager) <= 2
    jax.clear_caches()
    assert len(standin._eager) == 0
    close(np.asarray(jnp.sin(x)), np.sin(np.arange(4, dtype=np.float32)), 1e-6)


def _counters():
    return _cp()._standin.counters


# D4: the MLP step's matrix products run on the device: no host transfers once compiled.
def test_mlp_step_makes_no_host_transfers(standin):
    dev = standin.devices()[0]
    params, batch = _mlp_inputs(np.random.default_rng(1), (32, 16, 16, 4), 8)
    params, batch = jax.device_put((params, batch), dev)
    step = jax.jit(_sgd_step)
    jax.block_until_ready(step(params, batch))  # compiles, uploads the constants once
    counters = _counters()
    counters.reset()
    params = jax.block_until_ready(step(params, batch))
    assert counters.h2d == 0 and counters.d2h == 0, counters
    assert counters.launches > 0 and counters.library_calls > 0, counters
    want = jax.jit(_sgd_step)(*_on_cpu(_mlp_inputs(np.random.default_rng(1), (32, 16, 16, 4), 8)))
    got = step(*_on_cpu(_mlp_inputs(np.random.default_rng(1), (32, 16, 16, 4), 8)))
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,f,args", [
    ("sort_rows", lambda x: jnp.sort(x, axis=0) * 2, (F,)),  # a strided library result feeds a kernel
    ("argsort", lambda x: jnp.argsort(x, axis=1), (F,)),
    ("sort_nan", lambda x: jnp.sort(x), (np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0], np.float32),)),
    ("fft", lambda x: jnp.fft.fft(x).real, (F[:4],)),
    ("rfft2", lambda x: jnp.fft.rfft2(x).imag, (F[:8, :16],)),
    ("irfft", lambda x: jnp.fft.irfft(jnp.fft.rfft(x)), (F[:4, :32],)),
    ("batched_matmul", lambda a: jnp.einsum("bij,bjk->bik", a, a), (F[:, :48].reshape(-1, 4, 4),)),
    ("int_matmul", lambda a: a @ a.T, (I[:8, :8],)),
    ("bool_dot", lambda a: jnp.dot(a > 0, a.T > 0), (F[:8, :8],)),
    ("conv", lambda x, w: jax.lax.conv_general_dilated(x, w, (2, 1), [(1, 2), (-1, 1)],
                                                         rhs_dilation=(1, 2)),
     (F[:16, :64].reshape(2, 2, 16, 16), F[16:24, :18].reshape(4, 2, 3, 6))),
    ("conv_groups", lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1,), [(1, 1)], lhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC"),
        feature_group_count=2), (F[:12, :16].reshape(3, 16, 4), F[20:26, :4].reshape(3, 2, 4))),
    ("qr", lambda a: jnp.abs(jnp.linalg.qr(a)[1]), (F[:8, :5],)),
    ("svd", lambda a: jnp.linalg.svd(a, compute_uv=False), (F[:6, :9],)),
    ("eigh", lambda a: jnp.linalg.eigvalsh(a @ a.T + 8 * jnp.eye(6)), (F[:6, :9],)),
    ("cholesky", lambda a: jnp.linalg.cholesky(a @ a.T + 8 * jnp.eye(6)), (F[:6, :9],)),
    ("eigvals", lambda a: jnp.linalg.eigvals(a), (F[:6, :6],)),  # cuSOLVER geev, CuPy 14
    ("eig_batched", lambda a: jnp.linalg.eig(a), (F[:, :75].reshape(-1, 5, 5)[:3],)),
    ("eig_symmetric", lambda a: jnp.linalg.eig(a + a.T)[0].real, (F[:5, :5],)),  # complex w
    ("cholesky_batched", lambda a: jnp.linalg.cholesky(a @ a.mT + 8 * jnp.eye(4)),
     (F[:, :24].reshape(-1, 4, 6),)),
    ("triangular", lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True),
     (np.tril(F[:8, :8]) + 8 * np.eye(8, dtype=np.float32), F[:8, :3])),
])
def test_library_steps_on_the_device(standin, name, f, args):
    dev = standin.devices()[0]
    dargs = jax.device_put(args, dev)
    jitted = jax.jit(f)
    jax.block_until_ready(jitted(*dargs))
    counters = _counters()
    counters.reset()
    got = jax.block_until_ready(jitted(*dargs))
    assert counters.h2d == 0 and counters.d2h == 0, (name, counters)
    want = jax.jit(f)(*_on_cpu(args))
    close(got, want, 2e-5, err_msg=name)


def test_device_cholesky_fills_failed_factorizations_with_nans(standin):
    """cuSOLVER's potrf does not raise (CuPy checks dev_info only under errstate); JAX's NaNs
    for a matrix that is not positive definite come from the factor's diagonal."""
    good = F[:5, :7] @ F[:5, :7].T + 4 * np.eye(5, dtype=np.float32)
    bad = good.copy()
    bad[2, 2] = -30.0
    x = jax.device_put(np.stack([good, bad, good]), standin.devices()[0])
    counters = _counters()
    counters.reset()
    got = np.asarray(jax.jit(jnp.linalg.cholesky)(x))
    assert counters.library_calls > 0, counters
    want = np.asarray(jax.jit(jnp.linalg.cholesky)(np.stack([good, bad, good])))
    assert np.isnan(got[1]).all() and np.isnan(want[1]).all()
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=1e-5, atol=1e-6)


def test_device_eig_gives_nans_where_geev_fails(standin):
    """cuSOLVER's geev leaves undefined outputs where it fails and CuPy leaves dev_info
    unchecked: matrices with non-finite entries get JAX's NaNs from gpuarr, the others their
    eigenpairs."""
    a = F[:, :48].reshape(-1, 4, 4)[:3].copy()
    a[1, 2, 0] = np.inf
    x = jax.device_put(a, standin.devices()[0])
    counters = _counters()
    counters.reset()
    w, v = jax.jit(jnp.linalg.eig)(x)
    w, v = np.asarray(w), np.asarray(v)
    assert counters.library.get("linalg.eig") == 1 and counters.d2h == 2, counters
    assert w.dtype == np.complex64 and v.shape == (3, 4, 4)
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all()
    want_w, want_v = np.linalg.eig(a[[0, 2]].astype(np.float64))
    np.testing.assert_allclose(w[[0, 2]], want_w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v[[0, 2]], want_v, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["left_eigenvectors", "lapack", "old_cusolver", "pivoted_qr"])
def test_host_library_steps_count_their_transfers(standin, monkeypatch, case):
    """Steps cuSOLVER has no form of (left eigenvectors, QR with column pivoting, geev before
    cuSOLVER 11.7, or EigImplementation.LAPACK asked for) run NumPy's LAPACK on the host: the
    operand comes down once and every result goes up, and the counters see each copy."""
    a = F[:5, :5]
    f, outs = {
        "left_eigenvectors": (lambda m: jax.lax.linalg.eig(m, compute_right_eigenvectors=False), 2),
        "lapack": (lambda m: jax.lax.linalg.eig(
            m, implementation=jax.lax.linalg.EigImplementation.LAPACK), 3),
        "old_cusolver": (lambda m: jax.lax.linalg.eig(m, compute_left_eigenvectors=False), 2),
        "pivoted_qr": (lambda m: jax.lax.linalg.qr(m, pivoting=True), 3),
    }[case]
    if case == "old_cusolver":
        monkeypatch.setenv("CUPY_STANDIN_CUSOLVER", "11600")  # CUDA 12.5's cuSOLVER: no geev
    x = jax.device_put(a, standin.devices()[0])
    jitted = jax.jit(lambda m: [o * 2 for o in f(m)])  # kernels after the host step
    jax.block_until_ready(jitted(x))
    counters = _counters()
    counters.reset()
    got = jax.block_until_ready(jitted(x))
    assert counters.d2h == 1 and counters.h2d == outs, counters
    assert not any(k.startswith("linalg.eig") for k in counters.library), counters
    want = jax.jit(lambda m: [o * 2 for o in f(m)])(_on_cpu(a))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(6, 6), (3, 5, 5), (7, 4), (4, 7)])
def test_device_lu_matches_cpu(standin, shape):
    a = F[:math.prod(shape) // 8 + 1].ravel()[:math.prod(shape)].reshape(shape)
    a = a.copy()
    a[..., 0, 0] = 0  # a zero first pivot forces a row swap
    x = jax.device_put(a, standin.devices()[0])
    counters = _counters()
    jitted = jax.jit(jax.lax.linalg.lu)
    jax.block_until_ready(jitted(x))
    counters.reset()
    got = jax.block_until_ready(jitted(x))
    assert counters.library_calls > 0, counters
    want = jax.jit(jax.lax.linalg.lu)(a)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


# D5: the preallocated block is taken on the context's stream and fits every fraction; it is
# gpuarr's own pool, so the user's CuPy allocations on other streams still find memory.
@pytest.mark.parametrize("fraction", ["0.9", "0.75", "0.333"])
def test_preallocation_fits_the_limit_and_serves_the_stream(fresh_standin, monkeypatch, fraction):
    monkeypatch.setenv("GPUARR_MEM_FRACTION", fraction)
    cp = _cp()
    user = cp.arange(1000, dtype=cp.float32)  # the user's pool holds memory before setup
    ctx = cuda.DeviceContext(0, cuda.memory_settings())
    held = ctx.pool.total_bytes()
    assert 0 < held <= ctx.limit
    x = ctx.empty((1 << 20,), np.float32)
    assert ctx.pool.total_bytes() == held  # split from the preallocated block, no new memory
    more = cp.ones(1 << 20, dtype=cp.float32)  # the user's CuPy, on the null stream
    assert float(more.sum()) == 1 << 20 and float(user[999]) == 999.0
    del x, ctx


# D6: strided, transposed and offset CuPy views are copied before kernels read them.
@pytest.mark.parametrize("view", ["transposed", "strided", "offset", "offset_2d"])
def test_imported_views_are_made_dense(standin, view):
    cp = _cp()
    base = cp.asarray(F)
    src = {"transposed": base.T, "strided": base[:, ::3], "offset": base.ravel()[1:],
           "offset_2d": base[1:, 1:]}[view]
    want = {"transposed": F.T, "strided": F[:, ::3], "offset": F.ravel()[1:], "offset_2d": F[1:, 1:]}[view]
    x = jnp.asarray(src)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda a: jnp.sin(a) * 2)(x)), np.sin(want) * 2,
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(x, axis=0)), want.sum(0), rtol=1e-4, atol=1e-4)
    cp.cuda.Device().synchronize()  # no sticky misaligned-address error was left behind


def test_dense_imports_share_memory_and_copies_do_not(standin):
    # D13: jnp.array copies (copy=True by default); jnp.asarray shares.
    cp = _cp()
    c = cp.arange(8, dtype=cp.float32)
    shared, copied = jnp.asarray(c), jnp.array(c)
    assert shared.__cuda_array_interface__["data"][0] == c.data.ptr
    assert copied.__cuda_array_interface__["data"][0] != c.data.ptr
    c[0] = 100.0
    cp.cuda.get_current_stream().synchronize()  # the write is ordered on the user's stream
    assert float(np.asarray(shared)[0]) == 100.0 and float(np.asarray(copied)[0]) == 0.0


# D14: loop state stays on the device; only a while loop's predicate comes back.
def test_loops_keep_their_state_on_the_device(standin):
    dev = standin.devices()[0]
    x = jax.device_put(F, dev)
    halve = lambda c: (c[0] + 1, c[1] * 0.5)  # noqa: E731
    loops = {
        "while": (jax.jit(lambda v: jax.lax.while_loop(lambda c: c[0] < 6, halve, (0, v))[1]), 7),
        "scan": (jax.jit(lambda v: jax.lax.scan(lambda c, r: (c + r, c * r), v[0], v)), 0),
        "cond": (jax.jit(lambda v: jax.lax.cond(v.sum() > 0, jnp.sin, jnp.cos, v)), 1),
    }
    counters = _counters()
    for name, (f, reads) in loops.items():
        jax.block_until_ready(f(x))
        counters.reset()
        out = jax.block_until_ready(f(x))
        assert counters.h2d == 0, (name, counters)
        assert counters.d2h == reads, (name, counters)  # predicates / branch indices only
        for g, w in zip(jax.tree_leaves(out), jax.tree_leaves(jax.jit(f)(_on_cpu(F)))):
            close(g, w, 2e-5, err_msg=name)


@pytest.fixture
def two_gpus(monkeypatch):
    """A fresh stand-in with two devices."""
    monkeypatch.setenv("CUPY_STANDIN_DEVICES", "2")
    yield _fresh_standin(monkeypatch)
    for name in _cupy_modules():
        del sys.modules[name]


def test_control_flow_runs_on_its_programs_device(two_gpus):
    """Sub-plans of loops and branches launch on the device of the program's operands (a
    kernel reading another GPU's memory faults: no peer access)."""
    d1 = two_gpus.devices()[1]
    x = jax.device_put(F, d1)
    loop = jax.jit(lambda v: jax.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i, v))
    out = loop(x)
    assert out.device == d1
    close(out, loop(_on_cpu(F)), 2e-5, err_msg="fori_loop on device 1")
    carry, ys = jax.jit(_scan_cumsum)(x[:8, :16])
    close(carry, jax.jit(_scan_cumsum)(_on_cpu(F[:8, :16]))[0], 2e-5, err_msg="scan on device 1")
    assert carry.device == d1 and ys.device == d1
    _cp().cuda.Device(1).synchronize()  # no fault was left on the device
    assert _cp().cuda.memory.allocated_on(0) == 0  # nothing ran on (or was copied to) device 0


def test_out_of_memory_names_sizes_and_what_to_do(standin):
    dev = standin.devices()[0]
    with pytest.raises(cuda.DeviceOutOfMemoryError) as e:
        jax.jit(lambda: jnp.zeros((2**40,), jnp.uint8) + 1, device=dev)().block_until_ready()
    msg = str(e.value)
    for text in ("RESOURCE_EXHAUSTED", str(2**40), "bytes free", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                 "smaller batch"):
        assert text in msg, msg


# ---- on a CUDA device -----------------------------------------------------------------------------

def _cuda_reason():
    """None when a CUDA device is usable, else why not."""
    try:
        platforms.get_platform("cuda")
    except RuntimeError as e:
        return str(e)
    return None


@pytest.fixture
def gpu():
    reason = _cuda_reason()
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    return jax.devices("cuda")[0]


def _on_cpu(tree):
    """`tree` committed to the cpu platform: computations on it run on the NumPy backend."""
    return jax.device_put(tree, jax.devices("cpu")[0])


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_on_gpu_matches_numpy(gpu, name):
    f, args = PROGRAMS[name]
    want = jax.jit(f)(*_on_cpu(args))  # the NumPy backend
    got = jax.jit(f)(*jax.device_put(args, gpu))
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        assert g.device == gpu and g.committed
        close(g, w, 2e-5, err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["chain6", "row_sum", "matmul", "gather", "sort"])
def test_eager_ops_on_gpu_match_numpy(gpu, name):
    f, args = PROGRAMS[name]
    want = f(*_on_cpu(args))
    got = f(*jax.device_put(args, gpu))
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        close(g, w, 2e-5, err_msg=name)


@pytest.mark.gpu
def test_mlp_sgd_step_on_gpu(gpu):
    params, batch = _mlp_inputs(np.random.default_rng(1), (784, 512, 512, 10), 256)
    want = jax.jit(_sgd_step)(*_on_cpu((params, batch)))
    got = jax.jit(_sgd_step)(*jax.device_put((params, batch), gpu))
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_devices_and_async_dispatch(gpu):
    assert repr(gpu) == "CudaDevice(id=0)"
    x = jax.device_put(jnp.ones((1024, 1024)), gpu)
    out = jax.jit(lambda a: jnp.sin(a) @ a)(x)  # returns before the GPU is done
    assert out.block_until_ready() is out
    assert jax.block_until_ready({"o": out})["o"] is out
    assert out.devices() == {gpu}
    np.testing.assert_allclose(np.asarray(out)[0, 0], np.sin(1.0) * 1024, rtol=1e-4)
    assert "Array(" in repr(out)


@pytest.mark.gpu
def test_donated_buffer_is_reused_in_place(gpu):
    x = jax.device_put(jnp.arange(1024.0), gpu)
    g = jax.device_put(jnp.ones(1024), gpu)
    ptr = x.__cuda_array_interface__["data"][0]
    step = jax.jit(lambda p, d: p - 0.5 * d, donate_argnums=0)
    out = step(x, g)
    assert out.__cuda_array_interface__["data"][0] == ptr
    np.testing.assert_allclose(np.asarray(out), np.arange(1024.0) - 0.5)
    with pytest.raises(RuntimeError):
        x + 1
    with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
        jax.jit(lambda p: jnp.sum(p), donate_argnums=0)(jax.device_put(jnp.ones(8), gpu))


@pytest.mark.gpu
def test_cuda_array_interface_and_dlpack_share_memory(gpu):
    cp = pytest.importorskip("cupy")
    x = jax.device_put(jnp.arange(12.0).reshape(3, 4), gpu)
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert "stream" in cai
    view = cp.asarray(x)
    assert view.data.ptr == cai["data"][0]
    assert x.__dlpack_device__() == (2, 0)
    c = cp.arange(5, dtype=cp.float32)
    y = jnp.asarray(c)
    assert y.__cuda_array_interface__["data"][0] == c.data.ptr
    z = jax.dlpack.from_dlpack(c)
    assert z.device == gpu
    np.testing.assert_array_equal(np.asarray(z + 1), np.arange(1, 6, dtype=np.float32))
    host = np.asarray(x)
    assert isinstance(host, np.ndarray) and host[2, 3] == 11.0


@pytest.mark.gpu
def test_torch_tensors_are_shared(gpu):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32, device="cuda")
    x = jnp.asarray(t)
    assert x.__cuda_array_interface__["data"][0] == t.data_ptr()
    back = torch.from_dlpack(x * 2)
    assert back.device.type == "cuda" and back[5].item() == 10.0


@pytest.mark.gpu
def test_memory_stays_flat_over_10000_calls(gpu):
    f = jax.jit(lambda a: a * 2.0 + 1.0)
    x = jax.device_put(jnp.ones(4096), gpu)
    pool = platforms.get_platform("cuda").context(gpu.id).pool
    for _ in range(100):
        x = f(x)
    x.block_until_ready()
    before = pool.used_bytes()
    for _ in range(10_000):
        x = f(x * 0.0)
    x.block_until_ready()
    assert pool.used_bytes() <= before + 64 * 1024


@pytest.mark.gpu
def test_out_of_memory_error_names_the_variables(gpu):
    with pytest.raises(cuda.DeviceOutOfMemoryError, match="GPUARR_MEM_FRACTION"), \
            jax.default_device(gpu):
        jax.jit(lambda: jnp.zeros((2**46,), jnp.uint8) + 1)().block_until_ready()


@pytest.mark.gpu
def test_two_gpus_each_run_their_own_arrays(gpu):
    if len(jax.devices("cuda")) < 2:
        pytest.skip("needs two CUDA devices")
    d0, d1 = jax.devices("cuda")[:2]
    a = jax.device_put(jnp.ones(8), d1)
    assert (a + 1).device == d1
    with pytest.raises(ValueError, match=r"CudaDevice\(id=0\).*CudaDevice\(id=1\)|"
                                          r"CudaDevice\(id=1\).*CudaDevice\(id=0\)"):
        jax.device_put(jnp.ones(8), d0) + a


@pytest.mark.gpu
def test_second_process_reuses_the_disk_cache(gpu, tmp_path):
    """CuPy's kernel cache (CUPY_CACHE_DIR) holds the compiled kernels: a second process finds
    every one there and writes nothing."""
    code = ("import numpy as np, gpuarr as jax, gpuarr.numpy as jnp\n"
            "d = jax.devices('cuda')[0]\n"
            "x = jax.device_put(np.ones((256, 256), np.float32), d)\n"
            "jax.jit(lambda a: jax.nn.softmax(jnp.tanh(a) * 2))(x).block_until_ready()\n")
    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path))

    def run():
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        return {p.name: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    first = run()
    assert first and run() == first


def test_no_warnings_from_module_import():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import gpuarr.platforms.cuda  # noqa: F401


def test_nvrtc_silences_header_noise_and_keeps_real_warnings(tmp_path, monkeypatch):
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    monkeypatch.setenv("GPUARR_DUMP_DIR", str(tmp_path))
    closed = passes.optimize(jax.make_jaxpr(lambda x: jnp.tanh(x) * 2 + jnp.sum(x))(F))
    for step in render.render_plan(plan_closed(closed)).steps:
        if step.kind == "launch":
            nvrtc.compile(step.source, step.name, use_disk_cache=False)
            assert nvrtc.compile_log(step.name) == ""  # the headers' helpers say nothing
    src = ('#warning "check this"\nextern "C" __global__ void noisy(float *x) '
           '{ x[threadIdx.x] += 1.0f; }')
    nvrtc.compile(src, "noisy", use_disk_cache=False)
    assert "check this" in nvrtc.compile_log("noisy")
    assert "check this" in (tmp_path / "noisy.log").read_text()
