"""cupy.cuda of the stand-in: devices, streams, events, memory, NVRTC and kernel functions."""
from cupy.cuda import compiler, device, driver, function, memory, runtime, stream  # noqa: F401
from cupy.cuda.device import Device, get_device_id  # noqa: F401
from cupy.cuda.memory import (  # noqa: F401
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    alloc,
    get_allocator,
    get_default_memory_pool,
    set_allocator,
    using_allocator,
)
from cupy.cuda.stream import Event, ExternalStream, Stream, get_current_stream, get_elapsed_time  # noqa: F401

nvrtc = compiler


def is_available() -> bool:
    return runtime.getDeviceCount() > 0


def get_cuda_path():
    return None
