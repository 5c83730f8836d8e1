#!/usr/bin/env bash
# Sixtieth session (issue 7 on an H200): the ceiling of mma.sync under the 700 W limit.
# Usage: bash benchmarks/device_session60.sh [ceiling|prefetch ...]
# - ceiling: probe_mma_ceiling.py, fp16 and bf16: HMMAs from registers, with the GEMM's ldmatrix reads, with its
#   barrier, the GEMM's operand stream with and without that work on it, beside the sm80 GEMM (256x128x64, 3
#   stages) and cuBLAS at 4096³; in turn, then 3 s sustained each with the clock and power sampled. The stream in 3
#   and 4 stages, from DRAM and L2-resident (8 k-tiles per tile), and in 4 stages with each k-tile's copies spread
#   over the k-blocks. Run 1 (e71d6a0) had no stream probes, run 2 only the 3-stage stream from DRAM, run 3 no
#   spread copies.
# - prefetch: the GPU test of hopper.tma_prefetch_tile (session 59's atom, until then compiled only).
source "$(dirname "$0")/device_env.sh"
for part in ${*:-ceiling}; do
  case $part in
  ceiling) timeout 300 python3 benchmarks/probe_mma_ceiling.py --rounds 3 --sustain 3 2>&1 | tee "$OUT/ceiling.md" ;;
  prefetch) gpu_tests prefetch 200 tests/sm90/test_gemm_sm90.py -k prefetch ;;
  *) echo "unknown part: $part" ;;
  esac
done
