"""gpuarr.lax against JAX itself: the same call through gpuarr and JAX must give the same
values, shape, dtype and weak type, or the same exception. lax.integer_pow, max, min, sign, pow,
broadcast_in_dim, gather modes and split, and the complex max/min reductions of gpuarr.numpy;
then platform_dependent, approx_max_k/approx_min_k, reduce_precision, mulhi, rng_bit_generator,
rng_uniform, broadcast_like, the conv/reduce_window shape helpers,
conv_general_dilated_patches/_local and the exported primitives (values, shapes, dtypes, error
classes), eagerly and under jit, with vmap and grad where JAX has them."""
import ml_dtypes
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import errors
from gpuarr import lax as glax

jax = pytest.importorskip("jax")

NAN, INF = np.nan, np.inf


def _parts(a):
    a = np.asarray(a)
    if a.dtype in (ml_dtypes.bfloat16, np.float16):
        a = a.astype(np.float32)
    return (np.real(a), np.imag(a)) if a.dtype.kind == "c" else (a,)


def check(fn, *args, jit=False, exact=True, rtol=1e-6, atol=0.0):
    """fn(module, *args) through gpuarr and through JAX (arrays as each one's arrays).
    `exact`: the same values bit for bit up to NaN payloads (signed zeros included), real and
    imaginary parts separately; otherwise within `rtol` and `atol`."""
    got = outcome(gpuarr, lambda *xs: fn(gpuarr, *xs), args, jit, arrays_only=True)
    want = outcome(jax, lambda *xs: fn(jax, *xs), args, jit, arrays_only=True)
    for g, w in same_results(got, want):
        for gp, wp in zip(_parts(g), _parts(w)):
            if exact:
                np.testing.assert_array_equal(gp, wp)
                if gp.dtype.kind == "f":  # signed zeros (a NaN's sign bit is no value)
                    np.testing.assert_array_equal(np.signbit(gp) & ~np.isnan(gp),
                                                  np.signbit(wp) & ~np.isnan(wp))
            else:
                np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol, equal_nan=True)


def c64(*values):
    return np.array(values, np.complex64)


# ---------------------------------------------------------------- integer_pow


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, ml_dtypes.int4])
@pytest.mark.parametrize("y", [-1, -2, -(2 ** 40)])
@pytest.mark.parametrize("jit", [False, True])
def test_integer_pow_negative_exponent_of_integers(dtype, y, jit):
    check(lambda m, x: m.lax.integer_pow(x, y), np.array([1, 3], dtype), jit=jit)
    check(lambda m, x: m.lax.integer_pow(x, y), np.array(3, dtype), jit=jit)


def test_integer_pow_negative_exponent_messages():
    check(lambda m: m.lax.integer_pow(3, -1))  # weak: ~int32[]
    # After a positive exponent has run on the same dtype, too.
    x = np.array([[2, 3]], np.int32)
    check(lambda m, x: m.lax.integer_pow(x, 2), x)
    check(lambda m, x: m.lax.integer_pow(x, -3), x)
    check(lambda m, x: m.numpy.power(x, -1), x)


INT_BASES = [-3, -2, -1, 0, 1, 2, 3, 5, 7, 127]


@pytest.mark.parametrize("dtype,y", [
    (np.int32, 2 ** 40), (np.int32, 2 ** 40 + 1), (np.int32, 2 ** 31), (np.int32, 2 ** 31 + 3),
    (np.int32, 2 ** 31 - 1), (np.int8, 300), (np.int8, 129), (np.uint8, 256), (np.uint8, 255),
    (np.uint8, 1001), (ml_dtypes.int4, 9), (ml_dtypes.int4, 17), (np.int32, 3), (np.int8, 5)])
def test_integer_pow_integers_any_exponent(dtype, y):
    info = ml_dtypes.iinfo(dtype)
    x = np.array([v for v in INT_BASES if info.min <= v <= info.max], dtype)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("dtype,y", [
    (np.float16, 65505), (np.float16, -65505), (np.float16, 2049), (np.float16, 2 ** 40 + 1),
    (ml_dtypes.bfloat16, 65505), (ml_dtypes.bfloat16, 257), (ml_dtypes.bfloat16, -257),
    (np.float32, 2 ** 24 + 1), (np.float32, 2 ** 40 + 1), (np.float32, -(2 ** 40 + 1)),
    (np.float32, 2 ** 40), (np.float32, 2 ** 2000 + 1), (np.float32, -(2 ** 2000))])
def test_integer_pow_floats_exponent_past_the_type(dtype, y):
    x = np.array([-2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0, INF, -INF, NAN], dtype)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("y", [2 ** 40, 2 ** 40 + 1, 2 ** 40 + 2, 2 ** 40 + 3, 101, -101, 1000])
def test_integer_pow_complex_large_exponents(y):
    x = c64(1j, -1j, 1 + 0j, -1 + 0j, 0j)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, -1, -3, 99])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_integer_pow_small_exponents(y, dtype):
    rng = np.random.default_rng(y + 10)
    x = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    if dtype == np.complex64:
        x = (x * np.exp(1j * rng.uniform(-3, 3, 64))).astype(dtype)
    # Real floats as XLA computes them, bit for bit: each multiplication rounds.
    exact = dtype == np.float32
    check(lambda m, x: m.lax.integer_pow(x, y), x, exact=exact, rtol=2e-5 * max(abs(y), 1))


def test_integer_pow_large_exponent_under_jit_and_grad():
    x = np.array([3, 2, -1, 5], np.int32)
    check(lambda m, x: m.lax.integer_pow(x, 2 ** 40 + 1), x, jit=True)
    f = np.array([-1.0, 1.0], np.float32)
    check(lambda m, x: m.lax.integer_pow(x, 2 ** 24 + 1), f, jit=True)
    check(lambda m, x: m.grad(lambda v: m.lax.integer_pow(v, 2 ** 24 + 1).sum())(x), f)


# ---------------------------------------------------------------- max and min

CX = c64(1 + 1j, 1 + 2j, NAN + 0j, 2 + 0j, 1 + 0j, complex(1, NAN), 3 + 0j, complex(NAN, NAN),
         0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(INF, 1), -INF + 0j)
CY = c64(1 + 2j, 1 + 1j, 2 + 0j, NAN + 0j, complex(1, NAN), 1 + 0j, complex(3, NAN), 5 + 0j,
         complex(-0.0, 0.0), 0j, 0j, complex(INF, 2), complex(-INF, -1))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("jit", [False, True])
def test_max_min_complex(name, jit):
    check(lambda m, x, y: getattr(m.lax, name)(x, y), CX, CY, jit=jit)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), CY, CX, jit=jit)
    check(lambda m, x, y: getattr(m.numpy, name + "imum")(x, y), CX, CY, jit=jit)
    check(lambda m, x: getattr(m.numpy, name + "imum")(x, 1 + 0j), CX, jit=jit)
    check(lambda m, x: getattr(m.lax, name)(x, x[2]), CX, jit=jit)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_real_unchanged(name):
    x = np.array([1.0, NAN, -0.0, 0.0, INF, 2.0], np.float32)
    y = np.array([NAN, 1.0, -1.0, 1.0, 3.0, -INF], np.float32)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), x, y)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), x, y, jit=True)
    i = np.array([3, -2, 7], np.int32)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), i, i[::-1].copy(), jit=True)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_complex_grad(name):
    x = c64(1 + 1j, 3j, 2j, 3 + 0j)
    check(lambda m, x: m.grad(lambda v: getattr(m.numpy, name)(v, 1 + 1j).real.sum())(x), x)


# ---------------------------------------------------------------- sign


SIGN_CASES = c64(INF + 1j, 1 + INF * 1j, complex(INF, INF), complex(-INF, 2), 0j,
                 complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0), 3 + 4j, -3 - 4j,
                 complex(NAN, 1), complex(1, NAN), 1e-30 + 1e-30j, 1e30 - 1e30j, 5j, -2 + 0j)


@pytest.mark.parametrize("jit", [False, True])
def test_sign_complex(jit):
    check(lambda m, x: m.lax.sign(x), SIGN_CASES, jit=jit)
    check(lambda m, x: m.numpy.sign(x), SIGN_CASES, jit=jit)


def test_sign_complex_random_and_grad():
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))).astype(np.complex64)
    check(lambda m, x: m.lax.sign(x), x, exact=False)
    check(lambda m, x: m.grad(lambda v: m.numpy.sign(v).real.sum())(x), x[0])
    check(lambda m, x: m.lax.sign(x), np.array([-0.0, 0.0, -2.0, NAN, INF], np.float32))


# ---------------------------------------------------------------- pow of a complex zero

_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INF, -INF, NAN]
EXPONENTS = np.array([complex(a, b) for a in _PARTS for b in _PARTS], np.complex64)


@pytest.mark.parametrize("base", [0j, complex(-0.0, 0.0), complex(0.0, -0.0),
                                  complex(-0.0, -0.0)], ids=str)
def test_pow_complex_zero_base(base):
    check(lambda m, x, y: m.lax.pow(x, y), np.full(EXPONENTS.shape, base, np.complex64),
          EXPONENTS)


def test_pow_complex_zero_base_jit_and_numpy():
    x = c64(0j, 0j, 0j, 0j, 1 + 1j)
    y = c64(1 + 1j, 2 + 0j, 0j, -1 + 0j, 2 + 0j)
    # XLA computes (1 + 1j) ** 2 as exp(2 log(1 + 1j)): its real part is -8.7e-8, not 0
    check(lambda m, x, y: m.lax.pow(x, y), x, y, jit=True, exact=False, atol=1e-6)
    check(lambda m, x, y: m.numpy.power(x, y), x, y, exact=False, atol=1e-6)
    check(lambda m, x: m.lax.pow(x, np.array([2, 0, -1], np.int32)), x[:3])


POW_BASE = np.array([0.0, 0.5, 1.5, 2.0], np.float32)
POW_CASES = {
    "python_int": lambda m, x: m.lax.pow(x, 2),
    "python_float": lambda m, x: m.lax.pow(x, 2.0),
    "int32_scalar": lambda m, x: m.lax.pow(x, np.int32(3)),
    "int32_array": lambda m, x: m.lax.pow(x, np.array([0, 2, -1, 3], np.int32)),
    "uint8": lambda m, x: m.lax.pow(x, np.uint8(2)),
    "float16_int": lambda m, x: m.lax.pow(x.astype(np.float16), np.int32(2)),
    "complex_int": lambda m, x: m.lax.pow(x.astype(np.complex64), np.int32(2)),
    "float16_python_float": lambda m, x: m.lax.pow(x.astype(np.float16), 2.0),  # TypeError
    "bool_exponent": lambda m, x: m.lax.pow(x, x > 1),  # TypeError
    "int_base": lambda m, x: m.lax.pow(x.astype(np.int32), np.int32(2)),  # TypeError
    # Derivatives: an integer exponent of 0 has derivative 0, a float one NaN at x = 0.
    "grad_int_exponent": lambda m, x: m.grad(
        lambda x: m.lax.pow(x, np.array([0, 2, -1, 3], np.int32)).sum())(x),
    "grad_float_zero_exponent": lambda m, x: m.grad(lambda x: m.lax.pow(x, 0.0).sum())(x),
    "grad_exponent": lambda m, x: m.grad(lambda y: m.lax.pow(x + 1, y).sum())(x),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", sorted(POW_CASES))
def test_pow_exponents_of_integer_and_float_types(name, jit):
    # JAX's pow keeps an integer exponent as it is (XLA converts it to the base's type).
    # The derivative in the exponent goes through log and pow: within an ulp of XLA's.
    check(POW_CASES[name], POW_BASE, jit=jit, exact=name != "grad_exponent", rtol=3e-7)
    if "float16_python" not in name and "bool" not in name and "int_base" not in name:
        printed = [str(api.make_jaxpr(lambda x: POW_CASES[name](api, x))(POW_BASE))
                   for api in (gpuarr, jax)]
        assert printed[0] == printed[1]


# ---------------------------------------------------------------- broadcast_in_dim


@pytest.mark.parametrize("shape,dims,x", [
    ((-1,), (), np.float32(1)), ((2, -1), (0,), np.ones(2, np.float32)),
    ((2, 3), (-1,), np.ones(3, np.float32)), ((2, 3), (1,), np.ones(3, np.float32)),
    ((0, 3), (1,), np.ones(3, np.float32))], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_broadcast_in_dim_shapes(shape, dims, x, jit):
    check(lambda m, x: m.lax.broadcast_in_dim(x, shape, dims), np.asarray(x), jit=jit)


def test_broadcast_negative_size():
    check(lambda m, x: m.lax.broadcast(x, (-2,)), np.ones(3, np.float32))


# ---------------------------------------------------------------- gather modes


@pytest.mark.parametrize("mode", ["bogus", "CLIP", 3, "clip", "fill", "promise_in_bounds"])
def test_gather_modes(mode):
    def fn(m, x, i):
        dnums = m.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                             start_index_map=(0,))
        return m.lax.gather(x, i, dnums, (1,), mode=mode, fill_value=-1)
    check(fn, np.arange(3, dtype=np.float32), np.array([[1], [5]], np.int32))


# ---------------------------------------------------------------- split


@pytest.mark.parametrize("sizes", [[-1, 4], [4, -1], [5, -2], [], [1, 1], [1, 2], [0, 3, 0],
                                   (2, 1)], ids=str)
def test_split_sizes(sizes):
    check(lambda m, x: m.lax.split(x, sizes), np.arange(3, dtype=np.float32))


def test_split_axis():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(lambda m, x: m.lax.split(x, [1, -1, 4], axis=-1), x)
    check(lambda m, x: m.lax.split(x, [3, 1], axis=1), x)
    check(lambda m, x: m.lax.split(x, [], axis=0), x)


def test_split_transformations():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def loss(m, x):
        a, b = m.lax.split(x, [1, 3], axis=1)
        return (a * 2 + m.numpy.sin(b).sum(1, keepdims=True)).sum()
    check(lambda m, x: m.grad(lambda x: loss(m, x))(x), x, exact=False)
    check(lambda m, x: m.tree_util.tree_leaves(
        m.jvp(lambda x: m.lax.split(x, [2, 1], 0), (x,), (x * 3,))), x)
    check(lambda m, x: m.vmap(lambda r: m.lax.split(r, [3, 1]), in_axes=0, out_axes=1)(x), x)
    check(lambda m, x: m.lax.split(x, (np.int64(2), np.int64(1))), x, jit=True)


# ---------------------------------------------------------------- stack and unstack


@pytest.mark.parametrize("axis", [0, 1, -1, 2, 3, -4], ids=str)
def test_stack_axes(axis):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda m, x: m.lax.stack([x, x * 2, x + 1], axis), x)
    check(lambda m, x: m.lax.unstack(x, axis % 4 - 2 if axis in (-1, 2) else 0), x)


def test_stack_unstack_errors_and_transformations():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda m, x: m.lax.stack([x, x[0]]), x)
    check(lambda m, x: m.lax.stack([x, x.T]), x)
    check(lambda m, x: m.lax.stack([]), x)
    check(lambda m, x: m.lax.unstack(x[0, 0]), x)
    check(lambda m, x: m.lax.unstack(x, 2), x)
    check(lambda m, x: m.grad(lambda x: (m.lax.stack([x, x * x], 1) ** 2).sum())(x), x,
          exact=False)
    check(lambda m, x: m.grad(lambda x: m.lax.unstack(x * x, 1)[2].sum())(x), x, exact=False)
    check(lambda m, x: m.vmap(lambda r: m.lax.stack([r, r * 2], 0), in_axes=1)(x), x)
    check(lambda m, x: m.vmap(lambda r, s: m.lax.stack([r, s], 1), in_axes=(0, None))(
        x, x[0]), x)
    check(lambda m, x: m.vmap(lambda r: m.lax.unstack(r), in_axes=1, out_axes=0)(x), x)
    check(lambda m, x: m.jit(lambda x: m.lax.unstack(m.lax.stack([x, x], 2), 1))(x), x)


def test_split_prints_as_jax():
    x = np.ones((2, 4), np.float32)
    for fn in (lambda m: lambda x: m.lax.split(x, (1, 3), axis=-1),
               lambda m: lambda x: m.grad(lambda x: (m.lax.split(x, (1, 1))[1] ** 2).sum())(x),
               lambda m: m.nn.glu, lambda m: m.grad(lambda x: m.nn.glu(x).sum()),
               lambda m: lambda x: m.numpy.split(x, [1, 3], axis=1),
               lambda m: lambda x: m.numpy.stack([x, x], -1),
               lambda m: lambda x: m.numpy.unstack(x, axis=1),
               lambda m: m.grad(lambda x: m.numpy.stack([x, x * x]).sum()),
               lambda m: m.vmap(lambda r: m.numpy.unstack(m.numpy.stack([r, r]), axis=1))):
        want = jax.make_jaxpr(fn(jax))(x).pretty_print(use_color=False)
        assert str(gpuarr.make_jaxpr(fn(gpuarr))(x)) == want


# ---------------------------------------------------------------- complex max/min reductions


def _complex_data(shape, nan_fraction, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    re = rng.integers(-3, 4, n).astype(np.float32)
    im = rng.integers(-3, 4, n).astype(np.float32)
    re[rng.random(n) < nan_fraction] = NAN
    im[rng.random(n) < nan_fraction] = NAN
    re[rng.random(n) < 0.1] *= -0.0
    im[rng.random(n) < 0.1] *= -0.0
    return (re + 1j * im).astype(np.complex64).reshape(shape)


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_examples(name):
    x = c64(1 + 1j, NAN + 0j, 2j)
    check(lambda m, x: getattr(m.numpy, name)(x), x)
    check(lambda m, x: getattr(m.numpy, name)(x), c64(NAN + 0j, 1 + 1j, 2j, complex(0, NAN)))
    check(lambda m, x: getattr(m.numpy, name + "imum").reduce(x), x)
    check(lambda m, x: getattr(m.numpy, name)(x), x, jit=True)
    check(lambda m, x: getattr(m.numpy, name)(x[:0], initial=1j), x)


# Axes longer than 32 are reduced by XLA in windows of 32 (the order shows with NaN parts).
@pytest.mark.parametrize("shape,axis", [
    ((7,), None), ((33,), None), ((100,), 0), ((2000,), None), ((40, 50), None), ((40, 50), 1),
    ((40, 50), 0), ((3, 70, 5), 1), ((70, 3, 40), (0, 2)), ((4, 0), 1), ((3, 4), ())], ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_orders(shape, axis, name):
    for seed, fraction in enumerate([0.02, 0.2]):
        x = _complex_data(shape, fraction, seed)
        check(lambda m, x: getattr(m.numpy, name)(x, axis=axis), x)
        check(lambda m, x: getattr(m.lax, "reduce_" + name)(x, (0,)), x.reshape(-1))


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_keywords(name):
    x = _complex_data((4, 6), 0.2, 7)
    where = np.random.default_rng(0).random((4, 6)) < 0.6
    check(lambda m, x: getattr(m.numpy, name)(x, axis=1, keepdims=True), x)
    check(lambda m, x: getattr(m.numpy, name)(x, axis=-1, where=where, initial=1 + 1j), x)
    check(lambda m, x: getattr(m.numpy, name)(x, where=where), x)
    check(lambda m, x: getattr(m.numpy, name)(x, initial=2 + 0j), x)
    check(lambda m, x: getattr(m.numpy, name + "imum").reduce(x, axis=0), x, jit=True)
    check(lambda m, x: m.vmap(lambda r: getattr(m.lax, "reduce_" + name)(r, (0,)))(x), x)

# -------------------------- platform_dependent, approx top-k, reduce_precision, rng and convolution helpers

jlax = jax.lax
ml_dtypes = pytest.importorskip("ml_dtypes")


def same(got, want, exact=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def same_tree(got, want, exact=True):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w, exact)


# ---------------------------------------------------------------- reduce_precision

FORMATS = [(1, 0), (2, 1), (4, 3), (5, 2), (5, 10), (8, 7), (6, 0), (8, 23), (11, 52)]


def _bit_patterns(dtype, n=4000, seed=0):
    """Random bit patterns (NaNs, infinities, subnormals and signed zeros included)."""
    nbits = np.dtype(dtype).itemsize * 8
    uint = np.dtype(f"uint{nbits}")
    bits = np.random.RandomState(seed).randint(0, 2 ** min(nbits, 63), size=n, dtype=np.int64)
    bits = bits.astype(uint)
    special = np.array([0, 1, (1 << (nbits - 1))], uint)  # +0, smallest subnormal, -0
    return np.concatenate([special, bits]).view(dtype), uint


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_reduce_precision_is_bit_exact(dtype):
    x, uint = _bit_patterns(dtype)
    for e, m in FORMATS:
        want = np.asarray(jlax.reduce_precision(x, e, m))
        got = np.asarray(glax.reduce_precision(x, e, m))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(uint), want.view(uint), err_msg=f"{e}, {m}")
    jitted = gpuarr.jit(lambda x: glax.reduce_precision(x, 5, 2))(x)
    np.testing.assert_array_equal(np.asarray(jitted).view(uint),
                                  np.asarray(jlax.reduce_precision(x, 5, 2)).view(uint))


def test_reduce_precision_float64_and_scalars():
    x, uint = _bit_patterns(np.float64, n=1000)
    with gpuarr.enable_x64(), jax.enable_x64(True):
        for e, m in [(5, 10), (8, 23), (11, 20), (3, 0)]:
            got, want = glax.reduce_precision(x, e, m), jlax.reduce_precision(x, e, m)
            assert np.asarray(got).dtype == np.float64
            np.testing.assert_array_equal(np.asarray(got).view(uint), np.asarray(want).view(uint))
    same(glax.reduce_precision(1.1, 5, 2), jlax.reduce_precision(1.1, 5, 2))
    assert gpuarr.typeof(glax.reduce_precision(1.1, 5, 2)).weak_type


def test_reduce_precision_transformations_and_errors():
    x = np.linspace(-3, 3, 7).astype(np.float32) + np.float32(0.1)
    t = np.float32(1.1) * np.ones(7, np.float32)
    _, tan = gpuarr.jvp(lambda x: glax.reduce_precision(x, 5, 2), (x,), (t,))
    _, jtan = jax.jvp(lambda x: jlax.reduce_precision(x, 5, 2), (x,), (t,))
    same(tan, jtan)
    same(gpuarr.grad(lambda x: glax.reduce_precision(x, 5, 2))(1.1),
         jax.grad(lambda x: jlax.reduce_precision(x, 5, 2))(1.1))
    xs = x.reshape(1, 7) * np.arange(1, 4, dtype=np.float32)[:, None]
    same(gpuarr.vmap(lambda r: glax.reduce_precision(r, 4, 3), in_axes=1)(xs),
         jax.vmap(lambda r: jlax.reduce_precision(r, 4, 3), in_axes=1)(xs))
    assert "reduce_precision[exponent_bits=5 mantissa_bits=2]" in str(
        gpuarr.make_jaxpr(lambda x: glax.reduce_precision(x, 5, 2))(x))
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        glax.reduce_precision(np.arange(3, dtype=np.int32), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits must be positive"):
        glax.reduce_precision(x, 0, 10)
    with pytest.raises(ValueError, match="mantissa_bits must be non-negative"):
        glax.reduce_precision(x, 5, -1)
    with pytest.raises(TypeError):
        glax.reduce_precision(x, 5.0, 1)


# ---------------------------------------------------------------- mulhi


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_mulhi_matches_jax(dtype):
    info = np.iinfo(dtype)
    rs = np.random.RandomState(1)
    a = rs.randint(info.min, int(info.max) + 1, size=200, dtype=np.int64).astype(dtype)
    b = rs.randint(info.min, int(info.max) + 1, size=200, dtype=np.int64).astype(dtype)
    a[:4], b[:4] = [info.min, info.max, info.min, 0], [info.min, info.max, info.max, info.min]
    same(glax.mulhi(a, b), jlax.mulhi(a, b))
    same(gpuarr.jit(glax.mulhi)(a, b), jlax.mulhi(a, b))


def test_mulhi_64_bit_and_transformations():
    rs = np.random.RandomState(2)
    with gpuarr.enable_x64(), jax.enable_x64(True):
        for dtype in (np.int64, np.uint64):
            info = np.iinfo(dtype)
            a = rs.randint(-2 ** 63, 2 ** 63 - 1, size=200, dtype=np.int64).astype(dtype)
            b = rs.randint(-2 ** 63, 2 ** 63 - 1, size=200, dtype=np.int64).astype(dtype)
            a[:3], b[:3] = [info.min, info.max, info.max], [info.min, info.max, info.min]
            same(glax.mulhi(a, b), jlax.mulhi(a, b))
    x = np.arange(-6, 6, dtype=np.int32).reshape(3, 4) * 123457
    y = np.int32(1 << 30) - x
    same(gpuarr.vmap(glax.mulhi)(x, y), jax.vmap(jlax.mulhi)(x, y))
    same(glax.mulhi(np.int32(5), 3), jlax.mulhi(np.int32(5), 3))
    assert "mulhi" in str(gpuarr.make_jaxpr(glax.mulhi)(np.int32(5), np.int32(3)))
    with pytest.raises(TypeError, match="mulhi"):
        glax.mulhi(np.float32(1), np.float32(2))
    with pytest.raises(TypeError, match="same dtypes"):
        glax.mulhi(np.int32(3), np.int16(2))
    with pytest.raises(TypeError):
        glax.mulhi(np.arange(3, dtype=np.int32), np.arange(2, dtype=np.int32)[:, None])


# ---------------------------------------------------------------- approx_max_k / approx_min_k

X = np.array([[3., 1., 4., 1., 5., 9., 2., 6.],
              [0., 2., -0., 2., 2., -np.inf, np.inf, 1.]], np.float32)


@pytest.mark.parametrize("name", ["approx_max_k", "approx_min_k"])
def test_approx_k_matches_jax(name):
    g, j = getattr(glax, name), getattr(jlax, name)
    same_tree(g(X, 3), j(X, 3))
    same_tree(g(X, 1, reduction_dimension=0), j(X, 1, reduction_dimension=0))
    same_tree(g(X, 4, aggregate_to_topk=False), j(X, 4, aggregate_to_topk=False))
    x3 = np.random.RandomState(3).randn(2, 5, 4).astype(np.float32)
    same_tree(g(x3, 2, reduction_dimension=1), j(x3, 2, reduction_dimension=1))
    for dtype in (np.float16, ml_dtypes.bfloat16):
        same_tree(g(X.astype(dtype), 2), j(X.astype(dtype), 2))
    same_tree(gpuarr.jit(lambda x: g(x, 3))(X), j(X, 3))
    # vmap and gradients
    same_tree(gpuarr.vmap(lambda x: g(x, 2), in_axes=1)(X), jax.vmap(lambda x: j(x, 2), in_axes=1)(X))
    same_tree(gpuarr.vmap(lambda x: g(x, 2, reduction_dimension=0))(x3),
              jax.vmap(lambda x: j(x, 2, reduction_dimension=0))(x3))
    w = np.arange(3, dtype=np.float32) + 1
    same(gpuarr.grad(lambda x: (g(x, 3)[0] * w).sum())(x3),
         jax.grad(lambda x: (j(x, 3)[0] * w).sum())(x3))
    same(gpuarr.jit(gpuarr.grad(lambda x: g(x, 2)[0].sum()))(X),
         jax.grad(lambda x: j(x, 2)[0].sum())(X))


def test_approx_k_without_aggregation_keeps_xla_output_size():
    from jax._src.lib import _jax
    big = np.random.RandomState(4).randn(3, 3000).astype(np.float32)
    same_tree(glax.approx_max_k(big, 10, aggregate_to_topk=False),
              jlax.approx_max_k(big, 10, aggregate_to_topk=False))
    same_tree(glax.approx_min_k(big[0], 3, aggregate_to_topk=False),
              jlax.approx_min_k(big[0], 3, aggregate_to_topk=False))
    from gpuarr.lax.approx_top_k import reduction_output_size
    for n in (100, 129, 1000, 1025, 3000, 20000, 100000):
        for rank in (1, 2):
            for k in (1, 2, 10, 50, 300):
                for recall in (0.5, 0.9, 0.95, 0.999, 1.0):
                    for override in (-1, 200000, 1000000):
                        if k > n:
                            continue
                        want = _jax.approx_top_k_reduction_output_size(n, rank, k, recall, False,
                                                                       override)[0]
                        assert reduction_output_size(n, rank, k, recall, False, override) == want


def test_approx_k_errors_and_weak_types():
    with pytest.raises(ValueError, match="k must be positive"):
        glax.approx_max_k(X, 0)
    with pytest.raises(TypeError, match="must have >= 1 dimension"):
        glax.approx_max_k(np.float32(1), 1)
    with pytest.raises(ValueError, match="k must be smaller than the size of reduction_dim 8"):
        glax.approx_min_k(X, 9)
    with pytest.raises(ValueError, match="operand must be a floating type"):
        glax.approx_max_k(np.arange(5, dtype=np.int32), 2)
    with pytest.raises(IndexError):
        glax.approx_max_k(X, 1, reduction_dimension=2)
    for kwargs in ({"recall_target": 1.5}, {"recall_target": 0.0},
                   {"reduction_input_size_override": 4}):
        with pytest.raises(errors.JaxRuntimeError, match="out of range"):
            glax.approx_max_k(X, 2, **kwargs)
        with pytest.raises(jax.errors.JaxRuntimeError):
            jlax.approx_max_k(X, 2, **kwargs)
    with pytest.raises(errors.JaxRuntimeError, match="out of range"):
        gpuarr.jit(lambda x: glax.approx_max_k(x, 2, recall_target=2.0))(X)
    weak = gnp.asarray([1.0, 2.0, 3.0]) * 1.0
    assert gpuarr.typeof(glax.approx_max_k(gpuarr.lax.full((3,), 1.0), 2)[0]).weak_type == \
        jax.typeof(jlax.approx_max_k(jlax.full((3,), 1.0), 2)[0]).weak_type
    assert not gpuarr.typeof(glax.approx_max_k(weak, 2)[1]).weak_type


# ---------------------------------------------------------------- rng_bit_generator

KEY = np.array([1, 2, 3, 4], np.uint32)
WRAP_KEY = np.array([0xFFFFFFFF, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", list(glax.RandomAlgorithm))
def test_rng_bit_generator_matches_jax(algorithm):
    jalg = jlax.RandomAlgorithm(int(algorithm))
    cases = [(KEY, s) for s in [(), (5,), (3, 5), (2, 3, 1), (3, 3, 7), (0,)]] + [(WRAP_KEY, (4, 3))]
    for key, shape in cases:
        same_tree(glax.rng_bit_generator(key, shape, algorithm=algorithm),
                  jlax.rng_bit_generator(key, shape, algorithm=jalg))
    same_tree(glax.rng_bit_generator(KEY, (3, 3), np.uint16, algorithm),
              jlax.rng_bit_generator(KEY, (3, 3), np.uint16, jalg))
    same_tree(glax.rng_bit_generator(KEY, (9,), np.uint8, algorithm),
              jlax.rng_bit_generator(KEY, (9,), np.uint8, jalg))
    same_tree(gpuarr.jit(lambda k: glax.rng_bit_generator(k, (6,), algorithm=algorithm))(KEY),
              jlax.rng_bit_generator(KEY, (6,), algorithm=jalg))
    with gpuarr.enable_x64(), jax.enable_x64(True):
        for shape in [(), (2, 3)]:
            same_tree(glax.rng_bit_generator(KEY, shape, np.uint64, algorithm),
                      jlax.rng_bit_generator(KEY, shape, np.uint64, jalg))
        key64 = np.array([1 | 2 << 32, 3 | 4 << 32], np.uint64)
        same_tree(glax.rng_bit_generator(key64, (3,), algorithm=algorithm),
                  jlax.rng_bit_generator(key64, (3,), algorithm=jalg))


def test_rng_bit_generator_transformations_and_errors():
    keys = np.stack([KEY, KEY + 1, KEY * 3])
    same_tree(gpuarr.vmap(lambda k: glax.rng_bit_generator(k, (2,)))(keys),
              jax.vmap(lambda k: jlax.rng_bit_generator(k, (2,)))(keys))
    same(gpuarr.grad(lambda x: glax.rng_bit_generator(KEY, (2,))[1].astype(np.float32).sum() * x)(
        1.0), jax.grad(lambda x: jlax.rng_bit_generator(KEY, (2,))[1].astype(float).sum() * x)(1.0))
    text = str(gpuarr.make_jaxpr(lambda k: glax.rng_bit_generator(k, (5,), np.uint8))(KEY))
    # The parameters do not fit after the two binders, so each takes its own line (as in JAX).
    assert ("b:u32[4] c:u8[5] = rng_bit_generator[\n      algorithm=RNG_DEFAULT\n"
            "      dtype=uint8\n      shape=(5,)\n    ] a\n") in text
    assert str(glax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"
    assert [int(a) for a in glax.RandomAlgorithm] == [int(a) for a in jlax.RandomAlgorithm]
    for dtype in (np.int32, np.float32):
        with pytest.raises(TypeError, match="unsupported dtype"):
            glax.rng_bit_generator(KEY, (3,), dtype)
    with pytest.raises(TypeError, match="key must be uint32"):
        glax.rng_bit_generator(np.array([1, 2, 3], np.uint32), (3,))
    with pytest.raises(TypeError, match="key must be uint32"):
        glax.rng_bit_generator(KEY.astype(np.int32), (3,))


# ---------------------------------------------------------------- rng_uniform


def test_rng_uniform():
    a, b = np.float32(2), np.float32(3)
    out = np.asarray(glax.rng_uniform(a, b, (10000,)))
    assert out.dtype == np.float32 and out.shape == (10000,)
    assert out.min() >= 2 and out.max() < 3 and abs(out.mean() - 2.5) < 0.02
    ints = np.asarray(glax.rng_uniform(np.int32(-2), np.int32(3), (1000,)))
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {-2, -1, 0, 1, 2}
    half = np.asarray(glax.rng_uniform(np.float16(0), np.float16(1), (5000,)))
    assert half.dtype == np.float16 and half.max() < 1
    assert gpuarr.typeof(glax.rng_uniform(0., 1., ())).weak_type
    assert gpuarr.typeof(glax.rng_uniform(0., 1., ())).weak_type == \
        jax.typeof(jlax.rng_uniform(0., 1., ())).weak_type
    # Stateful: each call and each of two identical calls in one program draws anew.
    f = gpuarr.jit(lambda: (glax.rng_uniform(0., 1., (4,)), glax.rng_uniform(0., 1., (4,))))
    (u1, u2), (u3, _) = f(), f()
    assert not np.array_equal(u1, u2) and not np.array_equal(u1, u3)
    rows = gpuarr.jit(lambda: glax.scan(lambda c, _: (c, glax.rng_uniform(0., 1., (2,))), 0.,
                                        None, length=3)[1])()
    assert len({tuple(r) for r in np.asarray(rows).tolist()}) == 3  # drawn in every iteration
    assert "rng_uniform[shape=(2,)]" in str(gpuarr.make_jaxpr(lambda: glax.rng_uniform(0., 1., [2]))())
    with pytest.raises(ValueError, match="identical dtypes"):
        glax.rng_uniform(np.float32(0), np.int32(10), (4,))
    with pytest.raises(ValueError, match="must be scalars"):
        glax.rng_uniform(np.zeros(2, np.float32), np.ones(2, np.float32), (2,))
    with pytest.raises(NotImplementedError, match="Batching rule for 'rng_uniform'"):
        gpuarr.vmap(lambda a: glax.rng_uniform(a, 1., (2,)))(np.zeros(3, np.float32))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'rng_uniform'"):
        gpuarr.grad(lambda a: glax.rng_uniform(a, 1., ()))(0.)


# ---------------------------------------------------------------- platform_dependent


def test_platform_dependent_eager():
    if gpuarr.default_backend() != "cpu":  # the branch taken is the platform's
        pytest.skip("compares the branch JAX takes on its CPU platform; the default platform "
                    f"is {gpuarr.default_backend()}")
    x = np.arange(3.0, dtype=np.float32)
    for kwargs in [dict(cpu=lambda x: x + 1, default=lambda x: x - 1),
                   dict(cuda=lambda x: x + 1, default=lambda x: x - 1),
                   dict(default=lambda x: x * 3)]:
        same(glax.platform_dependent(x, **kwargs), jlax.platform_dependent(x, **kwargs))
    # Only the chosen branch runs eagerly: the others may even return other types.
    same(glax.platform_dependent(x, cpu=lambda x: x + 1, cuda=lambda x: x.astype(np.int32)), x + 1)
    assert glax.platform_dependent(cpu=lambda: 1, default=lambda: 2) == 1
    same(glax.platform_dependent({"a": x}, cpu=lambda d: d["a"] * 2), x * 2)
    a, b = glax.platform_dependent(x, x, cpu=lambda a, b: (a, b + 1))
    same(b, x + 1)
    with pytest.raises(NotImplementedError, match="not found for platform cpu"):
        glax.platform_dependent(x, cuda=lambda x: x + 1)
    with pytest.raises(NotImplementedError):
        glax.platform_dependent(x)
    with pytest.raises(ValueError, match="Use 'cuda' or 'rocm'"):
        glax.platform_dependent(x, gpu=lambda x: x)
    with pytest.raises(TypeError, match="the 'cpu' branch must be a callable"):
        glax.platform_dependent(x, cpu=3)
    with pytest.raises(TypeError, match="the 'default' branch must be a callable"):
        glax.platform_dependent(x, default=3)


def test_platform_dependent_under_transformations():
    if gpuarr.default_backend() != "cpu":  # the branch taken is the platform's
        pytest.skip("compares the branch JAX takes on its CPU platform; the default platform "
                    f"is {gpuarr.default_backend()}")
    x = np.arange(3.0, dtype=np.float32)

    def f(x):
        return glax.platform_dependent(x, cpu=gnp.sin, default=gnp.cos)

    def jf(x):
        return jlax.platform_dependent(x, cpu=jax.numpy.sin, default=jax.numpy.cos)

    same(gpuarr.jit(f)(x), jax.jit(jf)(x), exact=False)
    same(gpuarr.grad(f)(1.0), jax.grad(jf)(1.0), exact=False)
    same(gpuarr.jit(gpuarr.grad(f))(1.0), jax.grad(jf)(1.0), exact=False)
    same(gpuarr.vmap(f)(x), jax.vmap(jf)(x), exact=False)
    same(gpuarr.jit(gpuarr.vmap(f))(x), jax.vmap(jf)(x), exact=False)
    text = str(gpuarr.make_jaxpr(f)(x))
    assert "platform_index[platforms=(('cpu',), None)]" in text and "cond[" in text
    # The cond keeps each branch's platforms, as JAX prints it, through jit, jvp, vmap and
    # the transposition of grad.
    for transform in (gpuarr.jit, lambda f: lambda x: gpuarr.jvp(f, (x,), (x,)),
                      gpuarr.vmap, lambda f: gpuarr.grad(lambda x: f(x).sum())):
        text = str(gpuarr.make_jaxpr(transform(f))(x))
        conds = text.count("cond[")
        assert conds and text.count("branches_platforms=(('cpu',), None)") == conds, text
    assert str(gpuarr.make_jaxpr(f)(x)) == str(jax.make_jaxpr(jf)(x))
    same(gpuarr.vmap(gpuarr.grad(lambda x: f(x).sum()))(x[:, None]),
         jax.vmap(jax.grad(lambda x: jf(x).sum()))(x[:, None]), exact=False)
    g = gnp.sin  # one function for two platforms is one branch
    assert "platforms=(('cpu', 'cuda'),)" in str(
        gpuarr.make_jaxpr(lambda x: glax.platform_dependent(x, cpu=g, cuda=g))(x))
    # Under jit every branch is traced and must agree; the choice is made at compile time.
    with pytest.raises(TypeError, match="equal output types"):
        gpuarr.jit(lambda x: glax.platform_dependent(
            x, cpu=lambda x: x + 1, cuda=lambda x: x.astype(np.int32)))(x)

    def bad(x):
        raise RuntimeError("traced")

    with pytest.raises(RuntimeError, match="traced"):
        gpuarr.jit(lambda x: glax.platform_dependent(x, cpu=lambda x: x + 1, cuda=bad))(x)
    with pytest.raises(NotImplementedError, match="not found for platform cpu"):
        gpuarr.jit(lambda x: glax.platform_dependent(x, cuda=lambda x: x + 1))(x)
    same(gpuarr.jit(lambda x: glax.platform_dependent(x, tpu=lambda x: x * 2, default=lambda x: x))(x), x)


# ---------------------------------------------------------------- shapes, patches, broadcast_like

CONV_CASES = [((2, 9, 9, 3), (3, 3, 3, 4), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC")),
              ((2, 3, 9, 7), (4, 3, 2, 3), (1, 2), "VALID", ("NCHW", "OIHW", "NCHW")),
              ((2, 8, 3), (3, 3, 5), (3,), [(1, 2)], ("NWC", "WIO", "NWC"))]


def test_shape_tuples_match_jax():
    for lhs, rhs, strides, padding, dn in CONV_CASES:
        assert glax.conv_general_shape_tuple(lhs, rhs, strides, padding, dn) == \
            jlax.conv_general_shape_tuple(lhs, rhs, strides, padding, dn)
        if isinstance(padding, str):
            assert glax.conv_transpose_shape_tuple(lhs, rhs, strides, padding, dn) == \
                jlax.conv_transpose_shape_tuple(lhs, rhs, strides, padding, dn)
        assert glax.conv_general_permutations(dn) == jlax.conv_general_permutations(dn)
    assert glax.conv_transpose_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 2), [(1, 2), (0, 1)],
                                           ("NHWC", "HWIO", "NHWC")) == \
        jlax.conv_transpose_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 2), [(1, 2), (0, 1)],
                                        ("NHWC", "HWIO", "NHWC"))
    for args in [((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), "SAME"),
                 ((4, 3, 9, 9), (4, 3, 3, 3), (2, 1), [(0, 1), (2, 0)], 2)]:
        assert glax.conv_shape_tuple(*args) == jlax.conv_shape_tuple(*args)
    for args in [((4, 5), (2, 2), (1, 2), ((0, 0), (1, 1))),
                 ((4, 5), (2, 2), (1, 2), ((0, 0), (1, 1)), (2, 1), (1, 2))]:
        assert glax.reduce_window_shape_tuple(*args) == jlax.reduce_window_shape_tuple(*args)
    with pytest.raises(TypeError, match="Wrong number of explicit pads"):
        glax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), [(0, 0)])
    with pytest.raises(ValueError, match="Negative padding"):
        glax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), [(-10, 0), (0, 0)])


@pytest.mark.slow
def test_conv_general_dilated_patches_and_local():
    rs = np.random.RandomState(5)
    img = rs.randn(2, 3, 5, 6).astype(np.float32)
    for args, kwargs in [(((2, 3), (1, 2), "SAME"), {}),
                         (((2, 2), (1, 1), "VALID"),
                          dict(rhs_dilation=(2, 1), dimension_numbers=("NCHW", "OIWH", "CNHW"))),
                         (((1, 2), (2, 1), [(1, 0), (0, 1)]), dict(lhs_dilation=(1, 2)))]:
        want = jlax.conv_general_dilated_patches(img, *args, **kwargs)
        same(glax.conv_general_dilated_patches(img, *args, **kwargs), want, exact=False)
        same(gpuarr.jit(lambda x: glax.conv_general_dilated_patches(x, *args, **kwargs))(img),
             want, exact=False)
    nhwc = np.transpose(img, (0, 2, 3, 1))
    dn = ("NHWC", "HWIO", "NHWC")
    rhs = rs.randn(5, 6, 3 * 2 * 3, 4).astype(np.float32)  # out H, out W, I = c * window, O
    want = jlax.conv_general_dilated_local(nhwc, rhs, (1, 1), "SAME", (2, 3), dimension_numbers=dn)
    same(glax.conv_general_dilated_local(nhwc, rhs, (1, 1), "SAME", (2, 3), dimension_numbers=dn),
         want, exact=False)
    loss = lambda mod, lax_: lambda x: (lax_.conv_general_dilated_patches(  # noqa: E731
        x, (2, 2), (1, 1), "SAME") ** 2).sum()
    same(gpuarr.grad(loss(gpuarr, glax))(img), jax.grad(loss(jax, jlax))(img), exact=False)


def test_broadcast_like():
    for arr, like in [(np.arange(3, dtype=np.int32), np.zeros((2, 3))),
                      (np.zeros((1, 3), np.float32), np.zeros((4, 2, 3))),
                      (np.float32(2), np.zeros((2,)))]:
        same(glax.broadcast_like(arr, like), jlax.broadcast_like(arr, like))
        same(gpuarr.jit(glax.broadcast_like)(arr, like), jlax.broadcast_like(arr, like))
    assert gpuarr.typeof(glax.broadcast_like(1, np.zeros(2))).weak_type
    same(glax.broadcast_like(1, np.zeros(2)), jlax.broadcast_like(1, np.zeros(2)))
    with pytest.raises(ValueError, match=r"input type=int32\[3\] and requested type=int32\[2,4\]"):
        glax.broadcast_like(np.arange(3, dtype=np.int32), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="fewer dimensions"):
        glax.broadcast_like(np.zeros((2, 3)), np.zeros(3))


# ---------------------------------------------------------------- exported primitives


def test_exported_primitives_are_jax_equivalents():
    names = [n for n in dir(jlax) if n.endswith("_p") and hasattr(glax, n)]
    assert len(names) > 120
    renamed = {"scatter_add_p", "scatter_sub_p", "scatter_mul_p", "scatter_min_p", "scatter_max_p"}
    for n in names:
        want = getattr(jlax, n).name
        got = getattr(glax, n).name
        assert got == (want.replace("-", "_") if n in renamed else want), n
    assert glax.cumsum_p is gpuarr.lax.cumulative.cumsum_p
    x = np.arange(4.0, dtype=np.float32)
    assert "sin" in str(gpuarr.make_jaxpr(lambda x: glax.sin_p.bind(x))(x))
    same(glax.sin_p.bind(x), np.sin(x), exact=False)


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge", "is_finite"])
def test_order_comparisons_refuse_complex_as_jax(name):
    z = np.complex64(1 + 2j)
    args = (z,) if name == "is_finite" else (z, z)
    with pytest.raises(TypeError) as want:
        getattr(jax.lax, name)(*args)
    with pytest.raises(TypeError) as got:
        getattr(glax, name)(*args)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal"])
def test_jnp_orders_complex_values_by_real_then_imaginary_part(name):
    import jax.numpy as jjnp
    a = np.array([1 + 2j, 1 + 3j, np.nan, 2 - 1j, 1 + np.nan * 1j, 0j], np.complex64)
    b = np.array([1 + 3j, 1 + 2j, 1, 1 + 5j, 1 + 1j, -0j], np.complex64)
    for fn in (getattr(gnp, name), gpuarr.jit(getattr(gnp, name))):
        got = fn(a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), np.asarray(getattr(jjnp, name)(a, b)))
    assert str(gpuarr.make_jaxpr(getattr(gnp, name))(a, b)) == str(
        jax.make_jaxpr(getattr(jjnp, name))(a, b))


def test_complex_atan2_matches_jax():
    import jax.numpy as jjnp
    y = np.array([1, 1 + 1j, -2 + 0.5j, 0, 3 - 2j, -1e-3j], np.complex64)
    x = np.array([2, 0.5 - 1j, -1, 1, 0, 4 + 1j], np.complex64)
    want = np.asarray(jjnp.arctan2(y, x))
    for fn in (gnp.arctan2, gpuarr.jit(gnp.arctan2), glax.atan2):
        got = fn(y, x)
        assert got.dtype == np.complex64 and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)

    def f(lib):
        return lambda t: lib.arctan2(t * (1 + 0.5j), 2 - 1j * t).real
    np.testing.assert_allclose(gpuarr.grad(f(gnp))(np.float32(0.3)),
                               jax.grad(f(jjnp))(np.float32(0.3)), rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("lt,rt,pet", [
    (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, np.float32),
    (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, None),
    (np.float16, np.float32, None), (np.int8, np.float16, None), (np.int32, np.uint32, None)])
def test_dot_general_of_operands_of_different_types(lt, rt, pet, jit):
    # flax's fp8 ops multiply a float8_e5m2 gradient by a float8_e4m3fn weight.
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4)) * 4).astype(lt)
    y = (rng.standard_normal((4, 2)) * 4).astype(rt)
    dn = (((1,), (0,)), ((), ()))
    check(lambda m, a, b: m.lax.dot_general(a, b, dn, preferred_element_type=pet), x, y, jit=jit)


def test_dot_general_of_two_types_of_equal_rank_is_refused_as_in_jax():
    # Same exponent range, mantissa and width: neither is higher, JAX raises TypeError.
    x, y = np.ones((2, 2), ml_dtypes.float8_e4m3fnuz), np.ones((2, 2), ml_dtypes.float8_e4m3)
    check(lambda m, a, b: m.lax.dot_general(a, b, (((1,), (0,)), ((), ()))), x, y)
