"""Collectives between GPUs over NCCL (CuPy's binding, `cupy.cuda.nccl`).

A group of devices that meet in a collective (the members of one group of a mesh axis) gets
one NCCL communicator per device, made once and kept: `NcclCommunicator.initAll` when every
member is a GPU of this process; otherwise the group's first process makes a unique id, MPI
carries it to the others (the ids are bytes on the host: no CUDA-aware MPI is needed) and each
process initialises its members' ranks inside one groupStart/groupEnd.

`run` issues one collective for this process's members of a group, each on its device's
stream, inside one groupStart/groupEnd (one thread drives every local GPU, as NCCL requires):
reductions are allReduce, all_gather is allGather, psum_scatter is reduceScatter, pbroadcast
is broadcast, and ppermute and all_to_all are send/recv pairs. Operands and results are CuPy
arrays on the members' devices; a result never leaves its GPU. `exchange` moves blocks
between GPUs (an Array's pieces laid out by another sharding) as send/recv pairs.
"""
from __future__ import annotations

import threading

import numpy as np

from gpuarr import process_group

COLLECTIVES = frozenset(("psum", "pmax", "pmin", "all_gather", "reduce_scatter", "ppermute",
                         "all_to_all", "pbroadcast"))
_comms: dict = {}  # (device ids of the group's ranks, process of each) -> {rank: communicator}
_lock = threading.Lock()


def module():
    """cupy.cuda.nccl, or ImportError saying what to install."""
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        raise ImportError("Collectives between GPUs use NCCL through cupy.cuda.nccl: install "
                          "it with `pip install 'gpuarr[cuda12]'` (nvidia-nccl-cu12).") from e
    return nccl


def _dtype(nccl, dtype):
    table = {"int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
             "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64, "uint64": nccl.NCCL_UINT64,
             "float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
             "float64": nccl.NCCL_FLOAT64, "bool": nccl.NCCL_UINT8}
    return table.get(np.dtype(dtype).name)


def supports(dtype, name: str) -> bool:
    """Whether NCCL carries collective `name` of this dtype (else the host combines it)."""
    kind = np.dtype(dtype)
    if kind.name not in ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                         "float32", "float64", "bool"):
        return False  # complex, bfloat16 and narrow types
    return not (kind == np.bool_ and name in ("psum", "reduce_scatter"))


def communicators(devices: tuple, processes: tuple) -> dict:
    """{rank: communicator} for this process's ranks of the group whose rank r is GPU
    `devices[r]` of process `processes[r]`. A group spanning processes exchanges its unique
    id over MPI among all processes, so every process calls this for such a group, in the
    same order, whether or not it holds one of its ranks."""
    key = (devices, processes)
    with _lock:
        comms = _comms.get(key)
        if comms is not None:
            return comms
        nccl = module()
        here = process_group.state.process_index
        mine = [r for r, p in enumerate(processes) if p == here]
        if len(set(processes)) == 1:  # no exchange: other processes' groups are theirs
            comms = dict(zip(mine, nccl.NcclCommunicator.initAll([int(d) for d in devices]))) \
                if mine else {}
        else:
            made = bytes(b % 256 for b in nccl.get_unique_id()) if here == processes[0] else b""
            uid = process_group.allgather_bytes(made, "the NCCL unique id")[processes[0]]
            uid = tuple(b - 256 if b > 127 else b for b in uid)
            import cupy
            comms = {}
            nccl.groupStart()
            try:
                for r in mine:
                    with cupy.cuda.Device(int(devices[r])):
                        comms[r] = nccl.NcclCommunicator(len(devices), uid, r)
            finally:
                nccl.groupEnd()
        _comms[key] = comms
        return comms


def run(name: str, params: dict, values: dict, streams: dict, devices: tuple,
        processes: tuple) -> dict:
    """Collective `name` (a lax collective's primitive name and params) over one group:
    `values` maps this process's ranks to CuPy arrays, `streams` to their stream pointers."""
    import cupy
    nccl = module()
    comms = communicators(devices, processes)
    n = len(devices)
    out: dict = {}
    pending: list = []  # work after the group (on each rank's stream)

    def on(rank):
        return cupy.cuda.Device(int(devices[rank]))

    def stream(rank):
        return cupy.cuda.ExternalStream(streams[rank], int(devices[rank]))

    prepared = {}
    for r, x in values.items():
        with on(r), stream(r):
            prepared[r] = cupy.ascontiguousarray(x if x.dtype != np.bool_ else x.view(np.uint8))
    dtype = _dtype(nccl, next(iter(prepared.values())).dtype)
    nccl.groupStart()
    try:
        for r, x in prepared.items():
            comm, s = comms[r], streams[r]
            with on(r), stream(r):
                if name in ("psum", "pmax", "pmin"):
                    op = {"psum": nccl.NCCL_SUM, "pmax": nccl.NCCL_MAX, "pmin": nccl.NCCL_MIN}
                    y = cupy.empty_like(x)
                    comm.allReduce(x.data.ptr, y.data.ptr, x.size, dtype, op[name], s)
                    out[r] = y
                elif name == "pbroadcast":
                    y = cupy.empty_like(x)
                    comm.broadcast(x.data.ptr, y.data.ptr, x.size, dtype, params["source"], s)
                    out[r] = y
                elif name == "all_gather":
                    y = cupy.empty((n, *x.shape), x.dtype)
                    comm.allGather(x.data.ptr, y.data.ptr, x.size, dtype, s)
                    pending.append((r, y, _gathered(params)))
                elif name == "reduce_scatter":
                    d = params["scatter_dimension"]
                    moved = cupy.ascontiguousarray(cupy.moveaxis(x, d, 0))
                    y = cupy.empty((moved.shape[0] // n, *moved.shape[1:]), x.dtype)
                    comm.reduceScatter(moved.data.ptr, y.data.ptr, y.size, dtype,
                                       nccl.NCCL_SUM, s)
                    pending.append((r, y, _scattered(params)))
                elif name == "ppermute":
                    y = cupy.zeros_like(x)
                    for src, dst in params["perm"]:
                        if src == r:
                            comm.send(x.data.ptr, x.size, dtype, dst, s)
                        if dst == r:
                            comm.recv(y.data.ptr, y.size, dtype, src, s)
                    out[r] = y
                elif name == "all_to_all":
                    a = params["split_axis"]
                    m = x.shape[a] // n
                    chunks = [x[(slice(None),) * a + (slice(j * m, (j + 1) * m),)]
                              for j in range(n)]
                    received = []
                    for j, c in enumerate(chunks):
                        c = cupy.ascontiguousarray(c)
                        into = cupy.empty_like(c)
                        if j == r:
                            into[...] = c
                        else:
                            comm.send(c.data.ptr, c.size, dtype, j, s)
                            comm.recv(into.data.ptr, into.size, dtype, j, s)
                        received.append((c, into))  # the sent chunk stays alive until run
                    pending.append((r, [i for _, i in received],
                                    lambda parts: cupy.concatenate(parts,
                                                                   axis=params["concat_axis"])))
                else:
                    raise NotImplementedError(f"no NCCL form of {name}")
    finally:
        nccl.groupEnd()
    for r, y, finish in pending:
        with on(r), stream(r):
            out[r] = finish(y)
    if values and next(iter(values.values())).dtype == np.bool_:
        out = {r: y.view(np.bool_) for r, y in out.items()}
    return out


def exchange(ops: list, devices: tuple, processes: tuple) -> None:
    """Point-to-point transfers within the group whose rank r is GPU `devices[r]` of process
    `processes[r]`: `ops` lists ("send" or "recv", this process's rank, the peer's rank, a
    C-contiguous CuPy array on the rank's GPU, its stream pointer) in an order every process
    shares (NCCL matches each pair's sends and receives in order), issued inside one
    groupStart/groupEnd. Bytes move as NCCL_UINT8, so any dtype does."""
    import cupy
    nccl = module()
    comms = communicators(devices, processes)
    nccl.groupStart()
    try:
        for kind, rank, peer, x, stream in ops:
            with cupy.cuda.Device(int(devices[rank])):
                raw = x.reshape(-1).view(np.uint8)
                if kind == "send":
                    comms[rank].send(raw.data.ptr, raw.size, nccl.NCCL_UINT8, peer, stream)
                else:
                    comms[rank].recv(raw.data.ptr, raw.size, nccl.NCCL_UINT8, peer, stream)
    finally:
        nccl.groupEnd()


def _gathered(params):
    import cupy
    d, tiled = params["all_gather_dimension"], params["tiled"]

    def finish(y):
        y = cupy.moveaxis(y, 0, d)
        if tiled:
            shape = list(y.shape)
            shape[d:d + 2] = [shape[d] * shape[d + 1]]
            y = y.reshape(shape)
        return cupy.ascontiguousarray(y)
    return finish


def _scattered(params):
    import cupy
    d, tiled = params["scatter_dimension"], params["tiled"]

    def finish(y):
        y = cupy.moveaxis(y, 0, d) if tiled else y.reshape(y.shape[1:])
        return cupy.ascontiguousarray(y)
    return finish
