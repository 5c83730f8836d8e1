#!/usr/bin/env bash
# Forty-third session: the Hopper kernel on the swapped problem D^T = B^T A^T for dense 16-bit GEMMs of few rows
# (the weight as wgmma's A operand, the rows of x as its N).
# Usage: bash benchmarks/device_session43.sh [swap|sw_tests|sw_gpu|sw_final|sw_range|sw_wide|sw_table|fp8_swap ...]
# - swap: probe_sgemv.py --dtype bf16 at SW_SHAPES, cuBLAS against tc.gemm and swapped tilings (SW_CONFIGS), both B
#   majors, into $OUT/swap.md;
# - sw_tests: the GPU tests of the swapped problem and the Hopper kernel's float64 cases (its D stored by halves);
# - sw_gpu: the GPU tests of the swapped problem, the skinny GEMM, tc.gemm's 16-bit dispatch and CUDA graphs;
# - sw_final: tc.gemm (the swapped problem) against what it ran before (SW_BEFORE: hopper, the Hopper kernel's pick,
#   or skinny) and cuBLAS at Llama-3 layer shapes, M = SW_MS (17, 24, 32), into $OUT/sw_final.md;
# - sw_range: swapped tilings against tc.gemm below 17 rows (the skinny GEMM) and above 32 (the Hopper kernel's
#   pick), into $OUT/sw_range.md;
# - sw_wide: swapped tilings where B has more 64-column blocks than SMs, into $OUT/sw_wide.md;
# - sw_table: tc.gemm against the skinny GEMM and the Hopper kernel's pick, B SW_MAJOR-contiguous, into
#   $OUT/sw_table.md;
# - fp8_swap: fp8 e4m3 of few rows, swapped tilings against _scaled_mm and tc.gemm's pick, into $OUT/fp8_swap.md.
source "$(dirname "$0")/device_env.sh"
L=6144x4096,4096x4096,28672x4096,4096x14336,10240x8192,8192x8192,8192x28672

for part in ${*:-swap}; do
  case $part in
  swap)
    C="${SW_CONFIGS:-tc,sw64s8,sw64s6,sw128s8,sw128s8k2,sw128s8q1,sw64s8k2}"
    both probe_sgemv swap "${SW_S:-280}" "${SW_SHAPES:-16x8192x8192,32x8192x8192,64x8192x8192,32x4096x4096,32x28672x4096,32x4096x14336}" \
      "$C" "$C" --dtype bf16 ;;
  sw_tests)
    gpu_tests sw_tests "${SWT_S:-240}" tests/gemm/test_swapped.py tests/sm90/test_gemm_sm90.py -k "swapped or by_halves or matches_float64" ;;
  sw_gpu)
    gpu_tests sw_gpu "${SWT_S:-240}" tests/gemm/test_swapped.py tests/gemm/test_skinny.py tests/gemm/test_cuda_graphs.py \
      tests/gemm/test_gemv.py -k "swapped or by_halves or skinny or tc_gemm or 16_bit or graph" ;;
  sw_final)
    S=$(for m in ${SW_MS:-17 24 32}; do echo $L | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    both probe_sgemv sw_final "${SW_S:-240}" "${SW_SHAPES:-$S}" "${SW_BEFORE:-hopper},tc" "${SW_BEFORE:-hopper},tc" --dtype bf16 ;;
  sw_range)
    S=$(for m in ${SW_MS:-4 8 16 48 64}; do echo 6144x4096,4096x4096,8192x8192,4096x14336 | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    both probe_sgemv sw_range "${SW_S:-240}" "${SW_SHAPES:-$S}" tc,sw64s8,sw64s8k2 tc,sw64s8,sw64s8k2 --dtype bf16 ;;
  sw_wide)
    # B^T of more 64-row tiles than SMs (the swapped problem declines them): its 128-row tiles and stream-K against
    # the Hopper kernel's pick and the skinny GEMM
    S=$(for m in ${SW_MS:-8 16 24}; do echo 28672x4096,10240x8192 | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    C="${SW_CONFIGS:-tc,hopper,skinny,sw64s8,sw128s8,sw128s6,sw128s8q1}"
    both probe_sgemv sw_wide "${SW_S:-250}" "${SW_SHAPES:-$S}" "$C" "$C" --dtype bf16 ;;
  sw_table)
    # the final table: tc.gemm against what it ran before (the skinny GEMM, the Hopper kernel's pick), B's major
    # SW_MAJOR (N or K), M = SW_MS (4 8 16 24 32), Llama-3 layers
    S=$(for m in ${SW_MS:-4 8 16 24 32}; do echo $L | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    timeout "${SW_S:-300}" python3 benchmarks/probe_sgemv.py --rounds "${ROUNDS:-3}" --b-major "${SW_MAJOR:-N}" \
      --shapes "$S" --configs tc,skinny,hopper --dtype bf16 >> "$OUT/sw_table.md" 2>&1
    sed 's/  */ /g' "$OUT/sw_table.md" | grep -v "^|---" ;;
  fp8_swap)
    # fp8 e4m3 of few rows (W8A8 decoding): the swapped problem against _scaled_mm and tc.gemm's pick
    S=$(for m in ${SW_MS:-4 16 32}; do echo ${FP8_L:-8192x8192,4096x4096,28672x4096,10240x8192} | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    timeout "${SW_S:-300}" python3 benchmarks/probe_fp8.py --rounds "${ROUNDS:-3}" --shapes "$S" --configs "" --swap \
      "${FP8_SWAP:-S(64, 16, 128, stages=8, consumers=1, promote=True, tma_store=False);S(64, 32, 128, stages=8, consumers=1, promote=True, tma_store=False);S(128, 32, 128, stages=6, consumers=2, promote=True, tma_store=False)}" \
      2>&1 | tee -a "$OUT/fp8_swap.md" | grep -v "^|---" ;;
  *) echo "unknown part $part" ;;
  esac
done
