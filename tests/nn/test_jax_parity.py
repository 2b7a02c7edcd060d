"""gpuarr.nn, gpuarr.nn.initializers and gpuarr.scipy.* against the same modules of JAX run
side by side: values, shapes, dtypes and weak types (exact for integers, booleans and the
initializers, which draw from jax.random's streams; to a tolerance elsewhere), gradients of
the activations at kinks and extremes, exception classes and messages, and signatures."""
import warnings

import numpy as np
import pytest

import gpuarr
import gpuarr.nn.initializers  # noqa: F401  (the attribute chain below)
import gpuarr.numpy as gjnp
import gpuarr.scipy.linalg  # noqa: F401
import gpuarr.scipy.signal  # noqa: F401
import gpuarr.scipy.special  # noqa: F401
import gpuarr.scipy.stats  # noqa: F401
from tests.jax_compare import FLOAT16_CONTRACTION_TOL, check_signatures, float16_units, xla_contracts_float16

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.scipy.linalg")
pytest.importorskip("jax.scipy.signal")

LIBS = {"gpuarr": (gpuarr, gjnp), "jax": (jax, jjnp)}
X23 = [[-1.5, 0., 2.], [.5, -np.inf, 3.]]
W23 = [[True, False, True], [True, True, False]]
SPD = [[4., 1., .5], [1., 3., .2], [.5, .2, 2.]]


def _run(lib, fn):
    api, jnp = LIBS[lib]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(api, jnp)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _describe(x):
    """(dtype name, shape, weak type, NumPy values) of an array result."""
    weak = "python" if isinstance(x, (bool, int, float, complex)) else bool(x.weak_type)
    values = np.asarray(x)
    return str(values.dtype), values.shape, weak, values


def _same_values(ours, theirs, tol):
    if theirs.dtype == np.float16 and xla_contracts_float16():
        assert float16_units(ours, theirs) <= FLOAT16_CONTRACTION_TOL
        return
    if theirs.dtype.kind in "biu" or tol == 0:
        np.testing.assert_array_equal(ours.astype(np.float64) if ours.dtype.name == "bfloat16"
                                      else ours, theirs.astype(np.float64)
                                      if theirs.dtype.name == "bfloat16" else theirs)
        return
    kind = np.complex128 if theirs.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(ours.astype(kind), theirs.astype(kind), rtol=tol,
                               atol=tol * 0.1, equal_nan=True)


def same_values(fn, tol=1e-6):
    """`fn(api, jnp)` gives JAX's structure, dtypes, shapes, weak types and values."""
    got, want = _leaves(_run("gpuarr", fn)), _leaves(_run("jax", fn))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = _describe(g), _describe(w)
        assert g[:3] == w[:3], (g[:3], w[:3])
        _same_values(g[3], w[3], tol)


def same_error(fn, message="exact"):
    """`fn` raises JAX's exception class, and ("exact") its message, or ("start") the
    same first two lines, or ("class") only the class."""
    with pytest.raises(Exception) as want:
        _run("jax", fn)
    with pytest.raises(Exception) as got:
        _run("gpuarr", fn)
    # JAX's own error classes have gpuarr.errors counterparts of the same name.
    assert type(got.value).__name__ == want.type.__name__, (got.value, want.value)
    if want.type.__module__ == "builtins":
        assert type(got.value) is want.type
    g, w = str(got.value), str(want.value)
    if message == "exact":
        assert g == w
    elif message == "start":
        assert g.splitlines()[:2] == w.splitlines()[:2], (g, w)


def _a(jnp, x, dtype=np.float32):
    return jnp.asarray(np.asarray(x, dtype))


# ---------------------------------------------------------------- values, shapes and dtypes

# id -> (fn(api, jnp), rtol); rtol 0 is exact.
VALUES = {
    # Fixed: complex gamma (was NotImplementedError), strongly typed logit of weak input,
    # gamma.sf below the support whatever `a` is, real permutation from a complex lu,
    # expm of empty matrices, the centre of delta_orthogonal and empty orthogonal shapes.
    "gamma_complex": (lambda a, n: a.scipy.special.gamma(
        _a(n, [1.5, -1.5 + 1j, 0, -2, 3 + 4j, .2 - .1j, -3.5], np.complex64)), 1e-5),
    "logit_weak_in": (lambda a, n: a.scipy.special.logit(n.asarray([.2, .7]) * 1.0), 1e-6),
    "logistic_ppf_bool": (lambda a, n: a.scipy.stats.logistic.ppf(
        n.asarray(np.array([True, False]))), 0),
    "logistic_isf_bool": (lambda a, n: a.scipy.stats.logistic.isf(
        n.asarray(np.array([True, False]))), 0),
    "gamma_sf_below": (lambda a, n: a.scipy.stats.gamma.sf(
        _a(n, [-1.5, 0., 2.]), _a(n, [0., 2., .5])), 1e-6),
    "gamma_logsf_below": (lambda a, n: a.scipy.stats.gamma.logsf(
        _a(n, [-1.5, 0., 2.]), _a(n, [0., 2., .5])), 1e-6),
    "gamma_sf_bool": (lambda a, n: a.scipy.stats.gamma.sf(
        n.asarray(np.array([True, False])), n.asarray(np.array([False, True]))), 1e-6),
    "lu_complex_p": (lambda a, n: a.scipy.linalg.lu(_a(n, SPD, np.complex64)), 1e-5),
    "lu_complex_permute_l": (lambda a, n: a.scipy.linalg.lu(
        _a(n, SPD, np.complex64), permute_l=True), 1e-5),
    "expm_empty": (lambda a, n: a.scipy.linalg.expm(n.zeros((0, 0))), 0),
    "expm_empty_int_batch": (lambda a, n: a.scipy.linalg.expm(n.zeros((2, 0, 0), int)), 0),
    "expm_frechet_empty": (lambda a, n: a.scipy.linalg.expm_frechet(
        n.zeros((0, 0)), n.zeros((0, 0))), 0),
    "one_hot_axis0": (lambda a, n: a.nn.one_hot(n.asarray([0, 2, -1, 5]), 4, axis=0), 0),
    "one_hot_float_x": (lambda a, n: a.nn.one_hot(_a(n, [0., 1.]), 3), 0),
    "one_hot_np_int_classes": (lambda a, n: a.nn.one_hot(n.arange(3), np.int64(3)), 0),
    "softmax_0d_no_axis": (lambda a, n: a.nn.softmax(_a(n, 1.), axis=None), 0),
    "log_softmax_0d_empty_axes": (lambda a, n: a.nn.log_softmax(_a(n, 1.), axis=()), 0),
    "logsumexp_0d": (lambda a, n: a.scipy.special.logsumexp(_a(n, 2.)), 1e-6),
    "logsumexp_0d_empty_axes": (lambda a, n: a.scipy.special.logsumexp(_a(n, 2.), axis=()),
                                1e-6),
    # Representative cases that already agreed.
    "relu_int": (lambda a, n: a.nn.relu(n.asarray([-2, 0, 3])), 0),
    "relu_py": (lambda a, n: a.nn.relu(2.0), 0),
    "gelu_tanh_f16": (lambda a, n: a.nn.gelu(_a(n, [-3., 0., 1.5], np.float16)), 2e-3),
    "gelu_exact": (lambda a, n: a.nn.gelu(_a(n, X23), approximate=False), 1e-6),
    "gelu_int": (lambda a, n: a.nn.gelu(n.asarray([1, 3])), 1e-6),
    "celu_alpha": (lambda a, n: a.nn.celu(_a(n, X23), alpha=.5), 1e-6),
    "selu_bf16": (lambda a, n: a.nn.selu(_a(n, [-1., 2.], n.bfloat16)), 2e-2),
    "log_sigmoid": (lambda a, n: a.nn.log_sigmoid(_a(n, [-30., 0., 30.])), 1e-6),
    "sparse_plus": (lambda a, n: a.nn.sparse_plus(_a(n, [-2., -1., 0., 1., 2.])), 1e-6),
    "squareplus_b": (lambda a, n: a.nn.squareplus(_a(n, X23), b=1), 1e-6),
    "hard_silu_empty": (lambda a, n: a.nn.hard_silu(n.zeros((2, 0))), 0),
    "glu_axis0": (lambda a, n: a.nn.glu(_a(n, np.arange(8.).reshape(4, 2)), axis=0), 1e-6),
    "softmax_where": (lambda a, n: a.nn.softmax(_a(n, X23), axis=1, where=n.asarray(W23)),
                      1e-6),
    "log_softmax_axes": (lambda a, n: a.nn.log_softmax(_a(n, X23), axis=(1, 0)), 1e-6),
    "standardize_stable": (lambda a, n: a.nn.standardize(_a(n, [[1., 2., 4.]]),
                                                         algorithm="stable"), 1e-6),
    "logmeanexp_where": (lambda a, n: a.nn.logmeanexp(_a(n, X23), axis=1,
                                                      where=n.asarray(W23)), 1e-6),
    "logsumexp_b_sign": (lambda a, n: a.scipy.special.logsumexp(
        _a(n, X23), axis=1, b=_a(n, [[1., -2., .5], [0., 1., 1.]]), return_sign=True), 1e-6),
    "logsumexp_where_keepdims": (lambda a, n: a.scipy.special.logsumexp(
        _a(n, X23), axis=0, where=n.asarray(W23), keepdims=True), 1e-6),
    "one_hot_int8": (lambda a, n: a.nn.one_hot(n.asarray([[0, 2]]), 3, dtype=np.int8,
                                               axis=1), 0),
    "gammaln": (lambda a, n: a.scipy.special.gammaln(_a(n, [.5, 3., 10.])), 1e-6),
    "betainc": (lambda a, n: a.scipy.special.betainc(_a(n, .5), _a(n, 2.), _a(n, [.2, .9])),
                1e-5),
    "ndtri": (lambda a, n: a.scipy.special.ndtri(_a(n, [.1, .5, .9])), 1e-6),
    "norm_logcdf": (lambda a, n: a.scipy.stats.norm.logcdf(_a(n, [-10., 0., 3.]), 1., 2.),
                    1e-6),
    "t_logpdf": (lambda a, n: a.scipy.stats.t.logpdf(_a(n, [-1., 0., 2.]), 3.), 1e-6),
    "beta_pdf": (lambda a, n: a.scipy.stats.beta.pdf(_a(n, [.2, .5]), 2., 3.), 1e-6),
    "poisson_pmf_int": (lambda a, n: a.scipy.stats.poisson.pmf(n.asarray([0, 2, 5]), 2.), 1e-6),
    "mvn_logpdf": (lambda a, n: a.scipy.stats.multivariate_normal.logpdf(
        _a(n, [[0., 1., 2.], [1., 1., 1.]]), _a(n, [0., 1., 1.]), _a(n, SPD)), 1e-5),
    "cho_factor_solve": (lambda a, n: a.scipy.linalg.cho_solve(
        a.scipy.linalg.cho_factor(_a(n, SPD)), _a(n, [1., 2., 3.])), 1e-5),
    "signal_convolve": (lambda a, n: a.scipy.signal.convolve(_a(n, [1., 2., 3.]),
                                                             _a(n, [0., 1., .5])), 1e-6),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_values(case):
    fn, tol = VALUES[case]
    same_values(fn, tol)


# ---------------------------------------------------------------- gradients of activations

ACTIVATIONS = ["relu", "relu6", "sigmoid", "softplus", "sparse_plus", "sparse_sigmoid",
               "log_sigmoid", "soft_sign", "silu", "mish", "elu", "celu", "selu", "gelu",
               "squareplus", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu",
               "log1mexp"]
POINTS = [0.0, -0.0, 1.0, -1.0, 1e-8, 3.0, -3.0, 6.0, 30.0, -30.0, 1e4, -1e4]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_grads(name):
    def fn(api, jnp):
        f = getattr(api.nn, name)
        return api.vmap(api.grad(f))(_a(jnp, POINTS))
    # Eager ops on kernel platforms call the device's tanh (OpenCL allows 5 ulp, CUDA's tanhf
    # 2); gelu's derivative at -3 subtracts nearly equal terms, magnifying that to 3e-5.
    on_host = gpuarr.platforms.default_platform().name == "cpu"
    same_values(fn, 1e-6 if on_host or name != "gelu" else 1e-4)


def test_gelu_exact_grad():
    same_values(lambda a, n: a.vmap(a.grad(lambda x: a.nn.gelu(x, approximate=False)))(
        _a(n, POINTS)), 1e-6)


# ---------------------------------------------------------------- initializers

def _key(api, typed):
    return api.random.key(3) if typed else api.random.PRNGKey(3)


# id -> (make(initializers), shape, dtype, rtol): the samplers are bit for bit; the
# orthogonal family goes through a QR decomposition, which rounds differently.
INITS = {
    "orthogonal_empty": (lambda i: i.orthogonal(), (2, 0), np.float32, 0),
    "orthogonal_wide": (lambda i: i.orthogonal(2.0), (2, 3), np.float32, 1e-5),
    "orthogonal_col0": (lambda i: i.orthogonal(1.0, 0), (3, 4, 5), np.float32, 1e-5),
    "delta_orthogonal_4d": (lambda i: i.delta_orthogonal(), (2, 3, 4, 4), np.float32, 1e-5),
    "delta_orthogonal_3d": (lambda i: i.delta_orthogonal(), (2, 3, 3), np.float32, 1e-5),
    "delta_orthogonal_5d": (lambda i: i.delta_orthogonal(), (2, 2, 3, 3, 4), np.float32,
                            1e-5),
    "glorot_normal": (lambda i: i.glorot_normal(), (4, 3), np.float32, 0),
    "he_uniform_bf16": (lambda i: i.he_uniform(), (3, 4, 5), "bfloat16", 0),
    "lecun_normal_f16": (lambda i: i.lecun_normal(), (2, 3), np.float16, 0),
    "variance_scaling_batch": (
        lambda i: i.variance_scaling(1.0, "fan_in", "normal", -2, -1, (0,)), (2, 3, 4),
        np.float32, 0),
    "truncated_normal_bounds": (lambda i: i.truncated_normal(1.0, lower=-1., upper=.5),
                                (3,), np.float32, 0),
    "normal_default_dtype": (lambda i: i.normal(.5), (2, 3), None, 0),
    "constant_int": (lambda i: i.constant(2), (2, 3), np.int32, 0),
}


@pytest.mark.parametrize("typed", [True, False])
@pytest.mark.parametrize("case", sorted(INITS))
def test_initializers(case, typed):
    make, shape, dtype, tol = INITS[case]

    def fn(api, jnp):
        init = make(api.nn.initializers)
        args = (_key(api, typed), shape) + (() if dtype is None else (jnp.dtype(dtype),))
        return init(*args)
    same_values(fn, tol)


# ---------------------------------------------------------------- errors

# id -> (fn(api, jnp), message check): see same_error.
ERRORS = {
    "uniform_init_complex": (lambda a, n: a.nn.initializers.uniform()(
        a.random.key(0), (2,), np.complex64), "exact"),
    "glu_0d": (lambda a, n: a.nn.glu(_a(n, 1.)), "exact"),
    "glu_axis_out_of_range": (lambda a, n: a.nn.glu(n.ones((3, 4)), axis=2), "exact"),
    "glu_odd": (lambda a, n: a.nn.glu(n.ones((3, 3))), "exact"),
    "softmax_0d": (lambda a, n: a.nn.softmax(_a(n, 1.)), "exact"),
    "log_softmax_0d": (lambda a, n: a.nn.log_softmax(_a(n, 1.)), "exact"),
    "softmax_duplicate_axis": (lambda a, n: a.nn.softmax(n.ones((3,)), axis=(0, 0)), "exact"),
    "log_softmax_axis_range": (lambda a, n: a.nn.log_softmax(n.ones((3,)), axis=-2),
                               "exact"),
    "logsumexp_0d_axis": (lambda a, n: a.scipy.special.logsumexp(_a(n, 1.), axis=-1),
                          "exact"),
    "logsumexp_0d_axis_tuple": (lambda a, n: a.scipy.special.logsumexp(_a(n, 1.), axis=(0,)),
                                "exact"),
    "logsumexp_duplicate_axis": (lambda a, n: a.scipy.special.logsumexp(
        n.ones((2,)), axis=(0, 0)), "exact"),
    "one_hot_float_classes": (lambda a, n: a.nn.one_hot(n.arange(2), 3.0), "exact"),
    "one_hot_axis_range": (lambda a, n: a.nn.one_hot(n.arange(2), 3, axis=5), "exact"),
    "one_hot_negative_axis_range": (lambda a, n: a.nn.one_hot(n.arange(2), 3, axis=-3),
                                    "exact"),
    "one_hot_bool_x": (lambda a, n: a.nn.one_hot(True, 1), "exact"),
    "one_hot_negative_classes": (lambda a, n: a.nn.one_hot(n.arange(2), -1), "exact"),
    "one_hot_traced_classes": (lambda a, n: a.jit(lambda k: a.nn.one_hot(n.arange(3), k))(3),
                               "start"),
    "polar_int_qdwh": (lambda a, n: a.scipy.linalg.polar(n.eye(3, dtype=np.int32)), "exact"),
    "polar_bool_qdwh": (lambda a, n: a.scipy.linalg.polar(n.eye(3, dtype=bool)), "exact"),
    "polar_int_svd": (lambda a, n: a.scipy.linalg.polar(n.eye(3, dtype=np.int32),
                                                        method="svd"), "exact"),
    "expm_empty_f16": (lambda a, n: a.scipy.linalg.expm(n.zeros((0, 0), np.float16)), "exact"),
    "standardize_bad_algorithm": (lambda a, n: a.nn.standardize(
        n.ones((3,)), algorithm="bogus"), "exact"),
    "betainc_complex": (lambda a, n: a.scipy.special.betainc(1j, 1., .5), "exact"),
    "sigmoid_int": (lambda a, n: a.nn.sigmoid(n.arange(3)), "class"),
    "ndtri_f16": (lambda a, n: a.scipy.special.ndtri(_a(n, [.1, .5], np.float16)), "class"),
}
# Lists are not arrays: the same TypeError as JAX from each activation (the message wording
# is the project's own, SPEC S8).
for _name in ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_tanh",
              "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax",
              "logmeanexp", "mish", "selu", "sigmoid", "silu", "soft_sign", "softmax",
              "sparse_plus", "sparse_sigmoid", "squareplus", "standardize", "relu"]:
    ERRORS[f"list_{_name}"] = (lambda a, n, _f=_name: getattr(a.nn, _f)([.5, .25]), "class")


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(case):
    fn, message = ERRORS[case]
    same_error(fn, message)


def test_one_hot_float_input_warns():
    for api, jnp in LIBS.values():
        with pytest.warns(DeprecationWarning, match="one_hot input should be integer-typed"):
            api.nn.one_hot(jnp.asarray([0., 1.]), 3)


# ---------------------------------------------------------------- signatures

def _public(module):
    return [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))
            and not isinstance(getattr(module, n), type)]


@pytest.mark.parametrize("module", ["nn", "nn.initializers", "scipy.special", "scipy.linalg",
                                    "scipy.signal", "scipy.stats.norm", "scipy.stats.gamma",
                                    "scipy.stats.t", "scipy.stats.beta",
                                    "scipy.stats.poisson", "scipy.stats.multivariate_normal"])
def test_signatures(module):
    import importlib
    ours, theirs = (importlib.import_module(f"{lib}.{module}") for lib in ("gpuarr", "jax"))
    names = [n for n in _public(theirs) if hasattr(ours, n)]
    names = [n for n in names if _has_signature(getattr(theirs, n))]
    check_signatures(ours, theirs, names)


def _has_signature(fn):
    import inspect
    try:
        inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return True
