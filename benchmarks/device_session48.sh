#!/usr/bin/env bash
# Forty-eighth session: dense 16-bit GEMMs of ragged M on the swapped problem (D^T = B^T A^T) with a wgmma N of
# any multiple of 8, so that the rows of x split into tiles of about equal size instead of 128-row tiles.
# Usage: bash benchmarks/device_session48.sh [sw_big|sw_cal|sw_tests|sw_tc|rs_mn|rg_tests|rg_time|rg_sweep|mn2 ...]
# - sw_big: probe_sgemv.py (bf16, B N- and K-contiguous, three rounds in turn) at ragged M of the Llama-3 layers:
#   the Hopper kernel's pick against swapped tilings sw128x<bn>s<stages>, into $OUT/sw_big.md;
# - sw_cal: the same at more shapes (M = 200..1100), D stored from the registers or through shared memory by TMA
#   (store_mn, the `t` tilings), into $OUT/sw_cal.md;
# - sw_tests: the GPU tests of the swapped problem (tests/gemm/test_swapped.py);
# - sw_tc: tc.gemm (pick_ragged_swap where it swaps) against the Hopper kernel's pick and cuBLAS at SW_SHAPES;
# - rs_mn: the mixed-input register-A kernel with y stored by TMA (RsConfig.store_mn) and x tiles of any multiple
#   of 8 rows, against tc.gemm's picks (bench_mixed_large.py --rs-configs), W4A16 g128 and W8A16 per-channel;
# - rg_tests: the GPU tests of the register-A kernel's ragged x tiles and of its picks and splits;
# - rg_time: tc.gemm (ragged x tiles where its pick takes them) against what it ran before (--no-ragged) at M =
#   300..800 (RG_MS), N x K = 8192x8192, 4096x14336 and 28672x4096;
# - rg_sweep: tc.gemm's mixed-input GEMM against tilecraft's dense one (both with this session's ragged tiles) at M =
#   800..3000 (RG_SWEEP_MS), 8192x8192 and 4096x14336; and 1024x6144x4096, where the ragged tiles change a pick of
#   issue 8's sweep M;
# - mn2: the store_mn epilogue by stmatrix .trans: the register-A kernel's 2x1-cluster 256-row tiles with it (5
#   stages) against the pick, and tc.gemm's dense ragged picks against the Hopper kernel's pick.
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
  rs_mn)
    export MIXED_S="${RS_S:-240}"
    mixed_large rs_mn --ms 1024,1088 --formats 4:128,8:0 \
      --rs-configs "R(cluster=2, stages=5, store_mn=True);R(cluster=2, stages=4, store_mn=True)"
    mixed_large rs_mn --ms 1088 --formats 4:128,8:0 --nk 28672x4096 --rs-configs "R(cluster=2, stages=5, store_mn=True)"
    mixed_large rs_mn --ms 1536 --formats 4:128,8:0 --nk 4096x14336 \
      --rs-configs "R(blk_m=192, stages=5, w_smem=True, store_mn=True);R(blk_m=192, stages=6, w_smem=True)"
    mixed_large rs_mn --ms 520 --formats 4:128,8:0 --nk 4096x14336 \
      --rs-configs "R(blk_m=136, stages=6, w_smem=True, store_mn=True);R(blk_m=136, stages=6, w_smem=True)"
    mixed_large rs_mn --ms 1100 --formats 4:128,8:0 --nk 4096x14336 \
      --rs-configs "R(blk_m=144, stages=6, w_smem=True, store_mn=True)" ;;
  rg_tests)
    gpu_tests rg_tests "${RGT_S:-400}" tests/quant/test_sm90_mixed_rs.py \
      -k "ragged_x_tiles or ragged_m or tc_gemm or random_shapes" ;;
  rg_time)
    export MIXED_S="${RG_S:-200}"
    mixed_large rg_time --ms "${RG_MS:-300,400,520,600,700,800}" --formats 4:128,8:0 --no-ragged
    mixed_large rg_time --ms "${RG_NK_MS:-300,400,520,640,800}" --formats 4:128,8:0 --nk 4096x14336 --no-ragged
    mixed_large rg_time --ms "${RG_WIDE_MS:-640,800}" --formats 4:128,8:0 --nk 28672x4096 --no-ragged ;;
  rg_sweep)
    export MIXED_S="${RG_S:-250}"
    mixed_large rg_sweep --ms "${RG_SWEEP_MS:-800,1024,1100,1250,1400,1536,1700,2200,3000}" --formats 4:128,8:0
    mixed_large rg_sweep --ms "${RG_SWEEP_MS:-800,1024,1100,1250,1400,1536,1700,2200,3000}" --formats 4:128,8:0 \
      --nk 4096x14336
    mixed_large rg_sweep --ms 1024 --formats 4:128,8:0 --nk 6144x4096 --no-ragged ;;
  mn2)
    export MIXED_S="${MN_S:-200}"
    P="R(cluster=2, stages=5, store_mn=True)"
    mixed_large mn2 --ms 1024,4096 --formats 4:128,8:0 --rs-configs "$P"
    mixed_large mn2 --ms 1088 --formats 4:128,8:0 --nk 28672x4096 --rs-configs "$P"
    mixed_large mn2 --ms 1024 --formats 4:128,8:0 --nk 6144x4096 --rs-configs "$P"
    mixed_large mn2 --ms 1024 --formats 4:128,8:0 --nk 4096x14336 --rs-configs "$P"
    for shape in 520x28672x4096 520x8192x8192 1100x4096x14336; do
      MAJORS=N sgemv_probe mn2_dense "$shape" tc,hopper
    done ;;
  *) echo "unknown part $part" ;;
  esac
done
