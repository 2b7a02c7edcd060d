"""Loops of the native platform run in C: a `scan` or `while` whose body (and condition) is a
launch plan of kernels, copies and matrix products becomes straight-line code for the fixed
driver in kernels/loop_driver.c, which runs every iteration without returning to Python.

The driver's code is a flat int64 array (opcodes in kernels/loop_driver.c); buffers are slots of
a pointer array filled per call; kernels are the entry points of the body's own shared object
(`native.PlanRunner`) and `dot_general` calls the CBLAS ?gemm/?gemv of the OpenBLAS NumPy ships,
resolved once with ctypes, so products round as the NumPy backend's `np.dot` does. A body with
any other host step (sort, a nested loop, a fallback) keeps the Python driver
(gpuarr/compiler/control.py). Like this module's sibling backends, it sees launch plans only,
never the IR.
"""
from __future__ import annotations

import ctypes
import glob
import math
import os

import numpy as np

from gpuarr.backends import float_env, native

OP_END, OP_LAUNCH, OP_COPY, OP_VIEW, OP_GEMM, OP_GEMV = range(6)
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
# A body launch moving at least this many bytes splits over threads on the Python driver; the
# C driver runs each launch on one thread, so such bodies keep the Python driver.
MAX_LAUNCH_BYTES = native.PARALLEL_MIN_BYTES

_state: dict = {}


def _blas() -> dict | None:
    """{'sgemm', 'dgemm', 'sgemv', 'dgemv'}: addresses of the CBLAS routines of NumPy's
    OpenBLAS (64-bit integers), or None when NumPy ships another BLAS."""
    if "blas" not in _state:
        found, lib = None, None
        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                      "libscipy_openblas64_*"))
        try:
            lib = ctypes.CDLL(libs[0]) if len(libs) == 1 else None
            if lib is not None:
                found = {n: ctypes.cast(getattr(lib, f"scipy_cblas_{n}64_"), ctypes.c_void_p).value
                         for n in ("sgemm", "dgemm", "sgemv", "dgemv")}
        except (OSError, AttributeError):
            found = None
        _state["blas"] = found
        _state["blas_lib"] = lib if found else None   # kept loaded while its addresses are used
    return _state["blas"]


def _driver(source: str):
    """The loaded driver (kernels/loop_driver.c), built once per machine through native's
    caches."""
    lib = native.load(source)
    scan, loop_while = lib.gpuarr_loop_scan, lib.gpuarr_loop_while
    scan.restype, loop_while.restype = None, ctypes.c_int64
    scan.argtypes = (ctypes.c_void_p,) * 3 + (ctypes.c_int64, ctypes.c_int64)
    loop_while.argtypes = (ctypes.c_void_p,) * 4 + (ctypes.c_int64,)
    return lib


class _Code:
    """The slots, function table and instructions of one loop being assembled."""

    def __init__(self):
        self.slots: dict = {}
        self.fns: list = []
        self.fn_index: dict = {}
        self.shapes: dict = {}   # slot -> (shape, dtype) of the buffers allocated per call
        self.fixed: dict = {}    # slot -> array bound once (plan constants)

    def slot(self, key) -> int:
        return self.slots.setdefault(key, len(self.slots))

    def fn(self, address: int) -> int:
        if address not in self.fn_index:
            self.fn_index[address] = len(self.fns)
            self.fns.append(address)
        return self.fn_index[address]


def _dot(code: _Code, tag: str, step, info: dict) -> list | None:
    """The GEMM/GEMV instruction of a dot_general host step, or None when it is not a plain
    float32/float64 matrix or vector product."""
    blas, p = _blas(), step.params or {}
    if blas is None or len(step.inputs) != 2 or len(step.outputs) != 1:
        return None
    (lc, rc), (lb, rb) = p.get("dimension_numbers", ((), ((), ())))
    (ls, lt), (rs, rt), (os_, ot) = (info[n] for n in step.inputs + step.outputs)
    precision = p.get("precision")
    plain = all(q is None or type(q).__name__ == "Precision"
                for q in (precision if isinstance(precision, tuple) else (precision,)))
    if not plain or lb or rb or len(lc) != 1 or lt != rt or lt != ot \
            or lt.name not in ("float32", "float64") or len(ls) > 2 or len(rs) > 2 \
            or 0 in ls + rs:
        return None
    f64 = int(lt.name == "float64")
    a, b, c = (code.slot((tag, n)) for n in step.inputs + step.outputs)
    lc, rc = lc[0], rc[0]
    if len(ls) == 2 and len(rs) == 2:
        m, k = (ls[0], ls[1]) if lc == 1 else (ls[1], ls[0])
        n = rs[1] if rc == 0 else rs[0]
        return [OP_GEMM, code.fn(blas["dgemm" if f64 else "sgemm"]), f64, ROW_MAJOR,
                NO_TRANS if lc == 1 else TRANS, NO_TRANS if rc == 0 else TRANS, m, n, k,
                ls[1], rs[1], n, a, b, c]
    gemv = code.fn(blas["dgemv" if f64 else "sgemv"])
    if len(ls) == 1 and len(rs) == 2:   # x @ B: B (k, n) transposed, or B (n, k)
        return [OP_GEMV, gemv, f64, ROW_MAJOR, TRANS if rc == 0 else NO_TRANS, rs[0], rs[1],
                rs[1], b, a, c]
    if len(ls) == 2:                     # A @ x (rhs is a vector)
        return [OP_GEMV, gemv, f64, ROW_MAJOR, NO_TRANS if lc == 1 else TRANS, ls[0], ls[1],
                ls[1], a, b, c]
    return [OP_GEMV, gemv, f64, ROW_MAJOR, NO_TRANS, 1, ls[0], ls[0], a, b, c]


def _emit_plan(code: _Code, tag: str, plan, runner) -> list | None:
    """Instructions running every step of `plan` (built by `runner`), or None when one of
    them cannot run in C."""
    info = runner.info
    out = []
    for step, built in zip(plan.steps, runner.steps):
        if built[0] == "launch":
            _, fn, args, items, nbytes = built
            if nbytes >= MAX_LAUNCH_BYTES:
                return None
            address = ctypes.cast(fn, ctypes.c_void_p).value
            out += [OP_LAUNCH, code.fn(address), items, len(args)]
            out += [code.slot((tag, a)) for a in args]
        elif built[0] == "copy":
            shape, dtype = info[step.dst]
            out += [OP_COPY, code.slot((tag, step.dst)), 0, code.slot((tag, step.src)), 0,
                    math.prod(shape) * dtype.itemsize]
        elif step.name == "dot_general":
            dot = _dot(code, tag, step, info)
            if dot is None:
                return None
            out += dot
        else:
            return None
    inputs = set(plan.inputs)
    for name, (shape, dtype) in info.items():
        s = code.slot((tag, name))
        if name in runner.constants:
            code.fixed[s] = runner.constants[name]
        elif name not in inputs:
            code.shapes[s] = (shape, dtype)
    return out


def _carry_update(code: _Code, tag: str, plan, n_in: int, carry_slots: list) -> list:
    """Copies of the body's carry results into the carry buffers. A result that is another
    carry's buffer goes through a staging buffer first, so no copy reads a carry that an earlier
    copy of the same step overwrote."""
    ins = {code.slot((tag, n)): k for k, n in enumerate(plan.inputs[n_in:n_in + len(carry_slots)])}
    info = _plan_info(plan)
    staged, direct = [], []
    for k, (name, dst) in enumerate(zip(plan.outputs, carry_slots)):
        src = code.slot((tag, name))
        shape, dtype = info[name]
        nbytes = math.prod(shape) * dtype.itemsize
        if src == dst or ins.get(src) == k:
            continue
        if src in ins:
            stage = code.slot(("stage", k))
            code.shapes[stage] = (shape, dtype)
            staged.append((stage, src, dst, nbytes))
        else:
            direct += [OP_COPY, dst, 0, src, 0, nbytes]
    first = [x for stage, src, _, n in staged for x in (OP_COPY, stage, 0, src, 0, n)]
    last = [x for stage, _, dst, n in staged for x in (OP_COPY, dst, 0, stage, 0, n)]
    return first + direct + last


def _plan_info(plan) -> dict:
    return {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in plan.buffers}


class NativeLoop:
    """A loop built for the C driver: call it with the control step's inputs (as the Python
    driver of gpuarr/compiler/control.py takes them) to get its outputs."""

    def __init__(self, driver, code: _Code, keep: tuple):
        self.driver, self.code, self.keep = driver, code, keep
        self.fns = (ctypes.c_void_p * max(1, len(code.fns)))(*code.fns)

    def _slots(self, bound: dict):
        code = self.code
        arrays = dict(code.fixed)
        arrays.update(bound)
        for s, (shape, dtype) in code.shapes.items():
            if s not in arrays:
                arrays[s] = np.empty(shape, dtype)
        table = (ctypes.c_void_p * max(1, len(code.slots)))()
        for s, a in arrays.items():
            table[s] = a.ctypes.data
        return table, arrays


def _carry_arrays(values, info, names) -> list:
    return [np.array(v, dtype=info[n][1], copy=True, order="C").reshape(info[n][0])
            for v, n in zip(values, names)]


class ScanLoop(NativeLoop):
    def __init__(self, driver, code, keep, body_code, length, reverse, layout):
        super().__init__(driver, code, keep)
        self.body = np.array(body_code + [OP_END], np.int64)
        self.length, self.reverse = length, reverse
        self.layout = layout

    def __call__(self, *args):
        n_const, n_carry, const_slots, carry_names, carry_slots, x_slots, y_slots, info = \
            self.layout
        consts, carry, xs = args[:n_const], args[n_const:n_const + n_carry], \
            args[n_const + n_carry:]
        carry = _carry_arrays(carry, info, carry_names)
        ys = [np.empty((self.length,) + shape, dtype) for shape, dtype in y_slots.values()]
        if self.length == 0:
            return carry + ys
        bound = {s: native.contiguous(c) for s, c in zip(const_slots, consts)}
        bound.update(zip(carry_slots, carry))
        bound.update({s: native.contiguous(x) for s, x in zip(x_slots, xs)})
        bound.update(zip(y_slots, ys))
        table, arrays = self._slots(bound)
        with float_env.flushing():
            self.driver.gpuarr_loop_scan(self.body.ctypes.data, table, self.fns, self.length,
                                         int(self.reverse))
        return carry + ys


class WhileLoop(NativeLoop):
    def __init__(self, driver, code, keep, cond_code, body_code, pred, layout):
        super().__init__(driver, code, keep)
        self.cond = np.array(cond_code + [OP_END], np.int64)
        self.body = np.array(body_code + [OP_END], np.int64)
        self.pred, self.layout = pred, layout

    def __call__(self, *args):
        cn, bn, cond_slots, body_slots, carry_names, carry_slots, cond_carry, info = \
            self.layout
        carry = _carry_arrays(args[cn + bn:], info, carry_names)
        bound = {s: native.contiguous(c) for s, c in zip(cond_slots + body_slots, args[:cn + bn])}
        bound.update(zip(carry_slots, carry))
        bound.update(zip(cond_carry, carry))
        table, arrays = self._slots(bound)
        with float_env.flushing():
            self.driver.gpuarr_loop_while(self.cond.ctypes.data, self.body.ctypes.data, table,
                                          self.fns, self.pred)
        return carry


def scan_loop(driver_source: str, body, params) -> ScanLoop | None:
    """A ScanLoop for a `scan` with `params` whose body is `body` = (launch plan, its
    native.PlanRunner, the body's closed consts), or None when the body cannot run in C."""
    plan, runner, closed_consts = body
    nc, nk = params["num_consts"], params["num_carry"]
    code = _Code()
    info = runner.info
    skip = len(closed_consts)
    names = plan.inputs[skip:]
    for name, value in zip(plan.inputs[:skip], closed_consts):
        code.fixed[code.slot(("body", name))] = native.contiguous(value, info[name][1])
    steps = _emit_plan(code, "body", plan, runner)
    if steps is None:
        return None
    carry_names = names[nc:nc + nk]
    carry_slots = [code.slot(("body", n)) for n in carry_names]
    const_slots = [code.slot(("body", n)) for n in names[:nc]]
    views, x_slots = [], []
    for k, name in enumerate(names[nc + nk:]):
        shape, dtype = info[name]
        x_slots.append(code.slot(("xs", k)))
        views += [OP_VIEW, code.slot(("body", name)), x_slots[-1], math.prod(shape) * dtype.itemsize]
    y_slots, copies = {}, []
    for k, name in enumerate(plan.outputs[nk:]):
        shape, dtype = info[name]
        s = code.slot(("ys", k))
        y_slots[s] = (shape, dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        copies += [OP_COPY, s, nbytes, code.slot(("body", name)), 0, nbytes]
    update = _carry_update(code, "body", plan, skip + nc, carry_slots)
    layout = (nc, nk, const_slots, carry_names, carry_slots, x_slots, y_slots, info)
    return ScanLoop(_driver(driver_source), code, (runner,), views + steps + copies + update,
                    params["length"], params["reverse"], layout)


def while_loop(driver_source: str, cond, body, params) -> WhileLoop | None:
    """A WhileLoop for a `while` with `params`, its condition and body each (launch plan,
    native.PlanRunner, closed consts), or None when either cannot run in C or the predicate is
    batched."""
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    code = _Code()
    parts = {}
    for tag, (plan, runner, closed_consts) in (("cond", cond), ("body", body)):
        skip = len(closed_consts)
        for name, value in zip(plan.inputs[:skip], closed_consts):
            code.fixed[code.slot((tag, name))] = native.contiguous(value, runner.info[name][1])
        steps = _emit_plan(code, tag, plan, runner)
        if steps is None:
            return None
        parts[tag] = (plan, runner, skip, steps)
    cplan, crunner, cskip, cond_steps = parts["cond"]
    bplan, brunner, bskip, body_steps = parts["body"]
    pred_name = cplan.outputs[0]
    if crunner.info[pred_name][0] != () or len(cplan.outputs) != 1:
        return None
    cond_in, body_in = cplan.inputs[cskip:], bplan.inputs[bskip:]
    carry_names = body_in[bn:]
    carry_slots = [code.slot(("body", n)) for n in carry_names]
    # The condition reads the same carry buffers: its carry slots are bound to them too.
    cond_carry = [code.slot(("cond", n)) for n in cond_in[cn:]]
    update = _carry_update(code, "body", bplan, bskip + bn, carry_slots)
    layout = (cn, bn, [code.slot(("cond", n)) for n in cond_in[:cn]],
              [code.slot(("body", n)) for n in body_in[:bn]], carry_names, carry_slots,
              cond_carry, brunner.info)
    return WhileLoop(_driver(driver_source), code, (crunner, brunner), cond_steps,
                     body_steps + update, code.slot(("cond", pred_name)), layout)
