#!/usr/bin/env python
"""Host time of one tc.gemm call (what a caller in a loop waits for when the GPU is faster than the host):
µs per call over back-to-back calls (median of 5 batches of 200), against torch's matmul, then a cProfile
of tc.gemm's calls.

    PYTHONPATH=$PWD python3 benchmarks/host_overhead.py [--profile]

The benchmark scripts time the GPU alone (tilecraft.bench.timing covers the host's enqueue time with a GPU
sleep), so a slow host path does not show there; this script shows it.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft as tc  # noqa: E402


def host_us(fn, n: int = 200, batches: int = 5) -> tuple[float, float]:
    """(host µs per call, wall µs per call including the GPU): the medians over `batches` batches of n
    back-to-back calls (the host's own noise moves one batch by 2x on the device's VM)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e6 / n)
        wall.append((t2 - t0) * 1e6 / n)
    return statistics.median(host), statistics.median(wall)


def print_profile(title: str, fn, calls: int, sort: str, lines: int) -> None:
    """cProfile of `calls` back-to-back calls of fn, its `lines` top entries by `sort` under a heading `title`
    (also benchmarks/probe_host.py's)."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    torch.cuda.synchronize()
    print(f"\n#### {title}")
    pstats.Stats(pr).sort_stats(sort).print_stats(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--profile", action="store_true")
    p.add_argument("--only", default="", help="time (and profile) only the calls whose name contains this")
    a = p.parse_args()
    dt = torch.bfloat16
    cases = []
    for M, N, K in ((128, 6144, 4096), (4096, 4096, 4096), (1, 8192, 8192)):
        x = torch.randn(M, K, device="cuda").to(dt)
        w = (torch.randn(K, N, device="cuda") * 0.05).to(dt)
        cases.append((f"{M}x{N}x{K} bf16", lambda x=x, w=w: tc.gemm(x, w), lambda x=x, w=w: x @ w))
        if M == 128:  # the same call on the sm80 tensor-op kernel
            sm80 = tc.gemm.TensorOpConfig(128, 128, 64, 2, 2, stages=3)
            cases.append((f"{M}x{N}x{K} bf16 sm80", lambda x=x, w=w: tc.gemm(x, w, config=sm80),
                          lambda x=x, w=w: x @ w))
    # the skinny GEMM and the swapped problem (few 16-bit rows)
    for M, N, K, k_major in ((4, 4096, 4096, False), (8, 4096, 4096, True), (24, 4096, 4096, True)):
        x = torch.randn(M, K, device="cuda").to(dt)
        w = (torch.randn(K, N, device="cuda") * 0.05).to(dt)
        w = w.t().contiguous().t() if k_major else w
        cases.append((f"{M}x{N}x{K} bf16 B {'K' if k_major else 'N'}-contiguous", lambda x=x, w=w: tc.gemm(x, w),
                      lambda x=x, w=w: x @ w))
    import tilecraft.quant as Q
    w = torch.randn(8192, 8192, device="cuda") * 0.02
    w4 = Q.pack(Q.quantize(w, 4, 128), dt)
    wd = w.to(dt).t().contiguous().t()
    for M in (1, 256):
        x = torch.randn(M, 8192, device="cuda").to(dt)
        cases.append((f"W4A16 {M}x8192x8192", lambda x=x: tc.gemm(x, w4), lambda x=x: x @ wd))
    torch.backends.cuda.matmul.allow_tf32 = False                          # fp32: the IEEE kernels (torch's default)
    for M, N, K in ((1, 4096, 4096), (32, 256, 256), (32, 4096, 4096)):
        x, w = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        cases.append((f"{M}x{N}x{K} fp32", lambda x=x, w=w: tc.gemm(x, w), lambda x=x, w=w: x @ w))
    cases = [c for c in cases if a.only in c[0]]
    for _ in range(3):                      # every call planned and warm before the table (its first row, timed
        for _, ours, theirs in cases:       # right after its own planning, moved most from run to run)
            for _ in range(20):
                ours(), theirs()
    torch.cuda.synchronize()
    print("| call | tc.gemm host µs | tc.gemm wall µs | torch host µs | torch wall µs |\n|---|---:|---:|---:|---:|")
    for name, ours, theirs in cases:
        h, w_ = host_us(ours)
        th, tw = host_us(theirs)
        print(f"| {name} | {h:.1f} | {w_:.1f} | {th:.1f} | {tw:.1f} |", flush=True)
    if a.profile:
        for name, ours, _ in cases:
            print_profile(f"cProfile, 100 calls: {name}", ours, 100, "cumulative", 22)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
