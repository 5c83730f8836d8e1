#!/usr/bin/env bash
# Device session 10: programmatic dependent launches for the small-M mixed-input GEMM (issue 9, decoding).
# Usage: bash benchmarks/device_session10.sh [pdl_tests|decode|decode_all ...]
# pdl_tests: the small-M kernel's GPU tests (dependent chains with and without PDL, random shapes, the
# shared-memory stages, dispatch) and the runtime's GPU tests; decode: bench_decode.py at N = K = 8192
# (per call, stream, stream + PDL, cuBLAS the same ways); decode_all: every Llama-3 layer shape too.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-pdl_tests decode}; do
  case $part in
  pdl_tests)
    echo "== GPU tests: small-M mixed input, runtime"
    # SIGABRT on timeout: faulthandler prints where every thread is
    # (the whole file compiles ~150 kernels on the device, over 4 minutes: the chains, dispatch and the
    # group-128 formats' random shapes here)
    { timeout -s ABRT 240 python3 -X faulthandler -m pytest -m gpu -q -p no:cacheprovider -rs tests/quant/test_mixed.py \
        -k "chain or dispatch or llama or launch_grid or (random_shapes and 128)"
      timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/runtime tests/bench/test_bench_gpu.py
    } > "$OUT/gpu_tests_pdl.log" 2>&1
    grep -E "FAILED|Error|passed|failed" "$OUT/gpu_tests_pdl.log" | tail -15 ;;
  decode)
    echo "== decoding stream, N = K = 8192"
    timeout 300 python3 benchmarks/bench_decode.py --quick --ms "${MS:-1,2,4,8,16}" --pdl-prefetch "${PF:-0,2,8}" --json "$OUT/decode.json" 2>&1 | tee "$OUT/decode.log" ;;
  decode_all)
    echo "== decoding stream, every shape"
    timeout 560 python3 benchmarks/bench_decode.py --ms "${MS:-1,16}" --json "$OUT/decode_all.json" 2>&1 \
      | tee "$OUT/decode_all.log" ;;
  esac
done
