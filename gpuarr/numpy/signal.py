"""1-D convolution and cross-correlation (numpy.convolve, numpy.correlate), built as JAX builds
them: one `lax.conv_general_dilated` over a [1, 1, n] input, so they run as one kernel,
differentiate and batch through the convolution's own rules."""
from __future__ import annotations

from gpuarr.core import get_aval
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.windowed import conv_general_dilated
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes, promote_dtypes_inexact
from gpuarr.numpy.ufuncs import conjugate

_MODES = ("full", "same", "valid")


def _padding(mode, kernel_size):
    """Zero padding of the longer input for each mode (the kernel is `kernel_size` long)."""
    if mode == "valid":
        return ((0, 0),)
    if mode == "same":
        return ((kernel_size // 2, kernel_size - kernel_size // 2 - 1),)
    if mode == "full":
        return ((kernel_size - 1, kernel_size - 1),)
    raise ValueError("mode must be one of ['full', 'same', 'valid']")


def _conv(x, y, mode, op, precision, preferred_element_type):
    if get_aval(x).ndim != 1 or get_aval(y).ndim != 1:
        raise ValueError(f"{op}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        # Unspecified: promote to inexact, NumPy's default for convolutions.
        x, y = promote_dtypes_inexact(x, y)
    else:
        x, y = promote_dtypes(x, y)
    nx, ny = get_aval(x).shape[0], get_aval(y).shape[0]
    if nx == 0 or ny == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {get_aval(x).shape} and "
                         f"{get_aval(y).shape}.")
    reverse = False
    if op == "correlate":
        y = conjugate(y)
        if nx < ny:  # correlate(x, y) is the reverse of correlate(y, x)
            x, y, reverse = y, x, True
    else:
        if nx < ny:  # convolution commutes: slide the shorter input
            x, y = y, x
        y = lax_shape_ops.rev(y, (0,))
    n, k = get_aval(x).shape[0], get_aval(y).shape[0]
    out = conv_general_dilated(lax_shape_ops.reshape(x, (1, 1, n)), lax_shape_ops.reshape(y, (1, 1, k)), (1,),
                               _padding(mode, k), precision=precision,
                               preferred_element_type=preferred_element_type)
    out = lax_shape_ops.reshape(out, (get_aval(out).shape[-1],))
    return lax_shape_ops.rev(out, (0,)) if reverse else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D arrays, as numpy.convolve.

    `mode` is 'full' (length n + m - 1, the default), 'same' (length max(n, m), centred) or
    'valid' (length max(n, m) - min(n, m) + 1). Inputs are promoted to an inexact dtype
    unless `preferred_element_type` is given, which then sets the accumulation and output
    dtype (as lax.conv_general_dilated).
    """
    check_arraylike("convolve", a, v)
    return _conv(ensure_array(a), ensure_array(v), mode, "convolve", precision,
                 preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D arrays, as numpy.correlate: c[k] = sum_n a[n + k] conj(v[n]).

    `mode` is 'valid' (the default), 'same' or 'full', with the output lengths of `convolve`;
    complex `v` is conjugated as in NumPy. Inputs are promoted to an inexact dtype unless
    `preferred_element_type` is given.
    """
    check_arraylike("correlate", a, v)
    return _conv(ensure_array(a), ensure_array(v), mode, "correlate", precision,
                 preferred_element_type)
