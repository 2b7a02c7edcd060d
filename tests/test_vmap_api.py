"""vmap: the API (in_axes/out_axes/axis_size/kwargs, errors) and a batching rule check for
every primitive, against a Python loop that stacks per-example results.

`PRIMITIVE_TABLE` maps each primitive name to a function that binds it and generators of
one example's arguments. Each case runs under random in_axes/out_axes (eagerly and under
jit); `test_every_primitive_is_covered` fails when a registered primitive has no batching
rule or no table entry.
"""
import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp

# ad_checkpoint, custom_derivatives and prng register primitives when imported.
from gpuarr import ad_checkpoint, callbacks, core, custom_derivatives, debug, lax, prng  # noqa: F401
from gpuarr.interpreters import ad, batching
from gpuarr.lax import linalg, windowed

B = 3  # batch size of every case


# ---------------------------------------------------------------- argument generators


def f32(*shape, lo=-2.0, hi=2.0):
    return lambda rng: rng.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, lo=-5, hi=6):
    return lambda rng: rng.integers(lo, hi, shape).astype(np.int32)


def u32(*shape):
    return lambda rng: rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)


def boolean(*shape):
    return lambda rng: rng.uniform(size=shape) > 0.5


def spd(n):
    def gen(rng):
        a = rng.normal(size=(n, n))
        return (a @ a.T + n * np.eye(n)).astype(np.float32)
    return gen


def lower_tri(n):
    def gen(rng):
        return (np.tril(rng.normal(size=(n, n))) + 3 * np.eye(n)).astype(np.float32)
    return gen


def _custom_jvp_fn():
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.cos(primals[0]) * tangents[0]))
    return f


def _custom_vjp_fn():
    @jax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (res[1] * g, res[0] * g))
    return f


def _custom_vmap_fn():
    @jax.custom_batching.custom_vmap
    def f(x, y):
        return jnp.sin(x) * y, jnp.sum(x)

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        x_b, y_b = in_batched
        total = jnp.sum(x, axis=(1, 2)) if x_b else jnp.sum(x)
        return (jnp.sin(x) * (y[:, None, :] if y_b else y), total), (True, x_b)

    return f


def _unary(name, lo=-2.0, hi=2.0):
    return (getattr(lax, name), [f32(2, 3, lo=lo, hi=hi)])


def _binary(fn, gen=None):
    gen = gen or f32(2, 3)
    return (fn, [gen, gen])


_DN = (((1,), (0,)), ((), ()))
_GATHER_IDX = i32(2, lo=0, hi=4)

PRIMITIVE_TABLE = {
    # elementwise unary
    **{n: _unary(n) for n in ("neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2",
                              "expm1", "tanh", "logistic", "sin", "cos", "tan", "atan",
                              "sinh", "cosh", "asinh", "cbrt", "square", "abs", "erf", "erfc",
                              "stop_gradient")},
    "round": (lambda x: lax.round(x, 1), [f32(2, 3)]),
    **{n: _unary(n, 0.1, 3.0) for n in ("log", "log1p", "sqrt", "rsqrt", "lgamma", "digamma")},
    **{n: _unary(n, -0.9, 0.9) for n in ("asin", "acos", "atanh", "erf_inv")},
    "erf_inv_giles": (jax.random.xla_math.erf_inv_giles, [f32(2, 3, lo=-0.9, hi=0.9)]),
    "xla_log": (jax.random.xla_math.xla_log, [f32(2, 3, lo=0.1, hi=3.0)]),
    "xla_log1p": (jax.random.xla_math.xla_log1p, [f32(2, 3, lo=-0.9, hi=3.0)]),
    "xla_rsqrt": (jax.random.xla_math.xla_rsqrt, [f32(2, 3, lo=0.1, hi=3.0)]),
    "xla_fma": (jax.random.xla_math.xla_fma, [f32(2, 3), f32(2, 3), f32(2, 3)]),
    "acosh": _unary("acosh", 1.1, 3.0),
    "not": (lax.bitwise_not, [i32(2, 3)]),
    "clz": (lax.clz, [i32(2, 3)]),
    "population_count": (lax.population_count, [i32(2, 3)]),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), [f32(2, 3)]),
    "polygamma": (lambda x: lax.polygamma(np.float32(1), x), [f32(2, 3, lo=0.5, hi=3.0)]),
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.int32), [f32(2, 3)]),
    "bitcast_convert_type": (lambda x: lax.bitcast_convert_type(x, np.int32), [f32(2, 3)]),
    # elementwise binary / n-ary
    **{n: _binary(getattr(lax, n)) for n in ("add", "sub", "mul", "max", "min", "atan2",
                                             "nextafter", "eq", "ne", "lt", "le", "gt", "ge")},
    "div": _binary(lax.div, f32(2, 3, lo=0.5, hi=2.0)),
    "rem": _binary(lax.rem, f32(2, 3, lo=0.5, hi=2.0)),
    "pow": _binary(lax.pow, f32(2, 3, lo=0.5, hi=2.0)),
    "and": _binary(lax.bitwise_and, i32(2, 3)),
    "or": _binary(lax.bitwise_or, i32(2, 3)),
    "xor": _binary(lax.bitwise_xor, i32(2, 3)),
    "shift_left": _binary(lax.shift_left, i32(2, 3, lo=0, hi=8)),
    "shift_right_arithmetic": _binary(lax.shift_right_arithmetic, i32(2, 3, lo=-8, hi=8)),
    "shift_right_logical": _binary(lax.shift_right_logical, i32(2, 3, lo=0, hi=8)),
    "add_any": (lambda x, y: ad.add_any_p.bind(x, y), [f32(2, 3), f32(2, 3)]),
    "select_n": (lambda p, x, y: lax.select_n(p, x, y), [boolean(2, 3), f32(2, 3), f32(2, 3)]),
    "clamp": (lax.clamp, [f32(2, 3, lo=-2, hi=-1), f32(2, 3), f32(2, 3, lo=1, hi=2)]),
    # shapes
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)), [f32(2, 3)]),
    "reshape": (lambda x: lax.reshape(x, (3, 2), (1, 0)), [f32(2, 3)]),
    "squeeze": (lambda x: lax.squeeze(x, (0, 2)), [f32(1, 3, 1)]),
    "transpose": (lambda x: lax.transpose(x, (2, 0, 1)), [f32(2, 3, 4)]),
    "rev": (lambda x: lax.rev(x, (1,)), [f32(2, 3)]),
    "slice": (lambda x: lax.slice(x, (0, 1), (2, 4), (1, 2)), [f32(2, 4)]),
    "pad": (lambda x: lax.pad(x, np.float32(0), ((1, 0, 1), (0, 2, 0))), [f32(2, 3)]),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 1), [f32(2, 3), f32(2, 2)]),
    "split": (lambda x: lax.split(x, (1, 0, 3), 1), [f32(2, 4)]),
    "copy": (lambda x: lax.copy_p.bind(x), [f32(2, 3)]),
    "stack": (lambda x, y: lax.stack([x, y], 1), [f32(2, 3), f32(2, 3)]),
    "unstack": (lambda x: lax.unstack(x, 1), [f32(2, 3)]),
    # reductions
    **{n: (lambda x, n=n: getattr(lax, n)(x, (1,)), [f32(2, 3, 4)])
       for n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")},
    "reduce_and": (lambda x: lax.reduce_and(x, (0,)), [boolean(2, 3)]),
    "reduce_or": (lambda x: lax.reduce_or(x, (0,)), [boolean(2, 3)]),
    "argmax": (lambda x: lax.argmax(x, 1, np.int32), [f32(2, 3)]),
    "argmin": (lambda x: lax.argmin(x, 0, np.int32), [f32(2, 3)]),
    "cumsum": (lambda x: lax.cumsum(x, 1), [f32(2, 4)]),
    "cumprod": (lambda x: lax.cumprod(x, 0, reverse=True), [f32(3, 2)]),
    "cummax": (lambda x: lax.cummax(x, 1), [f32(2, 4)]),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 1), [f32(2, 4)]),
    "cummin": (lambda x: lax.cummin(x, 0), [f32(3, 2)]),
    # contractions
    "dot_general": (lambda x, y: lax.dot_general(x, y, _DN), [f32(2, 3), f32(3, 4)]),
    # indexing
    "gather": (lambda x, i: jnp.asarray(x)[i], [f32(4, 3), _GATHER_IDX]),
    "scatter": (lambda x, i, u: jnp.asarray(x).at[i].set(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_add": (lambda x, i, u: jnp.asarray(x).at[i].add(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_sub": (lambda x, i, u: jnp.asarray(x).at[i].subtract(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_mul": (lambda x, i, u: jnp.asarray(x).at[i].multiply(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_min": (lambda x, i, u: jnp.asarray(x).at[i].min(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_max": (lambda x, i, u: jnp.asarray(x).at[i].max(u), [f32(4, 3), _GATHER_IDX, f32(2, 3)]),
    "scatter_apply": (lambda x, i: jnp.asarray(x).at[i].apply(jnp.sin), [f32(4, 3), _GATHER_IDX]),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, np.int32(1)), (2, 2)),
                      [f32(4, 3), i32(lo=-1, hi=5)]),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, np.int32(0))),
                             [f32(4, 3), f32(2, 3), i32(lo=-1, hi=5)]),
    # sorting
    "sort": (lambda x: lax.sort(x, 1), [f32(2, 5)]),
    "top_k": (lambda x: lax.top_k(x, 2), [f32(2, 5)]),
    # linear algebra
    "cholesky": (linalg.cholesky, [spd(3)]),
    "triangular_solve": (lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
                         [lower_tri(3), f32(3, 2)]),
    "lu": (linalg.lu, [spd(3)]),
    "qr": (linalg.qr, [f32(3, 3)]),
    "svd": (lambda x: linalg.svd(x, compute_uv=False), [f32(3, 2)]),
    "eigh": (lambda x: linalg.eigh(x)[1], [spd(3)]),
    "eig": (linalg.eig, [f32(3, 3)]),
    "tridiagonal_solve": (linalg.tridiagonal_solve,
                          [f32(4), f32(4, lo=3.0, hi=5.0), f32(4), f32(4, 2)]),
    "lu_pivots_to_permutation": (lambda p: linalg.lu_pivots_to_permutation(p, 5),
                                 [i32(3, lo=0, hi=5)]),
    "householder_product": (linalg.householder_product, [f32(4, 3), f32(2)]),
    "hessenberg": (linalg.hessenberg, [f32(4, 4)]),
    "schur": (linalg.schur, [f32(4, 4)]),
    "approx_top_k": (lambda x: lax.approx_max_k(x, 2), [f32(2, 5)]),
    "mulhi": (lax.mulhi, [i32(2, 3), i32(2, 3)]),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 4), [f32(2, 3)]),
    "geqrf": (linalg._geqrf, [f32(4, 3)]),
    "geqp3": (linalg._geqp3, [f32(4, 3), i32(3, lo=0, hi=1)]),
    "ormqr": (lambda a, t, c: linalg.ormqr(a, t, c, transpose=True), [f32(4, 3), f32(3), f32(4, 2)]),
    # control flow and calls
    "cond": (lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), [boolean(), f32(2)]),
    "while": (lambda x: lax.while_loop(lambda c: c[0] < 20.0, lambda c: (c[0] * 2.0 + 1.0,
                                                                          c[1] + 1), (x, 0)),
              [f32(lo=0.0, hi=10.0)]),
    "scan": (lambda c, xs: lax.scan(lambda c, x: (c * 0.5 + x, c * x), c, xs),
             [f32(2), f32(4, 2)]),
    "jit": (jax.jit(lambda x, y: jnp.sin(x) * y), [f32(2, 3), f32(3)]),
    "custom_jvp_call": (lambda x: _custom_jvp_fn()(x), [f32(2, 3)]),
    "custom_vjp_call": (lambda x, y: _custom_vjp_fn()(x, y), [f32(2, 3), f32(2, 3)]),
    "custom_vmap_call": (lambda x, y: _custom_vmap_fn()(x, y), [f32(2, 3), f32(3)]),
    "remat2": (jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), [f32(2, 3)]),
    "custom_linear_solve": (lambda a, b: lax.custom_linear_solve(
        lambda v: a @ v, b, lambda mv, r: jnp.linalg.solve(a, r),
        lambda vm, r: jnp.linalg.solve(a.T, r)), [spd(3), f32(3)]),
    # windows
    "conv_general_dilated": (lambda x, k: windowed.conv_general_dilated(x, k, (1, 2), "SAME"),
                             [f32(1, 2, 5, 5), f32(3, 2, 3, 3)]),
    **{f"reduce_window_{kind}": (lambda x, op=op: windowed.reduce_window(
        x, np.float32(init), op, (2, 2), (1, 2), "VALID"), [f32(3, 5)])
       for kind, op, init in (("sum", lax.add, 0), ("max", lax.max, -np.inf),
                              ("min", lax.min, np.inf))},
    # host callbacks
    "pure_callback": (lambda x: callbacks.pure_callback(
        np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"),
        [f32(2, 3)]),
    "io_callback": (lambda x: callbacks.io_callback(
        np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x), [f32(2, 3)]),
    "debug_callback": (lambda x: (debug.callback(lambda v: None, x), x * 2.0)[1], [f32(2, 3)]),
    # random bits
    "threefry2x32": (prng.threefry2x32, [u32(3), u32(3), u32(3), u32(3)]),
}


def _fft_kinds(x):
    """All four fft kinds over trailing axes: rfft -> fft -> ifft -> irfft."""
    z = lax.fft(lax.fft(lax.fft(x, "rfft", (3, 4)), "fft", (3,)), "ifft", (3, 3))
    return z, lax.fft(z, "irfft", (3, 4))


PRIMITIVE_TABLE["fft"] = (_fft_kinds, [f32(2, 3, 4)])


def _constrained(x):
    """with_sharding_constraint's primitive bound directly (on one device the public function
    leaves it out; tests/test_scale_out.py checks vmap of it on several)."""
    from gpuarr.sharding.data_parallel import sharding_constraint_p
    mesh = jax.make_mesh((1,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, "i"))
    return sharding_constraint_p.bind(jnp.sin(x), sharding=sharding, retype=False)


PRIMITIVE_TABLE["sharding_constraint"] = (_constrained, [f32(2, 3)])

# Special functions, complex numbers, reduce_xor and optimization_barrier (gpuarr.lax.extras,
# gpuarr.lax.special_extra).
_POS = f32(2, 3, lo=0.5, hi=3.0)
PRIMITIVE_TABLE.update({
    "tridiagonal": (lambda a: lax.linalg.tridiagonal(a + jnp.swapaxes(a, -1, -2))[1:],
                    [f32(4, 4)]),
    "symmetric_product": (lambda a, c: lax.linalg.symmetric_product(a, c, alpha=2., beta=.5),
                          [f32(3, 2), f32(3, 3)]),
    "ragged_dot_general": (lambda x, y: lax.ragged_dot(x, y, np.array([1, 1], np.int32)),
                           [f32(2, 3), f32(2, 3, 4)]),
    "bessel_i0e": _unary("bessel_i0e"),
    "bessel_i1e": _unary("bessel_i1e"),
    "igamma": _binary(lax.igamma, _POS),
    "igammac": _binary(lax.igammac, _POS),
    "igamma_grad_a": _binary(lax.igamma_grad_a, _POS),
    "zeta": (lax.zeta, [f32(2, 3, lo=1.5, hi=4.0), _POS]),
    "regularized_incomplete_beta": (lax.betainc, [_POS, _POS, f32(2, 3, lo=0.1, hi=0.9)]),
    "complex": _binary(lax.complex),
    "conj": _unary("conj"),
    "real": (lambda x, y: lax.real(lax.complex(x, y)), [f32(2, 3), f32(2, 3)]),
    "imag": (lambda x, y: lax.imag(lax.complex(x, y)), [f32(2, 3), f32(2, 3)]),
    "reduce_xor": (lambda x: lax.reduce_xor(x, (1,)), [i32(2, 3)]),
    "optimization_barrier": (lambda x, y: lax.optimization_barrier((x, y)), [f32(2, 3), f32(3)]),
})

# Entries whose primitive is broken outside batching (reported to its owner). Their cases
# xfail while they raise, and fail once they work so the entry is removed from here.
KNOWN_BROKEN: dict[str, str] = {}

# Registered primitives that need no entry (and may have no batching rule), and why.
ALLOWLIST = {
    # Take no array operands, so no argument can ever be batched.
    "iota", "empty2",
    # Internal to linearize of custom_vjp: it only appears in linear programs, which are
    # transposed, never batched.
    "custom_lin",
    # Collectives act on a vmap's named axis: tests/lax/test_parallel.py and
    # tests/lax/test_parallel_jax_parity.py cover them.
    "psum", "pmax", "pmin", "axis_index", "all_gather", "reduce_scatter", "all_to_all",
    "ppermute", "pbroadcast",
    # check_vma's pvary exists only inside a shard_map body, where the named axis is the
    # mesh's: tests/test_sharding.py and tests/test_scale_out.py compare it with JAX.
    "pvary",
    # Batched as XLA does, not per example (only the first key draws; a fresh stateful draw per
    # call; the platform is not an operand): tests/lax/test_jax_parity.py compares with JAX.
    "rng_bit_generator", "rng_uniform", "platform_index",
    # composite has no batching rule, as in JAX; dce_sink has no result to compare
    # (tests/lax/test_composite.py covers both).
    "composite", "dce_sink",
    # No batching rule, as in JAX: tests/lax/test_linalg.py checks vmap's error.
    "cholesky_update",
    # checkify's assertion: its batching rule is checked against JAX's messages (vmap of
    # checkify) in tests/experimental/test_checkify.py.
    "check",
    # shard_map over several devices runs per device; vmap of it raises, as
    # tests/test_scale_out.py checks for grad (vmap belongs inside the shard_map).
    "shard_map",
}


# ---------------------------------------------------------------- the harness


def _stack_at(xs, axis):
    return np.stack([np.asarray(x) for x in xs], axis=axis)


def _random_axes(rng, examples):
    """One in_axes entry per argument (None or an axis, possibly negative), one mapped."""
    n = len(examples[0])
    while True:
        axes = []
        for k in range(n):
            nd = np.ndim(examples[0][k])
            if rng.uniform() < 0.3:
                axes.append(None)
                continue
            ax = int(rng.integers(0, nd + 1))
            axes.append(ax - (nd + 1) if rng.uniform() < 0.3 else ax)
        if any(a is not None for a in axes):
            return axes


def _batched_args(examples, axes):
    args = []
    for k, ax in enumerate(axes):
        if ax is None:
            args.append(examples[0][k])
        else:
            args.append(_stack_at([ex[k] for ex in examples], ax))
    return args


def check_batched(fn, gens, rng, use_jit=False):
    examples = [[g(rng) for g in gens] for _ in range(B)]
    axes = _random_axes(rng, examples)
    for k, ax in enumerate(axes):  # unmapped arguments are shared by every example
        if ax is None:
            for ex in examples:
                ex[k] = examples[0][k]
    refs = [fn(*ex) for ex in examples]
    ref_leaves = [jax.tree_util.tree_leaves(r) for r in refs]
    min_nd = min(np.ndim(x) for x in ref_leaves[0])
    out_axis = int(rng.integers(-(min_nd + 1), min_nd + 1))
    mapped = jax.vmap(fn, in_axes=tuple(axes), out_axes=out_axis)
    args = _batched_args(examples, axes)
    if use_jit:
        staged = jax.make_jaxpr(mapped)(*args)
        core.typecheck_program(staged.program if isinstance(staged, core.ClosedProgram)
                               else staged)
        mapped = jax.jit(mapped)
    out = mapped(*args)
    out_leaves = jax.tree_util.tree_leaves(out)
    assert len(out_leaves) == len(ref_leaves[0])
    for i, o in enumerate(out_leaves):
        ref = _stack_at([leaves[i] for leaves in ref_leaves], out_axis)
        o = np.asarray(o)
        assert o.shape == ref.shape, (axes, out_axis)
        assert o.dtype == ref.dtype, (axes, out_axis)
        if o.dtype.kind in "fc":
            np.testing.assert_allclose(o, ref, rtol=2e-5, atol=2e-5, err_msg=str((axes, out_axis)))
        else:
            np.testing.assert_array_equal(o, ref, err_msg=str((axes, out_axis)))


@pytest.mark.parametrize("name", sorted(PRIMITIVE_TABLE))
def test_primitive_batching_matches_loop(name):
    fn, gens = PRIMITIVE_TABLE[name]
    rng = np.random.default_rng(sum(map(ord, name)))

    def run():
        for _ in range(3):
            check_batched(fn, gens, rng)
        check_batched(fn, gens, rng, use_jit=True)

    _run_or_xfail(name, run)


def _run_or_xfail(name, run):
    if name not in KNOWN_BROKEN:
        return run()
    try:
        run()
    except Exception:
        pytest.xfail(KNOWN_BROKEN[name])
    pytest.fail(f"{name} works now: remove it from KNOWN_BROKEN")


def _bound_primitives(prog, found):
    for eqn in prog.eqns:
        found.add(eqn.prim.name)
        for sub in core.subprograms(eqn.params):
            _bound_primitives(sub.program if isinstance(sub, core.ClosedProgram) else sub, found)
    return found


@pytest.mark.parametrize("name", sorted(PRIMITIVE_TABLE))
def test_table_entry_binds_its_primitive(name):
    fn, gens = PRIMITIVE_TABLE[name]
    rng = np.random.default_rng(0)

    def run():
        # Stage the batched function too, and type-check the batched program.
        batched = [np.stack([g(rng) for _ in range(B)]) for g in gens]
        prog = jax.make_jaxpr(jax.vmap(fn))(*batched)
        plain = jax.make_jaxpr(fn)(*[g(rng) for g in gens])
        assert name in _bound_primitives(plain, set()) | _bound_primitives(prog, set())
        core.typecheck_program(prog.program if isinstance(prog, core.ClosedProgram) else prog)

    _run_or_xfail(name, run)


def test_every_primitive_is_covered():
    # gpuarr's own primitives: tests register user primitives (jax.extend) in the same table
    registered = {p.name: p for p in core.abstract_eval_rules
                  if type(p).__module__ != "gpuarr.extend.core"}
    no_rule = sorted(n for n, p in registered.items()
                     if p not in batching.batch_rules and n not in ALLOWLIST)
    no_entry = sorted(n for n in registered if n not in PRIMITIVE_TABLE and n not in ALLOWLIST)
    assert not no_rule, f"primitives without a batching rule: {no_rule}"
    assert not no_entry, f"primitives without an entry in PRIMITIVE_TABLE: {no_entry}"


# ---------------------------------------------------------------- the vmap API


def test_in_axes_pytree_prefix_negative_and_kwargs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tree = {"a": x, "b": (x.T, np.float32(2.0))}

    def f(t, y, scale=1.0):
        return (t["a"] + t["b"][0] * t["b"][1]) * y * scale

    out = jax.vmap(f, in_axes=({"a": -1, "b": (0, None)}, None))(tree, np.float32(3.0),
                                                                  scale=np.ones(3, np.float32))
    ref = np.stack([f({"a": x[:, i], "b": (x.T[i], 2.0)}, 3.0) for i in range(3)])
    np.testing.assert_allclose(out, ref)


def test_out_axes_and_unbatched_outputs():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = jax.vmap(lambda a: (a * 2, jnp.float32(7.0)), out_axes=(1, None))(x)
    np.testing.assert_allclose(out[0], (x * 2).T)
    assert float(out[1]) == 7.0 and np.shape(out[1]) == ()
    out = jax.vmap(lambda a: a, out_axes=-1)(np.ones((3, 2, 4), np.float32))
    assert out.shape == (2, 4, 3)
    with pytest.raises(ValueError, match="got axis spec None but output was batched on axis 0"):
        jax.vmap(lambda a: a, out_axes=None)(x)
    with pytest.raises(ValueError, match="out of bounds"):
        jax.vmap(lambda a: a, out_axes=3)(x)


def test_axis_size_and_errors():
    assert jax.vmap(lambda: jnp.float32(1.0), axis_size=4)().shape == (4,)
    assert jax.vmap(lambda a: a.sum(), in_axes=None, axis_size=2)(np.ones((3, 2))).shape == (2,)
    with pytest.raises(ValueError, match=r"inconsistent sizes.*\n  \* one axis had size 3: axis 0 "
                                         r"of argument a of type float32\[3\]"):
        jax.vmap(lambda a, b: a + b)(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="the `axis_size` argument was 4"):
        jax.vmap(lambda a: a, axis_size=4)(np.ones(3))
    with pytest.raises(ValueError, match="rank should be at least 3"):
        jax.vmap(lambda a: a, in_axes=2)(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"len\(in_axes\)=2, len\(args\)=1"):
        jax.vmap(lambda a: a, in_axes=(0, 0))(np.ones(3))
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        jax.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None"):
        jax.vmap(lambda a: a, in_axes="a")
    with pytest.raises(ValueError, match="tree prefix"):
        jax.vmap(lambda a: a, in_axes=({"a": 0},))({"b": np.ones(3)})


def test_nested_vmap_and_jit():
    x = np.random.default_rng(0).normal(size=(3, 4, 5)).astype(np.float32)
    f = lambda v: jnp.sum(jnp.sin(v) * v)  # noqa: E731
    out = jax.vmap(jax.vmap(f, in_axes=1), in_axes=0)(x)
    ref = np.array([[np.sum(np.sin(x[i, :, j]) * x[i, :, j]) for j in range(5)] for i in range(3)])
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.vmap(f, 1), 0))(x), ref, rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(jax.jit(jax.vmap(f, 1)))(x), ref, rtol=1e-5)


def test_per_example_gradients():
    rng = np.random.default_rng(1)
    w = rng.normal(size=5).astype(np.float32)
    xs = rng.normal(size=(8, 5)).astype(np.float32)
    ys = rng.normal(size=8).astype(np.float32)

    def loss(w, x, y):
        return (jnp.dot(x, w) - y) ** 2

    per_ex = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(w, xs, ys)
    ref = 2 * (xs @ w - ys)[:, None] * xs
    np.testing.assert_allclose(per_ex, ref, rtol=1e-5, atol=1e-5)
    # grad of a vmapped function (vmap inside grad)
    g = jax.grad(lambda w: jnp.sum(jax.vmap(loss, (None, 0, 0))(w, xs, ys)))(w)
    np.testing.assert_allclose(g, ref.sum(0), rtol=1e-4, atol=1e-4)


# Further configurations of primitives whose batching rules have several cases.
EXTRA_CASES = [
    ("dot_general batch dims", lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     [f32(2, 3, 4), f32(2, 4, 5)]),
    ("dot_general two contractions", lambda x, y: lax.dot_general(x, y, (((0, 2), (1, 0)),
                                                                          ((), ()))),
     [f32(2, 3, 4), f32(4, 2, 5)]),
    ("dot_general outer product", lambda x, y: lax.dot_general(x, y, (((), ()), ((), ()))),
     [f32(3), f32(2)]),
    ("matvec", lambda a, v: a @ v, [f32(3, 4), f32(4)]),
    ("add_any scalars", lambda x, y: ad.add_any_p.bind(x, y), [f32(), f32()]),
    ("scan reverse", lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs, reverse=True),
     [f32(2), f32(3, 2)]),
    ("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x),
     [i32(lo=-1, hi=4), f32(2)]),
    ("fori_loop dynamic", lambda n, x: lax.fori_loop(0, n, lambda i, c: c * x + i, x),
     [i32(lo=0, hi=4), f32(2)]),
    ("map", lambda xs: lax.map(lambda x: jnp.sum(x * x), xs, batch_size=2), [f32(5, 3)]),
    ("associative_scan", lambda x: lax.associative_scan(jnp.add, x, axis=1), [f32(2, 5)]),
]


@pytest.mark.parametrize("case", EXTRA_CASES, ids=[c[0] for c in EXTRA_CASES])
def test_extra_batching_cases_match_loop(case):
    _, fn, gens = case
    rng = np.random.default_rng(7)
    for _ in range(4):
        check_batched(fn, gens, rng)
    check_batched(fn, gens, rng, use_jit=True)


def test_python_scalar_outputs():
    out = jax.vmap(lambda x: 2.0)(jnp.ones(3))
    assert out.shape == (3,) and out.dtype == np.float32 and out.weak_type
    assert jax.vmap(lambda x: 2.0, out_axes=None)(jnp.ones(3)) == 2.0


def test_vmap_of_a_gather_over_an_empty_batch():
    import jax as real_jax
    x = np.zeros((3, 0), np.float32)
    got = jax.vmap(lambda r: r[jnp.argmax(r)], in_axes=1)(x)
    want = real_jax.vmap(lambda r: r[real_jax.numpy.argmax(r)], in_axes=1)(x)
    assert (got.shape, got.dtype) == (want.shape, want.dtype) == ((0,), np.float32)
