"""Hypothesis-generated fused programs (elementwise chains, broadcasts, transposes, reshapes,
reductions over random axes, gathers and scatters with out-of-bounds indices in every mode):
the kernel path equals the NumPy backend."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_harness import check

import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.lax import slicing

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl", "have_nvrtc")]

UNARY = {"exp": lambda x: jnp.exp(jnp.clip(x, -5.0, 5.0)), "sin": jnp.sin, "tanh": jnp.tanh,
         "abs": jnp.abs, "neg": lambda x: -x, "square": lambda x: x * x,
         "sqrt": lambda x: jnp.sqrt(jnp.abs(x)), "cast": lambda x: (x * 3.0).astype(np.int32) * 0.5}
BINARY = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "max": jnp.maximum, "where": lambda x, y: jnp.where(x > y, x, y * 2.0)}
REDUCE = {"sum": lax.reduce_sum, "max": lax.reduce_max, "min": lax.reduce_min}
MODES = [slicing.GatherScatterMode.CLIP, slicing.GatherScatterMode.FILL_OR_DROP,
         slicing.GatherScatterMode.PROMISE_IN_BOUNDS]


@st.composite
def programs(draw):
    """(f, args): a random program over a random-shaped input, built op by op."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(shape).astype(np.float32)]
    ops = []
    cur = shape
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "bcast", "transpose", "reshape",
                                     "reduce", "gather", "scatter"]))
        if kind == "unary":
            ops.append(("unary", draw(st.sampled_from(sorted(UNARY)))))
        elif kind in ("binary", "bcast"):
            other = cur if kind == "binary" else tuple(
                n if draw(st.booleans()) else 1 for n in cur)
            args.append(rng.standard_normal(other).astype(np.float32))
            ops.append(("binary", draw(st.sampled_from(sorted(BINARY))), len(args) - 1))
        elif kind == "transpose":
            perm = tuple(draw(st.permutations(range(len(cur)))))
            ops.append(("transpose", perm))
            cur = tuple(cur[p] for p in perm)
        elif kind == "reshape":
            size = int(np.prod(cur))
            new = (size,) if len(cur) > 1 else ((size // 2, 2) if size % 2 == 0 else (1, size))
            ops.append(("reshape", new))
            cur = new
        elif kind == "reduce" and len(cur) > 1:
            axes = tuple(sorted(draw(st.sets(st.integers(0, len(cur) - 1), min_size=1,
                                             max_size=len(cur) - 1))))
            keep = draw(st.booleans())
            ops.append(("reduce", draw(st.sampled_from(sorted(REDUCE))), axes, keep))
            kept = tuple(1 if d in axes else n for d, n in enumerate(cur))
            cur = kept if keep else tuple(n for d, n in enumerate(cur) if d not in axes)
        elif kind == "gather":
            n = draw(st.integers(1, 6))
            args.append(rng.integers(-cur[0] - 2, cur[0] + 2, n).astype(np.int32))
            ops.append(("gather", len(args) - 1, draw(st.sampled_from(MODES))))
            cur = (n,) + cur[1:]
        elif kind == "scatter":
            n = draw(st.integers(1, 6))
            args.append(rng.integers(-2, cur[0] + 2, (n, 1)).astype(np.int32))
            args.append(rng.standard_normal((n,) + cur[1:]).astype(np.float32))
            name = draw(st.sampled_from(["scatter", "scatter_add", "scatter_max", "scatter_mul"]))
            ops.append(("scatter", name, len(args) - 2, draw(st.sampled_from(MODES))))
    return ops, args


def build(ops):
    def f(*args):
        x = args[0]
        for op in ops:
            if op[0] == "unary":
                x = UNARY[op[1]](x)
            elif op[0] == "binary":
                x = BINARY[op[1]](x, args[op[2]])
            elif op[0] == "transpose":
                x = lax.transpose(x, op[1])
            elif op[0] == "reshape":
                x = lax.reshape(x, op[1])
            elif op[0] == "reduce":
                _, name, axes, keep = op
                y = REDUCE[name](x, axes)
                x = lax.reshape(y, tuple(1 if d in axes else n for d, n in enumerate(x.shape))) if keep else y
            elif op[0] == "gather":
                idx = lax.reshape(args[op[1]], (args[op[1]].shape[0], 1))
                dn = slicing.GatherDimensionNumbers(
                    offset_dims=tuple(range(1, x.ndim)), collapsed_slice_dims=(0,), start_index_map=(0,))
                x = slicing.gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=(1,) + x.shape[1:],
                                          indices_are_sorted=False, unique_indices=False, mode=op[2],
                                          fill_value=None)
            elif op[0] == "scatter":
                _, name, i, mode = op
                dn = slicing.ScatterDimensionNumbers(update_window_dims=tuple(range(1, x.ndim)),
                                                     inserted_window_dims=(0,),
                                                     scatter_dims_to_operand_dims=(0,))
                x = getattr(slicing, f"{name}_p").bind(x, args[i], args[i + 1], dimension_numbers=dn,
                                                       indices_are_sorted=False, unique_indices=False,
                                                       mode=mode)
        return x
    return f


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_match_numpy(program):
    ops, args = program
    check(build(ops), *args, rtol=1e-4, atol=1e-5)
