#!/usr/bin/env bash
# Device session 28 (issue 8): split-K's in-kernel sum by accumulator blocks, the 64x128 tile in split-K, and
# what lost: split-K within a cluster (Sm90Config(cluster_splits=True), branch cluster-splits), clusters along N
# and 2x2 at small M, promoted fp8 tilings.
# Usage: bash benchmarks/device_session28.sh [dsm_tests|split_tests|skinny|small_m|fp8|timeline ...]
# dsm_tests: the distributed shared memory GPU test (on the branch also the cluster-split ones); split_tests:
# split-K's GPU cases (summed in the kernel, the reduction kernel) and the launch plans; skinny: skinny shapes,
# the pick against CONFIGS and cuBLAS; small_m: clusters along N and 2x2 at M = 128, 256; fp8: promoted fp8
# tilings against torch._scaled_mm; timeline: per-CTA timelines (timelines() in device_env.sh). SHAPES,
# CONFIGS, ROUNDS, TL_SHAPES and TL_CONFIGS override the defaults.
source "$(dirname "$0")/device_env.sh"
llm() {  # llm NAME SHAPES CONFIGS
  LLM_S=${LLM_S:-280} ROUNDS=${ROUNDS:-5} llm_probe "$@"
}
for part in ${*:-dsm_tests skinny}; do
  case $part in
  dsm_tests)
    echo "== distributed shared memory: GPU tests"
    gpu_tests dsm_tests 280 tests/sm90/test_dsmem.py $(ls tests/sm90/test_cluster_splits.py 2>/dev/null) ;;
  split_tests)
    echo "== split-K: GPU tests"
    gpu_tests split_tests 280 tests/sm90/test_gemm_sm90.py tests/gemm/test_plans_gpu.py -k "(matches_float64 and (M300-N500-K2000 or M512-N512-K8192 or M200-N320-K2000 or M1024-N1024-K1536 or M300-N500-K4000 or M333-N200-K3000)) or sk3_promote or plans" ;;
  skinny)
    echo "== skinny shapes: the pick against CONFIGS and cuBLAS"
    llm skinny "512x512x65536,512x512x32768,1024x1024x65536,256x512x65536,512x1024x16384" \
      "S(128, 128, 64, 6, splits=8);S(128, 128, 64, 6, splits=5)" ;;
  small_m)
    echo "== M = 128 and 256: clusters sharing A along N (1x2) and both operands (2x2) against the pick"
    ROUNDS=${ROUNDS:-3} llm small_m "128x4096x4096,128x6144x4096,128x28672x4096,128x4096x14336,128x8192x8192,128x10240x8192,128x57344x8192,128x8192x28672,256x4096x4096,256x6144x4096,256x28672x4096,256x4096x14336,256x8192x8192,256x10240x8192,256x57344x8192,256x8192x28672" \
      "S(128, 128, 64, 6, cluster_m=2, cluster_n=2);S(128, 128, 64, 6, cluster_n=2);S(64, 128, 64, 8, consumers=1, cluster_n=2);S(128, 256, 64, 4, cluster_m=2, cluster_n=2)" ;;
  fp8)
    echo "== fp8 e4m3 promoted: clusters along N, three consumers (bf16 out, x _scaled_mm)"
    FP8_S=${FP8_S:-400} fp8_probe fp8 "4096x4096x4096,8192x8192x8192,1024x8192x8192,2048x2048x16384" \
      "S(128, 128, 128, stages=6, promote=True);S(128, 128, 128, stages=6, cluster_n=2, promote=True);S(128, 128, 128, stages=6, cluster_m=2, promote=True);S(192, 128, 128, stages=5, consumers=3, producer_regs=40, consumer_regs=152, promote=True)" ;;
  timeline)
    timelines "512x512x65536" "S(128, 128, 64, 6, splits=8)" ;;
  esac
done
