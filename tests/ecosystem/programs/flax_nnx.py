"""flax nnx: an nnx.Linear model's init, call and gradient (nnx.grad), one optimizer step."""
import jax
import jax.numpy as jnp
import optax
from _report import report
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(3, 8, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))


model = Model(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(4), (4, 3))
out = model(x)
grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer):
    loss, g = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
    optimizer.update(model, g)
    return loss


loss = train_step(model, optimizer)
report({"out": out, "grads": nnx.state(grads), "loss": loss, "params": nnx.state(model)})
