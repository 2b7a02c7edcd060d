"""Printed programs of jax.scipy.special's log_ndtr, ndtri, loggamma, zeta and owens_t against
JAX's: the same custom_jvp wrappers (log_ndtr, zeta, owens_t), jits (the complex branch of
loggamma, polyval in ndtri) and primitives. Eager results (values, dtypes, weak types),
gradients and errors of these and spence are compared with JAX's too."""
import re

import numpy as np
import pytest
from jax_compare import assert_close_float32, assert_same_as_jax_float32

import gpuarr
import gpuarr.scipy.special as gs

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.scipy.special")

X = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)
B = np.linspace(1.1, 3.9, 6, dtype=np.float32).reshape(2, 3)
I = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
C = (X + np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3) * 1j).astype(np.complex64)


def _printed(name, *args, **kwargs):
    """(gpuarr's printed program, JAX's) for special.`name`(*args, **kwargs)."""
    def call(mod):
        return lambda *xs: getattr(mod, name)(*xs, **kwargs)
    want = jax.make_jaxpr(call(js))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(call(gs))(*args))
    return got, want


# Calls whose whole programs print as JAX's.
SAME_PROGRAM = {
    "log_ndtr": ("log_ndtr", X),
    "log_ndtr_scalar": ("log_ndtr", np.float32(-12.)),
    "log_ndtr_python_float": ("log_ndtr", 0.3),
    "log_ndtr_series_order": ("log_ndtr", X - 8, {"series_order": 5}),
    "log_ndtr_series_order_0": ("log_ndtr", X, {"series_order": 0}),
    "ndtri": ("ndtri", X),
    "ndtri_python_float": ("ndtri", 0.3),
    "loggamma": ("loggamma", X),
    "loggamma_int": ("loggamma", I),
    "loggamma_python_float": ("loggamma", 0.5),
    "loggamma_complex": ("loggamma", C),
    "zeta": ("zeta", B, X),
    "zeta_python_scalar": ("zeta", 2.0, X),
    "zeta_int": ("zeta", I, I),
}


@pytest.mark.parametrize("name", sorted(SAME_PROGRAM))
def test_programs_print_as_jax(name):
    fn, *args = SAME_PROGRAM[name]
    kwargs = args.pop() if isinstance(args[-1], dict) else {}
    got, want = _printed(fn, *args, **kwargs)
    assert got == want


def _consts_as_inputs(text):
    """The program with each `lambda consts; inputs.` header written `lambda ; consts inputs.`
    (JAX passes a custom_jvp function's constants to it as leading inputs)."""
    return re.sub(r"lambda ([^;.]+); ", r"lambda ; \1 ", text)


@pytest.mark.parametrize("args", [(X, B), (0.5, X), (I, I)], ids=["f32", "scalar", "int"])
def test_owens_t_function_body_prints_as_jax(args):
    # The custom_jvp function's body, up to where its two quadrature constants are listed:
    # gpuarr's custom_jvp_call keeps them in the called program instead of operands.
    got, want = _printed("owens_t", *args)
    body = slice(0, want.rindex("\n{ lambda"))
    assert _consts_as_inputs(got[:got.rindex("\n{ lambda")]) == _consts_as_inputs(want[body])
    assert "custom_jvp_call[\n      name=_owens_t_impl" in got


# (function, arguments, tolerance in units of float32 epsilon at max(|value|, 1)).
VALUE_CASES = {
    "log_ndtr": ("log_ndtr", (np.array([-30., -12., -1., 0., 3., 6., 10., np.nan],
                                       np.float32),), 4),
    "log_ndtr_order_1": ("log_ndtr", (np.array([-30., -12., 2.], np.float32), 1), 4),
    "log_ndtr_order_0": ("log_ndtr", (np.array([-30., -12., 2.], np.float32), 0), 4),
    "log_ndtr_python_float": ("log_ndtr", (-3.5,), 4),
    "log_ndtr_int": ("log_ndtr", (I,), 0),
    "log_ndtr_float16": ("log_ndtr", (X.astype(np.float16),), 0),
    "log_ndtr_order_float": ("log_ndtr", (X, 1.5), 0),
    "log_ndtr_order_negative": ("log_ndtr", (X, -1), 0),
    "log_ndtr_order_31": ("log_ndtr", (X, 31), 0),
    "ndtri": ("ndtri", (np.array([0., 1e-30, 1e-10, 0.01, 0.2, 0.5, 0.9, 0.999, 1., 1.5,
                                  np.nan], np.float32),), 4),
    "ndtri_int": ("ndtri", (I,), 0),
    "ndtri_list": ("ndtri", ([0.5, 0.2],), 0),
    "ndtri_python_float": ("ndtri", (0.3,), 4),
    "loggamma": ("loggamma", (np.array([-1.5, 0., 0.2, 1., 3.5, 40., np.inf, np.nan],
                                       np.float32),), 8),
    "loggamma_int": ("loggamma", (I,), 8),
    "loggamma_complex": ("loggamma", (np.array([-3.5 - 5j, -2 + 0j, -0.3 + 0.5j, 0.2 + 3j,
                                                2.5 - 1j, 10 + 0j, np.nan],
                                               np.complex64),), 16),
    "zeta": ("zeta", (B, X), 16),
    "zeta_int": ("zeta", (I + 1, I), 16),
    "zeta_riemann": ("zeta", (B,), 0),
    "spence": ("spence", (np.array([-1., 0., 1e-6, 0.2, 0.5, 0.9, 1., 1.7, 2., 2.5, 1e6,
                                    np.nan], np.float32),), 8),
    "spence_int": ("spence", (I,), 0),
    "owens_t": ("owens_t", (np.array([[0.], [0.3], [1.], [-2.5], [np.nan]], np.float32),
                            np.array([[0., 0.5, 1., -1., 2., -7., np.inf]], np.float32)), 4),
    "owens_t_int": ("owens_t", (I, I - 3), 4),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_as_jax(name):
    fn, args, tol = VALUE_CASES[name]
    assert_same_as_jax_float32(getattr(gs, fn), getattr(js, fn), args, tol)


@pytest.mark.parametrize("fn, argnums, args", [
    ("zeta", 0, (np.float32(2.5), np.float32(1.5))),
    ("zeta", 1, (np.float32(2.5), np.float32(1.5))),
    ("log_ndtr", 0, (np.float32(-12.),)),
    ("log_ndtr", 0, (np.float32(3.),)),
    ("owens_t", 0, (np.float32(0.7), np.float32(1.7))),
    ("owens_t", 1, (np.float32(0.7), np.float32(1.7))),
], ids=["zeta_dx", "zeta_dq", "log_ndtr_tail", "log_ndtr", "owens_t_dh", "owens_t_da"])
def test_gradients_as_jax(fn, argnums, args):
    # zeta's derivative in x comes from JAX's series expansion (lax.zeta has none in x).
    got = gpuarr.grad(getattr(gs, fn), argnums)(*args)
    want = jax.grad(getattr(js, fn), argnums)(*args)
    assert_close_float32(np.asarray(got), np.asarray(want), 8)


def test_zeta_jvp_under_jit_as_jax():
    x, q = np.array([2.5, 4.], np.float32), np.array([1.5, 0.7], np.float32)
    t = (np.ones(2, np.float32), np.ones(2, np.float32))
    got = gpuarr.jit(lambda x, q: gpuarr.jvp(gs.zeta, (x, q), t))(x, q)
    want = jax.jit(lambda x, q: jax.jvp(js.zeta, (x, q), t))(x, q)
    for g, w in zip(got, want):
        assert_close_float32(np.asarray(g), np.asarray(w), 16)
