"""Shared checks of gpuarr modules against their JAX counterparts: values (with shapes and
dtypes), batches of cases evaluated by JAX in one compiled program, error classes and
messages, and public signatures."""
import functools
import inspect

import numpy as np
import pytest
from helpers import close

# Where XLA's float16 results depend on the CPU, tests allow this many units of the spacing
# at max(|value|, 1) (see `xla_contracts_float16`).
FLOAT16_CONTRACTION_TOL = 4


@functools.cache
def xla_contracts_float16() -> bool:
    """Whether JAX on this CPU rounds a float16 `x * y + z` once (a fused multiply-add, on CPUs
    with native float16 arithmetic such as AVX512-FP16) rather than after each operation, as
    gpuarr and XLA on other CPUs do. Random streams through such steps then differ by an ulp
    of the intermediate."""
    import jax
    x = np.float16(1.001953125)  # 1 + 2**-9: x * 5 - 2 is 3.008 rounded twice, 3.01 once
    fused = jax.jit(lambda x, y, z: x * y + z)(x, np.float16(5), np.float16(-2))
    return float(fused) != float(np.float16(x * np.float16(5)) - np.float16(2))


def float16_units(got, want) -> float:
    """The largest |got - want| in units of the float16 spacing at max(|want|, 1)."""
    got, want = np.asarray(got, np.float64), np.asarray(want)
    scale = np.spacing(np.maximum(np.abs(want), np.float16(1))).astype(np.float64)
    return float(np.max(np.abs(got - want.astype(np.float64)) / scale, initial=0.0))


def outcome(api, fn, args, jit=False, arrays_only=False):
    """fn(*args) through `api` (gpuarr or jax), its arguments made that library's arrays (only
    the NumPy arrays with `arrays_only`): ("raised", class name, first message line), or
    ("value", [(values, dtype, weak type) of each result])."""
    call = api.jit(fn) if jit else fn
    try:
        out = call(*[api.numpy.asarray(x) if not arrays_only or isinstance(x, np.ndarray) else x
                     for x in args])
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    outs = out if isinstance(out, (list, tuple)) else [out]
    return ("value", [(np.asarray(o), o.dtype, o.weak_type) for o in outs])


def same_results(got, want, message=True):
    """Assert two `outcome`s agree: the same exception class (and first message line unless
    `message` is False), or results of the same shapes, dtypes and weak types. Returns the
    (gpuarr values, JAX values) pairs to compare, none when both raised."""
    assert got[0] == want[0], (got, want)
    if got[0] == "raised":
        assert got[1] == want[1], (got, want)
        if message:
            assert got[2] == want[2], (got, want)
        return []
    assert len(got[1]) == len(want[1]), (got, want)
    for (g, gdt, gweak), (w, wdt, wweak) in zip(got[1], want[1]):
        assert g.shape == w.shape, (g, w)
        assert gdt == wdt, (gdt, wdt)
        assert gweak == wweak, (gweak, wweak)
    return [(g, w) for (g, _, _), (w, _, _) in zip(got[1], want[1])]


def vs_jax_all(cases, tol=1e-5):
    """Check each (ours, theirs, args) case; JAX's values all come from one compiled program
    (JAX's op-by-op dispatch compiles every primitive for every shape, which is slow)."""
    import jax
    wants = jax.jit(lambda arglists: [theirs(*a) for (_, theirs, _), a in zip(cases, arglists)])(
        [args for _, _, args in cases])
    for (ours, _, args), want in zip(cases, wants):
        close(ours(*args), want, tol)


def same_error(ours, theirs):
    """`ours()` raises the class and message `theirs()` raises."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(want.type) as got:
        ours()
    assert str(got.value) == str(want.value)


def _parameters(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _same_default(a, b):
    return a is b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b)) \
        or (type(a) is type(b) and a == b) or str(a) == str(b)


def check_signatures(ours, theirs, names):
    """Parameter names, kinds and defaults as JAX's (annotations aside)."""
    for name in names:
        got, want = _parameters(getattr(ours, name)), _parameters(getattr(theirs, name))
        assert [p[:2] for p in got] == [p[:2] for p in want], name
        assert all(_same_default(g[2], w[2]) for g, w in zip(got, want)), name


def assert_close_float32(got, want, tol):
    """The same NaNs and infinities, and finite values within `tol` float32 epsilons of
    max(|want|, 1) (real and complex values alike)."""
    got, want = np.asarray(got), np.asarray(want)
    scale = np.maximum(np.abs(want), 1).astype(np.float64)
    eps = np.finfo(np.float32).eps
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    got, want, scale = got[finite], want[finite], scale[finite]
    diff = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
    assert np.nanmax(diff / scale, initial=0) <= tol * eps, (got, want)


def assert_same_as_jax_float32(gpuarr_fn, jax_fn, args, tol):
    """gpuarr_fn(*args) and jax_fn(*args) (each eager) give the same shapes, dtypes and weak
    types, and values within `tol` float32 epsilons (`assert_close_float32`), or the same
    exception."""
    import jax

    import gpuarr
    got = outcome(gpuarr, gpuarr_fn, args, arrays_only=True)
    want = outcome(jax, jax_fn, args, arrays_only=True)
    for g, w in same_results(got, want):
        assert_close_float32(g, w, tol)


def assert_same_results(got, want, rtol=1e-6, atol=1e-6):
    """Two sequences of arrays agree: shapes and dtypes exactly, integers and booleans
    exactly, floats within rtol/atol (NaN where NaN)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
