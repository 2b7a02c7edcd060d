"""chex: a chex.dataclass through jit and grad, with chex's shape, type and closeness asserts
on the way (inside jit too)."""
import chex
import jax
import jax.numpy as jnp
from _report import report


@chex.dataclass
class Params:
    w: chex.Array
    b: chex.Array


def loss(params: Params, x):
    chex.assert_shape(params.w, (3, 2))
    chex.assert_type(params.b, float)
    return jnp.sum(jnp.tanh(x @ params.w + params.b) ** 2)


params = Params(w=jnp.arange(6.0).reshape(3, 2) / 6.0, b=jnp.array([0.1, -0.2]))
x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
value, grads = jax.jit(jax.value_and_grad(loss))(params, x)
chex.assert_trees_all_equal_shapes(params, grads)
chex.assert_tree_all_finite(grads)
stepped = jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
chex.assert_trees_all_close(stepped.w, params.w, atol=1.0)
report({"value": value, "grads": {"w": grads.w, "b": grads.b}, "stepped_loss": loss(stepped, x)})
