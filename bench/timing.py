"""Timing helper shared by the benchmark scripts (run them as `python bench/<name>.py`)."""
from __future__ import annotations

import statistics
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
