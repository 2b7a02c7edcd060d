"""Host-side tracing, as `jax.profiler`: `start_trace(log_dir)` ... `stop_trace()` (or the
`trace(log_dir)` context manager) record the time ranges marked with `TraceAnnotation`,
`StepTraceAnnotation` and `annotate_function`, plus every jit compilation and every call of a
compiled function, and write them as a Chrome trace-event file,
`log_dir/plugins/profile/<date_time>/<host>.trace.json.gz`, where TensorBoard's profile plugin
looks, which Perfetto (https://ui.perfetto.dev) and chrome://tracing open. On the NumPy backend
a compiled call's range is its whole run; on a GPU it is the launch (work runs asynchronously).
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable

from gpuarr.config import config

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "start_trace", "stop_trace", "trace"]


class ProfileOptions:
    """Options of a trace (`jax.profiler.ProfileOptions`). gpuarr records host events only, so
    the tracer levels are kept for compatibility and do not change what is recorded."""

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.device_tracer_level = 1
        self.include_dataset_ops = True
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.advanced_configuration = {}


class _Session:
    def __init__(self, log_dir, perfetto: bool):
        self.log_dir = os.fspath(log_dir)
        self.perfetto = perfetto
        self.events: list = []
        self.lock = threading.Lock()

    def add(self, name: str, start_ns: int, end_ns: int, args: dict) -> None:
        event = {"name": name, "ph": "X", "ts": start_ns / 1e3, "dur": (end_ns - start_ns) / 1e3,
                 "pid": os.getpid(), "tid": threading.get_ident()}
        if args:
            event["args"] = {k: str(v) for k, v in args.items()}
        with self.lock:
            self.events.append(event)

    def write(self) -> str:
        run = time.strftime("%Y_%m_%d_%H_%M_%S")
        folder = os.path.join(self.log_dir, "plugins", "profile", run)
        os.makedirs(folder, exist_ok=True)
        names = [f"{socket.gethostname()}.trace.json.gz"]
        if self.perfetto:
            names.append("perfetto_trace.json.gz")
        body = json.dumps({"displayTimeUnit": "ns", "traceEvents": self.events}).encode()
        for name in names:
            with gzip.open(os.path.join(folder, name), "wb") as f:
                f.write(body)
        return folder


_session: _Session | None = None
_session_lock = threading.Lock()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Start recording a trace, to be written under `log_dir` by `stop_trace`. Only one trace
    runs at a time. `create_perfetto_trace` also writes `perfetto_trace.json.gz` beside it;
    `create_perfetto_link` does the same (gpuarr serves no link: open the file in Perfetto)."""
    global _session
    with _session_lock:
        if _session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run "
                               "at a time.")
        _session = _Session(log_dir, create_perfetto_trace or create_perfetto_link)
        config._set_profiling(True)


def stop_trace() -> None:
    """Stop the running trace and write it (see the module docstring for where)."""
    global _session
    with _session_lock:
        if _session is None:
            raise RuntimeError("No profile started")
        session, _session = _session, None
        config._set_profiling(False)
    folder = session.write()
    if session.perfetto:
        print(f"Perfetto trace written to {folder}; open it at https://ui.perfetto.dev")


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options: ProfileOptions | None = None):
    """Context manager: `start_trace` on entry, `stop_trace` on exit."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """Context manager that records the time range it encloses under `name` (with the keyword
    arguments as the event's arguments) while a trace runs; it costs next to nothing
    otherwise."""

    __slots__ = ("name", "kwargs", "_start")

    def __init__(self, name: str, **kwargs):
        self.name = name
        self.kwargs = kwargs
        self._start = None

    def __enter__(self):
        if _session is not None:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        session, start = _session, self._start
        if session is not None and start is not None:
            session.add(self.name, start, time.perf_counter_ns(), self.kwargs)
        self._start = None


class StepTraceAnnotation(TraceAnnotation):
    """A TraceAnnotation marking one step of a loop (pass `step_num=`), as profilers group
    training steps."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
    """Decorator: every call of `func` is a TraceAnnotation named `name` (by default the
    function's qualified name)."""
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def recording() -> bool:
    """Whether a trace is running (jit checks this on its full call path)."""
    return _session is not None
