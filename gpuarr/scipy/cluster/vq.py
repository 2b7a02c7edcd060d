"""Vector quantization (jax.scipy.cluster.vq): assign observations to their nearest code."""
from __future__ import annotations

from gpuarr.numpy import linalg, reductions, selection
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """The index of the nearest code (Euclidean distance) in `code_book` [k, n] for each
    observation in `obs` [m, n] (1-D inputs are scalar observations and codes), and that
    distance (jax.scipy.cluster.vq.vq). `check_finite` is accepted and ignored, as in JAX."""
    del check_finite  # values cannot be inspected under jit
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = (ensure_array(a) for a in promote_dtypes_inexact(obs, code_book))
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)  # [m, k]
    code = reductions.argmin(dist, axis=-1)
    return code, selection.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
