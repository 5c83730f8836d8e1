#!/usr/bin/env bash
# Fifty-third session: whole rounds of smaller tiles, or stream-K over them, where the 2x1-cluster 256-row tiles of the
# register-A mixed kernel leave part of a round idle (issue 9, "M >= 1024: >= 0.9x tilecraft's dense" at 6144x4096).
# Usage: bash benchmarks/device_session53.sh [sk3|sk3_time|sk3_tests|t192|nt_time|nt_tests ...]
# - sk3: at each SK_CASES entry NxK:M:BM, tc.gemm's pick against three consumers by 224 and 208 rows of x in stream-K
#   modes 1 and 2 (--three-sk) and two consumers by BM rows of x (y by TMA, 4 stages) whole and in stream-K mode 1,
#   three rounds in turn, with tilecraft's dense bf16 and cuBLAS beside them.
# - sk3_time: tc.gemm (with _three_stream_k_or) against what it ran before (--no-three-sk) at SKT_CASES (NxK:M,M,...),
#   three rounds in turn, with tilecraft's dense bf16 and cuBLAS beside them;
# - sk3_tests: the three-consumer, stream-K, two-launch and dispatch GPU tests, in 8 shards.
# - t192: at each T192_CASES entry NxK:M:BM, tc.gemm's pick against three consumers by BM (<= 192) rows of x, one wgmma
#   a 16-k block, whole tiles.
# - nt_time: tc.gemm (three consumers by at most 192 rows where they fill their rounds) against what it ran before
#   (--no-narrow) at NT_CASES (NxK:M,M,...);
# - nt_tests: tc.gemm's GPU test of those tiles and the three-consumer kernel tests, in 8 shards.
source "$(dirname "$0")/device_env.sh"
SKT_CASES_DEFAULT="6144x4096:1100,1300,2880 8192x8192:1100,1550 10240x8192:800,1100,1300 14336x4096:600,850,1300 \
28672x4096:600 4096x4096:2060"
SK_CASES_DEFAULT="6144x4096:1100:224 6144x4096:1024:208 6144x4096:1152:232 10240x8192:1100:224 4096x4096:1100:224"
for part in ${*:-sk3}; do
  case $part in
  sk3)
    for case in ${SK_CASES:-$SK_CASES_DEFAULT}; do
      IFS=: read -r nk m bm <<< "$case"
      two="R(blk_m=$bm, depth=2, stages=4, w_smem=True, store_mn=True)"
      mixed_large sk3 --nk "$nk" --ms "$m" --three-sk "${SK_MODES:-224:1,224:2,208:2}" \
        --rs-configs "$two; ${two%)}, stream_k=1)"
    done ;;
  sk3_time)
    for case in ${SKT_CASES:-$SKT_CASES_DEFAULT}; do
      mixed_large sk3_time --nk "${case%%:*}" --ms "${case#*:}" --no-three-sk
    done ;;
  t192)
    for case in ${T192_CASES:-4096x4096:1100:184 4096x14336:1100:184 8192x8192:528:176}; do
      IFS=: read -r nk m bm <<< "$case"
      mixed_large t192 --nk "$nk" --ms "$m" --rs-configs \
        "R(blk_n=192, blk_m=$bm, stages=4, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True)"
    done ;;
  nt_time)
    for case in ${NT_CASES:-6144x4096:600,700 4096x4096:1050,1130 8192x8192:540,570 57344x8192:520}; do
      mixed_large nt_time --nk "${case%%:*}" --ms "${case#*:}" --no-narrow
    done ;;
  nt_tests)
    SHARDS=8 SUITE_S="${TST_S:-240}" SUITE_K="three_consumers" bash benchmarks/gpu_suite.sh \
      tests/quant/test_sm90_mixed_rs.py
    tail -5 "$OUT/suite.md" ;;
  sk3_tests)
    SHARDS=8 SUITE_S="${TST_S:-300}" SUITE_K="three_consumers or stream_k or ragged_m_runs_in_two_launches or dispatch \
or tc_gemm_runs" bash benchmarks/gpu_suite.sh tests/quant/test_sm90_mixed_rs.py tests/quant/test_sm90_mixed.py
    tail -5 "$OUT/suite.md" ;;
  esac
done
