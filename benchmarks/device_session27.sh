#!/usr/bin/env bash
# Device session 27 (issue 8): stream-K with each share's units taken last first (every cluster starts at
# k-tile 0 and the clusters stay together in k), the last slice's CTA finishing the unit.
# Usage: bash benchmarks/device_session27.sh [sk_tests|skinny|long_k ...]
# sk_tests: the stream-K GPU tests and the Hopper GEMM's stream-K cases; skinny: whole tiles against stream-K
# at session 13's shapes (where stream-K took twice the whole tiles' time); long_k: the stream-K forms of the
# big tiles at session 26's long-K LLM shapes (SHAPES / CONFIGS override either).
source "$(dirname "$0")/device_env.sh"
llm() {  # llm NAME SHAPES CONFIGS
  timeout "${LLM_S:-280}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds "${ROUNDS:-3}" \
    --shapes "${SHAPES:-$2}" --configs "${CONFIGS:-$3}" 2>&1 | tee -a "$OUT/$1.md"
}
for part in ${*:-sk_tests skinny long_k}; do
  case $part in
  sk_tests)
    echo "== stream-K GPU tests"
    gpu_tests sk_tests 280 tests/sm90/test_stream_k.py "tests/sm90/test_gemm_sm90.py::test_sm90_gemm_matches_float64[M2000-N1000-K1000-biasm]" \
      "tests/sm90/test_gemm_sm90.py::test_fp8_promoted_configs_match_float64[sm90_128x128x128_s6_c2_streamk2_promote]" ;;
  skinny)
    echo "== whole tiles against stream-K, session 13's shapes"
    llm skinny "1024x1024x8192,512x512x65536,2048x2048x16384" \
      "S(64, 128, 64, 8, consumers=1);S(64, 128, 64, 8, consumers=1, stream_k=2);S(128, 256, 64, 4, cluster_m=2);S(128, 256, 64, 4, cluster_m=2, stream_k=2);S(128, 128, 64, 6, stream_k=2)" ;;
  long_k)
    echo "== stream-K at the long-K LLM shapes"
    llm long_k "256x8192x28672,1024x8192x28672,1024x57344x8192,128x57344x8192,1024x4096x14336,256x8192x8192,256x10240x8192" \
      "S(128, 256, 64, 4, cluster_m=2, stream_k=1);S(128, 128, 64, 6, cluster_m=2, stream_k=1);S(128, 192, 64, 4, stream_k=1);S(128, 128, 64, 6, stream_k=1);S(128, 128, 64, 6, cluster_m=2, stream_k=2)" ;;
  esac
done
