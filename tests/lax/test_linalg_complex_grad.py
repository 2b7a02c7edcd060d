"""Derivatives of the linear-algebra primitives for complex inputs, against JAX and finite
differences.

Each case maps (lax.linalg module, numpy module, *args) to outputs, so one body runs in JAX and
here. JVPs are compared with JAX's (under jax.jit, which compiles faster than op by op) for the
same inputs and tangents, and gradients of a real-valued loss likewise (values, shapes and
dtypes), in complex128 (x64 on in both) and complex64; `check_grads` checks both modes against
finite differences. Singular and eigenvectors are only defined up to a phase per column, so
those cases differentiate |U|, |V|, which do not depend on it.
"""
import re

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import tree_util
from gpuarr.lax import linalg as lax_linalg

TOL = {np.complex128: 1e-8, np.complex64: 5e-3}


def crand(shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def hpd(shape, dtype=np.complex128, seed=0):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = crand(shape, np.complex128, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def tri(shape, dtype=np.complex128, seed=0):
    """Well-conditioned triangular operands (both triangles are filled; one is read)."""
    return (crand(shape, np.complex128, seed) + 4 * np.eye(shape[-1])).astype(dtype)


def singular(shape, dtype, seed, rank):
    """Matrices of exactly the given rank whichever LU computes it: n - rank rows are zero, from
    the second on where rank > 0 (so every pivot from them, and every product in the closed
    forms, is an exact zero)."""
    a = crand(shape, dtype, seed)
    start = min(rank, 1)
    a[..., start:start + shape[-1] - rank, :] = 0
    return a


# ---------------------------------------------------------------- cases

TRI_KWS = [dict(left_side=True, lower=True),
           dict(left_side=True, lower=False, transpose_a=True),
           dict(left_side=True, lower=True, transpose_a=True, conjugate_a=True),
           dict(left_side=False, lower=True, conjugate_a=True),
           dict(left_side=False, lower=False, transpose_a=True, conjugate_a=True),
           dict(left_side=False, lower=True, unit_diagonal=True)]


def _tri_case(kw):
    b_shape = (2, 3, 2) if kw["left_side"] else (2, 2, 3)
    return (lambda lin, np_, a, b: lin.triangular_solve(a, b, **kw),
            lambda dt: (tri((2, 3, 3), dt, 1), crand(b_shape, dt, 2)))


def _svd_phase_free(lin, np_, x):
    """s with |U| and |Vh|: a phase per singular-vector pair changes none of them."""
    u, s, vh = lin.svd(x, full_matrices=False)
    return np_.abs(u), s, np_.abs(vh)


CASES = {
    "cholesky": (lambda lin, np_, x: lin.cholesky(x), lambda dt: (hpd((2, 3, 3), dt),)),
    **{"triangular_solve-" + "-".join(k for k, v in kw.items() if v): _tri_case(kw)
       for kw in TRI_KWS},
    "lu-square": (lambda lin, np_, x: lin.lu(x)[0], lambda dt: (crand((2, 3, 3), dt, 3),)),
    "lu-wide": (lambda lin, np_, x: lin.lu(x)[0], lambda dt: (crand((3, 4), dt, 4),)),
    "lu-tall": (lambda lin, np_, x: lin.lu(x)[0], lambda dt: (crand((4, 3), dt, 5),)),
    "qr-tall-full": (lambda lin, np_, x: lin.qr(x), lambda dt: (crand((4, 3), dt, 6),)),
    "qr-tall-reduced": (lambda lin, np_, x: lin.qr(x, full_matrices=False),
                        lambda dt: (crand((2, 4, 3), dt, 7),)),
    "qr-wide": (lambda lin, np_, x: lin.qr(x), lambda dt: (crand((3, 4), dt, 8),)),
    "qr-square": (lambda lin, np_, x: lin.qr(x), lambda dt: (crand((3, 3), dt, 9),)),
    "svd-values-tall": (lambda lin, np_, x: lin.svd(x, compute_uv=False),
                        lambda dt: (crand((2, 4, 3), dt, 10),)),
    "svd-values-wide": (lambda lin, np_, x: lin.svd(x, compute_uv=False),
                        lambda dt: (crand((3, 4), dt, 11),)),
    **{f"svd-uv-{name}": (_svd_phase_free, lambda dt, shape=shape: (crand(shape, dt, 12),))
       for name, shape in [("tall", (4, 3)), ("wide", (3, 4)), ("square", (2, 3, 3))]},
    "eigh-values": (lambda lin, np_, x: lin.eigh(x)[1], lambda dt: (hpd((2, 3, 3), dt, 13),)),
    "eigh-vectors": (lambda lin, np_, x: np_.abs(lin.eigh(x)[0]),
                     lambda dt: (hpd((3, 3), dt, 14),)),
    "inv": (lambda lin, np_, x: np_.linalg.inv(x), lambda dt: (crand((2, 3, 3), dt, 15),)),
    "solve": (lambda lin, np_, a, b: np_.linalg.solve(a, b),
              lambda dt: (crand((3, 3), dt, 16), crand((3, 2), dt, 17))),
    # det: closed forms up to 3x3, LU with the adjugate JVP beyond; slogdet: closed forms up
    # to 2x2, LU beyond.
    **{f"det-{n}x{n}": (lambda lin, np_, x: np_.linalg.det(x),
                        lambda dt, n=n: (crand((2, n, n), dt, 18 + n),)) for n in (1, 2, 3, 4)},
    "det-singular": (lambda lin, np_, x: np_.linalg.det(x),
                     lambda dt: (singular((2, 4, 4), dt, 23, rank=3),)),
    "det-rank-2": (lambda lin, np_, x: np_.linalg.det(x),
                   lambda dt: (singular((4, 4), dt, 24, rank=2),)),
    **{f"slogdet-{n}x{n}": (lambda lin, np_, x: tuple(np_.linalg.slogdet(x)),
                            lambda dt, n=n: (crand((2, n, n), dt, 25 + n),)) for n in (1, 2, 3, 5)},
}

ALL_CASES = [pytest.param(name, id=name) for name in CASES]


def _case(name):
    return CASES[name]


def _loss(np_, outs):
    """A real-valued function of every output, depending on both parts of complex ones."""
    total = 0.0
    for o in tree_util.tree_leaves(outs):
        total = total + np_.sum(np_.abs(o) ** 2) + np_.sum(np_.real(o * (0.3 - 0.7j)))
    return total


# ---------------------------------------------------------------- against JAX


@pytest.fixture(params=[np.complex128, np.complex64], ids=["c128", "c64"])
def dtype(request):
    """The input dtype, with 64-bit types enabled (for complex128) in JAX and here alike."""
    jax_ref = pytest.importorskip("jax")
    x64 = request.param == np.complex128
    old = bool(jax_ref.config.jax_enable_x64)
    jax_ref.config.update("jax_enable_x64", x64)
    try:
        with gpuarr.enable_x64(x64):
            yield request.param
    finally:
        jax_ref.config.update("jax_enable_x64", old)


def _modules():
    import jax
    import jax.numpy as ref_jnp
    return jax, jax.lax.linalg, ref_jnp


def _assert_same(got, want, dtype):
    got_leaves, want_leaves = tree_util.tree_leaves(got), tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("name", ALL_CASES)
def test_jvp_matches_jax(name, dtype):
    jax, ref_lin, ref_jnp = _modules()
    fn, make = _case(name)
    args = make(dtype)
    tangents = tuple(crand(np.shape(a), dtype, 100 + i) for i, a in enumerate(args))
    got = gpuarr.jvp(lambda *xs: fn(lax_linalg, jnp, *xs), args, tangents)
    want = jax.jit(lambda xs, ts: jax.jvp(lambda *a: fn(ref_lin, ref_jnp, *a), xs, ts))(
        args, tangents)
    _assert_same(got, want, dtype)


@pytest.mark.parametrize("name", ALL_CASES)
def test_grad_matches_jax(name, dtype):
    jax, ref_lin, ref_jnp = _modules()
    fn, make = _case(name)
    args = make(dtype)
    argnums = tuple(range(len(args)))
    got = gpuarr.grad(lambda *xs: _loss(jnp, fn(lax_linalg, jnp, *xs)), argnums)(*args)
    want = jax.jit(jax.grad(lambda *xs: _loss(ref_jnp, fn(ref_lin, ref_jnp, *xs)), argnums))(
        *args)
    _assert_same(got, want, dtype)


def test_symmetrized_inputs_match_jax(dtype):
    _, ref_lin, _ = _modules()
    # Not Hermitian: symmetrizing averages the triangles and drops the imaginary diagonal.
    x = hpd((2, 3, 3), dtype, 20) + crand((2, 3, 3), dtype, 21) * 0.1
    _assert_same(lax_linalg.symmetrize(x), (x + np.conj(np.swapaxes(x, -1, -2))) / 2, dtype)
    _assert_same(lax_linalg.cholesky(x), ref_lin.cholesky(x), dtype)
    _assert_same(lax_linalg.eigh(x)[1], ref_lin.eigh(x)[1], dtype)


def test_lu_pivots_match_jax(dtype):
    # LAPACK pivots on |Re| + |Im|, not on the modulus.
    _, ref_lin, _ = _modules()
    x = crand((3, 5, 4), dtype, 24)
    got, want = lax_linalg.lu(x), ref_lin.lu(x)
    for g, w in zip(got[1:], want[1:]):
        assert g.dtype == w.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    _assert_same(got[0], want[0], dtype)


def test_svd_full_matrices_jvp_raises_like_jax(dtype):
    jax, ref_lin, _ = _modules()
    x, t = crand((4, 3), dtype, 21), crand((4, 3), dtype, 22)
    message = "Singular value decomposition JVP not implemented for full matrices"
    with pytest.raises(NotImplementedError, match=message):
        jax.jvp(lambda a: ref_lin.svd(a, full_matrices=True), (x,), (t,))
    with pytest.raises(NotImplementedError, match=message):
        gpuarr.jvp(lambda a: lax_linalg.svd(a, full_matrices=True), (x,), (t,))


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (4, 4), (2, 5, 5), (2, 3, 2, 2)],
                         ids=lambda s: "x".join(map(str, s)))
def test_det_slogdet_values_match_jax_and_numpy(shape, dtype):
    _, _, ref_jnp = _modules()
    x = crand(shape, dtype, 30)
    det, (sign, logabsdet) = jnp.linalg.det(x), jnp.linalg.slogdet(x)
    _assert_same(det, ref_jnp.linalg.det(x), dtype)
    _assert_same((sign, logabsdet), tuple(ref_jnp.linalg.slogdet(x)), dtype)
    assert sign.dtype == dtype and logabsdet.dtype == np.finfo(dtype).dtype
    want_sign, want_logabsdet = np.linalg.slogdet(x.astype(np.complex128))
    tol = dict(rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(np.asarray(det), np.linalg.det(x.astype(np.complex128)), **tol)
    np.testing.assert_allclose(np.asarray(sign), want_sign, **tol)
    np.testing.assert_allclose(np.asarray(logabsdet), want_logabsdet, **tol)
    np.testing.assert_allclose(np.abs(np.asarray(sign)), 1, **tol)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_singular_det_slogdet(n, dtype):
    _, _, ref_jnp = _modules()
    for x in [np.zeros((2, n, n), dtype), singular((2, n, n), dtype, 31, rank=n - 1)]:
        det, (sign, logabsdet) = jnp.linalg.det(x), jnp.linalg.slogdet(x)
        np.testing.assert_array_equal(np.asarray(det), np.zeros(2, dtype))
        np.testing.assert_array_equal(np.asarray(sign), np.zeros(2, dtype))
        np.testing.assert_array_equal(np.asarray(logabsdet), np.full(2, -np.inf))
        _assert_same((det, sign, logabsdet), (ref_jnp.linalg.det(x), *ref_jnp.linalg.slogdet(x)),
                     dtype)
        _assert_same((sign, logabsdet), tuple(np.linalg.slogdet(x)), dtype)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_jit_and_vmap_of_det_slogdet(n):
    x = crand((3, n, n), np.complex128, 32)
    with gpuarr.enable_x64():
        def outs(m):
            return (jnp.linalg.det(m), *jnp.linalg.slogdet(m))

        def loss(m):
            return _loss(jnp, outs(m))
        looped = [np.stack([np.asarray(o) for o in per]) for per in zip(*map(outs, x))]
        for got in (gpuarr.jit(outs)(x), gpuarr.vmap(outs)(x), gpuarr.jit(gpuarr.vmap(outs))(x)):
            _assert_same(got, looped, np.complex128)
        grads = np.stack([np.asarray(gpuarr.grad(loss)(m)) for m in x])
        _assert_same(gpuarr.jit(gpuarr.vmap(gpuarr.grad(loss)))(x), grads, np.complex128)


def test_slogdet_method_like_jax():
    _, _, ref_jnp = _modules()
    x = crand((2, 3, 3), np.complex64, 33)
    _assert_same(tuple(jnp.linalg.slogdet(x, method="lu")), tuple(jnp.linalg.slogdet(x)),
                 np.complex64)
    for np_ in (ref_jnp, jnp):
        with pytest.raises(NotImplementedError, match="method='qr' not implemented for complex"):
            np_.linalg.slogdet(x, method="qr")
        with pytest.raises(ValueError, match="Unknown slogdet method 'bogus'"):
            np_.linalg.slogdet(x, method="bogus")


# ---------------------------------------------------------------- finite differences


@pytest.mark.parametrize("name", ALL_CASES)
def test_check_grads(name):
    fn, make = _case(name)
    check_grads_x64(lambda *xs: fn(lax_linalg, jnp, *xs), make(np.complex128), order=1,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["cholesky", "triangular_solve-left_side-lower-transpose_a-"
                                  "conjugate_a", "lu-square", "qr-square", "eigh-values",
                                  "det-2x2", "det-4x4", "slogdet-2x2", "slogdet-3x3"])
def test_check_grads_second_order(name):
    fn, make = _case(name)
    check_grads_x64(lambda *xs: fn(lax_linalg, jnp, *xs), make(np.complex128), order=2,
                modes=("fwd", "rev"))


def test_jit_and_vmap_of_complex_grad():
    x = hpd((2, 3, 3), np.complex128, 23)
    with gpuarr.enable_x64():
        def loss(m):
            return jnp.sum(jnp.abs(lax_linalg.cholesky(m)) ** 2)
        batched = gpuarr.jit(gpuarr.grad(lambda xs: jnp.sum(gpuarr.vmap(loss)(xs))))(x)
        looped = np.stack([np.asarray(gpuarr.grad(loss)(m)) for m in x])
        assert batched.dtype == np.complex128 and batched.shape == x.shape
        np.testing.assert_allclose(np.asarray(batched), looped, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_real_inputs_take_no_complex_steps(name):
    # The complex rules only add conjugations and casts where the input is complex.
    fn, make = CASES[name]
    args = tuple(np.real(a).astype(np.float32) for a in make(np.complex64))
    if name.startswith(("cholesky", "eigh")):
        args = tuple(a + 3 * np.eye(a.shape[-1], dtype=np.float32) for a in args)
    argnums = tuple(range(len(args)))
    def loss(*xs):
        return sum(jnp.sum(o ** 2) for o in tree_util.tree_leaves(fn(lax_linalg, jnp, *xs)))
    jaxpr = str(gpuarr.make_jaxpr(gpuarr.grad(loss, argnums))(*args))
    assert "= conj[" not in jaxpr and not re.search(r"\bc(64|128)\[", jaxpr), jaxpr
