"""The devices of a mesh running one program each: a thread per device of this process, and
MPI between processes.

Every collective is a meeting of the mesh's devices. Each device's thread leaves its operand
and waits at a barrier; the last to arrive combines the operands (for devices of other
processes, after exchanging this process's operands with theirs over MPI) and leaves each
device its result. A collective over some of the mesh axes meets in groups: the devices
that agree on the other axes' coordinates. The combining step is given by the collective (lax
computes it exactly as its named-vmap rule does, so results match the one-device path bit for
bit). No wait is unbounded: a thread that fails breaks the barrier for the others, and MPI
waits end after the processes' timeout.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from gpuarr import process_group
from gpuarr.backends import host_memory, nccl

_local = threading.local()
combine_lock = threading.Lock()  # combining steps trace named vmaps, whose axis stack is global


def current():
    """(DeviceGroup, flat mesh position) of the device this thread runs as, or None."""
    return getattr(_local, "device", None)


class DeviceGroup:
    """One run of a program on every device of a mesh (`axis_names`, `axis_sizes`; the
    devices' process indices in mesh order)."""

    def __init__(self, axis_names: Sequence[str], axis_sizes: Sequence[int],
                 device_processes: Sequence[int], gpu_ids: Sequence[int] | None = None):
        self.axis_names = tuple(axis_names)
        self.gpu_ids = None if gpu_ids is None else tuple(gpu_ids)  # GPUs: NCCL between them
        self.axis_sizes = tuple(axis_sizes)
        here = process_group.state.process_index
        self.processes = list(device_processes)
        self.local = [i for i, p in enumerate(self.processes) if p == here]
        self.multi_process = len(set(self.processes)) > 1
        self._inbox: dict = {}
        self._outbox: dict = {}
        self._step = None
        self._barrier = threading.Barrier(len(self.local), action=self._combine)
        self._error: list = []

    # --- running the devices ----------------------------------------------------------

    def run(self, fn: Callable, per_device_args: dict) -> dict:
        """`fn(*args)` on a thread per local device (`per_device_args`: flat position ->
        args); returns flat position -> result. The first failure is raised."""
        results: dict = {}

        def body(flat):
            _local.device = (self, flat)
            try:
                results[flat] = fn(*per_device_args[flat])
            except BaseException as e:  # noqa: BLE001 - reported by the caller below
                self._error.append(e)
                self._barrier.abort()
            finally:
                _local.device = None

        if len(self.local) == 1:
            body(self.local[0])
        else:
            threads = [threading.Thread(target=body, args=(f,), daemon=True,
                                        name=f"gpuarr-device-{f}") for f in self.local]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if self._error:
            errors = [e for e in self._error if not isinstance(e, threading.BrokenBarrierError)]
            raise (errors or self._error)[0]
        return results

    # --- the meeting --------------------------------------------------------------------

    def coords(self, flat: int) -> tuple:
        return tuple(int(c) for c in np.unravel_index(flat, self.axis_sizes))

    def check_axes(self, names: Sequence[str], api: str) -> None:
        for n in names:
            if n not in self.axis_names:
                raise NameError(f"Found an unbound axis name: {n}. The mesh has axes "
                                f"{self.axis_names}; name one of them in {api}.")

    def axis_position(self, flat: int, names: Sequence[str]) -> int:
        """The position of device `flat` along the axes `names` (row-major in that order)."""
        c = dict(zip(self.axis_names, self.coords(flat)))
        pos = 0
        for n in names:
            pos = pos * self.axis_sizes[self.axis_names.index(n)] + c[n]
        return pos

    def collective(self, flat: int, value, names: Sequence[str], signature: str,
                   combine: Callable, total: str | None = None):
        """The result at device `flat` of a collective over axes `names`. `combine(stacked)`
        maps the group's operands stacked in axis order (one leading axis per name) to the
        results stacked the same way. `total="sum"` lets a collective over every axis of a
        mesh spanning processes add up over MPI (Allreduce) instead of gathering."""
        return self._meet(flat, (np.asarray(value), tuple(names), signature, combine, total))

    def gpu_collective(self, flat: int, value, name: str, params: dict, stream: int):
        """The result at GPU `flat` of the lax collective `name` (its primitive's params) over
        NCCL: `value` and the result are CuPy arrays on that GPU, ordered on `stream`."""
        names = tuple(params["axis_name"])
        self.check_axes(names, name)
        signature = f"{name} over {names} of {value.dtype}{list(value.shape)}"
        return self._meet(flat, (value, names, signature, None, (name, params, stream)))

    def _meet(self, flat: int, entry):
        self._inbox[flat] = entry
        signature = entry[2]
        timeout = process_group.state.timeout
        try:
            self._barrier.wait(timeout)
        except threading.BrokenBarrierError:
            if self._error:
                raise self._error[0] from None
            raise process_group.ProcessFailureError(
                f"{signature}: the devices of this process did not all reach this collective "
                f"within {timeout:g} s (a device's program took another path or failed).") \
                from None
        return self._outbox.pop(flat)

    def _combine(self) -> None:
        inbox, self._inbox = self._inbox, {}
        try:
            signatures = {v[2] for v in inbox.values()}
            if len(signatures) > 1:
                raise ValueError("The devices reached different collectives at once: "
                                 f"{sorted(signatures)}; every device must run the same "
                                 "sequence of collectives.")
            _, names, signature, combine, total = next(iter(inbox.values()))
            with combine_lock:
                self._outbox = self._results(inbox, names, signature, combine, total)
        except BaseException as e:
            self._error.append(e)
            raise

    def _results(self, inbox, names, signature, combine, total) -> dict:
        values = {f: v[0] for f, v in inbox.items()}
        if combine is None:
            if self.multi_process:
                process_group.check_same(signature, signature)
            return self._over_nccl(inbox, names, *total)
        if self.multi_process:
            if total == "sum" and set(names) == set(self.axis_names):
                return self._mpi_sum(values, signature)
            values = self._gather_processes(values, signature)
        sizes = [self.axis_sizes[self.axis_names.index(n)] for n in names]
        out: dict = {}
        for members in self._groups(names, values):
            if not any(f in inbox for f in members):
                continue  # a group of other processes' devices only
            stacked = np.stack([values[f] for f in members]).reshape(*sizes,
                                                                      *values[members[0]].shape)
            result = np.asarray(combine(stacked))
            flat_result = result.reshape(len(members), *result.shape[len(sizes):])
            for i, f in enumerate(members):
                if f in inbox:
                    out[f] = flat_result[i]
        return out

    def _over_nccl(self, inbox, names, name, params, _) -> dict:
        """Each group's collective over NCCL, for this process's members."""
        out: dict = {}
        for members in self._groups(names, range(len(self.processes))):
            ranks = {r: f for r, f in enumerate(members) if f in inbox}
            devices = tuple(self.gpu_ids[f] for f in members)
            processes = tuple(self.processes[f] for f in members)
            if not ranks:
                if self.multi_process:  # every process joins each group's id exchange
                    nccl.communicators(devices, processes)
                continue
            results = nccl.run(name, params, {r: inbox[f][0] for r, f in ranks.items()},
                               {r: inbox[f][4][2] for r, f in ranks.items()}, devices,
                               processes)
            out.update({ranks[r]: y for r, y in results.items()})
        return out

    def _groups(self, names, values) -> list:
        """Each group's members (flat positions), in the group's axis order."""
        others = [n for n in self.axis_names if n not in names]
        groups: dict = {}
        for f in sorted(values):
            c = dict(zip(self.axis_names, self.coords(f)))
            groups.setdefault(tuple(c[n] for n in others), []).append(f)
        return [sorted(m, key=lambda f: self.axis_position(f, names)) for m in groups.values()]

    def _gather_processes(self, values: dict, signature: str) -> dict:
        """Every device's operand, from every process (MPI allgather in mesh order), once the
        processes agree on the collective's `signature`."""
        mine = np.stack([values[f] for f in self.local])
        counts = {p: self.processes.count(p) for p in set(self.processes)}
        if len(set(counts.values())) != 1:
            raise NotImplementedError("a mesh whose processes hold different numbers of its "
                                      "devices: give every process the same device count.")
        every = process_group.allgather_array(mine, signature, signature=signature)
        out = {}
        for p in range(every.shape[0]):
            flats = [i for i, q in enumerate(self.processes) if q == p]
            out.update(zip(flats, every[p]))
        return out

    def _mpi_sum(self, values: dict, signature: str) -> dict:
        """Sum over the whole mesh: this process's devices added as the one-device path adds
        them, then one MPI Allreduce over the processes (once they agree on `signature`)."""
        if len(self.local) == 1:  # MPI reads the device's operand, writes the result
            value = values[self.local[0]]
            total = process_group.allreduce_sum(
                value, signature, signature=signature,
                out=host_memory.reusable_empty(value.shape, value.dtype))
        else:  # the partial sum is this step's own array: MPI adds into it
            mine = np.stack([values[f] for f in self.local])
            partial = np.add.reduce(mine, axis=0, dtype=mine.dtype)
            total = process_group.allreduce_sum(partial, signature, signature=signature,
                                                in_place=True)
        return {f: total for f in self.local}
