"""The samplers' XLA CPU functions in kernels (kernels/special.h) against their NumPy emulation
(gpuarr/random/xla_math.py), bit for bit: erf_inv_giles, xla_log, xla_log1p, xla_rsqrt and
xla_fma over 2^20 inputs each, 16-bit floats, and random streams under jit on opencl. float64
agrees within rounding only: the host's log is the C library's, the device's its own."""
import numpy as np
import pytest
from kernel_harness import check, kernel_count, run_both

import gpuarr
from gpuarr.compiler.plan import HostStep
from gpuarr.random.xla_math import erf_inv_giles, xla_fma, xla_log, xla_log1p, xla_rsqrt

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]
rng = np.random.default_rng(20)
N = 1 << 20
TINY = np.finfo(np.float32).tiny
EDGES = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, TINY, -TINY, TINY / 8, -TINY / 8,
                  1e-45, np.nextafter(np.float32(1), np.float32(0)), -1e-30, 3e38, 0.41421357,
                  -0.41421357, 0.4142136, -0.4142136, 0.70710677, 1.5, -2.0], np.float32)


def unit_interval() -> np.ndarray:
    """2^20 uniformly spaced float32 values in (-1, 1), then the edges."""
    u = ((2 * np.arange(N, dtype=np.float64) + 1) / N - 1).astype(np.float32)
    return np.concatenate([u, EDGES])


def positive_floats() -> np.ndarray:
    """2^20 random positive finite float32 bit patterns (subnormals included), then the edges."""
    bits = rng.integers(0, 0x7F800000, N, dtype=np.int64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), EDGES])


def assert_bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = f"uint{got.dtype.itemsize * 8}"
    bad = np.flatnonzero(got[~nan].view(bits) != want[~nan].view(bits))
    assert len(bad) == 0, (len(bad), got[~nan][bad[:5]], want[~nan][bad[:5]])


@pytest.mark.parametrize("name", ["erf_inv_giles", "xla_log", "xla_log1p", "xla_rsqrt"])
def test_sampler_functions_equal_the_numpy_backend_bit_for_bit(name):
    f = {"erf_inv_giles": erf_inv_giles, "xla_log": xla_log, "xla_log1p": xla_log1p,
         "xla_rsqrt": xla_rsqrt}[name]
    x = {"erf_inv_giles": unit_interval(), "xla_log": positive_floats(),
         "xla_log1p": np.concatenate([unit_interval(), positive_floats()]),
         "xla_rsqrt": positive_floats()}[name]
    (got,), (want,), plan = run_both(f, x)
    assert kernel_count(plan) == 1 and not any(isinstance(s, HostStep) for s in plan.steps)
    assert_bits_equal(got, want)


def test_the_normal_grid_and_16_bit_floats():
    # normal's uniform draws take the values (4m + 1) / 2^24; 16-bit floats go through float32.
    m = rng.integers(-(1 << 22), 1 << 22, N)
    grid = ((4 * m + 1) / 2.0 ** 24).astype(np.float32)
    (got,), (want,), _ = run_both(lambda u: erf_inv_giles(u) * np.float32(np.sqrt(2)), grid)
    assert_bits_equal(got, want)
    for dtype in (np.float16, gpuarr.dtypes.bfloat16):
        x = unit_interval()[:: 64].astype(dtype)
        got, want, _ = run_both(lambda x: (erf_inv_giles(x), xla_log1p(x), xla_log(x + 2),
                                           xla_rsqrt(x + 2)), x)
        for g, w in zip(got, want):
            assert_bits_equal(g, w)


def test_fused_multiply_adds_round_as_the_host():
    # The host's fused multiply-add rounds the exact sum to double, then to float32. Where the
    # first rounding lands on a float32 midpoint that differs from one fma: 1 + 2^-23 plus
    # (1 + 2^-23)(2^-24 - 2^-47) = 1 + 3 * 2^-24 - 2^-70 gives 1 + 2^-22 on both, not 1 + 2^-23.
    a = np.array([1 + 2.0 ** -23], np.float32)
    b = np.array([2.0 ** -24 - 2.0 ** -47], np.float32)
    c = np.array([1 + 2.0 ** -23], np.float32)
    (got,), (want,), _ = run_both(xla_fma, a, b, c)
    assert want[0] == np.float32(1 + 2.0 ** -22)
    assert_bits_equal(got, want)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    plan = check(xla_fma, a, b, c, exact=True)
    assert kernel_count(plan) == 1


def test_float64_within_rounding():
    with gpuarr.enable_x64(True):
        u = (2 * np.arange(1 << 16, dtype=np.float64) + 1) / (1 << 16) - 1
        u[:3] = [1.0, -1.0, 0.0]
        check(erf_inv_giles, u, rtol=1e-15, atol=0)
        check(lambda y: (xla_log(y), xla_log1p(y), xla_rsqrt(y)), 1 + 0.999 * u, rtol=3e-16, atol=0)


@pytest.mark.slow
def test_random_streams_under_jit_on_opencl():
    device, cpu = gpuarr.devices("opencl")[0], gpuarr.devices("cpu")[0]
    key = gpuarr.random.split(gpuarr.random.key(11), 3)[1]
    samplers = [lambda k: gpuarr.random.normal(k, (3,)),
                lambda k: gpuarr.random.normal(k, (1 << 16,)),
                lambda k: gpuarr.random.normal(k, (4096,), np.float16),
                lambda k: gpuarr.random.gumbel(k, (1 << 16,)),
                lambda k: gpuarr.random.truncated_normal(k, -1.5, 2.0, (4096,)),
                lambda k: gpuarr.random.exponential(k, (4096,)),
                lambda k: gpuarr.random.gamma(k, np.linspace(1.0, 5.0, 512, dtype=np.float32)),
                lambda k: gpuarr.random.loggamma(k, np.linspace(0.1, 5.0, 512, dtype=np.float32)),
                lambda k: gpuarr.random.beta(k, 0.5, 3.0, (512,))]
    for f in samplers:
        got = gpuarr.jit(f)(gpuarr.device_put(key, device))
        want = gpuarr.jit(f)(gpuarr.device_put(key, cpu))
        assert got.device == device
        assert_bits_equal(np.asarray(got), np.asarray(want))
