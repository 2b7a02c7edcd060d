"""Timing helper shared by the benchmark scripts (run them as `python bench/<name>.py`)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time


def best_of(fn, number, repeat=7, warmup=False):
    """(best, median) seconds per call of `fn()` over `repeat` rounds of `number` calls."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times), statistics.median(times)


def calls_per_round(call, budget=0.25):
    """How many calls of `call()` (which blocks until its result is ready) fill about `budget`
    seconds: one timed call after a warm-up. Rounds shorter than the pause before them
    (`interleaved`) would time a machine waking up rather than the calls: on a 2-core virtual
    machine the first call after 0.2 s of idle time took 1.7 (gpuarr) and 2.6 (JAX) times as
    long as the calls after it for a 500-step scan, and 1.6 times for random bits computed on
    two threads of one process."""
    call()
    t0 = time.perf_counter()
    call()
    return max(1, int(budget / max(time.perf_counter() - t0, 1e-7)))


def interleaved(ours, theirs, number, rounds=15, pause=0.2):
    """Time two callables in alternating rounds of `number` calls each.

    The machine's speed drifts (other load, frequency, the worker threads XLA and OpenBLAS keep
    spinning after a call), so each round times both back to back after a short pause and the
    ratio is taken per round. The pause outlasts OpenBLAS's idle workers, which spin for about
    2**28 cycles (0.1 s) after a threaded product before they sleep: a shorter one lets them
    take a core from the other library's next round. Returns ((best, median) of ours,
    (best, median) of theirs, median of the per-round ratios ours / theirs), in seconds per
    call.
    """
    ours(), theirs()
    mine, peer, ratios = [], [], []
    for _ in range(rounds):
        pair = []
        for fn in (ours, theirs):
            time.sleep(pause)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            pair.append((time.perf_counter() - t0) / number)
        mine.append(pair[0])
        peer.append(pair[1])
        ratios.append(pair[0] / pair[1])
    return ((min(mine), statistics.median(mine)), (min(peer), statistics.median(peer)),
            statistics.median(ratios))


def best_time(fn, *args, repeat=7, min_time=0.2):
    """Best seconds per call of fn(*args) (results waited for), after one warm-up call."""
    out = fn(*args)
    block(out)
    best = float("inf")
    for _ in range(repeat):
        n, start = 0, time.perf_counter()
        while True:
            block(fn(*args))
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time / repeat or n >= 1000:
                break
        best = min(best, elapsed / n)
    return best


def block(out):
    """Wait for every array in `out`, nested lists and tuples included (JAX dispatches
    asynchronously: the MLP step's list of (w, b) pairs would otherwise be timed unfinished)."""
    if isinstance(out, (tuple, list)):
        for leaf in out:
            block(leaf)
    elif hasattr(out, "block_until_ready"):
        out.block_until_ready()


def worker_result(script: str, lib: str, n: int, **env) -> dict:
    """The RESULT line's JSON of `python script --worker lib n`, run in a fresh process on the
    cpu platform (a library's cpu device count is fixed when its platform starts) with `env`
    added and XLA_FLAGS removed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(script)))
    env = dict(os.environ, PYTHONPATH=root, JAX_PLATFORMS="cpu", **env)
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, script, "--worker", lib, str(n)],
                         capture_output=True, text=True, timeout=900, env=env)
    if out.returncode:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def library_with_cpu_devices(lib: str, n: int):
    """`jax` or gpuarr (as `lib` says) with `n` cpu devices, for a worker process."""
    import importlib
    module = importlib.import_module("jax" if lib == "jax" else "gpuarr")
    module.config.update("jax_num_cpu_devices", n)
    return module
