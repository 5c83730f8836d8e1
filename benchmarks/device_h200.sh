#!/usr/bin/env bash
# The issues' numbers on an H200 (the issues name H100/H200): the sm80 tensor-op GEMM (issue 7), the
# small-M mixed-input GEMM (issue 9), the SIMT SGEMM (issue 6). Usage: bash benchmarks/device_h200.sh
source "$(dirname "$0")/device_env.sh"
echo "== tensorop"
timeout "${TOP_TIMEOUT:-240}" python3 benchmarks/bench_tensorop.py --out "$OUT/tensorop" \
  --parts "${TOP_PARTS:-correctness,fp16,bf16,tf32,skinny}" 2>&1 | tee "$OUT/tensorop.log" | grep -v "^|.*resources" | tail -60
echo "== mixed"
timeout "${MIXED_TIMEOUT:-120}" python3 benchmarks/bench_mixed.py --quick --json "$OUT/mixed.json" 2>&1 | tee "$OUT/mixed.log" | tail -30
echo "== sgemm"
timeout "${SGEMM_TIMEOUT:-150}" python3 benchmarks/bench_sgemm.py --out "$OUT/sgemm" --shapes 4096,8192 \
  --configs "${SGEMM_CONFIGS:-128x256x8_w4x8_t256_b1,128x256x8_w4x8_t256_b1_a3,128x128x8_w4x8_t128_b2_a3}" \
  2>&1 | tee "$OUT/sgemm.log" | tail -25
