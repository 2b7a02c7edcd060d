"""Differential fuzzing of jit against JAX: seeded random programs run under JAX and gpuarr.

A program is a list of steps over a few inputs (float32, int32, uint32 and bool arrays with
special values, or weak Python scalars); each step appends one value computed from earlier
ones: elementwise ops with broadcasting, weak scalars and mixed dtypes, scalar-type
constructors and casts, reductions, where, reshape/transpose/slicing, gathers and `.at`
updates in every mode, dot, cumsum, argmax, sort, pad and concatenate, and cond, fori_loop
and scan. The same interpreter traces it under `jax.jit` and `gpuarr.jit`; the last values
are compared by shape, dtype, weak type and value, and both must raise or neither.

Hypothesis draws the programs (so runs are seeded and reproducible). `tests/test_differential_fuzz.py`
runs a short, `slow`-marked campaign; long runs use this file as a script, on any platform:

    GPUARR_PLATFORMS=opencl PYTHONPATH=. python tests/differential_fuzz.py --programs 300 --seed 1

which prints each difference (the program, inputs and both outcomes) and a summary line.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

DTYPES = ("float32", "int32", "uint32", "bool")
SHAPES = ((), (3,), (4,), (2, 3), (3, 1), (1, 4), (2, 2, 2))
SPECIAL = {
    "float32": [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.0, np.nan, np.inf, -np.inf, 1e-39, -1e-39,
                3.4e38, -1.4e38, 1e10, -7.0, 4.2e9, -3e9, 255.5],
    "int32": [0, 1, -1, 2, 3, -7, 100, 2**31 - 1, -2**31, 46341, 100000, 65536],
    "uint32": [0, 1, 2, 3, 7, 100, 2**32 - 1, 2**31, 65536, 46341],
    "bool": [True, False],
}
WEAK = [0, 1, -1, 2, 3, 0.5, -2.0, 0.0, True, False, 1e-39, 7, -3, 2.5]
UNARY = ("neg", "abs", "exp", "log", "sqrt", "sin", "tanh", "floor", "ceil", "sign", "log2", "exp2",
         "square", "reciprocal", "logical_not", "invert", "isnan", "round", "sigmoid", "expm1")
# Results of these may differ from XLA's by rounding (different polynomials), so values derived
# from them compare with a tolerance, and integers or booleans computed from them are not compared.
INEXACT = {"exp", "log", "sqrt", "sin", "tanh", "log2", "exp2", "sigmoid", "expm1", "true_divide",
           "power", "arctan2", "mean", "reciprocal", "dot", "sum", "cumsum", "prod", "scan",
           "fori_loop"}
BINARY = ("add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "maximum",
          "minimum", "power", "less", "equal", "greater_equal", "logical_and", "bitwise_and",
          "bitwise_xor", "arctan2", "fmax", "left_shift", "right_shift", "fmod")
REDUCE = ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all")
MODES = (None, "clip", "drop", "fill", "promise_in_bounds")
AT = ("set", "add", "multiply", "min", "max", "get")


@dataclass
class Lib:
    """One implementation under test: its jit and its numpy and lax modules."""
    jit: object
    jnp: object
    lax: object
    concrete: object  # ensure_compile_time_eval


def libraries():
    import jax
    import jax.numpy as jjnp

    import gpuarr
    import gpuarr.numpy as gjnp
    return (Lib(jax.jit, jjnp, jax.lax, jax.ensure_compile_time_eval),
            Lib(gpuarr.jit, gjnp, gpuarr.lax, gpuarr.ensure_compile_time_eval))


# ---- the interpreter ---------------------------------------------------------------------------

def _unary(L, name, x):
    j = L.jnp
    if name == "neg":
        return -x
    if name == "square":
        return x * x
    if name == "sigmoid":
        return 1 / (1 + j.exp(-x))
    if name == "invert":
        return ~x
    return getattr(j, name)(x)


def _binary(L, name, x, y):
    return getattr(L.jnp, name)(x, y)


def apply(L, step, vals):
    """The value of one step, given the earlier values."""
    kind, p = step[0], step[1]
    j, lax = L.jnp, L.lax
    a = vals[p["a"]] if "a" in p else None
    if kind == "unary":
        return _unary(L, p["op"], a)
    if kind == "astype":
        return a.astype(p["dtype"]) if hasattr(a, "astype") else j.asarray(a).astype(p["dtype"])
    if kind == "ctor":
        return getattr(j, p["dtype"] if p["dtype"] != "bool" else "bool_")(a)
    if kind == "binary":
        b = vals[p["b"]] if "b" in p else p["weak"]
        x, y = (b, a) if p.get("swap") else (a, b)
        return _binary(L, p["op"], x, y)
    if kind == "where":
        return j.where(vals[p["c"]] > 0, a, vals[p["b"]] if "b" in p else p["weak"])
    if kind == "reduce":
        return getattr(j, p["op"])(a, axis=p["axis"])
    if kind == "reshape":
        return j.reshape(a, p["shape"])
    if kind == "transpose":
        return j.transpose(a, p["perm"])
    if kind == "slice":
        return a[p["index"]]
    if kind == "gather":
        return a[np.asarray(p["idx"])]
    if kind == "at":
        ref = a.at[np.asarray(p["idx"])]
        if p["op"] == "get":
            return ref.get(mode=p["mode"])
        return getattr(ref, p["op"])(vals[p["b"]] if "b" in p else p["weak"], mode=p["mode"])
    if kind == "dot":
        k = p["k"]
        b = vals[p["b"]]
        if p["outer"]:
            return j.dot(j.reshape(a, (-1, 1))[:k], j.reshape(b, (1, -1))[:, :k])
        return j.dot(j.reshape(a, (-1,))[:k], j.reshape(b, (-1,))[:k])
    if kind == "cumsum":
        return j.cumsum(a, axis=p["axis"])
    if kind == "sort":
        return j.sort(a, axis=p["axis"])
    if kind == "pad":
        w = p["width"]
        if p["as"] == "array":  # a concrete array: JAX stages jnp.asarray under jit, gpuarr
            with L.concrete():  # keeps it concrete (docs/arithmetic.md)
                w = j.asarray(np.asarray(w))
        elif p["as"] == "numpy":
            w = np.asarray(w)
        if p["mode"] == "constant":
            return j.pad(a, w, constant_values=p["value"])
        return j.pad(a, w, mode=p["mode"])
    if kind == "concatenate":
        return j.concatenate([j.ravel(a), j.ravel(vals[p["b"]])])
    if kind == "cond":
        return lax.cond(j.sum(vals[p["c"]]) > 0, lambda v: v * 2, lambda v: v + 1, a)
    if kind == "fori_loop":
        return lax.fori_loop(0, p["n"], lambda i, c: j.where(i % 2 == 0, c * 2, c + 1), a)
    if kind == "scan":
        return lax.scan(lambda c, x: (c + x, c * x), a[0], a)[1]
    raise ValueError(f"unknown step {kind}")


def program_fn(L, steps, n_outputs):
    """The program as a Python function of its inputs (traced once per library)."""
    def f(*inputs):
        vals = list(inputs)
        for step in steps:
            vals.append(apply(L, step, vals))
        return tuple(vals[-n_outputs:])
    return f


# ---- the generator -----------------------------------------------------------------------------

@dataclass
class Program:
    inputs: list
    steps: list = field(default_factory=list)
    inexact: list = field(default_factory=list)  # per value: derived from a rounded op
    n_outputs: int = 1

    def describe(self) -> str:
        lines = [f"  input {i}: {_show(x)}" for i, x in enumerate(self.inputs)]
        n = len(self.inputs)
        lines += [f"  v{n + i} = {kind} {params}" for i, (kind, params) in enumerate(self.steps)]
        return "\n".join(lines + [f"  outputs: the last {self.n_outputs}"])


def _show(x) -> str:
    if isinstance(x, np.ndarray):
        return f"np.array({x.tolist()!r}, {x.dtype.name!r})"
    return repr(x)


def _input(draw, rng):
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(WEAK))
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from(SHAPES))
    n = int(np.prod(shape))
    special = SPECIAL[dtype]
    if dtype == "float32":
        values = [special[i] if rng.random() < 0.5 else float(rng.standard_normal() * 4)
                  for i in rng.integers(0, len(special), n)]
    elif dtype == "bool":
        values = list(rng.random(n) < 0.5)
    else:
        values = [special[i] if rng.random() < 0.5 else int(rng.integers(0, 20) - (dtype == "int32") * 10)
                  for i in rng.integers(0, len(special), n)]
    return np.array(values, dtype).reshape(shape)


def _indices(rng, n, in_bounds):
    k = int(rng.integers(1, 4))
    if in_bounds:
        return rng.integers(-n, n, k).tolist() if n else []
    return rng.integers(-n - 3, n + 3, k).tolist()


def _step(draw, rng, prog: Program, vals):
    """One random step over `vals` (JAX's concrete values of the steps so far), or None."""
    n = len(vals)
    a = draw(st.integers(0, n - 1))
    x = np.asarray(vals[a])
    nd, shape = x.ndim, x.shape
    other = lambda: draw(st.integers(0, n - 1))  # noqa: E731
    kind = draw(st.sampled_from(["unary", "unary", "astype", "ctor", "binary", "binary", "binary",
                                 "where", "reduce", "reshape", "transpose", "slice", "gather", "at",
                                 "at", "dot", "cumsum", "sort", "pad", "concatenate", "cond",
                                 "fori_loop", "scan"]))
    p = {"a": a}
    if kind == "unary":
        p["op"] = draw(st.sampled_from(UNARY))
    elif kind in ("astype", "ctor"):
        p["dtype"] = draw(st.sampled_from(DTYPES))
    elif kind == "binary":
        p["op"] = draw(st.sampled_from(BINARY))
        if draw(st.booleans()):
            p["weak"] = draw(st.sampled_from(WEAK))
        else:
            p["b"] = other()
        p["swap"] = draw(st.booleans())
    elif kind == "where":
        p["c"] = other()
        if draw(st.booleans()):
            p["weak"] = draw(st.sampled_from(WEAK))
        else:
            p["b"] = other()
    elif kind == "reduce":
        p["op"] = draw(st.sampled_from(REDUCE))
        p["axis"] = draw(st.sampled_from([None] + list(range(-nd, nd))))
        if p["op"] in ("argmax", "argmin") and x.size == 0:
            return None
    elif kind == "reshape":
        p["shape"] = draw(st.sampled_from([(-1,), (1, -1), (-1, 1)] + ([(2, -1)] if x.size % 2 == 0 else [])))
    elif kind == "transpose":
        if nd < 2:
            return None
        p["perm"] = tuple(draw(st.permutations(range(nd))))
    elif kind == "slice":
        if nd == 0:
            return None
        p["index"] = draw(st.sampled_from([np.s_[::2], np.s_[1:], np.s_[::-1], np.s_[:0:1],
                                           np.s_[..., 0], np.s_[None, :]]))
    elif kind == "gather":
        if nd == 0 or shape[0] == 0:
            return None
        p["idx"] = _indices(rng, shape[0], True)
    elif kind == "at":
        if nd == 0 or shape[0] == 0:
            return None
        p["op"] = draw(st.sampled_from(AT))
        p["mode"] = draw(st.sampled_from(MODES))
        p["idx"] = _indices(rng, shape[0], p["mode"] == "promise_in_bounds")
        if p["op"] != "get":
            if draw(st.booleans()):
                p["weak"] = draw(st.sampled_from(WEAK))
            else:
                b = other()
                if np.ndim(vals[b]) != 0:
                    return None
                p["b"] = b
    elif kind == "dot":
        p["b"] = other()
        size = min(x.size, np.size(vals[p["b"]]))
        if size == 0:
            return None
        p["k"] = int(rng.integers(1, min(size, 4) + 1))
        p["outer"] = draw(st.booleans())
    elif kind in ("cumsum", "sort"):
        if nd == 0:
            return None
        p["axis"] = draw(st.sampled_from(list(range(-nd, nd))))
    elif kind == "pad":
        p["width"] = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(nd))
        p["as"] = draw(st.sampled_from(["tuple", "numpy", "array"]))
        p["mode"] = draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
        p["value"] = draw(st.sampled_from(WEAK))
        if nd == 0 or (p["mode"] != "constant" and x.size == 0):
            return None
    elif kind == "concatenate":
        p["b"] = other()
    elif kind == "cond":
        p["c"] = other()
    elif kind == "fori_loop":
        p["n"] = int(rng.integers(0, 4))
    elif kind == "scan":
        if nd == 0 or shape[0] == 0:
            return None
    return (kind, p)


def draw_program(draw) -> Program:
    """A random program whose steps all compute under JAX eagerly (the last one may raise)."""
    import jax.numpy as jjnp
    jlib = libraries()[0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    prog = Program([_input(draw, rng) for _ in range(draw(st.integers(1, 3)))])
    prog.inexact = [False] * len(prog.inputs)
    vals = [jjnp.asarray(x) if isinstance(x, np.ndarray) else x for x in prog.inputs]
    for _ in range(draw(st.integers(1, 6))):
        step = _step(draw, rng, prog, vals)
        if step is None:
            continue
        try:
            value = apply(jlib, step, vals)
        except Exception:  # noqa: BLE001 - a raising step ends the program (both must raise)
            prog.steps.append(step)
            prog.inexact.append(True)
            break
        name = step[1].get("op", step[0])
        reads = [step[1][k] for k in ("a", "b", "c") if k in step[1]]
        prog.inexact.append(name in INEXACT or step[0] in INEXACT
                            or any(prog.inexact[r] for r in reads))
        prog.steps.append(step)
        vals.append(value)
    prog.n_outputs = min(draw(st.integers(1, 3)), len(prog.steps) or 1)
    return prog


# ---- running and comparing ---------------------------------------------------------------------

def outcome(L, prog: Program):
    """('ok', outputs) or ('raise', the exception) for the program jitted by `L`."""
    try:
        f = L.jit(program_fn(L, prog.steps, prog.n_outputs))
        outs = f(*prog.inputs)
        return "ok", [(np.asarray(o), bool(getattr(o, "weak_type", False))) for o in outs]
    except Exception as e:  # noqa: BLE001 - both libraries must raise, whatever the class
        return "raise", e


def _values_differ(got, want, inexact) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        if inexact:
            return None
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        tiny = np.finfo(want.dtype).tiny
        # XLA on the CPU flushes subnormal results; where one side is subnormal (or zero),
        # compare at the smallest normal's scale.
        rtol, atol = (1e-4, 1e-30) if inexact else (1e-6, 0.0)
        close = np.isclose(g, w, rtol=rtol, atol=max(atol, float(tiny) if inexact else 0.0))
        if inexact:
            close |= np.isinf(g) & np.isinf(w) | (np.abs(w) > 1e30) & (np.abs(g) > 1e30) & (
                np.sign(g) == np.sign(w))
        both_nan = np.isnan(g) & np.isnan(w)
        bad = ~(close | both_nan)
    if np.any(bad):
        where = np.argwhere(np.atleast_1d(bad))[:3].tolist()
        return f"values differ at {where}: {np.atleast_1d(got)[np.atleast_1d(bad)][:3]} != " \
               f"{np.atleast_1d(want)[np.atleast_1d(bad)][:3]}"
    return None


def _said(result) -> str:
    kind, value = result
    return f"raised {type(value).__name__}: {str(value)[:200]}" if kind == "raise" else "computed"


def compare(prog: Program, libs=None) -> str | None:
    """None when gpuarr agrees with JAX on `prog`, else what differs."""
    jlib, glib = libs or libraries()
    want = outcome(jlib, prog)
    got = outcome(glib, prog)
    if want[0] != got[0]:
        return f"JAX {_said(want)}, gpuarr {_said(got)}"
    if want[0] == "raise":
        return None
    inexact = prog.inexact[-prog.n_outputs:]
    for i, ((g, gw), (w, ww), inex) in enumerate(zip(got[1], want[1], inexact)):
        msg = _values_differ(g, w, inex)
        if msg is None and gw != ww:
            msg = f"weak_type {gw} != {ww}"
        if msg:
            return f"output {i}: {msg}"
    return None


def campaign(n_programs: int, seed_value: int, report=print) -> tuple[int, int]:
    """Run `n_programs` programs from `seed_value`; report each difference; return
    (programs run, differences)."""
    import jax
    jax.config.update("jax_platforms", "cpu")
    libs = libraries()
    counts = [0, 0]

    @seed(seed_value)
    @settings(max_examples=n_programs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        prog = draw_program(data.draw)
        counts[0] += 1
        if counts[0] % 50 == 0:
            report(f"... {counts[0]} programs, {counts[1]} differences")
        diff = compare(prog, libs)
        if diff is not None:
            counts[1] += 1
            report(f"--- difference {counts[1]} (program {counts[0]}): {diff}\n{prog.describe()}")

    run()
    return counts[0], counts[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import gpuarr
    start = time.perf_counter()
    n, diffs = campaign(args.programs, args.seed)
    print(f"platform {gpuarr.default_backend()} ({os.environ.get('GPUARR_PLATFORMS', 'default')}): "
          f"{diffs} differences in {n} programs, seed {args.seed}, {time.perf_counter() - start:.0f} s")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
