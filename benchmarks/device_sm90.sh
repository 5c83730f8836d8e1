#!/usr/bin/env bash
# Device session for issue 8: a smoke run of the Hopper GEMM, its GPU tests, then the benchmark.
# Usage on the GPU machine, from the repository root:  bash benchmarks/device_sm90.sh [bench_sm90 args...]
set -uo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
export TILECRAFT_CACHE_DIR="$OUT/../tc-cache-$$"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
echo "== smoke"
timeout 60 python3 -c "
import torch; from tilecraft.gemm import GemmOp, Sm90Config
A=torch.randn(256,512,device='cuda',dtype=torch.float16); B=torch.randn(512,256,device='cuda',dtype=torch.float16)
D=GemmOp('float16', None, Sm90Config()).__call__(A,B); torch.cuda.synchronize()
r=A.double()@B.double(); print('smoke rel err', float((D.double()-r).norm()/r.norm()))
" 2>&1 | tee "$OUT/smoke.log" | tail -5
echo "== GPU tests (sm90)"
timeout "${TEST_TIMEOUT:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/sm90/test_gemm_sm90.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
echo "== bench"
timeout "${BENCH_TIMEOUT:-330}" python3 benchmarks/bench_sm90.py --out "$OUT/sm90" "$@" 2>&1 | tee "$OUT/bench.log" | tail -80
