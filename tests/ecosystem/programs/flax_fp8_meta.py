"""flax's fp8 meta dtype `fm32` (an extended dtype whose gradients accumulate by a maximum):
the scale and amax history, converted to fm32 once and reused by every iteration of a scan,
get the newest values flax's quantization computes rather than their sum, eagerly and under
jit (flax's `test_fp8_meta_dtype`, three training steps); the same for the output-gradient
quantization `out_qdq` over two products; fm32 arrays out of a jit and back in."""
import jax
import jax.numpy as jnp
from _report import report
from flax.linen import fp8_ops

f32 = jnp.float32
fm32 = fp8_ops.fp32_max_grad
assert fp8_ops.CAN_USE_EARRAY


def in_qdq_steps(q_dtype, use_jit):
    def outer(x, ah_f32, sf_f32):
        ah = jax.lax.convert_element_type(ah_f32, fm32)
        sf = jax.lax.convert_element_type(sf_f32, fm32)

        def body(carry, _):
            return fp8_ops.in_qdq(f32, q_dtype, carry, sf, ah), None
        carry, _ = jax.lax.scan(body, jnp.array([x], f32), None, length=3)
        return carry[0]

    fn = jax.grad(outer, (0, 1, 2))
    fn = jax.jit(fn) if use_jit else fn
    ah, sf = jnp.zeros((3,), f32), jnp.ones((1,), f32)
    steps = []
    for x in (2.0, 3.0, 4.0):
        grad_x, ah, sf = fn(x, ah, sf)
        steps.append({"grad_x": grad_x, "amax_history": ah, "scale": sf})
    return steps


def out_qdq_products(use_jit):
    ws = jax.random.normal(jax.random.key(3), (2, 4, 4), f32)
    x = jax.random.normal(jax.random.key(4), (2, 4), f32)

    def loss(ws, ah_f32, sf_f32):
        ah = jax.lax.convert_element_type(ah_f32, fm32)
        sf = jax.lax.convert_element_type(sf_f32, fm32)

        def layer(h, w):
            return fp8_ops.out_qdq(f32, jnp.float8_e5m2, h @ w, sf, ah), None
        h, _ = jax.lax.scan(layer, x, ws)
        return jnp.sum(h ** 2)

    fn = jax.value_and_grad(loss, (0, 1, 2))
    fn = jax.jit(fn) if use_jit else fn
    value, (g_ws, g_ah, g_sf) = fn(ws, jnp.array([0.5, 0.0, 0.0], f32), jnp.ones((1,), f32))
    return {"loss": value, "grad_ws": g_ws, "amax_history": g_ah, "scale": g_sf}


def round_trip():
    ah = jnp.array([4.0, 2.0, 3.0], f32)
    e = jax.jit(lambda a: jax.lax.convert_element_type(a * 2, fm32))(ah)
    assert type(e).__name__ == "EArray" and e.dtype == fm32 and isinstance(e, jax.Array)
    back = jax.jit(lambda e: jax.lax.convert_element_type(e, f32))(e)
    eager = jax.lax.convert_element_type(jax.lax.convert_element_type(ah, fm32), f32)
    return {"through_jit": back, "eager": eager, "shape": jnp.array(e.shape)}


report({
    "in_qdq": {f"{genre}_{'jit' if use_jit else 'eager'}": in_qdq_steps(q, use_jit)
               for genre, q in (("OCP", jnp.float8_e4m3fn), ("NANOO", jnp.float8_e4m3fnuz))
               for use_jit in (True, False)},
    "out_qdq": {"jit": out_qdq_products(True), "eager": out_qdq_products(False)},
    "round_trip": round_trip(),
})
