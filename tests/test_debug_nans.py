"""SPEC S19: jax_debug_nans / jax_debug_infs name the primitive and the user's source line."""
import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax


def line_of(fn, text: str) -> str:
    """`file:line` of the first line of `fn`'s source containing `text`."""
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return f"{inspect.getsourcefile(fn)}:{start + i}"
    raise AssertionError(f"{text!r} not in the source of {fn}")


def expect(kind, prim, where):
    return re.escape(f"invalid value ({kind}) encountered in {prim}\n"
                     f"The operation was applied at {where}")


@pytest.fixture
def nans():
    jax.config.update("jax_debug_nans", True)


@pytest.fixture
def infs():
    jax.config.update("jax_debug_infs", True)


def f(x):
    y = jnp.sin(x)
    z = jnp.log(y - 2.0)
    return z * 2.0


def h(x):
    y = jnp.exp(x)
    return 1.0 / (y - y)


# ---------------------------------------------------------------- eager


def test_eager_op_names_primitive_and_line(nans):
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        f(1.0)


def test_eager_infs(infs):
    with pytest.raises(FloatingPointError, match=expect("inf", "div", line_of(h, "1.0 /"))):
        h(jnp.ones(3))


def test_flag_names_and_context_manager():
    for name in ("gpuarr_debug_nans", "debug_nans", "jax_debug_nans"):
        jax.config.update(name, True)
        with pytest.raises(FloatingPointError, match="encountered in log"):
            jnp.log(-1.0)
        jax.config.update(name, False)
    from gpuarr.config import debug_infs, debug_nans
    with debug_nans():
        with pytest.raises(FloatingPointError):
            jnp.sqrt(-jnp.ones(2))
    with debug_infs():
        with pytest.raises(FloatingPointError, match=r"\(inf\)"):
            jnp.exp(1000.0)
    assert jnp.isnan(jnp.log(-1.0))  # off again: no error


def test_environment_variable():
    code = ("import gpuarr.numpy as jnp\n"
            "try:\n    jnp.log(-1.0)\nexcept FloatingPointError as e:\n    print('raised', e)\n")
    env = dict(os.environ, GPUARR_DEBUG_NANS="1", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert "raised invalid value (nan) encountered in log" in out.stdout, out.stderr


def test_finite_values_and_integers_pass(nans, infs):
    np.testing.assert_allclose(jnp.sin(1.0), np.sin(1.0), rtol=1e-6)
    assert int(jnp.int32(7) // 2) == 3
    np.testing.assert_allclose(jax.jit(lambda x: jnp.cos(x) * 2)(0.0), 2.0)


def test_off_by_default():
    assert bool(jnp.isnan(f(1.0)))
    assert bool(jnp.isnan(jax.jit(f)(1.0)))


# ---------------------------------------------------------------- jit


def test_jit_reruns_op_by_op(nans, capsys):
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        jax.jit(f)(1.0)
    assert "Invalid nan value encountered in the output of a gpuarr.jit function" in \
        capsys.readouterr().out


def test_jit_infs(infs):
    with pytest.raises(FloatingPointError, match=expect("inf", "div", line_of(h, "1.0 /"))):
        jax.jit(h)(jnp.ones(3))


def test_nested_jit_names_the_inner_operation(nans):
    outer = jax.jit(lambda x: jax.jit(f)(x) + 1.0)
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        outer(jnp.ones(4))


def test_jit_with_pytree_static_and_python_scalar_args(nans):
    def g(d, n, s):
        return jnp.sqrt(d["a"] - n) * s

    gj = jax.jit(g, static_argnums=1)
    np.testing.assert_allclose(gj({"a": jnp.full(2, 5.0)}, 1, 2.0), [4.0, 4.0])
    with pytest.raises(FloatingPointError, match=expect("nan", "sqrt", line_of(g, "jnp.sqrt"))):
        gj({"a": jnp.zeros(2)}, 1, 2.0)


def test_jit_multiple_outputs(nans):
    def g(x):
        return x + 1.0, jnp.arcsin(x)

    with pytest.raises(FloatingPointError, match=expect("nan", "asin", line_of(g, "arcsin"))):
        jax.jit(g)(jnp.array([0.5, 3.0]))


def test_jit_nan_from_input_is_reported_without_an_operation(nans):
    def ident(x):
        return x

    with pytest.raises(FloatingPointError, match=r"encountered in jit\(ident\)\. Because "
                                                 "jax_debug_nans"):
        jax.jit(ident)(jnp.array([1.0, np.nan]))


def test_jit_control_flow_names_the_loop(nans):
    def g(xs):
        return lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, xs)

    with pytest.raises(FloatingPointError, match=expect("nan", "scan", line_of(g, "lax.scan"))):
        jax.jit(g)(jnp.array([1.0, -1.0]))


def test_jit_cache_follows_the_flag():
    g = jax.jit(f)
    assert bool(jnp.isnan(g(1.0)))
    jax.config.update("jax_debug_nans", True)
    with pytest.raises(FloatingPointError):
        g(1.0)
    jax.config.update("jax_debug_nans", False)
    assert bool(jnp.isnan(g(1.0)))


# ---------------------------------------------------------------- transformations


def test_grad_backward_pass_names_forward_line(nans):
    def g(x):
        return jnp.sqrt(x) * 0.0

    # The derivative of sqrt at 0 is inf; times the zero cotangent it is nan. The backward
    # pass evaluates equations of the linearized Program: the report points at the forward line.
    where = re.escape(line_of(g, "jnp.sqrt"))
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in \w+\n"
                                                 rf"The operation was applied at {where}"):
        jax.grad(g)(0.0)


def test_vmap_eager(nans):
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        jax.vmap(f)(jnp.ones(3))


def test_vmap_and_grad_of_jit_name_the_inner_operation(nans):
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        jax.vmap(jax.jit(f))(jnp.ones(3))
    with pytest.raises(FloatingPointError, match=expect("nan", "log", line_of(f, "jnp.log"))):
        jax.grad(jax.jit(f))(1.0)
