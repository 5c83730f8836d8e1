#!/usr/bin/env bash
# Forty-eighth session: dense 16-bit GEMMs of ragged M on the swapped problem (D^T = B^T A^T) with a wgmma N of
# any multiple of 8, so that the rows of x split into tiles of about equal size instead of 128-row tiles.
# Usage: bash benchmarks/device_session48.sh [sw_big|sw_cal|sw_tests|sw_tc ...]
# - sw_big: probe_sgemv.py (bf16, B N- and K-contiguous, three rounds in turn) at ragged M of the Llama-3 layers:
#   the Hopper kernel's pick against swapped tilings sw128x<bn>s<stages>, into $OUT/sw_big.md;
# - sw_cal: the same at more shapes (M = 200..1100), D stored from the registers or through shared memory by TMA
#   (store_mn, the `t` tilings), into $OUT/sw_cal.md;
# - sw_tests: the GPU tests of the swapped problem (tests/gemm/test_swapped.py);
# - sw_tc: tc.gemm (pick_ragged_swap where it swaps) against the Hopper kernel's pick and cuBLAS at SW_SHAPES.
source "$(dirname "$0")/device_env.sh"
# sgemv_probe NAME SHAPE CONFIGS: probe_sgemv.py --dtype bf16 at SHAPE for CONFIGS, appended to $OUT/NAME.md.
sgemv_probe() {
  timeout "${SG_S:-200}" python3 benchmarks/probe_sgemv.py --dtype bf16 --b-major "${MAJORS:-N,K}" --rounds 3 \
    --reps 20 --shapes "$2" --configs "$3" 2>&1 | grep -v "^|---" | tee -a "$OUT/$1.md"
}
for part in ${*:-sw_big}; do
  case $part in
  sw_big)
    sgemv_probe sw_big 520x8192x8192 hopper,sw128x136s6,sw128x104s7
    sgemv_probe sw_big 576x8192x8192 hopper,sw128x144s6
    sgemv_probe sw_big 640x8192x8192 hopper,sw128x160s6
    sgemv_probe sw_big 800x8192x8192 hopper,sw128x200s5
    sgemv_probe sw_big 1088x8192x8192 hopper,sw128x184s5
    sgemv_probe sw_big 520x4096x14336 hopper,sw128x136s6
    sgemv_probe sw_big 1100x4096x14336 hopper,sw128x144s6
    sgemv_probe sw_big 520x28672x4096 hopper,sw128x136s6,sw128x104s7 ;;
  sw_cal)
    sgemv_probe sw_cal 520x8192x8192 hopper,sw128x136s6,sw128x136s5t
    sgemv_probe sw_cal 520x28672x4096 hopper,sw128x136s6,sw128x136s5t,sw128x176s4t
    sgemv_probe sw_cal 520x4096x14336 hopper,sw128x136s5t,sw128x176s4t
    sgemv_probe sw_cal 800x8192x8192 hopper,sw128x200s5,sw128x200s4t
    sgemv_probe sw_cal 1100x4096x14336 hopper,sw128x144s5t
    sgemv_probe sw_cal 1100x8192x8192 hopper,sw128x184s4t
    sgemv_probe sw_cal 300x8192x8192 hopper,sw128x152s5t
    sgemv_probe sw_cal 300x4096x4096 hopper,sw128x152s5t,sw128x104s6t
    sgemv_probe sw_cal 200x8192x8192 hopper,sw128x200s4t,sw128x104s6t
    sgemv_probe sw_cal 520x6144x4096 hopper,sw128x136s5t,sw128x176s4t
    sgemv_probe sw_cal 520x10240x8192 hopper,sw128x176s4t
    sgemv_probe sw_cal 520x57344x8192 hopper,sw128x136s5t,sw128x176s4t
    sgemv_probe sw_cal 800x28672x4096 hopper,sw128x200s4t ;;
  sw_tests)
    gpu_tests sw_tests "${SWT_S:-300}" tests/gemm/test_swapped.py ;;
  sw_tc)
    for shape in ${SW_SHAPES:-520x8192x8192 520x28672x4096 520x4096x14336 800x8192x8192 1100x4096x14336 \
        300x8192x8192 520x10240x8192 520x57344x8192 129x28672x4096 200x28672x4096 1088x4096x4096 777x8192x28672}; do
      sgemv_probe sw_tc "$shape" tc,hopper
    done ;;
  *) echo "unknown part $part" ;;
  esac
done
