#!/usr/bin/env bash
# Fifty-seventh session (issue 9): the small-M mixed kernel's picks and int8 conversion; the warps' reduction in the
# weights' stages (MixedConfig.reuse).
# Usage: bash benchmarks/device_session57.sh [t2|u8dec|probe|small_tests ...]
# The session's runs: 1 `DEC_MS=1,8,12,16 ... t2 u8dec`; 2 `PROBE=u16-,u8-,u4- ... probe`; 3 `PROBE=r4-,w16-square`;
# 4 the GPU tests (gpu_suite.sh, SUITE_K="reduction or four_tile or wave_balanced or async_copy_stages") and
# `PROBE=r5-`; 5 `PROBE=u58-,u8-8192x10240-1,u8-8192x12288-1`; 6 `PROBE=w8t2-`; 7 `small_tests`; 8-9 the g32 / per
# channel r5 cases (9 with ROUNDS=5); 10 the GPU tests again (SUITE_K="reduction or four_tile or wave_balanced or
# int4") and `PROBE=r5-8192x16384-3,r4-4096x16384-4,u4-8192x16384-4` at the final rule; 11 `ROUNDS=5 PROBE=r6-`.
# - t2: probe_small_m.py's t2-* cases (int4 at M = 1..4 in two tiles, the fifty-sixth session's pick, against one);
# - u8dec: W4A16 g128 / W8A16 per-channel decoding (bench_decode.py --quick, bf16, N = K = 8192, M = DEC_MS) with
#   symmetric int8 into bf16 without fp32 (benchmarks/patches/u8_small_m_sym.diff) and as on main, twice in turn;
# - probe: probe_small_m.py's cases whose names start with PROBE (comma-separated prefixes);
# - small_tests: every GPU test of the small-M kernel (tests/quant/test_mixed.py; SUITE_K filters them), in 8 shards.
source "$(dirname "$0")/device_env.sh"
probe() {
  timeout "${PROBE_S:-420}" python3 benchmarks/probe_small_m.py --rounds "${ROUNDS:-3}" --cases "$(cases "$1")" 2>&1 \
    | tee -a "$OUT/probe.md"
}
for part in ${*:-t2}; do
  case $part in
  t2) probe t2- ;;
  probe) probe "$PROBE" ;;
  u8dec)
    for _ in 1 2; do
      patched u8_small_m_sym decode dec_sym 8,12,16
      decode dec_main 8,12,16
    done ;;
  small_tests) small_tests ;;
  esac
done
