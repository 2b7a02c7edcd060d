"""gpuarr.monitoring: listeners for named events, durations and scalars (as `jax.monitoring`).

Libraries record events with `record_event*`; tools register listeners. gpuarr's jit records
JAX's compile events: `/jax/core/compile/jaxpr_trace_duration` (tracing a function, with
`fun_name`) and `/jax/core/compile/backend_compile_duration` (generating its code, with
`fun_name='jit(name)'`).
"""
from __future__ import annotations

from collections.abc import Callable

_event_listeners: list[Callable] = []
_event_duration_secs_listeners: list[Callable] = []
_event_time_span_listeners: list[Callable] = []
_scalar_listeners: list[Callable] = []


def record_event(event: str, **kwargs) -> None:
    """Call every event listener with `event` and `kwargs` (pass the same keyword names, in the
    same order, every time an event is recorded)."""
    for callback in _event_listeners:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Call every duration listener with `event`, `duration` (seconds) and `kwargs`."""
    for callback in _event_duration_secs_listeners:
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Call every time-span listener with `event`, its start and end times (seconds) and
    `kwargs`."""
    for callback in _event_time_span_listeners:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
    """Call every scalar listener with `event`, `value` and `kwargs`."""
    for callback in _scalar_listeners:
        callback(event, value, **kwargs)


def has_duration_listeners() -> bool:
    """Whether anyone listens for durations (jit times its compiles only then)."""
    return bool(_event_duration_secs_listeners)


def register_event_listener(callback: Callable) -> None:
    """Have `callback(event, **kwargs)` called by every `record_event`."""
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: Callable) -> None:
    """Have `callback(event, duration, **kwargs)` called by every `record_event_duration_secs`."""
    _event_duration_secs_listeners.append(callback)


def register_event_time_span_listener(callback: Callable) -> None:
    """Have `callback(event, start_time, end_time, **kwargs)` called by every
    `record_event_time_span`."""
    _event_time_span_listeners.append(callback)


def register_scalar_listener(callback: Callable) -> None:
    """Have `callback(event, value, **kwargs)` called by every `record_scalar`."""
    _scalar_listeners.append(callback)


def unregister_event_listener(callback: Callable) -> None:
    """Stop calling `callback` (registered with `register_event_listener`)."""
    _remove(_event_listeners, callback)


def unregister_event_duration_listener(callback: Callable) -> None:
    """Stop calling `callback` (registered with `register_event_duration_secs_listener`)."""
    _remove(_event_duration_secs_listeners, callback)


def unregister_event_time_span_listener(callback: Callable) -> None:
    """Stop calling `callback` (registered with `register_event_time_span_listener`)."""
    _remove(_event_time_span_listeners, callback)


def unregister_scalar_listener(callback: Callable) -> None:
    """Stop calling `callback` (registered with `register_scalar_listener`)."""
    _remove(_scalar_listeners, callback)


def _remove(listeners: list, callback: Callable) -> None:
    if callback not in listeners:  # JAX asserts; say what went wrong instead
        raise ValueError(f"{callback!r} is not a registered listener of this kind; register it "
                         "first, or unregister it only once.")
    listeners.remove(callback)


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    for listeners in (_event_listeners, _event_duration_secs_listeners,
                      _event_time_span_listeners, _scalar_listeners):
        listeners.clear()
