"""What custom_jvp and custom_vjp rules are handed, compared with JAX 0.10.2: the inputs of a
rule under jit (arrays, never the Program's literals as Python numbers), `CustomVJPPrimal` as
one pytree leaf, residuals that are Python values, bwd outputs with None subtrees, and the
tangent types of avals. Libraries' rules (equinox's checkpointed while loop) depend on each."""
import numpy as np
import pytest

import gpuarr

jax = pytest.importorskip("jax")


def _kinds(values):
    """What a rule can observe of its inputs: Python scalar type or array (shape, dtype)."""
    out = []
    for v in values:
        if isinstance(v, (bool, int, float, complex)) and not hasattr(v, "shape"):
            out.append((type(v).__mro__[-2].__name__, v))  # JAX's TypedInt is an int
        else:
            out.append(("array", np.shape(v), np.dtype(v.dtype).name))
    return out


def _jvp_inputs(lib):
    seen = []

    @lib.custom_jvp
    def f(i, b, x):
        return x * i

    @f.defjvp
    def f_jvp(primals, tangents):
        seen.append(_kinds(primals))
        return f(*primals), tangents[2] * primals[0]

    def g(x):
        return f(lib.numpy.array(3), lib.numpy.array(True), x)

    out = [lib.linearize(lib.jit(g), 2.0)[0], lib.jvp(lib.jit(g), (2.0,), (1.0,))[1]]
    return [float(o) for o in out], seen


def test_a_custom_jvp_rule_under_jit_sees_arrays():
    got, want = _jvp_inputs(gpuarr), _jvp_inputs(jax)
    assert got[0] == want[0]
    assert got[1] and got[1] == want[1]


def _vjp_inputs(lib):
    seen = []

    @lib.custom_vjp
    def f(i, x):
        return x * i

    def fwd(i, x):
        seen.append(_kinds([i.value, x.value]) + [type(i).__name__, i.perturbed, x.perturbed])
        # tree_map over the arguments sees each CustomVJPPrimal whole, as JAX passes them.
        flags = lib.tree_util.tree_map(lambda p: p.perturbed, (i, x))
        return x.value * i.value, (i.value, flags)

    def bwd(res, g):
        i, flags = res
        seen.append(("bwd", flags, type(flags[0]).__name__))
        return None, g * i

    f.defvjp(fwd, bwd, symbolic_zeros=True)

    def g(x):
        return f(lib.numpy.array(3.0), x)

    out = lib.jit(lib.value_and_grad(lib.jit(g)))(2.0)
    return [float(o) for o in out], seen


def test_a_custom_vjp_rule_under_jit_sees_arrays_and_whole_primals():
    got, want = _vjp_inputs(gpuarr), _vjp_inputs(jax)
    assert got[0] == want[0] == [6.0, 3.0]
    assert got[1] == want[1]


def _python_residuals(lib):
    seen = []

    @lib.custom_vjp
    def f(x):
        return x * 2

    def fwd(x):
        return x * 2, (True, (False, True))

    def bwd(res, g):
        seen.append([type(r).__name__ for r in lib.tree_util.tree_leaves(res)])
        return (g * 2,)

    f.defvjp(fwd, bwd)
    out = [lib.grad(f)(1.0), lib.jit(lib.grad(f))(1.0), lib.grad(lib.jit(f))(1.0),
           lib.jit(lib.grad(lib.jit(f)))(1.0)]
    return [float(o) for o in out], seen


def test_python_bool_residuals_come_back_as_bools():
    got, want = _python_residuals(gpuarr), _python_residuals(jax)
    assert got == want


def _none_subtrees(lib):
    @lib.custom_vjp
    def f(x):
        return x[1][1] * 3.0

    def fwd(x):
        return f(x), None

    def bwd(_, g):
        # None where the argument has an empty subtree or a whole subtree of leaves.
        return ((None, (None, g * 3.0)),)

    f.defvjp(fwd, bwd)
    x = (lib.numpy.ones(2), (None, lib.numpy.float32(2.0)))
    return lib.tree_util.tree_map(np.asarray, lib.grad(f)(x))


def test_bwd_may_return_none_for_subtrees():
    got, want = _none_subtrees(gpuarr), _none_subtrees(jax)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1][0] is want[1][0] is None
    assert float(got[1][1]) == float(want[1][1]) == 3.0


def _bad_bwd(lib, ct):
    @lib.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, None), lambda _, g: ct(lib, g))
    try:
        lib.grad(f)(1.0, 2.0)
    except (TypeError, ValueError) as e:  # the error itself is compared
        return type(e).__name__, str(e).split("\n")[0]
    return None


@pytest.mark.parametrize("ct", [
    lambda lib, g: (g,),
    lambda lib, g: g,
    lambda lib, g: (g, (g, g)),
    lambda lib, g: (lib.custom_derivatives.SymbolicZero(
        lib.core.ShapedArray((2,), np.float32)), g),
], ids=["too few", "not a tuple", "subtree for a leaf", "symbolic zero of another shape"])
def test_a_bwd_of_the_wrong_structure_raises_as_jax(ct):
    got, want = _bad_bwd(gpuarr, ct), _bad_bwd(jax, ct)
    assert got is not None and want is not None
    assert got[0] == want[0]
    assert got[1].split(" but got")[0] == want[1].split(" but got")[0]


@pytest.mark.parametrize("dtype, weak", [(np.float32, False), (np.float16, True),
                                         (np.int32, True), (np.bool_, False),
                                         (np.complex64, False)])
def test_aval_tangent_types(dtype, weak):
    ours = gpuarr.core.ShapedArray((2, 3), dtype, weak_type=weak)
    theirs = jax.core.ShapedArray((2, 3), dtype, weak_type=weak)
    for name in ("to_tangent_aval", "to_ct_aval", "at_least_vspace"):
        got, want = getattr(ours, name)(), getattr(theirs, name)()
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def _what_jvp_passes(lib):
    """Which values inside jvp are the JVP trace's tracers (only those with a nonzero
    tangent, as JAX's maybe_jvp_tracer), and what primals the function is given."""
    from_jvp = []

    def f(x, n, s):
        tracer = lib.interpreters.ad.JVPTracer
        y, m = x * 2.0, n * 3
        from_jvp.extend([isinstance(v, tracer) for v in (x, n, s, y, m)])
        from_jvp.append(type(s).__name__)
        return y, m, s

    f0 = np.zeros((), lib.dtypes.float0)
    out = lib.jvp(f, (np.float32(1.5), np.int32(2), 2.5), (np.float32(1.0), f0, 0.5))
    return from_jvp, [(type(o).__name__ if isinstance(o, float) else np.asarray(o).dtype.name)
                      for o in lib.tree_util.tree_leaves(out)]


def test_jvp_traces_only_perturbed_values_and_keeps_primals_as_given():
    import jax.interpreters.ad  # noqa: F401  (the attribute path below)

    import gpuarr.interpreters.ad  # noqa: F401
    got, want = _what_jvp_passes(gpuarr), _what_jvp_passes(jax)
    assert got == want


def _python_float_tangents(lib):
    """A Python float tangent passes through jvp as given (a function returning its input, a
    custom rule reading it, lax.add, which converts nothing), and becomes an Array where
    jax.numpy promotes its tracer (x + 1: a tracer over a concrete value converts even to its
    own type)."""
    seen = []

    @lib.custom_jvp
    def call(x):
        return x * 2.0

    @call.defjvp
    def call_jvp(primals, tangents):
        seen.append((type(primals[0]).__name__, type(tangents[0]).__name__))
        return call(primals[0]), tangents[0] ** 2

    fns = [lambda x: x, call, lambda x: lib.lax.add(x, 1.0), lambda x: x + 1,
           lambda x: lib.numpy.sin(x), lib.jit(lambda x: x + 1)]
    outs = []
    for fn in fns:
        p, t = lib.jvp(fn, (2.0,), (3.0,))
        outs.append([(type(v).__name__ if isinstance(v, float) else
                      (np.asarray(v).dtype.name, bool(v.weak_type)), float(v)) for v in (p, t)])
    return outs, seen


def test_jvp_passes_python_float_tangents_as_given():
    got, want = _python_float_tangents(gpuarr), _python_float_tangents(jax)
    assert got == want


def _zero_carries(lib, loop):
    """Which tangents a custom rule inside a loop body sees as symbolic zeros, differentiating
    with respect to `x` only: the carry `y` never meets `x`, so it stays a zero, as JAX finds
    by a fixpoint over the body (equinox's nondifferentiable carries rely on it)."""
    seen = []

    @lib.custom_jvp
    def probe(v, w):
        return v + w

    def probe_jvp(primals, tangents):
        seen.append(type(tangents[1]).__name__ == "SymbolicZero")
        return probe(*primals), tangents[0]

    probe.defjvp(probe_jvp, symbolic_zeros=True)
    jnp, lax = lib.numpy, lib.lax

    def body(c):
        i, x, y = c
        x2 = lax.cond(i < 2, lambda x: x * 2.0, lambda x: x, x)
        return i + 1, probe(x2, y), y + 1.0

    def run(x, y):
        if loop == "scan":
            c, _ = lax.scan(lambda c, _: (body(c), None), (0, x, y), length=3)
        elif loop == "fori":
            c = lax.fori_loop(0, 3, lambda _, c: body(c), (0, x, y))
        else:
            c = lax.while_loop(lambda c: c[0] < 3, body, (0, x, y))
        return c[1] + c[2]

    if loop == "while":
        out = lib.jvp(lambda x: run(x, jnp.float32(0.5)), (jnp.float32(1.0),),
                      (jnp.float32(1.0),))
    else:
        out = lib.value_and_grad(run)(jnp.float32(1.0), jnp.float32(0.5))
    return [float(o) for o in out], sorted(set(seen))


@pytest.mark.parametrize("loop", ["scan", "fori", "while"])
def test_loop_carries_without_tangents_stay_symbolic_zeros(loop):
    got, want = _zero_carries(gpuarr, loop), _zero_carries(jax, loop)
    assert got == want
    assert want[1] == [True]


def _call_through_bind_params(lib):
    """An interpreter of jaxprs (equinox's finalise_jaxpr) evaluates a custom_jvp or
    custom_vjp call through `get_bind_params`: `subfuns[0].call_wrapped` is the call as a
    function of the equation's inputs, and binding with those parameters runs it too."""
    @lib.custom_jvp
    def f(x):
        return lib.numpy.sin(x) * 2.0

    f.defjvp(lambda p, t: (f(p[0]), t[0]))

    @lib.custom_vjp
    def g(x):
        return x * 3.0

    g.defvjp(lambda x: (g(x), None), lambda _, ct: (ct,))
    out = []
    for fn in (f, g):
        jaxpr = lib.make_jaxpr(fn)(1.5).jaxpr
        eqn = jaxpr.eqns[0]
        params = eqn.primitive.get_bind_params(eqn.params)
        x = np.float32(1.5)
        via_fun = params["subfuns"][0].call_wrapped(x)
        via_bind = eqn.primitive.bind(x, **params)
        out.append((eqn.primitive.name, [float(v) for v in via_fun],
                    [float(v) for v in via_bind]))
    return out


def test_custom_calls_evaluate_through_get_bind_params():
    assert _call_through_bind_params(gpuarr) == _call_through_bind_params(jax)
