"""Scalar types that work both as dtypes and as constructors: `jnp.float32(3)` is an Array.

As in JAX, `jnp.float32` can be passed anywhere a dtype is expected (it has a `dtype`
attribute and compares equal to `numpy.float32`), and calling it converts its argument.
"""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes


class _ScalarMeta(type):
    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or other == cls.dtype.type

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x=0):
        from gpuarr.numpy.creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'gpuarr.numpy.{cls.__name__}'>"


def _scalar_type(np_type, name=None):
    return _ScalarMeta(name or np.dtype(np_type).name, (object,), {"dtype": np.dtype(np_type)})


bool_ = _scalar_type(np.bool_, "bool_")
int8, int16, int32, int64 = map(_scalar_type, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = map(_scalar_type, (np.float16, np.float32, np.float64))
complex64, complex128 = map(_scalar_type, (np.complex64, np.complex128))
float_, complex_ = float64, complex128  # NumPy 1's names, kept by jax.numpy
if hasattr(dtypes, "bfloat16"):
    bfloat16 = _scalar_type(dtypes.bfloat16, "bfloat16")
# The narrow types of ml_dtypes (float8_e4m3fn, int4, ...): defined where ml_dtypes has them.
NARROW_NAMES = tuple(name for name in (dtypes.NARROW_FLOAT_NAMES + dtypes.NARROW_SIGNED_NAMES
                                       + dtypes.NARROW_UNSIGNED_NAMES) if hasattr(dtypes, name))
globals().update({name: _scalar_type(getattr(dtypes, name), name) for name in NARROW_NAMES})
