"""Tests for gpuarr.scipy.optimize against jax.scipy.optimize: minimize (BFGS and the
experimental L-BFGS) and the strong-Wolfe line search, eagerly, under jit and under vmap.

Both sides run the same algorithm, so float64 runs agree to rounding and take exactly the same
numbers of iterations and evaluations. In float32 the objective itself rounds differently here
and in XLA, which near the noise floor can change where a search stops, so float32 runs use a
gradient tolerance (1e-3) that is reached well above that floor.

Compiling JAX's solvers is the slow part, so each JAX reference runs once, batched with
jax.vmap over several starting points, and is compared with every way of running ours.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr.scipy import optimize
from gpuarr.scipy.optimize._line_search import line_search

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax._src.scipy.optimize.line_search import line_search as jax_line_search  # noqa: E402
from jax.scipy.optimize import minimize as jax_minimize  # noqa: E402

# Interpolation and BFGS updates compute NaN or infinite candidates (no cubic minimiser,
# y.s == 0) and then discard them, as in JAX; NumPy would report them.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BFGS = "BFGS"
LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
COUNTS = ("nit", "nfev", "njev", "status", "success")


@pytest.fixture
def x64(request):
    """Sets enable_x64 the same way in JAX and here (from the test's parameter), then restores
    both."""
    on = request.param
    old_jax, old_ours = bool(jax.config.jax_enable_x64), gpuarr.config.enable_x64
    jax.config.update("jax_enable_x64", on)
    gpuarr.config.update("jax_enable_x64", on)
    try:
        yield on
    finally:
        jax.config.update("jax_enable_x64", old_jax)
        gpuarr.config.update("jax_enable_x64", old_ours)


# (dtype, x64) pairs: float32 with the default 32-bit mode, float64 with x64 on.
PRECISIONS = pytest.mark.parametrize(
    "dtype, x64", [(np.float32, False), (np.float64, True)], ids=["f32", "f64"],
    indirect=["x64"])
ONLY_X64 = pytest.mark.parametrize("x64", [True], indirect=True)


def rosen(xp):
    return lambda x: xp.sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quadratic(xp):
    return lambda x, a, b: .5 * xp.dot(x, xp.dot(a, x)) - xp.dot(b, x)


QUAD_A = np.array([[4., 1., 0.], [1., 3., .5], [0., .5, 2.]])
QUAD_B = np.array([1., -2., .5])
# The first start converges; from the last both solvers stop on a failed zoom (a bracket
# handed over from high to low step): status 3 for BFGS, 5 for L-BFGS.
ROSEN_X0S = np.array([[.8, .6, .4], [.5, .5, .5], [-1.2, 1., .5]])
QUAD_X0S = np.array([[.5, .5, .5], [0., 0., 0.]])


def _options(dtype):
    return {} if dtype == np.float64 else {"gtol": 1e-3}


def _tol(dtype):
    return 1e-9 if dtype == np.float64 else 2e-4


@functools.lru_cache
def jax_rosen_batch(method, dtype, x64):
    """JAX's results from each of ROSEN_X0S, under jax.vmap (x64 is part of the key)."""
    return jax.vmap(lambda x: jax_minimize(rosen(jnp), x, method=method,
                                           options=_options(dtype)))(ROSEN_X0S.astype(dtype))


def solve_rosen(method, dtype):
    return lambda x: optimize.minimize(rosen(gnp), x, method=method, options=_options(dtype))


def row(results, i):
    return jax.tree_util.tree_map(lambda v: v[i], results)


def check_results(ours, theirs, dtype):
    """Same fields, dtypes and weak types; counts and status equal; values close."""
    assert type(ours).__name__ == "OptimizeResults" and ours._fields == theirs._fields
    for name in ours._fields:
        a, b = getattr(ours, name), getattr(theirs, name)
        if b is None:
            assert a is None, name
            continue
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type), name
        if name in COUNTS:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    tol = _tol(dtype)
    for name in ("x", "fun"):
        np.testing.assert_allclose(np.asarray(getattr(ours, name)),
                                   np.asarray(getattr(theirs, name)), rtol=tol, atol=tol,
                                   err_msg=name)
    # The gradient and inverse Hessian amplify the rounding of x; compare them loosely.
    for name in ("jac", "hess_inv"):
        if getattr(theirs, name) is not None:
            np.testing.assert_allclose(np.asarray(getattr(ours, name)),
                                       np.asarray(getattr(theirs, name)), rtol=1e-3,
                                       atol=1e3 * tol, err_msg=name)


# ------------------------------------------------------------------ minimize


@PRECISIONS
@pytest.mark.parametrize("method", [BFGS, LBFGS])
def test_rosenbrock_eager_jit_and_vmap_match_jax(method, dtype, x64):
    x0s = ROSEN_X0S.astype(dtype)
    theirs = jax_rosen_batch(method, dtype, x64)
    solve = solve_rosen(method, dtype)
    jitted = gpuarr.jit(solve)
    for i, x0 in enumerate(x0s):
        check_results(solve(x0), row(theirs, i), dtype)
        check_results(jitted(x0), row(theirs, i), dtype)
    statuses = np.asarray(theirs.status).tolist()
    assert statuses[0] == 0 and statuses[-1] == (3 if method == BFGS else 5)
    # Weak types under vmap are checked by test_vmap_keeps_weak_counts.
    batched = gpuarr.vmap(solve)
    check_results(batched(x0s), theirs, dtype)
    check_results(gpuarr.jit(batched)(x0s), theirs, dtype)


@pytest.mark.parametrize("x64", [False], indirect=True)
def test_vmap_keeps_weak_counts(x64):
    ours = gpuarr.vmap(solve_rosen(BFGS, np.float32))(ROSEN_X0S.astype(np.float32))
    theirs = jax_rosen_batch(BFGS, np.float32, x64)
    assert [getattr(ours, n).weak_type for n in COUNTS] == [
        getattr(theirs, n).weak_type for n in COUNTS]


# float32 here runs with x64 on: counts become int64, values stay float32.
@pytest.mark.parametrize("method, dtype", [(LBFGS, np.float32), (BFGS, np.float64)],
                         ids=["lbfgs-f32", "bfgs-f64"])
@ONLY_X64
def test_quadratic_with_args_matches_jax(method, dtype, x64):
    a, b, x0s = QUAD_A.astype(dtype), QUAD_B.astype(dtype), QUAD_X0S.astype(dtype)
    theirs = jax.vmap(lambda x: jax_minimize(quadratic(jnp), x, args=(a, b), method=method,
                                             options=_options(dtype)))(x0s)
    for i, x0 in enumerate(x0s):
        ours = optimize.minimize(quadratic(gnp), x0, args=(a, b), method=method,
                                 options=_options(dtype))
        check_results(ours, row(theirs, i), dtype)
        assert ours.nit.dtype == np.int64 and ours.x.dtype == dtype
        np.testing.assert_allclose(np.asarray(ours.x), np.linalg.solve(QUAD_A, QUAD_B),
                                   atol=1e-3 if dtype == np.float32 else 1e-5)
    if method == BFGS:  # the estimate has converged to the true inverse Hessian
        np.testing.assert_allclose(np.asarray(ours.hess_inv), np.linalg.inv(QUAD_A), atol=1e-3)


@ONLY_X64
@pytest.mark.parametrize("method, nit", [(BFGS, 3), (LBFGS, 4)])
def test_maxiter_status_matches_jax(method, nit, x64):
    # L-BFGS tests its iteration limit after a step, so it takes one more than maxiter.
    x0 = ROSEN_X0S[0]
    ours = optimize.minimize(rosen(gnp), x0, method=method, options={"maxiter": 3})
    theirs = jax_minimize(rosen(jnp), x0, method=method, options={"maxiter": 3})
    check_results(ours, theirs, np.float64)
    assert int(ours.status) == 1 and int(ours.nit) == nit


def test_complex_lbfgs_matches_jax():
    center = np.array([1 + 2j, -.5j, 3.], np.complex64)
    weights = np.array([1., 2., 3.], np.float32)

    def objective(xp):
        return lambda z: xp.sum(xp.abs(z - center) ** 2 * weights)

    z0 = np.zeros(3, np.complex64)
    ours = optimize.minimize(objective(gnp), z0, method=LBFGS)
    theirs = jax_minimize(objective(jnp), z0, method=LBFGS)
    check_results(ours, theirs, np.float32)
    np.testing.assert_allclose(np.asarray(ours.x), center, atol=1e-5)


def test_errors_match_jax():
    x0 = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match="Method nelder-mead not recognized") as ours:
        optimize.minimize(rosen(gnp), x0, method="nelder-mead")
    with pytest.raises(ValueError) as theirs:
        jax_minimize(rosen(jnp), x0, method="nelder-mead")
    assert str(ours.value) == str(theirs.value)

    with pytest.raises(TypeError, match="must be a tuple") as ours:
        optimize.minimize(rosen(gnp), x0, args=[1.], method="BFGS")
    with pytest.raises(TypeError) as theirs:
        jax_minimize(rosen(jnp), x0, args=[1.], method="BFGS")
    assert str(ours.value) == str(theirs.value)


def test_public_names_match_jax():
    public = {n for n in dir(jax.scipy.optimize) if not n.startswith("_")}
    assert set(optimize.__all__) == public and all(hasattr(optimize, n) for n in public)


# ------------------------------------------------------------------ line search

LS_X = np.array([1., 1., 1.], np.float32)
LS_G = np.array([1., 10., 100.], np.float32)


def ls_objective(xp):
    a = np.diag(LS_G)
    return lambda x: .5 * xp.dot(x, xp.dot(a, x)) + xp.sum(xp.cos(x))


# Directions sharing the keyword arguments run as one batch.
LINE_SEARCHES = {
    # a zoom (cubic and quadratic steps), a unit first step accepted, a doubled step accepted,
    # an ascent direction (the zoom fails, status 1), the iteration limit reached (status 3)
    "first_step_1": ([-LS_G, -np.ones(3, np.float32), -LS_G * 1e-3, np.ones(3, np.float32),
                      -LS_G * 1e-7], dict(maxiter=3)),
    # the first step estimated from the previous decrease
    "previous_value": ([-LS_G, -LS_G * .5], dict(old_fval=np.float32(5.), gfk=LS_G,
                                                  old_old_fval=np.float32(5.1))),
}


def check_line_search(ours, theirs):
    assert ours._fields == theirs._fields
    for name in ours._fields:
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type), name
        if name in ("a_k", "f_k", "g_k"):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-4,
                                       err_msg=name)
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


@pytest.mark.parametrize("case", list(LINE_SEARCHES))
def test_line_search_matches_jax(case):
    pks, kwargs = LINE_SEARCHES[case]
    pks = np.stack(pks)
    theirs = jax.vmap(lambda p: jax_line_search(ls_objective(jnp), LS_X, p, **kwargs))(pks)
    for i, pk in enumerate(pks):
        check_line_search(line_search(ls_objective(gnp), LS_X, pk, **kwargs), row(theirs, i))
    search = gpuarr.vmap(lambda p: line_search(ls_objective(gnp), LS_X, p, **kwargs))
    check_line_search(gpuarr.jit(search)(pks), theirs)
    if case == "first_step_1":
        assert np.asarray(theirs.status).tolist() == [0, 0, 0, 1, 3]
