"""The memory ceiling of the native platform's elementwise chain: C loops moving the chain's
bytes (three float32 inputs read, one output written, 2^22 elements: 64 MiB) with no math,
beside the jitted chain itself, on 1 and 2 threads.

    python bench/bench_native_stream.py [--size 22] [--threads 1,2] [--jax]

Prints the best milliseconds per call and the bandwidth (bytes the program reads and writes,
per second) of: the chain jitted on the native platform; `out = a + b * c` with ordinary
stores (a store to a line not in the cache first reads it: 80 MiB cross the memory bus); the
same with non-temporal stores (`_mm256_stream_ps`, x86-64 with AVX only: 64 MiB); a copy of one
input (`memcpy`, 32 MiB moved); a sum of the three inputs (reads only, 48 MiB); `a + b * c`
into a new array each call, as a program's output is (the allocation's cost); with `--jax`,
JAX's jitted chain (its thread count is its own: pin the process with taskset). A size that
fits in the cache (`--size 16`) shows the chain's arithmetic alone. The C loops run
through the native backend's own launch (`native.launch`, the same thread split as kernels),
so the gap between the chain and `a + b * c` is the chain's arithmetic, and the gap to the
non-temporal loop is what the read-for-ownership of the output costs. Needs only NumPy and a C
compiler.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import best_time  # noqa: E402

import gpuarr  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr.backends import native  # noqa: E402
from gpuarr.platforms import get_platform  # noqa: E402

SOURCE = r"""
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif
typedef long long i64;
#define EXPORT __attribute__((visibility("default")))

EXPORT void fma3_run(void *const *args, i64 begin, i64 end) {
  const float *a = args[0], *b = args[1], *c = args[2];
  float *out = args[3];
  _Pragma("omp simd")
  for (i64 i = begin; i < end; ++i) out[i] = a[i] + b[i] * c[i];
}

EXPORT void fma3_nt_run(void *const *args, i64 begin, i64 end) {
  const float *a = args[0], *b = args[1], *c = args[2];
  float *out = args[3];
  i64 i = begin;
#if defined(__AVX__)
  for (; i < end && ((size_t)(out + i) & 31); ++i) out[i] = a[i] + b[i] * c[i];
  for (; i + 8 <= end; i += 8) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i),
                                   _mm256_mul_ps(_mm256_loadu_ps(b + i), _mm256_loadu_ps(c + i)));
    _mm256_stream_ps(out + i, v);
  }
  _mm_sfence();
#endif
  for (; i < end; ++i) out[i] = a[i] + b[i] * c[i];
}

EXPORT void copy_run(void *const *args, i64 begin, i64 end) {
  memcpy((float *)args[3] + begin, (const float *)args[0] + begin, (size_t)(end - begin) * 4);
}

EXPORT void read3_run(void *const *args, i64 begin, i64 end) {
  const float *a = args[0], *b = args[1], *c = args[2];
  float s[16] = {0};
  for (i64 i = begin; i + 16 <= end; i += 16) {
    _Pragma("omp simd")
    for (int l = 0; l < 16; ++l) s[l] += a[i + l] + b[i + l] + c[i + l];
  }
  float t = 0;
  for (int l = 0; l < 16; ++l) t += s[l];
  ((float *)args[3])[begin] = t;
}
"""

# (label, entry point, bytes the program reads and writes per element)
LOOPS = [("a + b * c, ordinary stores", "fma3", 16), ("a + b * c, non-temporal stores",
                                                     "fma3_nt", 16),
         ("memcpy of one input", "copy", 8), ("sum of the three inputs (reads only)", "read3", 12)]


def chain(np_):
    return lambda x, y, z: np_.sqrt(np_.abs(np_.tanh(x * 1.5 + y) * z - 0.5))


def fma(np_):
    return lambda x, y, z: x + y * z


def stores_table(n, counts, rounds, body=chain):
    """The jitted `body` (the chain, or memory-bound `x + y * z`) with non-temporal stores
    against ordinary ones (render.STREAM_MIN_BYTES at 0 and past the launch's bytes), and JAX's,
    in alternating rounds (the machine's load drifts): per thread count, each one's best and
    median milliseconds and the median of the per-round ratios."""
    import statistics
    import time

    import jax
    import jax.numpy as jnp

    from gpuarr.compiler import render
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    device = get_platform("native").devices()[0]
    args = tuple(gpuarr.device_put(v, device) for v in host)
    calls = {}
    for label, threshold in (("streamed", 0), ("ordinary", 1 << 62)):
        render.STREAM_MIN_BYTES = threshold
        f = gpuarr.jit(body(gnp))
        f(*args).block_until_ready()   # rendered and built now, under this threshold
        calls[label] = lambda f=f: f(*args).block_until_ready()
    jf = jax.jit(body(jnp))
    jargs = tuple(jax.device_put(v, jax.devices("cpu")[0]) for v in host)
    calls["JAX"] = lambda: jf(*jargs).block_until_ready()
    print(f"{body.__name__} at {n} float32 elements, {rounds} rounds of 10 calls each")
    print(f"{'threads':8}" + "".join(f"{k + ' best/median (ms)':>30}" for k in calls)
          + f"{'streamed/ordinary':>19}{'streamed/JAX':>14}{'ordinary/JAX':>14}")
    for t in counts:
        os.environ["GPUARR_NATIVE_THREADS"] = t
        times = {k: [] for k in calls}
        for _ in range(rounds):
            for k, call in calls.items():
                call()
                t0 = time.perf_counter()
                for _ in range(10):
                    call()
                times[k].append((time.perf_counter() - t0) / 10)
        med = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))  # noqa: E731
        cells = "".join(f"{min(v) * 1e3:17.3f} / {statistics.median(v) * 1e3:8.3f}"
                        for v in times.values())
        print(f"{t:8}{cells}{med('streamed', 'ordinary'):19.3f}{med('streamed', 'JAX'):14.3f}"
              f"{med('ordinary', 'JAX'):14.3f}", flush=True)
    os.environ.pop("GPUARR_NATIVE_THREADS", None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=22, help="log2 of the element count")
    parser.add_argument("--threads", default="1,2", help="thread counts")
    parser.add_argument("--jax", action="store_true", help="time JAX's jitted chain too")
    parser.add_argument("--stores", action="store_true",
                        help="the jitted chain with non-temporal against ordinary stores, "
                             "and JAX's, in alternating rounds")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of --stores")
    parser.add_argument("--fma", action="store_true", help="--stores times x + y * z instead")
    opts = parser.parse_args()
    if opts.stores:
        stores_table(1 << opts.size, [t for t in opts.threads.split(",") if t], opts.rounds,
                     fma if opts.fma else chain)
        return
    n = 1 << opts.size
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = np.empty(n, np.float32)
    lib = native.load(SOURCE)
    counts = [t for t in opts.threads.split(",") if t]
    print(f"{'loop':40}" + "".join(f"{t + ' thread(s)':>22}" for t in counts))
    device = get_platform("native").devices()[0]
    jitted = gpuarr.jit(chain(gnp))
    args = tuple(gpuarr.device_put(v, device) for v in (a, b, c))
    rows = [("jitted chain (native)", lambda: jitted(*args).block_until_ready(), 16)]
    if opts.jax:
        import jax
        import jax.numpy as jnp
        cpu = jax.devices("cpu")[0]
        jchain = jax.jit(chain(jnp))
        jargs = tuple(jax.device_put(v, cpu) for v in (a, b, c))
        rows.append(("jitted chain (JAX)", lambda: jchain(*jargs).block_until_ready(), 16))
    pointers = native.pointers([a, b, c, out])
    for label, name, per in LOOPS:
        fn = native.entry(lib, name)
        rows.append((label, lambda fn=fn: native.launch(fn, pointers, n, 16 * n), per))
    fn = native.entry(lib, "fma3")

    def fresh_output():   # as a program's call does: its output is a new array
        fresh = np.empty(n, np.float32)
        native.launch(fn, native.pointers([a, b, c, fresh]), n, 16 * n)
        return fresh
    rows.append(("a + b * c, a new output array per call", fresh_output, 16))
    for label, call, per in rows:
        cells = []
        for t in counts:
            os.environ["GPUARR_NATIVE_THREADS"] = t
            s = best_time(call, repeat=15)
            cells.append(f"{s * 1e3:9.3f} ms {per * n / s / 1e9:6.1f} GB/s")
        print(f"{label:40}" + "".join(f"{c:>22}" for c in cells), flush=True)
    os.environ.pop("GPUARR_NATIVE_THREADS", None)


if __name__ == "__main__":
    main()
