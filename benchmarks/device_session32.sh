#!/usr/bin/env bash
# Thirty-second session (issue 8): what a 2-CTA cluster costs the bf16 Hopper GEMM where it should save L2 traffic.
# Usage: bash benchmarks/device_session32.sh [ncu_cl|unclustered|mid|two_m|one_m|sweep_ab|one_round|cluster_probe|sweep|tests ...]
# - ncu_cl: Nsight Compute at bf16 SHAPES (4096^3 and 1024x8192x8192) for cuBLAS and the 128x128 / 128x256 tiles
#   without a cluster, in 2x1 and in 1x2 (CONFIGS overrides): time, clock, tensor pipes, DRAM and L2 bytes, stalls;
# - unclustered: those tiles timed against the pick and cuBLAS at the bf16 sweep's losing shapes;
# - mid: unclustered 128x256 / 128x128 / 128x192 where each CTA computes a few tiles (5 rounds);
# - two_m: the clustered picks at M = 256 against the same tiles without a cluster;
# - one_m: at M = 128 (streaming B), the pick against stream-K, 64x256 and 128x128;
# - sweep_ab: the 40 LLM shapes, the picks against 9aa1d2d's (benchmarks/picks/) where they differ;
# - one_round: where 128x128 in 2x1 clusters is still picked (one round of tiles), the tile without a cluster;
# - cluster_probe (after `git apply benchmarks/patches/cluster_share_probe.diff`): ncu and timed, the cluster
#   launch alone, its coupled stages without multicast, and both (main's kernel);
# - sweep: issue 8's bf16 sweep (tc.gemm's picks, 3 rounds); tests: the Hopper GEMM's GPU tests and the launch plans.
source "$(dirname "$0")/device_env.sh"
CL_CFGS="S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2);S(128, 128, 64, 6, cluster_n=2);S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2)"
NCU_METRICS="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,lts__t_bytes.sum,smsp__inst_executed.sum"
for part in ${*:-ncu_cl}; do
  case $part in
  ncu_cl)
    echo "== ncu: bf16, cuBLAS and 128x128 / 128x256 tiles with and without 2-CTA clusters"
    for shape in ${SHAPES:-4096x4096x4096 1024x8192x8192}; do
      timeout "${NCU_S:-200}" ncu --profile-from-start off --clock-control none \
        --metrics "$NCU_METRICS,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" python3 benchmarks/ncu_gemm.py --dtype bfloat16 --shape "$shape" \
        --configs "${CONFIGS:-$CL_CFGS}" --which "${WHICH:-cublas,cfg0,cfg1,cfg2,cfg3,cfg4}" > "$OUT/ncu_cl_$shape.txt" 2>&1
      echo "-- $shape"
      grep -E "^cfg|profiled|gpu__time|cycles_elapsed|pipe_tensor|dram__bytes|hit_rate|lts__t_bytes|inst_executed|stalled|==ERR" \
        "$OUT/ncu_cl_$shape.txt" | head -150
    done ;;
  unclustered)
    echo "== bf16 at the sweep's losing shapes: the pick against 128x256 and 128x128 with and without a 2x1 cluster"
    LLM_S=${LLM_S:-420} llm_probe unclustered \
      "256x8192x8192,256x8192x28672,1024x4096x4096,1024x4096x14336,1024x8192x8192,1024x10240x8192,1024x57344x8192,4096x28672x4096,4096x8192x28672,8192x28672x4096,8192x10240x8192,8192x8192x8192,8192x57344x8192" \
      "S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2);S(128, 128, 64, 6)" ;;
  mid)
    echo "== bf16 where each CTA computes a few tiles: unclustered 128x256, 128x128 and 128x192 (x cuBLAS)"
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-420} llm_probe mid \
      "1024x4096x4096,1024x4096x14336,1024x8192x8192,4096x4096x4096,4096x4096x14336,2048x2048x2048,2048x4096x4096,512x8192x4096,384x10240x4096,1536x8192x4096,2048x6144x4096,4096x2048x4096,1024x8192x2048,3072x4096x4096,4096x3072x8192" \
      "S(128, 256, 64, 4);S(128, 128, 64, 6);S(128, 192, 64, 4)" ;;
  two_m)
    echo "== bf16 at two m-tiles (M = 256): the clustered picks against the same tiles without a cluster (x cuBLAS)"
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-300} llm_probe two_m "256x8192x8192,256x57344x8192,256x8192x28672,256x28672x4096" \
      "S(128, 128, 64, 6);S(128, 256, 64, 4)" ;;
  one_m)
    echo "== bf16 at one m-tile (M = 128, streaming B): the pick against stream-K, 64x256 and 128x128 (x cuBLAS)"
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-300} llm_probe one_m "128x57344x8192,128x28672x4096,128x10240x8192,128x4096x4096" \
      "S(128, 256, 64, 4, stream_k=1);S(128, 256, 64, 4, stream_k=2);S(64, 256, 64, 5, consumers=1);S(128, 128, 64, 6)" ;;
  sweep_ab)
    echo "== the 40 LLM shapes: tc.gemm's picks against 9aa1d2d's (before this session) where they differ (x cuBLAS)"
    timeout "${SWEEP_S:-480}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds "${ROUNDS:-3}" --picks \
      --baseline "${BASELINE:-benchmarks/picks/bf16_9aa1d2d.json}" 2>&1 | tee -a "$OUT/sweep_ab.md" ;;
  one_round)
    echo "== bf16, 128x128 picked in 2x1 clusters at one round of tiles: the same tile without a cluster (x cuBLAS)"
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-300} llm_probe one_round \
      "512x4096x4096,1024x2048x4096,2048x1024x4096,1536x1024x8192,512x28672x4096,512x4096x14336" "S(128, 128, 64, 6)" ;;
  cluster_probe)
    echo "== (cluster_share_probe.diff) ncu: where the 2x1 cluster's cycles go: a cluster launch only (share=0), stages"
    echo "   coupled without multicast (share=1), multicast and coupled (share=2, main's kernel)"
    PROBE_CFGS="S(128, 128, 64, 6);S(128, 128, 64, 6, cluster_m=2, share=0);S(128, 128, 64, 6, cluster_m=2, share=1);S(128, 128, 64, 6, cluster_m=2);S(128, 256, 64, 4);S(128, 256, 64, 4, cluster_m=2, share=0);S(128, 256, 64, 4, cluster_m=2, share=1);S(128, 256, 64, 4, cluster_m=2)"
    CONFIGS="$PROBE_CFGS" WHICH=cfg0,cfg1,cfg2,cfg3,cfg4,cfg5,cfg6,cfg7 bash "$0" ncu_cl
    echo "-- L2 sectors by source unit (SMs, the other L2 partition, ...) at 4096^3, cuBLAS first"
    timeout 200 ncu --profile-from-start off --clock-control none \
      --metrics "gpu__time_duration.sum,lts__t_sectors.sum,regex:^lts__t_sectors_srcunit_[a-z]+\.sum$" \
      python3 benchmarks/ncu_gemm.py --dtype bfloat16 --n 4096 --configs "$PROBE_CFGS" \
      --which cublas,cfg0,cfg1,cfg2,cfg3,cfg4,cfg5,cfg6,cfg7 > "$OUT/ncu_l2src.txt" 2>&1
    grep -E "^cfg|gpu__time|lts__t_sectors|==ERR|==WARN" "$OUT/ncu_l2src.txt" | head -120
    ROUNDS=${ROUNDS:-5} LLM_S=${LLM_S:-300} llm_probe cluster_probe "4096x4096x4096,1024x8192x8192,8192x8192x8192" "$PROBE_CFGS" ;;
  sweep)
    SWEEP_S=${SWEEP_S:-480} bash "$(dirname "$0")/device_session21.sh" sweep ;;
  tests)
    echo "== the Hopper GEMM's GPU tests (tc.gemm's picks among them) and the launch plans"
    gpu_tests sm90_gemm_tests "${TESTS_S:-300}" tests/sm90/test_gemm_sm90.py tests/gemm/test_plans_gpu.py ;;
  esac
done
