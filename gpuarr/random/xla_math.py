"""erf_inv, log and rsqrt as XLA computes them on the CPU, so that `normal`, `gumbel` and
`gamma` give JAX's numbers bit for bit.

JAX's normal values are sqrt(2) * erf_inv(u). XLA evaluates float32 erf_inv with Giles'
single-precision polynomials ("Approximating the erfinv function", GPU Computing Gems, 2011) in
float32, after w = -log1p(-x * x) computed with its own float32 log1p (a Cephes-style rational
function below |t| = sqrt(2) - 1, and above it log(1 + t) by Cephes' logf), and the CPU backend
contracts each multiply-add into one fused operation. `erf_inv_giles_p` repeats those steps
operation for operation: float32 roundings where XLA rounds, fused multiply-adds emulated exactly
in float64 (the product of two float32 values is exact there). float16 and bfloat16 go through
float32, as XLA upcasts them; float64 uses Giles' double-precision polynomials as XLA does.

`lax.erf_inv` stays the accurate (correctly rounded in practice) inverse; this primitive is
what the samplers need to reproduce JAX's streams. Likewise `xla_log_p` is XLA's float32 log
(Cephes' logf, subnormal inputs flushed to zero), which NumPy's vectorised log differs from in
the last bit for about one float in thirty, and `xla_rsqrt_p` is XLA's float32 rsqrt on x86
(a hardware estimate refined by Newton steps), which the gamma sampler's `1 / sqrt` becomes.
"""
from __future__ import annotations

import math
import threading
from functools import partial

import numpy as np

from gpuarr.backends.host_threads import CACHE_BLOCK, run_in_cache_blocks
from gpuarr.backends.lookup_tables import filling_table
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from gpuarr.impls import costly_prims, impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.arguments import _broadcast_shapes, _check_kind, _check_same_dtypes, _coerce_scalars
from gpuarr.lax.lax import _bcast_tangent, broadcast_batch_rule, unop
from gpuarr.lax.special import _checked


def _f32(bits: int) -> float:
    return float(np.array(bits, np.uint32).view(np.float32))


def _r32(values) -> tuple:
    """Python floats holding the float32 roundings of `values` (exact as float64)."""
    return tuple(float(np.float32(v)) for v in values)


# Cephes logf: the polynomial in t = m - 1 (Estrin-like order as XLA emits it), and ln 2 split
# in a part with few bits (exact products with the exponent) and a correction.
_LOG_P = tuple(_f32(b) for b in (0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
                                 0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA))
_LN2_LO, _LN2_HI = _f32(0xB95E8083), _f32(0x3F318000)
_SQRT_HALF = np.float32(_f32(0x3F3504F3))
# log1p below |t| < sqrt(2) - 1: t - t^2/2 + t^3 * N(t) / D(t) (Cephes), coefficients highest first.
_LOG1P_NUM64 = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
                6.5787325942061044846969e0, 2.9911919328553073277375e1,
                6.0949667980987787057556e1, 5.7112963590585538103336e1,
                2.0039553499201281259648e1)
_LOG1P_DEN64 = (1.5062909083469192043167e1, 8.3047565967967209469434e1,
                2.2176239823732856465394e2, 3.0909872225312059774938e2,
                2.1642788614495947685003e2, 6.0118660497603843919306e1)
_LOG1P_SMALL = np.float32(_f32(0x3ED413CD))
_LOG1P_DEN = _r32(_LOG1P_DEN64)
_LOG1P_NUM = _r32(_LOG1P_NUM64)
# Giles' single-precision erf_inv: rows are (w < 5, w >= 5), highest coefficient first.
_GILES32 = np.array([_r32((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                           0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                           1.50140941)),
                     _r32((-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                           0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                           2.83297682))]).T.copy()
# Giles' double-precision erf_inv for w < 6.25, w < 16 and above, highest coefficient first.
_GILES64_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_GILES64_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_GILES64_GE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)

# ---------------------------------------------------------------- float32, block by block
#
# Every step is a same-dtype NumPy ufunc on a cache-sized block with `out=`: masked ufuncs,
# np.where and mixed-dtype loops are several times slower than plain ones, so branches are
# selected with bit masks (a float's sign bit spread by an arithmetic shift) and each fused
# multiply-add runs on float64 shadows of float32 values: multiply (exact), add (one rounding),
# then the round trip through float32 rounds the result as the fused operation does.


class _Scratch:
    """Preallocated buffers for one thread's blocks, handed out by name and length."""

    KINDS = {np.float32: ("x", "y", "t", "z", "ef", "big", "small", "q", "r", "p"),
             np.float64: ("x64", "t64", "t364", "y164", "y264", "y364", "p64", "q64"),
             np.int32: ("bits", "mask")}

    def __init__(self, size: int):
        self.size = size
        self.buffers = {name: np.empty(size, dtype) for dtype, names in self.KINDS.items()
                        for name in names}
        self.buffers["flag"] = np.empty(size, np.bool_)
        self.buffers["odd"] = np.empty(size, np.bool_)

    def views(self, m: int):
        return {name: buf[:m] for name, buf in self.buffers.items()}


def _fma_step(p64, p32, x64, c):
    """p = fma(p, x, c) in float32 (p64 shadows p32): the float64 product is exact, the sum
    rounds once in float64 and once more on its way into p32."""
    np.multiply(p64, x64, out=p64)
    np.add(p64, c, out=p32, casting="same_kind")
    np.copyto(p64, p32)


def _horner(coefs, x64, p64, p32):
    """Horner's rule for the polynomial `coefs` (highest first) at x, in float32 with fused
    multiply-adds, into p32 (and its float64 shadow p64)."""
    np.multiply(x64, coefs[0], out=p64)
    np.add(p64, coefs[1], out=p32, casting="same_kind")
    np.copyto(p64, p32)
    for c in coefs[2:]:
        _fma_step(p64, p32, x64, c)


def _sign_mask(value, out):
    """int32 -1 where the float32 `value` is negative (sign bit set), 0 elsewhere."""
    np.right_shift(value.view(np.int32), np.int32(31), out=out)
    return out


def _select(mask, if_true, if_false):
    """if_false = mask ? if_true : if_false, in place, for float32 arrays and an int32 0/-1
    mask; if_true is overwritten."""
    t, f = if_true.view(np.int32), if_false.view(np.int32)
    np.bitwise_xor(t, f, out=t)
    np.bitwise_and(t, mask, out=t)
    np.bitwise_xor(f, t, out=f)


def _log_large(s, out):
    """XLA's float32 log(y) for y = 1 + x (Cephes logf), into `out` (finite for y <= 0)."""
    y, t, z, ef, q, r = s["y"], s["t"], s["z"], s["ef"], s["q"], s["r"]
    bits, mask = s["bits"], s["mask"]
    np.maximum(y, np.float32(np.finfo(np.float32).tiny), out=out)
    vb = out.view(np.int32)
    np.right_shift(vb, np.int32(23), out=bits)
    np.subtract(bits, np.int32(126), out=bits)  # the exponent of the mantissa in [0.5, 1)
    np.bitwise_and(vb, np.int32(0x007FFFFF), out=vb)  # (y > 0: no sign bit to keep)
    np.bitwise_or(vb, np.int32(0x3F000000), out=vb)
    m = out  # the mantissa in [0.5, 1)
    np.subtract(m, _SQRT_HALF, out=q)
    _sign_mask(q, mask)  # below sqrt(1/2): t = 2m - 1 and one less in the exponent
    np.add(bits, mask, out=bits)
    np.copyto(ef, bits, casting="unsafe")
    np.bitwise_and(vb, mask, out=mask)
    np.subtract(m, np.float32(1), out=t)
    np.add(t, mask.view(np.float32), out=t)
    np.multiply(t, t, out=z)
    t64, t364 = s["t64"], s["t364"]
    np.copyto(t64, t)
    np.multiply(z, t, out=q)
    np.copyto(t364, q)
    y1, y2, y3 = s["y164"], s["y264"], s["y364"]
    for i, acc in enumerate((y1, y2, y3)):
        _horner(_LOG_P[3 * i:3 * i + 3], t64, acc, r)
    _fma_step(y1, r, t364, y2)
    _fma_step(y1, r, t364, y3)
    np.multiply(ef, np.float32(_LN2_LO), out=q)
    np.copyto(y2, q)
    np.multiply(y1, t364, out=y1)
    np.add(y1, y2, out=y1)
    np.copyto(r, y1, casting="same_kind")
    np.multiply(z, np.float32(0.5), out=z)
    np.subtract(t, z, out=t)
    np.add(t, r, out=t)
    np.multiply(ef, np.float32(_LN2_HI), out=ef)  # exact: few bits in each factor
    np.add(t, ef, out=out)


def _log1p_small(s, out):
    """XLA's float32 log1p(x) for |x| < sqrt(2) - 1 (Cephes' rational function), into `out`."""
    x, q, r, p = s["x"], s["q"], s["r"], s["p"]
    x64, p64, q64 = s["x64"], s["p64"], s["q64"]
    np.copyto(x64, x)
    np.add(x, np.float32(_LOG1P_DEN[0]), out=r)  # fma(1, x, d1): one rounding
    np.copyto(q64, r)
    for c in _LOG1P_DEN[1:]:
        _fma_step(q64, r, x64, c)
    _horner(_LOG1P_NUM, x64, p64, p)
    np.divide(p, r, out=p)
    np.multiply(x, x, out=q)
    np.multiply(x, q, out=r)
    np.multiply(r, p, out=r)
    np.multiply(q, np.float32(-0.5), out=q)
    np.add(q, r, out=q)
    np.add(x, q, out=out)


def _erf_inv_poly(ww, lt5, p, p64, w64):
    """Giles' polynomial in ww: the w < 5 one everywhere, the other one where lt5 is 0."""
    np.copyto(w64, ww)
    _horner(_GILES32[:, 0], w64, p64, p)
    tail = np.flatnonzero(lt5 == 0) if lt5.max() == 0 else ()
    if len(tail):  # w >= 5: |x| > 0.9966, a small share of the lanes
        tw = w64[tail]
        tp64, tp = np.empty_like(tw), np.empty(tw.shape, np.float32)
        _horner(_GILES32[:, 1], tw, tp64, tp)
        p[tail] = tp


def _log1p_block(x, out, scratch):
    """out = XLA's log1p(x) where x > -1 (finite values elsewhere, for callers to replace). Each
    of log1p's two branches runs on the lanes that take it only (gathered, computed, scattered
    back): cheaper than both on every lane. `x` may be the scratch buffer "x"."""
    m = x.shape[0]
    full = scratch.views(m)
    small = np.less(np.abs(x, out=full["q"]), _LOG1P_SMALL, out=full["flag"])
    small_idx = np.flatnonzero(small)
    big_idx = np.flatnonzero(np.logical_not(small, out=small)) if len(small_idx) < m else ()
    if len(big_idx):  # first: the small branch overwrites the scratch buffer "x"
        s = scratch.views(len(big_idx))
        np.take(x, big_idx, out=s["y"])
        np.add(s["y"], np.float32(1), out=s["y"])
        _log_large(s, s["big"])
        out[big_idx] = s["big"]
    if len(small_idx):
        s = scratch.views(len(small_idx))
        np.take(x, small_idx, out=s["small"])
        np.copyto(s["x"], s["small"])
        _log1p_small(s, s["small"])
        out[small_idx] = s["small"]


def _log1p_neg_square(a, out, scratch):
    """out = XLA's log1p(-a * a) = -w. Returns whether every |a| < 1 (no NaN, no +-1 or
    beyond)."""
    x = scratch.views(a.shape[0])["x"]
    np.multiply(a, a, out=x)
    np.negative(x, out=x)
    inside = bool(x.min() > -1)
    _log1p_block(x, out, scratch)
    return inside


def _erf_inv32_block(a, out, scratch):
    s = scratch.views(a.shape[0])
    q, small, mask = s["q"], s["small"], s["mask"]
    log1p = out
    inside = _log1p_neg_square(a, log1p, scratch)
    np.subtract(np.float32(-5), log1p, out=q)  # negative where w < 5
    lt5 = _sign_mask(q, mask)
    ww = q
    np.negative(log1p, out=ww)
    np.sqrt(ww, out=ww)
    np.subtract(ww, np.float32(3), out=ww)
    np.subtract(np.float32(-2.5), log1p, out=small)
    _select(lt5, small, ww)
    _erf_inv_poly(ww, lt5, s["p"], s["p64"], s["q64"])
    np.multiply(a, s["p"], out=out)
    if not inside:  # erf_inv(+-1) = +-inf, NaN beyond and for NaN
        edge = ~(np.abs(a) < 1)
        np.copyto(out, np.where(np.abs(a) == 1, a * np.float32(np.inf), np.float32(np.nan)),
                  where=edge)


def _map_blocks(block_fn, a, dtype=np.float32, make_scratch=_Scratch):
    """(a, out) for `a` flattened (as `dtype`) and `block_fn(a_block, out_block, scratch)` run
    over cache-sized blocks of it on the host threads, with one scratch per thread."""
    a = np.ascontiguousarray(a, dtype).reshape(-1)
    out = np.empty_like(a)

    def block(lo, hi, scratch):
        with np.errstate(all="ignore"):  # NaN and +-1 lanes are fixed at the end
            block_fn(a[lo:hi], out[lo:hi], scratch)

    run_in_cache_blocks(block, a.shape[0], make_scratch)
    return a, out


# ---------------------------------------------------------------- float32, memoised on a grid
#
# `normal` hands erf_inv the values u = (4m + 1) / 2**24 for m in [-2**22, 2**22): the 2**23
# floats that a 23-bit uniform draw scaled to (-1, 1) can take. Once a process has pushed as
# many values through the emulation as that grid holds, it runs once over the whole grid (about
# half a second) and later blocks gather from the table (32 MiB), for a quarter of the cost per
# value. Values off the grid (truncated_normal's, +-1, NaN) still take the emulation.

_GRID_HALF = 1 << 22
_GRID_SCALE = np.float32(2.0 ** 24)  # u * 2**24 is the integer 4m + 1, exactly


class _GridTable:
    """erf_inv over the uniform grid, built on demand once it has paid for itself."""

    def __init__(self):
        self.values: np.ndarray | None = None
        self.emulated = 0  # values the emulation has computed so far
        self.lock = threading.Lock()

    def ready(self, size: int) -> np.ndarray | None:
        """The table, if it is built or due now that `size` more values are wanted; else
        None (and the values count towards building it)."""
        if self.values is None:
            if filling_table():  # those values go into a table of a compiled chain instead
                return None
            self.emulated += size
            if self.emulated < 2 * _GRID_HALF:
                return None
            with self.lock:  # on this thread: the shared pool may be waiting on it
                if self.values is None:
                    m = np.arange(-_GRID_HALF, _GRID_HALF, dtype=np.int32)
                    grid = np.multiply(4 * m + 1, 1 / _GRID_SCALE, dtype=np.float32)
                    values = np.empty_like(grid)
                    for lo in range(0, grid.shape[0], CACHE_BLOCK):
                        _emulate_block(grid[lo:lo + CACHE_BLOCK], values[lo:lo + CACHE_BLOCK])
                    self.values = values
        return self.values


_GRID_TABLE = _GridTable()
_thread_state = threading.local()


def _scratch_for(size: int) -> _Scratch:
    """This thread's scratch buffers, at least `size` long."""
    scratch = getattr(_thread_state, "scratch", None)
    if scratch is None or scratch.size < size:
        scratch = _thread_state.scratch = _Scratch(max(size, CACHE_BLOCK))
    return scratch


def _emulate_block(a, out):
    with np.errstate(all="ignore"):  # NaN and +-1 lanes are fixed at the end
        _erf_inv32_block(a, out, _scratch_for(a.shape[0]))


def _grid_lookup(a, out, table) -> np.ndarray:
    """out = table's erf_inv of the float32 block `a` where it lies on the grid; returns the
    lanes off the grid (left for the caller)."""
    s = _scratch_for(a.shape[0]).views(a.shape[0])
    v, k, low, on, odd = s["q"], s["bits"], s["mask"], s["flag"], s["odd"]
    with np.errstate(all="ignore"):  # NaN and out-of-range lanes are off the grid
        np.multiply(a, _GRID_SCALE, out=v)
        np.copyto(k, v, casting="unsafe")
    np.equal(k, v, out=on)  # an integer...
    np.bitwise_and(k, np.int32(3), out=low)
    np.equal(low, np.int32(1), out=odd)  # ...of the form 4m + 1
    np.logical_and(on, odd, out=on)
    np.right_shift(k, np.int32(2), out=k)
    np.add(k, np.int32(_GRID_HALF), out=k)
    miss = () if on.all() else np.flatnonzero(np.logical_not(on, out=on))
    if len(miss):
        k[miss] = 0
    np.take(table, k, out=out)
    return miss


def _erf_inv32_into(a, out):
    """out = XLA's float32 erf_inv of the float32 block `a`, on the calling thread."""
    if a.ndim != 1 or not out.flags.c_contiguous:  # rows of a larger array, say
        in_place = out.flags.c_contiguous
        flat = out.reshape(-1) if in_place else np.empty(a.size, np.float32)
        _erf_inv32_into(np.ascontiguousarray(a).reshape(-1), flat)
        if not in_place:
            np.copyto(out, flat.reshape(out.shape))
        return out
    table = _GRID_TABLE.ready(a.shape[0])
    if table is None:
        _emulate_block(a, out)
        return out
    miss = _grid_lookup(a, out, table)
    if len(miss):
        off_grid = np.empty(len(miss), np.float32)
        _emulate_block(a[miss], off_grid)
        out[miss] = off_grid
    return out


def _erf_inv32(a):
    a = np.ascontiguousarray(a, np.float32).reshape(-1)
    out = np.empty_like(a)
    run_in_cache_blocks(lambda lo, hi, _: _erf_inv32_into(a[lo:hi], out[lo:hi]), a.shape[0])
    return out


# ---------------------------------------------------------------- float64


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's constant for splitting a float64 in halves


def _c_log(v: float) -> float:
    """The C library's log, with -inf at 0 and NaN below (math.log raises there)."""
    if v > 0:
        return math.log(v)
    return -math.inf if v == 0 else math.nan


_glibc_log = np.frompyfunc(_c_log, 1, 1)


def _split64(a):
    """Veltkamp's split: a = hi + lo exactly, each half with at most 26 significant bits."""
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _fma64(a, b, c, b_split=None):
    """a * b + c for float64 arrays with (almost always) one rounding: the product's error
    from Dekker's exact multiplication and the sum's from TwoSum are added back at the end.
    `b_split` is `_split64(b)` when the caller reuses b."""
    p = a * b
    ah, al = _split64(a)
    bh, bl = b_split or _split64(b)
    p_err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    s_err = (p - (s - bb)) + (c - bb)
    # Where the product overflows (or is not finite) the corrections are NaN: the plain sum.
    return np.where(np.isfinite(p_err), s + (s_err + p_err), s)


def _horner64(coefs, x):
    """Horner's rule for `coefs` (highest first) at x with fused multiply-adds, as XLA runs it."""
    x_split = _split64(x)
    p = np.full_like(x, coefs[0])
    for c in coefs[1:]:
        p = _fma64(p, x, c, x_split)
    return p


def _log1p64(x):
    """XLA's float64 log1p: log(1 + x) above |x| = sqrt(2) - 1 (XLA calls the C library's log,
    which NumPy's vectorised log differs from in the last bit now and then), and Cephes'
    rational function below, with fused multiply-adds."""
    small = np.abs(x) < math.sqrt(2) - 1
    out = np.empty_like(x)
    big = ~small
    out[big] = _glibc_log(1 + x[big]).astype(np.float64)
    xs = x[small]
    ratio = _horner64(_LOG1P_NUM64, xs) / _horner64((1.0, *_LOG1P_DEN64), xs)
    x2 = xs * xs
    out[small] = xs + _fma64(x2, np.full_like(xs, -0.5), xs * x2 * ratio)
    return out


def _erf_inv64(a):
    """Giles' double-precision polynomials, each on the lanes of its range of w."""
    w = -_log1p64(-a * a)
    p = np.empty_like(a)
    mid = (w >= 6.25) & (w < 16)
    tail = w >= 16
    low = ~(mid | tail)  # w < 6.25, and NaN
    p[low] = _horner64(_GILES64_LT_6_25, w[low] - 3.125)
    if mid.any():
        p[mid] = _horner64(_GILES64_LT_16, np.sqrt(w[mid]) - 3.25)
    if tail.any():
        p[tail] = _horner64(_GILES64_GE_16, np.sqrt(w[tail]) - 5.0)
    return np.where(np.abs(a) == 1, a * np.inf, p * a)


def _erf_inv64_block(a, out, scratch):
    out[:] = _erf_inv64(a)


def _erf_inv64_blocks(a):
    return _map_blocks(_erf_inv64_block, a, np.float64, lambda size: None)[1]


# ---------------------------------------------------------------- float32 log


def _log_block(y, out, scratch):
    block = scratch.views(y.shape[0])
    block["y"] = y  # read only: the result is built in `out`
    _log_large(block, out)


_TINY32 = np.float32(np.finfo(np.float32).tiny)


def _xla_log32(y):
    y, out = _map_blocks(_log_block, y)
    special = np.flatnonzero(~((y >= _TINY32) & (y < np.inf)))
    if len(special):  # XLA flushes subnormals to zero: +-0 and those -> -inf; inf -> inf;
        ys = y[special]  # below zero and NaN -> NaN
        with np.errstate(all="ignore"):
            out[special] = np.where(np.abs(ys) < _TINY32, -np.inf, np.log(ys))
    return out


def _xla_log1p32(x):
    x, out = _map_blocks(_log1p_block, x)
    special = np.flatnonzero(~((x > -1) & (x < np.inf) & ~(np.abs(x) < _TINY32)))
    if len(special):  # -1 -> -inf, inf -> inf, below -1 and NaN -> NaN, and XLA flushes
        xs = x[special]  # subnormals to (signed) zero, whose log1p is itself
        with np.errstate(all="ignore"):
            out[special] = np.where(np.abs(xs) < _TINY32, np.copysign(np.float32(0), xs),
                                    np.log1p(xs))
    return out


# ---------------------------------------------------------------- the primitives


def _xla_primitive(name, float32_fn, float64_fn, tangent):
    """(primitive, checked bind) for a float function computed as XLA's CPU backend computes
    it: `float32_fn` on float32 (float16 and bfloat16 go through float32, as XLA upcasts them),
    `float64_fn` on float64; `tangent(t, ans, x)` is its JVP."""
    def impl(x):
        shape, dtype = np.shape(x), np.asarray(x).dtype
        if dtype == np.float64:
            with np.errstate(all="ignore"):
                return np.reshape(float64_fn(x), shape)
        return float32_fn(x).reshape(shape).astype(dtype, copy=False)

    prim = unop(name, impl, "float")
    ad.defjvp(prim, tangent, with_ans=True)
    return prim, _checked(prim)


# d/dx erf_inv(x) = sqrt(pi) / 2 * exp(erf_inv(x) ** 2)
erf_inv_giles_p, erf_inv_giles = _xla_primitive(
    "erf_inv_giles", _erf_inv32, _erf_inv64_blocks,
    lambda t, y, x: lax.mul(t, lax.mul(lax_shape_ops.full_like(y, math.sqrt(math.pi) / 2),
                                       lax.exp(lax.mul(y, y)))))
erf_inv_giles.__doc__ = """erf_inv(x) computed exactly as XLA's CPU backend computes it (Giles'
    polynomials with XLA's log1p and fused multiply-adds): JAX's `lax.erf_inv` bit for bit in
    float32, within rounding in float64. Used by the samplers; `lax.erf_inv` is the accurate
    inverse."""
# XLA's float64 log and log1p differ from NumPy's in the last bit now and then; float64 samples
# are promised within rounding only, so NumPy's serve there.
xla_log_p, xla_log = _xla_primitive("xla_log", _xla_log32, np.log,
                                    lambda t, y, x: lax.div(t, x))
xla_log.__doc__ = """log(x) as XLA's CPU backend computes it: JAX's `jnp.log` bit for bit in
    float32, float16 and bfloat16. Used by the samplers (gumbel, categorical, choice);
    `lax.log` is NumPy's log, correctly rounded in practice."""
xla_log1p_p, xla_log1p = _xla_primitive(
    "xla_log1p", _xla_log1p32, np.log1p,
    lambda t, y, x: lax.div(t, lax.add(x, lax_shape_ops.full_like(x, 1))))
xla_log1p.__doc__ = """log1p(x) as XLA's CPU backend computes it: JAX's `jnp.log1p` bit for bit
    in float32, float16 and bfloat16. Used by the samplers (gumbel's high modes, exponential)."""
# Each of these is dozens of NumPy passes per value: a sampler's chain through them from a few
# random bits is worth a table of its results (backends.lookup_tables).
costly_prims.update((erf_inv_giles_p, xla_log_p, xla_log1p_p))


# ---------------------------------------------------------------- float32 rsqrt
#
# XLA rewrites a / sqrt(b) as a * rsqrt(b), and its x86 CPU rsqrt is the hardware's estimate
# (rsqrtps, 12 bits) refined by two Newton steps, not the correctly rounded 1 / sqrt. The
# estimate is modelled as 1 / sqrt of the midpoint of the input's bucket (exponent and the top
# ten mantissa bits) rounded to 13 significant bits; after the two steps this reproduces JAX's
# rsqrt on every float32 of ten whole binades, smallest and largest exponents among them, and
# on millions of random ones (checked on an Intel CPU; other CPUs may estimate differently).

_RSQRT_BUCKET = np.uint32(0xFFFFE000)  # sign, exponent and the top ten mantissa bits
_RSQRT_MID = np.uint32(1 << 12)


def _fma32(a, b, c):
    """fma(a, b, c) for float32 arrays: the float64 product is exact, the sum rounds once."""
    return (a.astype(np.float64) * b + c).astype(np.float32)


def _xla_rsqrt32(x):
    x = np.ascontiguousarray(x, np.float32)
    with np.errstate(all="ignore"):
        mid = (x.view(np.uint32) & _RSQRT_BUCKET) | _RSQRT_MID
        mant, exp = np.frexp(1 / np.sqrt(mid.view(np.float32).astype(np.float64)))
        y = np.ldexp(np.round(mant * 8192) / 8192, exp).astype(np.float32)
        for _ in range(2):  # Newton: h = x y^2 - 1 (nearly 0), y -= y h / 2
            h = _fma32(x * y, y, np.float32(-1))
            y = _fma32(y * np.float32(-0.5), h, y)
        # Below the smallest normal (zero, subnormals flushed to zero, negatives) and at inf
        # XLA keeps the hardware's answer: +-inf, NaN and 0.
        special = np.flatnonzero(~(x >= _TINY32) | (x == np.inf))
        if len(special):
            xs = x[special]
            y[special] = np.where(xs == np.inf, np.float32(0),
                                  np.where(np.abs(xs) < _TINY32, np.copysign(np.inf, xs),
                                           np.float32(np.nan)))
    return y


# float64 keeps NumPy's 1 / sqrt: float64 samples are promised within rounding only.
# d/dx x ** -1/2 = -1/2 x ** -3/2 = -1/2 rsqrt(x) / x
xla_rsqrt_p, xla_rsqrt = _xla_primitive(
    "xla_rsqrt", _xla_rsqrt32, lambda x: 1 / np.sqrt(x),
    lambda t, y, x: lax.mul(t, lax.mul(lax_shape_ops.full_like(y, -0.5), lax.div(y, x))))
xla_rsqrt.__doc__ = """1 / sqrt(x) as XLA's x86 CPU backend computes it (the hardware estimate
    and two Newton steps): JAX's `lax.rsqrt`, and the `a / sqrt(b)` XLA rewrites into it, bit
    for bit in float32. Used by the gamma sampler; `lax.rsqrt` is correctly rounded."""


# ---------------------------------------------------------------- fused multiply-add
#
# XLA's CPU backend contracts a * b + c into one fused operation (float16, float32, float64;
# not bfloat16), and the samplers' multiply-adds must round as it does.


def _fma_impl(a, b, c):
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    with np.errstate(all="ignore"):
        if a.dtype == np.float64:
            return _fma64(a, b, c)
        # Narrower floats: the float64 product is exact and the sum rounds once there.
        return (np.multiply(a, b, dtype=np.float64) + c).astype(a.dtype)


def _fma_abstract(a, b, c):
    _check_kind("xla_fma", "float", a)
    _check_same_dtypes("xla_fma", a, b, c)
    shape = _broadcast_shapes("xla_fma", a.shape, b.shape, c.shape)
    return [ShapedArray(shape, a.dtype, a.weak_type and b.weak_type and c.weak_type)]


def _to_output_shape(t, *operands):
    return _bcast_tangent(t, np.broadcast_shapes(*(get_aval(x).shape for x in operands)))


xla_fma_p = Primitive("xla_fma")
impl_rules[xla_fma_p] = _fma_impl
abstract_eval_rules[xla_fma_p] = _fma_abstract
batch_rules[xla_fma_p] = partial(broadcast_batch_rule, xla_fma_p)
ad.defjvp(xla_fma_p,
          lambda g, a, b, c: _to_output_shape(lax.mul(g, b), a, b, c),
          lambda g, a, b, c: _to_output_shape(lax.mul(a, g), a, b, c),
          lambda g, a, b, c: _to_output_shape(g, a, b, c))


def xla_fma(a, b, c):
    """a * b + c rounded once, as XLA's CPU backend fuses it: operands of one float dtype (Python
    scalars take it) and equal shapes, rank 0 or size-1 dimensions, as lax's binary operations.
    Used by the samplers."""
    a, b, c = _coerce_scalars("xla_fma", a, b, c)
    _fma_abstract(*map(get_aval, (a, b, c)))  # eager evaluation skips abstract evaluation
    return xla_fma_p.bind(a, b, c)
