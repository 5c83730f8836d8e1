#!/usr/bin/env bash
# Device session 12 (issue 9, decoding): the small-M mixed kernel's tail. Runs 1, 2 and 5 of the twelfth session
# also ran the work-stealing variant's GPU tests (commits de34a1b..1af952e, since reverted: benchmarks/RESULTS.md).
# Usage: bash benchmarks/device_session12.sh [timeline|decode|pdl_tests ...]
# timeline: per-CTA timelines and periods of back-to-back launches, tc.gemm's pick beside VARIANTS
# (probe_pdl_timeline.py); decode: bench_decode.py at N = K = 8192; pdl_tests: as benchmarks/device_session10.sh.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-timeline}; do
  case $part in
  timeline)
    echo "== timelines"
    timeout 300 python3 benchmarks/probe_pdl_timeline.py --formats "${FORMATS:-W4A16 g128}" --ms "${MS:-1,8}" \
      --variants "${VARIANTS:-}" --modes "${MODES:-plain,pdl 2/16}" \
      --json "$OUT/timeline.json" 2>&1 | tee "$OUT/timeline.log" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout 300 python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch "${PF:-2}" \
      --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.log" ;;
  pdl_tests)
    OUT="$OUT" bash "$(dirname "$0")/device_session10.sh" pdl_tests ;;
  esac
done
