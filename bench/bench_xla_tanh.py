"""The cost of XLA's float32 tanh on the NumPy backend (gpuarr/lax/xla_tanh.py), side by side
with its peers in one run: NumPy's np.tanh (the C library's, what the host computed before)
and JAX's jitted tanh on the CPU, on 10**3 and 10**6 float32 values in [-5, 5]. Each ratio is
the median of per-round ratios (bench/timing.py: `interleaved`).
Run: python bench/bench_xla_tanh.py
"""
from __future__ import annotations

import numpy as np
import timing

from gpuarr.backends.float_env import flushing
from gpuarr.lax.xla_tanh import tanh_f32

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is optional: only the NumPy column is printed
    jax = jjnp = None


def main():
    rng = np.random.default_rng(0)
    for n in (10 ** 3, 10 ** 6):
        x = rng.uniform(-5, 5, n).astype(np.float32)
        number = max(1, 2 * 10 ** 5 // n)
        with flushing():
            ours, peer, ratio = timing.interleaved(lambda: tanh_f32(x), lambda: np.tanh(x), number)
        line = f"n={n:>8}: xla tanh_f32 {ours[1] * 1e3:8.3f} ms, np.tanh {peer[1] * 1e3:8.3f} ms, " \
               f"ratio {ratio:6.1f}"
        if jax is not None:
            f = jax.jit(jjnp.tanh)
            xj = jax.device_put(x)
            with flushing():
                _, theirs, jratio = timing.interleaved(
                    lambda: tanh_f32(x), lambda: f(xj).block_until_ready(), number)
            line += f"; jax.jit(tanh) {theirs[1] * 1e3:8.3f} ms, ratio {jratio:6.1f}"
        print(line)


if __name__ == "__main__":
    main()
