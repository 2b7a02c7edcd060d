"""gpuarr.image against jax.image (0.10.2, CPU): resize and scale_and_translate for every
method, with and without antialiasing, up- and downsampling; dtypes, errors, and the same
results under jit, vmap and grad (including gradients with respect to scale and translation)."""
from functools import partial

import jax_compare
import numpy as np
import pytest
from helpers import close, rand
from jax_compare import check_signatures, same_error

import gpuarr
import gpuarr.image as gi

jax = pytest.importorskip("jax")
ji = pytest.importorskip("jax.image")


# Resampling sums many weighted terms: float32 results agree with JAX's to about 1e-5.
def vs_jax_all(cases, tol=1e-4):
    jax_compare.vs_jax_all(cases, tol)


METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]


def test_public_names_and_signatures():
    assert sorted(gi.__all__) == sorted(n for n in dir(ji) if not n.startswith("_"))
    check_signatures(gi, ji, ["resize", "scale_and_translate"])
    check_signatures(gi.ResizeMethod, ji.ResizeMethod, ["from_string"])


@pytest.mark.parametrize("antialias", [True, False])
def test_resize_matches_jax(antialias):
    img = rand((2, 7, 6, 3))
    cases = []
    for shape in [(2, 14, 9, 3), (2, 3, 4, 3), (2, 7, 13, 3), (1, 1, 2, 2), (2, 0, 6, 3)]:
        for method in METHODS:
            cases.append((partial(gi.resize, shape=shape, method=method, antialias=antialias),
                          partial(ji.resize, shape=shape, method=method, antialias=antialias),
                          (img,)))
    vs_jax_all(cases)


def test_resize_method_names_dtypes_and_identity():
    img = rand((2, 7, 6, 3))
    imgi = (img * 50).astype(np.int32)
    cases = [
        (partial(gi.resize, shape=(2, 10, 4, 3), method=gi.ResizeMethod.CUBIC),
         partial(ji.resize, shape=(2, 10, 4, 3), method=ji.ResizeMethod.CUBIC), (img,)),
        (partial(gi.resize, shape=(2, 10, 4, 3), method="bilinear"),
         partial(ji.resize, shape=(2, 10, 4, 3), method="bilinear"), (img,)),
        (partial(gi.resize, shape=(2, 10, 4, 3), method="nearest"),
         partial(ji.resize, shape=(2, 10, 4, 3), method="nearest"), (imgi,)),
        (partial(gi.resize, shape=(2, 10, 4, 3), method="linear"),
         partial(ji.resize, shape=(2, 10, 4, 3), method="linear"), (imgi,)),
        (partial(gi.resize, shape=(2, 7, 6, 3), method="lanczos3"),
         partial(ji.resize, shape=(2, 7, 6, 3), method="lanczos3"), (imgi,)),
    ]
    vs_jax_all(cases)
    half = img.astype(np.float16)
    close(gi.resize(half, (2, 10, 4, 3), "linear"),
          jax.jit(lambda x: ji.resize(x, (2, 10, 4, 3), "linear"))(half), 1e-2)
    assert [m.name for m in gi.ResizeMethod] == [m.name for m in ji.ResizeMethod]
    assert [m.value for m in gi.ResizeMethod] == [m.value for m in ji.ResizeMethod]
    for name in ["trilinear", "triangle", "tricubic", "bicubic-pytorch", "area", "lanczos5"]:
        assert gi.ResizeMethod.from_string(name).name == ji.ResizeMethod.from_string(name).name


def test_resize_x64():
    img = rand((2, 7, 6, 3), np.float64)
    with gpuarr.enable_x64(), jax.enable_x64(True):
        for method in ["lanczos3", "area"]:
            close(gi.resize(img, (2, 5, 9, 3), method),
                  jax.jit(lambda x, m=method: ji.resize(x, (2, 5, 9, 3), m))(img), 1e-10)
        # The weights are computed in float64, then cast to the image's float32.
        close(gi.resize(img.astype(np.float32), (2, 5, 9, 3), "cubic"),
              jax.jit(lambda x: ji.resize(x, (2, 5, 9, 3), "cubic"))(img.astype(np.float32)), 1e-6)


def _warp(mod, shape, spatial_dims, method, antialias=True):
    return lambda image, scale, translation: mod.scale_and_translate(
        image, shape, spatial_dims, scale, translation, method, antialias)


def test_scale_and_translate_matches_jax():
    x = rand((7, 6))
    img = rand((2, 7, 6, 3), seed=1)
    params = [((1.7, 0.6), (0.5, -1.2)), ((2.0, 2.0), (0.0, 0.0)), ((0.4, 1.0), (1.0, 2.0))]
    cases = []
    for method in METHODS[1:]:
        for antialias in [True, False]:
            for sc, tr in params:
                args = (x, np.array(sc, np.float32), np.array(tr, np.float32))
                cases.append((_warp(gi, (9, 5), (0, 1), method, antialias),
                              _warp(ji, (9, 5), (0, 1), method, antialias), args))
    one_axis = (np.array([0.8]), np.array([0.3]))
    cases += [
        (_warp(gi, (7, 5), [1], "cubic"), _warp(ji, (7, 5), [1], "cubic"), (x, *one_axis)),
        (_warp(gi, (2, 7, 9, 3), [-2], "linear"), _warp(ji, (2, 7, 9, 3), [-2], "linear"),
         (img, np.array([1.5]), np.array([0.0]))),
        (_warp(gi, (7, 5), [1], "linear"), _warp(ji, (7, 5), [1], "linear"),
         ((x * 10).astype(np.int32), *one_axis)),
    ]
    vs_jax_all(cases)
    close(gi.scale_and_translate(x, (7, 6), [], np.zeros(0), np.zeros(0), "linear"), x, 1e-4)


def test_transformations():
    img = rand((2, 7, 6, 3))
    x = rand((7, 6), seed=1)
    sc, tr = np.array([1.7, 0.6], np.float32), np.array([0.5, -1.2], np.float32)

    def warp(mod, s, t):
        return (mod.scale_and_translate(x, (9, 5), (0, 1), s, t, "cubic") ** 2).sum()

    cases = [
        (gpuarr.jit(lambda i: gi.resize(i, (2, 5, 9, 3), "lanczos3")),
         lambda i: ji.resize(i, (2, 5, 9, 3), "lanczos3"), (img,)),
        (gpuarr.vmap(lambda i: gi.resize(i, (5, 9, 3), "cubic")),
         jax.vmap(lambda i: ji.resize(i, (5, 9, 3), "cubic")), (img,)),
        (gpuarr.grad(lambda i: (gi.resize(i, (2, 5, 9, 3), "linear") ** 2).sum()),
         jax.grad(lambda i: (ji.resize(i, (2, 5, 9, 3), "linear") ** 2).sum()), (img,)),
        (gpuarr.grad(partial(warp, gi), (0, 1)), jax.grad(partial(warp, ji), (0, 1)), (sc, tr)),
        (gpuarr.jit(gpuarr.grad(partial(warp, gi))), jax.grad(partial(warp, ji)), (sc, tr)),
        (gpuarr.vmap(lambda s: gi.scale_and_translate(x, (9, 5), (0, 1), s, tr, "linear")),
         jax.vmap(lambda s: ji.scale_and_translate(x, (9, 5), (0, 1), s, tr, "linear")),
         (np.stack([sc, 2 * sc]),)),
    ]
    vs_jax_all(cases, tol=1e-3)


def test_errors():
    img, x = rand((2, 7, 6, 3)), rand((7, 6))
    cases = [
        lambda m: m.resize(img, (2, 3), "linear"),
        lambda m: m.resize(img, (2, 3, 4, 3), "bogus"),
        lambda m: m.resize(img, (2, 3.5, 4, 3), "linear"),
        lambda m: m.scale_and_translate(x, (3, 3), (0,), np.ones(1), np.zeros(1), "nearest"),
        lambda m: m.scale_and_translate(x, (3,), (0,), np.ones(1), np.zeros(1), "linear"),
        lambda m: m.ResizeMethod.from_string("x"),
    ]
    for case in cases:
        same_error(partial(case, gi), partial(case, ji))
