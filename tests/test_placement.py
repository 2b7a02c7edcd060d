"""Placement (SPEC S21): devices, committed and uncommitted arrays, computation following
committed inputs, default_device, device_put/device_get, DLPack on the host. Runs on cpu; a
second device is a CpuDevice with id 1 built here, or the opencl platform's device."""
import subprocess
import sys

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr.backends import opencl
from gpuarr.platforms.cpu import CpuDevice


@pytest.fixture(autouse=True)
def _cpu_default():
    """These tests describe the cpu platform as the default (also on a machine with a GPU)."""
    jax.config.update("jax_platforms", "cpu")


@pytest.fixture
def other_device():
    """A second device of the cpu platform (one process has only CpuDevice(id=0))."""
    return CpuDevice("cpu", 1)


def test_devices_and_reprs():
    devs = jax.devices()
    assert devs == [CpuDevice("cpu", 0)]
    assert repr(devs[0]) == "CpuDevice(id=0)"
    assert jax.devices("cpu") == devs and jax.local_devices() == devs
    assert jax.device_count() == 1 and jax.local_device_count() == 1
    assert jax.default_backend() == "cpu"
    assert devs[0].platform == "cpu" and devs[0].id == 0


def test_new_arrays_are_uncommitted_on_the_first_device():
    x = jnp.arange(3.0)
    assert x.devices() == {CpuDevice("cpu", 0)}
    assert x.device == jax.devices()[0]
    assert not x.committed
    assert not (x + 1).committed


def test_device_put_commits_only_with_a_device():
    x = jnp.arange(4, dtype=jnp.int16)
    assert not jax.device_put(x).committed
    y = jax.device_put(x, jax.devices()[0])
    assert y.committed and y.device == jax.devices()[0]
    assert y.dtype == np.int16 and y.shape == (4,)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4, dtype=np.int16))
    # device_put of a committed array without a device gives an uncommitted one
    assert not jax.device_put(y).committed


def test_device_put_host_values_and_pytrees():
    tree = {"a": np.arange(3, dtype=np.float64), "b": (2.0, np.int32(7))}
    out = jax.device_put(tree, jax.devices()[0])
    assert all(leaf.committed for leaf in jax.tree_leaves(out))
    assert out["a"].dtype == np.float32  # x64 off: canonicalised like any new array
    assert out["b"][0].weak_type and out["b"][0].dtype == np.float32
    assert out["b"][1].dtype == np.int32 and int(out["b"][1]) == 7
    plain = jax.device_put(tree)
    assert not any(leaf.committed for leaf in jax.tree_leaves(plain))


def test_device_put_rejects_non_devices():
    with pytest.raises(ValueError, match="device_put` only accepts .* Received invalid value: cuda:0"):
        jax.device_put(jnp.ones(2), "cuda:0")


def test_eager_computation_follows_committed_inputs(other_device):
    x = jax.device_put(jnp.arange(3.0), other_device)
    y = jnp.ones(3)
    for out in (x + y, y * x, jnp.sin(x), jnp.sum(x), x[1:]):
        assert out.committed and out.device == other_device
    np.testing.assert_allclose(np.asarray(x + y), np.arange(3.0) + 1)
    assert (x + y).dtype == np.float32


def test_multiple_result_primitive_commits_every_output(other_device):
    x = jax.device_put(jnp.array([3.0, 1.0, 2.0]), other_device)
    vals, idx = jax.lax.top_k(x, 2)
    assert vals.committed and idx.committed
    assert vals.device == other_device == idx.device
    np.testing.assert_array_equal(np.asarray(idx), [0, 2])


def test_two_committed_devices_raise_naming_both(other_device):
    a = jax.device_put(jnp.ones(3), jax.devices()[0])
    b = jax.device_put(jnp.ones(3), other_device)
    with pytest.raises(ValueError, match=r"CpuDevice\(id=0\).*CpuDevice\(id=1\)"):
        a + b


def test_jit_follows_committed_inputs(other_device):
    f = jax.jit(lambda a, b: a * b + 1)
    x = jnp.arange(3.0)
    c = jax.device_put(x, other_device)
    assert not f(x, x).committed
    out = f(c, x)
    assert out.committed and out.device == other_device
    np.testing.assert_allclose(np.asarray(out), np.arange(3.0) ** 2 + 1)
    assert out.dtype == np.float32
    # the cached uncommitted signature is unaffected
    assert not f(x, x).committed


def test_jit_two_committed_devices_raise_naming_arguments(other_device):
    def f(params, batch):
        return params * batch

    a = jax.device_put(jnp.ones(3), jax.devices()[0])
    b = jax.device_put(jnp.ones(3), other_device)
    with pytest.raises(ValueError) as err:
        jax.jit(f)(a, b)
    msg = str(err.value)
    assert "CpuDevice(id=0)" in msg and "CpuDevice(id=1)" in msg
    assert "'params'" in msg and "'batch'" in msg and "f" in msg


def test_transformations_of_committed_inputs(other_device):
    x = jax.device_put(jnp.arange(1.0, 4.0), other_device)
    g = jax.grad(lambda v: jnp.sum(v ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.arange(1.0, 4.0))
    v = jax.vmap(lambda r: r * 2)(x)
    np.testing.assert_allclose(np.asarray(v), 2 * np.arange(1.0, 4.0))


def test_default_device_context_manager(other_device):
    outside = jnp.arange(2.0)
    with jax.default_device(other_device):
        x = jnp.asarray([0.0, 1.0])
        assert x.device == other_device and not x.committed
        y = jnp.exp(outside) + 1  # uncommitted inputs follow the default device
        assert y.device == other_device and not y.committed
        np.testing.assert_allclose(np.asarray(y), np.exp([0.0, 1.0]) + 1, rtol=1e-6)
        with jax.default_device(jax.devices()[0]):
            assert jnp.asarray(1.0).device == jax.devices()[0]
        assert jnp.asarray(1.0).device == other_device
    assert jnp.asarray([0.0]).device == jax.devices()[0]
    assert (outside + 1).device == jax.devices()[0]


def test_jit_inside_default_device(other_device):
    f = jax.jit(lambda a: a * 3)
    x = jnp.arange(3.0)
    assert f(x).device == jax.devices()[0]
    with jax.default_device(other_device):
        out = f(x)
        assert out.device == other_device and not out.committed
    np.testing.assert_allclose(np.asarray(out), [0.0, 3.0, 6.0])
    assert f(x).device == jax.devices()[0]


def test_default_device_is_restored_after_an_error(other_device):
    with pytest.raises(ZeroDivisionError), jax.default_device(other_device):
        raise ZeroDivisionError
    assert jnp.zeros(1).device == jax.devices()[0]


def test_default_device_rejects_a_platform_it_cannot_use():
    # As in JAX: a platform name is looked up, and an unusable platform is a RuntimeError.
    with pytest.raises(RuntimeError), jax.default_device("tpu"):
        pass


def test_device_get_and_block_until_ready():
    tree = {"x": jnp.arange(3), "n": 5, "s": "text"}
    host = jax.device_get(tree)
    assert type(host["x"]) is np.ndarray and host["x"].dtype == np.int32
    assert host["n"] == 5 and host["s"] == "text"
    assert jax.block_until_ready(tree) is tree
    y = jnp.ones(3)
    assert y.block_until_ready() is y


def test_donation_of_committed_arrays_still_applies():
    x = jax.device_put(jnp.ones(3), jax.devices()[0])
    f = jax.jit(lambda a: a + 1, donate_argnums=0)
    out = f(x)
    np.testing.assert_allclose(np.asarray(out), 2.0)
    assert out.committed
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


@pytest.mark.skipif(not opencl.available(), reason="PoCL / pyopencl not installed")
def test_opencl_device_is_a_second_platform():
    dev = jax.devices("opencl")[0]
    assert repr(dev) == "OpenCLDevice(id=0)"
    x = jax.device_put(jnp.arange(4.0), dev)
    out = jax.jit(lambda a: jnp.exp(a) * 2)(x)
    assert out.device == dev and out.committed
    np.testing.assert_allclose(np.asarray(out), np.exp(np.arange(4.0)) * 2, rtol=1e-6)
    cpu = jax.device_put(jnp.ones(4), jax.devices("cpu")[0])
    with pytest.raises(ValueError, match=r"OpenCLDevice\(id=0\).*CpuDevice\(id=0\)"):
        x + cpu
    back = jax.device_put(x, jax.devices("cpu")[0])
    assert back.device == jax.devices("cpu")[0]
    np.testing.assert_array_equal(np.asarray(back), np.arange(4.0, dtype=np.float32))


# ---- DLPack and the CUDA array interface on the host --------------------------------------------

def test_dlpack_round_trip_with_numpy():
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = jax.dlpack.from_dlpack(src)
    assert x.shape == (2, 3) and x.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(x), src)
    assert x.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(x)
    np.testing.assert_array_equal(back, src)


def test_from_dlpack_canonicalises_64_bit_and_commits():
    x = jax.dlpack.from_dlpack(np.arange(3.0))
    assert x.dtype == np.float32
    y = jax.dlpack.from_dlpack(np.arange(3.0), device=jax.devices()[0])
    assert y.committed
    assert jax.dlpack.from_dlpack(x) is x


def test_cuda_array_interface_is_absent_on_cpu():
    x = jnp.ones(3)
    assert not hasattr(x, "__cuda_array_interface__")
    assert not jax.dlpack.is_gpu_array(np.ones(3))
    assert not jax.dlpack.is_gpu_array(x)


def test_from_dlpack_with_torch_cpu_tensor():
    torch = pytest.importorskip("torch")
    t = torch.arange(5, dtype=torch.float32)
    x = jax.dlpack.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(x), np.arange(5, dtype=np.float32))


def test_platform_order_from_the_environment():
    code = "import gpuarr; print(gpuarr.default_backend(), gpuarr.devices())"
    for var in ("GPUARR_PLATFORMS", "JAX_PLATFORMS"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"PATH": "", var: "cpu"}, check=True).stdout
        assert out.strip() == "cpu [CpuDevice(id=0)]"


def test_default_device_takes_a_platform_name():
    with jax.default_device("cpu"):
        assert jnp.ones(2).device == jax.devices("cpu")[0]
    with pytest.raises(ValueError, match="must be passed either a Device object"):
        with jax.default_device(3):
            pass
