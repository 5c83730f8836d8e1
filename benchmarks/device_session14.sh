#!/usr/bin/env bash
# Device session 14 (issue 9, decoding at M = 9..16): the small-M mixed kernel's tiling where the rows of x
# read from L2 outweigh the weights (every CTA reads the whole of its k-range of x: (N / 16 tiles) x M x K x 2
# bytes against N x K / 2 of int4 weights).
# Usage: bash benchmarks/device_session14.sh [variants|decode|decode_all|int4_tests|mid_m|pdl_tests ...]
# variants: probe_pdl_timeline.py at MS (default 8,16) beside VARIANTS (device_session12.sh timeline);
# decode / decode_all: bench_decode.py at N = K = 8192 / every Llama-3 shape too (device_session12.sh,
# device_session11.sh); int4_tests: the small-M kernel's GPU tests of the int4 formats (random shapes,
# shared-memory stages); mid_m: probe_mid_m.py (M = 17..63, BITS 4 or 8, MS beside VARIANTS); pdl_tests: as
# benchmarks/device_session10.sh.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-variants}; do
  case $part in
  variants)                                 # session 12's timelines, at M = 8, 16 by default
    MS="${MS:-8,16}" OUT="$OUT" bash "$(dirname "$0")/device_session12.sh" timeline ;;
  decode)
    OUT="$OUT" bash "$(dirname "$0")/device_session12.sh" decode ;;
  decode_all)
    OUT="$OUT" bash "$(dirname "$0")/device_session11.sh" decode_all ;;
  int4_tests)
    echo "== GPU tests: small-M mixed input, int4 formats"
    timeout -s ABRT 280 python3 -X faulthandler -m pytest -m gpu -q -p no:cacheprovider -rs tests/quant/test_mixed.py \
      -k "(random_shapes or async_copy_stages) and (4-None or 4-32 or 4-64 or 4-128)" 2>&1 | tee "$OUT/int4_tests.log" ;;
  mid_m)
    echo "== W4A16 at M = 17..63"
    timeout 300 python3 benchmarks/probe_mid_m.py --ms "${MS:-24,32,48}" --bits "${BITS:-4}" --variants "${VARIANTS:-}" 2>&1 \
      | tee "$OUT/mid_m.log" ;;
  pdl_tests)
    OUT="$OUT" bash "$(dirname "$0")/device_session10.sh" pdl_tests ;;
  esac
done
