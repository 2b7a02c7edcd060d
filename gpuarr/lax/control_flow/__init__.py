"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Each loop or branch body is traced once, on abstract values, into a ClosedProgram kept in
the equation's params (`cond[branches=...]`, `while[cond_jaxpr=... body_jaxpr=...]`,
`scan[jaxpr=...]`, with JAX's param names). Closed-over tracers of enclosing
transformations are hoisted into explicit leading operands (`num_consts`, `cond_nconsts`,
`body_nconsts`), so every transformation sees them as ordinary inputs. On the NumPy
backend a loop becomes a `for`/`while`/`if` statement in the generated source of the Program
that contains it (eager loops run a compiled one-equation Program).

Reverse mode: a scan or cond whose inputs are partly unknown under linearize is split by
`partial_eval_program` into a known part (run now, emitting residuals: stacked per
iteration for scan, one set per branch for cond) and a linear part that is staged and
later transposed. A while_loop with a dynamic trip count cannot be reversed, as in JAX.

Modules by construct: common.py (tracing bodies, shared checks, the eager path),
conditionals.py (cond, switch), loops.py (while_loop, fori_loop, map), scans.py (scan,
associative_scan). This package re-exports the constructs and their primitives.
"""
from gpuarr.lax.control_flow.conditionals import cond, cond_p, switch
from gpuarr.lax.control_flow.loops import fori_loop, map, while_loop, while_p
from gpuarr.lax.control_flow.scans import associative_scan, scan, scan_p

__all__ = ["associative_scan", "cond", "cond_p", "fori_loop", "map", "scan", "scan_p", "switch",
           "while_loop", "while_p"]
