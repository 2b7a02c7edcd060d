"""Every elementwise, layout and reduction primitive through the kernel path, compared with
the NumPy backend; kernel counts of known programs."""
import numpy as np
import pytest
from kernel_harness import check, kernel_count, one_eqn_program, run_kernels

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.compiler import lowering, passes
from gpuarr.compiler.plan import HostStep, ReductionKernel
from gpuarr.core import ShapedArray

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]
rng = np.random.default_rng(1)

UNIT = ["asin", "acos", "atanh"]
ABOVE_ONE = ["acosh"]
POSITIVE = ["log", "sqrt", "rsqrt", "log1p", "lgamma"]
FLOAT_UNARY = ["neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2", "log", "log1p",
               "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
               "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "square", "abs"]


def float_input(name, shape=(5, 7), dtype=np.float32):
    if name in UNIT:
        x = rng.uniform(-0.9, 0.9, shape)
    elif name in ABOVE_ONE:
        x = rng.uniform(1.1, 4, shape)
    elif name in POSITIVE:
        x = rng.uniform(0.1, 4, shape)
    else:
        x = rng.uniform(-3, 3, shape)
    return x.astype(dtype)


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_unary(name):
    prim = getattr(lax.lax, f"{name}_p")
    x = float_input(name)
    check(lambda x: prim.bind(x), x)


@pytest.mark.parametrize("name", ["round", "round_even"])
def test_round(name):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], np.float32)
    method = 1 if name == "round_even" else 0
    closed = one_eqn_program(lax.lax.round_p, {"rounding_method": method}, ShapedArray((7,), np.float32), x)
    check(closed, x, exact=True)


FLOAT_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter"]


@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_binary(name):
    prim = getattr(lax.lax, f"{name}_p")
    x = float_input("log" if name == "pow" else "x")
    y = float_input("x")
    y[0, :3] = [0.0, np.nan, np.inf]
    check(lambda x, y: prim.bind(x, y), x, y)


INT_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor",
              "shift_left", "shift_right_arithmetic", "shift_right_logical"]


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.uint32])
@pytest.mark.parametrize("name", INT_BINARY)
def test_int_binary(name, dtype):
    prim = getattr(lax.lax, f"{name}_p")
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (6, 5), endpoint=True).astype(dtype)
    y = rng.integers(info.min, info.max, (6, 5), endpoint=True).astype(dtype)
    if name.startswith("shift"):
        y = rng.integers(0, 40, (6, 5)).astype(dtype)
    y[0, 0] = 0
    check(lambda x, y: prim.bind(x, y), x, y)


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_compare(name, dtype):
    prim = getattr(lax.lax, f"{name}_p")
    x = rng.integers(0, 3, (4, 6)).astype(dtype)
    y = rng.integers(0, 3, (4, 6)).astype(dtype)
    check(lambda x, y: prim.bind(x, y), x, y)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.uint8])
def test_not_abs_sign(dtype):
    x = rng.integers(-5 if dtype == np.int32 else 0, 5, (9,)).astype(dtype)
    check(lambda x: lax.bitwise_not(x) if hasattr(lax, "bitwise_not") else lax.lax.not_p.bind(x), x)
    if dtype == np.int32:
        check(lambda x: lax.abs(x) + lax.sign(x) + lax.integer_pow(x, 3), x)


def test_select_clamp_and_logic():
    x = float_input("x", (8, 3))
    y = float_input("x", (8, 3))
    check(lambda x, y: lax.select(x > y, x * 2, y - 1), x, y)
    check(lambda x, y: jnp.where(x > 0, jnp.log(jnp.abs(x) + 1), 0.0) + jnp.clip(y, -1, 1), x, y)
    check(lambda x: lax.select_n(lax.convert_element_type(x > 0, np.int32), x, -x), x)


CASTS = [(np.float32, np.uint8), (np.float32, np.int32), (np.float32, np.int8),
         (np.float32, np.bool_), (np.int32, np.float32), (np.uint8, np.int32),
         (np.int32, np.int8), (np.bool_, np.float32), (np.float32, np.uint32)]


@pytest.mark.parametrize("src,dst", CASTS)
def test_convert(src, dst):
    if np.dtype(src).kind == "f":
        x = np.array([np.nan, -np.inf, np.inf, -1e10, 1e10, -1.7, 2.9, 254.0, 255.5, 256.0, 0.0,
                      -0.0, 1e-42], src)
    else:
        x = rng.integers(0, 2 if src == np.bool_ else 200, 13).astype(src)
    check(lambda x: lax.convert_element_type(x, dst), x)


def test_saturating_cast_known_answer():
    got = gpuarr.jit(lambda: jnp.arange(254.0, 258.0).astype("uint8"))
    del got
    check(lambda x: (x + jnp.arange(254.0, 258.0)).astype("uint8"), np.float32(0))


@pytest.mark.parametrize("y", [65, 2 ** 20 + 1, -(2 ** 31 + 3), 2 ** 40])
def test_integer_pow_with_large_exponents(y):
    # One named square per bit of y (the nested product doubles in length with each bit).
    x = np.array([1.0, -1.0, 0.5, -0.999, 1.0000001, 2.0, 0.0], np.float32)
    if y > 0:
        check(lambda x: lax.integer_pow(x, y), x, rtol=1e-4)
    n = np.array([0, 1, -1, 2, 3, -7, 12345], np.int32)
    if y > 0:
        check(lambda n: lax.integer_pow(n, y), n)
    else:
        check(lambda x: lax.integer_pow(x, y), x[[0, 1, 4]], rtol=1e-4)


def test_integer_pow_and_iota():
    x = float_input("x", (3, 4))
    check(lambda x: lax.integer_pow(x, 3) - lax.integer_pow(x, -2) + lax.integer_pow(x, 0), x)
    check(lambda x: x + lax.broadcasted_iota(np.float32, (3, 4), 1) * lax.broadcasted_iota(
        np.float32, (3, 4), 0), x)


def test_layout_ops_fuse_into_one_kernel():
    x = float_input("x", (4, 6))
    y = float_input("x", (6,))

    def f(x, y):
        a = jnp.exp(x).T                        # transpose
        b = a.reshape(3, 2, 4)                  # reshape of a transpose
        c = lax.rev(b, (2,))                    # reverse
        return c * (y.reshape(3, 2) * 2.0)[:, :, None] + jnp.tanh(c)
    plan = check(f, x, y)
    assert kernel_count(plan) == 1


def test_integer_indexing_squeezes_in_the_kernel():
    x = float_input("x", (4, 1, 6))

    # x[1, 0] is a slice and a squeeze, [None] a broadcast_in_dim: index maps of one kernel.
    for f in (lambda x: jnp.exp(x)[1, 0][None] * 2.0,
              lambda x: jnp.exp(lax.squeeze(x, (1,))[:, 2:3]) + 1.0):
        assert kernel_count(check(f, x)) == 1


def test_slices_are_index_maps():
    x = float_input("x", (5, 9))
    (got,), plan = run_kernels(lambda x: lax.slice(jnp.exp(x), (1, 0), (5, 9), (2, 3)) * 2.0, x)
    np.testing.assert_allclose(got, np.exp(x)[1:5:2, 0:9:3] * 2, rtol=1e-6)
    assert kernel_count(plan) == 1


def test_split_pieces_are_slices_of_one_kernel():
    x = float_input("x", (4, 6))
    f = lambda x: [p * 2.0 for p in lax.split(jnp.exp(x), (1, 3, 2), axis=1)]  # noqa: E731
    (a, b, c), plan = run_kernels(f, x)
    want = np.split(np.exp(x) * 2, [1, 4], axis=1)
    for got, w in zip((a, b, c), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    assert not any(isinstance(s, HostStep) for s in plan.steps)


def test_stack_and_unstack_are_layout_in_kernels():
    x, y = float_input("x", (3, 5)), float_input("x", (3, 5))

    def f(x, y):
        s = lax.stack([jnp.exp(x), y * 2.0], axis=1)
        return [s + 1.0] + [u - 1.0 for u in lax.unstack(s, axis=2)]
    got, plan = run_kernels(f, x, y)
    s = np.stack([np.exp(x), y * 2], axis=1)
    for g, w in zip(got, [s + 1] + [s[:, :, i] - 1 for i in range(5)]):
        # atol: exp within a few ulps (the native column's vector exp), then `- 1` cancels
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    assert not any(isinstance(s, HostStep) for s in plan.steps)


def test_pow_with_an_integer_exponent_converts_it_in_the_kernel():
    x = float_input("x", (4, 5))
    y = rng.integers(-3, 4, (4, 5)).astype(np.int32)
    got, plan = run_kernels(lambda x, y: lax.pow(jnp.abs(x) + 0.5, y) * 2.0, x, y)
    np.testing.assert_allclose(got[0], np.power(np.abs(x) + 0.5, y.astype(np.float32)) * 2,
                               rtol=1e-5)
    assert kernel_count(plan) == 1 and not any(isinstance(s, HostStep) for s in plan.steps)


def test_while_with_a_batched_predicate_runs_per_example():
    # vmap keeps one while whose cond returns a predicate per example; the host loop runs
    # until none holds and keeps the carries of the examples that are done.
    x = np.abs(float_input("x", (3, 4))) + np.float32([[0.1], [1.0], [4.0]])
    f = gpuarr.vmap(lambda r: lax.while_loop(lambda c: c.sum() < 20.0, lambda c: c * 2.0, r))
    got, plan = run_kernels(f, x)
    want = x.copy()
    for row in want:
        while row.sum() < 20:
            row *= 2
    np.testing.assert_array_equal(got[0], want)
    check(f, x)


def test_cond_residual_placeholders_are_constants_in_kernels():
    # grad of a cond whose branches save residuals of different types: each branch returns
    # empty2 placeholders for the slots it does not fill, which the kernels write as zeros.
    x = float_input("x", (2, 3))

    def loss(x):
        return lax.cond(x.sum() > 0, lambda x: jnp.sin(x).sum() * x[0],
                        lambda x: jnp.cos(x[0]) * jnp.exp(x[1]), x).sum()
    for sign in (1.0, -1.0):  # each branch taken
        assert "empty2" in str(gpuarr.make_jaxpr(gpuarr.grad(loss))(sign * x))
        check(gpuarr.grad(loss), sign * x)


def test_six_op_elementwise_chain_is_one_kernel():
    x = float_input("x", (64, 33))
    y = float_input("x", (33,))
    plan = check(lambda x, y: jnp.tanh(jnp.exp(x) * 2.0 + y) - jnp.sqrt(jnp.abs(x)) / 3.0, x, y)
    assert kernel_count(plan) == 1


def softmax(x, axis=-1):
    axis = axis % x.ndim
    keep = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    m = lax.reshape(lax.reduce_max(x, (axis,)), keep)
    e = jnp.exp(x - m)
    return e / lax.reshape(lax.reduce_sum(e, (axis,)), keep)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_at_most_two_kernels(axis):
    x = rng.standard_normal((16, 70)).astype(np.float32)
    plan = check(lambda x: softmax(x, axis), x)
    assert kernel_count(plan) <= 2
    assert all(not isinstance(s, HostStep) for s in plan.steps)


def layer_norm(x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("f", [gpuarr.nn.softmax, gpuarr.nn.log_softmax, layer_norm,
                               lambda x: gpuarr.nn.softmax(x, axis=0)],
                         ids=["softmax", "log_softmax", "layer_norm", "softmax_axis0"])
def test_functions_of_a_reduction_fuse_into_its_epilogue(f):
    # The simplifier writes x / s as x * (1 / s); 1 / s (rsqrt(var + eps), log s) on the reduced
    # shape is recomputed per element in the consumer, which becomes the reduction's epilogue.
    x = rng.standard_normal((16, 70)).astype(np.float32)
    plan = check(f, x, rtol=2e-6, atol=1e-6)
    assert kernel_count(plan) == 2 and all(not isinstance(s, HostStep) for s in plan.steps)
    assert "epilogue" in plan.kernels[-1].reason


def test_functions_of_a_reduction_read_by_other_consumers():
    # Recomputed where it is read: an outer product with another array, a split (two-pass)
    # reduction whose consumer stays its own kernel, and a value shared by two consumers.
    x = rng.uniform(0.5, 2.0, (12, 40)).astype(np.float32)   # sums far from 0
    y = rng.standard_normal((9,)).astype(np.float32)
    check(lambda x, y: (1.0 / jnp.sum(x, axis=1))[:, None] * y, x, y, rtol=2e-6)
    big = rng.standard_normal((2, 65536)).astype(np.float32)
    check(lambda x: x / jnp.sqrt(jnp.sum(x * x, axis=1, keepdims=True)), big, rtol=1e-5)
    check(lambda x: (x * (1.0 / jnp.max(x, axis=0)), jnp.exp(x) / jnp.max(x, axis=0)), x, rtol=2e-6)


@pytest.mark.parametrize("shape,axes", [((300, 3), (1,)), ((40, 7), (1,)), ((5, 64), (0,)),
                                        ((6,), (0,)), ((3, 50, 2), (0,)), ((2, 2), (0, 1))])
def test_short_sums_add_in_order_as_numpy(shape, axes):
    # Fewer than 8 reduced elements: one thread adds them in order (NumPy's pairwise sum is a
    # plain loop below 8), so the sums equal the NumPy backend's bit for bit. (Over several
    # axes NumPy's order is its iterator's; those are not claimed here.)
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(1000)
    plan = check(lambda x: (jnp.sum(x * x, axis=axes), jnp.prod(x, axis=axes)), x, exact=True)
    assert all(k.strategy == "column" for k in plan.kernels if isinstance(k, ReductionKernel))


REDUCE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]


@pytest.mark.parametrize("shape,axes", [((7, 300), (1,)), ((300, 7), (0,)), ((4, 5, 6), (0, 2)),
                                        ((1000,), (0,)), ((3, 1, 4), (1,)), ((6, 5, 40), (1, 2)),
                                        ((5, 4), ())])
@pytest.mark.parametrize("name", REDUCE)
def test_reductions(name, shape, axes):
    x = (rng.random(shape) + 0.5).astype(np.float32)
    prim = getattr(lax.lax, f"{name}_p")
    check(lambda x: prim.bind(x, axes=axes), x, rtol=1e-4)
    check(lambda x: jnp.sqrt(prim.bind(jnp.exp(x) * 2, axes=axes)) + 1, x, rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.int8])
def test_integer_reductions(dtype):
    x = rng.integers(0, 3, (9, 70)).astype(dtype)
    for name in ["reduce_max", "reduce_min"] + (["reduce_and", "reduce_or"] if dtype == np.bool_
                                                else ["reduce_sum"]):
        prim = getattr(lax.lax, f"{name}_p")
        check(lambda x: prim.bind(x, axes=(1,)), x)
        check(lambda x: prim.bind(x, axes=(0, 1)), x)


def test_reduction_post_map_and_nan():
    x = rng.standard_normal((12, 40)).astype(np.float32)
    x[3, 5] = np.nan
    plan = check(lambda x: jnp.log(jnp.sum(jnp.exp(x), axis=1)) * 2.0, x)
    assert kernel_count(plan) == 1
    check(lambda x: lax.reduce_max(x, (1,)) - lax.reduce_min(x, (1,)), x)


def test_mean_var_and_library_calls():
    x = rng.standard_normal((10, 20)).astype(np.float32)
    w = rng.standard_normal((20, 5)).astype(np.float32)
    plan = check(lambda x, w: jnp.tanh(x @ w + 1.0).sum(0) + x.mean(), x, w, rtol=1e-4)
    assert any(isinstance(s, HostStep) and s.role == "library" for s in plan.steps)
    check(lambda x: jnp.var(x, axis=0), x, rtol=1e-4)


def test_every_kernel_primitive_has_a_lowering():
    """Every primitive of gpuarr.lax has a kernel lowering or sits on an explicit host list."""
    lowering.register_all()
    missing = []
    for prim in lowering.all_primitives():
        kind, _ = lowering.lowering_of(prim)
        if kind == "fallback" and prim.name not in lowering.HOST_FALLBACK:
            missing.append(prim.name)
    assert not missing, f"primitives with neither a kernel lowering nor a host fallback: {missing}"
    # pow stays a kernel operation: its rewrite only converts an integer exponent.
    assert set(lowering.DECOMPOSED) == set(passes.KERNEL_DECOMPOSITIONS) - {"pow"}


def test_host_fallback_runs():
    # complex128 has no kernels: its equations run on the host between kernels.
    x = float_input("x", (3, 4))
    with gpuarr.enable_x64(True):
        plan = check(lambda x: lax.convert_element_type(jnp.exp(x), np.complex128) * 2j, x)
    assert any(isinstance(s, HostStep) and s.role == "fallback" for s in plan.steps)


def test_expensive_broadcast_is_materialized():
    x = float_input("x", (8,))
    y = float_input("x", (256, 8))
    plan = check(lambda x, y: jnp.exp(jnp.sin(x))[None, :] * y, x, y)
    assert kernel_count(plan) == 2
    assert any("broadcast" in k.reason for k in plan.kernels)


def test_reductions_fuse_elementwise_producers():
    x = float_input("x", (30, 50))
    plan = check(lambda x: jnp.sum(jnp.tanh(x) * 2.0 + 1.0, axis=0), x, rtol=1e-4)
    assert kernel_count(plan) == 1 and isinstance(plan.kernels[0], ReductionKernel)


def test_nested_jit_is_inlined_and_fused():
    inner = gpuarr.jit(lambda x: jnp.sin(x) * 2.0)
    x = float_input("x", (5, 6))
    plan = check(lambda x: inner(x) + inner(x * 3.0), x)
    assert kernel_count(plan) == 1 and not any(isinstance(s, HostStep) for s in plan.steps)


def test_gradient_programs_run_as_kernels():
    x = float_input("x", (4, 9))
    plan = check(gpuarr.grad(lambda x: jnp.sum(jnp.tanh(x) * jnp.exp(x * 0.5))), x, rtol=1e-4)
    assert not any(isinstance(s, HostStep) for s in plan.steps)
    check(gpuarr.vmap(lambda r: softmax(r[None, :])[0]), x)


def test_threefry_as_elementwise():
    import gpuarr.random as grandom
    key = grandom.PRNGKey(0)
    plan = check(lambda k: grandom.uniform(k, (8, 5)) * 2.0, key, exact=True)
    assert not any(isinstance(s, HostStep) for s in plan.steps)


def test_control_flow_bodies_run_as_kernel_sub_plans():
    from gpuarr.compiler import compile_closed, passes
    from gpuarr.compiler.fusion import FusionOptions
    from gpuarr.platforms import get_platform
    plat = get_platform("opencl")

    def f(x):
        def body(c):
            i, v = c
            return i + 1, jnp.tanh(v) * 1.5
        _, v = lax.while_loop(lambda c: c[0] < 5, body, (0, x))
        v = lax.cond(jnp.sum(v) > 0, lambda v: v * 2.0, lambda v: v - 1.0, v)
        carry, ys = lax.scan(lambda c, r: (c + r, jnp.exp(r) * c), jnp.zeros(x.shape[1:]), v)
        return carry, ys

    x = np.random.default_rng(3).uniform(-3, 3, (4, 3)).astype(np.float32)
    closed = passes.optimize(gpuarr.make_jaxpr(f)(x))
    used = []

    def sub_compiler(sub):
        used.append(sub)
        return plat.compile(passes.optimize(sub))
    launch_plan = compile_closed(closed, FusionOptions(sub_compiler=sub_compiler))
    from gpuarr.backends import opencl
    from gpuarr.backends.numpy import codegen
    got = opencl.run_plan(launch_plan, [x])
    want = codegen.compile_closed(closed)(x)
    for g, w in zip(got, want):  # the scan's running sums cancel: errors scale with the sums
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(w))))
    assert len(used) >= 4
    assert sum(s.kind == "host" for s in launch_plan.steps) == 3


def test_sibling_outputs_share_one_kernel():
    x = float_input("x", (6, 7))
    plan = check(lambda x: (jnp.sin(x) * 2.0, jnp.cos(x) + x, x * x), x)
    assert kernel_count(plan) == 1
    import gpuarr.random as grandom
    plan = check(lambda k: grandom.bits(k, (4, 4)), grandom.PRNGKey(3), exact=True)
    assert kernel_count(plan) <= 1


def test_big_full_reductions_run_in_two_passes():
    x = rng.standard_normal((256, 512)).astype(np.float32)
    plan = check(lambda x: jnp.sqrt(jnp.sum(x * x)) + 1.0, x, rtol=1e-4)
    assert kernel_count(plan) == 2
    first, second = plan.kernels
    assert first.shape == (1024,) and second.red_shape == (1024,) and second.strategy == "full"
    check(lambda x: lax.reduce_max(jnp.abs(x).T, (0, 1)), x)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint8])
def test_bit_counts_use_the_operand_width(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, -1 if info.min < 0 else info.max, info.min, info.max, 5, 96], dtype)
    with gpuarr.enable_x64(dtype == np.int64):
        check(lambda x: lax.population_count(x), x)
        check(lambda x: lax.clz(x), x)
