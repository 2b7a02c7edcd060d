"""Dtypes, canonicalization and JAX's type promotion rules.

Type promotion follows JAX's lattice (https://jax.readthedocs.io/en/latest/type_promotion.html).
Python scalars (`int`, `float`, `complex`, but not `bool`) and arrays marked `weak_type` are
*weakly typed*: they take part in promotion as the lattice nodes `i*`, `f*` and `c*`, which sit
below every strong type of their kind, so `float32_array + 2.0` stays float32.

The lattice (an edge `a -> b` means `a` promotes to `b`)::

    bool -> i*
    i*   -> u8, i8, and each narrow integer (int2, int4, uint2, uint4)
    u8   -> u16, i16        i8  -> i16
    u16  -> u32, i32        i16 -> i32
    u32  -> u64, i64        i32 -> i64          (u32 -> i32 instead of i64 when x64 is off)
    u64  -> f*              i64 -> f*
    f*   -> bf16, f16, c*, and each narrow float (float8_*, float4_e2m1fn)
    bf16 -> f32             f16 -> f32
    f32  -> f64, c64        f64 -> c128
    c*   -> c64             c64 -> c128

The result of promoting several types is their least upper bound on this lattice. With
`enable_x64` off, 64-bit input types are first canonicalized to their 32-bit counterparts.
With `jax_numpy_dtype_promotion='strict'` the lattice keeps only the weak edges (i* below f*
and every integer type, f* below c* and every float type, c* below the complex types), so
mixing two different strong types raises TypePromotionError.

bfloat16 and the narrow types (the 8-bit floats float8_e3m4, float8_e4m3, float8_e4m3b11fnuz,
float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz and float8_e8m0fnu, the 4-bit
float4_e2m1fn and the integers int2, int4, uint2 and uint4) come from the optional `ml_dtypes`
package; without it they are not defined here and the lattice simply lacks those nodes. The
narrow types are leaves of the lattice: a narrow float promotes only with weak values and with
the types below f* (bool and the standard integers), a narrow integer only with weak ints and
bool, so mixing them with anything else raises TypePromotionError, as in JAX.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Union

import numpy as np

from gpuarr.config import config

try:  # bfloat16 and the other narrow types are optional.
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - exercised by loading the module without ml_dtypes
    _ml_dtypes = None

__all__ = [
    "TypePromotionError",
    "bool_",
    "canonicalize_dtype",
    "check_user_dtype",
    "complex64",
    "complex128",
    "default_complex_dtype",
    "default_float_dtype",
    "default_int_dtype",
    "default_uint_dtype",
    "dtype",
    "DType",
    "ExtendedDType",
    "extended",
    "finfo",
    "float0",
    "float16",
    "float32",
    "float64",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_bool",
    "is_complex",
    "is_float",
    "is_inexact",
    "is_int",
    "is_signed",
    "is_signed_int",
    "is_unsigned",
    "is_unsigned_int",
    "is_weakly_typed",
    "isdtype",
    "issubdtype",
    "itemsize_bits",
    "prng_key",
    "promote_types",
    "result_type",
    "scalar_type_of",
    "short_dtype_name",
    "supported_dtypes",
    "to_complex_dtype",
    "to_floating_dtype",
    "to_inexact_dtype",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

# ---------------------------------------------------------------------------------------------
# Scalar types and dtype objects
# ---------------------------------------------------------------------------------------------

bool_ = np.bool_
int8 = np.int8
int16 = np.int16
int32 = np.int32
int64 = np.int64
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
uint64 = np.uint64
float16 = np.float16
float32 = np.float32
float64 = np.float64
complex64 = np.complex64
complex128 = np.complex128

if _ml_dtypes is not None:
    bfloat16 = _ml_dtypes.bfloat16
    __all__.append("bfloat16")
    _BF16: np.dtype | None = np.dtype(bfloat16)
else:
    _BF16 = None

# The narrow types JAX takes from ml_dtypes, in JAX's order. Floats: 8-bit ones are "float8_*",
# the 4-bit one "float4_e2m1fn"; integers: 2 and 4 bits. Each name is a module attribute (the
# scalar type) when ml_dtypes provides it.
NARROW_FLOAT_NAMES = ("float4_e2m1fn", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
                      "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                      "float8_e5m2fnuz")
NARROW_SIGNED_NAMES = ("int2", "int4")
NARROW_UNSIGNED_NAMES = ("uint2", "uint4")


def _narrow_types(names) -> tuple[np.dtype, ...]:
    found = []
    for name in names:
        scalar_type = getattr(_ml_dtypes, name, None) if _ml_dtypes is not None else None
        if scalar_type is not None:
            globals()[name] = scalar_type
            __all__.append(name)
            found.append(np.dtype(scalar_type))
    return tuple(found)


_NARROW_FLOATS = _narrow_types(NARROW_FLOAT_NAMES)
_NARROW_SIGNED = _narrow_types(NARROW_SIGNED_NAMES)
_NARROW_UNSIGNED = _narrow_types(NARROW_UNSIGNED_NAMES)
_NARROW_INTS = _NARROW_UNSIGNED + _NARROW_SIGNED
# The narrow types NumPy cannot compute in as XLA does (bfloat16 is not one of them: its
# loops round as XLA's): see gpuarr.narrow_types.
NARROW_DTYPES = frozenset(_NARROW_FLOATS + _NARROW_INTS)
_NARROW_INT_SET = frozenset(_NARROW_INTS)
_FLOAT8 = frozenset(dt for dt in _NARROW_FLOATS if dt.name.startswith("float8"))
_FLOAT4 = frozenset(dt for dt in _NARROW_FLOATS if dt.name.startswith("float4"))

# The tangent dtype of integer and boolean values: a trivial vector space with no data.
float0: np.dtype = np.dtype([("float0", np.void, 0)])


class extended(np.generic):
    """Scalar class of extended dtypes: abstract, never instantiated, it exists for
    `issubdtype` (`issubdtype(random.key(0).dtype, dtypes.extended)` is True)."""


class prng_key(extended):
    """Scalar class of PRNG key dtypes (`key<fry>`): abstract, for `issubdtype`
    (`issubdtype(random.key(0).dtype, dtypes.prng_key)` is True)."""


class ExtendedDType:
    """The base class of dtype objects outside NumPy's (JAX's `dtypes.ExtendedDType`): each
    names its scalar class (`type`, a subclass of `extended`) and its `name`. A user-defined
    one (flax's `fm32`) also has `_rules`, a class whose static methods give its physical
    element type (`physical_element_aval(dtype)`), its autodiff (`add`, `zero`,
    `tangent_dtype`), the conversions allowed (`convert_from`, `convert_to`) and the result
    handler of its arrays (`global_sharded_result_handler`); avals of such a dtype flow
    through the transformations, and backends store their physical data."""

    __slots__ = ()
    type: type = extended
    name: str = "extended"


DType = Union[np.dtype, ExtendedDType]  # a dtype of either kind (annotations)

_BOOL = np.dtype(np.bool_)
_I8, _I16, _I32, _I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_U8, _U16, _U32, _U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_F16, _F32, _F64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)

_SIGNED = _NARROW_SIGNED + (_I8, _I16, _I32, _I64)
_UNSIGNED = _NARROW_UNSIGNED + (_U8, _U16, _U32, _U64)
_FLOATS = _NARROW_FLOATS + ((_BF16,) if _BF16 is not None else ()) + (_F16, _F32, _F64)
_COMPLEX = (_C64, _C128)

_SIGNED_SET = frozenset(_SIGNED)
_UNSIGNED_SET = frozenset(_UNSIGNED)
_INT_SET = _SIGNED_SET | _UNSIGNED_SET
_FLOAT_SET = frozenset(_FLOATS)
_COMPLEX_SET = frozenset(_COMPLEX)
_INEXACT_SET = _FLOAT_SET | _COMPLEX_SET

# Every dtype an array may have.
_VALID_DTYPES = frozenset((_BOOL, float0, *_SIGNED, *_UNSIGNED, *_FLOATS, *_COMPLEX))


def supported_dtypes() -> tuple[np.dtype, ...]:
    """All dtypes arrays may have (numeric types, bool and float0), in lattice order."""
    return (_BOOL, *_UNSIGNED, *_SIGNED, *_FLOATS, *_COMPLEX, float0)


class TypePromotionError(ValueError):
    """Raised when types have no promotion path."""


# ---------------------------------------------------------------------------------------------
# enable_x64 and canonicalization
# ---------------------------------------------------------------------------------------------

# Mirror of `config.enable_x64`, kept current by a config listener: reading the config object
# costs far more than a module global, and this is read on every result_type call.
_x64: bool = bool(config.enable_x64)
_strict: bool = config.numpy_dtype_promotion == "strict"


def _on_config_update(name: str, value: Any) -> None:
    global _x64, _strict
    if name == "enable_x64":
        _x64 = bool(value)
    elif name == "numpy_dtype_promotion":
        _strict = value == "strict"


config.add_listener(_on_config_update)

_TO_32 = {_I64: _I32, _U64: _U32, _F64: _F32, _C128: _C64}

_CANON_CACHE: dict[bool, dict[Any, np.dtype]] = {False: {}, True: {}}


def _as_np_dtype(x: Any) -> np.dtype:
    if isinstance(x, np.dtype):
        return x
    try:
        return np.dtype(x)
    except (TypeError, ValueError) as e:
        raise TypeError(str(e)) from e  # NumPy's words ("data type 'foo' not understood"), as JAX


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype `dtype` has in the current mode: 64-bit types become 32-bit unless x64 is on.

    Accepts anything `np.dtype` accepts (Python types map as numpy maps them, so `float` gives
    the default float type). Raises TypeError for things that are not dtypes.
    """
    x64 = _x64
    cache = _CANON_CACHE[x64]
    try:
        return cache[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable dtype-like, e.g. a structured spec given as a list
        dt = _as_np_dtype(dtype)
        return dt if x64 else _TO_32.get(dt, dt)
    dt = _as_np_dtype(dtype)
    out = dt if x64 else _TO_32.get(dt, dt)
    if isinstance(dtype, (np.dtype, type, str)):  # never keep arbitrary objects alive
        cache[dtype] = out
    return out


def default_int_dtype() -> np.dtype:
    return _I64 if _x64 else _I32


def default_uint_dtype() -> np.dtype:
    return _U64 if _x64 else _U32


def default_float_dtype() -> np.dtype:
    return _F64 if _x64 else _F32


def default_complex_dtype() -> np.dtype:
    return _C128 if _x64 else _C64


def _default_for_kind(dt: np.dtype, x64: bool) -> np.dtype:
    """The default dtype of `dt`'s kind (bool stays bool)."""
    if dt in _FLOAT_SET:
        return _F64 if x64 else _F32
    if dt in _COMPLEX_SET:
        return _C128 if x64 else _C64
    if dt in _SIGNED_SET:
        return _I64 if x64 else _I32
    if dt in _UNSIGNED_SET:
        return _U64 if x64 else _U32
    return dt


# ---------------------------------------------------------------------------------------------
# dtype() and weak types
# ---------------------------------------------------------------------------------------------

# Python scalar values: (dtype before canonicalization, weak).
_SCALAR_DW: dict[type, tuple[np.dtype, bool]] = {
    bool: (_BOOL, False),
    int: (_I64, True),
    float: (_F64, True),
    complex: (_C128, True),
}
_NONE_DW = (_F64, False)


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak_type) of a value, dtype-like or Python scalar type, not canonicalized.

    Python scalar *types* passed as arguments (`int`, `float`, `complex`) count as weak, as
    they do in JAX's result_type; `None` stands for the default float type.
    """
    t = type(x)
    r = _SCALAR_DW.get(t)
    if r is not None:
        return r
    if t is np.ndarray:
        return x.dtype, False
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype) and not isinstance(x, type):
        w = getattr(x, "weak_type", False)
        return dt, (w if (w is True or w is False) else bool(w))
    return _dtype_and_weak_slow(x, dt)


def _dtype_and_weak_slow(x: Any, dt_attr: Any) -> tuple[np.dtype, bool]:
    if x is None:
        return _NONE_DW
    if isinstance(x, np.dtype):
        return x, False
    if isinstance(x, type):
        if x in _SCALAR_DW:
            return _SCALAR_DW[x]
        if issubclass(x, np.generic):
            try:
                return np.dtype(x), False
            except TypeError as e:  # abstract scalar types such as np.floating
                raise TypeError(f"Cannot determine dtype of {x!r}") from e
        raise TypeError(f"Cannot determine dtype of {x!r}")
    if isinstance(x, str):
        try:
            return np.dtype(x), False
        except TypeError as e:
            raise TypeError(f"Cannot determine dtype of {x!r}") from e
    # Subclasses of Python scalars (enum members and the like) are strongly typed, as in JAX.
    if isinstance(x, bool):
        return _BOOL, False
    if isinstance(x, int):
        return _I64, False
    if isinstance(x, float):
        return _F64, False
    if isinstance(x, complex):
        return _C128, False
    if dt_attr is not None:
        try:
            return np.dtype(dt_attr), False
        except TypeError:
            pass
    raise TypeError(f"Cannot determine dtype of {x!r}")


def _invalid_dtype_error(dt: np.dtype, x: Any) -> TypeError:
    what = f"dtype {dt}" if x is dt else f"Value {x!r} has dtype {dt}"
    return TypeError(
        f"{what}, which is not a valid array type; only numeric and bool types are supported.")


# Value codes. The hot path of result_type works on small ints instead of np.dtype objects,
# whose hashing is comparatively slow: each supported dtype has an index, and a value's code
# is 2 * index + weak. Dtype objects are recognised by identity through _ID_CODE; every object
# whose id is registered there is also kept alive in _ID_KEEP, so an id is never reused.
_INDEX_DTYPE: tuple[np.dtype, ...] = (
    _BOOL, *_UNSIGNED, *_SIGNED, *_FLOATS, *_COMPLEX, float0)
_DTYPE_INDEX: dict[np.dtype, int] = {dt: i for i, dt in enumerate(_INDEX_DTYPE)}
_ID_CODE: dict[int, int] = {id(dt): 2 * i for i, dt in enumerate(_INDEX_DTYPE)}
_ID_KEEP: list[np.dtype] = list(_INDEX_DTYPE)
_MAX_ID_ENTRIES = 1024  # equal dtype objects beyond this many take the slow path each time
_CODE_BITS = 6  # codes are below 2 ** _CODE_BITS
assert 2 * len(_INDEX_DTYPE) <= 2 ** _CODE_BITS

_SCALAR_CODE: dict[type, int] = {
    t: 2 * _DTYPE_INDEX[dt] + w for t, (dt, w) in _SCALAR_DW.items()}


def _code_of_dtype(dt: np.dtype, x: Any) -> int:
    """2 * index of `dt` (registering the object), or TypeError if `dt` is not supported."""
    index = _DTYPE_INDEX.get(dt)
    if index is None:
        raise _invalid_dtype_error(dt, x)
    if len(_ID_KEEP) < _MAX_ID_ENTRIES and id(dt) not in _ID_CODE:
        _ID_KEEP.append(dt)
        _ID_CODE[id(dt)] = 2 * index
    return 2 * index


def _code(x: Any) -> int:
    """The code of a value (see _dtype_and_weak for what counts as a value)."""
    c = _SCALAR_CODE.get(type(x))
    return _code_nonscalar(x) if c is None else c


def _code_nonscalar(x: Any) -> int:
    """_code for values that are not exactly a Python bool, int, float or complex."""
    if type(x) is np.ndarray:
        c = _ID_CODE.get(id(x.dtype))
        if c is not None:
            return c
    else:
        c = _ID_CODE.get(id(getattr(x, "dtype", None)))
        if c is not None:
            w = getattr(x, "weak_type", False)
            if w is False:
                return c
            if w is True:
                return c + 1
    dt, w = _dtype_and_weak(x)
    return _code_of_dtype(dt, x) + bool(w)


def dtype(x: Any, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value: Python scalars give bool/int64/float64/complex128, anything with a
    `dtype` attribute gives that, and dtype-likes (np.float32, 'float32', np.dtype) give
    themselves. With `canonicalize=True` the result is canonicalized for the current mode.

    Raises TypeError for values whose dtype cannot be determined or is not supported.
    """
    if x is None:
        raise TypeError("Cannot determine dtype of None")
    try:
        dt = _INDEX_DTYPE[_code(x) >> 1]
    except TypeError:  # an extended dtype, or a value of one, is its own dtype, as in JAX
        ext = x if isinstance(x, ExtendedDType) else getattr(x, "dtype", None)
        if isinstance(ext, ExtendedDType):
            return ext
        raise
    if canonicalize:
        return dt if _x64 else _TO_32.get(dt, dt)
    return dt


def is_weakly_typed(x: Any) -> bool:
    """True for Python int/float/complex values (not bool) and objects whose `weak_type` is set."""
    t = type(x)
    if t is int or t is float or t is complex:
        return True
    if isinstance(x, type):
        return False
    return bool(getattr(x, "weak_type", False))


# ---------------------------------------------------------------------------------------------
# The promotion lattice
# ---------------------------------------------------------------------------------------------

class _WeakNode:
    """A weak lattice node (i*, f* or c*). Compares by identity, unlike the Python types it
    stands for (np.dtype('int64') == int is True, which would confuse sets and dicts)."""

    __slots__ = ("name", "py_type")

    def __init__(self, name: str, py_type: type):
        self.name = name
        self.py_type = py_type

    def __repr__(self):
        return self.name


# Lattice nodes: strong np.dtypes and these three.
_WEAK_INT = _WeakNode("int", int)
_WEAK_FLOAT = _WeakNode("float", float)
_WEAK_COMPLEX = _WeakNode("complex", complex)
_PY_TYPE_NODE = {int: _WEAK_INT, float: _WEAK_FLOAT, complex: _WEAK_COMPLEX}


def _is_weak_node(n: Any) -> bool:
    return type(n) is _WeakNode


def _lattice_edges(x64: bool) -> dict[Any, list[Any]]:
    """Each node mapped to the nodes immediately above it."""
    small_floats = [_BF16] if _BF16 is not None else []
    edges: dict[Any, list[Any]] = {
        _BOOL: [_WEAK_INT],
        # The narrow integers and floats are leaves: only weak values promote to them.
        _WEAK_INT: [_U8, _I8, *_NARROW_INTS],
        _U8: [_I16, _U16],
        _U16: [_I32, _U32],
        # Without x64, u32 x i32 gives i32 rather than forming a 64-bit type.
        _U32: [_I64, _U64] if x64 else [_I32, _U64],
        _U64: [_WEAK_FLOAT],
        _I8: [_I16],
        _I16: [_I32],
        _I32: [_I64],
        _I64: [_WEAK_FLOAT],
        _WEAK_FLOAT: [*_NARROW_FLOATS, *small_floats, _F16, _WEAK_COMPLEX],
        _F16: [_F32],
        _F32: [_F64, _C64],
        _F64: [_C128],
        _WEAK_COMPLEX: [_C64],
        _C64: [_C128],
        _C128: [],
    }
    for t in small_floats:
        edges[t] = [_F32]
    for t in _NARROW_FLOATS + _NARROW_INTS:
        edges[t] = []
    return edges


def _upper_bounds(edges: dict[Any, list[Any]]) -> dict[Any, frozenset]:
    """Each node mapped to the set of nodes at or above it (transitive closure of `edges`)."""
    out: dict[Any, frozenset] = {}

    def visit(node, path):
        if node in out:
            return out[node]
        if node in path:
            raise TypePromotionError(f"cycle in the type promotion lattice at {node}")
        ub = {node}
        for above in edges[node]:
            ub |= visit(above, path | {node})
        out[node] = frozenset(ub)
        return out[node]

    for n in edges:
        visit(n, frozenset())
    return out


def _strict_lattice_edges() -> dict[Any, list[Any]]:
    edges: dict[Any, list[Any]] = {t: [] for t in (_BOOL, *_INT_SET, *_INEXACT_SET)}
    edges[_WEAK_INT] = [_WEAK_FLOAT, *_INT_SET]
    edges[_WEAK_FLOAT] = [_WEAK_COMPLEX, *_FLOAT_SET]
    edges[_WEAK_COMPLEX] = list(_COMPLEX_SET)
    return edges


# Keyed by the lattice: False or True (x64) for the standard one, "strict" for the strict one.
_UPPER_BOUNDS = {x64: _upper_bounds(_lattice_edges(x64)) for x64 in (False, True)}
_UPPER_BOUNDS["strict"] = _upper_bounds(_strict_lattice_edges())


def _node_name(n: Any) -> str:
    return str(n.py_type) if _is_weak_node(n) else str(n)


def _no_path_reason(nodes) -> str:
    """The second sentence of JAX's message for types without a common supertype: the narrow
    types refuse implicit promotion on purpose, and say so."""
    for kinds, what in ((_FLOAT8, "8-bit floats"), (_FLOAT4, "4-bit floats")):
        if any(n in kinds for n in nodes):
            return (f"To avoid unintended promotion, {what} do not support implicit promotion. "
                    "If you'd like your inputs to be promoted to another type, you can do so "
                    "explicitly using e.g. x.astype('float32')")
    if any(n in _NARROW_INT_SET for n in nodes):
        return ("To avoid unintended promotion, 1-bit, 2-bit and 4-bit integers do not support "
                "implicit promotion. If you'd like your inputs to be promoted to another type, "
                "you can do so explicitly using e.g. x.astype('int32')")
    return "Try explicitly casting inputs to the desired output type."


def _least_upper_bound(lattice, nodes) -> Any:
    """The least upper bound of `nodes` on the lattice (a key of _UPPER_BOUNDS; uncached)."""
    ubs = _UPPER_BOUNDS[lattice]
    n_set = set(nodes)
    bounds = []
    for n in n_set:
        ub = ubs.get(n)
        if ub is None:
            raise TypePromotionError(
                f"dtype={_node_name(n)} is not a valid dtype for type promotion.")
        bounds.append(ub)
    cub = frozenset.intersection(*bounds)
    lub = (cub & n_set) or {c for c in cub if cub <= ubs[c]}
    if len(lub) == 1:
        return next(iter(lub))
    names = tuple(_node_name(n) for n in nodes)
    if not lub and lattice == "strict":
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard.")
    if not lub:
        raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype "
                                 f"promotion path. {_no_path_reason(nodes)}")
    raise TypePromotionError(f"Input dtypes {names} have no unique least upper bound.")


# (lattice, node, node) -> node
_JOIN_CACHE: dict[tuple[Any, Any, Any], Any] = {}


def _join(lattice, a: Any, b: Any) -> Any:
    key = (lattice, a, b)
    r = _JOIN_CACHE.get(key)
    if r is None:
        r = _least_upper_bound(lattice, (a, b))
        _JOIN_CACHE[key] = r
        _JOIN_CACHE[(lattice, b, a)] = r
    return r


def _join_all(lattice, nodes) -> Any:
    it = iter(nodes)
    acc = next(it)
    for n in it:
        acc = _join(lattice, acc, n)
    return acc


def _lattice() -> Any:
    return "strict" if _strict else _x64


def _weak_node(dt: np.dtype) -> Any:
    """The lattice node of a weakly typed value of dtype `dt`."""
    if dt in _INT_SET:
        return _WEAK_INT
    if dt in _FLOAT_SET:
        return _WEAK_FLOAT
    if dt in _COMPLEX_SET:
        return _WEAK_COMPLEX
    return dt  # bool is never weak; anything else fails in the lattice lookup


def _node_dtype(node: Any, x64: bool) -> np.dtype:
    """The canonical dtype of a lattice node (weak nodes give the default type of their kind)."""
    if node is _WEAK_INT:
        return _I64 if x64 else _I32
    if node is _WEAK_FLOAT:
        return _F64 if x64 else _F32
    if node is _WEAK_COMPLEX:
        return _C128 if x64 else _C64
    return node if x64 else _TO_32.get(node, node)


def _as_promotion_node(x: Any) -> Any:
    if x is int or x is float or x is complex:
        return _PY_TYPE_NODE[x]
    return _as_np_dtype(x)


def promote_types(a: Any, b: Any) -> np.dtype:
    """The type a binary operation casts its arguments to, as `jax.numpy.promote_types`.

    Arguments are dtype-likes; the Python types `int`, `float` and `complex` are weak. The result
    is not canonicalized: promote_types(int, int) is int64 and uint64 x int64 gives float64.
    """
    node = _join(_lattice(), _as_promotion_node(a), _as_promotion_node(b))
    return np.dtype(node.py_type) if _is_weak_node(node) else node


def _lattice_result(pairs, x64: bool) -> tuple[np.dtype, bool]:
    """JAX's lattice_result_type followed by result_type's defaulting of weak results."""
    dts = []
    weaks = []
    for dt, w in pairs:
        if dt not in _VALID_DTYPES:
            raise _invalid_dtype_error(dt, dt)
        dts.append(dt if x64 else _TO_32.get(dt, dt))
        weaks.append(w)
    if len(dts) == 1:
        out, weak = dts[0], weaks[0]
    elif len(set(dts)) == 1 and not all(weaks):
        out, weak = dts[0], False
    elif all(weaks) and not _strict:
        # Join the strong counterparts and mark the result weak.
        out, weak = _node_dtype(_join_all(x64, set(dts)), x64), True
    else:
        node = _join_all(_lattice(), {(_weak_node(d) if w else d) for d, w in zip(dts, weaks)})
        out, weak = _node_dtype(node, x64), _is_weak_node(node)
    weak = weak and out != _BOOL
    if weak:
        out = _default_for_kind(out, x64)
    return out, weak


# Results of result_type keyed by the argument codes: one int for one or two arguments (the
# two-argument keys carry a high bit), a frozenset of codes for more (the result depends only
# on that set).
_RESULT_CACHE: dict[bool, dict[Any, tuple[np.dtype, bool]]] = {False: {}, True: {}}
_RESULT_CACHE_X32 = _RESULT_CACHE[False]
_RESULT_CACHE_X64 = _RESULT_CACHE[True]
_STRICT_RESULT_CACHE: dict[bool, dict[Any, tuple[np.dtype, bool]]] = {False: {}, True: {}}
_PAIR_FLAG = 1 << (2 * _CODE_BITS)
_LOW_MASK = (1 << _CODE_BITS) - 1


def _result_from_codes(codes, x64: bool) -> tuple[np.dtype, bool]:
    return _lattice_result([(_INDEX_DTYPE[c >> 1], bool(c & 1)) for c in codes], x64)


def result_type(*args: Any, return_weak_type_flag: bool = False):
    """The canonical dtype of combining `args`, as `jax.numpy.result_type`.

    Arguments may be Python scalars (int, float and complex ones are weak), numpy arrays and
    scalars, dtype-likes, Python scalar types (`int`, `float`, `complex` count as weak), None (the
    default float type) or objects with `dtype` and optionally `weak_type` attributes. With
    `return_weak_type_flag=True` returns `(dtype, weak_type)`. Arrays of an extended dtype (key
    arrays) give their dtype when they are all of it, as in JAX, and promote with nothing else.
    """
    try:
        return _result_type(args, return_weak_type_flag)
    except TypeError:
        dts = [getattr(a, "dtype", None) for a in args if not isinstance(a, type)]
        ext = next((d for d in dts if isinstance(d, ExtendedDType)), None)
        if ext is None:
            raise
        weak = [bool(getattr(a, "weak_type", False)) for a in args]
        if len(args) == 1 or (len(dts) == len(args) and len(set(dts)) == 1 and not all(weak)):
            out = (ext, weak[0] if len(args) == 1 else False)
            return out if return_weak_type_flag else ext
        raise ValueError(f"dtype={ext} is not a valid dtype for JAX type promotion.") from None


def _result_type(args, return_weak_type_flag):
    x64 = _x64
    cache = _RESULT_CACHE_X64 if x64 else _RESULT_CACHE_X32
    if _strict:
        cache = _STRICT_RESULT_CACHE[x64]
    n = len(args)
    if n == 2:
        # Python scalars inline: one array and one scalar is the commonest call.
        a, b = args
        ca = _SCALAR_CODE.get(type(a))
        if ca is None:
            ca = _code_nonscalar(a)
        cb = _SCALAR_CODE.get(type(b))
        if cb is None:
            cb = _code_nonscalar(b)
        key = _PAIR_FLAG | (ca << _CODE_BITS) | cb
        r = cache.get(key)
        if r is None:
            r = cache[key] = _result_from_codes(
                ((key >> _CODE_BITS) & _LOW_MASK, key & _LOW_MASK), x64)
    elif n == 1:
        key = _code(args[0])
        r = cache.get(key)
        if r is None:
            r = cache[key] = _result_from_codes((key,), x64)
    elif n == 0:
        raise ValueError("at least one array or dtype is required")
    else:
        key = frozenset(map(_code, args))
        r = cache.get(key)
        if r is None:
            r = cache[key] = _result_from_codes(key, x64)
    return r if return_weak_type_flag else r[0]


# ---------------------------------------------------------------------------------------------
# Predicates and dtype-kind helpers
# ---------------------------------------------------------------------------------------------

# The ml_dtypes scalar types subclass only np.generic; JAX places them in NumPy's hierarchy.
_FLOAT_SUPERTYPES = frozenset({np.floating, np.inexact, np.number, np.generic})
_SIGNED_SUPERTYPES = frozenset({np.signedinteger, np.integer, np.number, np.generic})
_UNSIGNED_SUPERTYPES = frozenset({np.unsignedinteger, np.integer, np.number, np.generic})
_EXTENSION_SUPERTYPES: dict[type, frozenset] = {
    **{dt.type: _FLOAT_SUPERTYPES for dt in _NARROW_FLOATS + ((_BF16,) if _BF16 else ())},
    **{dt.type: _SIGNED_SUPERTYPES for dt in _NARROW_SIGNED},
    **{dt.type: _UNSIGNED_SUPERTYPES for dt in _NARROW_UNSIGNED},
}


def _scalar_type(x: Any) -> type:
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    if isinstance(x, np.dtype):
        return x.type
    t = getattr(x, "type", None)  # an extended dtype (key<fry>) names its scalar class
    if isinstance(t, type) and issubclass(t, extended):
        return t
    return np.dtype(x).type


@functools.lru_cache(maxsize=512)
def _issubdtype_cached(a: Any, b: Any) -> bool:
    return _issubdtype(a, b)


def _issubdtype(a: Any, b: Any) -> bool:
    a_sc = _scalar_type(a)
    b_sc = _scalar_type(b)
    supertypes = _EXTENSION_SUPERTYPES.get(a_sc)
    if supertypes is not None:
        # bfloat16's scalar type (and the other ml_dtypes ones) subclass only np.generic.
        return b_sc is a_sc or b_sc in supertypes
    return bool(np.issubdtype(a_sc, b_sc))


def _issubdtype_uncached(a: Any, b: Any, err: TypeError) -> bool:
    """After the cache raised `err`: unhashable arguments are computed directly; for dtypes
    and types the error came from the computation itself and is raised again."""
    if isinstance(a, (type, np.dtype)) and isinstance(b, (type, np.dtype)):
        raise err
    return _issubdtype(a, b)


def issubdtype(a: Any, b: Any) -> bool:
    """`np.issubdtype` that also places the ml_dtypes types (bfloat16, float8_*, int4...) in
    NumPy's hierarchy: float8_e4m3fn is a floating type, int4 a signed integer
    (jax.dtypes.issubdtype)."""
    try:
        return _issubdtype_cached(a, b)
    except TypeError as err:
        return _issubdtype_uncached(a, b, err)


def numpy_issubdtype(arg1: Any, arg2: Any) -> bool:
    """issubdtype under jax.numpy's parameter names (jax.numpy.issubdtype; jax.dtypes names
    them a and b). Written out rather than wrapping issubdtype: it is called often."""
    try:
        return _issubdtype_cached(arg1, arg2)
    except TypeError as err:
        return _issubdtype_uncached(arg1, arg2, err)


_DTYPE_KINDS: dict[str, frozenset] = {
    "bool": frozenset({_BOOL}),
    "signed integer": _SIGNED_SET,
    "unsigned integer": _UNSIGNED_SET,
    "integral": _INT_SET,
    "real floating": _FLOAT_SET,
    "complex floating": _COMPLEX_SET,
    "numeric": _INT_SET | _INEXACT_SET,
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Array API `isdtype`: whether `dtype` is of `kind` (a kind name, a dtype, or a tuple)."""
    the_dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    options: set[np.dtype] = set()
    for k in kinds:
        if isinstance(k, str) and k in _DTYPE_KINDS:
            options |= _DTYPE_KINDS[k]
            continue
        try:
            options.add(np.dtype(k))
        except TypeError as e:
            if isinstance(k, str):
                raise ValueError(
                    f"Unrecognized kind={k!r}; expected one of {list(_DTYPE_KINDS)}, "
                    "or a dtype") from None
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got {k!r}") from e
    return the_dtype in options


if _ml_dtypes is not None:
    finfo = _ml_dtypes.finfo
    iinfo = _ml_dtypes.iinfo
else:
    finfo = np.finfo
    iinfo = np.iinfo


# What the type predicates see for an extended dtype: none of them holds for it.
_OPAQUE = np.dtype("V1")


def _dt(x: Any) -> np.dtype:
    if isinstance(x, np.dtype):
        return x
    return _OPAQUE if isinstance(x, ExtendedDType) else np.dtype(x)


def is_bool(dt: Any) -> bool:
    return _dt(dt) == _BOOL


def is_int(dt: Any) -> bool:
    """Signed or unsigned integer, int4 and the other narrow ones included (bool is not an
    integer)."""
    return _dt(dt) in _INT_SET


def is_signed_int(dt: Any) -> bool:
    """Signed integer (floats are not included)."""
    return _dt(dt) in _SIGNED_SET


def is_unsigned_int(dt: Any) -> bool:
    return _dt(dt) in _UNSIGNED_SET


is_signed = is_signed_int
is_unsigned = is_unsigned_int


def is_float(dt: Any) -> bool:
    """Real floating point, bfloat16 and the narrow floats (float8_*, float4_e2m1fn) included."""
    return _dt(dt) in _FLOAT_SET


# JAX's list (float8_e8m0fnu and float4_e2m1fn have no infinities either, but JAX's reductions
# start them from +-inf converted to the type all the same).
_NO_INF = frozenset(dt for dt in _NARROW_FLOATS if dt.name in (
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"))


def supports_inf(dt: Any) -> bool:
    """Whether JAX treats the inexact type `dt` as having infinities (jax.dtypes.supports_inf):
    False for float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz and
    non-inexact types."""
    d = _dt(dt)
    return d in _INEXACT_SET and d not in _NO_INF


def is_complex(dt: Any) -> bool:
    return _dt(dt) in _COMPLEX_SET


def is_inexact(dt: Any) -> bool:
    return _dt(dt) in _INEXACT_SET


_SHORT_NAMES: dict[np.dtype, str] = {float0: "float0"}


def short_dtype_name(dtype: Any) -> str:
    """The short name used when printing programs: f32, bf16, i8, u64, c64, bool, float0...
    (an extended dtype prints its own name, as in JAX)."""
    if isinstance(dtype, ExtendedDType):
        return dtype.name
    dt = _dt(dtype)
    name = _SHORT_NAMES.get(dt)
    if name is None:
        name = (dt.name.replace("float", "f").replace("uint", "u")
                .replace("int", "i").replace("complex", "c"))
        _SHORT_NAMES[dt] = name
    return name


def check_user_dtype(dtype: Any, fun_name: str | None = None) -> np.dtype:
    """Validate a dtype argument given to `fun_name` and return its canonical form.

    Python types give the default type of their kind. A 64-bit type requested while x64 is off
    is truncated to 32 bits with a warning. Raises TypeError for anything that is not a
    supported dtype and ValueError for None.
    """
    where = f" in {fun_name}" if fun_name else ""
    if dtype is None:
        raise ValueError(f"dtype must be specified{where}.")
    if isinstance(dtype, type) and dtype in _SCALAR_DW:
        return _node_dtype(_SCALAR_DW[dtype][0], _x64)
    if not isinstance(dtype, (type, np.dtype, str)) and hasattr(dtype, "dtype"):
        raise TypeError(f"Passing an array as a dtype argument is not supported{where}; "
                        "use dtype=x.dtype instead.")
    try:
        dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(str(e)) from e  # NumPy's words, as JAX passes them on
    if dt not in _VALID_DTYPES:
        raise TypeError(f"Only numeric and bool dtypes are supported, got dtype {dt}{where}.")
    if _x64:
        return dt
    out = _TO_32.get(dt, dt)
    if out is not dt:
        warnings.warn(
            f"Explicitly requested dtype {dt}{' requested' + where if where else ''} is not "
            f"available, and will be truncated to dtype {out}. To enable more dtypes, set the "
            "jax_enable_x64 configuration option or the JAX_ENABLE_X64 environment variable.",
            UserWarning, stacklevel=2)
    return out


# Ints and bool become float32 except 64-bit ints, which become float64 (JAX's table, which
# has int4 and uint4 but not int2 and uint2: those stay as they are).
_TO_INEXACT = {
    _BOOL: _F32, _I8: _F32, _U8: _F32, _I16: _F32, _U16: _F32, _I32: _F32, _U32: _F32,
    _I64: _F64, _U64: _F64,
    **{dt: _F32 for dt in _NARROW_INTS if dt.name in ("int4", "uint4")},
}
_TO_REAL = {_C64: _F32, _C128: _F64}


def to_inexact_dtype(dt: Any) -> np.dtype:
    """The canonical inexact dtype an input of dtype `dt` computes in (jnp.sin and friends):
    bool and ints of up to 32 bits give float32, 64-bit ints float64 (float32 without x64);
    float and complex types, float16 and bfloat16 included, are kept."""
    d = canonicalize_dtype(dt)
    return _TO_INEXACT.get(d, d)


def to_floating_dtype(dt: Any) -> np.dtype:
    """As to_inexact_dtype, but complex types give their real counterpart."""
    d = to_inexact_dtype(dt)
    return _TO_REAL.get(d, d)


def to_complex_dtype(dt: Any) -> np.dtype:
    """The canonical complex dtype for an input of dtype `dt`: complex128 for float64 and
    complex128 inputs, complex64 otherwise."""
    d = to_inexact_dtype(dt)
    return _C128 if (d == _F64 or d == _C128) else _C64


def itemsize_bits(dtype: Any) -> int:
    """Bits per element of `dtype` (8 for bool, 2x the component width for complex);
    ValueError for None and for dtypes without a numeric width (float0, key<fry>)."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    if dtype == _BOOL:
        return 8  # physical bit layout for boolean dtype
    if issubdtype(dtype, np.integer):
        return iinfo(dtype).bits
    if issubdtype(dtype, np.floating):
        return finfo(dtype).bits
    if issubdtype(dtype, np.complexfloating):
        return 2 * finfo(dtype).bits
    raise ValueError(f"unexpected input: {dtype=}")


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of a value's dtype."""
    typ = dtype(x)
    if typ == _BOOL:
        return bool
    if is_int(typ):
        return int
    if is_float(typ):
        return float
    if is_complex(typ):
        return complex
    raise TypeError(f"Invalid scalar value {x}")
