"""Scaled dot-product attention (jax.nn.dot_product_attention), the 'xla' formulation:
softmax(q k^T * scale + bias, masked) v, with grouped-query heads."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.nn.functions import softmax
from gpuarr.numpy import creation, manipulation, ufuncs
from gpuarr.numpy.einsum import einsum


def _ensure_4d(t):
    t = creation.asarray(t)
    missing = 4 - t.ndim
    return manipulation.expand_dims(t, tuple(range(missing))) if missing > 0 else t


def _check(t, shape, dtype, name):
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    for i in range(t.ndim):
        if shape[i] != -1 and t.shape[i] != shape[i]:
            raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def _large_negative(dtype):
    big = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
    return creation.asarray(-0.7 * big, dtype=dtype)


def _combined_mask(shape, mask, is_causal, q_seqlen, kv_seqlen, local_window_size):
    """A boolean mask broadcastable to the logits (B, K, G, T, S), or None when unmasked."""
    T, S = shape[-2], shape[-1]
    out = None

    def both(a, b):
        return b if a is None else ufuncs.logical_and(a, b)

    if mask is not None:
        out = both(out, mask)
    if is_causal:
        out = both(out, creation.tril(creation.ones((T, S), dtype=bool)))
    if local_window_size is not None:
        left, right = local_window_size
        q_pos = creation.arange(T)[:, None]
        k_pos = creation.arange(S)[None, :]
        out = both(out, ufuncs.logical_and(q_pos >= k_pos - right, q_pos <= k_pos + left))
    if q_seqlen is not None or kv_seqlen is not None:
        pad = creation.ones((1, T, S), dtype=bool)
        if q_seqlen is not None:
            pad = ufuncs.logical_and(pad, creation.arange(T)[None, :, None] < q_seqlen[:, None, None])
        if kv_seqlen is not None:
            pad = ufuncs.logical_and(pad, creation.arange(S)[None, None, :] < kv_seqlen[:, None, None])
        out = both(out, pad[:, None, None, :, :])
    return out


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """Scaled dot-product attention (jax.nn.dot_product_attention): for query (B, T, N, H) and
    key/value (B, S, K, H) (or the same without B), softmax(q k^T * scale + bias) v over the
    S axis, `scale` defaulting to 1/sqrt(H). N must be a multiple of K: each key/value head
    serves N/K query heads (grouped-query attention). `bias` and boolean `mask` broadcast to
    (B, N, T, S); `is_causal`, `local_window_size` ((left, right) or one int) and the
    per-batch `query_seq_lengths`/`key_value_seq_lengths` mask logits further (masked logits
    get a large negative value; queries past their length give zeros). Logits and the
    softmax are computed in float32 at least. `implementation` may be None or 'xla';
    `return_residual` also returns the log-sum-exp of the logits, shaped (B, T, N)."""
    output_shape = creation.asarray(query).shape
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    if query_seq_lengths is not None:
        query_seq_lengths = creation.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = creation.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(query_seq_lengths, [B], np.dtype("int32"), "query_seq_lengths")
    _check(key_value_seq_lengths, [B], np.dtype("int32"), "key_value_seq_lengths")
    if q.shape[-2] % K != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, but "
                         f"got {q.shape[-2]} vs {K}")
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("implementation='cudnn' is not available; use 'xla'.")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale

    T, N = q.shape[1], q.shape[2]
    G = N // K
    qg = manipulation.reshape(q, (B, T, K, G, H))

    def grouped(t):
        if t is None:
            return None
        tB, tN, tT, tS = t.shape
        if tN == 1:
            return t[:, :, None, :, :]
        if tN != N:
            raise ValueError(f"bias/mask head dimension should be 1 or {N}, got {tN}")
        return manipulation.reshape(t, (tB, K, G, tT, tS))

    logits_dtype = dtypes.promote_types(q.dtype, np.float32)
    logits = einsum("BTKGH,BSKH->BKGTS", qg, k, preferred_element_type=logits_dtype)
    logits = logits * creation.array(scale_val, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + grouped(bias)).astype(logits.dtype)
    combined = _combined_mask(logits.shape, grouped(mask), is_causal, query_seq_lengths,
                              key_value_seq_lengths, local_window_size)
    if combined is not None:
        logits = ufuncs.where(combined, logits, _large_negative(logits.dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    encoded = einsum("BKGTS,BSKH->BTKGH", probs, v)
    encoded = manipulation.reshape(encoded, (B, T, N, H))
    if query_seq_lengths is not None:
        keep = creation.arange(T)[None, :] < query_seq_lengths[:, None]
        encoded = encoded * keep[:, :, None, None].astype(encoded.dtype)
    out = manipulation.reshape(encoded, output_shape)
    if not return_residual:
        return out
    from gpuarr.lax.lax import stop_gradient
    from gpuarr.nn.functions import logsumexp
    lse = logsumexp(logits, axis=-1).astype(k.dtype)          # (B, K, G, T)
    lse = manipulation.reshape(manipulation.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, manipulation.reshape(stop_gradient(lse), output_shape[:-1])
