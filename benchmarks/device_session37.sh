#!/usr/bin/env bash
# Thirty-seventh session: x in registers in the small-M mixed kernel (MixedConfig.x_regs): its shared-memory
# stages hold the weights only, each lane loading its fragments of x from L2 a chunk ahead.
# Usage: bash benchmarks/device_session37.sh [xr|xr_tests|decode ...]
# - xr: benchmarks/probe_small_m.py's xr-* cases (XR_CASES: a comma-separated subset), ROUNDS rounds in turn,
#   the whole table in $OUT/xr.md;
# - xr_tests: the GPU tests of x_regs against float64 (XRT_K: a further -k filter; XRT_S seconds);
# - decode: bench_decode.py --graph at the nine shapes (DEC_MS: the M's), into $OUT/decode.md.
source "$(dirname "$0")/device_env.sh"
XR_ALL=$(python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import probe_small_m as P; print(','.join(k for k in P.CASES if k.startswith('xr-')))")
for part in ${*:-xr}; do
  case $part in
  xr)
    timeout "${XR_S:-500}" python3 benchmarks/probe_small_m.py --rounds "${ROUNDS:-3}" --cases "${XR_CASES:-$XR_ALL}" \
      > "$OUT/xr.md" 2>&1
    grep -E "^\| (case|xr-)" "$OUT/xr.md" | sed 's/  */ /g'; tail -3 "$OUT/xr.md" | grep -v "^|" ;;
  xr_tests)
    gpu_tests xr_tests "${XRT_S:-300}" tests/quant/test_mixed.py -k "x_in_registers${XRT_K:+ and $XRT_K}" ;;
  decode)
    timeout "${DEC_S:-300}" python3 benchmarks/bench_decode.py --graph ${DEC_MS:+--ms $DEC_MS} > "$OUT/decode.md" 2>&1
    grep -E "^\|" "$OUT/decode.md" | sed 's/  */ /g' | head -80 ;;
  esac
done
