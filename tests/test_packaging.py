"""The wheel ships every subpackage and the kernel templates."""
import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpuarr").rglob("__init__.py")}
    assert found <= listed, f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"]["gpuarr.kernels"] == "kernels"
    templates = {p.name for p in (ROOT / "kernels").iterdir()}
    assert {"dialect_cuda.h", "dialect_opencl.h", "elementwise.cu"} <= templates
