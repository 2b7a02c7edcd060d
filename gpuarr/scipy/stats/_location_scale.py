"""Location-scale families: the standard variable (x - loc) / scale the distributions share."""
from __future__ import annotations

from gpuarr.lax import lax


def standardize(x, loc, scale):
    """(x - loc) / scale: the standard variable of a location-scale family."""
    return lax.div(lax.sub(x, loc), scale)
