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


Policy = host_threads.ThreadPolicy
K = 1 << 10


@pytest.mark.parametrize("row_size", [1, 3000])
def test_run_in_blocks_covers_the_range_once_on_four_threads(monkeypatch, row_size):
    monkeypatch.setattr(host_threads, "_policy", Policy(((host_threads._PARALLEL_MIN, 4),),
                                                        host_threads.CACHE_BLOCK))
    n = 7 * max(1, host_threads._PARALLEL_MIN // row_size) + 5
    hits, parts = np.zeros(n, np.int64), []

    def chunk(lo, hi):
        hits[lo:hi] += 1
        parts.append(hi - lo)

    host_threads.run_in_blocks(chunk, n, 1, row_size)
    np.testing.assert_array_equal(hits, np.ones(n, np.int64))
    assert len(parts) == 4 and min(parts) * row_size >= host_threads._PARALLEL_MIN


# As measured under gVisor: two threads pay from 128K-element parts, four from 512K, and passes
# of split runs go best 512K long.
SLOW_SWITCH_POLICY = Policy(((128 * K, 2), (512 * K, 4)), 512 * K)


@pytest.mark.parametrize("n,parts", [(200 * K, 1), (256 * K, 2), (1024 * K, 2),
                                     (1536 * K, 3), (4096 * K, 4)])
def test_thread_count_grows_with_the_part_length(monkeypatch, n, parts):
    monkeypatch.setattr(host_threads, "_policy", SLOW_SWITCH_POLICY)
    seen = []
    host_threads.run_in_blocks(lambda lo, hi: seen.append((lo, hi)), n)
    assert sorted(seen) == [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


@pytest.mark.parametrize("n,rows", [(200 * K, host_threads.CACHE_BLOCK), (4096 * K, 512 * K)])
def test_passes_are_cache_sized_on_one_thread_and_policy_sized_on_several(monkeypatch, n, rows):
    monkeypatch.setattr(host_threads, "_policy", SLOW_SWITCH_POLICY)
    hits, steps = np.zeros(n, np.int64), set()

    def chunk(lo, hi, step):
        steps.add(step)
        for s in range(lo, hi, step):
            hits[s:min(hi, s + step)] += 1

    host_threads.run_in_passes(chunk, n)
    np.testing.assert_array_equal(hits, np.ones(n, np.int64))
    assert steps == {rows}


def test_costly_passes_stay_cache_sized_on_several_threads(monkeypatch):
    monkeypatch.setattr(host_threads, "_policy", SLOW_SWITCH_POLICY)
    parts = []
    host_threads.run_in_passes(lambda lo, hi, step: parts.append((hi - lo, step)), 4096 * K,
                               costly=True)
    assert parts == [(1024 * K, host_threads.CACHE_BLOCK)] * 4


def test_passes_count_rows_of_a_row_size(monkeypatch):
    monkeypatch.setattr(host_threads, "_policy", SLOW_SWITCH_POLICY)
    steps = []
    host_threads.run_in_passes(lambda lo, hi, step: steps.append(step), 4096, 1, 1000)
    assert steps == [512 * K // 1000] * 4


def test_environment_fixes_the_thread_count(monkeypatch):
    monkeypatch.setattr(host_threads, "_policy", None)
    monkeypatch.setenv("GPUARR_HOST_THREADS", "1")
    assert host_threads.thread_policy() == Policy(((host_threads._PARALLEL_MIN, 1),),
                                                  host_threads.CACHE_BLOCK)
    hits = []
    host_threads.run_in_blocks(lambda lo, hi: hits.append((lo, hi)), 1 << 20)
    assert hits == [(0, 1 << 20)]


def test_measured_policy_is_made_of_probed_lengths():
    steps, block = host_threads._measure_threads()
    lengths = [length for length, _ in steps]
    counts = [threads for _, threads in steps]
    assert lengths == sorted(lengths) and set(lengths) <= {*host_threads._PROBE_LENGTHS}
    assert counts == sorted(counts) and set(counts) <= {1, 2, 4}
    assert max(counts) <= host_threads._THREADS
    assert block in (host_threads.CACHE_BLOCK, *host_threads._PROBE_LENGTHS)
    assert block >= host_threads.CACHE_BLOCK


# Seconds per probe by (part length, threads): a machine where switching threads is cheap, one
# where it is slow for short parts and for four threads (as measured under gVisor), one where
# threads gain most with long passes (as on a two-core virtual machine), and one where they never
# pay.
FAST = {(32 * K, 1): 4, (32 * K, 2): 2.2, (32 * K, 4): 1.3,
        (128 * K, 1): 4, (128 * K, 2): 2.1, (128 * K, 4): 1.2,
        (512 * K, 1): 4, (512 * K, 2): 2.1, (512 * K, 4): 1.2}
SLOW_SWITCH = {(32 * K, 1): 4, (32 * K, 2): 14, (32 * K, 4): 30,
               (128 * K, 1): 4, (128 * K, 2): 3.1, (128 * K, 4): 4,
               (512 * K, 1): 4, (512 * K, 2): 2.4, (512 * K, 4): 1.9}
LONG_PASSES = {(32 * K, 1): 4, (32 * K, 2): 4.1, (32 * K, 4): 5,
               (128 * K, 1): 4, (128 * K, 2): 2.6, (128 * K, 4): 3,
               (512 * K, 1): 4, (512 * K, 2): 2.1, (512 * K, 4): 2.6}
NO_GAIN = {(32 * K, 1): 4, (32 * K, 2): 6, (32 * K, 4): 9,
           (128 * K, 1): 4, (128 * K, 2): 5, (128 * K, 4): 7,
           (512 * K, 1): 4, (512 * K, 2): 4.5, (512 * K, 4): 6}


@pytest.mark.parametrize("times,policy", [
    (FAST, Policy(((32 * K, 4),), 128 * K)),
    (SLOW_SWITCH, SLOW_SWITCH_POLICY),
    (LONG_PASSES, Policy(((128 * K, 2),), 512 * K)),
    (NO_GAIN, Policy(((32 * K, 1),), host_threads.CACHE_BLOCK))])
def test_policy_takes_only_what_is_clearly_faster(monkeypatch, times, policy):
    monkeypatch.setattr(host_threads, "_THREADS", 4)
    monkeypatch.setattr(host_threads, "_time_passes",
                        lambda blocks: times[(blocks[0].shape[-1], len(blocks))])
    assert host_threads._measure_threads() == policy
