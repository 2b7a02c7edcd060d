"""The JAX ecosystem on gpuarr: each library's small program (tests/ecosystem/programs/) runs
under the real JAX and under gpuarr (`python -m gpuarr.run`, in a process that never imports
the real jax) on the cpu platform and on GPUARR_PLATFORMS=opencl (PoCL), and the two agree to
rtol 1e-5 in values, shapes and dtypes. The libraries are
the optional extra `ecosystem` in pyproject.toml; a program whose library is not installed is
skipped."""
import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"

# program -> the distributions it needs (import names).
CASES = {
    "optax_mlp": ("optax",),
    "chex_dataclass": ("chex",),
    "equinox_mlp": ("equinox",),
    "flax_linen": ("flax",),
    "flax_nnx": ("flax", "optax"),
    "distrax_normal": ("distrax",),
    "blackjax_hmc": ("blackjax",),
}


@functools.cache
def run_program(name: str, gpuarr: bool, platform: str = "cpu") -> dict:
    """Run one program (on gpuarr's `platform`); return its reported results."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(PROGRAMS), os.environ.get("PYTHONPATH", "")]))
    env.pop("GPUARR_AS_JAX", None)
    env["GPUARR_PLATFORMS"] = platform
    cmd = [sys.executable] + (["-m", "gpuarr.run"] if gpuarr else []) + [str(PROGRAMS / f"{name}.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=PROGRAMS, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout)
    assert out["jax"] == "jax"
    return out["results"]


def assert_same(ours: dict, theirs: dict, rtol=1e-5, atol=1e-6) -> None:
    assert sorted(ours) == sorted(theirs)
    for key, want in theirs.items():
        got = ours[key]
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), key
        np.testing.assert_allclose(got["value"], want["value"], rtol=rtol, atol=atol,
                                   err_msg=key)


@pytest.mark.parametrize("platform", ["cpu", "opencl"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_jax(name, platform):
    missing = [m for m in CASES[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install 'gpuarr[ecosystem]'")
    if platform == "opencl" and importlib.util.find_spec("pyopencl") is None:
        pytest.skip("the opencl platform needs pyopencl (and PoCL): pip install 'pyopencl[pocl]'")
    assert_same(run_program(name, True, platform), run_program(name, False))
