"""Runtime API of the simulated devices (copies cupy_backends/cuda/api/runtime.pyx).

The current device is per thread, as cudaSetDevice's is. A device fault (a misaligned access
found when a kernel runs) is sticky: every runtime call on that device raises it from then on,
as a CUDA context is unusable after such an error.
"""
from __future__ import annotations

import threading

from cupy import _standin

errorInvalidValue = 1  # noqa: N816 - CuPy's names
errorMemoryAllocation = 2  # noqa: N816
errorInvalidDevice = 101  # noqa: N816
errorInvalidResourceHandle = 400  # noqa: N816
errorMisalignedAddress = 716  # noqa: N816
errorIllegalAddress = 700  # noqa: N816
streamLegacy = 1  # noqa: N816 - runtime.pyx: cudaStreamLegacy
streamPerThread = 2  # noqa: N816 - runtime.pyx: cudaStreamPerThread
is_hip = False
_is_hip_environment = False

_NAMES = {
    errorInvalidValue: ("cudaErrorInvalidValue", "invalid argument"),
    errorMemoryAllocation: ("cudaErrorMemoryAllocation", "out of memory"),
    errorInvalidDevice: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    errorInvalidResourceHandle: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
    errorMisalignedAddress: ("cudaErrorMisalignedAddress", "misaligned address"),
    errorIllegalAddress: ("cudaErrorIllegalAddress", "an illegal memory access was encountered"),
}


class CUDARuntimeError(RuntimeError):
    # runtime.pyx: '%s: %s' % (cudaGetErrorName, cudaGetErrorString), status kept
    def __init__(self, status):
        self.status = status
        name, msg = _NAMES.get(status, (f"cudaError{status}", "unknown error"))
        super().__init__(f"{name}: {msg}")

    def __reduce__(self):
        return (type(self), (self.status,))


_tls = threading.local()
_sticky: dict = {}  # device id -> status of the fault that killed its context


def getDeviceCount() -> int:  # noqa: N802
    return _standin.device_count()


def getDevice() -> int:  # noqa: N802
    return getattr(_tls, "device", 0)


def setDevice(device: int) -> None:  # noqa: N802
    if not 0 <= int(device) < getDeviceCount():
        raise CUDARuntimeError(errorInvalidDevice)
    _tls.device = int(device)


def check_sticky(device: int | None = None, driver: bool = False) -> None:
    """Raise the device's sticky fault, as every CUDA call does once the context is dead."""
    status = _sticky.get(getDevice() if device is None else device)
    if status is not None:
        if driver:
            from cupy.cuda.driver import CUDADriverError
            raise CUDADriverError(status)
        raise CUDARuntimeError(status)


def record_fault(device: int, status: int) -> None:
    _sticky.setdefault(device, status)


def memGetInfo() -> tuple:  # noqa: N802
    """(free, total) of the current device: total minus everything cudaMalloc'd there."""
    from cupy.cuda import memory
    dev = getDevice()
    check_sticky(dev)
    total = _standin.device_memory()
    return total - memory.allocated_on(dev), total


def getDeviceProperties(device: int) -> dict:  # noqa: N802
    """An sm_90 part (runtime.pyx returns cudaDeviceProp as a dict, name as bytes)."""
    if not 0 <= int(device) < getDeviceCount():
        raise CUDARuntimeError(errorInvalidDevice)
    return {
        "name": b"CuPy stand-in (simulated sm_90 on the host)",
        "totalGlobalMem": _standin.device_memory(),
        "sharedMemPerBlock": 49152,
        "sharedMemPerBlockOptin": 232448,
        "sharedMemPerMultiprocessor": 233472,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "maxThreadsPerBlock": 1024,
        "maxThreadsDim": (1024, 1024, 64),
        "maxGridSize": (2**31 - 1, 65535, 65535),
        "totalConstMem": 65536,
        "major": 9,
        "minor": 0,
        "multiProcessorCount": 132,
        "maxThreadsPerMultiProcessor": 2048,
        "clockRate": 1980000,
        "memoryClockRate": 2619000,
        "memoryBusWidth": 5120,
        "l2CacheSize": 52428800,
        "pciBusID": int(device),
        "pciDeviceID": 0,
        "pciDomainID": 0,
        "unifiedAddressing": 1,
        "managedMemory": 1,
        "concurrentKernels": 1,
    }


def driverGetVersion() -> int:  # noqa: N802
    return _standin.driver_version()


def runtimeGetVersion() -> int:  # noqa: N802
    return 12090


def deviceSynchronize() -> None:  # noqa: N802
    from cupy.cuda import _queue
    dev = getDevice()
    check_sticky(dev)
    _queue.flush_device(dev)
    _standin.counters.sync()
    check_sticky(dev)


def streamSynchronize(stream_ptr: int) -> None:  # noqa: N802
    from cupy.cuda import _queue
    check_sticky()
    _queue.flush(_queue.queue_for_ptr(stream_ptr))
    _standin.counters.sync()
    check_sticky()
