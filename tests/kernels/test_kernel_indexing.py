"""Gathers (fused as indexed loads) and scatters (their own kernels) through the kernel path,
with out-of-bounds indices in every mode, compared with the NumPy backend."""
import numpy as np
import pytest
from kernel_harness import check, kernel_count

import gpuarr.numpy as jnp
from gpuarr.compiler import render
from gpuarr.compiler.plan import CopyStep, ElementwiseKernel, Gather, ScatterKernel
from gpuarr.lax import slicing

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]
rng = np.random.default_rng(2)
MODES = [slicing.GatherScatterMode.CLIP, slicing.GatherScatterMode.FILL_OR_DROP,
         slicing.GatherScatterMode.PROMISE_IN_BOUNDS]


def gather(x, idx, dn, sizes, mode, fill=None):
    return slicing.gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=sizes,
                                 indices_are_sorted=False, unique_indices=False, mode=mode,
                                 fill_value=fill)


def test_jnp_indexing_is_one_fused_kernel():
    x = rng.random(10).astype(np.float32)
    idx = np.array([0, 3, 11, -2, 9, -12], np.int32)
    plan = check(lambda x, i: jnp.exp(x[i]) * 2.0, x, idx)
    assert kernel_count(plan) == 1
    assert any(isinstance(n, Gather) for n in plan.kernels[0].nodes)


def test_row_and_column_gathers():
    x = rng.random((5, 5)).astype(np.float32)
    idx = np.array([4, 0, 2, 2], np.int32)
    check(lambda x, i: x[i] + 1.0, x, idx)
    check(lambda x, i: x[:, i[:3]].T * 2.0 - x[i[:3], :], x, idx)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_gather_windows_out_of_bounds(mode):
    """operand[idx[b]:idx[b]+2, :] windows; starts run past both ends."""
    x = rng.random((8, 3)).astype(np.float32)
    idx = np.array([[0], [3], [7], [-2], [6], [100]], np.int32)
    dn = slicing.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                        start_index_map=(0,))
    check(lambda x, i: gather(x, i, dn, (2, 3), mode), x, idx)
    check(lambda x, i: gather(x, i, dn, (2, 3), mode, fill=-5.0) * 3.0, x, idx)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_gather_two_component_indices(mode):
    x = rng.integers(0, 100, (5, 6)).astype(np.int32)
    idx = np.array([[0, 0], [4, 5], [5, 1], [-1, 2], [2, 6]], np.int32)
    dn = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                        start_index_map=(0, 1))
    check(lambda x, i: gather(x, i, dn, (1, 1), mode, fill=-7), x, idx)


def test_dynamic_slice():
    x = rng.random((6, 7)).astype(np.float32)
    for start in [(1, 2), (5, 6), (-3, 0)]:
        check(lambda x, a, b: slicing.dynamic_slice(x, (a, b), (3, 4)) * 2.0, x,
              np.int32(start[0]), np.int32(start[1]))


SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter_sub"]


def scatter(name, x, idx, upd, dn, mode):
    prim = getattr(slicing, f"{name}_p")
    return prim.bind(x, idx, upd, dimension_numbers=dn, indices_are_sorted=False,
                     unique_indices=False, mode=mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("name", SCATTERS)
def test_scatter_rows(name, mode):
    """operand[idx[b], :] (combine)= updates[b, :], repeated and out-of-bounds indices."""
    if not hasattr(slicing, f"{name}_p"):
        pytest.skip(f"gpuarr.lax has no {name} primitive")
    x = rng.random((6, 4)).astype(np.float32)
    idx = np.array([[1], [3], [1], [7], [-1], [5], [1]], np.int32)
    upd = rng.random((7, 4)).astype(np.float32)
    dn = slicing.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    plan = check(lambda x, i, u: scatter(name, x * 2.0, i, u, dn, mode) + 1.0, x, idx, upd)
    assert any(isinstance(k, ScatterKernel) for k in plan.kernels)


def test_scatter_in_place_when_operand_dies():
    x = rng.random(10).astype(np.float32)
    idx = np.array([[1], [3], [3]], np.int32)
    upd = np.ones(3, np.float32)
    dn = slicing.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    mode = slicing.GatherScatterMode.FILL_OR_DROP
    plan = check(lambda x, i, u: scatter("scatter_add", x * 2.0, i, u, dn, mode), x, idx, upd)
    assert not any(isinstance(s, CopyStep) for s in plan.steps)     # x * 2 dies at the scatter
    plan = check(lambda x, i, u: (scatter("scatter_add", x, i, u, dn, mode), x), x, idx, upd)
    assert any(isinstance(s, CopyStep) for s in plan.steps)         # x is an input: copy first


def test_int_scatter_add_uses_atomics():
    x = np.zeros(5, np.int32)
    idx = rng.integers(-1, 6, (200, 1)).astype(np.int32)
    upd = np.ones(200, np.int32)
    dn = slicing.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    plan = check(lambda x, i, u: scatter("scatter_add", x, i, u, dn,
                                         slicing.GatherScatterMode.FILL_OR_DROP), x, idx, upd)
    (k,) = [k for k in plan.kernels if isinstance(k, ScatterKernel)]
    assert not k.deterministic
    assert all(isinstance(k, (ElementwiseKernel, ScatterKernel)) for k in plan.kernels)


def test_batched_gathers_and_scatters_are_kernels():
    """vmap of indexing gives batching dimension numbers: still a fused load and a scatter kernel."""
    import gpuarr
    from gpuarr.compiler.plan import HostStep
    x = rng.standard_normal((4, 10, 3)).astype(np.float32)
    i = rng.integers(-2, 12, (4, 5)).astype(np.int32)
    u = rng.standard_normal((4, 5, 3)).astype(np.float32)
    plan = check(gpuarr.vmap(lambda x, i: jnp.exp(x[i]) * 2.0), x, i)
    assert kernel_count(plan) == 1 and any(isinstance(n, Gather) for n in plan.kernels[0].nodes)
    for f in (lambda x, i, u: x.at[i].add(u), lambda x, i, u: x.at[i].max(u * 2.0)):
        plan = check(gpuarr.vmap(f), x, i, u)
        (k,) = [k for k in plan.kernels if isinstance(k, ScatterKernel)]
        assert k.operand_batching_dims == (0,)
        assert not any(isinstance(s, HostStep) for s in plan.steps)


@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scatter_apply_is_a_compare_and_swap_scatter_kernel(mode):
    """`.at[i].apply(f)`: f applied once per hit (twice for a repeated index), in a kernel."""
    x = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)
    idx = np.array([0, 2, 2, 5, -1], np.int32)
    plan = check(lambda x, i: x.at[i].apply(lambda v: jnp.sin(v) * 2.0 + 1.0, mode=mode) * 3.0,
                 x, idx)
    (k,) = [k for k in plan.kernels if isinstance(k, ScatterKernel)]
    assert k.combiner == "apply" and render.scatter_variant(k) == "cas"
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    plan = check(lambda x, i: x.at[1:, i[:2]].apply(lambda v: v * v - 1), xi, idx)
    assert any(isinstance(k, ScatterKernel) for k in plan.kernels)
