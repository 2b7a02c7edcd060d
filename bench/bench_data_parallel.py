"""jit on split inputs: one data-parallel MLP training step partitioned by in_shardings.

The step (value_and_grad of a 3-layer MLP's mean squared error, batch 8192, 512 -> 1024 ->
1024 -> 1, and SGD) is jitted twice: plainly (one device) and with `in_shardings` splitting
the batch over N cpu devices, parameters replicated, which runs one program per device with
the gradients' sums all-reduced (sharding/data_parallel.py). JAX runs the same two jits with
N host devices (`jax_num_cpu_devices`) in a process of its own in the same run. Reported:
each library's scaling figure (one device's step time over the split step's) and gpuarr's
split step time over JAX's. Each library runs in a fresh process, since the cpu device count
is fixed when the platform starts; the devices share this machine's cores, so the scaling
figure is bounded by the cores idle while it runs.
Run: python bench/bench_data_parallel.py [N]   (default N = 2)
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # timing.py
import timing  # noqa: E402

REPEATS = 7


def _worker(lib: str, n: int) -> None:
    jax = timing.library_with_cpu_devices(lib, n)
    jnp = jax.numpy
    P, NamedSharding = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
    rng = np.random.default_rng(0)
    sizes = [512, 1024, 1024, 1]
    params = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
               np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    x = rng.standard_normal((8192, 512)).astype(np.float32)
    y = rng.standard_normal((8192, 1)).astype(np.float32)

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        return loss, jax.tree_util.tree_map(lambda p, d: p - 0.01 * d, params, g)

    mesh = jax.make_mesh((n,), ("data",))
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    one = jax.jit(step)
    spread = jax.jit(step, in_shardings=(rep, split, split), out_shardings=(rep, rep))
    times = {}
    losses = {}
    for name, f in (("one", one), ("split", spread)):
        loss, _ = f(params, x, y)  # compile
        jax.block_until_ready(loss)
        runs = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            loss, new = f(params, x, y)
            jax.block_until_ready(new)
            runs.append(time.perf_counter() - start)
        times[name] = float(np.median(runs))
        losses[name] = float(loss)
    print("RESULT " + json.dumps({"times": times, "losses": losses}), flush=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ours, theirs = (timing.worker_result(__file__, lib, n) for lib in ("gpuarr", "jax"))
    for lib, r in (("gpuarr", ours), ("jax", theirs)):
        t = r["times"]
        print(f"{lib:>6}: one device {t['one'] * 1e3:8.1f} ms, split over {n} "
              f"{t['split'] * 1e3:8.1f} ms, scaling {t['one'] / t['split']:.2f}x "
              f"(losses {r['losses']['one']:.6f} / {r['losses']['split']:.6f})")
    print(f"gpuarr split step / JAX split step: "
          f"{ours['times']['split'] / theirs['times']['split']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], int(sys.argv[3]))
    else:
        main()
