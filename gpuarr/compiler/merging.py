"""Kernels merged after planning (the fusion's steps 4 and 5): an elementwise kernel that
reads a reduction's outputs becomes that reduction's epilogue, and sibling elementwise kernels
over the same iteration space become one kernel. Both work on a `Fusion`'s steps in place."""
from __future__ import annotations

import dataclasses

from gpuarr.compiler.plan import (
    MAX_KERNEL_ARGS,
    Acc,
    CopyStep,
    ElementwiseKernel,
    Gather,
    IndexMap,
    Iota,
    KernelStep,
    Load,
    Op,
    ReductionKernel,
    ScatterKernel,
    Store,
    Window,
)

# ---- step 4: merge consumers into reductions -------------------------------------------------

def merge_into_reductions(fusion, outputs: set) -> None:
    steps = fusion.steps
    position = {}
    for i, s in enumerate(steps):
        for b in _written(s):
            position[b] = i
    changed = True
    while changed:
        changed = False
        for j, step in enumerate(steps):
            if not isinstance(step, KernelStep) or not isinstance(step.kernel, ElementwiseKernel):
                continue
            k = step.kernel
            binds = dict(step.bindings)
            red_loads = [(position.get(binds[n.arg]), n) for n in k.nodes if isinstance(n, Load)
                         and isinstance(steps[position.get(binds[n.arg], j)], KernelStep)
                         and isinstance(steps[position.get(binds[n.arg], j)].kernel, ReductionKernel)
                         and position.get(binds[n.arg], j) < j]
            if not red_loads:
                continue
            i = max(p for p, _ in red_loads)
            r_step = steps[i]
            r_buf = dict(r_step.bindings)["out0"]
            merged = _merge(fusion, r_step, step, r_buf, binds, position, i)
            if merged is None:
                continue
            steps[i] = merged
            del steps[j]
            position = {b: n for n, s in enumerate(steps) for b in _written(s)}
            changed = True
            break
    # Drop reduction outputs that nothing reads any more.
    read = set(outputs)
    for s in steps:
        read.update(_read(s))
    for n, s in enumerate(steps):
        if isinstance(s, KernelStep) and isinstance(s.kernel, ReductionKernel):
            binds = dict(s.bindings)
            if binds.get("out0") not in read and s.kernel.post_stores:
                k = s.kernel
                stores = tuple(st for st in k.post_stores if st.arg != "out0")
                args = tuple(a for a in k.args if a.name != "out0")
                post = k.post_nodes if stores else ()
                steps[n] = KernelStep(dataclasses.replace(k, post_nodes=post, post_stores=stores,
                                                          args=args),
                                      tuple(b for b in s.bindings if b[0] != "out0"))


# ---- step 5: sibling fusion ----------------------------------------------------------------------

def merge_siblings(fusion) -> None:
    """Merge an elementwise kernel into an earlier one over the same shape when they share an
    input buffer or an equation and the later one needs nothing produced in between: one launch,
    shared loads and shared subexpressions (a threefry hash feeding two outputs runs once)."""
    steps = fusion.steps
    j = 0
    while j < len(steps):
        b = steps[j]
        merged = False
        if isinstance(b, KernelStep) and isinstance(b.kernel, ElementwiseKernel):
            written = {}
            for n, s in enumerate(steps[:j]):
                for buf in _written(s):
                    written[buf] = n
            b_reads = _read(b)
            for i in range(j - 1, -1, -1):
                a = steps[i]
                if any(written.get(buf, -1) >= i for buf in b_reads):
                    break   # b needs something produced at or after step i
                if not (isinstance(a, KernelStep) and isinstance(a.kernel, ElementwiseKernel)
                        and a.kernel.shape == b.kernel.shape):
                    continue
                if not (_read(a) & b_reads or set(a.kernel.equations) & set(b.kernel.equations)):
                    continue
                if len(a.kernel.args) + len(b.kernel.args) > MAX_KERNEL_ARGS:
                    continue   # CUDA's 4 KiB of kernel parameters
                steps[i] = _merge_elementwise(a, b)
                del steps[j]
                merged = True
                break
        if not merged:
            j += 1


def _merge_elementwise(a: KernelStep, b: KernelStep) -> KernelStep:
    ka, kb = a.kernel, b.kernel
    arg_of = {buf: name for name, buf in a.bindings}
    args, bindings = list(ka.args), list(a.bindings)
    rename = {}
    for arg in kb.args:
        buf = dict(b.bindings)[arg.name]
        if not arg.output and buf in arg_of:
            rename[arg.name] = arg_of[buf]
            continue
        name = f"{'out' if arg.output else 'in'}{len(args)}"
        args.append(dataclasses.replace(arg, name=name))
        bindings.append((name, buf))
        arg_of.setdefault(buf, name)
        rename[arg.name] = name
    nodes = list(ka.nodes)
    index = {n: k for k, n in enumerate(nodes) if _hashable(n)}
    remap = {}
    for k, n in enumerate(kb.nodes):
        if isinstance(n, (Load, Gather, Window)):
            n = dataclasses.replace(n, arg=rename[n.arg])
        if isinstance(n, Op):
            n = dataclasses.replace(n, args=tuple(remap[x] for x in n.args))
        if isinstance(n, Gather):
            shift = lambda ks: tuple(None if s is None else remap[s] for s in ks)  # noqa: E731
            n = dataclasses.replace(n, starts=shift(n.starts), offsets=shift(n.offsets))
        if _hashable(n) and n in index:
            remap[k] = index[n]
            continue
        nodes.append(n)
        remap[k] = len(nodes) - 1
        if _hashable(n):
            index[n] = remap[k]
    stores = ka.stores + tuple(Store(rename[s.arg], remap[s.node], s.index) for s in kb.stores)
    eqns = ka.equations + tuple(e for e in kb.equations if e not in ka.equations)
    reason = f"{ka.reason}; {kb.name} ({kb.reason}) fused as a sibling over the same shape"
    kernel = dataclasses.replace(ka, args=tuple(args), nodes=tuple(nodes), stores=stores,
                                 equations=eqns, reason=reason)
    return KernelStep(kernel, tuple(bindings))


def _hashable(node) -> bool:
    try:
        hash(node)
        return True
    except TypeError:
        return False


def _read(step) -> set:
    if isinstance(step, KernelStep):
        outs = {a.name for a in step.kernel.args if a.output}
        if isinstance(step.kernel, ScatterKernel):
            outs = set()
        return {b for a, b in step.bindings if a not in outs}
    if isinstance(step, CopyStep):
        return {step.src}
    return set(step.inputs)


def _written(step) -> set:
    if isinstance(step, KernelStep):
        outs = {a.name for a in step.kernel.args if a.output}
        return {b for a, b in step.bindings if a in outs}
    if isinstance(step, CopyStep):
        return {step.dst}
    return set(step.outputs)


def _merge(fusion, r_step, k_step, r_buf, k_binds, position, r_pos):
    """The reduction step with `k_step` folded in as post-map or epilogue, or None if illegal."""
    r, k = r_step.kernel, k_step.kernel
    shape, axes, perm = fusion.reduction_meta[id(r)]
    r_arg_of = {b: a for a, b in r_step.bindings}
    # Every other buffer k reads must exist before the reduction runs.
    for n in k.nodes:
        if isinstance(n, (Load, Gather, Window)) and k_binds[n.arg] != r_buf:
            p = position.get(k_binds[n.arg])
            if p is not None and p >= r_pos:
                return None
    if any(isinstance(n, (Gather, Window)) and k_binds[n.arg] == r_buf for n in k.nodes):
        return None   # indexed reads of the result may cross blocks
    loads_r = [n for n in k.nodes if isinstance(n, Load) and k_binds[n.arg] == r_buf]
    if k.shape == r.shape and all(n.index.is_identity() for n in loads_r):
        where = "post"
        transform = None
    elif tuple(k.shape) == tuple(shape):
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        back = IndexMap.contiguous(r.shape).broadcast(shape, kept)
        if not all(_same_map(n.index, back) for n in loads_r):
            return None
        where = "epilogue"
        transform = None if perm == tuple(range(len(shape))) else perm
    else:
        return None
    # Rebuild k's nodes in the reduction's iteration space.
    base = len(r.post_nodes) if where == "post" else len(r.epilogue_nodes)
    new_args = list(r.args)
    bindings = list(r_step.bindings)
    names = {}
    for a in k.args:
        b = k_binds[a.name]
        if a.output:
            name = f"out{len(new_args)}"
            new_args.append(dataclasses.replace(a, name=name))
            bindings.append((name, b))
            names[a.name] = name
        elif b != r_buf:
            if b not in r_arg_of:
                name = f"in{len(new_args)}"
                new_args.append(dataclasses.replace(a, name=name))
                bindings.append((name, b))
                r_arg_of[b] = name
            names[a.name] = r_arg_of[b]
    nodes = []
    for n in k.nodes:
        if isinstance(n, Load) and k_binds[n.arg] == r_buf:
            nodes.append(Acc(r.acc_dtype))
        elif isinstance(n, (Load, Iota, Window)):
            idx = n.index.transpose(transform) if transform else n.index
            renamed = {"arg": names[n.arg]} if isinstance(n, (Load, Window)) else {}
            nodes.append(dataclasses.replace(n, index=idx, **renamed))
        elif isinstance(n, Gather):
            shift = lambda ks: tuple(None if s is None else s + base for s in ks)  # noqa: E731
            nodes.append(dataclasses.replace(n, arg=names[n.arg], starts=shift(n.starts),
                                             offsets=shift(n.offsets)))
        elif isinstance(n, Op):
            nodes.append(dataclasses.replace(n, args=tuple(a + base for a in n.args)))
        else:
            nodes.append(n)
    stores = []
    for st in k.stores:
        idx = IndexMap.contiguous(shape).transpose(transform) if transform else st.index
        stores.append(Store(names[st.arg], st.node + base, idx))
    eqns = r.equations + tuple(e for e in k.equations if e not in r.equations)
    if where == "post":
        new = dataclasses.replace(r, post_nodes=r.post_nodes + tuple(nodes),
                                  post_stores=r.post_stores + tuple(stores), args=tuple(new_args),
                                  equations=eqns)
    else:
        new = dataclasses.replace(r, epilogue_nodes=r.epilogue_nodes + tuple(nodes),
                                  epilogue_stores=r.epilogue_stores + tuple(stores),
                                  args=tuple(new_args), equations=eqns)
    new = dataclasses.replace(new, reason=r.reason + f"; {k.name} fused as its {where}")
    fusion.reduction_meta[id(new)] = fusion.reduction_meta[id(r)]
    return KernelStep(new, tuple(bindings))


def _same_map(a: IndexMap, b: IndexMap) -> bool:
    if len(a.views) != 1 or len(b.views) != 1:
        return False
    va, vb = a.views[0], b.views[0]
    norm = lambda v: tuple(s if n != 1 else 0 for n, s in zip(v.shape, v.strides))  # noqa: E731
    return va.shape == vb.shape and va.offset == vb.offset and norm(va) == norm(vb)
