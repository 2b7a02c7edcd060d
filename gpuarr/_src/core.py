"""`jax._src.core`: avals, tracers, traces and programs (gpuarr.core), with the primitives
libraries define (gpuarr.extend.core)."""
from gpuarr.core import *  # noqa: F401, F403
from gpuarr.core import ClosedProgram as ClosedJaxpr  # noqa: F401
from gpuarr.core import Program as Jaxpr  # noqa: F401
from gpuarr.extend.core import Effect, Primitive, eval_jaxpr, jaxpr_as_fn  # noqa: F401
