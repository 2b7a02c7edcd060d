"""gpuarr.numpy throughput on the NumPy backend, side by side with eager NumPy and JAX (CPU).

Workloads on float32 data: a long elementwise chain, reductions along each axis, and a
softmax; each run eagerly and jitted. Every timed call ends with block_until_ready. The table
gives the best time per call and its ratio to eager NumPy (< 1 is faster than NumPy).
Run: python bench/bench_numpy.py [--size N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import gpuarr
import gpuarr.numpy as gnp

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is optional: its columns are left empty
    jax = jjnp = None


def chain(m):
    def f(x, y):
        z = m.sin(x) * y + 1.0
        z = m.exp(-z * z) - x
        z = m.tanh(z * 0.5) + y
        z = m.sqrt(m.abs(z) + 1.0) * m.cos(y)
        return m.maximum(z, 0.0) * 2.0 - m.log1p(m.abs(x))
    return f


def reduce_axis(m, axis):
    def f(x, y):
        return m.sum(x, axis=axis) + m.max(y, axis=axis)
    return f


def softmax(m):
    def f(x, y):
        z = x - m.max(x, axis=-1, keepdims=True)
        e = m.exp(z)
        return e / m.sum(e, axis=-1, keepdims=True)
    return f


def best(fn, args, number, repeat=5):
    fn(*args)  # warm up (and compile)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn(*args)
            if hasattr(out, "block_until_ready"):
                out.block_until_ready()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="arrays are (size, size) float32")
    args = parser.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, n)).astype(np.float32)
    y = rng.normal(size=(n, n)).astype(np.float32)
    gx, gy = gnp.asarray(x), gnp.asarray(y)
    jx, jy = (jjnp.asarray(x), jjnp.asarray(y)) if jjnp is not None else (None, None)
    workloads = [("elementwise chain", chain), ("reduce axis 0", lambda m: reduce_axis(m, 0)),
                 ("reduce axis 1", lambda m: reduce_axis(m, 1)),
                 ("reduce all", lambda m: reduce_axis(m, None)), ("softmax", softmax)]
    number = max(1, int(2e7 // (n * n)))
    header = f"{'workload (' + str(n) + 'x' + str(n) + ' f32)':32s}{'numpy':>10s}" \
             f"{'gpuarr':>10s}{'ratio':>7s}{'g.jit':>10s}{'ratio':>7s}{'jax':>10s}{'ratio':>7s}" \
             f"{'jax.jit':>10s}{'ratio':>7s}"
    print(f"backend: {gpuarr.default_backend()}   times in ms per call (best of 5)")
    print(header)
    print("-" * len(header))
    for name, make in workloads:
        t_np = best(make(np), (x, y), number)
        cols = [t_np]
        cols.append(best(make(gnp), (gx, gy), number))
        cols.append(best(gpuarr.jit(make(gnp)), (gx, gy), number))
        if jax is not None:
            cols.append(best(make(jjnp), (jx, jy), number))
            cols.append(best(jax.jit(make(jjnp)), (jx, jy), number))
        row = f"{name:32s}{t_np * 1e3:10.3f}"
        for t in cols[1:]:
            row += f"{t * 1e3:10.3f}{t / t_np:7.2f}"
        print(row)


if __name__ == "__main__":
    main()
