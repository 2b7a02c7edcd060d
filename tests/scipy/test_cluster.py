"""gpuarr.scipy.cluster.vq against jax.scipy.cluster.vq (0.10.2, CPU) and SciPy: values, shapes and
dtypes, error classes and messages, and the same results under jit, vmap and grad."""
from functools import partial

import numpy as np
import pytest
from helpers import rand
from jax_compare import same_error, vs_jax_all

import gpuarr
from gpuarr.scipy import cluster

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")
pytest.importorskip("jax.scipy.cluster.vq")
scipy_vq = pytest.importorskip("scipy.cluster.vq")


def test_vq_matches_jax_and_scipy():
    obs, cb = rand((7, 3)), rand((4, 3), seed=1)
    vq, jvq = cluster.vq.vq, jsp.cluster.vq.vq
    pairs = [(obs, cb), (obs[:, 0], cb[:, 0]), (np.arange(6).reshape(3, 2),
                                                 np.arange(4).reshape(2, 2))]
    cases = [(vq, jvq, pair) for pair in pairs]
    cases += [(gpuarr.jit(vq), jvq, (obs, cb)),
              (gpuarr.vmap(vq, (0, None)), jax.vmap(jvq, (0, None)), (obs.reshape(7, 1, 3), cb)),
              (gpuarr.grad(lambda o: vq(o, cb)[1].sum()), jax.grad(lambda o: jvq(o, cb)[1].sum()),
               (obs,))]
    vs_jax_all(cases)
    for a, b in pairs:
        code, dist = scipy_vq.vq(np.asarray(a, float), np.asarray(b, float))
        np.testing.assert_array_equal(np.asarray(vq(a, b)[0]), code)
        np.testing.assert_allclose(np.asarray(vq(a, b)[1]), dist, rtol=1e-5)
    for case in [lambda f: f(obs, cb[0]), lambda f: f(obs[None], cb[None])]:
        same_error(partial(case, vq), partial(case, jvq))
    with pytest.raises(TypeError):
        vq([1.0], [1.0])
