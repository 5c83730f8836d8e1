#!/usr/bin/env python
"""Which kernels cuBLAS runs (through torch.matmul) at given shapes, by name, with their mean GPU time: the
tile, cluster and schedule a losing shape should be compared with (issue 8's LLM sweep).

    PYTHONPATH=$PWD python3 benchmarks/cublas_kernels.py --shapes 256x28672x4096,1024x28672x4096 [--dtype bfloat16]

With ``--dtype float8_e4m3fn`` the call is ``torch._scaled_mm`` (unit scales, bf16 out), as torch calls it by
default and with ``use_fast_accum=True``.

Each shape runs 20 calls under torch.profiler (operands rotated over four copies); the table lists every CUDA
kernel of those calls. The names are cuBLAS's own (nvjet_sm90_tst_<tile>_<k-tile x stages>_<cluster>_...).
"""
from __future__ import annotations

import argparse
import collections

import torch


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="256x28672x4096,1024x28672x4096")
    p.add_argument("--dtype", default="bfloat16")
    a = p.parse_args()
    dt = getattr(torch, a.dtype)
    print("| shape | kernel | calls | mean µs |\n|---|---|---:|---:|")
    fp8 = dt.itemsize == 1
    one = torch.ones((), device="cuda")
    calls = ({"": lambda x, w: torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
              " (fast accum)": lambda x, w: torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                            use_fast_accum=True)}
             if fp8 else {"": lambda x, w: x @ w})
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        ops = [(torch.randn(m, k, device="cuda").to(dt),
                torch.randn(n, k, device="cuda").to(dt).t() if fp8 else torch.randn(k, n, device="cuda").to(dt))
               for _ in range(4)]                                       # _scaled_mm takes a column-major B
        for how, call in calls.items():
            for x, w in ops:
                call(x, w)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for i in range(20):
                    call(*ops[i % 4])
                torch.cuda.synchronize()
            times = collections.defaultdict(list)
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    times[e.name].append(e.device_time)
            for name, t in sorted(times.items(), key=lambda kv: -sum(kv[1])):
                print(f"| {shape}{how} | `{name}` | {len(t)} | {sum(t) / len(t):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
