"""Mutable array references (`jax.new_ref`, `jax.Ref`): a box holding an array that is read
with `ref[...]` and written with `ref[idx] = value`. A Ref belongs to the trace it was made
under: one made inside a transformed function lives and dies with that trace; one made outside
can be read inside (its value is a constant there) but not written, since the write would leak
a traced value out of the transformation."""
from __future__ import annotations

import math

from gpuarr import core
from gpuarr.core import ShapedArray, Tracer, get_aval
from gpuarr.dispatch import as_array


class AbstractRef:
    """The abstract value of a Ref: the ShapedArray of the array it holds (`inner_aval`)."""

    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))
    weak_type = property(lambda self: self.inner_aval.weak_type)

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))

    def __repr__(self):
        return f"Ref{{{self.inner_aval.str_short()}}}"


class Ref:
    """A mutable reference to an array (jax.Ref); make one with new_ref."""

    __slots__ = ("_value", "_trace")

    def __init__(self, value):
        self._value = value
        self._trace = core.current_trace()

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(get_aval(self._value))

    shape = property(lambda self: get_aval(self._value).shape)
    dtype = property(lambda self: get_aval(self._value).dtype)
    ndim = property(lambda self: len(get_aval(self._value).shape))
    size = property(lambda self: math.prod(get_aval(self._value).shape))

    def __getitem__(self, idx):
        if idx is Ellipsis or idx == ():
            return self._value
        return self._value[idx]

    def __setitem__(self, idx, value):
        if isinstance(value, Tracer) and core.current_trace() is not self._trace:
            raise NotImplementedError(
                "Writing a traced value into a Ref made outside the transformation would leak "
                "it; create the Ref inside the transformed function, or return the value and "
                "write it after the transformation.")
        aval = get_aval(self._value)
        if idx is Ellipsis or idx == ():
            new_aval = get_aval(value)
            if new_aval.dtype != aval.dtype or new_aval.shape != aval.shape:
                raise ValueError(f"Invalid value for a Ref write: the Ref holds "
                                 f"{aval.str_short()}, the value is {new_aval.str_short()}; "
                                 "convert the value (astype, reshape) first.")
            self._value = value
        else:
            self._value = self._value.at[idx].set(value)

    def get(self):
        return self._value

    def set(self, value) -> None:
        self[...] = value

    def __len__(self):
        return len(self._value)

    def __repr__(self):
        return f"Ref({self._value!r})"


def new_ref(init_val, *, memory_space=None, kind=None) -> Ref:
    """A new Ref holding the array `init_val` (jax.new_ref)."""
    del memory_space, kind
    return Ref(init_val if isinstance(init_val, Tracer) else as_array(init_val))


def freeze(ref: Ref):
    """The array a Ref holds, as a value (jax.freeze)."""
    return ref[...]
