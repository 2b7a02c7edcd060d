"""Functional helpers: vectorize (with gufunc signatures), apply_along_axis, apply_over_axes,
piecewise."""
from __future__ import annotations

import functools

from gpuarr.core import get_aval
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, manipulation, reductions
from gpuarr.numpy.arguments import (
    canonicalize_axis,
    check_arraylike,
    check_core_dims,
    ensure_array,
    update_core_sizes,
)


def _parse_signature(signature: str):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    import re
    arg = r"\((?:\w+(?:,\w+)*)?\)"
    spec = signature.replace(" ", "")
    if not re.fullmatch(f"{arg}(?:,{arg})*->{arg}(?:,{arg})*", spec):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = spec.split("->")
    parse = lambda side: [tuple(re.findall(r"\w+", group))  # noqa: E731
                          for group in re.findall(r"\(([^)]*)\)", side)]
    return parse(ins), parse(outs)


def _apply_excluded(pyfunc, excluded, args, kwargs):
    """`pyfunc` with the excluded positional and keyword arguments bound, and the others."""
    if not excluded:
        return pyfunc, list(args), kwargs
    static = {i: a for i, a in enumerate(args) if i in excluded}
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}

    def bound(*dyn, **kw):
        it = iter(dyn)
        full = [static[i] if i in static else next(it) for i in range(len(dyn) + len(static))]
        return pyfunc(*full, **kw, **static_kw)
    return (bound, [a for i, a in enumerate(args) if i not in excluded],
            {k: v for k, v in kwargs.items() if k not in excluded})


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """`pyfunc` mapped with vmap over the leading (loop) dimensions of its arguments, which
    broadcast against each other (jnp.vectorize). Without `signature` it is called on scalars;
    with a gufunc signature such as '(m,n),(n)->(m)' on the trailing core dimensions, whose
    sizes must agree, and its outputs must have the core shapes the signature names.
    Positional indices and keyword names in `excluded` are passed through unmapped."""
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    core_in, core_out = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        from gpuarr.vmap_api import vmap
        fn, dyn, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
        if not dyn:
            return fn(**kwargs)
        dims = core_in if core_in is not None else [()] * len(dyn)
        if len(dims) != len(dyn):
            raise TypeError(f"wrong number of positional arguments: expected {len(dims)}, "
                            f"got {len(dyn)}")
        dyn = [ensure_array(a) for a in dyn]
        shapes = [get_aval(a).shape for a in dyn]
        sizes, loop = check_core_dims(signature, dims, shapes, excluded)
        dyn = [manipulation.broadcast_to(a, loop + shape[len(shape) - len(d):])
               for a, d, shape in zip(dyn, dims, shapes)]

        def call(*xs):
            out = fn(*xs, **kwargs)
            if core_out is not None:
                _check_outputs(out, core_out, dict(sizes), signature)
            return out

        f = call
        for _ in loop:
            f = vmap(f)
        return f(*dyn)

    return wrapped


def _check_outputs(out, core_out, sizes, signature):
    """The outputs of a vectorized call have the core shapes of the signature."""
    outs = out if len(core_out) > 1 else (out,)
    if len(core_out) > 1 and (not isinstance(out, tuple) or len(out) != len(core_out)):
        raise TypeError(f"output must be a tuple of {len(core_out)} arrays for "
                        f"signature={signature!r}, got {type(out).__name__}")
    context = f"on vectorized function with signature={signature!r}"
    for o, dims in zip(outs, core_out):
        shape = get_aval(o).shape
        if len(shape) != len(dims):
            raise ValueError(f"output shape {shape} does not match core dimensions {dims} {context}")
        update_core_sizes(sizes, dims, shape, context)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to the 1-D slices of `arr` along `axis` (vmapped over the others)."""
    from gpuarr.vmap_api import vmap
    arr = ensure_array(arr)
    nd = get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd)
    f = lambda x: func1d(x, *args, **kwargs)
    for _ in range(1, nd - axis):
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return f(arr)


def apply_over_axes(func, a, axes):
    """func(a, axis) applied repeatedly over `axes`, keeping dimensions."""
    a = ensure_array(a)
    for axis in axes:
        b = func(a, axis)
        if get_aval(b).ndim == get_aval(a).ndim - 1:
            b = manipulation.expand_dims(b, axis)
        a = b
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    """Values of funclist[i](x) where condlist[i] holds (an extra function is the default)."""
    check_arraylike("piecewise", x)
    x = ensure_array(x)
    nc, nf = len(condlist), len(funclist)
    # Slot 0 is the default (zero unless an extra function is given), as in JAX.
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = creation.asarray(condlist, dtype=bool)
    # The last true condition wins: the first position where the running count peaks.
    from gpuarr.numpy import selection
    counts = selection.cumsum(manipulation.concatenate([lax_shape_ops.full_like(conds[:1], False), conds]),
                              axis=0)
    indices = reductions.argmax(counts, axis=0)
    dt = get_aval(x).dtype

    def branch(f):
        if callable(f):
            return lambda v: lax_conversions.convert_element_type(ensure_array(f(v, *args, **kw)), dt)
        return lambda v: creation.array(f, dtype=dt)

    # A vectorized switch, so that branches whose outputs disagree fail as JAX's do.
    return vectorize(lax_control_flow.switch, excluded=(1,))(indices, [branch(f) for f in funclist], x)
