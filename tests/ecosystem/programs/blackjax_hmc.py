"""blackjax: HMC and NUTS on a small Gaussian, a few steps each."""
import blackjax
import jax
import jax.numpy as jnp
from _report import report


def logdensity(x):
    return -0.5 * jnp.sum((x - jnp.array([1.0, -1.0])) ** 2 / jnp.array([1.0, 4.0]))


def run(kernel, steps, key):
    state = kernel.init(jnp.zeros(2))
    step = jax.jit(kernel.step)
    positions = []
    for k in jax.random.split(key, steps):
        state, _ = step(k, state)
        positions.append(state.position)
    return jnp.stack(positions)


inv_mass = jnp.array([1.0, 1.0])
hmc = blackjax.hmc(logdensity, step_size=0.3, inverse_mass_matrix=inv_mass,
                   num_integration_steps=5)
nuts = blackjax.nuts(logdensity, step_size=0.3, inverse_mass_matrix=inv_mass)
report({"hmc": run(hmc, 5, jax.random.key(6)), "nuts": run(nuts, 5, jax.random.key(7))})
