"""flax linen: a two-layer Dense model's init, apply and gradient."""
import flax.linen as nn
import jax
import jax.numpy as jnp
from _report import report


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(8)(x))
        return nn.Dense(2)(x)


model = MLP()
x = jax.random.normal(jax.random.key(2), (4, 3))
params = model.init(jax.random.key(3), x)
out = model.apply(params, x)
grads = jax.grad(lambda p: jnp.sum(model.apply(p, x) ** 2))(params)
report({"out": out, "params": params, "grads": grads})
