#!/usr/bin/env bash
# Device session 26 (issue 9): the read floor of a decoding stream.
# Usage: bash benchmarks/device_session26.sh [floor]
# floor: probe_read_floor.py (read-only kernels as a PDL stream beside tilecraft's W4 kernel at M = 1, 8;
# FLOOR_ARGS adds arguments). The decoding stream itself: device_session24.sh decode.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-floor}; do
  case $part in
  floor)
    echo "== the read floor, PDL stream"
    timeout "${FLOOR_S:-300}" python3 benchmarks/probe_read_floor.py --rounds "${ROUNDS:-3}" ${FLOOR_ARGS:-} \
      --json "$OUT/floor.json" 2>&1 | tee -a "$OUT/floor.md" ;;
  esac
done
