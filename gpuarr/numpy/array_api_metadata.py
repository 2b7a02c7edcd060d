"""The array API standard's metadata: `__array_api_version__` and `__array_namespace_info__()`
(capabilities, devices and dtypes), as jax.numpy reports them."""
from __future__ import annotations

import numpy as np

from gpuarr import device_api, dtypes
from gpuarr.config import config

__array_api_version__ = "2024.12"

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_X64_ONLY = {"int64", "uint64", "float64", "complex128"}


class ArrayNamespaceInfo:
    """What `gpuarr.numpy.__array_namespace_info__()` returns: the namespace's capabilities,
    devices and dtypes (the 64-bit ones only with `jax_enable_x64`)."""

    _capabilities = {
        "boolean indexing": False,  # not under jit: the result's shape depends on the values
        "data-dependent shapes": False,
        "max dimensions": 64,
    }

    def capabilities(self) -> dict:
        return dict(self._capabilities)

    def default_device(self):
        # None: arrays are uncommitted, placed on the default device (as in JAX).
        return None

    def devices(self) -> list:
        return [None, *device_api.devices()]

    def default_dtypes(self, *, device=None) -> dict:
        del device  # the dtypes do not depend on the device
        return {
            "real floating": dtypes.default_float_dtype(),
            "complex floating": dtypes.default_complex_dtype(),
            "integral": dtypes.default_int_dtype(),
            "indexing": dtypes.default_int_dtype(),
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        del device
        if kind is None:
            names = _KINDS["numeric"] + _KINDS["bool"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            unknown = [k for k in kinds if k not in _KINDS]
            if unknown:
                raise ValueError(f"unknown dtype kind {unknown[0]!r}; expected one of "
                                 f"{', '.join(map(repr, _KINDS))}")
            names = tuple(n for k in kinds for n in _KINDS[k])
        x64 = config.enable_x64
        return {n: np.dtype(n) for n in names if x64 or n not in _X64_ONLY}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API's inspection object for gpuarr.numpy (capabilities, devices, dtypes)."""
    return ArrayNamespaceInfo()
