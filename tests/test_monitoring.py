"""gpuarr.monitoring against jax.monitoring: listeners of each kind, and jit's compile events."""
import jax
import jax.numpy as jnp
import pytest

import gpuarr
import gpuarr.numpy as gnp


@pytest.fixture(params=["gpuarr", "jax"])
def lib(request):
    mod = gpuarr if request.param == "gpuarr" else jax
    mod.monitoring.clear_event_listeners()
    yield mod
    mod.monitoring.clear_event_listeners()


def test_each_listener_kind_gets_its_records(lib):
    m = lib.monitoring
    seen = []
    m.register_event_listener(lambda e, **kw: seen.append(("event", e, kw)))
    m.register_event_duration_secs_listener(lambda e, d, **kw: seen.append(("dur", e, d, kw)))
    m.register_event_time_span_listener(lambda e, s, t, **kw: seen.append(("span", e, s, t, kw)))

    def scalar(e, v, **kw):
        seen.append(("scalar", e, v, kw))

    m.register_scalar_listener(scalar)
    m.record_event("/a", tag="x")
    m.record_event_duration_secs("/b", 0.5, tag="y")
    m.record_event_time_span("/c", 1.0, 2.5)
    m.record_scalar("/d", 7)
    m.unregister_scalar_listener(scalar)
    assert seen == [("event", "/a", {"tag": "x"}), ("dur", "/b", 0.5, {"tag": "y"}),
                    ("span", "/c", 1.0, 2.5, {}), ("scalar", "/d", 7, {})]


def test_unregister_and_clear(lib):
    m = lib.monitoring
    seen = []

    def listener(e, **kw):
        seen.append(e)

    m.register_event_listener(listener)
    m.record_event("/one")
    m.unregister_event_listener(listener)
    m.record_event("/two")
    assert seen == ["/one"]
    # Unregistering twice: JAX fails an assert, gpuarr says what went wrong.
    with pytest.raises(AssertionError if lib is jax else ValueError):
        m.unregister_event_listener(listener)
    m.register_event_duration_secs_listener(lambda e, d: seen.append(d))
    m.clear_event_listeners()
    m.record_event_duration_secs("/s", 3.0)
    assert seen == ["/one"]


def test_clear_removes_scalar_listeners_too():
    # JAX 0.10.2's clear_event_listeners leaves scalar listeners registered (it rebinds a
    # local name); gpuarr clears every kind, as its docstring says.
    seen = []
    gpuarr.monitoring.register_scalar_listener(lambda e, v: seen.append(v))
    gpuarr.monitoring.clear_event_listeners()
    gpuarr.monitoring.record_scalar("/s", 3)
    assert seen == []


def _compile_events(lib, np_mod):
    durations = []
    lib.monitoring.register_event_duration_secs_listener(
        lambda e, d, **kw: durations.append((e, kw.get("fun_name"), d)))

    def scaled_sum(x):
        return (x * 2).sum()

    f = lib.jit(scaled_sum)
    x = np_mod.ones(3)
    durations.clear()  # making `x` may itself compile
    f(x)
    first = list(durations)
    durations.clear()
    f(x)
    return first, list(durations)


def test_jit_records_trace_and_compile_durations_like_jax():
    jax.monitoring.clear_event_listeners()
    gpuarr.monitoring.clear_event_listeners()
    try:
        want_first, want_again = _compile_events(jax, jnp)
        got_first, got_again = _compile_events(gpuarr, gnp)
    finally:
        jax.monitoring.clear_event_listeners()
        gpuarr.monitoring.clear_event_listeners()
    events = {(e, name) for e, name, _ in got_first}
    assert events == {("/jax/core/compile/jaxpr_trace_duration", "scaled_sum"),
                      ("/jax/core/compile/backend_compile_duration", "jit(scaled_sum)")}
    assert events <= {(e, name) for e, name, _ in want_first}
    assert all(isinstance(d, float) and d >= 0 for _, _, d in got_first)
    assert got_again == want_again == []  # a cached call neither traces nor compiles
