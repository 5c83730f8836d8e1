#!/usr/bin/env bash
# Forty-fifth session: the register-A mixed kernel with W's packed words through shared memory (RsConfig.w_smem: TMA
# into the x stages, so W's bytes in flight cost no registers) against its register ring (issue 9, M = 33..256).
# Usage: bash benchmarks/device_session45.sh [ws_tests|ws_time ...]
# - ws_tests: the w_smem GPU tests and the register-A kernel's random shapes;
# - ws_time: bench_mixed_large.py at WS_MS (40,64,128,256), tc.gemm's pick against w_smem tilings (WS_CONFIGS), three
#   rounds in turn, into $OUT/ws_time.md.
source "$(dirname "$0")/device_env.sh"
W="R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4, w_smem=True)"
W="$W;R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=2, w_smem=True)"
W="$W;R(blk_m=128, stages=8, depth=4, splits=2, w_smem=True);R(blk_m=128, stages=6, depth=4, w_smem=True)"
W="$W;R(blk_m=64, stages=8, depth=4, splits=2, w_smem=True)"

for part in ${*:-ws_tests}; do
  case $part in
  ws_tests)
    gpu_tests ws_tests "${WST_S:-240}" tests/quant/test_sm90_mixed_rs.py -k "w_through or random_shapes" ;;
  ws_time)
    timeout "${WS_S:-400}" python3 benchmarks/bench_mixed_large.py --rounds "${ROUNDS:-3}" --ms "${WS_MS:-40,64,128,256}" \
      --rs-configs "${WS_CONFIGS:-$W}" 2>&1 | tee -a "$OUT/ws_time.md" | grep -v "^|---" ;;
  *) echo "unknown part $part" ;;
  esac
done
