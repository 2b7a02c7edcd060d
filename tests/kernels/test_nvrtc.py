"""NVRTC: cubin and PTX output, error logs, the disk cache and its robustness."""
import os
import subprocess
import sys
import textwrap

import pytest

from gpuarr.backends import nvrtc

pytestmark = pytest.mark.kernels

SOURCE = 'extern "C" __global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }\n'


@pytest.fixture
def cache(tmp_path, monkeypatch, have_nvrtc):
    monkeypatch.setenv("GPUARR_CACHE_DIR", str(tmp_path))
    nvrtc.clear_memory_cache()
    yield tmp_path
    nvrtc.clear_memory_cache()


def test_cubin_and_ptx(cache):
    cubin = nvrtc.compile(SOURCE, "add_one")
    assert cubin[:4] == b"\x7fELF"
    ptx = nvrtc.compile(SOURCE, "add_one", target="ptx")
    assert b".target sm_90" in ptx and b"add_one" in ptx


def test_error_carries_log_and_numbered_source(cache):
    with pytest.raises(nvrtc.NVRTCError) as info:
        nvrtc.compile(SOURCE + "this is not C;\n", "broken")
    msg = str(info.value)
    assert "broken" in msg and "    2  this is not C;" in msg and "error" in msg


def test_memory_and_disk_cache(cache):
    before = nvrtc.compile_count()
    a = nvrtc.compile(SOURCE, "add_one")
    assert nvrtc.compile_count() == before + 1
    assert nvrtc.compile(SOURCE, "add_one") == a
    nvrtc.clear_memory_cache()
    assert nvrtc.compile(SOURCE, "add_one") == a
    assert nvrtc.compile_count() == before + 1
    entries = list(cache.rglob("*.cubin"))
    assert len(entries) == 1 and not list(cache.rglob("*.tmp"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entries_recompile(cache, damage):
    a = nvrtc.compile(SOURCE, "add_one")
    (entry,) = cache.rglob("*.cubin")
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[: len(data) // 2], "flip": data[:-1] + bytes([data[-1] ^ 1]),
                       "garbage": os.urandom(100), "empty": b""}[damage])
    nvrtc.clear_memory_cache()
    before = nvrtc.compile_count()
    assert nvrtc.compile(SOURCE, "add_one") == a
    assert nvrtc.compile_count() == before + 1
    nvrtc.clear_memory_cache()
    assert nvrtc.compile(SOURCE, "add_one") == a  # repaired on disk
    assert nvrtc.compile_count() == before + 1


CHILD = textwrap.dedent("""
    import sys
    from gpuarr.backends import nvrtc
    nvrtc.compile(sys.argv[1], "add_one")
    print(nvrtc.compile_count())
""")


@pytest.mark.slow
def test_second_process_hits_disk_cache(cache):
    env = {**os.environ, "GPUARR_CACHE_DIR": str(cache)}
    src = SOURCE + "// cross-process\n"
    run = lambda: subprocess.run([sys.executable, "-c", CHILD, src], env=env, check=True,  # noqa: E731
                                 capture_output=True, text=True).stdout.strip()
    assert run() == "1"
    assert run() == "0"


@pytest.mark.slow
def test_concurrent_processes(cache):
    env = {**os.environ, "GPUARR_CACHE_DIR": str(cache)}
    src = SOURCE + "// concurrent\n"
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, src], env=env, stdout=subprocess.PIPE)
             for _ in range(4)]
    assert all(p.wait() == 0 for p in procs)
    nvrtc.clear_memory_cache()
    before = nvrtc.compile_count()
    nvrtc.compile(src, "add_one")
    assert nvrtc.compile_count() == before


def test_missing_library_names_the_package(monkeypatch):
    monkeypatch.setattr(nvrtc, "_lib", None)
    monkeypatch.setattr(nvrtc, "_candidates", lambda: ["/nonexistent/libnvrtc.so.12"])
    with pytest.raises(nvrtc.NVRTCNotFoundError, match="nvidia-cuda-nvrtc-cu12"):
        nvrtc.compile(SOURCE)
    with pytest.raises(nvrtc.NVRTCNotFoundError, match=r"gpuarr\[cuda12\]"):
        nvrtc.compile(SOURCE)
