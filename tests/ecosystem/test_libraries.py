"""The JAX ecosystem on gpuarr: each library's small program (tests/ecosystem/programs/) runs
under the real JAX and under gpuarr (`python -m gpuarr.run`, in a process that never imports
the real jax), and the two agree to rtol 1e-5 in values, shapes and dtypes. All programs run
in one process per side (`programs/_run_all.py`), the JAX one and gpuarr's at the same time.
gpuarr's process runs the platform the suite runs (its GPUARR_PLATFORMS, so the cuda platform
under the CuPy stand-in of docs/cuda-standin.md, whose `cupy` the suite's PYTHONPATH carries),
and GPUARR_PLATFORMS=opencl (PoCL) with the slow tests; JAX's runs on its CPU, without the
stand-in on its path. The libraries are the optional extra `ecosystem` in pyproject.toml; a
program whose library is not installed is skipped."""
import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpuarr

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
STANDIN = Path(__file__).resolve().parents[1] / "cupy_standin"
# "suite": whatever GPUARR_PLATFORMS the suite runs with (unset: gpuarr's own default).
SUITE = "suite"

# program -> the distributions it needs (import names).
CASES = {
    "optax_mlp": ("optax",),
    "chex_dataclass": ("chex",),
    "equinox_mlp": ("equinox",),
    "flax_linen": ("flax",),
    "flax_fp8": ("flax",),
    "flax_fp8_meta": ("flax",),
    "flax_nnx": ("flax", "optax"),
    "distrax_normal": ("distrax",),
    "blackjax_hmc": ("blackjax",),
}


def _missing(name: str) -> list:
    return [m for m in CASES[name] if importlib.util.find_spec(m) is None]


def _start(gpuarr: bool, platform: str = SUITE) -> subprocess.Popen:
    """A process running every installed program, on gpuarr's `platform` or on JAX."""
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not gpuarr:  # JAX never imports CuPy; keep the stand-in's `cupy` out of its way
        inherited = [p for p in inherited if Path(p).resolve() != STANDIN]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(PROGRAMS), *inherited]))
    env.pop("GPUARR_AS_JAX", None)
    if platform != SUITE:
        env["GPUARR_PLATFORMS"] = platform
    names = [n for n in sorted(CASES) if not _missing(n)]
    cmd = [sys.executable] + (["-m", "gpuarr.run"] if gpuarr else []) + \
        [str(PROGRAMS / "_run_all.py"), *names]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=PROGRAMS)


def _collect(proc: subprocess.Popen, platform: str, timeout: int = 900) -> dict:
    """The programs' results, once the process says it ran on `platform` (a default_backend)."""
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(proc.args)} failed:\n{stderr[-4000:]}"
    out = json.loads(stdout)
    assert (out["jax"], out["platform"]) == ("jax", platform)
    return out["programs"]


@functools.cache
def results(platform: str) -> tuple:
    """(gpuarr's results on `platform`, JAX's), the two processes running side by side."""
    ours, theirs = _start(True, platform), _start(False)
    # PoCL (opencl, and the cuda platform on the stand-in) compiles each of the programs'
    # kernels on a first run (an empty kernel cache): on a loaded two-core machine that took
    # more than 900 s.
    backend = gpuarr.default_backend() if platform == SUITE else platform
    return (_collect(ours, backend, timeout=900 if backend == "cpu" else 2400),
            _collect(theirs, "cpu"))


def assert_same(ours: dict, theirs: dict, rtol=1e-5, atol=1e-6) -> None:
    assert sorted(ours) == sorted(theirs)
    for key, want in theirs.items():
        got = ours[key]
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), key
        np.testing.assert_allclose(got["value"], want["value"], rtol=rtol, atol=atol,
                                   err_msg=key)


@pytest.mark.parametrize("platform", [
    SUITE, pytest.param("opencl", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_jax(name, platform):
    missing = _missing(name)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install 'gpuarr[ecosystem]'")
    if platform == "opencl" and importlib.util.find_spec("pyopencl") is None:
        pytest.skip("the opencl platform needs pyopencl (and PoCL): pip install 'pyopencl[pocl]'")
    ours, theirs = results(platform)
    assert "error" not in theirs[name], theirs[name]["error"]
    assert "error" not in ours[name], ours[name]["error"]
    assert_same(ours[name]["results"], theirs[name]["results"])
