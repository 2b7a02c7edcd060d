"""The native platform's call path: a generated C entry point, `gpuarr_program`, that runs
every launch and copy of a launch plan in order, so a jitted call costs one ctypes call.

Taking a buffer's address in Python costs microseconds (`ndarray.ctypes.data` builds an
object; `__array_interface__` a dict), which dominated small calls. The entry point takes the
tuples of input and output arrays themselves and reads each array's data pointer, type,
dtype and flags from NumPy's array struct (`PyArrayObject_fields`, the fields NumPy's
`PyArray_DATA` / `PyArray_FLAGS` macros read) at offsets `object_layout()` finds once by
comparing those fields with what Python reports for probe arrays; when it cannot find them
all, this path is off and the plan runs step by step (`native.PlanRunner`). An input of
another type or dtype, or that is not C-contiguous and aligned, makes the entry point return
1 before any work, and the caller runs the step-by-step path. Intermediate buffers are one
64-byte-aligned block allocated in C for the call. This module imports nothing from gpuarr.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

# NumPy's array flags (ndarraytypes.h): NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED.
C_CONTIGUOUS_ALIGNED = 0x0001 | 0x0100
# lay[] (below): tuple items, ob_type, data, flags and descr offsets, then the ndarray type.
LAYOUT_FIELDS = 6
ALIGN = 64

_layout: list = []


def _pointer_at(obj, offset: int) -> int | None:
    return ctypes.c_void_p.from_address(id(obj) + offset).value


def _only(offsets) -> int | None:
    offsets = list(offsets)
    return offsets[0] if len(offsets) == 1 else None


def object_layout() -> tuple | None:
    """(tuple item offset, ob_type offset, data offset, flags offset, descr offset) of this
    interpreter's tuples and NumPy's arrays, each found as the one offset that holds the value
    Python reports for two different probe arrays; None when one is not found exactly once."""
    if _layout:
        return _layout[0]
    a = np.zeros(5, np.float32)
    b = np.zeros((4, 6), np.float64)[:, ::2]   # another dtype, not contiguous
    pair = (a, b)
    size = np.ndarray.__basicsize__
    words = range(0, size - 7, 8)
    found = (
        _only(k for k in range(0, tuple.__basicsize__ + 8, 8)
              if _pointer_at(pair, k) == id(a) and _pointer_at(pair, k + 8) == id(b)),
        _only(k for k in words if _pointer_at(a, k) == id(np.ndarray) == _pointer_at(b, k)),
        _only(k for k in words if _pointer_at(a, k) == a.ctypes.data
              and _pointer_at(b, k) == b.ctypes.data),
        _only(k for k in range(0, size - 3, 4)
              if ctypes.c_int.from_address(id(a) + k).value == a.flags.num
              and ctypes.c_int.from_address(id(b) + k).value == b.flags.num),
        _only(k for k in words if _pointer_at(a, k) == id(a.dtype)
              and _pointer_at(b, k) == id(b.dtype)),
    )
    _layout.append(None if None in found else found)
    return _layout[0]


def layout_array(input_dtypes) -> ctypes.Array | None:
    """The `lay` argument of a plan's entry point: the offsets, the ndarray type, then the
    dtype object each input must have (its identity: NumPy's built-in dtypes are singletons);
    None when this path is off."""
    offsets = object_layout()
    if offsets is None:
        return None
    values = [*offsets, id(np.ndarray)] + [id(np.dtype(d)) for d in input_dtypes]
    return (ctypes.c_int64 * len(values))(*values)


_HELPERS = f"""
void *aligned_alloc(size_t alignment, size_t size); /* <stdlib.h>'s, not parsed whole */
void free(void *block);
#define GPUARR_ITEM(t, k) (*(const char *const *)((t) + lay[0] + 8 * (k)))
#define GPUARR_FIELD(o, k, T) (*(const T *)((o) + lay[k]))
#define GPUARR_DATA(o) GPUARR_FIELD(o, 2, char *)
static int gpuarr_bad_input(const char *o, const i64 *lay, i64 k) {{
  return GPUARR_FIELD(o, 1, i64) != lay[5] || GPUARR_FIELD(o, 4, i64) != lay[{LAYOUT_FIELDS} + k]
      || (GPUARR_FIELD(o, 3, int) & {C_CONTIGUOUS_ALIGNED}) != {C_CONTIGUOUS_ALIGNED};
}}
"""


def program_source(inputs, outputs, fixed, steps, info) -> str:
    """C text of `gpuarr_program(inputs, outputs, fixed, lay)` for a plan of launches and
    copies. `inputs`: the names the input tuple holds; `outputs`: the distinct names the
    output tuple holds (allocated by the caller); `fixed`: names whose data pointers are the
    `fixed` array's (constants); `steps`: ("launch", entry name, arg names, items) and
    ("copy", src, dst); `info`: name -> (shape, dtype). Every other buffer is an
    intermediate. Returns 0, or 1 (bad input) / 2 (out of memory) before any work."""
    where = {}
    lines = []
    for k, name in enumerate(inputs):
        lines.append(f"  const char *i{k} = GPUARR_ITEM(inputs, {k});")
        lines.append(f"  if (gpuarr_bad_input(i{k}, lay, {k})) return 1;")
        where.setdefault(name, f"GPUARR_DATA(i{k})")
    for k, name in enumerate(outputs):
        where[name] = f"GPUARR_DATA(GPUARR_ITEM(outputs, {k}))"
    for k, name in enumerate(fixed):
        where.setdefault(name, f"fixed[{k}]")
    total = 0
    for step in steps:
        names = step[2] if step[0] == "launch" else step[1:]
        for name in names:
            if name not in where:
                where[name] = f"(scratch + {total})"
                shape, dtype = info[name]
                nbytes = math.prod(shape) * np.dtype(dtype).itemsize
                total += -(-max(nbytes, 1) // ALIGN) * ALIGN
    body = []
    for step in steps:
        if step[0] == "launch":
            _, entry, args, items = step
            pointers = ", ".join(f"(void *){where[a]}" for a in args) or "0"
            body.append(f"  {{ void *args[] = {{{pointers}}}; {entry}_run(args, 0, {items}); }}")
        else:
            _, src, dst = step
            shape, dtype = info[dst]
            nbytes = math.prod(shape) * np.dtype(dtype).itemsize
            body.append(f"  memcpy((void *){where[dst]}, (const void *){where[src]}, {nbytes});")
    alloc = [f"  char *scratch = aligned_alloc({ALIGN}, {total});",
             "  if (!scratch) return 2;"] if total else []
    free = ["  free(scratch);"] if total else []
    # The entry points, which may be defined in another translation unit of the program.
    entries = dict.fromkeys(step[1] for step in steps if step[0] == "launch")
    return (_HELPERS + "".join(f"GPUARR_EXPORT void {e}_run(void *const *args, i64 begin, "
                               "i64 end);\n" for e in entries) +
            "GPUARR_EXPORT int gpuarr_program(const char *inputs, const char *outputs,\n"
            "                                 void *const *fixed, const i64 *lay) {\n" +
            "\n".join(lines + alloc + body + free) + "\n  return 0;\n}\n")


def entry_point(lib):
    """The loaded `gpuarr_program` of a plan's shared object (arguments passed as addresses)."""
    fn = lib.gpuarr_program
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return fn
