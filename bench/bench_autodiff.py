"""Autodiff throughput, side by side with JAX (CPU) in one run.

(a) one jitted SGD step: value_and_grad of softmax cross-entropy for an MLP 784-512-512-10
    with tanh, batch 256 (float32), parameters updated in the same jitted call;
(b) jacrev of a 100 -> 100 function (tanh(W x) * x with a dense W), jitted.
Cached calls, each ended by block_until_ready, timed for gpuarr and JAX in alternating rounds
(bench/timing.py: `interleaved`); the ratio is the median of the per-round ratios. On the
NumPy backend large products use OpenBLAS's threads only while the machine has idle cores
(`host_threads.blas_dot`); XLA's thread pool keeps both cores either way.
Run: python bench/bench_autodiff.py
"""
from __future__ import annotations

import time

import numpy as np
import timing

import gpuarr
import gpuarr.numpy as gnp

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is optional: only the gpuarr column is printed
    jax = jjnp = None



def mlp_problem(seed=0):
    rng = np.random.RandomState(seed)
    sizes = [784, 512, 512, 10]
    params = [(rng.randn(a, b).astype(np.float32) * np.float32(np.sqrt(1.0 / a)),
               np.zeros((b,), np.float32)) for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.randn(256, 784).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 256)]
    return params, x, y


def sgd_step(api, np_mod, log_softmax, lr=0.01):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_mod.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        return -np_mod.mean(np_mod.sum(log_softmax(logits) * y, axis=-1))

    @api.jit
    def step(params, x, y):
        value, grads = api.value_and_grad(loss)(params, x, y)
        new = [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]
        return new, value

    return step


def jac_problem(api, np_mod, seed=1):
    w = np.random.RandomState(seed).randn(100, 100).astype(np.float32) * 0.1

    def f(x):
        return np_mod.tanh(w @ x) * x

    return api.jit(api.jacrev(f)), np.linspace(-1, 1, 100).astype(np.float32)


def prepare(api, np_mod, log_softmax, put):
    """The two cached, jitted workloads of one library as no-argument callables that block."""
    params, x, y = mlp_problem()
    params = [(put(w), put(b)) for w, b in params]
    x, y = put(x), put(y)
    step = sgd_step(api, np_mod, log_softmax)
    t0 = time.perf_counter()
    api.block_until_ready(step(params, x, y))
    compile_s = time.perf_counter() - t0
    jac_fn, v = jac_problem(api, np_mod)
    v = put(v)
    api.block_until_ready(jac_fn(v))
    return (lambda: api.block_until_ready(step(params, x, y)),
            lambda: api.block_until_ready(jac_fn(v)), compile_s)


def main():
    print(f"gpuarr platform: {gpuarr.default_backend()}")
    g_sgd, g_jac, g_compile = prepare(gpuarr, gnp, gpuarr.nn.log_softmax, gnp.asarray)
    if jax is None:
        sgd, sgd_med = timing.best_of(g_sgd, 1, repeat=30)
        jac, jac_med = timing.best_of(g_jac, 10, repeat=30)
        print(f"gpuarr sgd step {sgd * 1e3:.3f} ms (median {sgd_med * 1e3:.3f}, first call "
              f"{g_compile * 1e3:.0f} ms)   jacrev {jac * 1e3:.3f} ms (median {jac_med * 1e3:.3f})")
        print("jax not installed: no comparison")
        return
    jax.config.update("jax_platforms", "cpu")
    j_sgd, j_jac, j_compile = prepare(jax, jjnp, jax.nn.log_softmax, jjnp.asarray)
    print(f"first call (trace and compile): gpuarr {g_compile * 1e3:.0f} ms, "
          f"jax {j_compile * 1e3:.0f} ms")
    print(f"{'workload':<18}{'gpuarr best/median ms':>24}{'jax best/median ms':>22}{'ratio':>8}")
    for name, ours, theirs in (("sgd step", g_sgd, j_sgd), ("jacrev 100x100", g_jac, j_jac)):
        number = timing.calls_per_round(ours)
        (gb, gm), (jb, jm), ratio = timing.interleaved(ours, theirs, number, rounds=20)
        print(f"{name:<18}{gb * 1e3:>11.3f} /{gm * 1e3:>9.3f}{jb * 1e3:>12.3f} /{jm * 1e3:>8.3f}"
              f"{ratio:>8.2f}")


if __name__ == "__main__":
    main()
