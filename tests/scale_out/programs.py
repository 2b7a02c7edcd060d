"""Programs the scale-out tests run in fresh processes (the device count is fixed when the cpu
platform starts; several processes come from mpiexec). Each prints one JSON line.

    python programs.py LIB devices N          (LIB: gpuarr or jax)
    python programs.py gpuarr collectives N   (N cpu devices in one process)
    python programs.py LIB jit_split N        (or groups, transforms; features: all three)
    python programs.py LIB split_ops N        (eager per-block operations, jit around shard_map)
    python programs.py LIB split_dimension 4  (eager operations along the split dimension)
    python programs.py LIB pmap_traces N      (how often pmap traces over repeated calls)
    python programs.py LIB jit_shardings N    (in_shardings vs committed args, constraints)
    python programs.py LIB loops N            (jitted loops of shard_map steps; or on GPUs)
    python programs.py gpuarr gpus N          (cuda devices of the CuPy stand-in)
    [mpiexec -n P] python programs.py gpuarr mpi_collectives N
    [mpiexec -n P] python programs.py gpuarr mlp N
    [mpiexec -n P] python programs.py LIB vma_grads N   (grads inside shard_map, check_vma)
    mpiexec -n 2 python programs.py gpuarr fault KIND
    mpiexec -n 2 python programs.py gpuarr gpu_processes N   (N stand-in GPUs per process)
"""
import json
import os
import sys
import time

import numpy as np

LIB, WHAT, ARG = sys.argv[1], sys.argv[2], sys.argv[3]
if LIB == "jax":
    import jax
else:
    import gpuarr as jax
lax = jax.lax
P = jax.sharding.PartitionSpec
NamedSharding = jax.sharding.NamedSharding


def emit(**kw):
    # One write call per line: the lines of several processes never mix.
    sys.stdout.flush()
    os.write(1, ("RESULT " + json.dumps(kw) + "\n").encode())


def devices(n):
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((2, n // 2), ("x", "y"))
    x = jax.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4),
                       NamedSharding(mesh, P("x")))
    try:
        jax.config.update("jax_num_cpu_devices", n + 1)
        late = None
    except RuntimeError as e:
        late = str(e)
    g = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    s2 = NamedSharding(mesh, P("x", "y"))
    cb = jax.make_array_from_callback(g.shape, s2, lambda idx: g[idx])
    sd = jax.make_array_from_single_device_arrays(g.shape, s2,
                                                  [s.data for s in cb.addressable_shards])
    auto = jax.device_put(g, NamedSharding(
        jax.make_mesh((2, n // 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2),
        P("x")))  # Auto axes: elementwise results report the operand's spec as it is
    emit(late_update=late, assembled=[np.asarray(cb).tolist(), repr(cb.sharding),
                    [[str(s.device), repr(s.index)] for s in cb.addressable_shards],
                    np.asarray(sd).tolist(), [str(s.device) for s in sd.addressable_shards]],
         devices=[repr(d) for d in jax.devices()], local=[str(d) for d in jax.local_devices()],
         count=jax.device_count(), local_count=jax.local_device_count(),
         process=[jax.process_index(), jax.process_count()],
         mesh=repr(mesh), mesh_devices=[repr(d) for d in mesh.devices.flat],
         sharding=repr(x.sharding), array_devices=sorted(d.id for d in x.devices()),
         shards=[[str(s.device), repr(s.index), s.replica_id, list(s.data.shape),
                  [repr(d) for d in s.data.devices()], np.asarray(s.data).tolist()]
                 for s in x.addressable_shards],
         replicated=x.is_fully_replicated, addressable=x.is_fully_addressable,
         shard_shape=list(x.sharding.shard_shape(x.shape)),
         value=np.asarray(x * 2).tolist(), elementwise=[repr((x * 2).sharding),
                                                       repr(jax.numpy.sin(x).sharding),
                                                       repr((auto + 1).sharding)])


def _collective_fns(n):
    perm = [(j, (j + 1) % n) for j in range(n)]
    return {
        "psum": (lambda a: lax.psum(a, "i"), P()),
        "pmean": (lambda a: lax.pmean(a, "i"), P()),
        "pmax": (lambda a: lax.pmax(a, "i"), P()),
        "all_gather": (lambda a: lax.all_gather(a, "i"), P()),
        "all_gather_tiled": (lambda a: lax.all_gather(a, "i", axis=1, tiled=True), P()),
        "psum_scatter": (lambda a: lax.psum_scatter(a, "i", scatter_dimension=0, tiled=True),
                         P("i")),
        "ppermute": (lambda a: lax.ppermute(a, "i", perm), P("i")),
        "all_to_all": (lambda a: lax.all_to_all(a, "i", 0, 0, tiled=True), P("i")),
        "axis_index": (lambda a: a * lax.axis_index("i").astype(a.dtype), P("i")),
    }


def _reference(fn, spec, full, n):
    """The one-device named-vmap path over the stacked shards."""
    out = np.asarray(jax.vmap(fn, axis_name="i")(full.reshape(n, -1, *full.shape[1:])))
    return out[0] if spec == P() else np.concatenate(list(out))


def collectives(n):
    """Each collective on n devices of one process, against the one-device vmap path."""
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((n,), ("i",))
    rng = np.random.default_rng(0)
    full = rng.standard_normal((n * n, 5)).astype(np.float32)
    x = jax.device_put(full, NamedSharding(mesh, P("i")))
    same, jitted = {}, {}
    for name, (fn, spec) in _collective_fns(n).items():
        sm = jax.shard_map(fn, mesh=mesh, in_specs=P("i"), out_specs=spec, check_vma=False)
        got, ref = np.asarray(sm(x)), _reference(fn, spec, full, n)
        same[name] = bool(got.dtype == ref.dtype and np.array_equal(got, ref))
        jitted[name] = bool(np.array_equal(np.asarray(jax.jit(sm)(x)), ref))
    # a 2-d mesh: psum over one axis, all_gather over the other
    mesh2 = jax.make_mesh((2, n // 2), ("a", "b"))
    y = jax.device_put(full, NamedSharding(mesh2, P(("a", "b"))))
    f2 = jax.shard_map(lambda v: (lax.psum(v, "a"), lax.all_gather(v, "b", tiled=True)),
                       mesh=mesh2, in_specs=P(("a", "b")), out_specs=(P("b"), P("a")),
                       check_vma=False)
    r2 = jax.vmap(jax.vmap(lambda v: (lax.psum(v, "a"), lax.all_gather(v, "b", tiled=True)),
                           axis_name="b"), axis_name="a")(full.reshape(2, n // 2, n, 5))
    g2 = f2(y)
    two_d = [bool(np.array_equal(np.asarray(g2[0]), np.concatenate(list(np.asarray(r2[0])[0])))),
             bool(np.array_equal(np.asarray(g2[1]),
                                 np.concatenate(list(np.asarray(r2[1])[:, 0]))))]
    # pmap over the n devices
    pm = jax.pmap(lambda v: lax.psum(v, "p") * lax.axis_index("p"), axis_name="p")
    ref_pm = jax.vmap(lambda v: lax.psum(v, "p") * lax.axis_index("p"), axis_name="p")(
        full.reshape(n, n, 5))
    got_pm = pm(full.reshape(n, n, 5))
    # keyword arguments (mapped over their leading axis) and a static argument, per device
    stacked = full.reshape(n, n, 5)
    forms = {"keywords": (jax.pmap(lambda v, *, w: lax.psum(v * w, "p"), "p")(stacked, w=stacked),
                          jax.vmap(lambda v: lax.psum(v * v, "p"), axis_name="p")(stacked)),
             "static": (jax.pmap(lambda v, c: lax.pmean(v * c, "p"), "p",
                                 static_broadcasted_argnums=1)(stacked, 3),
                        jax.vmap(lambda v: lax.pmean(v * 3, "p"), axis_name="p")(stacked))}
    pmap_forms = {name: [bool(np.array_equal(np.asarray(got), np.asarray(ref))),
                         len(got.addressable_shards)] for name, (got, ref) in forms.items()}
    # jit's data-parallel form: batch-sharded input, replicated parameter and output
    dp = jax.jit(lambda w, v: (v * w).sum(0), in_shardings=(NamedSharding(mesh, P()),
                                                            NamedSharding(mesh, P("i"))),
                 out_shardings=NamedSharding(mesh, P()))(np.float32(3), x)
    jit_shardings = [bool(np.allclose(np.asarray(dp), (full * 3).sum(0), rtol=1e-6)),
                     repr(dp.sharding), len(dp.addressable_shards)]
    errors = {}
    try:
        jax.shard_map(lambda v: lax.psum(v, "nope"), mesh=mesh, in_specs=P("i"),
                      out_specs=P(), check_vma=False)(x)
    except NameError as e:
        errors["unknown_axis"] = str(e)
    emit(same=same, jitted=jitted, two_d=two_d, jit_shardings=jit_shardings, pmap=bool(np.array_equal(
        np.asarray(got_pm), np.asarray(ref_pm))), pmap_devices=len(got_pm.devices()),
        pmap_forms=pmap_forms, out_sharding=repr(sm(x).sharding), errors=errors)


_configured: list = []


def _use_devices(n):
    """n cpu devices, set once per process (several programs may run in one)."""
    if not _configured:
        jax.config.update("jax_num_cpu_devices", n)
        _configured.append(n)


def features(n):
    """jit_split, groups and transforms in one process: one start-up for the three."""
    return {"jit_split": jit_split(n), "groups": groups(n), "transforms": transforms(n)}


def _split_cases():
    jnp = jax.numpy

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)
    return {
        "mul": lambda w, x: x * 2, "sum0": lambda w, x: x.sum(0),
        "sum1": lambda w, x: x.sum(1), "sumall": lambda w, x: x.sum(),
        "max0": lambda w, x: x.max(0), "matmul": lambda w, x: x @ w,
        "grad": lambda w, x: jax.grad(loss)(w, x), "transpose": lambda w, x: x.T,
        "reshape": lambda w, x: x.reshape(x.shape[0], 2, -1), "xtx": lambda w, x: x.T @ x,
        "cumsum": lambda w, x: jnp.cumsum(x, 0), "tuple": lambda w, x: (x.sum(), w * 2, x),
    }


def jit_split(n):
    """jit on inputs split over n devices: output shardings, values, and the per-device
    program of a gradient, against the one-device computation."""
    _use_devices(n)
    mesh = jax.make_mesh((n,), ("i",))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * n, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
    xa = jax.device_put(x, split)
    specs, committed, values, one, jitted = {}, {}, {}, {}, []
    for name, f in _split_cases().items():
        jitted.append(jax.jit(f, in_shardings=(rep, split)))  # kept: its plans stay cached
        out = jitted[-1](w, x)
        leaves = jax.tree_util.tree_leaves(out)
        specs[name] = [repr(o.sharding.spec) for o in leaves]
        values[name] = [np.asarray(o).tolist() for o in leaves]
        if LIB == "gpuarr":  # the same function on one device
            ref = jax.tree_util.tree_leaves(jax.jit(f)(w, x))
            one[name] = [bool(np.array_equal(np.asarray(o), np.asarray(r)))
                         if name in ("mul", "transpose", "reshape", "max0", "cumsum")
                         else bool(np.allclose(np.asarray(o), np.asarray(r), rtol=1e-5,
                                               atol=1e-6)) for o, r in zip(leaves, ref)]
        if name in ("mul", "sum0", "sum1", "matmul", "transpose"):
            committed[name] = repr(jax.jit(f)(w, xa).sharding.spec)
    out_s = repr(jax.jit(lambda w, x: x * 2, in_shardings=(rep, split),
                         out_shardings=rep)(w, x).sharding)
    program = ""
    if LIB == "gpuarr":
        from gpuarr.sharding import data_parallel
        program = next(str(local) for plans in data_parallel._plans.values()
                       for (local, *_) in plans.values() if "dot_general" in str(local)
                       and "tanh" in str(local))
    return dict(specs=specs, committed=committed, values=values, one=one, out_sharding=out_s,
         program=program, losses=_split_mlp(mesh) if LIB == "gpuarr" else None)


def _split_mlp(mesh):
    """20 steps of a data-parallel MLP written as plain jit with in_shardings, and the same
    steps on one device."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 8)).astype(np.float32)
    ys = np.sin(xs.sum(1, keepdims=True)).astype(np.float32)
    params = {"w1": rng.standard_normal((8, 16)).astype(np.float32) * 0.3,
              "b1": np.zeros(16, np.float32),
              "w2": rng.standard_normal((16, 1)).astype(np.float32) * 0.3}

    def step(p, x, y):
        def loss_fn(p):
            h = jax.numpy.tanh(x @ p["w1"] + p["b1"])
            return jax.numpy.mean((h @ p["w2"] - y) ** 2)
        loss, g = jax.value_and_grad(loss_fn)(p)
        return loss, jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
    runs = []
    for f in (jax.jit(step, in_shardings=(rep, split, split), out_shardings=(rep, rep)),
              jax.jit(step)):
        p, losses = params, []
        for _ in range(20):
            loss, p = f(p, xs, ys)
            losses.append(float(loss))
        runs.append(losses)
    return runs


def groups(n):
    """axis_index_groups under pmap on n devices (and, for gpuarr, the vectorised pmap a
    static argument selects), and the errors of the forms JAX does not run."""
    _use_devices(n)
    x = np.arange(2.0 * n, dtype=np.float32).reshape(n, 2)
    pairs = [list(range(k, n, n // 2)) for k in range(n // 2)]  # [[0, 2], [1, 3]] for n=4
    cases = {
        "psum": lambda v: lax.psum(v, "i", axis_index_groups=pairs),
        "pmean": lambda v: lax.pmean(v, "i", axis_index_groups=pairs),
        "pmax": lambda v: lax.pmax(v, "i", axis_index_groups=pairs),
        "pmin": lambda v: lax.pmin(v, "i", axis_index_groups=pairs),
        "all_gather": lambda v: lax.all_gather(v, "i", axis_index_groups=pairs),
        "all_gather_tiled_reversed": lambda v: lax.all_gather(
            v, "i", tiled=True, axis_index_groups=[g[::-1] for g in pairs]),
        "psum_unequal": lambda v: lax.psum(v, "i", axis_index_groups=[[0], list(range(1, n))]),
        "psum_int": lambda v: lax.psum(v.astype(np.int32), "i", axis_index_groups=pairs),
        "grad": jax.grad(lambda v: lax.psum(v * v, "i", axis_index_groups=pairs).sum()),
        "psum_scatter": lambda v: lax.psum_scatter(v, "i", axis_index_groups=pairs),
        "psum_scatter_tiled_reversed": lambda v: lax.psum_scatter(
            jax.numpy.concatenate([v, -v]), "i", tiled=True,
            axis_index_groups=[g[::-1] for g in pairs]),
        "all_to_all": lambda v: lax.all_to_all(v.reshape(2, 1), "i", 0, 1,
                                               axis_index_groups=pairs),
        "all_to_all_tiled_reversed": lambda v: lax.all_to_all(
            jax.numpy.stack([v, v + 1]), "i", 1, 0, tiled=True,
            axis_index_groups=[g[::-1] for g in pairs]),
    }
    values, vectorised = {}, {}
    for name, f in cases.items():
        out = jax.pmap(f, axis_name="i")(x)
        values[name] = [np.asarray(out).tolist(), str(out.dtype)]
        if LIB == "gpuarr":
            vec = jax.pmap(lambda v, _: f(v), axis_name="i", static_broadcasted_argnums=1)(x, 0)
            vectorised[name] = bool(np.array_equal(np.asarray(vec), np.asarray(out)))
    errors = {}
    mesh = jax.make_mesh((n,), ("i",))
    xs = jax.device_put(x, NamedSharding(mesh, P("i")))
    for name, run in {
        "not_a_partition": lambda: jax.pmap(
            lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [1, 2]]), axis_name="i")(x),
        "scatter_size": lambda: jax.pmap(lambda v: lax.psum_scatter(
            jax.numpy.concatenate([v, v]), "i", axis_index_groups=pairs), axis_name="i")(x),
        "vmap": lambda: jax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=pairs),
                                 axis_name="i")(x),
        "vmap_all_gather": lambda: jax.vmap(
            lambda v: lax.all_gather(v, "i", axis_index_groups=pairs), axis_name="i")(x),
        "shard_map": lambda: jax.shard_map(
            lambda v: lax.psum(v, "i", axis_index_groups=pairs), mesh=mesh, in_specs=P("i"),
            out_specs=P("i"))(xs),
    }.items():
        try:
            run()
            errors[name] = None
        except Exception as e:  # noqa: BLE001 - the test compares the class and message
            errors[name] = [type(e).__name__, str(e)]
    return dict(values=values, vectorised=vectorised, errors=errors)


def transforms(n):
    """grad, jvp and vmap around a shard_map and a pmap over n devices (their transformed
    collectives run per device), and for gpuarr the same derivatives of the one-device
    named-vmap path."""
    _use_devices(n)
    mesh = jax.make_mesh((n,), ("i",))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2 * n, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    ring = [(j, (j + 1) % n) for j in range(n)]

    def body(w, x):
        h = jax.numpy.tanh(x @ w)
        return (lax.psum((h ** 2).sum(), "i"), lax.all_gather(h, "i", tiled=True),
                lax.ppermute(h, "i", ring), lax.pmean(h, "i"))

    def loss_of(outs):
        a, b, c, d = outs
        return a + (b ** 3).sum() + (c * jax.numpy.arange(2.0)).sum() + (d ** 2).sum()

    sm = jax.shard_map(body, mesh=mesh, in_specs=(P(), P("i")),
                       out_specs=(P(), P(), P("i"), P()), check_vma=False)
    xs = jax.device_put(x, NamedSharding(mesh, P("i")))
    stacked = jax.device_put(np.stack([x, 2 * x], 1), NamedSharding(mesh, P("i")))
    pm = jax.pmap(lambda v: lax.psum(jax.numpy.sin(v), "p") * v, axis_name="p")
    per_position = x.reshape(n, 2, 3)
    results = {
        "grad": jax.jit(jax.grad(lambda w, x: loss_of(sm(w, x)), argnums=(0, 1)))(w, xs),
        "jvp": jax.jit(lambda w, t: jax.jvp(lambda w: sm(w, xs), (w,), (t,)))(
            w, np.ones_like(w)),
        "vmap_w": jax.vmap(lambda w: sm(w, xs))(np.stack([w, 2 * w])),
        "vmap_x": jax.jit(jax.vmap(lambda x: sm(w, x), in_axes=1))(stacked),
        "pmap_grad": jax.grad(lambda v: pm(v).sum())(per_position),
        "pmap_vmap": jax.vmap(pm)(np.stack([per_position, -per_position])),
    }
    values = {k: [np.asarray(leaf).tolist() for leaf in jax.tree_util.tree_leaves(v)]
              for k, v in results.items()}
    one = None
    if LIB == "gpuarr":  # the one-device path: a named vmap over the stacked shards
        def vmapped(w, x):
            a, b, c, d = jax.vmap(body, in_axes=(None, 0), axis_name="i")(
                w, x.reshape(n, -1, 3))
            return a[0], b[0], c.reshape(-1, 2), d[0]
        ref = jax.grad(lambda w, x: loss_of(vmapped(w, x)), argnums=(0, 1))(w, x)
        ref_pm = jax.grad(lambda v: jax.vmap(lambda u: lax.psum(jax.numpy.sin(u), "p") * u,
                                             axis_name="p")(v).sum())(per_position)
        one = {"grad": [np.asarray(leaf).tolist() for leaf in ref],
               "pmap_grad": [np.asarray(ref_pm).tolist()]}
    return dict(values=values, one=one)


def gpus(n):
    """shard_map, pmap and their gradient on n cuda devices of the CuPy stand-in: the
    collectives run over cupy.cuda.nccl; the one-device named-vmap path is the reference."""
    import cupy
    if not (cupy.cuda.compiler.available() and cupy.cuda._pocl.available()):
        emit(skip="the stand-in cannot compile (NVRTC) or run (PoCL) kernels here")
        return
    from cupy import _standin
    devices = jax.devices("cuda")[:n]
    mesh = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=devices)
    full = np.random.default_rng(0).standard_normal((n * n, 5)).astype(np.float32)
    _standin.reset()
    same = {}
    for name, (fn, spec) in _collective_fns(n).items():
        sm = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("i"), out_specs=spec,
                                   check_vma=False))
        got, ref = np.asarray(sm(full)), _reference(fn, spec, full, n)
        same[name] = bool(got.dtype == ref.dtype and np.array_equal(got, ref))
    pm = jax.pmap(lambda v: lax.psum(v, "p") * v, axis_name="p")
    got_pm = np.asarray(pm(full.reshape(n, n, 5)))
    ref_pm = np.asarray(jax.vmap(lambda v: lax.psum(v, "p") * v, axis_name="p")(
        full.reshape(n, n, 5)))
    grad = jax.grad(lambda v: (pm(v) ** 2).sum())(full.reshape(n, n, 5))
    ref_grad = jax.grad(lambda v: (jax.vmap(lambda u: lax.psum(u, "p") * u, axis_name="p")(v)
                                   ** 2).sum())(full.reshape(n, n, 5))
    # jit on inputs split over the GPUs: per-GPU blocks, the gradient's sums over NCCL
    before = _standin.counters.library["ncclAllReduce"]
    w = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)

    def loss(w, v):
        return jax.numpy.mean(jax.numpy.tanh(v @ w) ** 2)
    split = jax.jit(jax.value_and_grad(loss), in_shardings=(
        NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))))(w, full)
    one = jax.jit(jax.value_and_grad(loss))(w, full)
    jit_split = [float(abs(split[0] - one[0])),
                 float(np.max(np.abs(np.asarray(split[1]) - np.asarray(one[1])))),
                 repr(split[1].sharding.spec),
                 _standin.counters.library["ncclAllReduce"] - before]
    emit(same=same, pmap=bool(np.array_equal(got_pm, ref_pm)), jit_split=jit_split,
         grad=float(np.max(np.abs(np.asarray(grad) - np.asarray(ref_grad)))),
         pmap_devices=sorted(str(d) for d in pm(full.reshape(n, n, 5)).devices()),
         nccl={k: v for k, v in _standin.counters.library.items() if k.startswith("nccl")})


def _init_distributed(n):
    jax.config.update("jax_num_cpu_devices", n)
    if "--mpi" in sys.argv:
        jax.distributed.initialize(cluster_detection_method="mpi4py",
                                   heartbeat_timeout_seconds=20)


def _global(mesh, spec, full):
    """`full` as a global array: each process passes its block."""
    sh = NamedSharding(mesh, spec)
    rows = full.shape[0] // jax.process_count()
    k = jax.process_index()
    return jax.make_array_from_process_local_data(sh, full[k * rows:(k + 1) * rows])


def mpi_collectives(n):
    """The collectives over a mesh of every process's devices, against the vmap path."""
    from gpuarr.experimental import multihost_utils
    _init_distributed(n)
    total = jax.device_count()
    mesh = jax.make_mesh((total,), ("i",))
    full = np.random.default_rng(1).standard_normal((total * total, 3)).astype(np.float32)
    full = np.round(full * 8) / 8  # sums of these are exact in any order
    x = _global(mesh, P("i"), full)
    same = {}
    for name, (fn, spec) in _collective_fns(total).items():
        sm = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("i"), out_specs=spec,
                                   check_vma=False))
        out = sm(x)
        got = np.asarray(out) if spec == P() else multihost_utils.process_allgather(out)
        same[name] = bool(np.array_equal(got, _reference(fn, spec, full, total)))
    # jit on the split input: each device's block, its column sums all-reduced (exact here)
    split = jax.jit(lambda w, v: (v * w).sum(0),
                    in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))))
    same["jit_split"] = bool(np.array_equal(np.asarray(split(np.float32(0.5), x)),
                                            (full * np.float32(0.5)).sum(0)))
    # the gradient of a shard_map: its transposed program per device, across the processes
    grad = jax.jit(jax.grad(lambda v: jax.shard_map(
        lambda u: lax.psum((u * u).sum(), "i"), mesh=mesh, in_specs=P("i"), out_specs=P())(v)))
    same["grad"] = bool(np.array_equal(multihost_utils.process_allgather(grad(x)), 2 * full))
    # eagerly, and jitted among other operations or nested in a jitted cond
    shifted = jax.shard_map(lambda u: u * 2 + lax.psum(u.sum(), "i"), mesh=mesh,
                            in_specs=P("i"), out_specs=P("i"))
    for name, fn, want in (
            ("eager_grad", jax.grad(lambda v: shifted(v).sum()),
             np.full_like(full, 2 + full.size)),
            ("around", jax.jit(lambda v: shifted(v * 3) - 1.0), full * 6 + 3 * full.sum() - 1),
            ("in_cond", jax.jit(lambda v: lax.cond(True, shifted, shifted, v)),
             full * 2 + full.sum())):
        got = multihost_utils.process_allgather(fn(x))
        same[name] = bool(got.dtype == want.dtype and np.array_equal(got, want))
    same.update(_mpi_loops(mesh, x, full, shifted))
    gathered = multihost_utils.process_allgather(np.float32(jax.process_index()))
    emit(process=jax.process_index(), count=jax.process_count(), devices=total,
         local=len(jax.local_devices()), same=same, allgather=gathered.tolist(),
         broadcast=float(multihost_utils.broadcast_one_to_all(
             np.float32(10 + jax.process_index()))),
         pmap=_cpu_pmap(full, n), pmap_out_axes=_pmap_out_axes(full, n),
         kept=_kept_sums(mesh),
         reshard=_mpi_reshard(jax.make_mesh((total,), ("i",),
                                            axis_types=(jax.sharding.AxisType.Auto,)), total),
         **_cpu_eager(mesh, full, x))


def _pmap_out_axes(full, n):
    """pmap across processes with out_axes given per output (a dict: one mapped along axis
    1, one unmapped, one along axis 0) against the named vmap over every process's
    positions: each process gets its positions of the mapped outputs, the unmapped one
    whole (name -> equal, shape)."""
    jnp = jax.numpy
    k = jax.process_index()
    positions = full[:n * jax.process_count()]
    axes = {"outer": 1, "max": None, "twice": 0}

    def per_output(v):
        return {"outer": jnp.outer(v, v[:2]), "max": lax.pmax(v, "p"), "twice": v * 2}
    got = jax.pmap(per_output, "p", out_axes=axes)(positions[k * n:(k + 1) * n])
    want = jax.vmap(per_output, axis_name="p", out_axes=axes)(positions)
    mine = {name: np.asarray(want[name]) if a is None else
            np.take(np.asarray(want[name]), np.arange(k * n, (k + 1) * n), axis=a)
            for name, a in axes.items()}
    return {name: dict(same=bool(np.array_equal(np.asarray(got[name]), mine[name])),
                       shape=list(got[name].shape)) for name in axes}


def _mpi_loops(mesh, x, full, shifted) -> dict:
    """Jitted loops of shard_map steps over every process's devices (a fori_loop, a scan with
    stacked outputs, a while_loop whose predicate is a psum), against NumPy (sums of eighths,
    exact in any order): whether each output equals it, held as this process's pieces."""
    from gpuarr.experimental import multihost_utils
    absum = jax.shard_map(lambda u: lax.psum(jax.numpy.abs(u).sum(), "i"), mesh=mesh,
                          in_specs=P("i"), out_specs=P())

    def step(a):
        return a * 2 + a.sum()
    carry, ys, sums = full, [], []
    for _ in range(2):
        ys.append(carry * 3)
        sums.append(np.abs(carry).sum())
        carry = step(carry)
    grown = full
    while np.abs(grown).sum() < 1e4:
        grown = step(grown)
    cases = {
        "in_fori": (lambda v: lax.fori_loop(0, 2, lambda k, u: shifted(u), v), [carry]),
        "in_scan": (lambda v: lax.scan(lambda c, _: (shifted(c), (c * 3, absum(c))), v, None,
                                       length=2), [carry, np.stack(ys), np.float32(sums)]),
        "in_while": (lambda v: lax.while_loop(lambda u: absum(u) < 1e4, shifted, v),
                     [grown])}
    same = {}
    for name, (fn, want) in cases.items():
        got = jax.tree.leaves(jax.jit(fn)(x))
        same[name] = all(type(a._stored).__name__ == "DeviceShards"
                         and len(a.addressable_shards) == len(jax.local_devices())
                         for a in got) and all(
            np.array_equal(multihost_utils.process_allgather(a), np.asarray(w, np.float32))
            for a, w in zip(got, want, strict=True))
    return same

def _mpi_counted(fn):
    """(`fn()`, how many of gpuarr's MPI exchanges that carry data it made, how many local
    batches pmap took in from the host and how many of those it copied), counted after a
    first call that compiles."""
    from gpuarr import process_group
    from gpuarr.sharding import process_arrays
    fn()
    used = {"allgather_array": 0, "allreduce_sum": 0, "alltoallv": 0, "from_host": 0,
            "copied": 0}
    real = {name: getattr(process_group, name)
            for name in ("allgather_array", "allreduce_sum", "alltoallv")}
    real["from_host"] = process_arrays.batch_from_host
    real["copied"] = process_arrays.make_array_from_process_local_data

    def counting(name):
        def counted(*args, **kw):
            used[name] += 1
            return real[name](*args, **kw)
        return counted
    for name in ("allgather_array", "allreduce_sum", "alltoallv"):
        setattr(process_group, name, counting(name))
    process_arrays.batch_from_host = counting("from_host")
    process_arrays.make_array_from_process_local_data = counting("copied")
    try:
        out = fn()
    finally:
        for name in ("allgather_array", "allreduce_sum", "alltoallv"):
            setattr(process_group, name, real[name])
        process_arrays.batch_from_host = real["from_host"]
        process_arrays.make_array_from_process_local_data = real["copied"]
    return out, used


def _cpu_pmap(full, n):
    """pmap over the cpu devices of every process: each process passes its n positions and
    gets back its own; the collectives span all the positions, against the one-process named
    vmap over all of them (bit for bit: these sums are exact in any order; a sum of
    unrounded values to float32 rounding)."""
    k, count = jax.process_index(), jax.process_count()
    jnp = jax.numpy
    positions = full[:n * count]
    mine = positions[k * n:(k + 1) * n]
    rough = np.random.default_rng(2).standard_normal(positions.shape).astype(np.float32)
    perm = [(j, (j + 1) % (n * count)) for j in range(n * count)]
    cases = {"psum": lambda v: lax.psum(v, "p"), "pmean": lambda v: lax.pmean(v, "p"),
             "pmax": lambda v: lax.pmax(v, "p"), "all_gather": lambda v: lax.all_gather(v, "p"),
             "psum_scatter": lambda v: lax.psum_scatter(jnp.tile(v, n * count), "p",
                                                        tiled=True),
             "ppermute": lambda v: lax.ppermute(v, "p", perm),
             "size": lambda v: v * lax.psum(1, "p")}
    out = {}

    def record(name, got, ref, used, exact=True):
        got_host = np.asarray(got)
        want = ref[k * n:(k + 1) * n]
        out[name] = dict(
            used=used, shape=list(got.shape), held=type(got._stored).__name__,
            devices=[s.data.device.id for s in got.addressable_shards],
            same=bool(got_host.dtype == want.dtype and (
                np.array_equal(got_host, want) if exact else
                np.allclose(got_host, want, rtol=2e-6, atol=1e-6))))
    for name, fn in cases.items():
        got, used = _mpi_counted(lambda fn=fn: jax.pmap(fn, "p")(mine))
        record(name, got, np.asarray(jax.vmap(fn, axis_name="p")(positions)), used)
    got, used = _mpi_counted(lambda: jax.pmap(lambda v: lax.psum(v, "p"), "p")(
        rough[k * n:(k + 1) * n]))
    record("psum_rounding", got, np.asarray(jax.vmap(lambda v: lax.psum(v, "p"),
                                                     axis_name="p")(rough)), used, exact=False)
    # keyword arguments (mapped over their leading axis) and a static argument, as JAX's
    def keyed(v, w, *, c):
        return lax.psum(v * w, "p") + c
    got, used = _mpi_counted(lambda: jax.pmap(keyed, "p")(mine, w=mine, c=mine))
    record("keywords", got, np.asarray(jax.vmap(lambda v, w, c: keyed(v, w, c=c),
                                                axis_name="p")(positions, positions,
                                                               positions)), used)
    scaled = jax.pmap(lambda v, c: lax.pmean(v * c, "p"), "p", static_broadcasted_argnums=1)
    got, used = _mpi_counted(lambda: scaled(mine, 3))
    record("static", got, np.asarray(jax.vmap(lambda v: lax.pmean(v * 3, "p"),
                                              axis_name="p")(positions)), used)
    # a pmap on the outputs of another reads them where they are (no batch from the host)
    doubled = jax.pmap(lambda v: v * 2, "p")(mine)
    again = jax.pmap(lambda v: lax.psum(v, "p"), "p")
    got, used = _mpi_counted(lambda: again(doubled))
    record("chained", got, np.broadcast_to((positions * 2).sum(0), positions.shape), used)
    # a NumPy batch is lent to the devices for the call: a result returning it is copied out
    lent = mine.copy()
    got, used = _mpi_counted(lambda: jax.pmap(lambda v: v, "p")(lent))
    lent[:] = -7.0
    record("identity", got, positions, used)
    out["identity"]["shares"] = any(np.shares_memory(np.asarray(s.data), lent)
                                    for s in got.addressable_shards)
    # a batch of another dtype is converted, so copied in
    got, used = _mpi_counted(lambda: jax.pmap(cases["psum"], "p")(mine.astype(np.float64)))
    record("float64", got, np.asarray(jax.vmap(cases["psum"], axis_name="p")(positions)), used)
    out["traces"] = _pmap_traces(mine)
    return out


def _pmap_traces(batch):
    """How often pmap traced its function over calls with the same shapes and static value,
    a new static value, a new shape, and the first again (JAX: once per signature, 3)."""
    traces = []

    def traced(v, c):
        traces.append(v.shape)  # a Python side effect: runs when the function is traced
        return lax.psum(v * c, "p")
    mapped = jax.pmap(traced, "p", static_broadcasted_argnums=1)
    for v, c in ((batch, 2), (batch + 1, 2), (batch, 3), (batch[:, :2], 2), (batch, 2)):
        mapped(v, c).block_until_ready()
    return len(traces)


def pmap_traces(n):
    """pmap over n cpu devices of one process: how often it traced (see _pmap_traces)."""
    jax.config.update("jax_num_cpu_devices", n)
    batch = np.arange(n * 6, dtype=np.float32).reshape(n, 6)
    return dict(traces=_pmap_traces(batch))


def _kept_sums(mesh):
    """Two psums in a row over 36 MiB per device, jitted in a shard_map and in a pmap, both
    results kept: each result's block (host_memory's cache, which reuses blocks over 32 MiB)
    is its own, so the second sum never writes into the first (every value compared), and
    with one device per process the result is the MPI sum's block itself (not copied)."""
    from gpuarr.backends import host_memory
    me = jax.process_index()
    local = [d for d in mesh.devices.flat if d.process_index == me]
    size = 9 << 20
    base = (np.arange(size) % 7).astype(np.float32)
    block = np.stack([base + d.id for d in local])
    every = sum(range(mesh.size))
    want = [mesh.size * base * k + every * k for k in (1, 2)]
    sharding = NamedSharding(mesh, P("i"))
    psum = jax.jit(jax.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                                 out_specs=P()))
    pmapped = jax.pmap(lambda v: lax.psum(v, "p"), "p")
    got = {"jit": [psum(jax.make_array_from_process_local_data(sharding, (block * k).ravel()))
                   for k in (1, 2)],
           "pmap": [pmapped(block * k) for k in (1, 2)]}
    out = {}
    for name, (a, b) in got.items():
        pieces = [list(x._stored.shards.values()) for x in (a, b)]
        flat = pieces[0] + pieces[1]
        out[name] = dict(
            same=[bool(all(np.array_equal(p.reshape(-1, size)[0], w) for p in ps))
                  for ps, w in zip(pieces, want)],
            shared=any(np.shares_memory(p, q) for i, p in enumerate(flat)
                       for q in flat[i + 1:]),
            own_block=[host_memory.cached_block(p) is not None for p in flat])
    return out


def _eager_cases():
    """Eager operations on an array split over the rows of a (rows, 3) float32 value:
    elementwise, reductions within and across the split dimension, arg-reductions."""
    jnp = jax.numpy
    return {"add": lambda v: v + 1.5, "sin": jnp.sin, "mul": lambda v: v * v,
            "cast": lambda v: v.astype(np.int32), "sum1": lambda v: v.sum(1),
            "max1": lambda v: v.max(1), "sum": lambda v: v.sum(),
            "sum0": lambda v: v.sum(0), "sin_sum": lambda v: jnp.sin(v).sum(),
            "max": lambda v: v.max(), "argmax": lambda v: v.argmax(),
            "argmin0": lambda v: jnp.argmin(v, 0), "mean0": lambda v: v.mean(0),
            "addrow": lambda v: v + np.arange(3, dtype=np.float32)}


def _cpu_eager(mesh, full, x):
    """Eager operations on `x`, split over the cpu devices of every process, against the same
    operation on the whole value on one device of this process: elementwise ones, reductions
    over the unsplit dimension and the per-block ones on each device's piece, reductions
    across the split dimension with MPI between the processes; reading `x` to the host
    (`np.asarray`, `str`, `tolist`) is JAX's error."""
    from gpuarr.experimental import multihost_utils
    jnp = jax.numpy
    one = jax.device_put(full, jax.local_devices()[0])
    local = sorted(d.id for d in jax.local_devices())
    eager = {}
    for name, fn in {**_eager_cases(),
                     # per block, as JAX runs them without communication
                     "dot": lambda v: v @ np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3),
                     "slice1": lambda v: v[:, 1:], "cumsum1": lambda v: jnp.cumsum(v, axis=1),
                     "transpose": lambda v: v.T}.items():
        got, used = _mpi_counted(lambda fn=fn: fn(x))
        want = np.asarray(fn(one))
        value = multihost_utils.process_allgather(got)
        eager[name] = dict(used=used, held=type(got._stored).__name__,
                           spec=str(got.sharding.spec),
                           devices=sorted(s.data.device.id for s in got.addressable_shards),
                           same=bool(value.dtype == want.dtype and np.array_equal(value, want)))
    errors = {}
    for name, fn in {"read": lambda: np.asarray(x), "str": lambda: str(x),
                     "tolist": lambda: x.tolist()}.items():
        try:
            fn()
            errors[name] = None
        except RuntimeError as e:
            errors[name] = f"{type(e).__name__}: {e}"
    return dict(eager=eager, errors=errors, shown=repr(x), local_ids=local)


def _reshard_cases(mesh):
    """Operations on `y`, split over the rows of the Auto mesh `mesh` ('i'), that need blocks
    other devices hold: reshardings (device_put, with_sharding_constraint, jit's
    out_shardings and in_shardings, a shard_map whose in_spec splits the columns), then eager
    operations on the global value. (name -> (function, whether its one-device reference
    takes the host value: a shard_map or out_shardings over the mesh))."""
    jnp = jax.numpy

    def put(*spec):
        return NamedSharding(mesh, P(*spec))
    smap = jax.shard_map(lambda v: v * 2 + lax.psum(v.sum(0), "i"), mesh=mesh,
                         in_specs=P(None, "i"), out_specs=P(None, "i"))
    return {
        "put_rep": (lambda y: jax.device_put(y, put()), False),
        "put_col": (lambda y: jax.device_put(y, put(None, "i")), False),
        "put_back": (lambda y: jax.device_put(jax.device_put(y, put(None, "i")), put("i")),
                     False),
        "constraint": (lambda y: lax.with_sharding_constraint(y, put(None, "i")), False),
        # its reference takes the host value: an argument committed to one device and
        # out_shardings over the mesh raise JAX's ValueError (incompatible devices)
        "jit_out": (lambda y: jax.jit(lambda v: v * 3, out_shardings=put(None, "i"))(y),
                    True),
        "smap": (smap, True), "smap_jit": (jax.jit(smap), True),
        "slice": (lambda y: y[1:3], False), "index": (lambda y: y[3], False),
        "step": (lambda y: y[::2], False), "stack": (lambda y: jnp.stack([y, y + 1]), False),
        "stack1": (lambda y: jnp.stack([y, y], 1), False),
        "concat0": (lambda y: jnp.concatenate([y, y[:3]]), False),
        "dot_t": (lambda y: y.T @ y, False), "dot_yyt": (lambda y: y @ y.T, False),
        "sort0": (lambda y: jnp.sort(y, 0), False),
        "take": (lambda y: y[jnp.array([1, 5, 2])], False),
        "pad": (lambda y: jnp.pad(y, 1), False), "fft0": (lambda y: jnp.fft.fft(y, axis=0), False),
        "cumsum0": (lambda y: jnp.cumsum(y, 0), False), "median": (jnp.median, False),
    }


def _reshard_value(total):
    """The (4 * total, 4) float32 value the reshard cases split over `total` devices."""
    y = np.random.default_rng(3).standard_normal((4 * total, 4)).astype(np.float32)
    return np.round(y * 8) / 8


def _mpi_reshard(mesh, total):
    """The reshard cases on an Array split over the cpu devices of every process, against
    the same operation on the whole value on one device of this process (bit for bit), with
    the exchanges they made and the bytes this process sent over MPI."""
    from gpuarr import process_group
    from gpuarr.experimental import multihost_utils
    full = _reshard_value(total)
    y = _global(mesh, P("i"), full)
    one = jax.device_put(full, jax.local_devices()[0])
    out = {}
    real = process_group.alltoallv
    sent = [0]

    def counting(send, *args, **kw):
        sent[0] += int(np.sum(args[0]))  # the bytes for the other processes
        return real(send, *args, **kw)
    def whole(a):  # the value of an Array over every process's devices, or of one device
        if getattr(a._stored, "spans_processes", False):
            return multihost_utils.process_allgather(a)
        return np.asarray(a)
    process_group.alltoallv = counting
    try:
        for name, (fn, host) in _reshard_cases(mesh).items():
            sent[0] = 0
            got, used = _mpi_counted(lambda fn=fn: fn(y))
            want, value = whole(fn(full if host else one)), whole(got)
            out[name] = dict(
                used=used, sent=sent[0] // 2,  # _mpi_counted calls it twice
                spec=str(got.sharding.spec), held=type(got._stored).__name__,
                same=bool(value.dtype == want.dtype and value.shape == want.shape
                          and np.array_equal(value, want)),
                shapes=sorted({tuple(s.data.shape) for s in got.addressable_shards}))
    finally:
        process_group.alltoallv = real
    return out


def reshard_specs(n):
    """The shardings of the reshard cases on one process with n cpu devices (run with JAX,
    whose XLA propagates them)."""
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    y = jax.device_put(_reshard_value(n), NamedSharding(mesh, P("i")))
    return {name: str(fn(y).sharding.spec) for name, (fn, _) in _reshard_cases(mesh).items()}


def mlp(n):
    """A data-parallel MLP: 20 steps of shard_map with pmean of the gradients."""
    _init_distributed(n)
    return _mlp()


def _mlp():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 8)).astype(np.float32)
    ys = np.sin(xs.sum(1, keepdims=True)).astype(np.float32)
    params = {"w1": rng.standard_normal((8, 16)).astype(np.float32) * 0.3,
              "b1": np.zeros(16, np.float32),
              "w2": rng.standard_normal((16, 1)).astype(np.float32) * 0.3,
              "b2": np.zeros(1, np.float32)}
    mesh = jax.make_mesh((jax.device_count(),), ("data",))

    def loss_fn(p, x, y):
        h = jax.numpy.tanh(x @ p["w1"] + p["b1"])
        return jax.numpy.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    def local_step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        g = lax.pmean(g, "data")
        return lax.pmean(loss, "data"), jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

    # check_vma=False: each device's gradient is its own, which the pmean averages (with
    # check_vma, JAX's gradient of the replicated parameters is already the devices' sum)
    step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                                 out_specs=(P(), P()), check_vma=False))
    x, y = _global(mesh, P("data"), xs), _global(mesh, P("data"), ys)
    losses = []
    start = time.perf_counter()
    for _ in range(20):
        loss, params = step(params, x, y)
        losses.append(float(loss))
    return dict(losses=losses, devices=jax.device_count(), seconds=time.perf_counter() - start,
                process=jax.process_index(),
                gradient_bytes=sum(np.asarray(v).nbytes for v in params.values()))


def fault(kind):
    """Faults in a two-process run: each must raise, never hang."""
    jax.config.update("jax_num_cpu_devices", 1)
    jax.distributed.initialize(cluster_detection_method="mpi4py", heartbeat_timeout_seconds=2)
    me = jax.process_index()
    mesh = jax.make_mesh((2,), ("i",))
    try:
        if kind == "twice":
            jax.distributed.initialize()
        elif kind == "shapes":
            local = np.ones(3 if me == 0 else 4, np.float32)
            from gpuarr.experimental import multihost_utils
            multihost_utils.process_allgather(local)
        elif kind == "absent":  # process 1 never joins the collective
            if me == 1:
                time.sleep(5)
                emit(process=me, error=None)
                return
            x = _global(mesh, P("i"), np.ones((2, 3), np.float32))
            jax.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                          out_specs=P())(x)
        elif kind == "dies":  # process 1 dies before the collective
            if me == 1:
                os._exit(3)
            x = _global(mesh, P("i"), np.ones((2, 3), np.float32))
            jax.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                          out_specs=P())(x)
        elif kind == "dies_in_transfer":  # process 1 dies with its 64 MiB psum under way
            if me == 1:
                from gpuarr import process_group
                bounded_wait = process_group.wait

                def wait(request, what, moving=False):  # exits with the data's MPI call posted
                    if moving:
                        os._exit(3)
                    bounded_wait(request, what, moving)
                process_group.wait = wait
            x = _global(mesh, P("i"), np.ones((2, 1 << 24), np.float32))
            started = time.monotonic()
            try:
                jax.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                              out_specs=P())(x)
            finally:
                waited = time.monotonic() - started
        emit(process=me, error=None)
    except Exception as e:  # noqa: BLE001 - the test reads the class and message
        emit(process=me, error=type(e).__name__, message=str(e),
             waited=locals().get("waited"))
        if kind == "dies_in_transfer":  # MPI cannot finalize with a process gone
            os._exit(0)


def _vma_cases():
    """shard_map bodies holding cond, while_loop, scan and fori_loop, with collectives inside
    and around them."""
    def psum(u):
        return lax.psum(u, "i")
    return {
        "cond_psum_both": lambda v: lax.cond(True, psum, lambda u: psum(u * 2), v),
        "cond_psum_one": lambda v: lax.cond(True, psum, lambda u: u * 2, v),
        "cond_after_psum": lambda v: lax.cond(True, lambda u: u + 1, lambda u: u * 2, psum(v)),
        "cond_varying_pred": lambda v: lax.cond(v[0] > 0, lambda u: u + 1, lambda u: u * 2,
                                                psum(v)),
        "switch_axis_index": lambda v: lax.switch(1, [lambda u: u, lambda u: u + 1,
                                                      lambda u: u + lax.axis_index("i")],
                                                  psum(v)),
        "cond_tuple": lambda v: lax.cond(True, lambda u: (psum(u), u),
                                         lambda u: (u, psum(u)), v)[0],
        "while_psum": lambda v: lax.while_loop(lambda c: c[0] < 3,
                                               lambda c: (c[0] + 1, psum(c[1])), (0, v))[1],
        "while_invariant": lambda v: lax.while_loop(lambda c: c[0] < 3,
                                                    lambda c: (c[0] + 1, c[1] * 2),
                                                    (0, psum(v)))[1],
        "while_adds_input": lambda v: lax.while_loop(lambda c: c[0] < 3,
                                                     lambda c: (c[0] + 1, c[1] + v),
                                                     (0, psum(v)))[1],
        "while_varying_pred": lambda v: lax.while_loop(lambda c: c[0] < v[0],
                                                       lambda c: (c[0] + 1, c[1]),
                                                       (0.0, psum(v)))[1],
        "scan_psum_carry": lambda v: lax.scan(lambda c, _: (psum(c), None), v, None,
                                              length=2)[0],
        "scan_invariant": lambda v: lax.scan(lambda c, _: (c * 2, c), psum(v), None,
                                             length=2)[1],
        "scan_varying_ys": lambda v: lax.scan(lambda c, _: (c, c + v), psum(v), None,
                                              length=2)[1],
        "scan_varying_xs": lambda v: lax.scan(lambda c, a: ((c[0] + a, c[1]), a),
                                              (0.0, 1.0), v)[0][1],
        "scan_psum_xs": lambda v: lax.scan(lambda c, a: (c + psum(a), a), 0.0, v)[0],
        "fori_psum": lambda v: lax.fori_loop(0, 3, lambda i, c: psum(c) / 2, v),
        "fori_invariant": lambda v: lax.fori_loop(0, 3, lambda i, c: c * 2, psum(v)),
        "fori_adds_input": lambda v: lax.fori_loop(0, 3, lambda i, c: c + v, psum(v)),
        "fori_axis_index": lambda v: lax.fori_loop(0, 3, lambda i, c: c + lax.axis_index("i"),
                                                   psum(v)),
    }


def vma_control_flow(n):
    """check_vma through control flow on n cpu devices: each case's value, or its error's
    class and message, with out_specs=P() (and the failing ones again with check_vma=False)."""
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    x = np.arange(2.0 * n, dtype=np.float32)
    out = {}
    for name, f in _vma_cases().items():
        try:
            got = jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P())(x)
            out[name] = ["ok", np.asarray(got).tolist()]
        except (TypeError, ValueError) as e:
            unchecked = jax.shard_map(lambda v, f=f: jax.numpy.ravel(f(v)), mesh=mesh,
                                      in_specs=P("i"), out_specs=P("i"), check_vma=False)(x)
            out[name] = [type(e).__name__, str(e), np.asarray(unchecked).tolist()]
    return out


def _vma_grad_cases(n, mlp_loss, params, x, y, w):
    """(function, in_specs, out_specs, check_vma, args) of the gradients inside a shard_map
    body that vma_grads compares with JAX: replicated parameters meeting split data."""
    jnp = jax.numpy
    spec_p = jax.tree_util.tree_map(lambda _: P(), params)
    data = (spec_p, P("i"), P("i"))
    every = lambda g: jax.tree_util.tree_map(lambda a: a[None], g)  # each device's own value

    def step(p, x, y, mean=True):
        loss, g = jax.value_and_grad(mlp_loss)(p, x, y)
        return ((lax.pmean(loss, "i"), lax.pmean(g, "i")) if mean
                else (lax.psum(loss, "i"), g))

    def jvp(p, x, y):
        t = jax.tree_util.tree_map(jnp.ones_like, p)
        return jnp.stack(jax.jvp(lambda q: mlp_loss(q, x, y), (p,), (t,)))[None]

    def vjp(p, x, y):
        loss, pull = jax.vjp(lambda q: mlp_loss(q, x, y), p)
        return pull(jnp.ones_like(loss))[0]

    def scan_layers(w, x):
        def loss(w):
            return lax.scan(lambda h, wi: (jnp.tanh(h * wi), None), x, jnp.stack([w, w * 2]))[0].sum()
        return jax.grad(loss)(w)

    def scan_carry(w, x):
        def loss(w):
            c0 = lax.pcast(jnp.float32(0), "i", to="varying")
            return lax.scan(lambda c, xi: (c + jnp.sum(jnp.sin(xi * w)), None), c0, x)[0]
        value, g = jax.value_and_grad(loss)(w)
        return lax.psum(value, "i"), g

    def fori(w, x):
        return jax.grad(lambda w: lax.fori_loop(0, 3, lambda i, h: jnp.sin(h * w), x).sum())(w)

    def collectives(w, x):
        shift = [(k, (k + 1) % n) for k in range(n)]
        return (lax.psum(w, "i"), lax.pmean(w, "i"),
                jax.grad(lambda v: lax.psum(v, "i").sum())(w),
                jax.grad(lambda v: lax.all_gather(v, "i").sum())(w),
                jax.grad(lambda v: (lax.ppermute(v, "i", shift) * x[0]).sum())(w),
                jax.grad(lambda v: lax.psum_scatter(jnp.tile(v, n), "i", tiled=True).sum())(w),
                jax.grad(lambda v: (v * lax.axis_index("i")).sum())(w))

    def pcast(w):
        return lax.pcast(w, "i", to="varying") * 2
    return {
        "step_pmean": (step, data, (P(), spec_p), True, (params, x, y)),
        "step_psum_loss": (lambda *a: step(*a, mean=False), data, (P(), spec_p), True,
                           (params, x, y)),
        "step_jit": (jax.jit(lambda *a: step(*a, mean=False)), data, (P(), spec_p), True,
                     (params, x, y)),
        "step_unchecked": (lambda *a: every(jax.grad(mlp_loss)(*a)), data,
                           jax.tree_util.tree_map(lambda _: P("i"), params), False,
                           (params, x, y)),
        "grad_of_psum": (lambda p, x, y: jax.grad(lambda q: lax.psum(mlp_loss(q, x, y), "i"))(p),
                         data, spec_p, True, (params, x, y)),
        "grad_of_pmean": (lambda p, x, y: jax.grad(
            lambda q: lax.pmean(mlp_loss(q, x, y), "i"))(p), data, spec_p, True, (params, x, y)),
        "grad_of_split_input": (lambda p, x, y: jax.grad(mlp_loss, argnums=1)(p, x, y), data,
                                P("i"), True, (params, x, y)),
        "jvp": (jvp, data, P("i"), True, (params, x, y)),
        "vjp": (vjp, data, spec_p, True, (params, x, y)),
        "scan_layers": (scan_layers, (P(), P("i")), P(), True, (w, x)),
        "scan_carry": (scan_carry, (P(), P("i")), (P(), P()), True, (w, x)),
        "fori_loop": (fori, (P(), P("i")), P(), True, (w, x)),
        "collectives": (collectives, (P(), P("i")), (P(),) * 3 + (P(), P(), P(), P()), True,
                        (w, x)),
        "pcast": (pcast, P(), P("i"), True, (w,)),
        "pcast_unchecked": (pcast, P(), P("i"), False, (w,)),
        "no_pmean_error": (lambda p, x, y: jax.grad(mlp_loss, argnums=1)(p, x, y).sum(), data,
                           P(), True, (params, x, y)),
    }


def vma_grads(n):
    """Gradients inside shard_map bodies (check_vma on and off) over the cpu devices of every
    process (n per process): each case's values, or its error's class and message, and the
    gradient of a shard_map taken from outside (jitted too)."""
    if LIB == "jax":
        from jax.experimental import multihost_utils as mh
    else:
        from gpuarr.experimental import multihost_utils as mh
    _init_distributed(n)
    jnp = jax.numpy
    total = jax.device_count()
    mesh = jax.make_mesh((total,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    rng = np.random.default_rng(3)
    params = {"w1": rng.standard_normal((3, 5)).astype(np.float32),
              "b1": rng.standard_normal(5).astype(np.float32),
              "w2": rng.standard_normal((5, 2)).astype(np.float32)}
    xs = rng.standard_normal((4 * total, 3)).astype(np.float32)
    ys = rng.standard_normal((4 * total, 2)).astype(np.float32)
    x, y = _global(mesh, P("i"), xs), _global(mesh, P("i"), ys)
    w = np.array([0.5, -1.0, 2.0], np.float32)

    def mlp_loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    def read(a):  # the global value, also of an output spanning processes
        a = np.asarray(mh.process_allgather(a, tiled=True)) if not a.is_fully_addressable \
            else np.asarray(a)
        return [a.round(5).tolist(), a.dtype.name, list(a.shape)]
    out = {}
    for name, (f, ins, outs, check, args) in _vma_grad_cases(total, mlp_loss, params, x, y,
                                                             w).items():
        try:
            got = jax.shard_map(f, mesh=mesh, in_specs=ins, out_specs=outs,
                                check_vma=check)(*args)
            out[name] = ["ok", [read(a) for a in jax.tree_util.tree_leaves(got)]]
        except (TypeError, ValueError) as e:
            out[name] = [type(e).__name__, str(e)]

    def outer(w, x):
        return jax.shard_map(lambda w, x: lax.psum(jnp.sum(jnp.sin(x * w)), "i"), mesh=mesh,
                             in_specs=(P(), P("i")), out_specs=P())(w, x)
    with jax.set_mesh(mesh):
        out["grad_outside"] = ["ok", [read(jax.grad(outer)(w, x)),
                                      read(jax.jit(jax.grad(outer))(w, x)),
                                      read(jax.grad(outer, argnums=1)(w, x))]]
    return dict(cases=out, devices=total)


def manual_axes(n):
    """shard_map manual over a subset of the mesh axes (`axis_names`), and `check_vma` on
    outputs whose out_specs claim replication, on a 2 x (n/2) mesh of cpu devices."""
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((2, n // 2), ("i", "j"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x = np.arange(4 * n * 4, dtype=np.float32).reshape(4 * n, 4)

    def scaled(v):
        return v * (lax.axis_index("i") + 1).astype(v.dtype) + lax.psum(v, "i")

    values, specs, errors = {}, {}, {}
    for name, (fn, in_spec, out_spec, kw) in {
            "subset": (scaled, P("i"), P("i"), dict(axis_names={"i"})),
            "subset_psum": (lambda v: lax.psum(v.sum(0), "i"), P("i"), P(),
                            dict(axis_names={"i"})),
            "unchecked": (lambda v: v * 2, P("i"), P(), dict(check_vma=False)),
            "checked_psum": (lambda v: lax.psum(v, "i"), P("i"), P(), {}),
            "gather": (lambda v: lax.all_gather(v, "j", axis=1, tiled=True), P("i", "j"),
                       P("i", "j"), {}),
    }.items():
        f = jax.shard_map(fn, mesh=mesh, in_specs=in_spec, out_specs=out_spec, **kw)
        out = f(x)
        values[name] = [np.asarray(out).tolist(), np.asarray(jax.jit(f)(x)).tolist()]
        specs[name] = str(out.sharding.spec)
    for name, (fn, out_spec, spec_in) in {
            "varying_out": (lambda v: v * 2, P(), P("i")),
            "two_axes": (lambda v: v * lax.axis_index("j"), P("i"), P("i")),
            "after_ppermute": (lambda v: lax.ppermute(v, "j", [(0, 1), (1, 0)]), P("i"),
                               P("i")),
            "after_gather": (lambda v: lax.all_gather(v, "j", axis=1, tiled=True), P("i"),
                             P("i", "j")),
    }.items():
        try:
            jax.shard_map(fn, mesh=mesh, in_specs=spec_in, out_specs=out_spec)(x)
            errors[name] = None
        except Exception as e:  # noqa: BLE001 - the test compares class and message
            errors[name] = [type(e).__name__, str(e)]
    return dict(values=values, specs=specs, errors=errors)


def gpu_shards(n):
    """An array put over n cuda devices of the CuPy stand-in: each GPU holds its own piece
    and none the whole value (the backend's per-device pool counts the bytes in use)."""
    import cupy
    from cupy import _standin

    from gpuarr import placement
    devices = jax.devices("cuda")[:n]
    mesh = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=devices)
    platform = placement.platform_of(devices[0])

    def in_use():
        out = []
        for d in range(n):
            with cupy.cuda.Device(d):
                out.append(platform.context(d).pool.used_bytes())
        return out

    full = np.arange(256 * n * 64, dtype=np.float32).reshape(256 * n, 64)
    before = in_use()
    x = jax.device_put(full, NamedSharding(mesh, P("i")))
    x.block_until_ready()
    placed = [a - b for a, b in zip(in_use(), before)]
    shards = [[str(s.device), str(s.data.device), list(s.data.shape),
               bool(np.array_equal(np.asarray(s.data), full[s.index]))]
              for s in x.addressable_shards]
    summed = jax.jit(jax.shard_map(lambda v: lax.psum(v.sum(0), "i"), mesh=mesh,
                                   in_specs=P("i"), out_specs=P()))(x)
    double = jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    double(x).block_until_ready()  # compiled, its constants on each GPU
    _standin.counters.reset()
    held = in_use()
    doubled = double(x)
    doubled.block_until_ready()
    # eager shard_map: no byte through the host, each GPU holds its piece of the result
    eager = dict(moved=[_standin.counters.h2d_bytes, _standin.counters.d2h_bytes],
                 grew=[a - b for a, b in zip(in_use(), held)],
                 stored=type(doubled._stored).__name__, spec=str(doubled.sharding.spec),
                 devices=[str(s.data.device) for s in doubled.addressable_shards],
                 replicated=[str(s.data.device) for s in jax.shard_map(
                     lambda v: lax.psum(v.sum(0), "i"), mesh=mesh, in_specs=P("i"),
                     out_specs=P())(x).addressable_shards])
    # eager elementwise operations, and reductions over unsplit dimensions, run on each GPU's
    # piece, bit for bit the one-GPU values
    rnd = jax.device_put(np.random.default_rng(0).standard_normal(full.shape).astype(np.float32),
                         NamedSharding(mesh, P("i")))
    whole = jax.device_put(rnd, devices[0])
    two = jax.numpy.float32(2)  # a scalar held on the first GPU
    per_piece = {}
    for name, fn in {"add": lambda v: v + 1.5, "sin": jax.numpy.sin,
                     "mul": lambda v: v * v, "exp": lambda v: jax.numpy.exp(v) * 2.5,
                     "cast": lambda v: v.astype(np.int32), "sum": lambda v: v.sum(1),
                     "max": lambda v: v.max(1), "mean": lambda v: v.mean(1),
                     "gpu_scalar": lambda v, s=two: v * s}.items():
        fn(rnd).block_until_ready()
        _standin.counters.reset()
        held = in_use()
        out = fn(rnd)
        out.block_until_ready()
        per_piece[name] = [
            type(out._stored).__name__, str(out.sharding.spec),
            [a - b for a, b in zip(in_use(), held)] == [out.nbytes // n] * n,
            _standin.counters.d2h_bytes + _standin.counters.h2d_bytes <= 8 * n,
            bool(np.array_equal(np.asarray(out), np.asarray(fn(whole)))), str(out.dtype)]
        del out
    eager["per_piece"] = per_piece
    del two, fn  # the scalar on the first GPU, held by the last case's default
    across = _gpu_across(rnd, whole, in_use, n)
    per_block = _gpu_per_block(mesh, rnd, devices, n)
    jit_split = _gpu_jit_split(mesh, rnd, whole, devices, in_use, n)
    del rnd, whole
    y = x + 1
    values = [bool(np.array_equal(np.asarray(x), full)),
              bool(np.array_equal(np.asarray(y), full + 1)),
              bool(np.allclose(np.asarray(summed), full.sum(0))),
              bool(np.array_equal(np.asarray(doubled), full * 2))]
    del y, summed, doubled
    return dict(piece_bytes=full.nbytes // n, placed=placed, shards=shards, values=values,
                after=[a - b for a, b in zip(in_use(), before)], spec=str(x.sharding.spec),
                eager=eager, across=across, jit_split=jit_split, per_block=per_block)


def _moved_and_nccl():
    """Bytes through the host since the last reset, and the NCCL calls issued."""
    from cupy import _standin
    c = _standin.counters
    return c.h2d_bytes + c.d2h_bytes, {k: v for k, v in c.library.items() if k.startswith("nccl")}


def _gpu_across(rnd, whole, in_use, n):
    """Eager reductions and argmax/argmin across the split dimension of `rnd` (split over n
    GPUs), and a broadcast row added to it: per GPU with a combine over NCCL. Per operation:
    how the result is held, its spec, the bytes through the host, the NCCL calls, its
    devices, the largest difference from the one-GPU result (relative to its largest
    magnitude), and whether dtypes agree."""
    from cupy import _standin
    jnp = jax.numpy
    row = np.arange(rnd.shape[1], dtype=np.float32)
    out = {}
    for name, fn in {"sum": lambda v: v.sum(), "sum0": lambda v: v.sum(0),
                     "mean": lambda v: v.mean(), "max0": lambda v: v.max(0),
                     "min": lambda v: v.min(), "argmax": lambda v: v.argmax(),
                     "argmax0": lambda v: v.argmax(0), "argmin0": lambda v: jnp.argmin(v, 0),
                     "addrow": lambda v: v + row}.items():
        fn(rnd).block_until_ready()
        _standin.counters.reset()
        r = fn(rnd)
        r.block_until_ready()
        moved, calls = _moved_and_nccl()
        ref = fn(whole)
        out[name] = [type(r._stored).__name__, str(r.sharding.spec), moved, calls,
                     sorted(str(s.data.device) for s in r.addressable_shards),
                     float(np.max(np.abs(np.asarray(r, np.float64) - np.asarray(ref)))
                           / max(1.0, float(np.max(np.abs(np.asarray(ref)))))),
                     r.dtype == ref.dtype]
    return out


def _gpu_per_block(mesh, rnd, devices, n):
    """_per_block_cases on n GPUs (weights replicated, held by each GPU): per operation, how
    the result is held, its spec, the bytes through the host, the NCCL calls, its devices,
    whether it equals the one-GPU result bit for bit, and its dtype; "host_weights": `x @ w`
    with w a NumPy array ([bytes through the host, w's bytes])."""
    from cupy import _standin
    rng = np.random.default_rng(3)
    full = np.asarray(rnd)
    w = rng.standard_normal((full.shape[1], 8)).astype(np.float32)
    ops = _operands(full, rng.standard_normal((8 * n, 6, 2)).astype(np.float32), w, mesh,
                    lambda v, spec: jax.device_put(v, NamedSharding(mesh, spec or P())))
    ops["full"] = ops["xr"]  # no host operand: each GPU holds the replicated value
    one = {k: jax.device_put(np.asarray(v), devices[0]) for k, v in ops.items()}
    out = {}
    for name, fn in _per_block_cases().items():
        jax.block_until_ready(fn(ops))
        _standin.counters.reset()
        r = fn(ops)
        r.block_until_ready()
        moved, calls = _moved_and_nccl()
        ref = fn(one)
        out[name] = [type(r._stored).__name__, str(r.sharding.spec), moved, calls,
                     [str(s.data.device) for s in r.addressable_shards],
                     bool(np.array_equal(np.asarray(r), np.asarray(ref))), str(r.dtype),
                     str(ref.dtype)]
    (ops["x"] @ w).block_until_ready()
    _standin.counters.reset()
    r = ops["x"] @ w
    r.block_until_ready()
    out["host_weights"] = [_moved_and_nccl()[0], w.nbytes, type(r._stored).__name__,
                           bool(np.array_equal(np.asarray(r), np.asarray(one["x"] @ w)))]
    return out


def _gpu_jit_split(mesh, rnd, whole, devices, in_use, n):
    """jit's data-parallel case on n GPUs: a value-and-gradient step on batch-split rows and
    replicated weights, and an elementwise jit, run per GPU on the pieces where they are; and
    jit of a shard_map, alone and among elementwise work. Their outputs stay as pieces on the
    GPUs."""
    from cupy import _standin
    jnp = jax.numpy
    w = np.linspace(-1, 1, rnd.shape[1] * 3, dtype=np.float32).reshape(rnd.shape[1], 3)
    wr = jax.device_put(w, NamedSharding(mesh, P()))

    def loss(a, v):
        return jnp.mean(jnp.tanh(v @ a) ** 2)
    step = jax.jit(jax.value_and_grad(loss))
    twice = jax.jit(lambda v: jnp.tanh(v) * 2)
    summed = jax.jit(jax.shard_map(lambda v: lax.psum(v.sum(0), "i"), mesh=mesh,
                                   in_specs=P("i"), out_specs=P()))
    doubled = jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    around = jax.jit(lambda v: jnp.tanh(doubled(v * 3) + 1.0))  # a shard_map among other work
    then_matmul = jax.jit(lambda v, a: jnp.tanh(doubled(v) @ a + 1.0))
    out = {}
    for name, fn, ref in (("step", lambda: step(wr, rnd),
                           lambda: step(jax.device_put(w, devices[0]), whole)),
                          ("elementwise", lambda: twice(rnd), lambda: twice(whole)),
                          ("shard_map", lambda: summed(rnd), lambda: whole.sum(0)),
                          ("around_shard_map", lambda: around(rnd),
                           lambda: jnp.tanh(whole * 3 * 2 + 1.0)),
                          ("matmul_after_shard_map", lambda: then_matmul(rnd, wr),
                           lambda: jnp.tanh((whole * 2) @ w + 1.0))):
        jax.block_until_ready(fn())
        _standin.counters.reset()
        held = in_use()
        got = fn()
        jax.block_until_ready(got)
        moved, calls = _moved_and_nccl()
        launches, library = _standin.counters.launches, dict(_standin.counters.library)
        grew = [a - b for a, b in zip(in_use(), held)]
        leaves, want = jax.tree.leaves(got), jax.tree.leaves(ref())
        out[name] = dict(
            moved=moved, nccl=calls, grew=grew, nbytes=[a.nbytes for a in leaves],
            launches=launches, library=library,
            held=[type(a._stored).__name__ for a in leaves],
            specs=[str(a.sharding.spec) for a in leaves],
            devices=[[str(s.data.device) for s in a.addressable_shards] for a in leaves],
            diff=[float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                  for a, b in zip(leaves, want)],
            same=[bool(np.array_equal(np.asarray(a), np.asarray(b)))
                  for a, b in zip(leaves, want)])
    return out


def _pieces_owned(a) -> bool:
    """Whether no two addressable shards of `a` share memory (each device owns its piece)."""
    data = [np.asarray(s.data) for s in a.addressable_shards]
    return not any(np.shares_memory(p, q) for i, p in enumerate(data) for q in data[i + 1:])


def _per_block_cases():
    """Eager operations JAX runs on each device's blocks without communication, on `a`: x
    (rows split), xc (columns split), x3 (3-D, first dimension split), xr (replicated), w
    (unsplit weights), wc (weights' columns split) and full (x's value on the host)."""
    jnp = jax.numpy
    return {
        "matmul": lambda a: a["x"] @ a["w"], "dot": lambda a: jnp.dot(a["x"], a["w"]),
        "matmul_wc": lambda a: a["xr"] @ a["wc"], "dot_wc": lambda a: jnp.dot(a["full"], a["wc"]),
        "slice": lambda a: a["x"][:, 1:4], "index": lambda a: a["x"][:, 2],
        "index_neg": lambda a: a["x"][:, -1], "slice_step": lambda a: a["x"][:, ::2],
        "slice3": lambda a: a["x3"][:, 2:5, 1], "slice_col": lambda a: a["xc"][2:5],
        "lax_slice": lambda a: lax.slice(a["x"], (0, 1), (a["x"].shape[0], 5)),
        "sort": lambda a: jnp.sort(a["x"], axis=1), "argsort": lambda a: jnp.argsort(a["x"], 1),
        "sort_col": lambda a: jnp.sort(a["xc"], axis=0), "lax_sort": lambda a: lax.sort(a["x"]),
        "cumsum": lambda a: jnp.cumsum(a["x"], axis=1),
        "cumprod": lambda a: jnp.cumprod(a["x"], axis=1),
        "lax_cumsum": lambda a: lax.cumsum(a["x"], axis=1, reverse=True),
        "cummax": lambda a: lax.cummax(a["x"], axis=1),
        "transpose": lambda a: a["x"].T, "transpose3": lambda a: jnp.transpose(a["x3"], (2, 0, 1)),
        "concat": lambda a: jnp.concatenate([a["x"], a["x"] * 2], axis=1),
    }


def _operands(full, x3, w, mesh, put):
    """The operands of _per_block_cases, placed by `put(value, spec)` (spec None: unsplit)."""
    return dict(full=full, x=put(full, P("i")), xc=put(full, P(None, "i")),
                x3=put(x3, P("i")), xr=put(full, P()), w=put(w, None), wc=put(w, P(None, "i")))


def _described(a) -> list:
    """[spec, dtype, each shard's shape, value] of an Array."""
    spec = getattr(a.sharding, "spec", None)
    return [None if spec is None else str(spec), str(a.dtype),
            [list(s.data.shape) for s in a.addressable_shards], np.asarray(a).tolist()]


def _around_cases(mesh):
    """jitted functions holding shard_maps among other operations."""
    jnp = jax.numpy
    doubled = jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    summed = jax.shard_map(lambda v: lax.psum(v.sum(0), "i"), mesh=mesh, in_specs=P("i"),
                           out_specs=P())
    w = np.linspace(-1, 1, 18, dtype=np.float32).reshape(6, 3)
    return {"around": lambda v: jnp.tanh(doubled(v * 3) + 1.0),
            "matmul_after": lambda v: jnp.tanh(doubled(v) @ w + 1.0),
            "sum_after": lambda v: jnp.sin(summed(v)) * 2,
            "two_maps": lambda v: doubled(jnp.cos(doubled(v))).sum(1),
            "outputs": lambda v: (doubled(v) + 1, summed(v * 2), v.T),
            # nested: the branch taken at run time, and an inner jit
            "cond_map": lambda v: lax.cond(v.sum() > -1e9, doubled, lambda u: u * 3, v) + 1.0,
            "cond_other": lambda v: lax.cond(v.sum() < -1e9, doubled, lambda u: u * 3, v),
            "cond_summed": lambda v: lax.cond(v.sum() > -1e9, summed, lambda u: u.sum(0), v),
            "inner_jit": lambda v: jnp.sin(jax.jit(doubled)(v))}


def split_ops(n):
    """On n cpu devices, over an Auto and an Explicit mesh: eager operations JAX runs per
    device without communication (_per_block_cases), and jitted functions holding shard_maps
    among other operations. Per result: spec, dtype, shard shapes and value; for gpuarr also
    how it is held and whether it equals the one-device result bit for bit. `errors`: what
    combining a split array with one committed to a single device raises."""
    jax.config.update("jax_num_cpu_devices", n)
    rng = np.random.default_rng(2)
    full = rng.standard_normal((8 * n, 6)).astype(np.float32)
    x3 = rng.standard_normal((4 * n, 6, 2)).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    jnp = jax.numpy
    out, held, same, errors = {}, {}, {}, {}
    for kind, types in (("auto", (jax.sharding.AxisType.Auto,)),
                        ("explicit", (jax.sharding.AxisType.Explicit,))):
        mesh = jax.make_mesh((n,), ("i",), axis_types=types)
        ops = _operands(full, x3, w, mesh, lambda v, spec: v if spec is None else
                        jax.device_put(v, NamedSharding(mesh, spec)))
        one = {k: v if k == "full" else jax.numpy.asarray(np.asarray(v)) for k, v in ops.items()}
        results = {f"{kind}/{name}": (fn(ops), lambda fn=fn: fn(one))
                   for name, fn in _per_block_cases().items()}
        x = ops["x"]
        for name, fn in _around_cases(mesh).items():
            got = jax.tree.leaves(jax.jit(fn)(x))
            for i, r in enumerate(got):
                results[f"{kind}/jit_{name}/{i}"] = (r, None)
        on_one = jax.device_put(w, jax.devices()[1])  # committed to one device of the mesh
        for name, fn in (("add", lambda: x[:, :4] + on_one[0]), ("matmul", lambda: x @ on_one),
                         ("concat", lambda: jnp.concatenate([x[:, :4], on_one], 0))):
            try:
                errors[f"{kind}/{name}"] = [None, list(fn().shape)]
            except ValueError as e:  # JAX's message names a jitted computation: its start
                errors[f"{kind}/{name}"] = ["ValueError", str(e)[:len("Received incompatible")]]
        for name, (r, ref) in results.items():
            out[name] = _described(r)
            if LIB == "gpuarr":
                held[name] = type(r._stored).__name__
                if ref is not None:
                    same[name] = bool(np.array_equal(np.asarray(r), np.asarray(ref())))
    return dict(arrays=out, held=held, same=same, errors=errors)


def cpu_shards(n):
    """Arrays over n cpu devices: what device_put, shard_map, pmap, jit and eager operations
    give (sharding spec, dtype, each shard's shape, whether each device owns its piece, the
    value), and for gpuarr how each is held and whether it equals the one-device result bit
    for bit."""
    jax.config.update("jax_num_cpu_devices", n)
    mesh = jax.make_mesh((n,), ("i",))
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    full = rng.standard_normal((8 * n, 6)).astype(np.float32)
    full[3, 2] = full[5 * n, 4] = 9.0  # argmax ties across devices: the first index wins
    row = np.arange(6, dtype=np.float32)
    w = np.linspace(-1, 1, 18, dtype=np.float32).reshape(6, 3)
    split, rep = NamedSharding(mesh, P("i")), NamedSharding(mesh, P())
    x = jax.device_put(full, split)
    one = jnp.asarray(full)  # the one-device path
    eager = {"add": lambda v: v + 1.5, "sin": jnp.sin, "addrow": lambda v: v + row,
             "where": lambda v: jnp.where(v > 0, v, 0.0), "cast": lambda v: v.astype(np.int32),
             "sum": lambda v: v.sum(), "sum0": lambda v: v.sum(0), "sum1": lambda v: v.sum(1),
             "max0": lambda v: v.max(0), "min": lambda v: v.min(), "mean": lambda v: v.mean(),
             "argmax": lambda v: v.argmax(), "argmax0": lambda v: v.argmax(0),
             "argmin0": lambda v: jnp.argmin(v, 0), "reshape": lambda v: v.reshape(-1)}
    made = {"put": x, "put_replicated": jax.device_put(full, rep),
            "shard_map": jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"),
                                       out_specs=P("i"))(x),
            "shard_map_psum": jax.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh,
                                            in_specs=P("i"), out_specs=P())(x),
            "pmap": jax.pmap(lambda v: lax.psum(v, "p") * v, axis_name="p")(
                full.reshape(n, 8, 6)),
            "jit": jax.jit(lambda v: jnp.tanh(v) * 2)(x),
            "jit_shard_map": jax.jit(jax.shard_map(lambda v: lax.psum(v.sum(0), "i"),
                                                   mesh=mesh, in_specs=P("i"),
                                                   out_specs=P()))(x),
            "jit_in_shardings": jax.jit(lambda a, v: jnp.tanh(v @ a), in_shardings=(rep, split))(
                w, full)}
    made.update((name, fn(x)) for name, fn in eager.items())
    out = {}
    for name, a in made.items():
        spec = getattr(a.sharding, "spec", None)
        out[name] = [None if name == "pmap" else str(spec), str(a.dtype),
                     [list(s.data.shape) for s in a.addressable_shards], _pieces_owned(a),
                     np.asarray(a).tolist()]
    held = {}
    if LIB == "gpuarr":
        held = {name: type(a._stored).__name__ for name, a in made.items()}
        held["same"] = {name: bool(np.array_equal(np.asarray(made[name]), np.asarray(fn(one))))
                        for name, fn in eager.items()}
        held["same"]["jit"] = bool(np.array_equal(
            np.asarray(made["jit"]), np.asarray(jax.jit(lambda v: jnp.tanh(v) * 2)(one))))
    return dict(arrays=out, held=held)


def nccl_ids(n):
    """Processes with one GPU of the CuPy stand-in each: the NCCL unique id of a group of
    GPUs spanning them is made by the group's first process and carried over MPI, and each
    process sets up its own rank with it (gpu_processes runs collectives over it)."""
    from cupy.cuda import nccl as standin_nccl

    from gpuarr.backends import nccl
    from gpuarr.experimental import multihost_utils
    _init_distributed(n)
    processes = tuple(range(jax.process_count()))
    comms = nccl.communicators((0,) * len(processes), processes)
    ((rank, comm),) = comms.items()
    (uid,) = standin_nccl._cliques
    ids = multihost_utils.process_allgather(np.array(uid, np.int64))
    # Ranks of two processes disagreeing on an all-reduce's count: NCCL's invalid argument
    # in both, when their streams reach it.
    import cupy
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.ones(4, cupy.float32)
    comm.allReduce(x.data.ptr, x.data.ptr, 3 + rank, standin_nccl.NCCL_FLOAT32,
                   standin_nccl.NCCL_SUM, stream.ptr)
    try:
        stream.synchronize()
        mismatch = None
    except standin_nccl.NcclError as e:
        mismatch = str(e)
    return dict(process=jax.process_index(), rank=rank, comm_rank=comm.rank_id(),
                size=comm.size(), same_id=bool((ids == ids[0]).all()), id_bytes=len(uid),
                cached=nccl.communicators((0,) * len(processes), processes) is comms,
                mismatch=mismatch)


def gpu_processes(n):
    """Processes with n GPUs of the CuPy stand-in each: shard_map's collectives over a mesh of
    every process's GPUs go through the stand-in's NCCL between the processes; the one-device
    named-vmap path is the reference. Counts what crossed the host and NCCL meanwhile."""
    import cupy
    from cupy import _standin

    from gpuarr.experimental import multihost_utils
    if not (cupy.cuda.compiler.available() and cupy.cuda._pocl.available()):
        emit(skip="the stand-in cannot compile (NVRTC) or run (PoCL) kernels here")
        return None
    jax.distributed.initialize(cluster_detection_method="mpi4py", heartbeat_timeout_seconds=60)
    gpus = jax.devices("cuda")
    total = len(gpus)
    mesh = jax.make_mesh((total,), ("i",), devices=gpus)
    full = np.random.default_rng(1).standard_normal((total * total, 3)).astype(np.float32)
    full = np.round(full * 8) / 8  # sums of these are exact in any order
    x = _global(mesh, P("i"), full)
    placed = [type(x._stored).__name__] + [
        [str(s.data.device), bool(np.array_equal(np.asarray(s.data), full[s.index]))]
        for s in x.addressable_shards]
    same, moved = {}, {}
    fns = _collective_fns(total)
    for name in ("psum", "pmax", "all_gather", "psum_scatter", "ppermute", "all_to_all"):
        fn, spec = fns[name]
        sm = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("i"), out_specs=spec,
                                   check_vma=False))
        _standin.reset()
        out = sm(x)
        out.block_until_ready()
        counts = _standin.counters.snapshot()
        got = np.asarray(out) if spec == P() else multihost_utils.process_allgather(out)
        ref = _reference(fn, spec, full, total)
        same[name] = bool(got.dtype == ref.dtype and np.array_equal(got, ref))
        # the pieces stay on the GPUs: nothing crosses the host, the results are pieces
        moved[name] = dict(host=counts["h2d_bytes"] + counts["d2h_bytes"],
                           held=type(out._stored).__name__,
                           devices=[str(s.data.device) for s in out.addressable_shards],
                           nccl={k: v for k, v in counts["library"].items()
                                 if k.startswith("nccl")},
                           peer_bytes=counts["peer_bytes"])
    # The data-parallel MLP over every GPU; gpuarr's own MPI exchanges counted meanwhile
    # (only the 16-byte meetings before each collective may use them).
    from gpuarr import process_group
    used = {"allgather_array": 0, "allreduce_sum": 0}

    def counting(name, real):
        def counted(*args, **kw):
            used[name] += 1
            return real(*args, **kw)
        return counted
    for name in used:
        setattr(process_group, name, counting(name, getattr(process_group, name)))
    _standin.reset()
    trained = _mlp()
    counts = _standin.counters.snapshot()
    trained.update(nccl={k: v for k, v in counts["library"].items() if k.startswith("nccl")},
                   peer_bytes=counts["peer_bytes"], mpi_data=used)
    try:  # another process's GPU
        jax.device_put(full, gpus[-1 if jax.process_index() == 0 else 0])
        remote_put = None
    except ValueError as e:
        remote_put = str(e)
    return dict(process=jax.process_index(), count=jax.process_count(), remote_put=remote_put,
                devices=[[d.id, d.process_index, d.local_hardware_id] for d in gpus],
                local=[str(d) for d in jax.local_devices()], same=same, moved=moved,
                mlp=trained, placed=placed, **_beyond_shard_map(mesh, full, x, n))


def _counted(fn):
    """`fn()` once to compile, then again with the stand-in's counters reset: (its result,
    bytes through the host, NCCL calls, bytes NCCL sent to the other process)."""
    from cupy import _standin
    jax.block_until_ready(fn())
    _standin.reset()
    out = fn()
    jax.block_until_ready(out)
    c = _standin.counters
    return (out, c.h2d_bytes + c.d2h_bytes,
            {k: v for k, v in c.library.items() if k.startswith("nccl")}, c.peer_bytes)


def _beyond_shard_map(mesh, full, x, n):
    """Arrays over the GPUs of every process beyond one shard_map: chained shard_maps, eager
    operations, jit on split inputs and pmap, against one GPU of this process (the one-device
    path) and the named vmap, with what crossed the host and NCCL for each."""
    from gpuarr.experimental import multihost_utils
    jnp = jax.numpy
    one = jax.device_put(full, jax.local_devices()[0])  # the whole value on one GPU

    def read(a):  # the global value of an Array over every process's GPUs
        return multihost_utils.process_allgather(a)

    def record(name, got, ref, host, nccl, peer, out):
        leaves, want = jax.tree.leaves(got), jax.tree.leaves(ref)
        out[name] = dict(
            host=host, nccl=nccl, peer=peer, held=[type(a._stored).__name__ for a in leaves],
            specs=[str(a.sharding.spec) for a in leaves],
            devices=[[str(s.data.device) for s in a.addressable_shards] for a in leaves],
            dtypes=[bool(a.dtype == b.dtype) for a, b in zip(leaves, want)],
            diff=[float(np.max(np.abs(read(a).astype(np.float64) - np.asarray(b)))
                        / max(1.0, float(np.max(np.abs(np.asarray(b))))))
                  for a, b in zip(leaves, want)])
    # a shard_map reads the outputs of the one before it where they are
    double = jax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    total = jax.jit(jax.shard_map(lambda v: lax.psum(v.sum(0), "i"), mesh=mesh,
                                  in_specs=P("i"), out_specs=P()))
    chain = {}
    got, host, nccl, peer = _counted(lambda: (double(x), total(double(x))))
    record("chain", got, (one * 2, (one * 2).sum(0)), host, nccl, peer, chain)
    # grad of a shard_map, not jitted: its transposed program per GPU on the pieces
    squares = jax.grad(lambda v: jax.shard_map(
        lambda u: lax.psum((u * u).sum(), "i"), mesh=mesh, in_specs=P("i"), out_specs=P())(v))
    got, host, nccl, peer = _counted(lambda: squares(x))
    record("grad", got, one * 2, host, nccl, peer, chain)
    # eager operations: elementwise and per-piece reductions on each GPU, reductions across
    # the split dimension all-reduced (argmax all-gathered) over NCCL
    eager = {}
    for name, fn in _eager_cases().items():
        got, host, nccl, peer = _counted(lambda fn=fn: fn(x))
        record(name, got, fn(one), host, nccl, peer, eager)
    # jit's data-parallel case: batch split, weights replicated, the sums all-reduced
    w = np.linspace(-1, 1, full.shape[1] * 3, dtype=np.float32).reshape(full.shape[1], 3)
    wr = jax.device_put(w, NamedSharding(mesh, P()))

    def loss(a, v):
        return jnp.mean(jnp.tanh(v @ a) ** 2)
    step = jax.jit(jax.value_and_grad(loss))
    twice = jax.jit(lambda v: jnp.tanh(v) * 2)
    split = {}
    for name, fn, ref in (("step", lambda: step(wr, x),
                           lambda: step(jax.device_put(w, one.device), one)),
                          ("elementwise", lambda: twice(x), lambda: twice(one))):
        got, host, nccl, peer = _counted(fn)
        record(name, got, ref(), host, nccl, peer, split)
    # pmap: each process passes its n positions; the collectives span all the GPUs
    positions = full[:n * jax.process_count()]
    mine = positions[jax.process_index() * n:(jax.process_index() + 1) * n]
    pmaps = {}
    for name, fn in {"psum": lambda v: lax.psum(v, "p"), "pmean": lambda v: lax.pmean(v, "p"),
                     "all_gather": lambda v: lax.all_gather(v, "p"),
                     "psum_scatter": lambda v: lax.psum_scatter(
                         jnp.tile(v, mesh.size), "p", tiled=True)}.items():
        mapped = jax.pmap(fn, "p")
        ref = np.asarray(jax.vmap(fn, axis_name="p")(positions))
        got, host, nccl, peer = _counted(lambda mapped=mapped: mapped(mine))
        pmaps[name] = dict(host=host, nccl=nccl, shape=list(got.shape),
                           devices=[str(s.data.device) for s in got.addressable_shards],
                           same=bool(np.array_equal(np.asarray(got), ref[
                               jax.process_index() * n:(jax.process_index() + 1) * n])))
    # a pmap on the outputs of another reads them on their GPUs
    first, again = jax.pmap(lambda v: v * 2, "p"), jax.pmap(lambda v: lax.psum(v, "p"), "p")
    doubled = first(mine)
    got, host, nccl, peer = _counted(lambda: again(doubled))
    pmaps["chained"] = dict(host=host, nccl=nccl, shape=list(got.shape),
                            same=bool(np.array_equal(np.asarray(got), np.broadcast_to(
                                (positions * 2).sum(0), got.shape))))
    # keyword arguments (mapped over their leading axis) and a static argument, as JAX's
    for name, mapped, ref in (
            ("keywords", lambda: jax.pmap(lambda v, *, w: lax.psum(v * w, "p"), "p")(mine, w=mine),
             jax.vmap(lambda v: lax.psum(v * v, "p"), axis_name="p")(positions)),
            ("static", lambda: jax.pmap(lambda v, c: lax.psum(v * c, "p"), "p",
                                        static_broadcasted_argnums=1)(mine, 3),
             jax.vmap(lambda v: lax.psum(v * 3, "p"), axis_name="p")(positions))):
        got, host, nccl, peer = _counted(mapped)
        pmaps[name] = dict(host=host, nccl=nccl, shape=list(got.shape),
                           devices=[str(s.data.device) for s in got.addressable_shards],
                           same=bool(np.array_equal(np.asarray(got), np.asarray(ref)[
                               jax.process_index() * n:(jax.process_index() + 1) * n])))
    # resharding over NCCL, and eager operations on the global value (made replicated)
    reshard = {}
    for name, fn in {"put_rep": lambda v: jax.device_put(v, NamedSharding(mesh, P())),
                     "put_back": lambda v: jax.device_put(
                         jax.device_put(v, NamedSharding(mesh, P())),
                         NamedSharding(mesh, P("i"))),
                     "slice": lambda v: v[1:3], "stack": lambda v: jnp.stack([v, v + 1]),
                     "dot_t": lambda v: v.T @ v}.items():
        got, host, nccl, peer = _counted(lambda fn=fn: fn(x))
        record(name, got, one if name.startswith("put") else fn(one), host, nccl, peer,
               reshard)
    errors = {}  # reading a split array to the host
    for name, fn in {"str": lambda: str(x), "read": lambda: np.asarray(x)}.items():
        try:
            fn()
            errors[name] = None
        except RuntimeError as e:
            errors[name] = f"{type(e).__name__}: {e}"
    return dict(chain=chain, eager=eager, jit_split=split, pmap=pmaps, errors=errors,
                reshard=reshard, pmap_out_axes=_pmap_out_axes(full, n), shown=repr(x))


def _split_dimension_cases(idx):
    """Eager operations along the split dimension (`region`: computed from the pieces that
    hold what they need, `per_block`: on each device's blocks, else on the operands joined),
    on `a`: x (rows split over 4 devices),
    xij (rows over 'i', columns over 'j' of a 2x2 mesh), xji (the other way), xt (columns
    split), y8 (8 rows, split), xr (replicated), sidx (indices split) and full (x's value)."""
    jnp = jax.numpy
    region = {
        "slice": lambda a: a["x"][1:5], "step": lambda a: a["x"][::2],
        "index": lambda a: a["x"][3], "index_neg": lambda a: a["x"][-1],
        "slice_step3": lambda a: a["x"][5:13:3], "lax_slice": lambda a: lax.slice(
            a["x"], (2, 0), (14, 8)), "ij_slice": lambda a: a["xij"][1:5],
        "ij_slice_both": lambda a: a["xij"][1:5, 2:6], "ij_index": lambda a: a["xij"][3],
        "ji_slice": lambda a: a["xji"][2:6], "ij_step": lambda a: a["xij"][::2],
        "cols_slice": lambda a: a["xt"][:, 1:5], "cols_index": lambda a: a["xt"][:, 3],
        "rev": lambda a: a["x"][::-1], "ij_rev": lambda a: lax.rev(a["xij"], (0,)),
        "rev_both": lambda a: lax.rev(a["x"], (0, 1)),
        "concat": lambda a: jnp.concatenate([a["x"], a["x"] * 2], 0),
        "concat_ones": lambda a: jnp.concatenate([a["x"], jnp.ones((4, 8), np.float32)], 0),
        "concat_ones3": lambda a: jnp.concatenate([a["x"], jnp.ones((3, 8), np.float32)], 0),
        "concat_short": lambda a: jnp.concatenate([a["x"], a["y8"]], 0),
        "concat_short_first": lambda a: jnp.concatenate([a["y8"], a["x"]], 0),
        "concat_replicated": lambda a: jnp.concatenate([a["x"], a["xr"]], 0),
        "concat_three": lambda a: jnp.concatenate([a["x"], a["x"], a["x"]], 0),
        "concat_numpy": lambda a: jnp.concatenate([a["x"], a["full"]], 0),
        "ij_concat": lambda a: jnp.concatenate([a["xij"], a["xij"]], 0),
        "ij_concat1": lambda a: jnp.concatenate([a["xij"], a["xij"]], 1),
        "cols_concat": lambda a: jnp.concatenate([a["xt"], a["xt"]], 1),
        "dynamic_slice": lambda a: lax.dynamic_slice(a["x"], (3, 1), (4, 3)),
        "dynamic_slice_clamped": lambda a: lax.dynamic_slice(a["x"], (14, 1), (4, 3)),
        "dynamic_slice_whole": lambda a: lax.dynamic_slice(a["x"], (0, 1), (16, 3)),
        "dynamic_slice_array": lambda a: lax.dynamic_slice_in_dim(a["x"], jnp.int32(6), 5, 0),
        "ij_dynamic_slice": lambda a: lax.dynamic_slice(a["xij"], (3, 1), (4, 4)),
        "ij_dynamic_slice_cols": lambda a: lax.dynamic_slice(a["xij"], (0, 1), (16, 4))}
    joined = {
        "sort": lambda a: jnp.sort(a["x"], axis=0), "argsort": lambda a: jnp.argsort(a["x"], 0),
        "lax_sort": lambda a: lax.sort(a["x"], dimension=0),
        "lax_sort_two": lambda a: lax.sort((a["x"], a["x"] * 2), dimension=0, num_keys=1),
        "ij_sort": lambda a: jnp.sort(a["xij"], axis=0),
        "cumsum": lambda a: jnp.cumsum(a["x"], axis=0),
        "cumprod": lambda a: jnp.cumprod(a["x"], axis=0),
        "cummax": lambda a: lax.cummax(a["x"], axis=0),
        "cumsum_reverse": lambda a: lax.cumsum(a["x"], axis=0, reverse=True),
        "ij_cumsum": lambda a: jnp.cumsum(a["xij"], axis=0),
        "gather": lambda a: a["x"][idx], "take": lambda a: jnp.take(a["x"], idx, axis=0),
        "ij_gather": lambda a: a["xij"][idx],
        "ij_take_cols": lambda a: jnp.take(a["xij"], np.array([1, 4]), axis=1),
        "gather_2d": lambda a: a["x"][idx.reshape(5, 1) % 4, idx.reshape(1, 5) % 8],
        "gather_split_indices": lambda a: a["x"][a["sidx"]],
        "gather_scalar": lambda a: a["x"][jnp.int32(3)],
        "set": lambda a: a["x"].at[idx].set(1.0), "add": lambda a: a["x"].at[idx].add(2.0),
        "max": lambda a: a["x"].at[idx].max(0.5), "set_row": lambda a: a["x"].at[3].set(0.5),
        "add_rows": lambda a: a["x"].at[2:6].add(1.0),
        "ij_set": lambda a: a["xij"].at[idx].set(1.0),
        "set_split_updates": lambda a: a["x"].at[idx[:4]].set(a["y8"][:4] * 3),
        "dynamic_update_slice": lambda a: lax.dynamic_update_slice(
            a["x"], jnp.zeros((2, 3), np.float32), (3, 1))}
    per_block = {  # along unsplit dimensions of an operand split on others
        "take_cols": lambda a: jnp.take(a["x"], np.array([1, 4]), axis=1),
        "set_col": lambda a: a["x"].at[:, 2].set(0.5)}
    return region, per_block, joined


def split_dimension(n):
    """On n = 4 cpu devices (Auto axes): eager slices, reversals, concatenation, dynamic
    slices, sorts, cumulative operations, gathers and scatters along split dimensions
    (_split_dimension_cases), and `rev` and `concatenate` over an Explicit axis. Per result:
    spec, dtype, shard shapes, value; for gpuarr also how it is held, whether it equals the
    one-device result bit for bit, and how many times an operand was put together whole."""
    jax.config.update("jax_num_cpu_devices", n)
    jnp = jax.numpy
    rng = np.random.default_rng(3)
    full = rng.standard_normal((16, 8)).astype(np.float32)
    full[9, 3] = full[2, 3]  # a tie for the sorts
    idx = np.array([3, 0, 15, 5, 5], np.int32)
    auto = (jax.sharding.AxisType.Auto,)
    m1 = jax.make_mesh((n,), ("i",), axis_types=auto)
    m2 = jax.make_mesh((2, n // 2), ("i", "j"), axis_types=auto * 2)
    mx = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Explicit,))

    def put(v, mesh, *spec):
        return jax.device_put(v, NamedSharding(mesh, P(*spec)))

    ops = dict(full=full, x=put(full, m1, "i"), xij=put(full, m2, "i", "j"),
               xji=put(full, m2, "j", "i"), xt=put(full, m1, None, "i"),
               y8=put(full[:8], m1, "i"), xr=put(full, m1),
               sidx=put(np.arange(1, 9, dtype=np.int32), m1, "i"))
    one = {k: v if k == "full" else jnp.asarray(np.asarray(v)) for k, v in ops.items()}
    region, per_block, joined = _split_dimension_cases(idx)
    region["explicit_rev"] = lambda a: a["xe"][::-1]
    region["explicit_concat"] = lambda a: jnp.concatenate([a["xe"], a["xe"] * 2], 0)
    ops["xe"], one["xe"] = put(full, mx, "i"), jnp.asarray(full)
    joins = [0]
    if LIB == "gpuarr":
        from gpuarr.backends.device_shards import DeviceShards
        assemble = DeviceShards.assemble

        def counted(self):
            joins[0] += 1
            return assemble(self)
        DeviceShards.assemble = counted
    standin = os.environ.get("GPUARR_PLATFORMS") == "cuda"  # the CuPy stand-in's counters
    out, held, same, whole, moved = {}, {}, {}, {}, {}
    for kind, cases in (("region", region), ("per_block", per_block), ("joined", joined)):
        for name, fn in cases.items():
            if standin:
                jax.block_until_ready(fn(ops))
                from cupy import _standin
                _standin.counters.reset()
            joins[0] = 0
            got = jax.tree.leaves(fn(ops))
            whole[name] = joins[0]
            if standin:
                jax.block_until_ready(got)
                moved[name] = [_moved_and_nccl()[0], sum(r.nbytes for r in got)]
            for i, r in enumerate(got):
                key = f"{kind}/{name}/{i}"
                out[key] = _described(r)
                if LIB == "gpuarr":
                    held[key] = type(r._stored).__name__
                    same[key] = bool(np.array_equal(
                        np.asarray(r), np.asarray(jax.tree.leaves(fn(one))[i])))
    return dict(arrays=out, held=held, same=same, joins=whole, moved=moved)


def _loop_steps(step, total):
    """jitted loops of shard_map steps, written with `step` (rows split, a pmean of the
    blocks' column means) and `total` (a psum, replicated): the same code runs the per-device
    functions under the named vmap. name -> (function, its arguments' names)."""
    def grow(c):  # a while_loop's carry, growing: the predicate reads a psum of it
        return c[0] * 1.5 + step(c[0]), c[1] + 1
    return {
        "fori": (lambda v: lax.fori_loop(0, 3, lambda k, u: step(u), v), ("x",)),
        "scan": (lambda v: lax.scan(lambda c, _: (step(c), (total(c), step(c) * 2)), v, None,
                                    length=3), ("x",)),
        "scan_xs": (lambda v, xs: lax.scan(lambda c, x: (step(c) + x, c * x), v, xs,
                                           reverse=True), ("x", "xs")),
        "scan_empty": (lambda v: lax.scan(lambda c, _: (step(c), total(c)), v, None,
                                          length=0), ("x",)),
        "while": (lambda v: lax.while_loop(lambda c: total(c[0]) < 400.0, grow,
                                           (v, np.int32(0))), ("x",)),
        "nested": (lambda v: lax.fori_loop(0, 2, lambda k, u: lax.cond(
            k == 0, step, lambda w: w * 2, lax.fori_loop(0, 2, lambda j, w: step(w), u)), v),
            ("x",)),
        "around": (lambda v: jax.numpy.sin(lax.fori_loop(0, 2, lambda k, u: step(u), v * 2)),
                   ("x",)),
    }


def _mlp_loop(mesh, x, y, params):
    """A data-parallel MLP trained for 20 steps as one jitted `fori_loop` over a shard_map
    step (each device: its rows; `pmean` of the loss and gradients), and as a Python loop
    calling the same step: (losses, final parameters) of each."""
    jnp = jax.numpy

    def local(p, xb, yb):
        def loss_fn(p):
            h = jnp.tanh(xb @ p["w1"] + p["b1"])
            return jnp.mean((h @ p["w2"] - yb) ** 2)
        loss, g = jax.value_and_grad(loss_fn)(p)
        g = lax.pmean(g, "i")
        return lax.pmean(loss, "i"), jax.tree.map(lambda a, b: a - 0.1 * b, p, g)
    # check_vma=False: each device's gradient is its own, which the pmean averages (with
    # check_vma, JAX's gradient of the replicated parameters is already the devices' sum)
    step = jax.shard_map(local, mesh=mesh, in_specs=(P(), P("i"), P("i")),
                         out_specs=(P(), P()), check_vma=False)

    def train(p, xb, yb):
        def body(k, c):
            loss, q = step(c[0], xb, yb)
            return q, c[1].at[k].set(loss)
        return lax.fori_loop(0, 20, body, (p, jnp.zeros(20, jnp.float32)))
    looped, losses = jax.jit(train)(params, x, y)
    p, eager, one_step = params, [], jax.jit(step)
    for _ in range(20):
        loss, p = one_step(p, x, y)
        eager.append(float(loss))
    return dict(losses=np.asarray(losses).tolist(), eager=eager,
                params=[np.asarray(a).tolist() for a in jax.tree.leaves(looped)],
                eager_params=[np.asarray(a).tolist() for a in jax.tree.leaves(p)],
                specs=[str(a.sharding.spec) for a in jax.tree.leaves((looped, losses))],
                held=[type(getattr(a, "_stored", None)).__name__
                      for a in jax.tree.leaves((looped, losses))])


def _vmap_path(fn, names, args, n, specs):
    """The named-vmap path on one device: `fn` (written with the per-device steps) mapped
    over each device's blocks, its outputs put together as their shardings say."""
    blocks = {"x": args["x"].reshape(n, -1, *args["x"].shape[1:]),
              "xs": np.moveaxis(args["xs"].reshape(3, n, -1, args["xs"].shape[2]), 1, 0)}
    outs = jax.tree.leaves(jax.vmap(fn, axis_name="i")(*[blocks[k] for k in names]))
    whole = []
    for out, spec in zip(outs, specs):
        out = np.asarray(out)
        split = [d for d, a in enumerate(spec) if a is not None]
        whole.append(np.concatenate(list(out), split[0]) if split else out[0])
    return whole


def loops(n):
    """On n cpu devices (or GPUs of the CuPy stand-in): jitted while_loops, scans and
    fori_loops of shard_map steps on split inputs, over an Auto and an Explicit mesh. Per
    output: spec, dtype, shard shapes, value; for gpuarr also how it is held, the devices of
    its pieces and whether it equals the named-vmap path bit for bit. `mlp`: a data-parallel
    training loop against the eager loop of the same steps."""
    on_gpus = os.environ.get("GPUARR_PLATFORMS") == "cuda"
    if not on_gpus:
        jax.config.update("jax_num_cpu_devices", n)
    devices = jax.devices()[:n]
    rng = np.random.default_rng(4)
    full = rng.standard_normal((4 * n, 4)).astype(np.float32)
    xs = rng.standard_normal((3, 4 * n, 4)).astype(np.float32)
    jnp = jax.numpy

    def local_step(u):
        return jnp.tanh(u * 0.5 + lax.pmean(u.mean(0), "i"))

    def local_total(u):
        return lax.psum(jnp.abs(u).sum(), "i")
    out, held, where, same, moved, joins = {}, {}, {}, {}, {}, {}
    counted = [0]
    if LIB == "gpuarr":  # count how often a split value is put together whole
        from gpuarr.backends.device_shards import DeviceShards
        assemble = DeviceShards.assemble

        def counting(self):
            counted[0] += 1
            return assemble(self)
        DeviceShards.assemble = counting
    for kind in ("Auto",) if on_gpus else ("Auto", "Explicit"):
        mesh = jax.make_mesh((n,), ("i",), axis_types=(getattr(jax.sharding.AxisType, kind),),
                             devices=devices)
        step = jax.shard_map(local_step, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
        total = jax.shard_map(local_total, mesh=mesh, in_specs=P("i"), out_specs=P())
        args = {"x": jax.device_put(full, NamedSharding(mesh, P("i"))),
                "xs": jax.device_put(xs, NamedSharding(mesh, P(None, "i")))}
        local = _loop_steps(local_step, local_total)
        for name, (fn, names) in _loop_steps(step, total).items():
            counted[0] = 0
            got = jax.tree.leaves(jax.jit(fn)(*[args[k] for k in names]))
            joins[f"{kind}/{name}"] = counted[0]
            if on_gpus:  # again, compiled: what crossed the host, and the NCCL calls
                from cupy import _standin
                _standin.counters.reset()
                jax.block_until_ready(jax.jit(fn)(*[args[k] for k in names]))
                moved[name] = _moved_and_nccl()
            if LIB == "gpuarr":
                ref = _vmap_path(local[name][0], names, {"x": full, "xs": xs}, n,
                                 [a.sharding.spec for a in got])
            for i, r in enumerate(got):
                key = f"{kind}/{name}/{i}"
                out[key] = _described(r)
                if LIB == "gpuarr":
                    held[key] = type(r._stored).__name__
                    where[key] = [str(s.data.device) for s in r.addressable_shards]
                    same[key] = bool(r.dtype == ref[i].dtype and np.array_equal(
                        np.asarray(r), ref[i]))
    x = rng.standard_normal((8 * n, 8)).astype(np.float32)
    y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
    params = {"w1": rng.standard_normal((8, 16)).astype(np.float32) * 0.3,
              "b1": np.zeros(16, np.float32),
              "w2": rng.standard_normal((16, 1)).astype(np.float32) * 0.3}
    mesh = jax.make_mesh((n,), ("i",), devices=devices)
    mlp = _mlp_loop(mesh, jax.device_put(x, NamedSharding(mesh, P("i"))),
                    jax.device_put(y, NamedSharding(mesh, P("i"))), params)
    return dict(arrays=out, held=held, devices=where, same=same, moved=moved, joins=joins,
                mlp=mlp)


def _call_result(fn):
    """What a call gives: each output's value, dtype, sharding, committed flag and pieces
    (device, index, block), or the error's class and message."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return {"error": [type(e).__name__, str(e)]}
    return {"outputs": [[np.asarray(o).tolist(), str(o.dtype), repr(o.sharding), o.committed,
                         [[s.device.id, repr(s.index), np.asarray(s.data).tolist()]
                          for s in o.addressable_shards]]
                        for o in jax.tree_util.tree_leaves(out)]}


def _committed_cases(n):
    """jit with in_shardings called with committed and uncommitted arguments."""
    jnp = jax.numpy
    mesh = jax.make_mesh((n,), ("i",))
    auto = jax.make_mesh((n,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
    one = jax.sharding.SingleDeviceSharding(jax.devices()[1])
    x = np.arange(8.0, dtype=np.float32)
    x2 = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    put, dev = jax.device_put, jax.devices()
    f, g = jax.jit(lambda v: v * 2, in_shardings=split), jax.jit(lambda v: v * 2, in_shardings=rep)
    h = jax.jit(lambda v: v * 2, in_shardings=one)
    t = jax.jit(lambda a, b: (a + 1, b * 2), in_shardings=(split, None))
    d = jax.jit(lambda p: p["w"] * p["b"].sum(), in_shardings=({"w": split, "b": None},))
    inside = jax.jit(lambda v: jax.device_put(v, rep) * 2, in_shardings=split)
    fa = jax.jit(lambda v: v * 2, in_shardings=NamedSharding(auto, P("i")))
    s0 = jax.jit(lambda v: v.sum(0), in_shardings=split)
    return {
        "uncommitted": lambda: f(jnp.arange(8.0)), "numpy": lambda: f(x),
        "put_uncommitted": lambda: f(jax.device_put(x)), "same": lambda: f(put(x, split)),
        "rep_to_split": lambda: f(put(x, rep)), "split_to_rep": lambda: g(put(x, split)),
        "p_none_as_p": lambda: g(put(x, NamedSharding(mesh, P(None)))),
        "other_mesh": lambda: f(put(x, NamedSharding(jax.make_mesh((2, n // 2), ("a", "b")),
                                                      P("a")))),
        "device_0": lambda: f(put(x, dev[0])), "device_1": lambda: f(put(x, dev[1])),
        "device_1_replicated": lambda: g(put(x, dev[1])),
        "single_device_sharding": lambda: f(put(x, one)),
        "to_single_device": lambda: h(put(x, dev[0])), "to_single_numpy": lambda: h(x),
        "split_to_single_device": lambda: h(put(x, split)),
        "tree_none": lambda: t(x, put(x, rep)), "tree_none_split": lambda: t(x, put(x, split)),
        "tree_given_committed": lambda: t(put(x, rep), x),
        "tree_none_other_device": lambda: t(x, put(x, dev[1])),
        "dict_given_committed": lambda: d({"w": put(x, rep), "b": x}),
        "dict_none_committed": lambda: d({"w": x, "b": put(x, rep)}),
        "put_inside": lambda: inside(x), "put_inside_committed": lambda: inside(put(x, rep)),
        "put_outside": lambda: f(put(put(x, rep), split)),
        "again_after_a_call": lambda: (f(x), f(put(x, rep)))[1],
        "sum_committed": lambda: s0(put(x2, split)), "sum_numpy": lambda: s0(x2),
        "mixed_types": lambda: jax.jit(lambda a, b: (a * b.sum(), a * 2, b + 1),
                                       in_shardings=(split, None))(x2, put(x, rep)),
        "auto_in_explicit_arg": lambda: fa(put(x, split)),
        "auto_rep_to_split": lambda: fa(put(x, NamedSharding(auto, P()))),
        # plain jit (no in_shardings): committed arguments must share one device assignment
        "plain_split_and_device_0": lambda: jax.jit(lambda a, b: a + b)(put(x, split),
                                                                         put(x, dev[0])),
        "plain_split_and_replicated": lambda: jax.jit(lambda a, b: a + b)(put(x, split),
                                                                           put(x, rep))}


def _constraint_cases(n):
    """with_sharding_constraint (and device_put) inside jit on batch-split inputs and
    replicated parameters, over an Auto and an Explicit mesh."""
    jnp, wsc = jax.numpy, lax.with_sharding_constraint
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * n, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    cases, plain = {}, {}
    for kind in (jax.sharding.AxisType.Auto, jax.sharding.AxisType.Explicit):
        mesh = jax.make_mesh((n,), ("i",), axis_types=(kind,))
        rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
        cols = NamedSharding(mesh, P(None, "i"))
        fns = {
            "out": lambda w, x, rep=rep: wsc(jnp.tanh(x @ w), rep),
            "then_mul": lambda w, x, rep=rep: wsc(jnp.tanh(x @ w), rep) * 2,
            "then_sum0": lambda w, x, rep=rep: wsc(x * 2, rep).sum(0),
            "then_sum": lambda w, x, rep=rep: wsc(x * 2, rep).sum(),
            "to_columns": lambda w, x, c=cols: wsc(jnp.ones((4, n)) * x[:4, :1], c),
            "input": lambda w, x, rep=rep: (wsc(x, rep), x + 1),
            "device_put": lambda w, x, rep=rep: jax.device_put(x * 2, rep),
            "vmap": lambda w, x, rep=rep: jax.vmap(lambda r: wsc(r * 2, rep))(x),
            "unconstrained": lambda w, x, m=mesh: wsc(x * 2, NamedSharding(
                m, P(P.UNCONSTRAINED, None)))}
        for name, fn in fns.items():
            key = f"{kind.name}/{name}"
            jitted = jax.jit(fn, in_shardings=(rep, split))
            cases[key] = lambda j=jitted: j(w, x)
            plain[key] = fn
        grad = jax.jit(jax.grad(lambda w, x, rep=rep: (wsc(jnp.tanh(x @ w), rep) ** 2).sum()),
                       in_shardings=(rep, split))  # its sums all-reduced: not bit for bit
        cases[f"{kind.name}/grad"] = lambda j=grad: j(w, x)
        to_rows = jax.jit(lambda w, x, s=split: wsc(x * 2, s), in_shardings=(rep, rep))
        cases[f"{kind.name}/to_rows"] = lambda j=to_rows: j(w, x)
        plain[f"{kind.name}/to_rows"] = lambda w, x: x * 2
        xs = jax.device_put(x, split)
        committed = jax.jit(lambda v, rep=rep: wsc(v * 2, rep))
        cases[f"{kind.name}/committed"] = lambda j=committed, xs=xs: j(xs)
        plain[f"{kind.name}/committed"] = lambda w, x: x * 2

        def under_mesh(mesh=mesh, sum0=False):
            with jax.set_mesh(mesh):
                out = jax.jit(lambda w, x: wsc(x @ w, P()), in_shardings=(P(), P("i")))(w, x)
                return out.sum(0) if sum0 else out
        cases[f"{kind.name}/set_mesh"] = under_mesh
        cases[f"{kind.name}/set_mesh_sum0"] = lambda m=mesh: under_mesh(m, sum0=True)
    return cases, plain, (w, x)


def jit_shardings(n):
    """jit with in_shardings on committed and uncommitted arguments, and sharding constraints
    inside jit on the data-parallel path, on n cpu devices. For gpuarr, also whether each
    constrained result equals the same function's one-device result bit for bit."""
    _use_devices(n)
    committed = {k: _call_result(fn) for k, fn in _committed_cases(n).items()}
    cases, plain, (w, x) = _constraint_cases(n)
    constraint = {k: _call_result(fn) for k, fn in cases.items()}
    same = {}
    if LIB == "gpuarr":
        for k, fn in cases.items():
            if "error" not in constraint[k] and k in plain:
                got = jax.tree_util.tree_leaves(fn())
                want = jax.tree_util.tree_leaves(jax.jit(plain[k])(w, x))
                same[k] = all(np.array_equal(np.asarray(a), np.asarray(b))
                              for a, b in zip(got, want))
    return dict(committed=committed, constraint=constraint, same=same)


PROGRAMS = {"devices": devices, "collectives": collectives, "mpi_collectives": mpi_collectives,
            "mlp": mlp, "fault": fault, "jit_split": jit_split, "groups": groups,
            "transforms": transforms, "gpus": gpus, "features": features,
            "manual_axes": manual_axes, "vma_control_flow": vma_control_flow,
            "vma_grads": vma_grads,
            "gpu_shards": gpu_shards, "nccl_ids": nccl_ids, "gpu_processes": gpu_processes,
            "cpu_shards": cpu_shards, "split_ops": split_ops,
            "split_dimension": split_dimension, "pmap_traces": pmap_traces,
            "reshard_specs": reshard_specs, "loops": loops, "jit_shardings": jit_shardings}
RESULT = PROGRAMS[WHAT](ARG if WHAT == "fault" else int(ARG))
if RESULT is not None:
    emit(**RESULT)
