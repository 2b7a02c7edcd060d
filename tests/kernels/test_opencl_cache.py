"""The opencl platform's program binaries in gpuarr's kernel cache (GPUARR_CACHE_DIR/opencl):
a second process builds nothing, damaged entries are rebuilt and repaired, several processes
filling one fresh cache at once all succeed, and PoCL's own cache is a private directory."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpuarr.backends import kernel_cache, opencl

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl")]

# Each process runs the same jitted programs and prints its builds and a checksum of the results.
CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    import gpuarr, gpuarr.numpy as jnp
    from gpuarr.backends import opencl
    tag = float(sys.argv[1])
    x = jnp.arange(12.0).reshape(3, 4) + tag
    a = gpuarr.jit(lambda x: jnp.sin(x) * 2 + x.sum(0))(x)
    b = gpuarr.jit(lambda x: jnp.cumsum(x, axis=1) - tag)(x)
    c = gpuarr.jit(lambda x: x[:0:1, 1] + 1)(x)  # a zero-size strided slice
    assert "POCL_CACHE_DIR" not in os.environ or os.environ.get("KEEP_POCL")
    print(opencl.build_count(), float(np.asarray(a).sum() + np.asarray(b).sum()), c.shape)
""")


def _run(cache, tag=0.0, **env):
    env = {**{k: v for k, v in os.environ.items() if k != "POCL_CACHE_DIR"},
           "GPUARR_CACHE_DIR": str(cache), "GPUARR_PLATFORMS": "opencl", **env}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tag)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    builds, total, shape = out.stdout.split(maxsplit=2)
    return int(builds), float(total), shape.strip()


def _want(tag=0.0):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4) + np.float32(tag)
    return float((np.sin(x) * 2 + x.sum(0)).sum() + (np.cumsum(x, axis=1) - np.float32(tag)).sum())


def _entries(cache):
    return sorted(cache.rglob("opencl/*/*.bin"))


def test_second_process_builds_nothing(tmp_path):
    builds, total, shape = _run(tmp_path)
    assert builds >= 2 and shape == "(0,)"
    assert total == pytest.approx(_want(), rel=1e-6)
    entries = _entries(tmp_path)
    assert len(entries) == builds and not list(tmp_path.rglob("*.tmp"))
    for entry in entries:
        assert kernel_cache.read(entry, opencl._MAGIC) is not None
    again, total2, _ = _run(tmp_path)
    assert again == 0 and total2 == total


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_damaged_entries_are_rebuilt(tmp_path, damage):
    builds, total, _ = _run(tmp_path)
    for entry in _entries(tmp_path):
        data = entry.read_bytes()
        entry.write_bytes({"truncate": data[: len(data) // 2],
                           "flip": data[:-100] + bytes([data[-100] ^ 1]) + data[-99:],
                           "garbage": os.urandom(len(data)), "empty": b""}[damage])
    rebuilt, total2, _ = _run(tmp_path)
    assert rebuilt == builds and total2 == total
    for entry in _entries(tmp_path):  # repaired on disk
        assert kernel_cache.read(entry, opencl._MAGIC) is not None
    assert _run(tmp_path)[0] == 0


def test_concurrent_processes_fill_one_cache(tmp_path):
    env = {**os.environ, "GPUARR_CACHE_DIR": str(tmp_path), "GPUARR_PLATFORMS": "opencl"}
    env.pop("POCL_CACHE_DIR", None)
    # Two tags: pairs of processes build the same programs, others different ones.
    procs = [(tag, subprocess.Popen([sys.executable, "-c", CHILD, str(tag)], env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE))
             for tag in (0.0, 0.0, 1.0, 1.0, 2.0, 2.0)]
    for tag, p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert float(out.split()[1]) == pytest.approx(_want(tag), rel=1e-6)
    assert not list(tmp_path.rglob("*.tmp"))
    for entry in _entries(tmp_path):
        assert kernel_cache.read(entry, opencl._MAGIC) is not None
    assert _run(tmp_path, 1.0)[0] == 0


def test_a_users_pocl_cache_dir_is_kept(tmp_path):
    pocl = tmp_path / "pocl"
    pocl.mkdir()
    builds, _, _ = _run(tmp_path / "gpuarr", POCL_CACHE_DIR=str(pocl), KEEP_POCL="1")
    assert builds >= 2 and any(pocl.iterdir())


def test_pocl_writes_into_the_private_directory_only(tmp_path):
    """PoCL reads POCL_CACHE_DIR when its devices start: it must be set then, or PoCL's files
    land in the user's cache directory, shared by every process."""
    home = tmp_path / "home"
    builds, _, _ = _run(tmp_path / "gpuarr", HOME=str(home), XDG_CACHE_HOME=str(home / "xdg"))
    assert builds >= 2
    assert not (home / "xdg" / "pocl").exists() and not (home / ".cache" / "pocl").exists()


def test_build_errors_carry_the_numbered_source():
    with pytest.raises(RuntimeError, match=r"OpenCL build failed(.|\n)*    2  this is not C;"):
        opencl.program("__kernel void k(__global float *x) { x[0] = 1.0f; }\nthis is not C;\n")


def test_kernel_cache_entries_roundtrip(tmp_path):
    path = tmp_path / "a" / "entry.bin"
    kernel_cache.write(path, b"MAGIC\n", b"payload")
    assert kernel_cache.read(path, b"MAGIC\n") == b"payload"
    assert kernel_cache.read(path, b"OTHER\n") is None
    assert kernel_cache.read(tmp_path / "missing", b"MAGIC\n") is None
    path.write_bytes(path.read_bytes()[:-1])
    assert kernel_cache.read(path, b"MAGIC\n") is None
