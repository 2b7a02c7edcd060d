"""Kernel benchmarks: elementwise chain, reductions, softmax, and the ops that used to be host
steps (argmax, cumsum, pad + concatenate, a two-pass reduction of an odd size, float16, erf_inv,
max pooling).

For each program: kernels launched, bytes moved against the minimum the Program needs, and the
time per call on the OpenCL backend (PoCL on the CPU, including upload and download), the NumPy
backend, and JAX on the CPU (when importable), each timed with a block_until_ready loop.

    python bench/bench_kernels.py [--size 1024] [--repeat 20]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import lax
from gpuarr.backends import numpy as numpy_backend
from gpuarr.backends import opencl
from gpuarr.compiler import compile_closed, passes, plan_closed
from gpuarr.compiler.explain import count_kernels, step_bytes


def chain(np_):
    return lambda x, y: np_.tanh(np_.exp(x) * 2.0 + y) - np_.sqrt(np_.abs(x)) / 3.0


def row_sum(np_):
    return lambda x: np_.sum(np_.exp(x), axis=1)


def col_max(np_):
    return lambda x: np_.max(x * 2.0, axis=0)


def full_sum(np_):
    return lambda x: np_.sum(x * x)


def softmax(np_):
    def f(x):
        m = np_.max(x, axis=1, keepdims=True) if np_ is not gnp else lax.reshape(
            lax.reduce_max(x, (1,)), (x.shape[0], 1))
        e = np_.exp(x - m)
        s = np_.sum(e, axis=1, keepdims=True) if np_ is not gnp else lax.reshape(
            lax.reduce_sum(e, (1,)), (x.shape[0], 1))
        return e / s
    return f


def row_sum_g(x):
    return lax.reduce_sum(gnp.exp(x), (1,))


def col_max_g(x):
    return lax.reduce_max(x * 2.0, (0,))


def full_sum_g(x):
    return lax.reduce_sum(x * x, (0, 1))


def row_argmax(np_):
    return lambda x: np_.argmax(np_.sin(x), axis=1)


def row_cumsum(np_):
    return lambda x: np_.cumsum(x * 2.0, axis=1)


def pad_concat(np_):
    return lambda x: np_.concatenate([np_.pad(x * 2.0, ((1, 1), (0, 0))), x[:2] + 1.0], axis=0)


def odd_full_sum(np_):
    return lambda x: np_.sum(x[:, 1:] * x[:, 1:])   # n * (n - 1) elements: no power-of-two split


def half_chain(np_):
    return lambda x: np_.tanh(x * 2.0 + 1.0) * x


def erf_inv(lax_):
    return lambda x: lax_.erf_inv(x * 0.001)


def max_pool(lax_):
    return lambda x: lax_.reduce_window(x, -np.inf, lax_.max, (2, 2), (2, 2), "VALID")


def timeit(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n,)).astype(np.float32)
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax as jlax
    except ImportError:
        jax = jnp = jlax = None
    h = x.astype(np.float16)
    cases = [
        ("elementwise chain (6 ops)", chain(gnp), chain(jnp) if jnp else None, (x, y)),
        ("row reduction sum(exp(x), 1)", row_sum_g, row_sum(jnp) if jnp else None, (x,)),
        ("column reduction max(2x, 0)", col_max_g, col_max(jnp) if jnp else None, (x,)),
        ("full reduction sum(x*x)", full_sum_g, full_sum(jnp) if jnp else None, (x,)),
        ("softmax over rows", softmax(gnp), softmax(jnp) if jnp else None, (x,)),
        ("argmax(sin(x), 1)", row_argmax(gnp), row_argmax(jnp) if jnp else None, (x,)),
        ("cumsum(2x, 1)", row_cumsum(gnp), row_cumsum(jnp) if jnp else None, (x,)),
        ("concatenate(pad(2x), x[:2] + 1)", pad_concat(gnp), pad_concat(jnp) if jnp else None, (x,)),
        ("full sum of n*(n-1) (two passes)", odd_full_sum(gnp), odd_full_sum(jnp) if jnp else None,
         (x,)),
        ("float16 tanh(2x + 1) * x", half_chain(gnp), half_chain(jnp) if jnp else None, (h,)),
        ("erf_inv(x / 1000)", erf_inv(lax), erf_inv(jlax) if jlax else None, (x,)),
        ("max pool 2x2", max_pool(lax), max_pool(jlax) if jlax else None, (x,)),
    ]
    print(f"arrays of {n}x{n} float32; best of {args.repeat} calls; OpenCL = PoCL on "
          f"{opencl._context()[0].devices[0].name.strip()}")
    header = f"{'program':34s} {'kernels':>7s} {'bytes moved':>12s} {'minimum':>10s} {'ratio':>6s} " \
             f"{'opencl ms':>10s} {'numpy ms':>9s} {'jax ms':>7s}"
    print(header)
    print("-" * len(header))
    for name, g, j, xs in cases:
        closed = passes.optimize(gpuarr.make_jaxpr(g)(*xs))
        plan = plan_closed(closed)
        moved = sum(sum(step_bytes(s, plan)) for s in plan.steps)
        launch = compile_closed(closed)
        t_cl = timeit(lambda: opencl.run_plan(launch, list(xs)), args.repeat)
        ref = numpy_backend.compile_closed(closed)
        t_np = timeit(lambda: ref(*xs), args.repeat)
        if j is not None:
            jf = jax.jit(j)
            jx = [jnp.asarray(a) for a in xs]
            t_jax = timeit(lambda: jax.block_until_ready(jf(*jx)), args.repeat) * 1e3
            t_jax = f"{t_jax:7.2f}"
        else:
            t_jax = "    n/a"
        print(f"{name:34s} {count_kernels(plan):7d} {moved:12d} {plan.min_bytes:10d} "
              f"{moved / plan.min_bytes:6.2f} {t_cl * 1e3:10.2f} {t_np * 1e3:9.2f} {t_jax}")


if __name__ == "__main__":
    main()
