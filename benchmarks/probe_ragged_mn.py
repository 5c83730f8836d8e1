#!/usr/bin/env python
"""A row-major B whose N is no multiple of 64: tc.gemm's Hopper kernel, which loads such a B by 64-element column
blocks (thirty-eighth session), against the sm80 tensor-op kernel it took before and cuBLAS, in one process.

    PYTHONPATH=$PWD python3 benchmarks/probe_ragged_mn.py [--shapes 1000x1000x1000,...] [--rounds 3] [--b-major K]
        [--a-major M] [--configs "S(128, 128, 64, 6, cluster_m=2);..."] [--no-sm80]

``--configs`` adds Hopper configurations (S = Sm90Config) as contenders, ``--no-sm80`` drops the sm80 kernel.

Operands are row-major (A M x K, B K x N, as torch.matmul takes them) unless --a-major / --b-major say otherwise,
random, rotated past L2; every contender is
checked against float64 first; the contenders are timed in turn (``in_turn``), GPU time only.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import Timer, in_turn  # noqa: E402
from tilecraft.gemm import GemmOp, Sm90Config, gemm  # noqa: E402
from tilecraft.gemm.op import pick_config  # noqa: E402

SHAPES = "1000x1000x1000,3000x2000x1000,2000x3000x4000,4000x1000x4000,1000x5000x2000,8000x3000x1000,500x1000x8000"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--b-major", default="N", choices=("N", "K"), help="B row-major (N, the default) or column-major")
    ap.add_argument("--a-major", default="K", choices=("K", "M"), help="A row-major (K, the default) or column-major")
    ap.add_argument("--configs", default="", help="';'-separated Sm90Config expressions (S = Sm90Config) to time too")
    ap.add_argument("--no-sm80", action="store_true", help="leave out the sm80 kernel")
    args = ap.parse_args()
    configs = [eval(e, {"S": Sm90Config}) for e in args.configs.split(";") if e.strip()]
    dt = getattr(torch, args.dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    timer = Timer(warmup_ms=5.0, rep_ms=50.0)
    rows = []
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        copies = max(2, -(-200 * 2**20 // (2 * (M * K + K * N))))          # > 200 MB of operands: not in L2
        sets = [(torch.randn(M, K, device="cuda").to(dt), torch.randn(K, N, device="cuda").to(dt))
                for _ in range(copies)]
        if args.b_major == "K":
            sets = [(a, b.t().contiguous().t()) for a, b in sets]
        if args.a_major == "M":
            sets = [(a.t().contiguous().t(), b) for a, b in sets]
        contenders = {"cuBLAS": torch.matmul, "tc.gemm": gemm}
        if not args.no_sm80:
            contenders["sm80 kernel (before)"] = GemmOp(args.dtype, None, pick_config(M, N, K, 1, args.dtype, sms))
        contenders.update({cfg.name: GemmOp(args.dtype, None, cfg) for cfg in configs})
        A, B = sets[0]
        ref = A.double() @ B.double()
        errs = {name: float((f(A, B).double() - ref).norm() / ref.norm()) for name, f in contenders.items()}
        timers = {name: (lambda f=f: timer(f, sets).median_ms) for name, f in contenders.items()}
        times = {name: statistics.median(ts) * 1e3 for name, ts in in_turn(timers, args.rounds).items()}
        for name, us in times.items():
            rows.append([shape, name, f"{us:.1f}", f"{2 * M * N * K / us / 1e6:.1f}", f"{times['cuBLAS'] / us:.3f}x",
                         f"{errs[name]:.1e}"])
        del sets
        torch.cuda.empty_cache()
    print(f"# {torch.cuda.get_device_name(0)}, {args.dtype}, {'row' if args.a_major == 'K' else 'column'}-major A, "
          f"{'row' if args.b_major == 'N' else 'column'}-major B, {args.rounds} rounds in turn\n")
    print(markdown_table(["shape", "contender", "µs", "TFLOP/s", "x cuBLAS", "rel err"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
