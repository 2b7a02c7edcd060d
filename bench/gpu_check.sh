#!/usr/bin/env bash
# GPU check: the `gpu`-marked tests, test programs and the CuPy stand-in's test subset with the
# cuda platform as default, and the GPU benchmarks, summarised in one short table. Every step
# runs whatever the others did; the table gives each step's passed/failed/error/skipped counts
# and exit code, and the script exits 1 when any step failed. Each step has a time limit (12
# minutes at most in all).
#
#   bash bench/gpu_check.sh            # from the repository root, on a machine with a GPU
#   OUT=/tmp/gpu bash bench/gpu_check.sh   # also keep the full logs in $OUT
#
# Needs CuPy (cupy-cuda12x or cupy-cuda13x) and NVRTC; JAX with CUDA and PyTorch are optional
# peers (their rows say "n/a" without them). No network access is needed.
set -u
cd "$(dirname "$0")/.." || exit 1
LOGS="${OUT:-$(mktemp -d)}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
export GPUARR_CACHE_DIR="${GPUARR_CACHE_DIR:-$LOGS/cache}"
# The steps below run on the real cuda platform, never on the stand-in.
unset GPUARR_CUDA_STANDIN

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

verdict() {  # verdict RC: the result column for an exit code
  case "$1" in
    0) echo pass ;;
    5) echo "FAIL (no tests ran)" ;;
    124) echo "FAIL (timed out)" ;;
    *) echo FAIL ;;
  esac
}

pytest_row() {  # pytest_row NAME LOG RC
  [ "$3" -eq 0 ] || FAILED=1
  ROWS+=("| $1 | $(count passed "$2") | $(count failed "$2") | $(count 'errors?' "$2") | $(count skipped "$2") | $3 | $(verdict "$3") |")
}

echo "== device"
python - >"$LOGS/device.log" 2>&1 <<'PY'
import gpuarr
assert gpuarr.default_backend() == "gpu", gpuarr.default_backend()
import cupy
print(gpuarr.devices(), cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
      "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "CuPy", cupy.__version__)
PY
device_rc=$?
tail -n 5 "$LOGS/device.log"
[ "$device_rc" -eq 0 ] || { echo "no usable CUDA device: the steps below run but check little"; FAILED=1; }
ROWS+=("| cuda device | - | - | - | - | $device_rc | $(verdict "$device_rc") |")

echo "== gpu-marked tests"
timeout 150 python -m pytest -q -m gpu tests/test_cuda.py -p no:cacheprovider -o addopts="" \
  -rs >"$LOGS/gpu_tests.log" 2>&1
rc=$?
tail -n 15 "$LOGS/gpu_tests.log"
pytest_row "gpu-marked tests" "$LOGS/gpu_tests.log" "$rc"

echo "== test programs with the cuda platform as default"
GPUARR_PLATFORMS=cuda,cpu timeout 120 python -m pytest -q -p no:cacheprovider -o addopts="" \
  tests/test_jit.py tests/test_control_flow.py tests/test_numpy_reductions.py \
  >"$LOGS/suite_on_cuda.log" 2>&1
rc=$?
tail -n 5 "$LOGS/suite_on_cuda.log"
pytest_row "suite programs on cuda" "$LOGS/suite_on_cuda.log" "$rc"

echo "== the stand-in subset on the real cuda platform"
if [ -f tests/cuda_standin_subset.txt ]; then
  # The file lists test paths, split on whitespace as the CPU job's stand-in step does.
  # shellcheck disable=SC2046
  GPUARR_PLATFORMS=cuda,cpu timeout 240 python -m pytest -q -p no:cacheprovider -o addopts="" \
    $(cat tests/cuda_standin_subset.txt) >"$LOGS/standin_subset_on_cuda.log" 2>&1
  rc=$?
  tail -n 5 "$LOGS/standin_subset_on_cuda.log"
  pytest_row "stand-in subset on cuda" "$LOGS/standin_subset_on_cuda.log" "$rc"
else
  echo "tests/cuda_standin_subset.txt is missing"
  ROWS+=("| stand-in subset on cuda | - | - | - | - | - | missing |")
fi

echo "== benchmarks"
timeout 180 python bench/bench_cuda.py 2>&1 | tee "$LOGS/bench.log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || FAILED=1
bench_pass=$(grep -cE ' PASS$' "$LOGS/bench.log")
bench_fail=$(grep -cE ' FAIL$' "$LOGS/bench.log")
ROWS+=("| benchmark targets | $bench_pass | $bench_fail | - | - | $rc | $(verdict "$rc") |")

echo
echo "| check | passed | failed | errors | skipped | rc | result |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "| benchmark | result |"
echo "|---|---|"
grep -E ' (PASS|FAIL)$' "$LOGS/bench.log" | sed -E 's/ +/ /g; s/^(.*) (PASS|FAIL)$/| \1 | \2 |/'
grep -E 'targets met' "$LOGS/bench.log" | sed -E 's/^/| all | /; s/$/ |/'
echo "logs: $LOGS"
exit "$FAILED"
