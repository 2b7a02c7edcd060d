"""PartitionSpec (JAX's `P`): how each dimension of an array maps onto mesh axes, plus the
helpers that make the sharding classes immutable and interned."""
from __future__ import annotations

import weakref


def _frozen_setattr(self, name, value):
    raise AttributeError(f"{type(self).__name__} objects are immutable")


def _interner():
    """A weak-value table: equal arguments give the same object (JAX interns these classes,
    so they compare by identity)."""
    return weakref.WeakValueDictionary()


# ---------------------------------------------------------------- PartitionSpec


class UnconstrainedSingleton:
    """`P.UNCONSTRAINED`: a dimension whose sharding the compiler may choose."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_get_unconstrained, ())


def _get_unconstrained():
    return _UNCONSTRAINED


_UNCONSTRAINED = UnconstrainedSingleton()


def _canonicalize_partition(p):
    """One entry of a PartitionSpec: lists become tuples, a 1-tuple its element, () None."""
    if isinstance(p, list):
        p = tuple(p)
    if isinstance(p, tuple):
        for q in p:
            if isinstance(q, (tuple, list)):
                raise ValueError("A tuple inside PartitionSpec cannot contain a nested tuple. "
                                 f"Got partition: {p} and the nested tuple: {q}")
        if not p:
            return None
        return p[0] if len(p) == 1 else p
    return p


def _check_partition_spec(partitions, unreduced, reduced):
    if not reduced and not unreduced:
        return
    if None in unreduced:
        raise ValueError("unreduced cannot contain None. All elements in unreduced should refer"
                         " to the mesh axes.")
    if None in reduced:
        raise ValueError("reduced cannot contain None. All elements in reduced should refer to "
                         "the mesh axes.")
    if unreduced & reduced:
        raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                         f"Got unreduced: {unreduced} and reduced: {reduced}")
    for partition in partitions:
        for p in partition if isinstance(partition, tuple) else (partition,):
            if p in unreduced:
                raise ValueError("partitions cannot overlap with unreduced axes passed to "
                                 f"PartitionSpec. Got partitions: {partitions} and unreduced "
                                 f"axes: {unreduced}")
            if p in reduced:
                raise ValueError("partitions cannot overlap with reduced axes passed to "
                                 f"PartitionSpec. Got partitions: {partitions} and reduced "
                                 f"axes: {reduced}")


def _axis_set(value, what):
    if isinstance(value, frozenset):
        return value
    if not isinstance(value, set):
        raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` or `set`. "
                        f"Got type {value}")
    return frozenset(value)


class PartitionSpec:
    """How each dimension of an array is split over named mesh axes: each entry is None (not
    split), an axis name, or a tuple of axis names; `unreduced`/`reduced` name axes over
    which the value is a partial sum. Equal specs are the same object (as in JAX), so they
    compare and hash by identity; a spec is not a tuple, so pytree functions treat it as a
    leaf."""

    __slots__ = ("_partitions", "unreduced", "reduced", "__weakref__")
    UNCONSTRAINED = _UNCONSTRAINED
    _table = _interner()

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        partitions = tuple(_canonicalize_partition(p) for p in partitions)
        unreduced = _axis_set(unreduced, "unreduced")
        reduced = _axis_set(reduced, "reduced")
        key = (partitions, unreduced, reduced)
        obj = PartitionSpec._table.get(key)
        if obj is None:
            _check_partition_spec(partitions, unreduced, reduced)
            obj = object.__new__(PartitionSpec)
            object.__setattr__(obj, "_partitions", partitions)
            object.__setattr__(obj, "unreduced", unreduced)
            object.__setattr__(obj, "reduced", reduced)
            PartitionSpec._table[key] = obj
        return obj

    __setattr__ = _frozen_setattr

    def __init_subclass__(cls, *args, **kwargs):
        raise TypeError("Subclassing `jax.P` is prohibited.")

    @property
    def partitions(self) -> tuple:
        return self._partitions

    def __repr__(self):
        pr = repr(self._partitions)[1:-1]
        if not self.unreduced and not self.reduced:
            return f"P({pr})"
        if self.unreduced and self.reduced:
            ur = f"unreduced={set(self.unreduced)!r}, reduced={set(self.reduced)!r}"
        elif self.unreduced:
            ur = f"unreduced={set(self.unreduced)!r}"
        else:
            ur = f"reduced={set(self.reduced)!r}"
        pr = "" if not pr else f"{pr} " if pr.endswith(",") else f"{pr}, "
        return f"P({pr}{ur})"

    def __reduce__(self):
        return (_make_spec, (self._partitions, self.unreduced, self.reduced))

    def __getitem__(self, i):
        if self.reduced or self.unreduced:
            raise ValueError("Using pspec[...] is dangerous when PartitionSpec has non-empty "
                             "unreduced/reduced set. Please use spec.partitions[...]")
        return self._partitions[i]

    def __iter__(self):
        if self.reduced or self.unreduced:
            raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty "
                             "unreduced/reduced set. Please use *spec.partitions")
        return iter(self._partitions)

    def __len__(self):
        return len(self._partitions)

    def __add__(self, other):
        if isinstance(other, PartitionSpec):
            return PartitionSpec(*self.partitions, *other.partitions,
                                 unreduced={*self.unreduced, *other.unreduced},
                                 reduced={*self.reduced, *other.reduced})
        if isinstance(other, tuple):
            for what in ("unreduced", "reduced"):
                if getattr(self, what):
                    raise TypeError(f"other {other} cannot be of instance `tuple` when self "
                                    f"{self} has {what} in `__add__` of PartitionSpec.")
            return PartitionSpec(*self, *other)
        raise NotImplementedError

    def __radd__(self, other):
        if not isinstance(other, tuple):
            raise NotImplementedError
        for what in ("unreduced", "reduced"):
            if getattr(self, what):
                raise TypeError(f"other {other} cannot be of instance `tuple` when self {self} "
                                f"has {what} in `__radd__` of PartitionSpec.")
        return PartitionSpec(*other, *self)

    def index(self, value):
        return self._partitions.index(_canonicalize_partition(value))

    def count(self, value):
        return self._partitions.count(_canonicalize_partition(value))

    def update(self, partitions=None, unreduced=None, reduced=None) -> PartitionSpec:
        p = self._partitions if partitions is None else partitions
        ur = self.unreduced if unreduced is None else unreduced
        r = self.reduced if reduced is None else reduced
        return PartitionSpec(*p, unreduced=ur, reduced=r)

    def to_lo(self):
        return [self]

    def to_tangent_spec(self):
        return self

    def to_ct_spec(self):
        return self.update(unreduced=self.reduced, reduced=self.unreduced)

    def _normalized_spec_for_aval(self, ndim: int) -> PartitionSpec:
        out = [None if p is _UNCONSTRAINED else p for p in self._partitions]
        out.extend([None] * (ndim - len(out)))
        return self.update(partitions=out)

    def _check_compatible_wrt_shape(self, shape):
        if len(shape) < len(self._partitions):
            extra = " For scalars the PartitionSpec should be P()" if len(shape) == 0 else ""
            raise ValueError(f"PartitionSpec {self} is only valid for values of rank at least "
                             f"{len(self._partitions)}, but was applied to a value of rank "
                             f"{len(shape)}.{extra}")


def _make_spec(partitions, unreduced, reduced):
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec
