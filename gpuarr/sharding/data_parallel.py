"""`jit` over inputs sharded on a mesh of several devices: one program per device.

The jitted Program (traced for the global shapes) is rewritten into the program of one device
and run as a `shard_map` over the whole mesh (spmd.py). Every value of the Program carries a
dim spec: for each dimension, the mesh axis it is split over, or None. The inputs' specs come
from `in_shardings` (or the inputs' NamedShardings); the equations pass them on as XLA's
sharding propagation does in the data-parallel case:

- elementwise operations keep the split; a replicated operand of full rank is cut to this
  device's block (a broadcast is broadcast straight to the block);
- `broadcast_in_dim`, `transpose`, `squeeze` and `reshape`s that keep the split dimension
  whole move the split with the dimension;
- a reduction (`reduce_sum`/`max`/`min`) or a `dot_general` contraction over a split
  dimension reduces the block, then all-reduces it across the axis (`psum`/`pmax`/`pmin`);
- a gather taking whole its operand's split dimensions (its indices split on batch
  dimensions or not), and a scatter into dimensions the operand does not split, work on the
  blocks (a scatter's updates cut to the block);
- a `sharding_constraint` (with_sharding_constraint, or device_put over Explicit axes, on a
  traced value) gathers the dimensions split otherwise and cuts the blocks it names;
- nested `jit`s and custom-derivative calls are interpreted in place;
- any other equation with a split operand gathers its operands (`all_gather`) and computes on
  the global value, replicated on every device.

A sum split over devices is added in another order than on one device, so such results differ
from the one-device computation by rounding; elementwise work is bit for bit the same. The
outputs report the sharding JAX gives: `out_shardings` when given, else the spec of each
output (as XLA's propagation prints it, trailing unsplit dimensions dropped, or, for inputs
that carry Explicit shardings in their types, one entry per dimension).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from gpuarr import core, dispatch, impls
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.core import ClosedProgram, Literal
from gpuarr.dispatch import as_array
from gpuarr.impls import impl_rules, narrow_rules
from gpuarr.interpreters import ad, batching, partial_eval
from gpuarr.lax import cumulative, dot_products, lax, parallel, shape_ops, slicing, sorting
from gpuarr.sharding import global_value, nested_loops, split_dimension, spmd
from gpuarr.sharding.mesh import AxisType
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding, Sharding
from gpuarr.sharding.tree_shardings import concrete_sharding, with_sharding

_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_step_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Program -> _steps
_eager_programs: dict = {}  # (primitive, params, aval) -> its one-equation ClosedProgram
_REDUCERS = {"reduce_sum": parallel.psum_p, "reduce_max": parallel.pmax_p,
             "reduce_min": parallel.pmin_p}
_INLINED = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr"}
_EAGER_EXTRA = {lax.argmax_p, lax.argmin_p, shape_ops.reshape_p}  # with the reductions
# Eager operations that run on each device's block where JAX runs them without communication
# (a matrix product keeping its contraction whole, slices, sorts and cumulative operations
# along unsplit dimensions, transposes, broadcasts, concatenation along an unsplit dimension);
# along a split dimension, where XLA reshards, split_dimension.py runs them.
_PER_BLOCK = {dot_products.dot_general_p, shape_ops.transpose_p, shape_ops.squeeze_p,
              shape_ops.broadcast_in_dim_p, lax.slice_p, lax.concatenate_p, sorting.sort_p,
              cumulative.cumsum_p, cumulative.cumprod_p, cumulative.cummax_p,
              cumulative.cummin_p, cumulative.cumlogsumexp_p, slicing.gather_p,
              *split_dimension.SCATTERS}
_ELEMENTWISE_EXTRA = {"select_n", "clamp", ad.add_any_p.name}


# The value laid out as `sharding` says (a NamedSharding over several devices); `retype`: the
# constraint of a device_put, which sets the layout over Explicit axes too (a constraint of
# with_sharding_constraint keeps the splits a value's type already has there).
sharding_constraint_p = lax.unop("sharding_constraint", lambda x, sharding, retype: x, "any")
narrow_rules[sharding_constraint_p] = impl_rules[sharding_constraint_p]
ad.deflinear(sharding_constraint_p, lambda ct, x, **params: [
    ct if type(ct) is ad.Zero else sharding_constraint_p.bind(ct, **params)])


def _constraint_batch_rule(axis_size, vals, dims, *, sharding, retype):
    """Under vmap the batch dimension is left unconstrained (it keeps its layout), as in
    JAX without `spmd_axis_name`."""
    (x,), (d,) = vals, dims
    if d is batching.not_mapped:
        return sharding_constraint_p.bind(x, sharding=sharding, retype=retype), d
    spec = list(sharding.spec._normalized_spec_for_aval(x.ndim - 1).partitions)
    spec.insert(d, PartitionSpec.UNCONSTRAINED)
    batched = NamedSharding(sharding.mesh, PartitionSpec(*spec))
    return sharding_constraint_p.bind(x, sharding=batched, retype=retype), d


batching.batch_rules[sharding_constraint_p] = _constraint_batch_rule


class _Gather(Exception):
    """An equation whose operands' splits this module has no rule for."""


# ---------------------------------------------------------------- which calls run this way


def mesh_and_specs(leaves, in_shardings):
    """(mesh, one dim spec per leaf) when some input is split over a mesh of several devices,
    else None. `in_shardings` (flat, or None) wins over an input Array's own sharding, but
    for a committed Array whose type carries its sharding (which jit checked places it as
    the in_sharding does): JAX traces with that type, its mesh the outputs' mesh."""
    mesh, specs = None, []
    typed = typed_leaves(leaves)
    for i, leaf in enumerate(leaves):
        s = in_shardings[i] if in_shardings is not None else None
        if not isinstance(s, NamedSharding) or (typed[i] and _one_axis_per_dim(leaf._sharding)):
            s = getattr(leaf, "_sharding", None)
        if not isinstance(s, NamedSharding) or s.mesh.size == 1:
            specs.append(None)
            continue
        if not hasattr(s.mesh, "devices"):  # an AbstractMesh: the concrete one is in context
            s = concrete_sharding(s)
        if mesh is None:
            mesh = s.mesh
        elif s.mesh != mesh:
            return None  # inputs on different meshes: the one-device path raises JAX's error
        ndim = core.get_aval(leaf).ndim
        spec = []
        for entry in s.spec._normalized_spec_for_aval(ndim).partitions:
            names = spmd._entry_axes(entry)
            if len(names) > 1:
                return None  # a dimension split over several axes at once
            spec.append(names[0] if names else None)
        specs.append(tuple(spec))
    if mesh is None or {d.platform for d in mesh.devices.flat} not in ({"cpu"}, {"cuda"}):
        return None
    return mesh, [s if s is not None else (None,) * core.get_aval(x).ndim
                  for s, x in zip(specs, leaves)]


def _one_axis_per_dim(s: NamedSharding) -> bool:
    return all(len(spmd._entry_axes(e)) <= 1 for e in s.spec.partitions)


def has_shard_map(closed: ClosedProgram) -> bool:
    """Whether `closed` (or a Program inside it) runs a shard_map of several devices."""
    return any(_holds_shard_map(e) for e in closed.program.eqns)


def _holds_shard_map(eqn) -> bool:
    """Whether `eqn` is a shard_map or one of its Programs runs one."""
    return eqn.prim is spmd.shard_map_p or any(
        _holds_shard_map(e) for p in core.subprograms(eqn.params)
        for e in getattr(p, "program", p).eqns)


def run_eagerly(prim, args, params):
    """`prim` on Arrays split over several devices, run as `_run_eagerly` runs it; where no
    rule there applies and an operand is split over devices of several processes, on the
    operands made replicated, the result laid out by the sharding XLA propagates
    (global_value.py). None otherwise (the caller reads the value joined)."""
    out = _run_eagerly(prim, args, params)
    if out is None and prim is not spmd.shard_map_p and global_value.spans_processes(args):
        out = global_value.run(prim, args, params)
    return out


def _run_eagerly(prim, args, params):
    """An eager reduction (`reduce_sum`, `reduce_max`, ...), `argmax`/`argmin` or `reshape` of an Array
    split over several devices of this process, run as JAX runs it: each device reduces its
    piece and the devices combine their results (an all-reduce, over NCCL between GPUs), the
    result replicated on every device with the sharding JAX reports. On cpu devices float sums
    are added whole on each device instead (gathered), bit for bit the one-device sum; on GPUs
    they are added per piece, so they differ from one GPU's sum in rounding, as JAX's do.
    The operations of `_PER_BLOCK` run on each device's blocks of their operands when no
    device needs another's data, bit for bit the one-device result, their results kept as
    pieces with the sharding JAX reports; along a split dimension they, gathers, dynamic
    slices and scatters run as split_dimension.py runs them. A shard_map bound eagerly (by
    grad's, jvp's or vmap's rule) runs per device on the pieces where they are. None for any
    other primitive or operand (the caller then reads the value joined)."""
    if prim is spmd.shard_map_p:
        if not spmd.runs_per_device_eagerly(params["mesh"], args):
            return None
        return spmd.run_per_device(args, params["closed"], params["mesh"], params["in_specs"],
                                   params["out_specs"])
    per_block = prim in _PER_BLOCK
    if not per_block and prim not in impls.axis_reduction_prims and prim not in _EAGER_EXTRA:
        return split_dimension.run(prim, args, params)  # along a split dimension
    if per_block:  # host operands (a scatter's NumPy indices) as Arrays, cut per device
        args = [a if type(a) is Array or not isinstance(a, (np.ndarray, np.generic))
                else as_array(a) for a in args]
    if not all(type(a) is Array for a in args) or (not per_block and len(args) != 1):
        return split_dimension.run(prim, args, params) if per_block else None
    found = mesh_and_specs(args, [a._value.sharding if type(a._value) is DeviceShards else None
                                  for a in args])
    if found is None:
        return split_dimension.run(prim, args, params) if per_block else None
    mesh, specs = found
    exact = per_block or mesh.devices.flat[0].platform != "cuda"
    avals = [core.get_aval(a) for a in args]
    try:
        key = (prim, tuple(sorted(params.items())), *avals)
        closed = _eager_programs.get(key)
    except TypeError:  # a parameter that cannot be hashed
        return None
    if closed is None:
        def one(*vs):
            out = prim.bind(*vs, **params)
            return list(out) if prim.multiple_results else [out]
        closed = _eager_programs[key] = partial_eval.trace_to_program(one, avals)
    if per_block and _plan(closed, mesh, tuple(specs), avals, exact)[3]:
        return split_dimension.run(prim, args, params)  # a device needs another's data
    outs = run(closed, args, mesh, specs, None, typed_inputs(mesh), exact)
    weak = core.weak_type_rules.get(prim, core.default_weak_type_rule)(*args, **params)
    for out, w in zip(outs, weak if isinstance(weak, list) else [weak] * len(outs)):
        out.weak_type = w
    return outs if prim.multiple_results else outs[0]


def run_shard_maps(closed: ClosedProgram, leaves, out_shardings, typed: bool = True) -> list | None:
    """The outputs of `closed`, a Program holding shard_maps over devices of this process
    (`jit(shard_map(f))`), each run with every device's pieces kept on it
    (spmd.run_per_device), the outputs reporting what JAX reports (`out_shardings` when
    given, else the out_spec, one entry per dimension over Explicit mesh axes). The Program's
    other equations, between the shard_maps, run as the data-parallel jit runs them (`run`:
    one compiled program per device on the pieces where they are, GPUs' as the cuda
    platform's plans), their results reporting the shardings XLA propagates; a stretch of
    them that would gather a split operand runs eagerly instead (dispatch.py: on each
    device's piece where it can). `typed`: the inputs' shardings come from their types (no
    `in_shardings`). None where a shard_map does not run per device eagerly (the Program
    then runs compiled, as written)."""
    maps = [e for e in closed.program.eqns if e.prim is spmd.shard_map_p]
    args = [as_array(x) for x in leaves]
    if any(not spmd.runs_per_device_eagerly(e.params["mesh"], args) for e in maps):
        return None
    return _run_eqns(closed, args, out_shardings, typed)


def _steps(closed: ClosedProgram) -> list:
    """`closed`'s equations in order: each equation holding a shard_map (the shard_map, or a
    `jit`, `cond`, `while` or `scan` running one) alone, and between them each stretch of
    other equations as a ClosedProgram of its own (its inputs the variables it reads from
    before it, but `closed`'s constants, which stay its constants; its outputs those read
    after it), cached while `closed` lives."""
    steps = _step_cache.get(closed)
    if steps is not None:
        return steps
    prog = closed.program
    consts = {v.id: c for v, c in zip(prog.constvars, closed.consts)}
    steps, stretch = [], []

    def close(end: int):
        if not stretch:
            return
        made = {v.id for e in stretch for v in e.outvars}
        reads, seen = [], set()
        for e in stretch:
            for a in e.inputs:
                if type(a) is not Literal and a.id not in made and a.id not in seen:
                    seen.add(a.id)
                    reads.append(a)
        later = {a.id for e in prog.eqns[end:] for a in e.inputs if type(a) is not Literal}
        later |= {a.id for a in prog.outvars if type(a) is not Literal}
        outs = [v for e in stretch for v in e.outvars if v.id in later]
        # the Program's constants stay constants: compiled into each device's program once
        held = [a for a in reads if a.id in consts]
        reads = [a for a in reads if a.id not in consts]
        steps.append(ClosedProgram(core.Program(held, reads, list(stretch), outs),
                                   [consts[a.id] for a in held]))
        stretch.clear()

    for k, eqn in enumerate(prog.eqns):
        if _holds_shard_map(eqn):
            close(k)
            steps.append(eqn)
        else:
            stretch.append(eqn)
    close(len(prog.eqns))
    _step_cache[closed] = steps
    return steps


def _run_stretch(step: ClosedProgram, ins, typed: bool) -> list | None:
    """A stretch of equations between shard_maps as jit's data-parallel program per device,
    or None when no input is split over several devices or an equation would gather."""
    found = mesh_and_specs(ins, None)
    if found is None:
        return None
    mesh, specs = found
    if _plan(step, mesh, tuple(specs), [core.get_aval(x) for x in ins])[3]:
        return None
    return run(step, ins, mesh, specs, None, typed and typed_inputs(mesh))


def _run_eqns(closed, args, out_shardings, typed) -> list:
    """`closed`'s steps in order: shard_maps per device (over GPUs of several processes, each
    process running its own), the equations nesting them by their own steps (`_nested`), the
    stretches between them per device (`_run_stretch`), else their equations eagerly."""
    prog = closed.program
    env = {v.id: as_array(c) for v, c in zip(prog.constvars, closed.consts)}
    env.update((v.id, x) for v, x in zip(prog.invars, args))

    def read(a):
        if type(a) is Literal:
            return core._weak_operand(a) if a.aval.weak_type else a.val
        return env[a.id]

    for step in _steps(closed):
        if type(step) is ClosedProgram:
            ins = [read(a) for a in step.program.invars]
            outs = _run_stretch(step, ins, typed)
            if outs is not None:
                env.update((v.id, o) for v, o in zip(step.program.outvars, outs, strict=True))
                continue
            for eqn in step.program.eqns:
                ins = [read(a) for a in eqn.inputs]
                out = eqn.prim.bind(*ins, **eqn.params)
                out = out if eqn.prim.multiple_results else [out]
                env.update((v.id, o) for v, o in zip(eqn.outvars, out, strict=True))
            continue
        if step.prim is not spmd.shard_map_p:
            ins = [read(a) for a in step.inputs]
            out = _nested(step, ins, typed)
            if out is None:  # another equation holding one: run as written
                out = step.prim.bind(*ins, **step.params)
                out = out if step.prim.multiple_results else [out]
            env.update((v.id, o) for v, o in zip(step.outvars, out, strict=True))
            continue
        params = step.params
        ins = [read(a) for a in step.inputs]
        mesh = params["mesh"]
        outs = spmd.run_per_device(ins, params["closed"], mesh, params["in_specs"],
                                   params["out_specs"])
        for v, out, spec in zip(step.outvars, outs, params["out_specs"], strict=True):
            if typed_inputs(mesh):
                spec = spec._normalized_spec_for_aval(v.aval.ndim)
            env[v.id] = with_sharding(out, NamedSharding(mesh, spec))
    results = [_typed(as_array(read(v))) for v in prog.outvars]
    if out_shardings is not None:
        results = [with_sharding(r, s) if isinstance(s, Sharding) else r
                   for r, s in zip(results, out_shardings)]
    return results


def _typed(out):
    """`out` reporting its spec with one entry per dimension over Explicit mesh axes, as
    JAX's typed shardings print (an input returned as it is, a loop of no iterations)."""
    s = getattr(out, "_sharding", None)
    if not isinstance(s, NamedSharding) or s.mesh.size == 1 or not typed_inputs(s.mesh):
        return out
    spec = s.spec._normalized_spec_for_aval(out.ndim)
    return out if spec == s.spec else with_sharding(out, NamedSharding(s.mesh, spec))


def _nested(eqn, ins, typed) -> list | None:
    """An equation whose Programs hold a shard_map, run by its own steps so that the
    shard_map runs per device on the pieces where they are: an inner `jit` (or a custom
    derivative's call), a `cond` (its branch at the concrete index, clamped as XLA clamps
    it), a `while` or a `scan` (iteration by iteration, nested_loops.py); None for any other
    equation."""
    def run_program(closed, args):
        return _run_eqns(closed, args, None, typed)

    name = eqn.prim.name
    inner = eqn.params.get(_INLINED.get(name, ""))
    if isinstance(inner, ClosedProgram) and len(inner.program.invars) == len(ins):
        return run_program(inner, ins)
    if name == "cond":
        branches = eqn.params["branches"]  # the other branch too runs per device
        chosen = branches[min(max(int(np.asarray(ins[0])), 0), len(branches) - 1)]
        return run_program(chosen, ins[1:])
    if name == "while":
        return nested_loops.run_while(eqn, ins, run_program)
    if name == "scan":
        return nested_loops.run_scan(eqn, ins, run_program)
    return None


def run(closed: ClosedProgram, leaves, mesh, specs, out_shardings, typed: bool | list,
        exact: bool = False) -> list:
    """The outputs of `closed` on `leaves` (split as `specs` say over `mesh`), one program per
    device, each output an Array reporting its sharding. `typed`: whether each input (or
    all) carries its sharding in JAX's type (`typed_leaves`). `exact`: float sums across
    devices gather their operand and add it whole, bit for bit as one device adds it."""
    avals = [core.get_aval(x) for x in leaves]
    typed = tuple(typed) if isinstance(typed, (list, tuple)) else (typed,) * len(leaves)
    local, out_specs, shown, _ = _plan(closed, mesh, tuple(specs), avals, exact, typed)
    types = _output_types(closed, mesh, tuple(specs), avals, typed, exact, shown)
    in_specs = tuple(PartitionSpec(*s) for s in specs)
    args = [as_array(x) for x in leaves]
    if spmd.runs_per_device_eagerly(mesh, args):  # each device's pieces stay on it
        outs = spmd.run_per_device(args, local, mesh, in_specs, out_specs)
    else:
        outs = spmd.shard_map_p.bind(*args, closed=local, mesh=mesh, in_specs=in_specs,
                                     out_specs=out_specs)
    results = []
    for i, out in enumerate(outs):
        want = out_shardings[i] if out_shardings is not None else None
        if not isinstance(want, Sharding):  # unspecified: its type's, else what XLA propagates
            spec = _shown_spec(shown[i], False) if types[i] is None else PartitionSpec(*types[i])
            want = NamedSharding(mesh, spec)
        results.append(with_sharding(out, want))
    return results


def typed_leaves(leaves) -> list:
    """Which inputs carry their sharding in JAX's type: committed Arrays placed with a
    NamedSharding over Explicit mesh axes. NumPy values and uncommitted Arrays do not, even
    where in_shardings split them."""
    def typed(x):
        s = getattr(x, "_sharding", None) if type(x) is Array and x._committed else None
        return isinstance(s, NamedSharding) and s.mesh.size > 1 and typed_inputs(s.mesh)
    return [typed(x) for x in leaves]


def _output_types(closed, mesh, specs, avals, typed, exact, shown) -> list:
    """Per output of `closed`, the dim spec of its JAX type, or None when its type carries no
    sharding (it depends on no typed input, nor on a constraint over Explicit axes). JAX
    lays a typed output out as its type says: an untyped input counts there as unsplit
    (`x * b.sum()` of a NumPy `x` split by in_shardings and a replicated committed `b` comes
    out replicated); an untyped output keeps the layout XLA propagates. Cached with the
    plans."""
    key = ("types", mesh, specs, exact, typed)
    by_mesh = _plans.setdefault(closed, {})
    if key not in by_mesh:
        marks = _typed_values(closed.program, typed)
        type_specs = tuple(s if t else (None,) * len(s) for s, t in zip(specs, typed))
        if any(marks) and type_specs != specs:
            shown = _plan(closed, mesh, type_specs, avals, exact, typed)[2]
        by_mesh[key] = [tuple(d) if m else None for d, m in zip(shown, marks)]
    return by_mesh[key]


def _typed_values(prog, typed) -> list:
    """Which outputs of `prog` depend on an input marked in `typed` (or on a constraint to
    Explicit mesh axes): their JAX types carry a sharding."""
    marked = {v.id for v, t in zip(prog.invars, typed) if t}
    for eqn in prog.eqns:
        if _makes_typed(eqn) or any(type(a) is not Literal and a.id in marked
                                    for a in eqn.inputs):
            marked.update(v.id for v in eqn.outvars)
    return [type(a) is not Literal and a.id in marked for a in prog.outvars]


def _makes_typed(eqn) -> bool:
    """A constraint over Explicit mesh axes: its result's type carries the sharding."""
    return eqn.prim is sharding_constraint_p and typed_inputs(eqn.params["sharding"].mesh)


def _shown_spec(spec, typed: bool) -> PartitionSpec:
    """A dim spec as JAX prints it: one entry per dimension from typed shardings, else as
    XLA's propagation gives it (trailing unsplit dimensions dropped)."""
    if typed:
        return PartitionSpec(*spec)
    spec = list(spec)
    while spec and spec[-1] is None:
        spec.pop()
    return PartitionSpec(*spec)


def typed_inputs(mesh) -> bool:
    """Whether JAX would read the inputs' shardings from their types (Explicit mesh axes)."""
    return all(mesh._name_to_type[a] == AxisType.Explicit for a in mesh.axis_names)


def _plan(closed, mesh, specs, avals, exact=False, typed=()):
    """(per-device ClosedProgram, out PartitionSpecs, shown dim specs, whether some equation
    gathers its operands), cached per Program. `exact`: float sums and contractions across
    devices are not split (one device's order of additions). `typed`: the inputs whose
    types carry their sharding (a constraint over Explicit axes keeps their splits)."""
    by_mesh = _plans.setdefault(closed, {})
    key = (mesh, specs, exact, typed)
    if key not in by_mesh:
        box = []

        def per_device(*xs):
            interpreter = _Interpreter(mesh, exact)
            interpreter.typed.update(id(x) for x, t in zip(xs, typed) if t)
            outs, out_dims, shown = interpreter.run(closed, list(zip(xs, specs)))
            box.append((out_dims, shown, interpreter.gathers))
            return outs

        local_avals = [spmd.shard_aval(a, PartitionSpec(*s), mesh) for a, s in zip(avals, specs)]
        local, hoisted = spmd.trace_per_device(per_device, local_avals, mesh, mesh.axis_names)
        assert not hoisted  # an eager call closes over no tracer
        out_dims, shown, gathers = box[0]
        by_mesh[key] = (local, tuple(PartitionSpec(*d) for d in out_dims), shown, gathers > 0)
    return by_mesh[key]


# ---------------------------------------------------------------- the per-device interpreter


class _Interpreter:
    """Evaluates a global Program on one device's blocks, tracking each value's dim spec."""

    def __init__(self, mesh, exact=False):
        self.mesh = mesh
        self.exact = exact  # float sums across devices gathered, added whole
        self.gathers = 0  # equations computed on gathered (global) values
        self.hint: dict = {}  # var id -> the spec XLA would report for a gathered result
        self.broadcasts: dict = {}  # id of a replicated broadcast -> (operand, params)
        self.typed: set = set()  # ids of the values whose JAX types carry their sharding

    def size(self, name) -> int:
        return self.mesh.shape[name]

    def run(self, closed, args):
        outs = self.program(closed.program, [(c, (None,) * core.get_aval(c).ndim)
                                             for c in closed.consts], args)
        vals = [v for v, _ in outs]
        dims = [d for _, d in outs]
        shown = [self.hint.get(id(v), d) for v, d in outs]
        return vals, dims, shown

    def program(self, prog, consts, args) -> list:
        env: dict = {}

        def read(a):
            if type(a) is Literal:
                val = core._weak_operand(a) if a.aval.weak_type else a.val
                return val, (None,) * a.aval.ndim
            return env[a.id]

        for v, x in zip(prog.constvars, consts, strict=True):
            env[v.id] = x
        for v, x in zip(prog.invars, args, strict=True):
            env[v.id] = x
        for eqn in prog.eqns:
            ins = [read(a) for a in eqn.inputs]
            outs = self.equation(eqn, ins)
            if _makes_typed(eqn) or any(id(v) in self.typed for v, _ in ins):
                self.typed.update(id(v) for v, _ in outs)
            for v, x in zip(eqn.outvars, outs, strict=True):
                env[v.id] = x
        return [read(a) for a in prog.outvars]

    def equation(self, eqn, ins) -> list:
        prim, params = eqn.prim, eqn.params
        out_avals = [v.aval for v in eqn.outvars]
        if all(all(n is None for n in d) for _, d in ins) and prim is not sharding_constraint_p:
            outs = self.bind(prim, [v for v, _ in ins], params, out_avals,
                             [(None,) * a.ndim for a in out_avals])
            if prim is shape_ops.broadcast_in_dim_p:
                self.broadcasts[id(outs[0][0])] = (ins[0][0], params)
            return outs
        inner = params.get(_INLINED.get(prim.name, ""), None)
        if isinstance(inner, ClosedProgram) and len(inner.program.invars) == len(ins):
            consts = [(c, (None,) * core.get_aval(c).ndim) for c in inner.consts]
            return self.program(inner.program, consts, ins)
        try:
            rule = _RULES.get(prim.name)
            if rule is None and (prim in impls.elementwise_prims
                                 or prim.name in _ELEMENTWISE_EXTRA):
                rule = _elementwise
            if rule is None:
                raise _Gather
            return rule(self, prim, ins, params, out_avals)
        except _Gather:
            return self.gathered(prim, ins, params, out_avals)

    def bind(self, prim, vals, params, out_avals, dims) -> list:
        out = prim.bind(*vals, **params)
        return list(zip(out if prim.multiple_results else [out], dims))

    def gathered(self, prim, ins, params, out_avals) -> list:
        """`prim` on the global values, replicated on every device."""
        self.gathers += 1
        vals = [self.gather(v, d) for v, d in ins]
        outs = self.bind(prim, vals, params, out_avals, [(None,) * a.ndim for a in out_avals])
        split = [(d, core.get_aval(v)) for v, d in ins if any(d)]
        for (v, _), aval in zip(outs, out_avals):
            for d, local in split:  # XLA keeps a same-shaped operand's split on such a result
                if self.global_shape(local.shape, d) == aval.shape:
                    self.hint[id(v)] = d
                    break
        return outs

    def global_shape(self, shape, dims) -> tuple:
        return tuple(n * (1 if a is None else self.size(a)) for n, a in zip(shape, dims))

    def gather(self, v, dims):
        for d, a in enumerate(dims):
            if a is not None:
                v = parallel.all_gather_p.bind(
                    v, all_gather_dimension=d, axis_name=(a,), axis_index_groups=None,
                    axis_size=self.size(a), tiled=True)
        return v

    def block(self, v, d: int, name: str):
        """This device's block along dimension `d` (split over `name`) of a replicated value."""
        n = self.size(name)
        shape = core.get_aval(v).shape
        length = shape[d] // n
        made = self.broadcasts.get(id(v))
        if made is not None:  # broadcast along `d`: broadcast straight to the block
            x, params = made
            if d not in params["broadcast_dimensions"] or \
                    core.get_aval(x).shape[params["broadcast_dimensions"].index(d)] == 1:
                local = shape[:d] + (length,) + shape[d + 1:]
                return shape_ops.broadcast_in_dim_p.bind(x, **dict(params, shape=local))
        start = lax.mul(parallel.axis_index_p.bind(axis_name=(name,)), np.int32(length))
        return slicing.dynamic_slice_in_dim(v, start, length, d)

    def split_like(self, v, dims, want):
        """`v` (dim spec `dims`) cut so its spec is `want` (only None -> axis changes)."""
        shape = core.get_aval(v).shape
        for d, (have, a) in enumerate(zip(dims, want)):
            if have is None and a is not None:
                if shape[d] != 1:  # a dimension of size 1 broadcasts: kept
                    v = self.block(v, d, a)
            elif have != a:
                raise _Gather
        return v


def _merge(specs, ndim):
    """The common spec of operands of rank `ndim` (each dimension split one way at most, each
    axis naming one dimension)."""
    out = [None] * ndim
    for s in specs:
        for d, a in enumerate(s):
            if a is not None:
                if out[d] not in (None, a):
                    raise _Gather
                out[d] = a
    named = [a for a in out if a is not None]
    if len(named) != len(set(named)):
        raise _Gather
    return tuple(out)


def _elementwise(self, prim, ins, params, out_avals):
    ndim = out_avals[0].ndim
    want = _merge([d for _, d in ins if len(d) == ndim], ndim)
    vals = [v if len(d) != ndim else self.split_like(v, d, want) for v, d in ins]
    return self.bind(prim, vals, params, out_avals, [want] * len(out_avals))


def _broadcast_in_dim(self, prim, ins, params, out_avals):
    ((x, dims),) = ins
    shape, bdims = params["shape"], params["broadcast_dimensions"]
    want = [None] * len(shape)
    for src, dst in enumerate(bdims):
        want[dst] = dims[src]
    local = tuple(n // (1 if a is None else self.size(a)) for n, a in zip(shape, want))
    return self.bind(prim, [x], dict(params, shape=local), out_avals, [tuple(want)])


def _transpose(self, prim, ins, params, out_avals):
    ((x, dims),) = ins
    return self.bind(prim, [x], params, out_avals,
                     [tuple(dims[p] for p in params["permutation"])])


def _squeeze(self, prim, ins, params, out_avals):
    ((x, dims),) = ins
    gone = {d % len(dims) for d in params["dimensions"]}
    return self.bind(prim, [x], params, out_avals,
                     [tuple(a for d, a in enumerate(dims) if d not in gone)])


def _reshape(self, prim, ins, params, out_avals):
    ((x, dims),) = ins
    if params.get("dimensions") is not None:
        raise _Gather
    old = self.global_shape(core.get_aval(x).shape, dims)
    new = list(params["new_sizes"])
    want = [None] * len(new)
    for d, a in enumerate(dims):
        if a is None:
            continue
        # The split dimension must start a group of the reshape and keep whole blocks.
        prefix = math.prod(old[:d])
        starts = [k for k in range(len(new)) if math.prod(new[:k]) == prefix]
        k = next((k for k in starts if new[k] % self.size(a) == 0
                  and (new[k] % old[d] == 0 or old[d] % new[k] == 0)), None)
        if k is None or want[k] is not None:
            raise _Gather
        want[k] = a
        new[k] //= self.size(a)
    return self.bind(prim, [x], dict(params, new_sizes=tuple(new)), out_avals, [tuple(want)])


def _reduce(self, prim, ins, params, out_avals):
    ((x, dims),) = ins
    axes = {a % len(dims) for a in params["axes"]}
    across = tuple(a for d, a in enumerate(dims) if d in axes and a is not None)
    if across and self.exact and prim.name == "reduce_sum" \
            and np.dtype(core.get_aval(x).dtype).kind in "fc":
        raise _Gather  # added whole on each device: no other order of additions
    out = prim.bind(x, **params)
    if across:
        out = _REDUCERS[prim.name].bind(out, axis_name=across)
    return [(out, tuple(a for d, a in enumerate(dims) if d not in axes))]


def _dot_general(self, prim, ins, params, out_avals):
    (x, xd), (y, yd) = ins
    (xc, yc), (xb, yb) = params["dimension_numbers"]
    xd, yd = list(xd), list(yd)
    across = []
    for contracting, (xs, ys) in ((True, (xc, yc)), (False, (xb, yb))):
        for i, j in zip(xs, ys):
            a = xd[i] or yd[j]
            if xd[i] not in (None, a) or yd[j] not in (None, a):
                raise _Gather
            if xd[i] is None and a is not None:
                x, xd[i] = self.block(x, i, a), a
            if yd[j] is None and a is not None:
                y, yd[j] = self.block(y, j, a), a
            if a is not None and contracting:
                across.append(a)
    free_x = [xd[i] for i in range(len(xd)) if i not in xc and i not in xb]
    free_y = [yd[j] for j in range(len(yd)) if j not in yc and j not in yb]
    out_dims = tuple([xd[i] for i in xb] + free_x + free_y)
    named = [a for a in out_dims if a is not None]
    if len(named) != len(set(named)) or set(named) & set(across) or (across and self.exact):
        raise _Gather  # (exact: a contraction is added whole, in one device's order)
    out = prim.bind(x, y, **params)
    if across:
        out = parallel.psum_p.bind(out, axis_name=tuple(across))
    return [(out, out_dims)]


def _arg_extreme(self, prim, ins, params, out_avals):
    """argmax/argmin along a split dimension: each device finds its block's extreme and its
    index there, the devices' extremes and indices are gathered (one value per device), and
    the first device holding the overall extreme gives the index (NaNs first, ties to the
    lowest index, as on one device)."""
    ((x, dims),) = ins
    (axis,) = params["axes"]
    name = dims[axis]
    kept = tuple(a for d, a in enumerate(dims) if d != axis)
    dtype = np.dtype(core.get_aval(x).dtype)
    if name is None:
        return self.bind(prim, [x], params, out_avals, [kept])
    if dtype.kind not in "fiu":
        raise _Gather
    n = self.size(name)
    index_dtype = np.dtype(params["index_dtype"])
    local = prim.bind(x, **params)
    best = (lax.reduce_max_p if prim is lax.argmax_p else lax.reduce_min_p).bind(
        x, axes=(axis,))

    def gather(v):  # (n, *rest): every device's value, in mesh order
        return parallel.all_gather_p.bind(v, all_gather_dimension=0, axis_name=(name,),
                                          axis_index_groups=None, axis_size=n, tiled=False)

    bests, indices = gather(best), gather(local)
    owner = prim.bind(bests, axes=(0,), index_dtype=index_dtype)  # which device's block
    shape = core.get_aval(indices).shape
    mine = lax.eq(shape_ops.broadcasted_iota(index_dtype, shape, 0),
                  shape_ops.broadcast_in_dim(owner, shape, tuple(range(1, len(shape)))))
    zeros = shape_ops.full(shape, 0, index_dtype)
    picked = shape_ops.reduce_sum(lax.select_n(mine, zeros, indices), (0,))
    length = np.asarray(core.get_aval(x).shape[axis], index_dtype)
    out = lax.add(picked, lax.mul(owner, length))
    return [(out, kept)]


def _slice(self, prim, ins, params, out_avals):
    """A slice taking every element of the split dimensions: each device slices its block."""
    ((x, dims),) = ins
    shape = self.global_shape(core.get_aval(x).shape, dims)
    limit = list(params["limit_indices"])
    strides = params["strides"] or (1,) * len(dims)
    for d, a in enumerate(dims):
        if a is not None:
            if params["start_indices"][d] != 0 or limit[d] != shape[d] or strides[d] != 1:
                raise _Gather
            limit[d] = shape[d] // self.size(a)
    return self.bind(prim, [x], dict(params, limit_indices=tuple(limit)), out_avals, [dims])


def _dynamic_slice(self, prim, ins, params, out_avals):
    """A dynamic slice taking every element of the split dimensions (a scan's slice of its
    `xs`): each device slices its block, whose start along those dimensions clamps to 0."""
    (x, dims), *starts = ins
    shape = self.global_shape(core.get_aval(x).shape, dims)
    sizes = list(params["slice_sizes"])
    for d, a in enumerate(dims):
        if a is not None:
            if sizes[d] != shape[d]:
                raise _Gather
            sizes[d] //= self.size(a)
    if any(any(d) for _, d in starts):
        raise _Gather
    return self.bind(prim, [x, *[v for v, _ in starts]], dict(params, slice_sizes=tuple(sizes)),
                     out_avals, [dims])


def _along_unsplit(key: str):
    """The rule of an operation along the dimension `params[key]` (sort, a cumulative
    operation, concatenate) on operands of one rank: each device works on its blocks when
    that dimension is not split (unsplit operands are cut to the blocks of the split ones)."""
    def rule(self, prim, ins, params, out_avals):
        ndim = out_avals[0].ndim
        want = _merge([d for _, d in ins], ndim)
        if want[params[key] % ndim] is not None:
            raise _Gather
        vals = [self.split_like(v, d, want) for v, d in ins]
        return self.bind(prim, vals, params, out_avals, [want] * len(out_avals))
    return rule


def _gather(self, prim, ins, params, out_avals):
    """A gather taking whole each split dimension of its operand (`jnp.take(x, idx, 1)` of
    rows split), its indices split on batch dimensions or not: each device gathers from its
    blocks; the offset dimensions keep the operand's split, the batch ones the indices'."""
    (x, xd), (idx, idd) = ins
    dn, sizes = params["dimension_numbers"], list(params["slice_sizes"])
    skipped = set(dn.collapsed_slice_dims) | set(dn.start_index_map)
    if dn.operand_batching_dims or idd[-1] is not None:
        raise _Gather
    shape = self.global_shape(core.get_aval(x).shape, xd)
    for d, a in enumerate(xd):
        if a is not None:
            if d in skipped or sizes[d] != shape[d]:
                raise _Gather
            sizes[d] //= self.size(a)
    offset = iter([a for d, a in enumerate(xd) if d not in dn.collapsed_slice_dims])
    batch = iter(idd[:-1])
    out = tuple(next(offset) if d in dn.offset_dims else next(batch)
                for d in range(out_avals[0].ndim))
    named = [a for a in out if a is not None]
    if len(named) != len(set(named)):
        raise _Gather
    return self.bind(prim, [x, idx], dict(params, slice_sizes=tuple(sizes)), out_avals, [out])


def _scatter(self, prim, ins, params, out_avals):
    """A scatter into dimensions its operand does not split (`x.at[:, 2].set(v)` of rows
    split), with unsplit indices: each device scatters its block of the updates (the
    window dimension covering a split one, cut to the device's block) into its block."""
    (x, xd), (idx, idd), (upd, ud) = ins
    dn = params["dimension_numbers"]
    if any(idd) or dn.operand_batching_dims:
        raise _Gather
    shape = self.global_shape(core.get_aval(x).shape, xd)
    windows = [d for d in range(len(xd)) if d not in dn.inserted_window_dims]
    want = [None] * len(ud)
    for w, d in zip(dn.update_window_dims, windows):
        if xd[d] is not None:
            if d in dn.scatter_dims_to_operand_dims or \
                    self.global_shape(core.get_aval(upd).shape, ud)[w] != shape[d]:
                raise _Gather
            want[w] = xd[d]
    if any(xd[d] is not None for d in dn.inserted_window_dims):
        raise _Gather
    upd = self.split_like(upd, ud, want)
    return self.bind(prim, [x, idx, upd], params, out_avals, [xd])


def _sharding_constraint(self, prim, ins, params, out_avals):
    """The value laid out as the constraint's sharding says: dimensions split otherwise
    gathered (all_gather), then cut to this device's block along the axis named. Over
    Explicit axes, with_sharding_constraint keeps the splits a typed value has."""
    ((x, dims),) = ins
    s = params["sharding"]
    if s.mesh != self.mesh:
        raise _Gather  # another mesh: computed on the global value, replicated
    want = []
    parts = list(s.spec.partitions) + [None] * (len(dims) - len(s.spec.partitions))
    for have, entry in zip(dims, parts):  # (normalizing would drop UNCONSTRAINED)
        names = () if entry is PartitionSpec.UNCONSTRAINED else spmd._entry_axes(entry)
        if len(names) > 1:
            raise _Gather
        keep = entry is PartitionSpec.UNCONSTRAINED or (
            not params["retype"] and id(x) in self.typed and typed_inputs(s.mesh))
        want.append(have if keep else (names[0] if names else None))
    for d, (have, a) in enumerate(zip(dims, want)):
        if have is not None and have != a:
            x = self.gather(x, tuple(n if k == d else None for k, n in enumerate(dims)))
    kept = tuple(h if h == a else None for h, a in zip(dims, want))
    return [(self.split_like(x, kept, tuple(want)), tuple(want))]


_RULES = {"argmax": _arg_extreme, "sharding_constraint": _sharding_constraint, "argmin": _arg_extreme,
          "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose, "squeeze": _squeeze,
          "reshape": _reshape, "dot_general": _dot_general, "slice": _slice,
          "dynamic_slice": _dynamic_slice,
          "sort": _along_unsplit("dimension"), "concatenate": _along_unsplit("dimension"),
          **dict.fromkeys(("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"),
                          _along_unsplit("axis")),
          "gather": _gather, **dict.fromkeys(split_dimension.SCATTER_NAMES, _scatter),
          **dict.fromkeys(_REDUCERS, _reduce)}


dispatch.split_reductions[0] = run_eagerly
