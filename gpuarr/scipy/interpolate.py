"""Interpolation on a regular grid (jax.scipy.interpolate): RegularGridInterpolator.

Each query point is located on every axis with searchsorted; linear interpolation sums the
2**ndim corners of its cell weighted by the normalised distances, nearest takes the closer
corner. Points outside the grid extrapolate from the edge cell, or read `fill_value` when
one is given (bounds errors cannot be raised from compiled code, so `bounds_error=True` is
refused, as in JAX). The interpolator is a pytree: its grid, values and fill value are
leaves, so it can be passed through jit, vmap and grad.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.numpy import creation, dtype_functions, manipulation, sorting, ufuncs
from gpuarr.numpy.arguments import check_arraylike, promote_dtypes_inexact
from gpuarr.pytrees import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined")


def _ndim_coords_from_arrays(points, ndim=None):
    """Query points as one array [..., ndim]: a tuple of coordinate arrays is broadcast and
    stacked (in the default float type), a 1-D array is read as a column of points."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]  # an argument tuple
    if isinstance(points, tuple):
        check_arraylike("_ndim_coords_from_arrays", *points)
        coords = manipulation.broadcast_arrays(*points)
        float_dtype = dtypes.canonicalize_dtype(float)
        return manipulation.stack([creation.asarray(c).astype(float_dtype) for c in coords], axis=-1)
    check_arraylike("_ndim_coords_from_arrays", points)
    points = creation.asarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
    return points


class RegularGridInterpolator:
    """Interpolate `values` given on the rectilinear grid `points` (one increasing 1-D array
    per leading axis of `values`), as scipy.interpolate.RegularGridInterpolator.

    `method` is "linear" or "nearest"; query points outside the grid get `fill_value`
    (NaN by default) or, with fill_value=None, are extrapolated. Trailing axes of `values`
    beyond len(points) are carried through to the result.
    """

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        _check_method(method)
        self.method = method
        self.bounds_error = bounds_error
        if self.bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        check_arraylike("RegularGridInterpolator", values)
        values = creation.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        (values,) = promote_dtypes_inexact(values)
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = creation.asarray(fill_value)
            if not dtype_functions.can_cast(fill_value.dtype, get_aval(values).dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible with "
                                 "values")
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(creation.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        """Interpolated values at the points `xi` ([..., ndim], or a tuple of coordinate
        arrays): shape xi.shape[:-1] + values.shape[ndim:]."""
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _ndim_coords_from_arrays(xi, ndim=ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[1]}, but "
                             f"this RegularGridInterpolator has dimension {ndim}")
        xi_shape = xi.shape
        xi = xi.reshape(-1, xi_shape[-1])
        indices, distances, out_of_bounds = self._find_indices(xi.T)
        if method == "linear":
            result = self._evaluate_linear(indices, distances)
        else:
            result = self._evaluate_nearest(indices, distances)
        if self.fill_value is not None:
            mask = out_of_bounds.reshape(result.shape[:1] + (1,) * (result.ndim - 1))
            result = ufuncs.where(mask, self.fill_value, result)
        return result.reshape(xi_shape[:-1] + self.values.shape[ndim:])

    def _find_indices(self, xi):
        """Per axis: the index of each point's cell (clamped to the edge cells), its
        normalised distance from the cell's lower edge; and whether it is off the grid."""
        indices, distances = [], []
        out_of_bounds = creation.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid):
            i = ufuncs.clip(sorting.searchsorted(g, x) - 1, 0, g.size - 2)
            indices.append(i)
            distances.append((x - g[i]) / (g[i + 1] - g[i]))
            out_of_bounds = out_of_bounds | (x < g[0]) | (x > g[-1])
        return indices, distances, out_of_bounds

    def _evaluate_linear(self, indices, distances):
        # Weights broadcast over the trailing axes of values that the grid does not cover.
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        result = creation.asarray(0.0)
        for corner in product((0, 1), repeat=len(indices)):
            weight = creation.asarray(1.0)
            for upper, y in zip(corner, distances):
                weight = weight * (y if upper else 1 - y)
            corner_index = tuple(i + upper for upper, i in zip(corner, indices))
            result = result + self.values[corner_index] * weight[trailing]
        return result

    def _evaluate_nearest(self, indices, distances):
        nearest = tuple(ufuncs.where(y <= 0.5, i, i + 1) for i, y in zip(indices, distances))
        return self.values[nearest]


def _flatten(interp):
    return (interp.grid, interp.values, interp.fill_value), (interp.method, interp.bounds_error)


def _unflatten(aux, children):
    # Rebuilt without __init__'s checks: the leaves may be tracers or other placeholders.
    interp = object.__new__(RegularGridInterpolator)
    interp.grid, interp.values, interp.fill_value = children
    interp.method, interp.bounds_error = aux
    return interp


register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
