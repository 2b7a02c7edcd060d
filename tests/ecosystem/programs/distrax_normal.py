"""distrax: a Normal and a transformed distribution's sample and log_prob under jit and grad."""
import distrax
import jax
import jax.numpy as jnp
from _report import report

key = jax.random.key(5)


@jax.jit
def sample_and_log_prob(loc, scale):
    dist = distrax.Normal(loc, scale)
    x = dist.sample(seed=key, sample_shape=(6,))
    return x, dist.log_prob(x)


def flow_log_prob(shift):
    dist = distrax.Transformed(distrax.Normal(0.0, 1.0),
                               distrax.Chain([distrax.ScalarAffine(shift, 2.0),
                                              distrax.Tanh()]))
    return jnp.sum(dist.log_prob(jnp.array([0.1, -0.3, 0.5])))


loc, scale = jnp.array([0.0, 1.0]), jnp.array([1.0, 0.5])
x, lp = sample_and_log_prob(loc, scale)
g = jax.grad(lambda l, s: jnp.sum(sample_and_log_prob(l, s)[1]), argnums=(0, 1))(loc, scale)
report({"x": x, "log_prob": lp, "grad": g, "flow": flow_log_prob(0.2),
        "flow_grad": jax.grad(flow_log_prob)(0.2)})
