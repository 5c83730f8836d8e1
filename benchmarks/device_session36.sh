#!/usr/bin/env bash
# Thirty-sixth session: cooperative launches for the kernels whose CTAs wait on each other (the fused split-K
# sums of the dense and register-A kernels, stream-K).
# Usage: bash benchmarks/device_session36.sh [coop_tests|coop_time|deadlock ...]
# - coop_tests: the GPU tests of the cooperative launches (tests/sm90/test_cooperative.py: the priority-stream
#   scenario of tilecraft/bench/residency.py, cooperatively, per path), stream-K's, the dense split-K's and the
#   register-A kernel's in-kernel sum;
# - coop_time: benchmarks/probe_cooperative.py, the same launches cooperative and plain, 3 rounds in turn;
# - deadlock: the scenario per path (rs, dense, streamk), cooperative then plain, each under a timeout
#   (DL_S seconds, 90 unless set): "hung" is the timeout. Run it last: a hung child is killed.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-coop_tests}; do
  case $part in
  coop_tests)
    gpu_tests coop_tests "${COOP_S:-400}" tests/sm90/test_cooperative.py tests/sm90/test_stream_k.py \
      tests/quant/test_sm90_mixed_rs.py tests/sm90/test_gemm_sm90.py \
      -k "${COOP_K:-cooperative or stream_k or flags or two_streams or summed_in_the_kernel or split}" ;;
  coop_time)
    timeout "${TIME_S:-300}" python3 benchmarks/probe_cooperative.py --rounds "${ROUNDS:-3}" 2>&1 \
      | tee -a "$OUT/coop_time.md" ;;
  deadlock)
    for launch in coop plain; do
      for path in ${DL_PATHS:-rs dense streamk}; do
        timeout "${DL_S:-90}" python3 -m tilecraft.bench.residency "$path" "$launch" > "$OUT/dl_$path.$launch.log" 2>&1
        rc=$?
        if [ $rc = 124 ]; then echo "$path $launch: hung (killed after ${DL_S:-90} s)"; else tail -2 "$OUT/dl_$path.$launch.log"; fi
      done
    done 2>&1 | tee -a "$OUT/deadlock.md" ;;
  esac
done
