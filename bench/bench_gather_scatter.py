"""Gather and scatter-add, eager and jitted, side by side with NumPy and JAX (CPU).

Workload: an embedding-style lookup `table[ids]` (gather) followed by the update of its rows
`table.at[ids].add(grads)` (scatter-add with repeated ids), the pair an embedding layer's
forward and backward pass do. Times are per call with block_until_ready; ratios are vs NumPy
(`table[ids]` and `np.add.at`).
Run: python bench/bench_gather_scatter.py [--rows 100000] [--dim 64] [--ids 65536]
"""
from __future__ import annotations

import argparse

import numpy as np
import timing

import gpuarr
import gpuarr.numpy as gnp

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is optional: only the gpuarr and NumPy columns are printed
    jax = jjnp = None


def best_of(fn, number, repeat=5):
    return timing.best_of(fn, number, repeat)


def gather_scatter_workload(np_mod):
    """The benchmarked function: gather rows, then scatter-add updates into them."""
    def f(table, ids, grads):
        rows = table[ids]
        return rows, table.at[ids].add(grads * 0.5)
    return f


def numpy_workload(table, ids, grads):
    rows = table[ids]
    out = table.copy()
    np.add.at(out, ids, grads * 0.5)
    return rows, out


def _ready(out):
    for o in out:
        o.block_until_ready()


def run(rows, dim, n_ids, number):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    ids = rng.integers(0, rows, n_ids).astype(np.int32)
    grads = rng.standard_normal((n_ids, dim)).astype(np.float32)

    np_t = best_of(lambda: numpy_workload(table, ids, grads), number)[0]
    results = [("numpy", np_t, np_t)]

    gt, gi, gg = gnp.asarray(table), gnp.asarray(ids), gnp.asarray(grads)
    g_eager = gather_scatter_workload(gnp)
    g_jit = gpuarr.jit(g_eager)
    _ready(g_jit(gt, gi, gg))
    ge = best_of(lambda: _ready(g_eager(gt, gi, gg)), number)[0]
    gj = best_of(lambda: _ready(g_jit(gt, gi, gg)), number)[0]
    results.append(("gpuarr", ge, gj))
    want = numpy_workload(table, ids, grads)
    got = g_jit(gt, gi, gg)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-5, atol=1e-5)

    if jax is not None:
        jt, ji, jg = jjnp.asarray(table), jjnp.asarray(ids), jjnp.asarray(grads)
        j_eager = gather_scatter_workload(jjnp)
        j_jit = jax.jit(j_eager)
        _ready(j_jit(jt, ji, jg))
        _ready(j_eager(jt, ji, jg))
        je = best_of(lambda: _ready(j_eager(jt, ji, jg)), number)[0]
        jj = best_of(lambda: _ready(j_jit(jt, ji, jg)), number)[0]
        results.append(("jax (cpu)", je, jj))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--ids", type=int, default=65_536)
    parser.add_argument("--number", type=int, default=5)
    args = parser.parse_args()
    print(f"gather + scatter-add: table f32[{args.rows},{args.dim}], {args.ids} ids "
          f"(platform: {gpuarr.default_backend()})")
    results = run(args.rows, args.dim, args.ids, args.number)
    np_t = results[0][1]
    print(f"{'':12s}{'eager ms':>10s}{'jit ms':>10s}{'eager/np':>10s}{'jit/np':>10s}")
    for name, eager, jitted in results:
        print(f"{name:12s}{eager * 1e3:10.3f}{jitted * 1e3:10.3f}{eager / np_t:10.2f}{jitted / np_t:10.2f}")


if __name__ == "__main__":
    main()
