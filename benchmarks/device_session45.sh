#!/usr/bin/env bash
# Forty-fifth session: the register-A mixed kernel with W's packed words through shared memory (RsConfig.w_smem: TMA
# into the x stages, so W's bytes in flight cost no registers) against its register ring (issue 9, M = 33..256).
# Usage: bash benchmarks/device_session45.sh [ws_tests|ws_time|ws_ncu|ws_sass|ws_skip|ws_picks ...]
# - ws_tests: the w_smem GPU tests and the register-A kernel's random shapes;
# - ws_time: bench_mixed_large.py at WS_MS (40,64,128,256), tc.gemm's pick against w_smem tilings (WS_CONFIGS), three
#   rounds in turn, into $OUT/ws_time.md;
# - ws_picks: tc.gemm (the w_smem picks) against the picks before (explicit tilings) at WS_MS (40,64,128), weight
#   formats WS_FORMATS (bench_mixed_large.py --formats), N x K WS_NK (8192x8192), into $OUT/ws_picks.md;
# - ws_ncu: Nsight Compute on the W4A16 g128 register-A kernel at M = WS_M (64) with tilings WS_NCU (RsConfig
#   expressions): time, cycles, tensor pipe, issue, instructions and the warps' stall reasons per issued instruction;
# - ws_sass: Nsight Compute's per-instruction stall samples (SASS, CSV) of the first WS_NCU tiling at M = WS_M;
# - ws_skip: `git apply benchmarks/patches/rs_skip_convert.diff` (no shuffles or conversion: wrong results), then
#   ws_time's timing with --no-check at WS_MS, and the patch reverted.
source "$(dirname "$0")/device_env.sh"
W="R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4, w_smem=True)"
W="$W;R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=2, w_smem=True)"
W="$W;R(blk_m=128, stages=8, depth=4, splits=2, w_smem=True);R(blk_m=128, stages=6, depth=4, w_smem=True)"
W="$W;R(blk_m=64, stages=8, depth=4, splits=2, w_smem=True)"

for part in ${*:-ws_tests}; do
  case $part in
  ws_tests)
    gpu_tests ws_tests "${WST_S:-240}" tests/quant/test_sm90_mixed_rs.py -k "w_through or random_shapes" ;;
  ws_time)
    MIXED_S="${WS_S:-400}" mixed_large ws_time --ms "${WS_MS:-40,64,128,256}" --rs-configs "${WS_CONFIGS:-$W}" ;;
  ws_picks)
    O="R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4)"
    O="$O;R(blk_m=128, stages=8, depth=6, splits=2);R(blk_m=64, stages=8, depth=6, splits=2)"
    MIXED_S="${WS_S:-400}" mixed_large ws_picks --ms "${WS_MS:-40,64,128}" --formats "${WS_FORMATS:-4:128,8:0}" \
      --nk "${WS_NK:-8192x8192}" --rs-configs "${WS_CONFIGS:-$O}" ;;
  ws_ncu)
    M=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import ncu_columns; print(ncu_columns.NCU_METRICS)")
    ST='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
    EX=smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
    timeout "${NCU_S:-150}" ncu --profile-from-start off --clock-control none -k regex:mixed_rs --metrics "$M,$EX,$ST" \
      python3 benchmarks/ncu_gemm.py --which "" --dtype bfloat16 --n 8192 --m "${WS_M:-64}" --rs "${WS_NCU:-$W}" > "$OUT/ws_ncu.txt" 2>&1
    python3 benchmarks/ncu_columns.py "$OUT/ws_ncu.txt"
    grep -E "^rs[0-9]|^  [A-Za-z_].*\(|stalled|issue_active|inst_executed|warps_active" "$OUT/ws_ncu.txt" \
      | awk '$NF+0 > 0.05 || !/stalled/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' ;;
  ws_sass)
    C="${WS_NCU:-$W}"
    timeout "${NCU_S:-200}" ncu --profile-from-start off --clock-control none -k regex:mixed_rs --section WarpStateStats \
      --section SourceCounters -o "$OUT/ws_sass" -f python3 benchmarks/ncu_gemm.py --which "" --dtype bfloat16 --n 8192 \
      --m "${WS_M:-64}" --rs "${C%%;*}" > "$OUT/ws_sass.log" 2>&1
    ncu -i "$OUT/ws_sass.ncu-rep" --page source --print-source sass --csv > "$OUT/ws_sass.csv" 2>&1
    ncu -i "$OUT/ws_sass.ncu-rep" --page details > "$OUT/ws_sass_details.txt" 2>&1
    rm -f "$OUT/ws_sass.ncu-rep"; wc -l "$OUT/ws_sass.csv"; grep -iE "stall|warp cycles" "$OUT/ws_sass_details.txt" | head -20 ;;
  ws_skip)
    git apply benchmarks/patches/rs_skip_convert.diff && \
      MIXED_S="${WS_S:-300}" mixed_large ws_skip --no-check --ms "${WS_MS:-64,128}" --rs-configs "${WS_CONFIGS:-$W}"
    git checkout tilecraft/gemm/sm90_mixed_rs.py ;;
  *) echo "unknown part $part" ;;
  esac
done
