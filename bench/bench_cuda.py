"""GPU benchmarks of the cuda platform against its peers, measured in one run.

    python bench/bench_cuda.py            # every benchmark (about 3 minutes on an H200)
    python bench/bench_cuda.py --quick    # smaller sizes, for a smoke test
    python bench/bench_cuda.py --only softmax,mlp

Each line prints gpuarr's measurement, the peer's, the ratio and the target:

| benchmark | peer | target |
|---|---|---|
| elementwise chain of 6 ops, 2^28 float32 | device-to-device copy | >= 85% of copy bandwidth |
| same chain | eager CuPy (6 kernels) | >= 3x faster |
| full sum, 2^28 float32 | copy | >= 80% of copy bandwidth |
| row / column sums, 16384x16384 | copy | >= 70% of copy bandwidth |
| softmax over rows, 8192x8192 | JAX (GPU) | no slower |
| cached jitted call, host overhead | JAX (GPU) | no more |
| MLP SGD step 784-512-512-10, batch 256 | JAX (GPU) | <= 1.2x JAX's time |
| second process, same program | disk cache | 0 NVRTC compilations |

Bandwidth counts the bytes a kernel must read and write once (the copy moves 2 bytes per byte
copied). Times are medians of repeated calls, each waited for with block_until_ready.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# gpuarr's pool and JAX's allocator share the GPU: gpuarr preallocates half of it (its own
# variables win over the XLA ones) and JAX allocates on demand.
os.environ.setdefault("GPUARR_PREALLOCATE", "true")
os.environ.setdefault("GPUARR_MEM_FRACTION", "0.5")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import gpuarr  # noqa: E402
import gpuarr.numpy as jnp  # noqa: E402

ROWS: list = []


def median_time(fn, sync, reps=15, warmup=3) -> float:
    for _ in range(warmup):
        sync(fn())
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        sync(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(name, ours, peer_name, peer, ratio, target, ok, unit=""):
    ROWS.append((name, ours, peer_name, peer, ratio, target, ok))
    print(f"{name:34s} gpuarr {ours:>10s}{unit}  {peer_name} {peer:>10s}  ratio {ratio:6.2f}  "
          f"target {target:10s} {'PASS' if ok else 'FAIL'}", flush=True)


def gbps(nbytes, seconds) -> float:
    return nbytes / seconds / 1e9


def jax_gpu():
    """JAX with a GPU backend, or None (the peer is then reported as missing)."""
    try:
        import jax
        if jax.default_backend() != "gpu":
            return None
        return jax
    except Exception:  # noqa: BLE001 - JAX missing or without CUDA
        return None


# ---- benchmarks ---------------------------------------------------------------------------------

def chain6(x):
    return jnp.abs(jnp.sin(x * 2.0 + 1.0) * x - 0.5)


def bench_elementwise(cp, n):
    src = cp.random.standard_normal(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    sync_cp = lambda _: cp.cuda.Device().synchronize()
    t_copy = median_time(lambda: cp.copyto(dst, src), sync_cp)
    copy_bw = gbps(2 * src.nbytes, t_copy)
    x = jnp.asarray(src)  # shares the CuPy buffer
    f = gpuarr.jit(chain6)
    t_ours = median_time(lambda: f(x), lambda o: o.block_until_ready())
    ours_bw = gbps(2 * src.nbytes, t_ours)
    report("elementwise chain (6 ops) BW", f"{ours_bw:.0f}", "copy", f"{copy_bw:.0f}",
           ours_bw / copy_bw, ">= 0.85", ours_bw / copy_bw >= 0.85, " GB/s")
    t_cupy = median_time(lambda: cp.abs(cp.sin(src * 2.0 + 1.0) * src - 0.5), sync_cp)
    report("elementwise chain vs eager CuPy", f"{t_ours * 1e3:.2f}", "cupy", f"{t_cupy * 1e3:.2f}",
           t_cupy / t_ours, ">= 3.0", t_cupy / t_ours >= 3.0, " ms")
    return copy_bw


def bench_reductions(cp, n, side, copy_bw):
    x = jnp.asarray(cp.random.standard_normal(n, dtype=cp.float32))
    f = gpuarr.jit(jnp.sum)
    t = median_time(lambda: f(x), lambda o: o.block_until_ready())
    bw = gbps(x.nbytes, t)
    report("full sum BW", f"{bw:.0f}", "copy", f"{copy_bw:.0f}", bw / copy_bw, ">= 0.80",
           bw / copy_bw >= 0.80, " GB/s")
    m = jnp.asarray(cp.random.standard_normal((side, side), dtype=cp.float32))
    for name, axis in (("row sums", 1), ("column sums", 0)):
        g = gpuarr.jit(lambda a, axis=axis: jnp.sum(a, axis=axis))
        t = median_time(lambda: g(m), lambda o: o.block_until_ready())
        bw = gbps(m.nbytes + m.nbytes // side, t)
        report(f"{name} BW", f"{bw:.0f}", "copy", f"{copy_bw:.0f}", bw / copy_bw, ">= 0.70",
               bw / copy_bw >= 0.70, " GB/s")


def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def bench_softmax(cp, side, jax):
    host = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    x = jnp.asarray(cp.asarray(host))
    f = gpuarr.jit(softmax)
    t_ours = median_time(lambda: f(x), lambda o: o.block_until_ready())
    if jax is None:
        return report("softmax rows", f"{t_ours * 1e3:.2f}", "jax", "n/a", 0.0, ">= 1.0", False, " ms")
    jx = jax.device_put(host)
    jf = jax.jit(lambda a: jax.nn.softmax(a, axis=-1))
    t_jax = median_time(lambda: jf(jx), lambda o: o.block_until_ready())
    report("softmax rows", f"{t_ours * 1e3:.2f}", "jax", f"{t_jax * 1e3:.2f}", t_jax / t_ours,
           ">= 1.0", t_jax / t_ours >= 1.0, " ms")


def bench_dispatch(cp, jax, calls=2000):
    x = jnp.asarray(cp.ones(16, cp.float32))
    f = gpuarr.jit(lambda a: a + 1.0)
    f(x).block_until_ready()

    def loop(fn, arg):
        out = None
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(arg)
        elapsed = time.perf_counter() - start
        out.block_until_ready()
        return elapsed / calls

    t_ours = statistics.median(loop(f, x) for _ in range(5))
    if jax is None:
        return report("cached jit call overhead", f"{t_ours * 1e6:.1f}", "jax", "n/a", 0.0,
                      "<= 1.0", False, " us")
    jx = jax.device_put(np.ones(16, np.float32))
    jf = jax.jit(lambda a: a + 1.0)
    jf(jx).block_until_ready()
    t_jax = statistics.median(loop(jf, jx) for _ in range(5))
    report("cached jit call overhead", f"{t_ours * 1e6:.1f}", "jax", f"{t_jax * 1e6:.1f}",
           t_ours / t_jax, "<= 1.0", t_ours <= t_jax, " us")


def mlp_inputs(sizes=(784, 512, 512, 10), batch=256):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return params, (x, y)


def make_sgd_step(lib, lib_np):
    def loss(params, batch):
        x, y = batch
        for w, b in params[:-1]:
            x = lib.nn.relu(x @ w + b)
        w, b = params[-1]
        return -lib_np.mean(lib_np.sum(lib.nn.log_softmax(x @ w + b) * y, axis=-1))

    def step(params, batch):
        grads = lib.grad(loss)(params, batch)
        return lib.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    return step


def bench_mlp(jax):
    params, batch = mlp_inputs()
    dev = gpuarr.devices("cuda")[0]
    p, b = gpuarr.device_put((params, batch), dev)
    step = gpuarr.jit(make_sgd_step(gpuarr, jnp), donate_argnums=0)
    state = {"p": p}

    def run_ours():
        state["p"] = step(state["p"], b)
        return state["p"]
    sync = lambda out: gpuarr.block_until_ready(out)
    t_ours = median_time(run_ours, sync, reps=30)
    if jax is None:
        return report("MLP SGD step", f"{t_ours * 1e3:.3f}", "jax", "n/a", 0.0, "<= 1.2", False, " ms")
    import jax.numpy as jjnp
    jstep = jax.jit(make_sgd_step(jax, jjnp), donate_argnums=0)
    jstate = {"p": jax.device_put(params)}
    jb = jax.device_put(batch)

    def run_jax():
        jstate["p"] = jstep(jstate["p"], jb)
        return jstate["p"]
    t_jax = median_time(run_jax, jax.block_until_ready, reps=30)
    report("MLP SGD step", f"{t_ours * 1e3:.3f}", "jax", f"{t_jax * 1e3:.3f}", t_ours / t_jax,
           "<= 1.2", t_ours / t_jax <= 1.2, " ms")


CACHE_PROGRAM = """
import numpy as np, gpuarr, gpuarr.numpy as jnp
from gpuarr.backends import nvrtc
d = gpuarr.devices("cuda")[0]
x = gpuarr.device_put(np.ones((512, 512), np.float32), d)
f = gpuarr.jit(lambda a: gpuarr.nn.softmax(jnp.tanh(a) * 2.0) + jnp.sum(a, axis=0))
f(x).block_until_ready()
print(nvrtc.compile_count())
"""


def bench_disk_cache():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GPUARR_CACHE_DIR=cache)
        counts = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", CACHE_PROGRAM], env=env, text=True,
                                 capture_output=True, check=True)
            counts.append(int(out.stdout.split()[-1]))
    report("second process NVRTC compiles", str(counts[1]), "first", str(counts[0]),
           float(counts[1]), "== 0", counts[1] == 0 and counts[0] > 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--only", default="", help="comma-separated: elementwise,reductions,"
                        "softmax,dispatch,mlp,cache")
    args = parser.parse_args(argv)
    if gpuarr.default_backend() != "gpu":
        print("bench_cuda: no CUDA device (default backend is "
              f"{gpuarr.default_backend()!r}); nothing to measure.")
        return 2
    import cupy as cp
    jax = jax_gpu()
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"JAX peer: {'yes' if jax else 'missing'}", flush=True)
    n, side, sm = (2**24, 4096, 2048) if args.quick else (2**28, 16384, 8192)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only
    copy_bw = None
    if want("elementwise") or want("reductions"):
        copy_bw = bench_elementwise(cp, n)
    if want("reductions"):
        bench_reductions(cp, n, side, copy_bw)
    if want("softmax"):
        bench_softmax(cp, sm, jax)
    if want("dispatch"):
        bench_dispatch(cp, jax)
    if want("mlp"):
        bench_mlp(jax)
    if want("cache"):
        bench_disk_cache()
    failed = [r[0] for r in ROWS if not r[-1]]
    print(f"{len(ROWS) - len(failed)}/{len(ROWS)} targets met" +
          (f"; missed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
