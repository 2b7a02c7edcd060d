"""Scale-out throughput: collectives between processes and data-parallel training steps.

(a) all-reduce of 64 MiB of float32 between 2 processes: `lax.psum` inside a jitted
    shard_map over a mesh of both processes' cpu devices, against a raw mpi4py `Allreduce` of
    the same buffer into a preallocated output, in the same run, ROUNDS rounds each running
    both in a shuffled order after a barrier; the ratio is psum's bandwidth over Allreduce's
    (median of the per-round ratios, with the quartiles); so is that of `pmap`'s psum of each
    process's local batch (one position per process: its 64 MiB, taken from the host on
    every call, as a pmap given a NumPy batch takes it);
(b) one data-parallel step of an MLP (batch 8192, 512 -> 1024 -> 1024 -> 1, value_and_grad and
    SGD) on 1 process (the step as one jitted program) and on 2 processes (jitted shard_map,
    each process with half the batch, gradients averaged with pmean); the scaling figure is
    the 1-process time over the 2-process time. Both processes share this machine's cores,
    so the figure is bounded by the cores idle while it runs.
Every process runs on this machine.
Run: python bench/bench_distributed.py             (starts its runs with mpiexec)
 or: mpiexec -n 2 python bench/bench_distributed.py  (one run of 2 processes does it all;
     the 1-process step runs on process 0 while process 1 waits)
Needs `pip install 'gpuarr[distributed]'`.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"  # where the mpich wheel puts it
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _launch(procs: int, what: str) -> list[dict]:
    cmd = [_mpiexec(), "-n", str(procs), sys.executable, __file__, "--worker",
           what]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[7:])


def _report(result: dict) -> None:
    """Process 0 prints every process's `result` (one line, never interleaved)."""
    from mpi4py import MPI
    every = MPI.COMM_WORLD.gather(result, root=0)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print("RESULT " + json.dumps(every), flush=True)


ROUNDS = 15


def _allreduce(jax, mesh, sharding) -> dict:
    from mpi4py import MPI
    P = jax.sharding.PartitionSpec
    me = jax.process_index()
    n = (64 << 20) // 4
    local = np.random.default_rng(me).standard_normal(n).astype(np.float32)
    x = jax.make_array_from_process_local_data(sharding, local)
    psum = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                                 out_specs=P()))
    pmapped = jax.pmap(lambda v: jax.lax.psum(v, "p"), "p")
    out = np.empty_like(local)
    comm = MPI.COMM_WORLD
    runs = {"raw": lambda: comm.Allreduce(local, out),
            "psum": lambda: psum(x).block_until_ready(),
            "pmap": lambda: pmapped(local[None]).block_until_ready()}
    for run in runs.values():
        run()
    times: dict = {k: [] for k in runs}
    order = np.random.default_rng(7)  # the same order on both processes
    for _ in range(ROUNDS):
        for k in order.permutation(list(runs)):
            comm.Barrier()
            t = time.perf_counter()
            runs[k]()
            times[k].append(time.perf_counter() - t)
    ratios = np.array(times["raw"]) / np.array(times["psum"])
    pmap_ratios = np.array(times["raw"]) / np.array(times["pmap"])
    return dict(process=me, raw_s=times["raw"], psum_s=times["psum"], pmap_s=times["pmap"],
                ratio=float(np.median(ratios)),
                ratio_quartiles=[float(q) for q in np.quantile(ratios, [0.25, 0.75])],
                pmap_ratio=float(np.median(pmap_ratios)), mib=n * 4 / 2**20)


def _worker(what: str) -> None:
    import gpuarr as jax
    P = jax.sharding.PartitionSpec
    if what != "step1":
        jax.distributed.initialize(cluster_detection_method="mpi4py")
    mesh = jax.make_mesh((jax.device_count(),), ("i",))
    sharding = jax.sharding.NamedSharding(mesh, P("i"))
    if what == "allreduce":
        _report(_allreduce(jax, mesh, sharding))
        return
    _report(_step(jax, mesh, sharding, what))


def _step(jax, mesh, sharding, what: str) -> dict:
    lax = jax.lax
    P = jax.sharding.PartitionSpec
    me = jax.process_index()
    rng = np.random.default_rng(0)
    batch, sizes = 8192, [512, 1024, 1024, 1]
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = rng.standard_normal((batch, 1)).astype(np.float32)
    params = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
               np.zeros(b, np.float32)) for a, b in zip(sizes[:-1], sizes[1:])]

    def loss_fn(ps, x, y):
        for w, b in ps[:-1]:
            x = jax.numpy.tanh(x @ w + b)
        w, b = ps[-1]
        return jax.numpy.mean((x @ w + b - y) ** 2)

    def sgd(ps, x, y, mean=lambda v: v):
        loss, g = jax.value_and_grad(loss_fn)(ps, x, y)
        g = mean(g)
        return mean(loss), jax.tree_util.tree_map(lambda a, d: a - 0.01 * d, ps, g)

    def local_step(ps, x, y):
        return sgd(ps, x, y, lambda v: lax.pmean(v, "i"))
    local_step.__wrapped__ = sgd

    if what == "step1":  # the baseline: the same step as one jitted program, no shard_map
        step = jax.jit(lambda ps, x, y: jax.tree_util.tree_map(
            lambda a: a, local_step.__wrapped__(ps, x, y)))
    else:
        # check_vma=False: each device's gradient is its own, which the pmean averages (with
        # check_vma, JAX's gradient of the replicated parameters is already the devices' sum)
        step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("i"), P("i")),
                                     out_specs=(P(), P()), check_vma=False))
    if what == "step1":  # one process: the whole batch, no mesh
        x, y = xs, ys
    else:
        rows = batch // jax.process_count()
        x = jax.make_array_from_process_local_data(sharding, xs[me * rows:(me + 1) * rows])
        y = jax.make_array_from_process_local_data(sharding, ys[me * rows:(me + 1) * rows])
    loss, params = step(params, x, y)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        loss, params = step(params, x, y)
        float(loss)
        times.append(time.perf_counter() - t)
    return dict(process=me, step_s=float(np.median(times)))


def _print_allreduce(allreduce: list) -> None:
    r = allreduce[0]
    raw, ours = np.median(r["raw_s"]), np.median(r["psum_s"])
    spread = ", ".join(f"process {x['process']}: {x['ratio']:.3f} (quartiles "
                       f"{x['ratio_quartiles'][0]:.3f} to {x['ratio_quartiles'][1]:.3f})"
                       for x in allreduce)
    print(f"all-reduce {r['mib']:.0f} MiB float32, 2 processes, {ROUNDS} rounds: raw mpi4py "
          f"Allreduce {raw * 1e3:.1f} ms ({r['mib'] / raw:.0f} MiB/s; "
          f"{min(r['raw_s']) * 1e3:.0f} to {max(r['raw_s']) * 1e3:.0f} ms), gpuarr psum "
          f"{ours * 1e3:.1f} ms ({r['mib'] / ours:.0f} MiB/s; {min(r['psum_s']) * 1e3:.0f} to "
          f"{max(r['psum_s']) * 1e3:.0f} ms); psum/Allreduce bandwidth ratio, median of the "
          f"rounds: {spread}")
    print(f"pmap's psum of each process's local batch {np.median(r['pmap_s']) * 1e3:.1f} ms; "
          "pmap/Allreduce bandwidth ratio, median of the rounds: "
          + ", ".join(f"process {x['process']}: {x['pmap_ratio']:.3f}" for x in allreduce))


def _print_steps(one: float, two: float) -> None:
    print(f"data-parallel MLP step (batch 8192): 1 process {one * 1e3:.1f} ms, 2 processes "
          f"{two * 1e3:.1f} ms; speed-up {one / two:.2f}x (cores: {os.cpu_count()})")


def _under_launcher() -> None:
    """Started as `mpiexec -n 2 python bench_distributed.py`: every part in this run."""
    from mpi4py import MPI

    import gpuarr as jax
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("run with mpiexec -n 2 (or without mpiexec)")
    P = jax.sharding.PartitionSpec
    jax.distributed.initialize(cluster_detection_method="mpi4py")
    mesh = jax.make_mesh((jax.device_count(),), ("i",))
    sharding = jax.sharding.NamedSharding(mesh, P("i"))
    allreduce = comm.gather(_allreduce(jax, mesh, sharding), root=0)
    two = comm.gather(_step(jax, mesh, sharding, "step"), root=0)
    one = None
    if comm.Get_rank() == 0:
        one = _step(jax, mesh, sharding, "step1")["step_s"]
        comm.send(None, dest=1)
    else:  # wait without spinning a core while process 0 runs alone
        request = comm.irecv(source=0)
        while not request.Test():
            time.sleep(0.05)
    if comm.Get_rank() == 0:
        _print_allreduce(allreduce)
        _print_steps(one, max(x["step_s"] for x in two))


def main() -> None:
    if any(k in os.environ for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")):
        _under_launcher()
        return
    if _mpiexec() is None:
        raise SystemExit("bench_distributed needs mpiexec: pip install 'gpuarr[distributed]'")
    _print_allreduce(_launch(2, "allreduce"))
    one = _launch(1, "step1")[0]["step_s"]
    two = max(x["step_s"] for x in _launch(2, "step"))
    _print_steps(one, two)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker(sys.argv[sys.argv.index("--worker") + 1])
    else:
        main()
