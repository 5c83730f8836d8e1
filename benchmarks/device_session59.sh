#!/usr/bin/env bash
# Fifty-ninth session (issue 8 on an H200): where the M = 128 shapes lose time against cuBLAS.
# Usage: bash benchmarks/device_session59.sh [tl|stride|floor ...]
# - tl: per-CTA timelines (probe_sm90_timeline.py) at 128x8192x8192 and 128x4096x14336: the picks, 128x64 with and
#   without a 1x2 cluster, 64x128 in 2 splits;
# - stride: the pick's timelines at 128x8192x8192 (every CTA listed) and at K = 8256 / 8320, whose rows of B do not
#   lie a power of two apart;
# - floor: the read floor of 136 MB (128x8192x8192's B and A) as a PDL stream (probe_read_floor.py).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-tl}; do
  case $part in
  tl)
    timelines 128x8192x8192 "S(64,128,64,8,consumers=1);S(128,64,64,8);S(128,64,64,8,cluster_n=2)"
    timelines 128x4096x14336 "S(64,64,64,8,consumers=1);S(64,128,64,8,consumers=1,splits=2);\
S(128,64,64,8,cluster_n=2,splits=2)" ;;
  stride)
    TL_ARGS="--ctas 132" timelines 128x8192x8192 "S(64,128,64,8,consumers=1)"
    timelines "128x8192x8256 128x8192x8320" "S(64,128,64,8,consumers=1);S(128,64,64,8)" ;;
  floor) timeout 200 python3 benchmarks/probe_read_floor.py --mb 136 --ldg "528,256,4;264,256,8" \
    --bulk "264,4,16;132,8,16" --ring "" 2>&1 | tee "$OUT/floor.md" ;;
  esac
done
