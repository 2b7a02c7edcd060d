"""`explain(f)(*args)`: print how a function compiles — each kernel, the equations it fused,
why it ends where it does, its launch shape, and the bytes it moves against the minimum the
Program needs (its inputs read once, its outputs written once). `source=True` adds the
rendered kernel source.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from gpuarr import jit_api
from gpuarr.compiler.plan import (
    CopyStep,
    ElementwiseKernel,
    Gather,
    HostStep,
    Iota,
    KernelPlan,
    KernelStep,
    Load,
    ReductionKernel,
    ScanKernel,
    ScatterKernel,
    Window,
)


def _nbytes(info) -> int:
    return math.prod(info.shape) * np.dtype(info.dtype).itemsize


def _load_bytes(nodes, binds, plan, iterations: int) -> dict:
    """Bytes each buffer contributes when `nodes` run `iterations` times (a buffer read
    through a broadcast is counted once per distinct element, at most its size)."""
    out: dict = {}
    for n in nodes:
        if isinstance(n, (Load, Gather, Window)):
            buf = binds[n.arg]
            info = plan.buffer(buf)
            reads = iterations * (math.prod(n.window_dimensions) if isinstance(n, Window) else 1)
            size = min(_nbytes(info), reads * np.dtype(info.dtype).itemsize)
            out[buf] = max(out.get(buf, 0), size)
    return out


def step_bytes(step, plan: KernelPlan) -> tuple:
    """(bytes read, bytes written) by one plan step."""
    if isinstance(step, KernelStep):
        k, binds = step.kernel, dict(step.bindings)
        if isinstance(k, ElementwiseKernel):
            reads = _load_bytes(k.nodes, binds, plan, k.size)
            writes = sum(_nbytes(plan.buffer(binds[s.arg])) for s in k.stores)
        elif isinstance(k, ReductionKernel):
            it = k.out_size * k.red_size
            reads = _load_bytes(k.pre_nodes + k.epilogue_nodes, binds, plan, it)
            reads.update({b: max(reads.get(b, 0), v) for b, v in
                          _load_bytes(k.post_nodes, binds, plan, k.out_size).items()})
            writes = sum(_nbytes(plan.buffer(binds[s.arg])) for s in k.post_stores + k.epilogue_stores)
        elif isinstance(k, ScanKernel):
            reads = _load_bytes(k.pre_nodes, binds, plan, k.size)
            writes = _nbytes(plan.buffer(binds["out0"]))
        else:
            assert isinstance(k, ScatterKernel)
            reads = {binds[a]: _nbytes(plan.buffer(binds[a])) for a in ("updates", "indices")
                     if a in binds}
            writes = math.prod(k.updates_shape) * np.dtype(k.dtype).itemsize
        return sum(reads.values()), writes
    if isinstance(step, CopyStep):
        n = _nbytes(plan.buffer(step.src))
        return n, n
    return (sum(_nbytes(plan.buffer(b)) for b in step.inputs),
            sum(_nbytes(plan.buffer(b)) for b in step.outputs))


def _launch_shape(step) -> str:
    from gpuarr.compiler.render import render
    rk = render(step.kernel)
    return f"{rk.global_size // rk.local_size} blocks x {rk.local_size} threads"


def describe(plan: KernelPlan, source: bool = False) -> str:
    """The text `explain` prints for `plan`."""
    from gpuarr.compiler.render import render
    lines = []
    total_r = total_w = 0
    kernels = 0
    for n, step in enumerate(plan.steps):
        r, w = step_bytes(step, plan)
        total_r, total_w = total_r + r, total_w + w
        if isinstance(step, KernelStep):
            kernels += 1
            k = step.kernel
            kind = type(k).__name__.replace("Kernel", "").lower()
            extra = ""
            if isinstance(k, ReductionKernel):
                extra = (f" {k.reduce_op} {k.shape} x {k.red_shape} strategy={k.strategy}"
                         f"{' +post' if len(k.post_nodes) > 1 else ''}"
                         f"{' +epilogue' if k.epilogue_nodes else ''}")
            elif isinstance(k, ScanKernel):
                extra = (f" cumulative {k.op} along axis {k.axis} of {k.shape}"
                         f"{' reversed' if k.reverse else ''} strategy={k.strategy}")
            lines.append(f"[{n}] kernel {k.name} ({kind}{extra}) {_launch_shape(step)}; "
                         f"reads {r} B, writes {w} B")
            lines.append(f"    why it ends here: {k.reason}")
            for e in k.equations:
                lines.extend(f"      {line}" for line in e.splitlines())
            if source:
                text = render(k).source
                body = text[text.index(f"// {k.name}"):] if f"// {k.name}" in text else text
                lines.extend("    | " + line for line in body.splitlines())
        elif isinstance(step, HostStep):
            lines.append(f"[{n}] host {step.role} {step.name}; reads {r} B, writes {w} B")
            lines.append(f"    why: {step.reason}")
            for e in step.equations:
                lines.extend(f"      {line}" for line in e.splitlines())
        else:
            lines.append(f"[{n}] copy {step.src} -> {step.dst} ({step.reason}); {r} B")
    moved = total_r + total_w
    ratio = moved / plan.min_bytes if plan.min_bytes else float("nan")
    head = (f"{kernels} kernels, {len(plan.steps) - kernels} other steps; bytes moved "
            f"{moved} (read {total_r}, written {total_w}) vs minimum {plan.min_bytes} "
            f"({ratio:.2f}x)")
    return "\n".join([head] + lines)


def plan_of(f, *args, **kwargs) -> KernelPlan:
    """Trace `f` at `args`, run the passes, and fuse: the KernelPlan jit would run."""
    from gpuarr.compiler import passes, plan_closed
    closed = jit_api.make_jaxpr(f)(*args, **kwargs)
    closed = passes.optimize(closed)
    return plan_closed(closed)


def explain(f, source: bool = False, file=None):
    """Return a function that prints the kernel plan of `f` for its arguments (and returns
    the text): `gpuarr.explain(f)(x)`; `source=True` includes each kernel's rendered source."""
    def explained(*args, **kwargs):
        text = describe(plan_of(f, *args, **kwargs), source=source)
        print(text, file=file or sys.stdout)
        return text
    return explained


def count_kernels(plan: KernelPlan) -> int:
    return sum(isinstance(s, KernelStep) for s in plan.steps)


def _kernel_plan_text(closed) -> str:
    from gpuarr.compiler import plan_closed
    return describe(plan_closed(closed), source=True)


jit_api.kernel_plan_text = _kernel_plan_text  # Compiled.as_text() of kernel platforms

__all__ = ["explain", "describe", "plan_of", "count_kernels", "step_bytes", "Iota"]
