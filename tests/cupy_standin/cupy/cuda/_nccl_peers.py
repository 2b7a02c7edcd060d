"""How the stand-in's NCCL reaches ranks in other processes: over MPI (mpi4py's COMM_WORLD,
which the program has initialised), where NCCL uses its bootstrap sockets and its transports
(NVLink, PCIe, InfiniBand). None of this is CuPy's API.

- A unique id made while MPI runs with several processes names its maker, the bootstrap root
  (NCCL's id holds the root's socket address). Every rank that joins sends (rank, process,
  device, size) to the root; once all ranks have joined, the root sends every joining process
  the table of ranks, so an init returns only when every rank has joined (ncclCommInitRank
  blocks until then; inside a group, ncclGroupEnd does).
- An operation whose ranks live in several processes runs in each process when that
  process's stream reaches it: the process sends its ranks' parts (arguments and send
  buffers) to the other processes of the operation, waits for theirs, and writes its own
  ranks' receive buffers.
- A thread per process receives these messages. When another process waits for this
  process's part of an operation whose calls were all issued here, a second thread runs this
  process's stream up to it, as a GPU runs its stream whatever its host thread does; so no
  process depends on another's host thread reaching a synchronisation.

A wait for another process ends after CUPY_STANDIN_NCCL_TIMEOUT seconds (default 120) with
NCCL_ERROR_REMOTE_ERROR, where a GPU would wait for ever.
"""
from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time

TAG = 0x4E43  # the stand-in's messages on COMM_WORLD (gpuarr talks on a duplicate of it)
_MAGIC = (0x4E, 0x43, 0x43, 0x4C)  # "NCCL"

_cond = threading.Condition()
_joins: dict = {}  # uid -> {rank: (process, device, ndev)}, at the root
_tables: dict = {}  # uid -> {rank: (process, device)} or an error message
_parts: dict = {}  # (uid, key) -> {slot: part} received from other processes
_expected: dict = {}  # (uid, key) -> how to run this process's part (its calls are all issued)
_errors: dict = {}  # uid -> error raised while running a part for another process
_threads: list = []
_stop = threading.Event()
_to_run: queue.Queue = queue.Queue()


def timeout() -> float:
    return float(os.environ.get("CUPY_STANDIN_NCCL_TIMEOUT", "120"))


def mpi():
    """mpi4py's MPI when the program initialised it with several processes, else None."""
    MPI = sys.modules.get("mpi4py.MPI")  # noqa: N806 - mpi4py's name
    if MPI is None or not MPI.Is_initialized() or MPI.Is_finalized():
        return None
    return MPI if MPI.COMM_WORLD.Get_size() > 1 else None


def me() -> int:
    return mpi().COMM_WORLD.Get_rank()


def unique_id(random_bytes: bytes) -> tuple:
    """An id naming this process as its root when MPI runs, else the random bytes alone."""
    raw = list(random_bytes)
    if mpi() is not None:
        _start()
        raw[:8] = [*_MAGIC, *me().to_bytes(4, "little")]
    return tuple(b - 256 if b > 127 else b for b in raw)


def root_of(uid) -> int | None:
    """The process that made `uid`, when it was made under MPI with several processes."""
    raw = [b % 256 for b in uid]
    if mpi() is None or tuple(raw[:4]) != _MAGIC:
        return None
    return int.from_bytes(bytes(raw[4:8]), "little")


def join(uid, ndev: int, rank: int, device: int) -> None:
    """Announce this rank of the clique `uid` to its root (returns at once)."""
    _start()
    _deliver(root_of(uid), ("join", tuple(uid), rank, me(), device, ndev))


def table(uid) -> dict:
    """{rank: (process, device)} once every rank of `uid` has joined."""
    from cupy.cuda import nccl
    uid = tuple(uid)
    with _cond:
        if not _cond.wait_for(lambda: uid in _tables, timeout()):
            got = sorted(_joins.get(uid, {}))
            raise nccl.NcclError(nccl.ncclRemoteError, "the other ranks of the communicator "
                                 f"did not join within {timeout():g} s" +
                                 (f" (joined: ranks {got})" if got else ""))
        result = _tables[uid]
    if isinstance(result, str):
        raise nccl.NcclError(nccl.ncclInvalidUsage, result)
    return result


def send_parts(uid, key, processes, parts: dict) -> None:
    """Give the processes of an operation this process's parts of it."""
    from cupy import _standin
    for p in sorted(processes):
        for part in parts.values():
            if part[2] is not None:
                _standin.counters.peer(part[2].nbytes)
        _deliver(p, ("parts", tuple(uid), key, me(), parts))


def wait_parts(uid, key, slots, what: str) -> dict:
    """The parts of `slots` of an operation, from the processes holding them."""
    from cupy.cuda import nccl
    k = (tuple(uid), key)
    with _cond:
        if not _cond.wait_for(lambda: set(slots) <= set(_parts.get(k, {})), timeout()):
            got = set(_parts.get(k, {}))
            raise nccl.NcclError(nccl.ncclRemoteError, f"{what}: ranks "
                                 f"{sorted(set(slots) - got)} in other processes did not "
                                 f"take part within {timeout():g} s (on a GPU the stream "
                                 "would wait for ever)")
        return _parts.pop(k)


def expect(uid, key, run) -> None:
    """This process's calls of an operation are all issued: `run()` runs its stream up to
    it when another process waits for its part."""
    k = (tuple(uid), key)
    with _cond:
        if k in _parts:
            _to_run.put((k[0], run))
        else:
            _expected[k] = run


def ran(uid, key) -> None:
    with _cond:
        _expected.pop((tuple(uid), key), None)


def async_error(uid):
    return _errors.get(tuple(uid))


# ---- the threads ------------------------------------------------------------------------


def _deliver(process: int, message) -> None:
    if process == me():
        _receive(message)
    else:
        mpi().COMM_WORLD.send(message, dest=process, tag=TAG)


def _receive(message) -> None:
    kind, uid = message[0], message[1]
    with _cond:
        if kind == "join":
            _, _, rank, process, device, ndev = message
            joined = _joins.setdefault(uid, {})
            if rank in joined or any(n != ndev for _, _, n in joined.values()) \
                    or not 0 <= rank < ndev:
                problem = (f"rank {rank} of a communicator of {ndev} joined twice or with "
                           "another size")
                _deliver_later(process, ("table", uid, problem))
                return
            joined[rank] = (process, device, ndev)
            if len(joined) == ndev:
                ranks = {r: (p, d) for r, (p, d, _) in joined.items()}
                for p in sorted({p for p, _ in ranks.values()}):
                    _deliver_later(p, ("table", uid, ranks))
        elif kind == "table":
            _tables[uid] = message[2]
        elif kind == "parts":
            _, _, key, _, parts = message
            _parts.setdefault((uid, key), {}).update(parts)
            run = _expected.pop((uid, key), None)
            if run is not None:
                _to_run.put((uid, run))
        _cond.notify_all()


_outbox: queue.Queue = queue.Queue()  # replies the receiving thread sends once unlocked


def _deliver_later(process: int, message) -> None:
    _outbox.put((process, message))


def _receiving() -> None:
    MPI = mpi()  # noqa: N806
    comm, status, idle = MPI.COMM_WORLD, MPI.Status(), 0.0
    while not _stop.is_set():
        while not _outbox.empty():
            process, message = _outbox.get()
            if process == me():
                _receive(message)
            else:
                comm.send(message, dest=process, tag=TAG)
        if comm.Iprobe(source=MPI.ANY_SOURCE, tag=TAG, status=status):
            _receive(comm.recv(source=status.Get_source(), tag=TAG))
            idle = 0.0
        else:  # poll, backing off while nothing arrives (a blocking recv would spin a core)
            time.sleep(idle)
            idle = min(0.005, idle + 0.0005)


def _running() -> None:
    while True:
        item = _to_run.get()
        if item is None:
            return
        uid, run = item
        try:
            run()
        except Exception as e:  # noqa: BLE001 - kept for the communicator's next call
            _errors.setdefault(uid, e)


def _start() -> None:
    with _cond:
        if _threads:
            return
        MPI = mpi()  # noqa: N806
        if MPI.Query_thread() != MPI.THREAD_MULTIPLE:  # two threads here call MPI
            raise RuntimeError("the CuPy stand-in's NCCL between processes needs MPI "
                               "initialised with MPI_THREAD_MULTIPLE (mpi4py's default "
                               "thread level)")
        for target in (_receiving, _running):
            t = threading.Thread(target=target, daemon=True, name=f"nccl-standin{target.__name__}")
            t.start()
            _threads.append(t)
        atexit.register(_shutdown)  # before mpi4py finalizes MPI


def _shutdown() -> None:
    _stop.set()
    _to_run.put(None)
    for t in _threads:
        t.join(timeout=5)
