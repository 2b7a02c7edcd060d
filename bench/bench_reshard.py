"""Resharding an Array split over the cpu devices of 2 processes (one device each).

A (4096, 4096) float32 value (64 MiB), split over the rows (`P('i')`), is put
(a) replicated (`jax.device_put(x, NamedSharding(mesh, P()))`): each process receives the
    other's 32 MiB; the peer is a raw mpi4py `Allgather` of each process's rows into a
    preallocated 64 MiB buffer;
(b) split over the columns (`P(None, 'i')`): each process receives the other's 16 MiB
    quarter; the peer is a raw mpi4py `Alltoall` of the two 16 MiB quarters (contiguous
    copies of the column blocks, as the resharding makes) into a preallocated buffer.
In the same run, ROUNDS rounds each run both in a shuffled order after a barrier; the
ratio is the peer's time over gpuarr's (1.0: as fast as the raw MPI call; median of the
per-round ratios, with the quartiles). Both processes share this machine's cores.
Run: python bench/bench_reshard.py   (starts `mpiexec -n 2` itself)
Needs `pip install 'gpuarr[distributed]'`.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 15
N = 4096


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"  # where the mpich wheel puts it
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _worker() -> None:
    from mpi4py import MPI

    import gpuarr as jax
    jax.config.update("jax_num_cpu_devices", 1)
    jax.distributed.initialize(cluster_detection_method="mpi4py")
    comm = MPI.COMM_WORLD
    k, count = comm.Get_rank(), comm.Get_size()
    P, NamedSharding = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
    mesh = jax.make_mesh((count,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    rows = N // count
    mine = (np.arange(rows * N, dtype=np.float32) + k).reshape(rows, N)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("i")), mine)
    whole = np.empty((N, N), np.float32)
    quarters = np.empty((count, rows, N // count), np.float32)

    def raw_allgather():
        comm.Allgather(mine, whole)

    def raw_alltoall():
        send = np.ascontiguousarray(mine.reshape(rows, count, N // count).transpose(1, 0, 2))
        comm.Alltoall(send, quarters)

    cases = {"replicated": (lambda: jax.device_put(x, NamedSharding(mesh, P())),
                            raw_allgather),
             "columns": (lambda: jax.device_put(x, NamedSharding(mesh, P(None, "i"))),
                         raw_alltoall)}
    out = {}
    for name, (ours, peer) in cases.items():
        ours(), peer()  # warm up
        ratios = []
        for r in range(ROUNDS):
            order = [("ours", ours), ("peer", peer)]
            random.Random(r).shuffle(order)  # the same order in both processes
            took = {}
            for who, fn in order:
                comm.Barrier()
                start = time.perf_counter()
                fn()
                comm.Barrier()
                took[who] = time.perf_counter() - start
            ratios.append(took["peer"] / took["ours"])
        q1, med, q3 = np.percentile(ratios, [25, 50, 75])
        out[name] = dict(median=float(med), q1=float(q1), q3=float(q3))
    if k == 0:
        print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    if _mpiexec() is None:
        raise SystemExit("bench_reshard needs mpiexec: pip install 'gpuarr[distributed]'")
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUARR_PLATFORMS="cpu")
    proc = subprocess.run([_mpiexec(), "-n", "2", sys.executable, __file__, "--worker"],
                          capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode:
        raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    for name, r in json.loads(line[7:]).items():
        print(f"device_put P('i') -> {name:10s} 64 MiB over 2 processes: "
              f"{r['median']:.2f} of the raw mpi4py call's speed "
              f"(quartiles {r['q1']:.2f}-{r['q3']:.2f})")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
    else:
        main()
