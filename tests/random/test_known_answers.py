"""gpuarr.random against JAX's known answers: keys, every sampler's values, shapes and dtypes, and
the errors JAX raises for bad arguments. Every literal below is JAX 0.10.2's output (CPU,
jax_threefry_partitionable=True), so this file needs no JAX to run."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import random
from gpuarr.dtypes import TypePromotionError

KEY = random.key(0)
K0 = random.key(42)
K1 = random.fold_in(random.split(random.key(7))[1], 5)
COV = np.array([[2., .5, 0.], [.5, 1., .2], [0., .2, 1.]], np.float32)
LOGITS = np.log(np.array([[.1, .2, .7], [.5, .25, .25]], np.float32))
P5 = np.array([.1, .2, .3, .2, .2], np.float32)
RADEMACHER_X64 = [1, 1, -1, -1, -1, 1, -1, -1]


def _assert_close(ours, expected, dtype, ulps=0):
    ours = np.asarray(ours)
    expected = np.asarray(expected)
    assert ours.dtype == np.dtype(dtype) and ours.shape == expected.shape, (ours.dtype, ours.shape)
    if ulps == 0:
        np.testing.assert_array_equal(ours.astype(np.float64) if ours.dtype.kind == "f" or
                                      ours.dtype.name == "bfloat16" else ours, expected)
        return
    spacing = np.spacing(np.maximum(np.abs(expected), 1).astype(ours.dtype)).astype(np.float64)
    err = np.abs(ours.astype(np.float64) - expected) / spacing
    assert np.nanmax(err, initial=0.0) <= ulps, err


# ---------------------------------------------------------------- known answers, every sampler

# name -> (sampler, dtype, ulps): 0 is bit for bit (built on bits, or on JAX's erf_inv); 2 for
# samplers that go through XLA's own log, exp, pow or tan.
SAMPLERS = {
    "bits8": (lambda k: random.bits(k, (6,), jnp.uint8), "uint8", 0),
    "bits16": (lambda k: random.bits(k, (2, 3), jnp.uint16), "uint16", 0),
    "bits32": (lambda k: random.bits(k, (4,)), "uint32", 0),
    "uniform": (lambda k: random.uniform(k, (4,), minval=-2., maxval=3.), "float32", 0),
    "uniform_f16": (lambda k: random.uniform(k, (4,), jnp.float16), "float16", 0),
    "uniform_bf16": (lambda k: random.uniform(k, (4,), jnp.bfloat16), "bfloat16", 0),
    "randint": (lambda k: random.randint(k, (2, 3), -5, 1000), "int32", 0),
    "randint_int8_wide": (lambda k: random.randint(k, (6,), -1000, 1000, jnp.int8), "int8", 0),
    "randint_uint8_full": (lambda k: random.randint(k, (6,), 0, 256, jnp.uint8), "uint8", 0),
    "bernoulli": (lambda k: random.bernoulli(k, np.float32([.1, .5, .9, .3])), "bool", 0),
    "categorical": (lambda k: random.categorical(k, LOGITS, axis=0, shape=(3, 3)), "int32", 0),
    "choice": (lambda k: random.choice(k, 10, (4,)), "int32", 0),
    "choice_no_replace": (lambda k: random.choice(k, np.arange(12).reshape(3, 4), (3,),
                                                  replace=False, axis=1), "int32", 0),
    "choice_p": (lambda k: random.choice(k, 5, (5,), p=P5), "int32", 0),
    "permutation": (lambda k: random.permutation(k, 8), "int32", 0),
    "permutation_independent": (lambda k: random.permutation(
        k, np.arange(8).reshape(2, 4), axis=1, independent=True), "int32", 0),
    "rademacher": (lambda k: random.rademacher(k, (6,)), "int32", 0),
    "gumbel": (lambda k: random.gumbel(k, (4,)), "float32", 2),
    "normal": (lambda k: random.normal(k, (4,)), "float32", 0),
    "truncated_normal": (lambda k: random.truncated_normal(k, -1., np.float32([0., 2., np.inf])),
                         "float32", 0),
    "exponential": (lambda k: random.exponential(k, (4,)), "float32", 2),
    "laplace": (lambda k: random.laplace(k, (4,)), "float32", 2),
    "logistic": (lambda k: random.logistic(k, (4,)), "float32", 2),
    "cauchy": (lambda k: random.cauchy(k, (4,)), "float32", 2),
    "multivariate_normal": (lambda k: random.multivariate_normal(
        k, np.float32([1., 0., -1.]), COV, (2,)), "float32", 2),
    "gamma": (lambda k: random.gamma(k, np.float32([0.3, 1., 4.])), "float32", 2),
    "beta": (lambda k: random.beta(k, 2., np.float32([0.5, 3.])), "float32", 2),
    "dirichlet": (lambda k: random.dirichlet(k, np.float32([0.5, 1., 2.])), "float32", 2),
    "poisson": (lambda k: random.poisson(k, np.float32([0.5, 4., 30.])), "int32", 0),
    "t": (lambda k: random.t(k, np.float32([1., 5.])), "float32", 2),
}

# JAX's values for (K0, K1).
EXPECTED = {
    "bits8": ([162, 217, 249, 215, 21, 216],
        [31, 150, 103, 73, 91, 72]),
    "bits16": ([[5026, 12505, 63993], [49623, 29461, 20184]],
        [[42271, 9622, 14183], [26185, 34907, 19528]]),
    "bits32": ([2098992034, 2919706841, 2646866425, 2409546199],
        [3861619999, 1144530326, 732641127, 248473161]),
    "uniform": ([0.4435478448867798, 1.3989858627319336, 1.081357479095459, 0.8050804138183594],
        [2.4955170154571533, -0.6675918102264404, -1.1470938920974731, -1.710739254951477]),
    "uniform_f16": ([0.076171875, 0.1904296875, 0.9755859375, 0.7568359375],
        [0.64453125, 0.146484375, 0.2158203125, 0.3994140625]),
    "uniform_bf16": ([0.6328125, 0.84375, 0.96875, 0.8359375],
        [0.1171875, 0.5859375, 0.3984375, 0.28125]),
    "randint": ([[184, 514, 736], [539, 804, 979]],
        [[166, 914, 497], [621, 130, 33]]),
    "randint_int8_wide": ([68, -110, 55, 65, 13, -21],
        [-29, -81, 94, -71, 114, 117]),
    "randint_uint8_full": ([196, 18, 183, 193, 141, 107],
        [99, 47, 222, 57, 242, 245]),
    "bernoulli": ([False, False, True, False],
        [False, True, True, True]),
    "categorical": ([[1, 0, 0], [1, 0, 0], [1, 0, 0]],
        [[0, 1, 0], [0, 1, 0], [0, 1, 0]]),
    "choice": ([4, 4, 1, 9],
        [1, 9, 2, 1]),
    "choice_no_replace": ([[2, 3, 0], [6, 7, 4], [10, 11, 8]],
        [[0, 2, 3], [4, 6, 7], [8, 10, 11]]),
    "choice_p": ([2, 2, 2, 2, 2],
        [1, 3, 4, 4, 0]),
    "permutation": ([7, 4, 2, 5, 3, 6, 0, 1],
        [0, 4, 2, 3, 7, 5, 6, 1]),
    "permutation_independent": ([[2, 3, 0, 1], [7, 4, 5, 6]],
        [[0, 2, 3, 1], [4, 7, 5, 6]]),
    "rademacher": ([1, -1, -1, -1, 1, -1],
        [-1, 1, 1, 1, -1, 1]),
    "gumbel": ([0.3340933918952942, 0.952019453048706, 0.7255305647850037, 0.5481715202331543],
        [2.2409517765045166, -0.2794860005378723, -0.570156455039978, -1.047271490097046]),
    "normal": ([-0.02830461598932743, 0.4671318531036377, 0.2957029640674591, 0.15354591608047485],
        [1.2764595746994019, -0.6234888434410095, -0.9518707990646362, -1.5730624198913574]),
    "truncated_normal": ([-0.45244649052619934, 0.5684449076652527, 0.45974966883659363],
        [-0.08643710613250732, -0.3139074146747589, -0.5181613564491272]),
    "exponential": ([0.670817494392395, 1.1388006210327148, 0.9578199982643127, 0.8232924938201904],
        [2.293658971786499, 0.3099026381969452, 0.18703009188175201, 0.05959306284785271]),
    "laplace": ([0.022839652374386787, -0.4456535577774048, -0.2646729052066803, -0.1301453858613968],
        [-1.600512146949768, 0.6293026208877563, 1.0753962993621826, 2.15671706199646]),
    "logistic": ([-0.0451694130897522, 0.7528398036956787, 0.47375231981277466, 0.245286762714386],
        [2.1873016357421875, -1.012547254562378, -1.5815136432647705, -2.790271759033203]),
    "cauchy": ([-0.03548463061451912, 0.6337261199951172, 0.38244056701660156, 0.1940706968307495],
        [3.0484395027160645, -0.9014567136764526, -1.683881163597107, -5.441400527954102]),
    "multivariate_normal": ([[0.9599712491035461, 0.4269546568393707, -0.6112580299377441],
            [1.2171467542648315, -0.061735402792692184, -0.8146124482154846]],
        [[2.8051862716674805, -0.1319238245487213, -2.063166618347168],
            [-1.2246460914611816, 0.9498223066329956, -1.079497218132019]]),
    "gamma": ([0.43624743819236755, 0.33158406615257263, 6.168294429779053],
        [0.5413249731063843, 0.6931514143943787, 0.33025723695755005]),
    "beta": ([0.9489362835884094, 0.31281834840774536],
        [0.8291095495223999, 0.3637543022632599]),
    "dirichlet": ([0.20680315792560577, 0.06861007958650589, 0.7245867848396301],
        [0.4185788333415985, 0.2804903984069824, 0.3009307384490967]),
    "poisson": ([1, 3, 24],
        [0, 3, 38]),
    "t": ([0.1671902984380722, -1.1023223400115967],
        [2.1449270248413086, -0.3520239591598511]),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_known_answers(name):
    sampler, dtype, ulps = SAMPLERS[name]
    for key, expected in zip((K0, K1), EXPECTED[name]):
        _assert_close(sampler(key), expected, dtype, ulps)


# ---------------------------------------------------------------- keys

def test_typed_key_prints_its_dtype_and_big_seeds_need_x64():
    assert str(K0.dtype) == "key<fry>" and "key<fry>" in repr(K0)
    # Without x64 a seed keeps its low 32 bits, as JAX's int32 conversion does.
    assert random.key_data(random.key(2**40 + 3)).tolist() == [0, 3]
    with gpuarr.enable_x64():
        assert random.key_data(random.key(2**40 + 3)).tolist() == [256, 3]


def test_numpy_uint64_seed_is_narrowed_like_jnp_asarray():
    data = random.key_data(random.key(np.uint64(2**63 + 5)))
    assert data.dtype == np.uint32 and data.tolist() == [0, 5]
    assert random.PRNGKey(np.int64(-1)).dtype == np.uint32


def test_seed_outside_int64_raises_overflow_error():
    with pytest.raises(OverflowError, match="does not fit in int64"):
        random.key(2**63)
    with pytest.raises(OverflowError):
        random.PRNGKey(-2**63 - 1)


def test_fold_in_python_int_must_fit_uint32_numpy_ints_wrap():
    for bad in (-3, 2**32):
        with pytest.raises(OverflowError, match="out of bounds for uint32"):
            random.fold_in(KEY, bad)
    assert random.key_data(random.fold_in(KEY, np.int32(-3))).tolist() == [2313591868, 3981651893]


def test_clone_of_raw_values():
    assert random.clone(0).dtype == np.int32 and random.clone(0.5).dtype == np.float32
    for bad in (None, "abc", [0, 0]):
        with pytest.raises(TypeError, match="clone expects a PRNG key"):
            random.clone(bad)


# ---------------------------------------------------------------- fixed samplers

def test_randint_python_bounds_beyond_default_int_overflow():
    for dtype in (None, jnp.uint8, jnp.uint32):
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            random.randint(KEY, (3,), 0, 2**40, dtype)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        random.randint(KEY, (2,), [0, 1], 5)


def test_gumbel_and_logistic_float16_drop_the_folded_tiny():
    # XLA folds the `+ tiny` of uniform(minval=tiny) into the `- 1`: visible in float16 only.
    g = np.asarray(random.gumbel(KEY, (200,), jnp.float16))
    _assert_close(g[[27, 63, 67, 86, 115, 116]], [-0.87060546875, -1.8310546875, -1.1396484375,
                                                 -1.51171875, -1.1259765625, -0.89794921875],
                  "float16")
    lg = np.asarray(random.logistic(KEY, (200,), jnp.float16))
    _assert_close(lg[[2, 27, 57, 60, 63, 67]], [-2.849609375, -2.29296875, -2.927734375,
                                                -2.7265625, -6.234375, -3.080078125], "float16")


def test_cauchy_tan_near_the_poles():
    c = np.asarray(random.cauchy(random.fold_in(random.key(3), 12345), (1000,)))
    expected = np.float32([24.46368408203125, 30.925273895263672])
    np.testing.assert_array_equal(c[[870, 933]], expected)


def test_truncated_normal_tail_uses_xla_erf():
    # One ulp of erf near 1 moves these samples by thousands of ulps.
    _assert_close(random.truncated_normal(KEY, 3., 5., (6,)),
                  [3.8049910068511963, 4.019367218017578, 3.1209235191345215, 3.1875715255737305,
                   3.248168468475342, 3.0546727180480957], "float32")
    t = np.asarray(random.truncated_normal(KEY, -np.inf, np.inf, (100,)))
    assert np.isfinite(t).all()


def test_gumbel_highest_mode():
    _assert_close(random.gumbel(KEY, (5,), mode="highest"),
                  [-1.081849217414856, -1.3463642597198486, 0.9065791964530945,
                   0.4582820236682892, 0.16994459927082062], "float32", 2)
    assert random.categorical(KEY, jnp.zeros((2, 6)), mode="highest").tolist() == [5, 5]
    assert random.gumbel(KEY, (3,), jnp.float16, mode="highest").dtype == np.float16
    with pytest.raises(ValueError, match="valid mode for gumbel"):
        random.gumbel(KEY, (3,), mode="medium")


def test_multivariate_normal_dtypes_follow_mean_and_cov():
    mean = np.zeros(3, np.float32)
    # `dtype` is that of the normal draws; the result is promoted with mean and the factor.
    assert random.multivariate_normal(KEY, mean, COV, (2,), jnp.float16).dtype == np.float32
    assert random.multivariate_normal(KEY, mean.astype(np.float16),
                                      COV.astype(np.float16)).dtype == np.float16
    assert random.multivariate_normal(KEY, np.zeros(3, np.int32), COV).dtype == np.float32
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        random.multivariate_normal(KEY, [0., 0.], np.eye(2))


def test_beta_and_t_parameters_must_cast_safely():
    with pytest.raises(TypePromotionError, match="cannot safely cast"):
        random.beta(KEY, np.float32([0.5, 2.]), 1., dtype=jnp.float16)
    with pytest.raises(TypePromotionError, match="cannot safely cast"):
        random.t(KEY, np.float32([1., 3.]), dtype=jnp.bfloat16)
    assert random.t(KEY, 3., (2,), jnp.float16).dtype == np.float16  # Python scalars are weak


def test_choice_rejects_lists_and_categorical_axis_is_an_index_error():
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        random.choice(KEY, [1, 2, 3], (2,))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        random.choice(KEY, 2, (2,), p=[0.5, 0.5])
    with pytest.raises(IndexError, match="out of bounds"):
        random.categorical(KEY, LOGITS, axis=2)


def test_float64_streams_with_x64():
    with gpuarr.enable_x64():
        # The multiply-add of uniform is one fused operation in float64 too.
        _assert_close(random.uniform(KEY, (4,), minval=-3., maxval=7.5),
                      [1.3937996730220577, -0.7288977266421307, 7.135875341749474,
                       3.0322556041387987], "float64")
        _assert_close(random.randint(KEY, (4,), -2**40, 2**40),
                      [-643884527857, 205787154559, 30857237199, 999804089301], "int64")
        _assert_close(random.bits(KEY, (3,)), [7719171245655871230, 3989946895414531357,
                                               17807037942121513089], "uint64")
        # rademacher draws its uniform in the default float dtype, float64 here.
        assert random.rademacher(KEY, (8,)).tolist() == RADEMACHER_X64
        _assert_close(random.truncated_normal(KEY, -1., 2., (4,)),
                      [0.00301295124756838, -0.4241902151456523, 1.6339202640360784,
                       0.32904270893046433], "float64", 2)


# ---------------------------------------------------------------- eager, jit and vmap agree

TRANSFORMED = {
    "gumbel_f16": lambda k: random.gumbel(k, (5,), jnp.float16),
    "gumbel_highest": lambda k: random.gumbel(k, (5,), mode="highest"),
    "logistic_f16": lambda k: random.logistic(k, (5,), jnp.float16),
    "cauchy": lambda k: random.cauchy(k, (5,)),
    "truncated_normal": lambda k: random.truncated_normal(k, 2., 4., (5,)),
    "multivariate_normal": lambda k: random.multivariate_normal(k, jnp.zeros(3), jnp.asarray(COV)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMED))
def test_eager_jit_vmap_agree(name):
    f = TRANSFORMED[name]
    keys = random.split(random.key(11), 3)
    batched = np.asarray(gpuarr.vmap(f)(keys))
    for i, k in enumerate(keys):
        eager = np.asarray(f(k))
        np.testing.assert_array_equal(eager, np.asarray(gpuarr.jit(f)(k)))
        if name == "multivariate_normal":
            # Under vmap the factor's matrix-vector products become one matrix product, which
            # BLAS may sum in another order (as XLA's batched dot may): the draws stay equal
            # (the other cases), the product within an ulp.
            np.testing.assert_array_max_ulp(eager, batched[i], 1)
        else:
            np.testing.assert_array_equal(eager, batched[i])
