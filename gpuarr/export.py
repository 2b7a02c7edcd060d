"""Exporting jitted functions (`jax.export`): a traced program saved with its input and output
types, called again later or elsewhere, and serialized to bytes.

`export(jit(f))(*args)` traces `f` for the types of `args` (arrays or ShapeDtypeStructs) into an
`Exported`. Its `call(*args)` runs the saved program (under jit, grad and vmap too: gpuarr
differentiates and batches the program itself, so every exported function has a VJP), after
checking that the arguments have the exported types. `serialize()` gives bytes and
`deserialize(bytes)` the Exported back, in another process with the same gpuarr version.

The serialized form is gpuarr's own: its program pickled, primitives written by name. JAX
writes StableHLO in a flatbuffer; gpuarr has no StableHLO, so `mlir_module()` raises and the
bytes of one library cannot be read by the other. Reading bytes only rebuilds NumPy values,
gpuarr's own types, builtin containers and pytree node types registered with
`register_pytree_node_serialization`; anything else in them is refused, so no code runs.
Shape polymorphism (`symbolic_shape`) is not supported.
"""
from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Sequence

import numpy as np

from gpuarr import core, pytrees
from gpuarr.core import ClosedProgram, Primitive, abstract_eval_rules

# The calling conventions JAX 0.10.2 reads and writes; gpuarr writes the newest.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_FORMAT = b"gpuarr-exported-1\n"


class DisabledSafetyCheck:
    """A check `export` skips: `platform()` (calling on a platform the function was not
    exported for) or `custom_call(name)`. gpuarr records them; it calls on any platform."""

    def __init__(self, name: str):
        self._name = name

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return cls(f"custom_call:{target_name}")

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"DisabledSafetyCheck({self._name!r})"


class Exported:
    """A function exported by `export`: its program, the types and pytree structures of its
    inputs and outputs, and the platforms it was exported for. Call it with `call(*args)`,
    save it with `serialize()`."""

    def __init__(self, fun_name: str, in_tree, in_avals, out_tree, out_avals, platforms,
                 closed: ClosedProgram, disabled_safety_checks=()):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self.platforms = tuple(platforms)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.nr_devices = 1
        self.calling_convention_version = maximum_supported_calling_convention_version
        self.ordered_effects = ()
        self.unordered_effects = ()
        self.module_kept_var_idx = tuple(range(len(self.in_avals)))
        self.uses_global_constants = False
        self._closed = closed
        self._called = None

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    def __repr__(self):
        return (f"Exported(fun_name={self.fun_name!r}, in_tree={self.in_tree}, "
                f"in_avals={self.in_avals}, out_tree={self.out_tree}, "
                f"out_avals={self.out_avals}, platforms={self.platforms})")

    @property
    def jaxpr(self) -> ClosedProgram:
        """The exported program (gpuarr's form of JAX's StableHLO module)."""
        return self._closed

    def has_vjp(self) -> bool:
        """Always True: gpuarr differentiates the exported program itself."""
        return True

    def vjp(self) -> Exported:
        """The exported VJP function: (primal inputs, output cotangents) -> input cotangents."""
        from gpuarr.ad_api import vjp
        from gpuarr.api_util import ShapeDtypeStruct
        from gpuarr.jit_api import jit

        def fun_vjp(*args_and_cts):
            n = len(self.in_avals)
            args, kwargs = pytrees.tree_unflatten(self.in_tree, list(args_and_cts[:n]))
            cts = pytrees.tree_unflatten(self.out_tree, list(args_and_cts[n:]))
            _, pullback = vjp(lambda a, k: self.call(*a, **k), args, kwargs)
            return pullback(cts)

        specs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                 for a in self.in_avals + self.out_avals]
        return export(jit(fun_vjp), platforms=self.platforms)(*specs)

    def mlir_module(self) -> str:
        raise NotImplementedError(
            "gpuarr exports its own program format, not StableHLO; print the program with "
            "str(exported.jaxpr) instead.")

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The Exported as bytes, for `deserialize` (gpuarr's format; see the module doc).
        `vjp_order` is accepted for JAX's signature: the VJPs are derived when needed."""
        buf = io.BytesIO()
        buf.write(_FORMAT)
        state = (self.fun_name, self.in_tree, self.in_avals, self.out_tree, self.out_avals,
                 self.platforms, self._closed, self.disabled_safety_checks)
        try:
            _Pickler(buf).dump(state)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise ValueError(
                f"Cannot serialize the exported function {self.fun_name}: its program holds a "
                f"value that cannot be saved ({e}). Python callables (host callbacks, custom "
                "rules defined in the function) and unregistered pytree node types cannot be "
                "serialized; register custom pytree nodes with "
                "export.register_pytree_node_serialization.") from e
        return bytearray(buf.getvalue())

    def call(self, *args, **kwargs):
        """Run the exported function on arguments of its exported types (checked, as JAX
        checks them); works under jit, grad and vmap."""
        leaves, in_tree = pytrees.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise ValueError(f"The invocation args and kwargs must have the same pytree structure "
                             f"as when the function '{self.fun_name}' was exported, but they "
                             f"have the following structural differences: got {in_tree}, "
                             f"expected {self.in_tree}")
        for i, (x, want) in enumerate(zip(leaves, self.in_avals)):
            got = core.get_aval(x)
            if got.dtype != want.dtype:
                raise ValueError(f"Dtype mismatch for args[{i}]: expected {want.dtype.name} and "
                                 f"called with {got.dtype.name}")
            if got.shape != want.shape:
                raise ValueError(f"Shape mismatch for args[{i}].shape (expected same "
                                 f"constant): expected {want.shape} and called with {got.shape}")
        if self._called is None:
            from gpuarr.jit_api import jit
            closed = self._closed
            self._called = jit(lambda *xs: core.eval_closed(closed, *xs))
        # Results take the exported output types, which are never weak (as in JAX).
        from gpuarr.lax import conversions as lax_conversions
        outs = [lax_conversions.convert_element_type(o, a.dtype) if core.get_aval(o).weak_type else o
                for o, a in zip(self._called(*leaves), self.out_avals)]
        return pytrees.tree_unflatten(self.out_tree, outs)


def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """Export the jitted function `fun_jit`: `export(fun_jit)(*args, **kwargs)` traces it for
    the types of the arguments (arrays, scalars or ShapeDtypeStructs) and returns an
    `Exported`. `platforms` names where it will run (default: the default backend's)."""
    if not hasattr(fun_jit, "trace"):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")

    def do_export(*args, **kwargs) -> Exported:
        traced = fun_jit.trace(*args, **kwargs)
        closed = traced.jaxpr
        out_avals = [a.strip_weak_type() for a in closed.out_avals]
        return Exported(traced.fun_name, traced.in_tree, closed.in_avals, traced.out_tree,
                        out_avals, platforms or (default_export_platform(),), closed,
                        disabled_checks)
    return do_export


def default_export_platform() -> str:
    """The platform `export` targets by default: the default backend's ('cpu' or 'cuda').
    JAX names the platform, not the backend: 'cuda' where `default_backend()` says 'gpu'."""
    from gpuarr.device_api import default_backend
    backend = default_backend()
    return "cuda" if backend == "gpu" else backend


def deserialize(blob: bytes | bytearray) -> Exported:
    """The Exported that `Exported.serialize` wrote into `blob`."""
    data = bytes(blob)
    if not data.startswith(_FORMAT):
        raise ValueError("Not a serialized gpuarr Exported (gpuarr reads only what its own "
                         "Exported.serialize wrote; JAX's StableHLO flatbuffers are not read).")
    state = _Unpickler(io.BytesIO(data[len(_FORMAT):])).load()
    fun_name, in_tree, in_avals, out_tree, out_avals, platforms, closed, checks = state
    return Exported(fun_name, in_tree, in_avals, out_tree, out_avals, platforms, closed, checks)


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    raise NotImplementedError("gpuarr exports functions for concrete shapes only; symbolic "
                              "(polymorphic) shapes are not supported. Export once per shape.")


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    raise NotImplementedError("gpuarr exports functions for concrete shapes only; symbolic "
                              "(polymorphic) shapes are not supported. Export once per shape.")


def is_symbolic_dim(p) -> bool:
    """Whether `p` is a symbolic dimension: never, in gpuarr."""
    return False


# ---------------------------------------------------------------- the serialized form

_registered_nodes: set[tuple[str, str]] = set()


def register_pytree_node_serialization(nodetype, *, serialized_name: str,
                                       serialize_auxdata=None, deserialize_auxdata=None):
    """Allow pytree nodes of `nodetype` (registered with tree_util) in the input and output
    structures of serialized Exporteds. gpuarr saves their aux data as it is, so the two
    conversion functions are not needed."""
    _registered_nodes.add((nodetype.__module__, nodetype.__qualname__))
    return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
    """Allow the namedtuple type `nodetype` in the structures of serialized Exporteds."""
    _registered_nodes.add((nodetype.__module__, nodetype.__qualname__))
    return nodetype


def _primitives() -> dict[str, Primitive]:
    return {p.name: p for p in abstract_eval_rules}


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        # Primitives are written by name and read back as the running gpuarr's own objects.
        if isinstance(obj, Primitive):
            return ("primitive", obj.name)
        return None


# What a serialized Exported may rebuild: gpuarr's own classes, NumPy values and dtypes,
# builtin containers, and pytree node types registered for serialization.
_BUILTINS = {"tuple", "list", "dict", "set", "frozenset", "slice", "complex", "int", "float",
             "bool", "str", "bytes", "bytearray", "range", "object", "NoneType", "Ellipsis"}
_NUMPY = {"dtype", "ndarray", "_reconstruct", "scalar", "frombuffer"}
# Rebuild registered pytree nodes (artifacts written before the moves name gpuarr.pytrees or
# gpuarr.tree_util).
_GPUARR_FUNCTIONS = {("gpuarr.pytrees.treedef", "_unpickle"), ("gpuarr.pytrees", "_unpickle"),
                     ("gpuarr.tree_util", "_unpickle")}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file):
        super().__init__(file)
        self._prims = _primitives()  # once per read, not once per primitive

    def persistent_load(self, pid):
        kind, name = pid
        prims = self._prims
        if kind != "primitive" or name not in prims:
            raise pickle.UnpicklingError(f"unknown primitive {name!r}: this gpuarr does not "
                                         "define it (was the Exported saved by another version?)")
        return prims[name]

    def find_class(self, module, name):
        root = module.partition(".")[0]
        obj = super().find_class(module, name) if self._allowed(module, name, root) else None
        if obj is None:
            raise pickle.UnpicklingError(
                f"a serialized Exported may not hold {module}.{name}; register custom pytree "
                "node types with export.register_pytree_node_serialization")
        return obj

    @staticmethod
    def _allowed(module, name, root) -> bool:
        if (module, name) in _registered_nodes or (module, name) in _GPUARR_FUNCTIONS:
            return True
        if root == "builtins":
            return name in _BUILTINS
        if root == "copyreg":
            return name in ("_reconstructor", "__newobj__")
        if root == "numpy":
            if name in _NUMPY or module == "numpy.dtypes":
                return True
            obj = getattr(np, name, None)
            return isinstance(obj, np.ufunc) or (isinstance(obj, type) and
                                                 issubclass(obj, np.generic))
        if root in ("gpuarr", "ml_dtypes", "enum", "collections"):
            obj = pickle.Unpickler.find_class(_NULL, module, name)
            return isinstance(obj, type) or isinstance(obj, np.ufunc)
        return False


_NULL = pickle.Unpickler(io.BytesIO(b""))
