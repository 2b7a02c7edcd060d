"""Printed programs of jax.scipy.special's gamma family (gamma, gammasgn, beta, betaln, poch),
Box-Cox transforms, entropies (rel_entr, kl_div) and logit against JAX's: the same jit
(gammasgn), custom_jvp wrappers (logit, poch, xlogy) and primitives in JAX's order. Eager
results (values, dtypes, weak types), gradients and errors are compared with JAX's too."""
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr
import gpuarr.scipy.special as gs

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.scipy.special")

X = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(1.5, 3.5, 6, dtype=np.float32).reshape(2, 3)
BIG = np.linspace(8.5, 30.0, 6, dtype=np.float32).reshape(2, 3)
I = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
C = (np.linspace(-2.5, 3, 6) + 1j * np.linspace(-1, 1, 6)).astype(np.complex64).reshape(2, 3)


def _printed(name, *args):
    """(gpuarr's printed program, JAX's) for special.`name`(*args)."""
    want = jax.make_jaxpr(getattr(js, name))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(getattr(gs, name))(*args))
    return got, want


ONE_ARG = ["gamma", "gammasgn", "logit"]
TWO_ARGS = ["boxcox", "boxcox1p", "kl_div", "rel_entr", "poch"]


@pytest.mark.parametrize("name", ONE_ARG)
@pytest.mark.parametrize("args", [(X,), (0.5,), (I,), (np.float16(0.3),)],
                         ids=["f32", "python_float", "int32", "f16"])
def test_one_argument_programs_print_as_jax(name, args):
    got, want = _printed(name, *args)
    assert got == want


@pytest.mark.parametrize("name", TWO_ARGS)
@pytest.mark.parametrize("args", [(X, Y), (0.5, Y), (I, Y), (X, 2.0), (I, I)],
                         ids=["f32", "python_float_first", "int32_first", "python_float_second",
                              "int32"])
def test_two_argument_programs_print_as_jax(name, args):
    got, want = _printed(name, *args)
    assert got == want


def test_complex_gamma_program_prints_as_jax():
    got, want = _printed("gamma", C)
    assert got == want


@pytest.mark.parametrize("name", ["beta", "betaln"])
@pytest.mark.parametrize("args", [(X, Y), (X, BIG), (0.5, Y), (I, I), (0.3, 2.5)],
                         ids=["f32", "large_b", "python_float", "int32", "python_floats"])
def test_beta_programs_print_as_jax_but_for_algdiv_x(name, args):
    # JAX's algdiv takes x = h / (1 + h) where CDFLIB's a <= b branch (and gpuarr) take
    # 1 / (1 + h); that one operand is the only difference.
    got, want = (text.splitlines() for text in _printed(name, *args))
    assert len(got) == len(want)
    diff = [(g, w) for g, w in zip(got, want) if g != w]
    assert len(diff) == 1, diff
    (g, w), = diff
    g, w = g.split(), w.split()  # e.g. `t:f32[2,3] = div 1.0:f32[] s` and `... = div p s`
    assert g[:3] == w[:3] and w[2] == "div" and g[4:] == w[4:]
    assert g[3] == "1.0:f32[]"


def _check(name, *args, tol=1e-5, jit=False):
    got = outcome(gpuarr, getattr(gs, name), args, jit=jit)
    want = outcome(jax, getattr(js, name), args, jit=jit)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)


VALUE_CASES = {
    "gamma": [(X,), (I,), (np.array([-3.5, -2.0, -0.0, 0.0, np.nan, np.inf, -np.inf],
                                   np.float32),), (0.5,)],
    "gammasgn": [(X - 0.5,), (np.array([-3.5, -2.0, -0.0, 0.0, np.nan, -np.inf], np.float32),),
                 (2,)],
    "logit": [(X,), (np.array([0.0, 1.0, -1.0, np.nan], np.float32),), (0.3,)],
    "beta": [(X, Y), (X, BIG), (I, I), (0.3, 2.5)],
    "betaln": [(X, Y), (X, BIG), (BIG, BIG), (I, I), (0.3, 2.5)],
    "boxcox": [(Y, X - 0.5), (Y, np.float32(0)), (np.array([-1.0, 0.0], np.float32), 0.5),
               (2.5, 0.0)],
    "boxcox1p": [(X, Y - 2), (X, 0.0), (np.array([-2.0, -1.0], np.float32), 0.5), (2, 3)],
    "rel_entr": [(X, Y), (np.array([0.0, 0.0, 1.0, -1.0], np.float32),
                          np.array([0.0, -1.0, 0.0, 1.0], np.float32)), (0.3, 2.5)],
    "kl_div": [(X, Y), (np.array([0.0, 0.0, 1.0, -1.0], np.float32),
                        np.array([0.0, -1.0, 0.0, 1.0], np.float32)), (I, 2.0)],
    "poch": [(Y, X), (Y, np.float32(0)), (I, I), (2.5, 1.5)],
}


@pytest.mark.parametrize("case", [(n, i) for n, cases in VALUE_CASES.items()
                                  for i in range(len(cases))], ids=str)
def test_eager_results_match_jax(case):
    name, i = case
    _check(name, *VALUE_CASES[name][i], tol=2e-5)


@pytest.mark.parametrize("name", ["gammasgn", "poch", "logit", "betaln"])
def test_jit_results_match_jax(name):
    _check(name, *VALUE_CASES[name][0], tol=2e-5, jit=True)


@pytest.mark.parametrize("name, args", [("gammasgn", (C,)), ("beta", (C, C)), ("poch", (C, C)),
                                        ("rel_entr", (C, C)), ("kl_div", (C, C))])
def test_complex_input_errors_match_jax(name, args):
    _check(name, *args)


@pytest.mark.parametrize("name, args", [("logit", (0.3,)), ("poch", (2.5, 1.5)),
                                        ("beta", (2.5, 1.5)), ("betaln", (2.5, 9.0)),
                                        ("boxcox", (2.5, 0.5)), ("rel_entr", (2.5, 1.5))])
def test_gradients_match_jax(name, args):
    args = tuple(map(np.float32, args))
    argnums = tuple(range(len(args)))
    got = gpuarr.grad(getattr(gs, name), argnums=argnums)(*args)
    want = jax.grad(getattr(js, name), argnums=argnums)(*args)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=2e-5)
