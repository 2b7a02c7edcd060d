"""jnp.ufunc: the built-in ufunc objects (jnp.add, jnp.multiply, ...) and their methods reduce,
accumulate, at, reduceat and outer against NumPy's ufunc methods (values, shapes, dtypes),
user ufuncs from frompyfunc, and the transformations (jit, vmap, grad) through them."""
import numpy as np
import pytest
from helpers import check_grads_x64
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp

UFUNCS = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
          "bitwise_xor", "logical_and", "logical_or", "logical_xor", "logaddexp", "logaddexp2"]
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"}
FLOAT_ONLY = {"logaddexp", "logaddexp2"}


def sample(shape, dtype, seed=0):
    r = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return r.uniform(size=shape) > 0.5
    if dtype.kind in "iu":
        return r.integers(1, 4, shape).astype(dtype)
    return r.uniform(0.5, 1.5, shape).astype(dtype)


def dtype_for(name):
    return np.int32 if name in INT_ONLY else np.float32


def assert_matches(got, want, rtol=1e-5):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol)


# ---------------------------------------------------------------- the objects


@pytest.mark.parametrize("name", UFUNCS + ["negative"])
def test_builtin_ufunc_attributes_match_jax(name):
    jax = pytest.importorskip("jax")
    ours, theirs = getattr(jnp, name), getattr(jax.numpy, name)
    assert isinstance(ours, jnp.ufunc)
    assert (ours.nin, ours.nout, ours.nargs) == (theirs.nin, theirs.nout, theirs.nargs)
    assert ours.identity == theirs.identity or (np.isinf(ours.identity) and ours.identity ==
                                                theirs.identity)
    assert repr(ours) == f"<jnp.ufunc '{name}'>" and ours.__name__ == name


def test_ufunc_names_match_jax():
    jax = pytest.importorskip("jax")
    theirs = {n for n in dir(jax.numpy) if isinstance(getattr(jax.numpy, n), jax.numpy.ufunc)}
    ours = {n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)}
    assert theirs <= ours


def test_call_keeps_values_dtypes_and_refuses_out_where():
    x, y = sample((2, 3), np.float32), sample((3,), np.float32, 1)
    assert_matches(jnp.add(x, y), np.add(x, y))
    assert jnp.add(np.int8(1), np.int8(2)).dtype == np.int8
    assert jnp.add(True, False).dtype == np.bool_
    with pytest.raises(NotImplementedError, match="out argument"):
        jnp.add(x, y, out=x)
    with pytest.raises(NotImplementedError, match="where argument"):
        jnp.multiply(x, y, where=True)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.add([1, 2], 1)


def test_ufuncs_are_hashable_static_arguments():
    assert jnp.add == jnp.add and jnp.add != jnp.multiply
    assert len({jnp.add, jnp.add, jnp.subtract}) == 2

    f = gpuarr.jit(lambda op, x: op.reduce(x), static_argnums=0)
    x = sample((4,), np.float32)
    assert_matches(f(jnp.add, x), np.add.reduce(x))
    assert_matches(f(jnp.multiply, x), np.multiply.reduce(x))


# ---------------------------------------------------------------- reduce


@pytest.mark.parametrize("name", UFUNCS)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_reduce_matches_numpy(name, axis):
    if name == "subtract" and axis is None:
        pytest.skip("numpy refuses: subtract is not reorderable")
    x = sample((3, 4), dtype_for(name))
    if name.startswith("logical"):
        x = sample((3, 4), np.bool_)
    assert_matches(getattr(jnp, name).reduce(x, axis=axis), getattr(np, name).reduce(x, axis=axis))
    assert_matches(getattr(jnp, name).reduce(x, axis=axis, keepdims=True),
                   getattr(np, name).reduce(x, axis=axis, keepdims=True))


@pytest.mark.parametrize("name", UFUNCS)
def test_reduce_dtypes_match_jax(name):
    jax = pytest.importorskip("jax")
    for dt in (np.bool_, np.int8, np.int32, np.float16, np.float32):
        if (name in INT_ONLY and dt in (np.float16, np.float32)) or \
                (name in FLOAT_ONLY | {"subtract", "maximum", "minimum"} and dt == np.bool_):
            continue
        x = sample((3, 2), dt)
        assert getattr(jnp, name).reduce(x).dtype == getattr(jax.numpy, name).reduce(x).dtype, dt


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "bitwise_or",
                                  "logaddexp"])
def test_reduce_initial_and_where(name):
    x = sample((3, 4), dtype_for(name))
    mask = sample((3, 4), np.bool_, 2)
    initial = dtype_for(name)(2)
    op, ref = getattr(jnp, name), getattr(np, name)
    assert_matches(op.reduce(x, axis=1, initial=initial),
                   ref.reduce(x, axis=1, initial=initial))
    assert_matches(op.reduce(x, axis=0, initial=initial, where=mask),
                   ref.reduce(x, axis=0, initial=initial, where=mask))


def test_reduce_tuple_axes_and_empty():
    x = sample((2, 3, 4), np.float32)
    assert_matches(jnp.add.reduce(x, axis=(0, 2)), np.add.reduce(x, axis=(0, 2)))
    assert_matches(jnp.add.reduce(np.zeros((0, 3), np.float32)), np.zeros(3))
    assert_matches(jnp.logaddexp.reduce(np.zeros((0, 2), np.float32)), np.full(2, -np.inf))
    with pytest.raises(NotImplementedError, match="tuple of axes"):
        jnp.logaddexp.reduce(x, axis=(0, 1))


def test_reduce_errors():
    x = sample((3,), np.float32)
    with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
        jnp.negative.reduce(x)
    with pytest.raises(ValueError, match="does not have an identity"):
        jnp.maximum.reduce(x, where=np.array([True, False, True]))
    with pytest.raises(ValueError, match="where argument must have dtype=bool"):
        jnp.add.reduce(x, where=np.ones(3, np.int32))
    with pytest.raises(ValueError, match="zero-size array to reduction operation subtract"):
        jnp.subtract.reduce(np.zeros((0,), np.float32))
    with pytest.raises(NotImplementedError, match="out argument"):
        jnp.add.reduce(x, out=x)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(),
       name=st.sampled_from(["add", "multiply", "maximum", "subtract", "bitwise_xor",
                             "logical_xor"]))
def test_reduce_random_shapes(shape, data, name):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = sample(tuple(shape), np.bool_ if name == "logical_xor" else
               np.int32 if name == "bitwise_xor" else np.float32, len(shape))
    assert_matches(getattr(jnp, name).reduce(x, axis=axis), getattr(np, name).reduce(x, axis=axis))


# ---------------------------------------------------------------- accumulate


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "minimum",
                                  "bitwise_xor", "logaddexp"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_accumulate_matches_numpy(name, axis):
    x = sample((3, 4), dtype_for(name))
    assert_matches(getattr(jnp, name).accumulate(x, axis=axis),
                   getattr(np, name).accumulate(x, axis=axis))


def test_accumulate_dtypes_and_errors():
    jax = pytest.importorskip("jax")
    for name in ("add", "multiply", "maximum", "logical_or"):
        for dt in (np.int8, np.float32) if name == "maximum" else (np.bool_, np.int8, np.float32):
            x = sample((4,), dt)
            ours = getattr(jnp, name).accumulate(x)
            theirs = getattr(jax.numpy, name).accumulate(x)
            assert ours.dtype == theirs.dtype, (name, dt)
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert jnp.add.accumulate(np.ones(3, np.int32), dtype=np.float32).dtype == np.float32
    assert jnp.subtract.accumulate(np.zeros((0, 2), np.float32)).shape == (0, 2)
    with pytest.raises(ValueError, match="accumulate does not allow multiple axes"):
        jnp.subtract.accumulate(np.ones(3), axis=None)
    with pytest.raises(ValueError, match="accumulate only supported for binary ufuncs"):
        jnp.negative.accumulate(np.ones(3))


# ---------------------------------------------------------------- at


def _numpy_at(name, a, idx, *b):
    a = a.copy()
    getattr(np, name).at(a, idx, *b)
    return a


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "minimum",
                                  "logaddexp"])
def test_at_matches_numpy_with_repeated_indices(name):
    a = sample((6,), np.float32)
    idx = np.array([0, 2, 2, 5, 0])
    b = sample((5,), np.float32, 1)
    assert_matches(getattr(jnp, name).at(a, idx, b, inplace=False), _numpy_at(name, a, idx, b))
    assert_matches(getattr(jnp, name).at(a, idx, 2.0, inplace=False),
                   _numpy_at(name, a, idx, np.float32(2.0)))


def test_at_multidimensional_unary_and_bool():
    a = sample((3, 4), np.float32)
    idx = (np.array([0, 2, 0]), slice(None))
    b = sample((3, 4), np.float32, 1)
    assert_matches(jnp.add.at(a, idx, b, inplace=False), _numpy_at("add", a, idx, b))
    assert_matches(jnp.maximum.at(a, idx, b, inplace=False), _numpy_at("maximum", a, idx, b))
    assert_matches(jnp.negative.at(a, (1, 2), inplace=False), _numpy_at("negative", a, (1, 2)))
    assert_matches(jnp.negative.at(a[0], np.array([1, 3]), inplace=False),
                   _numpy_at("negative", a[0], np.array([1, 3])))
    flags = np.array([False, True, False])
    out = jnp.add.at(flags, np.array([0, 0]), True, inplace=False)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(out), [True, True, False])


def test_generic_at_keeps_weak_scalars_weak():
    half = jnp.maximum.at(np.ones(3, np.float16), np.array([0]), 2.0, inplace=False)
    assert half.dtype == np.float16
    ints = jnp.maximum.at(np.arange(3), np.array([0]), 2.5, inplace=False)
    assert ints.dtype == np.float32  # as JAX: the int array joins the float result
    assert_matches(ints, [2.5, 1.0, 2.0])


def test_at_requires_inplace_false():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.add.at(np.zeros(3), np.array([0]), 1.0)
    with pytest.raises(TypeError, match="non-tuple sequence"):
        jnp.maximum.at(np.zeros((2, 2)), [0, 1], 1.0, inplace=False)


# ---------------------------------------------------------------- reduceat and outer


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "bitwise_or"])
def test_reduceat_matches_numpy(name):
    x = sample((8, 3), dtype_for(name))
    for idx in (np.array([0, 4, 1, 5]), np.array([0, 3, 6]), np.array([2])):
        for axis in (0,):
            assert_matches(getattr(jnp, name).reduceat(x, idx, axis=axis),
                           getattr(np, name).reduceat(x, idx, axis=axis))
    assert_matches(getattr(jnp, name).reduceat(x.T, np.array([0, 4, 1, 5]), axis=1),
                   getattr(np, name).reduceat(x.T, np.array([0, 4, 1, 5]), axis=1))


def test_reduceat_errors():
    with pytest.raises(ValueError, match="indices must be one-dimensional"):
        jnp.add.reduceat(np.ones(4), np.zeros((1, 1), np.int32))
    with pytest.raises(ValueError, match="a must have 1 or more dimension"):
        jnp.add.reduceat(np.float32(1), np.array([0]))


@pytest.mark.parametrize("name", UFUNCS)
def test_outer_matches_numpy(name):
    dt = np.bool_ if name.startswith("logical") else dtype_for(name)
    a, b = sample((2, 3), dt), sample((4,), dt, 1)
    out = getattr(jnp, name).outer(a, b)
    want = getattr(np, name).outer(a, b)
    assert out.shape == (2, 3, 4)
    assert_matches(out, want)
    with pytest.raises(ValueError, match="outer only supported for binary ufuncs"):
        jnp.negative.outer(a, b)


# ---------------------------------------------------------------- user ufuncs


def test_frompyfunc_ufunc_methods():
    def scaled_add(x, y):
        return x + 2 * y

    u = jnp.frompyfunc(scaled_add, nin=2, nout=1, identity=0)
    assert isinstance(u, jnp.ufunc) and u.identity == 0 and repr(u) == "<jnp.ufunc 'scaled_add'>"
    x = np.arange(1.0, 5.0, dtype=np.float32)
    ref = np.frompyfunc(scaled_add, 2, 1, identity=0)
    assert_matches(u(x, x[::-1]), x + 2 * x[::-1])
    # As in JAX, a generic reduce starts from the identity: 0 + 2*1 + 2*2 + ... (NumPy: 19).
    assert_matches(u.reduce(x), np.float32(20.0))
    assert_matches(u.reduce(x, initial=1.0), np.float32(21.0))
    assert_matches(u.accumulate(x), ref.accumulate(x).astype(np.float32))
    assert_matches(u.outer(x[:2], x), ref.outer(x[:2], x).astype(np.float32))
    assert_matches(u.at(x, np.array([1, 1]), 1.0, inplace=False), [1.0, 6.0, 3.0, 4.0])
    assert_matches(u.reduceat(x, np.array([0, 2])), ref.reduceat(x, [0, 2]).astype(np.float32))


def test_ufunc_constructor_validates_counts():
    u = jnp.ufunc(lambda x: x * 2, 1, 1, name="double")
    assert (u.nin, u.nout, u.nargs, u.identity) == (1, 1, 1, None)
    assert_matches(u(np.arange(3.0, dtype=np.float32)), [0.0, 2.0, 4.0])
    with pytest.raises(TypeError):
        jnp.ufunc(lambda x: x, 1.5, 1)


# ---------------------------------------------------------------- transformations


def test_jit_and_vmap_of_methods_match_loop():
    xs = sample((4, 5), np.float32)
    for fn in (lambda x: jnp.add.reduce(x), lambda x: jnp.maximum.accumulate(x),
               lambda x: jnp.logaddexp.reduce(x), lambda x: jnp.multiply.outer(x, x[:2]),
               lambda x: jnp.add.at(x, np.array([0, 0, 3]), 1.0, inplace=False),
               lambda x: jnp.add.reduceat(x, np.array([0, 2]))):
        out = gpuarr.vmap(fn)(xs)
        loop = np.stack([np.asarray(fn(x)) for x in xs])
        np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(gpuarr.jit(fn)(xs[0])), loop[0], rtol=1e-5)


def test_gradients_through_methods():
    x = sample((5,), np.float64)
    check_grads_x64(lambda v: jnp.add.reduce(v * v), (x,), order=2)
    check_grads_x64(lambda v: jnp.multiply.accumulate(v), (x,), order=2)
    check_grads_x64(lambda v: jnp.logaddexp.reduce(v), (x,), order=1)
    check_grads_x64(lambda v: jnp.subtract.accumulate(v), (x,), order=1)
    check_grads_x64(lambda v: jnp.multiply.outer(v, v[:2]), (x,), order=1)
    check_grads_x64(lambda v: jnp.add.at(v, np.array([0, 0, 2]), v[:3] * v[:3], inplace=False),
                (x,), order=1)
    check_grads_x64(lambda v: jnp.maximum.at(v, np.array([0, 4]), v[1:3], inplace=False),
                (x,), order=1)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or"])
def test_bitwise_reduce_of_unsigned_and_weak_inputs(name):
    # The masked-out fill is the identity in the array's own dtype (all ones for unsigned
    # bitwise_and, where -1 wraps), and the result is strongly typed, as in JAX.
    x = np.array([[5, 3], [6, 255]], np.uint8)
    where = np.array([True, False])
    cases = [({}, {}), ({"axis": None}, {"axis": None}),
             ({"axis": 1, "keepdims": True}, {"axis": 1, "keepdims": True}),
             ({"initial": -1}, {"initial": np.uint8(255)}),  # a Python -1 wraps, as in JAX
             ({"where": where}, {"where": where}),
             ({"where": where, "initial": 1}, {"where": where, "initial": 1})]
    for kw, np_kw in cases:
        got = getattr(jnp, name).reduce(x, **kw)
        want = getattr(np, name).reduce(x, **np_kw)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(np.asarray(got), want)
    weak = gpuarr.lax.full((2, 2), 5)
    assert weak.weak_type
    out = getattr(jnp, name).reduce(weak)
    assert out.dtype == np.int32 and not out.weak_type
    np.testing.assert_array_equal(np.asarray(out), [5, 5])
