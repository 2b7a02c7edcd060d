"""Kernel tests need PoCL (OpenCL on the CPU) and NVRTC: the `pocl` and `have_nvrtc` fixtures
skip a test, saying what to install, when either is missing."""
import numpy as np
import pytest

from gpuarr.backends import nvrtc, opencl
from gpuarr.compiler import render


def _require(ok: bool, what: str) -> None:
    if not ok:
        pytest.skip(f"{what} is not installed")


@pytest.fixture
def pocl():
    _require(opencl.available(), "PoCL / pyopencl (pip install 'pyopencl[pocl]')")


@pytest.fixture
def have_nvrtc():
    _require(nvrtc.available(), "NVRTC (pip install nvidia-cuda-nvrtc-cu12)")


@pytest.fixture
def run_kernel(pocl, have_nvrtc):
    """Render a kernel spec, compile it with NVRTC for sm_90, run it on PoCL; return outputs."""

    def run(kernel, inputs: dict, outputs: dict) -> dict:
        rk = render.render(kernel)
        nvrtc.compile(rk.source, rk.name, arch="sm_90")
        arrays = {**{k: np.ascontiguousarray(v).ravel() for k, v in inputs.items()},
                  **{k: np.array(v).ravel() for k, v in outputs.items()},
                  **{k: np.zeros(n, dtype) for k, n, dtype in rk.scratch}}
        for entry, global_size in rk.setup:   # earlier entry points write the scratch buffers
            arrays.update(opencl.run(rk.source, entry, global_size, rk.local_size, rk.arg_names,
                                     arrays, tuple(k for k, _, _ in rk.scratch)))
        got = opencl.run(rk.source, rk.name, rk.global_size, rk.local_size, rk.arg_names,
                         arrays, tuple(outputs))
        return {k: got[k].reshape(np.shape(outputs[k])) for k in outputs}

    return run
