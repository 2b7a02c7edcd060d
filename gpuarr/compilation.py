"""The entry every compilation of a jitted program goes through (JAX's
`jax._src.compiler.backend_compile_and_load`, served as `jax._src.compiler`): jit and the
`lower().compile()` stages call it through this module's attributes at call time, so a library
that wraps them (chex's `restrict_backends`) sees, and may refuse, every compilation."""
from __future__ import annotations


def backend_compile(backend, module, *, optimized: bool = False):
    """The callable of the ClosedProgram `module` on the platform `backend` (its `.platform`
    names it): the compiler's passes then code generation, or code generation only when the
    program is `optimized` already (the lowered program of the stages)."""
    return backend.codegen(module) if optimized else backend.compile(module)


def backend_compile_and_load(backend, module, *, optimized: bool = False):
    """`backend_compile`, loaded for the devices of `backend` (gpuarr's platforms load what
    they compile), as JAX 0.10.2's `compiler.backend_compile_and_load`."""
    return backend_compile(backend, module, optimized=optimized)
