"""custom_vjp with symbolic_zeros=True: fwd sees CustomVJPPrimal(value, perturbed) inputs and
bwd sees SymbolicZero for zero output cotangents, as in JAX (compared where installed)."""
import numpy as np
import pytest

import gpuarr
from gpuarr import custom_derivatives as cd


def _program(jax):
    seen = []

    @jax.custom_vjp
    def f(x, y):
        return x * y, x + y

    def fwd(x, y):
        seen.append(("fwd", type(x).__name__, bool(x.perturbed), bool(y.perturbed)))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, g):
        seen.append(("bwd",) + tuple("SymbolicZero" if type(c).__name__ == "SymbolicZero"
                                     else "array" for c in g))
        ga, gb = g
        ga = 0.0 if type(ga).__name__ == "SymbolicZero" else ga
        gb = 0.0 if type(gb).__name__ == "SymbolicZero" else gb
        return ga * res[1] + gb, ga * res[0] + gb

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    out = [jax.grad(lambda x: f(x, 3.0)[0])(2.0),
           jax.jit(jax.grad(lambda y: f(2.0, y)[1], argnums=0))(3.0),
           jax.grad(lambda x, y: sum(f(x, y)), argnums=(0, 1))(2.0, 3.0)]
    return out, seen


def test_symbolic_zeros_reach_the_rules():
    out, seen = _program(gpuarr)
    np.testing.assert_allclose([float(out[0]), float(out[1])], [3.0, 1.0])
    np.testing.assert_allclose([float(v) for v in out[2]], [4.0, 3.0])
    assert seen[0] == ("fwd", "CustomVJPPrimal", True, False)
    assert seen[1] == ("bwd", "array", "SymbolicZero")
    assert seen[2] == ("fwd", "CustomVJPPrimal", False, True)
    assert cd.custom_vjp_primal_tree_values({"a": cd.CustomVJPPrimal(1.0, True)}) == {"a": 1.0}
    zeros = cd.zero_from_primal((np.ones(2, np.float32), np.int32(1)))
    assert zeros[0].dtype == np.float32 and zeros[1].dtype == gpuarr.dtypes.float0
    assert type(cd.zero_from_primal(1.0, symbolic_zeros=True)) is cd.SymbolicZero


def test_symbolic_zeros_match_jax():
    jax = pytest.importorskip("jax")
    (ours, ours_seen), (theirs, theirs_seen) = _program(gpuarr), _program(jax)
    assert ours_seen == theirs_seen
    for a, b in zip(gpuarr.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
