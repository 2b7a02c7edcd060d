"""Helpers shared by the distributions."""
from __future__ import annotations

from gpuarr import lax


def standardize(x, loc, scale):
    """(x - loc) / scale: the standard variable of a location-scale family."""
    return lax.div(lax.sub(x, loc), scale)
