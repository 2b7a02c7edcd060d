"""convert_element_type: the primitive and its rules, and the conversion that keeps or drops a
weak type, which the other primitives use for their results.
"""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.array import Array
from gpuarr.core import (
    Primitive,
    ShapedArray,
    abstract_eval_rules,
    get_aval,
    is_extended_dtype,
    physical_element_aval,
    weak_type_rules,
)
from gpuarr.impls import elementwise_prims, impl_rules, narrow_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules, vectorized_rule
from gpuarr.interpreters.physical import dtype_params, physical_rules
from gpuarr.lax.arguments import _SCALARS, _dtype_of

# ---------------------------------------------------------------- convert_element_type


def _convert_impl(x, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    src = x.dtype
    if src == new_dtype:
        return x
    if src in narrow_types.NARROW or new_dtype in narrow_types.NARROW:
        return narrow_types.convert(x, new_dtype)  # XLA's conversions, not ml_dtypes' (see there)
    if new_dtype == np.bool_:
        return x != 0
    if dtypes.is_complex(src) and not dtypes.is_complex(new_dtype):
        x = np.real(x)
        src = x.dtype
    if dtypes.is_float(src) and dtypes.is_int(new_dtype):
        # Saturating cast (SPEC S16): NaN -> 0, out-of-range values clamp to the type's range.
        info = np.iinfo(new_dtype)
        wide = x.astype(np.float64)
        out = np.clip(np.nan_to_num(wide, nan=0.0), float(info.min), float(info.max))
        out = np.where(out >= float(info.max), info.max, np.trunc(out))
        return out.astype(new_dtype) if new_dtype.itemsize < 8 else _exact_to_int64(wide, info, new_dtype)
    return x.astype(new_dtype)


def _exact_to_int64(wide, info, new_dtype):
    out = np.zeros(wide.shape, new_dtype)
    ok = np.isfinite(wide) & (wide > float(info.min)) & (wide < float(info.max))
    out[ok] = wide[ok].astype(new_dtype)
    out[~np.isnan(wide) & (wide >= float(info.max))] = info.max
    out[~np.isnan(wide) & (wide <= float(info.min))] = info.min
    return out


convert_element_type_p = Primitive("convert_element_type")
impl_rules[convert_element_type_p] = _convert_impl
elementwise_prims.add(convert_element_type_p)
def _convert_abstract(x, new_dtype, weak_type=False):
    if is_extended_dtype(new_dtype) or is_extended_dtype(x.dtype):
        return [_extended_conversion(x, new_dtype)]
    return [ShapedArray(x.shape, new_dtype, weak_type)]


def _extended_conversion(x, new) -> ShapedArray:
    """The result of converting `x` to or from an extended dtype, as JAX's to_edtype and
    from_edtype type it: the rules must allow it (`convert_from` of the old dtype,
    `convert_to` of the new one), and the plain side is the element's physical type, whose
    shape is the trailing axes of the plain array. JAX's ValueError otherwise."""
    old = x.dtype
    if old == new:
        return x
    if is_extended_dtype(old) and is_extended_dtype(new):
        raise ValueError(f"Cannot convert_element_type from {_dtype_name(old)} to "
                         f"{_dtype_name(new)}: convert through the representation type.")
    ext, plain = (old, new) if is_extended_dtype(old) else (new, old)
    allowed = (ext._rules.convert_from(ext, plain) if ext is old
               else ext._rules.convert_to(plain, ext))
    if not allowed:
        raise ValueError(f"Cannot convert_element_type from {_dtype_name(old)} to "
                         f"{_dtype_name(new)}: the extended dtype's rules (convert_from, "
                         "convert_to) do not allow it.")
    rep = physical_element_aval(ext)
    if rep.dtype != plain:
        raise ValueError(f"can only convert {'from' if ext is old else 'to'} extended dtype "
                         f"{'to' if ext is old else 'from'} its representation dtype "
                         f"{_dtype_name(rep.dtype)}, not {_dtype_name(plain)}.")
    if ext is old:
        return ShapedArray((*x.shape, *rep.shape), plain)
    n = len(x.shape) - len(rep.shape)
    if n < 0 or tuple(x.shape[n:]) != rep.shape:
        raise ValueError(f"can only convert to extended dtype {ext.name} from an array whose "
                         f"trailing axes are its representation shape {rep.shape}; got "
                         f"shape {x.shape}.")
    return ShapedArray(x.shape[:n], ext)


def _dtype_name(dt) -> str:
    return dt.name if isinstance(dt, dtypes.ExtendedDType) else np.dtype(dt).name


def _convert_physical(in_avals, out_avals, x, new_dtype, weak_type=False):
    # Between an extended dtype and its representation: the physical data is the same.
    return [x]


abstract_eval_rules[convert_element_type_p] = _convert_abstract
physical_rules[convert_element_type_p] = _convert_physical
dtype_params[convert_element_type_p] = "new_dtype"
weak_type_rules[convert_element_type_p] = lambda x, new_dtype, weak_type=False: weak_type
narrow_rules[convert_element_type_p] = _convert_impl  # which converts narrow types itself
batch_rules[convert_element_type_p] = vectorized_rule(convert_element_type_p)


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if is_extended_dtype(new_dtype) or is_extended_dtype(_dtype_of(x)):
        # The tangent converts to the tangent type of the result (the dtype's rules say).
        want = ad.tangent_aval(get_aval(out))
        if type(t) is Zero or want.dtype == dtypes.float0:
            return out, Zero(want)
        return out, convert_element_type_p.bind(t, new_dtype=want.dtype, weak_type=False)
    if type(t) is Zero or not (dtypes.is_float(new_dtype) or dtypes.is_complex(new_dtype)) \
            or not (dtypes.is_float(_dtype_of(x)) or dtypes.is_complex(_dtype_of(x))):
        return out, Zero.from_primal(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


ad.jvp_rules[convert_element_type_p] = _convert_jvp
ad.transpose_rules[convert_element_type_p] = lambda ct, x, new_dtype, weak_type=False: [
    convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)
    if type(ct) is not Zero else Zero(x.aval)]


_CONSTANTS = (*_SCALARS, np.generic)


def convert_element_type(operand, new_dtype):
    """Cast to `new_dtype` (float -> int saturates; NaN becomes 0), as lax.convert_element_type."""
    if isinstance(new_dtype, dtypes.ExtendedDType) or isinstance(
            getattr(operand, "dtype", None), dtypes.ExtendedDType):
        return _convert_extended(operand, new_dtype)
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if isinstance(operand, _CONSTANTS) and new_dtype != dtypes.float0 and not (
            dtypes.is_int(new_dtype) and not np.isfinite(operand)):
        # A constant converts at once, as in JAX: no equation, a literal of the new type.
        try:
            return Array(np.asarray(operand).astype(new_dtype))
        except (OverflowError, TypeError):
            pass
    if isinstance(operand, _SCALARS):
        operand = np.asarray(operand, dtypes.dtype(operand, canonicalize=True))[()]
    aval = get_aval(operand)
    if aval.dtype == new_dtype and not aval.weak_type and hasattr(operand, "aval"):
        return operand  # already an Array (or tracer) of that type; NumPy values still convert
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=False)


def _convert_extended(operand, new_dtype):
    """To or from an extended dtype. One with rules (flax's fm32) converts as its rules allow.
    Key arrays convert only to their own dtype, which leaves them as they are (as in JAX:
    optax's MultiSteps casts every leaf of its state, keys included, back to its dtype)."""
    old = getattr(operand, "dtype", None)
    if isinstance(old, dtypes.ExtendedDType) and old == new_dtype:
        return operand
    if is_extended_dtype(new_dtype) or is_extended_dtype(old):
        if not is_extended_dtype(new_dtype):
            new_dtype = dtypes.canonicalize_dtype(new_dtype)
        if isinstance(operand, _SCALARS):
            operand = np.asarray(operand, dtypes.dtype(operand, canonicalize=True))
        return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=False)
    def name(dt):
        return dt.name if isinstance(dt, dtypes.ExtendedDType) else np.dtype(dt).name
    hint = ("Use jax.random.key_data(key) for the key's integer data."
            if isinstance(old, dtypes.ExtendedDType) else
            "Use jax.random.wrap_key_data(data) to make keys of integer data.")
    raise ValueError(f"Cannot convert_element_type from {name(old)} to {name(new_dtype)}. {hint}")


def _convert_weak(operand, new_dtype, weak_type):
    """Internal: convert keeping (or setting) the weak-type flag."""
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    if type(operand) is Array and aval.dtype == new_dtype and not aval.shape:
        # A constant's flag: a literal when staged, as in JAX, whatever platform holds it (a
        # device scalar keeps its buffer; jaxprs print the same on every platform).
        if operand._platform is None:
            return Array(operand._value, weak_type=weak_type)
        if not hasattr(operand, "_sharding"):
            return Array(operand._value, weak_type, operand._device, operand._committed,
                         operand._platform)
    return convert_element_type_p.bind(operand, new_dtype=np.dtype(new_dtype), weak_type=weak_type)
