#!/usr/bin/env bash
# Device session 21 (issue 8): 192-wide tiles and three consumer warpgroups in the Hopper GEMM, at the LLM shapes
# where whole rounds of 128x128 / 128x256 tiles leave SMs idle or cuBLAS runs faster per SM.
# Usage: bash benchmarks/device_session21.sh [sm90_tests|llm|sweep ...]
# sm90_tests: the Hopper GEMM's float64 cases (SM90_K selects); llm: probe_llm.py --configs CONFIGS (';'-separated
# S(...)) at SHAPES, ROUNDS rounds in turn; sweep: probe_llm.py --picks at the 40 LLM shapes.
source "$(dirname "$0")/device_env.sh"
T3="consumers=3, producer_regs=24, consumer_regs=160"
DEFAULT_CONFIGS="S(128, 192, 64, 4);S(192, 192, 64, 3, $T3);S(192, 128, 64, 4, $T3);S(192, 128, 64, 4, $T3, cluster_m=2)"
DEFAULT_CONFIGS+=";S(64, 192, 64, 6, consumers=1)"
DEFAULT_SHAPES="256x10240x8192,256x6144x4096,1024x6144x4096,1024x10240x8192,4096x28672x4096,4096x4096x14336"
DEFAULT_SHAPES+=",8192x4096x14336,1024x28672x4096,1024x8192x28672,4096x10240x8192,8192x6144x4096"
for part in ${*:-llm}; do
  case $part in
  sm90_tests)
    echo "== Hopper GEMM GPU tests"
    gpu_tests sm90_tests 300 tests/sm90/test_gemm_sm90.py -k "${SM90_K:-matches_float64}" ;;
  llm)
    echo "== LLM shapes, candidate tilings in turn"
    timeout "${LLM_S:-500}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds "${ROUNDS:-3}" \
      --shapes "${SHAPES:-$DEFAULT_SHAPES}" --configs "${CONFIGS:-$DEFAULT_CONFIGS}" 2>&1 | tee -a "$OUT/llm.md" ;;
  sweep)
    echo "== the 40 LLM shapes, tc.gemm's pick"
    timeout "${SWEEP_S:-500}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds "${ROUNDS:-3}" --picks \
      2>&1 | tee -a "$OUT/sweep.md" ;;
  esac
done
