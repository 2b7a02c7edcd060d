"""Compile logging, cache-miss explanations, tracer-leak checks and source locations."""
import gc
import inspect
import logging
from functools import partial

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.errors import UnexpectedTracerError

THIS_FILE = inspect.getsourcefile(lambda: None)


def line_of(fn, text: str) -> int:
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(src) if text in line)


@pytest.fixture
def log(caplog):
    # Jits of one function share a cache (as in JAX): each test starts from an empty one.
    jax.clear_caches()
    caplog.set_level(logging.WARNING, logger="gpuarr")

    def messages():
        out = [r.getMessage() for r in caplog.records if r.name == "gpuarr"]
        caplog.clear()
        return out

    return messages


def scale(x, n):
    return x * n


# ---------------------------------------------------------------- jax_log_compiles


def test_log_compiles_first_call_and_cache_hit(log):
    jax.config.update("jax_log_compiles", True)
    f = jax.jit(scale, static_argnums=1)
    f(jnp.ones(3), 2)
    msgs = log()
    assert ("Compiling jit(scale) with global shapes and types (ShapedArray(float32[3]),). "
            "Reason: first call.") in msgs
    assert any(m.startswith("Finished tracing scale for jit in ") for m in msgs)
    f(jnp.ones(3), 2)
    assert log() == []


@pytest.mark.parametrize("first,second,reason", [
    ((np.ones(3, np.float32), 2), (np.ones(4, np.float32), 2),
     "argument x changed shape from f32[3] to f32[4]"),
    ((np.ones(3, np.float32), 2), (np.ones(3, np.int32), 2),
     "argument x changed dtype from f32[3] to i32[3]"),
    ((np.ones(3, np.float32), 2), (np.ones(3, np.float32), 3),
     "static argument n changed from 2 to 3"),
    ((np.float32(1.0), 2), (1.0, 2),
     "argument x changed weak type from f32[]{weak_type=False} to f32[]{weak_type=True}"),
])
def test_log_compiles_reason(log, first, second, reason):
    jax.config.update("jax_log_compiles", True)
    f = jax.jit(scale, static_argnums=1)
    f(*first)
    log()
    f(*second)
    compiles = [m for m in log() if m.startswith("Compiling jit(scale)")]
    assert len(compiles) == 1 and compiles[0].endswith(f"Reason: {reason}.")


def test_log_compiles_config_change(log):
    jax.config.update("jax_log_compiles", True)
    f = jax.jit(scale, static_argnums=1)
    f(jnp.ones(2), 1)
    log()
    with jax.enable_x64():
        f(jnp.ones(2), 1)
    assert any("Reason: config option jax_enable_x64 changed from False to True." in m
               for m in log())


def test_log_compiles_traces_under_transformations(log):
    jax.config.update("jax_log_compiles", True)
    f = jax.jit(jnp.sin)
    jax.vmap(f)(jnp.ones(3))
    traced = [m for m in log() if m.startswith("Finished tracing sin for jit")]
    assert len(traced) == 1 and "called under BatchTrace" in traced[0]


def test_no_logs_when_off(log):
    jax.jit(scale, static_argnums=1)(jnp.ones(3), 2)
    assert log() == []


# ---------------------------------------------------------------- jax_explain_cache_misses


def explain(log, first, second, static_argnums=1):
    jax.config.update("jax_explain_cache_misses", True)
    f = jax.jit(scale, static_argnums=static_argnums)
    f(*first)
    first_msgs = log()
    f(*second); line = inspect.currentframe().f_lineno  # noqa: E702
    (msg,) = log()
    return first_msgs, msg, line


def test_explain_never_seen_function(log):
    jax.config.update("jax_explain_cache_misses", True)
    f = jax.jit(scale, static_argnums=1)
    f(jnp.ones(2), 1); line = inspect.currentframe().f_lineno  # noqa: E702
    (msg,) = log()
    assert msg.startswith(f"TRACING CACHE MISS at {THIS_FILE}:{line} "
                          "(test_explain_never_seen_function):\n  never seen function:\n"
                          "    scale id=")
    assert f"defined at {THIS_FILE}:{line_of(scale, 'def scale')}" in msg


def test_explain_shape_change(log):
    _, msg, line = explain(log, (jnp.ones(3), 2), (jnp.ones(4), 2))
    assert msg == (f"TRACING CACHE MISS at {THIS_FILE}:{line} (explain):\n"
                   f"  for scale defined at {THIS_FILE}:{line_of(scale, 'def scale')}\n"
                   "  all previously seen cache keys differ. For the closest previous key:\n"
                   "  different input types:\n"
                   "  * at x, now f32[4] and before f32[3]")


def test_explain_dtype_change(log):
    _, msg, _ = explain(log, (jnp.ones(3), 2), (jnp.ones(3, jnp.int32), 2))
    assert msg.endswith("  different input types:\n  * at x, now i32[3] and before f32[3]")


def test_explain_static_arg_change(log):
    _, msg, _ = explain(log, (jnp.ones(3), 2), (jnp.ones(3), 5))
    assert msg.endswith("  different static arguments:\n  * at n, now 5 and before 2")


def test_explain_weak_type_change(log):
    _, msg, _ = explain(log, (jnp.float32(1), 2), (1.0, 2))
    assert "  * at x, now f32[]{weak_type=True} and before f32[]{weak_type=False}" in msg
    assert "weak-types" in msg


def test_explain_pytree_change_and_closest_key(log):
    jax.config.update("jax_explain_cache_misses", True)
    f = jax.jit(lambda d: d["a"])
    f({"a": jnp.ones(2)})
    f({"a": jnp.ones(3)})
    log()
    f({"a": jnp.ones(3), "b": 1.0})
    (msg,) = log()
    assert "different input pytree" in msg
    # The closest of several previous keys is the one with fewest differences.
    g = jax.jit(scale, static_argnums=1)
    for x, n in [(jnp.ones(2), 7), (jnp.ones(5, jnp.int32), 1)]:
        g(x, n)
    log()
    g(jnp.ones(5), 1)
    (msg,) = log()
    assert msg.endswith("  * at x, now f32[5] and before i32[5]")


# ---------------------------------------------------------------- jax_check_tracer_leaks

leaked = []


def leaky(x):
    y = jnp.sin(x)
    leaked.append(y)
    return y * 2


def test_check_tracer_leaks_jit():
    jax.config.update("jax_check_tracer_leaks", True)
    try:
        with pytest.raises(UnexpectedTracerError) as err:
            jax.jit(leaky)(1.0)
    finally:
        leaked.clear()
    msg = str(err.value)
    assert msg.startswith("Leaked trace DynamicJaxprTrace of leaky. Leaked tracer(s):")
    assert f"created on line {THIS_FILE}:{line_of(leaky, 'jnp.sin')} (leaky) by sin" in msg
    assert "referenced by: list" in msg


def test_check_tracer_leaks_make_jaxpr_argument():
    jax.config.update("jax_check_tracer_leaks", True)

    def keep_arg(x):
        leaked.append(x)
        return x + 1

    try:
        with pytest.raises(UnexpectedTracerError, match="This tracer is the argument"):
            jax.make_jaxpr(keep_arg)(1.0)
    finally:
        leaked.clear()


@pytest.mark.slow
def test_check_tracer_leaks_quiet_without_leaks():
    jax.config.update("jax_check_tracer_leaks", True)
    x = jnp.arange(3.0)
    np.testing.assert_allclose(jax.jit(lambda x: jnp.sin(x) * 2)(x), np.sin(np.arange(3.0)) * 2,
                               rtol=1e-6)
    closed, shapes = jax.make_jaxpr(lambda x: (x * 2, x), return_shape=True)(x)
    assert shapes[0].shape == (3,)
    jax.grad(jax.jit(lambda x: jnp.sin(x) * 2))(1.0)
    jax.vmap(jax.jit(lambda x: x * 2))(x)
    jax.jit(lambda xs: lax.scan(lambda c, y: (c + y, c), 0.0, xs))(x)
    jax.jit(partial(scale, n=3))(x)


def test_leak_without_the_option_surfaces_later():
    try:
        jax.jit(leaky)(1.0)  # no error at trace time
        with pytest.raises(UnexpectedTracerError):
            leaked[0] + 1
    finally:
        leaked.clear()
        gc.collect()


# ---------------------------------------------------------------- source locations


def two_ops(x):
    y = jnp.sin(x)
    return jnp.log(y) * 2


def test_every_equation_carries_its_source_line():
    closed = jax.make_jaxpr(two_ops)(1.0)
    sin_line, log_line = line_of(two_ops, "jnp.sin"), line_of(two_ops, "jnp.log")
    infos = [(e.prim.name, e.source_info.file, e.source_info.line) for e in closed.eqns]
    assert infos == [("sin", THIS_FILE, sin_line), ("log", THIS_FILE, log_line),
                     ("mul", THIS_FILE, log_line)]
    text = closed.pretty(source_info=True)
    assert f"= sin a  # {THIS_FILE}:{sin_line} (two_ops)" in text
    assert "#" not in str(closed)


@pytest.mark.parametrize("transform", [jax.grad, jax.vmap, lambda f: jax.jit(jax.grad(f))],
                         ids=["grad", "vmap", "jit_grad"])
def test_transformed_programs_point_at_user_lines(transform):
    x = jnp.ones(3) if transform is jax.vmap else 1.0
    closed = jax.make_jaxpr(transform(two_ops))(x)
    lines = {line_of(two_ops, "jnp.sin"), line_of(two_ops, "jnp.log")}

    def all_eqns(prog):
        for e in prog.eqns:
            yield e
            for sub in e.params.values():
                if hasattr(sub, "eqns"):
                    yield from all_eqns(sub)

    ours = [e for e in all_eqns(closed) if e.prim.name in ("sin", "cos", "log", "div")]
    assert ours
    for e in ours:
        assert e.source_info.file == THIS_FILE and e.source_info.line in lines, e
