"""Run a library's own test suite under JAX and under gpuarr (the one-line switch,
`-p gpuarr.as_jax`), one test file at a time, and compare: how many pass, fail and skip in each
run, and which tests pass under JAX but not under gpuarr (grouped by file, with the first line
of each failure). docs/ecosystem.md reports the figures.

    python tests/ecosystem/own_suites.py optax            # optax 0.2.8's tests (its sdist)
    python tests/ecosystem/own_suites.py chex             # the tests chex's wheel ships
    python tests/ecosystem/own_suites.py optax --only gpuarr -k _src/alias_test.py

optax's tests come with its source distribution (`pip download optax==0.2.8 --no-binary :all:`),
unpacked under --work; chex's are in the installed package. Results (JUnit XML per file and run)
stay in --work, so a run can be resumed file by file; the tests run on one process each, the
smallest files first. `--only jax` and `--only gpuarr` may run side by side."""
from __future__ import annotations

import argparse
import collections
import importlib.metadata
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"jax": [], "gpuarr": ["-p", "gpuarr.as_jax"]}


def suite_root(name: str, work: Path) -> tuple[Path, Path]:
    """(the folder to run pytest in, the folder holding the tests) for the library `name`."""
    version = importlib.metadata.version(name)
    if name == "chex":
        import chex
        pkg = Path(chex.__file__).parent
        return pkg.parent, pkg
    src = work / f"{name}-{version}"
    if not src.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-binary",
                        ":all:", "--no-deps", "-d", str(work)], check=True)
        with tarfile.open(work / f"{name}-{version}.tar.gz") as tar:
            tar.extractall(work, filter="data")
    return src, src / name


def run_file(test_file: Path, cwd: Path, run: str, out: Path, timeout: int) -> float:
    env = dict(os.environ)
    env.pop("GPUARR_AS_JAX", None)
    if run == "gpuarr":
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *RUNS[run],
           str(test_file), f"--junitxml={out}", "-o", "junit_family=xunit2"]
    start = time.perf_counter()
    try:
        subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {run}: {test_file.name} ran past {timeout} s", file=sys.stderr)
    return time.perf_counter() - start


def outcomes(xml: Path) -> dict:
    """test id -> (outcome, first line of its message)."""
    result = {}
    if not xml.exists():
        return result
    for case in ET.parse(xml).iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = (node.get("message") or "").strip().splitlines()[:1]
                message = message[0][:200] if message else ""
                break
        if result.get(test_id, ("passed",))[0] == "passed":  # a failing teardown counts
            result[test_id] = (outcome, message)
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=["optax", "chex"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpuarr-own-suites"))
    parser.add_argument("--only", choices=sorted(RUNS), help="run only this one")
    parser.add_argument("-k", dest="select", help="only the test files whose path contains this")
    parser.add_argument("--skip", help="leave out the test files whose path contains this")
    parser.add_argument("--largest-first", action="store_true",
                        help="the largest files first (a second run beside one going smallest first)")
    parser.add_argument("--rerun", action="store_true", help="run files that have results again")
    parser.add_argument("--summary", action="store_true", help="run nothing: compare the results kept")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per test file")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    cwd, tests = suite_root(args.library, args.work)
    # Smallest files first: a run stopped early has covered the most files.
    files = sorted((p for p in tests.rglob("*_test.py") if (not args.select or args.select in str(p))
                    and not (args.skip and args.skip in str(p))),
                   key=lambda p: (p.stat().st_size, p), reverse=args.largest_first)
    results = {run: {} for run in RUNS}
    for test_file in files:
        rel = test_file.relative_to(tests)
        for run in RUNS:
            xml = args.work / "results" / args.library / run / (str(rel).replace("/", "__") + ".xml")
            xml.parent.mkdir(parents=True, exist_ok=True)
            if not args.summary and args.only in (None, run) and (args.rerun or not xml.exists()):
                seconds = run_file(test_file, cwd, run, xml, args.timeout)
                print(f"{run:7s} {rel}: {seconds:.0f} s", file=sys.stderr, flush=True)
            results[run].update({f"{rel}::{k}": v for k, v in outcomes(xml).items()})
    ran = {t.partition("::")[0] for t in results["jax"]} & {t.partition("::")[0] for t in results["gpuarr"]}
    print(f"{len(ran)} of {len(files)} test files have results from both runs")
    for run in RUNS:
        counts = collections.Counter(o for t, (o, _) in results[run].items() if t.partition("::")[0] in ran)
        print(f"{run:7s} passed {counts['passed']:5d}  failed {counts['failed']:4d}  "
              f"skipped {counts['skipped']:4d}")
    differ = {t: results["gpuarr"].get(t, ("missing", "")) for t, (o, _) in results["jax"].items()
              if o == "passed" and t.partition("::")[0] in ran
              and results["gpuarr"].get(t, ("missing",))[0] != "passed"}
    print(f"\n{len(differ)} tests pass under JAX but not under gpuarr:")
    for test_id, (outcome, message) in sorted(differ.items()):
        print(f"  {outcome:7s} {test_id}  {message}")


if __name__ == "__main__":
    main()
