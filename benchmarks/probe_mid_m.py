#!/usr/bin/env python
"""Issue 9 between decoding and the Hopper kernel: W4A16 g128 (or W8A16 per-channel) at M = 17..63, where tc.gemm runs the small-M
kernel in slices of 32 rows (``mixed.MAX_M``) below ``sm90_mixed.SM90_MIN_M``.

    PYTHONPATH=$PWD python3 benchmarks/probe_mid_m.py [--ms 24,32,48] [--bits 4|8] [--variants 'warps=8,tiles=2,async_copy=1']

Per M (N = K = 8192, bf16 activations, weights rotating over copies > 3x L2), time per call of a stream of
32 back-to-back calls (bench_decode.py's ``stream``, programmatic dependent launches as tc.gemm makes them) of:

* ``tc.gemm``: the dispatch (``mixed.mixed_gemm``: the Hopper kernel from ``SM90_MIN_M`` rows on);
* ``small pick``: ``MixedGemm`` with ``pick_mixed_config``'s tiling (slices of 32 rows);
* ``small 16-row slices``: the M = 16 tiling on slices of 16 rows (the outputs are written to slices of one y);
* ``hopper``: ``sm90_mixed.sm90_mixed_gemm`` with its own heuristic;
* each ``--variants`` override of the pick (MixedConfig fields), on slices of 32 rows;
* cuBLAS bf16 with the dense weight, the same way.

Every result is checked against float64 x @ dequantize(W) first.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_mixed as BM  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm import mixed, sm90_mixed  # noqa: E402

TOL = 1.2e-2                                                              # bf16 output rounding
CALLS = 32


def _us(fn: Any, sets: list[tuple]) -> float:
    return Timer(warmup_ms=20, rep_ms=60, min_reps=20 * CALLS, calls_per_sample=CALLS)(fn, sets).median_ms * 1e3


def sliced(fmt: Any, M: int, K: int, N: int, rows: int, cfg: Any = None) -> Any:
    """y = x @ W by MixedGemm calls on slices of `rows` rows of x (cfg: the tiling, default the pick at `rows`)."""
    cfg = cfg or mixed.pick_mixed_config(fmt, rows, K, N)
    run = mixed.MixedGemm(fmt, cfg)

    def f(x: Any, w: Any) -> Any:
        if M <= rows:
            return run(x, w)
        return torch.cat([run(x[m0:m0 + rows], w) for m0 in range(0, M, rows)])
    f.config = cfg.name
    return f


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", default="24,32,48")
    ap.add_argument("--bits", type=int, choices=(4, 8), default=4, help="W4A16 g128 or W8A16 per-channel")
    ap.add_argument("--variants", default="", help="semicolon-separated MixedConfig overrides of the pick")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    label = "W4A16 g128" if args.bits == 4 else "W8A16 per-channel"
    print(f"# {label} at mid M, {torch.cuda.get_device_properties(0).name}, N = K = 8192, bf16, "
          f"stream of {CALLS} calls\n")
    K = N = 8192
    pws = BM._packed(K, N, args.bits, 128 if args.bits == 4 else None, torch.bfloat16)
    fmt = pws[0].format
    dense = [torch.randn(K, N, device="cuda").to(torch.bfloat16) for _ in range(BM._copies(K * N * 2))]
    rows, bad = [], 0
    for M in (int(m) for m in args.ms.split(",")):
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        ref = x.double() @ pws[0].dequantize(torch.float64)
        dispatch = (lambda xx, w: mixed.mixed_gemm(xx, w))
        dispatch.config = "sm90" if sm90_mixed.use_sm90_mixed(x, pws[0]) else mixed.pick_mixed_config(fmt, M, K, N).name
        runs = [("tc.gemm", dispatch), ("small pick", sliced(fmt, M, K, N, mixed.MAX_M)),
                ("small 16-row slices", sliced(fmt, M, K, N, 16))]
        hopper = (lambda xx, w: sm90_mixed.sm90_mixed_gemm(xx, w))
        hopper.config = "sm90 heuristic"
        runs.append(("hopper", hopper))
        for var in (v for v in args.variants.split(";") if v):
            over = {k: int(v) for k, v in (kv.split("=") for kv in var.split(","))}
            cfg = replace(mixed.pick_mixed_config(fmt, min(M, mixed.MAX_M), K, N), **over)
            try:
                cfg.validate(fmt, K, N, min(M, mixed.MAX_M))
            except ValueError as e:
                print(f"skipped: {e}")
                continue
            runs.append((f"variant {var}", sliced(fmt, M, K, N, mixed.MAX_M, cfg)))
        cub = _us(torch.matmul, [(x, w) for w in dense])
        rows.append({"M": M, "kernel": "cuBLAS bf16", "config": "", "µs": f"{cub:.1f}", "x cuBLAS": "", "err": ""})
        for name, f in runs:
            y = f(x, pws[0])
            torch.cuda.synchronize()
            err = float((y.double() - ref).norm() / ref.norm())
            bad += err > TOL
            us = _us(f, [(x, p) for p in pws])
            rows.append({"M": M, "kernel": name, "config": f.config, "µs": f"{us:.1f}", "x cuBLAS": f"{cub / us:.2f}x",
                         "err": f"{err:.1e}"})
    print(markdown_table(list(rows[0]), [list(r.values()) for r in rows]))
    print(f"\n{bad} correctness failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
