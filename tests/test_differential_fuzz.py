"""Differential fuzzing against JAX (tests/differential_fuzz.py): random jitted programs give
gpuarr's values, dtypes, weak types and shapes, or raise where JAX raises. A short seeded
campaign here (slow); long ones run the module as a script."""
import pytest
from differential_fuzz import campaign


@pytest.mark.slow
def test_random_programs_agree_with_jax():
    found = []
    n, diffs = campaign(80, seed_value=20260, report=found.append)
    assert n == 80
    assert diffs == 0, "\n".join(found[:5])
