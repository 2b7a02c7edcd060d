"""The pieces of an Array split over the devices of several processes laid out by another
NamedSharding (`jax.device_put(x, sharding)`, `with_sharding_constraint`, jit's
`out_shardings`, a shard_map's operand held otherwise than its in_spec): each device
receives only its block, read from the pieces that hold it.

Every process computes the same plan from the two shardings. Each region of a device's new
block comes from one holder of the source block covering it: the device itself when it
holds it, else a device of its own process, else the holders in turn, so a replicated source
spreads the sending over its processes. A region that another process needs goes to it once,
however many of its devices need it, in one MPI Alltoallv (none when no region crosses
processes); within a process the regions are copied, and a block the device already holds is
kept as it is. Over GPUs every region a GPU lacks comes from its holder's GPU over NCCL
(send/recv pairs), as the collectives between GPUs of several processes move their data.
"""
from __future__ import annotations

import numpy as np

from gpuarr import process_group
from gpuarr.backends import host_memory, nccl
from gpuarr.backends.device_shards import DeviceShards


def _bounds(index, shape) -> tuple:
    """(start, stop) per dimension of a NamedSharding's block (its slices step by 1)."""
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape))


def _overlap(a: tuple, b: tuple) -> tuple | None:
    out = tuple((max(lo, lo2), min(hi, hi2)) for (lo, hi), (lo2, hi2) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _within(region: tuple, block: tuple) -> tuple:
    """`region` (global bounds) as slices of the piece holding `block`."""
    return tuple(slice(lo - b, hi - b) for (lo, hi), (b, _) in zip(region, block))


def _size(region: tuple) -> int:
    return int(np.prod([hi - lo for lo, hi in region], dtype=np.int64))


def plan(source, target, shape) -> list:
    """(holder, device, its block, region) for every device of `target` and every region of
    its block held by a distinct block of `source` (both NamedShardings of `shape`), in the
    same order in every process."""
    held: dict = {}
    for d, index in source.devices_indices_map(shape).items():
        held.setdefault(_bounds(index, shape), []).append(d)
    out = []
    for n, (d, index) in enumerate(target.devices_indices_map(shape).items()):
        block = _bounds(index, shape)
        for bounds, holders in held.items():
            region = _overlap(block, bounds)
            if region is None:
                continue
            holder = d if d in holders else next(
                (h for h in holders if h.process_index == d.process_index),
                holders[n % len(holders)])
            out.append((holder, d, block, region))
    return out


def reshard(src: DeviceShards, target) -> DeviceShards:
    """`src`'s value laid out by NamedSharding `target` (of the same shape): this process's
    devices of `target` each receive their block (see the module's docstring). Every process
    calls this for the same Array and sharding."""
    me, count = process_group.state.process_index, process_group.state.process_count
    shape, dtype = src.shape, src.dtype
    steps = plan(src.sharding, target, shape)
    blocks = {d: _bounds(i, shape) for d, i in src.sharding.devices_indices_map(shape).items()}
    if getattr(src.platform, "device_buffers", False):
        return _on_gpus(src, target, steps, blocks)
    host = {}  # holder -> its piece on the host

    def read(holder, region):
        if holder not in host:
            host[holder] = np.asarray(src.platform.to_host(src.shards[holder]))
        return host[holder][_within(region, blocks[holder])]

    pieces: dict = {}  # this process's new blocks, made first so that MPI can write into them
    for holder, d, block, region in steps:
        if d.process_index == me and d not in pieces:
            keep = holder == d and region == block == blocks[holder]
            # a block over 32 MiB comes from the cache of unused ones, not fresh pages
            pieces[d] = src.shards[d] if keep else host_memory.reusable_empty(
                [hi - lo for lo, hi in block], dtype)
    outgoing = [dict() for _ in range(count)]  # process -> {(holder, region)}, in plan order
    incoming = [dict() for _ in range(count)]  # process -> {(holder, region): [(device, block)]}
    for holder, d, block, region in steps:
        p, q = holder.process_index, d.process_index
        if p != q and p == me:
            outgoing[q].setdefault((holder, region))
        if p != q and q == me:
            incoming[p].setdefault((holder, region), []).append((d, block))
    received: dict = {}
    if any(h.process_index != d.process_index for h, d, _, _ in steps):
        received = _exchange(src, target, outgoing, incoming, pieces, read, blocks)
    for holder, d, block, region in steps:
        if d.process_index != me or pieces[d] is src.shards.get(d):
            continue
        if holder.process_index != me:
            part = received[holder, region]
            if part is None:
                continue  # received in place
        else:
            part = read(holder, region)
        pieces[d][_within(region, block)] = part
    shards = {}
    for d, index in target.devices_indices_map(shape).items():
        if d.process_index == me:
            v = pieces.get(d)
            if v is None:  # an empty block
                v = np.empty([hi - lo for lo, hi in _bounds(index, shape)], dtype)
            shards[d] = v if v is src.shards.get(d) else src.platform.from_host(v, d)
    return DeviceShards(shards, shape, dtype, target, src.platform)


def _contiguous_at(region: tuple, block: tuple) -> int | None:
    """The element offset of `region` in the C-ordered piece holding `block` when the region
    is one contiguous run of it (dimensions after the last partial one taken whole, those
    before it of extent 1), else None."""
    extents = [hi - lo for lo, hi in block]
    partial = [i for i, ((lo, hi), n) in enumerate(zip(region, extents)) if hi - lo != n]
    j = partial[-1] if partial else 0
    if any(hi - lo != 1 for lo, hi in region[:j]):
        return None
    offset = 0
    for (lo, _), (b, _), n in zip(region, block, extents):
        offset = offset * n + lo - b
    return offset


def _exchange(src, target, outgoing, incoming, pieces, read, blocks) -> dict:
    """The regions crossing processes, in one Alltoallv: (holder, region) -> its values, or
    None for a region MPI wrote into its device's new block. Where every process pair
    carries one region, contiguous in the piece it comes from (one local piece) or goes to
    (one local device's block), MPI reads or writes those pieces themselves; otherwise the
    regions are packed into (or unpacked from) one buffer."""
    dtype, width = src.dtype, src.dtype.itemsize
    send_counts = [sum(_size(r) for _, r in m) * width for m in outgoing]
    recv_counts = [sum(_size(r) for _, r in m) * width for m in incoming]
    # sending from the one local piece holding every outgoing region
    holders = {h for m in outgoing for h, _ in m}
    send = send_at = None
    if len(holders) == 1 and all(len(m) <= 1 for m in outgoing):
        (h,) = holders
        piece = read(h, blocks[h])
        at = [_contiguous_at(r, blocks[h]) for m in outgoing for _, r in m]
        if piece.flags.c_contiguous and None not in at:
            send = piece.reshape(-1).view(np.uint8)
            offsets = iter(at)
            send_at = [next(offsets) * width if m else 0 for m in outgoing]
    if send is None:
        send = np.empty(sum(send_counts), np.uint8)
        at = 0
        for m in outgoing:
            for holder, region in m:
                k = _size(region) * width
                if k:
                    np.copyto(send[at:at + k].view(dtype).reshape(
                        [hi - lo for lo, hi in region]), read(holder, region))
                at += k
    # receiving into the one local block every incoming region goes to
    into = {d for m in incoming for needing in m.values() for d, _ in needing}
    recv = recv_at = None
    if len(into) == 1 and all(len(m) <= 1 for m in incoming):
        (d,) = into
        at = [_contiguous_at(r, needing[0][1]) for m in incoming
              for (_, r), needing in m.items()]
        if None not in at and pieces[d] is not src.shards.get(d):
            recv = pieces[d].reshape(-1).view(np.uint8)
            offsets = iter(at)
            recv_at = [next(offsets) * width if m else 0 for m in incoming]
    ids = [d.id for d in src.sharding._device_assignment]
    got = process_group.alltoallv(
        send, send_counts, recv_counts, "jax.device_put of an Array spanning processes",
        signature=f"reshard {dtype}{list(src.shape)} from {src.sharding.spec} over {ids} to "
                  f"{target.spec} over {[d.id for d in target._device_assignment]}",
        send_at=send_at, recv=recv, recv_at=recv_at)
    received: dict = {}
    at = 0
    for m in incoming:
        for holder, region in m:
            k = _size(region) * width
            received[holder, region] = None if recv is not None else \
                got[at:at + k].view(dtype).reshape([hi - lo for lo, hi in region])
            at += k
    return received


def _on_gpus(src: DeviceShards, target, steps: list, blocks: dict) -> DeviceShards:
    """`reshard` over GPUs: each region a device lacks comes from its holder's GPU over NCCL
    (send/recv pairs in one group, the communicator spanning the processes as a collective's
    does), nothing through the host; a block the device holds itself is copied on it."""
    me, shape, platform = process_group.state.process_index, src.shape, src.platform
    order = list(dict.fromkeys([*src.sharding._device_assignment, *target._device_assignment]))
    rank = {d: r for r, d in enumerate(order)}
    ctx = {d: platform.context(d.local_hardware_id) for d in order if d.process_index == me}
    for d in src.shards:
        src.shards[d].synchronize()  # the launches that wrote the pieces
    pieces: dict = {}
    ops, moved = [], []
    for holder, d, block, region in steps:
        if d.process_index == me and holder == d and region == block == blocks[holder]:
            pieces[d] = src.shards[d]
            continue
        if d.process_index == me and d not in pieces:
            pieces[d] = ctx[d].empty([hi - lo for lo, hi in block], src.dtype)
        if holder == d:
            if d.process_index != me:
                continue
            with ctx[d].scope():
                pieces[d][_within(region, block)] = \
                    src.shards[d].data[_within(region, blocks[d])]
            continue
        if holder.process_index == me:
            with ctx[holder].scope():
                part = ctx[holder].cp.ascontiguousarray(
                    src.shards[holder].data[_within(region, blocks[holder])])
            ops.append(("send", rank[holder], rank[d], part, ctx[holder].stream.ptr))
        if d.process_index == me:
            into = ctx[d].empty([hi - lo for lo, hi in region], src.dtype)
            ops.append(("recv", rank[d], rank[holder], into, ctx[d].stream.ptr))
            moved.append((d, block, region, into))
    if any(h != d for h, d, _, _ in steps):  # every process joins the group, as NCCL needs
        nccl.exchange(ops, tuple(d.local_hardware_id for d in order),
                      tuple(d.process_index for d in order))
    for d, block, region, into in moved:
        with ctx[d].scope():
            pieces[d][_within(region, block)] = into
    shards = {}
    for d, index in target.devices_indices_map(shape).items():
        if d.process_index != me:
            continue
        v = pieces.get(d)
        if v is None:  # an empty block
            v = ctx[d].empty([hi - lo for lo, hi in _bounds(index, shape)], src.dtype)
        shards[d] = v if d in src.shards and v is src.shards[d] else \
            ctx[d].buffer(v, ctx[d].record())
    return DeviceShards(shards, shape, src.dtype, target, platform)
