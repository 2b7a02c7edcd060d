"""Where splitting a native launch over threads starts to pay: an elementwise chain and a row
reduction, 2^12 .. 2^24 float32 elements, on 1, 2, 4, 8 and 12 threads.

    python bench/bench_native_threads.py [--threads 1,2,4,8,12] [--sizes 12:24] [--json PATH]

Runs the jitted functions on the native platform with GPUARR_NATIVE_THREADS set per count and
the platform's byte threshold (`native.PARALLEL_MIN_BYTES`) lowered to zero, so every launch
splits; the reference is the same launch on one thread, measured in the same run. For each case
it prints the best time per call per thread count, the speedup of the best count over one
thread, and the smallest size from which some count of two or more threads wins (by 5% or
more) at every larger size (in elements and in bytes moved, the unit of PARALLEL_MIN_BYTES). Needs only NumPy
and a C compiler: no JAX, no OpenCL.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # timing.py, also under runpy

from timing import best_time  # noqa: E402

import gpuarr  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr.backends import native  # noqa: E402
from gpuarr.platforms import get_platform  # noqa: E402


def elementwise(n, rng):
    """The issue's chain over three float32 inputs: 16 bytes moved per element."""
    args = tuple(rng.standard_normal(n).astype(np.float32) for _ in range(3))
    return (lambda x, y, z: gnp.sqrt(gnp.abs(gnp.tanh(x * 1.5 + y) * z - 0.5))), args, 16 * n


def row_sum(n, rng):
    """Sums of rows of 256 float32 elements: about 4 bytes moved per element."""
    x = rng.standard_normal((max(1, n // 256), min(n, 256))).astype(np.float32)
    return (lambda x: gnp.sum(x, axis=1)), (x,), 4 * n + 4 * x.shape[0]


CASES = {"elementwise chain": elementwise, "row sum (rows of 256)": row_sum}


# A count "wins" when it is at least this much faster than one thread (timing noise aside).
WIN_MARGIN = 0.95


def crossover(sizes, times: dict):
    """The index of the smallest size from which some count of 2+ threads beats one thread at
    every larger size, or None when it never does."""
    wins = [min(times[c][k] for c in times if c > 1) < WIN_MARGIN * times[1][k]
            for k in range(len(sizes))]
    first = None
    for k in reversed(range(len(sizes))):
        if not wins[k]:
            break
        first = k
    return first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4,8,12", help="thread counts (1 is added)")
    parser.add_argument("--sizes", default="12:24", help="log2 of the sizes: FIRST:LAST")
    parser.add_argument("--json", default="", help="also write the results to this file")
    opts = parser.parse_args()
    counts = sorted({1} | {int(c) for c in opts.threads.split(",") if c})
    lo, hi = (int(v) for v in opts.sizes.split(":"))
    sizes = [1 << k for k in range(lo, hi + 1)]
    if not native.available():
        sys.exit("no working C compiler: the native platform cannot run (set CC or install gcc)")
    device = get_platform("native").devices()[0]
    rng = np.random.default_rng(0)
    native.PARALLEL_MIN_BYTES = 0   # every launch splits: the threshold is what is measured
    results = {"machine": {"cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))
                           if hasattr(os, "sched_getaffinity") else None,
                           "processor": platform.processor() or platform.machine(),
                           "compiler": native.toolchain()["identity"]},
               "threads": counts, "sizes": sizes, "cases": {}}
    for name, case in CASES.items():
        print(f"{name}: best ms per call")
        print(f"{'elements':>10}{'bytes':>12}" + "".join(f"{f'{c} thr':>10}" for c in counts)
              + f"{'best/1':>8}")
        times = {c: [] for c in counts}
        moved = []
        for n in sizes:
            f, args, nbytes = case(n, rng)
            moved.append(nbytes)
            with gpuarr.default_device(device):
                jf = gpuarr.jit(f)
                for c in counts:
                    os.environ["GPUARR_NATIVE_THREADS"] = str(c)
                    times[c].append(best_time(jf, *args, repeat=5, min_time=0.05))
            row = "".join(f"{times[c][-1] * 1e3:10.3f}" for c in counts)
            speedup = times[1][-1] / min(times[c][-1] for c in counts)
            print(f"{n:10d}{nbytes:12d}{row}{speedup:8.2f}", flush=True)
        os.environ.pop("GPUARR_NATIVE_THREADS", None)
        k = crossover(sizes, times) if len(counts) > 1 else None
        if k is None:
            print("  two or more threads never win at every larger size")
        else:
            print(f"  two or more threads win from {sizes[k]} elements ({moved[k]} bytes moved) up")
        results["cases"][name] = {
            "bytes": moved, "seconds": {str(c): times[c] for c in counts},
            "threshold_elements": None if k is None else sizes[k],
            "threshold_bytes": None if k is None else moved[k]}
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=1))
        print(f"wrote {opts.json}")


if __name__ == "__main__":
    main()
