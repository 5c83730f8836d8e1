#!/usr/bin/env bash
# One device session: install the checkout, run the GPU tests, the runtime benchmark and the anchors.
# Usage on the GPU machine, from the repository root:  bash benchmarks/device_run.sh [anchor args...]
# Logs go to $OUT (or ./results when OUT is unset).
set -uo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export TILECRAFT_CACHE_DIR="$OUT/../tc-cache-$$"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, cuda.core; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda.core', cuda.core.__version__)" | tee -a "$OUT/gpu.txt"
echo "== GPU tests (the whole suite in parallel shards: benchmarks/gpu_suite.sh)"
SUITE_S="${SUITE_S:-540}" bash benchmarks/gpu_suite.sh 2>&1 | tail -25
echo "== runtime numbers"
python3 benchmarks/bench_runtime.py 2>&1 | tee "$OUT/runtime.log" | tail -20
echo "== doctor"
tilecraft doctor 2>&1 | tee "$OUT/doctor.log" | tail -25
echo "== gemm_device example (seed 003 port)"
timeout 120 python3 examples/gemm_device.py 2>&1 | tee "$OUT/gemm_device.log" | tail -5
echo "== anchors"
timeout "${ANCHOR_TIMEOUT:-330}" python3 benchmarks/bench_anchor.py --out "$OUT/anchor" "$@" 2>&1 | tee "$OUT/anchor.log" | tail -70
