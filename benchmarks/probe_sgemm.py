#!/usr/bin/env python
"""Issue 6: SIMT SGEMM tilings against cuBLAS (fp32, TF32 off), every contender timed in turn over rounds.

    PYTHONPATH=$PWD python3 benchmarks/probe_sgemm.py --configs NAME,NAME --shapes 4096,8192 --rounds 3

bench_sgemm.py times each tiling once, one after another; a tiling timed after another inherits the GPU's
clock drift (the same tiling moved 5% between runs at 8192^3). Here each round times cuBLAS and every tiling
once (CUDA events, 10 calls after a warm-up, operands rotated over two copies), and the medians over
rounds are compared. Each tiling is first checked against float64 (relative Frobenius error). One line per
(shape, contender): ms, TFLOP/s, x cuBLAS (median over rounds), the rounds' spread, relative error.

``--sustain S`` adds a second table: each contender runs back to back for S seconds (after a pause to let the
GPU cool), while a thread samples the SM clock and the board power (torch.cuda.clock_rate / power_draw,
every 20 ms). An H100 at its 700 W limit lowers its clock within such a run, by as much as the kernel draws:
the table shows TFLOP/s at the clock each kernel sustains, and the joules per TFLOP it costs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, against, in_turn, sustain  # noqa: E402
from tilecraft.gemm import CONFIGS, DEFAULT, sgemm_tuned  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default=DEFAULT.name,
                   help="SGEMM tilings by name (CONFIGS) or auto, comma-separated; NAME/sS asks for S splits of K "
                        "(sgemm_tuned's splits: auto picks, /s1 is none)")
    p.add_argument("--shapes", default="4096,8192", help="square sizes N or MxNxK, comma-separated")
    p.add_argument("--b-major", default="N", choices=["N", "K"],
                   help="B torch's row-major (K, N) (N) or the transpose of an (N, K) nn.Linear weight (K)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--sustain", type=float, default=0.0, help="seconds of back-to-back calls per contender (0: none)")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    configs = []                                     # (label, tiling or None: sgemm_tuned's pick, splits or None)
    for spec in (n for n in a.configs.split(",") if n):
        name, _, split = spec.partition("/s")
        configs.append((spec, None if name == "auto" else CONFIGS[name], int(split) if split else None))
    timer = Timer(warmup_ms=20.0, reps=a.reps)
    print("| shape | contender | ms | TFLOP/s | x cuBLAS | spread | rel err |\n|---|---|---:|---:|---:|---:|---:|")
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x")) if "x" in shape else (int(shape),) * 3
        label = (f"{m}³" if m == n == k else f"{m}x{n}x{k}") + ("" if a.b_major == "N" else " (B K-major)")
        operands = [(torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda") if a.b_major == "N"
                     else torch.randn(n, k, device="cuda").t()) for _ in range(2)]
        ref = operands[0][0].double() @ operands[0][1].double()
        runs = {"cuBLAS": (lambda x, w: x @ w, "")}
        for spec, cfg, splits in configs:
            out = sgemm_tuned(*operands[0], config=cfg, splits=splits)
            err = float((out.double() - ref).norm() / ref.norm())
            runs[spec] = (lambda x, w, cfg=cfg, s=splits: sgemm_tuned(x, w, config=cfg, splits=s), f"{err:.1e}")
        times = in_turn({name: lambda call=call: timer(call, operands).median_ms for name, (call, _) in runs.items()},
                        a.rounds)
        stats = against(times, "cuBLAS")
        for name, (_, err) in runs.items():
            ms, x, spread = stats[name]
            print(f"| {label} | {name} | {ms:.3f} | {2 * m * n * k / ms / 1e9:.1f} | {x:.3f}x | {spread:.1%} | {err} |",
                  flush=True)
        if a.sustain > 0:
            sustained(label, 2 * m * n * k, {name: call for name, (call, _) in runs.items()}, operands, a.sustain)
    return 0


def sustained(label: str, flops: int, calls: dict, operands: list, seconds: float) -> None:
    """Each call back to back for `seconds` (``tilecraft.bench.timing.sustain``); one table row per contender."""
    print("\n| shape | contender | sustained TFLOP/s | x cuBLAS | SM clock (median / min) | power | J per TFLOP |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    base = None
    for name, call in calls.items():
        r = sustain(call, operands, seconds)
        tflops = flops / r.ms / 1e9
        base = base or tflops
        print(f"| {label} | {name} | {tflops:.1f} | {tflops / base:.3f}x | {r.clock_mhz:.0f} / {r.min_clock_mhz:.0f} MHz "
              f"| {r.watts:.0f} W | {r.watts / tflops:.2f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
