#!/usr/bin/env bash
# The CUDA image's test run (its default command): the suite without the `gpu`-marked tests on
# the cpu platform, in parallel as CPU CI runs it, then the `gpu`-marked tests with the cuda
# platform first, in one process (each process would take its own share of device memory);
# both run whatever the other's result, and one table summarises them.
#
#   bash docker/run_tests.sh                 # from the repository root (the image's WORKDIR)
#   bash docker/run_tests.sh -k softmax      # extra pytest arguments go to both runs
#
# GPUARR_REQUIRE_CUDA=1 makes a missing CUDA device a failure (CI sets it); otherwise the
# `gpu`-marked tests skip with the reason. PYTEST_WORKERS sets the cpu run's worker count
# (default auto). Exits non-zero when any step failed.
set -u
cd "$(dirname "$0")/.." || exit 1
LOGS="${OUT:-$(mktemp -d)}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1

ROWS=()
FAILED=0

count() {  # count WORD LOG: the number before WORD in pytest's final summary line, else "-"
  local line n total
  line=$(grep -E '[0-9]+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed)|no tests ran' "$2" \
    | grep -E ' in [0-9.]+s' | tail -n 1)
  [ -n "$line" ] || { echo "-"; return; }
  total=0
  while read -r n; do total=$((total + n)); done < <(grep -Eo "[0-9]+ $1" <<<"$line" | grep -Eo '^[0-9]+')
  echo "$total"
}

row() {  # row NAME LOG RC: one line of the summary table from a pytest log and exit code
  local result
  case "$3" in
    0) result=pass ;;
    5) result="FAIL (no tests ran)" ;;
    124) result="FAIL (timed out)" ;;
    *) result=FAIL ;;
  esac
  [ "$3" -eq 0 ] || FAILED=1
  ROWS+=("| $1 | $(count passed "$2") | $(count failed "$2") | $(count 'errors?' "$2") | $(count skipped "$2") | $3 | $result |")
}

echo "== cuda device"
python - >"$LOGS/device.log" 2>&1 <<'PY'
from gpuarr import platforms
try:
    platforms.get_platform("cuda")
except RuntimeError as e:
    print("no usable CUDA device:", e)
    raise SystemExit(1)
import cupy
print(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
      "- CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "- CuPy", cupy.__version__)
PY
device_rc=$?
cat "$LOGS/device.log"
if [ "$device_rc" -eq 0 ]; then
  device_result=pass
elif [ "${GPUARR_REQUIRE_CUDA:-0}" = 1 ]; then
  device_result="FAIL (GPUARR_REQUIRE_CUDA=1)"
  FAILED=1
else
  device_result="none (gpu tests skip)"
fi
ROWS+=("| cuda device | - | - | - | - | $device_rc | $device_result |")

echo "== tests not marked gpu, cpu platform"
# JAX (installed with CUDA here, as the tests' reference) runs on the cpu too, and neither it
# nor gpuarr preallocates device memory in the workers of this run.
GPUARR_PLATFORMS=cpu JAX_PLATFORMS=cpu GPUARR_PREALLOCATE=false XLA_PYTHON_CLIENT_PREALLOCATE=false \
  python -m pytest -n "${PYTEST_WORKERS:-auto}" -m "not gpu" "$@" 2>&1 | tee "$LOGS/cpu_suite.log"
row "tests not marked gpu (cpu platform)" "$LOGS/cpu_suite.log" "${PIPESTATUS[0]}"

echo "== gpu-marked tests, cuda platform"
GPUARR_PLATFORMS=cuda,cpu python -m pytest -m gpu -rs "$@" 2>&1 | tee "$LOGS/gpu_tests.log"
row "gpu-marked tests (cuda platform)" "$LOGS/gpu_tests.log" "${PIPESTATUS[0]}"

echo
echo "| step | passed | failed | errors | skipped | rc | result |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo "logs: $LOGS"
exit "$FAILED"
