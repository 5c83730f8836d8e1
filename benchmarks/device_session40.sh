#!/usr/bin/env bash
# Fortieth session: the fp32 GEMV (tilecraft.gemm.gemv, tc.gemm's IEEE fp32 path for M <= 16).
# Usage: bash benchmarks/device_session40.sh [gv_tests|gv_probe ...]
# - gv_tests: the GPU tests of test_gemv.py and the split-K ones of test_sgemm_tuned.py (its reduction launch moved);
# - gv_probe: probe_sgemv.py against cuBLAS and the SGEMM's split-K pick (GV_SHAPES / GV_CONFIGS / GV_MAJORS
#   override), into $OUT/gv_probe.md.
source "$(dirname "$0")/device_env.sh"
GV_SHAPES_ALL="1x4096x4096,2x4096x4096,4x4096x4096,8x4096x4096,12x4096x4096,16x4096x4096,1x11008x4096,16x11008x4096,1x4096x11008,16x4096x11008,1x1000x1000,3x1000x3000,1x128x65536,5x777x2001"
GV_CONFIGS_ALL="sgemm,auto"
for part in ${*:-gv_tests gv_probe}; do
  case $part in
  gv_tests)
    gpu_tests gv_tests "${GVT_S:-200}" tests/gemm/test_gemv.py
    gpu_tests sg_split "${SGT_S:-120}" tests/gemm/test_sgemm_tuned.py -k split ;;
  gv_probe)
    timeout "${GV_S:-400}" python3 benchmarks/probe_sgemv.py --rounds "${ROUNDS:-3}" --b-major "${GV_MAJORS:-N,K}" \
      --shapes "${GV_SHAPES:-$GV_SHAPES_ALL}" --configs "${GV_CONFIGS:-$GV_CONFIGS_ALL}" > "$OUT/gv_probe.md" 2>&1
    sed 's/  */ /g' "$OUT/gv_probe.md" | grep -v "^|---" ;;
  esac
done
