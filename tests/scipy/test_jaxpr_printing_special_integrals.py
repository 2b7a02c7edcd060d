"""Printed programs of jax.scipy.special's sici, fresnel, dawsn, erfcx and wofz against JAX's:
the same custom_jvp wrappers and jits (sici, sincospisquaredhalf), polyval calls on constant
coefficient arrays, and primitives. Eager results (values, dtypes, weak types), gradients and
errors of these and of exp1, expi and expn are compared with JAX's too."""
import re

import numpy as np
import pytest
from jax_compare import assert_close_float32, assert_same_as_jax_float32, outcome, same_results

import gpuarr
import gpuarr.scipy.special as gs

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.scipy.special")

X = np.linspace(0.3, 2.9, 6, dtype=np.float32).reshape(2, 3)
W = np.array([[-8., -4.5, -0.5], [0.5, 5., 12.]], np.float32)  # every branch of each function
I = np.arange(-2, 4, dtype=np.int32).reshape(2, 3)
C = (X + np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3) * 1j).astype(np.complex64)


def _printed(name, *args):
    """(gpuarr's printed program, JAX's) for special.`name`(*args)."""
    want = jax.make_jaxpr(getattr(js, name))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(getattr(gs, name))(*args))
    return got, want


@pytest.mark.parametrize("args", [(X,), (W,), (1.5,), (I,)],
                         ids=["f32", "branches", "python_float", "int"])
def test_sici_prints_as_jax(args):
    got, want = _printed("sici", *args)
    assert got == want


def _consts_as_inputs(text):
    """The program with each `lambda consts; inputs.` header written `lambda ; consts inputs.`
    (JAX passes a custom_jvp function's constants to it as leading inputs), with white space
    collapsed (the longer headers wrap at other places)."""
    return " ".join(re.sub(r"lambda ([^;.]+); ", r"lambda ; \1 ", text).split())


# custom_jvp functions that close over coefficient arrays: their bodies print as JAX's, up to
# the final custom_jvp_call, which in gpuarr keeps the arrays in the called program where
# JAX passes them as operands (num_consts).
BODY_CASES = {
    "fresnel": ("fresnel", X, "fresnel"),
    "fresnel_branches": ("fresnel", W, "fresnel"),
    "fresnel_python_float": ("fresnel", 1.5, "fresnel"),
    "fresnel_int": ("fresnel", I, "fresnel"),
    "dawsn": ("dawsn", W, "_dawsn"),
    "dawsn_python_float": ("dawsn", 1.5, "_dawsn"),
    "dawsn_int": ("dawsn", I, "_dawsn"),
    "erfcx": ("erfcx", W, "_erfcx"),
    "erfcx_python_float": ("erfcx", 1.5, "_erfcx"),
    "erfcx_int": ("erfcx", I, "_erfcx"),
    "erfcx_complex": ("erfcx", C, "_wofz"),
    "wofz_real": ("wofz", X, "_wofz"),
    "wofz": ("wofz", C, "_wofz"),
    "wofz_python_float": ("wofz", 1.5, "_wofz"),
}


@pytest.mark.parametrize("case", sorted(BODY_CASES))
def test_function_bodies_print_as_jax(case):
    name, arg, called = BODY_CASES[case]
    got, want = _printed(name, arg)
    body = slice(0, want.rindex("\n{ lambda"))
    assert _consts_as_inputs(got[:got.rindex("\n{ lambda")]) == _consts_as_inputs(want[body])
    assert f"custom_jvp_call[\n      name={called}\n" in got


V = np.array([-50., -9.5, -4.5, -1.7, -0.2, 0., 0.2, 1., 2.5, 3.5, 7., 9.5, 40., 70., np.inf,
              -np.inf, np.nan], np.float32)
POS = np.array([0.01, 0.3, 1., 1.5, 2.5, 6., 20., 60.], np.float32)

# (function, arguments, tolerance in units of float32 epsilon at max(|value|, 1)).
VALUE_CASES = {
    "sici": ("sici", (V,), 4),
    "sici_python_float": ("sici", (1.5,), 4),
    "sici_int": ("sici", (I,), 4),
    "fresnel": ("fresnel", (V,), 4),
    "fresnel_float16": ("fresnel", (X.astype(np.float16),), 0),
    "fresnel_int": ("fresnel", (I,), 4),
    "dawsn": ("dawsn", (V,), 4),
    "dawsn_python_float": ("dawsn", (1.5,), 4),
    "dawsn_float16": ("dawsn", (X.astype(np.float16),), 0),
    "erfcx": ("erfcx", (V,), 4),
    "erfcx_python_float": ("erfcx", (-0.5,), 4),
    "erfcx_complex": ("erfcx", (C,), 16),
    "erfcx_float16": ("erfcx", (X.astype(np.float16),), 0),
    "wofz": ("wofz", (C,), 16),
    "wofz_real": ("wofz", (V[np.isfinite(V)],), 16),
    "wofz_python_float": ("wofz", (1.5,), 16),
    "wofz_int": ("wofz", (I,), 16),
    "exp1": ("exp1", (POS,), 8),
    "expi": ("expi", (V[np.abs(V) < 60],), 8),
    "expn": ("expn", (np.int32(3), POS), 8),
    "expn_orders": ("expn", (np.arange(8, dtype=np.int32) - 1, POS), 8),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_as_jax(name):
    fn, args, tol = VALUE_CASES[name]
    assert_same_as_jax_float32(getattr(gs, fn), getattr(js, fn), args, tol)


@pytest.mark.parametrize("fn, args", [
    ("sici", (C,)), ("fresnel", (C,)), ("dawsn", (C,)), ("expi", (C,)), ("exp1", (C,)),
])
def test_errors_as_jax(fn, args):
    got = outcome(gpuarr, getattr(gs, fn), args, arrays_only=True)
    want = outcome(jax, getattr(js, fn), args, arrays_only=True)
    same_results(got, want)


@pytest.mark.parametrize("fn, part", [("sici", 0), ("sici", 1), ("fresnel", 0),
                                      ("fresnel", 1), ("dawsn", None), ("erfcx", None)])
def test_gradients_as_jax(fn, part):
    x = np.array([-3., 0.4, 1.3, 5., 9.], np.float32)

    def grads(api, mod):
        f = getattr(mod, fn)
        g = f if part is None else (lambda v: f(v)[part])
        return np.asarray(api.vmap(api.grad(g))(x))
    assert_close_float32(grads(gpuarr, gs), grads(jax, js), 16)
