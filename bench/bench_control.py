"""Control-flow and vmap benchmarks: gpuarr (default platform) beside JAX (CPU), one run.

    python bench/bench_control.py

Both libraries are timed in alternating rounds (bench/timing.py: `interleaved`), so drifts in
the machine's speed hit both alike. Prints the median (and best) time per call of each case for
both libraries, the median of the per-round ratios gpuarr / JAX, and the ratio of the bests.
Targets on the NumPy backend: scan within 2x of JAX, the others no slower than JAX.
"""
from __future__ import annotations

import numpy as np
import timing


def _block(out):
    for leaf in (out if isinstance(out, (tuple, list)) else (out,)):
        leaf.block_until_ready()


def cases(jax, jnp, lax):
    """(name, jitted function, args) triples written against the JAX API."""
    rng = np.random.default_rng(0)
    hidden, steps = 64, 500
    W = jnp.asarray(rng.normal(size=(hidden, hidden)).astype(np.float32) / 8)
    U = jnp.asarray(rng.normal(size=(hidden, hidden)).astype(np.float32) / 8)
    xs = jnp.asarray(rng.normal(size=(steps, hidden)).astype(np.float32))
    h0 = jnp.zeros(hidden, jnp.float32)

    @jax.jit
    def rnn(W, U, h0, xs):
        def step(h, x):
            h = jnp.tanh(W @ h + U @ x)
            return h, h
        return lax.scan(step, h0, xs)[0]

    feats, batch = 100, 1024
    X = jnp.asarray(rng.normal(size=(batch, feats)).astype(np.float32))
    y = jnp.asarray(rng.normal(size=(batch,)).astype(np.float32))
    w = jnp.asarray(rng.normal(size=(feats,)).astype(np.float32))

    def loss(w, x, t):
        return (jnp.dot(x, w) - t) ** 2

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))

    a = jnp.asarray(rng.uniform(1.0, 100.0, size=(1000,)).astype(np.float32))

    @jax.jit
    def newton_sqrt(a):
        def cond(c):
            x, i = c
            err = lax.reduce_max(jnp.abs(x * x - a) / a, (0,))
            return jnp.logical_and(err > 1e-5, i < 100)

        def body(c):
            x, i = c
            return 0.5 * (x + a / x), i + 1
        return lax.while_loop(cond, body, (a, 0))[0]

    return [("scan rnn (500 steps, hidden 64)", rnn, (W, U, h0, xs), 2.0),
            ("jit(vmap(grad)) per-example grads (1024 x 100)", per_example, (w, X, y), 1.0),
            ("while_loop Newton sqrt (1000)", newton_sqrt, (a,), 1.0)]


def main():
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax

    import gpuarr
    import gpuarr.numpy as gnp
    from gpuarr import lax as glax

    print(f"{'case (median / best)':48s} {'gpuarr':>17s} {'jax':>17s} {'ratio':>11s} "
          f"{'target':>6s}")
    for (name, g_fn, g_args, target), (_, j_fn, j_args, _) in zip(
            cases(gpuarr, gnp, glax), cases(jax, jjnp, jlax)):
        g_out, j_out = g_fn(*g_args), j_fn(*j_args)
        np.testing.assert_allclose(np.asarray(g_out), np.asarray(j_out), rtol=2e-3, atol=2e-3)
        number = timing.calls_per_round(lambda: _block(g_fn(*g_args)))
        (gb, gm), (jb, jm), ratio = timing.interleaved(
            lambda: _block(g_fn(*g_args)), lambda: _block(j_fn(*j_args)), number, rounds=25)
        print(f"{name:48s} {gm * 1e3:7.3f}/{gb * 1e3:7.3f}ms {jm * 1e3:7.3f}/{jb * 1e3:7.3f}ms "
              f"{ratio:5.2f}/{gb / jb:5.2f} {target:6.1f}")


if __name__ == "__main__":
    main()
