"""The native platform: kernels in the C dialect built by the system C compiler. Results are
compared with the NumPy backend (the cpu platform) on the same programs; the disk cache, the
thread split and every kind of bad input (no compiler, a broken one, a compiler error, a
corrupt cache entry) are exercised for real, with compilers and files on this machine."""
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends import native
from gpuarr.compiler import render
from gpuarr.compiler.plan import Launch, LaunchPlan
from gpuarr.platforms import get_platform
from tests.jax_compare import assert_same_results as assert_same

ROOT = Path(__file__).resolve().parents[2]
# gpuarr first, then what the run was given (the CuPy stand-in, under GPUARR_CUDA_STANDIN=1)
SEARCH_PATH = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def _require_compiler():
    if native.available():
        return
    if os.environ.get("CI"):
        pytest.fail("no C compiler and CI is set: the native platform must be tested in CI")
    pytest.skip("no C compiler (gcc or clang) on this machine")


@pytest.fixture
def plat():
    _require_compiler()
    return get_platform("native")


def run_both(plat, f, *args):
    """(native results, NumPy backend results) of jit(f) on the same optimized Program."""
    closed = gpuarr.make_jaxpr(f)(*args)
    got = plat.compile(closed)(*[np.asarray(a) for a in args])
    want = get_platform("cpu").compile_numpy(closed)(*[np.asarray(a) for a in args])
    return got, want


def test_fused_program_matches_numpy_backend(plat):
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal((33, 70)).astype(np.float32) for _ in range(3))

    def f(x, y, z):
        e = jnp.sqrt(jnp.abs(jnp.tanh(x * 1.5 + y) * z - 0.5))
        return (e, jnp.sum(x, axis=1), jnp.sum(y, axis=0), jnp.max(z), jnp.argmax(z, axis=1),
                jnp.cumsum(y, axis=1), jax_softmax(x), x @ y.T)

    got, want = run_both(plat, f, x, y, z)
    assert_same(got, want, rtol=2e-5, atol=2e-5)


def jax_softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint32"])
def test_integer_overflow_wraps_and_division_follows_xla(plat, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.min, 7, -7 if info.min else 7, 0, 1], dtype)
    y = np.array([1, -1, 0, 2, 0, 3], dtype) if info.min else np.array([1, 1, 0, 2, 0, 3], dtype)
    got, want = run_both(plat, lambda a, b: (a + b, a * b, a - b, lax.div(a, b), lax.rem(a, b),
                                             -a), x, y)
    assert_same(got, want)


def test_nan_inf_and_signed_zero_as_numpy_backend(plat):
    # Subnormal inputs are left out: they flush as in XLA, which docs/arithmetic.md sets out
    # per platform (a select passes one through unflushed where NumPy's sign reads it as 0).
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-37, -1e-36, 3.0], np.float32)
    got, want = run_both(plat, lambda a: (jnp.maximum(a, 0.0), jnp.minimum(a, -0.0), a * 0.0,
                                          jnp.sign(a), 1.0 / a, jnp.sqrt(a), jnp.exp(a),
                                          jnp.log(a), jnp.tanh(a), jnp.max(a), jnp.sum(a)), x)
    assert_same(got, want)
    for g, w in zip(got, want):   # signed zeros and subnormals bit for bit
        g, w = np.asarray(g), np.asarray(w)
        fin = np.isfinite(w) & (np.abs(w) < 1e-30)
        np.testing.assert_array_equal(np.signbit(g[fin]), np.signbit(w[fin]))
        np.testing.assert_array_equal(g[fin], w[fin])


def test_control_flow_runs_its_bodies_as_native_plans(plat):
    def f(x):
        def body(c, xi):
            h = jnp.tanh(c * 0.9 + xi)
            return h, jnp.sum(h)
        c, ys = lax.scan(body, jnp.zeros(16, np.float32), x)
        w = lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * 1.5), (0, c))
        return c, ys, w[1], lax.cond(ys[0] > 0, lambda: c + 1, lambda: c - 1)

    x = np.random.default_rng(1).standard_normal((20, 16)).astype(np.float32)
    got, want = run_both(plat, f, x)
    assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_scatter_gather_and_16_bit_floats(plat):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(50).astype(np.float32)
    idx = rng.integers(-5, 60, 30).astype(np.int32)
    upd = rng.standard_normal(30).astype(np.float32)
    got, want = run_both(plat, lambda x, i, u: (x.at[i].add(u), x.at[i].set(u), x.at[i].max(u),
                                                x[jnp.clip(i, 0, 49)],
                                                (x.astype(jnp.bfloat16) * 3).astype(jnp.float16)),
                         x, idx, upd)
    assert_same(got, want)


def test_large_launches_split_over_threads_give_the_same_result(plat, monkeypatch):
    x = np.random.default_rng(3).standard_normal((2048, 1024)).astype(np.float32)

    def f(x):
        return jnp.exp(x) * 2.0 + 1.0, jnp.sum(x, axis=1), jnp.sum(x, axis=0), x.at[3].add(1.0)

    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "1")
    one = gpuarr.jit(f)(x)
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "3")
    three = gpuarr.jit(f)(x)
    assert x.nbytes >= native.PARALLEL_MIN_BYTES
    for a, b in zip(one, three):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_jit_selects_native_by_platform_name(plat):
    with gpuarr.default_device(plat.devices()[0]):
        out = gpuarr.jit(lambda x: jnp.sin(x) + 1)(np.arange(5, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(5, dtype=np.float32)) + 1,
                               rtol=1e-6)


def test_float32_tanh_is_xla_cpus_bit_for_bit(plat):
    """The C dialect computes XLA CPU's float32 tanh (kernels/dialect_c.h): every bit as JAX's
    jitted tanh, where the C library's tanhf differs in the last place for most inputs."""
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(7)
    # Every 4099th bit pattern (about a million values across every exponent, both signs,
    # subnormals and NaNs), and the edges of the arms: |x| < 0.0004, the clamp at 7.99881172
    # past which the result is +-1, and the largest floats.
    sweep = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([4e-4, 7.99881172180175781, 8.0, 20.0, 1e30,
                      np.finfo(np.float32).max, np.finfo(np.float32).tiny], np.float32)
    with np.errstate(over="ignore"):   # the float past the largest is inf, which is wanted
        edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)),
                                np.nextafter(edges, np.float32(np.inf))])
    x = np.concatenate([rng.standard_normal(1 << 16).astype(np.float32) * s
                        for s in (1e-3, 0.1, 1.0, 3.0, 10.0)] +
                       [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-39, -1e-39, 4e-4,
                                  -4e-4, 7.9988117, 8.0, 20.0, -20.0], np.float32),
                        sweep, edges, -edges])
    with gpuarr.default_device(plat.devices()[0]):
        got = np.asarray(gpuarr.jit(jnp.tanh)(x))
    want = np.asarray(jax.jit(jax.numpy.tanh)(x))
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


# ---- the disk cache ---------------------------------------------------------------------

_SOURCE = textwrap.dedent("""
    #include <stddef.h>
    __attribute__((visibility("default"))) void scale_run(void *const *args, long long b,
                                                          long long e) {
      float *out = (float *)args[0];
      for (long long i = b; i < e; ++i) out[i] = out[i] * 2.0f + %d.0f;
    }
""")


def _run_scale(lib, n=8):
    out = np.arange(n, dtype=np.float32)
    native.launch(native.entry(lib, "scale"), native.pointers([out]), n, out.nbytes)
    return out


def test_disk_cache_is_used_by_a_second_process_and_survives_corruption(tmp_path):
    _require_compiler()
    env = {**os.environ, "GPUARR_CACHE_DIR": str(tmp_path), "PYTHONPATH": SEARCH_PATH}
    script = textwrap.dedent(f"""
        import numpy as np
        from gpuarr.backends import native
        lib = native.load({_SOURCE % 1!r})
        out = np.arange(4, dtype=np.float32)
        native.launch(native.entry(lib, "scale"), native.pointers([out]), 4, 16)
        print(native.build_count(), out.tolist())
    """)

    def run():
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()[0], done.stdout.split(" ", 1)[1].strip()

    assert run() == ("1", "[1.0, 3.0, 5.0, 7.0]")
    assert run() == ("0", "[1.0, 3.0, 5.0, 7.0]")   # the second process builds nothing
    (entry,) = list((tmp_path / "native").glob("*/*.so"))
    data = entry.read_bytes()
    for broken in (data[: len(data) // 2], data[:100] + b"x" * 50 + data[150:], b"garbage"):
        entry.write_bytes(broken)
        assert run() == ("1", "[1.0, 3.0, 5.0, 7.0]")   # rebuilt, never loaded
        assert entry.read_bytes() == data or run()[0] == "0"   # and rewritten


def test_a_process_removes_its_loaded_objects_directory_at_exit(tmp_path):
    _require_compiler()
    env = {**os.environ, "GPUARR_CACHE_DIR": str(tmp_path), "PYTHONPATH": SEARCH_PATH}
    script = textwrap.dedent(f"""
        from gpuarr.backends import native
        native.load({_SOURCE % 3!r})
        work = native._work_dir()
        print(work, sorted(p.suffix for p in work.iterdir()))
    """)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    work, suffixes = done.stdout.split(" ", 1)
    assert ".so" in suffixes          # the process did load an object from there
    assert not os.path.exists(work)   # and left nothing behind in the temporary directory


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    _require_compiler()
    env = {**os.environ, "GPUARR_CACHE_DIR": str(tmp_path), "PYTHONPATH": SEARCH_PATH}
    script = (f"from gpuarr.backends import native; import numpy as np; "
              f"lib = native.load({_SOURCE % 5!r}); out = np.zeros(2, np.float32); "
              f"native.launch(native.entry(lib, 'scale'), native.pointers([out]), 2, 8); "
              f"print(out.tolist())")
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.strip() == "[5.0, 5.0]"
    assert not list((tmp_path / "native").glob("*/*.tmp"))
    (entry,) = list((tmp_path / "native").glob("*/*.so"))
    assert native._read_entry(entry) is not None


# ---- bad input -----------------------------------------------------------------------------

def _broken_compiler(tmp_path, body: str) -> str:
    script = tmp_path / "cc"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize("cc, reason", [
    ("/nonexistent/cc", "cannot run"),
    ("BROKEN", "cannot build a shared object"),
])
def test_no_or_broken_compiler_falls_back_to_numpy_with_one_line(tmp_path, cc, reason):
    if cc == "BROKEN":
        cc = _broken_compiler(tmp_path, 'case "$*" in *--version*) echo "cc 1.0";; '
                                        '*) echo "internal compiler error" >&2; exit 1;; esac')
    env = {**os.environ, "CC": cc, "GPUARR_PLATFORMS": "native", "PYTHONPATH": SEARCH_PATH,
           "GPUARR_CACHE_DIR": str(tmp_path / "cache")}
    script = ("import numpy as np, gpuarr, gpuarr.numpy as jnp\n"
              "print(np.asarray(gpuarr.jit(lambda x: jnp.sum(x * 2))(np.arange(4.0))))")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "12.0"
    lines = [ln for ln in done.stderr.splitlines() if "native platform" in ln]
    assert len(lines) == 1 and reason in lines[0] and "NumPy backend" in lines[0], done.stderr


def test_compiler_error_falls_back_to_numpy_for_that_program(tmp_path, caplog):
    _require_compiler()
    # A compiler that works (the probe passes) but rejects kernel text.
    real = native.toolchain()["command"]
    cc = _broken_compiler(tmp_path, 'for a in "$@"; do case "$a" in *.c) grep -q KERNEL "$a" '
                                    '&& { echo "kernel.c:1: error: rejected" >&2; exit 1; };; '
                                    f'esac; done; exec {" ".join(real)} "$@"')
    env = {**os.environ, "CC": cc, "GPUARR_PLATFORMS": "native", "PYTHONPATH": SEARCH_PATH,
           "GPUARR_CACHE_DIR": str(tmp_path / "cache")}
    script = ("import numpy as np, gpuarr, gpuarr.numpy as jnp\n"
              "print(np.asarray(gpuarr.jit(lambda x: jnp.cos(x) * 2)(np.zeros(3, np.float32))))")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2. 2. 2.]"
    lines = [ln for ln in done.stderr.splitlines() if "native platform" in ln]
    assert len(lines) == 1 and "rejected the kernels" in lines[0], done.stderr


def test_compile_error_names_the_compiler_output_and_source():
    _require_compiler()
    launch = Launch("bad", render.prelude("c") + "KERNEL void bad(GLOBAL f32 *out) { out[0] = ; }",
                    1, 1, ("o",), ("o",))
    plan = LaunchPlan(("o",), ("o",), (("o", (1,), "float32"),), (), (launch,))
    with pytest.raises(native.NativeCompileError, match="rejected the kernels") as info:
        native.PlanRunner(plan, render.prelude("c"))
    assert "out[0] = ;" in str(info.value) and "error" in str(info.value)


def _sources(plat, f, *args):
    run = plat.compile(gpuarr.make_jaxpr(f)(*args))
    return "".join(s.source for s in run.launch_plan.steps if s.kind == "launch")


def test_column_reductions_run_tiled_and_match_numpy_backend(plat):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 70)).astype(np.float32)
    x[7, 3], x[100, 9] = np.nan, -np.inf
    k = rng.integers(-1000, 1000, (40, 6, 33)).astype(np.int32)

    def f(x, k):
        return (jnp.sum(x, axis=0), jnp.max(x, axis=0), jnp.min(x * 2 + 1, axis=0),
                jnp.prod(x[:20] * 0.5 + 1, axis=0), jnp.sum(k, axis=(0, 1)),
                jnp.max(k, axis=0), jnp.sum(x.T[3:9], axis=1),
                x / jnp.sum(jnp.abs(x), axis=0, keepdims=True))

    got, want = run_both(plat, f, x, k)
    assert_same(got, want, rtol=2e-5, atol=2e-5)
    assert "strategy column (tiled)" in _sources(plat, f, x, k)


def test_row_reductions_keep_nan_and_order_free_reducers_vectorised(plat):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 515)).astype(np.float32)
    x[3, 400], x[5, 0], x[9, 514] = np.nan, np.inf, -np.inf
    b = rng.integers(0, 2, (64, 515)).astype(bool)

    def f(x, b):
        return (jnp.max(x, axis=1), jnp.min(x, axis=1), jnp.all(b, axis=1), jnp.any(b, axis=1),
                jax_softmax(x), jnp.prod(1 + x * 1e-3, axis=1))

    got, want = run_both(plat, f, x, b)
    assert_same(got, want, rtol=2e-5, atol=2e-5)
    assert "omp simd reduction(gpuarr_reduce:acc)" in _sources(plat, f, x, b)


def test_thread_bench_runs_with_numpy_and_a_compiler_only(tmp_path):
    _require_compiler()
    out = tmp_path / "threads.json"
    # JAX and PyOpenCL made unimportable: the bench must not need them.
    script = ("import runpy, sys; sys.modules['jax'] = None; sys.modules['pyopencl'] = None; "
              f"sys.argv = ['b', '--threads', '2', '--sizes', '12:13', '--json', {str(out)!r}]; "
              f"runpy.run_path({str(ROOT / 'bench' / 'bench_native_threads.py')!r}, "
              "run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": SEARCH_PATH})
    assert done.returncode == 0, done.stderr
    import json
    data = json.loads(out.read_text())
    assert data["threads"] == [1, 2] and data["sizes"] == [4096, 8192]
    for case in data["cases"].values():
        assert set(case["seconds"]) == {"1", "2"}
        assert all(len(v) == 2 and min(v) > 0 for v in case["seconds"].values())
        assert case["threshold_elements"] in (None, 4096, 8192)


def test_thread_count_knob_rejects_a_non_number(monkeypatch):
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "many")
    with pytest.raises(ValueError, match="GPUARR_NATIVE_THREADS"):
        native.threads()
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "12")
    assert native.threads() == 12


def test_kernels_flush_subnormals_as_xla_without_the_host_setting_it(plat):
    # The entry points set FTZ/DAZ themselves (kernels/dialect_c.h), as XLA computes: a
    # subnormal operand reads as zero and a subnormal result is written as zero.
    from gpuarr.backends import float_env
    if not float_env.available():
        pytest.skip("subnormals are not flushed on this machine (docs/arithmetic.md)")
    import jax
    x = np.array([1e-39, -1e-39, 1.0, 1e-30], np.float32)

    def f(x):
        return x + 0.0, x * 1e-10, x > 0

    with gpuarr.default_device(plat.devices()[0]):
        got = gpuarr.jit(f)(x)
    want = jax.jit(f)(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    lib = native.load(render.prelude("c") + textwrap.dedent("""
        GPUARR_EXPORT void probe_run(void *const *args, i64 b, i64 e) {
          GPUARR_FLUSH_BEGIN
          ((f32 *)args[0])[0] = ((const f32 *)args[0])[0] * 3.0f;
          GPUARR_FLUSH_END
        }"""))
    out = np.array([1e-39], np.float32)
    native.entry(lib, "probe")(native.pointers([out]), 0, 1)   # no float_env around the call
    assert out[0] == 0.0
    out = np.array([1e-39], np.float32)
    assert out[0] * np.float32(3.0) != 0.0   # and the caller's own arithmetic is left alone


# ---- selection: the default CPU platform for jitted programs -------------------------------

_SELECTION = ("import logging, numpy as np, gpuarr, gpuarr.numpy as jnp\n"
              "from gpuarr.backends import native\n"
              "logging.basicConfig(format='%(message)s')\n"
              "out = gpuarr.jit(lambda x: jnp.sum(jnp.tanh(x) * 2))(np.arange(4.0, dtype=np.float32))\n"
              "print(gpuarr.default_backend(), gpuarr.devices()[0], native.build_count(),\n"
              "      round(float(out), 4), gpuarr.platforms.get_platform('cpu').kernels() is not None)")


def _selection(tmp_path, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("GPUARR_PLATFORMS", "JAX_PLATFORMS",
                                                            "CC", "GPUARR_CUDA_STANDIN")}
    env.update(PYTHONPATH=str(ROOT), GPUARR_CACHE_DIR=str(tmp_path / "cache"), **env_vars)
    done = subprocess.run([sys.executable, "-c", _SELECTION], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), [ln for ln in done.stderr.splitlines() if "native platform" in ln]


WANT_SUM = str(round(float(np.sum(np.tanh(np.arange(4.0, dtype=np.float32)) * 2)), 4))


def test_native_kernels_compile_the_default_cpu_platforms_jitted_programs(tmp_path):
    _require_compiler()
    out, log = _selection(tmp_path)
    # JAX's names (cpu, CpuDevice) stay; the jitted program was built by the C compiler.
    assert out == ["cpu", "cpu:0", "1", WANT_SUM, "True"], out
    assert log == []


def test_platforms_cpu_forces_the_numpy_backend(tmp_path):
    out, log = _selection(tmp_path, GPUARR_PLATFORMS="cpu")
    assert out == ["cpu", "cpu:0", "0", WANT_SUM, "False"], out
    assert log == []


def test_without_a_compiler_the_default_is_the_numpy_backend_with_one_line(tmp_path):
    out, log = _selection(tmp_path, CC="/nonexistent/cc")
    assert out == ["cpu", "cpu:0", "0", WANT_SUM, "False"], out
    assert len(log) == 1 and "no working C compiler" in log[0] and "NumPy backend" in log[0], log


def _precompiled_prelude():
    _require_compiler()
    if not native.toolchain()["gcc"]:
        pytest.skip("the precompiled prelude is gcc's")
    native.prepare_prelude(render.prelude("c"))
    entry = native._state["pch"]
    assert entry["ready"].wait(300) and entry["ok"]
    return entry


def test_translation_units_include_the_precompiled_prelude(plat):
    entry = _precompiled_prelude()
    x = np.linspace(-2, 2, 40, dtype=np.float32)
    f = lambda x: jnp.tanh(x * 1.25) + jnp.exp(-x * x) * 0.0625  # noqa: E731
    source = _sources(plat, f, x)
    text = native._with_precompiled_prelude(source, native.PCH_LEVEL)
    assert text is not None and text.startswith("#include") and len(text) < len(source)
    assert native._with_precompiled_prelude(source, "-O1") is None   # built for -O3 only
    tc = native.toolchain()
    out = native._work_dir() / "pch-check.so"
    done = native._run_compiler(tc["command"] + [native.PCH_LEVEL, "-H"] + list(tc["flags"]),
                                text, out)
    assert done.returncode == 0 and f"! {entry['header']}.gch" in done.stderr  # gcc used it
    assert_same(*run_both(plat, f, x))


def test_a_corrupt_precompiled_prelude_still_builds_right(plat, tmp_path, monkeypatch):
    entry = _precompiled_prelude()
    gch = Path(f"{entry['header']}.gch")
    saved = gch.read_bytes()
    monkeypatch.setenv("GPUARR_CACHE_DIR", str(tmp_path))   # nothing built yet: gcc runs
    try:
        gch.write_bytes(b"not a precompiled header")
        native.clear_memory_cache()
        before = native.build_count()
        x = np.linspace(-1, 1, 33, dtype=np.float32)
        got, want = run_both(plat, lambda x: jnp.sin(x) * 3.0 - x * 0.03125, x)
        assert native.build_count() > before
        assert_same(got, want)
    finally:
        gch.write_bytes(saved)
        entry["ok"] = True   # dropped (and removed) if gcc refused it; restored for the others


def test_a_programs_kernels_build_side_by_side_as_units_and_link_into_one_object(
        plat, tmp_path, monkeypatch):
    from gpuarr.backends import host_threads
    x = np.linspace(-1, 1, 96 * 40, dtype=np.float32).reshape(96, 40)

    def f(x):
        y = x
        for k in range(12):
            y = jnp.sin(y) * (1.0 + k / 64) + jnp.cos(y) * 0.5
        return y, jax_softmax(x * 3), jnp.sum(jnp.exp(x), axis=0)

    monkeypatch.setattr(native, "PART_MIN_BYTES", 1)
    monkeypatch.setattr(host_threads, "_CPUS", 3)
    monkeypatch.setattr(host_threads, "_machine_is_busy", lambda: False)
    monkeypatch.setenv("GPUARR_CACHE_DIR", str(tmp_path))
    commands = []
    run_compiler = native._run_compiler

    def spy(command, source, out):
        commands.append(command)
        return run_compiler(command, source, out)
    monkeypatch.setattr(native, "_run_compiler", spy)
    native.clear_memory_cache()
    before = native.build_count()
    closed = gpuarr.make_jaxpr(f)(x)
    run = plat.compile(closed)
    launches = [s for s in run.launch_plan.steps if s.kind == "launch"]
    units = native.translation_units([s.source for s in launches], render.prelude("c"), "tail")
    assert len(units) == 3 and sum(u.endswith("tail") for u in units) == 1
    assert native.build_count() == before + 1   # one build: three compiler runs and a link
    assert sum("-c" in c for c in commands) == 3 and "-shared" not in commands[0]
    got = run(x)
    assert_same(got, get_platform("cpu").compile_numpy(closed)(x), rtol=2e-6, atol=2e-6)


def test_float32_exp_is_within_an_ulp_and_keeps_its_special_values(plat):
    x = np.concatenate([np.linspace(-104, 89, 400_003, dtype=np.float32),
                        np.float32([0.0, -0.0, 1e-40, -1e-40, np.inf, -np.inf, np.nan, 88.72283,
                                    88.72284, -87.33654, -200, 200])])
    got, want = run_both(plat, lambda v: (jnp.exp(v), lax.logistic(v)), x)
    exact = np.exp(x.astype(np.float64))
    normal = (exact >= np.finfo(np.float32).tiny) & (exact <= np.finfo(np.float32).max)
    rounded = exact[normal].astype(np.float32)
    ulps = np.abs(got[0][normal].view(np.int32).astype(np.int64) - rounded.view(np.int32))
    assert got[0].dtype == np.float32 and ulps.max() <= 1
    tail = got[0][-12:]
    assert list(tail[:6]) == [1, 1, 1, 1, np.inf, 0] and np.isnan(tail[6])
    assert tail[8] == np.inf and tail[10] == 0 and tail[11] == np.inf and tail[7] < np.inf
    assert_same(got, want, rtol=3e-7, atol=0)
