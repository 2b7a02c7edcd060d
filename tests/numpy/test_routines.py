"""jnp miscellany: whole-array comparisons, dtype and shape queries, index helpers, vectorize
and friends, histograms, interpolation, bit packing, windows, polynomials, statistics; against
NumPy (and jax.numpy where JAX differs from NumPy)."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

RNG = np.random.default_rng(2)
A = RNG.normal(size=(3, 4)).astype(np.float32)


def same(out, want, rtol=1e-5, atol=1e-6, dtype=True):
    if isinstance(want, (list, tuple)):
        assert len(out) == len(want)
        for o, w in zip(out, want):
            same(o, w, rtol, atol, dtype)
        return
    out, want = np.asarray(out), np.asarray(want)
    assert out.shape == want.shape, (out.shape, want.shape)
    if dtype:
        assert out.dtype == want.dtype, (out.dtype, want.dtype)
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose_array_equal(equal_nan):
    b = A + np.float32(1e-6)
    b[0, 0] = np.nan
    a = A.copy()
    a[0, 0] = np.nan
    same(jnp.isclose(a, b, equal_nan=equal_nan), np.isclose(a, b, equal_nan=equal_nan))
    assert bool(jnp.allclose(a, b, equal_nan=equal_nan)) == np.allclose(a, b, equal_nan=equal_nan)
    assert bool(jnp.array_equal(a, a, equal_nan=equal_nan)) == np.array_equal(a, a, equal_nan=equal_nan)
    inf = np.array([np.inf, 1.0, -np.inf], np.float32)
    same(jnp.isclose(inf, np.array([np.inf, np.inf, np.inf], np.float32)),
         np.isclose(inf, [np.inf, np.inf, np.inf]))
    same(jnp.isclose(np.arange(3), np.array([0, 2, 2])), np.isclose(np.arange(3), [0, 2, 2]))


def test_array_equal_and_equiv():
    assert not bool(jnp.array_equal(A, A[:2]))
    assert bool(jnp.array_equiv(A[0], np.stack([A[0]] * 3)))
    assert not bool(jnp.array_equiv(A, A[:, :2]))


def test_queries():
    assert jnp.shape([[1, 2]]) == (1, 2) and jnp.ndim(A) == 2 and jnp.size(A, 1) == 4
    assert jnp.size(A) == 12
    assert jnp.isscalar(1.0) and jnp.isscalar(jnp.asarray(1.0)) and not jnp.isscalar(A)
    assert not jnp.iscomplexobj(A) and jnp.isrealobj(A) and jnp.iterable(A)
    assert jnp.can_cast(np.int8, np.int32) and not jnp.can_cast(np.float32, np.int32)
    assert jnp.result_type(np.int8, 1.0) == np.float32
    assert jnp.dtype("float64") == np.float64
    assert jnp.issubdtype(jnp.float32, jnp.floating) and jnp.issubdtype(jnp.int8, jnp.integer)
    assert jnp.isdtype(np.dtype(np.float32), "real floating")
    assert jnp.single == np.float32 and jnp.double == np.float64 and jnp.bool == np.bool_
    assert jnp.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert jnp.iinfo(np.int8).max == 127
    assert jnp.newaxis is None and jnp.pi == np.pi and np.isnan(jnp.nan)
    assert jnp.ndarray is gpuarr.Array
    assert jnp.asarray(1.0).__array_namespace__() is jnp


def test_index_helpers():
    same(jnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3].astype(np.int32))
    same(jnp.ogrid[0:2, 0:3], [g.astype(np.int32) for g in np.ogrid[0:2, 0:3]])
    same(jnp.r_[np.arange(3), 5, 6], np.r_[np.arange(3), 5, 6].astype(np.int32))
    same(jnp.c_[np.arange(3), np.arange(3)], np.c_[np.arange(3), np.arange(3)].astype(np.int32))
    assert jnp.s_[1:2] == np.s_[1:2] and jnp.index_exp[1] == np.index_exp[1]
    same(jnp.diag_indices(3), [i.astype(np.int32) for i in np.diag_indices(3)])
    same(jnp.tril_indices(3, 1, 4), [i.astype(np.int32) for i in np.tril_indices(3, 1, 4)])
    same(jnp.triu_indices_from(np.ones((3, 4)), -1),
         [i.astype(np.int32) for i in np.triu_indices_from(np.ones((3, 4)), -1)])
    same(jnp.mask_indices(3, jnp.triu), [i.astype(np.int32) for i in np.mask_indices(3, np.triu)])
    same(jnp.ix_(np.arange(2), np.arange(3)), np.ix_(np.arange(2), np.arange(3)), dtype=False)
    for shape in [(3, 3), (5, 3), (3, 5), (2, 2, 2)]:
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        want = a.copy()
        np.fill_diagonal(want, [-1.0, -2.0])
        same(jnp.fill_diagonal(a, np.array([-1.0, -2.0], np.float32), inplace=False), want)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.fill_diagonal(A, 0.0)


def test_vectorize_with_a_signature_matches_numpy():
    r = np.random.RandomState(0)
    mv = jnp.vectorize(lambda m, v: m @ v, signature="(n,m),(m)->(n)")
    m, v = r.randn(4, 2, 3).astype(np.float32), r.randn(4, 3).astype(np.float32)
    same(mv(m, v), np.vectorize(lambda a, b: a @ b, signature="(n,m),(m)->(n)")(m, v))
    same(mv(np.ones((2, 3), np.float32), v), v @ np.ones((2, 3), np.float32).T)  # loops over v
    a, b = r.randn(2, 1, 3).astype(np.float32), r.randn(2, 3).astype(np.float32)
    cross = jnp.vectorize(jnp.cross, signature="(k),(k)->(k)")
    same(cross(a, b), np.cross(a, b))
    total, doubled = jnp.vectorize(lambda x: (x.sum(), x * 2), signature="(n)->(),(n)")(b)
    same(total, b.sum(1))
    same(doubled, b * 2)
    same(gpuarr.jit(mv)(m, v), np.einsum("bij,bj->bi", m, v))
    powered = jnp.vectorize(lambda x, p: x ** p, excluded={1}, signature="()->()")
    same(powered(b, 2), b ** 2)
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        mv(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'm'"):
        mv(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="does not match core dimensions"):
        jnp.vectorize(jnp.sum, signature="(n)->(n)")(np.ones(3))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        jnp.vectorize(jnp.sum, signature="(n)->")


def test_vectorize_apply_piecewise():
    f = lambda x, y: x * 2 + y
    same(jnp.vectorize(f)(A, np.float32(1)), f(A, 1))
    same(jnp.frompyfunc(lambda a, b: a * b, 2, 1)(np.arange(3.0), 2.0),
         np.arange(3.0).astype(np.float32) * 2)
    same(jnp.apply_along_axis(lambda v: v.sum() * v[0], 1, A),
         np.apply_along_axis(lambda v: v.sum() * v[0], 1, A), rtol=1e-5)
    same(jnp.apply_along_axis(jnp.sum, 0, A), np.apply_along_axis(np.sum, 0, A))
    same(jnp.apply_over_axes(jnp.sum, A, [0, 1]), np.apply_over_axes(np.sum, A, [0, 1]))
    x = np.linspace(-2, 2, 9).astype(np.float32)
    same(jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 2]),
         np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 2]))
    same(jnp.piecewise(x, [x < 0], [lambda v: -v, 7.0]), np.piecewise(x, [x < 0], [lambda v: -v, 7.0]))


@pytest.mark.parametrize("bins", [5, np.array([-1.0, 0.0, 0.5, 2.0], np.float32)])
def test_histograms(bins):
    d = RNG.normal(size=200).astype(np.float32)
    counts, edges = jnp.histogram(d, bins)
    wc, we = np.histogram(d, bins)
    same(counts, wc.astype(np.float32))
    same(edges, we.astype(np.float32))
    same(jnp.histogram(d, bins, density=True)[0], np.histogram(d, bins, density=True)[0],
         dtype=False, rtol=1e-5)
    same(jnp.histogram(d, 4, range=(-1, 1), weights=np.abs(d))[0],
         np.histogram(d, 4, range=(-1, 1), weights=np.abs(d))[0], dtype=False, rtol=1e-5)
    h, ex, ey = jnp.histogram2d(d, d[::-1], 3)
    wh, wx, wy = np.histogram2d(d, d[::-1], 3)
    same(h, wh, dtype=False)
    same(ex, wx, dtype=False)
    sample = np.stack([d, 2 * d, d[::-1]], 1)
    same(jnp.histogramdd(sample, (2, 3, 4))[0], np.histogramdd(sample, (2, 3, 4))[0], dtype=False)


def test_interp_isin_bits():
    xp = np.array([0.0, 1, 2, 4], np.float32)
    fp = np.array([0.0, 10, 5, 1], np.float32)
    xq = np.linspace(-1, 5, 13).astype(np.float32)
    same(jnp.interp(xq, xp, fp), np.interp(xq, xp, fp).astype(np.float32))
    same(jnp.interp(xq, xp, fp, left=-1, right=99),
         np.interp(xq, xp, fp, left=-1, right=99).astype(np.float32))
    same(jnp.interp(xq, xp, fp, period=3), np.interp(xq, xp, fp, period=3).astype(np.float32))
    same(jnp.isin(np.arange(6).reshape(2, 3), np.array([1, 4, 9])),
         np.isin(np.arange(6).reshape(2, 3), [1, 4, 9]))
    same(jnp.isin(np.arange(6), np.array([1, 4]), invert=True), np.isin(np.arange(6), [1, 4], invert=True))
    bits = np.array([[1, 0, 1, 1, 0, 0, 1, 0, 1, 1], [0] * 10])
    u = np.array([[3, 200], [17, 255]], np.uint8)
    for order in ("big", "little"):
        same(jnp.packbits(bits, bitorder=order), np.packbits(bits, bitorder=order))
        same(jnp.packbits(bits, axis=1, bitorder=order), np.packbits(bits, axis=1, bitorder=order))
        same(jnp.unpackbits(u, bitorder=order), np.unpackbits(u, bitorder=order))
        same(jnp.unpackbits(u, axis=0, count=5, bitorder=order),
             np.unpackbits(u, axis=0, count=5, bitorder=order))
    with pytest.raises(TypeError, match="unsigned byte"):
        jnp.unpackbits(np.arange(3, dtype=np.int32))


@pytest.mark.parametrize("M", [0, 1, 5, 8])
def test_windows(M):
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        same(getattr(jnp, name)(M), getattr(np, name)(M), dtype=False, atol=1e-6)
    same(jnp.kaiser(M, 3.0), np.kaiser(M, 3.0), dtype=False, rtol=1e-5)


def test_polynomials():
    p = np.array([1.0, 2, 3], np.float32)
    q = np.array([4.0, 5], np.float32)
    x = np.linspace(-2, 2, 5).astype(np.float32)
    same(jnp.polyval(p, x), np.polyval(p, x))
    same(jnp.polyadd(p, q), np.polyadd(p, q))
    same(jnp.polysub(q, p), np.polysub(q, p))
    same(jnp.polymul(p, q), np.polymul(p, q))
    same(jnp.polyder(p, 2), np.polyder(p, 2).astype(np.float32))
    same(jnp.polyint(p, 2, k=np.array([1.0, 2.0])), np.polyint(p, 2, k=[1, 2]).astype(np.float32))
    same(jnp.poly(np.array([1.0, 2, 3], np.float32)), np.poly([1.0, 2, 3]).astype(np.float32))
    qq, rr = jnp.polydiv(np.array([1.0, -3, 2, 5], np.float32), np.array([2.0, 1], np.float32))
    wq, wr = np.polydiv([1.0, -3, 2, 5], [2.0, 1])
    same(qq, wq.astype(np.float32))
    same(rr[-len(wr):], wr.astype(np.float32))


def test_statistics_and_calculus():
    m = RNG.normal(size=(3, 6)).astype(np.float32)
    same(jnp.cov(m), np.cov(m).astype(np.float32), rtol=1e-5)
    same(jnp.cov(m, rowvar=False), np.cov(m, rowvar=False).astype(np.float32), rtol=1e-5)
    same(jnp.cov(m[0], m[1]), np.cov(m[0], m[1]).astype(np.float32), rtol=1e-5)
    fw, aw = np.array([1, 2, 1, 1, 3, 1]), np.abs(m[0])
    same(jnp.cov(m, fweights=fw, aweights=aw), np.cov(m, fweights=fw, aweights=aw), dtype=False,
         rtol=1e-5)
    same(jnp.corrcoef(m), np.corrcoef(m).astype(np.float32), rtol=1e-5)
    same(jnp.trapezoid(A), np.trapezoid(A), rtol=1e-5)
    same(jnp.trapezoid(A, dx=0.5, axis=0), np.trapezoid(A, dx=0.5, axis=0), rtol=1e-5)
    xs = np.array([0.0, 1, 3, 4], np.float32)
    same(jnp.trapezoid(A, x=xs), np.trapezoid(A, x=xs), rtol=1e-5)
    same(jnp.gradient(A), np.gradient(A), rtol=1e-5)
    same(jnp.gradient(A, 2.0, axis=1), np.gradient(A, 2.0, axis=1), rtol=1e-5)
    phase = np.cumsum(RNG.normal(size=(2, 20)) * 2, axis=1).astype(np.float32)
    same(jnp.unwrap(np.mod(phase, 2 * np.pi)), np.unwrap(np.mod(phase, 2 * np.pi)), rtol=1e-4,
         atol=1e-4)


def test_misc_dtypes_match_jax():
    jax = pytest.importorskip("jax")
    cases = [("isclose", (A, A)), ("allclose", (A, A)), ("array_equal", (A, A)),
             ("cov", (A,)), ("corrcoef", (A,)), ("kaiser", (4, 2.0)), ("hanning", (4,)),
             ("interp", (A[0], np.arange(4.0, dtype=np.float32), A[1])),
             ("polyval", (np.arange(3), np.arange(4))), ("isin", (np.arange(3), np.arange(2))),
             ("packbits", (np.arange(9) % 2,)), ("gradient", (A[0],)), ("trapezoid", (A,))]
    for name, args in cases:
        want = jax.eval_shape(lambda: getattr(jax.numpy, name)(*args))
        got = getattr(jnp, name)(*args)
        assert (got.dtype, got.shape) == (want.dtype, want.shape), name


def test_jit_and_grad_through_misc():
    f = lambda x: jnp.sum(jnp.interp(x, np.array([0.0, 1, 2], np.float32),
                                     np.array([0.0, 2, 3], np.float32)))
    x = np.array([0.5, 1.5], np.float32)
    same(gpuarr.jit(f)(x), f(x))
    same(gpuarr.grad(f)(x), np.array([2.0, 1.0], np.float32))
    out = gpuarr.jit(lambda a: jnp.cov(a))(A)
    same(out, np.cov(A).astype(np.float32), rtol=1e-5)


def test_unsupported_arguments_raise():
    with pytest.raises(NotImplementedError, match="in-place"):
        jnp.copyto(A, A)
    with pytest.raises(NotImplementedError):
        jnp.fromfile("x")
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.isclose([1.0], A)


@pytest.mark.parametrize("method", ["auto", "sort", "compare_all", "binary_search"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_isin_methods_agree_with_numpy(method, dtype):
    rng = np.random.default_rng(3)
    element = rng.integers(0, 50, (30, 40)).astype(dtype)
    tests = rng.integers(0, 60, 900).astype(dtype)  # 1.08M pairs: "auto" sorts
    want = np.isin(element, tests)
    for invert in (False, True):
        got = jnp.isin(element, tests, invert=invert, method=method)
        assert got.shape == want.shape and got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), want ^ invert)
    jitted = gpuarr.jit(lambda e, t: jnp.isin(e, t, method=method))(element, tests)
    np.testing.assert_array_equal(np.asarray(jitted), want)
    nan_case = jnp.isin(np.array([1.0, np.nan, 2.0]), np.array([np.nan, 2.0]), method=method)
    np.testing.assert_array_equal(np.asarray(nan_case), [False, False, True])


def test_isin_rejects_unknown_methods():
    with pytest.raises(ValueError, match="unknown method"):
        jnp.isin(np.arange(3), np.arange(2), method="hash")


def test_numpy_rank_promotion_option():
    """jax_numpy_rank_promotion: 'allow' broadcasts (3,) against (2, 3), 'warn' warns, 'raise'
    raises ValueError, eagerly and under jit; rank 0 and size-1 axes of equal rank are fine."""
    row, grid = np.ones(3, np.float32), np.ones((2, 3), np.float32)
    same(jnp.add(row, grid), row + grid)
    with gpuarr.numpy_rank_promotion("raise"):
        same(jnp.multiply(grid, 2.0), grid * 2)
        same(jnp.subtract(grid, row[None]), grid - row[None])
        for fn in (jnp.add, gpuarr.jit(jnp.add)):
            with pytest.raises(ValueError, match=r"Operands could not be broadcast together for "
                                                 r"add on shapes \(3,\) \(2, 3\) and with the "
                                                 r"config option jax_numpy_rank_promotion='raise'"):
                fn(row, grid)
    with gpuarr.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match=r"Following NumPy automatic rank promotion for "
                                             r"multiply on shapes \(3,\) \(2, 3\)"):
            same(jnp.multiply(row, grid), row * grid)
    assert gpuarr.numpy_rank_promotion.value == "allow"
    same(gpuarr.jit(jnp.add)(row, grid), row + grid)  # traced again, not the cached error
    with pytest.raises(ValueError, match="new enum value must be in"):
        gpuarr.config.update("jax_numpy_rank_promotion", "sometimes")
