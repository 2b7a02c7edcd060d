"""The `precision=` argument of matrix products and convolutions.

It takes a `Precision` (or its name, or a pair of them for the two operands), a
`DotAlgorithmPreset` (or its name) or a `DotAlgorithm`. `canonicalize_precision` turns each
into the one form equations keep, as JAX does: None, a (lhs, rhs) pair of Precision values,
or the algorithm itself. Precision values choose between faster and more accurate float32
products on devices that offer both; gpuarr's backends compute every product at full
precision. An algorithm is honoured on every backend (`algorithm_dtypes`): the operands are
rounded to its input types and the products accumulated in its accumulation type, then the
result takes the product's own output type. As in JAX, a platform runs only the algorithms it
supports (`check_supported`); convolutions accept algorithms and ignore them, as JAX's CPU
backend does.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Union

import numpy as np

from gpuarr import dtypes
from gpuarr.config import config


class Precision(enum.Enum):
    """Precision of matrix products and convolutions (the `precision=` argument of dot,
    dot_general, conv_general_dilated, jnp.matmul, jnp.einsum): DEFAULT (aliases 'default',
    'fastest', 'bfloat16'), HIGH ('high', 'bfloat16_3x', 'tensorfloat32') or HIGHEST ('highest',
    'float32'). It selects between faster and more accurate float32 products on devices that
    offer both; the host computes every product at full precision."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        return _PRECISION_STRINGS.get(value)

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}


class DotAlgorithm(NamedTuple):
    """How a matrix product computes: its operands are rounded to `lhs_precision_type` and
    `rhs_precision_type` and the products accumulated in `accumulation_type`. The component
    counts and `num_primitive_operations` describe algorithms that split each operand into
    several lower-precision parts to emulate a higher precision (1 when there is no split);
    `allow_imprecise_accumulation` lets some steps accumulate in lower precision. Pass one as
    the `precision` of `lax.dot`, `lax.dot_general`, `jnp.matmul` or `jnp.einsum`; a platform
    that does not run it raises ValueError when the product is computed."""

    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_BF16 = np.dtype(dtypes.bfloat16) if hasattr(dtypes, "bfloat16") else None


class DotAlgorithmPreset(enum.Enum):
    """The known dot algorithms, named LHS_RHS_ACCUMULATION after the operand and accumulation
    types (F16, BF16, TF32, F32, F64, ANY_F8); an `_X3`, `_X6` or `_X9` suffix splits each
    float32 operand into bfloat16 or tensorfloat32 parts to emulate float32 with 3, 6 or 9
    products, and `_FAST_ACCUM` allows faster, less accurate accumulation. DEFAULT leaves the
    choice to the platform. Pass a member or its name as the `precision` of a product."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple | None:
        """The operand types the algorithm takes as they are; others are converted to the
        first (None: any type)."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16_"):
            return (_F16,)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):  # bfloat16 or float32 storage
            return (_BF16, _F32) if _BF16 is not None else (_F32,)
        return (_F64,) if name == "F64_F64_F64" else (_F32,)

    @property
    def supported_rhs_types(self) -> tuple | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> np.dtype | None:
        return _PRESET_ACCUMULATION.get(self.name, _F32)

    def supported_output_types(self, lhs_dtype, rhs_dtype) -> tuple | None:
        """The result types the algorithm gives directly (None: any type)."""
        if self.name.startswith("ANY_F8_ANY_F8_F32"):
            return (_F32, _F16) + ((_BF16,) if _BF16 is not None else ())
        narrow = {"F16_F16_F32": _F16, "BF16_BF16_F32": _BF16}.get(self.name)
        if narrow is not None:  # a narrow result only from narrow operands of that type
            both = dtypes.promote_types(lhs_dtype, rhs_dtype)
            return (_F32, narrow) if both == narrow else (_F32,)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


_PRESET_ACCUMULATION = {"DEFAULT": None, "ANY_F8_ANY_F8_ANY": None,
                        "ANY_F8_ANY_F8_ANY_FAST_ACCUM": None, "F16_F16_F16": _F16,
                        "BF16_BF16_BF16": _BF16, "F64_F64_F64": _F64}

# What `precision=` accepts, as JAX types it.
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision],
                      DotAlgorithm, DotAlgorithmPreset]

_CHOICES = ("Precision argument must be one of:\n"
            "- None,\n"
            f"- a string in {list(_PRECISION_STRINGS)},\n"
            "- a lax.Precision value,\n"
            "- a tuple of two lax.Precision values or strings,\n"
            "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
            "- a lax.DotAlgorithm value;\n")


def canonicalize_precision(precision):
    """The form a product's equation keeps of its `precision` argument: None, a (lhs, rhs)
    pair of Precision values, or a DotAlgorithm / DotAlgorithmPreset. None takes
    `jax_default_matmul_precision` when that is set. Anything else raises ValueError."""
    if precision is None:
        default = config._values.get("default_matmul_precision") or None
        if default is None:
            return None
        try:
            return canonicalize_precision(default)
        except ValueError:
            raise ValueError(
                "jax_default_matmul_precision flag must be set to None, a value in "
                f"{list(_PRECISION_STRINGS)}, or the name of a lax.DotAlgorithmPreset, but got "
                f"{default}") from None
    if isinstance(precision, str):
        if precision in _PRECISION_STRINGS:
            return Precision(precision), Precision(precision)
        if precision in DotAlgorithmPreset.__members__:
            return DotAlgorithmPreset[precision]
    elif isinstance(precision, Precision):
        return precision, precision
    elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) for p in precision):
            return tuple(canonicalize_precision(p)[0] for p in precision)
    raise ValueError(f"{_CHOICES}but got {precision}.")


def is_algorithm(precision) -> bool:
    """Whether a canonical precision names an algorithm other than the platform's default."""
    return isinstance(precision, DotAlgorithm) or (
        isinstance(precision, DotAlgorithmPreset) and precision is not DotAlgorithmPreset.DEFAULT)


# The presets XLA's CPU backend runs (JAX checks them, since that backend would ignore the
# others silently). GPUs run every preset but the float8 ones (gpuarr has no float8 types),
# and algorithms without operand splitting whose types are floats gpuarr has.
_CPU_PRESETS = frozenset(DotAlgorithmPreset[name] for name in (
    "DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
    "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"))


def check_supported(precision, platform: str) -> None:
    """Raise ValueError when `platform` ("cpu" or "gpu") does not run the algorithm."""
    if platform == "cpu":
        supported = precision in _CPU_PRESETS
    elif isinstance(precision, DotAlgorithmPreset):
        supported = not precision.name.startswith("ANY_F8")
    else:
        types = {_F16, _F32, _F64} | ({_BF16} if _BF16 is not None else set())
        supported = (precision[3:6] == (1, 1, 1) and not precision.allow_imprecise_accumulation
                     and all(_dtype_or_none(t) in types for t in precision[:3]))
    if not supported:
        raise ValueError(f"The precision '{precision}' is not supported by dot_general on "
                         f"{platform.upper()}")


def _dtype_or_none(t):
    try:
        return np.dtype(t)
    except TypeError:
        return None


def algorithm_dtypes(algorithm, lhs_dtype, rhs_dtype, out_dtype) -> tuple:
    """(lhs type, rhs type, accumulation type) a product with `algorithm` computes in: an
    operand type the algorithm does not take converts to its first supported type, and the
    accumulation type is the output type when the algorithm gives that directly."""
    if isinstance(algorithm, DotAlgorithm):
        return tuple(np.dtype(t) for t in algorithm[:3])

    def converted(dtype, supported):
        dtype = np.dtype(dtype)
        return dtype if supported is None or dtype in supported else supported[0]

    lhs = converted(lhs_dtype, algorithm.supported_lhs_types)
    rhs = converted(rhs_dtype, algorithm.supported_rhs_types)
    return lhs, rhs, converted(out_dtype, algorithm.supported_output_types(lhs, rhs))


def algorithm_product(product, x, y, algorithm, out_dtype):
    """`product(x, y)` (a matrix product of two operands of one type) computed under a dot
    algorithm: the operands rounded to its input types, the products accumulated in its
    accumulation type (a half-precision one in float32, rounded once at the end, as XLA's CPU
    backend does), the result converted to `out_dtype`. Complex operands converted to a real
    type keep their real parts, as XLA converts them. Runs on NumPy or CuPy arrays."""
    check_supported(algorithm, "gpu" if type(x).__module__.startswith("cupy") else "cpu")
    out = np.dtype(out_dtype)
    lhs, rhs, acc = algorithm_dtypes(algorithm, x.dtype, y.dtype, out)
    x, y = _convert(x, lhs), _convert(y, rhs)
    if algorithm is DotAlgorithmPreset.TF32_TF32_F32:
        x, y = round_to_tf32(x), round_to_tf32(y)
    wide = acc if acc.itemsize >= 4 else _F32
    return _convert(_convert(product(_convert(x, wide), _convert(y, wide)), acc), out)


def _convert(x, dtype):
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = x.real
    return x.astype(dtype, copy=False)


def round_to_tf32(x):
    """float32 values rounded to tensorfloat32's 10 mantissa bits (round to nearest even), as
    a tensor core reads them; the result stays float32."""
    bits = x.astype(np.float32).view(np.uint32)
    keep = np.uint32(0xFFFFE000)
    half, lsb = np.uint32(0x1000), np.uint32(0x2000)
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    rounded = (bits + (half - np.uint32(1)) + ((bits & lsb) >> np.uint32(13))) & keep
    return np.where(finite, rounded, bits).view(np.float32)
