#!/usr/bin/env bash
# Fifty-ninth session (issues 7, 8, 9 on an H200): where the M = 128 shapes lose time against cuBLAS; programmatic
# dependent launches for the Hopper GEMM (measured, reverted); the clock and power under the issues' numbers.
# The session's runs: 1 `tl floor`; 2 `stride`; 3 `sk`; 4 `c21`; 5 `pdl_tests pdl` and 6 `chain pf` (at d28cd30);
# 7 `seams` host-bound (superseded); 8 `seams` (dbe6f27); 9 `seams` (f7aa9b8); 10 `power seams`; 11 `two_m`;
# 12 `pair`; 13 `c192`; 14 `mixed`; 15 `sm90_tests`.
# Usage: bash benchmarks/device_session59.sh [tl|stride|sk|c21|pdl_tests|chain|pdl|pf|seams|power|two_m|pair|c192|mixed|
#   sm90_tests|floor ...]
# - tl: per-CTA timelines (probe_sm90_timeline.py) at 128x8192x8192 and 128x4096x14336: the picks, 128x64 with and
#   without a 1x2 cluster, 64x128 in 2 splits;
# - stride: the pick's timelines at 128x8192x8192 (every CTA listed) and at K = 8256 / 8320, whose rows of B do not
#   lie a power of two apart;
# - sk: stream-K and split-K forms at the M = 128 / 256 losses (probe_llm.py, 3 rounds in turn);
# - c21: one-consumer tiles in 2x1 clusters (B multicast to both m-tiles of M = 128) at the M = 128 / 256 losses;
# The PDL parts ran the Hopper GEMM as programmatic dependent launches, an experiment that was measured and reverted:
# check out its last commit (f7aa9b8; d28cd30 for the runs before the late trigger) to run them again.
# - pdl_tests: tests/sm90's GPU tests (with the kernel launched as programmatic dependent launches);
# - chain: only the dependent chains of tc.gemm calls in tests/sm90 (test_gpu_dependent_chain_...);
# - pdl: issue 8's 40-shape sweep, every pick with and without pdl (probe_llm.py --picks --no-pdl, 3 rounds in turn);
# - pf: the pick with its first 2 / 4 / 8 k-tiles asked of L2 before griddep_wait (Sm90Config.pdl_prefetch), and
#   without pdl, at the M = 128 / 256 shapes and six others (probe_llm.py --variants, 3 rounds in turn);
# - seams: 8 launches back to back behind a GPU spin, their CTAs' starts, main-loop begins and ends
#   (probe_sm90_timeline.py --stream 8) at 128x8192x8192, 256x4096x4096, 4096x4096x4096 and 128x10240x8192 (the
#   picks). At dbe6f27: with pdl (the trigger at the start), without, and with pdl and an event between launches; at
#   f7aa9b8: with pdl (the trigger after the producer's last load), without, and with the trigger at the start; at
#   main: plain launches, without and with an event between them.
# - power: the SM clock and power that 3 s of back-to-back calls sustain at 4096³ and 8192³ (bf16; cuBLAS and the
#   pick, probe_llm.py --sustain 3), and the sm80 kernel's at 4096³ (fp16 / bf16: cuBLAS, the pick and 256x128x64 in
#   3 stages, probe_tensorop.py --sustain 3);
# - two_m: two m-tiles of one n-tile in a 2x1 cluster (B multicast) at M = 128 / 256 (probe_llm.py, 3 rounds);
# - pair: every M = 128 / 256 shape of issue 8's sweep, the pick against the pick in a 2x1 cluster (probe_llm.py
#   --variants cluster_m=2, 5 rounds in turn);
# - c192: the 64x192 picks of two m-tiles (M = 65..128, N = 9216..12288) against the same tile in a 2x1 cluster
#   (probe_llm.py --variants cluster_m=2, 5 rounds in turn);
# - mixed: issue 9 at N = K = 8192 (bench_mixed.py --quick: M = 1..16 and 128 against cuBLAS fp16 / bf16, per
#   call; bench_decode.py --quick at M = 1, 8, 16: streams of calls);
# - sm90_tests: tests/sm90/test_gemm_sm90.py's GPU tests (gpu_tests, 260 s);
# - floor: the read floor of 136 MB (128x8192x8192's B and A) as a PDL stream (probe_read_floor.py).
source "$(dirname "$0")/device_env.sh"
M128=128x4096x14336,128x8192x8192,128x10240x8192,256x4096x4096,256x10240x8192
for part in ${*:-tl}; do
  case $part in
  tl)
    timelines 128x8192x8192 "S(64,128,64,8,consumers=1);S(128,64,64,8);S(128,64,64,8,cluster_n=2)"
    timelines 128x4096x14336 "S(64,64,64,8,consumers=1);S(64,128,64,8,consumers=1,splits=2);\
S(128,64,64,8,cluster_n=2,splits=2)" ;;
  stride)
    TL_ARGS="--ctas 132" timelines 128x8192x8192 "S(64,128,64,8,consumers=1)"
    timelines "128x8192x8256 128x8192x8320" "S(64,128,64,8,consumers=1);S(128,64,64,8)" ;;
  sk) ROUNDS=3 llm_probe sk 128x4096x14336,128x8192x8192,128x10240x8192,256x10240x8192 \
    "S(64,128,64,8,consumers=1,stream_k=1);S(64,128,64,8,consumers=1,stream_k=2);S(128,64,64,8,stream_k=1);\
S(64,192,64,6,consumers=1,stream_k=1);S(128,128,64,6,stream_k=1);S(128,192,64,4,stream_k=1);\
S(64,64,64,8,consumers=1,stream_k=1);S(64,128,64,8,consumers=1,splits=2)" ;;
  c21) ROUNDS=3 llm_probe c21 128x4096x14336,128x8192x8192,128x10240x8192,256x4096x4096 \
    "S(64,128,64,8,consumers=1,cluster_m=2);S(64,192,64,6,consumers=1,cluster_m=2);\
S(64,64,64,8,consumers=1,cluster_m=2);S(64,256,64,5,consumers=1,cluster_m=2);\
S(64,128,64,8,consumers=1,cluster_m=2,splits=2)"
    timelines 128x8192x8192 "S(64,128,64,8,consumers=1,cluster_m=2)" ;;
  pdl_tests) gpu_tests pdl_tests 420 tests/sm90 ;;
  chain) gpu_tests chain 200 tests/sm90/test_gemm_sm90.py -k chain ;;
  pdl) timeout "${SWEEP_S:-500}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds 3 --picks --no-pdl 2>&1 \
    | tee "$OUT/pdl.md" ;;
  pf) timeout 400 python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds 3 --shapes "$M128,128x4096x4096,\
128x6144x4096,256x4096x14336,256x8192x8192,1024x8192x8192,4096x4096x4096,4096x6144x4096,8192x8192x8192" \
    --variants "pdl_prefetch=2;pdl_prefetch=4;pdl_prefetch=8;pdl=False" 2>&1 | tee "$OUT/pf.md" ;;
  seams)
    TL_ARGS="--stream 8" timelines 128x8192x8192 "S(64,128,64,8,consumers=1)"
    TL_ARGS="--stream 8" timelines 256x4096x4096 "S(64,128,64,8,consumers=1)"
    TL_ARGS="--stream 8" timelines 4096x4096x4096 "S(128,256,64,4)"
    TL_ARGS="--stream 8" timelines 128x10240x8192 "S(64,192,64,6,consumers=1)" ;;
  power)
    timeout 200 python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds 3 --shapes 4096x4096x4096,8192x8192x8192 \
      --variants "raster=8" --sustain 3 2>&1 | tee "$OUT/power_sm90.md"
    timeout 200 python3 benchmarks/probe_tensorop.py --rounds 3 --sustain 3 \
      --configs "pick;T(256, 128, 64, 4, 2, stages=3, lean_loop=True, smem_epilogue=True)" 2>&1 \
      | tee "$OUT/power_sm80.md" ;;
  two_m) ROUNDS=3 llm_probe two_m 128x10240x8192,256x10240x8192,256x8192x8192,256x6144x4096,256x28672x4096 \
    "S(64,192,64,6,consumers=1,cluster_m=2);S(128,192,64,4,cluster_m=2);S(128,128,64,6,cluster_m=2);\
S(128,256,64,4,cluster_m=2)" ;;
  pair) timeout 400 python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds 5 --variants "cluster_m=2" --shapes \
128x4096x4096,128x6144x4096,128x28672x4096,128x4096x14336,128x8192x8192,128x10240x8192,128x57344x8192,128x8192x28672,\
256x4096x4096,256x6144x4096,256x28672x4096,256x4096x14336,256x8192x8192,256x10240x8192,256x57344x8192,256x8192x28672 \
    2>&1 | tee "$OUT/pair.md" ;;
  c192) timeout 400 python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds 5 --variants "cluster_m=2" --shapes \
128x9216x4096,128x9216x14336,128x11264x8192,128x12288x4096,128x12288x14336,96x10240x8192,128x10240x4096,\
128x10240x28672,80x12288x8192 2>&1 | tee "$OUT/c192.md" ;;
  mixed)
    timeout 240 python3 benchmarks/bench_mixed.py --quick 2>&1 | tee "$OUT/mixed.md" | grep -v "^|---"
    decode decode 1,8,16 ;;
  sm90_tests) gpu_tests sm90_gemm 260 tests/sm90/test_gemm_sm90.py ;;
  floor) timeout 200 python3 benchmarks/probe_read_floor.py --mb 136 --ldg "528,256,4;264,256,8" \
    --bulk "264,4,16;132,8,16" --ring "" 2>&1 | tee "$OUT/floor.md" ;;
  esac
done
