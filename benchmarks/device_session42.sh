#!/usr/bin/env bash
# Forty-second session: dense 16-bit GEMMs of few rows (decoding with unquantized weights) on the mixed-input
# kernel with the weight read in place (tilecraft/gemm/skinny.py).
# Usage: bash benchmarks/device_session42.sh [sk_tests|sk|sk_more ...]
# - sk_tests: the skinny GEMM's GPU tests (tests/gemm/test_skinny.py);
# - sk: probe_sgemv.py --dtype bf16 at SK_SHAPES, cuBLAS against the Hopper kernel's pick (what tc.gemm ran), the
#   GEMV's and skinny tilings (SK_CONFIGS_N / SK_CONFIGS_K), both B majors, into $OUT/sk.md;
# - sk2: the same with more tilings (register buffers for N-contiguous B, L2 prefetch before the PDL wait: f2) and
#   shapes (M = 1 against the GEMV), into $OUT/sk2.md;
# - sk3: the picks through tc.gemm (``tc``) and tilings around them, M = 17..32 (x in registers), into $OUT/sk3.md;
# - sk_final: tc.gemm at Llama-3 layer shapes, M = 1, 4, 8, 16, against cuBLAS and what it ran before, into
#   $OUT/sk_final.md;
# - sk_waves: fixed split counts where the row blocks fill their last wave poorly, into $OUT/sk_waves.md;
# - sk_fp16: tc.gemm against cuBLAS and the Hopper kernel's pick with fp16 operands, into $OUT/sk_fp16.md;
# - host: benchmarks/host_overhead.py (HOST_ARGS, e.g. "--profile --only contiguous"), into $OUT/host.md;
# - sk_gpu: the GPU tests of the skinny GEMM, tc.gemm's 16-bit dispatch and CUDA graphs.
source "$(dirname "$0")/device_env.sh"

for part in ${*:-sk_tests sk}; do
  case $part in
  sk_tests)
    gpu_tests sk_tests "${SKT_S:-150}" tests/gemm/test_skinny.py ;;
  sk)
    both probe_sgemv sk "${SK_S:-200}" "${SK_SHAPES:-4x4096x4096,8x4096x4096,16x4096x4096,8x8192x8192,16x14336x4096}" \
      "${SK_CONFIGS_N:-hopper,skinny,sk4.4.64.2a,sk4.4.32.4a,sk8.4.64.2a,sk4.8.32.2a,sk4.4.64.2}" \
      "${SK_CONFIGS_K:-hopper,skinny,sk4.2.64.3a,sk4.2.128.2a,sk8.2.64.2a,sk4.1.64.4a,sk4.2.64.3}" --dtype bf16 ;;
  sk2)
    both probe_sgemv sk2 "${SK_S:-240}" "${SK_SHAPES:-1x4096x4096,4x4096x4096,16x4096x4096,8x8192x8192,16x14336x4096,8x4096x14336}" \
      "${SK_CONFIGS_N:-hopper,auto,sk4.4.64.2,sk4.4.64.2f2,sk4.4.32.3,sk8.4.32.2,sk4.8.32.2,sk4.4.64.2a,sk4.4.64.4a,sk4.4.64.2ar}" \
      "${SK_CONFIGS_K:-hopper,auto,skinny,sk4.2.64.4a,sk4.2.64.3,sk4.2.64.3f2,sk4.2.128.3a,sk4.2.128.2,sk8.2.64.2}" --dtype bf16 ;;
  sk3)
    both probe_sgemv sk3 "${SK_S:-260}" "${SK_SHAPES:-4x4096x4096,16x4096x4096,24x4096x4096,32x4096x4096,8x8192x8192,32x14336x4096}" \
      "${SK_CONFIGS_N:-hopper,tc,sk8.4.32.2,sk8.4.32.2/s1,sk16.4.32.2,sk8.4.64.2,sk8.4.32.3,sk8.4.32.2ax,sk4.4.64.2ax}" \
      "${SK_CONFIGS_K:-hopper,tc,sk4.2.128.2,sk8.2.128.2,sk4.2.128.3,sk4.4.128.2,sk4.2.128.4ax,sk4.2.64.4ax}" --dtype bf16 ;;
  sk_waves)
    # the row blocks' waves: more splits where the unsplit grid leaves SMs idle in its last wave
    both probe_sgemv sk_waves "${SK_S:-240}" "${SK_SHAPES:-8x10240x8192,16x10240x8192,8x6144x4096,16x28672x4096,8x28672x4096,16x4096x14336}" \
      "${SK_CONFIGS_N:-hopper,tc,sk8.4.32.2/s2,sk8.4.32.2/s3,sk8.4.32.2/s4,sk4.4.32.2/s4}" \
      "${SK_CONFIGS_K:-hopper,tc,sk4.2.128.2/s2,sk4.2.128.2/s3,sk8.2.128.2,sk8.2.128.2/s2}" --dtype bf16 ;;
  sk_fp16)
    both probe_sgemv sk_fp16 "${SK_S:-120}" "${SK_SHAPES:-4x4096x4096,16x8192x8192,8x4096x14336,1x4096x4096}" \
      hopper,tc hopper,tc --dtype fp16 ;;
  host)
    timeout "${HOST_S:-150}" python3 benchmarks/host_overhead.py ${HOST_ARGS:-} 2>&1 | tee "$OUT/host.md" | head -60 ;;
  sk_gpu)
    gpu_tests sk_gpu "${SKT_S:-240}" tests/gemm/test_skinny.py tests/gemm/test_cuda_graphs.py tests/gemm/test_gemv.py \
      -k "skinny or tc_gemm or 16_bit or graph" ;;
  sk_final)
    # Llama-3-8B (qkv, o, gate_up, down) and 70B (qkv, o, down) layer shapes: tc.gemm against cuBLAS and what it ran
    # before (the GEMV at M = 1, the Hopper kernel's pick from 3 rows)
    L=6144x4096,4096x4096,28672x4096,4096x14336,10240x8192,8192x8192,8192x28672
    one=$(echo $L | tr , '\n' | sed 's/^/1x/' | paste -sd,)
    few=$(for m in 4 8 16; do echo $L | tr , '\n' | sed "s/^/${m}x/"; done | paste -sd,)
    both probe_sgemv sk_final "${SK_S:-120}" "$one" auto,tc auto,tc --dtype bf16
    both probe_sgemv sk_final "${SK_S:-240}" "$few" hopper,tc hopper,tc --dtype bf16 ;;
  *) echo "unknown part $part" ;;
  esac
done
