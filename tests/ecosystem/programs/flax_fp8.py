"""flax's fp8 ops: a Dense layer whose products quantize through Fp8DirectDotGeneralOp and
Fp8DotGeneralOp (float32 scales and amax histories, the default), three training steps in
which the fp8 meta variables take their new values from the gradient, as flax's training loops
do (`_overwrite_with_gradient`)."""
import warnings

import flax.linen as nn
import jax
import jax.numpy as jnp
from _report import report
from flax.linen import fp8_ops

results = {}
for op in (fp8_ops.Fp8DirectDotGeneralOp, fp8_ops.Fp8DotGeneralOp):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Fp8DotGeneralOp is deprecated
        model = nn.Dense(4, dot_general_cls=op)
        x = jax.random.normal(jax.random.key(5), (8, 6))
        variables = model.init(jax.random.key(6), x)

        @jax.jit
        def step(variables, x):
            def loss(v):
                return jnp.sum(model.apply(v, x) ** 2)
            value, grads = jax.value_and_grad(loss)(variables)
            params = jax.tree.map(lambda p, g: p - 0.01 * g, variables["params"], grads["params"])
            # The meta variables' "gradients" are their updated values (scales, histories).
            return value, {"params": params,
                           fp8_ops.OVERWRITE_WITH_GRADIENT: grads[fp8_ops.OVERWRITE_WITH_GRADIENT]}

        losses = []
        for i in range(3):
            value, variables = step(variables, x * (i + 1))
            losses.append(value)
    results[op.__name__] = {"losses": jnp.stack(losses), "variables": variables,
                            "out": model.apply(variables, x)}
report(results)
