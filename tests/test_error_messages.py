"""Error classes and messages of common mistakes, as JAX has them.

Each case runs the same program against gpuarr and, where JAX is installed, against JAX; the
error class and the first line of the message must agree. The JAX-free checks pin the texts."""
import operator

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp

CASES = {
    "add": lambda jax, jnp: jnp.ones(3) + jnp.ones(4),
    "add ranks": lambda jax, jnp: jnp.ones((2, 3)) + jnp.ones(4),
    "multiply": lambda jax, jnp: jnp.multiply(jnp.ones((2, 3)), jnp.ones((4, 3))),
    "subtract numpy": lambda jax, jnp: jnp.ones(3) - np.ones(4),
    "maximum": lambda jax, jnp: jnp.maximum(jnp.ones(3), jnp.ones(2)),
    "jit add": lambda jax, jnp: jax.jit(lambda a, b: a + b)(jnp.ones(3), jnp.ones(4)),
    "arctan2": lambda jax, jnp: jnp.arctan2(jnp.ones(3), jnp.ones(4)),
    "equal": lambda jax, jnp: jnp.ones(3) == jnp.ones(4),
    "logical_and": lambda jax, jnp: jnp.logical_and(jnp.ones(3) > 0, jnp.ones(4) > 0),
    "clip": lambda jax, jnp: jnp.clip(jnp.ones(3), jnp.zeros(4), 2),
    "power": lambda jax, jnp: jnp.ones(3) ** jnp.ones(4),
    "vmap add": lambda jax, jnp: jax.vmap(lambda a, b: a + b)(jnp.ones((2, 3)), jnp.ones((2, 4))),
    "broadcast_to": lambda jax, jnp: jnp.broadcast_to(jnp.ones(3), (2, 4)),
    "broadcast_to rank": lambda jax, jnp: jnp.broadcast_to(jnp.ones((2, 3)), (3,)),
    "reshape -1": lambda jax, jnp: jnp.ones(6).reshape(-1, 4),
    "concatenate": lambda jax, jnp: jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))]),
    "concatenate ranks": lambda jax, jnp: jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2,))]),
    "stack": lambda jax, jnp: jnp.stack([jnp.ones(2), jnp.ones(3)]),
    "too many indices": lambda jax, jnp: jnp.ones(3)[1, 2],
    "index of traced int": lambda jax, jnp: jax.jit(operator.index)(jnp.int32(2)),
    "index of traced bool": lambda jax, jnp: jax.jit(operator.index)(jnp.bool_(True)),
    "index of traced float": lambda jax, jnp: jax.jit(operator.index)(jnp.float32(2)),
    "index of traced vector": lambda jax, jnp: jax.jit(operator.index)(jnp.ones(1, jnp.int32)),
    "too many indices, advanced": lambda jax, jnp: jnp.ones(3)[1, None, jnp.array([0])],
    "unknown dtype": lambda jax, jnp: jnp.ones(3).astype("foo"),
    "negative shape": lambda jax, jnp: jnp.zeros((2, -3)),
    "uneven split": lambda jax, jnp: jnp.split(jnp.ones(5), 2),
    "duplicate axis": lambda jax, jnp: jnp.sum(jnp.ones((3, 2)), axis=(1, -1)),
    "item assignment": lambda jax, jnp: jnp.ones(3).__setitem__(0, 1),
    "boolean index under jit": lambda jax, jnp: jax.jit(lambda x: x[x > 0])(jnp.arange(3.)),
    "int of a tracer": lambda jax, jnp: jax.jit(lambda x: jnp.ones(int(x)))(3),
    "float of a tracer": lambda jax, jnp: jax.jit(lambda x: float(x))(1.),
    "arange of a tracer": lambda jax, jnp: jax.jit(lambda n: jnp.arange(n))(3),
    "numpy on a tracer": lambda jax, jnp: jax.jit(lambda x: np.asarray(x))(1.),
    "bool of a tracer": lambda jax, jnp: jax.jit(lambda x: 1 if x > 0 else 2)(1.),
    "item of a tracer": lambda jax, jnp: jax.jit(lambda x: x.item())(1.),
    # float() and complex() refuse a traced value even when grad or vmap knows it.
    "float under grad": lambda jax, jnp: jax.grad(lambda x: x * float(x))(2.),
    "complex under grad": lambda jax, jnp: jax.grad(lambda x: x * complex(x).real)(2.),
    "float under vmap": lambda jax, jnp: jax.vmap(lambda x: float(x))(jnp.ones(2)),
    "item assignment under jit": lambda jax, jnp: jax.jit(lambda x: x.__setitem__(0, 1))(
        jnp.ones(3)),
}


def _outcome(fn, jax, jnp):
    try:
        fn(jax, jnp)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__, str(e).split("\n")[0]
    return None, "no error"


@pytest.mark.parametrize("name", sorted(CASES))
def test_errors_match_jax(name):
    jax = pytest.importorskip("jax")
    ours = _outcome(CASES[name], gpuarr, gnp)
    theirs = _outcome(CASES[name], jax, jax.numpy)
    assert ours == theirs


@pytest.mark.parametrize("name, cls, text", [
    ("add", TypeError, "add got incompatible shapes for broadcasting: (3,), (4,)."),
    ("vmap add", TypeError, "add got incompatible shapes for broadcasting: (3,), (4,)."),
    ("add ranks", ValueError, "Incompatible shapes for broadcasting: shapes=[(2, 3), (4,)]"),
    ("broadcast_to", ValueError, "Incompatible types for broadcasting: input type=float32[3] and "
                                 "requested type=float32[2,4]"),
    ("concatenate", TypeError, "Cannot concatenate arrays with shapes that differ in dimensions "
                               "other than the one being concatenated: concatenating along "
                               "dimension 0 for shapes (2, 3), (2, 4)."),
    ("stack", ValueError, "All input arrays must have the same shape. Got (2,), (3,)."),
    ("too many indices", IndexError, "Too many indices: array is 1-dimensional, but 2 were indexed"),
    ("negative shape", TypeError, "broadcast_in_dim shape must have every element be nonnegative, "
                                  "got (2, -3)."),
    ("int of a tracer", gpuarr.errors.ConcretizationTypeError,
     "Abstract tracer value encountered where concrete value is expected: traced array with shape "
     "int32[]"),
    ("boolean index under jit", gpuarr.errors.NonConcreteBooleanIndexError,
     "Array boolean indices must be concrete; got bool[3]"),
])
def test_error_texts(name, cls, text):
    with pytest.raises(cls) as info:
        CASES[name](gpuarr, gnp)
    assert str(info.value).split("\n")[0] == text


@pytest.mark.parametrize("name", ["float under grad", "int of a tracer", "float of a tracer"])
def test_conversion_errors_name_the_function_as_jax(name):
    """The second line points to a dtype conversion, as JAX's does."""
    jax = pytest.importorskip("jax")

    def second_line(api, jnp):
        with pytest.raises(Exception) as info:
            CASES[name](api, jnp)
        return str(info.value).split("\n")[1]
    assert second_line(gpuarr, gnp) == second_line(jax, jax.numpy)
