"""Gradient checking by finite differences (jax.test_util.check_grads).

`check_grads` compares forward mode (jvp) with central differences, and reverse mode (vjp)
with forward mode through the identity <ct, J t> = <J^T ct, t>, recursively up to `order`.
As JAX's, it computes in the arguments' own dtypes (float32 arguments are checked in
float32, under the x64 setting in effect) with that dtype's gradient tolerance (2e-3 for
float32, 1e-5 for float64), scaled by the number of elements compared: a check that needs
float64 accuracy passes float64 arguments with 64-bit types enabled.
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from gpuarr import ad_api, dtypes, tree_util
from gpuarr.config import config as _config

__all__ = ["check_close", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

_PYTHON_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                         float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def _dtype(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return x.dtype
    dt = _PYTHON_SCALAR_DTYPES.get(type(x))
    return dt if dt is not None else np.asarray(x).dtype


def _named(names, value) -> dict:
    return {np.dtype(getattr(dtypes, n)): value for n in names if hasattr(dtypes, n)}


# Comparison tolerances by dtype (JAX's default_tolerance): exact for integers, the narrow
# floats' resolution otherwise.
_default_tolerance = {
    dtypes.float0: 0, np.dtype(np.bool_): 0,
    **{np.dtype(t): 0 for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                np.uint32, np.uint64)},
    **_named(("int2", "int4", "uint2", "uint4"), 0),
    **_named(("float4_e2m1fn", "float8_e8m0fnu"), 1e0),
    **_named(("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
              "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"), 1e-1),
    **_named(("bfloat16",), 1e-2),
    np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}

# Gradient tolerances by dtype (JAX's default_gradient_tolerance).
_default_gradient_tolerance = {
    **_named(("float4_e2m1fn", "float8_e8m0fnu"), 1e0),
    **_named(("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
              "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "bfloat16"), 1e-1),
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _is_python_scalar(x) -> bool:
    return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _tolerance(dtype, tol) -> float:
    if tol is None:
        tol = {}
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in tol.items()}
    dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
    return tol.get(dtype, _default_tolerance[dtype])


def _upcast(x: np.ndarray) -> np.ndarray:
    """NumPy compares narrow floats and integers after widening them (as JAX does)."""
    if x.dtype in dtypes.NARROW_DTYPES or x.dtype.name == "bfloat16":
        if x.dtype.kind in "iu" or x.dtype.name.startswith(("int", "uint")):
            return x.astype(np.int8 if dtypes.iinfo(x.dtype).min < 0 else np.uint8)
        return x.astype(np.float32)
    return x


def _assert_close(a, b, atol=None, rtol=None, err_msg=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{err_msg}: shapes differ: {a.shape} vs {b.shape}"
    atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
    rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
    if a.dtype == b.dtype == dtypes.float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    kw = {}
    if atol:
        kw["atol"] = atol * a.size
    if rtol:
        kw["rtol"] = rtol * b.size
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(_upcast(a), _upcast(b), **kw, err_msg=err_msg)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    """Assert two pytrees of arrays are close leaf by leaf, with tolerances per dtype (a
    number, or a dict from dtype to number) scaled by each leaf's size, as JAX's."""
    tree_util.tree_map(partial(_assert_close, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def _check_dtypes_match(xs, ys):
    def check(x, y):
        if _config.enable_x64:
            assert _dtype(x) == _dtype(y), f"dtypes differ: {_dtype(x)} vs {_dtype(y)}"
        else:
            assert dtypes.canonicalize_dtype(_dtype(x)) == dtypes.canonicalize_dtype(_dtype(y)), \
                f"dtypes differ: {_dtype(x)} vs {_dtype(y)}"
    tree_util.tree_map(check, xs, ys)


def _inner_prod(xs, ys):
    def contract(x, y):
        return np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
    return tree_util.tree_reduce(np.add, tree_util.tree_map(contract, xs, ys))


def _safe_subtract(x, y, *, dtype):
    """x - y with inf - inf == 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, dtype), np.subtract(x, y, dtype=dtype))


def _keep_input_type(f):
    def wrapped(*args):
        result = np.array(f(*args), dtype=_dtype(args[0]))
        return result.item() if all(_is_python_scalar(a) for a in args) else result
    return wrapped


_add = partial(tree_util.tree_map, _keep_input_type(operator.add))
_sub = partial(tree_util.tree_map, _keep_input_type(operator.sub))
_safe_sub = partial(tree_util.tree_map, lambda x, y: _safe_subtract(x, y, dtype=_dtype(x)))
_conj = partial(tree_util.tree_map, _keep_input_type(np.conj))


def _scalar_mul(xs, a):
    def mul(x):
        dtype = _dtype(x)
        result = np.multiply(x, np.array(a, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(x) else result
    return tree_util.tree_map(mul, xs)


def _rand_like(rng, x):
    shape, dtype = np.shape(x), _dtype(x)
    def randn():
        return np.asarray(rng.randn(*shape), dtype=dtype)
    if dtypes.issubdtype(dtype, np.complexfloating):
        result = randn() + dtype.type(1.0j) * randn()
    else:
        result = randn()
    return result.item() if _is_python_scalar(x) else result


def numerical_jvp(f, primals, tangents, eps=EPS):
    """(f(x + eps t) - f(x - eps t)) / (2 eps), computed in the primals' dtypes."""
    delta = _scalar_mul(tangents, eps)
    f_pos = f(*_add(primals, delta))
    f_neg = f(*_sub(primals, delta))
    return _scalar_mul(_safe_sub(f_pos, f_neg), 0.5 / eps)


def _merge_tolerance(tol, default):
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    return {**default, **{np.dtype(k): v for k, v in tol.items()}}


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check a JVP (`f_jvp(args, tangents)`, typically `partial(jvp, f)`) against central
    differences in one random direction; raises AssertionError on a mismatch."""
    atol = _merge_tolerance(atol, _default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, _default_gradient_tolerance)
    rng = np.random.RandomState(0)
    tangent = tree_util.tree_map(partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes_match(v_out, t_out)
    v_out_expected = f(*args)
    _check_dtypes_match(v_out, v_out_expected)
    t_out_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    check_close(t_out, t_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check a VJP (`f_vjp(*args)`, typically `partial(vjp, f)`) through <ct, J t> with J t
    by central differences in one random direction; raises AssertionError on a mismatch."""
    atol = _merge_tolerance(atol, _default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, _default_gradient_tolerance)
    rand_like = partial(_rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_out_expected = f(*args)
    check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    tangent = tree_util.tree_map(rand_like, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_util.tree_map(rand_like, v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    check_close(ip, ip_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of `f` at `args` up to `order` by finite differences, in forward
    mode ("fwd": jvp), reverse mode ("rev": vjp) and through linearize ("lin"), including
    derivatives of derivatives, in the arguments' dtypes with per-dtype tolerances
    (jax.test_util.check_grads). Raises AssertionError on a mismatch."""
    args = tuple(args)
    eps = eps or EPS
    check_jvp_ = partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    check_vjp_ = partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def check(f, args, order, err_msg=""):
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp_(f, partial(ad_api.jvp, f), args, err_msg=fwd_msg)
            if order > 1:
                check(partial(ad_api.jvp, f), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp_(f, partial(ad_api.vjp, f), args, err_msg=rev_msg)
            if order > 1:
                def f_vjp(*args):
                    out_primal, vjp_fn = ad_api.vjp(f, *args)
                    return vjp_fn(out_primal)
                check(f_vjp, args, order - 1, rev_msg)
        if "lin" in modes:
            lin_msg = f"LIN of {err_msg}" if err_msg else "LIN"
            check_jvp_(f, partial(_jvp_from_lin, f), args, err_msg=lin_msg)
            if order > 1:
                check(partial(_jvp_from_lin, f), (args, args), order - 1, lin_msg)

    check(f, args, order)


def _jvp_from_lin(f, primals, tangents):
    primal_out, f_lin = ad_api.linearize(f, *primals)
    return primal_out, f_lin(*tangents)


def float32_from_hex(words) -> np.ndarray:
    """float32 values from their bit patterns written in hex ('0x3f800000' is 1.0): how known
    answers that must match bit for bit are recorded."""
    return np.array([int(w, 16) for w in words], np.uint32).view(np.float32)
