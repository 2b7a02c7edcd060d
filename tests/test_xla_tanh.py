"""float32 tanh as XLA computes it on the CPU (gpuarr/lax/xla_tanh.py): the fused
multiply-add emulation against exact rational arithmetic, and tanh against JAX bit for bit,
eagerly and under jit."""
from fractions import Fraction

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.lax.xla_tanh import fma_f32, tanh_f32

F32 = np.float32


def _round_f32(v: Fraction) -> np.float32:
    """The float32 nearest the rational `v`, ties to even (normal range)."""
    guess = np.float32(float(v))
    cands = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]
    dist = [abs(Fraction(float(c)) - v) for c in cands]
    best = min(dist)
    ties = [c for c, d in zip(cands, dist) if d == best]
    return min(ties, key=lambda c: int(np.asarray(c).view(np.uint32)) & 1)


def _exact_fma(a, b, c):
    return np.array([_round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c)], F32)


def test_fma_rounds_once_where_float64_lands_on_a_tie():
    one = F32(1 + 2.0 ** -12)  # one * one = 1 + 2**-11 + 2**-24: halfway between float32s
    a = np.array([one, one, one, -one], F32)
    c = np.array([2.0 ** -70, -2.0 ** -70, 0, 2.0 ** -70], F32)
    got = fma_f32(a, a, c)
    np.testing.assert_array_equal(got.view(np.uint32), _exact_fma(a, a, c).view(np.uint32))
    assert got[0] == np.nextafter(got[2], F32(2)) and got[1] == got[2]  # up, down, even


def test_fma_of_random_operands_is_exactly_rounded():
    rng = np.random.default_rng(7)
    a, b = (rng.uniform(-4, 4, 3000).astype(F32) for _ in range(2))
    c = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-30, 3, 3000)).astype(F32)
    np.testing.assert_array_equal(fma_f32(a, b, c).view(np.uint32), _exact_fma(a, b, c).view(np.uint32))


def _arguments():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32).view(F32)
    special = np.array([0, -0.0, np.nan, np.inf, -np.inf, 1e-39, -1e-39, 7.99881172, -7.99881172,
                        7.9988122, 20, -20, 19.99, 4e-4, -4e-4, 3.9e-4, 0.5, -1, 2.5], F32)
    return np.concatenate([bits, rng.uniform(-9, 9, 200_000).astype(F32), special])


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == F32 and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_tanh_f32_is_xlas_bit_for_bit():
    x = _arguments()
    _same_bits(tanh_f32(x), jax.jit(jjnp.tanh)(x))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_gpuarr_tanh_is_jaxs_bit_for_bit(jit):
    x = _arguments()[::7].reshape(-1, 1)
    ours = gpuarr.jit(jnp.tanh) if jit else jnp.tanh
    theirs = jax.jit(jjnp.tanh) if jit else jjnp.tanh
    _same_bits(ours(x), theirs(x))
    _same_bits(ours(F32(0.5)), theirs(F32(0.5)))
