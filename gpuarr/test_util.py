"""Gradient checking by finite differences (jax.test_util.check_grads).

`check_grads` compares forward mode (jvp) with central differences, and reverse mode (vjp)
with forward mode through the identity <ct, J t> = <J^T ct, t>, recursively up to `order`.
It runs with 64-bit types enabled and floating-point arguments cast to float64, so the
finite differences are accurate even for functions written for float32.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from gpuarr import ad_api, dtypes, pytrees
from gpuarr.config import enable_x64

__all__ = ["check_close", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

# Tolerances by dtype, as jax's default_gradient_tolerance.
_default_tolerance = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3, np.dtype(np.complex128): 1e-5,
}


def _inexact(x) -> bool:
    dt = np.result_type(getattr(x, "dtype", np.asarray(x).dtype))
    return dtypes.is_float(dt) or dtypes.is_complex(dt)


def _tol(tol, x):
    if tol is not None:
        return tol
    dt = np.asarray(x).dtype
    return _default_tolerance.get(dt, 1e-5)


def _rand_like(rng, x):
    """A random tangent for `x`: normal values for floats, float0 zeros otherwise."""
    shape = np.shape(x)
    if not _inexact(x):
        return np.zeros(shape, dtypes.float0)
    dt = np.asarray(x).dtype
    val = rng.standard_normal(shape)
    if dtypes.is_complex(dt):
        val = val + 1j * rng.standard_normal(shape)
    return np.asarray(val, dt)


def _axpy(a, x, y):
    """y + a * x on the inexact leaves; other leaves keep y's value."""
    return pytrees.tree_map(
        lambda xi, yi: (np.asarray(yi) + a * np.asarray(xi)).astype(np.asarray(yi).dtype)
        if _inexact(yi) else yi, x, y)


def numerical_jvp(f, primals, tangent, eps=EPS):
    """(f(x + eps t) - f(x - eps t)) / (2 eps), leaf by leaf over `f`'s outputs."""
    f_pos = f(*_axpy(eps, tangent, primals))
    f_neg = f(*_axpy(-eps, tangent, primals))
    return pytrees.tree_map(
        lambda p, n: (np.asarray(p) - np.asarray(n)) * (0.5 / eps) if _inexact(p)
        else np.zeros(np.shape(p), dtypes.float0), f_pos, f_neg)


def _inner_prod(xs, ys):
    """Re <x, y> summed over leaves: the real inner product under which a VJP is the adjoint
    of the JVP, also for functions between real and complex spaces."""
    total = 0.0
    for x, y in zip(pytrees.tree_leaves(xs), pytrees.tree_leaves(ys), strict=True):
        if _inexact(x) and _inexact(y):
            x, y = np.asarray(x).astype(np.complex128), np.asarray(y).astype(np.complex128)
            total = total + np.real(np.vdot(x.ravel(), y.ravel()))
    return total


def _conj(tree):
    return pytrees.tree_map(lambda x: np.conj(x) if _inexact(x) else x, tree)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    """Assert two pytrees of arrays are equal in structure and close in value."""
    xl, xt = pytrees.tree_flatten(xs)
    yl, yt = pytrees.tree_flatten(ys)
    if xt != yt:
        raise AssertionError(f"{err_msg}: tree structures differ: {xt} vs {yt}")
    for x, y in zip(xl, yl):
        if not _inexact(x) or not _inexact(y):
            continue
        x, y = np.asarray(x), np.asarray(y)
        np.testing.assert_allclose(x, y, atol=_tol(atol, x), rtol=_tol(rtol, x),
                                   err_msg=err_msg)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check `f_jvp(args, tangents)` against f and central differences."""
    rng = np.random.RandomState(0)
    tangent = pytrees.tree_map(partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    check_close(v_out, f(*args), atol=atol, rtol=rtol, err_msg=f"{err_msg} primal")
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(t_out, t_expected, atol=atol, rtol=rtol, err_msg=f"{err_msg} tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check `f_vjp(*args)` through <ct, J t> computed by central differences."""
    rng = np.random.RandomState(0)
    v_out, vjpfun = f_vjp(*args)
    check_close(v_out, f(*args), atol=atol, rtol=rtol, err_msg=f"{err_msg} primal")
    tangent = pytrees.tree_map(partial(_rand_like, rng), args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = pytrees.tree_map(partial(_rand_like, rng), v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    check_close(np.asarray(ip), np.asarray(ip_expected), atol=atol, rtol=rtol,
                err_msg=f"{err_msg} cotangent projection")


def _to_f64(x):
    if isinstance(x, (bool, int)) or not _inexact(x):
        return x
    arr = np.asarray(x)
    return arr.astype(np.complex128 if np.iscomplexobj(arr) else np.float64)


def check_grads(f, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of `f` at `args` up to `order` by finite differences, in forward
    mode ("fwd": jvp) and reverse mode ("rev": vjp), including derivatives of derivatives
    (jax.test_util.check_grads). Raises AssertionError on a mismatch."""
    eps = eps or EPS
    with enable_x64():
        args = tuple(pytrees.tree_map(_to_f64, tuple(args)))
        _check_grads(f, args, order, tuple(modes), atol, rtol, eps, "")


def _check_grads(f, args, order, modes, atol, rtol, eps, err_msg):
    if "fwd" in modes:
        fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
        check_jvp(f, partial(ad_api.jvp, f), args, atol, rtol, eps, fwd_msg)
        if order > 1:
            _check_grads(partial(ad_api.jvp, f), (args, args), order - 1, modes, atol, rtol, eps,
                         fwd_msg)
    if "rev" in modes:
        rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
        check_vjp(f, partial(ad_api.vjp, f), args, atol, rtol, eps, rev_msg)
        if order > 1:
            def f_vjp(*args):
                out_primal, vjp_fn = ad_api.vjp(f, *args)
                return vjp_fn(out_primal)
            _check_grads(f_vjp, args, order - 1, modes, atol, rtol, eps, rev_msg)


def float32_from_hex(words) -> np.ndarray:
    """float32 values from their bit patterns written in hex ('0x3f800000' is 1.0): how known
    answers that must match bit for bit are recorded."""
    return np.array([int(w, 16) for w in words], np.uint32).view(np.float32)
