"""gpuarr.scipy.ndimage against jax.scipy.ndimage (0.10.2, CPU) and SciPy: values, shapes and
dtypes, error classes and messages, and the same results under jit, vmap and grad."""
from functools import partial

import numpy as np
import pytest
from helpers import rand
from jax_compare import same_error, vs_jax_all

import gpuarr
from gpuarr.scipy import ndimage

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")
scipy_ndimage = pytest.importorskip("scipy.ndimage")


def test_map_coordinates_matches_jax_and_scipy():
    img = rand((5, 6))
    coords = [rand((4, 3), low=-3, high=8, seed=1), rand((4, 3), low=-3, high=9, seed=2)]
    imgi = (img * 10).astype(np.int32)
    ints = [np.array([1, 2, 7]), np.array([0, 3, -1])]
    cases = []
    for order in [0, 1]:
        for mode in ["constant", "nearest", "wrap", "mirror", "reflect"]:
            for cval in [0.0, 1.5]:
                f = lambda m, i, c, order=order, mode=mode, cval=cval: m.map_coordinates(
                    i, c, order, mode, cval)
                cases.append((partial(f, ndimage), partial(f, jsp.ndimage), (img, coords)))
            if order == 1 and mode in ("nearest", "mirror", "reflect"):
                want = scipy_ndimage.map_coordinates(img.astype(np.float64),
                                                     np.stack(coords).astype(np.float64),
                                                     order=order, mode=mode)
                got = ndimage.map_coordinates(img, coords, order, mode)
                np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)
        f = lambda m, i, c, order=order: m.map_coordinates(i, c, order)
        cases += [(partial(f, ndimage), partial(f, jsp.ndimage), (imgi, coords)),
                  (partial(f, ndimage), partial(f, jsp.ndimage), (img, ints))]
    f = lambda m, i, c: m.map_coordinates(i, c, 1, "mirror")
    cases += [(partial(f, ndimage), partial(f, jsp.ndimage), (img[:1], coords)),
              (partial(f, ndimage), partial(f, jsp.ndimage), (img[0], coords[1][:1]))]
    vs_jax_all(cases)


def test_map_coordinates_transformations_and_errors():
    img = rand((5, 6))
    coords = [rand((4, 3), low=-1, high=6, seed=1), rand((4, 3), low=-1, high=7, seed=2)]
    g, j = ndimage.map_coordinates, jsp.ndimage.map_coordinates
    cases = [
        (gpuarr.vmap(lambda i: g(i, [coords[0][0]], 1)), jax.vmap(lambda i: j(i, [coords[0][0]], 1)),
         (img,)),
        (gpuarr.jit(lambda i, c: g(i, c, 1, "reflect")), lambda i, c: j(i, c, 1, "reflect"),
         (img, coords)),
        (gpuarr.grad(lambda i, c: g(i, c, 1).sum(), (0, 1)),
         jax.grad(lambda i, c: j(i, c, 1).sum(), (0, 1)), (img, coords)),
    ]
    vs_jax_all(cases)
    for case in [lambda m: m(img, coords[:1], 1), lambda m: m(img, coords, 2)]:
        same_error(partial(case, g), partial(case, j))
    with pytest.raises(NotImplementedError, match="does not yet support mode grid-wrap"):
        g(img, coords, 1, "grid-wrap")
