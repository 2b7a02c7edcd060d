"""equinox: an eqx.nn.MLP trained a few steps with filter_jit and filter_grad."""
import equinox as eqx
import jax
import jax.numpy as jnp
from _report import report

key = jax.random.key(1)
kx, km = jax.random.split(key)
model = eqx.nn.MLP(in_size=2, out_size=1, width_size=8, depth=2, key=km)
x = jax.random.normal(kx, (16, 2))
y = (x[:, :1] * x[:, 1:]).astype(jnp.float32)


@eqx.filter_jit
def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


@eqx.filter_jit
def step(model):
    grads = eqx.filter_grad(loss)(model, x, y)
    return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads))


losses = []
for _ in range(3):
    losses.append(loss(model, x, y))
    model = step(model)
report({"losses": jnp.stack(losses), "params": eqx.filter(model, eqx.is_array)})
