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


@pytest.mark.parametrize("row_size", [1, 3000])
def test_run_in_blocks_covers_the_range_once_on_four_threads(monkeypatch, row_size):
    monkeypatch.setattr(host_threads, "_policy", (4, host_threads._PARALLEL_MIN))
    n = 7 * max(1, host_threads._PARALLEL_MIN // row_size) + 5
    hits, parts = np.zeros(n, np.int64), []

    def chunk(lo, hi):
        hits[lo:hi] += 1
        parts.append(hi - lo)

    host_threads.run_in_blocks(chunk, n, 1, row_size)
    np.testing.assert_array_equal(hits, np.ones(n, np.int64))
    assert len(parts) == 4 and min(parts) * row_size >= host_threads._PARALLEL_MIN


def test_environment_fixes_the_thread_count(monkeypatch):
    monkeypatch.setattr(host_threads, "_policy", None)
    monkeypatch.setenv("GPUARR_HOST_THREADS", "1")
    assert host_threads.thread_policy() == (1, host_threads._PARALLEL_MIN)
    hits = []
    host_threads.run_in_blocks(lambda lo, hi: hits.append((lo, hi)), 1 << 20)
    assert hits == [(0, 1 << 20)]


def test_measured_policy_is_one_of_the_probed():
    threads, shortest = host_threads._measure_threads()
    assert 1 <= threads <= host_threads._THREADS and threads in (1, 2, 4)
    assert shortest in host_threads._PROBE_LENGTHS


# Seconds per probe by (part length, threads): a machine where switching threads is cheap, one
# where it is slow for short parts and for four threads (as measured under gVisor), and one where
# threads never pay.
FAST = {(1 << 15, 1): 4, (1 << 15, 2): 2.2, (1 << 15, 4): 1.3,
        (1 << 17, 1): 4, (1 << 17, 2): 2.1, (1 << 17, 4): 1.2}
SLOW_SWITCH = {(1 << 15, 1): 4, (1 << 15, 2): 14, (1 << 15, 4): 30,
               (1 << 17, 1): 4, (1 << 17, 2): 3.1, (1 << 17, 4): 8}
NO_GAIN = {(1 << 15, 1): 4, (1 << 15, 2): 6, (1 << 15, 4): 9,
           (1 << 17, 1): 4, (1 << 17, 2): 5, (1 << 17, 4): 7}


@pytest.mark.parametrize("times,policy", [(FAST, (4, 1 << 15)), (SLOW_SWITCH, (2, 1 << 17)),
                                          (NO_GAIN, (1, 1 << 15))])
def test_policy_drops_what_is_clearly_slower(monkeypatch, times, policy):
    monkeypatch.setattr(host_threads, "_THREADS", 4)
    monkeypatch.setattr(host_threads, "_time_passes",
                        lambda blocks: times[(blocks[0].shape[0], len(blocks))])
    assert host_threads._measure_threads() == policy
