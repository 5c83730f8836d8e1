#!/usr/bin/env bash
# Device session 12 (issue 9, decoding): work stealing in the small-M mixed kernel.
# Usage: bash benchmarks/device_session12.sh [steal_tests|timeline|decode|pdl_tests ...]
# steal_tests: the work-stealing GPU tests (five formats, random shapes, a PDL chain); timeline: per-CTA timelines
# and periods of back-to-back launches, tc.gemm's pick beside VARIANTS (probe_pdl_timeline.py); decode:
# bench_decode.py at N = K = 8192; pdl_tests: as benchmarks/device_session10.sh.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-steal_tests timeline}; do
  case $part in
  steal_tests)
    echo "== GPU tests: work stealing"
    timeout -s ABRT 200 python3 -X faulthandler -m pytest -m gpu -q -p no:cacheprovider -rs tests/quant/test_mixed.py \
      -k "work_stealing" 2>&1 | tee "$OUT/steal_tests.log" | tail -15 ;;
  timeline)
    echo "== timelines"
    timeout 300 python3 benchmarks/probe_pdl_timeline.py --formats "${FORMATS:-W4A16 g128}" --ms "${MS:-1,8}" \
      --variants "${VARIANTS:-steal=4;steal=8;steal=4,steal_unit=2}" --modes "${MODES:-plain,pdl 2/16}" \
      --json "$OUT/timeline.json" 2>&1 | tee "$OUT/timeline.log" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout 300 python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch "${PF:-2}" \
      --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.log" ;;
  pdl_tests)
    OUT="$OUT" bash "$(dirname "$0")/device_session10.sh" pdl_tests ;;
  esac
done
