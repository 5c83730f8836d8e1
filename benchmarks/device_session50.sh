#!/usr/bin/env bash
# Fiftieth session: three consumer warpgroups (192 rows of W) in the mixed-input register-A kernel at large M, where
# the 2x1-cluster 256-row tiles leave a partial round (issue 9's M >= 1024 exceptions at K = 4096).
# Usage: bash benchmarks/device_session50.sh [th_probe|th_more|sk_tests|sk_tl|sk_pre|rs_tests ...]
# - th_probe: tc.gemm against the 192-row-W tilings TH_CFG (';'-separated RsConfig expressions) at TH_CASES
#   (NxK:M,M,...), with tilecraft's dense bf16 and cuBLAS beside them;
# - th_more: the same at TH_MORE;
# - sk_tests: the GPU tests of stream-K in the register-A kernel (test_gpu_stream_k);
# - sk_tl: per-CTA timelines (probe_rs_timeline.py) of the 2x1-cluster 256-row tiles in stream-K modes 1 and 2 at
#   SK_TL (NxK:M ...);
# - sk_pre: tc.gemm against the 2x1-cluster 256-row tiles in stream-K modes 1 and 2 at SK_PRE (NxK:M,M,...); the
#   session ran it with benchmarks/patches/rs_sk_preload.diff applied (mode 2 loading its peers' partials before the
#   last slice's main loop), and run 5's sk_tests and sk_tl with it too (run 7's sk_tests without);
# - rs_tests: all GPU tests of the register-A kernel (tests/quant/test_sm90_mixed_rs.py) and of the producer
#   kernel's launch (tests/quant/test_sm90_mixed.py), after Launch.y_args changed.
source "$(dirname "$0")/device_env.sh"
TH_CFG_DEFAULT="R(blk_n=192, blk_m=128, stages=6, consumer_regs=152, w_smem=True, store_mn=True);\
R(blk_n=192, blk_m=128, stages=6, consumer_regs=152, w_smem=True, store_mn=True, stream_k=1);\
R(blk_n=192, blk_m=160, stages=5, consumer_regs=152, w_smem=True, store_mn=True, stream_k=1)"
# th_bench NAME CASES: mixed_large NAME --rs-configs TH_CFG for each NxK:M,... of CASES.
th_bench() {
  local name=$1 case
  for case in $2; do
    mixed_large "$name" --nk "${case%%:*}" --ms "${case#*:}" --rs-configs "${TH_CFG:-$TH_CFG_DEFAULT}"
  done
}
for part in ${*:-th_probe}; do
  case $part in
  th_probe)
    th_bench th_probe "${TH_CASES:-6144x4096:1024 4096x4096:1280 8192x8192:4096}" ;;
  th_more)
    th_bench th_more "${TH_MORE:-4096x14336:1536 6144x4096:1536 4096x4096:2120}" ;;
  sk_tests)
    gpu_tests sk_tests "${SKT_S:-300}" tests/quant/test_sm90_mixed_rs.py -k stream_k ;;
  sk_tl)
    for case in ${SK_TL:-4096x4096:1280 6144x4096:1024}; do
      timeout 150 python3 benchmarks/probe_rs_timeline.py --nk "${case%%:*}" --m "${case#*:}" --ctas 6 \
        --configs "R(cluster=2, stages=5, store_mn=True, stream_k=1);R(cluster=2, stages=5, store_mn=True, stream_k=2)" \
        2>&1 | tee -a "$OUT/sk_tl.md" | grep -v "^|---"
    done ;;
  sk_pre)
    TH_CFG="R(cluster=2, stages=5, store_mn=True, stream_k=1);R(cluster=2, stages=5, store_mn=True, stream_k=2)" \
      th_bench sk_pre "${SK_PRE:-6144x4096:1024 4096x4096:1280 6144x4096:520 8192x8192:3656}" ;;
  rs_tests)
    gpu_tests rs_tests "${RST_S:-540}" tests/quant/test_sm90_mixed_rs.py tests/quant/test_sm90_mixed.py ;;
  esac
done
