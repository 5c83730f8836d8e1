#!/usr/bin/env bash
# Device session 5: the read floor under the decoding GEMM (issue 9), and two-CTA-per-SM tilings of the
# sm80 tensor-op kernel (issue 7). Usage: bash benchmarks/device_session5.sh [stream|tensorop|large|mixed ...]
source "$(dirname "$0")/device_env.sh"
PARTS="${*:-stream tensorop mixed}"
F='lean_loop=True,smem_epilogue=True'
for part in $PARTS; do
  case $part in
  stream)
    echo "== read floor"
    timeout "${STREAM_TIMEOUT:-150}" python3 benchmarks/bench_stream.py --json "$OUT/stream.json" 2>&1 | tee "$OUT/stream.log" | tail -30 ;;
  tensorop)
    echo "== sm80 tensor-op 4096^3"
    timeout "${TENSOROP_TIMEOUT:-240}" python3 benchmarks/bench_tensorop.py --out "$OUT/tensorop" --parts fp16,bf16 --rep-ms 60 \
      --variants "T(256,128,64,4,2,stages=3,$F)" "T(128,128,32,2,2,stages=4,min_blocks=2,$F)" \
      "T(128,128,64,2,2,stages=3,min_blocks=2,$F)" "T(128,128,32,2,2,stages=5,min_blocks=2,$F)" \
      ${TENSOROP_EXTRA:-} 2>&1 | tee "$OUT/tensorop.log" | tail -40 ;;
  large)
    echo "== sm90 mixed GPU tests"
    timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant/test_sm90_mixed.py ${TEST_K:-} 2>&1 | tee "$OUT/sm90_mixed_tests.log" | tail -8
    echo "== large-M mixed"
    timeout "${LARGE_TIMEOUT:-240}" python3 benchmarks/bench_mixed_large.py --ms "${LARGE_MS:-128,1024,4096}" --rings "${RINGS:-4,6}" \
      --json "$OUT/mixed_large.json" 2>&1 | tee "$OUT/mixed_large.log" | tail -30 ;;
  mixed)
    echo "== mixed M=1"
    timeout "${MIXED_TIMEOUT:-120}" python3 benchmarks/bench_mixed.py --sweep --sweep-only --sweep-ms 1 --sweep-bits 4 \
      --sweep-filter "${MIXED_FILTER:-_p4_a}" --json "$OUT/mixed.json" 2>&1 | tee "$OUT/mixed.log" | tail -20 ;;
  esac
done
