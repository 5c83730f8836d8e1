#!/usr/bin/env python
"""Batched GEMMs: tc.gemm on 3-D operands against torch.matmul (cuBLAS's batched kernels), timed in turn.

    PYTHONPATH=$PWD python3 benchmarks/probe_batched.py --dtype bf16 --shapes 8x1024x1024x1024,64x256x256x128 \
        --rounds 3 [--b-major N|K] [--shared-b]

A shape is LxMxNxK: A (L, M, K) @ B (L, K, N). ``--b-major K`` gives B as the transpose of a row-major (L, N, K)
(``x @ W.transpose(-1, -2)``, attention's Q @ K^T), ``--shared-b`` one B (K, N) for every batch (broadcast, stride
0). Operands rotate over enough copies to exceed twice the L2. Every contender is first checked against float64
(relative Frobenius error). One line per (shape, contender): µs, TFLOP/s, x torch (median over rounds), the rounds'
spread, the error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft as tc  # noqa: E402
from tilecraft.bench.timing import Timer, calls_in_turn  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    p.add_argument("--shapes", default="8x1024x1024x1024,32x512x512x512,64x256x256x128,16x2048x2048x128")
    p.add_argument("--b-major", default="N", choices=["N", "K"])
    p.add_argument("--shared-b", action="store_true", help="one B (K, N) broadcast over the batch")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = DTYPES[a.dtype]
    timer = Timer(warmup_ms=20.0, reps=a.reps)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"device: {torch.cuda.get_device_name()}, {a.dtype}, B {a.b_major}-contiguous"
          f"{', shared' if a.shared_b else ''}\n")
    print("| shape LxMxNxK | contender | µs | TFLOP/s | x torch | spread | rel err |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for shape in a.shapes.split(","):
        L, m, n, k = (int(x) for x in shape.split("x"))
        lb = 1 if a.shared_b else L
        size = (L * m * k + lb * k * n) * dt.itemsize
        ops = []
        for _ in range(max(2, -(-2 * l2 // size) + 1)):
            x = torch.randn(L, m, k, device="cuda").to(dt)
            w = torch.randn(lb, k, n, device="cuda") if a.b_major == "N" else torch.randn(lb, n, k, device="cuda")
            w = w.to(dt) if a.b_major == "N" else w.to(dt).transpose(-1, -2)
            ops.append((x, w[0] if a.shared_b else w))
        x, w = ops[0]
        ref = x.double() @ w.double()
        runs = {"torch": lambda x, w: x @ w, "tc.gemm": lambda x, w: tc.gemm(x, w)}
        errs = {name: float((call(x, w).double() - ref).norm() / ref.norm()) for name, call in runs.items()}
        stats = calls_in_turn(timer, runs, ops, a.rounds, "torch")
        for name in runs:
            ms, ratio, spread = stats[name]
            print(f"| {shape} | {name} | {ms * 1e3:.1f} | {2 * L * m * n * k / ms / 1e9:.1f} | {ratio:.3f}x "
                  f"| {spread:.1%} | {errs[name]:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
