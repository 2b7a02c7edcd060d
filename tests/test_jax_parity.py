"""Transformations as JAX's: jit's argument checks and stages, grad/jacobian argnums and aux,
linearize and linear_transpose checks, custom_jvp/custom_vjp rule checks, ShapeDtypeStruct and
checkpoint policies. Each case runs the same program with gpuarr and with JAX and compares
values, shapes, dtypes, weak types and pytree structure, or the exception class and message."""
import functools

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
import gpuarr.tree_util as gtu

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jtu = jax.tree_util

OURS = (gpuarr, gnp, gtu)
THEIRS = (jax, jnp, jtu)
X = np.arange(1, 4, dtype=np.float32)


def _described(tree, tu):
    """(structure, leaves) with each array leaf as (shape, dtype, weak type, values)."""
    leaves, treedef = tu.tree_flatten(tree, is_leaf=lambda v: v is None)
    out = []
    for leaf in leaves:
        if isinstance(leaf, (jax.ShapeDtypeStruct, gpuarr.ShapeDtypeStruct)):
            out.append(("sds", tuple(leaf.shape), np.dtype(leaf.dtype), leaf.weak_type))
        elif hasattr(leaf, "dtype") and hasattr(leaf, "shape"):
            out.append((tuple(leaf.shape), np.dtype(leaf.dtype),
                        bool(getattr(leaf, "weak_type", False)), np.asarray(leaf)))
        else:
            out.append(leaf)
    return treedef.num_leaves, str(treedef).replace("gpuarr", "jax"), out


def same_result(case):
    """`case(jax, jnp, tree_util)` gives the same result with both libraries."""
    got, want = _described(case(*OURS), gtu), _described(case(*THEIRS), jtu)
    assert got[:2] == want[:2]
    for g, w in zip(got[2], want[2]):
        if isinstance(w, tuple) and len(w) == 4 and isinstance(w[3], np.ndarray):
            assert g[:3] == w[:3]
            if w[1] != jax.dtypes.float0:
                np.testing.assert_allclose(g[3], w[3], rtol=1e-5, atol=1e-6)
        else:
            assert g == w


def same_error(case, whole=True):
    """`case` raises the same exception class, and message (or its first line), with both."""
    with pytest.raises(Exception) as want:
        case(*THEIRS)
    with pytest.raises(Exception) as got:
        case(*OURS)
    assert type(got.value).__name__ == type(want.value).__name__, got.value
    g, w = str(got.value), str(want.value)
    if not whole:
        g, w = g.split("\n")[0], w.split("\n")[0]
    assert g == w


def _fs(a, n):
    return a * n


def _f2(a, b):
    return a * b


def _loss(a, b=1.0):
    return (a * b).sum()


# ---------------------------------------------------------------- jit

JIT_ERRORS = {
    "static_argnums out of range": lambda j, n, t: j.jit(_fs, static_argnums=5),
    "negative static_argnums out of range": lambda j, n, t: j.jit(_fs, static_argnums=-5),
    "unknown static_argnames": lambda j, n, t: j.jit(_fs, static_argnames="zz"),
    "static and donated": lambda j, n, t: j.jit(_fs, static_argnums=1, donate_argnums=1),
    "donate_argnums out of range": lambda j, n, t: j.jit(_fs, donate_argnums=4),
    "unknown donate_argnames": lambda j, n, t: j.jit(_fs, donate_argnames="q"),
    "positional-only static_argnames": lambda j, n, t: j.jit(lambda a, /: a, static_argnames="a"),
    "static_argnums not ints": lambda j, n, t: j.jit(_fs, static_argnums="n"),
    "jit(None)": lambda j, n, t: j.jit(None),
    "unhashable static": lambda j, n, t: j.jit(_fs, static_argnums=1)(X, [1, 2]),
    "make_jaxpr static_argnums out of range":
        lambda j, n, t: j.make_jaxpr(lambda a: a, static_argnums=3)(X),
}


@pytest.mark.parametrize("name", list(JIT_ERRORS))
def test_jit_errors(name):
    same_error(JIT_ERRORS[name])


def test_jit_non_array_argument_message():
    def f(a, b):
        return a * b
    # The message names the function (its repr) and the argument's path.
    same_error(lambda j, n, t: j.jit(f)(X, "s"))


def test_jit_non_array_output_message():
    def f(a):
        return "s"
    same_error(lambda j, n, t: j.jit(f)(X))


def test_jit_non_array_output_in_a_pytree_names_its_component():
    def f(a):
        return a, {"k": "s"}
    same_error(lambda j, n, t: j.jit(f)(X))


JIT_RESULTS = {
    "static_argnums": lambda j, n, t: j.jit(_fs, static_argnums=1)(X, 3),
    "negative static_argnums": lambda j, n, t: j.jit(_fs, static_argnums=-1)(X, 3),
    "static_argnames by position": lambda j, n, t: j.jit(_fs, static_argnames="n")(X, 3),
    "static_argnames by keyword": lambda j, n, t: j.jit(_fs, static_argnames="n")(X, n=3),
    "kwargs": lambda j, n, t: j.jit(_f2)(a=X, b=2.0),
    "decorator": lambda j, n, t: j.jit(static_argnums=1)(_fs)(X, 3),
    "varargs static": lambda j, n, t: j.jit(lambda *a: a[0] * a[1], static_argnums=3)(X, 2, 1, 0),
    "kwargs static in **kw": lambda j, n, t: j.jit(lambda **k: k["a"] * k["n"],
                                                   static_argnames="n")(a=X, n=3),
    "weak scalar": lambda j, n, t: j.jit(lambda a: a * 2)(2.0),
    "pytree output with None": lambda j, n, t: j.jit(lambda a: {"b": a, "a": (None, a)})(X),
    "donate": lambda j, n, t: j.jit(_f2, donate_argnums=0)(n.asarray(X), 2.0),
    "keep_unused": lambda j, n, t: j.jit(_f2, keep_unused=True)(X, 2.0),
    "inline": lambda j, n, t: j.jit(lambda a: j.jit(lambda b: b + 1, inline=True)(a) * 2)(X),
    "lower compile": lambda j, n, t: j.jit(_fs, static_argnums=1).lower(X, 3).compile()(X),
    "lower ShapeDtypeStruct": lambda j, n, t: j.jit(_f2).lower(
        j.ShapeDtypeStruct((3,), np.float32), 2.0).compile()(X, 2.0),
    "trace lower compile": lambda j, n, t: j.jit(_f2).trace(X, 2.0).lower().compile()(X, 2.0),
    "out_info": lambda j, n, t: j.jit(_f2).lower(X, 2.0).out_info,
    "eval_shape": lambda j, n, t: j.jit(_f2).eval_shape(X, 2.0),
    "eval_shape static": lambda j, n, t: j.jit(_fs, static_argnums=1).eval_shape(X, 2),
    "make_jaxpr negative static": lambda j, n, t: j.make_jaxpr(
        _fs, static_argnums=-1, return_shape=True)(X, 2)[1],
}


@pytest.mark.parametrize("name", list(JIT_RESULTS))
def test_jit_results(name):
    same_result(JIT_RESULTS[name])


# ---------------------------------------------------------------- grad and Jacobians

AD_ERRORS = {
    "grad negative argnums out of range": lambda j, n, t: j.grad(_loss, argnums=-3)(X, 2.0),
    "grad argnums past the arguments": lambda j, n, t: j.grad(_loss, argnums=2)(X, 2.0),
    "grad empty argnums": lambda j, n, t: j.grad(_loss, argnums=())(X, 2.0),
    "jacfwd argnums out of range": lambda j, n, t: j.jacfwd(_f2, argnums=3)(X, 2.0),
    "jacrev argnums out of range": lambda j, n, t: j.jacrev(_f2, argnums=3)(X, 2.0),
    "hessian argnums out of range": lambda j, n, t: j.hessian(_f2, argnums=3)(X, 2.0),
    "grad reduce_axes": lambda j, n, t: j.grad(_loss, reduce_axes=("i",)),
    "value_and_grad reduce_axes": lambda j, n, t: j.value_and_grad(_loss, reduce_axes=("i",)),
    "vjp reduce_axes": lambda j, n, t: j.vjp(lambda a: a * 2, 2.0, reduce_axes=("i",)),
    "linear_transpose reduce_axes":
        lambda j, n, t: j.linear_transpose(lambda a: a, 2.0, reduce_axes=("i",)),
    "grad nonscalar": lambda j, n, t: j.grad(lambda a: a * 2)(X),
    "grad int input": lambda j, n, t: j.grad(lambda a: a * 2.0)(3),
    "grad complex output": lambda j, n, t: j.grad(lambda a: a * 1j)(2.0),
    "grad holomorphic real input": lambda j, n, t: j.grad(lambda a: a, holomorphic=True)(2.0),
    "jvp tree mismatch": lambda j, n, t: j.jvp(lambda a: a[0], ((X, X),), ([X, X],)),
    "jvp dtype mismatch": lambda j, n, t: j.jvp(lambda a: a, (X,), (X.astype(np.float16),)),
    "jvp shape mismatch": lambda j, n, t: j.jvp(lambda a: a, (X,), (np.ones(4, np.float32),)),
    "vjp cotangent shape": lambda j, n, t: j.vjp(n.sin, X)[1](np.ones(4, np.float32)),
    "linearize tangent shape": lambda j, n, t: j.linearize(n.sin, X)[1](np.ones(4, np.float32)),
    "linearize tangent dtype": lambda j, n, t: j.linearize(n.sin, X)[1](X.astype(np.float16)),
    "linearize scalar tangent": lambda j, n, t: j.linearize(n.sin, X)[1](1.0),
    "linearize tangent count": lambda j, n, t: j.linearize(n.sin, X)[1](X, X),
    "linearize tangent tree": lambda j, n, t: j.linearize(n.sin, X)[1]((X,)),
    "linear_transpose cotangent dtype":
        lambda j, n, t: j.linear_transpose(lambda a: a * 2, X)(X.astype(np.float16)),
    "linear_transpose cotangent shape":
        lambda j, n, t: j.linear_transpose(lambda a: a * 2, X)(np.ones(4, np.float32)),
    "linear_transpose cotangent tree":
        lambda j, n, t: j.linear_transpose(lambda a: a * 2, X)((X,)),
    "linear_transpose int to float":
        lambda j, n, t: j.linear_transpose(lambda a: a.astype(np.float32), np.int32(2)),
}


@pytest.mark.parametrize("name", list(AD_ERRORS))
def test_ad_errors(name):
    same_error(AD_ERRORS[name])


def test_vjp_cotangent_tree_message():
    # JAX's later lines name the function's source file; the first line is compared.
    same_error(lambda j, n, t: j.vjp(n.sin, X)[1]((X,)), whole=False)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev", "hessian"])
def test_has_aux_needs_a_pair(transform):
    def case(j, n, t):
        return getattr(j, transform)(lambda a: (a ** 2).sum(), has_aux=True)(X)
    # The message ends with the tracer's repr, which differs between libraries.
    with pytest.raises(TypeError, match="^expected function with aux output to return a "
                                        "two-element tuple, but got type"):
        case(*OURS)
    with pytest.raises(TypeError, match="two-element tuple"):
        case(*THEIRS)


AD_RESULTS = {
    "grad": lambda j, n, t: j.grad(_loss)(X, 2.0),
    "grad negative argnums": lambda j, n, t: j.grad(_loss, argnums=-1)(X, 2.0),
    "grad argnums tuple": lambda j, n, t: j.grad(_loss, argnums=(0, 1))(X, 2.0),
    "grad has_aux": lambda j, n, t: j.grad(lambda a: ((a * a).sum(), {"v": a * 2}),
                                           has_aux=True)(X),
    "grad aux string": lambda j, n, t: j.grad(lambda a: ((a * a).sum(), "note"),
                                              has_aux=True)(X),
    "grad aux mixed": lambda j, n, t: j.grad(lambda a: ((a * a).sum(), ("note", a.sum())),
                                             has_aux=True)(X),
    "vjp aux string": lambda j, n, t: j.vjp(lambda a: (a * 2, "note"), X, has_aux=True)[2],
    "grad allow_int": lambda j, n, t: j.grad(lambda a, b: a * b, argnums=(0, 1),
                                             allow_int=True)(3, 2.0),
    "grad holomorphic": lambda j, n, t: j.grad(lambda a: a * a, holomorphic=True)(
        np.complex64(1 + 1j)),
    "grad pytree with None": lambda j, n, t: j.grad(lambda p: p[0].sum())((X, None)),
    "value_and_grad argnums tuple":
        lambda j, n, t: j.value_and_grad(_loss, argnums=(0, 1))(X, 2.0),
    "jacfwd pytree out": lambda j, n, t: j.jacfwd(lambda a: {"s": (a ** 2).sum(),
                                                             "v": [a * 2]})(X),
    "jacrev pytree in": lambda j, n, t: j.jacrev(lambda p: (p["a"] * p["b"]).sum())(
        {"a": X, "b": np.float32(2.0)}),
    "jacfwd negative argnums": lambda j, n, t: j.jacfwd(_f2, argnums=-1)(X, 2.0),
    "jacfwd empty input": lambda j, n, t: j.jacfwd(lambda a: a * 2)(np.zeros(0, np.float32)),
    "hessian empty input": lambda j, n, t: j.hessian(lambda a: a * 2)(np.zeros(0, np.float32)),
    "jacfwd has_aux": lambda j, n, t: j.jacfwd(lambda a: (n.sin(a), a.sum()), has_aux=True)(X),
    "hessian": lambda j, n, t: j.hessian(lambda a: (a ** 3).sum())(X),
    "jvp": lambda j, n, t: j.jvp(n.sin, (X,), (X,)),
    "vjp integer output, integer cotangent": lambda j, n, t: j.vjp(
        lambda a: (a > 1).astype(n.int32), X)[1](np.zeros(3, np.int32)),
    "linearize": lambda j, n, t: j.linearize(n.sin, X)[1](X),
    "linear_transpose affine": lambda j, n, t: j.linear_transpose(lambda a: a + 1.0, X)(X),
    "linear_transpose weak input": lambda j, n, t: j.linear_transpose(
        lambda a, b: a * 2, 2.0, np.float16(2))(3.0),
    "linear_transpose integer": lambda j, n, t: j.linear_transpose(
        lambda a: a * 2, np.int32(2))(np.int32(3)),
    "linear_transpose ShapeDtypeStruct": lambda j, n, t: j.linear_transpose(
        lambda a: a * 2, j.ShapeDtypeStruct((3,), np.float32))(X),
    "linear_transpose dict": lambda j, n, t: j.linear_transpose(
        lambda p: p["a"] + p["b"], {"a": X, "b": X})(X),
}


@pytest.mark.parametrize("name", list(AD_RESULTS))
def test_ad_results(name):
    same_result(AD_RESULTS[name])


# ---------------------------------------------------------------- custom_jvp, custom_vjp


def _custom_jvp(j, n, bad):
    @j.custom_jvp
    def f(a):
        return n.sin(a)

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (ta,) = primals, tangents
        if bad == "tangent dtype":
            return f(a), (n.cos(a) * ta).astype(n.float16)
        if bad == "primal dtype":
            return f(a).astype(n.float16), n.cos(a) * ta
        if bad == "tangent shape":
            return f(a), (n.cos(a) * ta).sum()
        return f(a), n.cos(a) * ta
    return f


@pytest.mark.parametrize("bad", ["tangent dtype", "primal dtype", "tangent shape"])
def test_custom_jvp_rule_types(bad):
    same_error(lambda j, n, t: j.jvp(_custom_jvp(j, n, bad), (X,), (X,)))
    same_error(lambda j, n, t: j.grad(lambda a: _custom_jvp(j, n, bad)(a).sum())(X))


def _custom_vjp(j, n, bad):
    @j.custom_vjp
    def f(a, b):
        return a * b

    def fwd(a, b):
        return a * b if bad == "fwd not a pair" else (a * b, (a, b))

    def bwd(res, g):
        a, b = res
        if bad == "bwd not a tuple":
            return g * b
        if bad == "bwd too short":
            return (g * b,)
        if bad == "bwd shape":
            return ((g * b).sum(), g * a)
        if bad == "bwd list":
            return [g * b, g * a]
        return (g * b, None)
    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("bad", ["fwd not a pair", "bwd not a tuple", "bwd too short",
                                 "bwd shape"])
def test_custom_vjp_rule_errors(bad):
    same_error(lambda j, n, t: j.grad(lambda a, b: _custom_vjp(j, n, bad)(a, b).sum(),
                                      argnums=(0, 1))(X, X), whole=bad != "fwd not a pair")


@pytest.mark.parametrize("bad", ["bwd list", "None cotangent"])
def test_custom_vjp_rule_results(bad):
    same_result(lambda j, n, t: j.grad(lambda a, b: _custom_vjp(j, n, bad)(a, b).sum(),
                                       argnums=(0, 1))(X, X))


def test_custom_vjp_under_jvp():
    same_error(lambda j, n, t: j.jvp(lambda a: _custom_vjp(j, n, "")(a, a), (X,), (X,)))


def _nondiff(j, n, kind):
    if kind == "jvp":
        @functools.partial(j.custom_jvp, nondiff_argnames=("k",))
        def f(a, k):
            return a ** k

        @f.defjvp
        def f_jvp(k, primals, tangents):
            return f(primals[0], k=k), k * primals[0] ** (k - 1) * tangents[0]
        return f

    @functools.partial(j.custom_vjp, nondiff_argnames=("k",))
    def g(a, k):
        return a * k
    g.defvjp(lambda a, k: (a * k, None), lambda k, res, ct: (ct * k,))
    return g


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_nondiff_argnames(kind):
    same_result(lambda j, n, t: j.grad(lambda a: _nondiff(j, n, kind)(a, k=3))(2.0))
    same_result(lambda j, n, t: j.grad(lambda a: _nondiff(j, n, kind)(a, 3))(2.0))


# ---------------------------------------------------------------- ShapeDtypeStruct, policies

SDS = {
    "update": lambda j, n, t: j.ShapeDtypeStruct((2,), np.float32).update(shape=(3,),
                                                                            weak_type=True),
    "len": lambda j, n, t: len(j.ShapeDtypeStruct((2, 5), np.float32)),
    "eval_shape": lambda j, n, t: j.eval_shape(lambda a, b: (a * b, None), X, 2.0),
    "eval_shape of ShapeDtypeStruct": lambda j, n, t: j.eval_shape(
        lambda a: a.sum(), j.ShapeDtypeStruct((2, 3), np.int32)),
    "repr": lambda j, n, t: repr(j.ShapeDtypeStruct((2,), np.float32, weak_type=True)),
}


@pytest.mark.parametrize("name", list(SDS))
def test_shape_dtype_struct(name):
    same_result(SDS[name])


@pytest.mark.parametrize("case", [
    lambda j, n, t: j.ShapeDtypeStruct((2,), None),
    lambda j, n, t: j.ShapeDtypeStruct((2,), np.float32, True),
    lambda j, n, t: len(j.ShapeDtypeStruct((), np.float32)),
])
def test_shape_dtype_struct_errors(case):
    same_error(case)


def test_checkpoint_policy_names():
    names = {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
    assert names <= {n for n in dir(gpuarr.checkpoint_policies) if not n.startswith("_")}


@pytest.mark.parametrize("make", [
    lambda p: p.save_only_these_names("y"),
    lambda p: p.save_anything_except_these_names("y"),
    lambda p: p.save_any_names_but_these("y"),
    lambda p: p.save_from_both_policies(p.dots_saveable, p.nothing_saveable),
    lambda p: p.offload_dot_with_no_batch_dims("device", "pinned_host"),
    lambda p: p.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"], names_which_can_be_offloaded=[],
        offload_src="device", offload_dst="pinned_host"),
])
def test_checkpoint_name_policies(make):
    def case(j, n, t):
        def f(a):
            return (n.sin(a) @ n.cos(a)) * a
        return j.grad(lambda a: j.checkpoint(f, policy=make(j.checkpoint_policies))(a).sum())(X)
    same_result(case)


# ---------------------------------------------------------------- a table of passing cases

PASSING = {
    "tree_map is_leaf None": lambda j, n, t: t.tree_map(
        lambda v: 0 if v is None else v, {"a": [1, None], "b": None}, is_leaf=lambda v: v is None),
    "tree_flatten_with_path keystr": lambda j, n, t: [
        (t.keystr(p), t.keystr(p, simple=True, separator="/"), v)
        for p, v in t.tree_flatten_with_path({"a": [1, (2, None)], "b": {"c": 3}})[0]],
    "tree_transpose": lambda j, n, t: t.tree_transpose(
        t.tree_structure([0, 0]), t.tree_structure((0, 0, 0)), [(1, 2, 3), (4, 5, 6)]),
    "Partial through jit": lambda j, n, t: j.jit(lambda p, v: p(v))(
        t.Partial(lambda a, b: a * b, X), 2.0),
    "device_put pytree": lambda j, n, t: j.device_put({"a": X, "b": [1.0, None]}),
    "device_get": lambda j, n, t: j.device_get({"a": n.ones(3), "c": None}),
    "block_until_ready pytree": lambda j, n, t: j.block_until_ready({"a": n.ones(3), "b": (1, X)}),
    "pure_callback": lambda j, n, t: j.jit(lambda a: j.pure_callback(
        np.sin, j.ShapeDtypeStruct((3,), np.float32), a))(X),
    "named_call": lambda j, n, t: j.grad(j.named_call(lambda a: a * a, name="sq"))(2.0),
    "remat static_argnums": lambda j, n, t: j.grad(j.remat(lambda a, k: a ** k,
                                                           static_argnums=1))(2.0, 3),
}


@pytest.mark.parametrize("name", list(PASSING))
def test_passing_table(name):
    same_result(PASSING[name])
