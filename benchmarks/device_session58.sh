#!/usr/bin/env bash
# Fifty-eighth session (issues 7, 8, 9 on an H200): the 40-shape LLM sweep, the M = 128 / 256 tilings, the sm80 kernel
# at 4096³, the mixed-input GEMM against dense at M >= 1024.
# Usage: bash benchmarks/device_session58.sh [top|sweep|llm|ge1024 ...]
# The session's runs: 1 `TOP_ROUNDS=3 SWEEP_S=440 ... top sweep`; 2, 5, 6, 7, 8 `llm` with the SHAPES / CONFIGS / ROUNDS
# that RESULTS.md's fifty-eighth entry lists; 3 `MIXED_S=200 ... ge1024`; 4 benchmarks/cublas_kernels.py at the M = 128 /
# 256 shapes, then probe_tensorop.py (issue 7's tilings, 3 rounds).
# - top: probe_tensorop.py at 4096³ (the sm80 pick and tilings against cuBLAS, TOP_ROUNDS rounds in turn);
# - sweep: probe_llm.py --picks at issue 8's 40 LLM shapes (device_session21.sh sweep, SWEEP_S seconds);
# - llm: probe_llm.py --configs CONFIGS at SHAPES (device_session21.sh llm);
# - ge1024: tc.gemm's mixed-input GEMM (W4A16 g128, W8A16 per-channel) against tilecraft's dense bf16 and cuBLAS at
#   M = GE_MS for each N x K of GE_NK (bench_mixed_large.py, ROUNDS rounds in turn).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-sweep}; do
  case $part in
  top) bash "$(dirname "$0")/device_session52.sh" top ;;
  ge1024)
    for nk in ${GE_NK:-6144x4096 4096x4096 14336x4096 4096x14336 8192x8192 10240x8192 28672x4096}; do
      mixed_large ge1024 --nk "$nk" --ms "${GE_MS:-1024,1152,1536,2048}"
    done ;;
  sweep|llm) bash "$(dirname "$0")/device_session21.sh" "$part" ;;
  esac
done
