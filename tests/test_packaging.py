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


def test_demo_runs_without_the_optional_ml_dtypes():
    """`pip install -e .` does not bring ml_dtypes (only the test extra does): the README's
    first command, `python examples/demo.py`, must work without it (bfloat16 is then absent)."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import runpy; sys.argv = ['demo.py']\n"
            f"runpy.run_path({str(ROOT / 'examples' / 'demo.py')!r}, run_name='__main__')\n"
            "import gpuarr.numpy as jnp\n"
            "assert not hasattr(jnp, 'bfloat16')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "final accuracy" in out.stdout
