"""The NumPy backend: Programs compiled to Python source over NumPy values.

`codegen` is the compiler (a Program -> the source of one Python function -> a callable) and
holds the tables of code-generation rules, keyed by primitive; the `rules_*` modules register
them for the primitives of their subject, as `gpuarr.compiler.lowering` does for kernels.
What a primitive computes is not here: `gpuarr.impls.impl_rules`, which the generated code
calls and every rule agrees with. Importing this package registers the rules and installs the
compiler as the host compiler of `gpuarr.impls` (`import gpuarr` and the cpu platform do).
"""
from gpuarr.backends.numpy import rules_control_flow, rules_lax, rules_random  # noqa: F401
from gpuarr.backends.numpy.codegen import as_numpy, compile_closed, compile_program, source_of  # noqa: F401
