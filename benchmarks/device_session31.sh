#!/usr/bin/env bash
# Thirty-first session (issue 8): why e4m3 at N = 57344 runs 0.78-0.88x torch._scaled_mm when 8192^3 runs ~1.0x.
# Usage: bash benchmarks/device_session31.sh [ncu_wide|wide|dyn|dyn_fp8|dyn_bf16|ncu_dyn|dyn_cl|dyn_more|wide_pick|fp8_sweep|sm90_tests|fp8_192|one_wave ...]
# ncu_wide: Nsight Compute (speed of light, memory workload: DRAM bytes, L2 hit rate) at e4m3 8192x57344x8192 for
# _scaled_mm, tc.gemm's pick and the lagged 128x128 tile in a 1x2 cluster and at raster 16, then 8192^3 for contrast;
# wide: the same tiles timed (probe_fp8.py) at the wide shapes. SHAPES, CONFIGS, ROUNDS override the defaults.
source "$(dirname "$0")/device_env.sh"
LAG="producer_regs=24, consumer_regs=240"
WIDE_CFGS="S(128, 128, 128, stages=6, promote=True, cluster_n=2, $LAG);S(128, 128, 128, stages=6, promote=True, raster=16, $LAG);S(128, 128, 128, stages=6, promote=True, cluster_m=2, $LAG)"
NCU_METRICS="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_bytes.sum"
for part in ${*:-ncu_wide wide}; do
  case $part in
  ncu_wide)
    echo "== ncu: e4m3 8192x57344x8192 and 8192^3, _scaled_mm, tc.gemm's pick and lagged 128x128 tiles"
    timeout 400 ncu --profile-from-start off --clock-control none --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --metrics "$NCU_METRICS" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --shape 8192x57344x8192 \
      --configs "${CONFIGS:-$WIDE_CFGS}" --which cublas,sm90,cfg0,cfg1,cfg2 > "$OUT/ncu_wide.txt" 2>&1
    timeout 200 ncu --profile-from-start off --clock-control none --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --metrics "$NCU_METRICS" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --n 8192 --which cublas,sm90 > "$OUT/ncu_8192.txt" 2>&1
    grep -E "^cfg|profiled|gpu__time|cycles_elapsed|pipe_tensor|dram__bytes|hit_rate|lts__t_bytes|[0-9]+  *\(|==ERR" \
      "$OUT/ncu_wide.txt" "$OUT/ncu_8192.txt" | grep -v "^$" | head -120 ;;
  wide)
    echo "== fp8 e4m3 at wide shapes: lagged 128x128 tiles in clusters and at raster 16 (x _scaled_mm)"
    FP8_S=${FP8_S:-300} fp8_probe wide "8192x57344x8192,4096x57344x8192,8192x28672x4096,8192x10240x8192" "$WIDE_CFGS" ;;
  dyn)
    echo "== the tile queue (dynamic): GPU tests, then ncu at e4m3 8192x57344x8192 against the static walk"
    gpu_tests dyn_tests "${TESTS_S:-240}" tests/sm90/test_gemm_sm90.py -k "dynamic or matches_float64 or promoted_configs"
    timeout 200 ncu --profile-from-start off --clock-control none --metrics "$NCU_METRICS" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --shape 8192x57344x8192 \
      --configs "S(128, 128, 128, stages=6, promote=True, dynamic=True, $LAG)" --which cublas,sm90,cfg0 > "$OUT/ncu_dyn.txt" 2>&1
    grep -E "^cfg|profiled|gpu__time|cycles_elapsed.avg|pipe_tensor|dram__bytes_read|hit_rate|lts__t_bytes|==ERR" "$OUT/ncu_dyn.txt" ;;
  dyn_fp8)
    echo "== e4m3: tc.gemm's pick (static walk) against the same tile from the queue (x _scaled_mm)"
    FP8_S=${FP8_S:-300} fp8_probe dyn_fp8 \
      "8192x57344x8192,4096x57344x8192,8192x28672x4096,4096x8192x28672,8192x10240x8192,8192x8192x8192,1024x8192x8192,4096x4096x4096" \
      "S(128, 128, 128, stages=6, promote=True, dynamic=True, $LAG)" ;;
  dyn_bf16)
    echo "== bf16: tc.gemm's pick against static and queued tiles without clusters (x cuBLAS)"
    LLM_S=${LLM_S:-300} llm_probe dyn_bf16 \
      "8192x8192x8192,8192x10240x8192,4096x8192x28672,8192x57344x8192,1024x10240x8192,1024x4096x14336,4096x6144x4096" \
      "S(128, 256, 64, 4);S(128, 256, 64, 4, dynamic=True);S(128, 128, 64, 6, dynamic=True)" ;;
  ncu_dyn)
    echo "== ncu: static walk against the queue where the mapping is the same (one wave) and close (4 waves)"
    timeout 150 ncu --profile-from-start off --clock-control none --metrics "$NCU_METRICS,smsp__inst_executed.sum" \
      python3 benchmarks/ncu_gemm.py --dtype bfloat16 --shape 1024x4096x14336 \
      --configs "S(128, 256, 64, 4);S(128, 256, 64, 4, dynamic=True)" --which cfg0,cfg1 > "$OUT/ncu_dyn1.txt" 2>&1
    timeout 150 ncu --profile-from-start off --clock-control none --metrics "$NCU_METRICS,smsp__inst_executed.sum" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --shape 1024x8192x8192 \
      --configs "S(128, 128, 128, stages=6, promote=True, $LAG);S(128, 128, 128, stages=6, promote=True, dynamic=True, $LAG)" \
      --which cfg0,cfg1 > "$OUT/ncu_dyn4.txt" 2>&1
    grep -E "^cfg|gpu__time|cycles_elapsed|pipe_tensor|dram__bytes_read|inst_executed|==ERR" "$OUT/ncu_dyn1.txt" "$OUT/ncu_dyn4.txt" ;;
  dyn_cl)
    echo "== the queue in clusters: GPU tests, ncu at e4m3 8192x57344x8192, then timed (x _scaled_mm / cuBLAS)"
    gpu_tests dyncl_tests "${TESTS_S:-240}" tests/sm90/test_gemm_sm90.py -k "dynamic or dyn or sm90_gemm_matches_float64"
    timeout 200 ncu --profile-from-start off --clock-control none --metrics "$NCU_METRICS" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --shape 8192x57344x8192 --which cublas,sm90,cfg0,cfg1 \
      --configs "S(128, 128, 128, stages=6, promote=True, cluster_n=2, dynamic=True, $LAG);S(128, 128, 128, stages=6, promote=True, cluster_m=2, dynamic=True, $LAG)" \
      > "$OUT/ncu_dyncl.txt" 2>&1
    grep -E "^cfg|profiled|gpu__time|cycles_elapsed.avg|pipe_tensor|dram__bytes_read|hit_rate|lts__t_bytes|==ERR" "$OUT/ncu_dyncl.txt"
    FP8_S=${FP8_S:-240} fp8_probe dyncl_fp8 "8192x57344x8192,4096x57344x8192,8192x28672x4096,8192x8192x8192,4096x4096x4096" \
      "S(128, 128, 128, stages=6, promote=True, cluster_n=2, dynamic=True, $LAG);S(128, 128, 128, stages=6, promote=True, cluster_m=2, dynamic=True, $LAG)" ;;
  dyn_more)
    echo "== e4m3 at more long shapes: the pick against 1x2 clusters from the queue; bf16 128x256 2x1 from the queue"
    gpu_tests dyn_fix2 60 tests/sm90/test_gemm_sm90.py -k "K704"
    FP8_S=${FP8_S:-240} fp8_probe dyn_more_fp8 "4096x28672x4096,8192x10240x8192,8192x8192x28672,4096x8192x28672,1024x57344x8192" \
      "S(128, 128, 128, stages=6, promote=True, cluster_n=2, dynamic=True, $LAG)"
    LLM_S=${LLM_S:-300} llm_probe dyn_more_bf16 \
      "8192x57344x8192,4096x57344x8192,8192x28672x4096,8192x8192x8192,8192x10240x8192,4096x8192x28672,1024x57344x8192" \
      "S(128, 256, 64, 4, cluster_m=2, dynamic=True)" ;;
  wide_pick)
    echo "== e4m3 at the long walks: tc.gemm's pick (1x2 from the queue) against the static walk and 2x2 from the queue"
    FP8_S=${FP8_S:-240} fp8_probe wide_pick "8192x57344x8192,4096x57344x8192,8192x28672x4096" \
      "S(128, 128, 128, stages=6, promote=True, $LAG);S(128, 128, 128, stages=6, promote=True, cluster_m=2, cluster_n=2, dynamic=True, $LAG)" ;;
  fp8_sweep)
    echo "== e4m3 at issue 8's 40 LLM shapes: tc.gemm's picks against _scaled_mm"
    FP8_S=${FP8_S:-420} fp8_probe fp8_sweep \
      "$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from probe_llm import LLM_NK; print(','.join(f'{m}x{n}x{k}' for m in (128, 256, 1024, 4096, 8192) for n, k in LLM_NK))")" "" ;;
  sm90_tests)
    echo "== the Hopper GEMM's GPU tests and the launch plans"
    gpu_tests sm90_tests "${TESTS_S:-400}" tests/sm90 tests/gemm/test_plans_gpu.py ;;
  fp8_192)
    echo "== e4m3: tc.gemm's pick against 128x192 (promoted, not lagged: 96 sums) where it makes one wave"
    FP8_S=${FP8_S:-200} fp8_probe fp8_192 "256x10240x8192,128x10240x8192,256x6144x4096,128x4096x14336,1024x10240x8192" \
      "S(128, 192, 128, stages=4, promote=True)" ;;
  one_wave)
    echo "== e4m3: tc.gemm's pick (128x192 where it makes one wave) against the pick without that rule (x _scaled_mm)"
    fp8_pick_probe one_wave "op._fp8_one_wave = lambda cfg, *shape: cfg" \
      "${SHAPES:-256x10240x8192 256x10240x4096 256x10240x16384 384x8192x4096 384x6144x16384 512x6144x4096 512x6144x16384}" ;;
  esac
done
