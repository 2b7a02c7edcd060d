"""jax.sharding on gpuarr's single device: PartitionSpec, Mesh, NamedSharding and friends,
Array.sharding, device_put / jit / reshard / with_sharding_constraint with shardings, and
shard_map over size-1 mesh axes. Each check runs the same program on JAX and on gpuarr and
compares values, reprs, error classes and messages."""
import functools
import inspect
import pickle
import re
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp_ref  # noqa: E402
from jax import sharding as jsh  # noqa: E402

import gpuarr  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr import sharding as gsh  # noqa: E402

MODS = {"jax": (jax, jnp_ref, jsh), "gpuarr": (gpuarr, gnp, gsh)}


def _norm(text: str) -> str:
    """A message or repr with what differs only by package left out (class paths, object
    addresses, source positions)."""
    text = re.sub(r"<class '[\w.]+\.(\w+)'>", r"<class '\1'>", text)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    text = re.sub(r"<class '\w*Tracer'>", "<class 'Tracer'>", text)
    return re.sub(r"This error occurs at source: .*", "", text)


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error raised")


def _same_error(make):
    """`make(m, jnp, sh)` raises the same error class (by name) and message on both."""
    ref, ours = (_err(lambda k=k: make(*MODS[k])) for k in ("jax", "gpuarr"))
    assert isinstance(ours, type(ref)) or type(ours).__name__ == type(ref).__name__, (ref, ours)
    assert _norm(str(ours)) == _norm(str(ref))
    return ours


def _same(make, compare=None):
    """`make(m, jnp, sh)` gives the same result on both: arrays by value, shape and dtype,
    anything else by repr."""
    ref, ours = (make(*MODS[k]) for k in ("jax", "gpuarr"))
    if compare is not None:
        return compare(ours, ref)
    ref_leaves, ref_tree = jax.tree_util.tree_flatten(ref)
    our_leaves = gpuarr.tree_util.tree_leaves(ours)
    assert len(ref_leaves) == len(our_leaves)
    for r, o in zip(ref_leaves, our_leaves):
        if isinstance(r, jax.Array):
            assert isinstance(o, gpuarr.Array)
            assert o.shape == r.shape and o.dtype == r.dtype and o.weak_type == r.weak_type
            np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-5, atol=1e-6)
        else:
            assert _norm(repr(o)) == _norm(repr(r))
    return ours


def _x(shape=(4,), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- the module


def test_module_has_every_name_of_jax_sharding():
    assert set(dir(jsh)) - set(dir(gsh)) == set()
    for name in ("make_mesh", "set_mesh", "reshard", "NamedSharding", "P", "shard_map"):
        assert callable(getattr(gpuarr, name))
    assert gpuarr.P is gsh.PartitionSpec and gpuarr.lax.with_sharding_constraint


# ---------------------------------------------------------------- PartitionSpec

_SPECS = [
    lambda P: P(), lambda P: P(None), lambda P: P("i", None), lambda P: P(("i", "j"), None),
    lambda P: P(["i", "j"]), lambda P: P(("i",)), lambda P: P(()), lambda P: P([]),
    lambda P: P("i", P.UNCONSTRAINED), lambda P: P("i", unreduced={"j"}),
    lambda P: P(unreduced={"j"}), lambda P: P("i", reduced=frozenset({"k"})),
    lambda P: P(None, unreduced={"u"}, reduced={"r"}), lambda P: P(("i", None)),
]


@pytest.mark.parametrize("make", _SPECS)
def test_partition_spec_repr(make):
    _same(lambda m, jnp, sh: make(sh.PartitionSpec))


def test_partition_spec_behaves_like_jax():
    for P in (jsh.PartitionSpec, gsh.PartitionSpec):
        assert P("i") is P("i") and P("i") == P("i") and hash(P("i")) == hash(P("i"))
        assert P("i") != ("i",) and P(None) != P() and P("i") != P("i", None)
        assert P(("i",)) is P("i") and len(P("i", None)) == 2
        assert list(P("i", "j")) == ["i", "j"] and P("i", "j")[1:] == ("j",)
        assert P("i", "j").index("j") == 1 and P("i", "j").count("i") == 1
        assert P("i", "j").partitions == ("i", "j")
        assert pickle.loads(pickle.dumps(P("i", unreduced={"k"}))) is P("i", unreduced={"k"})
        assert repr(P.UNCONSTRAINED) == "UNCONSTRAINED"
    for make in (lambda P: P("i", None) + P("j"), lambda P: P("i") + ("j",),
                 lambda P: ("j",) + P("i"), lambda P: P("i") + P("j", unreduced={"k"}),
                 lambda P: P("i").update(partitions=("j",)),
                 lambda P: P("i", reduced={"k"}).to_ct_spec(),
                 lambda P: P("i", None)._normalized_spec_for_aval(3)):
        _same(lambda m, jnp, sh, make=make: make(sh.PartitionSpec))


@pytest.mark.parametrize("make", [
    lambda P: P("i", unreduced=["j"]), lambda P: P("i", unreduced={"i"}),
    lambda P: P("i", reduced={"i"}), lambda P: P(None, unreduced={None}),
    lambda P: P(unreduced={"a"}, reduced={"a"}), lambda P: P((("i",),)),
    lambda P: P("i", unreduced={"k"})[0], lambda P: list(P("i", unreduced={"k"})),
    lambda P: P("i", unreduced={"k"}) + ("j",), lambda P: ("j",) + P("i", reduced={"k"}),
    lambda P: P("i", None)._check_compatible_wrt_shape(()),
])
def test_partition_spec_errors(make):
    _same_error(lambda m, jnp, sh: make(sh.PartitionSpec))


# ---------------------------------------------------------------- meshes


@pytest.mark.jax_cpu_devices
def test_mesh_properties_and_reprs():
    def props(m, jnp, sh):
        mesh = m.make_mesh((1,), ("i",))
        m2 = sh.Mesh(np.array(m.devices()).reshape(1, 1), ("a", "b"))
        empty = sh.Mesh(np.empty((), dtype=object), ())
        return [repr(mesh), str(mesh), dict(mesh.shape), mesh.axis_names, mesh.axis_sizes,
                mesh.size, mesh.empty, mesh.axis_types, repr(mesh.abstract_mesh),
                mesh.device_ids.tolist(), repr(mesh.devices), mesh.local_devices, repr(m2),
                str(m2), mesh.shape_tuple, mesh.are_all_axes_explicit, m2.are_all_axes_auto,
                mesh.explicit_axes, repr(mesh.update(axis_names=("k",))), repr(empty),
                str(empty), empty.empty, repr(mesh.local_mesh), mesh.is_multi_process,
                repr(m.make_mesh((), ())), m.make_mesh((), ()).is_scalar,
                repr(m.make_mesh([1, 1], ["i", "j"], (sh.AxisType.Auto,) * 2)),
                repr(m.make_mesh((1.0,), ("i",))), repr(sh.Mesh(m.devices(), "i")),
                repr(sh.Mesh(m.devices(), ("i",), sh.AxisType.Explicit)),
                repr(sh.AxisType.Auto), str(sh.AxisType.Manual),
                repr(mesh.abstract_mesh.abstract_device)]
    _same(props)
    for m, _, sh in MODS.values():
        mesh = m.make_mesh((1,), ("i",))
        assert mesh is m.make_mesh((1,), ("i",)) and mesh.abstract_mesh is mesh.abstract_mesh
        assert mesh != m.make_mesh((1,), ("i",), (sh.AxisType.Auto,))


def test_abstract_mesh():
    def props(m, jnp, sh):
        am = sh.AbstractMesh((2, 3), ("i", "j"), (sh.AxisType.Explicit, sh.AxisType.Auto))
        return [repr(am), dict(am.shape), am.size, am.axis_sizes, am.empty,
                repr(sh.AbstractMesh((1,), ("i",))), am.explicit_axes, am.auto_axes,
                repr(am.update_axis_types({"j": sh.AxisType.Manual})),
                sh.AbstractMesh((1,), ("i",)) is sh.AbstractMesh((1,), ("i",)),
                sh.AbstractMesh((1,), ("i",)) == m.make_mesh((1,), ("i",)).abstract_mesh]
    _same(props)
    _same_error(lambda m, jnp, sh: sh.AbstractMesh((2,), ("i",)).devices)
    _same_error(lambda m, jnp, sh: sh.AbstractMesh((2,), ("i",)).device_ids)


@pytest.mark.jax_cpu_devices
@pytest.mark.parametrize("make", [
    lambda m, sh: m.make_mesh((2,), ("i",)),
    lambda m, sh: m.make_mesh((1, 1), ("i",)),
    lambda m, sh: m.make_mesh(1, ("i",)),
    lambda m, sh: sh.Mesh(np.array(m.devices()), ("i", "j")),
    lambda m, sh: sh.Mesh(m.devices(), (None,)),
    lambda m, sh: sh.Mesh(m.devices(), ("i",), (sh.AxisType.Explicit, sh.AxisType.Auto)),
    lambda m, sh: sh.Mesh(m.devices(), ("i",), ("Explicit",)),
    lambda m, sh: sh.AbstractMesh((1,), ("i",), ("Auto",)),
])
def test_mesh_errors(make):
    _same_error(lambda m, jnp, sh: make(m, sh))


@pytest.mark.jax_cpu_devices
def test_mesh_context_managers():
    for m, _, sh in MODS.values():
        mesh = m.make_mesh((1,), ("i",))
        assert repr(sh.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
        assert repr(sh.get_mesh()) == "Mesh(axis_sizes=(), axis_names=())"
        with m.set_mesh(mesh):
            assert sh.get_mesh() is mesh and sh.get_abstract_mesh() is mesh.abstract_mesh
            with sh.use_abstract_mesh(sh.AbstractMesh((1,), ("k",))):
                assert sh.get_abstract_mesh().axis_names == ("k",)
                assert sh.get_mesh() is mesh
            assert sh.get_abstract_mesh() is mesh.abstract_mesh
        assert sh.get_mesh().empty and sh.get_abstract_mesh().empty
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with mesh:
                assert sh.get_abstract_mesh().empty
            assert "deprecated" in str(w[0].message) and w[0].category is DeprecationWarning

    def in_jit_errors(which):
        def make(m, jnp, sh):
            mesh = m.make_mesh((1,), ("i",))
            fn = {"set": lambda: m.set_mesh(mesh), "get": sh.get_mesh}[which]
            return m.jit(lambda a: (fn(), a)[1])(1.0)
        return make
    _same_error(in_jit_errors("set"))
    _same_error(in_jit_errors("get"))
    _same_error(lambda m, jnp, sh: m.set_mesh(m.devices()))
    _same_error(lambda m, jnp, sh: sh.use_abstract_mesh(m.make_mesh((1,), ("i",))))
    _same_error(lambda m, jnp, sh: m.set_mesh(
        sh.Mesh(m.devices(), ("i",), (sh.AxisType.Manual,))))

    def resize(m, jnp, sh):
        with m.set_mesh(m.make_mesh((1,), ("i",))):
            with sh.use_abstract_mesh(sh.AbstractMesh((2,), ("i",))):
                pass
    _same_error(resize)


# ---------------------------------------------------------------- shardings


@pytest.mark.jax_cpu_devices
def test_named_and_single_device_sharding():
    def props(m, jnp, sh):
        P = sh.PartitionSpec
        mesh = m.make_mesh((1,), ("i",))
        s = sh.NamedSharding(mesh, P("i"))
        d = sh.SingleDeviceSharding(m.devices()[0])
        am = sh.AbstractMesh((2, 3), ("i", "j"))
        a = sh.NamedSharding(am, P("i", "j"))
        return [repr(s), s.device_set, s.is_fully_replicated, s.is_fully_addressable,
                s.num_devices, s.memory_kind, s.shard_shape((4, 3)),
                s.devices_indices_map((4, 3)), s.addressable_devices, s.replicated_axes,
                s._device_assignment, repr(s.with_memory_kind("pinned_host")),
                repr(s.update(spec=("i", None))), s == sh.NamedSharding(mesh, P("i")),
                hash(s) == hash(sh.NamedSharding(mesh, P("i"))),
                s == sh.NamedSharding(mesh, P("i", None)),
                s.is_equivalent_to(sh.NamedSharding(mesh, P()), 1),
                d.is_equivalent_to(sh.NamedSharding(mesh, P()), 1),
                repr(d), d == sh.SingleDeviceSharding(m.devices()[0], memory_kind="device"),
                d.device_set, d.num_devices, d.shard_shape((2, 3)),
                d.devices_indices_map((2, 3)), d.is_fully_replicated, d.memory_kind,
                repr(sh.make_single_device_sharding(m.devices()[0],
                                                    memory_kind="unpinned_host")),
                repr(a), a.shard_shape((4, 6)), a.num_devices, a.memory_kind,
                a.is_fully_replicated, sh.NamedSharding(am, P()).is_fully_replicated,
                a.is_equivalent_to(sh.NamedSharding(am, P("i", "j", None)), 3),
                a.is_equivalent_to(sh.NamedSharding(am, P("j", "i")), 2),
                sh.NamedSharding(am, P(("i", "j"))).shard_shape((12, 6))]
    _same(props)
    s = gsh.NamedSharding(gpuarr.make_mesh((1,), ("i",)), gsh.PartitionSpec("i"))
    assert pickle.loads(pickle.dumps(s)) == s


@pytest.mark.jax_cpu_devices
@pytest.mark.parametrize("make", [
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1,), ("i",)), P("k")),
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1, 1), ("a", "b")), P("a", "a")),
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1, 1), ("a", "b")), P(("a", "b"), "a")),
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1,), ("i",)), P("i", P.UNCONSTRAINED)),
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1,), ("i",)), P("i"), memory_kind="bogus"),
    lambda m, sh, P: sh.SingleDeviceSharding(m.devices()[0], memory_kind="bogus"),
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2,), ("i",)), P(unreduced={"i"})),
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2,), ("i",)), P(reduced={"k"})),
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2,), ("i",)), P()).device_set,
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2,), ("i",)), P()).is_fully_addressable,
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2,), ("i",)), P()).devices_indices_map(
        (2,)),
    lambda m, sh, P: sh.NamedSharding(sh.AbstractMesh((2, 3), ("i", "j")), P("i", "j"))
    .shard_shape((3, 6)),
    lambda m, sh, P: sh.NamedSharding(m.make_mesh((1,), ("i",)), P("i", None))
    .check_compatible_aval((3,)),
])
def test_sharding_errors(make):
    _same_error(lambda m, jnp, sh: make(m, sh, sh.PartitionSpec))


# ---------------------------------------------------------------- Array.sharding, device_put


@pytest.mark.jax_cpu_devices
def test_array_sharding_and_shards():
    x = _x()

    def props(m, jnp, sh):
        a = jnp.asarray(x)
        s = sh.NamedSharding(m.make_mesh((1,), ("i",)), sh.PartitionSpec("i"))
        y = m.device_put(a, s)
        shard = y.addressable_shards[0]
        return [repr(a.sharding), a.sharding == sh.SingleDeviceSharding(m.devices()[0]),
                a.is_fully_replicated, a.is_fully_addressable, len(a.addressable_shards),
                a.addressable_shards[0].index, a.addressable_shards[0].replica_id,
                repr(y.sharding), y.committed, y, repr(shard), shard.device, shard.index,
                shard.replica_id, shard.data, repr(shard.data.sharding),
                repr(y.global_shards), y.addressable_data(0),
                repr(jnp.float32(2).addressable_shards[0])]
    _same(props)


@pytest.mark.jax_cpu_devices
def test_device_put_with_shardings():
    x = _x((4, 3), seed=1)

    def put(m, jnp, sh):
        P = sh.PartitionSpec
        mesh = m.make_mesh((1,), ("i",))
        s = sh.NamedSharding(mesh, P("i"))
        a, b = m.device_put((x, 2.0), (s, m.devices()[0]))
        c = m.device_put(x, sh.SingleDeviceSharding(m.devices()[0]))
        d = m.device_put({"u": x, "v": [x, x]}, s)
        with m.set_mesh(mesh):
            e = m.device_put(x, P(None, "i"))
        return [a, repr(a.sharding), a.committed, b, repr(b.sharding), repr(c.sharding),
                [repr(leaf.sharding) for leaf in jax.tree_util.tree_leaves(d)], e,
                repr(e.sharding)]
    _same(put)
    s = lambda m, sh: sh.NamedSharding(m.make_mesh((1,), ("i",)), sh.PartitionSpec("i"))  # noqa: E731
    _same_error(lambda m, jnp, sh: m.device_put(x, sh.PartitionSpec("i")))
    _same_error(lambda m, jnp, sh: m.device_put((x, x), (s(m, sh),)))
    _same_error(lambda m, jnp, sh: m.device_put((x, x), [s(m, sh), s(m, sh)]))
    _same_error(lambda m, jnp, sh: m.device_put(
        x[0], sh.NamedSharding(m.make_mesh((1,), ("i",)), sh.PartitionSpec("i", None))))
    _same_error(lambda m, jnp, sh: m.device_put((x, x), (s(m, sh), "foo")))


# ---------------------------------------------------------------- jit


def _mesh_s(m, sh, *spec, auto=False):
    types = (sh.AxisType.Auto,) if auto else None
    return sh.NamedSharding(m.make_mesh((1,), ("i",), types), sh.PartitionSpec(*spec))


def test_jit_out_shardings_are_reported():
    x = _x((4, 3), seed=2)

    def run(m, jnp, sh):
        s, sa = _mesh_s(m, sh, "i"), _mesh_s(m, sh, None, "i", auto=True)
        rep = sh.NamedSharding(s.mesh, sh.PartitionSpec())
        f = m.jit(lambda a: (a * 2, {"u": a.sum(), "v": a - 1}),
                  out_shardings=(s, {"u": rep, "v": None}))
        y, d = f(x)
        g = m.jit(lambda a, b: a @ b.T, in_shardings=(s, None), out_shardings=sa)
        z = g(x, x)
        h = m.jit(lambda a: 3, out_shardings=rep)(x)
        w = m.jit(lambda a: a * 2, out_shardings=s).lower(x).compile()(x)
        with m.set_mesh(s.mesh):
            p = m.jit(lambda a: a + 1, in_shardings=sh.PartitionSpec("i"),
                      out_shardings=sh.PartitionSpec(None, "i"))(x)
        # an output left unspecified (None) is not compared: JAX derives its sharding from
        # the computation, gpuarr reports the default SingleDeviceSharding
        return [y, d, repr(y.sharding), y.committed, repr(d["u"].sharding), z,
                repr(z.sharding), h, repr(h.sharding), w, repr(w.sharding), p, repr(p.sharding)]
    _same(run)


def test_jit_shardings_under_transformations():
    x = _x((4,), seed=3)

    def run(m, jnp, sh):
        s = _mesh_s(m, sh, "i")
        f = m.jit(lambda a: jnp.sin(a) * a, in_shardings=s, out_shardings=s)
        return [m.grad(lambda a: f(a).sum())(x), m.vmap(f)(np.stack([x, x + 1])),
                m.jit(f)(x), m.jvp(f, (x,), (np.ones_like(x),))]
    _same(run)


def test_jit_keeps_its_fast_path_without_shardings():
    f = gpuarr.jit(lambda a: a * 2)
    assert f._plain and f._shardings is None
    g = gpuarr.jit(lambda a: a * 2, out_shardings=_mesh_s(gpuarr, gsh, "i"))
    assert not g._plain
    assert float(gpuarr.jit(lambda a: a + 1, in_shardings=(None,), out_shardings=None)(1.0)) == 2


_ONES = (np.ones(4, np.float32),)


def _jit_call(in_s=None, out_s=None, args=_ONES, fun=None, mesh=False, **kw):
    def make(m, jnp, sh):
        ins = in_s(m, sh) if callable(in_s) else in_s
        outs = out_s(m, sh) if callable(out_s) else out_s
        f = m.jit(fun or (lambda *a, **k: a), in_shardings=ins, out_shardings=outs)
        if mesh:
            with m.set_mesh(m.make_mesh((1,), ("i",))):
                return f(*args, **kw)
        return f(*args, **kw)
    return make


@pytest.mark.parametrize("make", [
    _jit_call(lambda m, sh: sh.PartitionSpec("i")),
    _jit_call(None, lambda m, sh: sh.PartitionSpec("i")),
    _jit_call(lambda m, sh: (_mesh_s(m, sh, "i"),), args=(1.0, 2.0)),
    _jit_call(lambda m, sh: (_mesh_s(m, sh, "i"), None), args=(1.0,)),
    _jit_call(lambda m, sh: [_mesh_s(m, sh, "i")], args=(1.0, 2.0)),
    _jit_call(lambda m, sh: ({"a": _mesh_s(m, sh)},), args=({"b": 1.0},)),
    _jit_call(lambda m, sh: _mesh_s(m, sh, "i", None), fun=lambda a: a),
    _jit_call(None, lambda m, sh: _mesh_s(m, sh, "i", None), fun=lambda a: a),
    _jit_call(None, lambda m, sh: _mesh_s(m, sh, "i"), args=(3.0,), fun=lambda a: a * 2),
    _jit_call(None, lambda m, sh: (_mesh_s(m, sh),), fun=lambda a: (a, a)),
    _jit_call(None, lambda m, sh: (_mesh_s(m, sh),), fun=lambda a: a),
    _jit_call(None, lambda m, sh: [_mesh_s(m, sh), None], fun=lambda a: (a, a)),
    _jit_call(None, lambda m, sh: {"a": _mesh_s(m, sh)}, fun=lambda a: {"a": a, "b": a}),
    _jit_call(lambda m, sh: (_mesh_s(m, sh),), fun=lambda a, b: a + b, b=2.0),
    _jit_call(lambda m, sh: (None,), fun=lambda a, b: a + b, b=2.0),
    _jit_call(lambda m, sh: (_mesh_s(m, sh, "i", None),), fun=lambda a: a, mesh=True),
    _jit_call(None, lambda m, sh: sh.PartitionSpec("i", "j"), fun=lambda a: a, mesh=True),
])
def test_jit_sharding_errors_at_call(make):
    _same_error(make)


@pytest.mark.parametrize("kw", [
    lambda m, sh: dict(in_shardings=sh.PartitionSpec("i", "i")),
    lambda m, sh: dict(in_shardings=sh.PartitionSpec("i", sh.PartitionSpec.UNCONSTRAINED)),
    lambda m, sh: dict(out_shardings=sh.NamedSharding(sh.Mesh(np.empty((), dtype=object), ()),
                                                      sh.PartitionSpec())),
    lambda m, sh: dict(in_shardings=_mesh_s(m, sh, "i"), device=m.devices()[0]),
])
def test_jit_sharding_errors_at_jit(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same_error(lambda m, jnp, sh: m.jit(lambda a: a, **kw(m, sh)))


@pytest.mark.jax_cpu_devices
def test_jit_rejects_other_sharding_objects():
    e = _err(lambda: gpuarr.jit(lambda a: a, in_shardings=(object(),)))
    assert isinstance(e, TypeError) and isinstance(e, NotImplementedError)
    assert str(e).startswith("in_shardings leaf specifications are expected to be "
                             "PartitionSpec instances or None, but got <object object")
    # One cpu device: a mesh of two cannot be made (as in JAX).
    with pytest.raises(ValueError, match="Number of devices 1 must be >="):
        big = gsh.NamedSharding(gsh.AbstractMesh((2,), ("i",)), gsh.PartitionSpec("i"))
        gpuarr.jit(lambda a: a, out_shardings=big)(np.ones(4, np.float32))


# ---------------------------------------------------------------- reshard


@pytest.mark.jax_cpu_devices
def test_reshard():
    x = _x((4, 3), seed=4)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        mesh = m.make_mesh((1,), ("i",))
        a = m.reshard(x, sh.NamedSharding(mesh, P("i")))
        b = m.reshard(np.float32(3), sh.NamedSharding(mesh, P()))
        c = m.reshard(x, sh.NamedSharding(mesh.abstract_mesh, P(None, "i")))
        with m.set_mesh(mesh):
            d, e = m.reshard((x, x), P("i"))
            (f,) = m.reshard([x], [P(None)])
        g = m.grad(lambda v: (m.reshard(v, sh.NamedSharding(mesh, P("i"))) ** 2).sum())(x)
        return [a, repr(a.sharding), a.committed, b, repr(b.sharding), c, repr(c.sharding),
                d, repr(d.sharding), repr(e.sharding), f, repr(f.sharding), g]
    _same(run)
    _same_error(lambda m, jnp, sh: m.reshard(x, sh.PartitionSpec("i")))
    _same_error(lambda m, jnp, sh: m.reshard(x, None))
    _same_error(lambda m, jnp, sh: m.reshard(x, sh.SingleDeviceSharding(m.devices()[0])))
    _same_error(lambda m, jnp, sh: m.reshard(x, _mesh_s(m, sh, "i", auto=True)))
    _same_error(lambda m, jnp, sh: m.reshard((x, x), (_mesh_s(m, sh, "i"),)))


def test_auto_and_explicit_axes():
    x = _x(seed=5)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        with m.set_mesh(m.make_mesh((1,), ("i",))):
            a = sh.auto_axes(lambda v: v * 2, out_sharding=P("i"))(x)
            b = sh.auto_axes(lambda v: v * 3)(x, out_sharding=P("i"))
        with m.set_mesh(m.make_mesh((1,), ("i",), (sh.AxisType.Auto,))):
            c = sh.explicit_axes(lambda v: v - 1, in_sharding=P("i"))(x)
        return [a, repr(a.sharding), b, repr(b.sharding), c]
    _same(run)
    _same_error(lambda m, jnp, sh: sh.auto_axes(lambda v: v)(x))
    _same_error(lambda m, jnp, sh: sh.explicit_axes(lambda v: v, in_sharding=None)(x))


# ---------------------------------------------------------------- with_sharding_constraint


@pytest.mark.jax_cpu_devices
def test_with_sharding_constraint_values():
    x = _x((2, 3), seed=6)

    def run(m, jnp, sh):
        wsc = m.lax.with_sharding_constraint
        sa = _mesh_s(m, sh, "i", auto=True)
        single = sh.SingleDeviceSharding(m.devices()[0])
        a = wsc(x, sa)
        b = wsc(np.arange(3.0, dtype=np.float32), sa)
        c, d = wsc((x, x), (sa, single))
        with m.set_mesh(m.make_mesh((1,), ("i",))):
            e = wsc(x, sh.PartitionSpec())
        with m.set_mesh(sa.mesh):
            f = wsc(np.ones(2, np.float32), sh.PartitionSpec("i"))
        return [a, repr(a.sharding), b, c, repr(c.sharding), d, repr(d.sharding), e, f,
                repr(f.sharding),
                m.jit(lambda v: wsc(v * 2, sa))(x),
                m.grad(lambda v: (wsc(v, sa) ** 2).sum())(x),
                m.vmap(lambda v: wsc(v, sa))(x)]
    _same(run)


@pytest.mark.jax_cpu_devices
@pytest.mark.parametrize("make", [
    lambda m, sh, x: m.lax.with_sharding_constraint(x, _mesh_s(m, sh, "i")),
    lambda m, sh, x: m.jit(lambda v: m.lax.with_sharding_constraint(v, _mesh_s(m, sh, "i")))(x),
    lambda m, sh, x: m.lax.with_sharding_constraint(x, sh.PartitionSpec("i")),
    lambda m, sh, x: m.lax.with_sharding_constraint((x, x), (_mesh_s(m, sh, auto=True),)),
    lambda m, sh, x: m.lax.with_sharding_constraint(x, _mesh_s(m, sh, "i", None, auto=True)),
    lambda m, sh, x: m.lax.with_sharding_constraint(x, None),
    lambda m, sh, x: m.lax.with_sharding_constraint(3.0, _mesh_s(m, sh, "i", auto=True)),
    lambda m, sh, x: m.lax.with_sharding_constraint(x, object()),
])
def test_with_sharding_constraint_errors(make):
    x = np.ones(4, np.float32)
    e = _same_error(lambda m, jnp, sh: make(m, sh, x))
    assert not isinstance(e, NotImplementedError) or isinstance(e, TypeError)


@pytest.mark.parametrize("auto", [False, True])
def test_with_sharding_constraint_under_a_mesh(auto):
    def make(m, jnp, sh):
        mesh = m.make_mesh((1,), ("i",), (sh.AxisType.Auto,) if auto else None)
        x = jnp.ones(4)  # made outside the mesh context: not sharded
        with m.set_mesh(mesh):
            return m.lax.with_sharding_constraint(x, sh.PartitionSpec("i"))
    _same_error(make)


def test_with_sharding_constraint_under_a_mesh_context_manager():
    def make(m, jnp, sh):
        mesh = m.make_mesh((1,), ("i",), (sh.AxisType.Auto,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with mesh:
                out = m.lax.with_sharding_constraint(jnp.ones(4), sh.PartitionSpec("i"))
        return out, repr(out.sharding)
    _same(make)


# ---------------------------------------------------------------- shard_map


def _meshes(m, sh):
    auto = (sh.AxisType.Auto,)
    return m.make_mesh((1,), ("i",), auto), m.make_mesh((1, 1), ("i", "j"), auto * 2)


def test_shard_map_signature():
    ref, ours = inspect.signature(jax.shard_map), inspect.signature(gpuarr.shard_map)
    assert list(ours.parameters) == list(ref.parameters)
    for name, p in ours.parameters.items():
        r = ref.parameters[name]
        assert p.kind == r.kind
        assert _norm(repr(p.default)).replace("gpuarr", "jax") == _norm(repr(r.default))


_COLLECTIVES = [
    ("psum", lambda lax, a: lax.psum(a, "i"), "i", ""),
    ("psum_invariant", lambda lax, a: lax.psum(a, "i"), "", ""),
    ("pmean", lambda lax, a: lax.pmean(a, "i"), "i", ""),
    ("pmax", lambda lax, a: lax.pmax(a, "i"), "i", ""),
    ("axis_index", lambda lax, a: a + lax.axis_index("i"), "i", "i"),
    ("axis_index_only", lambda lax, a: lax.axis_index("i")[None], "", "i"),
    ("all_gather", lambda lax, a: lax.all_gather(a, "i"), "i", "i"),
    ("all_gather_tiled", lambda lax, a: lax.all_gather(a, "i", tiled=True), "i", "i"),
    ("all_gather_axis1", lambda lax, a: lax.all_gather(a, "i", axis=1), "i", "i"),
    ("psum_scatter", lambda lax, a: lax.psum_scatter(a, "i", tiled=True), "", "i"),
    ("ppermute", lambda lax, a: lax.ppermute(a, "i", [(0, 0)]), "i", "i"),
    ("all_to_all", lambda lax, a: lax.all_to_all(a, "i", 0, 0, tiled=True), "i", "i"),
    ("scaled", lambda lax, a: a * 2, "", "i"),
]


@pytest.mark.parametrize("name,body,in_spec,out_spec", _COLLECTIVES,
                         ids=[c[0] for c in _COLLECTIVES])
def test_shard_map_collectives_on_size_one_axes(name, body, in_spec, out_spec):
    x = _x((4, 3), seed=7)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        mesh, _ = _meshes(m, sh)
        f = m.shard_map(functools.partial(body, m.lax), mesh=mesh,
                        in_specs=P(*in_spec), out_specs=P(*out_spec))
        out = f(x)
        return out, repr(out.sharding)
    _same(run)


def test_shard_map_two_axes_pytrees_and_statics():
    x, y = _x((4, 2), seed=8), _x((4,), seed=9)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        _, mesh = _meshes(m, sh)
        f = m.shard_map(lambda a, b: m.lax.psum(a, ("i", "j")) + b[:, None],
                        mesh=mesh, in_specs=(P(("i", "j")), P()), out_specs=P())
        g = m.shard_map(lambda d, n: {"s": d["u"] * n, "t": [m.lax.psum(d["v"], "i"), 2.0]},
                        mesh=mesh, in_specs=({"u": P("j"), "v": P("i")}, None),
                        out_specs={"s": P(None, "j"), "t": [P(), P()]})
        h = m.shard_map(lambda a: m.lax.psum(a, "i"), mesh=mesh, in_specs=P("i"),
                        out_specs=P(), axis_names={"i"})
        k = m.shard_map(lambda a: a, mesh=mesh, in_specs=P("i"), out_specs=P(),
                        check_vma=False)
        out_g = g({"u": x, "v": y}, 3)
        return [f(x, y), out_g, h(y), k(y), repr(out_g["s"].sharding)]
    _same(run)


def test_shard_map_as_decorator_and_under_transformations():
    x = _x((3, 4), seed=10)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        mesh, _ = _meshes(m, sh)

        @functools.partial(m.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
        def loss(a):
            return m.lax.psum((jnp.sin(a) * a).sum(), "i")

        @m.shard_map(mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i"))
        def scale(a, w):
            return a * w * (m.lax.axis_index("i") + 1)

        w = np.float32(1.5)
        return [loss(x), m.grad(loss)(x), m.jit(loss)(x), m.vmap(loss)(x),
                m.value_and_grad(lambda a: scale(a, w).sum())(x),
                m.grad(lambda a, b: scale(a, b).sum(), argnums=1)(x, w),
                m.jit(m.vmap(scale, in_axes=(0, None)))(x, w),
                m.jacfwd(lambda a: scale(a, w))(x[0])]
    _same(run)


def test_shard_map_grads_of_replicated_values_follow_check_vma():
    """grad inside the body of a replicated parameter meeting split data is unvarying (JAX's
    check_vma types): out_specs=P() takes it without a pmean, under jit too; with
    check_vma=False, a psum of the loss, a scan and pcast, the same values as JAX."""
    x, w = _x((4, 3), seed=12), _x((3,), seed=13)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        mesh, _ = _meshes(m, sh)

        def loss(w, x):
            return jnp.sum(jnp.sin(x * w) ** 2)

        def scanned(w, x):
            return m.lax.scan(lambda h, v: (jnp.tanh(h * v), None), x, jnp.stack([w, -w]))[0].sum()
        ins = (P(), P("i"))
        grad = m.shard_map(m.grad(loss), mesh=mesh, in_specs=ins, out_specs=P())
        return [grad(w, x), m.jit(grad)(w, x),
                m.shard_map(m.grad(loss), mesh=mesh, in_specs=ins, out_specs=P(),
                            check_vma=False)(w, x),
                m.shard_map(m.grad(lambda w, x: m.lax.psum(loss(w, x), "i")), mesh=mesh,
                            in_specs=ins, out_specs=P())(w, x),
                m.shard_map(m.grad(scanned), mesh=mesh, in_specs=ins, out_specs=P())(w, x),
                m.shard_map(lambda w: m.lax.pcast(w, "i", to="varying") * 2, mesh=mesh,
                            in_specs=P(), out_specs=P("i"))(w)]
    _same(run)


@pytest.mark.parametrize("case", ["varying_output", "pcast_varying", "pcast_to", "pcast_set",
                                  "pcast_outside", "pvary_removed"])
def test_shard_map_check_vma_errors(case):
    x, w = _x((4, 3), seed=14), _x((3,), seed=15)

    def make(m, jnp, sh):
        P = sh.PartitionSpec
        mesh, _ = _meshes(m, sh)
        body = {"varying_output": lambda w, x: m.grad(lambda x: jnp.sum(x * w))(x),
                "pcast_varying": lambda w, x: m.lax.pcast(x, "i", to="varying"),
                "pcast_to": lambda w, x: m.lax.pcast(w, "i", to="bogus"),
                "pcast_set": lambda w, x: m.lax.pcast(w, {"i"}, to="varying")}
        if case == "pcast_outside":
            return m.lax.pcast(jnp.asarray(w), "i", to="varying")
        if case == "pvary_removed":  # JAX 0.10.2 removed it, saying what replaces it
            return m.lax.pvary
        return m.shard_map(body[case], mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(w, x)
    ref, ours = (_err(lambda k=k: make(*MODS[k])) for k in ("jax", "gpuarr"))
    assert type(ours).__name__ == type(ref).__name__, (ref, ours)

    def norm(e):  # JAX names its own wrapper of the function; a printed set has no order
        text = re.sub(r"function '[^']*'", "function f", str(e))
        return re.sub(r"\{('[^{}]*')\}",
                      lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)
    assert norm(ours) == norm(ref)


def test_shard_map_explicit_mode():
    x = _x((4, 2), seed=11)

    def run(m, jnp, sh):
        P = sh.PartitionSpec
        mesh = m.make_mesh((1,), ("i",))
        xs = m.reshard(x, sh.NamedSharding(mesh, P("i")))
        a = m.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(xs)
        b = m.shard_map(lambda v: v + 1, mesh=mesh, in_specs=P(), out_specs=P())(x)
        c = m.shard_map(lambda v: v - 1, mesh=mesh, out_specs=P("i"))(xs)
        d = m.shard_map(lambda v: v * 3, mesh=mesh, out_specs=P())(x)
        with m.set_mesh(mesh):
            e = m.shard_map(lambda v: v / 2, in_specs=P("i"), out_specs=P("i"))(xs)
            f = m.shard_map(lambda v: v, mesh=mesh.abstract_mesh, in_specs=P("i"),
                            out_specs=P("i"))(xs)
        return [a, repr(a.sharding), b, repr(b.sharding), c, repr(c.sharding), d, e,
                repr(e.sharding), f, repr(f.sharding)]
    _same(run)

    def mismatch(sharded):
        def make(m, jnp, sh):
            mesh = m.make_mesh((1,), ("i",))
            P = sh.PartitionSpec
            v = m.device_put(x, sh.NamedSharding(mesh, P("i"))) if sharded else x
            spec = P() if sharded else P("i")
            return m.shard_map(lambda a: a, mesh=mesh, in_specs=spec, out_specs=spec)(v)
        return make
    _same_error(mismatch(False))
    _same_error(mismatch(True))
    _same_error(lambda m, jnp, sh: m.shard_map(
        lambda a: a, mesh=m.make_mesh((1,), ("i",)), in_specs=sh.PartitionSpec("i"),
        out_specs=sh.PartitionSpec("i"))(np.arange(4.0)))


def _sm(body, in_specs, out_specs, mesh=0, args=_ONES, **kw):
    def make(m, jnp, sh):
        P = sh.PartitionSpec
        meshes = (*_meshes(m, sh), None, m.devices())
        ins = in_specs(P) if callable(in_specs) else in_specs
        return m.shard_map(functools.partial(body, m.lax), mesh=meshes[mesh], in_specs=ins,
                           out_specs=out_specs(P), **kw)(*args)
    return make


def _named(fn):
    def a_function(*args):
        return fn(*args)
    return a_function


@pytest.mark.jax_cpu_devices
@pytest.mark.parametrize("make", [
    _sm(lambda lax, a: a, lambda P: P("k"), lambda P: P()),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("k")),
    _sm(lambda lax, a: a, lambda P: P("i", None), lambda P: P("i")),
    _sm(lambda lax, a: a.sum(), lambda P: P("i"), lambda P: P("i")),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("i"), args=(3.0,)),
    _sm(lambda lax, a: a, lambda P: (P("i"), P("i")), lambda P: P("i")),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: (P("i"), P())),
    _sm(lambda lax, a: a, lambda P: 3, lambda P: P("i")),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("i"), mesh=2),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("i"), mesh=3),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("i"), axis_names={"j"}),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P("i"), axis_names=["i"]),
    _sm(lambda lax, a: a, lambda P: P("j"), lambda P: P("j"), mesh=1, axis_names={"i"}),
    _sm(lambda lax, a: a, lambda P: P("i"), lambda P: P(unreduced={"i"})),
])
def test_shard_map_spec_errors(make):
    _same_error(make)


def test_shard_map_missing_specs():
    _same_error(lambda m, jnp, sh: m.shard_map(lambda a: a, mesh=_meshes(m, sh)[0],
                                               out_specs=sh.PartitionSpec())(np.ones(3)))
    _same_error(lambda m, jnp, sh: m.shard_map(lambda a: a)(np.ones(3)))
    _same_error(lambda m, jnp, sh: m.shard_map(3, mesh=_meshes(m, sh)[0],
                                               in_specs=sh.PartitionSpec(),
                                               out_specs=sh.PartitionSpec()))
    _same_error(lambda m, jnp, sh: m.shard_map(
        lambda a: a, mesh=sh.AbstractMesh((1,), ("i",)), in_specs=sh.PartitionSpec("i"),
        out_specs=sh.PartitionSpec("i"))(np.ones(4)))
    _same_error(lambda m, jnp, sh: m.shard_map(
        lambda a: a, mesh=sh.AbstractMesh((2,), ("i",)), in_specs=sh.PartitionSpec("i"),
        out_specs=sh.PartitionSpec("i"))(np.ones(3)))


@pytest.mark.parametrize("make", [
    # JAX names the user's function in this error only when the shard_map is traced (eager
    # calls name an internal helper), so the comparison is made under jit.
    lambda m, sh, P, meshes: m.jit(m.shard_map(_named(lambda a: a), mesh=meshes[0],
                                               in_specs=P("i"), out_specs=P())),
    lambda m, sh, P, meshes: m.jit(m.shard_map(_named(lambda a: m.lax.axis_index("i")),
                                               mesh=meshes[0], in_specs=P(), out_specs=P())),
    lambda m, sh, P, meshes: m.jit(m.shard_map(_named(lambda a: a * 2), mesh=meshes[1],
                                               in_specs=P(("i", "j")), out_specs=P())),
    lambda m, sh, P, meshes: m.jit(m.shard_map(_named(lambda a: m.lax.psum(a, "i")),
                                               mesh=meshes[1], in_specs=P(("i", "j")),
                                               out_specs=P())),
    lambda m, sh, P, meshes: m.jit(m.shard_map(_named(lambda a: (a, a)), mesh=meshes[1],
                                               in_specs=P(("i", "j")),
                                               out_specs=(P("j"), P("i")))),
])
def test_shard_map_replication_errors(make):
    _same_error(lambda m, jnp, sh: make(m, sh, sh.PartitionSpec, _meshes(m, sh))(
        np.ones(4, np.float32)))


def test_shard_map_replication_error_names_the_function_eagerly():
    mesh = _meshes(gpuarr, gsh)[0]
    with pytest.raises(ValueError, match="function 'a_function' was given out_specs which "
                                         "require replication"):
        gpuarr.shard_map(_named(lambda a: a), mesh=mesh, in_specs=gsh.PartitionSpec("i"),
                         out_specs=gsh.PartitionSpec())(np.ones(2, np.float32))


@pytest.mark.jax_cpu_devices
def test_shard_map_mesh_in_context_and_larger_meshes():
    def run(m, jnp, sh):
        mesh = m.make_mesh((1,), ("i",))
        seen = []
        with m.set_mesh(mesh):
            m.shard_map(lambda a: (seen.append(repr(sh.get_abstract_mesh())), a)[1],
                        in_specs=sh.PartitionSpec(), out_specs=sh.PartitionSpec())(1.0)
        return seen
    _same(run)
    # a mesh of two device positions holding the one device twice cannot place data
    wide = gsh.Mesh(np.array(gpuarr.devices() * 2, dtype=object), ("i",))
    assert wide.size == 2 and repr(wide) == "Mesh(axis_sizes=(2,), axis_names=('i',), " \
        "axis_types=(Auto,))"
    with pytest.raises(ValueError, match="more than one position"):
        gpuarr.shard_map(lambda a: a, mesh=wide, in_specs=gsh.PartitionSpec("i"),
                         out_specs=gsh.PartitionSpec("i"))(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="more than one position"):
        gpuarr.device_put(np.ones(4, np.float32), gsh.NamedSharding(wide, gsh.PartitionSpec()))
