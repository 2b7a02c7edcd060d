"""gpuarr.scipy.integrate against jax.scipy.integrate (0.10.2, CPU) and SciPy: values, shapes and
dtypes, error classes and messages, and the same results under jit, vmap and grad."""
from functools import partial

import numpy as np
import pytest
from helpers import close, rand
from jax_compare import vs_jax_all

import gpuarr
from gpuarr.scipy import integrate

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")


def test_trapezoid_matches_jax():
    y = np.array([1, 2, 3, 2, 3, 2, 1])
    x = np.array([0, 2, 5, 7, 10, 15, 20])
    y2 = rand((3, 4))
    ours, theirs = integrate.trapezoid, jsp.integrate.trapezoid
    cases = [(ours, theirs, (y,)), (ours, theirs, (y, x)),
             (partial(ours, dx=0.5), partial(theirs, dx=0.5), (y,)),
             (partial(ours, axis=0), partial(theirs, axis=0), (y2,)),
             (partial(ours, axis=0), partial(theirs, axis=0), (y2, np.arange(3.0))),
             (partial(ours, axis=1), partial(theirs, axis=1), (y2, np.array([0.0, 1, 3, 4]))),
             (gpuarr.vmap(ours), jax.vmap(theirs), (y2,)),
             (gpuarr.grad(lambda v: ours(v, x) ** 2), jax.grad(lambda v: theirs(v, x) ** 2),
              (y.astype(np.float32),))]
    vs_jax_all(cases)
    assert float(ours(y, x)) == 43.0
    close(gpuarr.jit(ours, static_argnames="axis")(y2, axis=0), theirs(y2, axis=0))
    with pytest.raises(TypeError):
        ours([1.0, 2.0])
