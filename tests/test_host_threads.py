"""The host's cores: blocks over the shared pool, split ufuncs, and the load check that decides
whether large matrix products use BLAS threads (other processes' CPU time, not this one's)."""
import numpy as np
import pytest

from gpuarr.backends import host_threads


def test_run_in_blocks_covers_the_range_once():
    n = 5 * host_threads._PARALLEL_MIN + 7
    hits = np.zeros(n, np.int64)

    def chunk(lo, hi):
        hits[lo:hi] += 1

    host_threads.run_in_blocks(chunk, n)
    np.testing.assert_array_equal(hits, np.ones(n, np.int64))


@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.less])
def test_split_ufunc_equals_the_ufunc(ufunc):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5)).astype(np.float32)
    row = rng.normal(size=(5,)).astype(np.float32)
    split = host_threads.split_ufunc(ufunc, x.shape, ufunc(x, row).dtype)
    np.testing.assert_array_equal(split(x, row), ufunc(x, row))
    if ufunc is not np.less:  # in place, the output aliasing the first operand
        want = ufunc(x, row)
        np.testing.assert_array_equal(split(x, row, x), want)
        np.testing.assert_array_equal(x, want)


@pytest.mark.skipif(host_threads._proc_stat is None, reason="needs Linux's /proc/stat")
@pytest.mark.parametrize("others,busy", [(0.1, False), (0.9, True)])
def test_only_other_processes_count_as_load(monkeypatch, others, busy):
    clock = {"t": 100.0, "busy": 50.0, "own": 10.0}
    monkeypatch.setattr(host_threads, "_sample", [])
    monkeypatch.setattr(host_threads.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(host_threads.time, "process_time", lambda: clock["own"])
    monkeypatch.setattr(host_threads, "_system_busy_seconds", lambda: clock["busy"])
    assert host_threads._machine_is_busy() is False  # the first call only takes a sample
    # One second later: this process used 1.8 cores (its BLAS workers spinning included).
    clock.update(t=101.0, own=11.8, busy=50.0 + 1.8 + others)
    assert host_threads._machine_is_busy() is busy
