"""Native executor: C kernel text (the "c" dialect) built by the system C compiler into a shared
object, loaded with ctypes and run on host NumPy buffers.

The compiler is `$CC` when set, else the first of cc, gcc and clang on PATH; it is probed once
(a tiny shared object must build and load). Shared objects are cached in memory and on disk in
`GPUARR_CACHE_DIR` (default `~/.cache/gpuarr`) under `native/<2 hex>/<sha256>.so`, keyed by the
compiler's path and version, the flags, the CPU's features and the source. Entries are written
to a temporary file and `os.replace`d (safe with concurrent processes), framed by a
`GPUARR-NATIVE1` header and the payload's SHA-256; a truncated or corrupt entry is rebuilt and
rewritten, never loaded. A launch runs work items [0, global size) of an exported
`<entry>_run(args, begin, end)`; large launches split that range over `threads()` threads, the
calling one and a pool of its own (ctypes releases the GIL during the call). This module
imports nothing from gpuarr's compiler or IR.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import math
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from gpuarr.backends import float_env, host_threads, native_dispatch

# No -ffast-math: NaN, infinities, signed zeros and subnormals behave as on the NumPy backend.
# -fwrapv: signed overflow wraps (as XLA). -ffp-contract=off: no fused multiply-adds, so each
# operation rounds as NumPy's does. -fno-math-errno changes no result and lets sqrt vectorise.
# -fno-trapping-math changes no result either (kernels never read the floating-point exception
# flags): it lets the compiler compute both arms of a select, so `where`s and tanh's small-input
# select vectorise without AVX-512's masks (on AVX2, "control flow in loop" kept them scalar).
# -fopenmp-simd honours `omp simd` without the OpenMP runtime. -fno-tree-pre: GCC 12's partial
# redundancy elimination leaves code in the latch of a loop that combines a vector math call's
# result with a loop-invariant value (softmax's `exp(x - m) * (1 / s)`), which then does not
# vectorise (ten times slower); clang ignores the flag (its warning is silenced by -w).
BASE_FLAGS = ("-std=c11", "-fPIC", "-shared", "-fwrapv", "-ffp-contract=off",
              "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd", "-fvisibility=hidden",
              "-w", "-fno-tree-pre")
NATIVE_ARCH = ("-march=native",)
# gcc only: a loop's remainder runs as scalar code, not in a narrower vector copy of the loop
# too (a quarter of gcc's time on a 200-op program: bench/bench_native_compile.py).
GCC_FLAGS = ("--param", "vect-epilogues-nomask=0")
# glibc's vector math library: kernels/dialect_c.h declares its functions `simd` under
# GPUARR_LIBMVEC, so vectorised loops call them (x86-64 glibc only; the probe drops it elsewhere).
LIBMVEC = ("-DGPUARR_LIBMVEC", "-lmvec")
COMPILE_TIMEOUT_S = 600
# Optimisation by source size: gcc's time at -O3 grows faster than linearly with the size of
# a function, and plans of thousands of pieces (a 5,000-array concatenate renders 97 MB of C)
# took over 300 s at -O3, 127 s at -O2, 43 s at -O1 and 7 s at -O0.
OPT_LEVELS = ((2 << 20, "-O3"), (16 << 20, "-O1"), (None, "-O0"))
PCH_LEVEL = "-O3"   # the level the precompiled prelude is built for (`prepare_prelude`)
_MAGIC = b"GPUARR-NATIVE1\n"
# Thread parts start on multiples of this many work items (64 float32 lanes: four AVX-512
# vectors).
SPLIT_ALIGN = 64
# A launch moving fewer bytes than this runs on the calling thread. Measured with
# `bench/bench_native_threads.py` on an idle 13-core x86-64 machine (docs/kernels.md, "Threads"):
# handing a part to the pool costs about 0.1 ms, so an elementwise chain (16 bytes per item)
# gains from two threads from 8 MiB moved up, a row sum (4 bytes per item) from 32 MiB.
PARALLEL_MIN_BYTES = 8 << 20

_lock = threading.Lock()
_state: dict = {}
_memory_cache: dict = {}
_builds = 0


class NativeCompilerNotFoundError(RuntimeError):
    """No usable C compiler: none on PATH, or the one found cannot build a shared object."""


class NativeCompileError(RuntimeError):
    """The C compiler rejected a kernel; the message carries its output and the numbered source."""


def numbered(source: str) -> str:
    return "\n".join(f"{n:5d}  {line}" for n, line in enumerate(source.splitlines(), 1))


def _compiler_command() -> list:
    cc = os.environ.get("CC", "").strip()
    if cc:
        return shlex.split(cc)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    raise NativeCompilerNotFoundError(
        "no C compiler found (looked for cc, gcc and clang on PATH); install gcc or set CC")


def _work_dir() -> Path:
    if "work" not in _state:
        _state["work"] = Path(tempfile.mkdtemp(prefix="gpuarr-native-"))
        # The loaded objects stay mapped after their files go (POSIX unlink semantics), so the
        # directory is removed at exit rather than left behind by every process.
        atexit.register(shutil.rmtree, _state["work"], ignore_errors=True)
    return _state["work"]


def _cpu_features() -> str:
    """What -march=native resolves to on this machine: the CPU's model and feature flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() + " " + platform.processor()
    lines = [ln for ln in text.splitlines()
             if ln.split(":")[0].strip() in ("flags", "Features", "model name", "CPU part")]
    return platform.machine() + "\n" + "\n".join(dict.fromkeys(lines))


def _run_compiler(command: list, source: str, out: Path) -> subprocess.CompletedProcess:
    src = out.with_suffix(".c")
    src.write_text(source)
    # Libraries after the source: with --as-needed (Debian's default) a library named before
    # the code that uses it is dropped.
    libs = [a for a in command if a.startswith("-l")]
    command = [a for a in command if not a.startswith("-l")]
    try:
        return subprocess.run(command + ["-o", str(out), str(src)] + libs, capture_output=True,
                              text=True, timeout=COMPILE_TIMEOUT_S)
    finally:
        src.unlink(missing_ok=True)


_PROBE = ("#include <math.h>\n"
          "#if defined(GPUARR_LIBMVEC)\n"
          "extern double exp(double) __attribute__((simd(\"notinbranch\")));\n"
          "#endif\n"
          "__attribute__((visibility(\"default\"))) double gpuarr_probe(double x) {\n"
          "  double a[8];\n"
          "  _Pragma(\"omp simd\") for (int i = 0; i < 8; ++i) a[i] = exp(x * i * 1e-9);\n"
          "  return x + (a[7] > 0.5 ? 1.0 : 0.0);\n"
          "}\n")


def toolchain() -> dict:
    """The probed compiler: {'command', 'flags', 'identity'}; raises
    NativeCompilerNotFoundError with a one-line reason when there is no working compiler."""
    with _lock:
        if "toolchain" in _state:
            return _state["toolchain"]
        if "toolchain_error" in _state:
            raise NativeCompilerNotFoundError(_state["toolchain_error"])
        try:
            _state["toolchain"] = _probe()
        except NativeCompilerNotFoundError as e:
            _state["toolchain_error"] = str(e)
            raise
        return _state["toolchain"]


def _probe() -> dict:
    command = _compiler_command()
    try:
        version = subprocess.run(command + ["--version"], capture_output=True, text=True,
                                 timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise NativeCompilerNotFoundError(
            f"the C compiler {shlex.join(command)!r} cannot run: {e}") from e
    if version.returncode != 0:
        raise NativeCompilerNotFoundError(
            f"the C compiler {shlex.join(command)!r} failed to report its version: "
            f"{(version.stderr or version.stdout).strip().splitlines()[:1]}")
    last = ""
    gcc = "free software foundation" in version.stdout.lower() and "clang" not in version.stdout
    for k, extra in enumerate((NATIVE_ARCH + LIBMVEC, NATIVE_ARCH, LIBMVEC, ())):
        flags = BASE_FLAGS + (GCC_FLAGS if gcc else ()) + extra
        out = _work_dir() / f"probe{k}.so"
        try:
            done = _run_compiler(command + list(flags), _PROBE, out)
            if done.returncode == 0:
                lib = ctypes.CDLL(str(out))
                lib.gpuarr_probe.restype = ctypes.c_double
                lib.gpuarr_probe.argtypes = [ctypes.c_double]
                if lib.gpuarr_probe(1.0) == 2.0:
                    resolved = [shutil.which(command[0]) or command[0]] + command[1:]
                    identity = repr((resolved, version.stdout.strip()))
                    return {"command": command, "flags": flags, "identity": identity,
                            "gcc": gcc}
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            last = last[0]
        except (OSError, subprocess.SubprocessError, AttributeError) as e:
            last = str(e)
    raise NativeCompilerNotFoundError(
        f"the C compiler {shlex.join(command)!r} cannot build a shared object: {last}")


def available() -> bool:
    try:
        toolchain()
        return True
    except NativeCompilerNotFoundError:
        return False


def build_count() -> int:
    """How many shared objects this process has compiled (cache hits do not count)."""
    return _builds


def cache_dir() -> Path:
    return Path(os.environ.get("GPUARR_CACHE_DIR") or Path.home() / ".cache" / "gpuarr")


def _read_entry(path: Path):
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 64:
        return None
    digest, payload = data[len(_MAGIC): len(_MAGIC) + 64], data[len(_MAGIC) + 64:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def _write_entry(path: Path, payload: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + payload)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only or full disk only costs a rebuild next time


def flags(source: str) -> tuple:
    """The compiler flags `source` is built with (the optimisation level follows its size)."""
    level = next(opt for limit, opt in OPT_LEVELS if limit is None or len(source) <= limit)
    return (level,) + tuple(toolchain()["flags"])


def cache_key(source: str) -> str:
    tc = toolchain()
    return hashlib.sha256(repr((tc["identity"], flags(source), _cpu_features(), source))
                          .encode()).hexdigest()


def prepare_prelude(prelude: str) -> None:
    """Make `prelude` (the headers every translation unit starts with) a gcc precompiled
    header: parsing it is about half of gcc's time on a small program. It lives in the disk
    cache (`native/pch/<sha256>.h` and `.h.gch`, keyed as shared objects are, with -O3 and the
    same flags, as a precompiled header must be built with the flags of the code using it), so
    a machine builds it once; when missing it is built on a background thread, written to a
    temporary file and `os.replace`d. Translation units built once it is ready include it
    instead of parsing the text; until then, and with other compilers, nothing changes."""
    tc = toolchain()
    with _lock:
        if not tc.get("gcc") or "pch" in _state:
            return
        entry = _state["pch"] = {"text": prelude, "ready": threading.Event(), "ok": False}
    flags = [f for f in (PCH_LEVEL,) + tuple(tc["flags"]) if f != "-shared"
             and not f.startswith("-l")]
    key = hashlib.sha256(repr((tc["identity"], flags, _cpu_features(), prelude)).encode())
    header = entry["header"] = cache_dir() / "native" / "pch" / f"{key.hexdigest()}.h"
    gch = Path(f"{header}.gch")
    if header.exists() and gch.exists():
        entry["ok"] = True
        entry["ready"].set()
        return

    def build():
        try:
            header.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=header.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(prelude)
            os.replace(tmp, header)
            fd, tmp = tempfile.mkstemp(dir=header.parent, suffix=".gch.tmp")
            os.close(fd)
            done = subprocess.run(tc["command"] + flags + ["-x", "c-header", str(header), "-o",
                                                           tmp],
                                  capture_output=True, timeout=COMPILE_TIMEOUT_S)
            if done.returncode == 0:
                os.replace(tmp, gch)
                entry["ok"] = True
            else:
                os.unlink(tmp)
        except (OSError, subprocess.SubprocessError):
            entry["ok"] = False   # a read-only or full disk: the text is parsed as before
        finally:
            entry["ready"].set()
    threading.Thread(target=build, name="gpuarr-native-pch", daemon=True).start()


def _drop_precompiled_prelude() -> None:
    """A build with the precompiled prelude failed where the text built: stop using it, and
    remove it from the cache so that the next process builds it again."""
    entry = _state.get("pch")
    if entry is not None and entry["ok"]:
        entry["ok"] = False
        Path(f"{entry['header']}.gch").unlink(missing_ok=True)


def _with_precompiled_prelude(source: str, level: str) -> str | None:
    """`source` with its prelude replaced by an #include of the precompiled prelude, or None
    when that is not built (yet), failed, or does not fit (another prelude or -O level)."""
    entry = _state.get("pch")
    if entry is None or not entry["ready"].is_set() or not entry["ok"] or level != PCH_LEVEL \
            or not source.startswith(entry["text"]):
        return None
    return f'#include "{entry["header"]}"\n' + source[len(entry["text"]):]


def _build(command: list, source: str, out: Path, level: str):
    """Run the compiler on `source` (its prelude precompiled when that is ready), again on the
    full text when that fails (errors then name the whole source): the finished process."""
    text = _with_precompiled_prelude(source, level)
    done = _run_compiler(command, text, out) if text is not None else None
    if done is None or done.returncode != 0:
        failed, done = done, _run_compiler(command, source, out)
        if failed is not None and done.returncode == 0:
            _drop_precompiled_prelude()
    return done


def _compile(source: str, key: str, units=()) -> bytes:
    """The shared object built from `source`; from the translation units `units` (each a
    part of it, see `translation_units`) compiled side by side, then linked, when given."""
    global _builds
    tc = toolchain()
    out = _work_dir() / f"build-{key}-{threading.get_ident()}.so"
    command = tc["command"] + list(flags(source))
    level = command[len(tc["command"])]
    objects = [out.with_name(f"{out.stem}-{k}.o") for k in range(len(units))]
    try:
        if len(units) < 2:
            done = _build(command, source, out, level)
        else:
            compile_only = [a for a in command if a != "-shared" and not a.startswith("-l")]
            with ThreadPoolExecutor(len(units)) as pool:
                runs = list(pool.map(lambda u, o: (u, _build(compile_only + ["-c"], u, o, level)),
                                     units, objects))
            source, done = next(((u, d) for u, d in runs if d.returncode != 0), runs[-1])
            if done.returncode == 0:
                libs = [a for a in command if a.startswith("-l")]
                done = subprocess.run(tc["command"] + ["-shared", "-o", str(out)] +
                                      [str(o) for o in objects] + libs, capture_output=True,
                                      text=True, timeout=COMPILE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        raise NativeCompileError(f"the C compiler could not run: {e}") from e
    finally:
        for o in objects:
            o.unlink(missing_ok=True)
    with _lock:
        _builds += 1
    try:
        if done.returncode != 0:
            raise NativeCompileError(
                f"the C compiler rejected the kernels (exit {done.returncode}):\n"
                f"{(done.stderr or done.stdout).strip()}\n--- source ---\n{numbered(source)}")
        return out.read_bytes()
    finally:
        out.unlink(missing_ok=True)


def load(source: str, use_disk_cache: bool = True, units=()) -> ctypes.CDLL:
    """The loaded shared object built from C `source`, through the memory and disk caches;
    `units`, when given, are translation units that together define what `source` does, which
    a build compiles side by side (the cache key is `source`'s either way)."""
    key = cache_key(source)
    lib = _memory_cache.get(key)
    if lib is not None:
        return lib
    path = cache_dir() / "native" / key[:2] / f"{key}.so"
    payload = _read_entry(path) if use_disk_cache else None
    lib = _open(payload, key)[0] if payload is not None else None
    if lib is None:
        payload = _compile(source, key, units)
        lib, error = _open(payload, key)
        if lib is None:
            raise NativeCompileError(
                f"the C compiler built a shared object that does not load: {error}")
        if use_disk_cache:
            _write_entry(path, payload)
    _memory_cache[key] = lib
    return lib


def _open(payload: bytes, key: str):
    """(dlopen of `payload` from a private file, one per key so the loader never reuses a stale
    handle, or None; the loader's error, or "")."""
    path = _work_dir() / f"{key}.so"
    try:
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)
        return ctypes.CDLL(str(path)), ""
    except OSError as e:
        path.unlink(missing_ok=True)
        return None, str(e)


def entry(lib, name: str):
    """The `<name>_run(args, begin, end)` entry point of `lib`."""
    fn = getattr(lib, f"{name}_run")
    fn.restype = None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    return fn


def threads() -> int:
    """Threads a large launch splits over: GPUARR_NATIVE_THREADS when set, else the host
    pool's count (the machine's cores, at most four)."""
    fixed = os.environ.get("GPUARR_NATIVE_THREADS", "").strip()
    if fixed:
        try:
            return max(1, int(fixed))
        except ValueError:
            raise ValueError(f"GPUARR_NATIVE_THREADS must be a whole number of threads, got "
                             f"{fixed!r}; unset it to use the machine's cores") from None
    return host_threads._THREADS


def _submit(workers: int, fn, *args):
    """Run fn(*args) on the launch pool, grown to at least `workers` threads (the calling
    thread runs a launch's first part, so a launch over n threads needs n - 1 of them)."""
    pool = _state.get("pool")
    if pool is None or pool._max_workers < workers:
        old, pool = pool, ThreadPoolExecutor(workers, thread_name_prefix="gpuarr-native",
                                             initializer=float_env.flush_in_this_thread)
        _state["pool"] = pool
        if old is not None:
            old.shutdown(wait=False)
    return pool.submit(fn, *args)


def launch(fn, pointers, items: int, nbytes: int) -> None:
    """Run work items [0, items) of entry point `fn` with the argument pointer array
    `pointers`; launches moving at least PARALLEL_MIN_BYTES split over the thread pool."""
    parts = min(threads(), items // SPLIT_ALIGN) if nbytes >= PARALLEL_MIN_BYTES else 1
    if parts <= 1:   # rendered entry points flush subnormals themselves, as XLA computes
        fn(pointers, 0, items)
        return
    # Part boundaries on multiples of SPLIT_ALIGN items: each part's vector loop then covers
    # the same items whatever the thread count, and only the launch's last items take the
    # scalar remainder (vector and scalar math functions may differ by an ulp).
    bounds = [items * i // parts // SPLIT_ALIGN * SPLIT_ALIGN for i in range(parts)] + [items]
    futures = [_submit(parts - 1, fn, pointers, lo, hi)
               for lo, hi in zip(bounds[1:-1], bounds[2:])]
    fn(pointers, bounds[0], bounds[1])
    for fut in futures:
        fut.result()


def clear_memory_cache() -> None:
    _memory_cache.clear()


def pointers(arrays) -> ctypes.Array:
    """The argument pointer array an entry point takes, for contiguous NumPy `arrays`."""
    return (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])


# ---- running a whole launch plan ---------------------------------------------------------------

# Outputs of at least this many bytes are allocated 64-byte aligned: kernels stream large
# outputs with full-vector non-temporal stores (STREAM_TILES, kernels/dialect_c.h), which need
# the alignment, where NumPy's allocator aligns to 16 bytes (32 mod 64 for large arrays).
ALIGNED_MIN_BYTES = 1 << 20
ALIGNMENT = 64


def empty(shape, dtype) -> np.ndarray:
    """np.empty(shape, dtype), its data 64-byte aligned when it holds ALIGNED_MIN_BYTES or
    more (a view of a slightly larger byte buffer)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize   # math.prod: np.prod costs 2 us per launch
    if nbytes < ALIGNED_MIN_BYTES:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def contiguous(value, dtype=None) -> np.ndarray:
    """`value` as a C-contiguous array of `dtype`, keeping its shape (np.ascontiguousarray
    would make a 0-d array 1-d); no copy when it already is one."""
    array = np.asarray(value, dtype)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def translation_unit(sources, prelude: str = "") -> str:
    """One C source for every kernel of a plan: `prelude` (the headers each kernel's source
    starts with) once, then each distinct kernel text, so the compiler runs once per plan."""
    parts = [prelude]
    for source in dict.fromkeys(sources):
        parts.append(source[len(prelude):] if prelude and source.startswith(prelude) else source)
    return "".join(parts)


# The least kernel text (bytes after the prelude) worth a compiler process of its own: gcc's
# start, the precompiled prelude's load and the separate link cost about 0.03 s of CPU, and
# gcc at -O3 turns 8 KiB of kernels into code in about as long (bench_native_compile.py).
PART_MIN_BYTES = 8 << 10


def translation_units(sources, prelude: str, tail: str = "") -> list:
    """`translation_unit(sources, prelude) + tail` cut into translation units to compile side
    by side, one per core, each at least PART_MIN_BYTES of kernel text: each unit is the
    prelude, a share of the distinct kernel texts (largest first, each to the smallest unit
    so far) and, in the smallest, `tail`. A single unit (an empty list) where that does not
    pay: one kernel text, too little text, one core, or cores that other processes keep busy
    (`host_threads._machine_is_busy`, as for BLAS's threads: the units would only queue)."""
    bodies = [s[len(prelude):] if prelude and s.startswith(prelude) else s
              for s in dict.fromkeys(sources)]
    count = min(len(bodies), host_threads._CPUS, sum(map(len, bodies)) // PART_MIN_BYTES)
    if count < 2 or host_threads._machine_is_busy():
        return []
    units = [[0, []] for _ in range(count)]
    for body in sorted(bodies, key=len, reverse=True):
        unit = min(units, key=lambda u: u[0])
        unit[0] += len(body)
        unit[1].append(body)
    min(units, key=lambda u: u[0])[1].append(tail)
    return [prelude + "".join(parts) for _, parts in units]


class PlanRunner:
    """A LaunchPlan (gpuarr.compiler.plan) built into one shared object, callable on NumPy
    inputs. Building raises NativeCompileError / NativeCompilerNotFoundError; running never
    compiles. A plan of launches and copies also gets a generated entry point running them
    all (backends/native_dispatch.py): `run` then costs one ctypes call."""

    def __init__(self, plan, prelude: str = ""):
        self.plan = plan
        self.info = {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in plan.buffers}
        self.constants = {name: contiguous(value) for name, value in plan.constants}
        self.fed = set(plan.inputs) | set(self.constants)
        launches = [s for s in plan.steps if s.kind == "launch"]
        self.program = None
        self.n_inputs = len(plan.inputs)
        driver = self._program_source(plan) if launches else ""
        texts = [s.source for s in launches]
        self.lib = load(translation_unit(texts, prelude) + driver,
                        units=translation_units(texts, prelude, driver)) if launches else None
        self.steps = []
        for step in plan.steps:
            if step.kind == "launch":
                nbytes = sum(int(np.prod(self.info[a][0])) * self.info[a][1].itemsize
                             for a in step.args)
                self.steps.append(("launch", entry(self.lib, step.name), step.args,
                                   int(step.global_size), nbytes))
            else:
                self.steps.append((step.kind, step))
        if driver:
            self.program = native_dispatch.entry_point(self.lib)
        self.max_launch_bytes = max((s[4] for s in self.steps if s[0] == "launch"), default=0)

    def _program_source(self, plan) -> str:
        """The generated entry point's text, or "" when the plan has host steps, an input of
        unknown dtype, or NumPy's array struct was not found (see native_dispatch)."""
        if any(s.kind not in ("launch", "copy") for s in plan.steps) \
                or any(n not in self.info for n in plan.inputs):
            return ""
        self.lay = native_dispatch.layout_array([self.info[n][1] for n in plan.inputs])
        if self.lay is None:
            return ""
        produced = [n for n in dict.fromkeys(plan.outputs) if n not in self.fed]
        self.out_specs = [self.info[n] for n in produced]
        position = {n: k for k, n in enumerate(produced)}
        inputs = {n: k for k, n in enumerate(plan.inputs)}
        # Each output: the output tuple's array, or a copy of an input or a constant.
        self.out_order = None if list(plan.outputs) == produced else [
            ("out", position[n]) if n in position else
            ("const", n) if n in self.constants else ("in", inputs[n]) for n in plan.outputs]
        fixed = list(self.constants)
        self.fixed = (ctypes.c_void_p * max(1, len(fixed)))(
            *[self.constants[n].ctypes.data for n in fixed])
        steps = [("launch", s.name, s.args, int(s.global_size)) if s.kind == "launch"
                 else ("copy", s.src, s.dst) for s in plan.steps]
        return native_dispatch.program_source(plan.inputs, produced, fixed, steps, self.info)

    def run(self, inputs: tuple):
        """The plan's outputs for the tuple `inputs`: one call of the generated entry point
        when the plan has one, no launch splits over threads and the inputs are C-contiguous
        arrays of the plan's dtypes; else step by step."""
        if self.program is not None and self.max_launch_bytes < PARALLEL_MIN_BYTES \
                and len(inputs) == self.n_inputs:
            outs = tuple([empty(shape, dtype) for shape, dtype in self.out_specs])
            if self.program(id(inputs), id(outs), self.fixed, self.lay) == 0:
                if self.out_order is None:
                    return outs
                return tuple(outs[k] if kind == "out" else
                             np.array(inputs[k] if kind == "in" else self.constants[k], copy=True)
                             for kind, k in self.out_order)
        return tuple(self(list(inputs)))

    def _buffer(self, env: dict, name: str) -> np.ndarray:
        buf = env.get(name)
        if buf is None:
            shape, dtype = self.info[name]
            buf = env[name] = empty(shape, dtype)
        return buf

    def __call__(self, inputs) -> list:
        env = dict(self.constants)
        for name, value in zip(self.plan.inputs, inputs):
            dtype = self.info[name][1] if name in self.info else None
            env[name] = contiguous(value, dtype)
        for step in self.steps:
            kind = step[0]
            if kind == "launch":
                _, fn, args, items, nbytes = step
                launch(fn, pointers([self._buffer(env, a) for a in args]), items, nbytes)
            elif kind == "copy":
                s = step[1]
                env[s.dst] = np.array(env[s.src], copy=True)
            else:
                s = step[1]
                results = s.fn(*[env[a] for a in s.inputs])
                for name, value in zip(s.outputs, results):
                    shape, dtype = self.info[name]
                    env[name] = contiguous(np.asarray(value, dtype).reshape(shape))
        return [np.array(env[n], copy=True) if n in self.fed else env[n]
                for n in self.plan.outputs]
