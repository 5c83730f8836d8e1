#!/usr/bin/env bash
# Sixtieth session (issue 7 on an H200): the ceiling of mma.sync under the 700 W limit.
# Usage: bash benchmarks/device_session60.sh [ceiling|prefetch|seams|review|reuse ...]
# - ceiling: probe_mma_ceiling.py, fp16 and bf16: HMMAs from registers, with the GEMM's ldmatrix reads, with its
#   barrier, the GEMM's operand stream with and without that work on it, beside the sm80 GEMM (256x128x64, 3
#   stages) and cuBLAS at 4096³; in turn, then 3 s sustained each with the clock and power sampled. The stream in 3
#   and 4 stages, from DRAM and L2-resident (8 k-tiles per tile), and in 4 stages with each k-tile's copies spread
#   over the k-blocks. Run 1 (e71d6a0) had no stream probes, run 2 only the 3-stage stream from DRAM, run 3 no
#   spread copies.
# - prefetch: the GPU test of hopper.tma_prefetch_tile (session 59's atom, until then compiled only).
# - seams: probe_sm90_timeline.py --stream 8 at two of session 59's shapes, now checking the last launch's D against
#   float64 (session 59 added the check after its runs).
# - review: the GPU tests of the package code changed since d79057f (sessions 57-59: the sm80 GEMM's sliced-K view
#   through dsl.recast_smem, the mixed kernel's reduction in the stages, tma_prefetch_tile), and the probe's
#   start-up after the review (one round, no sustained runs).
# - reuse: the mixed kernel's test of the reduction in the stages alone (run 6's mixed tests ran out of time first).
# Runs: 1-3 ceiling (see above), 4 prefetch ceiling, 5 seams, 6 review, 7 reuse.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-ceiling}; do
  case $part in
  ceiling) timeout 300 python3 benchmarks/probe_mma_ceiling.py --rounds 3 --sustain 3 2>&1 | tee "$OUT/ceiling.md" ;;
  prefetch) gpu_tests prefetch 200 tests/sm90/test_gemm_sm90.py -k prefetch ;;
  seams)
    TL_ARGS="--stream 8" timelines 128x8192x8192 "S(64,128,64,8,consumers=1)"
    TL_ARGS="--stream 8" timelines 4096x4096x4096 "S(128,256,64,4)" ;;
  reuse) gpu_tests reuse 330 tests/quant/test_mixed.py -k reduction_in_the_stages ;;
  review)
    gpu_tests tensorop 240 tests/gemm/test_tensorop.py
    gpu_tests mixed 300 tests/quant/test_mixed.py -k "reduction_in_the_stages or async_copy_stages or random_shapes"
    gpu_tests prefetch 120 tests/sm90/test_gemm_sm90.py -k prefetch
    timeout 200 python3 benchmarks/probe_mma_ceiling.py --rounds 1 --sustain 0 --dtypes bfloat16 2>&1 \
      | tee "$OUT/ceiling_quick.md" | tail -16 ;;
  *) echo "unknown part: $part" ;;
  esac
done
