"""Train a small MLP a few steps with optax: adam chained after clip_by_global_norm."""
import jax
import jax.numpy as jnp
import optax
from _report import report


def init(key, sizes):
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        key, k1 = jax.random.split(key)
        params.append({"w": jax.random.normal(k1, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


key = jax.random.key(0)
kx, kp = jax.random.split(key)
x = jax.random.normal(kx, (32, 3))
y = jnp.sin(x.sum(axis=1, keepdims=True))
params = init(kp, [3, 16, 16, 1])
opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
state = opt.init(params)


@jax.jit
def step(params, state):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


losses = []
for _ in range(5):
    params, state, loss = step(params, state)
    losses.append(loss)
report({"losses": jnp.stack(losses), "params": params})
