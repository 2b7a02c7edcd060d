"""The array API standard's conformance suite (data-apis/array-api-tests, vendored in
../shared/external/array-api-tests) run with identical settings against gpuarr.numpy and
jax.numpy in one run: the pass counts of both, and every test that passes for jax.numpy but
not for gpuarr.numpy (the exit status is 1 when there is one).

Run (about 30 minutes per namespace with 25 examples on two cores):
    python bench/array_api_conformance.py [--max-examples 25] [-k EXPR] [FILES ...]
FILES are paths inside the suite (array_api_tests/test_linalg.py); all of it by default.
GPUARR_ARRAY_API_TESTS names the suite's directory where it is not ../shared/external/.
Long runs go by parts: `--namespace NAME` runs one side only and `--results DIR` adds each
run's outcomes to DIR/NAME.json, so that parts run one after another, or side by side, are
compared as one run (`--namespace none --results DIR` only compares what DIR holds).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = Path(os.environ.get("GPUARR_ARRAY_API_TESTS",
                            ROOT.parent / "shared" / "external" / "array-api-tests"))
NAMESPACES = ("gpuarr.numpy", "jax.numpy")


def run_suite(module: str, suite: Path, max_examples: int, files=(), select=None) -> dict:
    """{test id: "passed" | "failed" | "skipped"} for `module`, from a fresh copy of the suite
    (it writes a Hypothesis database); 64-bit types on, the standard's 2024.12 version."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "array-api-tests"
        shutil.copytree(suite, work, ignore=shutil.ignore_patterns(".hypothesis", "__pycache__"))
        env = dict(os.environ, ARRAY_API_TESTS_MODULE=module, ARRAY_API_TESTS_VERSION="2024.12",
                   JAX_ENABLE_X64="1",
                   PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get(
                       "PYTHONPATH")] if p]))
        report = Path(tmp) / "report.xml"
        cmd = [sys.executable, "-m", "pytest", *(files or ["array_api_tests"]), "-q",
               "-p", "no:cacheprovider", f"--max-examples={max_examples}",
               "--hypothesis-seed=0", "--disable-deadline", "--continue-on-collection-errors",
               "-W", "ignore::UserWarning", f"--junitxml={report}"]
        if select:
            cmd += ["-k", select]
        subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, check=False)
        return _outcomes(report)


def _outcomes(report: Path) -> dict:
    results = {}
    for tc in ET.parse(report).getroot().iter("testcase"):
        name = f"{tc.get('classname')}::{tc.get('name')}"
        kinds = {child.tag for child in tc}
        results[name] = ("failed" if kinds & {"failure", "error"} else
                         "skipped" if "skipped" in kinds else "passed")
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="test files or ids inside the suite")
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("-k", dest="select", default=None, help="pytest -k expression")
    parser.add_argument("--namespace", choices=NAMESPACES + ("none",), default=None,
                        help="run this namespace only (none: run nothing, compare --results)")
    parser.add_argument("--results", type=Path, default=None,
                        help="folder of NAME.json outcomes: each run adds to them, and the "
                             "comparison reads them")
    args = parser.parse_args(argv)
    if not (SUITE / "array_api_tests").is_dir():
        print(f"array-api-tests not found at {SUITE} (set GPUARR_ARRAY_API_TESTS)")
        return 2
    run = NAMESPACES if args.namespace is None else () if args.namespace == "none" \
        else (args.namespace,)
    results = {m: {} for m in NAMESPACES}
    for m in NAMESPACES:
        saved = args.results / f"{m}.json" if args.results else None
        if saved is not None and saved.exists():
            results[m] = json.loads(saved.read_text())
        if m in run:
            results[m].update(run_suite(m, SUITE, args.max_examples, args.files, args.select))
            if saved is not None:
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps(results[m], indent=0, sort_keys=True))
    ours, theirs = (results[m] for m in NAMESPACES)
    for m in NAMESPACES:
        counts = {k: sum(1 for v in results[m].values() if v == k)
                  for k in ("passed", "failed", "skipped")}
        print(f"{m:14s} passed {counts['passed']:5d}  failed {counts['failed']:4d}  "
              f"skipped {counts['skipped']:4d}")
    only_jax = sorted(t for t, v in theirs.items() if v == "passed" and ours.get(t) != "passed")
    only_ours = sorted(t for t, v in ours.items() if v == "passed" and theirs.get(t) != "passed")
    print(f"passing for jax.numpy only: {len(only_jax)}; for gpuarr.numpy only: {len(only_ours)}")
    for t in only_jax:
        print(f"  jax.numpy only: {t}")
    return 1 if only_jax else 0


if __name__ == "__main__":
    sys.exit(main())
