"""Polynomial helpers, piecewise, mask_indices and shape queries against JAX itself."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gjnp

jax = pytest.importorskip("jax")
jjnp = jax.numpy


def _call(mod, fn):
    lib, np_ = mod
    try:
        return "ok", fn(lib, np_)
    except Exception as e:  # noqa: BLE001  (the exception itself is compared)
        return "err", e


def _same(a, b, rtol):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, rtol)
        return
    if not hasattr(b, "dtype"):
        assert a == b
        return
    assert a.shape == b.shape
    assert np.dtype(a.dtype) == np.dtype(b.dtype)
    assert a.weak_type == b.weak_type
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol)


def check(fn, rtol=1e-6, first_line_only=False):
    """Run fn(lib, jnp) through gpuarr and JAX; compare results or exceptions."""
    gk, g = _call((gpuarr, gjnp), fn)
    jk, j = _call((jax, jjnp), fn)
    assert gk == jk, f"gpuarr {gk}: {g!r}\nJAX {jk}: {j!r}"
    if gk == "ok":
        _same(g, j, rtol)
        return
    assert type(g).__name__ == type(j).__name__
    gm, jm = str(g), str(j)
    if first_line_only:
        gm, jm = gm.split("\n")[0], jm.split("\n")[0]
    assert gm == jm


# ---------------------------------------------------------------- mask_indices


@pytest.mark.parametrize("size", [None, 10, 2])
def test_mask_indices_size(size):
    check(lambda lib, jnp: jnp.mask_indices(3, jnp.triu, size=size))


def test_mask_indices_non_2d_mask_fails():
    check(lambda lib, jnp: jnp.mask_indices(3, jnp.diag))


# ---------------------------------------------------------------- poly


@pytest.mark.parametrize("z", [
    [[1.0, 2.0], [3.0, 4.0]],
    2.0,
    np.float32(2.5),
    [],
    [1, 2],
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
    np.zeros((0, 0), np.float32),
])
def test_poly(z):
    check(lambda lib, jnp: jnp.poly(jnp.asarray(z)), rtol=1e-5)


def test_poly_matrix_under_jit():
    check(lambda lib, jnp: lib.jit(jnp.poly)(jnp.array([[1.0, 2], [3, 4]])), rtol=1e-5)


# ---------------------------------------------------------------- polymul


def test_polymul_trim_leading_zeros():
    check(lambda lib, jnp: jnp.polymul(jnp.array([0.0, 0, 1, 2]), jnp.array([0.0, 3]),
                                       trim_leading_zeros=True))
    check(lambda lib, jnp: jnp.polymul(jnp.array([0.0, 0]), jnp.array([0.0, 0]),
                                       trim_leading_zeros=True))


def test_polymul_trim_under_jit_fails():
    f = (lambda lib, jnp: lib.jit(lambda a, b: jnp.polymul(a, b, trim_leading_zeros=True))(
        jnp.array([0.0, 0, 1, 2]), jnp.array([0.0, 3])))
    check(f, first_line_only=True)


def test_polydiv_trim_under_jit_fails():
    f = (lambda lib, jnp: lib.jit(lambda a, b: jnp.polydiv(a, b, trim_leading_zeros=True))(
        jnp.array([1.0, 2, 3]), jnp.array([0.0, 1])))
    check(f, first_line_only=True)


def test_polymul_empty():
    check(lambda lib, jnp: jnp.polymul(jnp.zeros(0), jnp.array([1.0, -2, 3])))
    check(lambda lib, jnp: jnp.polymul(jnp.array([1.0, -2, 3]), jnp.zeros(0)))


# ---------------------------------------------------------------- piecewise

_X = np.array([-2.43, -3.07, 0.77], np.float32)


@pytest.mark.parametrize("jit", [False, True])
def test_piecewise_list_condlist(jit):
    def f(lib, jnp):
        g = lambda x: jnp.piecewise(x, [[True, False, True]], [5])  # noqa: E731
        return (lib.jit(g) if jit else g)(jnp.asarray(_X))
    check(f)


def test_piecewise_errors():
    x = np.ones((2, 3), np.float32)
    check(lambda lib, jnp: jnp.piecewise(jnp.asarray(x), [], [5]))
    check(lambda lib, jnp: jnp.piecewise(jnp.asarray(x), [jnp.asarray(x) < 0], [1, 2, 3]))
    check(lambda lib, jnp: jnp.piecewise(jnp.asarray(x), [jnp.asarray(x) < 0],
                                         [lambda v: jnp.ones(3)]), first_line_only=True)


def test_piecewise_values():
    check(lambda lib, jnp: jnp.piecewise(jnp.arange(4), jnp.array([False, True]),
                                         [lambda x: x * 10, lambda x: x * 100]))
    check(lambda lib, jnp: jnp.piecewise(jnp.arange(4.0), [jnp.arange(4) > 1],
                                         [lambda x, a: x * a, 7], 3.0))


# ---------------------------------------------------------------- polyint / polyder

_P = np.array([-1.19, -1.67, -0.85, -1.43], np.float32)


def test_polyint_complex_constant():
    check(lambda lib, jnp: jnp.polyint(jnp.array([1.0, 2, 3]), k=1j))


def test_polyint_traced_constant():
    check(lambda lib, jnp: lib.jit(lambda a, k: jnp.polyint(a, k=k))(
        jnp.array([1.0, 2, 3]), jnp.array(2.0)))


def test_polyint_bad_k_and_m():
    check(lambda lib, jnp: jnp.polyint(jnp.asarray(_P), k=jnp.array([1.0, 2])))
    check(lambda lib, jnp: jnp.polyint(jnp.asarray(_P), -1))
    check(lambda lib, jnp: jnp.polyint(jnp.ones((2, 2))))


def test_polyder_2d():
    check(lambda lib, jnp: jnp.polyder(jnp.array([[1.0, 2], [3, 4]])))


@pytest.mark.parametrize("name", ["polyder", "polyint"])
def test_poly_order_must_be_static_int(name):
    check(lambda lib, jnp: getattr(jnp, name)(jnp.asarray(_P), 1.5))
    # The message names each library's own array class, so compare up to it.
    with pytest.raises(ValueError) as want:
        getattr(jjnp, name)(jjnp.asarray(_P), jjnp.array(1))
    with pytest.raises(ValueError) as got:
        getattr(gjnp, name)(gjnp.asarray(_P), gjnp.array(1))
    assert str(got.value).split("<class")[0] == str(want.value).split("<class")[0]


@pytest.mark.parametrize("m", [0, 1, 2, 3, 5])
def test_polyder_polyint_orders(m):
    check(lambda lib, jnp: jnp.polyder(jnp.array([2, -5, 3, -1]), m))
    check(lambda lib, jnp: jnp.polyint(jnp.array([12, 12, 6]), m), rtol=1e-5)


# ---------------------------------------------------------------- polyval


@pytest.mark.parametrize("jit", [False, True])
def test_polyval_not_weak(jit):
    def f(lib, jnp):
        g = lambda p: jnp.polyval(p, 2.5)  # noqa: E731
        return (lib.jit(g) if jit else g)(jnp.array([-3, 2, -4]))
    check(f)


def test_polyval_shapes():
    check(lambda lib, jnp: jnp.polyval(jnp.ones((3, 2)), jnp.ones(2)))
    check(lambda lib, jnp: jnp.polyval(jnp.ones((2, 2)), jnp.ones(3)))


# ---------------------------------------------------------------- shape queries


def test_shape_queries_of_shape_dtype_struct():
    check(lambda lib, jnp: jnp.ndim(lib.ShapeDtypeStruct((2, 3), jnp.float32)))
    check(lambda lib, jnp: jnp.shape(lib.ShapeDtypeStruct((2, 3), jnp.float32)))
    with pytest.warns(DeprecationWarning):
        want = jjnp.size(jax.ShapeDtypeStruct((2, 3), jjnp.float32), 1)
    assert gjnp.size(gpuarr.ShapeDtypeStruct((2, 3), gjnp.float32), 1) == want
    assert gjnp.size(gpuarr.ShapeDtypeStruct((2, 3), gjnp.float32)) == 6


def test_size_axis_tuple():
    check(lambda lib, jnp: jnp.size(jnp.ones((2, 3, 4)), (0, 2)))


# ---------------------------------------------------------------- polyadd / polysub


@pytest.mark.parametrize("name", ["polyadd", "polysub"])
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("a, b", [
    (np.array([False, True, False]), np.array([False, False])),
    (np.zeros(0, np.float32), np.array([2.52, -1.0, -0.85], np.float32)),
    (np.array([2.52, -1.0, -0.85], np.float32), np.zeros(0, np.float32)),
    (np.ones((2, 2), np.float32), np.array([2.52, -1.0, -0.85], np.float32)),
    (np.ones((3, 2), np.float32), np.ones((2, 3), np.float32)),
    (np.array([[2, 3, 1]]), np.array([[5, 7, 3], [8, 2, 6]])),
    (np.array([[5, 7, 9], [8, 6, 4]]), np.array([2])),
    (np.array([2, 3]), np.array([5, 4, 1.0])),
])
def test_polyadd_polysub(name, jit, a, b):
    def f(lib, jnp):
        g = getattr(jnp, name)
        return (lib.jit(g) if jit else g)(jnp.asarray(a), jnp.asarray(b))
    check(f)
