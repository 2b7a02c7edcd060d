"""What gpuarr_as_jax.pth runs at startup when GPUARR_AS_JAX is set: the first `import jax` of
the process then imports `gpuarr.as_jax`, which points `jax` at gpuarr. The hook waits for that
import instead of importing gpuarr while site.py is still reading .pth files, since gpuarr's own
dependencies (NumPy) may sit in a site directory added after this one (a virtual environment
over the system's site-packages). A module of its own, beside the package, because importing
anything in `gpuarr` imports the whole package."""
import importlib
import sys


class DeferredJaxFinder:
    """On `sys.meta_path` until the first `jax` import, which it hands to gpuarr's finder."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname.partition(".")[0] != "jax":
            return None
        if DeferredJaxFinder in sys.meta_path:
            sys.meta_path.remove(DeferredJaxFinder)
        finder = importlib.import_module("gpuarr.jax_finder")
        finder.install()
        return finder.JaxFinder().find_spec(fullname, path, target)


def install() -> None:
    """Put the deferring finder first on `sys.meta_path` (once)."""
    if DeferredJaxFinder not in sys.meta_path:
        sys.meta_path.insert(0, DeferredJaxFinder)
