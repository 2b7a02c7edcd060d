"""vmap and lax control flow where they used to differ from JAX: unmapped non-array
arguments, weakly typed loop carries, float predicates, error classes and messages. Oracles
are Python loops and values JAX gives (noted where used)."""
import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax

X3 = np.array([1.0, -2.0, 3.0], np.float32)


def check(x, expected, dtype, weak=False):
    assert x.dtype == np.dtype(dtype), (x.dtype, dtype)
    assert x.shape == np.shape(expected)
    assert bool(getattr(x, "weak_type", False)) == weak
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6)


def test_vmap_passes_unmapped_python_objects_through():
    seen = []

    def f(x, tag):
        seen.append(tag)
        return x * 2

    out = jax.vmap(f, in_axes=(0, None))(X3, {"k": "label"})
    check(out, X3 * 2, np.float32)
    assert seen == [{"k": "label"}]
    # NumPy values and Python scalars still arrive as Arrays.
    out = jax.vmap(lambda x, s: x * s, in_axes=(0, None))(X3, 2.0)
    check(out, X3 * 2, np.float32)


@pytest.mark.parametrize("use_jit", [False, True])
def test_loop_carries_from_python_scalars_stay_weak(use_jit):
    # JAX: (Array(10, dtype=int32, weak_type=True), Array(1024., dtype=float32, weak_type=True))
    def loops():
        w = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))
        f = lax.fori_loop(0, 5, lambda i, c: c + i, 0.0)
        s, ys = lax.scan(lambda c, _: (c + 1, c * 2), 0, None, length=4)
        return w, f, s, ys

    (wi, wf), f, s, ys = jax.jit(loops)() if use_jit else loops()
    check(wi, 10, np.int32, weak=True)
    check(wf, 1024.0, np.float32, weak=True)
    check(f, 10.0, np.float32, weak=True)
    check(s, 4, np.int32, weak=True)
    check(ys, [0, 2, 4, 6], np.int32, weak=True)


def test_loop_carry_with_strong_body_is_strong():
    # A weak carry the body turns into float32 (x3 is strong) is float32, not weak.
    out = lax.fori_loop(0, 3, lambda i, c: c + X3[0], 0.0)
    check(out, 3.0, np.float32)


def test_cond_accepts_float_predicate():
    check(lax.cond(1.0, lambda a: a * 2, lambda a: a - 1, X3), X3 * 2, np.float32)
    check(lax.cond(0.0, lambda a: a * 2, lambda a: a - 1, X3), X3 - 1, np.float32)
    f = jax.jit(lambda p, a: lax.cond(p, lambda b: b * 2, lambda b: b - 1, a))
    check(f(np.float32(0.5), X3), X3 * 2, np.float32)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number"):
        lax.cond(1j, lambda a: a, lambda a: a, X3)


def test_switch_errors_name_switch():
    with pytest.raises(TypeError, match="^switch branch outputs must have the same pytree "
                                        "structure"):
        lax.switch(0, [lambda a: a, lambda a: (a,)], 1.0)
    with pytest.raises(TypeError, match="^switch branches must have equal output types"):
        lax.switch(0, [lambda a: a, lambda a: a.astype(jnp.int32)], X3)
    with pytest.raises(TypeError, match="^cond branch outputs must have the same pytree"):
        lax.cond(True, lambda a: (a, a), lambda a: a, X3)


def test_switch_clamps_and_batches():
    branches = [lambda b: b, lambda b: b * 2, lambda b: b - 1]
    idx = np.array([-1, 1, 5])
    out = jax.vmap(lambda i, a: lax.switch(i, branches, a))(idx, X3)
    expected = [branches[min(max(i, 0), 2)](x) for i, x in zip(idx, X3)]
    check(out, np.array(expected, np.float32), np.float32)


def test_scan_body_not_a_pair_message():
    with pytest.raises(TypeError, match="^scan body output must be a pair, got "):
        lax.scan(lambda c, x: c, 0.0, X3)


def test_traced_slice_bound_is_index_error():
    with pytest.raises(IndexError, match="Slice entries must be static integers"):
        jax.jit(lambda a, i: a[1:i])(X3, 2)
    # a static bound under grad is fine
    g = jax.grad(lambda a, i: a[:i].sum())(X3, 2)
    check(g, [1.0, 1.0, 0.0], np.float32)


def test_vmap_of_while_with_batched_predicate_matches_loop():
    n = np.array([1, 4, 2])

    def f(k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))

    i, v = jax.vmap(f)(n)
    check(i, n.astype(np.int32), np.int32, weak=True)  # Python-scalar carries stay weak
    check(v, 2.0 ** n, np.float32, weak=True)


def test_vmap_of_while_keeps_python_scalar_carries_weak():
    # The loop body is evaluated again by the batching rule: its weak literals stay weak.
    f = jax.vmap(lambda x: lax.while_loop(lambda c: c[0] < 3,
                                          lambda c: (c[0] + 1, c[1] * 2.0), (0, x)))
    i, v = f(np.arange(3.0, dtype=np.float32))
    check(i, np.full(3, 3, np.int32), np.int32, weak=True)
    check(v, np.arange(3.0) * 8, np.float32)
