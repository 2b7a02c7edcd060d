"""Row groups (C dialect): consecutive row reductions over the same rows, each reading what
the earlier ones wrote only at its own output element, run as one launch that takes every row
through each kernel in turn. Softmax's max, then its sum and normalisation, then read a row
from memory once and from the cache after, as XLA's fused row reductions do; on the GPU
dialects the kernels stay separate launches.

A group's source is the kernels' own text (each still `static inline`, walking the one row its
caller sets) and an exported `<first kernel>_rows_run(args, begin, end)` that calls them row by
row; the arguments are the union of the kernels' buffers.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuarr.compiler import render
from gpuarr.compiler.plan import KernelStep, Launch, Load, ReductionKernel


@dataclass(frozen=True)
class RowGroup:
    """Kernel steps run row by row in one launch (see the module's docstring)."""

    steps: tuple

    def render_launch(self) -> tuple:
        """(the group's Launch, its kernels' RenderedKernels): see `launch`."""
        return launch(self)


def _row_kernel(step) -> bool:
    k = getattr(step, "kernel", None)
    return isinstance(step, KernelStep) and isinstance(k, ReductionKernel) and \
        k.strategy != "column" and not (k.split or k.limit or k.value_dtype)


def _written(step) -> tuple:
    """(plan buffers `step` writes once per row at the row's element, every buffer it writes)."""
    k, binds = step.kernel, dict(step.bindings)
    per_row = {binds[st.arg] for st in k.post_stores if st.index is None or st.index.is_identity()}
    every = {binds[a.name] for a in k.args if a.output}
    return per_row, every


def _reads_own_row(k: ReductionKernel, node, space: str) -> bool:
    """Whether load `node` of `k` (in its `space`: "row" for the pre-map and epilogue, "out"
    for the post-map) reads element o of its buffer at output element o, whatever r is."""
    if not isinstance(node, Load):
        return False
    if space == "out":
        return node.index.is_identity()
    return render.split_offsets(node.index, len(k.shape), "i64", "g") == ("o", "0")


def _joins(group: list, step) -> bool:
    if not _row_kernel(step) or step.kernel.out_size != group[0].kernel.out_size:
        return False
    k, binds = step.kernel, dict(step.bindings)
    per_row, every, read = set(), set(), set()
    for member in group:
        rows, all_ = _written(member)
        per_row |= rows
        every |= all_
        read |= {b for a, b in member.bindings if not any(x.name == a and x.output
                                                          for x in member.kernel.args)}
    if _written(step)[1] & (every | read):
        return False   # a later kernel of the row would overwrite what an earlier one uses
    for nodes, space in ((k.pre_nodes, "row"), (k.epilogue_nodes, "row"), (k.post_nodes, "out")):
        for node in nodes:
            buffer = binds.get(getattr(node, "arg", None))
            if buffer in every and not (buffer in per_row and _reads_own_row(k, node, space)):
                return False
    return True


def group(steps) -> list:
    """`steps` (a KernelPlan's) with each run of two or more row reductions that can share
    their rows (see the module's docstring) replaced by one RowGroup."""
    out, run = [], []

    def close():
        if len(run) > 1:
            out.append(RowGroup(tuple(run)))
        else:
            out.extend(run)
        run.clear()

    for step in steps:
        if run and _joins(run, step):
            run.append(step)
            continue
        close()
        if _row_kernel(step):
            run.append(step)
        else:
            out.append(step)
    close()
    return out


def launch(row_group: RowGroup) -> tuple:
    """(the group's Launch, its kernels' RenderedKernels)."""
    prelude = render.prelude("c")
    rendered, texts, args, outputs, calls = [], [], [], [], []
    for step in row_group.steps:
        rk = render.render(step.kernel, "c")
        tail = render.c_entry_points((rk.name,), step.kernel.args)
        texts.append(rk.source[len(prelude): len(rk.source) - len(tail)])
        binds = dict(step.bindings)
        for a in step.kernel.args:
            if binds[a.name] not in args:
                args.append(binds[a.name])
            if a.output and binds[a.name] not in outputs:
                outputs.append(binds[a.name])
        casts = ", ".join(f"({'' if a.output else 'const '}{render.storage(a.dtype)} *)"
                          f"args[{args.index(binds[a.name])}]" for a in step.kernel.args)
        calls.append(f"    {rk.name}({casts});\n")
        rendered.append(rk)
    name = f"{rendered[0].name}_rows"
    entry = (f"\n// Each row through {', '.join(rk.name for rk in rendered)} in turn.\n"
             f"GPUARR_EXPORT void {name}_run(void *const *args, i64 begin, i64 end) {{\n"
             f"  GPUARR_FLUSH_BEGIN\n  for (i64 row = begin; row < end; ++row) {{\n"
             f"    gpuarr_begin = row;\n    gpuarr_end = row + 1;\n{''.join(calls)}  }}\n"
             f"  GPUARR_FLUSH_END\n}}\n")
    source = prelude + "".join(texts) + entry
    return Launch(name, source, rendered[0].global_size, 1, tuple(args), tuple(outputs)), rendered
