"""cupy.cuda.nccl of the stand-in: NCCL's collectives between the simulated GPUs of this process.

The API copies CuPy's binding (cupy/cuda/nccl.pyx): `get_unique_id`, `NcclCommunicator(ndev,
commId, rank)` and `NcclCommunicator.initAll(devices)`, `groupStart`/`groupEnd`, the
communicator's `allReduce`, `reduce`, `broadcast`, `bcast`, `reduceScatter`, `allGather`,
`send`, `recv`, `device_id`, `rank_id`, `size`, `destroy`, `abort`, and `NcclError` ('NAME:
message', the status kept). Buffers are device pointers and counts are elements.

The semantics copy NCCL's documentation (docs.nvidia.com/deeplearning/nccl, "Collective
operations", "Group calls", "Point-to-point communication", "CUDA stream semantics"):

- Each call is enqueued on the given stream and runs in order with the other work on it; it
  returns at once. The k-th collective call on each communicator of a clique (the
  communicators of one unique id, or of one initAll) is one operation: it runs when every rank
  has called it, after the work queued before it on every rank's stream, reading every rank's
  send buffer and writing every rank's receive buffer (in-place when they are the same).
- Between `groupStart` and `groupEnd` (per thread, nestable) calls are only collected; the
  outermost `groupEnd` issues them. One thread driving several devices must group its calls:
  issuing a rank's collective outside a group while another rank that this thread also drives
  has not called it would block that thread for ever on a GPU, so it is an
  NCCL_ERROR_INVALID_USAGE here.
- The k-th `send` from rank a to rank b matches the k-th `recv` on b from a.
- Arguments are checked as NCCL checks them (NCCL_ERROR_INVALID_ARGUMENT): a known data type
  and reduction, a root or peer in range, pointers on the communicator's device (null only
  for a count of 0), the stream on that device, and the same count, type and operation on
  every rank of an operation.
- A stream forced to run past an operation some rank has not called would wait for ever on a
  GPU; here it raises NcclError (NCCL_ERROR_INVALID_USAGE) saying which ranks are missing.

- `NcclCommunicator(ndev, commId, rank)` returns once all `ndev` ranks have called it with
  `commId` (ncclCommInitRank); inside a group it returns at once and `groupEnd` waits, so
  one thread can set up several ranks (a communicator is usable after that groupEnd).

The ranks of a unique id made while MPI (mpi4py) runs with several processes may live in any
of them: the processes exchange the ranks' parts over MPI (`_nccl_peers`), where NCCL uses
its own transports. Without MPI, or through `initAll`, a clique is this process's ranks only.
Each issued call counts in `cupy._standin.counters.library` (ncclAllReduce, ncclSend, ...),
and the bytes sent to other processes in `counters.peer_bytes`.
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from cupy import _standin
from cupy.cuda import _nccl_peers, _queue, memory, runtime

# nccl.h
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
NCCL_UNIQUE_ID_BYTES = 128
available = True

_DTYPES = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32,
           NCCL_UINT32: np.uint32, NCCL_INT64: np.int64, NCCL_UINT64: np.uint64,
           NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32, NCCL_FLOAT64: np.float64,
           NCCL_BFLOAT16: np.uint16}  # bfloat16 moves as raw 16-bit words
_REDUCE = {NCCL_SUM: np.add, NCCL_PROD: np.multiply, NCCL_MAX: np.maximum,
           NCCL_MIN: np.minimum, NCCL_AVG: np.add}

ncclSuccess, ncclUnhandledCudaError, ncclSystemError, ncclInternalError = 0, 1, 2, 3  # noqa: N816
ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError = 4, 5, 6  # noqa: N816
_ERRORS = {  # cupy's ERROR2 names, ncclGetErrorString's messages
    1: ("NCCL_ERROR_UNHANDLED_CUDA_ERROR",
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"),
    2: ("NCCL_ERROR_SYSTEM_ERROR", "unhandled system error (run with NCCL_DEBUG=INFO for details)"),
    3: ("NCCL_ERROR_INTERNAL_ERROR",
        "internal error - please report this issue to the NCCL developers"),
    4: ("NCCL_ERROR_INVALID_ARGUMENT", "invalid argument (run with NCCL_DEBUG=WARN for details)"),
    5: ("NCCL_ERROR_INVALID_USAGE", "invalid usage (run with NCCL_DEBUG=WARN for details)"),
    6: ("NCCL_ERROR_REMOTE_ERROR", "remote process exited or there was a network error"),
}


class NcclError(RuntimeError):
    def __init__(self, status, detail=None):
        self.status = status
        name, msg = _ERRORS.get(status, (f"NCCL_ERROR_{status}", "unknown result code"))
        # What NCCL_DEBUG=WARN would have printed, kept with the error.
        super().__init__(f"{name}: {msg}" + (f" ({detail})" if detail else ""))

    def __reduce__(self):
        return (type(self), (self.status,))


def get_build_version() -> int:
    return 22703


def get_version() -> int:
    return 22703  # NCCL 2.27.3


def get_unique_id() -> tuple:
    return _nccl_peers.unique_id(os.urandom(NCCL_UNIQUE_ID_BYTES))


# ---- cliques: the communicators of one unique id ---------------------------------------------

_lock = threading.RLock()
_cliques: dict = {}  # unique id -> _Clique
_tls = threading.local()


class _Clique:
    def __init__(self, nranks: int, uid=None):
        self.nranks = nranks
        self.uid = uid  # for a clique whose ranks may be in other processes
        self.processes: dict | None = None  # rank -> process, once every rank has joined
        self.devices: dict = {}  # rank -> device
        self.seq: dict = {}  # rank -> number of collective calls issued
        self.ops: dict = {}  # ("coll", k) or ("p2p", src, dst, k) -> _Operation
        self.p2p: dict = {}  # (src, dst, "send" | "recv") -> number issued


class _Operation:
    """One collective (or one send/recv pair): the calls of its ranks, run once all are in.
    `local`: the slots (ranks, or the send and recv roles) this process holds."""

    def __init__(self, clique, key, needed: int, local):
        self.clique, self.key, self.needed, self.local = clique, key, needed, tuple(local)
        self.calls: dict = {}  # rank (or role) -> (kind, args, queue op)
        self.ran = self.sent = False
        self.group = [self]  # the operations issued in one group with it (several processes)

    def missing(self) -> list:
        return sorted(set(self.local) - set(self.calls))

    def rank_of(self, slot: int) -> int:
        return self.key[1 + slot] if self.key[0] == "p2p" else slot

    def run(self) -> None:
        if self.ran:
            return
        if self.missing():
            raise NcclError(ncclInvalidUsage, f"a stream reached {self.describe()} before "
                            f"ranks {self.missing()} called it; on a GPU it would wait for ever")
        self.ran = True
        calls = {s: (c[0], c[1]) for s, c in self.calls.items()}
        received: dict = {}
        if len(self.local) < self.needed:
            received = self._exchange(calls)
            _check_match(calls, self.describe())
        _compute(calls, received, self.needed, set(self.local))

    def _send(self) -> None:
        """Send this process's parts to the operation's other processes, once the work
        queued before them has run."""
        if self.sent:
            return
        self.sent = True
        for c in self.calls.values():
            for before in (c[4], *c[2].deps):
                _queue.run_until(before)
        clique = self.clique
        parts = {s: (c[0], c[1], _sent_data(c[0], c[1], s, clique.nranks))
                 for s, c in self.calls.items()}
        here = _nccl_peers.me()
        others = {clique.processes[self.rank_of(s)] for s in range(self.needed)} - {here}
        _nccl_peers.send_parts(clique.uid, self.key, others, parts)

    def _exchange(self, calls: dict) -> dict:
        """This process's parts to the other processes, theirs back. The operations of one
        group progress together (NCCL fuses them): all their parts leave before any wait."""
        clique = self.clique
        for operation in self.group:
            operation._send()
        remote = _nccl_peers.wait_parts(clique.uid, self.key,
                                        set(range(self.needed)) - set(self.local),
                                        self.describe())
        _nccl_peers.ran(clique.uid, self.key)
        calls.update({s: (p[0], p[1]) for s, p in remote.items()})
        return {s: p[2] for s, p in remote.items()}

    def describe(self) -> str:
        if self.key[0] == "p2p":
            return f"the send from rank {self.key[1]} to rank {self.key[2]}"
        return f"collective call {self.key[1]}"


def _sent_data(kind, args, slot, nranks):
    """What an operation needs from one rank of another process: its send buffer's data."""
    if kind == "p2p":
        return _view(*args).copy() if slot == 0 else None
    if kind == "broadcast" and slot != args["root"]:
        return None
    count = args["count"] * (nranks if kind == "reduceScatter" else 1)
    return _view(args["send"], count, args["dtype"]).copy()


def _compute(calls: dict, received: dict, n: int, local: set) -> None:
    """Run an operation: read every rank's send data (`received` for other processes' ranks,
    else its buffer) and write the receive buffers of the `local` ranks."""
    kind = next(iter(calls.values()))[0]
    if kind == "p2p":
        src, count, dtype = calls[0][1]
        data = received[0] if 0 in received else _view(src, count, dtype)
        if 1 in local:
            _view(calls[1][1][0], count, dtype)[...] = data
        return
    args = {r: c[1] for r, c in calls.items()}
    count, dtype = args[0]["count"], args[0]["dtype"]

    def sent(r, size):
        return received[r] if r in received else _view(args[r]["send"], size, dtype)

    def write(r, size, value):
        if r in local:
            _view(args[r]["recv"], size, dtype)[...] = value

    if kind in ("allReduce", "reduce"):
        op = args[0]["op"]
        total = _reduce([sent(r, count) for r in range(n)], op, dtype)
        if op == NCCL_AVG:
            total = (total / n).astype(_DTYPES[dtype])
        for r in range(n):
            if kind == "allReduce" or r == args[r]["root"]:
                write(r, count, total)
    elif kind == "broadcast":
        root = args[0]["root"]
        value = sent(root, count).copy()
        for r in range(n):
            write(r, count, value)
    elif kind == "allGather":
        whole = np.concatenate([sent(r, count).copy() for r in range(n)])
        for r in range(n):
            write(r, count * n, whole)
    elif kind == "reduceScatter":
        total = _reduce([sent(r, count * n) for r in range(n)], args[0]["op"], dtype)
        if args[0]["op"] == NCCL_AVG:
            total = (total / n).astype(_DTYPES[dtype])
        for r in range(n):
            write(r, count, total[r * count:(r + 1) * count])


def _reduce(values, op, dtype):
    out = values[0].copy()
    for v in values[1:]:  # in rank order: the same result on every run
        out = _REDUCE[op](out, v).astype(_DTYPES[dtype])
    return out


def _view(ptr: int, count: int, dtype: int) -> np.ndarray:
    np_dtype = np.dtype(_DTYPES[dtype])
    if count == 0:
        return np.empty(0, np_dtype)
    raw = (ctypes.c_char * (count * np_dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, np_dtype)


def _group() -> list | None:
    return getattr(_tls, "group", None)


def groupStart() -> None:  # noqa: N802 - CuPy's name
    """Start a group of NCCL calls; they are issued at the matching outermost groupEnd."""
    if _group() is None:
        _tls.group, _tls.depth, _tls.inits = [], 0, []
    _tls.depth += 1


def groupEnd() -> None:  # noqa: N802
    """End a group of NCCL calls; the outermost one issues them, in call order."""
    if _group() is None:
        raise NcclError(ncclInvalidUsage, "groupEnd without groupStart")
    _tls.depth -= 1
    if _tls.depth:
        return
    calls, inits, _tls.group, _tls.inits = _tls.group, _tls.inits, None, []
    for clique in dict.fromkeys(inits):  # the group's inits complete together
        _joined(clique)
    with _lock:
        # The group's calls progress together: each waits for the work queued on the
        # streams before the group, never for another call of the group.
        before: dict = {}
        for issue in calls:
            issue(grouped=before)
    for expect in before.get("expect", ()):
        _nccl_peers.expect(*expect)


def _joined(clique) -> None:
    """Wait until every rank of `clique` (spanning processes) has joined."""
    if clique.processes is None:
        clique.processes = {r: p for r, (p, _) in _nccl_peers.table(clique.uid).items()}


class NcclCommunicator:
    """One rank of a clique: `NcclCommunicator(ndev, commId, rank)` on the current device, or
    `initAll(devices)` for one per device of this process."""

    def __init__(self, ndev: int, commId: tuple, rank: int):  # noqa: N803 - CuPy's names
        if len(commId) != NCCL_UNIQUE_ID_BYTES:
            raise AssertionError  # nccl.pyx: assert len(commId) == NCCL_UNIQUE_ID_BYTES
        if ndev < 1 or not 0 <= rank < ndev:
            raise NcclError(ncclInvalidArgument, f"rank {rank} of {ndev}")
        across = _nccl_peers.root_of(commId) is not None  # ranks in several processes
        with _lock:
            clique = _cliques.setdefault(tuple(commId),
                                         _Clique(ndev, tuple(commId) if across else None))
            if clique.nranks != ndev or rank in clique.devices:
                raise NcclError(ncclInvalidUsage, f"rank {rank} of a clique of "
                                f"{clique.nranks} joined twice or with another size")
            self._init(clique, rank, runtime.getDevice())
        if across:  # ncclCommInitRank: returns once every rank has joined (in a group: at
            _nccl_peers.join(commId, ndev, rank, self._device)  # groupEnd)
            if _group() is not None:
                _tls.inits.append(clique)
            else:
                _joined(clique)

    def _init(self, clique, rank, device):
        clique.devices[rank] = device
        clique.seq[rank] = 0
        self._clique, self._rank, self._device = clique, rank, device

    @staticmethod
    def initAll(devices):  # noqa: N802
        if isinstance(devices, list):
            devlist = [int(d) for d in devices]
        elif isinstance(devices, int):
            devlist = list(range(devices))
        else:
            raise ValueError("\"devices\" should be an int or a list of int.")
        for d in devlist:
            if not 0 <= d < runtime.getDeviceCount():
                raise NcclError(ncclInvalidArgument, f"device {d} does not exist")
        if len(set(devlist)) != len(devlist):
            raise NcclError(ncclInvalidUsage, f"device list {devlist} repeats a device")
        clique = _Clique(len(devlist))
        comms = []
        for rank, d in enumerate(devlist):
            comm = NcclCommunicator.__new__(NcclCommunicator)
            comm._init(clique, rank, d)
            comms.append(comm)
        return comms

    # ---- queries
    def _live(self):
        clique = getattr(self, "_clique", None)
        if clique is None:
            raise NcclError(ncclInvalidArgument, "the communicator was destroyed")
        if clique.uid is not None:
            if clique.processes is None:
                raise NcclError(ncclInvalidUsage, "the communicator is used before the "
                                "groupEnd that completes its initialisation")
            self.check_async_error()
        return clique

    def check_async_error(self) -> None:
        """Raise the error an operation of this communicator met while it ran
        (ncclCommGetAsyncError)."""
        clique = getattr(self, "_clique", None)
        error = clique is not None and clique.uid is not None \
            and _nccl_peers.async_error(clique.uid)
        if error:
            raise error

    def device_id(self) -> int:
        self._live()
        return self._device

    def rank_id(self) -> int:
        self._live()
        return self._rank

    def size(self) -> int:
        return self._live().nranks

    def destroy(self) -> None:
        self._clique = None

    def abort(self) -> None:
        self._clique = None

    # ---- operations
    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        self._collective("allReduce", stream, send=sendbuf, recv=recvbuf, count=count,
                         dtype=datatype, op=op, root=0)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self._collective("reduce", stream, send=sendbuf, recv=recvbuf, count=count,
                         dtype=datatype, op=op, root=root)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        self._collective("broadcast", stream, send=sendbuff, recv=recvbuff, count=count,
                         dtype=datatype, op=None, root=root)

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        self._collective("reduceScatter", stream, send=sendbuf, recv=recvbuf, count=recvcount,
                         dtype=datatype, op=op, root=0)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        self._collective("allGather", stream, send=sendbuf, recv=recvbuf, count=count,
                         dtype=datatype, op=None, root=0)

    def send(self, sendbuf, count, datatype, peer, stream):
        self._p2p("send", sendbuf, count, datatype, peer, stream)

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._p2p("recv", recvbuf, count, datatype, peer, stream)

    # ---- checks and issuing
    def _check(self, dtype, op, root, stream, buffers, nbytes):
        clique = self._live()
        if dtype not in _DTYPES:
            raise NcclError(ncclInvalidArgument, f"invalid type {dtype}")
        if op is not None and op not in _REDUCE:
            raise NcclError(ncclInvalidArgument, f"invalid reduction operation {op}")
        if not 0 <= root < clique.nranks:
            raise NcclError(ncclInvalidArgument, f"root or peer {root} of {clique.nranks} ranks")
        for ptr in buffers:
            if nbytes == 0:
                continue
            owner = memory.owner_of(int(ptr))
            if not ptr or owner is None or owner[0] != self._device \
                    or int(ptr) + nbytes > owner[1] + owner[2]:
                raise NcclError(ncclInvalidArgument, f"buffer 0x{int(ptr):x} of {nbytes} bytes "
                                f"is not memory of device {self._device}")
        queue = _queue.queue_for_ptr(int(stream), self._device)
        if queue.device != self._device:
            raise NcclError(ncclInvalidArgument, f"stream of device {queue.device} given to a "
                            f"communicator of device {self._device}")
        return queue

    def _collective(self, kind, stream, **args):
        itemsize = np.dtype(_DTYPES.get(args["dtype"], np.uint8)).itemsize
        n = self._live().nranks
        send_count = args["count"] * (n if kind == "reduceScatter" else 1)
        recv_count = args["count"] * (n if kind == "allGather" else 1)
        queue = self._check(args["dtype"], args["op"], args["root"], stream, [], 0)
        self._check(args["dtype"], args["op"], args["root"], stream, [args["send"]],
                    send_count * itemsize)
        self._check(args["dtype"], args["op"], args["root"], stream, [args["recv"]],
                    recv_count * itemsize)

        def issue(grouped):
            _standin.counters.library_call(f"nccl{kind[0].upper()}{kind[1:]}")
            with _lock:
                clique = self._clique
                k = clique.seq[self._rank]
                clique.seq[self._rank] = k + 1
                self._enqueue(("coll", k), clique.nranks, self._rank, (kind, args), queue,
                              grouped)
        self._issue(issue)

    def _p2p(self, kind, buf, count, dtype, peer, stream):
        itemsize = np.dtype(_DTYPES.get(dtype, np.uint8)).itemsize
        queue = self._check(dtype, None, peer, stream, [buf], count * itemsize)
        if peer == self._rank:
            raise NcclError(ncclInvalidUsage, "send or recv to the rank itself")

        def issue(grouped):
            _standin.counters.library_call(f"nccl{kind.capitalize()}")
            with _lock:
                clique = self._clique
                src, dst = (self._rank, peer) if kind == "send" else (peer, self._rank)
                key = (src, dst, kind)
                k = clique.p2p.get(key, 0)
                clique.p2p[key] = k + 1
                self._enqueue(("p2p", src, dst, k), 2, 0 if kind == "send" else 1,
                              ("p2p", (buf, count, dtype)), queue, grouped)
        self._issue(issue)

    @staticmethod
    def _issue(issue):
        group = _group()
        if group is not None:
            group.append(issue)
        else:
            issue(grouped=None)

    def _enqueue(self, key, needed, slot, call, queue, grouped):
        clique = self._clique
        operation = clique.ops.get(key)
        if operation is None:
            local = range(needed)
            if clique.uid is not None:
                here = _nccl_peers.me()
                ranks = key[1:3] if key[0] == "p2p" else range(needed)
                local = [s for s, r in enumerate(ranks) if clique.processes[r] == here]
            operation = clique.ops[key] = _Operation(clique, key, needed, local)
        if grouped is None and operation.calls:
            # This thread issued another rank's part outside a group and now this one: on a
            # GPU the first call would not have returned (NCCL's group-call rule).
            others = {c[3] for c in operation.calls.values()}
            if threading.get_ident() in others:
                raise NcclError(ncclInvalidUsage, "one thread issued several ranks of "
                                f"{operation.describe()} outside groupStart/groupEnd")
        if grouped is not None and clique.uid is not None \
                and operation not in grouped.setdefault("operations", []):
            operation.group = grouped["operations"]
            operation.group.append(operation)
        last = queue.last if queue.last is not None and not queue.last.done else None
        before = last if grouped is None else grouped.setdefault(id(queue), last)
        op = _queue.submit(operation.run, queue)
        operation.calls[slot] = (call[0], call[1], op, threading.get_ident(), before)
        if len(operation.calls) == len(operation.local):
            if len(operation.local) == needed:  # else checked when the parts meet
                _check_match(operation.calls, operation.describe())
            # Every rank's part runs after the work queued before every rank's part.
            priors = [c[4] for c in operation.calls.values() if c[4] is not None]
            for c in operation.calls.values():
                c[2].deps.extend(p for p in priors if p.queue is not c[2].queue)
            del clique.ops[key]
            if clique.uid is not None:  # another process may wait for this part
                expect = (clique.uid, key, lambda: _queue.run_until(op))
                if grouped is None:
                    _nccl_peers.expect(*expect)
                else:  # once the whole group is issued
                    grouped.setdefault("expect", []).append(expect)


def _check_match(calls: dict, what: str) -> None:
    kinds = {c[0] for c in calls.values()}
    if kinds == {"p2p"}:
        (_, (_, n0, t0), *_), (_, (_, n1, t1), *_) = calls[0], calls[1]
        if (n0, t0) != (n1, t1):
            raise NcclError(ncclInvalidArgument, f"{what}: send of {n0} "
                            f"elements of type {t0}, recv of {n1} of type {t1}")
        return
    shapes = {(c[0], c[1]["count"], c[1]["dtype"], c[1]["op"], c[1]["root"])
              for c in calls.values()}
    if len(shapes) != 1:
        raise NcclError(ncclInvalidArgument, f"{what}: the ranks called "
                        f"{sorted(shapes, key=str)}")

