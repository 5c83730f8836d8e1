#!/usr/bin/env bash
# Fifty-third session: whole rounds of smaller tiles, or stream-K over them, where the 2x1-cluster 256-row tiles of the
# register-A mixed kernel leave part of a round idle (issue 9, "M >= 1024: >= 0.9x tilecraft's dense" at 6144x4096).
# Usage: bash benchmarks/device_session53.sh [sk3 ...]
# - sk3: at each SK_CASES entry NxK:M:BM, tc.gemm's pick against three consumers by 224 and 208 rows of x in stream-K
#   modes 1 and 2 (--three-sk) and two consumers by BM rows of x (y by TMA, 4 stages) whole and in stream-K mode 1,
#   three rounds in turn, with tilecraft's dense bf16 and cuBLAS beside them.
source "$(dirname "$0")/device_env.sh"
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
  esac
done
