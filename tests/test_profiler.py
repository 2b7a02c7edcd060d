"""gpuarr.profiler: annotations, jit compilations and calls written as a Chrome trace."""
import glob
import gzip
import json
import os

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp


def _events(log_dir, pattern="*.trace.json.gz"):
    (path,) = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", pattern))
    return json.load(gzip.open(path))["traceEvents"]


def test_trace_records_annotations_compiles_and_calls(tmp_path):
    f = jax.jit(lambda x: jnp.sin(x) * 2)

    @jax.profiler.annotate_function
    def step(x):
        return f(x).block_until_ready()

    with jax.profiler.trace(tmp_path):
        for i in range(2):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                out = step(jnp.ones(3))
    np.testing.assert_allclose(np.asarray(out), 2 * np.sin(1.0), rtol=1e-6)
    events = _events(tmp_path)
    names = [e["name"] for e in events]
    assert names.count("compile jit(<lambda>)") == 1
    assert names.count("jit(<lambda>)") == 2  # the cached call is recorded too
    steps = [e for e in events if e["name"] == "train"]
    assert [e["args"]["step_num"] for e in steps] == ["0", "1"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    inner = next(e for e in events if e["name"].endswith("step"))
    assert steps[0]["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= (
        steps[0]["ts"] + steps[0]["dur"] + 1e-3)


def test_nothing_is_recorded_outside_a_trace(tmp_path):
    with jax.profiler.TraceAnnotation("outside"):
        pass
    jax.profiler.start_trace(tmp_path, create_perfetto_trace=True)
    with jax.profiler.TraceAnnotation("inside", phase="a"):
        pass
    jax.profiler.stop_trace()
    assert [e["name"] for e in _events(tmp_path)] == ["inside"]
    assert [e["name"] for e in _events(tmp_path, "perfetto_trace.json.gz")] == ["inside"]


def test_one_trace_at_a_time(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        jax.profiler.stop_trace()
    with jax.profiler.trace(tmp_path):
        with pytest.raises(RuntimeError, match="already been started"):
            jax.profiler.start_trace(tmp_path)
    assert not jax.profiler.recording()
    assert jax.config._fast_dispatch  # jit's fast path is back after the trace
