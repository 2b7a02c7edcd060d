"""Every primitive has every rule it needs: a missing rule must fail here, not deep in a trace."""
import importlib
import pkgutil

import pytest

import gpuarr
from gpuarr import core, impls
from gpuarr.interpreters import ad, batching


def _import_all_primitive_modules():
    for pkg in ("gpuarr.lax", "gpuarr.numpy"):
        module = importlib.import_module(pkg)
        for info in pkgutil.iter_modules(module.__path__):
            importlib.import_module(f"{pkg}.{info.name}")
    for name in ("gpuarr.random", "gpuarr.prng", "gpuarr.debug", "gpuarr.callbacks",
                 "gpuarr.custom_derivatives", "gpuarr.ad_checkpoint", "gpuarr.nn"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


_import_all_primitive_modules()
PRIMITIVES = sorted(core.abstract_eval_rules, key=lambda p: p.name)
# Primitives without operands (iota, empty2) are never seen by JVP or batching traces.
NULLARY = {"iota", "empty2"}
# As in JAX, vmap of these raises (tests/lax/test_composite.py and
# tests/lax/test_linalg.py check the errors).
UNBATCHED = {"composite", "cholesky_update"}


def test_there_are_primitives():
    assert len(PRIMITIVES) > 40
    assert gpuarr.lax.lax.sin_p in PRIMITIVES


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_has_numpy_impl(prim):
    assert prim in impls.impl_rules, f"{prim.name} has no NumPy backend implementation"


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_has_jvp_rule(prim):
    if prim.name in NULLARY:
        return
    assert prim in ad.jvp_rules, (f"{prim.name} has no JVP rule; use ad.defjvp_zero for "
                                  "non-differentiable primitives")


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_has_batching_rule(prim):
    if prim.name in NULLARY or prim.name in UNBATCHED:
        return
    assert prim in batching.batch_rules, f"{prim.name} has no batching rule"


@pytest.mark.parametrize("prim", [p for p in PRIMITIVES if p in ad.transpose_rules],
                         ids=lambda p: p.name)
def test_transposable_primitives_are_differentiable(prim):
    assert prim in ad.jvp_rules
