"""The data-moving collectives (all_gather, psum_scatter, all_to_all, pswapaxes, ppermute,
pshuffle, pbroadcast) under vmap with a named axis, and pmap, against JAX: values, shapes
and dtypes, unmapped operands, jit on either side, an outer axis named inside an inner vmap,
gradients, and JAX's errors."""
import inspect
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import gpuarr
from gpuarr import lax

jax = pytest.importorskip("jax")
jlax = jax.lax


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                  got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# Each case: (name, function of (lax module, value), per-position operand shape). The axis is
# named "i" and has size 3.
CASES = [
    ("all_gather", lambda L, v: L.all_gather(v, "i"), (2, 4)),
    ("all_gather axis 1", lambda L, v: L.all_gather(v, "i", axis=1), (2, 4)),
    ("all_gather axis -1", lambda L, v: L.all_gather(v, "i", axis=-1), (2, 4)),
    ("all_gather tiled", lambda L, v: L.all_gather(v, "i", axis=1, tiled=True), (2, 4)),
    ("psum_scatter", lambda L, v: L.psum_scatter(v, "i"), (3, 4)),
    ("psum_scatter dim 1", lambda L, v: L.psum_scatter(v, "i", scatter_dimension=1), (2, 3)),
    ("psum_scatter tiled", lambda L, v: L.psum_scatter(v, "i", scatter_dimension=1,
                                                       tiled=True), (2, 6)),
    ("all_to_all same axis", lambda L, v: L.all_to_all(v, "i", 0, 0), (3, 2)),
    ("all_to_all split < concat", lambda L, v: L.all_to_all(v, "i", 0, 1), (3, 2)),
    ("all_to_all split > concat", lambda L, v: L.all_to_all(v, "i", 1, 0), (2, 3)),
    ("all_to_all tiled", lambda L, v: L.all_to_all(v, "i", 1, 0, tiled=True), (2, 6)),
    ("pswapaxes", lambda L, v: L.pswapaxes(v, "i", 1), (2, 3)),
    ("ppermute", lambda L, v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]), (2,)),
    ("pshuffle", lambda L, v: L.pshuffle(v, "i", [2, 0, 1]), (2, 2)),
    ("pbroadcast", lambda L, v: L.pbroadcast(v, "i", 1), (4,)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,f,shape", CASES, ids=IDS)
def test_vmap_matches_jax(name, f, shape):
    x = data(3, *shape)
    want = jax.vmap(lambda v: f(jlax, v), axis_name="i")(x)
    same(gpuarr.vmap(lambda v: f(lax, v), axis_name="i")(x), want)
    # jit outside and inside the vmap
    same(gpuarr.jit(gpuarr.vmap(lambda v: f(lax, v), axis_name="i"))(x), want)
    same(gpuarr.vmap(gpuarr.jit(lambda v: f(lax, v)), axis_name="i")(x), want)


@pytest.mark.parametrize("name,f,shape", [c for c in CASES if c[0] != "ppermute"],
                         ids=[i for i in IDS if i != "ppermute"])
def test_unmapped_operand_matches_jax(name, f, shape):
    # The operand is the same at every position: as if it were mapped with equal slices.
    # (JAX's all_to_all mishandles an unmapped operand, so JAX runs on the mapped copy.)
    v = data(*shape, seed=1)
    want = jax.vmap(lambda u: f(jlax, u), axis_name="i")(np.broadcast_to(v, (3, *shape)))
    same(gpuarr.vmap(lambda _: f(lax, v), axis_name="i")(np.zeros(3)), want)


@pytest.mark.parametrize("name,f,shape", CASES, ids=IDS)
def test_outer_axis_inside_inner_vmap(name, f, shape):
    # The collective names the outer axis; the inner vmap's batch dimension is carried along.
    x = data(3, 2, *shape, seed=2)

    def run(api, L):
        return api.vmap(api.vmap(lambda v: f(L, v)), axis_name="i")(x)
    same(run(gpuarr, lax), run(jax, jlax))


@pytest.mark.parametrize("name,f,shape", CASES, ids=IDS)
def test_gradients_match_jax(name, f, shape):
    x = data(3, *shape, seed=3)
    out = np.asarray(jax.vmap(lambda v: f(jlax, v), axis_name="i")(x))
    w = data(*out.shape, seed=4)

    def loss(api, L):
        return lambda x: (api.vmap(lambda v: f(L, v), axis_name="i")(x) * w).sum()
    got = gpuarr.grad(loss(gpuarr, lax))(x)
    if name == "pbroadcast":  # JAX's batching rule fails under grad; the source gets it all
        want = np.zeros_like(x)
        want[1] = w.sum(0)
        same(got, want)
        return
    same(got, jax.grad(loss(jax, jlax))(x))


def test_partial_ppermute_fills_zeros():
    # Positions no pair sends to get zeros, as lax.ppermute documents (JAX's vmap asserts a
    # full permutation instead).
    x = data(4, 2)
    got = gpuarr.vmap(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]), axis_name="i")(x)
    want = np.zeros_like(x)
    want[2], want[1] = x[0], x[3]
    same(got, want)
    g = gpuarr.grad(lambda x: gpuarr.vmap(
        lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]), axis_name="i")(x).sum())(x)
    same(g, np.float32([[1, 1], [0, 0], [0, 0], [1, 1]]))


def test_jit_cache_follows_the_axis_size():
    gather = gpuarr.jit(lambda v: lax.all_gather(v, "i"))
    for n in (2, 5):
        x = data(n, 3)
        same(gpuarr.vmap(gather, axis_name="i")(x), np.broadcast_to(x, (n, n, 3)))


def test_errors_match_jax():
    x = data(3, 2)
    with pytest.raises(NameError, match="unbound axis name: j"):
        gpuarr.vmap(lambda v: lax.all_gather(v, "j"), axis_name="i")(x)
    with pytest.raises(ValueError, match="must match shard count 3"):
        gpuarr.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    with pytest.raises(ValueError, match="but they are 3 and 2 respectively"):
        gpuarr.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(x)
    with pytest.raises(ValueError, match="does not represent a permutation"):
        gpuarr.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1]), axis_name="i")(x)
    with pytest.raises(ValueError, match="outside the axis"):
        gpuarr.vmap(lambda v: lax.pbroadcast(v, "i", 3), axis_name="i")(x)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        gpuarr.vmap(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 1, 2]]),
                    axis_name="i")(x)


# ---------------------------------------------------------------- pmap


def _pmap_results(pmap, grad, L, x):
    """pmap's collectives, static arguments, unmapped outputs and gradient, with one library
    (gpuarr or JAX: this source also runs in a JAX process of its own, see _jax_pmap_results)."""
    def f(v, w):
        return L.psum(v * w, "d"), L.all_gather(v, "d"), L.axis_index("d")
    out = list(pmap(f, axis_name="d", in_axes=(0, None))(x, 2.))
    out.append(pmap(lambda v, s: v * s, static_broadcasted_argnums=1)(x, 3))
    out.extend(pmap(lambda v: (v, v.sum()), out_axes=(0, None))(x))
    out.append(grad(lambda x: pmap(lambda v: v ** 2)(x).sum())(x))
    return [np.asarray(o) for o in out]


def _jax_pmap_results(x):
    """JAX's results over as many devices as gpuarr has: in this process when JAX has them,
    else in a JAX process given that many host devices (as on the stand-in's two GPUs)."""
    n = x.shape[0]
    if jax.local_device_count() == n:
        return _pmap_results(jax.pmap, jax.grad, jlax, x)
    script = (inspect.getsource(_pmap_results) + (
        "import sys\nimport numpy as np\nimport jax\n"
        "x = np.load(sys.argv[1])\n"
        "np.savez(sys.argv[2], *_pmap_results(jax.pmap, jax.grad, jax.lax, x))\n"))
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", x)
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
        subprocess.run([sys.executable, "-c", script, f"{tmp}/x.npy", f"{tmp}/out.npz"],
                       check=True, env=env, timeout=300)
        with np.load(f"{tmp}/out.npz") as saved:
            return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def test_pmap_matches_jax():
    x = data(gpuarr.local_device_count(), 3)
    got = _pmap_results(gpuarr.pmap, gpuarr.grad, lax, x)
    want = _jax_pmap_results(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)
    same(got[-1], 2 * x)


def test_pmap_axis_longer_than_the_devices():
    n = gpuarr.local_device_count()
    with pytest.raises(ValueError, match=f"mapped axis of size {n + 1}, but only {n} device"):
        gpuarr.pmap(lambda v: v)(np.ones((n + 1, 3)))
    with pytest.raises(ValueError, match="rank should be at least 1"):
        gpuarr.pmap(lambda v: v)(np.ones(()))
