#!/usr/bin/env bash
# Device session 29 (issue 8): split-K's fixed cost in the estimate by form (the in-kernel sum by blocks
# against the reduction kernel) at small and skinny shapes, and the promoted fp8 kernel's register epilogue.
# Usage: bash benchmarks/device_session29.sh [small_split|fp8_split|split_tests|fp8_ep|fp32_out|sm90_tests|fp8_sweep|with_c ...]
# small_split: at the shapes whose pick a lower block-form cost changes, the pick against 64x128 in 4, 8 and
# 16 splits, 128x128 in 4 and whole 64x64 tiles; fp8_split: the same for e4m3 (promoted), tc.gemm's pick against
# the pick with the old 10 µs block-form cost; split_tests: session 28's split-K GPU cases; fp8_ep: promoted fp8 128x128 with the TMA-store epilogue
# against the register epilogue (6 and 7 stages); fp32_out: fp32 D through the TMA store against the register
# epilogue (bf16 and fp8 operands; SHAPES applies to both); fp8_sweep: e4m3 at issue 8's 40 LLM shapes, the pick against the three
# promoted tiles (128x128, 64x128, 64x64) and _scaled_mm; with_c: D = A @ B + C against torch.addmm, the pick
# and 128x256 in 2x1 clusters; sm90_tests: the Hopper GEMM's GPU tests and the launch plans. SHAPES,
# CONFIGS and ROUNDS override the defaults.
source "$(dirname "$0")/device_env.sh"
SMALL="64x256x4096,64x512x4096,64x1024x4096,64x2048x4096,64x2048x8192,128x256x4096,128x512x4096,128x1024x4096,128x2048x8192,256x256x4096,256x512x4096,256x1024x4096,256x1024x8192,256x2048x16384,512x256x4096,512x512x4096,512x1024x8192,1024x256x4096,1024x256x8192,1024x512x8192,64x256x32768,64x256x65536"
for part in ${*:-small_split fp8_ep}; do
  case $part in
  small_split)
    echo "== split-K at small shapes: the pick against 64x128 in splits, 128x128 in 4, 64x64 whole"
    LLM_S=${LLM_S:-400} llm_probe small_split "$SMALL" \
      "S(64, 128, 64, 8, consumers=1, splits=4);S(64, 128, 64, 8, consumers=1, splits=8);S(64, 128, 64, 8, consumers=1, splits=16);S(128, 128, 64, 6, splits=4);S(64, 64, 64, 8, consumers=1)" ;;
  fp8_split)
    echo "== fp8 e4m3 at small shapes: the pick against the pick with the block form's old cost (x _scaled_mm)"
    fp8_pick_probe fp8_split "op._SPLIT_BLOCKS_NS = op._SPLIT_REDUCE_NS" \
      "${SHAPES:-128x4096x14336 64x256x4096 64x256x65536 128x1024x4096 256x512x4096 256x2048x8192 512x512x4096 1024x512x8192 128x256x32768 64x2048x4096}" ;;
  split_tests)
    bash benchmarks/device_session28.sh split_tests ;;
  fp8_ep)
    echo "== fp8 e4m3 promoted 128x128: TMA-store epilogue against the register epilogue (bf16 out, x _scaled_mm)"
    fp8_probe fp8_ep "4096x4096x4096,8192x8192x8192" \
      "S(128, 128, 128, stages=6, promote=True);S(128, 128, 128, stages=6, promote=True, tma_store=False);S(128, 128, 128, stages=7, promote=True, tma_store=False);S(128, 128, 128, stages=6, tma_store=False)" ;;
  fp32_out)
    echo "== fp32 D: the TMA store against the register epilogue (bf16 operands, x cuBLAS with fp32 out)"
    llm_probe fp32_out "4096x4096x4096,8192x8192x8192,1024x8192x8192,256x8192x8192" \
      "S(128, 256, 64, 4, cluster_m=2, tma_store=False);S(128, 128, 64, 6, tma_store=False);S(128, 128, 64, 6)" \
      --out-dtype float32
    echo "== fp32 D, fp8 e4m3 promoted: the TMA store against the register epilogue (x _scaled_mm with fp32 out)"
    CONFIGS= fp8_probe fp32_out "4096x4096x4096,8192x8192x8192" "S(128, 128, 128, stages=6, promote=True, tma_store=False)" \
      --out-dtype float32 ;;
  fp8_sweep)
    echo "== fp8 e4m3 at the 40 LLM shapes: the pick against the three promoted tiles (bf16 out, x _scaled_mm)"
    FP8_S=${FP8_S:-500} fp8_probe fp8_sweep \
      "$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from probe_llm import LLM_NK; print(','.join(f'{m}x{n}x{k}' for m in (128, 256, 1024, 4096, 8192) for n, k in LLM_NK))")" \
      "S(128, 128, 128, stages=6, promote=True);S(64, 128, 128, stages=8, consumers=1, promote=True);S(64, 64, 128, stages=8, consumers=1, promote=True)" ;;
  with_c)
    echo "== D = A @ B + C (bf16): the pick against torch.addmm"
    llm_probe with_c "4096x4096x4096,8192x8192x8192,1024x8192x8192,2048x2048x2048,256x8192x8192,4096x4096x14336" \
      "S(128, 256, 64, 4, cluster_m=2)" --with-c ;;
  sm90_tests)
    echo "== the Hopper GEMM's GPU tests and the launch plans"
    gpu_tests sm90_tests "${TESTS_S:-500}" tests/sm90 tests/gemm/test_plans_gpu.py ;;
  esac
done
