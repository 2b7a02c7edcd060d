"""bessel_jn of jax.scipy.special: Bessel functions of the first kind J_0 .. J_v of integer
order, by Miller's backward recurrence (Zhang and Jin, Computation of Special Functions,
1996, BJNDD) as JAX computes them: f_{k-1} = 2k f_k / z - f_{k+1} from k = n_iter down to 0,
started at f = 1e-16, and normalized by J_0 + 2 (J_2 + J_4 + ...) = 1."""
from __future__ import annotations

import operator

from gpuarr import dtypes
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, ufuncs
from gpuarr.numpy.arguments import concrete_value, ensure_array, promote_dtypes_inexact


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """J_0(z) .. J_v(z) for real z, stacked into shape (v + 1, *z.shape) with z's float type;
    `v` and `n_iter` (the recurrence's starting order, which must exceed v and |z|
    comfortably) must be concrete integers (jax.scipy.special.bessel_jn). As in JAX, float32
    loses everything for small |z| (the recurrence overflows) and z = 0 gives NaN."""
    (z,) = promote_dtypes_inexact(ensure_array(z))
    if dtypes.is_complex(z.dtype):
        raise ValueError("complex input not supported.")
    v = operator.index(concrete_value(v, "Argument v of bessel_jn."))
    n_iter = int(concrete_value(n_iter, "Argument n_iter of bessel_jn."))

    def step(carry, k):
        f0, f1, norm = carry
        f = 2.0 * (k + 1.0) * f1 / z - f0
        norm = ufuncs.where(k % 2 == 0, norm + 2.0 * f, norm)  # J_0 + 2 J_2 + 2 J_4 + ...
        return (f1, f, norm), f

    zeros = creation.zeros(z.shape, z.dtype)
    init = (zeros, creation.full(z.shape, 1e-16, z.dtype), zeros)
    (_, _, norm), f = lax_control_flow.scan(step, init, lax_shape_ops.iota(z.dtype, n_iter + 1), reverse=True)
    # f[k] is the unnormalized J_k; the sum counted f[0] twice.
    return f[:v + 1] / (norm - f[0])


