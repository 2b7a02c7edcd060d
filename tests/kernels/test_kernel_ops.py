"""Ops that used to be host steps, now kernels: arg reductions, two-pass full reductions of any
size, pad/concatenate/dynamic_update_slice as index-map selects, cumulative scans, special
functions, 16-bit floats and windowed reductions. Each runs on PoCL against the NumPy backend
(every rendered kernel compiled by NVRTC for sm_90), with kernel counts of known programs."""
import numpy as np
import pytest
from kernel_harness import check, kernel_count

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import dtypes, lax
from gpuarr.compiler.explain import describe
from gpuarr.compiler.plan import (
    ElementwiseKernel,
    Gather,
    HostStep,
    Load,
    PadView,
    ReductionKernel,
    ScanKernel,
    Window,
)
from gpuarr.lax import slicing, special, windowed

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]
rng = np.random.default_rng(7)


def no_host_steps(plan) -> bool:
    return not any(isinstance(s, HostStep) for s in plan.steps)


# ---- argmax / argmin ---------------------------------------------------------------------------

def arg_input(shape, dtype=np.float32):
    x = rng.integers(-3, 4, shape).astype(dtype)   # small integers: many ties
    if np.dtype(dtype).kind == "f":
        x.flat[3] = np.nan                         # NaN wins (first NaN along the axis)
        x.flat[-2] = np.nan
        x.flat[5] = -np.inf
    return x


@pytest.mark.parametrize("shape,axis", [((6, 70), 1), ((70, 6), 0), ((4, 5, 9), 1),
                                        ((300, 3), 1), ((1000,), 0)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions(name, shape, axis):
    fn = getattr(lax, name)
    x = arg_input(shape)
    plan = check(lambda x: fn(jnp.abs(x) * 2.0 - x, axis, np.int32), x)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    (k,) = plan.kernels
    assert isinstance(k, ReductionKernel) and k.reduce_op == name and k.value_dtype == "float32"


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_integer_arg_reductions_and_post_map(dtype):
    x = arg_input((9, 40), np.int32).astype(dtype)
    plan = check(lambda x: lax.argmax(x, 1, np.int32) * 3 + 1, x)
    assert kernel_count(plan) == 1
    check(lambda x: lax.argmin(x, 0, np.int32), x)


def test_jnp_argmax_of_a_flattened_array():
    x = arg_input((8, 16))
    x.flat[3] = x.flat[-2] = 0.0
    plan = check(lambda x: jnp.argmax(jnp.sin(x)), x)
    assert kernel_count(plan) == 1 and no_host_steps(plan)


# ---- two-pass full reductions ------------------------------------------------------------------

@pytest.mark.parametrize("size", [65536 + 1, 3 * 65536 + 77])
def test_two_pass_reductions_of_any_size(size):
    x = rng.standard_normal(size).astype(np.float32)
    plan = check(lambda x: jnp.sum(x * x) + 1.0, x, rtol=1e-4)
    first, second = plan.kernels
    assert first.strategy == "split" and first.limit == size
    assert first.out_size * first.red_size >= size > (first.out_size - 1) * first.red_size
    assert second.strategy == "full" and second.red_shape == first.shape


def test_two_pass_max_of_a_transposed_operand():
    x = rng.standard_normal((301, 257)).astype(np.float32)
    x[200, 13] = 50.0
    plan = check(lambda x: lax.reduce_max(x.T * 2.0, (0, 1)), x)
    assert kernel_count(plan) == 2


# ---- pad, concatenate, dynamic_update_slice, dynamic_slice ---------------------------------------

PADS = [((1, 2, 0), (0, 3, 0)), ((2, -1, 1), (-2, 1, 2)), ((-1, -2, 0), (0, 0, 3)),
        ((0, 0, 0), (-3, -2, 0))]


@pytest.mark.parametrize("config", PADS)
def test_pad_is_one_fused_kernel(config):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    plan = check(lambda x, v: lax.pad(x * 2.0 + 1.0, v, config) - 3.0, x, np.float32(-9))
    assert kernel_count(plan) == 1 and no_host_steps(plan)


def test_pad_of_pad_and_jnp_pad():
    x = rng.integers(0, 9, (4, 3)).astype(np.int32)
    plan = check(lambda x: lax.pad(lax.pad(x + 1, np.int32(7), ((1, 1, 1), (0, 2, 0))),
                                   np.int32(-1), ((-1, 2, 0), (1, 0, 1))), x)
    assert kernel_count(plan) == 1
    check(lambda x: jnp.pad(x, ((2, 1), (0, 3))).T * 2, x)


PAD_PAIRS = [(((2, 1, 0), (0, 3, 0)), ((1, -2, 0), (-1, 2, 0))),     # merged: no interior
             (((1, 0, 2), (0, 1, 0)), ((-2, 3, 0), (2, -1, 1))),     # merged: one interior per dim
             (((0, -1, 1), (1, 1, 1)), ((1, 2, 2), (0, 0, 0))),      # dim 0 has both: two views
             (((-1, 0, 0), (2, 0, 0)), ((0, 0, 1), (-3, -1, 3)))]


@pytest.mark.parametrize("inner,outer", PAD_PAIRS)
def test_pads_of_pads_and_nested_concatenates(inner, outer):
    # A pad read through a pad is one PadView when each dim has interior padding in at most
    # one of them (IndexMap.merge_pads); the masks of both pads still select the padding.
    x = rng.integers(0, 9, (4, 5)).astype(np.int32)
    plan = check(lambda x: lax.pad(lax.pad(x * 3, np.int32(7), inner), np.int32(-1), outer), x)
    assert kernel_count(plan) == 1
    (load,) = [n for n in plan.kernels[0].nodes if isinstance(n, Load)]
    merged = all(i == 0 or j == 0 for (_, _, i), (_, _, j) in zip(inner, outer))
    assert sum(isinstance(v, PadView) for v in load.index.views) == (1 if merged else 2)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    along_1 = ((0, 0, 0), outer[1])

    def f(x, y):
        inside = jnp.concatenate([jnp.concatenate([x, y], 1), y[:, :1]], 1)
        return jnp.concatenate([y, lax.pad(inside, np.float32(0.5), along_1), y[:, ::-1]], 1)
    plan = check(f, x.astype(np.float32), y, exact=True)
    assert kernel_count(plan) == 1


def test_concatenate_is_one_fused_kernel():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 2)).astype(np.float32)
    plan = check(lambda x, y: jnp.concatenate([x * 2.0, y, x[:, :1] - 1.0, y[:, :0]], axis=1) + 1.0,
                 x, y)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    check(lambda x: jnp.concatenate([x, -x, x * 3.0], axis=0).T, x)


def test_concatenate_of_empty_inputs_only():
    """Every input empty along the axis (jnp.piecewise with no conditions concatenates two):
    the output is empty too, and planning it must not look for a last piece."""
    e = np.zeros((2, 0), np.float32)
    check(lambda a, b: jnp.concatenate([a, b], axis=1) + 1.0, e, e)
    check(lambda a, b: jnp.concatenate([a, b]), np.zeros((0,), bool), np.zeros((0,), bool))


@pytest.mark.parametrize("starts", [(1, 2), (4, 6), (-3, 0), (9, -9)])
def test_dynamic_update_slice_clamps_its_starts(starts):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    u = rng.standard_normal((2, 3)).astype(np.float32)
    plan = check(lambda x, u, a, b: slicing.dynamic_update_slice(x * 2.0, u, (a, b)) + 1.0,
                 x, u, np.int32(starts[0]), np.int32(starts[1]))
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    assert any(isinstance(n, Gather) for n in plan.kernels[0].nodes)


def test_dynamic_slice_clamps_its_starts():
    x = rng.standard_normal((6, 7)).astype(np.float32)
    for a, b in [(1, 2), (5, 6), (-3, 0), (-100, 100)]:
        plan = check(lambda x, a, b: slicing.dynamic_slice(x * 2.0, (a, b), (3, 4)), x,
                     np.int32(a), np.int32(b))
        assert no_host_steps(plan)


# ---- cumulative ops ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,reverse", [((4, 300), 1, False), ((3, 9), 1, True),
                                                ((40, 5), 0, False), ((3, 70, 4), 1, True),
                                                ((600,), 0, True)])
@pytest.mark.parametrize("name", ["cumsum", "cummax", "cumprod"])
def test_cumulative_ops(name, shape, axis, reverse):
    prim = getattr(lax, name)
    x = rng.standard_normal(shape).astype(np.float32)
    if name == "cumprod":
        x = (1.0 + 0.01 * x).astype(np.float32)
    x.flat[7] = np.nan if name == "cummax" else x.flat[7]
    plan = check(lambda x: prim(x * 2.0, axis, reverse=reverse), x, rtol=1e-4, atol=1e-4)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    (k,) = plan.kernels
    contiguous = axis == len(shape) - 1 and shape[axis] > 16
    assert isinstance(k, ScanKernel) and k.strategy == ("block" if contiguous else "sequential")


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_integer_scans_are_exact(dtype):
    x = rng.integers(0, 50, (5, 333)).astype(dtype)
    with gpuarr.enable_x64(dtype == np.int64):
        check(lambda x: lax.cumsum(x, 1), x)
        check(lambda x: lax.cummin(x, 1, reverse=True), x)
        check(lambda x: jnp.cumsum(x, axis=0) + 1, x)


# ---- special functions -------------------------------------------------------------------------

def test_erf_inv_digamma_polygamma_fuse():
    y = rng.uniform(-0.999, 0.999, 300).astype(np.float32)
    y[:6] = [1.0, -1.0, 0.0, 1.5, np.nan, 1e-30]
    plan = check(lambda y: special.erf_inv(y) * 2.0, y, rtol=3e-6, atol=1e-6)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    z = rng.uniform(-6.0, 30.0, 300).astype(np.float32)
    z[:5] = [0.0, -2.0, np.inf, np.nan, 1e-4]
    zz = z[np.abs(z - 1.4616321) > 0.05]            # away from digamma's positive root
    check(lambda z: special.digamma(z) + 1.0, zz, rtol=1e-5, atol=1e-6)
    m = rng.integers(0, 4, 300).astype(np.float32)
    m[:3] = [1.5, -1.0, 2.0]
    check(lambda m, z: special.polygamma(m, z), m, z, rtol=1e-5, atol=1e-6)


def test_normal_samples_use_the_erf_inv_giles_kernel():
    # erf_inv_giles (behind random.normal) is a device function of its own that repeats the
    # NumPy emulation of XLA step for step: equal bit for bit (tests/kernels/test_xla_math.py).
    from gpuarr.random.xla_math import erf_inv_giles
    y = np.linspace(-0.999999, 0.999999, 4001).astype(np.float32)
    y[:4] = [1.0, -1.0, 0.0, np.nan]
    plan = check(lambda y: erf_inv_giles(y) * np.float32(1.4142135), y, exact=True)
    assert kernel_count(plan) == 1 and no_host_steps(plan)


def test_sampler_multiply_adds_are_fused_in_the_kernel():
    # xla_fma rounds once on the host and in the kernel (fma): (1 + e)^2 - (1 + 2e) keeps e^2.
    from gpuarr.random.xla_math import xla_fma
    eps = np.float32(2.0 ** -12)
    a = rng.uniform(-2.0, 2.0, 300).astype(np.float32)
    a[0] = 1 + eps
    c = rng.uniform(-2.0, 2.0, 300).astype(np.float32)
    c[0] = -(1 + 2 * eps)
    plan = check(lambda a, c: xla_fma(a, a, c), a, c, exact=True)
    assert kernel_count(plan) == 1 and no_host_steps(plan)


def test_special_functions_in_double():
    with gpuarr.enable_x64(True):
        y = rng.uniform(-1.0, 1.0, 200)
        # The far tails (1 - |y| down to 2^-53), where a start from Giles' float32 polynomial
        # was 0.5 off and three Halley steps left 1e-2 of it.
        y[:6] = [1.0 - 1e-12, -0.9999999, 0.0, 1.0 - 2.0**-53, -(1.0 - 2.0**-50), 1.0 - 1.7e-15]
        check(lambda y: special.erf_inv(y), y, rtol=1e-13, atol=1e-15)
        z = rng.uniform(-6.0, 30.0, 200)
        check(lambda z: special.digamma(z), z, rtol=1e-12, atol=1e-12)


# ---- float16 and bfloat16 ----------------------------------------------------------------------

HALVES = [np.float16, dtypes.bfloat16]


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_half_precision_programs_stay_on_kernels(dtype):
    x = rng.standard_normal((8, 36)).astype(dtype)
    y = rng.standard_normal((36,)).astype(dtype)
    plan = check(lambda x, y: jnp.tanh(x * y + 1.0) - jnp.exp(x) / 3.0, x, y, rtol=1e-2, atol=1e-2)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    # Small integers sum exactly in any order; argmax and the scan see 16-bit inputs.
    xi = rng.integers(-8, 8, (8, 36)).astype(dtype)
    plan = check(lambda x: (jnp.sum(x, axis=1), lax.argmax(x, 1, np.int32), lax.cumsum(x, 1),
                            lax.pad(x, dtype(0.5), ((1, 0, 0), (0, 1, 1)))), xi, exact=True)
    assert no_host_steps(plan)


@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_half_conversions_round_to_nearest_even(dtype):
    """float32 -> 16 bits over ties, overflow, subnormals, NaN and infinities, and back."""
    from kernel_harness import run_both
    special_values = [65504.0, 65519.0, 65520.0, 1e5, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1e-8,
                      5.9e-8, -3e-5, 1e-40, 3.0e38, 3.4e38, np.inf, -np.inf, np.nan, 0.0, -0.0,
                      1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8]
    bits = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([np.array(special_values, np.float32), bits.view(np.float32)])
    got, want, plan = run_both(lambda x: (x.astype(dtype), x.astype(dtype).astype(np.float32)), x)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert no_host_steps(plan)


@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_half_nextafter_steps_the_16_bit_value(dtype):
    """nextafter(x, y) of 16-bit floats is their neighbour, not x (a float32 step rounds back),
    through zeros of both signs, subnormals, the largest finite value, infinities and NaN:
    jnp.spacing(float16) on the kernel platforms is nextafter(x, inf) - x."""
    from kernel_harness import run_both
    tiny = float(dtypes.finfo(dtype).smallest_subnormal)
    big = float(dtypes.finfo(dtype).max)
    values = [0.0, -0.0, tiny, -tiny, 1.0, -1.5, big, -big, np.inf, -np.inf, np.nan, 100.0]
    x = np.array([a for a in values for _ in values], dtype)
    y = np.array([b for _ in values for b in values], dtype)
    got, want, plan = run_both(lambda x, y: (lax.nextafter(x, y), jnp.spacing(x)), x, y)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert no_host_steps(plan)


def test_complex64_arithmetic_fuses():
    x = (rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))).astype(np.complex64)
    y = (rng.standard_normal((8,)) + 1j * rng.standard_normal((8,))).astype(np.complex64)
    y[:3] = [0.0, 1e-30 + 3j, -2.0]
    plan = check(lambda x, y: ((x * y - x / y + (1 + 2j)) * 2, jnp.exp(x) == x, -x * x),
                 x, y, rtol=1e-5)
    assert kernel_count(plan) == 1 and no_host_steps(plan)


# ---- windowed reductions -----------------------------------------------------------------------

WINDOWS = [dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (1, 2)),
                base_dilation=(1, 2), window_dilation=(2, 1)),
           dict(window_dimensions=(3, 1), window_strides=(2, 1), padding=((0, 0), (0, 0)),
                base_dilation=(1, 1), window_dilation=(1, 1))]


@pytest.mark.parametrize("params", WINDOWS)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_window(kind, params):
    prim = getattr(windowed, f"reduce_window_{kind}_p")
    x = rng.standard_normal((7, 9)).astype(np.float32)
    plan = check(lambda x: jnp.tanh(prim.bind(x, **params)) * 2.0, x, rtol=1e-5)
    assert kernel_count(plan) == 1 and no_host_steps(plan)
    assert any(isinstance(n, Window) for n in plan.kernels[0].nodes)


def test_max_pool_and_its_gradient():
    x = rng.standard_normal((2, 8, 8)).astype(np.float32)

    def pool(x):
        return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2), (1, 2, 2), "VALID")
    check(pool, x)
    check(gpuarr.grad(lambda x: jnp.sum(pool(x) ** 2)), x, rtol=1e-5)


# A window's output coordinate is unravelled over the result's own shape, whatever layout ops
# (the transposes vmap adds, broadcasts, a reduction's axis order) read the result through.
BATCHED_WINDOWS = [dict(window_dimensions=(2, 2), window_strides=(1, 2), padding="VALID"),
                   dict(window_dimensions=(3, 2), window_strides=(2, 1), padding="SAME"),
                   dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (2, 1)),
                        base_dilation=(1, 2), window_dilation=(2, 1)),
                   dict(window_dimensions=(1, 2), window_strides=(1, 1), padding=((0, 1), (1, 0)),
                        base_dilation=(2, 1), window_dilation=(1, 3))]
WINDOW_OPS = {"add": (lax.add, 0.0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


@pytest.mark.parametrize("in_axes", [0, 1, 2])
@pytest.mark.parametrize("params", BATCHED_WINDOWS)
@pytest.mark.parametrize("op", sorted(WINDOW_OPS))
def test_reduce_window_of_a_batched_operand(op, params, in_axes):
    computation, init = WINDOW_OPS[op]
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)

    def f(x):
        return windowed.reduce_window(x, np.float32(init), computation, **params)
    plan = check(gpuarr.vmap(f, in_axes=in_axes), x, rtol=1e-6, exact=op != "add")
    assert no_host_steps(plan)
    assert any(isinstance(n, Window) for k in plan.kernels for n in k.nodes)


def test_reduce_window_read_through_layout_ops():
    x = rng.standard_normal((6, 7, 5)).astype(np.float32)
    y = rng.standard_normal((3,)).astype(np.float32)
    params = dict(window_dimensions=(2, 3, 1), window_strides=(2, 1, 1),
                  padding=((0, 1), (1, 1), (0, 0)), base_dilation=(1, 1, 1), window_dilation=(1, 2, 1))

    def pool(x):
        return windowed.reduce_window_max_p.bind(x, **params)     # (3, 5, 5)
    check(lambda x: jnp.transpose(pool(x), (2, 0, 1)) * 2.0, x, exact=True)
    check(lambda x: pool(x)[::-1, 1:4].transpose(1, 2, 0), x, exact=True)
    check(lambda x, y: pool(x).transpose(1, 2, 0)[:, :, None, :] + y, x, y, exact=True)
    plan = check(lambda x: (jnp.sum(pool(x), axis=(0, 2)), jnp.max(jnp.tanh(pool(x)), axis=0)), x,
                 rtol=1e-5)
    assert no_host_steps(plan)


# ---- inspection --------------------------------------------------------------------------------

def test_explain_shows_the_new_kernels():
    x = rng.standard_normal((16, 64)).astype(np.float32)

    def f(x):
        i = lax.argmax(x, 1, np.int32)
        c = lax.cumsum(jnp.exp(x), 1)
        p = lax.pad(x, np.float32(0), ((1, 1, 0), (0, 0, 0)))
        return i, c, p
    plan = check(f, x, rtol=1e-5)
    text = describe(plan)
    assert "argmax (16,) x (64,) strategy=row" in text
    assert "cumulative sum along axis 1 of (16, 64) strategy=block" in text
    assert "pad[" in text and "host" not in text
    assert kernel_count(plan) == 3
    assert [type(k) for k in plan.kernels] == [ReductionKernel, ScanKernel, ElementwiseKernel]
