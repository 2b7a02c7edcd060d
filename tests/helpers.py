"""Helpers the test modules share: random operands and comparisons of results with an oracle.
Comparisons with JAX itself (outcomes, errors, signatures) live in `jax_compare.py`."""
import numpy as np

import gpuarr


def rand(shape, dtype=np.float32, seed=0, low=None, high=None):
    """Random operands of `shape` and `dtype` from NumPy's default generator seeded with `seed`
    (or drawn from `seed` itself when it is a Generator): standard normal, or uniform in
    [low, high) when bounds are given. Complex dtypes get an imaginary part drawn the same way
    after the real part."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def draw():
        return rng.normal(size=shape) if low is None else rng.uniform(low, high, size=shape)

    x = draw()
    if np.dtype(dtype).kind == "c":
        x = x + 1j * draw()
    return x.astype(dtype)


def close(got, want, tol=1e-5, err_msg=""):
    """Assert `got` has `want`'s structure (tuples and lists element by element), shapes and
    dtypes, and its values: integers and booleans exactly, others to rtol = atol = `tol`. For
    oracles of the same dtype (JAX, or NumPy run in that dtype)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            close(g, w, tol, err_msg)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (err_msg, got.shape, want.shape)
    assert got.dtype == want.dtype, (err_msg, got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=err_msg)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=err_msg)


def allclose(got, want, tol=1e-5, err_msg=""):
    """Assert `got`'s values equal `want`'s to rtol = atol = `tol`, with the same shape where
    `want` is not a scalar. Dtypes are not compared: for oracles computed in float64 (NumPy,
    closed forms, finite differences)."""
    got = np.asarray(got)
    if np.ndim(want):
        assert got.shape == np.shape(want), (err_msg, got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=err_msg)


def equal(got, want, err_msg=""):
    """Assert `got` has `want`'s shape, dtype and exact values (NaNs in the same places)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (err_msg, got.shape, want.shape)
    assert got.dtype == want.dtype, (err_msg, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=err_msg)


def jit_runs_numpy_backend() -> bool:
    """Whether jitted programs run on the NumPy backend: the default platform is cpu and
    compiles with it (GPUARR_PLATFORMS=cpu, or no C compiler; else native kernels)."""
    plat = gpuarr.platforms.default_platform()
    return plat.name == "cpu" and plat.kernels() is None


def check_grads_x64(f, args, order, **kwargs):
    """`check_grads` of `f` at `args` in float64: JAX's check_grads computes in the arguments'
    dtypes, where float32 central differences (eps 1e-4) carry errors near 1e-3; the checks
    written for float64 accuracy (second orders, steep functions, tolerances of 1e-4) pass
    their inexact arguments as float64 with 64-bit types on, as JAX's tests do under
    JAX_ENABLE_X64."""
    from gpuarr import tree_util
    from gpuarr.config import enable_x64
    from gpuarr.test_util import check_grads

    def to_f64(x):
        if isinstance(x, (bool, int)) or np.asarray(x).dtype.kind not in "fc":
            return x
        x = np.asarray(x)
        return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)

    with enable_x64():
        check_grads(f, tuple(tree_util.tree_map(to_f64, tuple(args))), order, **kwargs)
