"""explain(), GPUARR_DUMP_DIR, config.log_compiles, and whole jitted programs on the opencl
platform (GPUARR_PLATFORMS=opencl)."""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.compiler import render
from gpuarr.compiler.explain import explain, plan_of

pytestmark = pytest.mark.kernels


def softmax(x):
    m = lax.reshape(lax.reduce_max(x, (1,)), (x.shape[0], 1))
    e = jnp.exp(x - m)
    return e / lax.reshape(lax.reduce_sum(e, (1,)), (x.shape[0], 1))


def test_explain_prints_kernels_equations_and_bytes(capsys):
    x = np.ones((8, 32), np.float32)
    text = explain(softmax)(x)
    assert capsys.readouterr().out.strip() == text.strip()
    assert text.startswith("2 kernels")
    assert "reduce_max" in text and "exp" in text and "epilogue" in text
    assert "vs minimum 2048" in text and "blocks x" in text and "why it ends here" in text
    assert "KERNEL void" not in text
    assert "KERNEL void" in explain(softmax, source=True)(x)


def test_dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARR_DUMP_DIR", str(tmp_path))
    plan = plan_of(lambda x: jnp.sin(x) * 2.0, np.ones(4, np.float32))
    render.render_plan(plan)
    (path,) = list(tmp_path.glob("*.cu"))
    text = path.read_text()
    assert "KERNEL void gpuarr_elementwise_0" in text and "sin" in text


def test_log_compiles(caplog, pocl):
    from gpuarr.compiler import compile_closed, passes
    closed = passes.optimize(gpuarr.make_jaxpr(lambda x: jnp.cos(x) + 1.0)(np.ones(3, np.float32)))
    gpuarr.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.INFO, logger="gpuarr"):
            compile_closed(closed)
    finally:
        gpuarr.config.update("jax_log_compiles", False)
    assert any("1 kernels" in r.getMessage() for r in caplog.records)


PROGRAM = textwrap.dedent("""
    import numpy as np
    import gpuarr, gpuarr.numpy as jnp
    from gpuarr import lax
    assert gpuarr.devices()[0].platform == "opencl", gpuarr.devices()
    x = np.random.default_rng(0).standard_normal((16, 33)).astype(np.float32)
    f = gpuarr.jit(lambda x: jnp.tanh(x @ x.T).sum(1) + lax.reduce_max(jnp.exp(x), (1,)))
    got = np.asarray(f(x))
    want = np.tanh(x @ x.T).sum(1) + np.exp(x).max(1)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    print(float(gpuarr.jit(lambda x: jnp.log(jnp.exp(x)))(100.0)))
    print(np.asarray(gpuarr.jit(lambda x: (x + jnp.arange(254.0, 258.0)).astype("uint8"))(0.0)))
""")


@pytest.mark.slow
def test_whole_program_on_the_opencl_platform(pocl):
    env = {**os.environ, "GPUARR_PLATFORMS": "opencl"}
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["100.0", "[254 255 255 255]"]
