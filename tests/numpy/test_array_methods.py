"""Array methods and operators mirror the jnp functions, eagerly and on tracers (jit, vmap)."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def same(out, want):
    out, want = np.asarray(out), np.asarray(want)
    assert out.shape == want.shape and out.dtype == want.dtype, (out.shape, want.shape,
                                                                 out.dtype, want.dtype)
    np.testing.assert_allclose(out, want, rtol=1e-6)


METHODS = [
    ("sum", (), {"axis": 1}), ("prod", (), {"axis": -1}), ("mean", (), {}),
    ("std", (), {"ddof": 1}), ("var", (), {"axis": 0}), ("max", (), {"axis": 2}),
    ("min", (), {}), ("argmax", (), {"axis": 1}), ("argmin", (), {}), ("ptp", (), {"axis": 0}),
    ("all", (), {}), ("any", (), {"axis": 0}), ("clip", (-3, 5), {}), ("round", (), {}),
    ("flatten", (), {}), ("ravel", (), {}), ("reshape", ((4, 6),), {}), ("reshape", (4, -1), {}),
    ("transpose", ((2, 0, 1),), {}), ("transpose", (), {}), ("swapaxes", (0, 2), {}),
    ("repeat", (2,), {"axis": 1}), ("diagonal", (), {"axis1": 1, "axis2": 2}),
    ("trace", (), {"axis1": 1, "axis2": 2}), ("cumsum", (), {"axis": 1}), ("conj", (), {}),
    ("astype", (np.int16,), {}), ("copy", (), {}),
]


# Known bugs outside gpuarr.numpy that break these methods under jit only.
JIT_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("name,args,kwargs", METHODS, ids=[m[0] for m in METHODS])
def test_methods_match_numpy_methods(name, args, kwargs):
    x = jnp.asarray(X)
    want = getattr(np, name)(X, *args, **kwargs) if name == "ptp" else \
        getattr(X, name)(*args, **kwargs)
    if name in ("argmax", "argmin"):
        want = want.astype(np.int32)
    if name in ("var", "std", "mean") or name == "round":
        want = want.astype(np.float32)
    same(getattr(x, name)(*args, **kwargs), want)
    try:
        traced = gpuarr.jit(lambda v: getattr(v, name)(*args, **kwargs))(x)
    except TypeError:
        if name in JIT_XFAIL:
            pytest.xfail(JIT_XFAIL[name])
        raise
    same(traced, want)


def test_squeeze_item_and_properties():
    x = jnp.asarray(X[:1, :, :1])
    same(x.squeeze(), X[:1, :, :1].squeeze())
    same(x.squeeze(axis=0), X[:1, :, :1].squeeze(axis=0))
    same(jnp.asarray(X).T, X.T)
    same(jnp.asarray(X).mT, np.swapaxes(X, -1, -2))
    same(jnp.asarray(X).real, X)
    same(jnp.asarray(X).imag, np.zeros_like(X))
    assert jnp.asarray(X)[1, 2, 3].item() == X[1, 2, 3]
    assert 5.0 in jnp.asarray(X) and 99.0 not in jnp.asarray(X)


def test_operators():
    x = jnp.asarray(np.array([-7, -3, 4, 9], np.int32))
    y = np.array([2, -2, 3, 4], np.int32)
    q, r = divmod(x, y)
    same(q, np.floor_divide(np.asarray(x), y))
    same(r, np.remainder(np.asarray(x), y))
    same(x << 2, np.asarray(x) << 2)
    same(x >> 1, np.asarray(x) >> 1)
    same(1 << jnp.asarray(np.arange(3, dtype=np.int32)), 1 << np.arange(3, dtype=np.int32))
    same(round(jnp.asarray(np.float32(2.5))), np.float32(2.0))
    same(x.view(np.uint32), np.asarray(x).view(np.uint32))
    same(jnp.asarray(np.float32(1.0)).view(np.int32), np.float32(1.0).view(np.int32))


def test_methods_under_vmap_match_loop():
    f = lambda v: v.reshape(4, 3).ptp(axis=0) + v.std()
    out = gpuarr.vmap(f)(X)
    loop = np.stack([np.asarray(f(jnp.asarray(v))) for v in X])
    np.testing.assert_allclose(out, loop, rtol=1e-6)


def test_array_namespace():
    assert jnp.asarray(X).__array_namespace__() is jnp


def test_complex_methods_and_parts():
    z = np.array([3 + 4j, 1 - 2j], np.complex64)
    a = jnp.asarray(z)
    for name in ("real", "imag"):
        got, want = getattr(a, name), getattr(z, name)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), want)
    for name in ("conj", "conjugate"):
        got = getattr(a, name)()
        assert got.dtype == np.complex64
        np.testing.assert_array_equal(np.asarray(got), z.conj())
    assert jnp.abs(a).dtype == np.float32
    np.testing.assert_allclose(np.asarray(jnp.abs(a)), np.abs(z), rtol=1e-6)
