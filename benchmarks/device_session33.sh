#!/usr/bin/env bash
# Thirty-third session (issue 8): why a 2-CTA cluster costs the bf16 Hopper GEMM cycles (L2's request coalescer),
# and the 128x128 tile without one. Usage: bash benchmarks/device_session33.sh [lrc|raster|big|multi|one_round_256|launch_only|placement|smmap|strided|tests ...]
# - lrc: Nsight Compute at bf16 4096^3 (SHAPES overrides): the 128x128 tile without a cluster, in raster groups of
#   16, in 2x1 clusters with and without multicast (cluster launch only needs
#   `git apply benchmarks/patches/cluster_share_probe.diff`; without it run CONFIGS of main's forms) and 1x2; time,
#   cycles, L2 requests coalesced by hardware and by multicast, sectors reaching L2 (benchmarks/ncu_columns.py);
# - raster: the same forms timed at 4096^3 and 8192^3 (x cuBLAS);
# - big: the 128x256 tile with and without 2x1 / 1x2 clusters, in raster groups of 4 and 16, and 256x128, under
#   Nsight Compute at 4096^3 and 8192^3 and timed at five big shapes; then 3 s back to back at 8192^3 and
#   4096x28672x4096 (clock, power, J per TFLOP);
# - multi: where 128x128 in a 2x1 cluster was picked for several rounds of tiles, with and without the cluster;
# - one_round_256: one round of 128x256 tiles (1024x4096): stream-K, clusters, raster 16, cuBLAS's 256x128 in 1x2;
# - launch_only (after applying the patch, which has share=-1: a cluster launch whose CTAs walk the tiles as
#   without one): ncu at 4096^3 and timed at three shapes, against the same tiles without a cluster;
# - placement (patch): the same walk with a cluster's CTAs half a grid apart, and the walk by SM (%smid);
# - smmap: which SM each CTA of the unclustered and the 2x1 grid runs on (probe_sm90_timeline.py);
# - strided (patch): main's 2x1 cluster with cluster c starting at unit 7c mod clusters;
# - tests: the Hopper GEMM's GPU tests and the launch plans.
# (device_session32.sh one_round, one_m and sweep_ab ran in this session too.)
source "$(dirname "$0")/device_env.sh"
LRC_CFGS="S(128, 128, 64, 6);S(128, 128, 64, 6, raster=16);S(128, 128, 64, 6, cluster_m=2, share=0, raster=4);S(128, 128, 64, 6, cluster_m=2, raster=4);S(128, 128, 64, 6, cluster_n=2, share=0);S(128, 128, 64, 6, cluster_m=2, share=0)"
BIG_CFGS="S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2);S(128, 256, 64, 4, cluster_n=2);S(256, 128, 64, 3);S(256, 128, 64, 3, cluster_n=2);S(128, 256, 64, 4, raster=4);S(128, 256, 64, 4, raster=16);S(128, 256, 64, 4, cluster_m=2, raster=4)"
METRICS=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import ncu_columns; print(ncu_columns.NCU_METRICS)")
ncu_at() {  # ncu_at SHAPE CONFIGS NAME: every config and cuBLAS under Nsight Compute, as columns
  local which cfgs=$2 i=0
  which=cublas; IFS=';' read -ra list <<< "$cfgs"; for _ in "${list[@]}"; do which="$which,cfg$i"; i=$((i + 1)); done
  timeout "${NCU_S:-200}" ncu --profile-from-start off --clock-control none --metrics "$METRICS" \
    python3 benchmarks/ncu_gemm.py --dtype bfloat16 --shape "$1" --configs "$cfgs" --which "$which" > "$OUT/$3_$1.txt" 2>&1
  python3 benchmarks/ncu_columns.py "$OUT/$3_$1.txt"
}
probe_pair() {  # probe_pair NAME SHAPES NCU_CONFIGS [TIMED_CONFIGS]: lrc's ncu at 4096^3, then timed at SHAPES
  CONFIGS="$3" bash "$0" lrc
  ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-150} llm_probe "$1" "$2" "${4:-$3}"
}
for part in ${*:-lrc}; do
  case $part in
  lrc)
    for shape in ${SHAPES:-4096x4096x4096}; do ncu_at "$shape" "${CONFIGS:-$LRC_CFGS}" lrc; done ;;
  raster)
    ROUNDS=${ROUNDS:-3} LLM_S=${LLM_S:-200} llm_probe raster "4096x4096x4096,8192x8192x8192" "$LRC_CFGS" ;;
  big)
    for shape in ${SHAPES:-4096x4096x4096 8192x8192x8192}; do ncu_at "$shape" "$BIG_CFGS" big; done
    ROUNDS=${ROUNDS:-3} LLM_S=${LLM_S:-240} llm_probe big \
      "4096x4096x4096,8192x8192x8192,4096x28672x4096,4096x8192x8192,8192x28672x4096" "$BIG_CFGS"
    ROUNDS=3 LLM_S=150 llm_probe sustain "8192x8192x8192,4096x28672x4096" \
      "S(128, 256, 64, 4);S(128, 256, 64, 4, raster=4);S(128, 128, 64, 6)" --sustain 3 ;;
  multi)
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-200} llm_probe multi \
      "1024x14336x4096,1024x14336x14336,1024x10240x28672,6144x1024x28672,512x28672x28672,1024x2048x14336,512x4096x8192" \
      "S(128, 128, 64, 6, cluster_m=2)" ;;
  one_round_256)
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-150} llm_probe one_round_256 "1024x4096x4096,1024x4096x14336,1024x8192x2048" \
      "S(128, 256, 64, 4, stream_k=1);S(128, 256, 64, 4, cluster_m=2);S(128, 256, 64, 4, cluster_n=2);S(256, 128, 64, 3, cluster_n=2);S(128, 256, 64, 4, raster=16)" ;;
  launch_only)
    LLM_S=${LLM_S:-200} probe_pair launch_only "1024x2048x4096,4096x4096x4096,8192x8192x8192" \
      "S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2, share=-1);S(128, 128, 64, 6, cluster_m=2, share=0);S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2, share=-1)" \
      "S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2, share=-1);S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2, share=-1);S(128, 256, 64, 4, cluster_m=2)" ;;
  strided)
    echo "== (patch) main's 2x1 cluster with the clusters strided by 7 over the units (share=3)"
    LLM_S=${LLM_S:-120} probe_pair strided "1024x2048x4096,4096x4096x4096,8192x8192x8192" \
      "S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2);S(128, 128, 64, 6, cluster_m=2, share=3);S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2);S(128, 256, 64, 4, cluster_m=2, share=3)" ;;
  smmap)
    echo "== blockIdx -> SM of the unclustered and the 2x1 grid (per-CTA timelines), twice"
    for i in 1 2; do
      timeout 120 python3 benchmarks/probe_sm90_timeline.py --shape 4096x4096x4096 --ctas 132 --calls 3 \
        --configs "S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2)" > "$OUT/smmap$i.md" 2>&1
    done ;;
  placement)
    echo "== (patch) the tile walk against the SMs: pairs half a grid apart (share=-2), the walk by %smid (-3)"
    probe_pair placement "1024x2048x4096,4096x4096x4096" \
      "S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2, share=-1);S(128, 128, 64, 6, cluster_m=2, share=-2);S(128, 128, 64, 6, share=-3);S(128, 128, 64, 6, cluster_m=2, share=-3)" ;;
  tests)
    echo "== the Hopper GEMM's GPU tests and the launch plans"
    gpu_tests sm90_gemm_tests "${TESTS_S:-300}" tests/sm90/test_gemm_sm90.py tests/gemm/test_plans_gpu.py ;;
  esac
done
