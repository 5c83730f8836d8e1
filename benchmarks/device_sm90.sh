#!/usr/bin/env bash
# Device session for issues 8 and 9: a smoke run of the Hopper GEMM, the GPU tests of the Hopper and
# mixed-input GEMMs, the mixed-input benchmark, then the Hopper benchmark.
# Usage on the GPU machine, from the repository root:  bash benchmarks/device_sm90.sh [bench_sm90 args...]
source "$(dirname "$0")/device_env.sh"
echo "== smoke"
timeout 60 python3 -c "
import torch; from tilecraft.gemm import GemmOp, Sm90Config
A=torch.randn(256,512,device='cuda',dtype=torch.float16); B=torch.randn(512,256,device='cuda',dtype=torch.float16)
D=GemmOp('float16', None, Sm90Config()).__call__(A,B); torch.cuda.synchronize()
r=A.double()@B.double(); print('smoke rel err', float((D.double()-r).norm()/r.norm()))
" 2>&1 | tee "$OUT/smoke.log" | tail -5
echo "== GPU tests (sm90 GEMM, mixed input)"
timeout "${TEST_TIMEOUT:-170}" python3 -m pytest -m gpu -q -p no:cacheprovider tests/sm90/test_gemm_sm90.py tests/quant 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
echo "== mixed-input bench"
timeout "${MIXED_TIMEOUT:-130}" python3 benchmarks/bench_mixed.py --json "$OUT/mixed.json" 2>&1 | tee "$OUT/mixed.log" | tail -40
echo "== bench"
timeout "${BENCH_TIMEOUT:-330}" python3 benchmarks/bench_sm90.py --out "$OUT/sm90" "$@" 2>&1 | tee "$OUT/bench.log" | tail -80
