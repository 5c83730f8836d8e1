#!/usr/bin/env bash
# Device session 4 (issues 6 and 9): the mixed-input GPU tests, the async_copy sweep of the small-M
# mixed-input GEMM, and the cp.async SGEMM tilings. Usage: bash benchmarks/device_session4.sh
source "$(dirname "$0")/device_env.sh"
echo "== GPU tests (mixed input)"
timeout "${TEST_TIMEOUT:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant/test_mixed.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
echo "== mixed sweep"
timeout "${MIXED_TIMEOUT:-200}" python3 benchmarks/bench_mixed.py --sweep --sweep-only --sweep-ms 1,4,16 \
  --sweep-filter "${MIXED_FILTER:-_a}" --json "$OUT/mixed.json" 2>&1 | tee "$OUT/mixed.log" | tail -60
echo "== sgemm"
timeout "${SGEMM_TIMEOUT:-200}" python3 benchmarks/bench_sgemm.py --out "$OUT/sgemm" --shapes 4096,8192 \
  --configs "${SGEMM_CONFIGS:-128x256x8_w4x8_t256_b1,128x256x8_w4x8_t256_b1_a3,128x256x16_w4x8_t256_b1_a3,128x128x8_w4x8_t128_b2,128x128x8_w4x8_t128_b2_a3}" \
  2>&1 | tee "$OUT/sgemm.log" | tail -40
