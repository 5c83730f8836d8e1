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
  sgemm)
    echo "== bench_sgemm"
    timeout "${SGEMM_TIMEOUT:-300}" python3 benchmarks/bench_sgemm.py --out "$OUT/sgemm" --configs "$SGEMM" 2>&1 | tee "$OUT/sgemm.log" | tail -40 ;;
  esac
done
