"""Autodiff throughput, side by side with JAX (CPU) in one run.

(a) one jitted SGD step: value_and_grad of softmax cross-entropy for an MLP 784-512-512-10
    with tanh, batch 256 (float32), parameters updated in the same jitted call;
(b) jacrev of a 100 -> 100 function (tanh(W x) * x with a dense W), jitted.
Times are the best (and the median) of 30 repeats of cached calls, each ended by
block_until_ready; the minimum is the figure to compare on a machine with other load. On the
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


def run(name, api, np_mod, log_softmax, put):
    params, x, y = mlp_problem()
    params = [(put(w), put(b)) for w, b in params]
    x, y = put(x), put(y)
    step = sgd_step(api, np_mod, log_softmax)
    t0 = time.perf_counter()
    api.block_until_ready(step(params, x, y))
    compile_s = time.perf_counter() - t0
    sgd, sgd_med = timing.best_of(lambda: api.block_until_ready(step(params, x, y)), 1, repeat=30)
    jac_fn, v = jac_problem(api, np_mod)
    v = put(v)
    api.block_until_ready(jac_fn(v))
    jac, jac_med = timing.best_of(lambda: api.block_until_ready(jac_fn(v)), 10, repeat=30)
    print(f"{name:8s} sgd step {sgd * 1e3:8.3f} ms (median {sgd_med * 1e3:.3f}, first call "
          f"{compile_s * 1e3:.0f} ms)   jacrev 100x100 {jac * 1e3:8.3f} ms "
          f"(median {jac_med * 1e3:.3f})")
    return sgd, jac


def main():
    print(f"gpuarr platform: {gpuarr.default_backend()}")
    g = run("gpuarr", gpuarr, gnp, gpuarr.nn.log_softmax, gnp.asarray)
    if jax is None:
        print("jax not installed: no comparison")
        return
    jax.config.update("jax_platforms", "cpu")
    j = run("jax", jax, jjnp, jax.nn.log_softmax, jjnp.asarray)
    print(f"ratio gpuarr/jax: sgd step {g[0] / j[0]:.2f}x   jacrev {g[1] / j[1]:.2f}x")


if __name__ == "__main__":
    main()
