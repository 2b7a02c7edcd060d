"""cupyx.cusolver of the stand-in: `check_availability` (cupyx/_cusolver.pyx), which compares
the cuSOLVER library's version number (major * 1000 + minor * 100 + patch) with the version
each routine appeared in. The stand-in's cuSOLVER is CUDA 12.9's, 11.7.4."""
from cupy import _standin

_available_cuda_version = {
    "gesvdj": (0, None), "gesvdjBatched": (0, None), "gesvda": (0, None),
    "potrfBatched": (0, None), "potrsBatched": (0, None), "syevj": (0, None),
    "gesv": (0, None), "gels": (0, None), "csrlsvqr": (0, None),
    "geev": (11700, None),  # cusolverDnXgeev, new in CUDA 12.6 update 2
}


def check_availability(name):
    if name not in _available_cuda_version:
        raise ValueError(f"No available version information specified for {name}")
    added, removed = _available_cuda_version[name]
    version = _standin.cusolver_version()
    if added is not None and version < added:
        return False
    return not (removed is not None and version >= removed)
