#!/usr/bin/env bash
# Device session 19 (issue 6): the tuned SGEMM with stage pointers and the k-step fence, in turn and sustained.
# Usage: bash benchmarks/device_session19.sh [probe|sgemm_tests ...]
# probe: probe_sgemm.py on SGEMM_CONFIGS (default: DEFAULT, the old default, two more fenced tilings and DEFAULT
# without the fence) at SHAPES
# (default 4096,8192), ROUNDS rounds in turn, then SUSTAIN seconds of back-to-back calls per contender with the
# clock and power sampled; sgemm_tests: the SGEMM's and the kernel language's GPU tests.
source "$(dirname "$0")/device_env.sh"
DEFAULT_CONFIGS=128x256x8_w4x8_t256_b1_a4_O1_f,128x128x16_w4x8_t256_b2,128x256x8_w4x8_t256_b1_a3_O1_f
DEFAULT_CONFIGS+=,128x128x8_w4x8_t128_b2_a3_O1_f,128x256x8_w4x8_t256_b1_a4_O1
for part in ${*:-probe}; do
  case $part in
  probe)
    echo "== SGEMM tilings in turn"
    timeout "${PROBE_S:-500}" python3 benchmarks/probe_sgemm.py --configs "${SGEMM_CONFIGS:-$DEFAULT_CONFIGS}" \
      --shapes "${SHAPES:-4096,8192}" --rounds "${ROUNDS:-7}" --sustain "${SUSTAIN:-3}" 2>&1 | tee "$OUT/probe.log" ;;
  sgemm_tests)
    echo "== SGEMM GPU tests"
    gpu_tests sgemm_tests 400 tests/gemm/test_sgemm_tuned.py tests/dsl/test_gemm_device.py ;;
  esac
done
