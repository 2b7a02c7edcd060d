"""Host drivers of control flow inside kernel plans: `while`, `cond`, `scan` and
`custom_linear_solve` run on the host and call their sub-programs, compiled by the platform
into kernel sub-plans."""
from __future__ import annotations

import functools

import numpy as np


def control_driver(eqn, sub_compiler, xp=np):
    """A host function running `while`, `cond`, `scan` or `custom_linear_solve` over compiled
    sub-programs, or None. The sub-programs take and return arrays of the array module `xp`
    (NumPy, or CuPy on a GPU): loop state stays where the platform keeps it, and only a
    predicate or a branch index is read back per iteration."""
    if sub_compiler is None:
        return None
    p = eqn.params
    compiled = functools.lru_cache(maxsize=None)(lambda k: sub_compiler(programs[k]))
    if eqn.prim.name == "while":
        programs = {"cond": p["cond_jaxpr"], "body": p["body_jaxpr"]}
        cn, bn = p["cond_nconsts"], p["body_nconsts"]

        def run_while(*args):
            cc, bc, carry = args[:cn], args[cn:cn + bn], list(args[cn + bn:])
            while True:
                pred = compiled("cond")(*cc, *carry)[0]
                if not bool(pred.any()):
                    return carry
                new = compiled("body")(*bc, *carry)
                if pred.ndim:  # a batched predicate: the examples that are done keep theirs
                    shaped = [pred.reshape(pred.shape + (1,) * (n.ndim - pred.ndim))
                              for n in new]
                    new = [xp.where(m, n, c) for m, n, c in zip(shaped, new, carry)]
                carry = list(new)
        return run_while
    if eqn.prim.name == "cond":
        programs = dict(enumerate(p["branches"]))

        def run_cond(index, *operands):
            i = min(max(int(index), 0), len(programs) - 1)
            return list(compiled(i)(*operands))
        return run_cond
    if eqn.prim.name == "scan":
        programs = {"body": p["jaxpr"]}
        nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
        y_avals = p["jaxpr"].out_avals[nk:]

        def run_scan(*args):
            consts, carry, xs = args[:nc], list(args[nc:nc + nk]), args[nc + nk:]
            ys = [xp.empty((length,) + a.shape, a.dtype) for a in y_avals]
            for i in (range(length - 1, -1, -1) if p["reverse"] else range(length)):
                outs = compiled("body")(*consts, *carry, *[x[i] for x in xs])
                carry = list(outs[:nk])
                for buf, y in zip(ys, outs[nk:]):
                    buf[i] = y
            return carry + ys
        return run_scan
    if eqn.prim.name == "custom_linear_solve":
        programs = {"solve": p["jaxprs"].solve}
        lengths = p["const_lengths"]
        start, stop = lengths.matvec + lengths.vecmat, sum(lengths)

        def run_linear_solve(*args):  # only the solve runs: x = solve(b)
            return list(compiled("solve")(*args[start:start + lengths.solve], *args[stop:]))
        return run_linear_solve
    return None
