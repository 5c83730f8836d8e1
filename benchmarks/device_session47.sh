#!/usr/bin/env bash
# Forty-seventh session: ragged M of the mixed-input GEMM in two launches (issue 9): 256 q rows in 2x1-cluster
# tiles that fill their rounds, the rest in a launch of their own (sm90_mixed_rs.split_rows).
# Usage: bash benchmarks/device_session47.sh [sp_tests|sp_time|sp_nk ...]
# - sp_tests: the GPU tests of the split and of tc.gemm's register-A picks;
# - sp_time: tc.gemm against split_rows's other choice (bench_mixed_large.py --unsplit) at SP_MS, N = K = 8192,
#   W4A16 g128 and W8A16 per-channel (SP_FORMATS), three rounds in turn, into $OUT/sp_time.md;
# - sp_nk: the same at N x K = 4096x14336 (SP_NK_MS) and 28672x4096 (SP_WIDE_MS);
# - sp_quant: every GPU test of tests/quant (12 shards, gpu_suite.sh);
# - sp_formats: the zero-point formats (W4A16 g32, W8A16 g128) at SP_ZP_MS, N = K = 8192, and 28672x4096 at M =
#   1088 (not split: the rest's pick runs two rounds of pair tiles there);
# - sp_sweep: tc.gemm against the dense GEMMs at SP_SWEEP_MS (M = 520..4096), N = K = 8192 and 4096x14336;
# - sp_ext: rests of 257..384 rows (two 192-row tiles) against one launch: M = 800 / 880 at N = K = 8192, M = 1300 /
#   1400 / 2400 at 4096x14336.
source "$(dirname "$0")/device_env.sh"
export MIXED_S="${SP_S:-300}"
F="${SP_FORMATS:-4:128,8:0}"
for part in ${*:-sp_tests}; do
  case $part in
  sp_tests)
    gpu_tests sp_tests "${SPT_S:-200}" tests/quant/test_sm90_mixed_rs.py tests/quant/test_sm90_mixed.py \
      -k "ragged_m or tc_gemm or dispatch" ;;
  sp_time)
    mixed_large sp_time --ms "${SP_MS:-520,576,640,704,768,1088,1152,1280}" --formats "$F" --unsplit ;;
  sp_nk)
    mixed_large sp_nk --ms "${SP_NK_MS:-1100,1280,2112}" --formats "$F" --nk 4096x14336 --unsplit
    mixed_large sp_nk --ms "${SP_WIDE_MS:-1088,1300}" --formats "$F" --nk 28672x4096 --unsplit ;;
  sp_quant)
    SHARDS=12 SUITE_S="${SPQ_S:-420}" bash benchmarks/gpu_suite.sh tests/quant && cat "$OUT/suite.md" ;;
  sp_formats)
    mixed_large sp_formats --ms "${SP_ZP_MS:-576,1088}" --formats "4:32:zp,8:128:zp" --unsplit
    mixed_large sp_formats --ms 1088 --formats "$F" --nk 28672x4096 --unsplit ;;
  sp_sweep)
    mixed_large sp_sweep --ms "${SP_SWEEP_MS:-520,800,900,1024,1100,1250,1400,1536,1700,1900,2200,2600,3000,3500,4096}" \
      --formats "$F"
    mixed_large sp_sweep --ms "${SP_SWEEP_MS:-520,800,900,1024,1100,1250,1400,1536,1700,1900,2200,2600,3000,3500,4096}" \
      --formats "$F" --nk 4096x14336 ;;
  sp_ext)
    mixed_large sp_ext --ms "${SP_EXT_MS:-800,880}" --formats "$F" --unsplit
    mixed_large sp_ext --ms "${SP_EXT_NK_MS:-1300,1400,2400}" --formats "$F" --nk 4096x14336 --unsplit ;;
  *) echo "unknown part $part" ;;
  esac
done
