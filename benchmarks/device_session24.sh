#!/usr/bin/env bash
# Device session 24 (issue 9): the small-M mixed kernel with chunks shorter than a group, and (branch
# offset-mma, run 1 only: VARIANTS=offset_mma=0 there) with the offset MMA.
# Usage: bash benchmarks/device_session24.sh [tests|variants|decode ...]
# tests: the small-M kernel's GPU tests (TESTS_K selects; every format); variants: probe_pdl_timeline.py,
# W4A16 g128 bf16 at MS beside VARIANTS ('chunk=64,stages=4;warps=4,tiles=2', overrides of the pick), PDL
# stream; decode: bench_decode.py (N = K = 8192, M = 1..16, W4 and W8 against cuBLAS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-variants}; do
  case $part in
  tests)
    echo "== GPU tests: small-M mixed input"
    gpu_tests mixed_tests "${TESTS_S:-280}" tests/quant/test_mixed.py -k "${TESTS_K:-gpu}" ;;
  variants)
    echo "== variants, PDL stream"
    timeout "${VARIANTS_S:-300}" python3 benchmarks/probe_pdl_timeline.py --formats "${FORMATS:-W4A16 g128}" \
      --ms "${MS:-1,8,16}" --variants "${VARIANTS:-chunk=64,stages=4}" --modes "pdl 2/16" \
      --json "$OUT/variants.json" 2>&1 | grep -v "^$" | tee -a "$OUT/variants.md" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout "${DECODE_S:-240}" python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch 2 \
      --json "$OUT/decode.json" 2>&1 | tee -a "$OUT/decode.md" ;;
  esac
done
