"""lax functions matching JAX's: platform_dependent, approx_max_k/approx_min_k, reduce_precision,
mulhi, rng_bit_generator, rng_uniform, broadcast_like, the conv/reduce_window shape helpers,
conv_general_dilated_patches/_local and the exported primitives, against JAX (values, shapes,
dtypes, error classes), eagerly and under jit, with vmap and grad where JAX has them."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import errors
from gpuarr import lax as glax

jax = pytest.importorskip("jax")
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
