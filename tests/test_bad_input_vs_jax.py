"""Bad input as a new user gives it, run under gpuarr and JAX: the same exception class, and
the same first message line (library names aside) unless the table says otherwise.

Where JAX's words come from one of its internals (`safe_map() argument 2 is shorter than
argument 1`, `tuple index out of range`), gpuarr keeps JAX's class and says what is wrong
instead (`ours=`: fragments our message must contain); where both messages name the problem
in different words, `shared=` lists fragments both contain. tests/test_error_messages.py has
more cases of the same kind."""
import re

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr.backends import opencl


def case(fn, *, ours=(), shared=(), prefix=False):
    return fn, tuple(ours), tuple(shared), prefix


_K = lambda jax: jax.random.PRNGKey(0)  # noqa: E731

CASES = {
    # shapes
    "reshape wrong size": case(lambda jax, jnp: jnp.ones(6).reshape(4, 2)),
    "reshape two -1": case(lambda jax, jnp: jnp.ones(6).reshape(-1, -1)),
    "reshape float size": case(lambda jax, jnp: jnp.ones(6).reshape(2.0, 3)),
    "lax.reshape dimensions": case(
        lambda jax, jnp: jax.lax.reshape(jnp.ones((2, 3)), (3, 2), dimensions=(0,))),
    "lax.reshape repeated dimensions": case(
        lambda jax, jnp: jax.lax.reshape(jnp.ones((2, 3)), (3, 2), dimensions=(0, 0))),
    "transpose bad perm": case(lambda jax, jnp: jnp.transpose(jnp.ones((2, 3)), (0, 0))),
    "lax.transpose bad perm": case(lambda jax, jnp: jax.lax.transpose(jnp.ones((2, 3)), (0, 2))),
    "swapaxes out of range": case(lambda jax, jnp: jnp.swapaxes(jnp.ones((2, 3)), 0, 2)),
    "moveaxis out of range": case(lambda jax, jnp: jnp.moveaxis(jnp.ones((2, 3)), 0, 5)),
    "expand_dims out of range": case(lambda jax, jnp: jnp.expand_dims(jnp.ones(3), 3)),
    "squeeze non-unit": case(lambda jax, jnp: jnp.squeeze(jnp.ones((2, 3)), 0)),
    "squeeze out of range": case(lambda jax, jnp: jnp.squeeze(jnp.ones((1, 3)), 2)),
    "lax.squeeze non-unit": case(lambda jax, jnp: jax.lax.squeeze(jnp.ones((2, 3)), (0,))),
    "concatenate axis": case(lambda jax, jnp: jnp.concatenate([jnp.ones(3), jnp.ones(3)], axis=1)),
    "concatenate empty": case(lambda jax, jnp: jnp.concatenate([])),
    "stack empty": case(lambda jax, jnp: jnp.stack([])),
    "repeat wrong length": case(lambda jax, jnp: jnp.repeat(jnp.ones(3), jnp.array([1, 2])),
                                shared=["(2,)"]),
    "flip out of range": case(lambda jax, jnp: jnp.flip(jnp.ones(3), 1)),
    "roll axis out of range": case(lambda jax, jnp: jnp.roll(jnp.ones(3), 1, axis=1)),
    "split bad sections": case(lambda jax, jnp: jnp.split(jnp.ones(6), 4)),
    "broadcast_arrays": case(lambda jax, jnp: jnp.broadcast_arrays(jnp.ones(3), jnp.ones(4))),
    "broadcast_shapes": case(lambda jax, jnp: jnp.broadcast_shapes((3,), (4,))),
    "lax.broadcast_in_dim dims": case(
        lambda jax, jnp: jax.lax.broadcast_in_dim(jnp.ones(3), (3, 4), (0, 1))),
    "lax.broadcast_in_dim size": case(
        lambda jax, jnp: jax.lax.broadcast_in_dim(jnp.ones(3), (4, 4), (0,))),
    "pad negative": case(lambda jax, jnp: jnp.pad(jnp.ones(3), -1)),
    "pad bad mode": case(lambda jax, jnp: jnp.pad(jnp.ones(3), 1, mode="foo")),
    "lax.pad config length": case(
        lambda jax, jnp: jax.lax.pad(jnp.ones(3), 0.0, [(1, 1, 0), (1, 1, 0)])),
    # reductions and axes
    "argmax axis": case(lambda jax, jnp: jnp.argmax(jnp.ones((3, 3)), axis=2),
                        ours=["axis 2 is out of bounds", "dimension 2"]),
    "argmin axis": case(lambda jax, jnp: jnp.argmin(jnp.ones((3, 3)), axis=-3),
                        ours=["axis -3 is out of bounds", "dimension 2"]),
    "argmax empty": case(lambda jax, jnp: jnp.argmax(jnp.ones(0))),
    "sum axis out of range": case(lambda jax, jnp: jnp.sum(jnp.ones((3, 2)), axis=2)),
    "mean axis out of range": case(lambda jax, jnp: jnp.mean(jnp.ones(3), axis=1)),
    "max empty": case(lambda jax, jnp: jnp.max(jnp.ones(0))),
    "cumsum axis": case(lambda jax, jnp: jnp.cumsum(jnp.ones(3), axis=1)),
    "sort axis": case(lambda jax, jnp: jnp.sort(jnp.ones(3), axis=1)),
    "argsort axis": case(lambda jax, jnp: jnp.argsort(jnp.ones(3), axis=2)),
    "take axis": case(lambda jax, jnp: jnp.take(jnp.ones(3), jnp.array([0]), axis=1)),
    "take_along_axis rank": case(
        lambda jax, jnp: jnp.take_along_axis(jnp.ones((2, 3)), jnp.array([0]), axis=1)),
    "lax.reduce axes": case(lambda jax, jnp: jax.lax.reduce(jnp.ones(3), 0., jax.lax.add, (1,))),
    # slicing
    "dynamic_slice index count": case(
        lambda jax, jnp: jax.lax.dynamic_slice(jnp.ones((3, 3)), (0,), (1, 1))),
    "dynamic_slice size count": case(
        lambda jax, jnp: jax.lax.dynamic_slice(jnp.ones((3, 3)), (0, 0), (1,)),
        ours=["slice_sizes (1,)", "(3, 3)"]),
    "dynamic_slice too big": case(lambda jax, jnp: jax.lax.dynamic_slice(jnp.ones(3), (0,), (4,))),
    "dynamic_update_slice index count": case(
        lambda jax, jnp: jax.lax.dynamic_update_slice(jnp.ones((3, 3)), jnp.ones((1, 1)), (0,))),
    "dynamic_update_slice too big": case(
        lambda jax, jnp: jax.lax.dynamic_update_slice(jnp.ones(3), jnp.ones(4), (0,))),
    "dynamic_update_slice rank": case(
        lambda jax, jnp: jax.lax.dynamic_update_slice(jnp.ones((3, 3)), jnp.ones(1), (0, 0))),
    "lax.slice rank": case(lambda jax, jnp: jax.lax.slice(jnp.ones((3, 3)), (0,), (1,)),
                           ours=["must have length 2", "(3, 3)"]),
    "lax.slice out of bounds": case(lambda jax, jnp: jax.lax.slice(jnp.ones(3), (0,), (4,)),
                                    shared=["(4,)", "operand shape (3,)"]),
    "lax.index_in_dim": case(lambda jax, jnp: jax.lax.index_in_dim(jnp.ones(3), 5)),
    "index by float scalar": case(lambda jax, jnp: jnp.ones(3)[jnp.float32(1)], prefix=True),
    "index by float": case(lambda jax, jnp: jnp.ones(3)[1.0], prefix=True),
    "index by string": case(lambda jax, jnp: jnp.ones(3)["a"]),
    "index two ellipses": case(lambda jax, jnp: jnp.ones((2, 3))[..., ...]),
    "index by float array": case(lambda jax, jnp: jnp.ones(3)[jnp.array([0.5])], prefix=True),
    "boolean mask shape": case(lambda jax, jnp: jnp.ones(3)[jnp.array([True, False])]),
    "boolean mask shape, second axis": case(
        lambda jax, jnp: jnp.ones((2, 3))[:, jnp.array([True, False])]),
    "at set shape": case(lambda jax, jnp: jnp.ones(3).at[0].set(jnp.ones(2)),
                         shared=["(2,)", "shape"]),
    "at bad mode": case(lambda jax, jnp: jnp.ones(3).at[0].get(mode="foo")),
    # creation and conversion
    "asarray string": case(lambda jax, jnp: jnp.asarray("a string")),
    "array of strings": case(lambda jax, jnp: jnp.array(["a", "b"])),
    "asarray bytes": case(lambda jax, jnp: jnp.asarray(b"abc")),
    "asarray object": case(lambda jax, jnp: jnp.asarray(object())),
    "asarray ragged": case(lambda jax, jnp: jnp.asarray([[1, 2], [3]])),
    "asarray None": case(lambda jax, jnp: jnp.asarray(None)),
    "zeros float shape": case(lambda jax, jnp: jnp.zeros(2.5)),
    "zeros string dtype": case(lambda jax, jnp: jnp.zeros(3, dtype="foo")),
    "ones string shape": case(lambda jax, jnp: jnp.ones("3")),
    "full shape mismatch": case(lambda jax, jnp: jnp.full((2,), jnp.ones(3))),
    "arange zero step": case(lambda jax, jnp: jnp.arange(0, 5, 0)),
    "linspace negative num": case(lambda jax, jnp: jnp.linspace(0, 1, -1)),
    "eye negative": case(lambda jax, jnp: jnp.eye(-1)),
    "astype object": case(lambda jax, jnp: jnp.ones(3).astype(object),
                          shared=["object", "astype"]),
    "int of array": case(lambda jax, jnp: int(jnp.ones(3))),
    "float of one-element array": case(lambda jax, jnp: float(jnp.ones(1))),
    "bool of array": case(lambda jax, jnp: bool(jnp.ones(3))),
    "index of float array": case(lambda jax, jnp: [0, 1][jnp.float32(1)]),
    "len of scalar": case(lambda jax, jnp: len(jnp.float32(1))),
    "iter of scalar": case(lambda jax, jnp: iter(jnp.float32(1))),
    # dtypes and arithmetic
    "bitwise on float": case(lambda jax, jnp: jnp.bitwise_and(jnp.ones(3), jnp.ones(3))),
    "invert float": case(lambda jax, jnp: ~jnp.ones(3)),
    "shift float": case(lambda jax, jnp: jnp.left_shift(jnp.ones(3), 1)),
    "lax.add mixed dtypes": case(
        lambda jax, jnp: jax.lax.add(jnp.ones(3, jnp.float32), jnp.ones(3, jnp.int32)),
        shared=["lax.add requires arguments to have the same dtypes, got float32, int32."]),
    "lax.add shapes": case(lambda jax, jnp: jax.lax.add(jnp.ones(3), jnp.ones(4))),
    "lax.convert_element_type unknown": case(
        lambda jax, jnp: jax.lax.convert_element_type(jnp.ones(3), "foo")),
    "lax.sin of int": case(lambda jax, jnp: jax.lax.sin(jnp.ones(3, jnp.int32))),
    "matmul shapes": case(lambda jax, jnp: jnp.ones((2, 3)) @ jnp.ones((4, 2))),
    "matmul scalar": case(lambda jax, jnp: jnp.matmul(jnp.ones(3), 2.0)),
    "dot shapes": case(lambda jax, jnp: jnp.dot(jnp.ones(3), jnp.ones(4))),
    "dot_general unknown dtype": case(lambda jax, jnp: jax.lax.dot_general(
        jnp.ones((2, 3)), jnp.ones((2, 3)), (((1,), (1,)), ((), ())), preferred_element_type="foo")),
    "einsum sizes": case(
        lambda jax, jnp: jnp.einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((4, 2))),
        shared=["Size of label 'j' for operand 1", "does not match previous terms"]),
    "einsum operand count": case(lambda jax, jnp: jnp.einsum("ij,jk->ik", jnp.ones((2, 3)))),
    "where shapes": case(lambda jax, jnp: jnp.where(jnp.ones(3) > 0, jnp.ones(4), 0)),
    "where one argument": case(lambda jax, jnp: jnp.where(jnp.ones(3) > 0, 1)),
    "select_n shapes": case(
        lambda jax, jnp: jax.lax.select_n(jnp.array([True, False]), jnp.ones(3), jnp.ones(3)),
        shared=["(2,)", "(3,)"]),
    "clip bound shape": case(lambda jax, jnp: jnp.clip(jnp.ones(3), jnp.ones(2))),
    # linalg
    "inv not square": case(lambda jax, jnp: jnp.linalg.inv(jnp.ones((2, 3)))),
    "inv vector": case(lambda jax, jnp: jnp.linalg.inv(jnp.ones(3))),
    "solve shapes": case(lambda jax, jnp: jnp.linalg.solve(jnp.eye(3), jnp.ones(4)),
                         ours=["a=(3, 3)", "b=(4,)"]),
    "det not square": case(lambda jax, jnp: jnp.linalg.det(jnp.ones((2, 3)))),
    "norm bad ord": case(lambda jax, jnp: jnp.linalg.norm(jnp.ones((2, 2)), ord="foo")),
    "vector_norm bad ord": case(lambda jax, jnp: jnp.linalg.vector_norm(jnp.ones(2), ord="inf"),
                                shared=["Invalid order 'inf' for vector norm.", "Use 'jax.numpy.inf'"]),
    "eigh not square": case(lambda jax, jnp: jnp.linalg.eigh(jnp.ones((2, 3))),
                            shared=["incompatible shapes for broadcasting: (2, 3), (3, 2)."]),
    # transformations
    "grad of vector output": case(lambda jax, jnp: jax.grad(lambda x: x)(jnp.ones(3))),
    "grad of int input": case(lambda jax, jnp: jax.grad(lambda x: x * 2)(3)),
    "grad argnums out of range": case(lambda jax, jnp: jax.grad(lambda x: x, argnums=2)(1.0)),
    "grad of complex output": case(lambda jax, jnp: jax.grad(lambda x: x * 1j)(1.0)),
    "grad of string output": case(lambda jax, jnp: jax.grad(lambda x: "a")(1.0),
                                  shared=["'a'", "str", "valid"]),
    "grad of non-callable": case(lambda jax, jnp: jax.grad(3)),
    "vmap axis sizes": case(lambda jax, jnp: jax.vmap(lambda a, b: a + b)(jnp.ones(2), jnp.ones(3))),
    "vmap in_axes out of range": case(lambda jax, jnp: jax.vmap(lambda a: a, in_axes=1)(jnp.ones(3))),
    "vmap of scalar": case(lambda jax, jnp: jax.vmap(lambda a: a)(1.0)),
    "vmap in_axes length": case(
        lambda jax, jnp: jax.vmap(lambda a, b: a, in_axes=(0,))(jnp.ones(2), jnp.ones(2))),
    "jit static argnum out of range": case(
        lambda jax, jnp: jax.jit(lambda x: x, static_argnums=3)(1.0)),
    "jit non-hashable static": case(
        lambda jax, jnp: jax.jit(lambda x: x, static_argnums=0)(np.ones(2))),
    "jit returns string": case(lambda jax, jnp: jax.jit(lambda x: "a")(1.0)),
    "jit string argument": case(lambda jax, jnp: jax.jit(lambda x: x)("a")),
    "jit of non-callable": case(lambda jax, jnp: jax.jit(3)),
    "cond branch types": case(
        lambda jax, jnp: jax.lax.cond(True, lambda: 1.0, lambda: jnp.ones(2))),
    "cond non-scalar predicate": case(
        lambda jax, jnp: jax.lax.cond(jnp.array([True, False]), lambda: 1.0, lambda: 2.0)),
    "switch float index": case(lambda jax, jnp: jax.lax.switch(1.0, [lambda: 1.0, lambda: 2.0])),
    "device_put string": case(lambda jax, jnp: jax.device_put(jnp.ones(3), "not a device")),
    "device_put int": case(lambda jax, jnp: jax.device_put(jnp.ones(3), 0)),
    # random
    "random key float seed": case(lambda jax, jnp: jax.random.PRNGKey(1.5),
                                  shared=["PRNG key seed must be an integer; got"]),
    "random uniform int key": case(lambda jax, jnp: jax.random.uniform(3, (2,)), prefix=True),
    "random choice too many": case(
        lambda jax, jnp: jax.random.choice(_K(jax), 3, (5,), replace=False)),
    "random randint float dtype": case(
        lambda jax, jnp: jax.random.randint(_K(jax), (2,), 0, 3, dtype=jnp.float32)),
    # memory: XLA allocates every output buffer
    "huge zeros": case(lambda jax, jnp: jnp.zeros((1 << 20, 1 << 20))),
    # under jit a GPU's allocator words it as JAX's GPU client does ("... while trying to ...")
    "huge ones under jit": case(lambda jax, jnp: jax.jit(lambda: jnp.ones((1 << 20, 1 << 20)))(),
                                shared=("RESOURCE_EXHAUSTED: Out of memory", f"{1 << 42} bytes")),
    "huge broadcast": case(lambda jax, jnp: jnp.broadcast_to(jnp.ones(1 << 20), (1 << 20, 1 << 20))),
}


def _outcome(fn, jax, jnp):
    try:
        fn(jax, jnp)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__, str(e).split("\n")[0], [c.__name__ for c in type(e).__mro__]
    return None, "no error", []


def _normal(text):
    """A message with the library's name, addresses and trailing spaces made neutral."""
    text = re.sub(r"\bgpuarr\b", "jax", text, flags=re.IGNORECASE)
    text = re.sub(r"\bJAX\b", "jax", text)
    # JAX's eager lax.slice defers to dynamic_slice, whose message shows NumPy integers'
    # reprs (np.int64(4)); traced, it shows 4: the number is what is compared.
    text = re.sub(r"\bnp\.u?int(?:8|16|32|64)\((-?\d+)\)", r"\1", text)
    return re.sub(r"0x[0-9a-f]+", "0x?", text).strip()


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_matches_jax(name):
    jax = pytest.importorskip("jax")
    fn, ours_fragments, shared, prefix = CASES[name]
    ours = _outcome(fn, gpuarr, gnp)
    theirs = _outcome(fn, jax, jax.numpy)
    assert theirs[0] is not None, f"JAX raises nothing for {name!r}: not a bad-input case"
    # JAX's class, or a subclass (the cuda platform's out-of-memory error is a JaxRuntimeError)
    assert theirs[0] in ours[2], (ours, theirs)
    got, want = _normal(ours[1]), _normal(theirs[1])
    if ours_fragments:
        for fragment in ours_fragments:
            assert fragment in ours[1], (fragment, ours)
    elif shared:
        for fragment in shared:
            assert fragment in got and fragment in want, (fragment, ours, theirs)
    elif prefix:
        assert got.startswith(want), (ours, theirs)
    else:
        assert got == want, (ours, theirs)


def test_table_size():
    """Issue 32's floor: 100 bad calls compared with JAX here and in test_error_messages."""
    from tests import test_error_messages
    assert len(CASES) + len(test_error_messages.CASES) >= 100


def test_out_of_memory_names_the_size_and_says_what_to_do():
    with pytest.raises(gpuarr.errors.JaxRuntimeError) as info:
        gnp.zeros((1 << 20, 1 << 20), gnp.int8)
    first, advice = str(info.value).split("\n")[:2]
    assert first == f"RESOURCE_EXHAUSTED: Out of memory allocating {1 << 40} bytes."
    assert "smaller" in advice


@pytest.mark.skipif(not opencl.available(), reason="PoCL / pyopencl not installed")
@pytest.mark.parametrize("beyond", ["memory", "largest allocation"])
def test_out_of_memory_on_opencl(beyond):
    """A kernel output beyond the device's memory, or beyond its largest allocation (where
    pyopencl raised LogicError INVALID_BUFFER_SIZE), is JAX's RESOURCE_EXHAUSTED error."""
    dev = gpuarr.devices("opencl")[0]
    if beyond == "memory":
        shape = (1 << 20, 1 << 20)
    else:
        ctx, _ = opencl._context()
        shape = (ctx.devices[0].max_mem_alloc_size // 4 + 1024,)
    x = gpuarr.device_put(gnp.float32(1), dev)
    with pytest.raises(gpuarr.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED: Out of memory "
                       f"allocating {4 * int(np.prod(shape))} bytes"):
        gpuarr.jit(lambda x: x + gnp.ones(shape))(x)
