#!/usr/bin/env bash
# Device session 13 (issue 8): stream-K in the Hopper GEMM.
# Usage: bash benchmarks/device_session13.sh [sk_tests|sm90_tests|sk_probe|picks ...]
# sk_tests: tests/sm90/test_stream_k.py on the GPU; sm90_tests: the other Hopper GEMM GPU tests;
# sk_probe: probe_llm.py --streamk (every table tile with and without stream-K, GPU time, at SHAPES or the 40
# LLM shapes); picks: probe_llm.py --picks (tc.gemm's pick at the 40 LLM shapes against cuBLAS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-sk_tests}; do
  case $part in
  sk_tests)
    echo "== stream-K GPU tests"
    gpu_tests sk_tests 400 tests/sm90/test_stream_k.py ;;
  sm90_tests)
    echo "== Hopper GEMM GPU tests"
    gpu_tests sm90_tests 500 tests/sm90/test_gemm_sm90.py ;;
  sk_probe)
    echo "== stream-K probe"
    timeout 500 python3 benchmarks/probe_llm.py --streamk --gpu-only --reps "${REPS:-20}" ${SHAPES:+--shapes "$SHAPES"} \
      2>&1 | tee "$OUT/sk_probe.log" ;;
  picks)
    echo "== tc.gemm's picks at the 40 LLM shapes"
    timeout 500 python3 benchmarks/probe_llm.py --picks --gpu-only --reps "${REPS:-30}" 2>&1 | tee "$OUT/picks.log" ;;
  esac
done
