#!/usr/bin/env bash
# Device session 9: split-K for the register-A mixed-input kernel (tc.gemm's pick at every M >= 64).
# Usage: bash benchmarks/device_session9.sh [mixed_tests|bench|small_tilings ...]
# mixed_tests: the register-A kernel's GPU tests and the producer kernel's dispatch / random-shape tests;
# bench: bench_mixed_large.py at M = 64 .. 4096 (what tc.gemm runs); small_tilings: 64-row x tiles
# against the pick at M = 64, 128.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-mixed_tests bench}; do
  case $part in
  mixed_tests)
    echo "== GPU tests: mixed input on Hopper"
    { timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant/test_sm90_mixed_rs.py
      timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant/test_sm90_mixed.py \
        -k "dispatch or random_shapes"; } > "$OUT/gpu_tests_mixed.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_mixed.log" | tail -15 ;;
  bench)
    echo "== large-M mixed input (tc.gemm), dense, cuBLAS"
    timeout 300 python3 benchmarks/bench_mixed_large.py --ms "${MS:-64,128,256,512,1024,4096}" \
      --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" ;;
  small_tilings)
    echo "== 64-row x tiles at small M"
    timeout 200 python3 benchmarks/bench_mixed_large.py --ms 64,128 --rs 64:8:4:2,64:8:4:4,128:8:4:2 \
      --json "$OUT/small.json" 2>&1 | tee "$OUT/small.log" ;;
  esac
done
