"""The array API conformance suite's tests of the functions issue 32 fixed, run against
gpuarr.numpy and jax.numpy with a few examples each (bench/array_api_conformance.py runs the
whole suite): every test that passes for jax.numpy passes for gpuarr.numpy."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import array_api_conformance as conformance  # noqa: E402

FILES = ["array_api_tests/test_inspection_functions.py", "array_api_tests/test_has_names.py",
         "array_api_tests/test_dlpack.py", "array_api_tests/test_linalg.py",
         "array_api_tests/test_statistical_functions.py"]
SELECT = ("info or to_device or dlpack or diagonal or pinv or vector_norm or inspection or "
          "capabilities or dtypes or devices or trace or sum or prod")


@pytest.mark.slow
@pytest.mark.skipif(not (conformance.SUITE / "array_api_tests").is_dir(),
                    reason="array-api-tests not found (../shared/external)")
def test_conformance_subset_passes_where_jax_passes():
    pytest.importorskip("jax")
    pytest.importorskip("ndindex")
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "array_api_conformance.py"),
                          "--max-examples", "5", "-k", SELECT, *FILES],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "passing for jax.numpy only: 0" in out.stdout
