#!/usr/bin/env bash
# Device session 16 (issue 8): pingpong consumers in the Hopper GEMM.
# Usage: bash benchmarks/device_session16.sh [sm90_tests|pp_probe|picks ...]
# sm90_tests: tests/sm90/test_gemm_sm90.py on the GPU (the pingpong cases among them); pp_probe: probe_llm.py
# --pingpong (tc.gemm's pick beside the pingpong tilings, GPU time, at SHAPES or the 40 LLM shapes); picks:
# probe_llm.py --picks (tc.gemm's pick at the 40 LLM shapes against cuBLAS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-sm90_tests}; do
  case $part in
  sm90_tests)
    echo "== Hopper GEMM GPU tests"
    timeout 400 python3 -m pytest -q -m gpu tests/sm90/test_gemm_sm90.py > "$OUT/sm90_tests.log" 2>&1
    grep -E "^(FAILED|E  )" "$OUT/sm90_tests.log" | head -20; tail -1 "$OUT/sm90_tests.log" ;;
  pp_probe)
    echo "== pingpong probe"
    timeout "${PROBE_S:-450}" python3 benchmarks/probe_llm.py --pingpong --gpu-only --reps "${REPS:-20}" \
      ${SHAPES:+--shapes "$SHAPES"} 2>&1 | tee "$OUT/pp_probe.log" ;;
  picks)
    echo "== tc.gemm's picks at the 40 LLM shapes"
    timeout "${PROBE_S:-450}" python3 benchmarks/probe_llm.py --picks --gpu-only --reps "${REPS:-30}" 2>&1 | tee "$OUT/picks.log" ;;
  esac
done
