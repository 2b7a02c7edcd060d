"""Dispatch overhead, side by side with JAX (CPU) and eager NumPy in one run.

(a) a cached jitted call of a small 8-op function on 8-element arrays, with block_until_ready;
(b) a cached jitted call of a function of 50 array arguments;
(c) first call (trace + compile) of a fresh 200-op function;
(d) `jit(f)(x)` written inline in a loop: a new jit of the same function on each call, which
    shares the function's cache (no trace or compile after the first).
Run: python bench/bench_dispatch.py
"""
from __future__ import annotations

import numpy as np
import timing

import gpuarr
import gpuarr.numpy as gnp

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is optional: only the gpuarr and NumPy columns are printed
    jax = jjnp = None



def small(np_mod):
    def f(x, y):
        z = np_mod.sin(x) * y + 1.0
        z = np_mod.exp(-z) - x
        z = np_mod.tanh(z * 0.5) + y
        return np_mod.maximum(z, 0.0) * 2.0
    return f


def many_args(np_mod):
    def f(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = acc + x
        return acc
    return f


def chain(np_mod, n_ops, salt):
    def f(x):
        for i in range(n_ops // 2):
            x = np_mod.sin(x) + (i * 1e-3 + salt)
        return x
    return f


def bench_small():
    x8 = np.linspace(0, 1, 8, dtype=np.float32)
    rows = []
    g = gpuarr.jit(small(gnp))
    gx, gy = gnp.asarray(x8), gnp.asarray(x8 + 1)
    g(gx, gy).block_until_ready()
    rows.append(("gpuarr", timing.best_of(lambda: g(gx, gy).block_until_ready(), 2000)[0]))
    if jax is not None:
        j = jax.jit(small(jjnp))
        jx, jy = jjnp.asarray(x8), jjnp.asarray(x8 + 1)
        j(jx, jy).block_until_ready()
        rows.append(("jax", timing.best_of(lambda: j(jx, jy).block_until_ready(), 2000)[0]))
    n = small(np)
    rows.append(("numpy", timing.best_of(lambda: n(x8, x8 + 1), 2000)[0]))
    return rows


def bench_many_args():
    arrays = [np.full(8, i, np.float32) for i in range(50)]
    rows = []
    g = gpuarr.jit(many_args(gnp))
    gargs = [gnp.asarray(a) for a in arrays]
    g(*gargs).block_until_ready()
    rows.append(("gpuarr", timing.best_of(lambda: g(*gargs).block_until_ready(), 500)[0]))
    if jax is not None:
        j = jax.jit(many_args(jjnp))
        jargs = [jjnp.asarray(a) for a in arrays]
        j(*jargs).block_until_ready()
        rows.append(("jax", timing.best_of(lambda: j(*jargs).block_until_ready(), 500)[0]))
    n = many_args(np)
    rows.append(("numpy", timing.best_of(lambda: n(*arrays), 500)[0]))
    return rows


def bench_first_call():
    x = np.linspace(0, 1, 8, dtype=np.float32)
    rows = []
    counter = iter(range(10**6))

    def gpuarr_once():
        f = gpuarr.jit(chain(gnp, 200, next(counter) * 1e-7))
        f(gnp.asarray(x)).block_until_ready()

    rows.append(("gpuarr", timing.best_of(gpuarr_once, 3, repeat=5)[0]))
    if jax is not None:
        def jax_once():
            f = jax.jit(chain(jjnp, 200, next(counter) * 1e-7))
            f(jjnp.asarray(x)).block_until_ready()
        rows.append(("jax", timing.best_of(jax_once, 3, repeat=5)[0]))
    return rows


def bench_inline_jit():
    x8 = np.linspace(0, 1, 8, dtype=np.float32)
    rows = []
    f = small(gnp)
    gx, gy = gnp.asarray(x8), gnp.asarray(x8 + 1)
    gpuarr.jit(f)(gx, gy).block_until_ready()
    rows.append(("gpuarr", timing.best_of(lambda: gpuarr.jit(f)(gx, gy).block_until_ready(), 2000)[0]))
    if jax is not None:
        jf = small(jjnp)
        jx, jy = jjnp.asarray(x8), jjnp.asarray(x8 + 1)
        jax.jit(jf)(jx, jy).block_until_ready()
        rows.append(("jax", timing.best_of(lambda: jax.jit(jf)(jx, jy).block_until_ready(), 2000)[0]))
    return rows


def report(title, rows, target):
    base = dict(rows)
    print(f"\n{title}")
    for name, t in rows:
        ratio = f"  gpuarr/{name} = {base['gpuarr'] / t:.2f}" if name != "gpuarr" else ""
        print(f"  {name:8s} {t * 1e6:10.1f} us{ratio}")
    print(f"  target: {target}")


def main():
    print(f"gpuarr platform: {gpuarr.default_backend()}; jax: {jax.__version__ if jax else 'not installed'}")
    report("(a) cached jit call, 8-op function, 8-element arrays", bench_small(), "gpuarr/jax <= 1.0")
    report("(b) cached jit call, 50 array arguments", bench_many_args(), "gpuarr/jax <= 1.0")
    report("(c) first call: trace + compile of a fresh 200-op function", bench_first_call(),
           "gpuarr/jax <= 0.5")
    report("(d) jit(f)(x) inline: a new jit of the same function each call, 8-op function",
           bench_inline_jit(), "gpuarr/jax <= 1.0")


if __name__ == "__main__":
    main()
