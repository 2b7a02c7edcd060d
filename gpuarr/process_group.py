"""The processes of a computation: which one this is, how many there are, how many cpu devices
each has, and the MPI communicator joining them (JAX's `jax.distributed` state).

One process needs nothing. Several processes are started by an MPI launcher (`mpiexec -n 4
python train.py`, `srun`) and joined by `initialize()`; every transfer between them goes through
MPI (mpi4py, with MPICH or Open MPI). Waiting for the other processes is bounded: every
exchange starts with a meeting, and every wait (the meeting's and the data's) ends after
`timeout` seconds, so a process that died or stopped taking part, before or during a
transfer, makes the others raise `ProcessFailureError` instead of hanging.
"""
from __future__ import annotations

import hashlib
import os
import re
import time

import numpy as np

from gpuarr.config import _frozen, config

DEFAULT_TIMEOUT = 100.0  # seconds; JAX's default heartbeat_timeout_seconds


class ProcessFailureError(RuntimeError):
    """Another process did not take part in a collective within the timeout (it died, hung,
    or took another path through the program)."""


class _State:
    def __init__(self):
        self.comm = None  # an mpi4py communicator once initialized
        self.process_index = 0
        self.process_count = 1
        self.local_counts: tuple = ()  # cpu devices of each process
        self.timeout = DEFAULT_TIMEOUT
        self.coordinator_address = None


state = _State()


# ---------------------------------------------------------------- cpu device counts


def local_cpu_device_count() -> int:
    """The cpu devices of this process: `jax_num_cpu_devices` when set, else
    `--xla_force_host_platform_device_count` in XLA_FLAGS (as JAX reads it), else 1."""
    n = config._values["num_cpu_devices"]
    if n is not None and n > 0:
        return n
    match = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                      os.environ.get("XLA_FLAGS", ""))
    return int(match.group(1)) if match else 1


def freeze_cpu_device_count(count: int) -> None:
    """The cpu platform has started with `count` devices: changing the option now is JAX's
    RuntimeError."""
    _frozen["num_cpu_devices"] = (count if config._values["num_cpu_devices"] > 0
                                  else config._values["num_cpu_devices"],
                                  "jax_num_cpu_devices config should be updated before backends "
                                  "are initialized i.e. before any JAX operation is executed. "
                                  "You should initialize this config immediately after `import "
                                  "jax`.")


def cpu_device_layout() -> list[tuple[int, int]]:
    """(global id, process index) of every cpu device: process p's devices follow those of
    processes before it."""
    counts = state.local_counts or (local_cpu_device_count(),)
    out, next_id = [], 0
    for p, n in enumerate(counts):
        out.extend((next_id + i, p) for i in range(n))
        next_id += n
    return out


# ---------------------------------------------------------------- MPI with a bound on waiting


def mpi():
    """The mpi4py MPI module; ImportError saying what to install when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("Several processes need mpi4py and an MPI library: pip install "
                          "'gpuarr[distributed]' (mpi4py and mpich), or mpi4py against the "
                          "cluster's own MPI.") from e
    return MPI


def _timed_out(what: str, moving: bool) -> ProcessFailureError:
    if moving:
        return ProcessFailureError(
            f"{what}: the data did not finish moving between the {state.process_count} "
            f"processes within {state.timeout:g} s (process {state.process_index} waited): "
            "another process died or stopped during the transfer. Set the bound with "
            "jax.distributed.initialize(heartbeat_timeout_seconds=...).")
    return ProcessFailureError(
        f"{what}: process {state.process_index} waited {state.timeout:g} s for the other "
        f"{state.process_count - 1} process(es), which did not take part: one of them died, "
        "hangs, or runs a different sequence of collectives. Set the bound with "
        "jax.distributed.initialize(heartbeat_timeout_seconds=...).")


def wait(request, what: str, moving: bool = False) -> None:
    """Wait for the non-blocking MPI `request`; ProcessFailureError after `state.timeout`
    seconds (`moving`: the data of an exchange the processes met for, else the meeting
    itself), or as soon as MPI reports that a process is gone. The wait tests the request
    with no pause (MPICH moves data only inside MPI calls, so sleeping between tests would
    stall the transfer), yielding the processor between tests so that a process sharing this
    core runs its side of the exchange, and reads the clock every 64 tests. On a busy 2-core
    machine this loop moved 64 MiB all-reduces at 0.97 to 0.98 of a blocking Allreduce's
    rate; MPI's Waitany on the request and on a generalized request completed by a watchdog
    thread at the deadline reached 0.90, and testing without yielding 0.94."""
    MPI = mpi()
    deadline = time.monotonic() + state.timeout
    tests = 0
    try:
        while not request.Test():
            os.sched_yield()
            tests += 1
            if not tests & 63 and time.monotonic() > deadline:
                raise _timed_out(what, moving)
    except MPI.Exception as e:
        raise ProcessFailureError(
            f"{what}: MPI reported a failure while process {state.process_index} waited for "
            f"the other {state.process_count - 1} process(es): {e}. One of them died or "
            "left the run.") from e


# Every exchange between processes starts with a meeting: an allgather of a digest of what
# each process is about to do, waited with the bound above. When the processes agree, the data
# moves with MPI's non-blocking collectives, waited with the same bound: a process that dies
# while the data moves leaves the others with ProcessFailureError, whether or not the launcher
# ends the run.


def _gather_bytes(data: bytes, what: str) -> list[bytes]:
    comm, MPI = state.comm, mpi()
    sizes = np.zeros(state.process_count, np.int64)
    wait(comm.Iallgather(np.array([len(data)], np.int64), sizes), what)
    out = np.empty(int(sizes.sum()), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    send = np.frombuffer(data, np.uint8) if data else np.empty(0, np.uint8)
    wait(comm.Iallgatherv(send, [out, sizes, offsets, MPI.BYTE]), what, moving=True)
    return [out[o:o + s].tobytes() for o, s in zip(offsets, sizes)]


def check_same(signature: str, what: str) -> None:
    """Every process reached the same collective with the same operands (`signature`: what,
    shapes, dtypes); ValueError naming each process's signature when they differ. The
    processes compare digests (one small allgather, bounded in time) and exchange the
    signatures themselves only when they differ."""
    digest = np.frombuffer(hashlib.blake2b(signature.encode(), digest_size=16).digest(),
                           np.uint8)
    seen = np.empty((state.process_count, digest.size), np.uint8)
    wait(state.comm.Iallgather(digest, seen), what)
    if (seen == seen[:1]).all():
        return
    every = [s.decode() for s in _gather_bytes(signature.encode(), what)]
    lines = "\n".join(f"  process {p}: {s}" for p, s in enumerate(every))
    raise ValueError(f"{what}: the processes disagree on the operands (each must call the "
                     f"same collectives with the same shapes and dtypes):\n{lines}")


def allgather_bytes(data: bytes, what: str) -> list[bytes]:
    """Every process's `data` (any lengths), in process order."""
    return _gather_bytes(data, what)


def allreduce_sum(local: np.ndarray, what: str, *, signature: str | None = None,
                  in_place: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """The elementwise sum of every process's `local` (same shape and dtype everywhere),
    once the processes agree on `signature` (by default `what` with the shape and dtype).
    MPI reads `local`'s own buffer when it is contiguous and writes `out` (a C-ordered
    array of its shape and dtype; a new one when not given), or, with `in_place` (`local` is
    a C-contiguous array nothing else reads), adds into `local`."""
    comm, MPI = state.comm, mpi()
    local = np.asarray(local)
    check_same(signature or f"{what} of {local.dtype}{list(local.shape)}", what)
    if in_place and local.flags.c_contiguous and local.flags.writeable:
        wait(comm.Iallreduce(MPI.IN_PLACE, local, op=MPI.SUM), what, moving=True)
        return local
    send = np.require(local, requirements="C")  # keeps 0-d arrays 0-d
    out = np.empty(send.shape, send.dtype) if out is None else out
    wait(comm.Iallreduce(send, out, op=MPI.SUM), what, moving=True)
    return out


def allgather_array(local: np.ndarray, what: str, *, signature: str | None = None
                    ) -> np.ndarray:
    """Every process's `local`, stacked along a new leading axis in process order, once the
    processes agree on `signature` (by default `what` with the shape and dtype)."""
    local = np.require(local, requirements="C")
    check_same(signature or f"{what} of {local.dtype}{list(local.shape)}", what)
    out = np.empty((state.process_count, *local.shape), local.dtype)
    wait(state.comm.Iallgather(local, out), what, moving=True)
    return out


def alltoallv(send: np.ndarray, send_counts, recv_counts, what: str, *, signature: str,
              send_at=None, recv: np.ndarray | None = None, recv_at=None) -> np.ndarray:
    """Every process's bytes for this one, in one MPI Alltoallv once the processes agree on
    `signature`: `send` (uint8) holds the `send_counts[q]` bytes for process q at byte
    `send_at[q]` (by default one after another in process order); the `recv_counts[q]`
    bytes from each q land in `recv` at `recv_at[q]` (by default a new buffer, in process
    order), which is returned."""
    MPI = mpi()
    check_same(signature, what)
    send_counts = np.asarray(send_counts, np.int64)
    recv_counts = np.asarray(recv_counts, np.int64)
    if send_at is None:
        send_at = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
    if recv is None:
        recv = np.empty(int(recv_counts.sum()), np.uint8)
        recv_at = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
    wait(state.comm.Ialltoallv([send, send_counts, np.asarray(send_at, np.int64), MPI.BYTE],
                               [recv, recv_counts, np.asarray(recv_at, np.int64), MPI.BYTE]),
         what, moving=True)
    return recv


def barrier(what: str) -> None:
    if state.comm is not None:
        wait(state.comm.Ibarrier(), what)


# ---------------------------------------------------------------- initialize and shutdown


def _launched_by_mpi() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                                         "MPI_LOCALRANKID", "SLURM_PROCID"))


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, heartbeat_timeout_seconds=100,
               shutdown_timeout_seconds=300, coordinator_bind_address=None, slice_index=None,
               partition_index=None, *, platforms_started=False) -> None:
    """Join this process to the others (see gpuarr.distributed.initialize)."""
    if state.comm is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    if platforms_started:
        raise RuntimeError("jax.distributed.initialize() must be called before any JAX "
                           "computations are executed (the cpu platform has already started "
                           "with this process's devices only).")
    if cluster_detection_method not in (None, "mpi4py"):
        raise ValueError(f"cluster_detection_method={cluster_detection_method!r} is not "
                         "supported: gpuarr's processes are joined by MPI; use 'mpi4py' or "
                         "None.")
    for name, value in (("process_id", process_id), ("num_processes", num_processes)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise TypeError(f"{name} must be a nonnegative int. Got {name}={value}")
    if num_processes is not None and num_processes < 1:
        raise TypeError(f"num_processes must be a positive int. Got {num_processes}")
    if (process_id is not None and num_processes is not None
            and not process_id < num_processes):
        raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                         f"num_processes. Got process_id={process_id}, "
                         f"num_processes={num_processes}")
    if coordinator_address is not None and not re.fullmatch(r"[^:]+:\d+", coordinator_address):
        raise ValueError(f"coordinator_address must be 'host:port', got {coordinator_address!r}")
    if (cluster_detection_method is None and not _launched_by_mpi()
            and (num_processes or 1) > 1):
        raise RuntimeError(
            f"jax.distributed.initialize(num_processes={num_processes}): gpuarr's processes "
            "are started and joined by an MPI launcher. Run the program with `mpiexec -n "
            f"{num_processes} python ...` (or `srun`), then call initialize() with or without "
            "cluster_detection_method='mpi4py'.")
    MPI = mpi()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if num_processes is not None and num_processes != size:
        raise ValueError(f"num_processes={num_processes}, but the MPI launcher started {size} "
                         "process(es).")
    if process_id is not None and process_id != rank:
        raise ValueError(f"process_id={process_id}, but this is MPI rank {rank}; gpuarr "
                         "numbers processes by their MPI rank.")
    count = local_cpu_device_count()
    if local_device_ids is not None:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
        count = len(ids)
    state.comm = comm.Dup()
    state.process_index, state.process_count = rank, size
    state.timeout = float(min(initialization_timeout, heartbeat_timeout_seconds))
    state.coordinator_address = coordinator_address
    try:
        counts = allgather_array(np.array([count], np.int64), "jax.distributed.initialize")[:, 0]
    except BaseException:
        state.comm, state.process_index, state.process_count = None, 0, 1
        raise
    state.local_counts = tuple(int(c) for c in counts)
    state.timeout = float(heartbeat_timeout_seconds)


def shutdown() -> None:
    """Leave the group of processes (a no-op when not initialized)."""
    if state.comm is None:
        return
    try:
        barrier("jax.distributed.shutdown")
    finally:
        state.comm.Free()
        state.comm = None
        state.process_index, state.process_count = 0, 1
        state.local_counts = ()


def is_initialized() -> bool:
    return state.comm is not None
