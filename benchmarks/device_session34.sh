#!/usr/bin/env bash
# Thirty-fourth session (issue 9): where the register-A mixed-input kernel's time goes at M = 128 and 256.
# Usage: bash benchmarks/device_session34.sh [rs_ncu|rs_sass|rs_time|rs_ring|next_early ...]
# - rs_ncu: Nsight Compute on tc.gemm's W4A16 g128 GEMM, x (M, 8192) @ W (8192, 8192), at RS_MS (128 256): time,
#   cycles, tensor pipes, L2 and its request coalescer (benchmarks/ncu_columns.py), and the warps' stall reasons
#   per issued instruction; the dense bf16 GEMM at the same shapes beside it;
# - rs_sass: the kernel's SASS at M = RS_M (128) with Nsight Compute's per-instruction stall samples (CSV);
# - rs_time: bench_mixed_large.py at RS_MS, three rounds in turn, with RS_CONFIGS (RsConfig expressions) and
#   RS_ARGS (e.g. --reductions);
# - rs_ring (at 2824003, after `git apply benchmarks/patches/rs_late_refill.diff`, whose `late=True` is the ring
#   before this session's): rs_time at M = 64, 128, 256 with the earlier picks and deeper rings, and at 512, 1024, 4096 with
#   the earlier pick and depth 3;
# - next_early (run in session 35: slower, RESULTS.md): applies benchmarks/patches/mixed_early_refill.diff, runs the small-M
#   kernel's cp.async-stage GPU tests (with its early cases), then times the decoding picks with and without
#   early refills (probe_pdl_timeline.py, PDL stream). (next_pdl's patch landed as 2824003; its timing is
#   device_session35.sh pdl_ab.)
source "$(dirname "$0")/device_env.sh"
METRICS=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import ncu_columns; print(ncu_columns.NCU_METRICS)")
STALLS='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
EXTRA=smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for part in ${*:-rs_ncu}; do
  case $part in
  rs_ncu)
    for m in ${RS_MS:-128 256}; do
      echo "== W4A16 g128, M = $m (then the reduction kernel where split), and dense bf16 ${m}x8192x8192"
      timeout "${NCU_S:-150}" ncu --profile-from-start off --clock-control none --metrics "$METRICS,$EXTRA,$STALLS" \
        python3 benchmarks/ncu_gemm.py --which w4a16 --m "$m" --n 8192 > "$OUT/rs_ncu_$m.txt" 2>&1
      timeout "${NCU_S:-150}" ncu --profile-from-start off --clock-control none --metrics "$METRICS,$EXTRA,$STALLS" \
        python3 benchmarks/ncu_gemm.py --which sm90 --shape "${m}x8192x8192" > "$OUT/dense_ncu_$m.txt" 2>&1
      python3 benchmarks/ncu_columns.py "$OUT/rs_ncu_$m.txt" "$OUT/dense_ncu_$m.txt"
      grep -E "^  [A-Za-z_].*\(|stalled|issue_active|inst_executed|warps_active" \
        "$OUT/rs_ncu_$m.txt" | awk '$NF+0 > 0.05 || !/stalled/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
    done ;;
  rs_sass)
    m=${RS_M:-128}
    timeout "${NCU_S:-200}" ncu --profile-from-start off --clock-control none -k regex:mixed_rs \
      --section WarpStateStats --section SourceCounters -o "$OUT/rs$m" -f \
      python3 benchmarks/ncu_gemm.py --which w4a16 --m "$m" --n 8192 > "$OUT/rs_sass.log" 2>&1
    ncu -i "$OUT/rs$m.ncu-rep" --page source --print-source sass --csv > "$OUT/rs${m}_sass.csv" 2>&1
    ncu -i "$OUT/rs$m.ncu-rep" --page details > "$OUT/rs${m}_details.txt" 2>&1
    wc -l "$OUT/rs${m}_sass.csv"; grep -iE "stall|warp cycles" "$OUT/rs${m}_details.txt" | head -20 ;;
  rs_time)
    timeout "${RS_S:-300}" python3 benchmarks/bench_mixed_large.py --ms "$(echo ${RS_MS:-128 256} | tr ' ' ,)" --rounds 3 \
      --rs-configs "${RS_CONFIGS:-}" ${RS_ARGS:-} 2>&1 | tee -a "$OUT/rs_time.md" ;;
  rs_ring)
    RS_MS="64 128 256" RS_CONFIGS="R(blk_m=128, stages=8, depth=4, splits=2, late=True);R(blk_m=128, stages=8, depth=4, late=True);R(blk_m=128, stages=8, depth=6, splits=2);R(blk_m=128, stages=8, depth=6);R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4, late=True)" \
      bash "$0" rs_time
    RS_MS="512 1024 4096" RS_CONFIGS="R(stages=6, depth=2, cluster=2, late=True);R(stages=6, depth=3, cluster=2)" bash "$0" rs_time ;;
  next_early)
    git apply benchmarks/patches/mixed_early_refill.diff || exit 1
    gpu_tests early_tests 300 tests/quant/test_mixed.py -k async_copy_stages
    MS=${MS:-1,8,16} VARIANTS="early=1" bash benchmarks/device_session24.sh variants ;;
  esac
done
