"""Type annotations for code written against gpuarr, as `jax.typing`: `ArrayLike` for values
gpuarr functions accept as arrays, `DTypeLike` for values they accept as dtypes."""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from gpuarr.array import Array


class SupportsDType(Protocol):
    """Anything with a `dtype` attribute (an array, a ShapeDtypeStruct)."""

    @property
    def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]
