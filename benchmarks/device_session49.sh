#!/usr/bin/env bash
# Forty-ninth session: stream-K in the mixed-input register-A kernel (the units of the last partial round of the SMs
# shared by every CTA along K), where the 256-row tiles make 1.x rounds (issue 9's M >= 1024 exceptions).
# Usage: bash benchmarks/device_session49.sh [sk_tests|rv_tests|sk_time|sk_more|sk_wide|sk_forms|sk_mode2|rs_tests|sw_tests ...]
# - sk_tests: the GPU tests of stream-K in the register-A kernel (test_gpu_stream_k);
# - rv_tests: the GPU tests of the forty-eighth session's review commits (the ragged x tiles, the split's rest, the
#   dense swapped problem);
# - sk_time: tc.gemm (stream-K where its pick takes it) against what it ran before (--no-stream-k) and tilecraft's
#   dense bf16 and cuBLAS at issue 9's exceptions (SK_CASES: NxK:M,M,...);
# - sk_more: the same at more shapes (SK_MORE), and the 2x1-cluster 256-row tiles in stream-K in one launch (SK_CFG);
# - sk_wide: the same at shapes from M = 520 to 3656 where the calibrated rule takes stream-K (SK_WIDE);
# - sk_forms: other forms of stream-K against the pick at K = 4096 (SK_FORMS, SK_CFG): mode 2, a deeper W ring, W
#   through shared memory (four stages), no cluster;
# - sk_mode2: tc.gemm where its pick takes stream-K mode 2 against mode 1 (SK_CFG) and what it ran before (SK_MODE2);
# - rs_tests: all GPU tests of the register-A kernel (tests/quant/test_sm90_mixed_rs.py);
# - sw_tests: the GPU tests of the dense swapped problem (tests/gemm/test_swapped.py).
source "$(dirname "$0")/device_env.sh"
# sk_bench NAME CASES: mixed_large NAME --no-stream-k for each NxK:M,... of CASES (SK_CFG: --rs-configs too).
sk_bench() {
  local name=$1 case
  for case in $2; do
    mixed_large "$name" --nk "${case%%:*}" --ms "${case#*:}" --no-stream-k ${SK_CFG:+--rs-configs "$SK_CFG"}
  done
}
for part in ${*:-sk_tests}; do
  case $part in
  sk_tests)
    gpu_tests sk_tests "${SKT_S:-300}" tests/quant/test_sm90_mixed_rs.py -k stream_k ;;
  rv_tests)
    gpu_tests rv_tests "${RVT_S:-400}" tests/quant/test_sm90_mixed_rs.py tests/gemm/test_swapped.py \
      -k "ragged_m_runs_in_two_launches or (ragged_x_tiles and bfloat16) or swapped or swap" ;;
  sk_time)
    sk_bench sk_time "${SK_CASES:-6144x4096:1024 4096x14336:1536,1700 8192x8192:1280}" ;;
  sk_more)
    SK_CFG="${SK_CFG-R(cluster=2, stages=5, store_mn=True, stream_k=1)}" \
      sk_bench sk_more "${SK_MORE:-10240x8192:1024 14336x4096:1024 4096x14336:1280 6144x4096:1536 4096x4096:1280 \
      8192x28672:1280 28672x4096:1536}" ;;
  sk_wide)
    sk_bench sk_wide "${SK_WIDE:-6144x4096:520,712 28672x4096:648 57344x8192:712 14336x4096:840 8192x8192:2184,3656 \
      10240x8192:2440 4096x4096:2120 4096x14336:2632}" ;;
  sk_forms)
    SK_CFG="${SK_CFG-R(cluster=2, stages=5, store_mn=True, stream_k=2);R(cluster=2, stages=5, depth=4, store_mn=True, \
stream_k=1);R(cluster=2, stages=4, w_smem=True, store_mn=True, stream_k=1);R(stages=5, store_mn=True, stream_k=1)}" \
      sk_bench sk_forms "${SK_FORMS:-6144x4096:712,1024 4096x4096:1280}" ;;
  sk_mode2)
    SK_CFG="${SK_CFG-R(cluster=2, stages=5, store_mn=True, stream_k=1)}" \
      sk_bench sk_mode2 "${SK_MODE2:-6144x4096:520,1536 28672x4096:648,1536 57344x8192:712 8192x8192:3656 \
      10240x8192:2440}" ;;
  rs_tests)
    gpu_tests rs_tests "${RST_S:-400}" tests/quant/test_sm90_mixed_rs.py ;;
  sw_tests)
    gpu_tests sw_tests "${SWT_S:-300}" tests/gemm/test_swapped.py ;;
  esac
done
