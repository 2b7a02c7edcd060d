"""Threefry-2x32 and keys: known answers, the primitive's rules, typed keys through jit/vmap/scan,
and the errors JAX raises for bad keys and seeds."""
import warnings

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax, prng, random
from gpuarr.core import ShapedArray, abstract_eval_rules
from gpuarr.interpreters import ad

U32 = np.uint32

# ---------------------------------------------------------------- the cipher


@pytest.mark.parametrize("key,count,expected", [
    ((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
])
def test_random123_known_answers(key, count, expected):
    y1, y2 = prng.threefry2x32(U32(key[0]), U32(key[1]), U32(count[0]), U32(count[1]))
    assert (int(y1), int(y2)) == expected
    assert y1.dtype == np.uint32 and y1.shape == ()


def _threefry_reference(k1, k2, x1, x2):
    """Scalar Python Threefry-2x32 (20 rounds) from the Random123 specification."""
    m = 0xFFFFFFFF
    ks = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)
    x = [(x1 + ks[0]) & m, (x2 + ks[1]) & m]
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    for i in range(1, 6):
        for r in rot[(i - 1) % 2]:
            x[0] = (x[0] + x[1]) & m
            x[1] = (((x[1] << r) | (x[1] >> (32 - r))) & m) ^ x[0]
        x[0] = (x[0] + ks[i % 3]) & m
        x[1] = (x[1] + ks[(i + 1) % 3] + i) & m
    return x


def test_threefry_vectorised_matches_scalar_reference_and_broadcasts():
    rng = np.random.default_rng(0)
    k1, k2 = U32(rng.integers(0, 2**32)), rng.integers(0, 2**32, (3, 1), dtype=U32)
    x1, x2 = rng.integers(0, 2**32, (1, 5), dtype=U32), rng.integers(0, 2**32, (3, 5), dtype=U32)
    y1, y2 = prng.threefry2x32(k1, k2, x1, x2)
    assert y1.shape == y2.shape == (3, 5)
    for i in range(3):
        for j in range(5):
            ref = _threefry_reference(int(k1), int(k2[i, 0]), int(x1[0, j]), int(x2[i, j]))
            assert [int(y1[i, j]), int(y2[i, j])] == ref


def test_threefry_large_input_spans_blocks():
    n = (1 << 15) * 2 + 7  # more than one block of the NumPy implementation, ragged tail
    x = np.arange(n, dtype=U32)
    y1, y2 = prng.threefry2x32(U32(7), U32(9), U32(0), x)
    for i in (0, 1 << 15, n - 1):
        assert [int(y1[i]), int(y2[i])] == _threefry_reference(7, 9, 0, i)


@pytest.mark.parametrize("offset", [0, 4, 16, 36])
def test_threefry_block_writes_any_outputs(offset):
    # Outputs off a cache line, or strided (the columns of a stacked result), are computed in
    # aligned scratch and written by the last pass: the same words as in place.
    n = 5000
    assert n >= prng._SCRATCH_MIN  # the scratch path, not the in-place one
    x = np.arange(n, dtype=U32)
    raw = np.empty(8 * n + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    out1 = raw[start:start + 4 * n].view(U32)
    stacked = np.empty((n, 2), U32)
    prng._threefry2x32_block(U32(7), U32(9), U32(0), x, out1, stacked[:, 1])
    want1, want2 = np.empty(n, U32), np.empty(n, U32)
    prng._threefry2x32_block(U32(7), U32(9), U32(0), x, want1, want2)
    np.testing.assert_array_equal(out1, want1)
    np.testing.assert_array_equal(stacked[:, 1], want2)
    for i in (0, 17, n - 1):
        assert [int(want1[i]), int(want2[i])] == _threefry_reference(7, 9, 0, i)


@pytest.mark.parametrize("shape", [(5000,), (70, 80)])
def test_large_split_writes_keys_straight_into_the_stacked_result(shape):
    # split's threefry words are broadcast to (..., 1) and concatenated: compiled, the kernel
    # writes them into the result's columns (no per-word buffers, no concatenate).
    from gpuarr.backends.numpy import codegen
    from gpuarr.compiler import passes

    f = gpuarr.jit(lambda k: random.split(k, shape))
    key = random.key(11)
    src = codegen.source_of(passes.optimize(f.trace(key).jaxpr))
    assert "stacked_threefry2x32" in src and "concatenate" not in src, src
    got = np.asarray(random.key_data(f(key)))
    assert got.shape == shape + (2,) and got.dtype == np.uint32
    with gpuarr.disable_jit():
        want = np.asarray(random.key_data(random.split(key, shape)))
    np.testing.assert_array_equal(got, want)
    k1, k2 = (int(w) for w in np.asarray(random.key_data(key)))
    flat = got.reshape(-1, 2)
    for i in (0, 1, flat.shape[0] - 1):
        assert list(flat[i]) == _threefry_reference(k1, k2, 0, i)
    small = codegen.source_of(passes.optimize(
        gpuarr.jit(lambda k: random.split(k, 10)).trace(key).jaxpr))
    assert "stacked_" not in small and "concatenate" in small, small


def test_split_inside_a_blocked_run_is_not_stacked(monkeypatch):
    # With runs from 4096 elements the iota and threefry of a split go block by block; the
    # stacking then leaves the kernel to the run.
    from gpuarr.backends.numpy import codegen
    from gpuarr.compiler import passes

    monkeypatch.setattr(codegen, "_RUN_MIN_SIZE", 1 << 12)
    f = gpuarr.jit(lambda k: random.split(k, 5000))
    key = random.key(3)
    src = codegen.source_of(passes.optimize(f.trace(key).jaxpr))
    assert "run_in_passes" in src and "stacked_" not in src, src
    got = np.asarray(random.key_data(f(key)))
    k1, k2 = (int(w) for w in np.asarray(random.key_data(key)))
    assert got.shape == (5000, 2)
    for i in (0, 4097, 4999):
        assert list(got[i]) == _threefry_reference(k1, k2, 0, i)


def test_threefry_rules_jit_vmap_jvp():
    keys = np.array([[1, 2], [3, 4], [5, 6]], U32)
    x = np.arange(12, dtype=U32).reshape(3, 4)
    f = lambda k, c: prng.threefry2x32(k[0], k[1], U32(0), c)
    eager = [np.asarray(o) for o in f(keys[0], x[0])]
    jitted = [np.asarray(o) for o in gpuarr.jit(f)(keys[0], x[0])]
    assert all((a == b).all() for a, b in zip(eager, jitted))
    batched = gpuarr.vmap(f)(keys, x)
    loop = [f(k, c) for k, c in zip(keys, x)]
    for out in range(2):
        np.testing.assert_array_equal(np.asarray(batched[out]),
                                      np.stack([np.asarray(lp[out]) for lp in loop]))
    # Batch only the counter (key unbatched), and batch along axis 1.
    b2 = gpuarr.vmap(f, in_axes=(None, 1))(keys[0], x)
    np.testing.assert_array_equal(np.asarray(b2[0]),
                                  np.stack([np.asarray(f(keys[0], x[:, j])[0]) for j in range(4)]))
    primals, tangents = ad.jvp_rules[prng.threefry2x32_p](
        (U32(1), U32(2), U32(3), x[0]), [ad.Zero.from_primal(v) for v in (1, 2, 3, x[0])])
    assert all(type(t) is ad.Zero for t in tangents)


def test_threefry_abstract_eval_checks_dtypes_and_shapes():
    rule = abstract_eval_rules[prng.threefry2x32_p]
    u = lambda *s: ShapedArray(s, np.uint32)
    assert rule(u(), u(), u(4, 1), u(4, 3)) == [u(4, 3), u(4, 3)]
    with pytest.raises(TypeError, match="uint32"):
        rule(u(), u(), ShapedArray((3,), np.int32), u(3))
    with pytest.raises(TypeError, match="incompatible shapes"):
        rule(u(), u(), u(2), u(3))


def test_threefry_2x32_helper_matches_jax_layout():
    out = prng.threefry_2x32(np.array([0, 0], U32), np.arange(5, dtype=U32))
    # Counts are split in halves (padded with a zero) and hashed pairwise.
    y1, y2 = prng.threefry2x32(U32(0), U32(0), np.array([0, 1, 2], U32), np.array([3, 4, 0], U32))
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([y1, y2])[:5])
    with pytest.raises(TypeError, match="uint32"):
        prng.threefry_2x32(np.array([0, 0], U32), np.arange(4, dtype=np.int32))


# ---------------------------------------------------------------- keys: the known answers


def test_split_and_fold_in_known_answers():
    k = random.key(0)
    assert random.key_data(random.split(k)).tolist() == [[1797259609, 2579123966],
                                                          [928981903, 3453687069]]
    four = random.key_data(random.split(k, 4)).tolist()
    assert four[2:] == [[4146024105, 2718843009], [2467461003, 3840466878]]
    for i in range(3):
        assert random.key_data(random.fold_in(k, i)).tolist() == four[i]


def test_bits_known_answers():
    b = random.bits(random.key(0), (5,), jnp.uint32)
    assert b.dtype == np.uint32 and b.shape == (5,)
    assert b.tolist() == [4070199207, 4202968722, 1427181096, 2012915765, 2447653815]
    assert random.bits(random.key(1701), (3,), jnp.uint32).tolist() == [1111271205, 2679469115,
                                                                       974515252]


def test_key_and_prngkey_data_and_seeds():
    assert random.PRNGKey(0).dtype == np.uint32 and random.PRNGKey(0).tolist() == [0, 0]
    assert random.PRNGKey(7).tolist() == [0, 7]
    assert random.PRNGKey(-1).tolist() == [0, 4294967295]
    # Without x64, seeds go through int32 (JAX truncates them the same way).
    assert random.PRNGKey(2**40 + 5).tolist() == [0, 5]
    assert random.PRNGKey(np.uint32(7)).tolist() == [0, 7]
    with gpuarr.enable_x64():
        assert random.PRNGKey(2**40 + 5).tolist() == [256, 5]
        assert random.PRNGKey(-1).tolist() == [4294967295, 4294967295]
    assert random.key_data(random.key(3)).tolist() == [0, 3]


def test_key_array_type_shape_repr_and_indexing():
    k = random.key(0)
    assert k.shape == () and k.ndim == 0 and str(k.dtype) == "key<fry>" and repr(k.dtype) == "key<fry>"
    assert random.key_dtype() == k.dtype and random.key_impl(k) == "threefry2x32"
    assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    ks = random.split(k, 4)
    assert ks.shape == (4,) and len(ks) == 4
    assert random.key_data(ks[2]).tolist() == [4146024105, 2718843009]
    assert ks[1:3].shape == (2,) and ks[None].shape == (1, 4) and ks[..., 0].shape == ()
    grid = random.split(k, (2, 3))
    assert grid.shape == (2, 3) and grid.reshape(6).shape == (6,) and grid.T.shape == (3, 2)
    assert grid.reshape(-1, 2).shape == (3, 2) and grid.ravel().shape == (6,)
    assert [random.key_data(x).tolist() for x in ks] == random.key_data(ks).tolist()
    assert bool(k == random.key(0)) and not bool(k != random.key(0))
    assert np.asarray(ks == ks).all()
    assert random.key_data(random.clone(k)).tolist() == [0, 0]
    with pytest.raises(TypeError, match="unhashable"):
        hash(k)


def test_wrap_key_data_roundtrip_and_errors():
    data = random.key_data(random.split(random.key(5), 3))
    keys = random.wrap_key_data(data)
    assert keys.shape == (3,) and np.asarray(keys == random.split(random.key(5), 3)).all()
    with pytest.raises(TypeError, match=r"end with \(2,\)"):
        random.wrap_key_data(jnp.zeros((3,), jnp.uint32))
    with pytest.raises(TypeError, match="dtype = uint32"):
        random.wrap_key_data(jnp.zeros((2,), jnp.int32))
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key(0, impl="nope")
    with pytest.raises(NotImplementedError, match="implements only"):
        random.key(0, impl="rbg")


def test_key_is_a_pytree_leaf_to_users_and_its_data_to_transformations():
    tu = gpuarr.tree_util
    k = random.key(1)
    keys = random.split(k, 3)
    state = {"k": keys, "x": np.float32(1.0)}
    leaves, tree = tu.tree_flatten(state)
    assert leaves[0] is keys and tree == tu.tree_structure({"k": 0, "x": 0})
    assert str(tu.tree_structure(k)) == "PyTreeDef(*)"
    assert tu.tree_leaves([k, (keys,)]) == [k, keys]
    assert gpuarr.tree.map(lambda x: x.shape, state) == {"k": (3,), "x": ()}
    assert tu.tree_map(lambda a, b: a is b, state, state) == {"k": True, "x": True}
    assert [p for p, _ in tu.tree_leaves_with_path(state)] == [(tu.DictKey("k"),),
                                                               (tu.DictKey("x"),)]
    assert tu.all_leaves([k, keys]) and tu.tree_reduce(lambda a, b: b, [1, k]) is k
    back = tu.tree_unflatten(tree, leaves)
    assert back["k"] is keys
    # gpuarr.pytrees, which the transformations use, flattens a key into its raw data.
    data, node = gpuarr.pytrees.tree_flatten(k)
    assert len(data) == 1 and data[0].dtype == np.uint32 and data[0].shape == (2,)
    again = node.unflatten(data)
    assert isinstance(again, random.PRNGKeyArray) and bool(again == k)
    jax = pytest.importorskip("jax")
    jk = jax.random.split(jax.random.key(1), 3)
    assert jax.tree.map(lambda x: x.shape, {"k": jk, "x": np.float32(1.0)}) == \
        gpuarr.tree.map(lambda x: x.shape, state)
    assert str(jax.tree_util.tree_structure(jk)) == str(tu.tree_structure(keys))


# ---------------------------------------------------------------- keys through transformations


def test_keys_through_jit():
    k = random.key(0)
    out = gpuarr.jit(random.split)(k)
    assert isinstance(out, random.PRNGKeyArray) and out.shape == (2,)
    assert random.key_data(out).tolist() == random.key_data(random.split(k)).tolist()
    f = gpuarr.jit(lambda k, i: random.fold_in(k, i))
    assert random.key_data(f(k, 2)).tolist() == [4146024105, 2718843009]
    made = gpuarr.jit(random.key)(3)
    assert random.key_data(made).tolist() == [0, 3]
    traced = []
    gpuarr.jit(lambda k: traced.append(repr(k)) or k)(k)
    assert traced[0].startswith("Traced<key<fry>[]>")


def test_keys_through_vmap_equal_a_loop():
    ks = random.split(random.key(0), 5)
    batched = gpuarr.vmap(random.split)(ks)
    assert batched.shape == (5, 2)
    loop = np.stack([random.key_data(random.split(k)) for k in ks])
    np.testing.assert_array_equal(random.key_data(batched), loop)
    folded = gpuarr.vmap(random.fold_in, in_axes=(None, 0))(random.key(0), jnp.arange(4))
    np.testing.assert_array_equal(random.key_data(folded), random.key_data(random.split(random.key(0), 4)))
    seeds = gpuarr.vmap(random.key)(jnp.arange(3))
    assert random.key_data(seeds).tolist() == [[0, 0], [0, 1], [0, 2]]


def test_keys_as_scan_carry():
    def body(key, _):
        key, sub = random.split(key)
        return key, random.uniform(sub)

    final, xs = lax.scan(body, random.key(0), None, length=4)
    key, expected = random.key(0), []
    for _ in range(4):
        key, sub = random.split(key)
        expected.append(float(random.uniform(sub)))
    np.testing.assert_array_equal(np.asarray(xs), np.float32(expected))
    assert bool(final == key)


# ---------------------------------------------------------------- bad input


def test_raw_integer_or_bad_data_as_key_raises_typeerror():
    with pytest.raises(TypeError, match="expected key_data to have ndim, shape, and dtype"):
        random.uniform(0, (3,))
    with pytest.raises(TypeError, match=r"end with \(2,\)"):
        random.uniform(jnp.zeros(3, jnp.uint32), (3,))
    with pytest.raises(TypeError, match="dtype = uint32"):
        random.normal(jnp.zeros(2, jnp.int32))
    with pytest.raises(TypeError, match="unexpected PRNG key type"):
        random.split([0, 0])


def test_key_arrays_where_one_key_is_expected_raise_valueerror():
    keys = random.split(random.key(0))
    for fn in (random.uniform, random.normal, random.split, random.bits):
        with pytest.raises(ValueError, match=r"accepts a single key, but was given a key array "
                                             r"of shape \(2,\) != \(\). Use jax.vmap"):
            fn(keys)


def test_bad_seeds_and_fold_in_data():
    with pytest.raises(TypeError, match="scalar seed, but was given an array of shape"):
        random.key(jnp.zeros(3, jnp.int32))
    with pytest.raises(TypeError, match="scalar seed, but was given a PRNG key"):
        random.key(random.key(0))
    with pytest.raises(TypeError, match="seed must be an integer"):
        random.key(1.5)
    with pytest.raises(TypeError, match="fold_in accepts a scalar"):
        random.fold_in(random.key(0), jnp.arange(3))


def test_raw_keys_are_accepted_and_returned_raw():
    raw = random.PRNGKey(0)
    out = random.split(raw)
    assert not isinstance(out, random.PRNGKeyArray) and out.dtype == np.uint32
    assert out.tolist() == random.key_data(random.split(random.key(0))).tolist()
    assert random.fold_in(raw, 1).tolist() == [928981903, 3453687069]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(random.uniform(raw, (3,))),
                                      np.asarray(random.uniform(random.key(0), (3,))))


# ---------------------------------------------------------------- against JAX itself


def test_split_fold_in_bits_match_jax_for_many_keys():
    jax = pytest.importorskip("jax")
    jr = jax.random
    for seed in (0, 1, 42, 2**31 - 1, -7):
        ours, theirs = random.key(seed), jr.key(seed)
        np.testing.assert_array_equal(random.key_data(random.split(ours, (2, 3))),
                                      np.asarray(jr.key_data(jr.split(theirs, (2, 3)))))
        for i in (0, 5, 2**31):
            np.testing.assert_array_equal(random.key_data(random.fold_in(ours, i)),
                                          np.asarray(jr.key_data(jr.fold_in(theirs, i))))
        for dt in ("uint8", "uint16", "uint32"):
            np.testing.assert_array_equal(np.asarray(random.bits(ours, (3, 7), dt)),
                                          np.asarray(jr.bits(theirs, (3, 7), dt)))


def test_bits_uint64_with_x64_matches_jax():
    jax = pytest.importorskip("jax")
    with gpuarr.enable_x64(), jax.enable_x64(True):
        ours = random.bits(random.key(3), (4,), jnp.uint64)
        theirs = jax.random.bits(jax.random.key(3), (4,), "uint64")
        assert ours.dtype == np.uint64
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
