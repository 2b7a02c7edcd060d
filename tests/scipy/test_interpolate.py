"""gpuarr.scipy.interpolate against jax.scipy.interpolate (0.10.2, CPU) and SciPy: values, shapes
and dtypes, error classes and messages, and the same results under jit, vmap and grad."""
from functools import partial

import numpy as np
import pytest
from helpers import close, rand
from jax_compare import same_error, vs_jax_all

import gpuarr
from gpuarr.scipy import interpolate

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")
pytest.importorskip("jax.scipy.interpolate")
scipy_interpolate = pytest.importorskip("scipy.interpolate")


GRID = (np.linspace(0, 1, 5), np.array([0.0, 0.3, 0.5, 1.2]))


def test_regular_grid_interpolator_matches_jax_and_scipy():
    v = rand((5, 4))
    v3 = rand((5, 4, 3), seed=1)
    pts = rand((7, 2), low=-0.3, high=1.4, seed=2)
    inside = rand((6, 2), low=0.0, high=1.0, seed=3)
    cases = []
    for method in ["linear", "nearest"]:
        for fill in [np.nan, None, 0.5]:
            def make(cls, method=method, fill=fill):
                return lambda vals, p: cls(GRID, vals, method=method, fill_value=fill)(p)
            ours, theirs = make(interpolate.RegularGridInterpolator), make(
                jsp.interpolate.RegularGridInterpolator)
            cases.append((ours, theirs, (v, pts)))
            if fill is None:
                cases += [(ours, theirs, (v, pts.reshape(7, 1, 2))), (ours, theirs, (v3, pts))]
        want = scipy_interpolate.RegularGridInterpolator(GRID, v.astype(np.float64),
                                                         method=method)(inside)
        got = interpolate.RegularGridInterpolator(GRID, v, method=method)(inside)
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)
    G, J = interpolate.RegularGridInterpolator, jsp.interpolate.RegularGridInterpolator
    cases += [
        (lambda vals, p: G(GRID, vals)((p[:, 0], p[:, 1])),
         lambda vals, p: J(GRID, vals)((p[:, 0], p[:, 1])), (v, pts)),
        (lambda vals, p: G(GRID, vals)(p, method="nearest"),
         lambda vals, p: J(GRID, vals)(p, method="nearest"), (v, pts)),
        (lambda vals, p: G(GRID[:1], vals)(p[:, 0]), lambda vals, p: J(GRID[:1], vals)(p[:, 0]),
         (v3, pts)),
        (lambda vals, p: G(GRID, vals)(p), lambda vals, p: J(GRID, vals)(p),
         (np.arange(20).reshape(5, 4), pts)),
    ]
    vs_jax_all(cases)


def test_regular_grid_interpolator_pytree_and_transformations():
    v, pts = rand((5, 4)), rand((7, 2), low=-0.3, high=1.4, seed=2)
    G, J = interpolate.RegularGridInterpolator, jsp.interpolate.RegularGridInterpolator
    ours = G(GRID, v)
    leaves, tree = gpuarr.tree_util.tree_flatten(ours)
    assert len(leaves) == 4
    assert str(tree) == str(jax.tree_util.tree_flatten(J(GRID, v))[1])
    close(gpuarr.tree_util.tree_unflatten(tree, leaves)(pts), ours(pts))
    close(gpuarr.jit(lambda r, p: r(p))(ours, pts), ours(pts))
    grads = gpuarr.grad(lambda r: r(pts).sum())(G(GRID, v, fill_value=None))
    assert isinstance(grads, G)
    extrapolating_g = partial(G, GRID, fill_value=None)
    extrapolating_j = partial(J, GRID, fill_value=None)
    cases = [
        (gpuarr.vmap(lambda p: ours(p)), jax.vmap(lambda p: J(GRID, v)(p)), (pts.reshape(7, 1, 2),)),
        (gpuarr.grad(lambda vals, p: extrapolating_g(vals)(p).sum(), (0, 1)),
         jax.grad(lambda vals, p: extrapolating_j(vals)(p).sum(), (0, 1)), (v, pts)),
        (lambda vals: grads.values, lambda vals: jax.grad(lambda r: r(pts).sum())(
            extrapolating_j(vals)).values, (v,)),
    ]
    vs_jax_all(cases)


def test_regular_grid_interpolator_errors():
    v, pts = rand((5, 4)), rand((7, 2))
    G, J = interpolate.RegularGridInterpolator, jsp.interpolate.RegularGridInterpolator
    for case in [lambda R: R(GRID, v, method="cubic"), lambda R: R(GRID, v, bounds_error=True),
                 lambda R: R(GRID + (GRID[0],), v), lambda R: R(GRID, v, fill_value=1j),
                 lambda R: R(GRID, v)(pts[:, :1]), lambda R: R(GRID, v)(pts, method="q")]:
        same_error(partial(case, G), partial(case, J))
    with pytest.raises(TypeError):
        G(GRID, v.tolist())
