"""Driver API errors (copies cupy_backends/cuda/api/driver.pyx: CUDADriverError's message is
`cuGetErrorName: cuGetErrorString`)."""
from __future__ import annotations

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_MISALIGNED_ADDRESS = 716

_NAMES = {
    CUDA_ERROR_INVALID_VALUE: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    CUDA_ERROR_OUT_OF_MEMORY: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    CUDA_ERROR_INVALID_DEVICE: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    CUDA_ERROR_NOT_FOUND: ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                         "too many resources requested for launch"),
    CUDA_ERROR_MISALIGNED_ADDRESS: ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    CUDA_ERROR_ILLEGAL_ADDRESS: ("CUDA_ERROR_ILLEGAL_ADDRESS",
                                 "an illegal memory access was encountered"),
}


class CUDADriverError(RuntimeError):
    # cupy_backends/cuda/api/driver.pyx: '%s: %s' % (name, msg), status kept
    def __init__(self, status):
        self.status = status
        name, msg = _NAMES.get(status, (f"CUDA_ERROR_{status}", "unknown error"))
        super().__init__(f"{name}: {msg}")

    def __reduce__(self):
        return (type(self), (self.status,))


def get_build_version() -> int:
    from cupy.cuda import runtime
    return runtime.runtimeGetVersion()


def driverGetVersion() -> int:  # noqa: N802 - CuPy's name
    from cupy import _standin
    return _standin.driver_version()
