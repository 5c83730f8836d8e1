#!/usr/bin/env bash
# Device session 16 (issue 8): pingpong consumers in the Hopper GEMM.
# Usage: bash benchmarks/device_session16.sh [sm90_tests|pp_probe|picks ...]
# pp_probe: probe_llm.py --pingpong (tc.gemm's pick beside the pingpong tilings, GPU time, ROUNDS rounds in
# turn, at SHAPES or the 40 LLM shapes); sm90_tests and picks: as benchmarks/device_session13.sh.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-sm90_tests}; do
  case $part in
  pp_probe)
    echo "== pingpong probe"
    timeout "${PROBE_S:-450}" python3 benchmarks/probe_llm.py --pingpong --gpu-only --reps "${REPS:-20}" \
      --rounds "${ROUNDS:-1}" ${SHAPES:+--shapes "$SHAPES"} 2>&1 | tee "$OUT/pp_probe.log" ;;
  sm90_tests|picks)
    OUT="$OUT" bash "$(dirname "$0")/device_session13.sh" "$part" ;;
  esac
done
