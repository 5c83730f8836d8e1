#!/usr/bin/env bash
# Fifty-sixth session (issue 9): the small-M mixed kernel's tiles and stages on wide weights (four tiles a CTA where
# one wave of two leaves two stages; int4 at M <= 4 in four stages and two tiles).
# Usage: bash benchmarks/device_session56.sh [q8|f4|t2|four_tests|dec|small_tests ...]
# - q8: probe_small_m.py's q8-* cases (Q8_CASES to choose: runs 1-4 took q8-, q8k-, q8m- and q8w-, t4-; 7 and 8
#   w16- and mw-; 9-12 o4-, s4-, m4-; Q8_S limits the seconds), the pick against other tilings, as a stream of calls;
# - f4: probe_small_m.py's f4-* cases, the pick (four tiles where one wave of two leaves two stages) against the pick
#   before it;
# - t2: probe_small_m.py's t2-* cases, int4 at M = 1..4 in two tiles (the pick) against one (not yet run);
# - four_tests: the small-M kernel's GPU tests of the four-tile picks, the wave balance, short chunks and random
#   shapes;
# - dec: the small-M kernel (W4A16 g128 and W8A16 per-channel, bf16) at N = K = 8192, M = DEC_MS (1,8,12,16) as a
#   stream of calls (bench_decode.py --quick), cuBLAS bf16 beside it;
# - small_tests: every GPU test of the small-M kernel (tests/quant/test_mixed.py; SUITE_K filters them), in 8 shards.
source "$(dirname "$0")/device_env.sh"
for part in ${*:-q8}; do
  case $part in
  q8)
    timeout "${Q8_S:-420}" python3 benchmarks/probe_small_m.py --rounds 3 --cases "${Q8_CASES:-$(cases q8-)}" 2>&1 \
      | tee -a "$OUT/q8.md" ;;
  f4)
    Q8_CASES=$(cases f4-) bash "$0" q8 ;;
  t2)
    Q8_CASES=$(cases t2-) bash "$0" q8 ;;
  four_tests)
    gpu_tests four_tests "${TST_S:-300}" tests/quant/test_mixed.py \
      -k "four_tile or short_chunks or wave_balanced or random" ;;
  dec) decode dec 1,8,12,16 ;;
  small_tests) small_tests ;;
  esac
done
