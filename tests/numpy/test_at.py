"""`x.at[...]` functional updates (SPEC S10-S12): every example of the "Common Gotchas" guide
(in-place updates and out-of-bounds indexing sections) with its documented output, each method
against NumPy's in-place equivalent, modes, dtypes, jit, grad and vmap."""
import numpy as np
import pytest
from helpers import close
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp

# ---------------------------------------------------------------- the guide's examples


def test_guide_in_place_update_raises_and_points_to_at():
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set\(y\)"):
        jax_array[1, :] = 1.0


def test_guide_iadd_rebinds(capsys):
    jax_array = jnp.array([10, 20])
    jax_array_new = jax_array
    jax_array_new += 10
    print(jax_array_new)
    print(jax_array)
    assert capsys.readouterr().out == "[20 30]\n[10 20]\n"


def test_guide_at_set_is_out_of_place(capsys):
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    updated_array = jax_array.at[1, :].set(1.0)
    print("updated array:\n", updated_array)
    print("original array unchanged:\n", jax_array)
    assert capsys.readouterr().out == (
        "updated array:\n [[0. 0. 0.]\n [1. 1. 1.]\n [0. 0. 0.]]\n"
        "original array unchanged:\n [[0. 0. 0.]\n [0. 0. 0.]\n [0. 0. 0.]]\n")


def test_guide_at_add(capsys):
    jax_array = jnp.ones((5, 6))
    new_jax_array = jax_array.at[::2, 3:].add(7.)
    print(new_jax_array)
    assert capsys.readouterr().out == (
        "[[1. 1. 1. 8. 8. 8.]\n [1. 1. 1. 1. 1. 1.]\n [1. 1. 1. 8. 8. 8.]\n"
        " [1. 1. 1. 1. 1. 1.]\n [1. 1. 1. 8. 8. 8.]]\n")
    assert np.asarray(jax_array).sum() == 30.0


def test_guide_out_of_bounds_outputs():
    assert repr(jnp.arange(10)[11]) == "Array(9, dtype=int32)"
    assert repr(jnp.arange(10.0).at[11].get()) == "Array(9., dtype=float32)"
    assert repr(jnp.arange(10.0).at[11].get(mode="fill", fill_value=jnp.nan)) == \
        "Array(nan, dtype=float32)"
    assert repr(jnp.nanargmin(jnp.array([jnp.nan, jnp.nan]))) == "Array(-1, dtype=int32)"
    assert repr(jnp.nanargmax(jnp.array([jnp.nan, jnp.nan]))) == "Array(-1, dtype=int32)"


def test_guide_equivalence_table():
    """Each .at method equals the in-place NumPy expression it names (distinct indices)."""
    x = np.arange(1.0, 7.0, dtype=np.float32)
    idx = np.array([0, 3, 5])
    y = np.array([2.0, 3.0, 0.5], np.float32)
    cases = {
        "set": lambda a: a.__setitem__(idx, y),
        "add": lambda a: a.__setitem__(idx, a[idx] + y),
        "subtract": lambda a: a.__setitem__(idx, a[idx] - y),
        "multiply": lambda a: a.__setitem__(idx, a[idx] * y),
        "divide": lambda a: a.__setitem__(idx, a[idx] / y),
        "power": lambda a: a.__setitem__(idx, a[idx] ** y),
        "min": lambda a: a.__setitem__(idx, np.minimum(a[idx], y)),
        "max": lambda a: a.__setitem__(idx, np.maximum(a[idx], y)),
    }
    for name, inplace in cases.items():
        want = x.copy()
        inplace(want)
        close(getattr(jnp.asarray(x).at[idx], name)(y), want, 1e-6)
    want = x.copy()
    np.negative.at(want, idx)
    close(jnp.asarray(x).at[idx].apply(jnp.negative), want, 1e-6)
    close(jnp.asarray(x).at[idx].get(), x[idx], 1e-6)


def test_repeated_indices_all_apply():
    x = jnp.zeros(4)
    idx = jnp.array([0, 0, 2, 0])
    close(x.at[idx].add(1.0), np.array([3, 0, 1, 0], np.float32), 1e-6)
    close(x.at[idx].subtract(1.0), np.array([-3, 0, -1, 0], np.float32), 1e-6)
    close(jnp.ones(4).at[idx].multiply(2.0), np.array([8, 1, 2, 1], np.float32), 1e-6)
    close(jnp.full(4, 8.0).at[idx].divide(2.0), np.array([1, 8, 4, 8], np.float32), 1e-6)
    close(jnp.full(4, 2.0).at[idx].power(2.0), np.array([256, 2, 4, 2], np.float32), 1e-6)
    close(x.at[idx].apply(lambda v: v + 1), np.array([3, 0, 1, 0], np.float32), 1e-6)
    close(x.at[idx].min(jnp.array([3.0, -1.0, 2.0, 5.0])), np.array([-1, 0, 0, 0], np.float32), 1e-6)
    close(x.at[idx].max(jnp.array([3.0, -1.0, 2.0, 5.0])), np.array([5, 0, 2, 0], np.float32), 1e-6)


def test_input_never_changes():
    x = jnp.arange(5.0)
    before = np.asarray(x).copy()
    for op in ("set", "add", "multiply", "min"):
        getattr(x.at[1:3], op)(9.0)
    x.at[0].apply(jnp.exp)
    close(x, before, 1e-6)


# ---------------------------------------------------------------- out of bounds and modes


def test_out_of_bounds_updates_are_dropped():
    x = jnp.arange(5)
    close(x.at[7].set(9), np.arange(5, dtype=np.int32), 1e-6)
    close(x.at[jnp.array([1, 7, -1])].set(9), np.array([0, 9, 2, 3, 9], np.int32), 1e-6)
    close(x.at[jnp.array([7])].add(9, mode="drop"), np.arange(5, dtype=np.int32), 1e-6)
    close(x.at[jnp.array([7])].add(9, mode="fill"), np.arange(5, dtype=np.int32), 1e-6)
    close(x.at[jnp.array([7])].add(9, mode="clip"), np.array([0, 1, 2, 3, 13], np.int32), 1e-6)
    close(x.at[jnp.array([7])].add(9, mode="promise_in_bounds"), np.arange(5, dtype=np.int32), 1e-6)


def test_wrap_negative_indices():
    x = jnp.arange(5)
    close(x.at[-1].set(9), np.array([0, 1, 2, 3, 9], np.int32), 1e-6)
    close(x.at[jnp.array([-1])].set(9, wrap_negative_indices=False), np.arange(5, dtype=np.int32), 1e-6)
    close(x.at[jnp.array([-1])].get(wrap_negative_indices=False), np.array([0], np.int32), 1e-6)
    out = np.asarray(jnp.arange(5.0).at[jnp.array([-1])].get(wrap_negative_indices=False, mode="fill"))
    assert np.isnan(out).all()


@pytest.mark.parametrize("dtype,fill", [(np.float32, np.nan), (np.int32, np.iinfo(np.int32).min),
                                        (np.int8, -128), (np.uint8, 255), (np.uint32, 2 ** 32 - 1),
                                        (np.bool_, True)])
def test_get_fill_defaults(dtype, fill):
    x = jnp.asarray(np.zeros(3, dtype))
    out = np.asarray(x.at[jnp.array([5, 0])].get(mode="fill"))
    assert out.dtype == dtype
    assert (np.isnan(out[0]) if dtype == np.float32 else out[0] == fill) and out[1] == 0
    assert np.asarray(x.at[4].get(mode="fill", fill_value=1)) == 1


def test_hints_are_accepted():
    x = jnp.arange(6.0)
    out = x.at[jnp.array([1, 3])].add(1.0, indices_are_sorted=True, unique_indices=True)
    close(out, np.array([0, 2, 2, 4, 4, 5], np.float32), 1e-6)
    close(x.at[jnp.array([1, 3])].get(indices_are_sorted=True, unique_indices=True),
          np.array([1, 3], np.float32), 1e-6)


# ---------------------------------------------------------------- dtypes, shapes, errors


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int16, np.float16, np.bool_])
def test_dtype_is_kept(dtype):
    x = jnp.asarray(np.zeros((2, 3), dtype))
    one = True if dtype == np.bool_ else 1  # bool.at[].set(1) warns about the cast, as in JAX
    if dtype == np.bool_:  # JAX's scatter-add traces lax.add, which refuses booleans
        with pytest.raises(TypeError, match="add does not accept dtype bool"):
            x.at[0, 1:].add(one)
    for op in ("set", "max") if dtype == np.bool_ else ("set", "add", "max"):
        out = getattr(x.at[0, 1:], op)(one)
        want = np.zeros((2, 3), dtype)
        want[0, 1:] = 1
        close(out, want, 1e-6)
    if dtype in (np.float32, np.float16):
        assert x.at[0].set(2.7).dtype == dtype
    else:
        with pytest.warns(FutureWarning, match="cannot safely cast value from dtype=float32"):
            assert x.at[0].set(2.7).dtype == dtype


def test_weak_type_is_kept():
    x = jnp.asarray(1.0)
    assert x.weak_type and x.at[()].set(2.0).weak_type
    y = jnp.zeros(3, jnp.float32)
    assert not y.at[0].set(2.0).weak_type


def test_advanced_index_updates_match_numpy():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    idxs = [(np.array([0, 2]), slice(1, 3), np.array([1, 4])), (slice(None), np.array([[0], [3]]), 2),
            (Ellipsis, np.array([0, -1])), (None, 1, slice(None, None, -2)), (base > 40,), (1,),
            (np.array([], np.int32),), ()]
    for idx in idxs:
        shape = base[idx].shape
        vals = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100
        want = base.copy()
        want[idx] = vals
        close(jnp.asarray(base).at[idx].set(vals), want, 1e-6)
        want = base.copy()
        want[idx] += 1
        close(jnp.asarray(base).at[idx].add(1.0), want, 1e-6)


def test_values_broadcast_and_errors():
    x = jnp.zeros((2, 3))
    close(x.at[:, 1].set(jnp.array([[5.0, 6.0]])), np.array([[0, 5, 0], [0, 6, 0]], np.float32), 1e-6)
    with pytest.raises(ValueError, match="broadcast"):
        x.at[0].set(jnp.ones(4))
    with pytest.raises(TypeError, match="requires ndarray"):
        x.at[0].set([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="Too many indices"):
        x.at[0, 0, 0].set(1.0)


# ---------------------------------------------------------------- transformations


def test_at_under_jit_with_traced_index_and_values():
    f = jax.jit(lambda x, i, v: x.at[i].add(v))
    close(f(jnp.zeros(4), 2, 3.0), np.array([0, 0, 3, 0], np.float32), 1e-6)
    close(f(jnp.zeros(4), 9, 3.0), np.zeros(4, np.float32), 1e-6)
    g = jax.jit(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0))
    close(g(jnp.arange(4.0), jnp.array([1, 8])), np.array([1, -1], np.float32), 1e-6)


def test_at_gradients():
    x = jnp.arange(1.0, 5.0)
    gx, gv = jax.grad(lambda x, v: (x.at[jnp.array([0, 0, 2])].add(v) ** 2).sum(), (0, 1))(x, 2.0)
    close(gx, 2 * np.array([5, 2, 5, 4], np.float32), 1e-6)
    close(gv, np.float32(2 * (5 + 5 + 5)), 1e-6)
    gx, gv = jax.grad(lambda x, v: (x.at[1].set(v) * jnp.arange(4.0)).sum(), (0, 1))(x, 2.0)
    close(gx, np.array([0, 0, 2, 3], np.float32), 1e-6)
    close(gv, np.float32(1.0), 1e-6)
    g = jax.grad(lambda x: x.at[jnp.array([1, 3])].multiply(3.0).sum())(x)
    close(g, np.array([1, 3, 1, 3], np.float32), 1e-6)
    g = jax.grad(lambda x: x.at[1:3].get().sum())(x)
    close(g, np.array([0, 1, 1, 0], np.float32), 1e-6)


def test_at_vmap_matches_loop():
    xs = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    idx = np.array([0, 3, 1])
    vals = np.array([10.0, 20.0, 30.0], np.float32)
    got = jax.vmap(lambda x, i, v: x.at[i].add(v))(xs, idx, vals)
    want = np.stack([np.asarray(jnp.asarray(xs[k]).at[idx[k]].add(vals[k])) for k in range(3)])
    close(got, want, 1e-6)
    got = jax.vmap(lambda x: x.at[jnp.array([1, 1])].set(0.0))(xs)
    want = xs.copy()
    want[:, 1] = 0
    close(got, want, 1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(-8, 8), max_size=6),
       st.sampled_from(["set", "add", "multiply", "min", "max"]), st.sampled_from([None, "clip"]))
def test_hypothesis_at_updates_match_numpy(n, idx, op, mode):
    """Against NumPy's unbuffered ufunc.at with JAX's rules applied to the indices: negative
    ones wrap, then out-of-bounds ones are dropped (or clamped with mode='clip')."""
    x = np.arange(1, n + 1, dtype=np.float32)
    vals = np.arange(len(idx), dtype=np.float32) * 0.5 - 1
    i = np.array(idx, np.int64)
    i = np.where(i < 0, i + n, i)
    keep = np.ones(len(i), bool) if mode == "clip" else (i >= 0) & (i < n)
    i_np = np.clip(i, 0, n - 1)[keep]
    want = x.copy()
    if op == "set":
        want[i_np] = vals[keep]
    else:
        ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[op]
        ufunc.at(want, i_np, vals[keep])
    got = getattr(jnp.asarray(x).at[jnp.asarray(np.array(idx, np.int32))], op)(vals, mode=mode)
    close(got, want, 1e-6)
