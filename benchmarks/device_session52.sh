#!/usr/bin/env bash
# Fifty-second session: split_plan's three-consumer first launches (issue 9, ragged M from 513): M splits into bm t rows
# in three-consumer tiles of bm = 224 or 208 rows that fill their rounds of the SMs, and the rest in a launch of its
# own, where the rounds model says so.
# Usage: bash benchmarks/device_session52.sh [ts_tests|ts_time|ts_force|top ...]
# - ts_tests: tc.gemm's two-launch GPU tests (test_gpu_ragged_m_runs_in_two_launches, its new M = 880 case among them;
#   run 1 had an M = 1440 case, which the final rule no longer splits)
#   and the dispatch tests, in 8 shards;
# - ts_time: tc.gemm against what it ran before (--no-three-split) at TS_CASES (NxK:M,M,...), three rounds in turn,
#   with tilecraft's dense bf16 and cuBLAS beside them;
# - ts_force: the three-consumer split of fewest estimated rounds, whatever the bar says (--three-split), at TS_FORCE;
# - top: the sm80 tensor-op kernel at 4096^3 (issue 7) against cuBLAS, in turn (device_session20.sh probe).
source "$(dirname "$0")/device_env.sh"
TS_CASES_DEFAULT="4096x4096:1440 6144x4096:920,1100 4096x14336:1440,1700 8192x8192:880,1600 2048x8192:2800 \
14336x4096:1296"
for part in ${*:-ts_time}; do
  case $part in
  ts_tests)
    SHARDS=8 SUITE_S="${TST_S:-240}" SUITE_K="ragged_m_runs_in_two_launches or dispatch or tc_gemm_runs_the_register" \
      bash benchmarks/gpu_suite.sh tests/quant/test_sm90_mixed_rs.py tests/quant/test_sm90_mixed.py
    tail -5 "$OUT/suite.md" ;;
  ts_time)
    for case in ${TS_CASES:-$TS_CASES_DEFAULT}; do
      mixed_large ts_time --nk "${case%%:*}" --ms "${case#*:}" --no-three-split
    done ;;
  ts_force)
    for case in ${TS_FORCE:-6144x4096:1024}; do
      mixed_large ts_force --nk "${case%%:*}" --ms "${case#*:}" --three-split
    done ;;
  top)
    ROUNDS="${TOP_ROUNDS:-3}" SUSTAIN=0 bash "$(dirname "$0")/device_session20.sh" probe ;;
  esac
done
