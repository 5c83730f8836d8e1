#!/usr/bin/env bash
# Device session 23 (issue 8's fp8 point): tc.gemm on e4m3 against torch._scaled_mm, with and without cuBLASLt's
# fast accumulation.
# Usage: bash benchmarks/device_session23.sh [fp8_tests|fp8|kernels ...]
# fp8_tests: the Hopper GEMM's fp8 GPU tests (FP8_K selects), with the relative errors they print;
# fp8: probe_fp8.py at SHAPES with CONFIGS (';'-separated S(...)), ROUNDS rounds in turn;
# kernels: the cuBLASLt kernels torch._scaled_mm runs (by default and with fast accumulation) at SHAPES.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-fp8}; do
  case $part in
  fp8_tests)
    echo "== fp8 GPU tests"
    gpu_tests fp8_tests "${TESTS_S:-300}" -s tests/sm90/test_gemm_sm90.py -k "${FP8_K:-fp8}"
    grep -oE "(fp8 float8.*|sm90_[^ ]+ [0-9]+x.*)" "$OUT/fp8_tests.log" ;;
  fp8)
    echo "== fp8 e4m3, bf16 out"
    timeout "${FP8_S:-400}" python3 benchmarks/probe_fp8.py --rounds "${ROUNDS:-3}" \
      ${SHAPES:+--shapes "$SHAPES"} ${CONFIGS:+--configs "$CONFIGS"} 2>&1 | tee -a "$OUT/fp8.md" ;;
  kernels)
    echo "== cuBLASLt's fp8 kernels"
    timeout 120 python3 benchmarks/cublas_kernels.py --dtype float8_e4m3fn \
      --shapes "${SHAPES:-4096x4096x4096,8192x8192x8192}" 2>&1 | tee -a "$OUT/kernels.md" ;;
  esac
done
