"""`python examples/demo.py`: train a small MLP classifier with jit(value_and_grad(...)).

The data are synthetic (three Gaussian blobs in 8 dimensions, labelled by blob); the model
is a two-hidden-layer MLP with softmax cross-entropy, trained by plain SGD. The script
prints the platform, the loss falling, the final accuracy, and timings: the first call
(tracing and compiling) and the per-step time after warm-up, measured with
block_until_ready so asynchronous dispatch is not mistaken for speed.
"""
from __future__ import annotations

import time

import numpy as np

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import nn


def make_data(n=1536, dim=8, classes=3, seed=0):
    """Gaussian blobs: class k is centred at a random point; returns (x float32, y int32)."""
    rng = np.random.RandomState(seed)
    centres = rng.randn(classes, dim) * 2.0
    y = rng.randint(0, classes, n)
    x = centres[y] + rng.randn(n, dim)
    return x.astype(np.float32), y.astype(np.int32)


def init_params(sizes, seed=0):
    """Glorot-scaled weights and zero biases for each layer."""
    rng = np.random.RandomState(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        w = rng.randn(n_in, n_out) * np.sqrt(2.0 / (n_in + n_out))
        params.append({"w": jnp.asarray(w.astype(np.float32)), "b": jnp.zeros((n_out,))})
    return params


def predict(params, x):
    for layer in params[:-1]:
        x = nn.relu(x @ layer["w"] + layer["b"])
    last = params[-1]
    return x @ last["w"] + last["b"]


def loss_fn(params, x, y_onehot):
    """Mean softmax cross-entropy."""
    logp = nn.log_softmax(predict(params, x))
    return -jnp.mean(jnp.sum(logp * y_onehot, axis=-1))


def accuracy(params, x, y):
    return float(np.mean(np.argmax(np.asarray(predict(params, x)), axis=-1) == y))


def main(steps=200, lr=0.1, batch=128):
    print(f"platform: {gpuarr.default_backend()}  device: {gpuarr.devices()[0]}")
    x, y = make_data()
    y1h = nn.one_hot(y, 3)
    params = init_params([8, 64, 64, 3])

    @gpuarr.jit
    def step(params, xb, yb):
        loss, grads = gpuarr.value_and_grad(loss_fn)(params, xb, yb)
        new = gpuarr.tree_map(lambda p, g: p - lr * g, params, grads)
        return new, loss

    n_batches = len(x) // batch
    batches = [(jnp.asarray(x[i * batch:(i + 1) * batch]), y1h[i * batch:(i + 1) * batch])
               for i in range(n_batches)]
    t0 = time.perf_counter()
    params, loss = step(params, *batches[0])
    gpuarr.block_until_ready(loss)
    first = time.perf_counter() - t0
    print(f"first call (trace + compile + run): {first * 1e3:.1f} ms")
    print(f"step {0:4d}  loss {float(loss):.4f}")
    t0 = time.perf_counter()
    for i in range(1, steps):
        params, loss = step(params, *batches[i % n_batches])
        if i % 40 == 0 or i == steps - 1:
            print(f"step {i:4d}  loss {float(loss):.4f}")
    gpuarr.block_until_ready(params)
    per_step = (time.perf_counter() - t0) / (steps - 1)
    print(f"per step after warm-up: {per_step * 1e3:.3f} ms")
    print(f"final accuracy: {accuracy(params, x, y):.3f}")


if __name__ == "__main__":
    main()
