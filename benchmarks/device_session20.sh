#!/usr/bin/env bash
# Device session 20 (issue 7): the sm80 tensor-op kernel in turn and sustained against cuBLAS (clock, power).
# Usage: bash benchmarks/device_session20.sh [probe|tensorop_tests|rs_tests|large ...]
# probe: probe_tensorop.py on TC_CONFIGS (';'-separated T(...) or pick; default: the pick and the 256x128x64
# tilings) in DTYPES (float16,bfloat16) at SHAPES (4096), ROUNDS rounds in turn, then SUSTAIN seconds per
# contender; tensorop_tests: the sm80 kernel's GPU tests; rs_tests: the register-A mixed kernel's GPU tests;
# large: bench_mixed_large.py at MS (64,128,256) with the register-A tilings RS (and RS_CONFIGS), ROUNDS rounds in turn.
source "$(dirname "$0")/device_env.sh"
DEFAULT_CONFIGS="pick;T(256, 128, 64, 4, 2, stages=3, lean_loop=True, smem_epilogue=True)"
DEFAULT_CONFIGS+=";T(256, 128, 64, 4, 2, stages=4, lean_loop=True, smem_epilogue=True)"
for part in ${*:-probe}; do
  case $part in
  probe)
    echo "== sm80 tensor-op tilings in turn"
    timeout "${PROBE_S:-500}" python3 benchmarks/probe_tensorop.py --configs "${TC_CONFIGS:-$DEFAULT_CONFIGS}" \
      --dtypes "${DTYPES:-float16,bfloat16}" --shapes "${SHAPES:-4096}" --rounds "${ROUNDS:-5}" \
      --sustain "${SUSTAIN:-3}" 2>&1 | tee -a "$OUT/probe.log" ;;
  tensorop_tests)
    echo "== sm80 tensor-op GPU tests"
    gpu_tests tensorop_tests 400 tests/gemm/test_tensorop.py tests/gemm/test_tensorop_gpu_table.py ;;
  rs_tests)
    echo "== register-A mixed kernel GPU tests"
    gpu_tests rs_tests 400 tests/quant/test_sm90_mixed_rs.py ${RS_K:+-k "$RS_K"} ;;
  large)
    echo "== mixed-input GEMM, register-A tilings"
    timeout "${LARGE_S:-400}" python3 benchmarks/bench_mixed_large.py --ms "${MS:-64,128,256}" --rounds "${ROUNDS:-3}" \
      ${RS:+--rs "$RS"} ${RS_CONFIGS:+--rs-configs "$RS_CONFIGS"} --json "$OUT/large.json" 2>&1 | tee -a "$OUT/large.log" ;;
  esac
done
