"""Where the first call of a jitted program goes on the native platform: the compiler's process
start, the prelude, the optimisation level and the precompiled prelude, for the 200-op function
of bench_native.py's first-call case.

    python bench/bench_native_compile.py [--repeat 3]

Prints the best wall seconds of: the Python side (trace, passes, fusion, rendering); the C
compiler on an empty translation unit (process start, assembler, linker); on the prelude alone,
parsed as text and included precompiled; and on the 200-op program at -O1, -O2 and -O3, as text
and with the precompiled prelude, and without the backend's gcc-only flags (`GCC_FLAGS`). Each
compiler run builds a shared object with the native backend's flags. Beside each wall time, the
best CPU seconds the compiler's processes used (user + system, from the children's resource
usage): on a machine shared with other work the wall time also counts the wait for a core.
Needs only NumPy and a C compiler.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpuarr  # noqa: E402
import gpuarr.numpy as gnp  # noqa: E402
from gpuarr.backends import native  # noqa: E402
from gpuarr.compiler import compile_closed, inline_calls, render  # noqa: E402
from gpuarr.platforms import get_platform  # noqa: E402


def chain_200(x):
    for k in range(200 // 4):
        x = gnp.sin(x) * (1.0 + k * 1e-3) + gnp.cos(x) * 0.5 - 0.25
    return x


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_run(command, repeat) -> str:
    """'<wall> s (<cpu> s CPU)': the best of `repeat` runs of `command`, wall and CPU apart."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return f"{min(walls):.3f} s ({min(cpus):.3f} s CPU)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    x = np.linspace(0, 1, 1024, dtype=np.float32)
    platform = get_platform("native")

    def python_side():
        closed = inline_calls(platform.optimize(gpuarr.make_jaxpr(chain_200)(x)))
        return compile_closed(closed, platform.fusion_options(), dialect="c")
    print(f"Python side (trace, passes, fusion, rendering): {best(python_side, opts.repeat):.3f} s")
    plan = python_side()
    prelude = render.prelude("c")
    source = native.translation_unit([s.source for s in plan.steps if s.kind == "launch"],
                                     prelude)
    tc = native.toolchain()
    base = [f for f in tc["flags"]]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        header = tmp / "prelude.h"
        header.write_text(prelude)
        pch_flags = [f for f in ["-O3"] + base if f != "-shared" and not f.startswith("-l")]
        start = time.perf_counter()
        subprocess.run(tc["command"] + pch_flags + ["-x", "c-header", str(header), "-o",
                                                    f"{header}.gch"], check=True)
        print(f"building the precompiled prelude (once per machine): "
              f"{time.perf_counter() - start:.3f} s")
        body = source[len(prelude):]
        cases = [("empty translation unit", "-O3", "int gpuarr_empty;\n"),
                 ("empty translation unit, no link (-c)", "-c", "int gpuarr_empty;\n"),
                 ("prelude as text", "-O3", prelude),
                 ("prelude precompiled", "-O3", f'#include "{header}"\n')]
        for level in ("-O1", "-O2", "-O3"):
            cases.append((f"200-op program {level}, prelude as text", level, source))
        cases.append(("200-op program -O3, prelude precompiled", "-O3",
                      f'#include "{header}"\n' + body))
        cases.append(("the same with -pipe (no temporary files)", "-pipe",
                      f'#include "{header}"\n' + body))
        if tc.get("gcc"):   # against "-O3, prelude as text" (the precompiled one has them)
            cases.append(("-O3, prelude as text, without GCC_FLAGS", "-O3 default", source))
        print(f"{len(source) - len(prelude)} bytes of kernel text after a {len(prelude)}-byte "
              f"prelude")
        for label, level, text in cases:
            src = tmp / "unit.c"
            src.write_text(text)
            libs = [f for f in base if f.startswith("-l") and level != "-c"]
            flags = ["-O3", "-c"] if level == "-c" else ["-O3", "-pipe"] if level == "-pipe" \
                else ["-O3"] if level == "-O3 default" else [level]
            flags += [f for f in base if not f.startswith("-l") and not (level == "-c" and
                                                                         f == "-shared")]
            if level == "-O3 default":
                flags = [f for f in flags if f not in native.GCC_FLAGS]
            command = tc["command"] + flags + ["-o", str(tmp / "unit.so"), str(src)] + libs
            print(f"  {label:44} {best_run(command, opts.repeat)}", flush=True)
        # The link alone, of the 200-op program's object file, with the linkers and library
        # sets a shared object can be linked with.
        obj = tmp / "unit.o"
        (tmp / "unit.c").write_text(source)
        subprocess.run(tc["command"] + ["-O3", "-c"] + [f for f in base if f != "-shared" and
                                                        not f.startswith("-l")] +
                       ["-o", str(obj), str(tmp / "unit.c")], check=True)
        libs = [f for f in base if f.startswith("-l")]
        for label, extra in (("link (gcc -shared, ld.bfd)", []),
                             ("link, -fuse-ld=gold", ["-fuse-ld=gold"]),
                             ("link, -nostartfiles", ["-nostartfiles"]),
                             ("link, -nostdlib (libraries named)", ["-nostdlib"]),
                             ("link, -nostdlib, ld.gold", ["-nostdlib", "-fuse-ld=gold"])):
            more = ["-lm", "-lc"] if "-nostdlib" in extra else []
            command = tc["command"] + ["-shared"] + extra + ["-o", str(tmp / "unit.so"),
                                                             str(obj)] + libs + more

            try:
                print(f"  {label:44} {best_run(command, opts.repeat)}", flush=True)
            except subprocess.CalledProcessError as e:
                print(f"  {label:44} failed: {e.stderr.decode().strip()[:80]}")


if __name__ == "__main__":
    main()
