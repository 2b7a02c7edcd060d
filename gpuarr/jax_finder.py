"""`import jax` served by gpuarr: a meta-path finder that resolves `jax` and every `jax.X.Y` to
gpuarr's own modules (aliases in `sys.modules`, never copies), so JAX code and the libraries
built on it run unchanged. `jax` itself is a thin module that forwards every attribute to
`gpuarr` and carries the JAX version whose behaviour gpuarr follows; `jax.version` likewise.

Modules are imported by name (importlib), not by `import` statements: this module sits above
every layer and names the public modules only as strings."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

from gpuarr.version import jax_version

# JAX module names whose gpuarr module has another name: (jax name, gpuarr name). A library
# that patches `jax._src.compiler` must patch the module jit calls through, not a re-export.
RENAMED: dict = {"jax._src.compiler": "gpuarr.compilation"}
CLAIMED_ROOTS = ("jax",)
# The modules that `import jax` loads with it, so libraries reach them as attributes
# (`jax.interpreters.xla.X` without importing it).
IMPORTED_WITH_JAX = (
    "jax.core", "jax.custom_batching", "jax.custom_derivatives", "jax.debug", "jax.dlpack",
    "jax.dtypes", "jax.errors", "jax.experimental", "jax.export", "jax.extend", "jax.image",
    "jax.interpreters", "jax.interpreters.ad", "jax.interpreters.batching",
    "jax.interpreters.mlir", "jax.interpreters.partial_eval", "jax.interpreters.xla", "jax.lax",
    "jax.monitoring", "jax.nn", "jax.numpy", "jax.ops", "jax.profiler", "jax.random",
    "jax.scipy", "jax.sharding", "jax.stages", "jax.tree", "jax.tree_util", "jax.typing",
    "jax.version", "jax._src.xla_bridge",
)


def gpuarr_name(jax_name: str) -> str | None:
    """The gpuarr module that stands for the JAX module `jax_name` (None: not a JAX name)."""
    for old, new in RENAMED.items():
        if jax_name == old or jax_name.startswith(old + "."):
            return new + jax_name[len(old):]
    root, _, rest = jax_name.partition(".")
    if root != "jax":
        return None
    return "gpuarr." + rest if rest else "gpuarr"


def _forwarding_module(name: str, target_name: str, version_attrs: dict) -> types.ModuleType:
    """A package named `name` whose attributes are `target_name`'s, except `version_attrs`."""
    target = importlib.import_module(target_name)
    module = types.ModuleType(name, target.__doc__)
    module.__dict__.update(version_attrs)
    module.__path__ = list(getattr(target, "__path__", []))
    module.__file__ = getattr(target, "__file__", None)

    def __getattr__(attr):
        try:
            return getattr(target, attr)
        except AttributeError:
            raise AttributeError(f"module {name!r} (gpuarr's {target_name}) has no attribute "
                                 f"{attr!r}") from None

    module.__getattr__ = __getattr__
    module.__dir__ = lambda: sorted(set(dir(target)) | set(version_attrs))
    return module


def _version_attrs() -> dict:
    info = tuple(int(p) for p in jax_version.split(".") if p.isdigit())
    return {"__version__": jax_version, "__version_info__": info, "_version": jax_version}


class _AliasLoader(importlib.abc.Loader):
    """Loads a JAX module name as the gpuarr module that stands for it (the same object)."""

    def __init__(self, target_name: str):
        self.target_name = target_name

    def create_module(self, spec):
        if spec.name in ("jax", "jax.version"):
            return _forwarding_module(spec.name, self.target_name, _version_attrs())
        try:
            return importlib.import_module(self.target_name)
        except ModuleNotFoundError as e:
            if e.name != self.target_name:
                raise
            raise ModuleNotFoundError(
                f"No module named {spec.name!r}: gpuarr, which serves `import jax` in this "
                f"process (gpuarr.as_jax), has no {self.target_name!r}", name=spec.name) from None

    def exec_module(self, module):
        # The module already ran under its gpuarr name; the alias only adds a name for it.
        if module.__name__ == "jax":
            sys.modules["jax"] = module  # the submodules below find their parent
            for name in IMPORTED_WITH_JAX:
                if _is_module(gpuarr_name(name)):
                    importlib.import_module(name)


class JaxFinder(importlib.abc.MetaPathFinder):
    """Finds `jax` and `jax.*` in gpuarr (first on `sys.meta_path`)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in CLAIMED_ROOTS:
            return None
        target_name = gpuarr_name(fullname)
        if target_name is None:
            return None
        is_package = fullname == "jax" or _is_package(target_name)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name),
                                              is_package=is_package)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _is_package(name: str) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None


def _real_jax_modules() -> list:
    """The names of modules of the real jax/jaxlib already imported in this process."""
    return sorted(n for n, m in list(sys.modules.items())
                  if n.partition(".")[0] in CLAIMED_ROOTS and m is not None
                  and not _served_by_gpuarr(m))


def _served_by_gpuarr(module) -> bool:
    spec = getattr(module, "__spec__", None)
    return isinstance(getattr(spec, "loader", None), _AliasLoader) or \
        getattr(module, "__name__", "").startswith("gpuarr")


def installed() -> bool:
    """Whether `import jax` resolves to gpuarr in this process."""
    return any(isinstance(f, JaxFinder) for f in sys.meta_path)


def install() -> None:
    """Make `import jax` (and every `jax.*` module) resolve to gpuarr in this process. Raises
    ImportError when the real jax is already imported, since two array libraries would then
    share the `jax` name. Installing twice is harmless."""
    real = _real_jax_modules()
    if real:
        raise ImportError(
            f"gpuarr.as_jax: the real jax is already imported in this process ({real[0]!r} "
            f"among {len(real)} modules), so `import jax` can no longer be pointed at gpuarr. "
            "Import gpuarr.as_jax first, before anything that imports jax (or run the script "
            "as `python -m gpuarr.run script.py`, or set GPUARR_AS_JAX=1).", name="jax")
    if not installed():
        sys.meta_path.insert(0, JaxFinder())
