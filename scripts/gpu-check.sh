#!/usr/bin/env bash
# The one prepared GPU check: every `gpu` test, then the GPU benchmarks, one summary.
#
#   scripts/gpu-check.sh WHEELS_DIR [OUT_DIR]
#
# For a one-GPU machine without internet whose python3 already holds PyTorch (the image
# README's "GPU" section names). WHEELS_DIR holds the platform's other dependencies,
# made here by scripts/gpu-wheels.sh; they are installed into $DET_GPU_SITE (default
# /tmp/det-gpu-site), never into the image's environment. Logs, the JUnit report and
# the benchmark's JSON go to OUT_DIR (default: $OUT if set, else a new temporary
# directory). Exits non-zero if the install, a test or a benchmark failed. Budget:
# under 8 minutes on an H100 (tests ~3, throughput ~2, packing what it takes).
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=${1:?usage: scripts/gpu-check.sh WHEELS_DIR [OUT_DIR]}
OUT_DIR=${2:-${OUT:-$(mktemp -d)}}
PYTHON=${PYTHON:-python3}
SITE=${DET_GPU_SITE:-/tmp/det-gpu-site}
mkdir -p "$OUT_DIR"
START=$(date +%s)
SUMMARY=()
stage() { echo; echo "== [$(( $(date +%s) - START )) s] $*"; }
record() {  # name, exit status, seconds
    local verdict=passed
    [ "$2" -eq 0 ] || verdict="FAILED (exit $2)"
    SUMMARY+=("| $1 | $verdict | $3 s |")
}

stage "installing $(ls "$WHEELS"/*.whl 2>/dev/null | wc -l) wheels from $WHEELS into $SITE"
if ! "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" "$WHEELS"/*.whl; then
    echo "gpu-check: installing the wheels of $WHEELS failed (make them with scripts/gpu-wheels.sh)"
    exit 1
fi
export PYTHONPATH="$PWD/src:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi -L || true
"$PYTHON" - <<'PY' || exit 1
import sys, torch, determined
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"CUDA available: {torch.cuda.is_available()}, determined from {determined.__file__}")
if torch.cuda.is_available():
    print("GPU:", torch.cuda.get_device_name(0), f"({torch.cuda.device_count()} visible)")
PY

# The GPU tests share the GPU well (small models), so files run in parallel where
# pytest-xdist imports; the packing tests (several trials per GPU, GPU metrics) run
# after them, alone on the GPU.
PARALLEL=()
if "$PYTHON" -c "import xdist" 2>/dev/null; then PARALLEL=(-n 4 --dist loadfile); fi
PACKING=(tests/gpu/test_gpu_packing*.py)
[ -e "${PACKING[0]}" ] || PACKING=()
run_tests() {  # name, log, pytest arguments...
    local name=$1 log=$2
    shift 2
    stage "GPU tests: $name"
    local t0=$(date +%s)
    "$PYTHON" -m pytest -m gpu -q -p no:cacheprovider -rfEs --timeout 600 "$@" 2>&1 \
        | tee "$OUT_DIR/$log"
    local rc=${PIPESTATUS[0]}
    record "$name ($(tail -1 "$OUT_DIR/$log" | tr -d '=' | xargs))" "$rc" $(( $(date +%s) - t0 ))
}
run_tests "pytest -m gpu tests/gpu" gpu-tests.log tests/gpu --ignore-glob='tests/gpu/test_gpu_packing*' \
    "${PARALLEL[@]}" --junitxml "$OUT_DIR/gpu-tests.xml"
if [ ${#PACKING[@]} -gt 0 ]; then
    run_tests "pytest -m gpu ${PACKING[*]}" gpu-packing-tests.log "${PACKING[@]}" \
        --junitxml "$OUT_DIR/gpu-packing-tests.xml"
fi

stage "benchmark: benchmarks/gpu/throughput.py"
t0=$(date +%s)
"$PYTHON" benchmarks/gpu/throughput.py --json "$OUT_DIR/throughput.json" 2>&1 \
    | tee "$OUT_DIR/throughput.log"
record "benchmarks/gpu/throughput.py" "${PIPESTATUS[0]}" $(( $(date +%s) - t0 ))

if [ -f benchmarks/gpu/packing.py ]; then
    stage "benchmark: benchmarks/gpu/packing.py"
    t0=$(date +%s)
    "$PYTHON" benchmarks/gpu/packing.py 2>&1 | tee "$OUT_DIR/packing.log"
    record "benchmarks/gpu/packing.py" "${PIPESTATUS[0]}" $(( $(date +%s) - t0 ))
fi

stage "summary (logs in $OUT_DIR)"
echo "| step | result | time |"
echo "|---|---|---|"
printf '%s\n' "${SUMMARY[@]}"
echo "| total | | $(( $(date +%s) - START )) s |"
echo
grep -E '^(GPU throughput|\|)' "$OUT_DIR/throughput.log" 2>/dev/null || true
if [ -f "$OUT_DIR/packing.log" ]; then echo; tail -30 "$OUT_DIR/packing.log"; fi
for line in "${SUMMARY[@]}"; do
    case "$line" in *FAILED*) exit 1 ;; esac
done
exit 0
