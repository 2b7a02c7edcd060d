"""Eager operations on an array split over N cpu devices, and a jitted function holding a
shard_map among other operations.

Each operation JAX runs per device without communication (`x @ w` with `x` split on rows and
`w` replicated, a slice and a transpose, `sort` and `cumsum` along the unsplit axis),
`jit(lambda v: tanh(shard_map(f)(v * 3) @ w + 1))`, a jitted `fori_loop` of 10 shard_map
steps (`tanh(v @ w * 0.5 + pmean(v.mean(0)))`, the carry kept split), and operations along
the split rows (a
slice of 100 rows, a reversal, a concatenation, a gather and a scatter-add of 256 rows, a
sort) run on a float32 (4096, 512) array split over N devices, and on the same array on one
device. JAX runs the same calls with N host
devices in a process of its own in the same run (the device count is fixed when the platform
starts). Reported per operation: each library's split time over its one-device time, and
gpuarr's split time over JAX's. The devices share this machine's cores.
Run: python bench/bench_split_eager.py [N]   (default N = 2)
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
    full = rng.standard_normal((4096, 512)).astype(np.float32)
    w_host = (rng.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32)
    mesh = jax.make_mesh((n,), ("i",))
    x = jax.device_put(full, NamedSharding(mesh, P("i")))
    # along the split rows over Explicit axes JAX raises ShardingTypeError: an Auto mesh
    auto = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    xa = jax.device_put(full, NamedSharding(auto, P("i")))
    w = jax.device_put(w_host, NamedSharding(mesh, P()))
    x1, w1 = jax.device_put(full, jax.devices()[0]), jax.device_put(w_host, jax.devices()[0])
    smap = jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    around = jax.jit(lambda v, a: jnp.tanh(smap(v * 3) @ a + 1.0))
    step = jax.shard_map(lambda v, a: jnp.tanh(v @ a * 0.5 + jax.lax.pmean(v.mean(0), "i")),
                         mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i"))
    looped = jax.jit(lambda v, a: jax.lax.fori_loop(0, 10, lambda k, u: step(u, a), v))
    rows = np.arange(0, 4096, 16, dtype=np.int32)[::-1].copy()  # 256 rows from every device
    cases = {"matmul": lambda v, a: v @ a, "slice": lambda v, a: v[:, 100:300],
             "transpose": lambda v, a: v.T, "sort": lambda v, a: jnp.sort(v, axis=1),
             "cumsum": lambda v, a: jnp.cumsum(v, axis=1), "jit_around_shard_map": around,
             "fori_loop_shard_map": looped,
             # along the split dimension
             "slice_rows": lambda v, a: v[1000:1100], "reverse_rows": lambda v, a: v[::-1],
             "concat_rows": lambda v, a: jnp.concatenate([v, v], 0),
             "gather_rows": lambda v, a: v[rows], "scatter_rows": lambda v, a: v.at[rows].add(1.0),
             "sort_rows": lambda v, a: jnp.sort(v, axis=0)}
    times = {}
    for name, fn in cases.items():
        split = (xa, w) if name.endswith("_rows") else (x, w)
        for where, args in (("split", split), ("one", (x1, w1))):
            if name == "jit_around_shard_map" and where == "one":
                fn = jax.jit(lambda v, a: jnp.tanh(v * 3 * 2 @ a + 1.0))
            if name == "fori_loop_shard_map" and where == "one":
                fn = jax.jit(lambda v, a: jax.lax.fori_loop(
                    0, 10, lambda k, u: jnp.tanh(u @ a * 0.5 + u.mean(0)), v))
            jax.block_until_ready(fn(*args))
            runs = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                jax.block_until_ready(fn(*args))
                runs.append(time.perf_counter() - start)
            times[f"{name}/{where}"] = float(np.median(runs))
    print("RESULT " + json.dumps(times), flush=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ours, theirs = (timing.worker_result(__file__, lib, n, GPUARR_PLATFORMS="cpu")
                    for lib in ("gpuarr", "jax"))
    names = list(dict.fromkeys(k.split("/")[0] for k in ours))
    print(f"{'operation':>22} {'gpuarr split':>13} {'split/one':>9} {'JAX split':>10} "
          f"{'split/one':>9} {'gpuarr/JAX':>10}")
    for name in names:
        a, a1 = ours[f"{name}/split"], ours[f"{name}/one"]
        b, b1 = theirs[f"{name}/split"], theirs[f"{name}/one"]
        print(f"{name:>22} {a * 1e3:10.2f} ms {a / a1:9.2f} {b * 1e3:7.2f} ms {b / b1:9.2f} "
              f"{a / b:10.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], int(sys.argv[3]))
    else:
        main()
