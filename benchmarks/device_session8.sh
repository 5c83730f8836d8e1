#!/usr/bin/env bash
# Device session 8: the guarded epilogue reads (the sliced-K illegal address) and the register-A
# mixed-input kernel (tilecraft/gemm/sm90_mixed_rs.py). Usage:
#   bash benchmarks/device_session8.sh [tests|rs_tests|rs_bench|mixed_tests ...]
# tests: the GPU sequence that failed after b7c5c85 (plans, sm90, dsl, tensor-op) and mixed_tests
# (every mixed-input GPU test), both device_session7.sh's parts; rs_tests: the register-A kernel's GPU
# tests; rs_bench: bench_mixed_large.py with its tilings ($RS, $MS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-tests rs_tests rs_bench}; do
  case $part in
  tests|mixed_tests)                                # session 7's parts, unchanged
    bash "$(dirname "$0")/device_session7.sh" "$part" ;;
  rs_tests)
    echo "== GPU tests: register-A mixed input"
    timeout "${RS_TIMEOUT:-300}" python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/quant/test_sm90_mixed_rs.py \
      > "$OUT/gpu_tests_rs.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_rs.log" | tail -15 ;;
  rs_bench)
    echo "== large-M mixed input: the producer kernel, the register-A kernel, dense"
    timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/bench_mixed_large.py --ms "${MS:-128,1024,4096}" \
      --rs "${RS:-256:6:2,256:6:1,128:8:2}" --json "$OUT/rs_bench.json" 2>&1 | tee "$OUT/rs_bench.log" ;;
  esac
done
