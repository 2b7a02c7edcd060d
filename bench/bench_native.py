"""Native platform against JAX (CPU) and the NumPy backend, measured in the same run.

    python bench/bench_native.py [--quick] [--threads 1,2]

For each case it prints the best time per call of jitted gpuarr on the native platform (once
per thread count, GPUARR_NATIVE_THREADS), on the cpu platform (NumPy backend) and of jax.jit,
then the ratios native / JAX and native / NumPy backend. The issue's targets are printed
beside native / JAX. `--threshold` times a launch on one thread and split over two, from 16 KiB
to 4 MiB; backends/native.py's PARALLEL_MIN_BYTES comes from bench_native_threads.py.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_time  # noqa: E402

import gpuarr  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr import lax as glax  # noqa: E402
from gpuarr.platforms import get_platform  # noqa: E402

# ---- the cases (written once against a numpy-like module and a lax-like module) ------------

def elementwise(np_, lax_, rng):
    x, y, z = (rng.standard_normal(1 << 22).astype(np.float32) for _ in range(3))
    return (lambda x, y, z: np_.sqrt(np_.abs(np_.tanh(x * 1.5 + y) * z - 0.5))), (x, y, z)


def row_sum(np_, lax_, rng):
    return (lambda x: np_.sum(x, axis=1)), (rng.standard_normal((4096, 4096)).astype(np.float32),)


def column_sum(np_, lax_, rng):
    return (lambda x: np_.sum(x, axis=0)), (rng.standard_normal((4096, 4096)).astype(np.float32),)


def softmax(np_, lax_, rng):
    def f(x):
        m = np_.max(x, axis=1, keepdims=True)
        e = np_.exp(x - m)
        return e / np_.sum(e, axis=1, keepdims=True)
    return f, (rng.standard_normal((2048, 2048)).astype(np.float32),)


def mlp_sgd(np_, lax_, rng, grad):
    sizes = [784, 512, 512, 10]
    params = [(rng.standard_normal((a, b)).astype(np.float32) * 0.05, np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        logits = logits - np_.max(logits, axis=1, keepdims=True)
        logp = logits - np_.log(np_.sum(np_.exp(logits), axis=1, keepdims=True))
        return -np_.mean(np_.sum(logp * y, axis=1))

    def step(params, x, y):
        g = grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]
    return step, (params, x, y)


def rnn_scan(np_, lax_, rng):
    w = rng.standard_normal((64, 64)).astype(np.float32) * 0.1
    u = rng.standard_normal((64, 64)).astype(np.float32) * 0.1
    xs = rng.standard_normal((500, 64)).astype(np.float32)

    def f(w, u, xs):
        def body(h, x):
            h = np_.tanh(h @ w + x @ u)
            return h, h
        return lax_.scan(body, np_.zeros(64, np.float32), xs)
    return f, (w, u, xs)


def dispatch_small(np_, lax_, rng):
    return (lambda x: x * 2.0 + 1.0), (np.ones(8, np.float32),)


def dispatch_50_args(np_, lax_, rng):
    args = tuple(np.full(4, i, np.float32) for i in range(50))
    return (lambda *xs: sum(xs[1:], xs[0])), args


CASES = [("elementwise chain 2^22", elementwise, 0.7), ("sum over rows 4096^2", row_sum, 1.0),
         ("sum over columns 4096^2", column_sum, 1.0), ("softmax rows 2048^2", softmax, 1.0),
         ("MLP SGD step 784-512-512-10 b256", mlp_sgd, 1.0), ("RNN scan 500 x h64", rnn_scan, 1.5),
         ("dispatch small", dispatch_small, 1.0), ("dispatch 50 args", dispatch_50_args, 1.0)]


def build(case, module):
    rng = np.random.default_rng(0)
    if module == "jax":
        import jax
        import jax.numpy as jnp
        np_, lax_, grad = jnp, jax.lax, jax.grad
    else:
        np_, lax_, grad = gnp, glax, gpuarr.grad
    return case(np_, lax_, rng, grad) if case is mlp_sgd else case(np_, lax_, rng)


def use_platform(platform):
    """Jit as a user does, on the default cpu platform: its jitted programs are native kernels
    without a platform list, NumPy backend code with `jax_platforms="cpu"`."""
    gpuarr.config.update("jax_platforms", "" if platform == "native" else "cpu")


def time_gpuarr(case, platform, quick):
    f, args = build(case, "gpuarr")
    use_platform(platform)
    # Arguments already on the device, as a program passes its arrays: a NumPy argument would
    # time JAX's copy to its device on every call.
    args = gpuarr.tree_util.tree_map(gpuarr.device_put, args)
    return best_time(gpuarr.jit(f), *args, repeat=3 if quick else 7)


def time_jax(case, quick):
    import jax
    f, args = build(case, "jax")
    args = jax.tree_util.tree_map(jax.device_put, args)
    return best_time(jax.jit(f), *args, repeat=3 if quick else 7)


def chain_200(np_, x, offset=0.0):
    for k in range(200 // 4):
        x = np_.sin(x) * (1.0 + k * 1e-3 + offset) + np_.cos(x) * 0.5 - 0.25
    return x


def first_call_compile(repeat=3):
    """Best seconds over `repeat` rounds of the first call of a 200-op jitted function: native
    with an empty cache, with a warm disk cache (a fresh process's view: memory cache cleared),
    the NumPy backend and JAX. Each round's function has constants of its own, so no cache of
    either library holds it; the native platform is started first (its compiler probed, its
    prelude precompiled), as any earlier jitted program of the process leaves it."""
    import jax
    import jax.numpy as jnp

    from gpuarr.backends import native
    x = np.linspace(0, 1, 1024, dtype=np.float32)
    use_platform("native")
    gpuarr.jit(lambda x: x * 2.0 + 1.0)(x).block_until_ready()
    native._state.get("pch", {}).get("ready", threading.Event()).wait(60)
    results = {}

    def timed(label, f):
        start = time.perf_counter()
        f(x).block_until_ready()
        results[label] = min(results.get(label, np.inf), time.perf_counter() - start)
    old = os.environ.get("GPUARR_CACHE_DIR")
    for r in range(repeat):
        offset = (r + 1) * 1e-5
        with tempfile.TemporaryDirectory() as cache:
            os.environ["GPUARR_CACHE_DIR"] = cache
            use_platform("native")
            for label in ("cold", "warm"):
                native.clear_memory_cache()
                timed(f"native ({label} cache)",
                      gpuarr.jit(lambda x, o=offset: chain_200(gnp, x, o)))
        if old is None:
            os.environ.pop("GPUARR_CACHE_DIR", None)
        else:
            os.environ["GPUARR_CACHE_DIR"] = old
        use_platform("cpu")
        timed("NumPy backend", gpuarr.jit(lambda x, o=offset: chain_200(gnp, x, o)))
        timed("JAX", jax.jit(lambda x, o=offset: chain_200(jnp, x, o)))
    return results


def threshold_table():
    """One launch of a streaming kernel (y = x * 2 + 1) on one thread and split over two."""
    from gpuarr.backends import native
    print("bytes moved   1 thread (us)   2 threads (us)")
    for kib in (16, 64, 128, 256, 512, 1024, 4096):
        n = kib * 1024 // 8
        x = np.ones(n, np.float32)
        with gpuarr.default_device(get_platform("native").devices()[0]):
            f = gpuarr.jit(lambda x: x * 2.0 + 1.0)
            times = []
            for threads in ("1", "2"):
                os.environ["GPUARR_NATIVE_THREADS"] = threads
                old = native.PARALLEL_MIN_BYTES
                native.PARALLEL_MIN_BYTES = 0
                times.append(best_time(f, x) * 1e6)
                native.PARALLEL_MIN_BYTES = old
        print(f"{kib:8d} KiB   {times[0]:13.1f}   {times[1]:14.1f}")
    os.environ.pop("GPUARR_NATIVE_THREADS", None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", default="1,2", help="native thread counts to time")
    parser.add_argument("--only", default="", help="comma-separated case name fragments")
    parser.add_argument("--threshold", action="store_true", help="time the thread split")
    opts = parser.parse_args()
    # The NumPy backend (jax_platforms="cpu") is the peer measured beside native kernels (the
    # default cpu platform's); `use_platform` switches between them.
    gpuarr.config.update("jax_platforms", "cpu")
    if opts.threshold:
        threshold_table()
        return
    counts = [c for c in opts.threads.split(",") if c]
    head = "".join(f"{'native x' + c + ' (ms)':>16}" for c in counts)
    print(f"{'case':34}{head}{'NumPy be (ms)':>15}{'JAX (ms)':>11}"
          f"{'nat/JAX':>9}{'target':>8}{'nat/NumPy':>10}{'2t speedup':>11}")
    for name, case, target in CASES:
        if opts.only and not any(s in name for s in opts.only.split(",")):
            continue
        native_times = []
        for c in counts:
            os.environ["GPUARR_NATIVE_THREADS"] = c
            native_times.append(time_gpuarr(case, "native", opts.quick))
        os.environ.pop("GPUARR_NATIVE_THREADS", None)
        numpy_t = time_gpuarr(case, "cpu", opts.quick)
        jax_t = time_jax(case, opts.quick)
        best = min(native_times)
        speedup = native_times[0] / native_times[-1] if len(native_times) > 1 else 1.0
        cols = "".join(f"{t * 1e3:16.3f}" for t in native_times)
        print(f"{name:34}{cols}{numpy_t * 1e3:15.3f}{jax_t * 1e3:11.3f}"
              f"{best / jax_t:9.2f}{target:8.1f}{best / numpy_t:10.2f}{speedup:11.2f}",
              flush=True)
    if not opts.only or "compile" in opts.only:
        res = first_call_compile()
        print("first call of a 200-op function (s): " +
              ", ".join(f"{k} {v:.3f}" for k, v in res.items()) +
              f"; native cold / JAX {res['native (cold cache)'] / res['JAX']:.2f} (target 1.0), "
              f"warm / JAX {res['native (warm cache)'] / res['JAX']:.2f}")


if __name__ == "__main__":
    main()
