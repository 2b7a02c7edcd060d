#!/usr/bin/env bash
# GPU check: the `gpu`-marked tests, the kernel tests on the cuda platform, and the GPU
# benchmarks, summarised in one short table. Sized for under 8 minutes on one H200.
#
#   bash bench/gpu_check.sh            # from the repository root, on a machine with a GPU
#   OUT=/tmp/gpu bash bench/gpu_check.sh   # also keep the full logs in $OUT
#
# Needs CuPy (cupy-cuda12x or cupy-cuda13x) and NVRTC; JAX with CUDA and PyTorch are optional
# peers (their rows say "n/a" without them). No network access is needed.
set -u
cd "$(dirname "$0")/.."
LOGS="${OUT:-$(mktemp -d)}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
export GPUARR_CACHE_DIR="${GPUARR_CACHE_DIR:-$LOGS/cache}"

summary() {  # "N passed, M skipped, ..." from a pytest log
  grep -Eo '[0-9]+ (passed|failed|skipped|error|errors|xfailed|xpassed)' "$1" | paste -sd, - \
    | sed 's/,/, /g'
}

echo "== device"
python - <<'PY' || { echo "no usable CUDA device: nothing to check"; exit 2; }
import gpuarr
assert gpuarr.default_backend() == "gpu", gpuarr.default_backend()
import cupy
print(gpuarr.devices(), cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
      "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())
PY

echo "== gpu-marked tests"
timeout 150 python -m pytest -q -m gpu tests/test_cuda.py -p no:cacheprovider -o addopts="" \
  -rs >"$LOGS/gpu_tests.log" 2>&1
gpu_rc=$?
tail -n 15 "$LOGS/gpu_tests.log"

echo "== test programs with the cuda platform as default"
GPUARR_PLATFORMS=cuda,cpu timeout 120 python -m pytest -q -x -p no:cacheprovider -o addopts="" \
  tests/test_jit.py tests/test_control_flow.py tests/test_numpy_reductions.py \
  >"$LOGS/suite_on_cuda.log" 2>&1
suite_rc=$?
tail -n 5 "$LOGS/suite_on_cuda.log"

echo "== benchmarks"
timeout 180 python bench/bench_cuda.py 2>&1 | tee "$LOGS/bench.log"
bench_rc=${PIPESTATUS[0]}

echo
echo "| check | result |"
echo "|---|---|"
echo "| gpu-marked tests | $(summary "$LOGS/gpu_tests.log") (rc $gpu_rc) |"
echo "| suite programs on cuda | $(summary "$LOGS/suite_on_cuda.log") (rc $suite_rc) |"
grep -E 'PASS|FAIL' "$LOGS/bench.log" | sed -E 's/ +/ /g; s/^(.*) (PASS|FAIL)$/| \1 | \2 |/'
grep -E 'targets met' "$LOGS/bench.log" | sed -E 's/^/| benchmarks | /; s/$/ |/'
echo "logs: $LOGS"
[ "$gpu_rc" -eq 0 ] && [ "$suite_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
