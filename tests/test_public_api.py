"""The public API does not change by accident: the names of every public module (those JAX has
too, as `jax.X`) are snapshotted in tests/data/public_api.json. Regenerate after a deliberate
change with `GPUARR_UPDATE_PUBLIC_API=1 python -m pytest tests/test_public_api.py`."""
import importlib
import json
import os
import types
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).parent / "data" / "public_api.json"

# Modules JAX has under the same names; jax.core and jax.interpreters.* are left out: in gpuarr
# they are the implementation itself, not a curated face.
MODULES = [
    "gpuarr", "gpuarr.ad_checkpoint", "gpuarr.custom_batching", "gpuarr.custom_derivatives",
    "gpuarr.debug", "gpuarr.dlpack", "gpuarr.dtypes", "gpuarr.errors", "gpuarr.example_libraries",
    "gpuarr.example_libraries.optimizers", "gpuarr.example_libraries.stax", "gpuarr.experimental",
    "gpuarr.experimental.checkify", "gpuarr.experimental.jet", "gpuarr.experimental.ode",
    "gpuarr.export", "gpuarr.flatten_util", "gpuarr.image", "gpuarr.lax", "gpuarr.lax.linalg",
    "gpuarr.monitoring", "gpuarr.nn", "gpuarr.nn.initializers", "gpuarr.numpy", "gpuarr.numpy.fft",
    "gpuarr.numpy.linalg", "gpuarr.ops", "gpuarr.profiler", "gpuarr.random", "gpuarr.scipy",
    "gpuarr.scipy.cluster", "gpuarr.scipy.cluster.vq", "gpuarr.scipy.fft", "gpuarr.scipy.integrate",
    "gpuarr.scipy.interpolate", "gpuarr.scipy.linalg", "gpuarr.scipy.ndimage", "gpuarr.scipy.optimize",
    "gpuarr.scipy.signal", "gpuarr.scipy.spatial", "gpuarr.scipy.spatial.transform",
    "gpuarr.scipy.special", "gpuarr.scipy.stats", "gpuarr.scipy.stats.norm",
    "gpuarr.scipy.stats.multivariate_normal", "gpuarr.sharding", "gpuarr.stages", "gpuarr.test_util",
    "gpuarr.tree", "gpuarr.tree_util", "gpuarr.typing",
]


def public_names(name: str) -> list:
    """The module's public names: no leading underscore and no modules (an `np` imported for
    the implementation is not API, and a submodule is an attribute only once imported; the
    public submodules are in MODULES themselves)."""
    module = importlib.import_module(name)
    return sorted(attr for attr in dir(module) if not attr.startswith("_")
                  and not isinstance(getattr(module, attr), types.ModuleType))


def current() -> dict:
    return {name: public_names(name) for name in MODULES}


def test_public_api_is_unchanged():
    now = current()
    if os.environ.get("GPUARR_UPDATE_PUBLIC_API") == "1":
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    want = json.loads(SNAPSHOT.read_text())
    assert sorted(now) == sorted(want)
    for name in MODULES:
        lost = sorted(set(want[name]) - set(now[name]))
        added = sorted(set(now[name]) - set(want[name]))
        assert not lost and not added, (
            f"{name}: lost {lost}, added {added}; if deliberate, regenerate the snapshot "
            "(see this module's docstring)")


@pytest.mark.parametrize("name", MODULES)
def test_public_modules_import_alone(name):
    importlib.import_module(name)
