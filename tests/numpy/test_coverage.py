"""Coverage of jax.numpy: every name jax.numpy shares with NumPy's main namespace exists in
gpuarr.numpy, and so does every name of jax.numpy.fft and jax.numpy.linalg. A name that
disappears fails here instead of going unnoticed."""
import numpy as np
import pytest

import gpuarr.numpy as jnp

jax = pytest.importorskip("jax")


def public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def test_every_name_shared_with_numpy_exists():
    missing = [n for n in public(jax.numpy) if hasattr(np, n) and not hasattr(jnp, n)]
    assert not missing, f"missing from gpuarr.numpy: {missing}"


@pytest.mark.parametrize("sub", ["fft", "linalg"])
def test_every_name_of_the_submodules_exists(sub):
    missing = [n for n in public(getattr(jax.numpy, sub)) if not hasattr(getattr(jnp, sub), n)]
    assert not missing, f"missing from gpuarr.numpy.{sub}: {missing}"
