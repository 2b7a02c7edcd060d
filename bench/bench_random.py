"""Random number generation, side by side with JAX (CPU) in one run.

(a) `uniform(key, (2**22,))` float32 under jit; (b) `normal(key, (2**22,))` float32 under jit;
(c) `split(key, 10**5)` under jit. Each is a cached jitted call timed with block_until_ready,
gpuarr and JAX in alternating rounds of at least 0.25 s (bench/timing.py: `interleaved`); the
ratio column is the median of the per-round ratios gpuarr / JAX (target: <= 1.5 on the NumPy
backend). The first rows also check that both give the same numbers.

Rounds outlast the 0.2 s pause before each: on a virtual machine whose cores fell idle in the
pause, the first call of a round runs the NumPy backend's two host threads at about one core's
speed (on a 2-core VM, `uniform` took 51 ms in the first call after 0.1 s or more of idle time
and 31 ms in the calls after it; JAX's single-threaded kernel took 35 and 32 ms). Rounds of
two calls timed mostly that first call.
Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python bench/bench_random.py
"""
from __future__ import annotations

import numpy as np
import timing

import gpuarr
from gpuarr import random as grandom

try:
    import jax
    from jax import random as jrandom
except ImportError:  # JAX is optional: only the gpuarr column is printed
    jax = jrandom = None

N = 1 << 22
NUM_KEYS = 10 ** 5


def workloads(jit, random):
    key = random.key(0)
    uniform = jit(lambda k: random.uniform(k, (N,)))
    normal = jit(lambda k: random.normal(k, (N,)))
    split = jit(lambda k: random.split(k, NUM_KEYS))
    return {
        f"uniform f32[{N}]": lambda: uniform(key).block_until_ready(),
        f"normal f32[{N}]": lambda: normal(key).block_until_ready(),
        f"split {NUM_KEYS} keys": lambda: split(key).block_until_ready(),
    }


def check_same_numbers():
    if jax is None:
        return
    for name in ("uniform", "normal"):
        g = np.asarray(gpuarr.jit(lambda k: getattr(grandom, name)(k, (N,)))(grandom.key(0)))
        j = np.asarray(jax.jit(lambda k: getattr(jrandom, name)(k, (N,)))(jrandom.key(0)))
        print(f"{name} streams equal: {bool((g == j).all())}")


def main():
    check_same_numbers()
    ours = workloads(gpuarr.jit, grandom)
    theirs = workloads(jax.jit, jrandom) if jax is not None else {}
    print(f"{'workload':<24}{'gpuarr best/median ms':>24}{'jax best/median ms':>22}{'ratio':>8}")
    for name, fn in ours.items():
        if name not in theirs:
            g_best, g_med = timing.best_of(fn, 3, 7, warmup=True)
            print(f"{name:<24}{g_best * 1e3:>11.2f} /{g_med * 1e3:>9.2f}")
            continue
        number = max(2, timing.calls_per_round(fn))
        (g_best, g_med), (j_best, j_med), ratio = timing.interleaved(fn, theirs[name], number, 9)
        print(f"{name:<24}{g_best * 1e3:>11.2f} /{g_med * 1e3:>9.2f}"
              f"{j_best * 1e3:>12.2f} /{j_med * 1e3:>8.2f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
