"""Assembling Arrays from per-device pieces (make_array_from_callback,
make_array_from_single_device_arrays, make_array_from_process_local_data) and inspecting
shardings (debug.inspect_array_sharding, visualize_sharding, visualize_array_sharding) on
gpuarr's one device. Each check runs the same program on JAX and on gpuarr and compares
values, dtypes, shardings, error classes and messages."""
import contextlib
import io
import re
import sys
import types

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp_ref  # noqa: E402
from jax import sharding as jsh  # noqa: E402
from jax_compare import check_signatures  # noqa: E402

import gpuarr  # noqa: E402
import gpuarr.array_assembly  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr import debug as gdebug  # noqa: E402
from gpuarr import sharding as gsh  # noqa: E402
from gpuarr.array_assembly import (  # noqa: E402
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)

JAX = types.SimpleNamespace(
    lib=jax, jnp=jnp_ref, shd=jsh, debug=jax.debug,
    from_callback=jax.make_array_from_callback,
    from_arrays=jax.make_array_from_single_device_arrays,
    from_local=jax.make_array_from_process_local_data)
GPUARR = types.SimpleNamespace(
    lib=gpuarr, jnp=gnp, shd=gsh, debug=gdebug,
    from_callback=make_array_from_callback,
    from_arrays=make_array_from_single_device_arrays,
    from_local=make_array_from_process_local_data)
BOTH = [JAX, GPUARR]


def _named(m, spec=("x",)):
    return m.shd.NamedSharding(m.lib.make_mesh((1,), ("x",)), m.shd.PartitionSpec(*spec))


def _single(m):
    return m.shd.SingleDeviceSharding(m.lib.devices()[0])


SHARDINGS = {"single": _single, "named": _named}


def _norm(text: str) -> str:
    """A message with what differs only by package or platform left out (class paths, device
    kinds: JAX runs on the cpu here, gpuarr on the default platform, trailing whitespace)."""
    text = re.sub(r"<class '[\w.]+\.(\w+)'>", r"<class '\1'>", text)
    text = re.sub(r"\w+Device\(", "Device(", text)
    return text.replace("<class 'ArrayImpl'>", "<class 'Array'>").strip()


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error raised")


def _same_error(case):
    """`case(m)` raises an error of the same class and message on JAX and on gpuarr."""
    want, got = _err(lambda: case(JAX)), _err(lambda: case(GPUARR))
    assert isinstance(got, type(want)) or type(want).__name__ == "InvalidInputException" \
        and isinstance(got, TypeError), (got, want)
    assert _norm(str(got)) == _norm(str(want))


def _describe(x):
    """What must agree between JAX's result and gpuarr's."""
    s = x.sharding
    return (np.asarray(x).tolist(), x.shape, x.dtype, x.weak_type, x.committed,
            type(s).__name__, len(s.device_set), _norm(repr(s)))


def _same_result(case):
    want, got = case(JAX), case(GPUARR)
    assert type(got) is gpuarr.Array
    assert _describe(got) == _describe(want)
    return got


# ---------------------------------------------------------------- make_array_from_callback


@pytest.mark.parametrize("kind", SHARDINGS)
def test_callback_assembles_the_array(kind):
    data = np.random.default_rng(0).normal(size=(4, 3))
    calls = {"jax": [], "gpuarr": []}

    def case(m):
        seen = calls["jax" if m is JAX else "gpuarr"]
        return m.from_callback((4, 3), SHARDINGS[kind](m), lambda i: seen.append(i) or data[i])

    _same_result(case)
    assert calls["gpuarr"] == calls["jax"] == [(slice(None), slice(None))]


@pytest.mark.parametrize("value", [
    np.arange(6.0).reshape(2, 3), np.arange(6).reshape(2, 3), np.ones((2, 3), np.uint8),
    np.ones((2, 3), np.bool_), np.ones((2, 3), np.complex128), np.ones((2, 3), np.float16),
], ids=lambda v: v.dtype.name)
def test_callback_canonicalises_dtypes(value):
    _same_result(lambda m: m.from_callback((2, 3), _named(m), lambda i: value[i]))


@pytest.mark.parametrize("value", [2.5, 3, True, 1j, np.float64(2.0), np.int8(4)],
                         ids=lambda v: type(v).__name__)
def test_callback_scalars(value):
    _same_result(lambda m: m.from_callback((), _single(m), lambda i: value))


def test_callback_explicit_dtype():
    data = np.arange(4, dtype=np.int32)
    _same_result(lambda m: m.from_callback((4,), _named(m), lambda i: data, dtype=np.int32))
    with pytest.warns(UserWarning, match="float64"):
        got = make_array_from_callback((2,), _named(GPUARR), lambda i: np.ones(2), np.float64)
    assert got.dtype == np.float32


def test_callback_array_is_reused():
    for m in BOTH:
        x = m.lib.device_put(m.jnp.arange(6.0).reshape(2, 3), _single(m))
        w = m.jnp.asarray(2.0)  # weakly typed: the result is not
        got = m.from_callback((2, 3), _named(m), lambda i, x=x: x)
        scalar = m.from_callback((), _single(m), lambda i, w=w: w)
        assert got is not x and got.committed and not scalar.weak_type and w.weak_type
        assert type(got.sharding).__name__ == "NamedSharding"
        np.testing.assert_array_equal(np.asarray(got), np.asarray(x))
    x = gpuarr.device_put(gnp.arange(3.0), gpuarr.devices()[0])
    assert make_array_from_callback((3,), _single(GPUARR), lambda i: x)._buffer is x._buffer


def test_callback_shards_report_the_pieces():
    data = np.arange(8.0).reshape(2, 4)
    got = make_array_from_callback((2, 4), _named(GPUARR), lambda i: data[i])
    want = jax.make_array_from_callback((2, 4), _named(JAX), lambda i: data[i])
    (g,), (w,) = got.addressable_shards, want.addressable_shards
    assert g.index == w.index and g.replica_id == w.replica_id
    np.testing.assert_array_equal(np.asarray(g.data), np.asarray(w.data))
    assert got.is_fully_replicated == want.is_fully_replicated


BAD_CALLBACKS = {
    "short": lambda i: np.zeros((2, 3), np.float32),
    "float_scalar": lambda i: 3.0,
    "bool_scalar": lambda i: True,
    "list": lambda i: [1, 2],
    "object_dtype": lambda i: np.ones((4, 3), object),
    "string": lambda i: "ab",
}


@pytest.mark.parametrize("name", BAD_CALLBACKS)
@pytest.mark.parametrize("kind", SHARDINGS)
def test_callback_errors(name, kind):
    _same_error(lambda m: m.from_callback((4, 3), SHARDINGS[kind](m), BAD_CALLBACKS[name]))


def test_callback_wrong_shape_names_explicit_axes():
    def sharding(m, spec):
        mesh = m.lib.make_mesh((1, 1), ("x", "y"), axis_types=(m.shd.AxisType.Auto,
                                                               m.shd.AxisType.Explicit))
        return m.shd.NamedSharding(mesh, m.shd.PartitionSpec(*spec))
    for spec in [("x",), (("x", "y"),), (None, "y"), ()]:
        _same_error(lambda m, spec=spec: m.from_callback((4, 3), sharding(m, spec),
                                                         lambda i: np.zeros((2, 3), np.float32)))


def test_callback_dtype_mismatch_and_bad_sharding():
    data = np.zeros((2,), np.float32)
    _same_error(lambda m: m.from_callback((2,), _named(m), lambda i: data, dtype=np.int32))
    got = _err(lambda: make_array_from_callback((2,), gsh.PartitionSpec("x"), lambda i: data))
    want = _err(lambda: jax.make_array_from_callback((2,), jsh.PartitionSpec("x"), lambda i: data))
    assert type(got) is type(want) is TypeError
    assert str(got).split(" of type")[0] == str(want).split(" of type")[0]


def test_callback_rank_too_small_for_spec():
    with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
        make_array_from_callback((4,), _named(GPUARR, (None, "x")), lambda i: np.zeros(4))


def test_callback_inside_jit_is_an_error():
    def case(m):
        f = lambda y: m.from_callback((3,), _named(m), lambda i: y)  # noqa: E731
        return m.lib.jit(f)(m.jnp.ones(3))
    want, got = _err(lambda: case(JAX)), _err(lambda: case(GPUARR))
    assert isinstance(got, gpuarr.errors.UnexpectedTracerError)
    assert type(want).__name__ == "UnexpectedTracerError"
    assert str(got).splitlines()[0] == str(want).splitlines()[0]


# ---------------------------------------------------------------- single-device arrays


@pytest.mark.parametrize("kind", SHARDINGS)
@pytest.mark.parametrize("container", [list, tuple])
def test_single_device_arrays(kind, container):
    data = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)

    def case(m):
        x = m.jnp.asarray(data)
        return m.from_arrays((4, 3), SHARDINGS[kind](m), container([x]))

    _same_result(case)
    x = gnp.asarray(data)
    again = make_array_from_single_device_arrays((4, 3), SHARDINGS[kind](GPUARR), [x])
    assert again is not x and again._buffer is x._buffer and not x.committed


def test_single_device_arrays_weak_input():
    _same_result(lambda m: m.from_arrays((), _single(m), [m.jnp.asarray(2.0)]))


def test_single_device_arrays_dtype():
    _same_result(lambda m: m.from_arrays((3,), _named(m), [m.jnp.arange(3)], dtype=np.int32))


ARRAYS_ERRORS = {
    "empty": lambda m, x: m.from_arrays((4, 3), _named(m), []),
    "empty_with_dtype": lambda m, x: m.from_arrays((4, 3), _named(m), [], dtype=np.float32),
    "two": lambda m, x: m.from_arrays((4, 3), _named(m), [x, x]),
    "two_dtypes": lambda m, x: m.from_arrays((4, 3), _named(m), [x, x.astype(np.int32)]),
    "shape": lambda m, x: m.from_arrays((4, 2), _named(m), [x]),
    "global_shape": lambda m, x: m.from_arrays((5, 3), _single(m), [x]),
    "dtype": lambda m, x: m.from_arrays((4, 3), _named(m), [x], dtype=np.int32),
    "int_dtype": lambda m, x: m.from_arrays((4, 3), _named(m), [x.astype(np.int32)],
                                            dtype=np.float32),
    "numpy_element": lambda m, x: m.from_arrays((4, 3), _named(m), [np.asarray(x)]),
    "not_a_list": lambda m, x: m.from_arrays((4, 3), _named(m), x),
    "iterator": lambda m, x: m.from_arrays((4, 3), _named(m), iter([x])),
    "dict": lambda m, x: m.from_arrays((4, 3), _named(m), {0: x}),
}


@pytest.mark.parametrize("name", ARRAYS_ERRORS)
def test_single_device_arrays_errors(name):
    _same_error(lambda m: ARRAYS_ERRORS[name](m, m.jnp.zeros((4, 3))))


def test_single_device_arrays_memory_kind_mismatch():
    def case(m):
        s = m.shd.SingleDeviceSharding(m.lib.devices()[0], memory_kind="pinned_host")
        return m.from_arrays((3,), s, [m.jnp.zeros(3)])
    want, got = _err(lambda: case(JAX)), _err(lambda: case(GPUARR))
    assert type(got) is type(want) is ValueError
    tail = "Got sharding with memory kind 'pinned_host' and a buffer with memory_kind 'device'"
    assert str(got).endswith(tail) and str(want).endswith(tail)


def test_single_device_arrays_inside_jit_is_an_error():
    def case(m):
        f = lambda y: m.from_arrays((3,), _named(m), [y])  # noqa: E731
        return m.lib.jit(f)(m.jnp.ones(3))
    want, got = _err(lambda: case(JAX)), _err(lambda: case(GPUARR))
    assert type(got) is type(want) is ValueError
    assert str(got).split(", but")[0] == str(want).split(", but")[0]


# ---------------------------------------------------------------- process-local data


@pytest.mark.parametrize("kind", SHARDINGS)
@pytest.mark.parametrize("global_shape", [None, (4, 3)])
def test_process_local_data(kind, global_shape):
    data = np.random.default_rng(2).normal(size=(4, 3))
    _same_result(lambda m: m.from_local(SHARDINGS[kind](m), data, global_shape))


def test_process_local_data_scalar_keeps_weak_type():
    _same_result(lambda m: m.from_local(_single(m), 2.0))
    _same_result(lambda m: m.from_local(_single(m), m.jnp.asarray(3.0)))


def test_process_local_data_pytrees():
    rng = np.random.default_rng(3)
    data = {"a": rng.normal(size=(4, 3)), "b": np.arange(3)}

    def case(m, sharding, shapes):
        out = m.from_local(sharding(m), data, shapes)
        return [_describe(out[k]) for k in ("a", "b")]

    both = lambda m: {"a": _named(m), "b": _single(m)}  # noqa: E731
    for sharding in (_named, both):
        for shapes in (None, {"a": (4, 3), "b": (3,)}, {"a": None, "b": (3,)}):
            assert case(GPUARR, sharding, shapes) == case(JAX, sharding, shapes)


def test_process_local_data_with_mesh_in_context():
    data = np.arange(6.0).reshape(3, 2)

    def case(m):
        with m.lib.set_mesh(m.lib.make_mesh((1,), ("x",))):
            return m.from_local(m.shd.PartitionSpec("x"), data)
    _same_result(case)


LOCAL_ERRORS = {
    "global_shape": lambda m, d: m.from_local(_named(m), d, (8, 3)),
    "global_rank": lambda m, d: m.from_local(_named(m), d, (4,)),
    "list_shape": lambda m, d: m.from_local(_named(m), d, [4, 3]),
    "broadcast_shape": lambda m, d: m.from_local(_named(m), {"a": d, "b": d[0]}, (4, 3)),
    "tree_shapes": lambda m, d: m.from_local(_named(m), {"a": d, "b": d[0]},
                                             {"a": (4, 3), "b": (4,)}),
    "sharding_prefix": lambda m, d: m.from_local([_named(m)], [d, d]),
    "spec_without_mesh": lambda m, d: m.from_local(m.shd.PartitionSpec("x"), d),
}


@pytest.mark.parametrize("name", LOCAL_ERRORS)
def test_process_local_data_errors(name):
    data = np.zeros((4, 3), np.float32)
    _same_error(lambda m: LOCAL_ERRORS[name](m, data))


# ---------------------------------------------------------------- inspect_array_sharding


def _inspected(m, value):
    seen = []
    assert m.debug.inspect_array_sharding(value, callback=seen.append) is None
    return seen


def test_inspect_eager_gives_the_arrays_sharding():
    def case(m):
        x = m.jnp.arange(4.0)
        tree = {"a": x, "b": [m.lib.device_put(x, _named(m)), m.lib.device_put(x, _single(m))]}
        return [_norm(repr(s)) for s in _inspected(m, x) + _inspected(m, tree)]
    assert case(GPUARR) == case(JAX)
    assert all(isinstance(s, gsh.Sharding) for s in _inspected(GPUARR, gnp.ones(2)))


@pytest.mark.parametrize("transform", ["vmap", "grad", "jvp"])
def test_inspect_under_vmap_and_autodiff_is_eager(transform):
    def case(m):
        seen = []

        def f(y):
            m.debug.inspect_array_sharding(y, callback=seen.append)
            return (y * 2.0).sum()

        x = m.lib.device_put(m.jnp.ones((2, 3)), _named(m, ()))
        if transform == "vmap":
            m.lib.vmap(f)(x)
        elif transform == "grad":
            m.lib.grad(f)(x)
        else:
            m.lib.jvp(f, (x,), (m.jnp.ones((2, 3)),))
        return [repr(s) for s in seen]
    assert case(GPUARR) == case(JAX)


def test_inspect_under_jit_calls_back_when_compiling():
    def case(m):
        seen = []

        def f(y):
            m.debug.inspect_array_sharding(y, callback=seen.append)
            return y + 1.0

        g = m.lib.jit(f)
        g(m.jnp.ones(3))
        g(m.jnp.ones(3))  # cached: no second call back
        first = len(seen)
        g(m.jnp.ones(4))  # a new shape is compiled again
        return first, len(seen), seen

    (n1, n2, seen), (w1, w2, _) = case(GPUARR), case(JAX)
    assert (n1, n2) == (w1, w2) == (1, 2)
    device = gpuarr.devices()[0]
    for s in seen:
        assert isinstance(s, gsh.Sharding) and s.device_set == {device}
        assert s.is_fully_replicated and s.shard_shape((3,)) == (3,)


def test_inspect_under_jit_with_a_mesh():
    def case(m):
        seen = []
        with m.lib.set_mesh(m.lib.make_mesh((1,), ("x",))):
            m.lib.jit(lambda y: m.debug.inspect_array_sharding(
                y, callback=seen.append) or y)(m.jnp.ones(3))
        return [repr(s) for s in seen]
    assert case(GPUARR) == case(JAX)


def test_inspect_under_jit_of_vmap():
    seen = []
    f = lambda y: gdebug.inspect_array_sharding(y, callback=seen.append) or y  # noqa: E731
    gpuarr.jit(gpuarr.vmap(f))(gnp.ones((2, 3)))
    assert len(seen) == 1 and isinstance(seen[0], gsh.SingleDeviceSharding)


def test_inspect_errors():
    _same_error(lambda m: m.debug.inspect_array_sharding("s", callback=print))
    _same_error(lambda m: m.debug.inspect_array_sharding(m.jnp.ones(2), print))
    with pytest.raises(AttributeError, match="has no attribute 'sharding'"):
        gdebug.inspect_array_sharding(np.ones(2), callback=print)


# ---------------------------------------------------------------- visualize


def _printed(fn) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    return out.getvalue()


LABEL = f"{ {'cuda': 'GPU'}.get(gpuarr.devices()[0].platform, gpuarr.devices()[0].platform.upper())} 0"


def _box(width, rows, label=LABEL):
    """The expected drawing: `rows` lines inside, the label on the middle one (the box grows to
    hold a label wider than `width`, as the native platform's `NATIVE 0`)."""
    width = max(width, len(label))
    top = (rows - 1) // 2
    left = (width - len(label)) // 2
    line = "│" + " " * left + label + " " * (width - left - len(label)) + "│"
    blank = "│" + " " * width + "│"
    return "\n".join(["┌" + "─" * width + "┐", *[blank] * top, line,
                      *[blank] * (rows - 1 - top), "└" + "─" * width + "┘"]) + "\n"


@pytest.mark.parametrize("shape,kwargs,width,rows", [
    ((8,), {}, 7, 1), ((1,), {}, 23, 1), ((4, 3), {}, 15, 9), ((40, 3), {}, 7, 9),
    ((3, 40), {}, 78, 9), ((4, 3), {"scale": 2.0}, 35, 19), ((4, 3), {"min_width": 30}, 28, 9),
    ((4, 3), {"max_width": 12}, 10, 9), ((4, 3), {"scale": 0.1}, 7, 1),
])
def test_visualize_sharding_draws_the_box(shape, kwargs, width, rows):
    for sharding in (_named(GPUARR), _single(GPUARR)):
        got = _printed(lambda s=sharding: gdebug.visualize_sharding(shape, s, **kwargs))
        assert got == _box(width, rows)


def test_visualize_sharding_matches_jax_with_rich():
    pytest.importorskip("rich")
    if len(LABEL) != len("CPU 0"):
        pytest.skip(f"JAX draws 'CPU 0' boxes; the default platform's label {LABEL!r} is wider")
    for shape in [(8,), (4, 3), (3, 40), (100, 100)]:
        want = _printed(lambda: jax.debug.visualize_sharding(shape, _named(JAX)))
        got = _printed(lambda: gdebug.visualize_sharding(shape, _named(GPUARR)))
        assert re.sub(r"\bGPU ", "CPU ", got) == want   # JAX runs on the cpu here


def test_visualize_without_rich_prints_plain_text(monkeypatch):
    monkeypatch.setitem(sys.modules, "rich.console", None)  # as if rich were not installed
    assert _printed(lambda: gdebug.visualize_sharding((8,), _named(GPUARR))) == _box(7, 1)


@pytest.mark.parametrize("shape", [(), (2, 3, 4)])
def test_visualize_sharding_rank_error(shape):
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        gdebug.visualize_sharding(shape, _named(GPUARR))


def test_visualize_array_sharding():
    x = gpuarr.device_put(gnp.ones((4, 3)), _named(GPUARR, ()))
    assert _printed(lambda: gdebug.visualize_array_sharding(x)) == _box(15, 9)
    assert _printed(lambda: gdebug.visualize_array_sharding(gnp.ones(5))) == _box(7, 1)
    g = gpuarr.jit(lambda y: gdebug.visualize_array_sharding(y) or y * 2)
    assert LABEL in _printed(lambda: g(gnp.ones(3)))  # drawn when compiled...
    assert _printed(lambda: g(gnp.ones(3))) == ""  # ...not when the cached program runs


def test_signatures_match_jax():
    check_signatures(gpuarr.array_assembly, jax, gpuarr.array_assembly.__all__)
    check_signatures(gdebug, jax.debug, ["inspect_array_sharding", "visualize_array_sharding",
                                         "visualize_sharding"])
