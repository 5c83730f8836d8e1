#!/usr/bin/env bash
# Device session 17 (issues 8, 9): per-channel scales on the register-A kernel's accumulators; dense tilings.
# Usage: bash benchmarks/device_session17.sh [rs_tests|large|probe ...]
# rs_tests: the register-A kernel's GPU tests and tc.gemm's mixed-input dispatch; large: bench_mixed_large.py
# at MS (default 1024,4096), ROUNDS rounds in turn, RS extra tilings; probe: probe_llm.py --configs "$CONFIGS"
# at SHAPES, GPU time, ROUNDS rounds in turn.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-rs_tests}; do
  case $part in
  rs_tests)
    echo "== register-A mixed-input GPU tests"
    gpu_tests rs_tests 500 tests/quant/test_sm90_mixed_rs.py tests/quant/test_sm90_mixed.py \
      -k "sm90_mixed_rs or dispatches or large_square" ;;
  large)
    echo "== mixed-input GEMM at large M"
    timeout "${LARGE_S:-400}" python3 benchmarks/bench_mixed_large.py --ms "${MS:-1024,4096}" --rounds "${ROUNDS:-3}" \
      ${RS:+--rs "$RS"} --json "$OUT/large.json" 2>&1 | tee "$OUT/large.log" ;;
  probe)
    echo "== dense tilings"
    timeout "${PROBE_S:-450}" python3 benchmarks/probe_llm.py --gpu-only --reps "${REPS:-20}" --rounds "${ROUNDS:-3}" \
      --configs "$CONFIGS" ${SHAPES:+--shapes "$SHAPES"} 2>&1 | tee "$OUT/probe.log" ;;
  esac
done
