"""lax.custom_linear_solve and lax.custom_root in forward and reverse mode, under jit and vmap.

Oracles: NumPy in float64 (closed forms of the implicit derivatives), finite differences
(`check_grads`), and JAX itself running the same function bodies (`_linear_cases` and
`_root_cases` take the jax / jax.numpy modules as arguments)."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends.numpy import codegen

f32 = np.float32
A0 = np.array([[4.0, 1.0], [2.0, 3.0]], f32)
S0 = A0 + A0.T
B0 = np.array([1.0, 2.0], f32)
A_DOT = np.array([[0.5, -1.0], [0.25, 2.0]], f32)
B_DOT = np.array([-1.0, 0.5], f32)


@pytest.fixture(scope="module")
def ref():
    """(jax, jax.numpy) of JAX itself, on the CPU."""
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    return real, real_jnp


def check(got, want, rtol=1e-5, atol=1e-6):
    """Same tree, shapes and dtypes, values close."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), (got_tree, want)
    for g, w in zip(got_leaves, want_leaves):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, np.asarray(w).dtype)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def fd_jvp(f, args, tangents, eps=1e-4):
    """Central difference of `f` (NumPy, float64) along `tangents`."""
    up = f(*[np.float64(a) + eps * np.float64(t) for a, t in zip(args, tangents)])
    down = f(*[np.float64(a) - eps * np.float64(t) for a, t in zip(args, tangents)])
    return (up - down) / (2 * eps)


# ================================================================ custom_linear_solve


def _linear_solvers(jx, jn):
    """Solves of A x = b: with transpose_solve, without it, symmetric, with aux, a CG loop."""
    def full(A, b):
        return jx.lax.custom_linear_solve(lambda v: A @ v, b, lambda mv, r: jn.linalg.solve(A, r),
                                          lambda vm, r: jn.linalg.solve(A.T, r))

    def forward_only(A, b):
        return jx.lax.custom_linear_solve(lambda v: A @ v, b, lambda mv, r: jn.linalg.solve(A, r))

    def symmetric(A, b):
        S = A + A.T
        return jx.lax.custom_linear_solve(lambda v: S @ v, b, lambda mv, r: jn.linalg.solve(S, r),
                                          symmetric=True)

    def with_aux(A, b):
        return jx.lax.custom_linear_solve(
            lambda v: A @ v, b, lambda mv, r: (jn.linalg.solve(A, r), jn.sum(r)),
            lambda vm, r: (jn.linalg.solve(A.T, r), jn.sum(r)), has_aux=True)

    def cg(matvec, b):  # a solver that cannot be differentiated in reverse mode itself
        def body(c):
            x, r, p, k = c
            ap = matvec(p)
            alpha = (r @ r) / (p @ ap)
            x, r_new = x + alpha * p, r - alpha * ap
            return x, r_new, r_new + (r_new @ r_new) / (r @ r) * p, k + 1
        return jx.lax.while_loop(lambda c: c[3] < b.shape[0], body, (jn.zeros_like(b), b, b, 0))[0]

    def conjugate_gradient(A, b):
        S = A + A.T
        return jx.lax.custom_linear_solve(lambda v: S @ v, b, cg, symmetric=True)

    return dict(full=full, forward_only=forward_only, symmetric=symmetric, with_aux=with_aux,
                cg=conjugate_gradient)


LIN = _linear_solvers(jax, jnp)


def _np_solution(name):
    mat = (lambda A: A + A.T) if name in ("symmetric", "cg") else (lambda A: A)
    return lambda A, b: np.linalg.solve(mat(A), b)


@pytest.mark.parametrize("name", ["full", "forward_only", "symmetric", "cg"])
def test_linear_solve_value_and_jvp(name):
    x = LIN[name](A0, B0)
    check(x, _np_solution(name)(np.float64(A0), np.float64(B0)).astype(f32))
    x, x_dot = jax.jvp(LIN[name], (A0, B0), (A_DOT, B_DOT))
    check(x_dot, fd_jvp(_np_solution(name), (A0, B0), (A_DOT, B_DOT)).astype(f32), rtol=1e-4)


@pytest.mark.parametrize("name", ["full", "forward_only", "symmetric", "cg"])
def test_linear_solve_jacfwd_matches_jax(name, ref):
    jax_fn = _linear_solvers(*ref)[name]
    for argnums in (0, 1, (0, 1)):
        want = ref[0].jacfwd(jax_fn, argnums)(A0, B0)
        check(jax.jacfwd(LIN[name], argnums)(A0, B0), want, atol=1e-5)
    check(jax.jvp(LIN[name], (A0, B0), (A_DOT, B_DOT)),
          ref[0].jvp(jax_fn, (A0, B0), (A_DOT, B_DOT)), atol=1e-5)


@pytest.mark.parametrize("name", ["full", "symmetric", "cg"])
def test_linear_solve_reverse_mode(name, ref):
    jax_fn = _linear_solvers(*ref)[name]
    check(jax.jacrev(LIN[name], (0, 1))(A0, B0), ref[0].jacrev(jax_fn, (0, 1))(A0, B0), atol=1e-5)
    # d(sum x)/db = A^-T 1 and d(sum x)/dA = -A^-T 1 x^T.
    mat = np.float64(S0 if name != "full" else A0)
    lam = np.linalg.solve(mat.T, np.ones(2))
    x = np.linalg.solve(mat, np.float64(B0))
    gA, gb = jax.grad(lambda A, b: LIN[name](A, b).sum(), (0, 1))(A0, B0)
    check(gb, lam.astype(f32), rtol=1e-4)
    if name == "full":
        check(gA, (-np.outer(lam, x)).astype(f32), rtol=1e-4)


def test_linear_solve_check_grads():
    A, b = np.float64(A0), np.float64(B0)
    check_grads_x64(LIN["full"], (A, b), 2)
    check_grads_x64(LIN["symmetric"], (A, b), 2)
    check_grads_x64(LIN["forward_only"], (A, b), 2, modes=("fwd",))


def test_missing_transpose_solve_error_in_reverse_mode():
    msg = ("transpose_solve required for backwards mode automatic differentiation of "
           "custom_linear_solve")
    with pytest.raises(TypeError, match=msg):
        jax.grad(lambda b: LIN["forward_only"](A0, b).sum())(B0)
    with pytest.raises(TypeError, match=msg):
        jax.jacrev(LIN["forward_only"])(A0, B0)
    with pytest.raises(TypeError, match=msg):
        jax.jit(jax.grad(lambda A: LIN["forward_only"](A, B0).sum()))(A0)
    # Forward mode never needs it.
    check(jax.jacfwd(LIN["forward_only"], 1)(A0, B0), np.linalg.inv(A0), rtol=1e-5)


def test_linear_solve_jit():
    for name in ("full", "symmetric", "cg", "forward_only"):
        check(jax.jit(LIN[name])(A0, B0), LIN[name](A0, B0))
        check(jax.jit(lambda A, b, ta, tb: jax.jvp(LIN[name], (A, b), (ta, tb)))(A0, B0, A_DOT, B_DOT),
              jax.jvp(LIN[name], (A0, B0), (A_DOT, B_DOT)))
    check(jax.jit(jax.jacrev(LIN["cg"], (0, 1)))(A0, B0), jax.jacrev(LIN["cg"], (0, 1))(A0, B0))


def test_linear_solve_jit_writes_the_solve_inline():
    closed = jax.make_jaxpr(lambda A, b: jnp.sin(LIN["symmetric"](A, b)))(A0, B0)
    assert [e.prim.name for e in closed.program.eqns][-2:] == ["custom_linear_solve", "sin"]
    source = codegen.compile_closed(closed).source
    assert "custom_linear_solve" not in source and "f_lu" in source
    check(codegen.compile_closed(closed)(A0, B0)[0],
          np.sin(np.linalg.solve(np.float64(S0), B0)).astype(f32))


def test_linear_solve_jaxpr_params():
    closed = jax.make_jaxpr(LIN["full"])(A0, B0)
    (eqn,) = closed.program.eqns
    assert eqn.prim is lax.custom_solve.linear_solve_p
    assert tuple(eqn.params["const_lengths"]) == (1, 1, 1, 1)
    assert eqn.params["const_lengths"]._fields == ("matvec", "vecmat", "solve", "transpose_solve")
    assert all(j is not None for j in eqn.params["jaxprs"])
    (eqn,) = jax.make_jaxpr(LIN["forward_only"])(A0, B0).program.eqns
    assert eqn.params["jaxprs"].vecmat is None and eqn.params["jaxprs"].transpose_solve is None
    # The JVP is a second solve; its transpose is a solve with the transposed programs.
    names = [e.prim.name for e in jax.make_jaxpr(
        lambda b, t: jax.jvp(lambda b: LIN["full"](A0, b), (b,), (t,)))(B0, B0).program.eqns]
    assert names.count("custom_linear_solve") == 2


@pytest.mark.parametrize("in_axes", [(None, 0), (0, None), (0, 0), (2, 1)])
def test_linear_solve_vmap(in_axes):
    rng = np.random.default_rng(0)
    As = (np.eye(2, dtype=f32)[None] * 3 + rng.normal(size=(3, 2, 2)).astype(f32) * 0.3)
    bs = rng.normal(size=(3, 2)).astype(f32)
    args = [np.moveaxis(As, 0, in_axes[0]) if in_axes[0] is not None else A0,
            np.moveaxis(bs, 0, in_axes[1]) if in_axes[1] is not None else B0]
    per = lambda i: [a if d is None else np.take(a, i, d) for a, d in zip(args, in_axes)]  # noqa: E731
    for name in ("full", "symmetric", "cg"):
        fn = LIN[name]
        want = np.stack([np.asarray(fn(*per(i))) for i in range(3)])
        check(jax.vmap(fn, in_axes)(*args), want, rtol=1e-4)
        grad = jax.grad(lambda A, b: fn(A, b).sum(), (0, 1))
        got = jax.jit(jax.vmap(grad, in_axes))(*args)
        for k in range(2):
            check(got[k], np.stack([np.asarray(grad(*per(i))[k]) for i in range(3)]),
                  rtol=1e-4, atol=1e-5)
        jac = jax.vmap(jax.jacfwd(fn, 1), in_axes)(*args)
        check(jac, np.stack([np.asarray(jax.jacfwd(fn, 1)(*per(i))) for i in range(3)]), rtol=1e-4)


def test_linear_solve_vmap_over_solver_constant_only():
    scales = np.array([1.0, 2.0, 4.0], f32)

    def f(s):  # the solver closes over a batched value, matvec does not
        return lax.custom_linear_solve(lambda v: 2.0 * v, B0, lambda mv, r: r / s, symmetric=True)

    check(jax.vmap(f)(scales), B0[None] / scales[:, None])


def test_linear_solve_has_aux(ref):
    jax_fn = _linear_solvers(*ref)["with_aux"]
    fn = LIN["with_aux"]
    check(fn(A0, B0), jax_fn(A0, B0))
    check(jax.jvp(fn, (A0, B0), (A_DOT, B_DOT)), ref[0].jvp(jax_fn, (A0, B0), (A_DOT, B_DOT)))
    loss = lambda jx, f: jx.grad(lambda A, b: f(A, b)[0].sum(), (0, 1))  # noqa: E731
    check(loss(jax, fn)(A0, B0), loss(ref[0], jax_fn)(A0, B0))
    bs = np.stack([B0, 3 * B0])
    check(jax.jit(jax.vmap(fn, (None, 0)))(A0, bs), ref[0].vmap(jax_fn, (None, 0))(A0, bs), rtol=1e-5)
    check(jax.jacfwd(lambda A: fn(A, B0)[0])(A0), ref[0].jacfwd(lambda A: jax_fn(A, B0)[0])(A0))


def _tree_solve(jx, jn):
    def solve(A, b):
        return jx.lax.custom_linear_solve(
            lambda v: {"x": A @ v["x"], "y": 2 * v["y"]}, b,
            lambda mv, r: {"x": jn.linalg.solve(A, r["x"]), "y": r["y"] / 2},
            lambda vm, r: {"x": jn.linalg.solve(A.T, r["x"]), "y": r["y"] / 2})
    return solve


@pytest.mark.slow
def test_linear_solve_pytree_b(ref):
    b = {"x": B0, "y": f32(3.0)}
    fn, jax_fn = _tree_solve(jax, jnp), _tree_solve(*ref)
    check(fn(A0, b), jax_fn(A0, b))
    check(jax.jacfwd(fn, (0, 1))(A0, b), ref[0].jacfwd(jax_fn, (0, 1))(A0, b))
    check(jax.jacrev(fn, (0, 1))(A0, b), ref[0].jacrev(jax_fn, (0, 1))(A0, b))


def test_linear_solve_structure_errors():
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda v: v[:1], B0, lambda mv, r: r)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda v: v, B0, lambda mv, r: [r])
    with pytest.raises(ValueError, match="auxiliary output was expected"):
        lax.custom_linear_solve(lambda v: v, B0, lambda mv, r: (r, r, r), has_aux=True)


@pytest.mark.kernels
def test_linear_solve_kernel_path():
    from gpuarr.backends import opencl
    from gpuarr.compiler import compile_closed, passes
    if not opencl.available():
        pytest.skip("PoCL / pyopencl not available")
    fn = jax.grad(lambda A, b: jnp.exp(LIN["cg"](A, jnp.sin(b))).sum(), (0, 1))
    closed = passes.optimize(jax.make_jaxpr(fn)(A0, B0))
    consts = [np.asarray(getattr(c, "_value", c)) for c in closed.consts]
    got = opencl.run_plan(compile_closed(closed), consts + [A0, B0])
    check(got, [np.asarray(g) for g in fn(A0, B0)], rtol=1e-4)


# ================================================================ custom_root


def _root_cases(jx, jn):
    def newton(f, x0):
        x = x0
        for _ in range(12):
            x = x - f(x) / jx.grad(f)(x)
        return x

    def sqrt_cubed(x):  # the example of JAX's custom_root docs: y = x^(3/2)
        return jx.lax.custom_root(lambda y: y ** 2 - x ** 3, 1.0, newton, lambda g, y: y / g(1.0))

    def cube_root(x):  # bisection in a while loop: nothing to differentiate through
        def bisect(f, guess):
            def body(c):
                lo, hi = c
                mid = (lo + hi) / 2
                return jn.where(f(mid) < 0, mid, lo), jn.where(f(mid) < 0, hi, mid)
            lo, hi = jx.lax.fori_loop(0, 60, lambda i, c: body(c), (guess - 10.0, guess + 10.0))
            return (lo + hi) / 2
        return jx.lax.custom_root(lambda y: y ** 3 - x, x, bisect, lambda g, y: y / g(1.0))

    def vector(p):  # x0^3 = p0, x0 x1 = p1
        def solve(f, x0):
            step = lambda i, x: x - jn.linalg.solve(jx.jacobian(f)(x), f(x))  # noqa: E731
            return jx.lax.fori_loop(0, 20, step, x0)

        def tangent_solve(g, y):
            return jn.linalg.solve(jx.jacobian(g)(y), y)

        f = lambda x: jn.stack([x[0] ** 3 - p[0], x[0] * x[1] - p[1]])  # noqa: E731
        return jx.lax.custom_root(f, jn.ones(2, dtype=p.dtype), solve, tangent_solve)

    def with_aux(c):
        return jx.lax.custom_root(lambda y: y * y - c, c, lambda f, g: (newton(f, g), jn.float32(7)),
                                  lambda g, y: y / g(1.0), has_aux=True)

    def forward_newton(f, x0):  # derivatives by jvp: a while_loop in f has no VJP
        step = lambda i, x: x - f(x) / jx.jvp(f, (x,), (jn.ones_like(x),))[1]  # noqa: E731
        return jx.lax.fori_loop(0, 30, step, x0)

    def exp_series(y):  # exp(y), summed until the terms are small: the trip count follows y
        def body(c):
            k, term, total = c
            term = term * y / k
            return k + 1, term, total + term
        one = jn.ones_like(y)
        return jx.lax.while_loop(lambda c: jn.abs(c[1]) > 1e-9, body, (one, one, one))[2]

    def log(c):  # y = log(c) as the root of exp(y) - c
        return jx.lax.custom_root(lambda y: exp_series(y) - c, jn.zeros_like(c), forward_newton,
                                  lambda g, y: y / g(1.0))

    def vector_while(p):  # `vector` with x0^3 from a while_loop; jacfwd, as jacrev cannot
        def cube(y):
            return jx.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * y),
                                     (0, jn.ones_like(y)))[1]

        def solve(f, x0):
            step = lambda i, x: x - jn.linalg.solve(jx.jacfwd(f)(x), f(x))  # noqa: E731
            return jx.lax.fori_loop(0, 20, step, x0)

        f = lambda x: jn.stack([cube(x[0]) - p[0], x[0] * x[1] - p[1]])  # noqa: E731
        return jx.lax.custom_root(f, jn.ones(2, dtype=p.dtype), solve,
                                  lambda g, y: jn.linalg.solve(jx.jacfwd(g)(y), y))

    return dict(sqrt_cubed=sqrt_cubed, cube_root=cube_root, vector=vector, with_aux=with_aux,
                log=log, vector_while=vector_while)


ROOT = _root_cases(jax, jnp)
P0 = np.array([8.0, 3.0], f32)


def _vector_np(p):
    x0 = np.cbrt(p[0])
    return np.array([x0, p[1] / x0])


def test_root_values():
    check(ROOT["sqrt_cubed"](f32(2.0)), f32(2 ** 1.5))
    check(ROOT["cube_root"](f32(5.0)), np.cbrt(f32(5.0)), rtol=1e-5)
    check(ROOT["vector"](P0), _vector_np(np.float64(P0)).astype(f32))


@pytest.mark.parametrize("x", [0.5, 2.0, 3.0])
def test_root_jvp_and_jacfwd(x):
    x = f32(x)
    y, y_dot = jax.jvp(ROOT["sqrt_cubed"], (x,), (f32(1.0),))
    check(y, f32(x ** 1.5), rtol=1e-5)
    check(y_dot, f32(1.5 * np.sqrt(x)), rtol=1e-5)
    check(jax.jacfwd(ROOT["sqrt_cubed"])(x), f32(1.5 * np.sqrt(x)), rtol=1e-5)
    check(jax.jacfwd(ROOT["cube_root"])(x), f32(np.cbrt(x) / (3 * x)), rtol=1e-4)
    check(jax.grad(ROOT["cube_root"])(x), f32(np.cbrt(x) / (3 * x)), rtol=1e-4)
    np.testing.assert_allclose(jax.jacfwd(ROOT["cube_root"])(x),
                               fd_jvp(np.cbrt, (x,), (1.0,)), rtol=1e-4)


def test_root_vector_jacobians():
    want = np.stack([fd_jvp(_vector_np, (P0,), (e,)) for e in np.eye(2)], 1).astype(f32)
    check(jax.jacfwd(ROOT["vector"])(P0), want, rtol=1e-4, atol=1e-6)
    check(jax.jacrev(ROOT["vector"])(P0), want, rtol=1e-4, atol=1e-6)
    check(jax.jit(jax.jacfwd(ROOT["vector"]))(P0), want, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_root_matches_jax(ref):
    cases = _root_cases(*ref)
    x = f32(2.0)
    for name in ("sqrt_cubed", "cube_root"):
        check(jax.jvp(ROOT[name], (x,), (f32(1.0),)), ref[0].jvp(cases[name], (x,), (f32(1.0),)),
              rtol=1e-5)
        check(jax.grad(ROOT[name])(x), ref[0].grad(cases[name])(x), rtol=1e-5)
    check(jax.jacfwd(jax.jacfwd(ROOT["sqrt_cubed"]))(x),
          ref[0].jacfwd(ref[0].jacfwd(cases["sqrt_cubed"]))(x), rtol=1e-5)
    check(jax.jacfwd(ROOT["vector"])(P0), ref[0].jacfwd(cases["vector"])(P0), atol=1e-6)
    check(jax.jacrev(ROOT["vector"])(P0), ref[0].jacrev(cases["vector"])(P0), atol=1e-6)


def test_root_check_grads():
    check_grads_x64(ROOT["sqrt_cubed"], (2.0,), 2)
    check_grads_x64(ROOT["vector"], (np.float64(P0),), 1)


def test_root_grad_and_higher_order():
    # y = x^(3/2): y' = 1.5 x^(1/2), y'' = 0.75 x^(-1/2), in either mode.
    for x in (1.0, 2.0, 4.0):
        check(jax.grad(ROOT["sqrt_cubed"])(x), f32(1.5 * np.sqrt(x)), rtol=1e-5)
        check(jax.grad(jax.grad(ROOT["sqrt_cubed"]))(x), f32(0.75 / np.sqrt(x)), rtol=1e-4)
        check(jax.jacfwd(jax.grad(ROOT["sqrt_cubed"]))(f32(x)), f32(0.75 / np.sqrt(x)), rtol=1e-4)


def _newton(f, x0):
    x = x0
    for _ in range(12):
        x = x - f(x) / jax.grad(f)(x)
    return x


def _secant(f, x0):  # exact for an f affine in each element
    return x0 - f(x0) / (f(x0 + 1) - f(x0))


def test_root_initial_guess_gets_no_derivative():
    f = lambda g: lax.custom_root(lambda y: y ** 2 - 8.0, g, _newton, lambda g, y: y / g(1.0))  # noqa: E731
    check(jax.grad(f)(f32(1.0)), f32(0.0))
    check(jax.jvp(f, (f32(1.0),), (f32(1.0),))[1], f32(0.0))


def test_root_jit_and_vmap():
    xs = np.array([0.5, 2.0, 3.0], f32)
    for name in ("sqrt_cubed", "cube_root"):
        fn = ROOT[name]
        loop = lambda g: np.stack([np.asarray(g(x)) for x in xs])  # noqa: E731
        check(jax.jit(fn)(xs[1]), fn(xs[1]))
        check(jax.vmap(fn)(xs), loop(fn), rtol=1e-5)
        check(jax.vmap(jax.grad(fn))(xs), loop(jax.grad(fn)), rtol=1e-5)
        check(jax.jit(jax.vmap(jax.jacfwd(fn)))(xs), loop(jax.jacfwd(fn)), rtol=1e-5)
        check(jax.jit(jax.grad(fn))(xs[2]), jax.grad(fn)(xs[2]), rtol=1e-6)
    ps = np.stack([P0, 2 * P0, P0 + 1])
    check(jax.vmap(jax.jacrev(ROOT["vector"]))(ps),
          np.stack([np.asarray(jax.jacrev(ROOT["vector"])(p)) for p in ps]), rtol=1e-5, atol=1e-6)


def test_root_has_aux(ref):
    cases = _root_cases(*ref)
    c = f32(9.0)
    out, aux = ROOT["with_aux"](c)
    check((out, aux), (f32(3.0), f32(7.0)))
    check(jax.jvp(ROOT["with_aux"], (c,), (f32(1.0),)), ref[0].jvp(cases["with_aux"], (c,), (f32(1.0),)))
    check(jax.grad(lambda c: ROOT["with_aux"](c)[0])(c), f32(1 / 6), rtol=1e-5)
    check(jax.jit(jax.vmap(ROOT["with_aux"]))(np.array([4.0, 9.0], f32)),
          (np.array([2.0, 3.0], f32), np.array([7.0, 7.0], f32)))
    # An integer aux value gets a float0 tangent.
    def int_aux(c):
        return lax.custom_root(lambda y: y - c, 0.0, lambda f, g: (g - f(g), jnp.int32(7)),
                               lambda g, y: y / g(1.0), has_aux=True)

    (out, aux), (out_dot, aux_dot) = jax.jvp(int_aux, (f32(4.0),), (f32(1.0),))
    check((out, aux, out_dot), (f32(4.0), np.int32(7), f32(1.0)))
    assert aux_dot.dtype == jax.dtypes.float0 and aux_dot.shape == ()


def test_root_gradient_reaches_closed_over_pytree():
    def f(params):
        w, b = params["w"], params["b"]
        return lax.custom_root(lambda y: w * y - b, jnp.zeros(2, f32), _secant,
                               lambda g, y: y / g(jnp.ones(2, f32)))

    params = {"w": np.array([2.0, 4.0], f32), "b": np.array([1.0, 3.0], f32)}
    grads = jax.grad(lambda p: f(p).sum())(params)
    # y = b / w: dy/db = 1 / w, dy/dw = -b / w^2.
    check(grads, {"b": 1 / params["w"], "w": -params["b"] / params["w"] ** 2}, rtol=1e-5)
    jac = jax.jacfwd(f)(params)
    check(jac, {"b": np.diag(1 / params["w"]), "w": np.diag(-params["b"] / params["w"] ** 2)},
          rtol=1e-5)


def test_root_reverse_mode_with_tangent_solve_that_cannot_be_transposed():
    # Reverse mode transposes tangent_solve, as JAX does; where it cannot (a while_loop, a
    # custom_linear_solve without transpose_solve: JAX fails) it solves the transposed
    # system with tangent_solve instead.
    def while_solve(g, y):
        return lax.while_loop(lambda c: c[1] < 1, lambda c: (c[0] / g(1.0), c[1] + 1), (y, 0))[0]

    def linear_solve(g, y):
        return lax.custom_linear_solve(g, y, lambda mv, r: r / mv(1.0))

    xs = np.array([1.0, 2.0, 3.0], f32)
    for tangent_solve in (while_solve, linear_solve):
        fn = lambda x: lax.custom_root(lambda y: y ** 2 - x ** 3, 1.0, _newton, tangent_solve)  # noqa: E731, B023
        check(jax.grad(fn)(f32(2.0)), f32(1.5 * np.sqrt(2.0)), rtol=1e-5)
        check(jax.jit(jax.grad(fn))(f32(3.0)), f32(1.5 * np.sqrt(3.0)), rtol=1e-5)
        check(jax.grad(jax.grad(fn))(f32(2.0)), f32(0.75 / np.sqrt(2.0)), rtol=1e-4)
        check(jax.jacfwd(jax.grad(fn))(f32(2.0)), f32(0.75 / np.sqrt(2.0)), rtol=1e-4)
        # Under vmap the transpose runs per example.
        check(jax.grad(lambda x: jax.vmap(fn)(x).sum())(xs), (1.5 * np.sqrt(xs)).astype(f32),
              rtol=1e-5)


def test_root_structure_errors():
    with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda y: (y, y), 1.0, lambda f, g: g, lambda g, y: y)
    with pytest.raises(ValueError, match="auxiliary output was expected"):
        lax.custom_root(lambda y: y, 1.0, lambda f, g: (g, g, g), lambda g, y: y, has_aux=True)


@pytest.mark.slow
def test_root_forward_mode_through_while_loop(ref):
    # f holds a while_loop over x: forward mode never transposes df/dx, as in JAX.
    cases = _root_cases(*ref)
    c, cs = f32(5.0), np.array([0.5, 2.0, 5.0], f32)
    check(ROOT["log"](c), np.log(c), rtol=1e-5)
    check(jax.jvp(ROOT["log"], (c,), (f32(1.0),)), ref[0].jvp(cases["log"], (c,), (f32(1.0),)),
          rtol=1e-5)
    for fn, jax_fn in ((jax.jacfwd(ROOT["log"]), ref[0].jacfwd(cases["log"])),
                       (jax.jacfwd(jax.jacfwd(ROOT["log"])),
                        ref[0].jacfwd(ref[0].jacfwd(cases["log"])))):
        check(fn(c), jax_fn(c), rtol=1e-5)
        check(jax.jit(fn)(c), jax_fn(c), rtol=1e-5)
        check(jax.vmap(fn)(cs), ref[0].vmap(jax_fn)(cs), rtol=1e-5)
    check(jax.jacfwd(ROOT["log"])(c), f32(1 / c), rtol=1e-5)
    want = np.stack([fd_jvp(_vector_np, (P0,), (e,)) for e in np.eye(2)], 1).astype(f32)
    check(jax.jacfwd(ROOT["vector_while"])(P0), ref[0].jacfwd(cases["vector_while"])(P0),
          rtol=1e-5, atol=1e-6)
    check(jax.jit(jax.jacfwd(ROOT["vector_while"]))(P0), want, rtol=1e-4, atol=1e-6)
    # The tangent system is a custom_linear_solve with no transposed programs.
    closed = jax.make_jaxpr(lambda c, t: jax.jvp(ROOT["log"], (c,), (t,)))(c, c)
    (eqn,) = [e for e in closed.program.eqns if e.prim is lax.custom_solve.linear_solve_p]
    assert eqn.params["jaxprs"].vecmat is None and eqn.params["jaxprs"].transpose_solve is None


@pytest.mark.slow
def test_root_reverse_mode_through_while_loop(ref):
    # Reverse mode transposes tangent_solve, not df/dx, so it works here as in JAX.
    cases = _root_cases(*ref)
    c, cs = f32(5.0), np.array([0.5, 2.0, 5.0], f32)
    check(jax.grad(ROOT["log"])(c), ref[0].grad(cases["log"])(c), rtol=1e-5)
    check(jax.jit(jax.grad(ROOT["log"]))(c), f32(1 / c), rtol=1e-5)
    check(jax.vmap(jax.grad(ROOT["log"]))(cs), ref[0].vmap(ref[0].grad(cases["log"]))(cs),
          rtol=1e-5)
    loss = lambda jx, f: jx.grad(lambda c: jx.vmap(f)(c).sum())  # noqa: E731
    check(loss(jax, ROOT["log"])(cs), loss(ref[0], cases["log"])(cs), rtol=1e-5)
    check(jax.jacfwd(jax.grad(ROOT["log"]))(c), ref[0].jacfwd(ref[0].grad(cases["log"]))(c),
          rtol=1e-5)


def test_root_tangent_solve_structure_error_at_call_time():
    # Raised by custom_root itself, before any differentiation, with JAX's message.
    for tangent_solve, got in ((lambda g, y: [y], r"PyTreeDef\(\[\*\]\)"),
                               (lambda g, y: (y, y), r"PyTreeDef\(\(\*, \*\)\)")):
        with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must "
                                            rf"match x, got {got} and PyTreeDef\(\*\)\."):
            lax.custom_root(lambda y: y, 1.0, lambda f, g: g, tangent_solve)
    with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must match x"):
        lax.custom_root(lambda y: y, {"a": 1.0}, lambda f, g: g, lambda g, y: y["a"])
    # Wrong shapes show under differentiation, as in JAX (there as a custom_jvp error).
    fn = lambda c: lax.custom_root(lambda y: y - c, jnp.zeros(2, f32), _secant,  # noqa: E731
                                   lambda g, y: y[:1])
    check(fn(np.ones(2, f32)), np.ones(2, f32))
    with pytest.raises(TypeError, match=r"tangent_solve\(\) output shapes and dtypes must match"):
        jax.jvp(fn, (np.ones(2, f32),), (np.ones(2, f32),))


def test_custom_root_with_an_integer_guess_has_no_float_tangent():
    def root(a):
        return lax.custom_root(lambda x: x * x - a, 1, lambda f, x: x, lambda g, y: y / 2.0)

    assert int(root(2.0)) == 1
    with pytest.raises(TypeError, match=r"Expected float0\[\] \(tangent type of int32\[\]\)"):
        jax.jvp(root, (2.0,), (1.0,))
