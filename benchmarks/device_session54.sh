#!/usr/bin/env bash
# Fifty-fourth session: the register-A mixed kernel's int8 -> bf16 conversion without fp32 (issue 9, W8A16, M >= 1024).
# Usage: bash benchmarks/device_session54.sh [u8_tests|u8|u8_ab|dec|ge1024|u8_skip ...]
# - u8_tests: the register-A GPU tests of the symmetric int8 bf16 formats (and tc.gemm's), in 8 shards;
# - u8: at each U8_CASES entry NxK:M,M,..., tc.gemm (W4A16 g128 and W8A16 per-channel) with the new conversion, then
#   in a second process with the old one (benchmarks/patches/u8_through_fp32.diff applied for that process; the session
#   ran it as an uncommitted switch, TC_U8_OLD=1), tilecraft's dense bf16 and cuBLAS beside them in each;
# - u8_ab: the same, new and old twice in turn (separate processes);
# - dec: the small-M kernel (W4A16 g128 and W8A16 per-channel, bf16) at N = K = 8192, M = DEC_MS (1,8,16) as a
#   stream of calls (bench_decode.py --quick), with the same conversion (benchmarks/patches/u8_small_m_sym.diff, not
#   taken: no faster) and as on main (converted through fp32), twice in turn;
# - ge1024: tc.gemm against tilecraft's dense bf16 at issue 9's M >= 1024 (GE_CASES, NxK:M,M,...);
# - u8_skip: the same shapes with no conversion at all (benchmarks/patches/rs_skip_convert.diff applied to this
#   copy, outputs wrong on purpose, --no-check), the time of everything else.
source "$(dirname "$0")/device_env.sh"
old() { patched u8_through_fp32 "$@"; }   # every int8 bf16 format converted through fp32 again
U8_CASES_DEFAULT="4096x4096:1050,1100 6144x4096:1024,1100 8192x8192:540 4096x14336:1100"
for part in ${*:-u8}; do
  case $part in
  u8_tests)
    SHARDS=8 SUITE_S="${TST_S:-240}" SUITE_K="int8 and sym and bfloat16 or tc_gemm_runs" bash benchmarks/gpu_suite.sh \
      tests/quant/test_sm90_mixed_rs.py
    tail -5 "$OUT/suite.md" ;;
  u8)
    for case in ${U8_CASES:-$U8_CASES_DEFAULT}; do
      mixed_large u8_new --nk "${case%%:*}" --ms "${case#*:}" ${U8_ARGS:-}
      old mixed_large u8_old --nk "${case%%:*}" --ms "${case#*:}" ${U8_ARGS:-}
    done ;;
  u8_ab)
    for case in ${U8_CASES:-$U8_CASES_DEFAULT}; do
      for _ in 1 2; do
        mixed_large u8_ab --nk "${case%%:*}" --ms "${case#*:}" ${U8_ARGS:-}
        old mixed_large u8_ab_old --nk "${case%%:*}" --ms "${case#*:}" ${U8_ARGS:-}
      done
    done ;;
  dec)
    for _ in 1 2; do
      patched u8_small_m_sym decode dec 1,8,16
      old decode dec_old 1,8,16
    done ;;
  ge1024)
    for case in ${GE_CASES:-6144x4096:1024,1100,1152,1300 4096x4096:1050,1100,1280 8192x8192:1024,4096}; do
      mixed_large ge1024 --nk "${case%%:*}" --ms "${case#*:}"
    done ;;
  u8_skip)
    for case in ${U8_CASES:-$U8_CASES_DEFAULT}; do
      patched rs_skip_convert mixed_large u8_skip --nk "${case%%:*}" --ms "${case#*:}" --no-check ${U8_ARGS:-}
    done ;;
  esac
done
