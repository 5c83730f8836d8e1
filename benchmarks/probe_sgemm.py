#!/usr/bin/env python
"""Issue 6: SIMT SGEMM tilings against cuBLAS (fp32, TF32 off), every contender timed in turn over rounds.

    PYTHONPATH=$PWD python3 benchmarks/probe_sgemm.py --configs NAME,NAME --shapes 4096,8192 --rounds 3

bench_sgemm.py times each tiling once, one after another; a tiling timed after another inherits the GPU's
clock drift (the same tiling moved 5% between runs at 8192^3). Here each round times cuBLAS and every tiling
once (CUDA events, 10 calls after a warm-up, operands rotated over two copies), and the medians over
rounds are compared. Each tiling is first checked against float64 (relative Frobenius error). One line per
(shape, contender): ms, TFLOP/s, x cuBLAS (median over rounds), the rounds' spread, relative error.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, in_turn  # noqa: E402
from tilecraft.gemm import CONFIGS, DEFAULT, sgemm_tuned  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default=DEFAULT.name, help="SGEMM tilings by name (CONFIGS), comma-separated")
    p.add_argument("--shapes", default="4096,8192", help="square sizes")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    configs = [CONFIGS[n] for n in a.configs.split(",") if n]
    timer = Timer(warmup_ms=20.0, reps=a.reps)
    print("| shape | contender | ms | TFLOP/s | x cuBLAS | spread | rel err |\n|---|---|---:|---:|---:|---:|---:|")
    for n in (int(s) for s in a.shapes.split(",")):
        operands = [(torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")) for _ in range(2)]
        ref = operands[0][0].double() @ operands[0][1].double()
        runs = {"cuBLAS": (lambda x, w: x @ w, "")}
        for cfg in configs:
            out = sgemm_tuned(*operands[0], config=cfg)
            err = float((out.double() - ref).norm() / ref.norm())
            runs[cfg.name] = (lambda x, w, cfg=cfg: sgemm_tuned(x, w, config=cfg), f"{err:.1e}")
        times = in_turn({name: lambda call=call: timer(call, operands).median_ms for name, (call, _) in runs.items()},
                        a.rounds)
        base = statistics.median(times["cuBLAS"])
        for name, (_, err) in runs.items():
            ms = statistics.median(times[name])
            spread = (max(times[name]) - min(times[name])) / ms
            print(f"| {n}³ | {name} | {ms:.3f} | {2 * n**3 / ms / 1e9:.1f} | {base / ms:.3f}x | {spread:.1%} | {err} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
