"""`jax.experimental.hijax`: the names of JAX's high-level types (types whose values are
pytrees of arrays carried through transformations as one traced value). gpuarr does not trace
such types: the classes here exist so that libraries that define them behind an off-by-default
switch (flax's `flax_hijax_variable`) import, and binding one of their primitives raises
NotImplementedError saying so. `register_hitype` records the type's abstract value in
`core.pytype_aval_mappings`, so `jax.typeof` of such a value works."""
from __future__ import annotations

from collections.abc import Callable

from gpuarr.core import ShapedArray, pytype_aval_mappings
from gpuarr.extend.core import Primitive
from gpuarr.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal  # noqa: F401

AbstractValue = ShapedArray


class EffectTypeSet:
    """A set of effect types (`control_flow_allowed_effects.add_type(E)`)."""

    def __init__(self):
        self._types: set = set()

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, t) for t in self._types)


control_flow_allowed_effects = EffectTypeSet()


class HiPrimitive(Primitive):
    """A primitive on high-level types; gpuarr cannot trace those, so binding one raises."""

    def __init__(self, name: str):
        super().__init__(name)
        self.multiple_results = False

    def bind(self, *args, **params):
        raise NotImplementedError(
            f"{self.name}: gpuarr does not implement JAX's high-level (hijax) types; switch "
            "off the library option that uses them (flax: flax_hijax_variable=False).")


class MutableHiType:
    """The base class of mutable high-level abstract values."""


class AvalQDD:
    """An abstract value with its quasi-dynamic data."""

    def __init__(self, aval, qdd):
        self.aval = aval
        self.qdd = qdd


class AvalMutableQDD(AvalQDD):
    """An abstract value with mutable quasi-dynamic data."""


class aval_property(property):
    """A property of a high-level value that is also readable on its abstract value."""


def aval_method(fun: Callable) -> Callable:
    """A method of a high-level value that is also callable on its abstract value."""
    return fun


def register_hitype(cls: type, to_aval: Callable) -> None:
    """Give values of `cls` the abstract value `to_aval(value)` (jax.typeof)."""
    pytype_aval_mappings[cls] = to_aval
