#!/usr/bin/env bash
# Device session 8: the guarded epilogue reads (the sliced-K illegal address) and the register-A
# mixed-input kernel (tilecraft/gemm/sm90_mixed_rs.py). Usage:
#   bash benchmarks/device_session8.sh [tests|rs_tests|rs_bench|mixed_tests ...]
# tests: the GPU sequence that failed after b7c5c85 (plans, sm90, dsl, tensor-op); rs_tests: the
# register-A kernel's GPU tests; rs_bench: bench_mixed_large.py with its tilings ($RS, $MS);
# mixed_tests: every mixed-input GPU test.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-tests rs_tests rs_bench}; do
  case $part in
  tests)
    echo "== GPU tests: plans, sm90, dsl, tensor-op"
    timeout "${TEST_TIMEOUT:-400}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/gemm/test_plans_gpu.py \
      tests/sm90 tests/dsl tests/gemm/test_tensorop.py > "$OUT/gpu_tests.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | tail -15 ;;
  rs_tests)
    echo "== GPU tests: register-A mixed input"
    timeout "${RS_TIMEOUT:-300}" python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/quant/test_sm90_mixed_rs.py \
      > "$OUT/gpu_tests_rs.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_rs.log" | tail -15 ;;
  rs_bench)
    echo "== large-M mixed input: the producer kernel, the register-A kernel, dense"
    timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/bench_mixed_large.py --ms "${MS:-128,1024,4096}" \
      --rs "${RS:-256:6:2,256:6:1,128:8:2}" --json "$OUT/rs_bench.json" 2>&1 | tee "$OUT/rs_bench.log" ;;
  mixed_tests)
    echo "== GPU tests: mixed input"
    timeout "${MIXED_TIMEOUT:-500}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant \
      > "$OUT/gpu_tests_mixed.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_mixed.log" | tail -15 ;;
  esac
done
