"""Streams and events (copies cupy/cuda/stream.pyx), over the deferred queues of `_queue`.

The current stream is per thread and per device. `Stream.null` is the legacy default stream
(ptr 0). An event remembers the marker op its last `record` queued; synchronising it runs the
queue up to there. `done` answers whether that work has run; asking also lets the simulated
GPU make progress, so a polling loop ends as it would on hardware.
"""
from __future__ import annotations

import itertools
import threading

from cupy import _standin
from cupy.cuda import _queue, runtime

_tls = threading.local()
_handles = itertools.count(0x7F5A00001000, 0x200)  # fake cudaStream_t / cudaEvent_t values


def _current() -> dict:
    cur = getattr(_tls, "streams", None)
    if cur is None:
        cur = _tls.streams = {}
    return cur


class _BaseStream:
    def __init__(self, ptr: int, device_id: int):
        self.ptr, self.device_id = int(ptr), device_id
        self._prev: list = []

    def _queue(self):
        return _queue.queue_for_ptr(self.ptr, self.device_id)

    def _dev(self) -> int:
        return runtime.getDevice() if self.device_id < 0 else self.device_id

    def __eq__(self, other):
        return isinstance(other, _BaseStream) and (self.ptr, self.device_id) == (other.ptr, other.device_id)

    def __hash__(self):
        return hash((self.ptr, self.device_id))

    def __repr__(self):
        return f"<{type(self).__name__} {self.ptr} (device {self.device_id})>"

    def __enter__(self):
        cur = _current()
        dev = self._dev()
        self._prev.append((dev, cur.get(dev)))
        cur[dev] = self
        return self

    def __exit__(self, *exc):
        dev, prev = self._prev.pop()
        _current()[dev] = prev

    def use(self):
        _current()[self._dev()] = self
        return self

    def synchronize(self) -> None:
        # stream.pyx: runtime.streamSynchronize(self.ptr)
        dev = self._dev()
        runtime.check_sticky(dev)
        _queue.flush(self._queue())
        _standin.counters.sync()
        runtime.check_sticky(dev)

    @property
    def done(self) -> bool:
        runtime.check_sticky(self._dev())
        q = self._queue()
        busy = bool(q.pending)
        if busy:
            _queue.flush(q)  # progress: the next query sees the work finished
        return not busy

    def query(self) -> bool:
        return self.done

    def record(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        # stream.pyx: runtime.streamWaitEvent - later work here follows the event's work
        runtime.check_sticky(self._dev())
        if event._op is not None and not event._op.done:
            _queue.submit(None, self._queue(), deps=[event._op])


class Stream(_BaseStream):
    """A CUDA stream (stream.pyx: Stream(null=False, non_blocking=False, ptds=False))."""

    null: Stream  # set below

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            super().__init__(0, -1)
        elif ptds:
            super().__init__(runtime.streamPerThread, -1)
        else:
            dev = runtime.getDevice()
            runtime.check_sticky(dev)
            super().__init__(next(_handles), dev)
            _queue.register_stream(self.ptr, dev, not non_blocking)
        self.non_blocking = bool(non_blocking)


class ExternalStream(_BaseStream):
    """A stream someone else created, known by its handle (stream.pyx: ExternalStream)."""

    def __init__(self, ptr, device_id=-1):
        super().__init__(ptr, device_id)


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


def get_current_stream(device_id: int = -1) -> _BaseStream:
    dev = runtime.getDevice() if device_id < 0 else device_id
    s = _current().get(dev)
    return Stream.null if s is None else s


def get_current_stream_ptr() -> int:
    return get_current_stream().ptr


def get_default_stream_ptr() -> int:
    return runtime.streamLegacy


class Event:
    """A CUDA event (stream.pyx: Event(block=False, disable_timing=False, interprocess=False))."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        runtime.check_sticky()
        self.ptr = next(_handles)
        self.device_id = runtime.getDevice()
        self._op = None

    def record(self, stream=None) -> None:
        stream = get_current_stream() if stream is None else stream
        runtime.check_sticky(self.device_id)
        self._op = _queue.submit(None, stream._queue())

    def synchronize(self) -> None:
        runtime.check_sticky(self.device_id)
        _queue.run_until(self._op)
        _standin.counters.sync()
        runtime.check_sticky(self.device_id)

    @property
    def done(self) -> bool:
        runtime.check_sticky(self.device_id)
        busy = _queue.pending(self._op)
        if busy:
            _queue.run_until(self._op)  # progress: the next query sees the work finished
        return not busy


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    end_event.synchronize()
    return 0.0
