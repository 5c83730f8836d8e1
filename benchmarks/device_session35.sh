#!/usr/bin/env bash
# Thirty-fifth session (issue 9): the register-A mixed kernel's split-K reduction as a dependent launch, a
# correct overlap of conversion and wgmma, and the producer kernel's ring. Every part times in one process
# (bench_mixed_large.py, three rounds in turn) through device_session34.sh's rs_time.
# Usage: bash benchmarks/device_session35.sh [pdl_ab|fused_tests|overlap|producer_ring ...]
# - pdl_ab: M = 64 and 128 (the split-K picks): tc.gemm's launch (the splits summed in the kernel) beside the
#   same kernel with the reduction kernel as a programmatic dependent launch and as a plain second launch
#   (--reductions). (Run 5 timed 2824003, before the in-kernel sum, with the option --plain-reduce then had.)
# - fused_tests: the register-A kernel's GPU tests of the in-kernel split-K sum and the random shapes of bf16
#   formats (FUSED_K picks other tests);
# - overlap: applies benchmarks/patches/rs_overlap_fixed.diff (RsConfig.overlap: k-tile i + 1 converted while
#   k-tile i's wgmmas run, into k-tile i - 1's fragments after wgmma_wait(1)), times the overlapped picks at
#   M = 64, 128, 256, 1024 beside the picks, then its random-shape GPU tests of bf16 formats;
# - producer_ring: the producer kernel (sm90_mixed.py) with the heuristic's ring at M = 128 and 256 (--rings 0:
#   W8's register ring of 2 k-tiles, W4's cp.async ring as a control), with main's sm90_mixed.py and then with
#   6959e24's (with its sm90_mixed_rs.py; the ring loaded before the next body), then the producer's GPU tests.
#   (Session 35 ran this comparison with `git stash` on the device's checkout, whose HEAD was 6959e24.)
source "$(dirname "$0")/device_env.sh"
S34="$(dirname "$0")/device_session34.sh"
for part in ${*:-pdl_ab}; do
  case $part in
  pdl_ab)
    RS_MS="64 128" RS_ARGS="--reductions" bash "$S34" rs_time ;;
  fused_tests)
    gpu_tests fused_tests "${FUSED_S:-300}" tests/quant/test_sm90_mixed_rs.py \
      -k "${FUSED_K:-summed_in_the_kernel or (random_shapes and bfloat16)}" ;;
  overlap)
    git apply benchmarks/patches/rs_overlap_fixed.diff || exit 1
    RS_MS=64 RS_CONFIGS="R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4, overlap=True)" \
      bash "$S34" rs_time
    RS_MS=128 RS_CONFIGS="R(blk_m=128, stages=8, depth=6, splits=2, overlap=True)" bash "$S34" rs_time
    RS_MS=256 RS_CONFIGS="R(blk_m=128, stages=8, depth=6, overlap=True)" bash "$S34" rs_time
    RS_MS=1024 RS_CONFIGS="R(cluster=2, overlap=True)" bash "$S34" rs_time
    gpu_tests ov_tests 200 tests/quant/test_sm90_mixed_rs.py -k "random_shapes and bfloat16"
    git apply -R benchmarks/patches/rs_overlap_fixed.diff ;;
  producer_ring)
    B="python3 benchmarks/bench_mixed_large.py --ms 128,256 --rings 0 --rounds 3"
    echo "== main's ring (refilled once converted)"
    timeout 200 $B 2>&1 | grep "ring 0\|dense" | tee -a "$OUT/producer_ring.md"
    for f in sm90_mixed sm90_mixed_rs; do
      cp tilecraft/gemm/$f.py "$OUT/$f.main.py"
      git show 6959e24:tilecraft/gemm/$f.py > tilecraft/gemm/$f.py || exit 1
    done
    echo "== 6959e24's ring (loaded before the next body)"
    timeout 200 $B 2>&1 | grep "ring 0\|dense" | tee -a "$OUT/producer_ring.md"
    for f in sm90_mixed sm90_mixed_rs; do cp "$OUT/$f.main.py" tilecraft/gemm/$f.py; done
    gpu_tests prod_tests 240 tests/quant/test_sm90_mixed.py -k "ragged or (random_shapes and int8)" ;;
  esac
done
