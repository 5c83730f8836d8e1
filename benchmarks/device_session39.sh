#!/usr/bin/env bash
# Thirty-ninth session: split-K in the SIMT SGEMM (sgemm_tuned's ``splits``), and where the Hopper kernel loses
# time at K = 1000 (the probes of the tile rules ran probe_ragged_mn.py and probe_llm.py directly: RESULTS.md).
# Usage: bash benchmarks/device_session39.sh [sg_tests|sg_probe|k1000 ...]
# - sg_tests: the GPU tests of test_sgemm_tuned.py (SGT_K: a -k filter);
# - sg_probe: probe_sgemm.py, the pick with and without split-K and fixed split counts against cuBLAS
#   (SG_SHAPES / SG_CONFIGS override), into $OUT/sg_probe.md;
# - k1000: per-CTA timelines of the 64x128 tile at K = 1000 with M ragged and not, and at K = 1024
#   (TL_SHAPES / TL_CONFIGS override), into $OUT/timeline.md.
source "$(dirname "$0")/device_env.sh"
SG_SHAPES_ALL="64x8192x8192,1x4096x4096,32x4096x11008,128x4096x4096,256x256x256,512x512x512,1000x1000x1000"
SG_SHAPES_ALL="$SG_SHAPES_ALL,1024x1024x1024,512x512x65536,1536x1536x1536"
SMALL=64x128x8_w4x8_t128_b4
SG_CONFIGS_ALL="auto/s1,auto,$SMALL/s2,$SMALL/s4,$SMALL/s8,$SMALL/s16"
for part in ${*:-sg_tests sg_probe k1000}; do
  case $part in
  sg_tests)
    gpu_tests sg_tests "${SGT_S:-300}" tests/gemm/test_sgemm_tuned.py ${SGT_K:+-k "$SGT_K"} ;;
  sg_probe)
    timeout "${SG_S:-400}" python3 benchmarks/probe_sgemm.py --rounds "${ROUNDS:-3}" \
      --shapes "${SG_SHAPES:-$SG_SHAPES_ALL}" --configs "${SG_CONFIGS:-$SG_CONFIGS_ALL}" > "$OUT/sg_probe.md" 2>&1
    sed 's/  */ /g' "$OUT/sg_probe.md" | grep -v "^|---" ;;
  k1000)
    TL_S=${TL_S:-90} TL_ARGS="--ctas 132" timelines "1000x1024x1000 1024x1024x1000 1000x1024x1024" \
      "S(64, 128, 64, 8, consumers=1)" > /dev/null
    grep -E "^(#|###)" "$OUT/timeline.md" ;;
  esac
done
