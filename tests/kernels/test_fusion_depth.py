"""Deep programs on the kernel path: fusion walks expression DAGs with its own stack (no Python
recursion per op), and chains deeper than fusion.CHAIN_DEPTH_LIMIT split into several kernels.
Values are checked against the NumPy backend and a float32 NumPy loop."""
import numpy as np
import pytest
from helpers import close

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends import native
from gpuarr.backends.numpy import codegen
from gpuarr.compiler import fusion, passes, plan_closed, render
from gpuarr.compiler.plan import ElementwiseKernel
from gpuarr.platforms import get_platform

N_OPS = 10_000
x0 = np.linspace(-2.0, 2.0, 64, dtype=np.float32)


def chain(x, xp=jnp):
    """N_OPS elementwise ops: `x * 1.0001 + 0.5` pairs, every 25th pair `sin(x) - 0.25`."""
    for i in range(N_OPS // 2):
        x = xp.sin(x) - np.float32(0.25) if i % 25 == 0 else x * np.float32(1.0001) + np.float32(0.5)
    return x


def mixed_chain(x, n=800):
    """Shape-preserving piecewise and layout ops between elementwise ones, each step reading
    the previous one: pads that shift by one, reverses, dynamic updates, clamps, and now and
    then a gather (whose operand gets a buffer)."""
    idx = np.arange(63, -1, -1, dtype=np.int32)
    for i in range(n):
        step = i % 5
        if step == 0:
            x = lax.pad(x, np.float32(0.5), [(1, -1, 0)])
        elif step == 1:
            x = jnp.sin(x[::-1])
        elif step == 2:
            x = lax.dynamic_update_slice(x, jnp.full((3,), 0.5, np.float32), (i % 60,))
        elif step == 3 and i % 250 == 3:
            x = x[idx] + 0.125
        else:
            x = jnp.clip(x * 0.75, -0.9, 2.0) + 0.25
    return x


def numpy_chain(x):
    return chain(x.copy(), np)


def optimized(f, *args):
    return passes.optimize(gpuarr.make_jaxpr(f)(*args))


@pytest.mark.slow
def test_10000_op_chain_plans_and_renders_in_bounded_kernels():
    closed = optimized(chain, x0)
    assert len(closed.program.eqns) >= N_OPS
    plan = plan_closed(closed)
    kernels = plan.kernels
    assert all(isinstance(k, ElementwiseKernel) for k in kernels)
    # Split along the chain: each kernel's path is at most the limit (a sin costs 10, an add 1).
    assert N_OPS // fusion.CHAIN_DEPTH_LIMIT <= len(kernels) <= 4 * N_OPS // fusion.CHAIN_DEPTH_LIMIT
    assert max(len(k.nodes) for k in kernels) <= fusion.CHAIN_DEPTH_LIMIT + 8
    assert any("deeper than" in k.reason for k in kernels)
    launch_plan = render.render_plan(plan)
    sources = [s.source for s in launch_plan.steps if s.kind == "launch"]
    assert len(sources) == len(kernels)
    assert max(len(s) for s in sources) < 400_000


@pytest.mark.slow
def test_deep_chain_on_the_cpu_platform():
    cpu = gpuarr.devices("cpu")[0]
    got = gpuarr.jit(chain)(gpuarr.device_put(x0, cpu))
    close(got, numpy_chain(x0), 1e-4)


@pytest.mark.slow
def test_10000_op_chain_on_opencl(pocl):
    closed = optimized(chain, x0)
    (want,) = codegen.compile_closed(closed)(x0)
    close(want, numpy_chain(x0), 1e-4)
    device = gpuarr.devices("opencl")[0]
    got = gpuarr.jit(chain)(gpuarr.device_put(x0, device))
    assert got.device == device
    close(got, want, 1e-4)


@pytest.mark.slow
def test_deep_chain_of_piecewise_and_indexed_ops_on_opencl(pocl):
    closed = optimized(mixed_chain, x0)
    (want,) = codegen.compile_closed(closed)(x0)
    got = gpuarr.jit(mixed_chain)(gpuarr.device_put(x0, gpuarr.devices("opencl")[0]))
    close(got, want, 1e-4)
    close(gpuarr.jit(mixed_chain)(x0), want, 1e-4)   # the default platform agrees


def nested_concatenates(x, y, n=3000):
    """`n` concatenates, each of the previous result and one element of `y`, alternately
    prepended and appended, with a pad every 100 steps (pads of pads merge with them)."""
    for i in range(n):
        if i % 100 == 50:
            x = lax.pad(x, np.float32(-1.0), [(1, 0, 0)])
        elif i % 2:
            x = jnp.concatenate([y[i % 4:i % 4 + 1], x])
        else:
            x = jnp.concatenate([x, y[:1] * np.float32(i)])
    return x


@pytest.mark.slow
def test_3000_nested_concatenates_on_opencl(pocl):
    # Each concatenate's pieces are requests of the DAG walk (no Python recursion per level),
    # and a piece's pads merge into one, so its index map stays one clamp per dim.
    x, y = np.arange(5, dtype=np.float32), np.arange(4, dtype=np.float32) + 10
    closed = optimized(nested_concatenates, x, y)
    (want,) = codegen.compile_closed(closed)(x, y)
    plan = plan_closed(closed)
    assert all(isinstance(k, ElementwiseKernel) for k in plan.kernels) and len(plan.kernels) <= 8
    sources = [s.source for s in render.render_plan(plan).steps if s.kind == "launch"]
    assert max(len(s) for s in sources) < 1_000_000
    device = gpuarr.devices("opencl")[0]
    got = gpuarr.jit(nested_concatenates)(gpuarr.device_put(x, device), gpuarr.device_put(y, device))
    assert got.device == device and got.shape == (3005,)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_wide_concatenate_of_nested_concatenates(pocl):
    # The wide-concatenate split runs its pieces through the same walk.
    x = np.arange(3, dtype=np.float32)
    parts = lambda x: [jnp.concatenate([x * np.float32(k), x[:k % 3 + 1]]) for k in range(150)]  # noqa: E731

    def f(x):
        return jnp.concatenate(parts(nested_concatenates(x, x, 300)))
    closed = optimized(f, x)
    (want,) = codegen.compile_closed(closed)(x)
    assert any("pieces" in k.reason for k in plan_closed(closed).kernels)
    got = gpuarr.jit(f)(gpuarr.device_put(x, gpuarr.devices("opencl")[0]))
    np.testing.assert_array_equal(np.asarray(got), want)


def _kernels(f, *args):
    closed = passes.optimize(gpuarr.make_jaxpr(f)(*args))
    return [k for k in plan_closed(closed).kernels if isinstance(k, ElementwiseKernel)]


def test_shared_value_read_twice_in_one_kernel_is_not_buffered():
    # Each x feeds both sin and cos, whose results meet again: one kernel computes x once per
    # element, so no step gets a buffer for being shared; 50 steps are the two kernels the
    # depth bound makes instead of 50 (fewer launches, less C to compile).
    def sin_cos(x):
        for k in range(50):
            x = jnp.sin(x) * (1.0 + k * 1e-3) + jnp.cos(x) * 0.5 - 0.25
        return x

    kernels = _kernels(sin_cos, x0)
    assert len(kernels) == 2 and not any("shared by" in k.reason for k in kernels)
    want = x0.astype(np.float64)
    for k in range(50):
        want = np.sin(want) * np.float32(1.0 + k * 1e-3) + np.cos(want) * 0.5 - 0.25
    if native.available():   # the two kernels, built and run on the native platform
        got = get_platform("native").compile(gpuarr.make_jaxpr(sin_cos)(x0))(x0)[0]
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_shared_value_read_at_two_indices_is_still_buffered():
    # x[1:] + x[:-1] reads a costly x at two offsets: computing it once (a buffer) beats
    # computing it twice per element, and a chain of such stencils stays linear.
    def stencil(x):
        for _ in range(6):
            x = jnp.exp(jnp.sin(x) * 0.5)
            x = jnp.concatenate([x[:1], (x[1:] + x[:-1]) * 0.5])
        return x

    kernels = _kernels(stencil, x0)
    assert len(kernels) >= 6
    assert sum("computed 3 times per element" in k.reason for k in kernels) == 6
