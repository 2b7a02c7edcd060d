"""lax operand dtypes as JAX defines them, the same eagerly and under jit: Python scalars are
weakly typed values of the default dtypes, NumPy values are canonicalized (no float64 without
x64), and operand dtypes a primitive does not accept raise TypeError instead of being promoted
by NumPy."""
import numpy as np
import pytest

import gpuarr
from gpuarr import lax

F32 = np.arange(1, 4, dtype=np.float32)
I32 = np.arange(1, 4, dtype=np.int32)


def both(fn, *args):
    """fn(*args) eagerly and under jit."""
    return fn(*args), gpuarr.jit(fn)(*args)


@pytest.mark.parametrize("fn,args,ref,dtype,weak", [
    (lax.sin, (1.0,), np.sin, np.float32, True),
    (lax.neg, (2,), np.negative, np.int32, True),
    (lax.add, (1.0, 2.0), np.add, np.float32, True),
    (lax.max, (1, 2), np.maximum, np.int32, True),
    (lax.add, (np.float64(1.0), np.float32(2.0)), np.add, np.float32, False),
    (lax.exp, (np.arange(3.0),), np.exp, np.float32, False),  # float64 input, x64 off
])
def test_python_scalars_and_numpy_values_take_jax_dtypes(fn, args, ref, dtype, weak):
    for out in both(fn, *args):
        assert isinstance(out, gpuarr.Array)
        assert out.dtype == dtype and out.weak_type == weak
        np.testing.assert_allclose(out, ref(*args).astype(dtype), rtol=1e-6)


def test_convert_element_type_of_a_numpy_value_is_an_array():
    out = lax.convert_element_type(np.float32(1.5), np.float32)
    assert isinstance(out, gpuarr.Array) and out.dtype == np.float32 and not out.weak_type
    assert float(out) == 1.5


def test_weak_operands_give_weak_results_with_a_python_scalar():
    w = lax.add(1.0, 2.0)
    assert lax.mul(w, 3.0).weak_type
    assert not lax.mul(F32, 3.0).weak_type


@pytest.mark.parametrize("fn,args", [
    (lax.add, (I32, F32)),
    (lax.add, (1, 2.0)),
    (lax.sub, (F32, F32.astype(np.float16))),
    (lax.select, (F32 > 1, I32, F32)),
    (lambda a, b: lax.concatenate([a, b], 0), (I32, F32)),
    (lax.shift_left, (I32, I32.astype(np.uint32))),
    (lax.rem, (F32, I32)),
    (lax.sin, (I32,)),        # floating-point only
    (lax.floor, (I32,)),
    (lax.pow, (I32, I32)),
    (lax.add, (F32 > 0, F32 > 0)),  # bool is not numeric for add
])
def test_rejected_operand_dtypes_raise_eagerly_and_under_jit(fn, args):
    with pytest.raises(TypeError, match="dtype"):
        fn(*args)
    with pytest.raises(TypeError, match="dtype"):
        gpuarr.jit(fn)(*args)


@pytest.mark.parametrize("a,b,want", [
    (np.float32, np.int32, np.float32), (np.int32, np.float32, np.float32),
    (np.float32, np.float16, np.float32), (np.int8, np.int32, np.int32),
])
def test_dot_takes_operands_of_different_types_as_jax(a, b, want):
    """JAX 0.10.2's lax.dot accepts mixed operand types and returns the wider type (flax's fp8
    layers rely on it), eagerly and under jit."""
    x, y = np.arange(3).astype(a), np.arange(1, 4).astype(b)
    for out in both(lax.dot, x, y):
        assert out.dtype == want and out.shape == ()
        assert float(out) == 8.0


def test_accepted_mixes_still_run_eagerly():
    out = lax.select(F32 > 1.5, F32, -F32)  # bool predicate, float cases
    np.testing.assert_array_equal(out, np.where(F32 > 1.5, F32, -F32))
    out = lax.dynamic_slice(F32, (np.int32(1),), (2,))  # integer start index
    np.testing.assert_array_equal(out, F32[1:3])


def test_pow_takes_an_integer_exponent_array():
    for out in both(lax.pow, F32, I32):
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, F32.astype(np.float64) ** I32, rtol=1e-6)
    grad = gpuarr.grad(lambda x: lax.pow(x, I32).sum())(F32)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, I32 * F32.astype(np.float64) ** (I32 - 1), rtol=1e-6)


def test_operands_of_unequal_ranks_raise_after_a_valid_call():
    """NumPy would broadcast (3,) against (2, 3); lax raises JAX's TypeError, also after the
    same primitive and dtypes have run eagerly once."""
    row, grid = np.ones(3, np.float32), np.ones((2, 3), np.float32)
    assert lax.add(row, row).shape == (3,)
    assert lax.mul(grid, np.float32(2)).shape == (2, 3)  # rank 0 broadcasts
    assert lax.sub(row[None], grid).shape == (2, 3)  # so do size-1 axes of equal rank
    for fn in (lax.add, gpuarr.jit(lax.add)):
        with pytest.raises(TypeError, match=r"add: arrays must have the same number of "
                                            r"dimensions, got \{1, 2\}"):
            fn(row, grid)


def test_numpy_scalars_are_not_weak():
    """np.float64 subclasses Python's float, but JAX types it strongly: canonicalized to float32
    without x64 and a dtype mismatch with float32 under x64."""
    for out in both(lax.add, np.float32(1), np.float64(2)):
        assert out.dtype == np.float32 and not out.weak_type
    with pytest.raises(TypeError, match="lax.add requires arguments to have the same dtypes"):
        lax.add(np.float16(1), np.float64(2))  # float16 and the canonical float32
    with gpuarr.experimental.enable_x64():
        for fn in (lax.add, gpuarr.jit(lax.add)):
            with pytest.raises(TypeError, match="got float32, float64"):
                fn(np.float32(1), np.float64(2))


def test_shape_ops_convert_python_and_numpy_operands_as_jax():
    import jax
    cases = [lambda L: L.reshape(1.0, (1,)), lambda L: L.reshape(np.arange(3), (3,)),
             lambda L: L.concatenate([np.arange(3.0)], 0), lambda L: L.broadcast_in_dim(2.0, (), ()),
             lambda L: L.broadcast_in_dim(np.int64(2), (2,), ())]
    for case in cases:
        ours, theirs = case(lax), case(jax.lax)
        assert isinstance(ours, gpuarr.Array)
        assert (ours.dtype, ours.shape, ours.weak_type) == (theirs.dtype, theirs.shape,
                                                            theirs.weak_type)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    with pytest.raises(ValueError, match="non-empty"):
        lax.concatenate([], 0)


def test_sign_keeps_the_sign_of_zero_as_xla():
    x = np.array([-0.0, 0.0, np.nan, -2.0, 3.0], np.float32)
    for fn in (lax.sign, gpuarr.jit(lax.sign)):
        out = np.asarray(fn(x))
        assert np.signbit(out[0]) and not np.signbit(out[1]) and np.isnan(out[2])
        np.testing.assert_array_equal(out[3:], [-1.0, 1.0])
