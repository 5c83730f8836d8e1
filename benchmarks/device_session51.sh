#!/usr/bin/env bash
# Fifty-first session: three consumer warpgroups by more than 192 rows of x in the mixed-input register-A kernel,
# each 16-k block's wgmma split in two along x's rows (RsConfig.mma_parts), so that 192x224 tiles compile: at
# 4096x4096, M = 1280 they make 22 x 6 = 132 tiles, one round (issue 9's M >= 1024 exceptions at K = 4096).
# Usage: bash benchmarks/device_session51.sh [x2_tests|x2_probe|x2_more|x2_pick ...]
# - x2_tests: the GPU tests of the split wgmma (test_gpu_three_consumers_by_two_wgmmas, all 32 formats) in 12 shards;
# - x2_probe: tc.gemm against the 192x224 tilings X2_CFG (';'-separated RsConfig expressions) at X2_CASES
#   (NxK:M,M,...), with tilecraft's dense bf16 and cuBLAS beside them;
# - x2_more: the same at X2_MORE;
# - x2_pick: tc.gemm (its picks with sm90_mixed_rs._three_or) against what it ran before (--no-three) at PICK_CASES.
source "$(dirname "$0")/device_env.sh"
X2_CFG_DEFAULT="R(blk_n=192, blk_m=224, stages=3, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True);\
R(blk_n=192, blk_m=224, stages=4, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True);\
R(blk_n=192, blk_m=224, stages=3, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True, stream_k=1)"
x2_bench() {
  local name=$1 case
  for case in $2; do
    mixed_large "$name" --nk "${case%%:*}" --ms "${case#*:}" --rs-configs "${X2_CFG:-$X2_CFG_DEFAULT}"
  done
}
for part in ${*:-x2_probe}; do
  case $part in
  x2_tests)
    SHARDS=12 SUITE_S="${X2T_S:-300}" SUITE_K=three_consumers bash benchmarks/gpu_suite.sh tests/quant/test_sm90_mixed_rs.py
    tail -5 "$OUT/suite.md" ;;
  x2_probe)
    x2_bench x2_probe "${X2_CASES:-4096x4096:1280 4096x14336:1280 8192x8192:4096}" ;;
  x2_pick)
    for case in ${PICK_CASES:-4096x4096:1280,2600 6144x4096:800,1600 14336x4096:1100,1400 4096x14336:1280}; do
      mixed_large x2_pick --nk "${case%%:*}" --ms "${case#*:}" --no-three
    done ;;
  x2_more)
    x2_bench x2_more "${X2_MORE:-6144x4096:1024 14336x4096:1280 8192x8192:2688}" ;;
  esac
done
