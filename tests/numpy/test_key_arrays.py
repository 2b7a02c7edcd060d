"""Typed key arrays through jnp's shape and selection functions, their methods and `.at`,
compared with JAX: the same keys (raw data), shape and dtype, eagerly and under jit."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import random as grandom

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax import random as jrandom  # noqa: E402

MASK = np.array([True, False, True, False])

CASES = {
    "stack": lambda jnp, k, k1, k2: jnp.stack([k1, k2]),
    "stack_axis1": lambda jnp, k, k1, k2: jnp.stack([k, k], axis=1),
    "concatenate": lambda jnp, k, k1, k2: jnp.concatenate([k, k[::-1]]),
    "where": lambda jnp, k, k1, k2: jnp.where(jnp.asarray(MASK), k, k[::-1]),
    "where_scalar_key": lambda jnp, k, k1, k2: jnp.where(jnp.asarray(MASK), k, k1),
    "take": lambda jnp, k, k1, k2: jnp.take(k, jnp.array([0, 2])),
    "take_method": lambda jnp, k, k1, k2: k.take(jnp.array([3, 1])),
    "reshape": lambda jnp, k, k1, k2: jnp.reshape(k, (2, 2)),
    "ravel": lambda jnp, k, k1, k2: jnp.ravel(jnp.reshape(k, (2, 2))),
    "broadcast_to": lambda jnp, k, k1, k2: jnp.broadcast_to(k1, (3,)),
    "expand_dims": lambda jnp, k, k1, k2: jnp.expand_dims(k, 0),
    "squeeze": lambda jnp, k, k1, k2: jnp.squeeze(k[None]),
    "squeeze_method": lambda jnp, k, k1, k2: k[None].squeeze(),
    "transpose": lambda jnp, k, k1, k2: jnp.transpose(k.reshape(2, 2)),
    "swapaxes_method": lambda jnp, k, k1, k2: k.reshape(2, 2).swapaxes(0, 1),
    "flip": lambda jnp, k, k1, k2: jnp.flip(k),
    "roll": lambda jnp, k, k1, k2: jnp.roll(k, 1),
    "repeat": lambda jnp, k, k1, k2: jnp.repeat(k, 2),
    "tile": lambda jnp, k, k1, k2: jnp.tile(k, 2),
    "zeros_like": lambda jnp, k, k1, k2: jnp.zeros_like(k),
    "array": lambda jnp, k, k1, k2: jnp.array(k),
    "asarray": lambda jnp, k, k1, k2: jnp.asarray(k1),
    "at_set": lambda jnp, k, k1, k2: k.at[0].set(k1),
    "at_set_slice": lambda jnp, k, k1, k2: k.at[1:3].set(k[:2]),
}


def _run(case, api, jnp, random, jit):
    k = random.split(random.key(0), 4)
    k1, k2 = random.key(1), random.key(2)
    fn = CASES[case]
    if jit:
        return api.jit(lambda k, k1, k2: fn(jnp, k, k1, k2))(k, k1, k2)
    return fn(jnp, k, k1, k2)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_key_arrays_match_jax(case, jit):
    got = _run(case, gpuarr, gnp, grandom, jit)
    want = _run(case, jax, jjnp, jrandom, jit)
    assert str(got.dtype) == str(want.dtype) == "key<fry>"
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(grandom.key_data(got)),
                                  np.asarray(jrandom.key_data(want)))


def test_split_of_keys_gives_key_arrays():
    got = gnp.split(grandom.split(grandom.key(0), 4), 2)
    want = jjnp.split(jrandom.split(jrandom.key(0), 4), 2)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(grandom.key_data(g)),
                                      np.asarray(jrandom.key_data(w)))


def test_arithmetic_and_astype_on_keys_raise_as_in_jax():
    k = grandom.key(0)
    with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int32\."):
        k + 1
    with pytest.raises(NotImplementedError, match="Cannot call abstract method astype"):
        k.astype(np.uint32)
    with pytest.raises(TypeError):
        gnp.sin(k)


def _key_result_types(lib):
    """jnp.result_type of key arrays: their dtype when all arguments are of it (flax's scan
    builds the avals of its key inputs with it); promoting with anything else raises."""
    k = lib.random.split(lib.random.key(0), 3)
    out = []
    for args in [(k,), (k, k), (k, 1.0), (k, lib.numpy.float32(1)), (k.dtype,)]:
        try:
            out.append(str(lib.numpy.result_type(*args)))
        except (TypeError, ValueError) as e:
            out.append((type(e).__name__, str(e)))
    return out


def test_result_type_of_key_arrays_as_jax():
    assert _key_result_types(gpuarr) == _key_result_types(jax)
