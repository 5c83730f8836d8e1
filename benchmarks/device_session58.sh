#!/usr/bin/env bash
# Fifty-eighth session (issues 7, 8, 9 on an H200): the 40-shape LLM sweep, the M = 128 / 256 tilings, the sm80 kernel
# at 4096³, the mixed-input GEMM against dense at M >= 1024.
# Usage: bash benchmarks/device_session58.sh [top|sweep|llm|run2|run5|run6|run7|run8|cublas|ge1024 ...]
# The session's runs: 1 `TOP_ROUNDS=3 SWEEP_S=440 ... top sweep`; 2 `run2`; 3 `MIXED_S=200 ... ge1024`; 4 `cublas`, then
# probe_tensorop.py with issue 7's tilings (3 rounds); 5-8 `run5` .. `run8`.
# - top: probe_tensorop.py at 4096³ (the sm80 pick and tilings against cuBLAS, TOP_ROUNDS rounds in turn);
# - sweep: probe_llm.py --picks at issue 8's 40 LLM shapes (device_session21.sh sweep, SWEEP_S seconds);
# - llm: probe_llm.py --configs CONFIGS at SHAPES (device_session21.sh llm); run2 .. run8: the same (device_env.sh's
#   llm_probe, into $OUT/runN.md) with each run's shapes, configurations and rounds (M = 128 / 256 tilings, 1x2
#   clusters, split-K; run7 is the split-K cost change's old picks, timed against the new ones with that change
#   applied);
# - cublas: the kernels cuBLAS runs at the M = 128 / 256 shapes (benchmarks/cublas_kernels.py);
# - ge1024: tc.gemm's mixed-input GEMM (W4A16 g128, W8A16 per-channel) against tilecraft's dense bf16 and cuBLAS at
#   M = GE_MS for each N x K of GE_NK (bench_mixed_large.py, ROUNDS rounds in turn).
source "$(dirname "$0")/device_env.sh"
M128=128x4096x14336,128x8192x8192,128x10240x8192,256x4096x4096,256x10240x8192
C1X2="S(128,64,64,8,cluster_n=2)"
for part in ${*:-sweep}; do
  case $part in
  top) bash "$(dirname "$0")/device_session52.sh" top ;;
  ge1024)
    for nk in ${GE_NK:-6144x4096 4096x4096 14336x4096 4096x14336 8192x8192 10240x8192 28672x4096}; do
      mixed_large ge1024 --nk "$nk" --ms "${GE_MS:-1024,1152,1536,2048}"
    done ;;
  run2) ROUNDS=3 llm_probe run2 "$M128" "S(128,128,64,6,splits=2);S(128,128,64,6,splits=4);\
S(64,128,64,8,consumers=1,splits=2);S(64,64,64,8,consumers=1,splits=2);S(64,192,64,6,consumers=1);\
S(64,128,64,8,consumers=1,stream_k=1);S(128,128,64,6,stream_k=1);S(128,192,64,4);S(128,64,64,8);\
S(64,256,64,5,consumers=1)" ;;
  run5) ROUNDS=3 llm_probe run5 "$M128,128x6144x4096,256x6144x4096,256x8192x8192" \
    "$C1X2;S(128,64,64,8,cluster_n=2,splits=2);S(128,64,64,6,cluster_n=2);S(128,64,64,8);\
S(64,128,64,8,consumers=1,cluster_n=2);S(128,128,64,6,cluster_n=2)" ;;
  run6) ROUNDS=5 llm_probe run6 128x4096x14336,256x4096x14336,128x8192x28672,128x4096x4096,256x8192x28672 \
    "S(64,128,64,8,consumers=1,splits=2);S(64,128,64,8,consumers=1,splits=3);S(64,64,64,8,consumers=1,splits=2);\
S(128,64,64,8,splits=2);S(128,128,64,6,splits=4)" ;;
  run7) ROUNDS=5 llm_probe run7 64x256x32768,64x256x65536,128x4096x32768,256x4096x16384,512x2048x16384,1024x1024x16384,\
128x4096x14336 "S(64,128,64,8,consumers=1,splits=16);S(128,128,64,6,splits=4);S(64,128,64,8,consumers=1);\
S(128,128,64,6,splits=2)" ;;
  run8) ROUNDS=3 llm_probe run8 128x8192x8192,256x4096x4096 "$C1X2;S(128,64,64,8,cluster_n=2,raster=1);\
S(128,64,64,8,cluster_n=2,raster=2);S(128,64,64,8,cluster_n=2,raster=16);S(128,64,64,8,cluster_n=2,dynamic=True);\
S(128,64,64,8);S(128,64,64,8,raster=1)" ;;
  cublas) python3 benchmarks/cublas_kernels.py --shapes "$M128,128x57344x8192,128x28672x4096" 2>&1 \
    | tee "$OUT/cublas.md" ;;
  sweep|llm) bash "$(dirname "$0")/device_session21.sh" "$part" ;;
  esac
done
