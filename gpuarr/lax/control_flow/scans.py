"""scan and associative_scan: the `scan` primitive (`scan[jaxpr=...]`, JAX's params) and its
rules, including its partial evaluation for reverse mode (a known scan that stacks residuals
per iteration and a linear scan that is transposed) and its dead-code rule, which prunes
unread outputs and the carries only they need (the NumPy backend uses the same pruning).
associative_scan is a parallel prefix scan in lax operations, not a primitive.
"""
from __future__ import annotations

import builtins

import numpy as np

from gpuarr import pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Program,
    Var,
    abstract_eval_rules,
    get_aval,
    set_current_trace,
    weak_type_rules,
)
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax import lax, shape_ops
from gpuarr.lax.control_flow.common import (
    _avals,
    _backward,
    _check_carry,
    _forwarded,
    _is_inexact,
    _jvp_closed,
    _operand,
    _permute,
    _promote_weak_carries,
    _run_equation,
    _same_type,
    _shape_of,
    _trace_body,
    _zeros,
    label_carry,
)

# ================================================================ scan

scan_p = Primitive("scan", multiple_results=True)


def _scan_impl(*args, **params):
    return _run_equation(scan_p, args, params)


def _scan_abstract(*avals, jaxpr, length, num_carry, num_consts, reverse, unroll):
    ins = jaxpr.in_avals
    if len(avals) != len(ins):
        raise TypeError(f"scan expects {len(ins)} operands, got {len(avals)}.")
    fixed = avals[:num_consts + num_carry]
    for a, b in zip(fixed, ins):
        if not _same_type(a, b):
            raise TypeError(f"scan operand type {a.str_short()} does not match the body's "
                            f"{b.str_short()}.")
    for a, b in zip(avals[num_consts + num_carry:], ins[num_consts + num_carry:]):
        if a.shape[:1] != (length,) or not _same_type(a.update(shape=a.shape[1:]), b):
            raise TypeError(f"scan xs operand of type {a.str_short()} does not match length "
                            f"{length} and body input {b.str_short()}.")
    outs = jaxpr.out_avals
    carry_in = avals[num_consts:num_consts + num_carry]
    for a, b in zip(carry_in, outs[:num_carry]):
        if not _same_type(a, b):
            raise TypeError(f"scan carry output {b.str_short()} does not match its input "
                            f"{a.str_short()}.")
    return [a.update(weak_type=a.weak_type and b.weak_type)
            for a, b in zip(carry_in, outs[:num_carry])] + \
        [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]]


impl_rules[scan_p] = _scan_impl
abstract_eval_rules[scan_p] = _scan_abstract
weak_type_rules[scan_p] = lambda *args, jaxpr, num_carry, num_consts, **params: [
    a.weak_type and getattr(x, "weak_type", False)
    for a, x in zip(jaxpr.out_avals[:num_carry], args[num_consts:num_consts + num_carry])] + [
    a.weak_type for a in jaxpr.out_avals[num_carry:]]


def _scan_params(jaxpr, length, num_carry, num_consts, reverse, unroll):
    # Keyword order is the printed order, alphabetical as JAX prints it.
    return dict(jaxpr=jaxpr, length=length, num_carry=num_carry, num_consts=num_consts,
                reverse=reverse, unroll=unroll)


def _scan_jvp(primals, tangents, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    nx = len(primals) - nc - ncar
    const_nz = [type(t) is not Zero for t in tangents[:nc]]
    xs_nz = [type(t) is not Zero for t in tangents[nc + ncar:]]
    # A carry has a tangent when its initial value has one or the body gives it one: a
    # fixpoint, as JAX's (a carry that stays a symbolic zero reaches custom rules as one).
    carry_nz = [type(t) is not Zero and _is_inexact(a)
                for t, a in zip(tangents[nc:nc + ncar], jaxpr.in_avals[nc:nc + ncar])]
    while True:
        jvp_body, out_nz = _jvp_closed(jaxpr, tuple(const_nz + carry_nz + xs_nz),
                                       carry_nz + [False] * (len(jaxpr.out_avals) - ncar))
        new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
        if new == carry_nz:
            break
        carry_nz = new
    n_in = nc + ncar + nx
    k_c, k_car, k_x = sum(const_nz), sum(carry_nz), sum(xs_nz)
    t0 = n_in
    order = (list(range(nc)) + list(range(t0, t0 + k_c))
             + list(range(nc, nc + ncar)) + list(range(t0 + k_c, t0 + k_c + k_car))
             + list(range(nc + ncar, n_in)) + list(range(t0 + k_c + k_car, t0 + k_c + k_car + k_x)))
    n_out = len(jaxpr.out_avals)
    k_ycar = sum(out_nz[:ncar])
    out_order = (list(range(ncar)) + list(range(n_out, n_out + k_ycar))
                 + list(range(ncar, n_out)) + list(range(n_out + k_ycar, n_out + sum(out_nz))))
    jvp_body = _permute(jvp_body, order, out_order)
    const_t = [t for t in tangents[:nc] if type(t) is not Zero]
    carry_t = [ad.instantiate(t) for t, nz in zip(tangents[nc:nc + ncar], carry_nz) if nz]
    xs_t = [t for t in tangents[nc + ncar:] if type(t) is not Zero]
    outs = scan_p.bind(*primals[:nc], *const_t, *primals[nc:nc + ncar], *carry_t,
                       *primals[nc + ncar:], *xs_t,
                       **_scan_params(jvp_body, length, ncar + k_ycar, nc + k_c, reverse, unroll))
    carry_p, carry_tans = outs[:ncar], iter(outs[ncar:ncar + k_ycar])
    rest = outs[ncar + k_ycar:]
    ny = n_out - ncar
    ys_p, ys_tans = rest[:ny], iter(rest[ny:])
    y_avals = _scan_abstract(*builtins.map(get_aval, primals), jaxpr=jaxpr, length=length,
                             num_carry=ncar, num_consts=nc, reverse=reverse, unroll=unroll)
    tans = [next(carry_tans) if nz else Zero(ad.tangent_aval(a))
            for a, nz in zip(y_avals[:ncar], out_nz[:ncar])]
    tans += [next(ys_tans) if nz else Zero(ad.tangent_aval(a))
             for a, nz in zip(y_avals[ncar:], out_nz[ncar:])]
    return carry_p + ys_p, tans


ad.jvp_rules[scan_p] = _scan_jvp


def _scan_batch(axis_size, vals, dims, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    cdims = list(dims[:nc])
    # The body sees one slice of xs: a batch axis at d > 0 is at d - 1 there; d == 0 moves
    # (after the carries, as JAX orders the moves).
    xdims = [not_mapped if d is not_mapped else builtins.max(d, 1) - 1
             for d in dims[nc + ncar:]]
    carry_b = [d is not not_mapped for d in dims[nc:nc + ncar]]
    n_out = len(jaxpr.out_avals)
    while True:
        body, out_dims = batching.batch_closed(
            jaxpr, axis_size, cdims + [0 if b else not_mapped for b in carry_b] + xdims,
            carry_b + [False] * (n_out - ncar))
        new = [b or d is not not_mapped for b, d in zip(carry_b, out_dims[:ncar])]
        if new == carry_b:
            break
        carry_b = new
    carry = [batching.move_to(v, d, 0, axis_size) if b else v
             for v, d, b in zip(vals[nc:nc + ncar], dims[nc:nc + ncar], carry_b)]
    xs = [batching.moveaxis(x, 0, 1) if d == 0 else x
          for x, d in zip(vals[nc + ncar:], dims[nc + ncar:])]
    outs = scan_p.bind(*vals[:nc], *carry, *xs,
                       **_scan_params(body, length, ncar, nc, reverse, unroll))
    y_dims = [not_mapped if d is not_mapped else 1 for d in out_dims[ncar:]]
    return outs, [0 if b else not_mapped for b in carry_b] + y_dims


batching.batch_rules[scan_p] = _scan_batch


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, ncar = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, reverse, unroll = params["length"], params["reverse"], params["unroll"]
    uk = [not pe.is_known(trace, x) for x in args]
    const_uk, carry_uk, xs_uk = uk[:nc], uk[nc:nc + ncar], uk[nc + ncar:]
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        # Loop-invariant residuals (known consts) are passed once, the others stacked.
        known, unknown, out_uk, inv_src, n_res = pe.partial_eval_closed(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * n_ys, range(nc))
        new = [a or b for a, b in zip(carry_uk, out_uk[:ncar])]
        if new == carry_uk:
            break
        carry_uk = new
    n_kc, n_kcar = nc - sum(const_uk), ncar - sum(carry_uk)
    known_args = [a for a, u in zip(args, const_uk + carry_uk + xs_uk) if not u]
    # A stacked output (a y or a residual) that is an xs slice itself is that xs, passed on
    # rather than stacked again, as JAX forwards it.
    known, fwd = _forward_xs_outputs(known, n_kc + n_kcar, n_kcar)
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*known_args, **_scan_params(
            known, length, n_kcar, n_kc, reverse, unroll))
    stacked_outs = iter(known_outs)
    known_outs = [next(stacked_outs) if f is None else known_args[f] for f in fwd]
    n_kys = len(known_outs) - n_kcar - n_res
    k_carry, k_ys = known_outs[:n_kcar], known_outs[n_kcar:n_kcar + n_kys]
    stacked = known_outs[n_kcar + n_kys:]
    # Unknown body inputs [invariant, stacked residuals, consts, carry, xs] in scan layout,
    # the stacked residuals after the xs, as JAX orders them.
    prog = unknown.program
    n_inv = len(inv_src)
    inv, res, rest = (prog.invars[:n_inv], prog.invars[n_inv:n_inv + n_res],
                      prog.invars[n_inv + n_res:])
    body = ClosedProgram(Program(prog.constvars, inv + rest + res, prog.eqns, prog.outvars),
                         unknown.consts)
    n_cu, n_caru = sum(const_uk), sum(carry_uk)
    unknown_args = ([args[i] for i in inv_src] + [a for a, u in zip(args[:nc], const_uk) if u]
                    + [a for a, u in zip(args[nc:nc + ncar], carry_uk) if u]
                    + [a for a, u in zip(args[nc + ncar:], xs_uk) if u] + list(stacked))
    staged = pe.StagingTrace.process_primitive(trace, scan_p, unknown_args, _scan_params(
        body, length, n_caru, n_inv + n_cu, reverse, unroll))
    kc, uc = iter(k_carry), iter(staged[:n_caru])
    carries = [next(uc) if u else next(kc) for u in carry_uk]
    ky, uy = iter(k_ys), iter(staged[n_caru:])
    return carries + [next(uy) if u else next(ky) for u in out_uk[ncar:]]


pe.partial_eval_rules[scan_p] = _scan_partial_eval


def _forward_xs_outputs(body, n_fixed, n_carry):
    """(`body` without the stacked outputs that are xs slices, for each output of `body` the
    index of the input it forwards, else None)."""
    prog = body.program
    xs_index = {v.id: n_fixed + k for k, v in enumerate(prog.invars[n_fixed:])}
    fwd = [xs_index.get(o.id) if j >= n_carry and type(o) is Var else None
           for j, o in enumerate(prog.outvars)]
    if all(f is None for f in fwd):
        return body, fwd
    outvars = [o for o, f in zip(prog.outvars, fwd) if f is None]
    return ClosedProgram(Program(prog.constvars, prog.invars, prog.eqns, outvars),
                         body.consts), fwd


def _scan_transpose(cts, *args, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = args[:nc], args[nc:nc + ncar], args[nc + ncar:]
    # The body is linear in every carry; a carry that starts from a known value (an
    # instantiated zero tangent) still gets a cotangent, which is then dropped.
    carry_lin = [ad.is_undefined(c) for c in carry]
    const_lin = [ad.is_undefined(c) for c in consts]
    xs_lin = [ad.is_undefined(x) for x in xs]
    known_consts = [c for c in consts if not ad.is_undefined(c)]
    known_xs = [x for x in xs if not ad.is_undefined(x)]
    cts = [ad.instantiate(c) for c in cts]
    ct_carry, ct_ys = cts[:ncar], cts[ncar:]
    lin_const_avals = [c.aval for c in consts if ad.is_undefined(c)]
    linear = const_lin + [True] * ncar + xs_lin
    n_kc, n_lc = len(known_consts), len(lin_const_avals)
    y_ct_avals = list(jaxpr.out_avals[ncar:])
    carry_ct_avals = list(jaxpr.out_avals[:ncar])
    kx_avals = [a for a, lin in zip(jaxpr.in_avals[nc + ncar:], xs_lin) if not lin]
    kc_avals = [a for a, lin in zip(jaxpr.in_avals[:nc], const_lin) if not lin]

    # Transposed body, in JAX's layout: consts (known), carry (const cotangent sums, carry
    # cotangents), xs (ys cotangents, known residual slices) -> (new sums, carry cts), xs
    # cotangents.
    def t_body(*a):
        kc, acc = a[:n_kc], a[n_kc:n_kc + n_lc]
        ct_c = a[n_kc + n_lc:n_kc + n_lc + ncar]
        rest = a[n_kc + n_lc + ncar:]
        ct_y, kx = rest[:len(y_ct_avals)], rest[len(y_ct_avals):]
        cts_in = _backward(jaxpr, linear, list(kc) + list(kx), list(ct_c) + list(ct_y))
        new_acc = [ad.add_tangents(s, c) for s, c in zip(acc, cts_in[:n_lc])]
        return new_acc + cts_in[n_lc:n_lc + ncar] + cts_in[n_lc + ncar:]

    t_closed = pe.trace_to_program(
        t_body, kc_avals + lin_const_avals + carry_ct_avals + y_ct_avals + kx_avals)
    init_acc = [_zeros(a) for a in lin_const_avals]
    outs = scan_p.bind(*known_consts, *init_acc, *ct_carry, *ct_ys, *known_xs, **_scan_params(
        t_closed, length, len(init_acc) + ncar, n_kc, not reverse, unroll))
    acc, ct_init = outs[:len(init_acc)], outs[len(init_acc):len(init_acc) + ncar]
    ct_xs = iter(outs[len(init_acc) + ncar:])
    it_acc = iter(acc)
    return ([next(it_acc) if lin else None for lin in const_lin]
            + [ct if lin else None for ct, lin in zip(ct_init, carry_lin)]
            + [next(ct_xs) if lin else None for lin in xs_lin])


ad.transpose_rules[scan_p] = _scan_transpose


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (a pytree), returning
    `(final carry, stacked ys)`. `length` is needed when `xs` is None; `reverse` runs from
    the end; `unroll` (a non-negative int or a bool) is checked and kept as a param."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    return _scan(f, init, xs, length, reverse, unroll)


def _scan(f, init, xs, length, reverse, unroll, traced_for="scan", src=None):
    carry_leaves, carry_tree = pytrees.tree_flatten(init)
    xs_leaves, xs_tree = pytrees.tree_flatten(xs)
    carry_avals, xs_avals = _avals(carry_leaves), _avals(xs_leaves)
    length = _scan_length(xs_leaves, length)
    x_avals = [a.update(shape=a.shape[1:]) for a in xs_avals]
    in_tree = pytrees.tree_structure((init, xs))
    check = f  # the carry's name comes from the loop body's signature (a wrapper's)

    def trace(carry_avals):
        closed, consts, out_tree = _trace_body(f, in_tree, carry_avals + x_avals, traced_for, src)
        if pytrees.treedef_is_leaf(out_tree) or len(out_tree.children()) != 2:
            got = pytrees.tree_unflatten(out_tree, closed.out_avals)
            raise TypeError(f"scan body output must be a pair, got {got}.")
        return closed, consts, out_tree

    closed, consts, out_tree = trace(carry_avals)
    carry_out_tree = out_tree.children()[0]
    n = len(carry_leaves)
    if carry_out_tree.num_leaves != n:
        _check_carry("scan body", check, carry_tree, carry_avals, carry_out_tree,
                     closed.out_avals[:carry_out_tree.num_leaves])
    carry_leaves, carry_avals, changed = _promote_weak_carries(
        carry_leaves, carry_avals, closed.out_avals[:n])
    if changed:
        closed, consts, out_tree = trace(carry_avals)
        carry_out_tree = out_tree.children()[0]
    _check_carry("scan body", check, carry_tree, carry_avals, carry_out_tree,
                 closed.out_avals[:n])
    label_carry(closed, check, carry_tree, carry_avals)
    if isinstance(unroll, bool):
        unroll = builtins.max(length, 1) if unroll else 1
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    outs = scan_p.bind(*consts, *builtins.map(_operand, carry_leaves),
                       *builtins.map(_operand, xs_leaves),
                       **_scan_params(closed, length, n, len(consts), bool(reverse), int(unroll)))
    # A carry the body passes through unchanged is the initial value itself, as in JAX.
    fwd = _forwarded(closed)
    outs = [carry_leaves[i] if i < n and fwd[i] == len(consts) + i else o
            for i, o in enumerate(outs)]
    return pytrees.tree_unflatten(out_tree, outs)


def _scan_length(xs_leaves, length) -> int:
    """The trip count: `length`, checked against the leading axes of `xs` (JAX's errors)."""
    if any(not hasattr(x, "shape") for x in xs_leaves):
        raise ValueError("scan got value with no leading axis to scan over: "
                         + ", ".join(str(x) for x in xs_leaves if not hasattr(x, "shape")) + ".")
    lengths = [_shape_of(x)[0] for x in xs_leaves]  # a 0-d array is an IndexError, as in JAX
    if length is not None:
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         + ", ".join(builtins.map(str, lengths)) + ".")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


# ================================================================ associative_scan


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix scan of the associative `fn` over `axis` of the pytree `elems`, in
    O(log n) parallel steps (Blelloch's odd/even recursion), as lax.associative_scan."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = pytrees.tree_flatten(elems)
    ndim = get_aval(leaves[0]).ndim  # no leaves: IndexError, as in JAX
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis = axis % ndim
    num = get_aval(leaves[0]).shape[axis]
    if any(get_aval(x).shape[axis] != num for x in leaves):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[get_aval(x).shape for x in leaves]})")
    if reverse:
        leaves = [shape_ops.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        # fn's output is only flattened: a wrong leaf count fails when it is next unflattened.
        return pytrees.tree_leaves(
            fn(pytrees.tree_unflatten(tree, a), pytrees.tree_unflatten(tree, b)))

    def take(x, start, stop, stride=1):
        return lax.slice_in_dim(x, start, stop, stride, axis)

    def run(elems):
        n = get_aval(elems[0]).shape[axis]
        if n < 2:
            return elems
        reduced = combine([take(e, 0, n - 1, 2) for e in elems], [take(e, 1, n, 2) for e in elems])
        odd = run(reduced)
        if n % 2 == 0:
            m = get_aval(odd[0]).shape[axis]
            even = combine([take(e, 0, m - 1) for e in odd], [take(e, 2, n, 2) for e in elems])
        else:
            even = combine(odd, [take(e, 2, n, 2) for e in elems])
        even = [lax.concatenate([take(e, 0, 1), r], axis) for e, r in zip(elems, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = run(leaves)
    if reverse:
        out = [shape_ops.rev(x, (axis,)) for x in out]
    return pytrees.tree_unflatten(tree, out)


def _interleave(a, b, axis):
    """[a0, b0, a1, b1, ...] along `axis` (len(a) is len(b) or len(b) + 1)."""
    na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
    ndim = get_aval(a).ndim
    zero = np.zeros((), get_aval(a).dtype)[()]

    def cfg(lo, hi):
        return tuple((lo, hi, 1) if d == axis else (0, 0, 0) for d in range(ndim))

    pa = lax.pad(a, zero, cfg(0, 1 if na == nb else 0))
    pb = lax.pad(b, zero, cfg(1, 0 if na == nb else 1))
    if get_aval(a).dtype == np.bool_:
        return lax.bitwise_or(pa, pb)
    return lax.add(pa, pb)


# ================================================================ scan pruning


def _prune_scan_body(jaxpr, nc, ncar, live):
    """Drop the outputs in `live` that are false, and the carries only they need.

    Returns (body, const_idx, carry_idx, xs_idx, y_idx): `body` takes the kept consts,
    carries and xs (in that order) and returns the kept carries and the live ys.
    """
    prog = jaxpr.program
    need = list(live)
    while True:  # a carry is needed while a needed output reads it
        pruned, used = pe.dce_program(prog, need)
        grown = [n or u for n, u in zip(need[:ncar], used[nc:nc + ncar])]
        if grown == need[:ncar]:
            break
        need[:ncar] = grown
    const_idx = tuple(i for i in range(nc) if used[i])
    carry_idx = tuple(i for i in range(ncar) if need[i])
    xs_idx = tuple(i for i in range(len(prog.invars) - nc - ncar) if used[nc + ncar + i])
    invars = ([prog.invars[i] for i in const_idx] + [prog.invars[nc + i] for i in carry_idx]
              + [prog.invars[nc + ncar + i] for i in xs_idx])
    y_idx = tuple(j for j in range(len(prog.outvars) - ncar) if need[ncar + j])
    body = Program(prog.constvars, invars, pruned.eqns, pruned.outvars)
    return ClosedProgram(body, jaxpr.consts), const_idx, carry_idx, xs_idx, y_idx


def _scan_dce(used, eqn):
    """The scan without the outputs nobody reads, the carries only they need, and the consts
    and xs left unread, as JAX's dce rule for scan."""
    p = eqn.params
    nc, ncar, ins = p["num_consts"], p["num_carry"], eqn.inputs
    body, const_idx, carry_idx, xs_idx, y_idx = _prune_scan_body(p["jaxpr"], nc, ncar, used)
    inputs = ([ins[i] for i in const_idx] + [ins[nc + i] for i in carry_idx]
              + [ins[nc + ncar + i] for i in xs_idx])
    outvars = [eqn.outvars[i] for i in carry_idx] + [eqn.outvars[ncar + j] for j in y_idx]
    params = _scan_params(body, p["length"], len(carry_idx), len(const_idx), p["reverse"],
                          p["unroll"])
    return eqn._replace(inputs=inputs, outvars=outvars, params=params)


pe.dce_rules[scan_p] = _scan_dce
