"""gpuarr.flatten_util.ravel_pytree against jax.flatten_util.ravel_pytree: flat values, dtypes
and weak types, the unravel round trip, unravel's errors, and use under jit, grad and vmap."""
import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree as ravel_ref

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.flatten_util import ravel_pytree


def _trees(np_mod):
    """The same pytrees built with `np_mod` (jax.numpy or gpuarr.numpy)."""
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    return {
        "python_float": 1.5,
        "python_int": 3,
        "python_mixed": (1.0, 2),
        "f32_i32": (np_mod.asarray(f32), np_mod.arange(3)),
        "f16_f32": [np_mod.ones(2, np.float16) / 3, np_mod.asarray(f32)],
        "bool_int": {"m": np_mod.array([True, False]), "i": np_mod.arange(2)},
        "u8_i8": (np_mod.ones(2, np.uint8), np_mod.full((1, 2), -3, np.int8)),
        "numpy_f64": np.linspace(0.0, 1.0, 4),
        "complex": (np_mod.asarray(f32), np_mod.ones(2, np.complex64) * (1 + 2j)),
        "nested": {"b": [np_mod.asarray(f32), None, (2.0,)], "a": np_mod.zeros(())},
        "empty": {"x": [], "y": None},
    }


def _leaf_info(tree):
    return [(np.dtype(x.dtype), tuple(x.shape), bool(x.aval.weak_type))
            for x in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name", list(_trees(np)))
def test_flat_and_round_trip_match_jax(name):
    tree, tree_ref = _trees(jnp)[name], _trees(jnp_ref)[name]
    flat, unravel = ravel_pytree(tree)
    flat_ref, unravel_ref = ravel_ref(tree_ref)
    assert flat.shape == flat_ref.shape and flat.dtype == flat_ref.dtype
    assert flat.aval.weak_type == flat_ref.aval.weak_type
    np.testing.assert_array_equal(np.asarray(flat), np.asarray(flat_ref))
    back, back_ref = unravel(flat), unravel_ref(flat_ref)
    assert gpuarr.tree.structure(back) == gpuarr.tree.structure(tree)
    assert _leaf_info(back) == _leaf_info(back_ref)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(back_ref)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_single_dtype_unravel_is_dtype_polymorphic():
    _, unravel = ravel_pytree([jnp.ones(3), jnp.ones((1, 2))])
    out = unravel(jnp.arange(5))
    assert [x.dtype for x in out] == [np.int32, np.int32]
    assert [x.shape for x in out] == [(3,), (1, 2)]
    np.testing.assert_array_equal(np.asarray(out[1]), [[3, 4]])


def test_unravel_errors_match_jax():
    _, unravel = ravel_pytree([jnp.ones(3), jnp.arange(2)])
    _, unravel_ref = ravel_ref([jnp_ref.ones(3), jnp_ref.arange(2)])
    with pytest.raises(TypeError) as err_ref:
        unravel_ref(jnp_ref.ones(5, np.int32))
    with pytest.raises(TypeError) as err:
        unravel(jnp.ones(5, np.int32))
    assert str(err.value) == str(err_ref.value)
    # A vector of the wrong length fails in lax.split, as in JAX.
    with pytest.raises(ValueError, match=r"Sum of sizes 5 must be equal to dimension 0 of the "
                                         r"operand shape \[4\]"):
        unravel(jnp.ones(4))
    _, unravel_single = ravel_pytree([jnp.ones(3)])
    with pytest.raises(ValueError, match="Sum of sizes 3 must be equal to dimension"):
        unravel_single(jnp.ones(4))


def test_unravel_is_hashable_and_equal_per_structure():
    _, u1 = ravel_pytree({"a": jnp.ones(2), "b": jnp.arange(3)})
    _, u2 = ravel_pytree({"a": jnp.zeros(2), "b": jnp.arange(3) + 1})
    _, u3 = ravel_pytree({"a": jnp.zeros(3), "b": jnp.arange(3)})
    assert u1 == u2 and hash(u1) == hash(u2)
    assert u1 != u3


def _params(np_mod):
    return {"w": np_mod.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) / 5),
            "b": np_mod.asarray(np.array([0.5, -1.0], np.float32)),
            "n": np_mod.asarray(np.array([1.0, 2.0], np.float16))}


def _loss(np_mod, ravel):
    def loss(params):
        flat, unravel = ravel(params)
        p = unravel(flat * 2.0)
        return (np_mod.sum(np_mod.sin(p["w"]) * p["b"][:, None])
                + np_mod.sum(p["n"].astype(np.float32) ** 2) + np_mod.sum(flat ** 3))
    return loss


def test_grad_and_jit_match_jax():
    g = gpuarr.jit(gpuarr.grad(_loss(jnp, ravel_pytree)))(_params(jnp))
    g_ref = jax.jit(jax.grad(_loss(jnp_ref, ravel_ref)))(_params(jnp_ref))
    assert _leaf_info(g) == _leaf_info(g_ref)
    for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(g_ref)):
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=2e-6)


def test_vmap_ravel_and_unravel():
    batch = {"w": jnp.arange(12.0).reshape(4, 3), "i": jnp.arange(8).reshape(4, 2)}
    flats = gpuarr.vmap(lambda t: ravel_pytree(t)[0])(batch)
    assert flats.shape == (4, 5) and flats.dtype == np.float32
    _, unravel = ravel_pytree({"w": jnp.zeros(3), "i": jnp.zeros(2, np.int32)})
    back = gpuarr.jit(gpuarr.vmap(unravel))(flats)
    np.testing.assert_array_equal(np.asarray(back["w"]), np.asarray(batch["w"]))
    np.testing.assert_array_equal(np.asarray(back["i"]), np.asarray(batch["i"]))
    assert back["i"].dtype == np.int32
