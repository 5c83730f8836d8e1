#!/usr/bin/env bash
# Device session 26 (issue 9): the read floor of a decoding stream.
# Usage: bash benchmarks/device_session26.sh [floor|decode ...]
# floor: probe_read_floor.py (read-only kernels as a PDL stream beside tilecraft's W4 kernel at M = 1, 8;
# FLOOR_ARGS adds arguments); decode: bench_decode.py (N = K = 8192, MS, W4 and W8 against cuBLAS).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-floor}; do
  case $part in
  floor)
    echo "== the read floor, PDL stream"
    timeout "${FLOOR_S:-300}" python3 benchmarks/probe_read_floor.py --rounds "${ROUNDS:-3}" ${FLOOR_ARGS:-} \
      --json "$OUT/floor.json" 2>&1 | tee -a "$OUT/floor.md" ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout "${DECODE_S:-240}" python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch 2 \
      --json "$OUT/decode.json" 2>&1 | tee -a "$OUT/decode.md" ;;
  esac
done
