"""Eager evaluation: the base trace that runs each primitive as soon as it is bound."""
from __future__ import annotations

import warnings

import numpy as np

from gpuarr import core, dtypes, impls, memory_limits, placement
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards, own_copy
from gpuarr.backends.float_env import flushing
from gpuarr.config import config
from gpuarr.core import Tracer, default_weak_type_rule, rank_checked_prims, weak_type_rules
from gpuarr.earray import EArray, logical_result
from gpuarr.errors import UnexpectedTracerError
from gpuarr.interpreters import physical
from gpuarr.placement import current_default_device, platform_of

_flags = config._values  # read directly: this is the hot path of every eager op
_default_device_blocks = placement.active
_host_memory = memory_limits.host_memory_bytes()

# NumPy warns about floating-point exceptions (log(0), 0/0, overflow); JAX arrays produce
# inf/nan silently, and jax_debug_nans is the way to catch them. Host computation runs with
# NumPy's floating-point errors ignored (float_env.flushing); this filter covers the rest of
# gpuarr's own NumPy calls, at no cost per operation, where no filter of the caller's wins.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"gpuarr\.")


class EvalTrace(core.Trace):
    """Runs primitives on concrete values (NumPy buffers on the cpu platform)."""

    __slots__ = ()

    def process_primitive(self, prim, args, params):
        dtype_param = physical.dtype_params.get(prim)
        if dtype_param is not None and isinstance(params.get(dtype_param), dtypes.ExtendedDType):
            return _apply_extended(prim, args, params)
        if DeviceShards.made and _split_over_devices(args):
            _check_devices(prim, args)
            outs = None
            if prim in impls.elementwise_prims or prim in impls.axis_reduction_prims \
                    or prim.name in _SELECTS:
                outs = _per_piece(self, prim, args, params)
            if outs is None and split_reductions[0] is not None:
                outs = split_reductions[0](prim, args, params)
            if outs is not None:
                return outs
        vals = []
        platform = None
        committed = False
        for a in args:
            if type(a) is Array:
                vals.append(a._buffer)
                if a._platform is not None:
                    platform = a._platform
                if a._committed:
                    committed = True
            elif isinstance(a, Tracer):
                core.check_tracer_alive(a, "outside its transformation")
                raise UnexpectedTracerError(f"A tracer of {a._trace!r} reached eager evaluation of "
                                            f"{prim.name}: {a!r}. Return traced values from the "
                                            "transformed function instead of storing them.")
            elif type(a) is EArray:
                return _apply_extended(prim, args, params)
            else:
                vals.append(_host_operand(a))
        narrow_impl = None
        if not prim.multiple_results:  # JAX's dtype errors (see _check_dtypes), inlined: hot
            try:
                if len(vals) == 2:
                    key = (prim, vals[0].dtype.num, vals[1].dtype.num)
                    if (vals[0].ndim != vals[1].ndim and vals[0].ndim and vals[1].ndim
                            and prim in rank_checked_prims):  # equal ranks: one comparison
                        _raise_abstract_error(prim, args, params)
                elif len(vals) == 1:
                    key = (prim, vals[0].dtype.num)
                else:
                    key = (prim,) + tuple(v.dtype.num for v in vals)
            except AttributeError:  # an operand that is not an array
                key = (prim,) + tuple(getattr(getattr(v, "dtype", None), "num", None)
                                      for v in vals)
            narrow_impl = _accepted_dtypes.get(key, _UNSEEN)
            if narrow_impl is _UNSEEN:
                narrow_impl = _check_dtypes(prim, args, params, key, vals)
        if committed or _default_device_blocks[0]:  # placement rules (gpuarr.placement)
            placed = self._process_placed(prim, args, vals, params, committed)
            if placed is not None:
                return placed
        if platform is None:
            try:
                with flushing():  # XLA's CPU arithmetic: subnormals flushed (backends/float_env.py)
                    out = (narrow_impl or impls.impl_rules[prim])(*vals, **params)
            except MemoryError as e:  # NumPy's, naming the size: JAX's error instead
                raise memory_limits.out_of_memory(getattr(e, "_total_size", 0)) from None
            except Exception:
                _raise_abstract_error(prim, args, params)
                raise
        else:
            guard = platform_guards.get(prim)
            if guard is not None:
                guard(**params)
            try:
                out = platform.apply_primitive(prim, vals, params)
            except MemoryError as e:
                raise memory_limits.out_of_memory(getattr(e, "_total_size", 0)) from None
            except Exception:
                # Host-buffer platforms run the same NumPy code: JAX's error, as on cpu.
                _raise_abstract_error(prim, args, params)
                raise
        weak = weak_type_rules.get(prim, default_weak_type_rule)(*args, **params)
        if prim.multiple_results:
            weaks = weak if isinstance(weak, list) else [weak] * len(out)
            outs = [wrap(o, w, platform) for o, w in zip(out, weaks)]
            if _flags["debug_nans"] or _flags["debug_infs"]:
                check_outputs(prim, outs, args, vals, params)
            return outs
        result = wrap(out, weak, platform)
        if _flags["debug_nans"] or _flags["debug_infs"]:
            check_nans(prim, result)
        return result

    def _process_placed(self, prim, args, vals, params, committed):
        """Run on the device the committed inputs share, else on the `default_device` block's
        device, moving the other inputs there; results are committed when an input was. Two
        different committed devices raise ValueError. None: no placement rule applies."""
        placed = placement.eager_inputs(prim.name, args, vals)
        if placed is None:
            return None
        device, platform, vals = placed
        moved = [Array(v, a.weak_type, platform=platform) if type(a) is Array else a
                 for a, v in zip(args, vals)]
        with placement.default_device(None):  # the inner call takes the plain path
            results = self.process_primitive(prim, moved, params)
        outs = results if prim.multiple_results else [results]
        placement.commit(outs, device, committed)
        if prim in impls.elementwise_prims:
            _keep_sharding(args, outs)
        return results


def _apply_extended(prim, args, params):
    """`prim` on operands or results of an extended dtype: its physical form runs on the
    physical data, and results of an extended dtype are made by the dtype's result handler."""
    avals = [core.get_aval(a) for a in args]
    physical.check_operands(prim, avals, params)
    out_avals = core.abstract_eval_rules[prim](*avals, **params)
    outs = physical.bind_physical(prim, [physical.physical_value(a) for a in args], avals,
                                  out_avals, params)
    results = [logical_result(as_array(o), a) if core.has_extended_dtype(a) else o
               for o, a in zip(outs, out_avals, strict=True)]
    return results if prim.multiple_results else results[0]


# Reductions and argmax/argmin across the split dimension of an Array split over several
# devices, the operations JAX runs on each device's blocks (dot, slices, sorts, ...), and
# shard_maps that a transformation's rule binds on such Arrays: fn(prim, args, params) ->
# outputs or None, filled by sharding.data_parallel (which runs them as a program per device,
# combined by collectives) when it is imported.
split_reductions: list = [None]
_SELECTS = ("select_n", "clamp")  # elementwise too, their operands of one shape or scalars


def _split_over_devices(args) -> bool:
    return any(type(a) is Array and type(a._value) is DeviceShards for a in args)


def _check_devices(prim, args) -> None:
    """JAX's ValueError for an operand committed to other devices than a split operand's."""
    split = next(a for a in args if type(a) is Array and type(a._value) is DeviceShards)
    want = split.devices()  # every device of its sharding, other processes' too
    for a in args:
        if type(a) is Array and a._committed and a.devices() != want:
            def said(x, devices):
                shape = ",".join(map(str, x.shape))
                return (f"an argument with shape {x.dtype.name}[{shape}] and with device ids "
                        f"{sorted(d.id for d in devices)} on platform "
                        f"{x.device.platform.upper()}")
            raise ValueError(
                f"Received incompatible devices for computation {prim.name}. Got "
                f"{said(split, want)} and {said(a, a.devices())}. Put them on the same devices "
                "first (gpuarr.device_put(x, y.sharding)).")


def _per_piece(trace, prim, args, params):
    """An elementwise primitive, or a reduction over dimensions left whole, on Arrays split
    over devices (DeviceShards) run on each device's piece, as JAX runs it with the operands'
    sharding: the results are pieces, each equal to the whole computation's block, with the
    sharding JAX gives. An elementwise operand of the same shape that is not split (`x + b`
    once `b` is broadcast) is cut into the same blocks, each device receiving its own. None
    (the value is then read joined) unless every split operand shares one sharding, the
    others are host scalars or such operands, and a reduction's dimensions are not split."""
    split = [a._value for a in args if type(a) is Array and type(a._value) is DeviceShards]
    first = split[0]
    if any(s.sharding != first.sharding or s.shape != first.shape for s in split):
        return None
    blocks = {d: index for d, index in first.sharding.devices_indices_map(first.shape).items()
              if d in first.shards}  # spanning processes: this process's devices
    cut: dict = {}  # operand position -> device -> its block of that operand, on the device
    for i, a in enumerate(args):
        if type(a) is Array and type(a._value) is not DeviceShards and (
                a.ndim or a._platform is not None):
            if (prim not in impls.elementwise_prims and prim.name not in _SELECTS) \
                    or a.ndim not in (0, len(first.shape)) \
                    or any(n not in (m, 1) for n, m in zip(a.shape, first.shape)):
                return None
            host = a._host()  # a scalar on a GPU, or a broadcast operand: each device's block
            cut[i] = {d: first.platform.from_host(own_copy(host[tuple(
                s if n == m else slice(None) for s, n, m in zip(index, a.shape, first.shape))]),
                d) for d, index in blocks.items()}
        if type(a) is not Array and np.ndim(a):
            return None
    sharding, ndim = first.sharding, len(first.shape)
    if prim in impls.axis_reduction_prims:
        spec = sharding.spec._normalized_spec_for_aval(ndim).partitions
        reduced = set(params["axes"])
        if any(spec[d] is not None for d in reduced):
            return None  # across devices: per device with a combine (split_reductions)
        kept = [p for d, p in enumerate(spec) if d not in reduced]
        ndim = len(kept)
        if not sharding.mesh._any_axis_explicit:  # JAX's Auto spec: no trailing Nones
            while kept and kept[-1] is None:
                kept.pop()
        sharding = sharding.update(spec=type(sharding.spec)(*kept))
    pieces: dict = {}
    for device in blocks:
        operands = [Array(a._value.shards[device] if i not in cut else cut[i][device],
                          a.weak_type, device=device, committed=True,
                          platform=first.array_platform)
                    if i in cut or (type(a) is Array and type(a._value) is DeviceShards) else a
                    for i, a in enumerate(args)]
        pieces[device] = trace.process_primitive(prim, operands, params)
    outs = []
    for i in range(len(next(iter(pieces.values()))) if prim.multiple_results else 1):
        at = {d: r[i] if prim.multiple_results else r for d, r in pieces.items()}
        one = next(iter(at.values()))
        shape = tuple(n * w for n, w in zip(one.shape, _ways(sharding, ndim)))
        shards = DeviceShards({d: r._stored for d, r in at.items()}, shape, one.dtype,
                              sharding, first.platform)
        out = Array(shards, one.weak_type, device=first.first_device(), committed=True,
                    platform=first.array_platform)
        out._sharding = _elementwise_sharding(sharding, ndim)
        outs.append(out)
    return outs if prim.multiple_results else outs[0]


def _ways(sharding, ndim: int) -> list:
    """How many pieces `sharding` cuts each of `ndim` dimensions into."""
    mesh = sharding.mesh
    out = []
    for p in sharding.spec._normalized_spec_for_aval(ndim).partitions:
        names = () if p is None else p if isinstance(p, tuple) else (p,)
        out.append(int(np.prod([mesh.shape[n] for n in names], dtype=np.int64)))
    return out


def _keep_sharding(args, outs) -> None:
    """Elementwise results keep the sharding their operands share over several devices, as
    JAX's do (`_elementwise_sharding`)."""
    found = {a._sharding for a in args if type(a) is Array
             and getattr(a, "_sharding", None) is not None and a._sharding.num_devices > 1}
    if len(found) != 1:
        return
    (s,) = found
    shape = next(a.shape for a in args if type(a) is Array and getattr(a, "_sharding", None)
                 is s)
    for r in outs:
        if type(r) is Array and r.shape == shape:
            r._sharding = _elementwise_sharding(s, len(shape))


def _elementwise_sharding(s, ndim: int):
    """The sharding JAX reports for an elementwise result of operands sharded by `s`: over
    Explicit mesh axes the spec written out for every dimension (the type's), else `s`."""
    spec = getattr(s, "spec", None)
    if spec is None or not s.mesh._any_axis_explicit:
        return s
    return s.update(spec=spec._normalized_spec_for_aval(ndim))


def _raise_abstract_error(prim, args, params) -> None:
    """Eager ops skip abstract evaluation for speed; when NumPy fails, the abstract rule
    gives the error JAX raises (shape or dtype mismatch, with a message saying what to do)."""
    rule = core.abstract_eval_rules.get(prim)
    if rule is not None:
        rule(*[core.get_aval(a) for a in args], **params)


# (primitive, operand dtypes) keys whose abstract rule has accepted those dtypes, mapped to
# the implementation for operands of narrow types (impls.narrow_impl), None for others.
_accepted_dtypes: dict = {}
# primitive -> fn(**params) run before a platform other than the host applies it eagerly, where
# its impl rule (which may refuse to run) is bypassed; filled by higher layers (jit_api: the
# no_execution flag).
platform_guards: dict = {}
_UNSEEN = object()


def _check_dtypes(prim, args, params, key, vals):
    """NumPy computes where JAX raises: sin of int32 gives float64, int32 + float32 promotes.
    So the abstract rule runs once per primitive and combination of operand dtypes (`key`),
    raising JAX's TypeError for the ones it rejects; accepted ones cost a dict lookup in
    EvalTrace afterwards. (Shape errors need no check where NumPy raises on them, and
    `_raise_abstract_error` rewords; operands of unequal ranks, which NumPy broadcasts, are
    checked in EvalTrace.) Returns the implementation for narrow operands, or None."""
    _raise_abstract_error(prim, args, params)
    impl = impls.impl_for_values(prim, vals)
    narrow = None if impl is impls.impl_rules.get(prim) else impl
    _accepted_dtypes[key] = narrow
    return narrow


_PY_SCALARS = (bool, int, float, complex)


def _host_operand(a):
    """A non-Array operand as the primitive sees it: Python scalars and NumPy values in the
    dtype JAX gives them (no 64-bit types unless x64 is on), so `lax.sin(1.0)` is float32."""
    if type(a) in _PY_SCALARS:
        return np.asarray(a, dtypes.dtype(a, canonicalize=True))
    handler = canonicalize_dtype_handlers.get(type(a))
    if handler is not None:
        return handler(a)
    if isinstance(a, (np.ndarray, np.generic)):
        dt = dtypes.canonicalize_dtype(a.dtype)
        if dt != a.dtype:
            return np.asarray(a, dt)
    return a


def _canonical_ndarray(a):
    a = np.asarray(a)
    return np.asarray(a, dtypes.canonicalize_dtype(a.dtype))


# type -> fn(value) -> NumPy value: how operands of libraries' own host types enter operations
# (JAX's `interpreters.xla.canonicalize_dtype_handlers`); NumPy arrays are canonicalised inline.
canonicalize_dtype_handlers: dict = {np.ndarray: _canonical_ndarray}


def wrap(buf, weak_type=False, platform=None) -> Array:
    if platform is None and type(buf) is not np.ndarray and type(buf) is not DeviceShards:
        buf = np.asarray(buf)
    # A broadcast view allocates nothing where XLA would allocate it all.
    if type(buf) is np.ndarray and buf.nbytes > _host_memory:
        raise memory_limits.out_of_memory(buf.nbytes, _host_memory)
    return Array(buf, weak_type, platform=platform)


def check_outputs(prim, outs, args, vals, params) -> None:
    """check_nans on each output of an eager primitive; a jit call with a NaN/Inf output is
    first re-run op by op on the host, so the error names the operation inside it."""
    if prim.name == "jit" and any(nonfinite_kind(o) is not None for o in outs):
        # device buffers (the cuda platform's) come to the host for the NumPy impls
        raise_at_nonfinite(params["jaxpr"], [a._host() if type(a) is Array else v
                                             for a, v in zip(args, vals)])
    for o in outs:
        check_nans(prim, o)


def check_nans(prim, x, source_info=None) -> None:
    """Raise FloatingPointError if `x` has a NaN (debug_nans) or an Inf (debug_infs).

    The message names the primitive and where the user's code applied it: `source_info`
    (an equation's), else the innermost caller outside gpuarr, looked up only on a hit."""
    kind = nonfinite_kind(x)
    if kind is not None:
        name = prim if isinstance(prim, str) else prim.name
        raise FloatingPointError(nonfinite_message(kind, name, source_info or core.user_source_info()))


def nonfinite_kind(x) -> str | None:
    """The kind of value ("nan" or "inf") in `x` that debug_nans/debug_infs reject, or None."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    if not (dtypes.is_float(dt) or dtypes.is_complex(dt)):
        return None
    host = np.asarray(x)
    if _flags["debug_nans"] and np.isnan(host).any():
        return "nan"
    if _flags["debug_infs"] and np.isinf(host).any():
        return "inf"
    return None


def nonfinite_message(kind: str, name: str, source_info=None) -> str:
    """JAX's message (`invalid value (nan) encountered in log`), plus the user's source line."""
    msg = f"invalid value ({kind}) encountered in {name}"
    if source_info is not None:
        msg += f"\nThe operation was applied at {source_info}."
    return msg


eval_trace = EvalTrace(None)
core.set_base_trace(eval_trace)


def to_device_array(x, dtype=None, weak_type=None) -> Array:
    """Wrap host data (NumPy array or scalar) as an Array on the default device."""
    from gpuarr import platforms

    host = np.asarray(x, dtype=dtype)
    if dtype is None:
        host = host.astype(dtypes.canonicalize_dtype(host.dtype), copy=False)
    if weak_type is None:
        weak_type = dtypes.is_weakly_typed(x)
    device = current_default_device()  # inside a `default_device` block
    plat = platforms.default_platform() if device is None else platform_of(device)
    if plat.name == "cpu":
        if host is x:
            host = host.copy()
        return Array(host, weak_type, device=device)
    device = device or plat.local_devices()[0]
    return Array(plat.from_host(host, device), weak_type, device=device, platform=plat)


def as_array(x):
    """Arrays and tracers as they are; NumPy values and Python scalars as new Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return to_device_array(x)
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")


# ---------------------------------------------------------------- debug_nans: find the operation


def raise_at_nonfinite(closed, args) -> None:
    """Run `closed` op by op on the NumPy backend (descending into nested jit Programs) and
    raise FloatingPointError at the first equation whose output has a NaN (debug_nans) or
    an Inf (debug_infs), naming its primitive and its source line. Returns if none does."""
    with np.errstate(all="ignore"):
        _run_checked(closed.program, closed.consts, list(args))


def _run_checked(prog, consts, args):
    env = {}

    def read(a):
        return a.val if type(a) is core.Literal else env[a.id]

    for v, x in zip(prog.constvars, consts, strict=True):
        env[v.id] = np.asarray(x)
    for v, x in zip(prog.invars, args, strict=True):
        env[v.id] = x
    for eqn in prog.eqns:
        ins = [read(a) for a in eqn.inputs]
        if eqn.prim.name == "jit":  # jit_p (gpuarr.jit_api sits above this module)
            sub = eqn.params["jaxpr"]
            outs = _run_checked(sub.program, sub.consts, ins)
        else:
            outs = impls.impl_for_values(eqn.prim, ins)(*ins, **eqn.params)
            outs = list(outs) if eqn.prim.multiple_results else [outs]
        for out in outs:
            kind = nonfinite_kind(out)
            if kind is not None:
                raise FloatingPointError(nonfinite_message(kind, eqn.prim.name, eqn.source_info))
        for v, out in zip(eqn.outvars, outs, strict=True):
            env[v.id] = out
    return [read(a) for a in prog.outvars]
