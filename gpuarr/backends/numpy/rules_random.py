"""The random bits and XLA's erf_inv in the NumPy backend's generated code: block kernels, so
that a sampler's chain from counters to floats runs block by block inside one blocked run
(`Codegen.blocked_run`) instead of each step splitting its own work over the threads."""
from __future__ import annotations

import numpy as np

from gpuarr.backends.numpy.codegen import block_kernel_rules
from gpuarr.prng import _threefry2x32_block, threefry2x32_p
from gpuarr.random.xla_math import _erf_inv32_into, erf_inv_giles_p

block_kernel_rules[threefry2x32_p] = lambda eqn: _threefry2x32_block
# Float32 erf_inv takes its blocks inside the run that draws the uniforms.
block_kernel_rules[erf_inv_giles_p] = lambda eqn: (
    _erf_inv32_into if eqn.inputs[0].aval.dtype == eqn.outvars[0].aval.dtype == np.float32
    else None)
