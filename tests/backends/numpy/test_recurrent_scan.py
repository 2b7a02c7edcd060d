"""Scans of recurrent cells, h = f(W @ h + U @ x_t) or f(W @ h + x_t), written by
gpuarr.backends.numpy.recurrent_scan as one product of [W | U] (or [W | I]) a step, against a float64 NumPy
loop (and the plain loop where an identity block meets inputs that are not finite)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends.host_memory import aligned_empty
from gpuarr.backends.numpy import codegen, recurrent_scan

RNG = np.random.default_rng(7)


def _inputs(hidden, steps, dtype=np.float32):
    w = (RNG.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
    u = (RNG.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
    b = RNG.normal(size=hidden).astype(dtype)
    xs = RNG.normal(size=(steps, hidden)).astype(dtype)
    h0 = RNG.normal(size=hidden).astype(dtype)
    return w, u, b, xs, h0


def _rnn(cell, reverse=False):
    """scan(cell) returning (final carry, stacked carries)."""
    def run(w, u, b, h0, xs):
        def step(h, x):
            h = cell(w, u, b, h, x)
            return h, h
        return lax.scan(step, h0, xs, reverse=reverse)
    return run


CELLS = {
    "tanh": (lambda w, u, b, h, x: jnp.tanh(w @ h + u @ x),
             lambda w, u, b, h, x: np.tanh(w @ h + u @ x)),
    "row_vector_bias_relu": (lambda w, u, b, h, x: jnp.maximum(jnp.dot(h, w) + x @ u + b, 0.0),
                             lambda w, u, b, h, x: np.maximum(h @ w + x @ u + b, 0.0)),
    "linear": (lambda w, u, b, h, x: w @ h + x, lambda w, u, b, h, x: w @ h + x),
    "logistic_scaled": (lambda w, u, b, h, x: 2.0 * jax.nn.sigmoid(x * 0.5 + w @ h) - b,
                        lambda w, u, b, h, x: 2.0 / (1 + np.exp(-(x * 0.5 + w @ h))) - b),
}


def _oracle(cell, w, u, b, h0, xs, reverse=False):
    h, ys = np.float64(h0), []
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        h = cell(*map(np.float64, (w, u, b, h, xs[t])))
        ys.append(h)
    return h, np.stack(ys[::-1] if reverse else ys)


def _source(fn, *args):
    return codegen.compile_closed(jax.make_jaxpr(fn)(*args)).source


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_scans_match_a_float64_loop(name, reverse):
    ours, theirs = CELLS[name]
    w, u, b, xs, h0 = _inputs(48, 37)
    run = _rnn(ours, reverse)
    assert "workspace" in _source(run, w, u, b, h0, xs)
    for fn in (jax.jit(run), run):  # compiled, and eager control flow
        h, ys = fn(w, u, b, h0, xs)
        want_h, want_ys = _oracle(theirs, w, u, b, h0, xs, reverse)
        assert h.shape == (48,) and ys.shape == (37, 48)
        assert h.dtype == ys.dtype == np.float32
        np.testing.assert_allclose(np.asarray(h), want_h, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=2e-5, atol=2e-5)


def test_float64_cells_and_only_the_final_carry():
    w, u, b, xs, h0 = _inputs(16, 50, np.float64)
    with jax.enable_x64():
        run = jax.jit(lambda w, u, b, h0, xs: _rnn(CELLS["tanh"][0])(w, u, b, h0, xs)[0])
        h = run(w, u, b, h0, xs)
        assert h.dtype == np.float64
        np.testing.assert_allclose(np.asarray(h), _oracle(CELLS["tanh"][1], w, u, b, h0, xs)[0],
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_inputs_take_the_plain_loop(bad):
    # [W | I] times a row holding inf would put NaN in every entry; the plain loop keeps it in
    # its own entry.
    ours, theirs = CELLS["linear"]
    w, u, b, xs, h0 = _inputs(8, 6)
    w = np.abs(w)
    xs[2, 3] = bad
    h, ys = jax.jit(_rnn(ours))(w, u, b, h0, xs)
    want_h, want_ys = _oracle(theirs, w, u, b, h0, xs)
    assert np.isfinite(np.asarray(ys)[2]).sum() == 7
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(h), want_h, rtol=1e-5, atol=1e-5)


def test_long_scans_build_their_buffer_per_call():
    ours, theirs = CELLS["tanh"]
    w, u, b, xs, h0 = _inputs(64, 9000)
    source = _source(_rnn(ours), w, u, b, h0, xs)
    assert "workspace" in source and ".append(" not in source  # not pooled: too large
    h, ys = jax.jit(_rnn(ours))(w, u, b, h0, xs)
    want_h, want_ys = _oracle(theirs, w, u, b, h0, xs)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-4, atol=1e-4)


def test_bodies_that_are_not_cells_keep_the_plain_loop():
    w, u, b, xs, h0 = _inputs(8, 5)
    big = _inputs(recurrent_scan.MAX_HIDDEN + 1, 5)
    not_cells = [
        (lambda w, u, b, h0, xs: lax.scan(lambda h, x: (jnp.tanh(w @ h + x) + h, h), h0, xs),
         (w, u, b, h0, xs)),  # the tail reads the old carry
        (lambda w, u, b, h0, xs: lax.scan(lambda h, x: (jnp.tanh(w @ h + x),) * 2, h0, xs),
         (w, u, b, h0, xs)),  # the pattern (as a check of this test)
        (lambda w, u, b, h0, xs: lax.scan(lambda h, x: (jnp.tanh(w @ h + x), w @ h), h0, xs),
         (w, u, b, h0, xs)),  # the product read twice
        (lambda w, u, b, h0, xs: lax.scan(lambda h, x: (jnp.tanh(w @ h + x), None), h0, xs),
         (big[0], big[1], big[2], big[4], big[3])),  # too wide for the identity block
    ]
    for k, (fn, args) in enumerate(not_cells):
        assert ("workspace" in _source(fn, *args)) == (k == 1)
        got = jax.jit(fn)(*args)
        want = fn(*args)
        for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-5, atol=1e-5)


def test_gradients_through_cell_scans():
    w, u, b, xs, h0 = _inputs(6, 8)

    def loss(w, h0, xs):
        return jnp.sum(_rnn(CELLS["tanh"][0])(w, u, b, h0, xs)[1] ** 2)
    check_grads_x64(loss, (w, h0, xs), order=1, modes=("fwd", "rev"))
    check_grads_x64(jax.jit(loss), (w, h0, xs), order=1, modes=("rev",))


def test_concurrent_calls_use_separate_buffers():
    ours, theirs = CELLS["tanh"]
    run = jax.jit(_rnn(ours))
    problems = [_inputs(32, 200) for _ in range(4)]
    results = [None] * len(problems)

    def work(k):
        w, u, b, xs, h0 = problems[k]
        for _ in range(20):
            results[k] = run(w, u, b, h0, xs)[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(problems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (w, u, b, xs, h0), h in zip(problems, results):
        want = _oracle(theirs, w, u, b, h0, xs)[0]
        np.testing.assert_allclose(np.asarray(h), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_inputs_through_an_input_product(bad):
    # [W | U] times [h | x] is W @ h + U @ x summed in one product: an infinite input gives the
    # infinities (or NaNs, where they meet with both signs) that the two products give.
    ours = CELLS["tanh"][0]
    w, u, b, xs, h0 = _inputs(8, 6)
    u[:, 3] = np.abs(u[:, 3]) * np.where(np.arange(8) < 4, 1, -1)
    xs[2, 3] = bad
    assert "isfinite" not in _source(_rnn(ours), w, u, b, h0, xs)
    h, ys = jax.jit(_rnn(ours))(w, u, b, h0, xs)
    want, want_ys = h0, []
    for x in xs:
        want = np.tanh(w @ want + u @ x)
        want_ys.append(want)
    assert np.isnan(want_ys[-1]).all() == np.isnan(bad)
    np.testing.assert_allclose(np.asarray(ys), np.stack(want_ys), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transposed", [False, True])
def test_inputs_narrower_than_the_carry(transposed):
    hidden, width, steps = 40, 24, 30
    w, _, b, _, h0 = _inputs(hidden, steps)
    u = (RNG.normal(size=(hidden, width)) / np.sqrt(width)).astype(np.float32)
    xs = RNG.normal(size=(steps, width)).astype(np.float32)

    def cell(w, u, b, h, x):  # row vectors times (in, out) matrices, or matrices times columns
        return jnp.tanh(h @ w + x @ u + b) if transposed else jnp.tanh(w @ h + u @ x + b)

    run = _rnn(cell)
    args = (w.T.copy(), u.T.copy()) if transposed else (w, u)
    source = _source(run, *args, b, h0, xs)
    assert "workspace" in source and "isfinite" not in source
    h, ys = jax.jit(run)(*args, b, h0, xs)
    want_h, want_ys = _oracle(lambda w, u, b, h, x: np.tanh(w @ h + u @ x + b), w, u, b, h0, xs)
    assert h.shape == (hidden,) and ys.shape == (steps, hidden) and h.dtype == np.float32
    np.testing.assert_allclose(np.asarray(h), want_h, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=2e-5, atol=2e-5)


def test_the_steps_run_as_chained_calls_where_the_tail_is_ufuncs():
    w, u, b, xs, h0 = _inputs(16, 10)
    # sin is a ufunc; float32 tanh is not (it is exactly +-1 past XLA's clamp: lax.tanh_real).
    driven = _source(_rnn(lambda w, u, b, h, x: jnp.sin(w @ h + u @ x)), w, u, b, h0, xs)
    chained = [ln for ln in driven.splitlines() if ln.strip().startswith("map(")]
    assert len(chained) == 2 and "a step's calls" in driven and "for " not in driven
    # maximum takes its output by keyword, which the chained calls cannot pass: a `for` loop.
    looped = _source(_rnn(CELLS["row_vector_bias_relu"][0]), w, u, b, h0, xs)
    assert "a step's calls" not in looped and looped.count("for ") == 1
    # Identity blocks keep the check for non-finite inputs and the plain loop after it.
    identity = _source(_rnn(CELLS["linear"][0]), w, u, b, h0, xs)
    assert "isfinite" in identity and "eye" in identity and "else:" in identity


@pytest.mark.parametrize("shape, dtype", [((3,), np.float32), ((501, 128), np.float32),
                                          ((7, 5), np.float64), ((2, 3, 5), np.float64)])
def test_aligned_buffers(shape, dtype):
    a = aligned_empty(shape, dtype)
    assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % 64 == 0
    a[...] = 1
    assert a.sum() == np.prod(shape)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", ["tanh", "linear"])  # with and without an input product
def test_cells_stacking_the_old_carry(name, reverse):
    # ys of the carry before each step (and after it): rows t and t + 1 of the same buffer.
    ours, theirs = CELLS[name]
    w, u, b, xs, h0 = _inputs(24, 15)

    def run(w, u, b, h0, xs):
        def step(h, x):
            new = ours(w, u, b, h, x)
            return new, (h, new)
        return lax.scan(step, h0, xs, reverse=reverse)

    assert "workspace" in _source(run, w, u, b, h0, xs)
    h, (olds, news) = jax.jit(run)(w, u, b, h0, xs)
    want_h, want_news = _oracle(theirs, w, u, b, h0, xs, reverse)
    order = slice(None, None, -1) if reverse else slice(None)
    want_olds = np.concatenate([np.float64(h0)[None], want_news[order][:-1]])[order]
    np.testing.assert_allclose(np.asarray(h), want_h, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(news), want_news, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(olds), want_olds, rtol=2e-5, atol=2e-5)
