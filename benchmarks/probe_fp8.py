#!/usr/bin/env python
"""Issue 8's fp8 point: tc.gemm on e4m3 operands against ``torch._scaled_mm`` in one process, float64-checked
first, operands rotated past L2, every contender timed in turn ``--rounds`` times (medians).

    PYTHONPATH=$PWD python3 benchmarks/probe_fp8.py [--shapes 4096x4096x4096,8192x8192x8192] [--rounds 3]

cuBLAS runs twice: ``_scaled_mm`` as torch calls it by default (``use_fast_accum=False``: cuBLASLt adds the
tensor cores' partial sums into fp32 every so often) and with ``use_fast_accum=True`` (the tensor cores'
own accumulation throughout). tc.gemm likewise: by default it adds each 128-element k-tile's sums into fp32
registers (``Sm90Config.promote``); ``fast_accum=True`` does not. The relative error column shows what
that costs. Candidates: tc.gemm's two automatic picks and ``--configs`` (';'-separated Sm90Config
expressions, S = Sm90Config), and ``--swap`` (the same, on the swapped problem D^T = B^T A^T).
One line per (shape, contender): µs, TFLOP/s, x ``_scaled_mm``, x fast-accum ``_scaled_mm``, relative error.
``--sustain SECONDS`` then runs each contender back to back for that long and reports the SM clock and board
power it sustains and its joules per TFLOP (``probe_sgemm.sustained``; ratios against ``_scaled_mm``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, against, in_turn  # noqa: E402
from tilecraft.gemm import GemmOp, Sm90Config, gemm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_sgemm import sustained  # noqa: E402

S = Sm90Config
CONFIGS = ("S(128, 256, 128, stages=4);S(128, 128, 128, stages=6);S(128, 128, 128, stages=6, promote=True);"
           "S(128, 128, 128, stages=6, cluster_m=2, promote=True)")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    p.add_argument("--dtype", default="float8_e4m3fn")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=CONFIGS)
    p.add_argument("--swap", default="", help="';'-separated Sm90Config expressions run on the swapped problem D^T = "
                                              "B^T A^T (the weight as wgmma's A operand, D through a column-major view)")
    p.add_argument("--out-dtype", default="bfloat16", help="D's element type, for every contender")
    p.add_argument("--sustain", type=float, default=0.0, help="seconds of each contender back to back (0: none)")
    a = p.parse_args()
    timer = Timer(gpu_sleep=True, warmup_ms=5.0, reps=a.reps)            # the kernels' GPU time
    dt, out_dt = getattr(torch, a.dtype), getattr(torch, a.out_dtype)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    print("| shape | contender | µs | TFLOP/s | x _scaled_mm | x fast-accum | rel err |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for shape in a.shapes.split(","):
        M, N, K = (int(x) for x in shape.split("x"))
        copies = max(2, -(-200 * 2**20 // (M * K + K * N)))               # > 200 MB of operands: not in L2
        xs = [torch.randn(M, K, device="cuda").to(dt) for _ in range(copies)]
        ws = [torch.randn(N, K, device="cuda").to(dt).t() for _ in range(copies)]  # (K, N), K-major
        ref = xs[0].double() @ ws[0].double()
        operands = list(zip(xs, ws))
        flop = 2 * M * N * K

        def scaled(x, w, fast):
            return torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=out_dt, use_fast_accum=fast)

        calls = {"_scaled_mm": lambda x, w: scaled(x, w, False), "_scaled_mm fast": lambda x, w: scaled(x, w, True),
                 "tc.gemm": lambda x, w: gemm(x, w, out_dtype=out_dt),
                 "tc.gemm fast": lambda x, w: gemm(x, w, fast_accum=True, out_dtype=out_dt)}
        for e in a.configs.split(";") if a.configs else []:
            cfg = eval(e, {"S": S})
            calls[cfg.name] = lambda x, w, cfg=cfg: gemm(x, w, config=cfg, out_dtype=out_dt)
        for e in a.swap.split(";") if a.swap else []:
            cfg = eval(e, {"S": S})
            op = GemmOp(a.dtype, a.out_dtype, cfg)

            def swapped(x, w, op=op):
                out = torch.empty(x.shape[0], w.shape[1], device="cuda", dtype=out_dt)
                op(w.t(), x.t(), out=out.t())
                return out
            calls["swap " + cfg.name] = swapped
        errs = {}
        for name, call in list(calls.items()):
            try:
                out = call(*operands[0])
                torch.cuda.synchronize()
            except Exception as ex:  # noqa: BLE001 - a configuration the kernel refuses at this shape
                print(f"| {shape} | {name} | {type(ex).__name__}: {str(ex)[:80]} | | | | |", flush=True)
                del calls[name]
                continue
            errs[name] = float((out.double() - ref).norm() / ref.norm())
        times = in_turn({name: lambda call=call: timer(call, operands).median_ms * 1000 for name, call in calls.items()},
                        a.rounds)
        base, fast = against(times, "_scaled_mm"), against(times, "_scaled_mm fast")
        for name in calls:
            us, x, _ = base[name]
            print(f"| {shape} | {name} | {us:.1f} | {flop / us / 1e6:.1f} | {x:.3f}x | {fast[name][1]:.3f}x | "
                  f"{errs[name]:.2e} |", flush=True)
        if a.sustain > 0:
            sustained(shape, flop, calls, operands, a.sustain)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
