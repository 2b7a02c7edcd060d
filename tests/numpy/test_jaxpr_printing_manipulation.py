"""The programs `make_jaxpr` prints for the shape functions JAX writes with jit wrappers (flip,
rot90, append, atleast_3d, block, ediff1d, unstack) or with fast paths for one array argument
(concatenate, stack, hstack, vstack, dstack, column_stack) must be JAX's; their eager results
and errors must stay JAX's too."""
import numpy as np
import pytest
from jax_compare import outcome, same_error, same_results

import gpuarr
import gpuarr.numpy as gnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _arr(dtype, *shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32) % 5 + 1).astype(dtype).reshape(shape)


F23, I23, F3, I3 = _arr(np.float32, 2, 3), _arr(np.int32, 2, 3), _arr(np.float32, 3), _arr(
    np.int32, 3)
F234, B23, C23 = _arr(np.float32, 2, 3, 4), _arr(np.bool_, 2, 3), _arr(np.complex64, 2, 3)
F0 = np.float32(2.5)

# (id, the traced function of a jax.numpy-like module, its arguments)
PRINTED = [
    ("flip", lambda m: m.flip, (F23,)),
    ("flip_axis", lambda m: lambda x: m.flip(x, -1), (B23,)),
    ("flip_axes_list", lambda m: lambda x: m.flip(x, [0, 2]), (F234,)),
    ("fliplr_constant", lambda m: lambda: m.fliplr(m.ones((1, 2))), ()),
    ("fliplr", lambda m: m.fliplr, (C23,)),
    ("flipud", lambda m: m.flipud, (F3,)),
    ("rot90", lambda m: m.rot90, (F23,)),
    ("rot90_k2", lambda m: lambda x: m.rot90(x, 2, axes=(2, 0)), (F234,)),
    ("rot90_k3", lambda m: lambda x: m.rot90(x, -1), (I23,)),
    ("rot90_k0", lambda m: lambda x: m.rot90(x, 4), (F23,)),
    ("append", lambda m: m.append, (F23, I3)),
    ("append_axis", lambda m: lambda x, y: m.append(x, y, axis=-1), (F23, I23)),
    ("append_scalar", lambda m: lambda x: m.append(x, 1.5), (I3,)),
    ("atleast_3d", lambda m: m.atleast_3d, (F3,)),
    ("atleast_3d_0d", lambda m: m.atleast_3d, (F0,)),
    ("atleast_3d_many", lambda m: m.atleast_3d, (F3, I23)),
    ("block", lambda m: lambda x, y, z, w: m.block([[x, y], [z, w]]), (F23, I23, I23, F23)),
    ("block_ranks", lambda m: lambda x, y: m.block([[x], [y]]), (F3, F23)),
    ("block_scalars", lambda m: lambda x: m.block([x, 1.0]), (F3,)),
    ("block_one", lambda m: m.block, (F23,)),
    ("ediff1d", lambda m: m.ediff1d, (I23,)),
    ("ediff1d_ends", lambda m: lambda x, y: m.ediff1d(x, to_end=y, to_begin=-1.5), (I3, F3)),
    ("concatenate_array", lambda m: lambda x: m.concatenate(x, axis=1), (F234,)),
    ("concatenate_array_none", lambda m: lambda x: m.concatenate(x, axis=None), (F23,)),
    ("concatenate_array_dtype", lambda m: lambda x: m.concatenate(x, -1, dtype="int32"),
     (F234,)),
    ("concatenate_dtype", lambda m: lambda x, y: m.concatenate([x, y], None, dtype="float16"),
     (F23, I3)),
    ("concat", lambda m: lambda x, y: m.concat([x, y], axis=1), (F23, I23)),
    ("stack_array", lambda m: lambda x: m.stack(x, axis=-1, dtype="int32"), (F234,)),
    ("hstack_array", lambda m: m.hstack, (F234,)),
    ("hstack_1d", lambda m: m.hstack, (F3,)),
    ("hstack_list", lambda m: lambda x, y: m.hstack([x, y], dtype="int8"), (F23, I23)),
    ("vstack_array", lambda m: m.vstack, (F234,)),
    ("vstack_list", lambda m: lambda x, y: m.vstack([x, y]), (F3, I23)),
    ("dstack_array", lambda m: m.dstack, (F3,)),
    ("dstack_list", lambda m: lambda x, y: m.dstack([x, y], dtype="float16"), (F23, I23)),
    ("column_stack_array", lambda m: m.column_stack, (F3,)),
    ("column_stack_3d", lambda m: m.column_stack, (F234,)),
    ("column_stack_list", lambda m: lambda x, y: m.column_stack([x, y]), (F3, I3)),
]


@pytest.mark.parametrize("build,args", [c[1:] for c in PRINTED], ids=[c[0] for c in PRINTED])
def test_printed_program_is_jaxs(build, args):
    want = jax.make_jaxpr(build(jnp))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(build(gnp))(*args))
    assert got == want


def check(fn, *args, jit=False):
    got = outcome(gpuarr, lambda *xs: fn(gnp, *xs), args, jit)
    want = outcome(jax, lambda *xs: fn(jnp, *xs), args, jit)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True)


VALUES = [
    ("flip", lambda m, x: m.flip(x, (0, -1)), (C23,)),
    ("flip_0d", lambda m, x: m.flip(x), (F0,)),
    ("fliplr", lambda m, x: m.fliplr(x), (F234,)),
    ("flipud", lambda m, x: m.flipud(x), (B23,)),
    ("rot90", lambda m, x: m.rot90(x, 3, (1, 2)), (F234,)),
    ("rot90_k2", lambda m, x: m.rot90(x, 2), (I23,)),
    ("append", lambda m, x, y: m.append(x, y), (B23, I3)),
    ("append_axis", lambda m, x, y: m.append(x, y, axis=0), (F23, I23)),
    ("atleast_3d", lambda m, x, y: m.atleast_3d(x, y), (F0, F23)),
    ("block", lambda m, x, y: m.block([[x, y], [y, x]]), (F23, I23)),
    ("block_scalars", lambda m, x: m.block([[x, 1], [2, x]]), (F0,)),
    ("ediff1d", lambda m, x: m.ediff1d(x), (I23,)),
    ("ediff1d_ends", lambda m, x: m.ediff1d(x, to_end=[1, 2], to_begin=2.5), (_arr(np.uint8, 4),)),
    ("ediff1d_empty", lambda m, x, y: m.ediff1d(x, to_end=y), (_arr(np.float32, 0), F3)),
    ("concatenate_array", lambda m, x: m.concatenate(x, axis=-1), (F234,)),
    ("concatenate_array_none", lambda m, x: m.concatenate(x, axis=None, dtype="int8"), (F23,)),
    # each array is cast to `dtype` directly, not through the promoted type first
    ("concatenate_dtype", lambda m, x, y: m.concatenate([x, y], dtype="float16"),
     (np.array([2049.0], np.float32), np.array([16777217], np.int32))),
    ("concat", lambda m, x: m.concat(x, axis=None), (F234,)),
    ("stack_array", lambda m, x: m.stack(x, axis=1), (F234,)),
    ("stack_list", lambda m, x, y: m.stack([x, y], axis=-1, dtype="bfloat16"), (F3, I3)),
    ("hstack", lambda m, x: m.hstack(x), (F23,)),
    ("vstack", lambda m, x: m.vstack(x), (I3,)),
    ("dstack", lambda m, x: m.dstack(x, dtype="complex64"), (F234,)),
    ("column_stack", lambda m, x: m.column_stack(x), (F23,)),
    ("column_stack_list", lambda m, x, y: m.column_stack([x, y]), (F3, F23.T)),
    ("unstack", lambda m, x: m.unstack(x, axis=-1), (F23,)),
    # errors JAX raises for axes: a 0-d array has none; flip's axes must be unique
    ("flip_0d_axis", lambda m, x: m.flip(x, axis=-1), (F0,)),
    ("flip_0d_axes", lambda m, x: m.flip(x, axis=(0, 1)), (F0,)),
    ("flip_repeated_axis", lambda m, x: m.flip(x, axis=(1, -2)), (F23,)),
    ("flipud_0d", lambda m, x: m.flipud(x), (F0,)),
    ("concatenate_array_0d", lambda m, x: m.concatenate(x), (F3,)),
    ("rot90_same_axes", lambda m, x: m.rot90(x, axes=(0, -2)), (F23,)),
    ("block_tuple_depths", lambda m, x: m.block([x, [x]]), (F3,)),
]


@pytest.mark.parametrize("fn,args", [c[1:] for c in VALUES], ids=[c[0] for c in VALUES])
def test_eager_results_are_jaxs(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [VALUES[i][1:] for i in (0, 4, 9, 11, 14, 21)],
                         ids=[VALUES[i][0] for i in (0, 4, 9, 11, 14, 21)])
def test_jit_results_are_jaxs(fn, args):
    check(fn, *args, jit=True)


def _gen(m):
    return (x for x in [m.ones(2), m.ones(2)])


ERRORS = [
    ("flip_str", lambda m: m.flip("a")),
    ("fliplr_str", lambda m: m.fliplr("a")),
    ("hstack_empty", lambda m: m.hstack([])),
    ("hstack_int", lambda m: m.hstack(3)),
    ("vstack_none", lambda m: m.vstack(None)),
    ("hstack_generator", lambda m: m.hstack(_gen(m))),
    ("dstack_generator", lambda m: m.dstack(_gen(m))),
    ("concatenate_int", lambda m: m.concatenate(3)),
    ("concatenate_str", lambda m: m.concatenate("ab")),
    ("concatenate_generator", lambda m: m.concatenate(_gen(m))),
    ("concat_generator", lambda m: m.concat(_gen(m))),
    ("stack_str", lambda m: m.stack("ab")),
    ("block_empty", lambda m: m.block([])),
    ("block_empty_inner", lambda m: m.block([[1.0], []])),
    ("block_depths", lambda m: m.block([1.0, [2.0]])),
]


@pytest.mark.parametrize("call", [c[1] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors_are_jaxs(call):
    same_error(lambda: call(gnp), lambda: call(jnp))


def test_block_refuses_tuples():
    for m in (gnp, jnp):
        with pytest.raises(ValueError, match="jax.numpy.block does not allow tuples"):
            m.block([m.ones(2), (m.ones(2),)])
