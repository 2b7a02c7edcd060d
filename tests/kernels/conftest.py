"""Kernel tests need PoCL (OpenCL on the CPU) and NVRTC, and their native column a C compiler:
the fixtures skip a test, saying what to install, when one is missing. Tests that run kernels
(through `run_kernel` or kernel_harness) run once per executor: `pocl` (the GPU dialect on PoCL,
compile-checked by NVRTC) and `native` (the C dialect built by the system C compiler)."""
import kernel_harness
import numpy as np
import pytest

from gpuarr.backends import native, nvrtc, opencl
from gpuarr.compiler import render

BACKENDS = ("pocl", "native")


def _require(ok: bool, what: str) -> None:
    if not ok:
        pytest.skip(f"{what} is not installed")


_HARNESS = ("check", "run_kernels", "run_both")


def pytest_generate_tests(metafunc):
    module = metafunc.module
    runs_kernels = "run_kernel" in metafunc.fixturenames or any(
        getattr(module, n, None) is getattr(kernel_harness, n) for n in _HARNESS)
    if runs_kernels and "kernel_backend" in metafunc.fixturenames:
        metafunc.parametrize("kernel_backend", BACKENDS, indirect=True)


@pytest.fixture(autouse=True)
def kernel_backend(request):
    """The kernel executor of this test ("pocl" unless the test runs on both)."""
    backend = getattr(request, "param", "pocl")
    if backend == "native":
        _require(native.available(), "a C compiler (gcc or clang; set CC)")
    kernel_harness.BACKEND[0] = backend
    yield backend
    kernel_harness.BACKEND[0] = "pocl"


@pytest.fixture
def pocl(kernel_backend):
    if kernel_backend == "pocl":
        _require(opencl.available(), "PoCL / pyopencl (pip install 'pyopencl[pocl]')")


@pytest.fixture
def have_nvrtc(kernel_backend):
    if kernel_backend == "pocl":
        _require(nvrtc.available(), "NVRTC (pip install nvidia-cuda-nvrtc-cu12)")


@pytest.fixture
def run_kernel(pocl, have_nvrtc, kernel_backend):
    """Render a kernel spec and run it: on PoCL after compiling it with NVRTC for sm_90, or
    (native) in the C dialect; return the outputs."""

    def run(kernel, inputs: dict, outputs: dict) -> dict:
        rk = render.render(kernel, "c" if kernel_backend == "native" else "gpu")
        if kernel_backend == "pocl":
            nvrtc.compile(rk.source, rk.name, arch="sm_90")
        arrays = {**{k: np.ascontiguousarray(v).ravel() for k, v in inputs.items()},
                  **{k: np.array(v).ravel() for k, v in outputs.items()},
                  **{k: np.zeros(n, dtype) for k, n, dtype in rk.scratch}}
        got = kernel_harness.run_rendered(rk, arrays, tuple(outputs))
        return {k: got[k].reshape(np.shape(outputs[k])) for k in outputs}

    return run
