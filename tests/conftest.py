"""Shared test setup: every test starts from the default configuration.

With GPUARR_CUDA_STANDIN=1 the suite runs against the CuPy stand-in (`tests/cupy_standin`, see
docs/cuda-standin.md): `import cupy` finds it, here and in the subprocesses tests start, so the
real cuda platform runs its kernels on PoCL (with GPUARR_PLATFORMS=cuda, as the default)."""
import ctypes
import gc
import os
import sys
from pathlib import Path

import pytest

STANDIN = Path(__file__).parent / "cupy_standin"
STANDIN_ON = os.environ.get("GPUARR_CUDA_STANDIN") == "1"
if STANDIN_ON:
    sys.path.insert(0, str(STANDIN))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(STANDIN)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))

from helpers import jit_runs_numpy_backend  # noqa: E402

import gpuarr  # noqa: E402 - after the stand-in is on the path


def pytest_collection_modifyitems(config, items):
    """Tests of the NumPy backend's generated code (`numpy_backend`) need the cpu platform as
    the default (where its jitted programs compile to kernels, `_numpy_backend_pinned` pins the
    NumPy backend for them), and so do comparisons of devices, meshes and shardings with JAX's
    one CPU device (`jax_cpu_devices`); elsewhere (GPUARR_PLATFORMS=cuda, opencl, native) they
    skip, saying so."""
    backend = gpuarr.default_backend()
    if backend == "cpu":
        return
    skips = {
        "numpy_backend": pytest.mark.skip(
            reason=f"tests the NumPy backend; the default platform is {backend}"),
        "jax_cpu_devices": pytest.mark.skip(
            reason=f"compares devices and shardings with JAX's one CPU device; the default "
                   f"platform is {backend} with {gpuarr.device_count()} device(s)"),
    }
    for item in items:
        for marker, skip in skips.items():
            if item.get_closest_marker(marker):
                item.add_marker(skip)


def pytest_report_header(config):
    if STANDIN_ON:
        return f"cuda: the CuPy stand-in ({STANDIN}), default platform {gpuarr.default_backend()}"
    return None


# JAX's caches keep the executable of every oracle program a test compiled: in one process
# running the suite they were most of the growth (1.3 of the 1.5 GB gained over 520 tests of
# tests/lax, on the cpu platform and on the CuPy stand-in alike), which took each xdist worker of
# a whole run past 4.5 GB. They are emptied between tests, with gpuarr's own (compiled programs
# and, on the cuda platform, the eager operations' kernels), once the process has grown this
# much since they were last emptied.
_JAX_CACHE_GROWTH = 1 << 30
_rss_at_clear = [0]


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0  # no /proc: nothing to measure, nothing emptied


@pytest.fixture(autouse=True)
def _bounded_jax_caches():
    yield
    rss = _resident_bytes()
    if not _rss_at_clear[0]:
        _rss_at_clear[0] = rss
    jax = sys.modules.get("jax")
    if rss - _rss_at_clear[0] > _JAX_CACHE_GROWTH:
        if jax is not None:
            jax.clear_caches()
        gpuarr.clear_caches()
        gc.collect()
        try:  # glibc keeps freed memory mapped; hand it back so the next measure starts low
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass
        _rss_at_clear[0] = _resident_bytes()


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(gpuarr.config._values)
    yield
    for name, value in saved.items():
        if gpuarr.config._values[name] != value:
            gpuarr.config.update(name, value)


@pytest.fixture(autouse=True)
def _numpy_backend_pinned(request, _restore_config):
    """A `numpy_backend` test on the cpu platform runs with `jax_platforms="cpu"`, which
    compiles jitted programs with the NumPy backend even where a C compiler makes them native
    kernels by default (the configuration is restored after the test)."""
    if request.node.get_closest_marker("numpy_backend") and gpuarr.default_backend() == "cpu" \
            and not jit_runs_numpy_backend():
        gpuarr.config.update("jax_platforms", "cpu")
