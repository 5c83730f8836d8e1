#!/usr/bin/env bash
# Forty-third session: the Hopper kernel on the swapped problem D^T = B^T A^T for dense 16-bit GEMMs of few rows
# (the weight as wgmma's A operand, the rows of x as its N).
# Usage: bash benchmarks/device_session43.sh [swap ...]
# - swap: probe_sgemv.py --dtype bf16 at SW_SHAPES, cuBLAS against tc.gemm and swapped tilings (SW_CONFIGS), both B
#   majors, into $OUT/swap.md.
source "$(dirname "$0")/device_env.sh"

for part in ${*:-swap}; do
  case $part in
  swap)
    C="${SW_CONFIGS:-tc,sw64s8,sw64s6,sw128s8,sw128s8k2,sw128s8q1,sw64s8k2}"
    both probe_sgemv swap "${SW_S:-280}" "${SW_SHAPES:-16x8192x8192,32x8192x8192,64x8192x8192,32x4096x4096,32x28672x4096,32x4096x14336}" \
      "$C" "$C" --dtype bf16 ;;
  *) echo "unknown part $part" ;;
  esac
done
