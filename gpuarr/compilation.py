"""The entry every compilation of a jitted program goes through (JAX's
`jax._src.compiler.backend_compile_and_load`, served as `jax._src.compiler`): jit and the
`lower().compile()` stages call it through this module's attributes at call time, so a library
that wraps them (chex's `restrict_backends`) sees, and may refuse, every compilation."""
from __future__ import annotations

from gpuarr.errors import JaxRuntimeError


def backend_compile(backend, module, *, optimized: bool = False):
    """The callable of the ClosedProgram `module` on the platform `backend` (its `.platform`
    names it): the compiler's passes then code generation, or code generation only when the
    program is `optimized` already (the lowered program of the stages)."""
    return backend.codegen(module) if optimized else backend.compile(module)


def backend_compile_and_load(backend, module, *, optimized: bool = False):
    """`backend_compile`, loaded for the devices of `backend` (gpuarr's platforms load what
    they compile), as JAX 0.10.2's `compiler.backend_compile_and_load`."""
    return backend_compile(backend, module, optimized=optimized)


# XLA's options that jax's compiler sets on the executable's build options; every other
# option XLA takes is a field of its DebugOptions, all named `xla_...`.
_BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort",
                  "optimization_level", "memory_fitting_level")


def check_compiler_options(options) -> None:
    """JAX's JaxRuntimeError for a compiler option XLA would refuse. The options tune XLA's
    compiler, which gpuarr does not run, so the ones XLA takes (its DebugOptions fields, whose
    names begin with `xla_`, and the build options above) are accepted and change nothing."""
    for name, value in (options or {}).items():
        if not isinstance(name, str) or not (name.startswith("xla_") or name in _BUILD_OPTIONS):
            raise JaxRuntimeError(f"INVALID_ARGUMENT: No such compile option: '{name}'")
        if not isinstance(value, (str, bool, int, float)):
            raise JaxRuntimeError(f"INVALID_ARGUMENT: While setting option {name}, "
                                  f"'{value}' is not a valid value: give a str, bool, int or "
                                  "float.")
