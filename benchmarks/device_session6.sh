#!/usr/bin/env bash
# Device session 6: where the SIMT SGEMM loses to cuBLAS (issue 6). Usage:
#   bash benchmarks/device_session6.sh [ncu_sgemm|sgemm ...]
# ncu_sgemm: Nsight Compute at the GPU's own clocks on cuBLAS's fp32 kernel and the tuned tilings ($SGEMM);
# sgemm: bench_sgemm.py on $SGEMM (timing against cuBLAS, float64 checks).
source "$(dirname "$0")/device_env.sh"
PARTS="${*:-ncu_sgemm}"
SGEMM="${SGEMM:-128x256x8_w4x8_t256_b1,128x128x8_w4x8_t128_b2_a3}"
for part in $PARTS; do
  case $part in
  ncu_sgemm)
    echo "== ncu: fp32 SGEMM ${NCU_N:-4096}^3"
    timeout "${NCU_TIMEOUT:-300}" ncu --profile-from-start off --clock-control none \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
      --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed.sum \
      python3 benchmarks/ncu_gemm.py --dtype float32 --n "${NCU_N:-4096}" --which cublas,sgemm --sgemm "$SGEMM" \
      > "$OUT/ncu_sgemm.txt" 2>&1
    grep -E "^  [a-zA-Z_]|Function Name|sm__|smsp__|SM Frequency|Duration|Registers|Block Size|Grid Size|Shared Memory Config|Issue Slots|Issued Warp|No Eligible|Active Warps|Eligible Warps|Warp Cycles Per Issued|Executed Ipc|Achieved Occupancy|Theoretical Occ|Dynamic Shared|Static Shared" "$OUT/ncu_sgemm.txt" | head -150 ;;
  ncu_stalls)
    # warp-stall breakdown of every kernel, and our kernels' SASS with sampled stalls per instruction
    echo "== ncu: SGEMM stall reasons"
    timeout "${NCU_TIMEOUT:-300}" ncu --profile-from-start off --clock-control none -f -o "$OUT/sgemm_stalls" \
      --section WarpStateStats --section SourceCounters --section SchedulerStats \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      python3 benchmarks/ncu_gemm.py --dtype float32 --n "${NCU_N:-4096}" --which cublas,sgemm --sgemm "$SGEMM" \
      > "$OUT/ncu_stalls_run.txt" 2>&1
    ncu -i "$OUT/sgemm_stalls.ncu-rep" --page raw --csv --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      > "$OUT/stalls.csv" 2>&1
    ncu -i "$OUT/sgemm_stalls.ncu-rep" -k regex:sgemm_tuned --page source --csv --print-source sass > "$OUT/sgemm_source.csv" 2>&1
    python3 - "$OUT/stalls.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[head]; data = [r for r in rows[head + 2:] if len(r) == len(h)]
cols = [i for i, c in enumerate(h) if c.startswith("smsp__average_warps_issue_stalled")]
name = h.index("Kernel Name")
for i in sorted(cols, key=lambda i: -max(float(r[i] or 0) for r in data)):
    vals = [float(r[i] or 0) for r in data]
    if max(vals) >= 0.02:
        print(f"{h[i][35:-27]:>22} " + " ".join(f"{v:7.3f}" for v in vals))
print(" " * 23 + " ".join(r[name][:7] for r in data))
PY
    ;;
  ncu_dense)
    # clock and tensor-pipe activity of cuBLAS, tc.gemm's sm90 pick and the sm80 pick (fp16 and bf16, $NCU_N^3)
    for dt in float16 bfloat16; do
      echo "== ncu: $dt ${NCU_N:-4096}^3"
      timeout "${NCU_TIMEOUT:-300}" ncu --profile-from-start off --clock-control none --section SpeedOfLight \
        --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,dram__bytes_read.sum,"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
        python3 benchmarks/ncu_gemm.py --dtype $dt --n "${NCU_N:-4096}" > "$OUT/ncu_dense_$dt.txt" 2>&1
      grep -E "^  [a-zA-Z_]|sm__cycles|pipe_tensor|Duration|lts__t_bytes|dram__bytes|stalled_(math|wait|long|barrier|dispatch|short|mio|not_sel|selected)" "$OUT/ncu_dense_$dt.txt"
    done ;;
  llm)
    echo "== LLM shapes tc.gemm loses: candidates against cuBLAS"
    timeout "${LLM_TIMEOUT:-400}" python3 benchmarks/probe_llm.py ${LLM_ARGS:-} 2>&1 | tee "$OUT/probe_llm.log" ;;
  host)
    echo "== host time per tc.gemm call"
    timeout "${HOST_TIMEOUT:-300}" python3 benchmarks/host_overhead.py --profile > "$OUT/host.log" 2>&1
    head -8 "$OUT/host.log"; grep -A30 "cProfile" "$OUT/host.log" | grep -v "^$" | head -120 ;;
  tests)
    echo "== GPU tests after the host-path changes"
    timeout "${TEST_TIMEOUT:-400}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/sm90 tests/dsl tests/gemm/test_tensorop.py \
      > "$OUT/gpu_tests.log" 2>&1
    tail -3 "$OUT/gpu_tests.log"
    timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/quant/test_mixed.py -k "launch_grid or llama" \
      > "$OUT/gpu_tests_mixed.log" 2>&1
    tail -3 "$OUT/gpu_tests_mixed.log" ;;
  sgemm)
    echo "== bench_sgemm"
    timeout "${SGEMM_TIMEOUT:-300}" python3 benchmarks/bench_sgemm.py --out "$OUT/sgemm" --configs "$SGEMM" 2>&1 | tee "$OUT/sgemm.log" | tail -40 ;;
  esac
done
