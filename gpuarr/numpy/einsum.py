"""einsum and einsum_path.

The subscripts are parsed into one index string per operand (ellipses expanded into
spare letters) and an output string. A contraction order comes from `opt_einsum` when it is
installed (as in JAX), else from a small greedy search. Each step contracts a pair of
operands with one `lax.dot_general` after taking diagonals of repeated indices and summing
indices no later step needs.
"""
from __future__ import annotations

import string

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import dot_products as lax_dot_products
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes, reject_out

try:
    import opt_einsum
except ImportError:  # the greedy fallback below chooses the order
    opt_einsum = None

# ---------------------------------------------------------------- parsing


def _spare_letters(used):
    pool = [c for c in string.ascii_letters if c not in used]
    pool += [chr(c) for c in range(192, 192 + 256) if chr(c) not in used]
    return pool


def _parse(subscripts: str, shapes):
    """(input index strings, output index string) with every ellipsis spelled out."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum subscripts must be a string, got {type(subscripts).__name__}. "
                        "The interleaved operand/sublist form is not supported.")
    subscripts = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise ValueError("einstein sum subscript string must contain at most one '->'")
    lhs, explicit, out = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"Number of einsum subscripts, {len(terms)}, must be equal to the number "
                         f"of operands, {len(shapes)}.")
    for c in lhs.replace(",", "").replace("...", "") + out.replace("...", ""):
        if c not in string.ascii_letters:
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, "
                             "subscripts must be letters")
    spare = _spare_letters(set(subscripts))
    n_ell = max((len(s) - len(t) + 3 for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(spare[:n_ell])
    inputs = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        if "..." in term:
            k = len(shape) - (len(term) - 3)
            if k < 0:
                raise ValueError(f"Einstein sum subscript '{term}' does not contain the correct "
                                 f"number of indices for operand {i}.")
            term = term.replace("...", ell[n_ell - k:])
        if len(term) != len(shape):
            raise ValueError(f"Einstein sum subscript '{term}' does not contain the correct number "
                             f"of indices for operand {i}.")
        inputs.append(term)
    if explicit:
        out = out.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einstein sum subscripts string includes output subscript "
                                 f"'{c}' multiple times")
            if not any(c in t for t in inputs):
                raise ValueError(f"Output character '{c}' did not appear in the input")
    else:
        named = "".join(inputs)
        out = ell + "".join(sorted(c for c in set(named) if named.count(c) == 1 and c not in ell))
    return inputs, out


def _sizes(inputs, shapes):
    """Each index's size; size-1 dimensions broadcast against the others."""
    sizes = {}
    for i, (term, shape) in enumerate(zip(inputs, shapes)):
        for c, d in zip(term, shape):
            prev = sizes.get(c, 1)
            if d != 1 and prev != 1 and d != prev:
                raise ValueError(f"Size of label '{c}' for operand {i} ({d}) does not match "
                                 f"previous terms ({prev}).")
            sizes[c] = max(prev, d) if d != 1 else prev
    return sizes


# ---------------------------------------------------------------- contraction order


def _greedy_path(inputs, out, sizes):
    """Contract, at each step, the pair whose result is smallest (ties: leftmost)."""
    terms = [set(t) for t in inputs]
    path = []
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                others = set(out).union(*[t for k, t in enumerate(terms) if k not in (i, j)])
                kept = (terms[i] | terms[j]) & others
                cost = int(np.prod([sizes[c] for c in kept], dtype=np.int64))
                if best is None or cost < best[0]:
                    best = (cost, i, j, kept)
        _, i, j, kept = best
        path.append((i, j))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [kept]
    return path or [(0,)]


def _contraction_path(inputs, out, shapes, sizes, optimize):
    if isinstance(optimize, (list, tuple)):
        path = [tuple(p) for p in optimize if p != "einsum_path"]
        return path or [(0,)]
    n = len(inputs)
    if optimize is False or optimize is None or n < 3:
        return [(0, 1)] * (n - 1) or [(0,)]
    if opt_einsum is None:
        return _greedy_path(inputs, out, sizes)
    strategy = "optimal" if optimize is True else optimize
    eq = ",".join(inputs) + "->" + out
    path, _ = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize=strategy)
    return [tuple(p) for p in path]


# ---------------------------------------------------------------- single-operand steps


def _squeeze_broadcast(x, term, sizes):
    """Drop size-1 dimensions whose index is larger elsewhere (they broadcast)."""
    shape = get_aval(x).shape
    drop = tuple(i for i, (c, d) in enumerate(zip(term, shape)) if d == 1 and sizes[c] != 1)
    if not drop:
        return x, term
    return lax_shape_ops.squeeze(x, drop), "".join(c for i, c in enumerate(term) if i not in drop)


def _take_diagonals(x, term):
    """Repeated indices in one term select the diagonal over those axes."""
    while len(set(term)) < len(term):
        c = next(c for c in term if term.count(c) > 1)
        p = term.index(c)
        q = term.index(c, p + 1)
        shape = get_aval(x).shape
        rows = np.arange(shape[p]).reshape([-1 if k == p else 1 for k in range(len(shape))])
        cols = np.arange(shape[q]).reshape([-1 if k == q else 1 for k in range(len(shape))])
        mask = np.broadcast_to(rows == cols, shape)
        x = lax_shape_ops.reduce_sum(lax.select_n(mask, lax_shape_ops.full_like(x, 0), x), (q,))
        term = term[:q] + term[q + 1:]
    return x, term


def _sum_unused(x, term, keep):
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return lax_shape_ops.reduce_sum(x, axes), "".join(c for c in term if c in keep)


# ---------------------------------------------------------------- pairwise contraction


def _contract_pair(x, xt, y, yt, keep, precision, preferred_element_type, dot_general):
    x, xt = _sum_unused(x, xt, keep | set(yt))
    y, yt = _sum_unused(y, yt, keep | set(xt))
    shared = [c for c in xt if c in yt]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    dims = ((tuple(xt.index(c) for c in contract), tuple(yt.index(c) for c in contract)),
            (tuple(xt.index(c) for c in batch), tuple(yt.index(c) for c in batch)))
    # Called as JAX calls its `_dot_general` (precision by position), for user callables.
    out = dot_general(x, y, dims, precision, preferred_element_type=preferred_element_type)
    term = "".join(batch) + "".join(c for c in xt if c not in shared) \
        + "".join(c for c in yt if c not in shared)
    return out, term


def _einsum(operands, inputs, out, path, precision, preferred_element_type, dot_general):
    sizes = _sizes(inputs, [get_aval(x).shape for x in operands])
    ops = []
    for x, term in zip(operands, inputs):
        x, term = _squeeze_broadcast(x, term, sizes)
        ops.append(_take_diagonals(x, term))
    for step in path:
        picked = [ops[i] for i in step]
        ops = [o for k, o in enumerate(ops) if k not in step]
        keep = set(out).union(*[set(t) for _, t in ops])
        x, xt = picked[0]
        if len(picked) == 1:
            x, xt = _sum_unused(x, xt, keep)
        for y, yt in picked[1:]:
            rest = keep.union(*[set(t) for _, t in picked[2:]])
            x, xt = _contract_pair(x, xt, y, yt, rest, precision, preferred_element_type,
                                   dot_general)
        ops.append((x, xt))
    if len(ops) != 1:
        raise ValueError(f"einsum: the contraction path {path} leaves {len(ops)} operands; it must "
                         "contract all of them into one.")
    x, xt = _sum_unused(*ops[0], set(out))
    missing = [c for c in out if c not in xt]
    if missing:  # an output index present only as a broadcast size-1 dimension
        x = lax_shape_ops.reshape(x, get_aval(x).shape + (1,) * len(missing))
        xt += "".join(missing)
    return lax_shape_ops.transpose(x, tuple(xt.index(c) for c in out))


# ---------------------------------------------------------------- public API


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=lax_dot_products.dot_general, out_sharding=None):
    """Einstein summation, as numpy.einsum: `subscripts` names each operand's axes ('...'
    for broadcast axes); indices missing from the output are summed. `optimize` is 'auto',
    True, False, an opt_einsum strategy name, or an explicit path such as [(0, 1), (0, 1)].
    Each pairwise contraction calls `_dot_general` (lax.dot_general's signature), as JAX's."""
    lax_arguments.check_no_sharding("numpy.einsum", out_sharding)
    reject_out("einsum", out)
    if not operands:
        raise ValueError("einsum requires at least one operand after the subscripts.")
    check_arraylike("einsum", *operands)
    operands = promote_dtypes(*[ensure_array(x) for x in operands])
    shapes = [get_aval(x).shape for x in operands]
    inputs, out_term = _parse(subscripts, shapes)
    sizes = _sizes(inputs, shapes)
    path = _contraction_path(inputs, out_term, shapes, sizes, optimize)
    # The promoted operand type unless one is given, named in each dot_general as JAX does.
    pet = get_aval(operands[0]).dtype if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    result = _einsum(list(operands), inputs, out_term, path, precision, pet, _dot_general)
    if pet is not None and get_aval(result).dtype != pet:
        result = lax_conversions.convert_element_type(result, pet)
    return result


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order einsum would use: (path, description). With opt_einsum
    installed the description is its PathInfo, as in JAX."""
    shapes = [np.shape(x) if not hasattr(x, "aval") else get_aval(x).shape for x in operands]
    if opt_einsum is not None:
        strategy = ("optimal" if optimize else [(0, 1)] * (len(operands) - 1)) \
            if isinstance(optimize, bool) else optimize
        return opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=strategy)
    inputs, out_term = _parse(subscripts, shapes)
    sizes = _sizes(inputs, shapes)
    path = _contraction_path(inputs, out_term, shapes, sizes,
                             True if optimize in ("greedy", "auto") else optimize)
    info = (f"  Complete contraction:  {','.join(inputs)}->{out_term}\n"
            f"  Contraction path: {path}")
    return path, info
