"""jax.export in gpuarr's own format: export, call with type checks, serialize and
deserialize (also in a fresh process), and transformations of exported functions."""
import subprocess
import sys
import textwrap
from typing import NamedTuple

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import export


def f(x, y):
    return jnp.sin(x) * y, {"s": x.sum()}


SPEC = gpuarr.ShapeDtypeStruct((3,), jnp.float32)
X = np.array([0.1, 0.5, 2.0], np.float32)


class Pair(NamedTuple):
    a: object
    b: object


def test_export_call_and_types():
    exp = export.export(gpuarr.jit(f))(SPEC, 2.0)
    assert exp.fun_name == "f" and exp.has_vjp()
    assert exp.platforms == (export.default_export_platform(),)
    assert exp.platforms == (gpuarr.default_backend().replace("gpu", "cuda"),)
    assert [a.shape for a in exp.in_avals] == [(3,), ()] and exp.in_avals[1].weak_type
    assert all(not a.weak_type for a in exp.out_avals)
    out = exp.call(X, 3.0)
    np.testing.assert_allclose(np.asarray(out[0]), np.sin(X) * 3, rtol=1e-6)
    assert out[0].dtype == np.float32 and not out[0].weak_type
    np.testing.assert_allclose(float(out[1]["s"]), X.sum(), rtol=1e-6)
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\]"):
        exp.call(np.ones(4, np.float32), 2.0)
    with pytest.raises(ValueError, match=r"Dtype mismatch for args\[0\]: expected float32"):
        exp.call(np.ones(3, np.int32), 2.0)
    with pytest.raises(ValueError, match="pytree structure"):
        exp.call(X)
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        export.export(f)(SPEC, 2.0)
    with pytest.raises(NotImplementedError, match="StableHLO"):
        exp.mlir_module()


def test_transformations_of_an_exported_function():
    exp = export.export(gpuarr.jit(f))(SPEC, 2.0)
    g = gpuarr.grad(lambda x: exp.call(x, 2.0)[0].sum())(X)
    np.testing.assert_allclose(np.asarray(g), 2 * np.cos(X), rtol=1e-6)
    v = gpuarr.vmap(lambda x: exp.call(x, 2.0)[0])(np.stack([X, 2 * X]))
    np.testing.assert_allclose(np.asarray(v), 2 * np.sin(np.stack([X, 2 * X])), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gpuarr.jit(exp.call)(X, 2.0)[0]), 2 * np.sin(X),
                               rtol=1e-6)
    f_vjp = exp.vjp()
    cts = f_vjp.call(X, 2.0, np.ones(3, np.float32), np.float32(1))
    np.testing.assert_allclose(np.asarray(cts[0][0]), 2 * np.cos(X) + 1, rtol=1e-6)
    np.testing.assert_allclose(float(cts[0][1]), np.sin(X).sum(), rtol=1e-6)


def test_serialize_round_trip_and_fresh_process(tmp_path):
    def g(key, a, p):
        noise = gpuarr.random.normal(key, (3,))
        ys = gpuarr.lax.scan(lambda c, x: (c + x, c * x), 0.0, a[0])[1]
        return Pair(noise + jnp.linalg.cholesky(a).sum(), ys * p.a + p.b)
    args = (gpuarr.random.PRNGKey(0), jnp.eye(3) * 2, Pair(1.5, np.float32(2)))
    export.register_namedtuple_serialization(Pair, serialized_name="tests.Pair")
    exp = export.export(gpuarr.jit(g))(*args)
    blob = exp.serialize()
    assert isinstance(blob, bytearray)
    back = export.deserialize(blob)
    assert back.in_tree == exp.in_tree and back.out_avals == exp.out_avals
    want = exp.call(*args)
    for a, b in zip(back.call(*args), want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # A function without custom pytree nodes, read back by another process.
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(export.export(gpuarr.jit(f))(SPEC, 2.0).serialize()))
    code = textwrap.dedent(f"""
        import numpy as np, gpuarr
        from gpuarr import export
        exp = export.deserialize(open({str(path)!r}, "rb").read())
        print(float(exp.call(np.array([0.1, 0.5, 2.0], np.float32), 3.0)[1]["s"]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert abs(float(out.stdout) - X.sum()) < 1e-6


def test_what_cannot_be_serialized_or_read():
    cb = export.export(gpuarr.jit(lambda x: gpuarr.pure_callback(
        lambda v: np.sin(v), gpuarr.ShapeDtypeStruct((3,), np.float32), x)))(SPEC)
    with pytest.raises(ValueError, match="Cannot serialize the exported function"):
        cb.serialize()
    with pytest.raises(ValueError, match="Not a serialized gpuarr Exported"):
        export.deserialize(b"\x08\x01garbage")
    # Bytes that would rebuild anything but gpuarr's and NumPy's types are refused.
    import pickle
    evil = export._FORMAT + pickle.dumps(("x", __import__("os").getcwd))
    with pytest.raises(pickle.UnpicklingError, match="may not hold"):
        export.deserialize(evil)
    with pytest.raises(NotImplementedError, match="symbolic"):
        export.symbolic_shape("b, 3")
