#!/usr/bin/env bash
# Device session 7: tc.gemm's per-signature launch plans (host time) and their GPU checks. Usage:
#   bash benchmarks/device_session7.sh [host|tests|mixed_tests|llm ...]
# host: host_overhead.py (µs per call against torch, cProfile); tests: the plan tests, sm90, dsl and
# tensor-op GPU tests; mixed_tests: the mixed-input GPU tests; llm: probe_llm.py ($LLM_ARGS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-host tests}; do
  case $part in
  host)
    echo "== host time per call"
    timeout "${HOST_TIMEOUT:-300}" python3 benchmarks/host_overhead.py --profile > "$OUT/host.log" 2>&1
    head -10 "$OUT/host.log"; grep -A24 "cProfile" "$OUT/host.log" | grep -v "^$" | head -100 ;;
  tests)
    echo "== GPU tests: plans, sm90, dsl, tensor-op"
    timeout "${TEST_TIMEOUT:-400}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/gemm/test_plans_gpu.py \
      tests/sm90 tests/dsl tests/gemm/test_tensorop.py > "$OUT/gpu_tests.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests.log" | tail -15 ;;
  mixed_tests)
    echo "== GPU tests: mixed input"
    timeout "${MIXED_TIMEOUT:-500}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant \
      > "$OUT/gpu_tests_mixed.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_mixed.log" | tail -15 ;;
  llm)
    echo "== LLM shapes: candidates against cuBLAS"
    timeout "${LLM_TIMEOUT:-400}" python3 benchmarks/probe_llm.py ${LLM_ARGS:-} 2>&1 | tee "$OUT/probe_llm.log" ;;
  esac
done
