#!/usr/bin/env bash
# Device session 30 (issue 8): fp8 promotion with two accumulator sets (the sums take in k-tile j - 1 while
# k-tile j's wgmmas run), k-block descriptors stepped from the first, and where the promoted kernel's cycles go.
# Usage: bash benchmarks/device_session30.sh [span|ncu_fp8|fp8_sweep|fp8_rates|sweep|sm90_tests|mixed_tests ...]
# span: CUDA-event time against the kernels' own time (torch.profiler) for tc.gemm and cuBLAS; ncu_fp8:
# Nsight Compute at e4m3 4096^3 (tensor pipes busy, cycles, instructions, stalls) for _scaled_mm and tc.gemm,
# both modes; fp8_sweep: e4m3 at issue 8's 40 LLM shapes, tc.gemm's (lagged) pick against the 128x128 tile
# that waits for whole k-tiles (232 registers) and the lagged 64x128 / 64x64 tiles, x _scaled_mm, then each
# back to back for SUSTAIN seconds at 8192^3; fp8_rates: at shapes whose fp8 pick _FP8_RATE and the block form's 3 µs
# change, tc.gemm's pick against the pick without them; sweep: issue 8's bf16 sweep; sm90_tests / mixed_tests: the
# Hopper GEMM's GPU tests and the launch plans / the Hopper mixed-input kernels' GPU tests. SHAPES, CONFIGS,
# ROUNDS override the defaults.
source "$(dirname "$0")/device_env.sh"
LAG="producer_regs=24, consumer_regs=240"
for part in ${*:-ncu_fp8 fp8_sweep}; do
  case $part in
  span)
    timeout 300 python3 benchmarks/probe_kernel_span.py \
      --shapes "${SHAPES:-1024x4096x4096,128x4096x4096,1024x8192x8192,256x8192x8192,4096x4096x4096,128x8192x8192}" \
      2>&1 | tee "$OUT/span.md" ;;
  ncu_fp8)
    echo "== ncu: e4m3 4096^3, _scaled_mm and tc.gemm in both modes"
    timeout 300 ncu --profile-from-start off --clock-control none --metrics \
      "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio" \
      python3 benchmarks/ncu_gemm.py --dtype float8_e4m3fn --n 4096 --which cublas,cublas_fast,sm90,sm90_fast \
      > "$OUT/ncu_fp8.txt" 2>&1
    grep -E "profiled|gpu__time|cycles_elapsed|inst_executed|issue_active|pipe_tensor" "$OUT/ncu_fp8.txt" ;;
  fp8_sweep)
    echo "== fp8 e4m3 at the 40 LLM shapes: the lagged pick against 128x128 waiting for whole k-tiles (bf16 out, x _scaled_mm)"
    FP8_S=${FP8_S:-500} fp8_probe fp8_sweep \
      "$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from probe_llm import LLM_NK; print(','.join(f'{m}x{n}x{k}' for m in (128, 256, 1024, 4096, 8192) for n, k in LLM_NK))")" \
      "S(128, 128, 128, stages=6, promote=True);S(64, 128, 128, stages=8, consumers=1, promote=True, $LAG);S(64, 64, 128, stages=8, consumers=1, promote=True, $LAG)"
    SHAPES=8192x8192x8192 FP8_S=200 fp8_probe fp8_sustain "" "S(128, 128, 128, stages=6, promote=True)" \
      --rounds 1 --sustain "${SUSTAIN:-3}" ;;
  fp8_rates)
    # tc.gemm's fp8 pick against the pick of the estimate before _FP8_RATE (16-bit rates, split-K's 10 µs)
    echo "== fp8 e4m3: tc.gemm's pick against the pick with 16-bit rates and split-K's 10 µs (x _scaled_mm)"
    fp8_pick_probe fp8_rates "op._FP8_RATE, op._SPLIT_BLOCKS_NS = 1.0, op._SPLIT_REDUCE_NS" \
      "${SHAPES:-128x8192x28672 64x256x16384 64x512x65536 64x1024x16384 128x256x65536 128x512x16384 128x1024x65536 256x512x65536 512x512x16384 1024x256x16384}" ;;
  sweep)
    SWEEP_S=${SWEEP_S:-500} bash benchmarks/device_session21.sh sweep ;;
  sm90_tests)
    echo "== the Hopper GEMM's GPU tests and the launch plans"
    gpu_tests sm90_tests "${TESTS_S:-500}" tests/sm90 tests/gemm/test_plans_gpu.py ;;
  mixed_tests)
    echo "== the Hopper mixed-input kernels' GPU tests"
    gpu_tests mixed_tests "${TESTS_S:-560}" tests/quant/test_sm90_mixed.py tests/quant/test_sm90_mixed_rs.py ;;
  esac
done
