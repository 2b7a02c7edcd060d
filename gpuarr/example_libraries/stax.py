"""Stax: neural-network layers as `(init_fun, apply_fun)` pairs, as JAX's
`jax.example_libraries.stax`.

`init_fun(rng, input_shape)` returns `(output_shape, params)`; `apply_fun(params, inputs,
**kwargs)` computes the layer (a layer that needs randomness, like `Dropout`, takes `rng=key`).
Combinators (`serial`, `parallel`, `shape_dependent`) build layers out of layers. Layer
constructors are CamelCase (`Conv`, `Relu`) and plain functions snake_case (`relu`). Names,
defaults and formulas follow JAX, and the initializers draw from gpuarr.random, so a key gives
the parameters JAX gives.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shapes as lax_shapes
from gpuarr.lax import windowed as lax_windowed
from gpuarr.nn.functions import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from gpuarr.nn.initializers import glorot_normal, normal, ones, zeros
from gpuarr.numpy import creation, dtype_functions, manipulation, products, ufuncs
from gpuarr.random import distributions, keys

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu",
    "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "parallel", "serial",
    "shape_dependent",
]

# Older names kept by JAX's stax.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

# Default initializers, built once (the defaults of Dense and the convolutions).
_glorot_normal_default = glorot_normal()
_normal_default = normal()
_bias_normal_default = normal(1e-6)


# ---------------------------------------------------------------- layers with parameters


def Dense(out_dim, W_init=_glorot_normal_default, b_init=_normal_default):
    """A fully connected layer `inputs @ W + b` with `out_dim` outputs."""
    def init_fun(rng, input_shape):
        output_shape = input_shape[:-1] + (out_dim,)
        k1, k2 = keys.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return products.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape):
    """The kernel shape in `rhs_spec` layout: 'O' is `out_chan`, 'I' the input's channel count
    and the spatial letters take `filter_shape` in order."""
    spatial = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
            for c in rhs_spec]


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=_bias_normal_default):
    """A convolution with `out_chan` output channels and a `filter_shape` window, in the layouts
    `dimension_numbers = (lhs_spec, rhs_spec, out_spec)`, plus a per-channel bias."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
        output_shape = lax_shapes.conv_general_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                           dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = keys.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax_windowed.conv_general_dilated(inputs, W, strides, padding, one, one,
                                                 dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                         W_init=None, b_init=_bias_normal_default):
    """A transposed convolution (`lax.conv_transpose`) with `out_chan` output channels, in the
    layouts `dimension_numbers`, plus a per-channel bias."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
        output_shape = lax_shapes.conv_transpose_shape_tuple(input_shape, kernel_shape, strides,
                                                             padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = keys.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax_extras.conv_transpose(inputs, W, strides, padding,
                                         dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Batch normalization: inputs standardized over `axis`, then scaled by `gamma` (if `scale`)
    and shifted by `beta` (if `center`), both shaped like the axes not normalized."""
    axis = (axis,) if dtype_functions.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = keys.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # Broadcast the parameters back over the normalized axes.
        ed = tuple(None if i in axis else slice(None) for i in range(dtype_functions.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z

    return init_fun, apply_fun


# ---------------------------------------------------------------- elementwise layers


def elementwise(fun, **fun_kwargs):
    """A layer without parameters applying `fun(inputs, **fun_kwargs)`."""
    init_fun = lambda rng, input_shape: (input_shape, ())
    apply_fun = lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(ufuncs.tanh)
Relu = elementwise(relu)
Exp = elementwise(ufuncs.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# ---------------------------------------------------------------- pooling


def _pooling_layer(reducer, init_val, rescaler=None):
    """A pooling-layer constructor reducing windows with `reducer` from `init_val`, its output
    passed through `rescaler(window_shape, strides, padding)` when given."""
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """A pooling layer over the spatial axes of `spec` (default: all but the first and
        last axes) with the given window, strides and padding."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes = 0, len(window_shape) + 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        # Windows and strides of 1 over the batch and channel axes.
        for i in sorted(non_spatial_axes):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax_windowed.padtype_to_pads(input_shape, window_shape, strides, padding)
            return lax_shapes.reduce_window_shape_tuple(input_shape, window_shape, strides, pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax_windowed.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -np.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
    """A rescaler dividing window sums by the number of input elements in each window (fewer
    at padded edges)."""
    def rescale(outputs, inputs, spec):
        if spec is None:
            non_spatial_axes = 0, inputs.ndim - 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                              if i not in non_spatial_axes)
        one = creation.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax_windowed.reduce_window(one, 0., lax.add, dims, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = manipulation.expand_dims(window_sizes, i)
        return outputs / window_sizes
    return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


# ---------------------------------------------------------------- shape and routing layers


def _flatten():
    """A layer flattening all axes but the leading (batch) one."""
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return manipulation.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()


def _identity():
    """A layer returning its inputs."""
    init_fun = lambda rng, input_shape: (input_shape, ())
    apply_fun = lambda params, inputs, **kwargs: inputs
    return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
    """A layer returning a list of `num` copies of its input."""
    init_fun = lambda rng, input_shape: ([input_shape] * num, ())
    apply_fun = lambda params, inputs, **kwargs: [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum():
    """A layer summing a sequence of inputs of one shape."""
    init_fun = lambda rng, input_shape: (input_shape[0], ())
    apply_fun = lambda params, inputs, **kwargs: sum(inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """A layer concatenating a sequence of inputs along `axis`."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        return input_shape[0][:ax] + (concat_size,) + input_shape[0][ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return manipulation.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout: in 'train' mode each input is kept with probability `rate` (and divided by
    `rate`) or zeroed, using the `rng` keyword of apply_fun; in any other mode the identity."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng)` where `rng` is a "
                             "PRNG key (e.g. from `jax.random.key`).")
        if mode == "train":
            keep = distributions.bernoulli(rng, rate, inputs.shape)
            return ufuncs.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


# ---------------------------------------------------------------- combinators


def serial(*layers):
    """The layer applying `layers` one after another; its params are the list of theirs, and a
    given `rng` is split into one key per layer."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = keys.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = keys.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """The layer applying `layers[i]` to the i-th of a sequence of inputs (often between
    `FanOut` and `FanInSum`/`FanInConcat`); it returns the list of their outputs."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = keys.split(rng, nlayers)
        # An iterator of (output shapes, params), which unpacks as a pair like other layers'.
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = keys.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by `make_layer(input_shape)` once the input shape is known, at init and
    at each apply."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
