"""lax.ragged_dot, lax.ragged_dot_general and RaggedDotDimensionNumbers against JAX: values,
shapes and dtypes in the three ragged modes (random group sizes, empty groups, sizes summing to
less or more than the ragged dimension, per-prefix group sizes), gradients, jit, vmap, and
JAX's errors for bad shapes, dtypes and dimension numbers."""
import dataclasses

import numpy as np
import pytest
from helpers import check_grads_x64, close
from jax_compare import check_signatures, same_error

import gpuarr
from gpuarr import lax as glax

jax = pytest.importorskip("jax")
jlax = jax.lax
jnp = jax.numpy


def _dn(module, dot, ragged, group):
    return module.RaggedDotDimensionNumbers(dot, ragged, group)


def _group_sizes(rng, total, groups, prefix=()):
    """Random sizes of `groups` consecutive groups over at most `total` indices (some empty,
    some rows left in no group), one row of sizes per prefix position."""
    out = np.empty(prefix + (groups,), np.int32)
    for idx in np.ndindex(*prefix):
        end = rng.integers(0, total + 1) if rng.random() < 0.5 else total
        cuts = np.sort(rng.integers(0, end + 1, size=groups - 1))
        out[idx] = np.diff(np.concatenate([[0], cuts, [end]]))
    return out


# (name, lhs shape, rhs shape, dot dimension numbers, lhs ragged dims, rhs group dims,
#  group_sizes prefix shape, number of groups)
CASES = [
    ("mode1_basic", (10, 4), (3, 4, 5), (([1], [1]), ([], [])), [0], [0], (), 3),
    ("mode1_k_first", (4, 10), (5, 4, 3), (([0], [1]), ([], [])), [1], [2], (), 3),
    ("mode1_batch", (2, 10, 4), (3, 2, 4, 5), (([2], [2]), ([0], [1])), [1], [0], (2,), 3),
    ("mode1_batch_flat_sizes", (2, 10, 4), (3, 2, 4, 5), (([2], [2]), ([0], [1])), [1], [0], (), 3),
    ("mode1_outer_free_dim", (3, 10, 4), (4, 4, 5), (([2], [0]), ([], [])), [1], [1], (3,), 4),
    ("mode2_basic", (5, 12), (12, 3), (([1], [0]), ([], [])), [1], [], (), 4),
    ("mode2_batch", (2, 5, 12), (2, 12, 3), (([2], [1]), ([0], [0])), [2], [], (2,), 4),
    ("mode2_two_contracting", (5, 3, 12), (12, 3, 4), (([2, 1], [0, 1]), ([], [])), [1], [],
     (12,), 2),
    ("mode3_basic", (6, 5, 4), (6, 4, 3), (([2], [1]), ([0], [0])), [0], [], (), 3),
    ("mode3_two_batch", (2, 6, 5, 4), (2, 6, 4, 3), (([3], [2]), ([0, 1], [0, 1])), [1], [],
     (2,), 3),
]
MODE1 = [c for c in CASES if c[0].startswith("mode1")]


def _case(case, seed, dtype=np.float32):
    name, ls, rs, dot, ragged, group, prefix, g = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(ls).astype(dtype)
    y = rng.standard_normal(rs).astype(dtype)
    gs = _group_sizes(rng, ls[ragged[0]], g, prefix)
    return x, y, gs, (dot, ragged, group)


def _jax_all(fns, arglists):
    """JAX's results of each fns[i](*arglists[i]), from one compiled program (JAX compiles
    every eager primitive for every shape, which is slow)."""
    return jax.jit(lambda args: [f(*a) for f, a in zip(fns, args)])(arglists)


def test_ragged_dot_general_modes_match_jax():
    runs = [_case(case, seed) for case in CASES for seed in range(3)]
    wants = _jax_all([lambda a, b, c, dn=dn: jlax.ragged_dot_general(a, b, c, _dn(jlax, *dn))
                      for _, _, _, dn in runs], [run[:3] for run in runs])
    for (x, y, gs, dn), want in zip(runs, wants):
        got = glax.ragged_dot_general(x, y, gs, _dn(glax, *dn))
        close(got, want)
        jitted = gpuarr.jit(lambda a, b, c, dn=dn: glax.ragged_dot_general(a, b, c, _dn(glax, *dn)))
        close(jitted(x, y, gs), want)


def test_ragged_dot_group_sizes_edge_cases_match_jax():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 4)).astype(np.float32)
    y = rng.standard_normal((3, 4, 5)).astype(np.float32)
    # empty groups, fewer rows than m (the rest are zero), more than m (clipped), all in one
    # group, no rows at all, and a negative size (JAX's mask lets groups overlap).
    sizes = [[2, 0, 3], [0, 9, 0], [4, 4, 4], [9, 0, 0], [0, 0, 0], [3, -1, 2], [0, 0, 9]]
    want = jax.jit(lambda a, b, gss: [jlax.ragged_dot(a, b, g) for g in gss])(
        x, y, [np.array(s, np.int32) for s in sizes])
    for s, w in zip(sizes, want):
        close(glax.ragged_dot(x, y, np.array(s, np.int32)), w)
    # The documented meaning on one case: rows 0-1 use y[0], rows 2-4 y[2], the rest are zero.
    got = np.asarray(glax.ragged_dot(x, y, np.array([2, 0, 3], np.int32)))
    np.testing.assert_allclose(got[:2], x[:2] @ y[0], rtol=1e-5)
    np.testing.assert_allclose(got[2:5], x[2:5] @ y[2], rtol=1e-5)
    assert not got[5:].any()


DTYPE_CASES = [
    (np.float32, np.float32, None), (np.float16, np.float16, None),
    (np.float16, np.float16, np.float32), (np.float32, np.float32, np.float16),
    ("bfloat16", "bfloat16", None), (np.float16, "bfloat16", None),
    (np.int8, np.int8, None), (np.int8, np.int8, np.int32), (np.int8, np.uint8, None),
    (np.int32, np.int32, np.float32), (np.float32, np.int32, None), (np.bool_, np.bool_, None),
    (np.bool_, np.bool_, np.int32), (np.complex64, np.complex64, None),
    (np.float32, np.float32, np.int32),
]


def test_ragged_dot_dtypes_match_jax():
    # Mixed operand types take the more precise one, integers wrap in their type unless a
    # wider preferred_element_type is asked for, half precision is summed in float32.
    rng = np.random.default_rng(1)
    gs = np.array([3, 1, 3], np.int32)
    args = []
    for lhs_dtype, rhs_dtype, _ in DTYPE_CASES:
        scale = 60 if np.dtype(lhs_dtype).kind in "biu" else 1
        args.append(((rng.standard_normal((8, 6)) * scale).astype(lhs_dtype),
                     (rng.standard_normal((3, 6, 4)) * scale).astype(rhs_dtype)))
    wants = _jax_all([lambda a, b, p=p: jlax.ragged_dot(a, b, gs, preferred_element_type=p)
                      for _, _, p in DTYPE_CASES], args)
    for (x, y), (_, _, preferred), want in zip(args, DTYPE_CASES, wants):
        got = glax.ragged_dot(x, y, gs, preferred_element_type=preferred)
        assert got.dtype == want.dtype, (x.dtype, y.dtype, preferred)
        narrow = want.dtype.name in ("float16", "bfloat16")
        wide = np.complex128 if want.dtype.kind == "c" else np.float64
        close(np.asarray(got).astype(wide), np.asarray(want).astype(wide), 1e-2 if narrow else 1e-5)


def test_group_sizes_of_any_integer_type():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3, 2)).astype(np.float32)
    want = jlax.ragged_dot(x, y, np.array([4, 3], np.int32))
    for dt in (np.int8, np.uint8, np.int16, np.uint32):
        close(glax.ragged_dot(x, y, np.array([4, 3], dt)), want)


def test_precision_arguments():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gs = np.array([2, 3], np.int32)
    want = np.asarray(glax.ragged_dot(x, y, gs))
    for p in ("highest", "bfloat16", glax.Precision.HIGH, (glax.Precision.HIGHEST,) * 2,
              ("float32", "default")):
        np.testing.assert_array_equal(glax.ragged_dot(x, y, gs, precision=p), want)
    text = str(gpuarr.make_jaxpr(lambda a, b: glax.ragged_dot(a, b, gs, precision="highest"))(x, y))
    assert "ragged_dot_general[" in text and "HIGHEST" in text
    same_error(lambda: glax.ragged_dot(x, y, gs, precision="bogus"),
               lambda: jlax.ragged_dot(x, y, gs, precision="bogus"))


# ---------------------------------------------------------------- gradients


def test_grad_matches_jax():
    rng = np.random.default_rng(5)
    runs = []
    for case in MODE1:
        x, y, gs, dn = _case(case, 4)
        w = rng.standard_normal(glax.ragged_dot_general(x, y, gs, _dn(glax, *dn)).shape)
        runs.append((x, y, gs, w.astype(np.float32), dn))

    def grad(module, lax_module, dn):
        def f(a, b, gs, w):
            out = lax_module.ragged_dot_general(a, b, gs, _dn(lax_module, *dn))
            return (out * w).sum() + (out ** 2).sum()
        return module.grad(f, argnums=(0, 1))

    wants = _jax_all([grad(jax, jlax, run[-1]) for run in runs], [run[:-1] for run in runs])
    for run, want in zip(runs, wants):
        close(grad(gpuarr, glax, run[-1])(*run[:-1]), want, 1e-4)
        close(gpuarr.jit(grad(gpuarr, glax, run[-1]))(*run[:-1]), want, 1e-4)


def test_ragged_dot_grad_and_jvp_match_jax():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((12, 5)).astype(np.float32)
    y = rng.standard_normal((4, 5, 3)).astype(np.float32)
    tx, ty = rng.standard_normal(x.shape).astype(np.float32), rng.standard_normal(y.shape).astype(np.float32)
    gs = np.array([3, 0, 6, 2], np.int32)  # one empty group, one row in no group
    f = lambda lax_module: lambda a, b: lax_module.ragged_dot(a, b, gs)
    close(gpuarr.jvp(f(glax), (x, y), (tx, ty)), jax.jvp(f(jlax), (x, y), (tx, ty)), 1e-5)
    # preferred_element_type: the cotangents come back in the operand types
    xh, yh = x.astype(np.float16), y.astype(np.float16)
    g = lambda module, lax_module: module.grad(
        lambda a, b: lax_module.ragged_dot(a, b, gs, preferred_element_type=np.float32).sum(),
        argnums=(0, 1))
    close(g(gpuarr, glax)(xh, yh), g(jax, jlax)(xh, yh), 1e-2)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_grads_by_finite_differences(case):
    # JAX transposes mode 1 only; modes 2 and 3 are checked numerically (second order too,
    # which transposes the products the first-order rules build).
    x, y, gs, dn = _case(case, 7)
    f = lambda a, b: glax.ragged_dot_general(a, b, gs, _dn(glax, *dn))
    check_grads_x64(f, (x, y), order=2, modes=("fwd", "rev"))


def test_mode3_grad_is_dot_general_grad():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 5, 4)).astype(np.float32)
    y = rng.standard_normal((6, 4, 3)).astype(np.float32)
    gs = np.array([1, 4, 1], np.int32)
    dot = (([2], [1]), ([0], [0]))
    ours = gpuarr.grad(lambda a, b: (glax.ragged_dot_general(
        a, b, gs, _dn(glax, dot, [0], [])) ** 2).sum(), argnums=(0, 1))(x, y)
    want = jax.grad(lambda a, b: (jlax.dot_general(a, b, dot) ** 2).sum(), argnums=(0, 1))(x, y)
    close(ours, want, 1e-4)


# ---------------------------------------------------------------- jit and vmap


def test_jit_and_jaxpr():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gs = np.array([5, 2], np.int32)
    f = gpuarr.jit(glax.ragged_dot)
    close(f(x, y, gs), jlax.ragged_dot(x, y, gs))
    close(f(x, y, np.array([1, 7], np.int32)), jlax.ragged_dot(x, y, np.array([1, 7], np.int32)))
    text = str(gpuarr.make_jaxpr(glax.ragged_dot)(x, y, gs))
    assert "f32[8,4] = ragged_dot_general[" in text
    assert "lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,)" in text
    want = jax.eval_shape(jlax.ragged_dot, x, y, gs)
    got = gpuarr.eval_shape(glax.ragged_dot, x, y, gs)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_vmap_matches_jax():
    # JAX batches ragged_dot when every operand is batched along axis 0.
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 9, 4)).astype(np.float32)
    y = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
    gs = _group_sizes(rng, 9, 2, (3,))
    close(gpuarr.vmap(glax.ragged_dot)(x, y, gs), jax.vmap(jlax.ragged_dot)(x, y, gs))
    for case in (CASES[5], CASES[8]):  # mode 2 and mode 3
        xs, ys, gss = zip(*[_case(case, s)[:3] for s in range(2)])
        dn = _case(case, 0)[3]
        xs, ys, gss = np.stack(xs), np.stack(ys), np.stack(gss)
        want = jax.vmap(lambda a, b, c: jlax.ragged_dot_general(a, b, c, _dn(jlax, *dn)))(xs, ys, gss)
        got = gpuarr.vmap(lambda a, b, c: glax.ragged_dot_general(a, b, c, _dn(glax, *dn)))(xs, ys, gss)
        close(got, want)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_vmap_any_axes_matches_loop(case):
    # Beyond JAX (which batches only when all three are batched along axis 0): compare with
    # the per-example results (checked against JAX above), stacked.
    rng = np.random.default_rng(11)
    n = 3
    x, y, gs, dn = _case(case, 12)
    f = lambda a, b, c: glax.ragged_dot_general(a, b, c, _dn(glax, *dn))
    for in_axes in [(0, None, None), (None, 1, None), (1, 0, None), (None, None, 0),
                    (0, None, 0), (2, 0, 0)]:
        axes = tuple(None if ax is None else min(ax, a.ndim) for a, ax in zip((x, y, gs), in_axes))
        batched = [
            a if ax is None else np.stack(
                [_group_sizes(rng, x.shape[dn[1][0]], gs.shape[-1], gs.shape[:-1]) if i == 2
                 else rng.standard_normal(a.shape).astype(a.dtype) for _ in range(n)], axis=ax)
            for i, (a, ax) in enumerate(zip((x, y, gs), axes))]
        want = np.stack([f(*[a if ax is None else np.take(a, i, axis=ax)
                             for a, ax in zip(batched, axes)]) for i in range(n)])
        close(gpuarr.vmap(f, in_axes=axes)(*batched), want)


def test_vmap_of_grad():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 7, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    gs = np.array([[2, 0, 5], [1, 3, 1]], np.int32)
    f = lambda lax_module, module: module.vmap(module.grad(
        lambda a, b, c: (lax_module.ragged_dot(a, b, c) ** 2).sum(), argnums=(0, 1)))
    close(f(glax, gpuarr)(x, y, gs), f(jlax, jax)(x, y, gs), 1e-4)


# ---------------------------------------------------------------- errors and API


def _error_cases(lax_module):
    rng = np.random.default_rng(14)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3, 2)).astype(np.float32)
    gs = np.array([2, 0, 3], np.int32)
    rd, rdg = lax_module.ragged_dot, lax_module.ragged_dot_general
    dn = lambda *a: _dn(lax_module, *a)
    y2 = rng.standard_normal((3, 2)).astype(np.float32)
    return [
        lambda: rd(x, y, gs.astype(np.float32)),
        lambda: rd(x, y, gs.astype(np.bool_)),
        lambda: rd(x, y, np.int32(3)),
        lambda: rd(x, y, gs.reshape(1, 3)),
        lambda: rd(x, y, gs[:2]),
        lambda: rd(x, y[:, :2], gs),
        lambda: rd(x[None], y, gs),
        lambda: rd(x, y[0], gs),
        lambda: rd(x.astype(np.int32), y.astype(np.int32), gs,
                   preferred_element_type=np.dtype(np.int8)),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([], [])), [1], [0])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([], [])), [], [])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([], [])), [0, 1], [])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([], [])), [2], [])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([], [])), [0], [])),
        lambda: rdg(x, y, gs, dn((([1], [1]), ([], [])), [0], [1])),
        lambda: rdg(x, y, gs, dn((([1], [1]), ([], [])), [0], [3])),
        lambda: rdg(x, y, gs, dn((([1], [1]), ([], [])), [0], [0, 2])),
        lambda: rdg(x, y, gs, dn((([1], [1]), ([0], [])), [0], [0])),
        lambda: rdg(x, y, gs, dn((([2], [1]), ([], [])), [0], [0])),
        lambda: rdg(x, y, gs, dn((([1, 1], [1, 1]), ([], [])), [0], [0])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([1], [1])), [1], [])),
        lambda: rdg(x, y2, gs, dn((([1], [0]), ([0], [])), [1], [])),
        lambda: rdg(x, y2[None], gs, dn((([1], [1]), ([0], [0])), [1], [])),
    ]


def test_errors_match_jax():
    for ours, theirs in zip(_error_cases(glax), _error_cases(jlax)):
        same_error(ours, theirs)
    # Traced errors are the eager ones.
    x, y = np.ones((6, 3), np.float32), np.ones((3, 3, 2), np.float32)
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
        gpuarr.jit(glax.ragged_dot)(x, y, np.ones(3, np.float32))


def test_unsupported_arguments():
    x, y, gs = np.ones((6, 3), np.float32), np.ones((3, 3, 2), np.float32), np.full(3, 2, np.int32)
    with pytest.raises(NotImplementedError, match="group_offset"):
        glax.ragged_dot(x, y, gs, group_offset=np.zeros(1, np.int32))
    with pytest.raises(NotImplementedError, match="out_sharding"):
        glax.ragged_dot(x, y, gs, out_sharding="x")
    with pytest.raises(TypeError):  # lists are not arrays, as in JAX
        glax.ragged_dot(x.tolist(), y, gs)
    with pytest.raises(TypeError):
        glax.ragged_dot_general(x, y, gs, (((1,), (1,)), ((), ())))


def test_dimension_numbers_and_signatures():
    ours = glax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    theirs = jlax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    assert repr(ours) == repr(theirs)
    assert ours == glax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    assert hash(ours) == hash(glax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,)))
    assert ours.lhs_ragged_dimensions == (0,) and ours.dot_dimension_numbers == (((1,), (1,)), ((), ()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.lhs_ragged_dimensions = (1,)
    check_signatures(glax, jlax, ["ragged_dot", "ragged_dot_general"])
    assert glax.ragged_dot_general_p.name == "ragged_dot_general"
