"""Deferred, in-order execution per stream: the stand-in's model of a GPU's work queues.

Every device operation is an `Op` appended to the queue of the stream current when it was
issued; it runs only when something forces it (a synchronisation, a blocking copy to the host,
a scalar conversion, or a wait on an event recorded after it). An op runs after everything
before it on its queue and after the ops it depends on. Dependencies follow CUDA's rules
(copied from cupy/cuda/stream.pyx's use of cudaStreamCreate/cudaStreamNonBlocking and the
CUDA programming guide's legacy default stream): work on the legacy null stream waits for all
earlier work on the device's blocking streams and they wait for earlier null-stream work;
non-blocking streams order only through events. Ops hold pointers, not arrays, so memory
freed and reused while an op is pending behaves as it does on a GPU.
"""
from __future__ import annotations

import collections
import itertools
import threading

from cupy.cuda import runtime

_lock = threading.RLock()
_seq = itertools.count()
_queues: dict = {}  # (device, stream ptr) -> Queue
_stream_info: dict = {}  # stream ptr -> (device, blocking) for streams the stand-in created


class Op:
    __slots__ = ("seq", "fn", "deps", "done", "queue")

    def __init__(self, queue, fn, deps):
        self.seq, self.fn, self.deps, self.done, self.queue = next(_seq), fn, deps, False, queue


class Queue:
    """The pending work of one stream on one device."""

    def __init__(self, device: int, ptr: int, blocking: bool):
        self.device, self.ptr, self.blocking = device, ptr, blocking
        self.legacy = ptr in (0, runtime.streamLegacy)
        self.pending: collections.deque = collections.deque()
        self.last = None  # the newest op ever submitted here


def register_stream(ptr: int, device: int, blocking: bool) -> None:
    _stream_info[ptr] = (device, blocking)


def queue_for_ptr(ptr: int, device: int | None = None) -> Queue:
    """The queue of stream `ptr`; 0 and cudaStreamLegacy (1) are the device's null stream."""
    ptr = 0 if ptr == runtime.streamLegacy else int(ptr)
    dev, blocking = _stream_info.get(ptr, (runtime.getDevice() if device is None or device < 0
                                           else device, True))
    key = (dev, ptr)
    q = _queues.get(key)
    if q is None:
        with _lock:
            q = _queues.setdefault(key, Queue(dev, ptr, blocking))
    return q


def current_queue() -> Queue:
    from cupy.cuda import stream
    return stream.get_current_stream()._queue()


def _implicit_deps(queue: Queue) -> list:
    """The legacy null stream's implicit synchronisation with blocking streams."""
    deps = []
    for (dev, _), other in list(_queues.items()):
        if other is queue or dev != queue.device or other.last is None or other.last.done:
            continue
        if (queue.legacy and other.blocking and not other.legacy) or (
                queue.blocking and not queue.legacy and other.legacy):
            deps.append(other.last)
    return deps


def submit(fn, queue: Queue | None = None, deps=()) -> Op:
    """Queue `fn()` (None for a marker) on `queue` (default: the current stream's)."""
    queue = current_queue() if queue is None else queue
    with _lock:
        op = Op(queue, fn, list(deps) + _implicit_deps(queue))
        queue.pending.append(op)
        queue.last = op
    return op


def run_until(op: Op) -> None:
    """Run `op` and everything it must follow."""
    if op is None or op.done:
        return
    with _lock:
        q = op.queue
        while not op.done:
            head = q.pending[0]
            for dep in head.deps:
                run_until(dep)
            q.pending.popleft()
            head.done = True
            if head.fn is not None and q.device not in runtime._sticky:
                head.fn()  # a dead context runs nothing more


def flush(queue: Queue) -> None:
    if queue.pending:
        run_until(queue.pending[-1])


def flush_device(device: int) -> None:
    for (dev, _), q in list(_queues.items()):
        if dev == device:
            flush(q)


def flush_all() -> None:
    for q in list(_queues.values()):
        flush(q)


def pending(op: Op | None) -> bool:
    return op is not None and not op.done
