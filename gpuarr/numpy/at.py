"""`x.at[idx]`: functional indexed updates (set, add, multiply, min, apply, get, ...).

Each method returns a new array; `x` never changes. Repeated indices all apply (add accumulates).
Out-of-bounds updates are dropped unless `mode='clip'`; `get` clamps unless `mode='fill'`.
"""
from __future__ import annotations

import warnings

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import slicing
from gpuarr.numpy import advanced_indexing
from gpuarr.numpy.arguments import check_arraylike, promote_dtypes
from gpuarr.numpy.array_methods import install

__all__ = ["IndexUpdateHelper", "IndexUpdateRef"]


class IndexUpdateHelper:
    """The object behind `x.at`: indexing it (`x.at[idx]`) gives an IndexUpdateRef."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


def _update(ref, values, scatter_fn, *, indices_are_sorted, unique_indices, mode,
            wrap_negative_indices):
    """Scatter `values` into `ref.array` at `ref.index`; the result keeps x's dtype and weak type."""
    x = ref.array
    check_arraylike("at", values)
    aval = get_aval(x)
    value_dtype = dtypes.result_type(x, values)
    if value_dtype != aval.dtype:
        warnings.warn(
            "scatter inputs have incompatible types: cannot safely cast value from "
            f"dtype={dtypes.dtype(values, canonicalize=True)} to dtype={aval.dtype} with "
            "jax_numpy_dtype_promotion=standard. In future JAX releases this will result in an "
            "error.", FutureWarning, stacklevel=3)
    xp, vp = promote_dtypes(x, values)
    out = advanced_indexing.scatter_update(
        xp, ref.index, vp, scatter_fn, mode=mode, wrap_negative_indices=wrap_negative_indices,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return _restore(out, aval)


def _restore(out, aval):
    out_aval = get_aval(out)
    if out_aval.dtype == aval.dtype and out_aval.weak_type == aval.weak_type:
        return out
    return lax_conversions._convert_weak(out, aval.dtype, aval.weak_type)


def _ones_like(x):
    aval = get_aval(x)
    return lax_shape_ops.full(aval.shape, 1, aval.dtype)


class IndexUpdateRef:
    """`x.at[idx]`: methods that return `x` with `x[idx]` read or updated (x itself is unchanged)."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
            out_sharding=None, wrap_negative_indices=True):
        """`x[idx]`, with `mode` ('clip', 'fill', 'promise_in_bounds') and `fill_value` control."""
        return advanced_indexing.getitem(self.array, self.index, mode=mode, fill_value=fill_value,
                                         wrap_negative_indices=wrap_negative_indices,
                                         indices_are_sorted=indices_are_sorted,
                                         unique_indices=unique_indices)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] = values`."""
        return _update(self, values, slicing.scatter, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] += values`; repeated indices accumulate."""
        return _update(self, values, slicing.scatter_add, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] -= values`."""
        return _update(self, values, slicing.scatter_sub, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] *= values`."""
        return _update(self, values, slicing.scatter_mul, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] /= values` (x divided by the product of its updates)."""
        from gpuarr.numpy.ufuncs import divide
        factors = IndexUpdateRef(_ones_like(self.array), self.index).multiply(
            values, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
            mode=mode, wrap_negative_indices=wrap_negative_indices)
        return divide(self.array, factors)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] **= values`."""
        from gpuarr.numpy.ufuncs import power
        exponents = IndexUpdateRef(_ones_like(self.array), self.index).multiply(
            values, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
            mode=mode, wrap_negative_indices=wrap_negative_indices)
        return power(self.array, exponents)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] = minimum(x[idx], values)`."""
        return _update(self, values, slicing.scatter_min, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """The pure equivalent of `x[idx] = maximum(x[idx], values)`."""
        return _update(self, values, slicing.scatter_max, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode,
                       wrap_negative_indices=wrap_negative_indices)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """The pure equivalent of `func.at(x, idx)` for a unary elementwise `func`; a repeated
        index applies `func` once per occurrence."""
        x = self.array
        aval = get_aval(x)

        def apply_fn(operand, indices, updates, dnums, **kw):
            return slicing.scatter_apply(operand, indices, func, dnums,
                                         update_shape=get_aval(updates).shape, **kw)

        dummy = np.zeros((), aval.dtype)[()]
        return advanced_indexing.scatter_update(
            x, self.index, dummy, apply_fn, mode=mode, wrap_negative_indices=wrap_negative_indices,
            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def _at(self):
    return IndexUpdateHelper(self)


install(properties={"at": property(_at)})
