"""jax.smap: shard_map over one mesh axis with vmap-style integer axes."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.sharding import AxisType


def _run(jax, jnp):
    out = []
    mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    with jax.set_mesh(mesh):
        f = jax.smap(lambda a: jax.lax.psum(a, "x"), in_axes=0, out_axes=0, axis_name="x")
        out.append(f(jnp.arange(4.0)))
        out.append(jax.smap(lambda a, b: a * b, in_axes=(0, None), out_axes=0,
                            axis_name="x")(jnp.arange(4.0), 2.0))
        g = jax.smap(lambda a: a.sum(keepdims=True) + jax.lax.axis_index("x"), in_axes=1,
                     out_axes=0, axis_name="x")
        out.append(jax.jit(g)(jnp.ones((2, 3))))
    for bad in (lambda: jax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="x")(jnp.ones(4)),
                lambda: jax.smap(lambda a: a, in_axes=[0], out_axes=0, axis_name="x"),
                lambda: jax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=["x"])):
        try:
            bad()
            out.append("no error")
        except (TypeError, ValueError) as e:
            out.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    return out


def test_smap_values_and_errors():
    got = _run(gpuarr, jnp)
    np.testing.assert_array_equal(np.asarray(got[0]), np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(got[1]), 2 * np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(got[2]), [[6.0]])
    assert got[3].startswith("ValueError") and got[4].startswith("TypeError: smap in_axes")
    assert got[5].startswith("TypeError: smap axis_name")
    mesh = gpuarr.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
    with gpuarr.set_mesh(mesh):  # as a decorator factory
        @gpuarr.smap(in_axes=0, out_axes=0, axis_name="x")
        def double(a):
            return 2 * a
        np.testing.assert_array_equal(np.asarray(double(jnp.ones(3))), 2 * np.ones(3))


def test_smap_matches_jax():
    jax = pytest.importorskip("jax")
    for ours, theirs in zip(_run(gpuarr, jnp), _run(jax, jax.numpy)):
        if isinstance(ours, str):
            assert ours == theirs
        else:
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
