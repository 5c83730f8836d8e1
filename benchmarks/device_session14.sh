#!/usr/bin/env bash
# Device session 14 (issue 9, decoding at M = 9..16): the small-M mixed kernel's tiling where the rows of x
# read from L2 outweigh the weights (every CTA reads the whole of its k-range of x: (N / 16 tiles) x M x K x 2
# bytes against N x K / 2 of int4 weights).
# Usage: bash benchmarks/device_session14.sh [variants|decode|pdl_tests ...]
# variants: probe_pdl_timeline.py at MS (default 8,16) beside VARIANTS; decode: bench_decode.py at N = K = 8192;
# pdl_tests: as benchmarks/device_session10.sh.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-variants}; do
  case $part in
  variants)
    echo "== variants"
    timeout 400 python3 benchmarks/probe_pdl_timeline.py --formats "${FORMATS:-W4A16 g128}" --ms "${MS:-8,16}" \
      --variants "${VARIANTS:-}" --modes "${MODES:-plain,pdl 2/16}" \
      --json "$OUT/variants.json" 2>&1 | tee "$OUT/variants.log" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout 300 python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch "${PF:-2}" \
      --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.log" ;;
  pdl_tests)
    OUT="$OUT" bash "$(dirname "$0")/device_session10.sh" pdl_tests ;;
  esac
done
