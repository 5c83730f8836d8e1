#!/usr/bin/env bash
# Device session 27 (issue 8): stream-K with each share's units taken last first (every cluster starts at
# k-tile 0 and the clusters stay together in k), the last slice's CTA finishing the unit.
# Usage: bash benchmarks/device_session27.sh [sk_tests|skinny|long_k|big|mid|cluster_tests|clusters|split_tests|skinny_pick|ncu_sk|timeline ...]
# sk_tests: the stream-K GPU tests and the Hopper GEMM's stream-K cases; skinny: whole tiles against stream-K
# at session 13's shapes (where stream-K took twice the whole tiles' time); long_k: the stream-K forms of the
# big tiles at session 26's long-K LLM shapes; big / mid: stream-K 1 of the clustered tiles against the pick at
# the LLM shapes of M = 4096, 8192 / 256, 1024; cluster_tests / clusters: clusters along N and 2x2, GPU tests /
# against 2x1 at large LLM shapes; split_tests / skinny_pick: split-K's dependent reduction, GPU tests / the
# skinny shape against cuBLAS (SHAPES / CONFIGS override any of these); ncu_sk: Nsight Compute's
# DRAM and L2 counts for whole tiles and stream-K (NCU_SHAPES, NCU_CONFIGS); timeline: per-CTA timelines
# (probe_sm90_timeline.py; TL_SHAPES, TL_CONFIGS).
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
  big)
    echo "== 128x256 2x1 clusters with stream-K 1 (all 132 SMs) against the pick, M = 4096 and 8192"
    llm big "4096x4096x4096,4096x6144x4096,4096x28672x4096,4096x4096x14336,4096x8192x8192,4096x10240x8192,4096x57344x8192,4096x8192x28672,8192x4096x4096,8192x6144x4096,8192x28672x4096,8192x4096x14336,8192x8192x8192,8192x10240x8192,8192x57344x8192,8192x8192x28672" \
      "S(128, 256, 64, 4, cluster_m=2, stream_k=1)" ;;
  mid)
    echo "== stream-K 1 of the clustered tiles against the pick, M = 256 and 1024"
    llm mid "256x4096x4096,256x6144x4096,256x28672x4096,256x4096x14336,256x8192x8192,256x10240x8192,256x57344x8192,256x8192x28672,1024x4096x4096,1024x6144x4096,1024x28672x4096,1024x4096x14336,1024x8192x8192,1024x10240x8192,1024x57344x8192,1024x8192x28672" \
      "S(128, 256, 64, 4, cluster_m=2, stream_k=1);S(128, 128, 64, 6, cluster_m=2, stream_k=1)" ;;
  cluster_tests)
    echo "== clusters along N and 2x2: GPU tests"
    gpu_tests cluster_tests 280 tests/sm90/test_gemm_sm90.py -k "(matches_float64 and (M1024-N1000-K1000-majorsMK or M600-N1100 or M576-N1088 or M1000-N1000-K2000-biasm or M300-N500-K2000-outfloat32 or M1920-N2560-K520-majorsKN or M1344 or M384)) or (promoted_configs_match and (cl2x2 or cl2x1))" ;;
  clusters)
    echo "== 2x2 clusters against 2x1 at large LLM shapes"
    llm clusters "4096x4096x4096,8192x8192x8192,4096x28672x4096,1024x57344x8192,4096x8192x28672,8192x4096x14336,1024x8192x8192,4096x10240x8192" \
      "S(128, 256, 64, 4, cluster_m=2);S(128, 256, 64, 4, cluster_m=2, cluster_n=2);S(128, 256, 64, 4, cluster_n=2);S(128, 128, 64, 6, cluster_m=2, cluster_n=2)" ;;
  split_tests)
    echo "== split-K with the reduction as a programmatic dependent launch: GPU tests"
    gpu_tests split_tests 280 tests/sm90/test_gemm_sm90.py tests/gemm/test_plans_gpu.py -k "(matches_float64 and (M300-N500-K2000 or M512-N512-K8192 or M200-N320-K2000 or M1024-N1024-K1536)) or sk3_promote or tf32 or plans" ;;
  skinny_pick)
    echo "== the skinny shape, tc.gemm's pick (split-K 8) against cuBLAS"
    ROUNDS=${ROUNDS:-5} llm skinny_pick "512x512x65536,1024x1024x65536,512x512x32768" "S(128, 128, 64, 6, splits=4);S(128, 128, 64, 6, splits=16)" ;;
  ncu_sk)
    # DRAM bytes, L2 hit rate and time of whole tiles against stream-K at one shape (ncu flushes the caches
    # before each profiled kernel: cold operands, as the rotated benchmark)
    for shape in ${NCU_SHAPES:-1024x1024x8192 2048x2048x16384}; do
      echo "== ncu: whole tiles against stream-K at $shape"
      timeout "${NCU_TIMEOUT:-200}" ncu --profile-from-start off --clock-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active \
        python3 benchmarks/ncu_gemm.py --dtype bfloat16 --shape "$shape" --which cfg0,cfg1,cfg2,cfg3 \
        --configs "${NCU_CONFIGS:-S(64, 128, 64, 8, consumers=1);S(64, 128, 64, 8, consumers=1, stream_k=2);S(128, 128, 64, 6);S(128, 128, 64, 6, stream_k=2)}" \
        > "$OUT/ncu_sk_$shape.txt" 2>&1
      grep -E "^cfg|gpu__time|dram__bytes|lts__t|sm__cycles|sm__pipe|==ERR|rror" "$OUT/ncu_sk_$shape.txt" | head -60
    done ;;
  timeline)
    # per-CTA timelines: where stream-K's time goes against whole tiles
    timelines "1024x1024x8192 2048x2048x16384" \
      "S(64, 128, 64, 8, consumers=1);S(64, 128, 64, 8, consumers=1, stream_k=2);S(128, 128, 64, 6);S(128, 128, 64, 6, stream_k=2)" ;;
  esac
done
