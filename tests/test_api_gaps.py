"""JAX's smaller top-level names and jax.dtypes names, compared with JAX: config-option context
managers (defaults, validation errors, honoured options), effects_barrier, live_arrays,
copy_to_host_async, process_indices, host_ids, make_user_context, gpuarr.version, and
dtypes.itemsize_bits / scalar_type_of / extended / prng_key."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import dtypes

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

from jax_compare import same_error  # noqa: E402

BOOL_OPTIONS = ["allow_f16_reductions", "debug_key_reuse", "enable_checks", "enable_custom_prng",
                "no_execution", "no_tracing", "softmax_custom_jvp", "threefry_partitionable",
                "thread_guard", "auto_pcast", "remove_size_one_mesh_axis_from_type",
                "jax2tf_associative_scan_reductions"]
ENUM_OPTIONS = {  # option -> valid values other than the default
    "array_garbage_collection_guard": ["allow", "log", "fatal", None],
    "default_prng_impl": ["threefry2x32"],
    "legacy_prng_key": ["warn", "error", "allow"],
    "transfer_guard_host_to_device": ["allow", "log", "disallow", "log_explicit",
                                      "disallow_explicit", None],
    "transfer_guard_device_to_device": ["log", "disallow_explicit"],
    "transfer_guard_device_to_host": ["disallow", "log_explicit"],
}
ALL_OPTIONS = BOOL_OPTIONS + list(ENUM_OPTIONS)


def _full(name):
    return name if name.startswith("jax2tf_") else "jax_" + name


def _read(module, name):
    return getattr(module.config, _full(name))


# ---------------------------------------------------------------- config options


def test_option_defaults_and_states_match_jax():
    for name in ALL_OPTIONS:
        ours, theirs = getattr(gpuarr, name), getattr(jax, name)
        assert repr(_read(gpuarr, name)) == repr(_read(jax, name)), name
        assert repr(ours.value) == repr(theirs.value), name
        assert ours.name == theirs.name == _full(name)
        assert ours.__name__ == theirs.__name__ == name
        assert gpuarr.config.read(_full(name)) == _read(jax, name)
        same_error(lambda: bool(ours), lambda: bool(theirs))
    assert gpuarr.config.jax_transfer_guard is None is jax.config.jax_transfer_guard
    # The legacy_prng_key value is an enum member equal to its string, as JAX's StrEnum.
    value = gpuarr.config.jax_legacy_prng_key
    assert value == "allow" and str(value) == str(jax.config.jax_legacy_prng_key) == "allow"
    assert f"{value}" == "allow" and type(value).__name__ == "LegacyPrngKeyState"


def test_context_managers_set_restore_and_match_jax():
    for name in ALL_OPTIONS:
        ours, theirs = getattr(gpuarr, name), getattr(jax, name)
        values = [not _read(jax, name)] if name in BOOL_OPTIONS else ENUM_OPTIONS[name]
        for v in values:
            before = _read(gpuarr, name)
            with ours(v), theirs(v):
                assert repr(_read(gpuarr, name)) == repr(_read(jax, name)), (name, v)
                assert repr(ours.value) == repr(theirs.value)
            assert _read(gpuarr, name) == before
    # Bool options default to True in a `with`; the others need a value, as in JAX.
    with gpuarr.enable_checks(), jax.enable_checks():
        assert gpuarr.config.jax_enable_checks is True is jax.config.jax_enable_checks
    for name in ENUM_OPTIONS:
        same_error(lambda: getattr(gpuarr, name)(), lambda: getattr(jax, name)())

    @gpuarr.debug_key_reuse(True)  # a context manager doubles as a decorator
    def read():
        return gpuarr.config.jax_debug_key_reuse
    assert read() is True and gpuarr.config.jax_debug_key_reuse is False


def test_update_and_validation_errors_match_jax():
    bad = [("array_garbage_collection_guard", "nope"), ("array_garbage_collection_guard", 1),
           ("transfer_guard", "nope"), ("transfer_guard_host_to_device", "nope"),
           ("transfer_guard_device_to_host", 3), ("legacy_prng_key", "nope"),
           ("legacy_prng_key", 3), ("default_prng_impl", "nope"), ("default_prng_impl", 3)]
    for name, value in bad:
        before = _read(gpuarr, name)
        same_error(lambda: gpuarr.config.update("jax_" + name, value),
                   lambda: jax.config.update("jax_" + name, value))
        assert _read(gpuarr, name) == before  # a rejected value changes nothing
        if name != "transfer_guard":  # the context manager checks when it is made
            same_error(lambda: getattr(gpuarr, name)(value), lambda: getattr(jax, name)(value))
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        with gpuarr.transfer_guard("nope"):
            pass
    gpuarr.config.update("jax_legacy_prng_key", "warn")
    assert repr(gpuarr.config.jax_legacy_prng_key) == "<LegacyPrngKeyState.WARN: 'warn'>"
    gpuarr.config.update("jax_legacy_prng_key", type(gpuarr.config.jax_legacy_prng_key).ERROR)
    assert gpuarr.config.jax_legacy_prng_key == "error"
    for name in BOOL_OPTIONS:
        gpuarr.config.update(_full(name), not _read(jax, name))
        assert _read(gpuarr, name) is (not _read(jax, name))


def test_default_prng_impl_supports_threefry_only():
    gpuarr.config.update("jax_default_prng_impl", "threefry2x32")
    for impl in ("rbg", "unsafe_rbg", "threefry4x32", "philox2x32"):
        with pytest.raises(NotImplementedError, match=f"jax_default_prng_impl='{impl}' is not "
                                                      "supported: gpuarr implements only"):
            gpuarr.config.update("jax_default_prng_impl", impl)
        with pytest.raises(NotImplementedError):
            gpuarr.default_prng_impl(impl)
    assert gpuarr.config.jax_default_prng_impl == "threefry2x32"


def test_transfer_guard_sets_every_direction_as_jax():
    directions = ["transfer_guard_host_to_device", "transfer_guard_device_to_device",
                  "transfer_guard_device_to_host"]

    def levels(module):
        return [_read(module, d) for d in directions]

    for module in (gpuarr, jax):
        module.config.update("jax_transfer_guard_device_to_host", "log")
        with module.transfer_guard("disallow"):
            assert levels(module) == ["disallow"] * 3
            assert module.config.jax_transfer_guard == "disallow"
        assert levels(module) == [None, None, "log"] and module.config.jax_transfer_guard is None
        module.config.update("jax_transfer_guard", "log_explicit")
        assert levels(module) == ["log_explicit"] * 3
        module.config.update("jax_transfer_guard", None)
        assert levels(module) == [None] * 3
    x = gpuarr.numpy.arange(3.0)
    with gpuarr.transfer_guard("disallow"):  # stored only: gpuarr checks no transfers
        np.testing.assert_array_equal(np.asarray(x + np.ones(3, np.float32)), [1, 2, 3])


# ---------------------------------------------------------------- honoured options


def test_no_tracing_raises_on_retrace_as_jax():
    def f(x):
        return x * 2.0

    ours, theirs = gpuarr.jit(f), jax.jit(f)
    x = np.arange(3, dtype=np.float32)
    ours(x), theirs(x)
    with gpuarr.no_tracing(True), jax.no_tracing(True):
        np.testing.assert_array_equal(np.asarray(ours(x)), [0, 2, 4])  # cached: no trace
        y = np.ones(4, np.float32)
        same_error(lambda: ours(y), lambda: theirs(y))
        with pytest.raises(RuntimeError, match=r"re-tracing function f at .*test_api_gaps\.py:"
                                               r"\d+ for `jit`, but 'no_tracing' is set"):
            gpuarr.grad(lambda v: ours(v).sum())(x)  # jit under a transformation traces
    np.testing.assert_array_equal(np.asarray(ours(y)), [2, 2, 2, 2])


def test_no_execution_raises_when_jit_runs_as_jax():
    def g(x):
        return x + 1.0

    ours, theirs = gpuarr.jit(g), jax.jit(g)
    x = jnp.arange(3.0)
    ours(x), ours(x)  # the second call fills the fast path
    compiled = gpuarr.jit(g).lower(x).compile()
    theirs_compiled = jax.jit(g).lower(np.arange(3.0, dtype=np.float32)).compile()
    with gpuarr.no_execution(True), jax.no_execution(True):
        xs = np.arange(3.0, dtype=np.float32)
        same_error(lambda: ours(x), lambda: theirs(xs))
        same_error(lambda: compiled(x), lambda: theirs_compiled(xs))
        same_error(lambda: gpuarr.vmap(ours)(x), lambda: jax.vmap(theirs)(xs))
        with pytest.raises(RuntimeError, match=r"execute function jit\(g\), but the "
                                               "no_execution config option is set"):
            gpuarr.jit(g)(np.ones(5, np.float32))  # a new signature compiles, then refuses
    np.testing.assert_array_equal(np.asarray(ours(x)), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(compiled(x)), [1, 2, 3])


def test_threefry_partitionable_false_is_refused():
    key, jkey = gpuarr.random.key(7), jax.random.key(7)
    want = np.asarray(jax.random.uniform(jkey, (5,)))
    np.testing.assert_array_equal(np.asarray(gpuarr.random.uniform(key, (5,))), want)
    draw = gpuarr.jit(lambda k: gpuarr.random.uniform(k, (5,)))
    np.testing.assert_array_equal(np.asarray(draw(key)), want)
    with gpuarr.threefry_partitionable(False):
        for fn in (lambda: gpuarr.random.uniform(key, (5,)), lambda: gpuarr.random.split(key),
                   lambda: gpuarr.random.normal(key, ()), lambda: draw(key)):
            with pytest.raises(NotImplementedError, match="only the partitionable threefry "
                                                          "layout"):
                fn()
        # fold_in does not depend on the layout (as in JAX), so it still works.
        np.testing.assert_array_equal(
            np.asarray(gpuarr.random.key_data(gpuarr.random.fold_in(key, 3))),
            np.asarray(jax.random.key_data(jax.random.fold_in(jkey, 3))))
    np.testing.assert_array_equal(np.asarray(draw(key)), want)


def test_make_user_context_retraces_as_jax():
    counts = []
    for module in (gpuarr, jax):
        traces = []

        @module.jit
        def f(x):
            traces.append(1)
            return x * 2.0

        ctx = module.make_user_context(None)
        seen = [ctx.value]
        f(1.0)
        for v in (1, 2, 1, None):
            with ctx(v):
                f(1.0)
                seen.append(ctx.value)
        seen.append(ctx.get_global())
        ctx.set_global(5)
        assert float(f(1.0)) == 2.0
        counts.append((len(traces), seen, ctx.value))
    assert counts[0] == counts[1] == (4, [None, 1, 2, 1, None, None], 5)


# ---------------------------------------------------------------- functions and modules


def test_effects_barrier_processes_and_host_ids_match_jax():
    printed = []
    gpuarr.jit(lambda x: gpuarr.debug.callback(printed.append, x) or x)(1.0)
    assert gpuarr.effects_barrier() is None is jax.effects_barrier()
    assert len(printed) == 1  # callbacks have run before the call returns
    assert gpuarr.process_indices() == jax.process_indices() == [0]
    for module in (gpuarr, jax):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert module.host_ids() == [0]
        assert len(w) == 1 and w[0].category is UserWarning
        assert str(w[0].message) == ("jax.process_indexs has been renamed to "
                                     "jax.process_indices. This alias will eventually be "
                                     "removed; please update your code.")


def test_live_arrays():
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    b = a * 2
    live = gpuarr.live_arrays()
    assert isinstance(live, list) and all(type(x) is gpuarr.Array for x in live)
    assert any(x is a for x in live) and any(x is b for x in live)
    assert any(x is b for x in gpuarr.live_arrays(gpuarr.default_backend()))
    b_id = id(b)
    b.delete()
    assert not any(x is b for x in gpuarr.live_arrays())
    c = a + 1
    c_id = id(c)
    del b, c  # freed by reference counting
    assert not any(id(x) in (b_id, c_id) for x in gpuarr.live_arrays())
    with pytest.raises(RuntimeError):
        gpuarr.live_arrays("no_such_platform")


def test_copy_to_host_async_on_pytrees_as_jax():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(4).astype(np.float32)
    tree = {"a": jnp.asarray(v), "b": [3, "text", None], "k": gpuarr.random.key(0)}
    assert gpuarr.copy_to_host_async(tree) is tree
    assert tree["a"].copy_to_host_async() is None
    jtree = {"a": jjnp.asarray(v), "b": [3, "text", None]}
    assert jax.copy_to_host_async(jtree) is jtree and jtree["a"].copy_to_host_async() is None
    np.testing.assert_array_equal(np.asarray(tree["a"]), v)


def test_version_module():
    from gpuarr import version
    assert gpuarr.version is version
    assert version.__version__ == version._version == gpuarr.__version__
    assert gpuarr.__version_info__ == version.__version_info__
    assert version.__version_info__ == tuple(int(p) for p in version.__version__.split("."))
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == version.__version__
    # Same shape as jax.version.
    assert isinstance(jax.version.__version__, str) and isinstance(jax.__version_info__, tuple)


# ---------------------------------------------------------------- gpuarr.dtypes


def test_itemsize_bits_matches_jax():
    import ml_dtypes
    for dt in [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
               np.complex128, "int32", np.dtype("float16"), int, float]:
        assert dtypes.itemsize_bits(dt) == jax.dtypes.itemsize_bits(dt), dt
    for bad in [None, dtypes.float0, "V8"]:
        same_error(lambda: dtypes.itemsize_bits(bad), lambda: jax.dtypes.itemsize_bits(bad))
    same_error(lambda: dtypes.itemsize_bits(gpuarr.random.key(0).dtype),
               lambda: jax.dtypes.itemsize_bits(jax.random.key(0).dtype))


def test_scalar_type_of_matches_jax():
    import ml_dtypes
    rng = np.random.default_rng(2)
    values = [1, 1.5, True, 2j, np.int8(3), np.uint64(4), np.float16(2), np.complex64(1j),
              ml_dtypes.bfloat16(1), rng.standard_normal(3).astype(np.float32),
              np.ones(2, np.uint8), np.zeros(2, bool)]
    for v in values:
        assert dtypes.scalar_type_of(v) is jax.dtypes.scalar_type_of(v), repr(v)
    for ours, theirs in [(jnp.ones(2, jnp.bfloat16), jjnp.ones(2, jjnp.bfloat16)),
                         (jnp.zeros((), jnp.complex64), jjnp.zeros((), jjnp.complex64)),
                         (jnp.arange(3), jjnp.arange(3))]:
        assert dtypes.scalar_type_of(ours) is jax.dtypes.scalar_type_of(theirs)
    for bad in [np.array(["a"]), object()]:
        with pytest.raises(TypeError):
            dtypes.scalar_type_of(bad)
        with pytest.raises(TypeError):
            jax.dtypes.scalar_type_of(bad)


def test_extended_and_prng_key_dtypes_match_jax():
    ours, theirs = gpuarr.random.key(0).dtype, jax.random.key(0).dtype
    assert str(ours) == str(theirs) == "key<fry>"
    for a, b in [(dtypes.prng_key, jax.dtypes.prng_key), (dtypes.extended, jax.dtypes.extended),
                 (np.generic, np.generic), (np.integer, np.integer), (np.void, np.void),
                 (np.uint32, np.uint32)]:
        want = jjnp.issubdtype(theirs, b)
        assert jnp.issubdtype(ours, a) is want and dtypes.issubdtype(ours, a) is want, a
    pairs = [(np.float32, "extended"), ("prng_key", "extended"), ("extended", "prng_key"),
             ("prng_key", np.generic), (np.uint32, "prng_key")]
    for a, b in pairs:
        mine = [getattr(dtypes, t) if isinstance(t, str) else t for t in (a, b)]
        jaxs = [getattr(jax.dtypes, t) if isinstance(t, str) else t for t in (a, b)]
        assert jnp.issubdtype(*mine) is bool(jjnp.issubdtype(*jaxs)), (a, b)
    assert issubclass(dtypes.prng_key, dtypes.extended) and issubclass(dtypes.extended,
                                                                       np.generic)
    same_error(dtypes.extended, jax.dtypes.extended)


def test_listed_jax_names_are_all_present():
    names = {"allow_f16_reductions", "array_garbage_collection_guard", "debug_key_reuse",
             "default_prng_impl", "enable_checks", "enable_custom_prng", "legacy_prng_key",
             "no_execution", "no_tracing", "softmax_custom_jvp", "threefry_partitionable",
             "thread_guard", "auto_pcast", "remove_size_one_mesh_axis_from_type",
             "transfer_guard", "transfer_guard_device_to_device",
             "transfer_guard_device_to_host", "transfer_guard_host_to_device", "effects_barrier",
             "live_arrays", "copy_to_host_async", "process_indices", "host_ids",
             "make_user_context", "version", "__version_info__",
             "jax2tf_associative_scan_reductions"}
    assert names <= set(dir(jax))
    assert not names - set(dir(gpuarr))
    assert not set(dir(jax.dtypes)) - set(dir(dtypes))
