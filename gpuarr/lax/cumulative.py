"""Cumulative reductions along an axis: cumsum, cumprod, cummax, cummin, cumlogsumexp (each with
`reverse`)."""
from __future__ import annotations

from functools import partial

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.core import Primitive, abstract_eval_rules, get_aval
from gpuarr.impls import impl_rules, narrow_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import conversions, lax, shape_ops, slicing
from gpuarr.lax.slicing import checked_impl

_ACCUMULATE = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum,
               "cummin": np.minimum, "cumlogsumexp": np.logaddexp}


def _cumulative_impl(name, x, axis, reverse):
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    if reverse:
        x = np.flip(x, axis)
    ufunc = _ACCUMULATE[name]
    if x.dtype == np.bool_ and name == "cumsum":
        out = np.logical_or.accumulate(x, axis=axis)
    elif x.dtype == np.bool_ and name == "cumprod":
        out = np.logical_and.accumulate(x, axis=axis)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    return np.ascontiguousarray(np.flip(out, axis) if reverse else out)


def _cumulative_abstract(name, x, axis, reverse):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of rank {x.ndim}.")
    if name in ("cumsum", "cumprod") and x.dtype == np.bool_:
        raise TypeError(f"lax.{name} does not accept bool operands; convert to a numeric dtype "
                        "first (jnp.cumsum does this for you).")
    if name == "cumlogsumexp" and not dtypes.is_inexact(x.dtype):
        raise TypeError(f"lax.cumlogsumexp requires a floating-point operand, got "
                        f"{x.dtype.name}; convert it first, e.g. x.astype(jnp.float32).")
    return [x]


def _cumulative_batch(prim, axis_size, vals, dims, axis, reverse):
    (x,), (d,) = vals, dims
    return prim.bind(x, axis=axis + (d <= axis), reverse=reverse), d


def _cumulative_prim(name):
    prim = Primitive(name)
    impl_rules[prim] = partial(_cumulative_impl, name)
    abstract_eval_rules[prim] = partial(_cumulative_abstract, name)
    batch_rules[prim] = partial(_cumulative_batch, prim)
    checked_impl(prim)
    return prim


cumsum_p = _cumulative_prim("cumsum")
cumprod_p = _cumulative_prim("cumprod")
cummax_p = _cumulative_prim("cummax")
cummin_p = _cumulative_prim("cummin")
cumlogsumexp_p = _cumulative_prim("cumlogsumexp")
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    # Narrow types: XLA's blocked scan, rounding every step (see gpuarr.narrow_types).
    narrow_rules[_p] = partial(narrow_types.cumulative, _ACCUMULATE[_p.name])

# cumsum is linear; its transpose sums the cotangent from the other end.
ad.deflinear(cumsum_p, lambda ct, x, axis, reverse: [
    Zero(x.aval) if type(ct) is Zero else cumsum_p.bind(ct, axis=axis, reverse=not reverse)])


def _shift_in(x, axis, fill):
    """`x` moved one step along `axis` (towards higher indices), `fill` entering at index 0."""
    n = get_aval(x).shape[axis]
    cfg = [(0, 0, 0)] * get_aval(x).ndim
    cfg[axis] = (1, -1, 0) if n else (0, 0, 0)
    return lax.pad(x, np.asarray(fill, get_aval(x).dtype)[()], cfg)


def _cumprod_jvp(primals, tangents, axis, reverse):
    # Scan of (product, tangent) pairs: (p1, t1) then (p2, t2) gives (p1 p2, t1 p2 + p1 t2).
    # The doubling steps are ordinary lax ops, so the result is linear in `t` and transposes.
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if reverse:
        x, t = shape_ops.rev(x, (axis,)), shape_ops.rev(t, (axis,))
    n = get_aval(x).shape[axis]
    p, tt = x, t
    shift = 1
    while shift < n:
        cfg = [(0, 0, 0)] * get_aval(x).ndim
        cfg[axis] = (shift, -shift, 0)
        p_prev = lax.pad(p, np.ones((), get_aval(p).dtype)[()], cfg)
        t_prev = lax.pad(tt, np.zeros((), get_aval(tt).dtype)[()], cfg)
        p, tt = lax.mul(p_prev, p), lax.add(lax.mul(t_prev, p), lax.mul(p_prev, tt))
        shift *= 2
    return out, shape_ops.rev(tt, (axis,)) if reverse else tt


def _cumextremum_jvp(prim, primals, tangents, axis, reverse):
    # Each output's tangent is the mean of the tangents of the inputs that attain it (ties share
    # evenly, like max's JVP). Those inputs form the run of equal outputs ending at that entry.
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axis=axis, reverse=reverse)
    if reverse:
        x, t, o = shape_ops.rev(x, (axis,)), shape_ops.rev(t, (axis,)), shape_ops.rev(out, (axis,))
    else:
        o = out
    aval = get_aval(x)
    dt = get_aval(t).dtype
    hit = conversions.convert_element_type(lax.eq(x, o), dt)
    s = cumsum_p.bind(lax.mul(t, hit), axis=axis, reverse=False)
    c = cumsum_p.bind(hit, axis=axis, reverse=False)
    iota = shape_ops.broadcasted_iota(np.int32, aval.shape, axis)
    changed = lax.ne(o, _shift_in(o, axis, 0))
    first = lax.eq(iota, shape_ops.full(aval.shape, 0, np.int32))
    run_start = cummax_p.bind(lax.select(lax.bitwise_or(changed, first), iota,
                                         shape_ops.full(aval.shape, 0, np.int32)), axis=axis, reverse=False)
    s_before = slicing.take_along_axis(_shift_in(s, axis, 0), run_start, axis)
    c_before = slicing.take_along_axis(_shift_in(c, axis, 0), run_start, axis)
    count = lax.max(lax.sub(c, c_before), shape_ops.full(aval.shape, 1, dt))
    tan = lax.div(lax.sub(s, s_before), count)
    return out, shape_ops.rev(tan, (axis,)) if reverse else tan


def _cumlogsumexp_jvp(primals, tangents, axis, reverse):
    # The tangent of log(sum exp) over a prefix is the prefix's softmax-weighted tangent sum:
    # one associative scan over (value, tangent) pairs whose weights exp(v - logaddexp) are at
    # most 1, so nothing overflows.
    from gpuarr.lax.control_flow import associative_scan
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, t

    def weight(v, total):  # exp(v - total), 0 where v is -inf (total may be -inf too)
        finite = lax.gt(v, shape_ops.full_like(v, -np.inf))
        return lax.select(finite, lax.exp(lax.sub(v, total)), shape_ops.full_like(v, 0))

    def combine(a, b):
        (va, ta), (vb, tb) = a, b
        big = lax.max(va, vb)
        total = lax.add(big, lax.log1p(lax.exp(lax.sub(lax.min(va, vb), big))))
        total = lax.select(lax.eq(big, shape_ops.full_like(big, -np.inf)), big, total)
        return total, lax.add(lax.mul(ta, weight(va, total)), lax.mul(tb, weight(vb, total)))

    return out, associative_scan(combine, (x, t), reverse=reverse, axis=axis)[1]


ad.jvp_rules[cumlogsumexp_p] = _cumlogsumexp_jvp


def _float_only_jvp(rule):
    def jvp(primals, tangents, axis, reverse):
        if type(tangents[0]) is Zero or not dtypes.is_inexact(get_aval(primals[0]).dtype):
            prim_out = rule.prim.bind(primals[0], axis=axis, reverse=reverse)
            return prim_out, Zero.from_primal(prim_out)
        return rule(primals, tangents, axis, reverse)
    return jvp


def _with_prim(prim, fn):
    f = partial(fn, prim) if fn is _cumextremum_jvp else fn
    f.prim = prim
    return f


ad.jvp_rules[cumprod_p] = _float_only_jvp(_with_prim(cumprod_p, _cumprod_jvp))
ad.jvp_rules[cummax_p] = _float_only_jvp(_with_prim(cummax_p, _cumextremum_jvp))
ad.jvp_rules[cummin_p] = _float_only_jvp(_with_prim(cummin_p, _cumextremum_jvp))


def _wrapper(prim, what):
    def fn(operand, axis: int = 0, reverse: bool = False):
        nd = get_aval(operand).ndim
        if not -nd <= axis < nd:
            raise ValueError(f"{prim.name}: axis {axis} is out of bounds for array of rank {nd}.")
        return prim.bind(operand, axis=int(axis) % nd, reverse=bool(reverse))
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"The cumulative {what} of `operand` along `axis` (from the end when "
                  f"`reverse`), as lax.{prim.name}.")
    return fn


cumsum = _wrapper(cumsum_p, "sum")
cumprod = _wrapper(cumprod_p, "product")
cummax = _wrapper(cummax_p, "maximum")
cummin = _wrapper(cummin_p, "minimum")
cumlogsumexp = _wrapper(cumlogsumexp_p, "log-sum-exp")
