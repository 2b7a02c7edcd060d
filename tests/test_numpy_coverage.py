"""Coverage of jax.numpy: at least 90% of the names jax.numpy shares with NumPy's main
namespace exist in gpuarr.numpy. The names still missing are listed here, so a new gap (or a
name that disappears) fails this test instead of going unnoticed."""
import numpy as np
import pytest

import gpuarr.numpy as jnp

jax = pytest.importorskip("jax")

# Not yet provided by gpuarr.numpy (as of this file). Sorting-based set operations, FFTs,
# convolutions, polynomial fitting/roots (which need lstsq/eig), scatter-style in-place helpers
# and the ufunc class.
KNOWN_MISSING = {
    "convolve", "correlate", "fft", "intersect1d", "matvec", "place", "polyfit", "put",
    "ravel_multi_index", "roots", "setdiff1d", "setxor1d", "sort_complex", "ufunc", "union1d",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "unravel_index", "vecmat",
}


def shared_names():
    return sorted(n for n in dir(jax.numpy) if not n.startswith("_") and hasattr(np, n))


def test_at_least_90_percent_of_shared_names_exist():
    names = shared_names()
    present = [n for n in names if hasattr(jnp, n)]
    assert len(present) / len(names) >= 0.90, f"{len(present)}/{len(names)}"


def test_missing_names_are_the_documented_ones():
    missing = {n for n in shared_names() if not hasattr(jnp, n)}
    assert missing <= KNOWN_MISSING, f"newly missing: {sorted(missing - KNOWN_MISSING)}"

