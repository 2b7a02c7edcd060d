"""gpuarr.experimental.jet: every rule against jax.experimental.jet.jet for orders 1 to 4
(float32 and float64), known Taylor coefficients, the first coefficient against jvp and the
second against nested jvp, jit both ways, remat, custom_jvp/custom_vjp, vmap, grad, nesting,
outputs that do not depend on the inputs, and the errors."""
import math

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.experimental.jet import jet, jet2

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jlax = pytest.importorskip("jax.lax")
jax_jet = pytest.importorskip("jax.experimental.jet").jet

ORDERS = (1, 2, 3, 4)
LN2 = math.log(2.)

# Each case: (name, ours, theirs, domains). `ours(m, l)` builds the function from a
# jax.numpy-like module `m` and a lax-like module `l`; `theirs` (None: the same builder)
# builds JAX's reference where JAX's jet has no rule for a primitive (tan, asin, ...) from
# an equal composition. Domains give each argument's values (all of shape (2, 3) unless
# named otherwise): "any" in (-1.5, 1.5), "pos" in (0.5, 2), "unit" in (-0.8, 0.8), "gt1"
# in (1.2, 3), "same" a copy of the first argument (ties), "w34" a (3, 4) matrix, "row3"
# a (3,) vector, "upd" a (2, 2) block.
CASES = [
    ("sin", lambda m, l: m.sin, None, ["any"]),
    ("cos", lambda m, l: m.cos, None, ["any"]),
    ("tan", lambda m, l: m.tan, lambda m, l: lambda x: m.sin(x) / m.cos(x), ["unit"]),
    ("exp", lambda m, l: m.exp, None, ["any"]),
    ("exp2", lambda m, l: m.exp2, lambda m, l: lambda x: m.exp(x * LN2), ["any"]),
    ("expm1", lambda m, l: m.expm1, None, ["any"]),
    ("log", lambda m, l: m.log, None, ["pos"]),
    ("log1p", lambda m, l: m.log1p, None, ["pos"]),
    ("sqrt", lambda m, l: m.sqrt, None, ["pos"]),
    ("rsqrt", lambda m, l: l.rsqrt, None, ["pos"]),
    ("cbrt", lambda m, l: m.cbrt, lambda m, l: lambda x: x ** (1. / 3.), ["pos"]),
    ("sinh", lambda m, l: m.sinh, None, ["any"]),
    ("cosh", lambda m, l: m.cosh, None, ["any"]),
    ("tanh", lambda m, l: m.tanh, None, ["any"]),
    ("logistic", lambda m, l: l.logistic, None, ["any"]),
    ("asinh", lambda m, l: m.arcsinh, None, ["any"]),
    ("acosh", lambda m, l: m.arccosh, None, ["gt1"]),
    ("atanh", lambda m, l: m.arctanh, None, ["unit"]),
    ("asin", lambda m, l: m.arcsin,
     lambda m, l: lambda x: m.arctan2(x, m.sqrt(1. - x * x)), ["unit"]),
    ("acos", lambda m, l: m.arccos,
     lambda m, l: lambda x: m.pi / 2 - m.arctan2(x, m.sqrt(1. - x * x)), ["unit"]),
    ("atan", lambda m, l: m.arctan, lambda m, l: lambda x: m.arctan2(x, m.ones_like(x)),
     ["any"]),
    ("erf", lambda m, l: l.erf, None, ["any"]),
    ("erfc", lambda m, l: l.erfc, None, ["any"]),
    ("erf_inv", lambda m, l: l.erf_inv, None, ["unit"]),
    ("abs", lambda m, l: m.abs, None, ["any"]),
    ("integer_pow3", lambda m, l: lambda x: x ** 3, None, ["any"]),
    ("integer_pow_neg2", lambda m, l: lambda x: l.integer_pow(x, -2), None, ["pos"]),
    ("integer_pow0", lambda m, l: lambda x: l.integer_pow(x, 0) + x, None, ["any"]),
    ("pow_const", lambda m, l: lambda x: x ** 2.5, None, ["pos"]),
    ("pow", lambda m, l: m.power, None, ["pos", "any"]),
    ("add_sub_neg", lambda m, l: lambda x, y: -(x + y) - 0.5 * y, None, ["any", "any"]),
    ("mul", lambda m, l: m.multiply, None, ["any", "any"]),
    ("div", lambda m, l: m.divide, None, ["any", "pos"]),
    ("max", lambda m, l: m.maximum, None, ["any", "any"]),
    ("max_ties", lambda m, l: m.maximum, None, ["any", "same"]),
    ("min_ties", lambda m, l: m.minimum, None, ["any", "same"]),
    ("max_scalar", lambda m, l: lambda x: m.maximum(x, 0.3), None, ["any"]),
    ("atan2", lambda m, l: m.arctan2, None, ["any", "pos"]),
    ("rem", lambda m, l: l.rem, None, ["gt1", "pos"]),
    # (JAX's jet fails on scalar bounds: its min rule does not broadcast.)
    ("clamp", lambda m, l: lambda x: l.clamp(m.full_like(x, -0.5), x, m.full_like(x, 0.5)),
     None, ["any"]),
    ("select_n", lambda m, l: lambda x, y: l.select_n(x > y, m.sin(x), m.cos(y)), None,
     ["any", "any"]),
    ("compare_mul", lambda m, l: lambda x: x * (x > 0.2) + m.floor(x) + m.round(x) * x
     + m.sign(x) * x, None, ["any"]),
    ("broadcast", lambda m, l: lambda x: m.broadcast_to(m.exp(x), (4, 2, 3)), None, ["any"]),
    ("transpose", lambda m, l: lambda x: m.sin(x).T, None, ["any"]),
    ("slice", lambda m, l: lambda x: m.exp(x)[:, 1:] * x[:, ::2][:, :2], None, ["any"]),
    ("concatenate", lambda m, l: lambda x, y: m.concatenate([m.sin(x), y * x], axis=0), None,
     ["any", "any"]),
    ("stack", lambda m, l: lambda x, y: m.stack([m.sin(x), y * x], axis=1), None, ["any", "any"]),
    ("split", lambda m, l: lambda x: m.split(m.exp(x), [1], axis=1)[1] * x[:, :2], None, ["any"]),
    ("unstack", lambda m, l: lambda x: m.unstack(m.sin(x), axis=1)[2] * x[:, 0], None, ["any"]),
    ("copy", lambda m, l: lambda x: m.array(m.sin(x)) * x, None, ["any"]),
    ("lax_pad", lambda m, l: lambda x, y: l.pad(x, y[0, 0], ((1, 1, 1), (0, -1, 0))), None,
     ["any", "any"]),
    ("reduce_sum", lambda m, l: lambda x: m.sum(m.sin(x) * x, axis=1), None, ["any"]),
    ("matmul", lambda m, l: lambda x, w: m.sin(x) @ w, None, ["any", "w34"]),
    ("convert", lambda m, l: lambda x: (m.sin(x).astype(m.float16) * 2).astype(x.dtype), None,
     ["any"]),
    ("expand_squeeze", lambda m, l: lambda x: m.squeeze(m.expand_dims(m.sin(x), 0)) * x, None,
     ["any"]),
    ("rev", lambda m, l: lambda x: m.flip(m.exp(x), 1) * x, None, ["any"]),
    ("gather", lambda m, l: lambda x: m.sin(x)[m.array([1, 0, 1])], None, ["any"]),
    ("dynamic_slice", lambda m, l: lambda x: l.dynamic_slice(m.sin(x), (0, 1), (2, 2)), None,
     ["any"]),
    ("dynamic_update_slice",
     lambda m, l: lambda x, u: l.dynamic_update_slice(m.exp(x), m.sin(u), (0, 1)), None,
     ["any", "upd"]),
    ("scatter_add", lambda m, l: lambda x, r: m.exp(x).at[1].add(r * r), None,
     ["any", "row3"]),
    ("scatter_set", lambda m, l: lambda x, r: m.exp(x).at[1].set(m.sin(r)),
     lambda m, l: lambda x, r: m.concatenate([m.exp(x)[:1], m.sin(r)[None]]), ["any", "row3"]),
    ("cumsum", lambda m, l: lambda x: m.cumsum(m.sin(x), axis=1), None, ["any"]),
    ("cumprod", lambda m, l: lambda x: l.cumprod(x, axis=1), None, ["any"]),
    ("cummax", lambda m, l: lambda x: l.cummax(x, axis=1, reverse=True), None, ["any"]),
    ("cummin", lambda m, l: lambda x: l.cummin(x, axis=0), None, ["any"]),
    ("reduce_max", lambda m, l: lambda x: m.max(m.sin(x), axis=1), None, ["any"]),
    ("reduce_max_ties", lambda m, l: lambda x, y: m.max(m.stack([x, y])), None,
     ["any", "same"]),
    ("fft", lambda m, l: lambda x: m.real(m.fft.fft(m.sin(x))) + m.imag(m.fft.fft(x * x)), None,
     ["any"]),
    # (JAX's jet raises UnexpectedTracerError on custom_jvp functions such as logaddexp:
    # its reference is the same function written without one.)
    ("softplus", lambda m, l: lambda x: m.logaddexp(x, 0.),
     lambda m, l: lambda x: m.log1p(m.exp(-m.abs(x))) + m.maximum(x, 0.), ["any"]),
    ("composition", lambda m, l: lambda x, y: m.exp(m.sin(x) * y) / (1. + y * y), None,
     ["any", "any"]),
]
CASE_IDS = [c[0] for c in CASES]
_RANGES = {"any": (-1.5, 1.5), "pos": (0.5, 2.), "unit": (-0.8, 0.8), "gt1": (1.2, 3.)}
_SHAPES = {"w34": (3, 4), "row3": (3,), "upd": (2, 2)}


def _inputs(name, dtype, order=4):
    """Seeded primals and `order` series terms per argument of case `name`."""
    rng = np.random.default_rng(CASE_IDS.index(name))
    domains = CASES[CASE_IDS.index(name)][3]
    primals, series = [], []
    for d in domains:
        if d == "same":
            primals.append(primals[0].copy())
            shape = primals[0].shape
        else:
            shape = _SHAPES.get(d, (2, 3))
            lo, hi = _RANGES.get(d, (-1.5, 1.5))
            primals.append(rng.uniform(lo, hi, shape).astype(dtype))
        series.append([(0.5 * rng.standard_normal(shape)).astype(dtype) for _ in range(order)])
    return primals, series


def _build(case, module, lax_module, theirs):
    _, ours_b, theirs_b, _ = case
    return ((theirs_b or ours_b) if theirs else ours_b)(module, lax_module)


# The recurrences float64 checks to 1e-10 (every case runs in float32; compiling JAX's
# reference for every case twice would make this file slow).
F64_CASES = ["sin", "tan", "exp", "log", "sqrt", "cbrt", "tanh", "acos", "erf_inv",
             "integer_pow_neg2", "pow", "div", "atan2", "matmul", "cumprod", "composition"]


def _jax_refs(names, dtype):
    """JAX's order-4 jet of the named cases, all in one compiled program (compiling JAX's
    primitives one by one for each shape would be much slower). The coefficients up to order
    k of an order-4 jet are those of the order-k jet: they depend on no higher input term."""
    cases = [CASES[CASE_IDS.index(n)] for n in names]

    def run(all_inputs):
        return [jax_jet(_build(c, jjnp, jlax, theirs=True), *args)
                for c, args in zip(cases, all_inputs)]
    return dict(zip(names, jax.jit(run)([_inputs(n, dtype) for n in names])))


@pytest.fixture(scope="module")
def refs32():
    return _jax_refs(CASE_IDS, np.float32)


@pytest.fixture(scope="module")
def refs64():
    with jax.enable_x64(True):
        return _jax_refs(F64_CASES, np.float64)


def _check(got, want, dtype, rtol):
    got_p, got_s = got
    want_p, want_s = want
    assert len(got_s) <= len(want_s)
    for g, w in zip([got_p] + list(got_s), [want_p] + list(want_s)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype == dtype, (g.dtype, w.dtype)
        scale = max(1., float(np.max(np.abs(w)))) if w.size else 1.
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def _check_orders(name, want, dtype, rtol):
    f = _build(CASES[CASE_IDS.index(name)], jnp, lax, theirs=False)
    primals, series = _inputs(name, dtype)
    for k in ORDERS:
        got = jet(f, primals, [s[:k] for s in series])
        assert len(got[1]) == k
        _check(got, want, dtype, rtol)


@pytest.mark.parametrize("name", CASE_IDS)
def test_rules_vs_jax_float32(name, refs32):
    _check_orders(name, refs32[name], np.float32, 1e-5)


@pytest.mark.parametrize("name", F64_CASES)
def test_rules_vs_jax_float64(name, refs64):
    with gpuarr.enable_x64():
        _check_orders(name, refs64[name], np.float64, 1e-10)


def test_unscaled_series(refs32):
    # jet2 works on Taylor coefficients: JAX's derivatives divided by the factorials.
    name = "composition"
    f = _build(CASES[CASE_IDS.index(name)], jnp, lax, theirs=False)
    primals, series = _inputs(name, np.float32)
    coeffs = [[t / math.factorial(k + 1) for k, t in enumerate(s)] for s in series]
    want_p, want_s = refs32[name]
    want = (want_p, [np.asarray(t) / math.factorial(k + 1) for k, t in enumerate(want_s)])
    _check(jet2(f, primals, coeffs), want, np.float32, 1e-5)


# ---------------------------------------------------------------- known answers


def test_known_answers_exp_sin():
    x = 0.7
    # Along the line x + t the derivatives are those of the function itself.
    p, s = jet(jnp.exp, (x,), ((1., 0., 0., 0.),))
    np.testing.assert_allclose([p] + s, [math.exp(x)] * 5, rtol=1e-6)
    p, s = jet(jnp.sin, (x,), ((1., 0., 0., 0.),))
    want = [math.sin(x), math.cos(x), -math.sin(x), -math.cos(x), math.sin(x)]
    np.testing.assert_allclose([p] + s, want, rtol=1e-6)
    # sin(z^3) at z = 0.5 (the example of JAX's docstring), by Faa di Bruno.
    h0, h1, h2 = 0.5 ** 3, 3 * 0.5 ** 2, 6 * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    np.testing.assert_allclose([f0, f1, f2], [math.sin(h0), math.cos(h0) * h1,
                                              -math.sin(h0) * h1 ** 2 + math.cos(h0) * h2],
                               rtol=1e-6)


def test_known_answers_polynomial_and_composition():
    with gpuarr.enable_x64():
        x = np.float64(1.3)
        # x^4 along x + t: 4x^3, 12x^2, 24x, 24, then zeros.
        p, s = jet(lambda x: x ** 4, (x,), ((1., 0., 0., 0., 0.),))
        np.testing.assert_allclose(s, [4 * x ** 3, 12 * x ** 2, 24 * x, 24., 0.], rtol=1e-12,
                                   atol=1e-12)
        # exp(sin(t)) at t = 0: 1, 1, 1, 0, -3 (its Maclaurin series is 1 + t + t^2/2 - t^4/8).
        p, s = jet(lambda t: jnp.exp(jnp.sin(t)), (0.,), ((1., 0., 0., 0.),))
        np.testing.assert_allclose([p] + s, [1., 1., 1., 0., -3.], atol=1e-12)
        # log(1 + t) along a curve with a second derivative: (1, 2) gives 1, 2 - 1 = 1.
        p, s = jet(jnp.log1p, (0.,), ((1., 2.),))
        np.testing.assert_allclose(s, [1., 1.], atol=1e-12)


@pytest.mark.parametrize("fname", ["sin", "exp", "tanh", "arctan", "sqrt", "log"])
def test_first_term_is_jvp(fname):
    rng = np.random.default_rng(1)
    f = getattr(jnp, fname)
    x = rng.uniform(0.3, 2., (5,)).astype(np.float32)
    v = rng.standard_normal(5).astype(np.float32)
    _, (t1,) = jet(f, (x,), ((v,),))
    _, tangent = gpuarr.jvp(f, (x,), (v,))
    np.testing.assert_allclose(t1, tangent, rtol=1e-6, atol=1e-7)


def test_second_term_is_nested_jvp():
    rng = np.random.default_rng(2)
    with gpuarr.enable_x64():
        x = rng.uniform(-1., 1., (3,))
        v = rng.standard_normal(3)

        def f(x):
            return jnp.sin(x) * jnp.exp(jnp.sum(x * x))

        def dir_deriv(x):
            return gpuarr.jvp(f, (x,), (v,))[1]

        _, (t1, t2) = jet(f, (x,), ((v, np.zeros(3)),))
        np.testing.assert_allclose(t2, gpuarr.jvp(dir_deriv, (x,), (v,))[1], rtol=1e-12)


# ---------------------------------------------------------------- composition
# These reuse JAX's reference of the "composition" case: one function of two arguments.


def _f(x, y):
    return jnp.exp(jnp.sin(x) * y) / (1. + y * y)


@pytest.fixture
def composition(refs32):
    primals, series = _inputs("composition", np.float32)
    return primals, series, refs32["composition"]


def test_jet_of_jit(composition):
    primals, series, want = composition
    jf = gpuarr.jit(_f)
    _check(jet(jf, primals, series), want, np.float32, 1e-5)
    _check(jet(jf, primals, series), want, np.float32, 1e-5)  # the cached jet Program
    # The jitted call stays a call: of the jet Program of `_f`.
    jaxpr = gpuarr.make_jaxpr(lambda p, s: jet(jf, p, s))(primals, series)
    assert "jit" in [e.prim.name for e in jaxpr.eqns]
    assert "jet(_f)" in str(jaxpr)
    # Only the second argument has a series: the first enters the call as a plain value.
    x, y = primals
    got = jet(lambda y: jf(x, y), (y,), (series[1],))
    zeros = [np.zeros_like(x)] * 4
    _check(got, jet(_f, primals, (zeros, series[1])), np.float32, 1e-6)


def test_jit_of_jet(composition):
    primals, series, want = composition
    got = gpuarr.jit(lambda p, s: jet(_f, p, s))(primals, series)
    _check(got, want, np.float32, 1e-5)


def test_jet_of_jitted_constant_output():
    # An output of the called Program that ignores the inputs has a zero series.
    jf = gpuarr.jit(lambda x: (jnp.sin(x), jnp.ones(3)))
    x = np.linspace(0., 1., 3, dtype=np.float32)
    (p1, p2), (s1, s2) = jet(jf, (x,), ((np.ones(3, np.float32), np.zeros(3, np.float32)),))
    np.testing.assert_allclose(s1[0], np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(s1[1], -np.sin(x), rtol=1e-6, atol=1e-7)
    for t in s2:
        assert np.asarray(t).dtype == np.float32
        np.testing.assert_array_equal(t, np.zeros(3))


def test_remat(composition):
    primals, series, want = composition
    _check(jet(gpuarr.checkpoint(_f), primals, series), want, np.float32, 1e-5)


def test_custom_jvp_and_vjp_rules_are_not_used(composition):
    # As JAX means to (its jet raises UnexpectedTracerError on these), jet differentiates the
    # primal function; the rules below are deliberately wrong.
    primals, series, want = composition
    f = gpuarr.custom_jvp(_f)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(*primals), 100. * tangents[0]

    g = gpuarr.custom_vjp(_f)
    g.defvjp(lambda x, y: (g(x, y), x), lambda x, ct: (100. * ct, ct))
    _check(jet(f, primals, series), want, np.float32, 1e-5)
    _check(jet(g, primals, series), want, np.float32, 1e-5)
    _check(jet(gpuarr.jit(g), primals, series), want, np.float32, 1e-5)
    # Library functions defined with custom_jvp go through too.
    x, = primals[:1]
    relu = jet(gpuarr.nn.relu, (x,), (series[0],))
    _check(relu, jet(lambda x: jnp.maximum(x, 0.), (x,), (series[0],)), np.float32, 1e-7)


def test_vmap_of_jet():
    rng = np.random.default_rng(7)
    xs = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    ts = rng.standard_normal((5, 3)).astype(np.float32)

    def one(x, t):
        return jet(lambda x: jnp.sum(jnp.sin(x) ** 2), (x,), ((t, t, t),))

    p, s = gpuarr.vmap(one)(xs, ts)
    for i in range(5):
        pi, si = one(xs[i], ts[i])
        np.testing.assert_allclose(p[i], pi, rtol=1e-6)
        for a, b in zip(s, si):
            np.testing.assert_allclose(a[i], b, rtol=1e-5, atol=1e-6)


def test_jet_of_vmap_and_grad(refs32):
    # vmap over the rows of the "reduce_sum" case.
    primals, series = _inputs("reduce_sum", np.float32)
    rows = gpuarr.vmap(lambda r: jnp.sum(jnp.sin(r) * r))
    _check(jet(rows, primals, series), refs32["reduce_sum"], np.float32, 1e-5)
    # grad of a jet coefficient: d/dx of the second derivative of sin is -cos.
    y = np.float32(0.4)
    dd = gpuarr.grad(lambda y: jet(jnp.sin, (y,), ((1., 0.),))[1][1])(y)
    np.testing.assert_allclose(dd, -np.cos(y), rtol=1e-6)
    dd = gpuarr.grad(lambda y: jet(gpuarr.jit(jnp.sin), (y,), ((1., 0.),))[1][1])(y)
    np.testing.assert_allclose(dd, -np.cos(y), rtol=1e-6)


def test_jet_of_jet():
    # Nested jets: the outer one differentiates the inner one's coefficients.
    def inner(x):
        return jet(jnp.exp, (x,), ((1., 0.),))[1][1]  # exp(x)
    p, s = jet(inner, (0.5,), ((1., 0., 0.),))
    np.testing.assert_allclose([p] + s, [math.exp(0.5)] * 4, rtol=1e-6)


# ---------------------------------------------------------------- structure and errors


def test_pytree_outputs_and_zero_series():
    x, y = np.float32(0.3), np.float32(1.5)

    def f(x, y):
        return {"a": x * y, "b": (jnp.ones(2), (x > y).astype(jnp.int32))}

    got_p, got_s = jet(f, (x, y), ((1., 2.), (0.5, 0.)))
    assert gpuarr.tree_util.tree_structure(got_p) == gpuarr.tree_util.tree_structure(
        {"a": 0, "b": (0, 0)})
    # (x y)' = x' y + x y', (x y)'' = x'' y + 2 x' y' + x y''.
    np.testing.assert_allclose(got_s["a"], [1.65, 4.], rtol=1e-6)
    # Outputs that do not depend on the inputs get zero series; as in JAX, those of integer
    # outputs are float32 (zeros scaled by the factorials).
    ones_s, int_s = got_s["b"]
    assert [np.asarray(t).dtype for t in ones_s + int_s] == [np.float32] * 4
    np.testing.assert_array_equal(ones_s, np.zeros((2, 2)))
    np.testing.assert_array_equal(int_s, [0, 0])


def test_rule_table():
    from gpuarr.experimental.jet import jet_rules
    names = {p.name for p in jet_rules}
    wanted = """neg add sub mul div integer_pow pow sqrt rsqrt cbrt exp exp2 log log1p expm1 sin cos
        tan tanh logistic sinh cosh asin acos atan asinh acosh atanh atan2 abs sign max min
        select_n clamp rem erf erfc erf_inv reshape broadcast_in_dim transpose slice
        concatenate stack split unstack copy pad
        reduce_sum dot_general convert_element_type rev gather dynamic_slice
        dynamic_update_slice scatter_add scatter cumsum cumprod cummax cummin reduce_max
        reduce_min eq ne lt le gt ge and or not floor ceil round is_finite stop_gradient jit
        remat2 custom_jvp_call custom_vjp_call""".split()
    assert not set(wanted) - names


def test_errors():
    with pytest.raises(ValueError, match="jet terms have inconsistent lengths"):
        jet(jnp.add, (1., 2.), ((1.,), (1., 2.)))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        jet(jnp.sin, ((1., 2.),), ((1.,),))
    with pytest.raises(ValueError, match="term 1 for argument 0 is not an array"):
        jet(jnp.sin, (1.,), ((1., [2.]),))
    with pytest.raises(NotImplementedError, match="Jet rule for 'sort' not implemented"):
        jet(jnp.sort, (np.ones(3, np.float32),), ((np.ones(3, np.float32),),))
    with pytest.raises(NotImplementedError, match="'cond'"):
        jet(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), (np.float32(1.),),
            ((np.float32(1.),),))
