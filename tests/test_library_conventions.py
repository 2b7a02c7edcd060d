"""What libraries built on JAX (chex, optax) read from it, compared with JAX 0.10.2: the
sharding in a value's type, device_put's refusal of non-array leaves, comparisons of key
arrays, the jit object's name and signature, checkify's message values and the backend errors."""
import inspect
import re
import sys

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_the_type_carries_jax_unsharded_sharding(shape):
    ours, theirs = gpuarr.typeof(gnp.ones(shape)).sharding, jax.typeof(jnp.ones(shape)).sharding
    assert repr(ours) == repr(theirs)
    assert ours.is_fully_replicated and theirs.is_fully_replicated
    traced = []
    gpuarr.jit(lambda x: traced.append(repr(gpuarr.typeof(x).sharding)) or x)(gnp.ones(shape))
    assert traced == [repr(theirs)]


def test_the_type_sharding_is_accepted_as_out_sharding():
    # optax's tree_utils.tree_random_like passes `jax.typeof(leaf).sharding` on to the sampler.
    def sample(lib, jnp_):
        x = jnp_.ones((2, 3))
        key = lib.random.key(3)
        return [lib.random.normal(key, x.shape, out_sharding=lib.typeof(x).sharding),
                lib.jit(lambda x: lib.random.uniform(key, x.shape,
                                                     out_sharding=lib.typeof(x).sharding))(x)]
    for got, want in zip(sample(gpuarr, gnp), sample(jax, jnp)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("value", [float, "abc", b"ab", object(), np.array(["a"]),
                                   np.array([object()]), np.datetime64(1, "s")],
                         ids=["type", "str", "bytes", "object", "str-array", "object-array",
                              "datetime"])
def test_device_put_refuses_what_is_no_array_as_jax(value):
    # chex's with_device variant device_puts every argument and keeps those that raise.
    with pytest.raises(TypeError) as theirs:
        jax.device_put(value)
    with pytest.raises(TypeError) as ours:
        gpuarr.device_put(value)
    if "Dtype" in str(theirs.value):
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("value", [1.5, 2, True, 1 + 2j, np.float16(1), np.arange(3)])
def test_device_put_keeps_array_values(value):
    got, want = gpuarr.device_put(value), jax.device_put(value)
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_key_arrays_compare_as_in_jax():
    def compare(lib, jnp_):
        k1, k2 = lib.random.split(lib.random.key(1)), lib.random.split(lib.random.key(2))
        return [jnp_.equal(k1, k2), jnp_.not_equal(k1, k1), jnp_.equal(k1, k1[:1]),
                jnp_.array_equal(k1, k1), jnp_.array_equal(k1, k2, equal_nan=True),
                jnp_.array_equal(k1, k1[:1]), lib.jit(jnp_.array_equal)(k1, k1),
                lib.jit(jnp_.not_equal)(k1, k2)]
    for got, want in zip(compare(gpuarr, gnp), compare(jax, jnp)):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    key = gpuarr.random.split(gpuarr.random.key(1))
    with pytest.raises(TypeError, match=re.escape("equal does not accept dtypes key<fry>, float32.")):
        gnp.array_equal(key, gnp.ones(2))


def test_a_jit_object_is_named_printed_and_inspected_as_jax():
    def f(x, y=2, *, z=3):
        return x
    ours, theirs = gpuarr.jit(f), jax.jit(f)
    assert type(ours).__name__ == type(theirs).__name__ == "PjitFunction"
    assert repr(ours) == repr(theirs) == f"<PjitFunction of {f!r}>"
    assert inspect.signature(ours, follow_wrapped=False) == inspect.signature(theirs, follow_wrapped=False)
    assert str(inspect.signature(ours, follow_wrapped=False)) == "(x, y=2, *, z=3)"


def test_checkify_formats_the_message_with_arrays():
    # chexify's messages show a tree of the failing values (`{'b': Array(nan, ...)}`).
    def message(lib, jnp_):
        from importlib import import_module
        checkify = import_module(lib.__name__ + ".experimental.checkify")

        def f(x):
            checkify.check(jnp_.all(jnp_.isfinite(x)), "non-finite: {!r}", {"b": x})
            return x
        err, _ = lib.jit(checkify.checkify(f))(jnp_.array([0.0, np.nan], np.float32))
        with pytest.raises(checkify.JaxRuntimeError) as e:
            checkify.check_error(err)
        return str(e.value)
    assert message(gpuarr, gnp).splitlines()[0] == message(jax, jnp).splitlines()[0]
    assert "Array([ 0., nan], dtype=float32)" in message(gpuarr, gnp)


@pytest.mark.parametrize("backend", ["tpu", "rocm", "no_such_backend"])
def test_an_unknown_backend_is_named_as_jax_names_it(backend):
    with pytest.raises(RuntimeError, match="Unknown backend"):
        gpuarr.devices(backend)


def test_key_arrays_convert_only_to_their_own_dtype_as_in_jax():
    # optax's MultiSteps casts every leaf of its state back to its dtype, keys included.
    def run(jax_, np_):
        k = jax_.random.key(0)
        same = jax_.jit(lambda k: np_.astype(np_.where(True, k, k), k.dtype))(k)
        out = [jax_.random.key_data(same), jax_.random.key_data(np_.astype(k, k.dtype))]
        for bad in (lambda: np_.astype(k, np_.float32),
                    lambda: jax_.lax.convert_element_type(k, np_.uint32),
                    lambda: jax_.lax.convert_element_type(np_.ones(2, np_.uint32), k.dtype)):
            with pytest.raises(ValueError) as info:
                bad()
            out.append(str(info.value).split(". ")[0])
        return out

    ours, theirs = run(gpuarr, gnp), run(jax, jnp)
    for got, want in zip(ours[:2], theirs[:2]):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("name", ["complex64", "complex128", "float32", "bfloat16", "int8", "bool_"])
def test_iscomplexobj_reads_a_scalar_type_s_dtype_as_jax(name):
    # optax's alias tests skip complex cases with jnp.iscomplexobj(jnp.complex64).
    ours, theirs = getattr(gnp, name), getattr(jnp, name)
    assert gnp.iscomplexobj(ours) == jnp.iscomplexobj(theirs)
    assert gnp.isrealobj(ours) == jnp.isrealobj(theirs)


def test_parse_flags_with_absl_applies_the_jax_flags_of_the_command_line(monkeypatch):
    # flax's test files call jax.config.parse_flags_with_absl() at import.
    monkeypatch.setattr(sys, "argv", ["prog", "-q", "--jax_debug_infs", "--jax_no_such=1",
                                      "--jax_default_matmul_precision=highest", "--",
                                      "--jax_debug_nans=1"])
    before = {n: gpuarr.config.read(n) for n in ("debug_infs", "debug_nans",
                                                 "default_matmul_precision")}
    try:
        gpuarr.config.parse_flags_with_absl()
        assert gpuarr.config.debug_infs is True
        assert gpuarr.config.default_matmul_precision == "highest"
        assert gpuarr.config.debug_nans == before["debug_nans"]  # after "--": not a flag
    finally:
        for name, value in before.items():
            gpuarr.config.update(name, value)


@pytest.mark.jax_cpu_devices
def test_mesh_utils_lay_devices_out_as_jax():
    # flax's tests build meshes with jax.experimental.mesh_utils.create_device_mesh.
    from jax.experimental import mesh_utils as theirs

    from gpuarr.experimental import mesh_utils as ours
    n = len(jax.devices())
    got, want = ours.create_device_mesh((n,)), theirs.create_device_mesh((n,))
    assert got.shape == want.shape and [d.id for d in got.flat] == [d.id for d in want.flat]
    got = ours.create_hybrid_device_mesh((n,), (1,), process_is_granule=True)
    want = theirs.create_hybrid_device_mesh((n,), (1,), process_is_granule=True)
    assert [d.id for d in got.flat] == [d.id for d in want.flat]
    for module in (ours, theirs):
        with pytest.raises(ValueError, match=f"Number of devices {n} must equal the product of "
                                             rf"mesh_shape \({n + 1},\)"):
            module.create_device_mesh((n + 1,))


def test_eval_shape_takes_shaped_arrays_as_jax():
    # flax's ConvLocal finds its output shape with eval_shape over ShapedArrays.
    def conv(m):
        return lambda lhs, rhs: m.lax.conv_general_dilated(lhs, rhs, (1,), "SAME")
    got = gpuarr.eval_shape(conv(gpuarr), gpuarr.core.ShapedArray((1, 2, 8), np.float32),
                            gpuarr.core.ShapedArray((3, 2, 3), np.float32))
    want = jax.eval_shape(conv(jax), jax.core.ShapedArray((1, 2, 8), np.float32),
                          jax.core.ShapedArray((3, 2, 3), np.float32))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
