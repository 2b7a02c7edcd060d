"""JAX's tracing helpers as libraries call them (flax's scan checks with them that its
broadcast values do not depend on the scanned ones), compared with JAX 0.10.2:
`partial_eval.trace_to_jaxpr_nounits` over PartialVals, `api_util.flatten_fun_nokwargs` and
`debug_info` with `linear_util.wrap_init`, and avals built with JAX's keywords."""
import numpy as np
import pytest

import gpuarr

jax = pytest.importorskip("jax")


def _split(lib, core, pe, lu, instantiate=False):
    """f(k, u) = (k * 2, sin(u) + k, u.sum()) with k known and u unknown, as flax traces."""
    def f(pair):
        k, u = pair
        return {"known": k * 2.0, "mixed": lib.numpy.sin(u) + k, "sum": u.sum()}

    k = lib.numpy.arange(3.0)
    u_aval = core.ShapedArray((3,), np.float32)
    in_tree = lib.tree_util.tree_structure(((k, k),))
    dbg = lib.api_util.debug_info("test split", f, ((k, k),), {})
    flat, out_tree = lib.api_util.flatten_fun_nokwargs(lu.wrap_init(f, debug_info=dbg), in_tree)
    pvals = [pe.PartialVal.known(k), pe.PartialVal.unknown(u_aval)]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(flat, pvals, instantiate=instantiate)
    known = [np.asarray(pv.get_known()) if pv.is_known() else None for pv in out_pvals]
    unknown = [(pv[0].shape, pv[0].dtype) if not pv.is_known() else None for pv in out_pvals]
    u = np.array([0.5, -1.0, 2.0], np.float32)
    staged = core.eval_jaxpr(jaxpr, consts, u)
    return (str(out_tree()).replace("PyTreeDef", ""), known, unknown,
            [np.asarray(s) for s in staged], dbg.arg_names, len(jaxpr.invars))


@pytest.mark.parametrize("instantiate", [False, True, [True, False, False]])
def test_trace_to_jaxpr_nounits_splits_as_jax(instantiate):
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe

    from gpuarr.extend import linear_util as glu
    from gpuarr.interpreters import partial_eval as gpe
    got = _split(gpuarr, gpuarr.core, gpe, glu, instantiate)
    want = _split(jax, jax.core, jpe, jlu, instantiate)
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-6)
    assert got[2] == want[2]
    assert len(got[3]) == len(want[3])
    for g, w in zip(got[3], want[3]):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert got[4:] == want[4:]


def test_avals_take_jax_keywords_and_share_a_base():
    x = gpuarr.numpy.ones((2, 3))
    ours = gpuarr.core.ShapedArray((3,), np.float32, weak_type=True,
                                   sharding=x.aval.sharding, manual_axis_type=None)
    theirs = jax.core.ShapedArray((3,), np.float32, weak_type=True,
                                  sharding=jax.numpy.ones((3,)).aval.sharding)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                         theirs.weak_type)
    assert isinstance(ours, gpuarr.core.AbstractValue)
    assert isinstance(theirs, jax.core.AbstractValue)


def _lazy(lib, pe, lu, dependent):
    """flax's lazy_init: outputs that do not depend on an unknown (shape-only) argument are
    computed; one that does stays unknown. The unknown argument is never materialised."""
    def f(x, *, scale):
        w = lib.numpy.full((x.shape[-1], 2), scale)
        return {"w": w, "y": x @ w if dependent else w.sum()}

    big = lib.ShapeDtypeStruct((1 << 30, 8), np.float32)
    leaves, in_tree = lib.tree_util.tree_flatten(((big,), {"scale": 0.5}))
    fun = lu.wrap_init(f, debug_info=lib.api_util.debug_info("lazy", f, (in_tree,), {}))
    flat, out_tree = lib.api_util.flatten_fun(fun, in_tree)
    pvals = [pe.PartialVal.unknown(lib.core.ShapedArray(x.shape, x.dtype))
             if isinstance(x, lib.ShapeDtypeStruct) else pe.PartialVal.known(x) for x in leaves]
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(flat, pvals)
    out = lib.tree_util.tree_unflatten(out_tree(), [
        ("known", np.asarray(c)) if pv is None else ("unknown", pv.shape, np.dtype(pv.dtype))
        for pv, c in out_pvals])
    return out


@pytest.mark.parametrize("dependent", [False, True])
def test_flatten_fun_with_keywords_and_lazy_evaluation_as_jax(dependent):
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe

    from gpuarr.extend import linear_util as glu
    from gpuarr.interpreters import partial_eval as gpe
    got, want = _lazy(gpuarr, gpe, glu, dependent), _lazy(jax, jpe, jlu, dependent)
    assert got.keys() == want.keys()
    for k in got:
        assert got[k][0] == want[k][0]
        if got[k][0] == "known":
            np.testing.assert_array_equal(got[k][1], want[k][1])
            assert got[k][1].dtype == want[k][1].dtype
        else:
            assert got[k][1:] == want[k][1:]
