"""Tests for gpuarr.dtypes: JAX's type promotion lattice, canonicalization and dtype helpers.

Tests whose names end in `_matches_jax` use JAX as the oracle and are skipped without it; the
others check fixed expected values.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
import warnings

import numpy as np
import pytest

from gpuarr import dtypes
from gpuarr.config import config

# The config module itself (the package attribute `gpuarr.config` is the Config object).
config_module = importlib.import_module("gpuarr.config")

HAS_BF16 = hasattr(dtypes, "bfloat16")
needs_bf16 = pytest.mark.skipif(not HAS_BF16, reason="ml_dtypes is not installed")

STRONG_NAMES = [
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    *(["bfloat16"] if HAS_BF16 else []),
    "float16", "float32", "float64", "complex64", "complex128",
]
# The 8-, 4- and 2-bit types (tests/test_narrow_types.py covers them); leaves of the lattice.
NARROW_NAMES = [n for n in dtypes.NARROW_FLOAT_NAMES + dtypes.NARROW_SIGNED_NAMES
                + dtypes.NARROW_UNSIGNED_NAMES if hasattr(dtypes, n)]
WEAK_VALUES = {"weak_int": 1, "weak_float": 1.0, "weak_complex": 1j}
WEAK_TYPES = {"weak_int": int, "weak_float": float, "weak_complex": complex}


def np_dtype(name: str) -> np.dtype:
    return np.dtype(dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def operand(name: str):
    """A dtype for strong names, a Python scalar for weak ones."""
    return WEAK_VALUES[name] if name in WEAK_VALUES else np_dtype(name)


OPERANDS = STRONG_NAMES + list(WEAK_VALUES)


class FakeArray:
    """Stands for the library's arrays, tracers and abstract values: dtype plus weak_type."""

    def __init__(self, dt, weak_type=False):
        self.dtype = np.dtype(dt)
        self.weak_type = weak_type

    def __repr__(self):
        return f"FakeArray({self.dtype}, weak_type={self.weak_type})"


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    old = config.enable_x64
    config.update("jax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        config.update("jax_enable_x64", old)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def jax_x64(request):
    """Sets enable_x64 the same way in JAX and here, restoring both afterwards."""
    jax = pytest.importorskip("jax")
    old_jax = bool(jax.config.jax_enable_x64)
    old_ours = config.enable_x64
    jax.config.update("jax_enable_x64", request.param)
    config.update("jax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        jax.config.update("jax_enable_x64", old_jax)
        config.update("jax_enable_x64", old_ours)


def outcome(fn, *args, **kwargs):
    """fn's result, or the type of the exception it raised."""
    with warnings.catch_warnings():
        # JAX warns when a 64-bit type is truncated while x64 is off.
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # the exception type is the outcome compared
            return type(e)


# ---------------------------------------------------------------------------------------------
# Against JAX
# ---------------------------------------------------------------------------------------------


def test_result_type_pairs_matches_jax(jax_x64):
    from jax._src import dtypes as jax_dtypes

    compared = 0
    for a, b in itertools.product(OPERANDS, repeat=2):
        args = (operand(a), operand(b))
        expected = outcome(jax_dtypes.result_type, *args, return_weak_type_flag=True)
        got = outcome(dtypes.result_type, *args, return_weak_type_flag=True)
        assert got == expected, (a, b, jax_x64)
        assert isinstance(got[0], np.dtype)
        compared += 1
    assert compared == len(OPERANDS) ** 2


def test_result_type_single_and_triples_matches_jax(jax_x64):
    from jax._src import dtypes as jax_dtypes

    for k in (1, 3):
        for names in itertools.product(OPERANDS, repeat=k):
            args = [operand(n) for n in names]
            expected = outcome(jax_dtypes.result_type, *args, return_weak_type_flag=True)
            got = outcome(dtypes.result_type, *args, return_weak_type_flag=True)
            assert got == expected, (names, jax_x64)


def test_result_type_without_flag_matches_jnp(jax_x64):
    import jax.numpy as jnp

    for a, b in itertools.product(OPERANDS, repeat=2):
        args = (operand(a), operand(b))
        assert outcome(dtypes.result_type, *args) == outcome(jnp.result_type, *args), (a, b)


def test_result_type_of_values_matches_jax(jax_x64):
    """Numpy arrays and scalars, Python values and types, None, and weak/strong arrays."""
    from jax._src import dtypes as jax_dtypes
    from jax._src.lax import lax as jax_lax

    convert = getattr(jax_lax, "_convert_element_type", None)
    if convert is None:
        pytest.skip("this JAX has no way to make weakly typed arrays of any dtype")
    # (value given to JAX, value given to us)
    pairs = []
    for name in STRONG_NAMES:
        dt = np_dtype(name)
        pairs += [(np.zeros(2, dt), np.zeros(2, dt)), (dt.type(0), dt.type(0)),
                  (dt.type, dt.type), (name, name)]
        if jax_dtypes.canonicalize_dtype(dt) == dt:
            for weak in (False, True):
                pairs.append((convert(np.zeros(2, dt), dt, weak_type=weak), FakeArray(dt, weak)))
    pairs += [(v, v) for v in (None, int, float, complex, bool, True, 3, 2.5, 1j)]
    for k in (1, 2):
        for combo in itertools.product(pairs, repeat=k):
            expected = outcome(jax_dtypes.result_type, *[p[0] for p in combo],
                               return_weak_type_flag=True)
            got = outcome(dtypes.result_type, *[p[1] for p in combo],
                          return_weak_type_flag=True)
            assert got == expected, ([p[1] for p in combo], jax_x64)


def test_promote_types_matches_jax(jax_x64):
    import jax.numpy as jnp

    args = [np_dtype(n) for n in STRONG_NAMES] + list(WEAK_TYPES.values())
    args += [np.dtype("U3"), dtypes.float0]  # not promotable: both raise
    for a, b in itertools.product(args, repeat=2):
        expected = outcome(jnp.promote_types, a, b)
        got = outcome(dtypes.promote_types, a, b)
        if isinstance(expected, type):
            assert isinstance(got, type) and issubclass(got, expected), (a, b)
        else:
            assert got == expected and isinstance(got, np.dtype), (a, b)


def test_canonicalize_dtype_matches_jax(jax_x64):
    from jax._src import dtypes as jax_dtypes

    for dt in [*(np_dtype(n) for n in STRONG_NAMES), int, float, complex, bool, "float64",
               np.int64, dtypes.float0]:
        assert dtypes.canonicalize_dtype(dt) == jax_dtypes.canonicalize_dtype(dt), dt


def test_to_inexact_dtype_matches_jnp_sin(jax_x64):
    import jax.numpy as jnp

    for name in STRONG_NAMES:
        dt = np_dtype(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = jnp.sin(np.zeros(2, dt)).dtype
        assert dtypes.to_inexact_dtype(dt) == expected, name


def test_short_dtype_name_matches_jax():
    pytest.importorskip("jax")
    from jax._src import dtypes as jax_dtypes

    for name in STRONG_NAMES:
        dt = np_dtype(name)
        assert dtypes.short_dtype_name(dt) == jax_dtypes.short_dtype_name(dt)


# ---------------------------------------------------------------------------------------------
# Fixed expectations
# ---------------------------------------------------------------------------------------------

# (args, (dtype, weak) with x64 off, (dtype, weak) with x64 on)
RESULT_CASES = [
    ((np.uint32, np.int32), ("int32", False), ("int64", False)),
    ((np.uint64, np.int64), ("int32", False), ("float64", True)),
    ((np.uint8, np.int8), ("int16", False), ("int16", False)),
    ((np.uint16, np.int8), ("int32", False), ("int32", False)),
    ((np.int32, 1.0), ("float32", True), ("float64", True)),
    ((np.float32, 2.0), ("float32", False), ("float32", False)),
    ((np.float16, 2.0), ("float16", False), ("float16", False)),
    ((np.int8, 2), ("int8", False), ("int8", False)),
    ((np.uint8, 2), ("uint8", False), ("uint8", False)),
    ((np.float32, 1j), ("complex64", False), ("complex64", False)),
    ((np.float64, 1j), ("complex64", False), ("complex128", False)),
    ((np.complex64, np.float64), ("complex64", False), ("complex128", False)),
    ((np.int64, np.float16), ("float16", False), ("float16", False)),
    ((np.bool_, np.bool_), ("bool", False), ("bool", False)),
    ((True, 1), ("int32", True), ("int64", True)),
    ((True, False), ("bool", False), ("bool", False)),
    ((np.bool_, 1.0), ("float32", True), ("float64", True)),
    ((1, 1.0), ("float32", True), ("float64", True)),
    ((1.0, 1j), ("complex64", True), ("complex128", True)),
    ((3,), ("int32", True), ("int64", True)),
    ((int,), ("int32", True), ("int64", True)),
    ((float, np.int16), ("float32", True), ("float64", True)),
    ((None,), ("float32", False), ("float64", False)),
    ((None, 1), ("float32", False), ("float64", False)),
    ((np.float64,), ("float32", False), ("float64", False)),
    (("int16", "uint16"), ("int32", False), ("int32", False)),
    ((np.zeros(3, np.int8), np.zeros(3, np.uint8)), ("int16", False), ("int16", False)),
    ((np.float32(1), 2), ("float32", False), ("float32", False)),
    ((np.float64(1.0), 2), ("float32", False), ("float64", False)),  # numpy scalars are strong
    # Weak results take the default type of their kind.
    ((FakeArray(np.float32, True), 2), ("float32", True), ("float64", True)),
    ((FakeArray(np.float32, True), np.int8), ("float32", True), ("float64", True)),
    ((FakeArray(np.float32, True), np.float16), ("float16", False), ("float16", False)),
    ((FakeArray(np.float16, True),), ("float32", True), ("float64", True)),
    ((FakeArray(np.int32, True), np.uint8), ("uint8", False), ("uint8", False)),
    ((FakeArray(np.float32, False), FakeArray(np.float32, True)), ("float32", False),
     ("float32", False)),
    ((np.int8, np.int16, np.uint32), ("int32", False), ("int64", False)),
    ((np.float16, 1, 2.0, np.int8), ("float16", False), ("float16", False)),
]


@pytest.mark.parametrize("args,off,on", RESULT_CASES)
def test_result_type_values(x64, args, off, on):
    name, weak = on if x64 else off
    assert dtypes.result_type(*args, return_weak_type_flag=True) == (np.dtype(name), weak)
    assert dtypes.result_type(*args) == np.dtype(name)


@needs_bf16
def test_bfloat16_promotion(x64):
    bf16 = np.dtype(dtypes.bfloat16)
    assert dtypes.result_type(bf16, np.float16) == np.float32
    assert dtypes.result_type(bf16, 1.0) == bf16
    assert dtypes.result_type(bf16, 1) == bf16
    assert dtypes.result_type(bf16, np.int32) == bf16
    assert dtypes.result_type(bf16, np.float32) == np.float32
    assert dtypes.result_type(bf16, 1j) == np.complex64
    assert dtypes.promote_types(bf16, np.float16) == np.float32
    assert dtypes.promote_types(bf16, np.float64) == np.float64
    weak_bf16 = FakeArray(bf16, True)
    expected_default = np.float64 if x64 else np.float32
    assert dtypes.result_type(weak_bf16, return_weak_type_flag=True) == (
        np.dtype(expected_default), True)


def test_result_type_order_and_repetition_do_not_matter(x64):
    values = [np.zeros(2, np.int8), 3, np.zeros(2, np.uint16), 2.5, np.float16(1)]
    expected = dtypes.result_type(*values, return_weak_type_flag=True)
    assert expected == (np.dtype(np.float16), False)
    for perm in itertools.permutations(values):
        assert dtypes.result_type(*perm, *perm, return_weak_type_flag=True) == expected


def test_result_type_follows_config_changes():
    old = config.enable_x64
    try:
        config.update("jax_enable_x64", False)
        assert dtypes.result_type(np.int32, 1.0) == np.float32
        assert dtypes.result_type(np.uint32, np.int32) == np.int32
        config.update("jax_enable_x64", True)
        assert dtypes.result_type(np.int32, 1.0) == np.float64
        assert dtypes.result_type(np.uint32, np.int32) == np.int64
        with config_module.enable_x64(False):
            assert dtypes.result_type(np.int32, 1.0) == np.float32
            assert dtypes.default_int_dtype() == np.int32
        assert dtypes.result_type(np.int32, 1.0) == np.float64
    finally:
        config.update("jax_enable_x64", old)


def test_result_type_equal_but_distinct_dtype_objects(x64):
    f32 = np.dtype(np.float32).newbyteorder("=")
    assert f32 is not np.dtype(np.float32)
    assert dtypes.result_type(np.zeros(2, f32), 2.0) == np.float32
    assert dtypes.result_type(FakeArray(f32, False), np.float16) == np.float32
    assert dtypes.result_type(FakeArray(f32, True), np.float16) == np.float16
    other_float0 = np.dtype([("float0", np.void, 0)])
    assert dtypes.result_type(np.zeros(2, other_float0)) == dtypes.float0
    assert dtypes.dtype(np.zeros(2, other_float0)) == dtypes.float0


def test_result_type_errors():
    with pytest.raises(ValueError, match="at least one array or dtype is required"):
        dtypes.result_type()
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        dtypes.result_type(object(), 1)
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        dtypes.result_type([1, 2])
    with pytest.raises(TypeError, match="not a valid array type"):
        dtypes.result_type(np.array(["a", "b"]), 1)
    with pytest.raises(TypeError, match="not a valid array type"):
        dtypes.result_type(np.zeros(2, ">f4"))
    with pytest.raises(TypeError):
        dtypes.result_type("not a dtype")
    # float0 passes through alone or with itself but has no promotion path.
    assert dtypes.result_type(dtypes.float0) == dtypes.float0
    assert dtypes.result_type(dtypes.float0, dtypes.float0) == dtypes.float0
    with pytest.raises(ValueError, match="not a valid dtype for type promotion"):
        dtypes.result_type(dtypes.float0, np.float32)
    with pytest.raises(dtypes.TypePromotionError):
        dtypes.result_type(dtypes.float0, 1.0)


def test_promote_types_values(x64):
    pt = dtypes.promote_types
    assert pt(np.uint32, np.int32) == (np.int64 if x64 else np.int32)
    # Not canonicalized, in either mode.
    assert pt(np.int64, np.int64) == np.int64
    assert pt(np.uint64, np.int64) == np.float64
    assert pt(int, int) == np.int64
    assert pt(int, float) == np.float64
    assert pt(float, complex) == np.complex128
    assert pt(bool, int) == np.int64
    assert pt(np.bool_, bool) == np.bool_
    assert pt("uint8", int) == np.uint8
    assert pt("float16", float) == np.float16
    assert pt(np.int32, np.float32) == np.float32
    assert pt(np.int16, np.float16) == np.float16
    assert pt(np.float32, np.complex64) == np.complex64
    assert pt(np.float64, np.complex64) == np.complex128
    assert pt(np.dtype("int8"), "uint8") == np.int16
    assert isinstance(pt(np.int8, np.int8), np.dtype)
    with pytest.raises(dtypes.TypePromotionError, match="not a valid dtype"):
        pt("U3", np.float32)
    with pytest.raises(ValueError):
        pt(dtypes.float0, np.float32)
    with pytest.raises(TypeError, match="Cannot interpret"):  # NumPy's words, as in JAX
        pt(object(), np.float32)


def test_lattice_has_one_least_upper_bound_for_every_pair(x64):
    nodes = list(dtypes._UPPER_BOUNDS[x64])
    assert len(nodes) == len(STRONG_NAMES) + len(NARROW_NAMES) + 3
    for a, b in itertools.product(nodes, repeat=2):
        ubs = dtypes._UPPER_BOUNDS[x64]
        if not ubs[a] & ubs[b]:  # a narrow type with anything but itself and weak values
            with pytest.raises(dtypes.TypePromotionError):
                dtypes._least_upper_bound(x64, (a, b))
            continue
        lub = dtypes._least_upper_bound(x64, (a, b))
        assert lub in ubs[a] and lub in ubs[b]
        # Every other common upper bound lies above it.
        assert ubs[a] & ubs[b] <= ubs[lub]


def test_canonicalize_dtype(x64):
    cd = dtypes.canonicalize_dtype
    narrow = {"int64": "int32", "uint64": "uint32", "float64": "float32",
              "complex128": "complex64"}
    for name in STRONG_NAMES:
        expected = name if x64 else narrow.get(name, name)
        got = cd(np_dtype(name))
        assert got == np_dtype(expected) and isinstance(got, np.dtype)
        assert cd(np_dtype(name).type) == np_dtype(expected)
    assert cd("float64") == (np.float64 if x64 else np.float32)
    assert cd(float) == dtypes.default_float_dtype()
    assert cd(int) == dtypes.default_int_dtype()
    assert cd(complex) == dtypes.default_complex_dtype()
    assert cd(bool) == np.bool_
    assert cd(dtypes.float0) == dtypes.float0
    assert cd([("float0", np.void, 0)]) == dtypes.float0  # unhashable dtype spec
    with pytest.raises(TypeError, match="not understood"):
        cd("not-a-dtype")
    with pytest.raises(TypeError, match="Cannot interpret"):  # NumPy's words, as in JAX
        cd(object())


def test_default_dtypes(x64):
    bits = 64 if x64 else 32
    assert dtypes.default_int_dtype() == np.dtype(f"int{bits}")
    assert dtypes.default_uint_dtype() == np.dtype(f"uint{bits}")
    assert dtypes.default_float_dtype() == np.dtype(f"float{bits}")
    assert dtypes.default_complex_dtype() == np.dtype(f"complex{2 * bits}")


def test_is_weakly_typed():
    iw = dtypes.is_weakly_typed
    assert iw(1) is True
    assert iw(1.0) is True
    assert iw(1j) is True
    assert iw(True) is False  # bool is strong
    assert iw(np.float32(1)) is False
    assert iw(np.float64(1.0)) is False  # a float subclass, but a numpy scalar
    assert iw(np.ones(3)) is False
    assert iw(FakeArray(np.float32, True)) is True
    assert iw(FakeArray(np.float32, False)) is False
    assert iw(int) is False
    assert iw(FakeArray) is False  # a class, even one with a weak_type attribute
    assert iw(None) is False
    assert iw("float32") is False


def test_dtype_of_values(x64):
    d = dtypes.dtype
    assert d(3) == np.int64
    assert d(3, canonicalize=True) == (np.int64 if x64 else np.int32)
    assert d(2.5) == np.float64
    assert d(2.5, canonicalize=True) == dtypes.default_float_dtype()
    assert d(1j) == np.complex128
    assert d(True) == np.bool_
    assert d(True, canonicalize=True) == np.bool_
    assert d(int) == np.int64
    assert d(np.zeros(2, np.int16)) == np.int16
    assert d(np.zeros(2, np.float64)) == np.float64
    assert d(np.zeros(2, np.float64), canonicalize=True) == dtypes.default_float_dtype()
    assert d(np.float16(1)) == np.float16
    assert d(FakeArray(np.uint8, True)) == np.uint8
    assert d(np.float32) == np.float32
    assert d("complex64") == np.complex64
    assert d(np.dtype("int8")) == np.int8
    assert d(dtypes.float0) == dtypes.float0
    for name in STRONG_NAMES:
        got = d(np_dtype(name))
        assert got == np_dtype(name) and isinstance(got, np.dtype)


def test_dtype_errors():
    with pytest.raises(TypeError, match="Cannot determine dtype of None"):
        dtypes.dtype(None)
    with pytest.raises(TypeError, match="Cannot determine dtype of <object"):
        dtypes.dtype(object())
    with pytest.raises(TypeError, match=r"Cannot determine dtype of \[1, 2\]"):
        dtypes.dtype([1, 2])
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        dtypes.dtype("not-a-dtype")
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        dtypes.dtype(np.floating)
    with pytest.raises(TypeError, match="not a valid array type"):
        dtypes.dtype(np.array(["a"]))
    with pytest.raises(TypeError, match="not a valid array type"):
        dtypes.dtype(np.dtype("datetime64[s]"))


SHORT_NAMES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "complex64": "c64", "complex128": "c128",
}


def test_short_dtype_name():
    for name in STRONG_NAMES:
        assert dtypes.short_dtype_name(np_dtype(name)) == SHORT_NAMES[name]
    assert dtypes.short_dtype_name(np.float32) == "f32"
    assert dtypes.short_dtype_name("uint16") == "u16"
    assert dtypes.short_dtype_name(dtypes.float0) == "float0"


def test_constants():
    assert dtypes.float32 is np.float32
    assert dtypes.int64 is np.int64
    assert dtypes.uint8 is np.uint8
    assert dtypes.complex128 is np.complex128
    assert dtypes.bool_ is np.bool_
    assert dtypes.float0 == np.dtype([("float0", np.void, 0)])
    assert dtypes.float0.itemsize == 0
    if HAS_BF16:
        import ml_dtypes

        assert dtypes.bfloat16 is ml_dtypes.bfloat16
        assert "bfloat16" in dtypes.__all__
    assert len(dtypes.supported_dtypes()) == len(STRONG_NAMES) + len(NARROW_NAMES) + 1


def test_issubdtype():
    sub = dtypes.issubdtype
    assert sub(np.float32, np.floating)
    assert sub(np.dtype("float16"), np.inexact)
    assert not sub(np.float32, np.integer)
    assert sub(np.int8, np.signedinteger)
    assert not sub(np.uint8, np.signedinteger)
    assert sub("uint8", np.unsignedinteger)
    assert not sub(np.bool_, np.integer)
    assert sub(np.bool_, np.bool_)
    assert sub(np.complex64, np.complexfloating)
    assert not sub(dtypes.float0, np.floating)
    if HAS_BF16:
        bf16 = dtypes.bfloat16
        for parent in (np.floating, np.inexact, np.number, np.generic, bf16):
            assert sub(bf16, parent)
            assert sub(np.dtype(bf16), parent)
        assert not sub(bf16, np.integer)
        assert not sub(bf16, np.complexfloating)
        assert not sub(bf16, np.float16)
        assert not sub(np.float32, bf16)


def test_isdtype():
    isd = dtypes.isdtype
    assert isd(np.int8, "signed integer")
    assert not isd(np.uint8, "signed integer")
    assert isd(np.uint8, ("signed integer", "unsigned integer"))
    assert isd(np.uint8, "integral")
    assert isd(np.float16, "real floating")
    assert not isd(np.complex64, "real floating")
    assert isd(np.complex64, "complex floating")
    assert isd(np.bool_, "bool")
    assert not isd(np.bool_, "numeric")
    assert isd(np.float32, np.float32)
    assert not isd(np.float32, np.float64)
    if HAS_BF16:
        assert isd(dtypes.bfloat16, "real floating")
    with pytest.raises(ValueError, match="Unrecognized kind"):
        isd(np.float32, "floaty")
    with pytest.raises(TypeError):
        isd(np.float32, object())


def test_finfo_iinfo():
    assert dtypes.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert dtypes.finfo(np.float16).bits == 16
    assert dtypes.iinfo(np.int8).min == -128
    assert dtypes.iinfo(np.uint16).max == 65535
    if HAS_BF16:
        fi = dtypes.finfo(dtypes.bfloat16)
        assert fi.bits == 16
        assert float(fi.eps) == 2.0 ** -7
        assert fi.dtype == np.dtype(dtypes.bfloat16)


def test_kind_predicates():
    kinds = {
        "bool": "b", "uint8": "u", "uint16": "u", "uint32": "u", "uint64": "u",
        "int8": "i", "int16": "i", "int32": "i", "int64": "i", "bfloat16": "f",
        "float16": "f", "float32": "f", "float64": "f", "complex64": "c", "complex128": "c",
    }
    for name in STRONG_NAMES:
        kind = kinds[name]
        dt = np_dtype(name)
        assert dtypes.is_bool(dt) == (kind == "b"), name
        assert dtypes.is_int(dt) == (kind in "iu"), name
        assert dtypes.is_signed_int(dt) == (kind == "i"), name
        assert dtypes.is_unsigned_int(dt) == (kind == "u"), name
        assert dtypes.is_unsigned(dt) == (kind == "u"), name
        assert dtypes.is_signed(dt) == (kind == "i"), name
        assert dtypes.is_float(dt) == (kind == "f"), name
        assert dtypes.is_complex(dt) == (kind == "c"), name
        assert dtypes.is_inexact(dt) == (kind in "fc"), name
    assert dtypes.is_float("float32")
    assert dtypes.is_int(np.int8)
    assert not dtypes.is_float(dtypes.float0)


def test_to_inexact_floating_complex(x64):
    f = "float64" if x64 else "float32"
    c = "complex128" if x64 else "complex64"
    expected = {
        "bool": ("float32", "float32", "complex64"),
        "int8": ("float32", "float32", "complex64"),
        "uint32": ("float32", "float32", "complex64"),
        "int32": ("float32", "float32", "complex64"),
        "int64": (f, f, c),
        "uint64": (f, f, c),
        "float16": ("float16", "float16", "complex64"),
        "float32": ("float32", "float32", "complex64"),
        "float64": (f, f, c),
        "complex64": ("complex64", "float32", "complex64"),
        "complex128": (c, f, c),
    }
    if HAS_BF16:
        expected["bfloat16"] = ("bfloat16", "bfloat16", "complex64")
    for name, (inexact, floating, cplx) in expected.items():
        dt = np_dtype(name)
        assert dtypes.to_inexact_dtype(dt) == np_dtype(inexact), name
        assert dtypes.to_floating_dtype(dt) == np_dtype(floating), name
        assert dtypes.to_complex_dtype(dt) == np_dtype(cplx), name


def test_check_user_dtype(x64):
    chk = dtypes.check_user_dtype
    assert chk(int, "zeros") == dtypes.default_int_dtype()
    assert chk(float, "zeros") == dtypes.default_float_dtype()
    assert chk(complex, "zeros") == dtypes.default_complex_dtype()
    assert chk(bool, "zeros") == np.bool_
    assert chk("int8", "zeros") == np.int8
    assert chk(np.float16, "zeros") == np.float16
    assert chk(dtypes.float0, "zeros") == dtypes.float0
    if x64:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert chk(np.float64, "zeros") == np.float64
    else:
        with pytest.warns(UserWarning, match="float64 requested in zeros .* float32"):
            assert chk(np.float64, "zeros") == np.float32
    with pytest.raises(TypeError, match="^data type 'not-a-dtype' not understood$"):  # as JAX
        chk("not-a-dtype", "ones")
    with pytest.raises(TypeError, match="got dtype <U3 in ones"):
        chk("U3", "ones")
    with pytest.raises(TypeError, match="array as a dtype"):
        chk(np.zeros(2, np.float32), "ones")
    with pytest.raises(ValueError, match="dtype must be specified"):
        chk(None, "ones")


def test_module_works_without_ml_dtypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # makes `import ml_dtypes` fail
    spec = importlib.util.spec_from_file_location("_dtypes_without_ml_dtypes", dtypes.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not hasattr(mod, "bfloat16")
    assert "bfloat16" not in mod.__all__
    assert mod.finfo is np.finfo
    assert mod.result_type(np.float16, 2.0) == np.float16
    assert mod.result_type(np.float16, np.int32) == np.float16
    assert mod.promote_types(np.uint32, np.int64) == np.int64
    assert mod.issubdtype(np.float32, np.floating)
    assert mod.is_float(np.float16)
    assert mod.short_dtype_name(np.int8) == "i8"
    assert len(mod._UPPER_BOUNDS[False]) == (len(dtypes._UPPER_BOUNDS[False]) - HAS_BF16
                                             - len(NARROW_NAMES))
    assert not any(hasattr(mod, name) for name in NARROW_NAMES)
    assert not mod.NARROW_DTYPES


def test_strict_dtype_promotion():
    """jax_numpy_dtype_promotion='strict': only weak values (Python scalars) promote; two
    different strong dtypes raise TypePromotionError with JAX's message."""
    import gpuarr
    import gpuarr.numpy  # noqa: F401
    f32, i32 = np.ones(2, np.float32), np.ones(2, np.int32)
    with gpuarr.numpy_dtype_promotion("strict"):
        assert gpuarr.numpy.add(f32, 1).dtype == np.float32
        assert gpuarr.numpy.add(i32, 2).dtype == np.int32
        assert dtypes.result_type(float, np.float16) == np.float16
        assert dtypes.result_type(int, complex) == np.complex64
        with pytest.raises(dtypes.TypePromotionError, match=r"Input dtypes \('[a-z0-9]+', '[a-z0-9]+'\) "
                           r"have no available implicit dtype promotion path when "
                           r"jax_numpy_dtype_promotion=strict"):
            gpuarr.numpy.add(i32, f32)
        with pytest.raises(dtypes.TypePromotionError):
            gpuarr.jit(gpuarr.numpy.multiply)(f32, np.ones(2, np.float16))
        with pytest.raises(dtypes.TypePromotionError):
            dtypes.promote_types(np.bool_, np.int8)
    assert gpuarr.numpy_dtype_promotion.value == "standard"
    assert gpuarr.numpy.add(i32, f32).dtype == np.float32


def test_promotion_tables_equal_jax_in_both_modes():
    jax = pytest.importorskip("jax")
    import gpuarr
    import gpuarr.numpy  # noqa: F401
    kinds = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128, int,
             float, complex]

    def table(mod):
        out = []
        for a in kinds:
            for b in kinds:
                try:
                    out.append(str(np.dtype(mod.numpy.promote_types(a, b))))
                except Exception as e:  # noqa: BLE001 - the error class is the answer
                    out.append(type(e).__name__)
        return out

    for mode in ("standard", "strict"):
        with jax.numpy_dtype_promotion(mode), gpuarr.numpy_dtype_promotion(mode):
            assert table(gpuarr) == table(jax), mode
