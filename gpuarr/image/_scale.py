"""Image resampling (jax.image): resize, scale_and_translate and ResizeMethod.

Resampling is separable: along each resized axis the output is the input contracted with an
[input size, output size] weight matrix, whose columns are the interpolation kernel (scaled
up when downsampling with antialiasing, so it also low-pass filters) evaluated at the distances
from each output pixel's centre, mapped back to the input, to the input pixels, normalised to
sum to one. Nearest-neighbour resizing instead gathers one input pixel per output pixel.
The kernels, the normalisation and the edge handling are JAX's (jax/_src/image/scale.py).
"""
from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit
from gpuarr.lax import dot_precision as lax_dot_precision
from gpuarr.numpy import creation, manipulation, products, reductions, selection, ufuncs
from gpuarr.numpy.arguments import ensure_array, promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


# ---------------------------------------------------------------- kernels


def _lanczos_kernel(radius: float, x):
    y = radius * ufuncs.sin(np.pi * x) * ufuncs.sin(np.pi * x / radius)
    # y / (pi x)^2, and its limit 1 near x = 0.
    out = ufuncs.where(x > 1e-3, ufuncs.divide(y, ufuncs.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
    return ufuncs.where(x > radius, 0.0, out)


def _keys_cubic_kernel(x):
    # Keys' cubic convolution kernel with a = -0.5 (R. G. Keys, IEEE Trans. ASSP 29(6), 1981),
    # as Pillow, TensorFlow and PyTorch (with antialiasing) use.
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = ufuncs.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return ufuncs.where(x >= 2.0, 0.0, out)


def _opencv_cubic_kernel(x):
    # The cubic kernel with a = -0.75 that OpenCV and PyTorch (without antialiasing) use.
    a = -0.75
    out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    out = ufuncs.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
    return ufuncs.where(x >= 2.0, 0.0, out)


def _triangle_kernel(x):
    return ufuncs.maximum(0, 1 - ufuncs.abs(x))


_AREA = object()  # the box-overlap weights of area averaging, which are not a kernel of x


class ResizeMethod(enum.Enum):
    """Image resize methods (jax.image.ResizeMethod). NEAREST picks the nearest pixel; LINEAR
    (triangle kernel), LANCZOS3/LANCZOS5 (windowed sinc), CUBIC (Keys, a = -0.5) and
    CUBIC_PYTORCH (a = -0.75 without antialiasing) interpolate; AREA averages the input
    pixels each output pixel covers. `from_string` reads the usual names."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str):
        """The method named `s` ('nearest', 'linear'/'bilinear'/'trilinear'/'triangle',
        'lanczos3', 'lanczos5', 'cubic'/'bicubic'/'tricubic', 'cubic-pytorch'/
        'bicubic-pytorch' or 'area')."""
        for names, method in _NAMES:
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"')


_NAMES = [
    (("nearest",), ResizeMethod.NEAREST),
    (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
    (("lanczos3",), ResizeMethod.LANCZOS3),
    (("lanczos5",), ResizeMethod.LANCZOS5),
    (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
    (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
    (("area",), ResizeMethod.AREA),
]

# method -> (kernel radius in input pixels, kernel)
_KERNELS: dict[ResizeMethod, tuple[int, Callable]] = {
    ResizeMethod.LINEAR: (1, _triangle_kernel),
    ResizeMethod.LANCZOS3: (3, lambda x: _lanczos_kernel(3.0, x)),
    ResizeMethod.LANCZOS5: (5, lambda x: _lanczos_kernel(5.0, x)),
    ResizeMethod.CUBIC: (2, _keys_cubic_kernel),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic_kernel),
    ResizeMethod.AREA: (1, _AREA),
}


def _as_method(method) -> ResizeMethod:
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


# ---------------------------------------------------------------- weight matrices


def _normalize_columns(weights):
    """Each column divided by its sum; columns summing to (nearly) zero become zero."""
    total = reductions.sum(weights, axis=0, keepdims=True)
    usable = ufuncs.abs(total) > 1000.0 * float(np.finfo(np.float32).eps)
    return ufuncs.where(usable, ufuncs.divide(weights, ufuncs.where(total != 0, total, 1)), 0)


def _fold_edges(weights, input_size: int, pad: int):
    """Rows of `weights` for the `pad` pixels beyond each edge added onto the edge pixels' rows
    (the input extended by repeating its edges)."""
    if input_size == 1:
        return reductions.sum(weights, axis=0, keepdims=True)
    first = reductions.sum(weights[:pad + 1], axis=0, keepdims=True)
    last = reductions.sum(weights[pad + input_size - 1:], axis=0, keepdims=True)
    return manipulation.concatenate([first, weights[pad + 1:pad + input_size - 1], last], axis=0)


def _weight_matrix(input_size: int, output_size: int, scale, translation, kernel,
                   antialias: bool, edge_padding: bool, radius: int):
    """The [input_size, output_size] resampling weights along one axis: output pixel i
    samples the input at (i + 0.5 - translation) / scale - 0.5."""
    dtype = dtypes.result_type(scale, translation)
    inv_scale = 1.0 / scale
    # Downsampling with antialiasing widens the kernel, so that it low-pass filters too.
    kernel_scale = ufuncs.maximum(inv_scale, 1.0) if antialias else 1.0
    sample_f = ((creation.arange(output_size, dtype=dtype) + 0.5) * inv_scale
                - translation * inv_scale - 0.5)
    # Edge padding (only without antialiasing, so the kernel keeps its radius) evaluates the
    # kernel on `radius` extra pixels beyond each edge.
    pad = radius if edge_padding else 0
    if kernel is _AREA:
        # The overlap of output pixel i's footprint [L_i, R_i) with input pixel j's [j, j + 1).
        left = creation.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        start = creation.arange(input_size, dtype=dtype)
        weights = ufuncs.maximum(0.0, ufuncs.minimum(right[None, :], start[:, None] + 1.0)
                                 - ufuncs.maximum(left[None, :], start[:, None]))
    else:
        positions = creation.arange(-pad, input_size + pad, dtype=dtype)
        weights = kernel(ufuncs.abs(sample_f[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        return _normalize_columns(_fold_edges(weights, input_size, pad))
    weights = _normalize_columns(weights)
    # Output pixels whose sample point lies outside the input get nothing.
    inside = ufuncs.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
    return ufuncs.where(inside[None, :], weights, 0)


def _scale_and_translate(x, output_shape, spatial_dims, scale, translation, kernel,
                         antialias: bool, precision, edge_padding: bool, radius: int):
    """Resample `x` along each of `spatial_dims` in turn with its weight matrix."""
    shape = get_aval(x).shape
    ndim = len(shape)
    for i, d in enumerate(spatial_dims):
        d = operator.index(d)
        if not -ndim <= d < ndim:
            raise ValueError(f"axis {d} is out of bounds for array of dimension {ndim}")
        d %= ndim
        w = _weight_matrix(shape[d], output_shape[d], scale[i], translation[i], kernel,
                           antialias, edge_padding, radius)
        w = w.astype(get_aval(x).dtype)
        x = manipulation.moveaxis(products.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
    return x


# ---------------------------------------------------------------- public functions


def _canonical_shape(shape) -> tuple[int, ...]:
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape}.") from None


def _check_rank(shape, image):
    if len(shape) != get_aval(image).ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {get_aval(image).shape}")


def scale_and_translate(image, shape, spatial_dims: Sequence[int], scale, translation,
                        method, antialias: bool = True, precision=lax_dot_precision.Precision.HIGHEST):
    """Resample `image` to `shape` by a scale and a translation of each of `spatial_dims`
    (jax.image.scale_and_translate): output pixel centre y maps to input position
    (y - translation) / scale. `scale` and `translation` may be traced (and differentiated);
    `method` is any ResizeMethod but NEAREST, `antialias` widens the kernel when
    downsampling."""
    shape = _canonical_shape(shape)
    image = ensure_array(image)
    _check_rank(shape, image)
    method = _as_method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    (image,) = promote_dtypes_inexact(image)
    scale, translation = (ensure_array(a) for a in promote_dtypes_inexact(scale, translation))
    if not spatial_dims:
        return ensure_array(image)
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel,
                                antialias, precision, edge_padding, radius)


def _resize_nearest(x, output_shape):
    """Each output pixel takes the input pixel whose cell contains its centre."""
    for d, (m, n) in enumerate(zip(get_aval(x).shape, output_shape)):
        if m == n:
            continue
        # In float32, as JAX computes it, so that ties round the same way.
        offsets = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m)
        offsets = offsets / np.float32(n) if n else offsets
        x = selection.take(x, np.floor(offsets).astype(np.int32), axis=d)
    return x


def _resize(image, shape, method, antialias: bool, precision):
    _check_rank(shape, image)
    method = _as_method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    (image,) = promote_dtypes_inexact(image)
    in_shape = get_aval(image).shape
    # Axes whose size does not change are left alone: every kernel interpolates, so an
    # identity warp returns the input.
    spatial_dims = tuple(d for d in range(len(shape)) if in_shape[d] != shape[d])
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    scale = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in spatial_dims]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    return _scale_and_translate(image, shape, spatial_dims, scale, [0.0] * len(spatial_dims),
                                kernel, antialias, precision, edge_padding, radius)


_resize_jit = jit(_resize, static_argnums=(1, 2, 3, 4))


def resize(image, shape, method, antialias: bool = True, precision=lax_dot_precision.Precision.HIGHEST):
    """Resize `image` to `shape` (same rank) by `method` (a ResizeMethod or its name) with
    half-pixel centres (jax.image.resize). Downsampling with `antialias` (the default)
    low-pass filters; 'nearest' keeps the dtype, other methods return an inexact dtype."""
    return _resize_jit(image, _canonical_shape(shape), method, antialias, precision)
