#!/usr/bin/env bash
# Fifty-fifth session (issue 9): int8 in chunks of 64 in the small-M mixed kernel at M = 5..16; int8 -> bf16 with
# zero points in the register-A kernel without fp32 (measured, not taken).
# Usage: bash benchmarks/device_session55.sh [zp_tests|small_tests|zp|zp_ab|m16|dec ...]
# - zp_tests: the register-A GPU tests of the int8 bf16 zero-point formats (and tc.gemm's), in 8 shards;
# - small_tests: every GPU test of the small-M kernel (tests/quant/test_mixed.py; SUITE_K filters them), in 8 shards;
# - zp: at each ZP_CASES entry NxK:M,M,..., tc.gemm with W8A16 per-channel and g128 zero points (ZP_FORMATS) with
#   the zero points through s8x2_bf16 (benchmarks/patches/u8_zp_spread.diff applied for that process), then in a
#   second process as on main (through fp32), tilecraft's dense bf16 and cuBLAS beside them in each. Runs 6 and 7
#   of the session ran at 2888341 and 6aad0ef, where main held the s8x2_bf16 route and a patch the fp32 one;
# - zp_ab: the same, twice in turn (separate processes);
# - m16: the small-M kernel's tilings (probe_small_m.py, M16_CASES: W8A16 at M = 5..16 in chunks of 64 against the
#   picks before them, and their neighbours), as a stream of calls;
# - dec: the small-M kernel (W4A16 g128 and W8A16 per-channel, bf16) at N = K = 8192, M = DEC_MS (1,8,12,16) as a
#   stream of calls (bench_decode.py --quick), cuBLAS bf16 beside it.
source "$(dirname "$0")/device_env.sh"
spread() { patched u8_zp_spread "$@"; }   # int8 bf16 with zero points through s8x2_bf16 (not taken)
ZP_CASES_DEFAULT="4096x4096:1050 6144x4096:1024 8192x8192:540 4096x14336:1100"
ZP_FORMATS="${ZP_FORMATS:-8:0:zp,8:128:zp}"
for part in ${*:-zp}; do
  case $part in
  zp_tests)
    SHARDS=8 SUITE_S="${TST_S:-240}" SUITE_K="int8 and zp and bfloat16 or tc_gemm_runs or ragged_k" \
      bash benchmarks/gpu_suite.sh tests/quant/test_sm90_mixed_rs.py
    tail -5 "$OUT/suite.md" ;;
  small_tests) small_tests ;;
  zp)
    for case in ${ZP_CASES:-$ZP_CASES_DEFAULT}; do
      spread mixed_large zp_new --nk "${case%%:*}" --ms "${case#*:}" --formats "$ZP_FORMATS" ${ZP_ARGS:-}
      mixed_large zp_old --nk "${case%%:*}" --ms "${case#*:}" --formats "$ZP_FORMATS" ${ZP_ARGS:-}
    done ;;
  zp_ab)
    for case in ${ZP_CASES:-$ZP_CASES_DEFAULT}; do
      for _ in 1 2; do
        spread mixed_large zp_ab --nk "${case%%:*}" --ms "${case#*:}" --formats "$ZP_FORMATS" ${ZP_ARGS:-}
        mixed_large zp_ab_old --nk "${case%%:*}" --ms "${case#*:}" --formats "$ZP_FORMATS" ${ZP_ARGS:-}
      done
    done ;;
  m16)
    timeout "${M16_S:-240}" python3 benchmarks/probe_small_m.py --rounds 3 \
      --cases "${M16_CASES:-xr-square-16-w8,s16-square-w8}" 2>&1 | tee -a "$OUT/m16.md" ;;
  dec) decode dec 1,8,12,16 ;;
  esac
done
