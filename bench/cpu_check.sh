#!/usr/bin/env bash
# CPU check: the NumPy-backend benchmarks of the autodiff, control-flow and random issues,
# beside JAX on the CPU, on a machine where nothing else runs; one short log per script.
#
#   bash bench/cpu_check.sh                 # from the repository root
#   OUT=/tmp/cpu bash bench/cpu_check.sh    # also keep the full logs in $OUT
#
# Needs NumPy and JAX (jaxlib); gpuarr is taken from this checkout, so nothing is installed.
# JAX is kept on its CPU backend whatever accelerator the machine has.
set -u
cd "$(dirname "$0")/.."
LOGS="${OUT:-$(mktemp -d)}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 JAX_PLATFORMS=cpu GPUARR_PLATFORMS=cpu
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

python - <<'PY'
import os, platform
import jax, numpy
import gpuarr
print("cpus", len(os.sched_getaffinity(0)), platform.processor() or platform.machine(),
      "| numpy", numpy.__version__, "| jax", jax.__version__, "| gpuarr", gpuarr.__version__,
      "on", gpuarr.default_backend())
from gpuarr.backends import host_threads
print("host threads:", host_threads.thread_policy())
PY

for script in bench_autodiff bench_control bench_random; do
  echo "== $script"
  timeout 300 python "bench/$script.py" >"$LOGS/$script.log" 2>&1
  echo "(exit $?)"
  grep -vE '^\s*$|Warning|warn' "$LOGS/$script.log" | tail -n 6
done
