"""`jax.experimental.layout`: `Layout` (the order of an array's dimensions in memory) and
`Format` (a layout with a sharding). gpuarr's arrays are row-major on one device, so these
describe rather than change placement; libraries pass them where JAX takes shardings."""
from __future__ import annotations


class Layout:
    """Dimension order in memory, most major first (`major_to_minor`), with XLA's tiling."""

    def __init__(self, major_to_minor: tuple, tiling: tuple = (),
                 sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling})"


class Format:
    """A layout and a sharding together (either may be None: left to the compiler)."""

    def __init__(self, layout: Layout | None = None, sharding=None):
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"Format's layout must be a Layout or None, got {layout!r}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return isinstance(other, Format) and (self.layout, self.sharding) == (
            other.layout, other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format({self.layout!r}, {self.sharding!r})"
