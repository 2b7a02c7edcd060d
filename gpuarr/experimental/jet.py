r"""Taylor-mode automatic differentiation, as `jax.experimental.jet`.

`jet(f, (x,), ((x1, ..., xK),))` pushes a truncated Taylor polynomial through `f` in one
pass, without nesting first-order derivatives: given the derivatives of a curve `h` at a
point, `h_0 = x, h_1, ..., h_K`, it returns those of `f(h(t))`. Internally the series are
kept without their factorials (the Taylor coefficients), where each primitive has a short
recurrence: the Cauchy product for bilinear ops, `v' = v u'` for exp, `u = exp(v)`
solved for log, Faa di Bruno through the first derivative (`deriv_prop`) for the rest
(Griewank & Walther, Evaluating Derivatives, 2nd ed., ch. 13; Bettencourt, Johnson &
Duvenaud 2019, "Taylor-mode automatic differentiation for higher-order derivatives in JAX").

`JetTrace` carries `(primal, [c_1, ..., c_K])` pairs; each rule in `jet_rules` runs on the
parent trace, so jet composes with jit, vmap, grad and itself. A value whose series is
known to be zero carries `zero_series` (and stays a plain value). jit and remat calls are
turned into calls of a jet Program; custom_jvp and custom_vjp functions are traced through
their primal function, their custom rules ignored, as JAX does.
"""
from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from functools import partial

from gpuarr import pytrees
from gpuarr.ad_checkpoint import remat_p
from gpuarr.array import Array
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Trace,
    Tracer,
    check_tracer_alive,
    current_trace,
    eval_closed,
    get_aval,
    set_current_trace,
    unzip2,
)
from gpuarr.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import add_any_p
from gpuarr.jit_api import jit_p
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import cumulative as lax_cumulative
from gpuarr.lax import dot_products as lax_dot_products
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import slicing as lax_slicing
from gpuarr.lax import special as lax_special
from gpuarr.lax import windowed as lax_windowed
from gpuarr.lax.fft import fft_p as _fft_p
from gpuarr.numpy import creation

__all__ = ["jet", "jet2", "jet_rules", "zero_series", "fact"]


def jet(fun: Callable, primals, series, factorial_scaled: bool = True, **_):
    r"""Taylor-mode higher-order differentiation of `fun` at `primals` (jax.experimental.jet.jet).

    `primals` is a tuple or list of arrays (one per positional argument of `fun`) and
    `series` one tuple or list of `K` arrays per argument: the derivatives of order 1..K
    of the input curve (its Taylor coefficients when `factorial_scaled=False`). Returns
    `(primals_out, series_out)`: `fun(*primals)`, and for each output leaf the list of its
    K derivatives along the curve, in the output's tree structure."""
    try:
        order, = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    for i, (x, terms) in enumerate(zip(primals, series)):
        if not pytrees.treedef_is_leaf(pytrees.tree_structure(x)):
            raise ValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not pytrees.treedef_is_leaf(pytrees.tree_structure(t)):
                raise ValueError(f"term {j} for argument {i} is not an array")
    primals = [_as_array(x) for x in primals]
    series = [[_as_array(t) for t in terms] for terms in series]
    if factorial_scaled:  # derivatives in, Taylor coefficients inside
        series = [[t / fact(k + 1) for k, t in enumerate(terms)] for terms in series]
    out_tree_box = []

    def flat_fun(*args):
        leaves, tree = pytrees.tree_flatten(fun(*args))
        out_tree_box.append(tree)
        return leaves

    out_primals, out_series = jet_flat(flat_fun, order, list(zip(primals, series)))
    out_series = [[creation.zeros_like(p)] * order if s is zero_series else s
                  for p, s in zip(out_primals, out_series)]
    if factorial_scaled:
        out_series = [[t * fact(k + 1) for k, t in enumerate(terms)] for terms in out_series]
    tree = out_tree_box[0]
    return (pytrees.tree_unflatten(tree, out_primals),
            pytrees.tree_unflatten(tree, out_series))


jet2 = partial(jet, factorial_scaled=False)


def fact(n: int) -> float:
    """n!, as a Python float (weakly typed: it keeps the dtype of the series it scales)."""
    return float(math.factorial(n))


def _as_array(x):
    # NumPy values and Python numbers become Arrays, so that the recurrences on them run as
    # gpuarr operations (with its dtype rules), not as NumPy or float64 Python arithmetic.
    return x if isinstance(x, (Tracer, Array)) else creation.asarray(x)


# ---------------------------------------------------------------- the jet trace


class ZeroSeries:
    """The series of a value that does not depend on the inputs' series."""

    __slots__ = ()

    def __repr__(self):
        return "zero_series"


zero_series = ZeroSeries()


class JetTracer(Tracer):
    __slots__ = ("primal", "terms")

    def __init__(self, trace, primal, terms):
        self._trace = trace
        self.primal = primal
        self.terms = terms

    @property
    def aval(self):
        return get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        return p.to_concrete_value() if isinstance(p, Tracer) else p


class JetTrace(Trace):
    """Carries (primal, Taylor coefficients 1..order) pairs; rules run on the parent trace."""

    __slots__ = ("order",)

    def __init__(self, parent, order: int):
        super().__init__(parent)
        self.order = order

    def to_primal_terms(self, x):
        if type(x) is JetTracer and x._trace is self:
            return x.primal, x.terms
        if isinstance(x, Tracer):
            check_tracer_alive(x, "inside jet")
        return x, zero_series

    def process_primitive(self, prim, args, params):
        primals, series = unzip2(map(self.to_primal_terms, args))
        if all(s is zero_series for s in series):
            with set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        rule = jet_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"Jet rule for '{prim.name}' not implemented")
        with set_current_trace(self.parent):
            if prim not in symbolic_zero_prims:
                series = [[lax_shape_ops.full_like(p, 0)] * self.order if s is zero_series else s
                          for p, s in zip(primals, series)]
            out, out_series = rule(primals, series, **params)
        if not prim.multiple_results:
            return self.pure(out, out_series)
        if out_series is zero_series:
            return list(out)
        return [self.pure(p, s) for p, s in zip(out, out_series, strict=True)]

    def pure(self, primal, terms):
        return primal if terms is zero_series else JetTracer(self, primal, list(terms))


def jet_flat(fun: Callable, order: int, primals_and_series):
    """Run `fun(*primals)` carrying `order` Taylor coefficients per input (a list, or
    `zero_series`); return (primal outs, coefficient lists or zero_series per output)."""
    trace = JetTrace(current_trace(), order)
    ins = [trace.pure(p, s) for p, s in primals_and_series]
    try:
        with set_current_trace(trace):
            outs = fun(*ins)
        pairs = [trace.to_primal_terms(o) for o in outs]
    finally:
        trace.alive = False
    return unzip2(pairs)


def _order(series) -> int:
    return next(len(s) for s in series if s is not zero_series)


# ---------------------------------------------------------------- rules

# prim -> rule(primals, series, **params) -> (primal out, coefficient list out), with lists
# per output for multiple-result primitives. A rule gets every series as a list of arrays
# (zeros filled in) unless its primitive is in `symbolic_zero_prims`, where `zero_series`
# is passed on; it may return `zero_series` for an output that does not depend on them.
jet_rules: dict[Primitive, Callable] = {}
symbolic_zero_prims: set[Primitive] = set()


def defzero(prim: Primitive):
    """Piecewise-constant outputs (comparisons, integer ops): their series are zero."""
    jet_rules[prim] = partial(zero_prop, prim)


def zero_prop(prim, primals_in, series_in, **params):
    return prim.bind(*primals_in, **params), zero_series


for _p in (lax.le_p, lax.lt_p, lax.gt_p, lax.ge_p, lax.eq_p, lax.ne_p, lax.not_p, lax.and_p,
           lax.or_p, lax.xor_p, lax.floor_p, lax.ceil_p, lax.round_p, lax.sign_p,
           lax.stop_gradient_p, lax.is_finite_p, lax.shift_left_p, lax.shift_right_arithmetic_p,
           lax.shift_right_logical_p, lax_special.bitcast_convert_type_p, lax.argmax_p, lax.argmin_p,
           lax_special.population_count_p, lax_special.clz_p, lax.reduce_and_p, lax.reduce_or_p,
           lax_extras.reduce_xor_p, lax.nextafter_p):
    defzero(_p)


def deflinear(prim: Primitive):
    """Linear in all its operands together: each coefficient maps like the primal."""
    jet_rules[prim] = partial(linear_prop, prim)


def linear_prop(prim, primals_in, series_in, **params):
    primal_out = prim.bind(*primals_in, **params)
    series_out = [prim.bind(*terms, **params) for terms in zip(*series_in)]
    if prim.multiple_results:
        series_out = [[s[i] for s in series_out] for i in range(len(primal_out))]
    return primal_out, series_out


for _p in (lax.neg_p, lax_extras.real_p, lax_extras.imag_p, lax_extras.complex_p, lax_extras.conj_p,
           lax.add_p, add_any_p,
           lax.sub_p, lax_conversions.convert_element_type_p, lax_shape_ops.broadcast_in_dim_p,
           lax.concatenate_p,
           lax.pad_p, lax_shape_ops.reshape_p, lax_shape_ops.squeeze_p, lax_shape_ops.rev_p,
           lax_shape_ops.transpose_p, lax.slice_p, lax_shape_ops.reduce_sum_p,
           lax_windowed.reduce_window_sum_p, _fft_p, lax_cumulative.cumsum_p,
           lax_extras.optimization_barrier_p, lax.copy_p, lax_extras.split_p, lax_extras.stack_p,
           lax_extras.unstack_p):
    deflinear(_p)


def _dynamic_slice_rule(primals_in, series_in, **params):
    operand, *starts = primals_in
    out = lax_slicing.dynamic_slice_p.bind(operand, *starts, **params)
    return out, [lax_slicing.dynamic_slice_p.bind(t, *starts, **params) for t in series_in[0]]


def _dynamic_update_slice_rule(primals_in, series_in, **params):
    operand, update, *starts = primals_in
    out = lax_slicing.dynamic_update_slice_p.bind(operand, update, *starts, **params)
    return out, [lax_slicing.dynamic_update_slice_p.bind(t, u, *starts, **params)
                 for t, u in zip(series_in[0], series_in[1])]


def _gather_rule(primals_in, series_in, **params):
    operand, indices = primals_in
    out = lax_slicing.gather_p.bind(operand, indices, **params)
    # Out-of-bounds windows are filled with a constant: its coefficients are zero.
    tparams = dict(params, fill_value=0 if params["mode"] is lax_slicing.GatherScatterMode.FILL_OR_DROP
                   else None)
    return out, [lax_slicing.gather_p.bind(t, indices, **tparams) for t in series_in[0]]


def _scatter_rule(prim, primals_in, series_in, **params):
    # Linear in (operand, updates) together for fixed indices: add, sub, and plain
    # overwriting scatter (which picks, per element, the same source for every coefficient).
    operand, indices, updates = primals_in
    out = prim.bind(operand, indices, updates, **params)
    return out, [prim.bind(t, indices, u, **params)
                 for t, u in zip(series_in[0], series_in[2])]


jet_rules[lax_slicing.dynamic_slice_p] = _dynamic_slice_rule
jet_rules[lax_slicing.dynamic_update_slice_p] = _dynamic_update_slice_rule
jet_rules[lax_slicing.gather_p] = _gather_rule
for _p in (lax_slicing.scatter_add_p, lax_slicing.scatter_sub_p, lax_slicing.scatter_p):
    jet_rules[_p] = partial(_scatter_rule, _p)


def _cumulative_rule(combine, primals_in, series_in, *, axis, reverse):
    # Through the parallel prefix scan, whose pieces all have rules (as JAX does).
    return jet2(partial(lax_control_flow.associative_scan, combine, axis=axis, reverse=reverse),
                primals_in, series_in)


jet_rules[lax_cumulative.cumprod_p] = partial(_cumulative_rule, lax.mul)
jet_rules[lax_cumulative.cummax_p] = partial(_cumulative_rule, lax.max)
jet_rules[lax_cumulative.cummin_p] = partial(_cumulative_rule, lax.min)


def def_deriv(prim: Primitive, deriv: Callable):
    """The rule of a unary primitive from its first derivative `deriv(x)` (written with other
    primitives): with v = f(u), v' = f'(u) u', so k v_k = sum_{j=1..k} j c_{k-j} u_j where
    c is the series of f'(u)."""
    jet_rules[prim] = partial(deriv_prop, prim, deriv)


def deriv_prop(prim, deriv, primals_in, series_in):
    x, = primals_in
    series, = series_in
    c0, cs = jet2(deriv, primals_in, series_in)
    c = [c0] + cs
    u = [x] + series
    v = [prim.bind(x)] + [None] * len(series)
    for k in range(1, len(v)):
        v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


def def_comp(prim: Primitive, comp: Callable):
    """The rule of a primitive that equals a composition `comp` of primitives with rules."""
    jet_rules[prim] = partial(jet2, comp)


_TWO_OVER_SQRT_PI = 2. / math.sqrt(math.pi)
def_deriv(lax_special.erf_p, lambda x: _TWO_OVER_SQRT_PI * lax.exp(-lax.square(x)))
def_deriv(lax.asin_p, lambda x: lax.rsqrt(1. - lax.square(x)))
def_deriv(lax.acos_p, lambda x: -lax.rsqrt(1. - lax.square(x)))
def_deriv(lax.atan_p, lambda x: 1. / (1. + lax.square(x)))

def_comp(lax.expm1_p, lambda x: lax.exp(x) - 1.)
def_comp(lax.log1p_p, lambda x: lax.log(1. + x))
def_comp(lax.asinh_p, lambda x: lax.log(x + lax.sqrt(lax.square(x) + 1.)))
def_comp(lax.acosh_p, lambda x: lax.log(x + lax.sqrt(lax.square(x) - 1.)))
def_comp(lax.atanh_p, lambda x: 0.5 * lax.log(lax.div(1. + x, 1. - x)))
def_comp(lax_special.erfc_p, lambda x: 1. - lax_special.erf(x))
def_comp(lax_special.clamp_p, lambda lo, x, hi: lax.min(lax.max(lo, x), hi))


def _erf_inv_rule(primals_in, series_in):
    # v = erf_inv(u): v' = c u' with c = sqrt(pi)/2 exp(v^2), a series built alongside v.
    x, = primals_in
    series, = series_in
    u = [x] + series
    n = len(series)
    v = [lax_special.erf_inv(x)] + [None] * n
    scale = math.sqrt(math.pi) / 2.
    sq = [lax.square(v[0])] + [None] * n
    ex = [lax.exp(sq[0])] + [None] * n
    c = [scale * ex[0]] + [None] * n
    for k in range(1, n + 1):
        v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
        if k == n:
            break
        sq[k] = sum(v[k - j] * v[j] for j in range(k + 1))
        ex[k] = sum(j * ex[k - j] * sq[j] for j in range(1, k + 1)) / k
        c[k] = scale * ex[k]
    return v[0], v[1:]


jet_rules[lax_special.erf_inv_p] = _erf_inv_rule


def _exp_rule(prim, scale, primals_in, series_in):
    # v = exp(s u): v' = s v u', so k v_k = s sum_{j=1..k} j v_{k-j} u_j.
    x, = primals_in
    u = [x] + series_in[0]
    v = [prim.bind(x)] + [None] * len(series_in[0])
    for k in range(1, len(v)):
        v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) * (scale / k)
    return v[0], v[1:]


jet_rules[lax.exp_p] = partial(_exp_rule, lax.exp_p, 1.)
jet_rules[lax.exp2_p] = partial(_exp_rule, lax.exp2_p, math.log(2.))


def _log_rule(primals_in, series_in):
    # u = exp(v) solved for v: u_k = (1/k) sum_{j=1..k} j v_j u_{k-j}.
    x, = primals_in
    u = [x] + series_in[0]
    v = [lax.log_p.bind(x)] + [None] * len(series_in[0])
    for k in range(1, len(v)):
        conv = sum(j * v[j] * u[k - j] for j in range(1, k))
        v[k] = (u[k] - conv / k) / u[0]
    return v[0], v[1:]


jet_rules[lax.log_p] = _log_rule


def _power_rule(prim, a, primals_in, series_in):
    # v = u^a: u v' = a v u', so u_0 v_k = (1/k) sum_{j=1..k} (a j - (k - j)) u_j v_{k-j}.
    x, = primals_in
    u = [x] + series_in[0]
    v = [prim.bind(x)] + [None] * len(series_in[0])
    for k in range(1, len(v)):
        v[k] = sum((a * j - (k - j)) * u[j] * v[k - j] for j in range(1, k + 1)) / (k * u[0])
    return v[0], v[1:]


jet_rules[lax.sqrt_p] = partial(_power_rule, lax.sqrt_p, 0.5)
jet_rules[lax.rsqrt_p] = partial(_power_rule, lax.rsqrt_p, -0.5)
jet_rules[lax.cbrt_p] = partial(_power_rule, lax.cbrt_p, 1. / 3.)


def _pow_rule(primals_in, series_in):
    # x^y = exp(y log x): the exp recurrence on the series of y log x.
    w0, ws = jet2(lambda x, y: y * lax.log(x), primals_in, series_in)
    w = [w0] + ws
    v = [lax.pow_p.bind(*primals_in)] + [None] * len(ws)
    for k in range(1, len(v)):
        v[k] = sum(j * v[k - j] * w[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


jet_rules[lax.pow_p] = _pow_rule


def _pow_by_squaring(x, n: int):
    if n < 0:
        return _pow_by_squaring(1 / x, -n)
    if n == 1:
        return x
    half = _pow_by_squaring(x * x, n // 2)
    return half if n % 2 == 0 else x * half


def _integer_pow_rule(primals_in, series_in, *, y):
    if y == 0:
        return jet2(creation.ones_like, primals_in, series_in)
    return jet2(lambda x: _pow_by_squaring(x, y), primals_in, series_in)


jet_rules[lax.integer_pow_p] = _integer_pow_rule
jet_rules[lax.square_p] = partial(_integer_pow_rule, y=2)


def _logistic_series(x, series):
    # v = logistic(u): v' = e u' with e = v (1 - v), whose series follows from v's.
    u = [x] + series
    v = [lax.logistic(x)] + [None] * len(series)
    e = [v[0] * (1. - v[0])] + [None] * len(series)
    for k in range(1, len(v)):
        v[k] = sum(j * e[k - j] * u[j] for j in range(1, k + 1)) / k
        e[k] = (1. - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1))
    return v


def _logistic_rule(primals_in, series_in):
    v = _logistic_series(primals_in[0], series_in[0])
    return v[0], v[1:]


def _tanh_rule(primals_in, series_in):
    # tanh(u) = 2 logistic(2u) - 1.
    x, = primals_in
    v = _logistic_series(2. * x, [2. * t for t in series_in[0]])
    return lax.tanh_p.bind(x), [2. * t for t in v[1:]]


def _tan_rule(primals_in, series_in):
    # v = tan(u): v' = w u' with w = 1 + v^2.
    x, = primals_in
    u = [x] + series_in[0]
    v = [lax.tan_p.bind(x)] + [None] * len(series_in[0])
    w = [1. + lax.square(v[0])] + [None] * len(series_in[0])
    for k in range(1, len(v)):
        v[k] = sum(j * w[k - j] * u[j] for j in range(1, k + 1)) / k
        w[k] = sum(v[j] * v[k - j] for j in range(k + 1))
    return v[0], v[1:]


jet_rules[lax.logistic_p] = _logistic_rule
jet_rules[lax.tanh_p] = _tanh_rule
jet_rules[lax.tan_p] = _tan_rule


def _sinusoidal_rule(sign, which, prims, primals_in, series_in):
    # s = sin(u), c = cos(u): s' = c u', c' = -s u' (sinh/cosh: both signs +).
    x, = primals_in
    u = [x] + series_in[0]
    n = len(series_in[0])
    s = [prims[0](x)] + [None] * n
    c = [prims[1](x)] + [None] * n
    for k in range(1, n + 1):
        s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
        c[k] = sum(j * u[j] * s[k - j] for j in range(1, k + 1)) * (sign / k)
    out = (s, c)[which]
    return out[0], out[1:]


jet_rules[lax.sin_p] = partial(_sinusoidal_rule, -1., 0, (lax.sin, lax.cos))
jet_rules[lax.cos_p] = partial(_sinusoidal_rule, -1., 1, (lax.sin, lax.cos))
jet_rules[lax.sinh_p] = partial(_sinusoidal_rule, 1., 0, (lax.sinh, lax.cosh))
jet_rules[lax.cosh_p] = partial(_sinusoidal_rule, 1., 1, (lax.sinh, lax.cosh))


def _atan2_rule(primals_in, series_in):
    # atan2(x, y) = atan(x / y) up to a constant: d = 1 / (1 + (x/y)^2) times (x/y)'.
    q0, qs = jet2(lax.div, primals_in, series_in)
    c0, cs = jet2(lambda q: 1. / (1. + lax.square(q)), (q0,), (qs,))
    c, q = [c0] + cs, [q0] + qs
    v = [lax.atan2_p.bind(*primals_in)] + [None] * len(qs)
    for k in range(1, len(v)):
        v[k] = sum(j * c[k - j] * q[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


jet_rules[lax.atan2_p] = _atan2_rule


def _div_rule(primals_in, series_in):
    # v = u / w: u_k = sum_{j=0..k} v_j w_{k-j}, solved for v_k.
    x, y = primals_in
    u, w = [x] + series_in[0], [y] + series_in[1]
    v = [lax.div_p.bind(x, y)] + [None] * len(series_in[0])
    for k in range(1, len(v)):
        conv = sum(v[j] * w[k - j] for j in range(k))
        v[k] = (u[k] - conv) / w[0]
    return v[0], v[1:]


jet_rules[lax.div_p] = _div_rule


def _rem_rule(primals_in, series_in):
    # rem(x, y) = x - y trunc(x / y), and the quotient is piecewise constant.
    x, y = primals_in
    out = lax.rem_p.bind(x, y)
    q = lax.round((x - out) / y)
    return out, [tx - q * ty for tx, ty in zip(*series_in)]


jet_rules[lax.rem_p] = _rem_rule


def _bilinear_rule(prim, primals_in, series_in, **params):
    # Cauchy product: v_k = sum_{j=0..k} op(u_j, w_{k-j}).
    u, w = [primals_in[0]] + series_in[0], [primals_in[1]] + series_in[1]
    v = [sum(prim.bind(u[j], w[k - j], **params) for j in range(k + 1)) for k in range(len(u))]
    return v[0], v[1:]


for _p in (lax.mul_p, lax_dot_products.dot_general_p, lax_windowed.conv_general_dilated_p):
    jet_rules[_p] = partial(_bilinear_rule, _p)


def _reduce_chooser_rule(prim, primals_in, series_in, **params):
    # Coefficients of the chosen element, averaged over ties (as the JVP does).
    operand, = primals_in
    out = prim.bind(operand, **params)
    axes = params["axes"]
    shape = get_aval(operand).shape
    keep = tuple(i for i in range(len(shape)) if i not in axes)
    terms = series_in[0]
    dtype = get_aval(terms[0]).dtype if terms else get_aval(operand).dtype
    location = lax_conversions.convert_element_type(
        lax.eq(operand, lax_shape_ops.broadcast_in_dim(out, shape, keep)), dtype)
    counts = lax_shape_ops.reduce_sum(location, axes)
    return out, [lax.div(lax_shape_ops.reduce_sum(lax.mul(t, location), axes), counts) for t in terms]


jet_rules[lax.reduce_max_p] = partial(_reduce_chooser_rule, lax.reduce_max_p)
jet_rules[lax.reduce_min_p] = partial(_reduce_chooser_rule, lax.reduce_min_p)


def _abs_rule(primals_in, series_in):
    x, = primals_in
    negs = lax.select(lax.lt(x, lax_shape_ops.full_like(x, 0)), lax_shape_ops.full_like(x, -1),
                      lax_shape_ops.full_like(x, 1))
    return lax.abs_p.bind(x), [negs * t for t in series_in[0]]


jet_rules[lax.abs_p] = _abs_rule


def _select_n_rule(primals_in, series_in):
    which, *cases = primals_in
    out = lax.select_n_p.bind(which, *cases)
    return out, [lax.select_n(which, *terms) for terms in zip(*series_in[1:])]


jet_rules[lax.select_n_p] = _select_n_rule


def _minmax_rule(prim, pick_x, primals_in, series_in):
    # The coefficients of the chosen operand; their average where the operands are equal.
    x, y = primals_in
    out = prim.bind(x, y)
    take_x, tie = pick_x(x, y), lax.eq(x, y)
    return out, [lax.select(tie, (tx + ty) / 2., lax.select(take_x, tx, ty))
                 for tx, ty in zip(*series_in)]


jet_rules[lax.max_p] = partial(_minmax_rule, lax.max_p, lax.gt)
jet_rules[lax.min_p] = partial(_minmax_rule, lax.min_p, lax.lt)


# ---------------------------------------------------------------- calls


_jet_program_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jet_program(closed: ClosedProgram, order: int, nonzeros: tuple, term_avals: tuple):
    """A Program from (primals, the coefficients of the inputs marked in `nonzeros`) to
    (primal outs, the coefficients of the outputs that depend on them), and those outputs'
    flags."""
    key = (order, nonzeros, term_avals)
    per_prog = _jet_program_cache.setdefault(closed, {})
    cached = per_prog.get(key)
    if cached is not None:
        return cached
    n = len(closed.in_avals)
    out_nonzeros = []

    def fun(*args):
        rest = iter(args[n:])
        series = [[next(rest) for _ in range(order)] if nz else zero_series for nz in nonzeros]
        outs, out_series = jet_flat(lambda *xs: eval_closed(closed, *xs), order,
                                    list(zip(args[:n], series)))
        out_nonzeros.extend(s is not zero_series for s in out_series)
        return list(outs) + [t for s in out_series if s is not zero_series for t in s]

    in_avals = list(closed.in_avals) + list(term_avals)
    result = (pe.trace_to_program(fun, in_avals), tuple(out_nonzeros))
    per_prog[key] = result
    return result


def _call_rule(prim, program_param, update_params, primals_in, series_in, **params):
    # Stay a call: bind `prim` on a jet Program of the called one (cached per Program).
    order = _order(series_in)
    nonzeros = tuple(s is not zero_series for s in series_in)
    terms = [t for s in series_in if s is not zero_series for t in s]
    closed = params[program_param]
    prog, out_nonzeros = jet_program(closed, order, nonzeros, tuple(map(get_aval, terms)))
    new_params = dict(params, **update_params(params), **{program_param: prog})
    outs = prim.bind(*primals_in, *terms, **new_params)
    n = len(closed.out_avals)
    rest = iter(outs[n:])
    return outs[:n], [[next(rest) for _ in range(order)] if nz else zero_series
                      for nz in out_nonzeros]


def _inline_call_rule(primals_in, series_in, *, call_jaxpr, **_):
    # Custom derivative rules say nothing about higher orders: trace the primal function.
    return jet_flat(lambda *xs: eval_closed(call_jaxpr, *xs), _order(series_in),
                    list(zip(primals_in, series_in)))


jet_rules[jit_p] = partial(_call_rule, jit_p, "jaxpr", lambda p: {"name": f"jet({p['name']})"})
jet_rules[remat_p] = partial(_call_rule, remat_p, "jaxpr", lambda p: {})
jet_rules[custom_jvp_call_p] = _inline_call_rule
jet_rules[custom_vjp_call_p] = _inline_call_rule
symbolic_zero_prims.update((jit_p, remat_p, custom_jvp_call_p, custom_vjp_call_p))

del _p
