#!/usr/bin/env bash
# Forty-first session: fp32 (IEEE) GEMMs of 17..32 rows: the GEMV at 32 rows (reverted) against the SGEMM's
# 32-row tile (THIN, tc.gemm's pick there).
# Usage: bash benchmarks/device_session41.sh [g32_probe|thin|thin_splits|split_cap|final|h16|h16_tests|g32_tests ...]
# - g32_probe (needs `git apply benchmarks/patches/gemv_32_rows.diff`: the GEMV with 32 rows, measured slower than the
#   SGEMM's 32-row tile and reverted): probe_sgemv.py at M = 17..32 against cuBLAS (TF32 off) and the SGEMM's
#   split-K pick, N-contiguous B with G32_CONFIGS_N, K-contiguous with G32_CONFIGS_K (G32_SHAPES overrides the
#   shapes), into $OUT/g32_probe.md;
# - thin: probe_sgemm.py with the SGEMM's 32-row tiles (THIN_CONFIGS) at the same shapes, both B majors, into
#   $OUT/thin.md (run 2 also timed a 32x128x16_w4x8_t128_b4_a3_O1_f tiling, since dropped from CONFIGS);
# - thin_splits: the 32-row tile with more splits than the pick's at few tiles (TS_SHAPES / TS_CONFIGS), into
#   $OUT/thin_splits.md;
# - split_cap: sgemm_tuned's picks with 16 (MAX_SPLITS) against 32, 64 and 128 splits where the tiles are few
#   (SC_SHAPES / SC_CONFIGS), into $OUT/split_cap.md;
# - final: sgemm_tuned's picks (tc.gemm's IEEE fp32 path from 17 rows) against cuBLAS, both B majors, into
#   $OUT/final.md;
# - h16: the GEMV with 16-bit operands (H16_DTYPE, default bf16) against cuBLAS and the Hopper kernel's pick, both B
#   majors (H16_SHAPES / H16_CONFIGS), into $OUT/h16.md; h16_tests: its GPU tests and tc.gemm's dispatch;
# - g32_tests: the GPU tests of the SGEMM and tc.gemm's fp32 dispatch.
source "$(dirname "$0")/device_env.sh"
G32_SHAPES_ALL=32x4096x4096,20x4096x4096,24x4096x11008,32x11008x4096,32x4096x11008,17x1000x1000,28x777x2001
G32_SHAPES_ALL=$G32_SHAPES_ALL,32x128x65536
H16_SHAPES_ALL=1x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,1x8192x8192,8x8192x8192,16x8192x8192,1x14336x4096
H16_SHAPES_ALL=$H16_SHAPES_ALL,1x4096x14336
T=32x128x16_w4x8_t128_b4

for part in ${*:-g32_tests g32_probe}; do
  case $part in
  thin)
    c=${THIN_CONFIGS:-auto,$T,${T}_a3,$T/s8}
    both probe_sgemm thin "${THIN_S:-200}" "${G32_SHAPES:-$G32_SHAPES_ALL}" "$c" "$c" ;;
  thin_splits)
    c=${TS_CONFIGS:-$T,$T/s32,$T/s64,${T}_a3,${T}_a3/s32,${T}_a3/s64}
    both probe_sgemm thin_splits "${THIN_S:-200}" \
      "${TS_SHAPES:-32x128x65536,24x256x32768,20x4096x4096,32x4096x4096,24x1024x8192}" "$c" "$c" ;;
  split_cap)
    c=${SC_CONFIGS:-auto,auto/s32,auto/s64,auto/s128}
    both probe_sgemm split_cap "${THIN_S:-200}" "${SC_SHAPES:-256x512x8192,128x1024x16384,512x512x65536,\
64x1024x32768,64x256x65536,128x128x100000,24x1024x8192,32x128x65536,24x256x32768,17x512x16384}" "$c" "$c" ;;
  final)
    both probe_sgemm final "${FINAL_S:-240}" "${FINAL_SHAPES:-$G32_SHAPES_ALL,64x1024x32768,64x256x65536,\
128x128x100000,24x1024x8192,17x512x16384,256x512x8192,128x1024x16384,64x8192x8192,128x4096x4096,512x512x65536,256,512,\
1024,96x6144x2048,2000x500x3000}" auto auto ;;
  h16)
    c=${H16_CONFIGS:-hopper,auto,u2,u8,v4,w16}
    both probe_sgemv h16 "${H16_S:-220}" "${H16_SHAPES:-$H16_SHAPES_ALL}" "$c" "$c" --dtype "${H16_DTYPE:-bf16}" ;;
  h16_tests)
    gpu_tests h16_tests "${GVT_S:-240}" tests/gemm/test_gemv.py tests/gemm/test_tensorop.py \
      -k "gemv or 16_bit or shared_b or tc_gemm" ;;
  g32_tests)
    gpu_tests sg_tests "${SGT_S:-300}" tests/gemm/test_sgemm_tuned.py
    gpu_tests gv_dispatch 120 tests/gemm/test_gemv.py -k tc_gemm ;;
  g32_probe)
    both probe_sgemv g32_probe "${G32_S:-250}" "${G32_SHAPES:-$G32_SHAPES_ALL}" \
      "${G32_CONFIGS_N:-sgemm,auto,w4,u2,w4u2}" "${G32_CONFIGS_K:-sgemm,auto,w4,u2,c2b2,c2,w16c2}" ;;
  esac
done
