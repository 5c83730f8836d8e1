#!/usr/bin/env bash
# Device session 11 (issue 9, decoding): programmatic dependent launches with an occupancy cap.
# Usage: bash benchmarks/device_session11.sh [timeline|decode|decode_all|pdl_tests ...]
# timeline: per-CTA timelines of the small-M mixed kernel launched back to back (plain, PDL with and without
# the cap; probe_pdl_timeline.py); decode / decode_all: bench_decode.py at N = K = 8192 / every Llama-3 shape;
# pdl_tests: the small-M kernel's and the runtime's GPU tests (as benchmarks/device_session10.sh pdl_tests).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-timeline}; do
  case $part in
  timeline)
    echo "== PDL timelines"
    { timeout 200 python3 benchmarks/probe_pdl_timeline.py --formats "W4A16 g128" --ms "${MS:-1,8,16}" --variants "${VARIANTS:-}" \
        --json "$OUT/timeline_w4.json"
      timeout 120 python3 benchmarks/probe_pdl_timeline.py --formats "W8A16 pc" --ms "${MS8:-1,4}" --json "$OUT/timeline_w8.json"
    } 2>&1 | tee "$OUT/timeline.log" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout 300 python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch "${PF:-1,2,3}" \
      --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.log" ;;
  decode_all)
    echo "== decoding stream, every shape"
    timeout 560 python3 benchmarks/bench_decode.py --ms "${MS:-1,16}" --json "$OUT/decode_all.json" 2>&1 \
      | tee "$OUT/decode_all.log" ;;
  pdl_tests)
    OUT="$OUT" bash "$(dirname "$0")/device_session10.sh" pdl_tests ;;
  esac
done
