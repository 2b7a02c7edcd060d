"""`platform_dependent`: one branch per platform, chosen where the code runs.

`platform_index_p` computes which branch applies to the platform running it. Evaluated at
once (eagerly, or under a transformation with nothing staged), its value picks the branch,
which alone is called, as in JAX. Staged (under jit), every branch is traced into a `cond` on
the staged index, whose value is fixed when the Program is compiled for its platform: the
cpu platform writes the constant into the generated code (and raises JAX's
NotImplementedError there when no branch matches); the NumPy implementation, which other
platforms fall back to, answers for the platform eager operations run on.
"""
from __future__ import annotations

import numpy as np

from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, is_concrete
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.batching import batch_rules, not_mapped
from gpuarr.lax.control_flow import conditionals


def platform_index(platforms, platform: str) -> int:
    """The position in `platforms` (tuples of platform names, None for the default branch)
    of the branch for `platform`; NotImplementedError when none applies."""
    default = None
    for i, names in enumerate(platforms):
        if names is None:
            default = i
        elif platform in names:
            return i
    if default is None:
        raise NotImplementedError(f"lowering rule for primitive 'platform_index(platforms="
                                  f"{platforms})' not found for platform {platform}")
    return default


def _current_platform() -> str:
    from gpuarr import placement  # placement sits above lax; resolved when an op runs
    return placement.target_device().platform


def _platform_index_impl(*, platforms):
    return np.int32(platform_index(platforms, _current_platform()))


def _platform_index_batch(axis_size, vals, dims, *, platforms):
    return platform_index_p.bind(platforms=platforms), not_mapped


platform_index_p = Primitive("platform_index")
impl_rules[platform_index_p] = _platform_index_impl
abstract_eval_rules[platform_index_p] = lambda *, platforms: [ShapedArray((), np.dtype(np.int32))]
ad.defjvp_zero(platform_index_p)
batch_rules[platform_index_p] = _platform_index_batch


def _group_branches(per_platform):
    """Platform names joined per distinct branch: ((names, ...), ...) and the branches."""
    groups: list = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for names, fun in groups:
            if fun == branch:
                names.append(name)
                break
        else:
            groups.append(([name], branch))
    return tuple(tuple(names) for names, _ in groups), [fun for _, fun in groups]


def platform_dependent(*args, default=None, **per_platform):
    """`per_platform[p](*args)` for the platform p the code runs on ('cpu' for the NumPy
    backend, 'cuda', ...), else `default(*args)`. Under jit all branches are traced (they must
    return the same types) and the choice is made when the Program is compiled; running on a
    platform with no branch and no default raises NotImplementedError."""
    platforms, branches = _group_branches(per_platform)
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
        platforms, branches = platforms + (None,), branches + [default]
    index = platform_index_p.bind(platforms=platforms)
    if is_concrete(index):
        return branches[int(index)](*args)
    if not branches:
        raise TypeError("lax.platform_dependent: no branch given for any platform.")
    return conditionals._bind_cond(index, branches, args, "switch", branches_platforms=platforms)
