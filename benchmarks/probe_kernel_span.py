#!/usr/bin/env python
"""What a GEMM call's CUDA-event time holds besides its kernels: per shape, tc.gemm's pick and torch.matmul
(cuBLAS), each timed with CUDA events (tilecraft.bench's Timer, GPU time, operands rotated past L2) and then
profiled (torch.profiler: every CUDA kernel and memset of 20 calls with their mean device time).

    PYTHONPATH=$PWD python3 benchmarks/probe_kernel_span.py --shapes 1024x4096x4096,128x4096x4096

One line per (shape, contender): event µs, the sum of its kernels' mean µs, and the difference; then the kernels.
The profiled calls run back to back, the timed ones in bursts after a GPU sleep: a kernel long enough to meet the
power limit runs slower under the profiler (1024x8192x8192 bf16 on an H100: 207 against 181 µs), so the difference
is the launch's cost only for short kernels.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, in_turn  # noqa: E402
from tilecraft.gemm import gemm  # noqa: E402


def kernels(call, operands) -> dict[str, float]:
    """Mean device µs per call of each CUDA kernel / memset that 20 calls run (torch.profiler)."""
    for ops in operands:
        call(*ops)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(20):
            call(*operands[i % len(operands)])
        torch.cuda.synchronize()
    times: dict[str, list[float]] = collections.defaultdict(list)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name].append(e.device_time)
    return {name: sum(t) / 20 for name, t in times.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="1024x4096x4096,128x4096x4096")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    dt = getattr(torch, a.dtype)
    timer = Timer(gpu_sleep=True, warmup_ms=5.0, reps=20)
    print(f"# kernel span, {torch.cuda.get_device_name(0)}, {a.dtype}\n")
    print("| shape | contender | event µs (median of rounds) | kernels µs | event - kernels |\n|---|---|---:|---:|---:|")
    detail = []
    for shape in a.shapes.split(","):
        M, N, K = (int(x) for x in shape.split("x"))
        copies = max(2, -(-200 * 2**20 // (2 * (M * K + K * N))))      # > 200 MB of operands: not in L2
        operands = [(torch.randn(M, K, device="cuda").to(dt), (torch.randn(K, N, device="cuda") * 0.05).to(dt))
                    for _ in range(copies)]
        x, w = operands[0]
        ref = x.double() @ w.double()
        calls = {"tc.gemm": lambda x, w: gemm(x, w), "cuBLAS": lambda x, w: x @ w}
        for name, call in calls.items():
            err = float((call(x, w).double() - ref).norm() / ref.norm())
            assert err < 1e-2, (shape, name, err)
        times = in_turn({n: lambda c=c: timer(c, operands).median_ms * 1000 for n, c in calls.items()}, a.rounds)
        for name, call in calls.items():
            ev = sorted(times[name])[len(times[name]) // 2]
            ks = kernels(call, operands)
            total = sum(ks.values())
            print(f"| {shape} | {name} | {ev:.2f} | {total:.2f} | {ev - total:.2f} |", flush=True)
            detail += [f"| {shape} | {name} | `{k}` | {t:.2f} |" for k, t in ks.items()]
    print("\n| shape | contender | kernel | mean µs per call |\n|---|---|---|---:|")
    print("\n".join(detail))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
