"""Printed programs of jnp.isclose, allclose, cov, corrcoef, gradient, isin, the polynomial
functions, trapezoid, unwrap, the histograms and tril/triu_indices_from against JAX's: JAX
wraps most of them in jits (with static arguments) and the printed programs name those jits
and trace the same primitives. Eager results (values, dtypes, weak types) and errors are
compared with JAX's too."""
import re

import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr

jax = pytest.importorskip("jax")

X = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)
I = np.arange(6, dtype=np.int32).reshape(2, 3)
C = (np.arange(6) + 1j).astype(np.complex64).reshape(2, 3)
V = np.linspace(0.1, 0.9, 5, dtype=np.float32)
W = np.linspace(0.1, 0.9, 3, dtype=np.float32)


def _printed(fn, *args):
    """(gpuarr's printed program, JAX's) for `fn(jnp, *args)`."""
    want = jax.make_jaxpr(lambda *xs: fn(jax.numpy, *xs))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(lambda *xs: fn(gpuarr.numpy, *xs))(*args))
    return got, want


# Calls whose whole programs print as JAX's.
SAME_PROGRAM = {
    "isclose": (lambda jnp, x, y: jnp.isclose(x, y), X, Y),
    "isclose_kwargs": (lambda jnp, x, i: jnp.isclose(x, i, rtol=0.1, equal_nan=True), X, I),
    "isclose_int": (lambda jnp, i: jnp.isclose(i, i + 1), I),
    "isclose_complex": (lambda jnp, c, x: jnp.isclose(c, x), C, X),
    "allclose": (lambda jnp, x, y: jnp.allclose(x, y), X, Y),
    "allclose_scalar": (lambda jnp, x: jnp.allclose(x, 0.5, atol=1), X),
    "polyval": (lambda jnp, p, x: jnp.polyval(p, x), X, Y),
    "polyval_unroll": (lambda jnp, p, i: jnp.polyval(p, i, unroll=2), V, I),
    "polyder": (lambda jnp, p: jnp.polyder(p), X),
    "polyder_m2": (lambda jnp, p: jnp.polyder(p, m=2), V),
    "trapezoid": (lambda jnp, y: jnp.trapezoid(y), X),
    "trapezoid_x_axis0": (lambda jnp, y, x: jnp.trapezoid(y, x, axis=0), X, Y),
    "trapezoid_x_1d": (lambda jnp, y, x: jnp.trapezoid(y, x), X, W),
    "trapezoid_dx": (lambda jnp, y: jnp.trapezoid(y, dx=0.5), I),
    "cov": (lambda jnp, m: jnp.cov(m), X),
    "corrcoef_one": (lambda jnp, m: jnp.corrcoef(m), X),  # its clip is platform-dependent
    "cov_y_rowvar": (lambda jnp, m, y: jnp.cov(m, y, rowvar=False), X, Y),
    "cov_bias": (lambda jnp, m: jnp.cov(m, bias=True), I),
    "gradient": (lambda jnp, f: jnp.gradient(f), X),
    "gradient_axis_spacing": (lambda jnp, f: jnp.gradient(f, 2.0, axis=-1), I),
    "gradient_coordinates": (lambda jnp, f, h: jnp.gradient(f, h, axis=1), X, W),
    "isin": (lambda jnp, x, y: jnp.isin(x, y), X, Y),
    "isin_invert": (lambda jnp, i, v: jnp.isin(i, v, invert=True), I, V),
    "isin_empty": (lambda jnp, v: jnp.isin(v, v[:0]), V),
    "unwrap": (lambda jnp, x: jnp.unwrap(x), X),
    "unwrap_int_period": (lambda jnp, i: jnp.unwrap(i, period=4, axis=0), I),
    "histogram_bin_edges": (lambda jnp, x: jnp.histogram_bin_edges(x, 4), X),
    "histogram_bin_edges_range": (lambda jnp, i: jnp.histogram_bin_edges(i, 3, (1, 1)), I),
}


@pytest.mark.parametrize("name", sorted(SAME_PROGRAM))
def test_programs_print_as_jax(name):
    fn, *args = SAME_PROGRAM[name]
    got, want = _printed(fn, *args)
    assert got == want


def _top_level(text):
    """(result type, primitive, jit name) of each equation of the outermost program."""
    body = text[text.rindex("\n{ lambda") + 1:] if "\n{ lambda" in text else text
    out = []
    for line in body.splitlines()[1:-1]:
        eqn = re.match(r"^    \w+:(\S+) = ([\w-]+)(?:\[name=(\w+))?", line)
        if eqn:
            out.append(list(eqn.groups()))
        elif re.match(r"^      name=\w+$", line) and out and out[-1][2] is None:
            out[-1][2] = line.strip()[len("name="):]
    return out


# Calls that are one jit named as JAX's, whose bodies differ only inside functions of other
# modules (diag, .at[].add).
SAME_OUTER_JIT = {
    "corrcoef": (lambda jnp, x: jnp.corrcoef(x), X),
    "polyadd": (lambda jnp, a, b: jnp.polyadd(a, b), V, W),
    "polysub": (lambda jnp, a, b: jnp.polysub(a, b), W, V),
}


@pytest.mark.parametrize("name", sorted(SAME_OUTER_JIT))
def test_outer_jits_are_named_as_jax(name):
    fn, *args = SAME_OUTER_JIT[name]
    got, want = (_top_level(t) for t in _printed(fn, *args))
    assert got == want and len(got) == 1 and got[0][1:] == ["jit", name]


# Eager calls: values, dtypes, weak types, or the errors raised.
EAGER = [
    lambda jnp: jnp.isclose(X, 0.5, rtol=0.5),
    lambda jnp: jnp.isclose(np.float32([np.nan, 1]), np.float32([np.nan, 1]), equal_nan=True),
    lambda jnp: jnp.isclose(1, 2),
    lambda jnp: jnp.isclose(X, Y, equal_nan=[1]),
    lambda jnp: jnp.isclose([1.0], X),
    lambda jnp: jnp.allclose(I, I + 1, atol=1),
    lambda jnp: jnp.polyval(V, X),
    lambda jnp: jnp.polyval(I[0], 3),
    lambda jnp: jnp.polyder(V, m=2),
    lambda jnp: jnp.polyder(V, m=-1),
    lambda jnp: jnp.polyder(V, m=[1]),
    lambda jnp: jnp.polyadd(V, W),
    lambda jnp: jnp.polysub(W, V),
    lambda jnp: jnp.trapezoid(X, axis=0),
    lambda jnp: jnp.trapezoid(X, X, axis=0),
    lambda jnp: jnp.trapezoid(X, dx=np.ones((2, 1), np.float32)),
    lambda jnp: jnp.trapezoid(V[:0]),
    lambda jnp: jnp.trapezoid(X, axis=[0]),
    lambda jnp: jnp.cov(X),
    lambda jnp: jnp.cov(X, Y, rowvar=False),
    lambda jnp: jnp.cov(X[:1], rowvar=False),
    lambda jnp: jnp.cov(C),
    lambda jnp: jnp.cov(X, fweights=np.array([1, 2, 3]), aweights=W, ddof=2),
    lambda jnp: jnp.cov(X, fweights=W),
    lambda jnp: jnp.cov(X, aweights=X),
    lambda jnp: jnp.cov(X, dtype=np.float16),
    lambda jnp: jnp.cov(X, dtype=np.int32),
    lambda jnp: jnp.cov(X[:, :0]),
    lambda jnp: jnp.corrcoef(X, Y),
    lambda jnp: jnp.corrcoef(C),
    lambda jnp: jnp.corrcoef(V),
    lambda jnp: jnp.gradient(X, 2.0, 3.0),
    lambda jnp: jnp.gradient(X, W, axis=1),
    lambda jnp: jnp.gradient(X, V, axis=1),
    lambda jnp: jnp.gradient(X, 2.0, 3.0, 4.0),
    lambda jnp: jnp.gradient(X, edge_order=1),
    lambda jnp: jnp.gradient(X, axis=()),
    lambda jnp: jnp.gradient(V[:1]),
    lambda jnp: jnp.isin(I, X, invert=True),
    lambda jnp: jnp.isin(3, 3),
    lambda jnp: jnp.isin(X, V[:0], invert=True),
    lambda jnp: jnp.isin(X, [1]),
    lambda jnp: jnp.unwrap(I * 3, axis=0),
    lambda jnp: jnp.unwrap(I * 3, period=4),
    lambda jnp: jnp.unwrap(X, discont=0.1, period=0.5),
    lambda jnp: jnp.unwrap(C),
    lambda jnp: jnp.histogram(X, bins=4, weights=Y),
    lambda jnp: jnp.histogram(X, bins=3, range=[0, 1], density=True),
    lambda jnp: jnp.histogram(np.float32([np.nan, 1, 2, np.inf]), bins=3, range=(0, 3)),
    lambda jnp: jnp.histogram(I, bins=W),
    lambda jnp: jnp.histogram(X, bins="auto"),
    lambda jnp: jnp.histogram(X, bins=4, weights=V),
    lambda jnp: jnp.histogram_bin_edges(I, 3, range=[1, 1]),
    lambda jnp: jnp.histogram_bin_edges(X, 3, range=(1, 2, 3)),
    lambda jnp: jnp.histogramdd(X.T, bins=[W, 4]),
    lambda jnp: jnp.histogramdd(X.T, bins=3, weights=W, density=True),
    lambda jnp: jnp.histogramdd(I.T, bins=2),
    lambda jnp: jnp.histogramdd(X.T, bins=(2, 3, 4)),
    lambda jnp: jnp.histogramdd(X.T, weights=V),
    lambda jnp: jnp.tril_indices_from(X),
    lambda jnp: jnp.triu_indices_from(np.ones((3, 3)), k=1),
    lambda jnp: jnp.tril_indices_from(np.ones((3, 3)), k=-5),
    lambda jnp: jnp.tril_indices_from(V),
]


@pytest.mark.parametrize("case", range(len(EAGER)))
def test_eager_results_match_jax(case):
    def run(api):
        return outcome(api, lambda: tuple(api.tree_util.tree_leaves(EAGER[case](api.numpy))), [])

    for g, w in same_results(run(gpuarr), run(jax)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_jitted_calls_match_jax():
    fn = lambda jnp, x, y: (jnp.cov(x, y), jnp.gradient(x, axis=0), jnp.trapezoid(x, y),  # noqa: E731
                            jnp.isclose(x, y), jnp.polyval(x, y), jnp.unwrap(x))
    got = outcome(gpuarr, lambda x, y: fn(gpuarr.numpy, x, y), [X, Y], jit=True)
    want = outcome(jax, lambda x, y: fn(jax.numpy, x, y), [X, Y], jit=True)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
