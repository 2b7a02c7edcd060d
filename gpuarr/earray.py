"""EArray: an array of a user-defined extended dtype (flax's `fm32`), its aval with the
physical data that holds it, and the result handlers that make one (JAX's `earray.EArray`
and `pxla.global_result_handlers`).

A value of an extended dtype leaving a jit or an eager operation is built by its dtype's
`_rules.global_sharded_result_handler(aval, sharding, committed)`, called with the list of
the physical data's single-device Arrays (JAX's per-device buffers); that handler typically
asks `global_result_handlers[ShapedArray]` for the physical Array and wraps it in an EArray.
Computations take an EArray's data (`_extended_data`) in its place.
"""
from __future__ import annotations

import math

from gpuarr.array import register_virtual_subclass
from gpuarr.core import ShapedArray, has_extended_dtype, pytype_aval_mappings


class EArray:
    """An array of an extended dtype: `aval` (shape and extended dtype) over `data`, an Array
    of the physical aval. `isinstance(x, jax.Array)` is true for it, as in JAX; it is a leaf
    of pytrees."""

    __slots__ = ("_aval", "_data")
    __hash__ = None  # type: ignore[assignment]
    __array_priority__ = 100

    def __init__(self, aval, data):
        self._aval = aval
        self._data = data

    aval = property(lambda self: self._aval)
    _extended_data = property(lambda self: self._data)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: math.prod(self._aval.shape))
    weak_type = property(lambda self: self._aval.weak_type)
    itemsize = property(lambda self: self._aval.dtype.itemsize)

    # where the data is
    sharding = property(lambda self: self._data.sharding)
    committed = property(lambda self: self._data._committed)
    _committed = committed
    device = property(lambda self: self._data.device)
    devices = property(lambda self: self._data.devices)
    is_deleted = property(lambda self: self._data.is_deleted)
    delete = property(lambda self: self._data.delete)

    def __len__(self):
        if not self._aval.shape:
            raise TypeError("len() of unsized object")
        return self._aval.shape[0]

    def __iter__(self):
        if not self._aval.shape:
            raise TypeError("iteration over a 0-d array")
        raise NotImplementedError(
            "iterating over an array of an extended dtype; index it under jit or convert it "
            "with lax.convert_element_type first")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"An array of the extended dtype {self.dtype.name} cannot be converted "
                        "to a NumPy array; convert it to its float type with "
                        "lax.convert_element_type first.")

    def block_until_ready(self):
        self._data.block_until_ready()
        return self

    def copy(self):
        return EArray(self._aval, self._data.copy())

    def __repr__(self):
        return "E" + repr(self._data)


register_virtual_subclass(EArray)  # isinstance(x, jax.Array), as in JAX
pytype_aval_mappings[EArray] = lambda x: x.aval


def _array_result_handler(aval, sharding, committed):
    """The handler of a plain array result: the physical data's one single-device Array."""
    del aval, sharding, committed

    def handler(bufs):
        if len(bufs) != 1:
            raise NotImplementedError("an extended-dtype result over several devices")
        return bufs[0]
    return handler


# aval type -> fn(aval, sharding, committed) -> handler(bufs) -> array (JAX's
# pxla.global_result_handlers, which extended dtypes' result handlers build on).
global_result_handlers: dict = {ShapedArray: _array_result_handler}


def logical_result(data, aval):
    """The value of logical type `aval` whose physical data is the Array `data`: an extended
    dtype's own array (through its rules' result handler), else `data` itself."""
    if not has_extended_dtype(aval):
        return data
    handler = aval.dtype._rules.global_sharded_result_handler(
        aval, data.sharding, data._committed)
    return handler([data])

