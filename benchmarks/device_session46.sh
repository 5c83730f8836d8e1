#!/usr/bin/env bash
# Forty-sixth session: tiles of 192 x rows (or one of 256, k-blocks interleaved) with W through shared memory in the
# register-A mixed kernel from M = 129 (issue 9).
# Usage: bash benchmarks/device_session46.sh [il_tests|il_time|il_nk|il_wide|il_mid ...]
# - il_tests: the register-A kernel's GPU tests (interleaved k-blocks, W through shared memory, random shapes, tc.gemm);
# - il_time: tc.gemm's picks against the picks before (128x128 unsplit, the register ring) at IL_MS (160,192,224,256),
#   weight formats IL_FORMATS, N x K 8192x8192, three rounds in turn, into $OUT/il_time.md;
# - il_nk: the same at N x K = 4096x14336 (the picks before: 128x128 in 2 slices) and 28672x4096 (2x1 clusters);
# - il_wide: M = 300 / 384 (IL_WIDE_MS; two tiles of 192 rows, W in smem) against the 2x1-cluster pick before, and
#   M = 160 / 300 at N x K = 57344x8192;
# - il_mid: M = 576 / 640 / 704 (IL_MID_MS; 192-row tiles in fewer, fuller rounds) against the 2x1-cluster pick
#   before, M = 640 at 4096x14336 (against 128x128 in 4 slices) and M = 576 at 28672x4096.
source "$(dirname "$0")/device_env.sh"
export MIXED_S="${IL_S:-300}"
F="${IL_FORMATS:-4:128,8:0,4:32:zp,8:128:zp}"
for part in ${*:-il_tests}; do
  case $part in
  il_tests)
    SHARDS=12 SUITE_S="${ILT_S:-330}" SUITE_K="interleaved or w_through or random_shapes or tc_gemm" \
      bash benchmarks/gpu_suite.sh tests/quant/test_sm90_mixed_rs.py && cat "$OUT/suite.md" ;;
  il_time)
    mixed_large il_time --ms "${IL_MS:-160,192,224,256}" --formats "$F" \
      --rs-configs "R(blk_m=128, stages=8, depth=6)" ;;
  il_nk)
    mixed_large il_nk --ms "${IL_MS:-160,256}" --formats "4:128,8:0" --nk 4096x14336 \
      --rs-configs "R(blk_m=128, stages=8, depth=6, splits=2)"
    mixed_large il_nk --ms "${IL_MS:-160,256}" --formats "4:128,8:0" --nk 28672x4096 --rs-configs "R(cluster=2)" ;;
  il_wide)
    mixed_large il_wide --ms "${IL_WIDE_MS:-300,384}" --formats "$F" --rs-configs "R(cluster=2)"
    mixed_large il_wide --ms "${IL_WIDE_MS:-160,300}" --formats "4:128,8:0" --nk 57344x8192 \
      --rs-configs "R(cluster=2)" ;;
  il_mid)
    mixed_large il_mid --ms "${IL_MID_MS:-576,640,704}" --formats "4:128,8:0" --rs-configs "R(cluster=2)"
    mixed_large il_mid --ms 640 --formats "4:128,8:0" --nk 4096x14336 \
      --rs-configs "R(blk_m=128, stages=8, depth=6, splits=4)"
    mixed_large il_mid --ms 576 --formats "4:128,8:0" --nk 28672x4096 --rs-configs "R(cluster=2)" ;;
  *) echo "unknown part $part" ;;
  esac
done
