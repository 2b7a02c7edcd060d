"""One program per device: the `shard_map` primitive of meshes with several devices.

`f` is traced once for one device's shard of each input (a Program whose collectives name the
mesh axes); running it splits each input by its PartitionSpec, runs the compiled Program on a
thread per device of this process (backends/device_group.py: the collectives meet there, and
over MPI with the devices of other processes), and puts the outputs together by their
out_specs. Each device keeps its pieces (`DeviceShards`; of this process's devices only when
the mesh spans processes). On a mesh of GPUs (of this process or several) the Program runs on
each GPU as kernels, its collectives over NCCL (backends/nccl.py).

grad, jvp and vmap of the primitive are shard_maps of the transformed per-device Program.
"""
from __future__ import annotations

import contextlib
import math
import weakref

import numpy as np

from gpuarr import compilation, core, dispatch, impls, placement
from gpuarr.array import Array
from gpuarr.backends.device_group import DeviceGroup
from gpuarr.backends.device_shards import DeviceShards, owned_pieces
from gpuarr.core import Primitive, ShapedArray
from gpuarr.interpreters import ad, batching, partial_eval
from gpuarr.lax import lax, parallel, shape_ops
from gpuarr.lax.control_flow import common, conditionals, loops, scans
from gpuarr.sharding import piece_exchange
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_compiled_gpu: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _entry_axes(entry) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _index(mesh, spec, ndim: int, flat: int) -> tuple:
    """The slices of a global array of rank `ndim` that mesh position `flat` holds."""
    where = dict(zip(mesh.axis_names, np.unravel_index(flat, mesh.axis_sizes)))
    parts = spec._normalized_spec_for_aval(ndim).partitions
    index = []
    for entry in parts:
        k, ways = 0, 1
        for a in _entry_axes(entry):
            k, ways = k * mesh.shape[a] + int(where[a]), ways * mesh.shape[a]
        index.append((k, ways))
    return tuple(index)


def _slices(index, shape) -> tuple:
    return tuple(slice(None) if ways == 1 else slice(k * (n // ways), (k + 1) * (n // ways))
                 for (k, ways), n in zip(index, shape))


def shard_aval(aval: ShapedArray, spec, mesh, check_vma=False) -> ShapedArray:
    """The aval of one device's piece of `aval` split by `spec`; with `check_vma` it varies
    along the mesh axes `spec` splits over."""
    parts = spec._normalized_spec_for_aval(aval.ndim).partitions
    shape = tuple(n // math.prod(mesh.shape[a] for a in _entry_axes(e))
                  for n, e in zip(aval.shape, parts))
    vma = frozenset(a for e in parts for a in _entry_axes(e)) if check_vma else frozenset()
    return aval.update(shape=shape, vma=vma)


def global_aval(aval: ShapedArray, spec, mesh) -> ShapedArray:
    """The aval of the array put together from each device's `aval` by `spec`."""
    parts = spec._normalized_spec_for_aval(aval.ndim).partitions
    shape = tuple(n * math.prod(mesh.shape[a] for a in _entry_axes(e))
                  for n, e in zip(aval.shape, parts))
    return aval.update(shape=shape, weak_type=False, vma=frozenset())


@contextlib.contextmanager
def mesh_axes(mesh, names=None, check_vma=False):
    """The mesh axes bound (as named axes of their sizes) while a per-device Program is traced
    or transformed, so collectives know their sizes; with `check_vma` the values traced are
    typed with the axes they vary along (core.checking_vma)."""
    names = mesh.axis_names if names is None else names
    for n in names:
        batching._axis_env.append((n, mesh.shape[n]))
    try:
        with core.checking_vma(mesh.axis_names if check_vma else None):
            yield
    finally:
        del batching._axis_env[len(batching._axis_env) - len(names):]


def trace_per_device(fun, avals, mesh, names, check_vma=False):
    """`fun` staged for one device's shard avals, with the mesh axes bound so collectives
    know their sizes; consts that are tracers of an enclosing trace become leading inputs."""
    with mesh_axes(mesh, names, check_vma):
        closed = partial_eval.trace_to_program(fun, avals)
    return partial_eval.hoist_tracer_consts(closed)


def _abstract_eval(*avals, closed, mesh, in_specs, out_specs, check_vma=False):
    return [global_aval(a, s, mesh) for a, s in zip(closed.out_avals, out_specs)]


def _piece(buf, spec, mesh, flat):
    device = mesh.devices.flat[flat]
    if type(buf) is DeviceShards:  # host pieces spanning processes (program_buffer)
        if device not in buf.shards:
            raise ValueError(f"shard_map: an input spanning processes holds no piece for "
                             f"{device!r}; make it with the mesh passed to shard_map.")
        piece = buf.shards[device]
        want = _slices(_index(mesh, spec, buf.ndim, flat), buf.shape)
        expect = tuple(len(range(*s.indices(n))) for s, n in zip(want, buf.shape))
        if piece.shape != expect:
            raise ValueError(f"shard_map: the input's piece on {device!r} has shape "
                             f"{piece.shape}, but its in_spec {spec} gives {expect}: pass "
                             "data sharded as the in_specs say.")
        return piece
    buf = np.asarray(buf)
    return buf[_slices(_index(mesh, spec, buf.ndim, flat), buf.shape)]


def _assemble(pieces: dict, spec, mesh, aval):
    """The global value from each local device's output piece: a NumPy array when this
    process's devices hold all of it, else this process's pieces (DeviceShards)."""
    every = {f: _index(mesh, spec, aval.ndim, f) for f in range(mesh.size)}
    covered = {every[f] for f in pieces}
    if covered != set(every.values()):
        devices = mesh.devices.flat
        return DeviceShards({devices[f]: np.asarray(p) for f, p in pieces.items()},
                            aval.shape, aval.dtype, NamedSharding(mesh, spec),
                            placement.platform_of(devices[0]))
    whole = tuple((0, 1) for _ in aval.shape)
    for f, p in pieces.items():
        if every[f] == whole:  # a replicated output: any device's piece is the value
            return np.asarray(p)
    out = np.empty(aval.shape, aval.dtype)
    done = set()
    for f, p in pieces.items():
        if every[f] not in done:
            done.add(every[f])
            out[_slices(every[f], aval.shape)] = p
    return out


def as_specified(buf, spec, mesh):
    """An operand of a shard_map over `mesh`: pieces spanning processes held otherwise than
    `spec` splits them over `mesh` resharded to it first (piece_exchange.py, over MPI), as
    XLA reshards them; anything else as it is."""
    stored = buf._stored if type(buf) is Array else buf
    if type(stored) is not DeviceShards or not stored.spans_processes:
        return buf
    target = NamedSharding(mesh, spec)
    if stored.relabelled(target) is not None:
        return buf
    shards = piece_exchange.reshard(stored, target)
    if type(buf) is not Array:
        return shards
    out = Array(shards, buf.weak_type, device=shards.first_device(), committed=True,
                platform=shards.array_platform)
    out._sharding = target
    return out


def _impl(*bufs, closed, mesh, in_specs, out_specs, check_vma=False):
    devices = list(mesh.devices.flat)
    bufs = [as_specified(b, s, mesh) for b, s in zip(bufs, in_specs)]
    on_gpus = devices[0].platform == "cuda"
    group = DeviceGroup(mesh.axis_names, mesh.axis_sizes, [d.process_index for d in devices],
                        [d.local_hardware_id for d in devices] if on_gpus else None)
    args = {f: [_piece(b, s, mesh, f) for b, s in zip(bufs, in_specs)] for f in group.local}
    if on_gpus:  # each GPU runs the kernels of the Program on its piece; NCCL between them
        platform = placement.platform_of(devices[0])
        fn = _compiled_gpu.get(closed)
        if fn is None:
            fn = _compiled_gpu[closed] = compilation.backend_compile_and_load(platform, closed)
        args = {f: [platform.from_host(np.asarray(a), devices[f]) for a in xs]
                for f, xs in args.items()}
        results = group.run(lambda *xs: [platform.to_host(r) for r in fn(*xs)], args)
    else:
        fn = _compiled.get(closed)
        if fn is None:
            fn = _compiled[closed] = impls.compile_closed(closed)
        results = group.run(lambda *xs: list(fn(*xs)), args)
    out_avals = _abstract_eval(closed=closed, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    return [_assemble({f: results[f][i] for f in group.local}, s, mesh, a)
            for i, (s, a) in enumerate(zip(out_specs, out_avals))]


def runs_per_device_eagerly(mesh, args) -> bool:
    """Whether a shard_map over `mesh` called on `args` outside any transformation runs as
    `run_per_device`: several GPUs or cpu devices (of any processes), no traced operand."""
    devices = list(mesh.devices.flat)
    return (len(devices) > 1 and devices[0].platform in ("cpu", "cuda")
            and core.current_trace() is dispatch.eval_trace
            and not any(isinstance(a, core.Tracer) for a in args))


def _device_piece(arg, spec, mesh, flat, platform, host: dict, k: int):
    """(device `flat`'s block of operand `arg` on it, whether the device holds it already):
    the piece the operand keeps there when it is split the same way (DeviceShards), else
    copied from the host to a GPU, or a view of the host value for a cpu device (the host
    value read once per operand, kept in `host`)."""
    device = mesh.devices.flat[flat]
    stored = arg._stored if type(arg) is Array else None
    shape = np.shape(stored if stored is not None else arg)
    index = _slices(_index(mesh, spec, len(shape), flat), shape)
    if type(stored) is DeviceShards:
        piece = stored.piece(device, index)
        if piece is not None:  # a borrowed piece is the caller's memory, not the device's
            return piece, not stored.borrowed
    if k not in host:
        host[k] = arg._host() if type(arg) is Array else np.asarray(arg)
    return platform.from_host(np.require(host[k][index], requirements="C"), device), False


def run_per_device(args, closed, mesh, in_specs, out_specs) -> list:
    """shard_map over several devices (GPUs or cpu devices, of this process or several), run
    eagerly: each device reads its block of each operand where it is (no device receives the
    whole value), runs the Program (GPUs: its kernels, collectives over NCCL; cpu devices: the
    NumPy backend, collectives over host memory and MPI) and keeps its results (this
    process's devices' results when the mesh spans processes); every output is an Array of
    those pieces (DeviceShards), a replicated one held by each of its devices, as JAX holds
    them. On cpu devices every piece owns its memory."""
    devices = list(mesh.devices.flat)
    on_gpus = devices[0].platform == "cuda"
    platform = placement.platform_of(devices[0])
    group = DeviceGroup(mesh.axis_names, mesh.axis_sizes, [d.process_index for d in devices],
                        [d.local_hardware_id for d in devices] if on_gpus else None)
    if on_gpus:
        fn = _compiled_gpu.get(closed)
        if fn is None:
            fn = _compiled_gpu[closed] = compilation.backend_compile_and_load(platform, closed)
    else:
        fn = _compiled.get(closed)
        if fn is None:
            fn = _compiled[closed] = impls.compile_closed(closed)
    host: dict = {}
    args = [as_specified(a, s, mesh) for a, s in zip(args, in_specs)]
    read = {f: [_device_piece(a, s, mesh, f, platform, host, k)
                for k, (a, s) in enumerate(zip(args, in_specs))] for f in group.local}
    per_device = {f: [p for p, _ in xs] for f, xs in read.items()}
    results = group.run(lambda *xs: list(fn(*xs)), per_device)
    if not on_gpus:  # host results: no piece may be a view of another device's memory
        results = owned_pieces(results, {f: ([p for p, held in xs if held],
                                             [p for p, held in xs if not held])
                                         for f, xs in read.items()})
    out_avals = _abstract_eval(closed=closed, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    outs = []
    for i, (s, a) in enumerate(zip(out_specs, out_avals)):
        shards = DeviceShards({devices[f]: results[f][i] for f in group.local}, a.shape,
                              a.dtype, NamedSharding(mesh, s), platform)
        outs.append(Array(shards, False, device=devices[0], committed=True,
                          platform=shards.array_platform))
    return outs


# ---------------------------------------------------------------- varying mesh axes
#
# JAX's check_vma: the mesh axes along which each output of the per-device Program may differ
# between devices. Inputs vary along the axes their in_spec splits over; a reduction over axes
# gives the same value on each of their devices; a scatter, permutation or axis_index varies
# along its axes; any other operation (all_gather included, as in JAX, whose
# all_gather_invariant is another primitive) varies where its operands do.

_INVARIANT_OVER = {parallel.psum_p, parallel.pmax_p, parallel.pmin_p}
_VARYING_OVER = {parallel.reduce_scatter_p, parallel.all_to_all_p, parallel.ppermute_p,
                 parallel.axis_index_p, core.pvary_p}
_OTHER_COLLECTIVES = {parallel.all_gather_p, parallel.pbroadcast_p}


def _sub_programs(params) -> list:
    return [p if isinstance(p, core.ClosedProgram) else core.ClosedProgram(p, [])
            for p in core.subprograms(params)]


def _has_collectives(closed) -> bool:
    return any(e.prim in _INVARIANT_OVER or e.prim in _VARYING_OVER
               or e.prim in _OTHER_COLLECTIVES or any(_has_collectives(c) for c in _sub_programs(e.params))
               for e in closed.program.eqns)


def varying_axes(closed, in_axes, mesh_names=(), check=False) -> list:
    """The mesh axes (frozensets) along which each output of `closed` may vary, given those
    of its inputs; None for an output computed from one whose axes are unknown. `cond`,
    `while` and `scan` are followed as JAX 0.10.2 types them: with `check` (check_vma), a
    loop's carry must vary along the same axes after the body as before it, and the branches
    of a cond must agree (JAX's TypeErrors); without it, the outputs vary where any branch or
    iteration may make them vary. `mesh_names` orders the axes in messages."""
    prog = closed.program
    env = {v.id: frozenset() for v in prog.constvars}
    env.update({v.id: None if a is None else frozenset(a) for v, a in zip(prog.invars, in_axes)})

    def of(x):
        return frozenset() if type(x) is core.Literal else env.get(x.id)

    for eqn in prog.eqns:
        ins = [of(x) for x in eqn.inputs]
        subs = _sub_programs(eqn.params)
        if eqn.prim in _INVARIANT_OVER or eqn.prim in _VARYING_OVER:
            axes = frozenset(_entry_axes(eqn.params.get("axis_name", eqn.params.get("axes"))))
            base = frozenset().union(*[a for a in ins if a is not None])
            outs = [base - axes if eqn.prim in _INVARIANT_OVER else base | axes] \
                * len(eqn.outvars)
        elif eqn.prim in _CONTROL_FLOW and None not in ins:
            outs = _CONTROL_FLOW[eqn.prim](eqn, ins, mesh_names, check)
        elif (len(subs) == 1 and len(subs[0].program.invars) == len(eqn.inputs)
                and len(subs[0].program.outvars) == len(eqn.outvars)):
            outs = varying_axes(subs[0], ins, mesh_names, check)  # a call (jit, remat, ...)
        elif None in ins or any(_has_collectives(c) for c in subs):
            outs = [None] * len(eqn.outvars)
        else:
            outs = [frozenset().union(*ins)] * len(eqn.outvars)
        env.update((v.id, a) for v, a in zip(eqn.outvars, outs))
    return [of(v) for v in prog.outvars]


def _type_str(aval, axes, mesh_names) -> str:
    """JAX's short type of a per-device value: `float32[2]{V:i}`."""
    shape = ",".join(str(d) for d in aval.shape)
    ordered = [n for n in mesh_names if n in axes] + sorted(set(axes) - set(mesh_names))
    return f"{aval.dtype.name}[{shape}]" + (f"{{V:{','.join(ordered)}}}" if ordered else "")


def _listed(diffs: list) -> str:
    if len(diffs) == 1:
        return f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
    return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"


def _pcast_hint(fixes: list) -> str:
    if not fixes:
        return ""
    hint = (f"This might be fixed by {fixes[0]}.\n" if len(fixes) == 1 else
            "This might be fixed by:\n" + "\n".join(f"  * {d};" for d in fixes[:-1])
            + f"\n  * {fixes[-1]}.\n")
    return hint + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for "
                   "more information.\n\n")


def _ordered(axes, mesh_names) -> tuple:
    return tuple(n for n in mesh_names if n in axes)


def _cond_axes(eqn, ins, mesh_names, check) -> list:
    branches = eqn.params["branches"]
    outs = [varying_axes(b, ins[1:], mesh_names, check) for b in branches]
    if check:
        avals = branches[0].out_avals
        where, funs = common.labels.get(branches[0], (None, None))
        if where is None:
            where = [f" at path [{i}]" if len(avals) > 1 else "" for i in range(len(avals))]
        if len(branches) == 2:  # branch 0 is false_fun
            api, pairs = "cond", [("true_fun", 1, "false_fun", 0)]
        else:  # JAX's labels
            api = "switch"
            pairs = [("branch 0", 0, f"branch{i}", i) for i in range(1, len(outs))]
        for name1, i1, name2, i2 in pairs:
            out1, out2 = outs[i1], outs[i2]
            if out1 == out2:
                continue
            header = f"{name1} is {funs[i1]}\n{name2} is {funs[i2]}\n\n" if funs else ""
            diffs = [f"the output of {name1}{w} has type {_type_str(a, x, mesh_names)} but "
                     f"the corresponding output of {name2} has type "
                     f"{_type_str(a, y, mesh_names)}, so the manual axis types do not match"
                     for w, a, x, y in zip(where, avals, out1, out2) if x != y]
            # JAX's wording of the fix, whose axes are those the other branch lacks
            fixes = [f"applying `jax.lax.pcast(..., {_ordered(a1 - a2, mesh_names)}, "
                     f"to='varying')` to the output of {n}{w}"
                     for w, x, y in zip(where, out1, out2) if x != y
                     for n, a1, a2 in ((name1, y, x), (name2, x, y)) if a2 - a1]
            raise TypeError(
                f"{api} branches must have equal output types but they differ.\n\n{header}"
                f"{_listed(diffs)}\n{_pcast_hint(fixes)}Revise {name1} and/or {name2} so "
                "that all output types match.")
    return [frozenset().union(*col) for col in zip(*outs)]


def _carry_check(name, body, avals, carry_in, carry_out, mesh_names) -> None:
    """JAX's TypeError when a loop body changes the axes its carry varies along."""
    if carry_in == carry_out:
        return
    where = common.labels.get(body) or [
        f"the input carry at path [{i}]" if len(avals) > 1 else "the input carry"
        for i in range(len(avals))]
    diffs = [f"{w} has type {_type_str(a, x, mesh_names)} but the corresponding output carry "
             f"component has type {_type_str(a, y, mesh_names)}, so the manual axis types do "
             "not match" for w, a, x, y in zip(where, avals, carry_in, carry_out) if x != y]
    fixes = [f"applying `jax.lax.pcast(..., {_ordered(y - x, mesh_names)}, to='varying')`, to "
             f"the initial carry value corresponding to {w}"
             for w, x, y in zip(where, carry_in, carry_out) if x != y and y - x]
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{_listed(diffs)}\n{_pcast_hint(fixes)}Revise the function so that all "
        "output types match the corresponding input types.")


def _loop_carry(body, consts, carry, extra, n_carry, name, mesh_names, check) -> tuple:
    """(carry axes, body outputs' axes) of a loop: with `check`, the body must keep its
    carry's axes; else the carry takes the union of every iteration's."""
    while True:
        outs = varying_axes(body, [*consts, *carry, *extra], mesh_names, check)
        if any(o is None for o in outs):
            return [None] * len(carry), outs
        if check:
            _carry_check(name, body, body.in_avals[len(consts):len(consts) + n_carry], list(carry),
                         outs[:n_carry], mesh_names)
            return list(carry), outs
        grown = [a | b for a, b in zip(carry, outs[:n_carry])]
        if grown == list(carry):
            return grown, outs
        carry = grown


def _while_axes(eqn, ins, mesh_names, check) -> list:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    carry, _ = _loop_carry(p["body_jaxpr"], ins[nc:nc + nb], ins[nc + nb:], [],
                           len(ins) - nc - nb, "while_loop body", mesh_names, check)
    return carry


def _scan_axes(eqn, ins, mesh_names, check) -> list:
    p = eqn.params
    nc, ncar = p["num_consts"], p["num_carry"]
    carry, outs = _loop_carry(p["jaxpr"], ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:], ncar,
                              "scan body", mesh_names, check)
    return carry + list(outs[ncar:])


_CONTROL_FLOW = {conditionals.cond_p: _cond_axes, loops.while_p: _while_axes,
                 scans.scan_p: _scan_axes}


# ---------------------------------------------------------------- transformations
#
# Each transformation of a shard_map is a shard_map of the transformed per-device Program, so
# the transformed collectives (psum's transpose, all_gather's reduce_scatter, ...) run per
# device as well. Programs derived from one Program are kept while it lives.

_derived: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _derive(closed, key, make):
    cache = _derived.setdefault(closed, {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _unmentioned(spec, mesh) -> tuple:
    """The mesh axes a PartitionSpec does not split over (the value is the same along them)."""
    used = {a for e in spec.partitions for a in _entry_axes(e)}
    return tuple(a for a in mesh.axis_names if a not in used)


def _jvp(primals, tangents, *, closed, mesh, in_specs, out_specs, check_vma=False):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    with mesh_axes(mesh, check_vma=check_vma):
        jvp_prog, out_nz = ad.jvp_program_nonzero(closed, nonzeros)
    outs = shard_map_p.bind(
        *primals, *[t for t in tangents if type(t) is not ad.Zero], closed=jvp_prog, mesh=mesh,
        in_specs=in_specs + tuple(s for s, nz in zip(in_specs, nonzeros) if nz),
        out_specs=out_specs + tuple(s for s, nz in zip(out_specs, out_nz) if nz),
        check_vma=check_vma)
    n = len(closed.out_avals)
    tangent_outs = iter(outs[n:])
    return outs[:n], [next(tangent_outs) if nz else ad.Zero(ad.tangent_aval(a))
                      for nz, a in zip(out_nz, _abstract_eval(
                          closed=closed, mesh=mesh, in_specs=in_specs, out_specs=out_specs))]


def _residual_spec(mesh):
    """Residuals differ per device: each device's is stacked on a new leading dimension."""
    return PartitionSpec(tuple(mesh.axis_names))


def _split_known(closed, uk, mesh, check_vma):
    """(known, unknown, out_uk, n_res) per-device Programs; residuals leave the known Program
    with a leading unit dimension (split over every mesh axis) and enter the unknown one
    without it."""
    with mesh_axes(mesh, check_vma=check_vma):
        known, unknown, out_uk, _, n_res = partial_eval.partial_eval_closed(
            closed, list(uk), [False] * len(closed.out_avals))
    n_known = len(known.out_avals) - n_res

    def known_fun(*xs):
        outs = core.eval_closed(known, *xs)
        return outs[:n_known] + [shape_ops.expand_dims(r, (0,)) for r in outs[n_known:]]

    def unknown_fun(*xs):
        res = [shape_ops.squeeze(r, (0,)) for r in xs[:n_res]]
        return core.eval_closed(unknown, *res, *xs[n_res:])

    k_closed, _ = trace_per_device(known_fun, known.in_avals, mesh, mesh.axis_names, check_vma)
    res_avals = [a.update(shape=(1, *a.shape)) for a in known.out_avals[n_known:]]
    u_closed, _ = trace_per_device(unknown_fun, res_avals + unknown.in_avals[n_res:], mesh,
                                   mesh.axis_names, check_vma)
    return k_closed, u_closed, out_uk, n_res


def _partial_eval(trace, args, params):
    closed, mesh = params["closed"], params["mesh"]
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    check_vma = params.get("check_vma", False)
    uk = tuple(not partial_eval.is_known(trace, x) for x in args)
    known, unknown, out_uk, n_res = _derive(closed, ("partial_eval", uk, check_vma),
                                            lambda: _split_known(closed, uk, mesh, check_vma))
    res_specs = (_residual_spec(mesh),) * n_res
    known_outs = []
    if known.program.outvars:
        with core.set_current_trace(trace.parent):
            known_outs = shard_map_p.bind(
                *[a for a, u in zip(args, uk) if not u], closed=known, mesh=mesh,
                in_specs=tuple(s for s, u in zip(in_specs, uk) if not u),
                out_specs=tuple(s for s, u in zip(out_specs, out_uk) if not u) + res_specs,
                check_vma=check_vma)
    n_known = len(out_uk) - sum(out_uk)
    staged = partial_eval.StagingTrace.process_primitive(
        trace, shard_map_p, [*known_outs[n_known:], *[a for a, u in zip(args, uk) if u]],
        dict(closed=unknown, mesh=mesh,
             in_specs=res_specs + tuple(s for s, u in zip(in_specs, uk) if u),
             out_specs=tuple(s for s, u in zip(out_specs, out_uk) if u),
             check_vma=check_vma)) if any(out_uk) else []
    known_it, staged_it = iter(known_outs[:n_known]), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_uk]


def _backward(closed, linear, known, cts):
    """Cotangents of the `linear` inputs of `closed`. The equations that read only known
    values (the residuals' unit dimension removed, say) are evaluated first; the rest is
    linear in the other inputs and is transposed."""
    prog = closed.program
    env = {v.id: x for v, x in zip(prog.constvars, closed.consts)}
    env.update({v.id: x for v, x in zip([v for v, lin in zip(prog.invars, linear) if not lin],
                                         known)})
    defined = {v.id: v for v in prog.constvars + prog.invars}
    rest = []
    for eqn in prog.eqns:
        if all(type(a) is core.Literal or a.id in env for a in eqn.inputs):
            outs = eqn.prim.bind(*[a.val if type(a) is core.Literal else env[a.id]
                                   for a in eqn.inputs], **eqn.params)
            for v, x in zip(eqn.outvars, outs if eqn.prim.multiple_results else [outs]):
                env[v.id], defined[v.id] = x, v
        else:
            rest.append(eqn)
    lin_vars = [v for v, lin in zip(prog.invars, linear) if lin]
    const_ids = [i for i in env if i not in {v.id for v in lin_vars}]
    as_linear = core.ClosedProgram(
        core.Program([defined[i] for i in const_ids], lin_vars, rest, prog.outvars),
        [env[i] for i in const_ids])
    cts_in = ad.backward_pass(as_linear, list(cts))
    return [shape_ops.full(v.aval.shape, 0, v.aval.dtype) if type(c) is ad.Zero else c
            for v, c in zip(lin_vars, cts_in)]


def _transpose(cts, *args, closed, mesh, in_specs, out_specs, check_vma=False):
    """The cotangents per device. Without check_vma, an output the same on the devices of
    some mesh axes (its out_spec does not split over them) is read from one of them, so each
    device takes its share of that cotangent, and an input the same on them receives the sum
    of the devices' cotangents (psum), as in JAX's shard_map. With check_vma the typed body
    already does both (the transposes of its pvary and psum), as in JAX."""
    undefined = tuple(ad.is_undefined(a) for a in args)
    zero_cts = tuple(type(c) is ad.Zero for c in cts)
    known = [a for a in args if not ad.is_undefined(a)]
    known_specs = tuple(s for s, u in zip(in_specs, undefined) if not u)
    ct_specs = tuple(s for s, z in zip(out_specs, zero_cts) if not z)
    local_avals = tuple(shard_aval(core.get_aval(x), s, mesh, check_vma) for x, s in
                        zip(known + [c for c in cts if type(c) is not ad.Zero],
                            known_specs + ct_specs))
    share_of = _unmentioned if not check_vma else (lambda spec, mesh: ())

    def transposed(*values):
        it = iter(values[len(known):])
        cts_in = []
        for a, z, s in zip(closed.out_avals, zero_cts, out_specs):
            if z:
                cts_in.append(ad.Zero(a))
                continue
            c = next(it)
            share = math.prod(mesh.shape[n] for n in share_of(s, mesh))
            cts_in.append(c if share == 1 else lax.div(c, shape_ops.full_like(c, share)))
        outs = _backward(closed, undefined, values[:len(known)], cts_in)
        specs = [s for s, u in zip(in_specs, undefined) if u]
        return [parallel.psum_p.bind(o, axis_name=share_of(s, mesh))
                if share_of(s, mesh) else o for o, s in zip(outs, specs)]

    t_closed = _derive(closed, ("transpose", undefined, zero_cts, local_avals, check_vma),
                       lambda: trace_per_device(transposed, local_avals, mesh, mesh.axis_names,
                                                check_vma)[0])
    outs = iter(shard_map_p.bind(
        *known, *[c for c in cts if type(c) is not ad.Zero], closed=t_closed, mesh=mesh,
        in_specs=known_specs + ct_specs,
        out_specs=tuple(s for s, u in zip(in_specs, undefined) if u), check_vma=check_vma))
    return [next(outs) if u else None for u in undefined]


def _batch(axis_size, vals, dims, *, closed, mesh, in_specs, out_specs, check_vma=False):
    """vmap of a shard_map: the vmapped axis leads every operand, not split over the mesh."""
    def lead(spec, ndim):
        return PartitionSpec(None, *spec._normalized_spec_for_aval(ndim).partitions)
    vals = [v if d is batching.not_mapped else batching.move_to(v, d, 0, axis_size)
            for v, d in zip(vals, dims)]
    in_dims = tuple(batching.not_mapped if d is batching.not_mapped else 0 for d in dims)
    with mesh_axes(mesh, check_vma=check_vma):
        batched, _ = batching.batch_closed(closed, axis_size, in_dims,
                                           [True] * len(closed.out_avals))
    outs = shard_map_p.bind(
        *vals, closed=batched, mesh=mesh,
        in_specs=tuple(s if d is batching.not_mapped else lead(s, core.get_aval(v).ndim - 1)
                       for s, v, d in zip(in_specs, vals, in_dims)),
        out_specs=tuple(lead(s, a.ndim) for s, a in zip(out_specs, closed.out_avals)),
        check_vma=check_vma)
    return outs, [0] * len(outs)


core.abstract_eval_rules[shard_map_p] = _abstract_eval
impls.impl_rules[shard_map_p] = _impl
ad.jvp_rules[shard_map_p] = _jvp
ad.transpose_rules[shard_map_p] = _transpose
partial_eval.partial_eval_rules[shard_map_p] = _partial_eval
batching.batch_rules[shard_map_p] = _batch
