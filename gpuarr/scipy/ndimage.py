"""Multidimensional image processing (jax.scipy.ndimage): map_coordinates.

An output point reads the input at its coordinates by nearest-neighbour (order 0) or
multilinear (order 1) interpolation: each axis contributes one or two (index, weight) nodes,
indices outside the input are mapped back by the boundary `mode`, and the product over axes
of the nodes is summed. Compiled as one program per (order, mode, cval), as JAX's is.
"""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.jit_api import jit
from gpuarr.lax import lax
from gpuarr.numpy import creation, ufuncs

__all__ = ["map_coordinates"]


def _mirror_index(index, size: int):
    # A triangular wave of period 2 (size - 1): reflect about the first and last samples.
    s = size - 1
    return ufuncs.abs((index + s) % (2 * s) - s)


def _reflect_index(index, size: int):
    # Reflect about the outer edges of the first and last samples (half a sample further out).
    return ufuncs.floor_divide(_mirror_index(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: ufuncs.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror_index,
    "reflect": _reflect_index,
}


def _round_half_away_from_zero(a):
    return a if dtypes.is_int(a.dtype) else lax.round(a)


def _nearest_nodes(coordinate):
    index = _round_half_away_from_zero(coordinate).astype(np.int32)
    return [(index, coordinate.dtype.type(1))]


def _linear_nodes(coordinate):
    lower = ufuncs.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def _map_coordinates(input, coordinates, order: int, mode: str, cval):
    input = creation.asarray(input)
    coordinates = [creation.asarray(c) for c in coordinates]
    cval = creation.asarray(cval, input.dtype)
    if len(coordinates) != input.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {input.ndim}")
    fix_index = _INDEX_FIXERS.get(mode)
    if fix_index is None:
        raise NotImplementedError(
            f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
            f"Currently supported modes are {set(_INDEX_FIXERS)}.")
    if order == 0:
        nodes_of = _nearest_nodes
    elif order == 1:
        nodes_of = _linear_nodes
    else:
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")

    per_axis = []  # per axis: (fixed index, in-bounds mask or None, weight) for each node
    for coordinate, size in zip(coordinates, input.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            valid = (0 <= index) & (index < size) if mode == "constant" else None
            nodes.append((fix_index(index, size), valid, weight))
        per_axis.append(nodes)

    outputs = []
    for corner in itertools.product(*per_axis):
        indices, valids, weights = zip(*corner)
        contribution = input[indices]
        valids = [v for v in valids if v is not None]
        if valids:
            contribution = ufuncs.where(functools.reduce(operator.and_, valids), contribution, cval)
        outputs.append(functools.reduce(operator.mul, weights) * contribution)
    result = functools.reduce(operator.add, outputs)
    if dtypes.is_int(input.dtype):
        result = _round_half_away_from_zero(result)
    return result.astype(input.dtype)


_map_coordinates_jit = jit(_map_coordinates, static_argnums=(2, 3, 4))


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
    """Values of `input` at the points `coordinates` (one array of positions per input axis,
    all of the output's shape) by interpolation of `order` 0 (nearest) or 1 (linear)
    (jax.scipy.ndimage.map_coordinates). `mode` ('constant', 'nearest', 'wrap', 'mirror' or
    'reflect') extends the input beyond its edges; 'constant' reads `cval` there.
    Integer inputs are rounded back to their dtype."""
    return _map_coordinates_jit(input, coordinates, order, mode, cval)
