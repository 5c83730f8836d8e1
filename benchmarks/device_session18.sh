#!/usr/bin/env bash
# Device session 18 (issue 6): the tuned SGEMM at ptxas -O1 with serpentine FFMA runs.
# Usage: bash benchmarks/device_session18.sh [sgemm|probe|sgemm_tests ...]
# sgemm: bench_sgemm.py on SGEMM_CONFIGS (default: run 10's tilings: the default, the best -O1 ones, the
# best -O3 8x16 one, the old default) at SHAPES
# (default 4096,8192); probe: probe_sgemm.py on the same, ROUNDS rounds in turn; sgemm_tests: the SGEMM's and the kernel language's GPU tests.
source "$(dirname "$0")/device_env.sh"
DEFAULT_CONFIGS=128x128x16_w4x8_t256_b2,128x256x8_w4x8_t256_b1_a4_O1,128x128x8_w8x4_t128_b2_a3_O1
DEFAULT_CONFIGS+=,128x128x8_w4x8_t128_b2_a3,128x128x8_w4x8_t256_b2
for part in ${*:-sgemm}; do
  case $part in
  sgemm)
    echo "== SGEMM vs cuBLAS"
    timeout "${SGEMM_S:-400}" python3 benchmarks/bench_sgemm.py --out "$OUT/sgemm" --configs "${SGEMM_CONFIGS:-$DEFAULT_CONFIGS}" \
      --shapes "${SHAPES:-4096,8192}" > "$OUT/sgemm.log" 2>&1
    grep -E "tc_|cublas|best at|correctness|FAILED" "$OUT/sgemm.log" | tail -40 ;;
  probe)
    echo "== SGEMM tilings in turn"
    timeout "${PROBE_S:-400}" python3 benchmarks/probe_sgemm.py --configs "${SGEMM_CONFIGS:-$DEFAULT_CONFIGS}" \
      --shapes "${SHAPES:-4096,8192}" --rounds "${ROUNDS:-3}" 2>&1 | tee "$OUT/probe.log" ;;
  sgemm_tests)
    echo "== SGEMM GPU tests"
    gpu_tests sgemm_tests 400 tests/gemm/test_sgemm_tuned.py tests/dsl/test_gemm_device.py ;;
  esac
done
