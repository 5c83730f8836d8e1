#!/usr/bin/env python
"""Diagnose the Hopper GEMM's persistent grid on a GPU: time given configurations at one shape for several
persistent-grid sizes (the ``sms`` the launcher assumes), float64-checked first, inputs rotated past L2.

    PYTHONPATH=$PWD python3 benchmarks/probe_sm90.py [--n 4096] [--dtype float16] [--once CONFIG]

A cluster configuration that runs at half speed although ``cuOccupancyMaxActiveClusters`` says the whole
grid is resident shows here as a time that does not fall with more SMs. ``--once NAME`` launches one
configuration a few times and exits (for a profiler run).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from tilecraft.gemm import Sm90Config, sm90  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402

S = Sm90Config
CONFIGS = {c.name: c for c in [S(128, 256, 64, stages=4, tma_store=False), S(128, 256, 64, stages=4),
                                S(128, 256, 64, stages=3, tma_store=False, cluster_m=2),
                                S(128, 256, 64, stages=3, cluster_m=2), S(128, 256, 64, stages=4, cluster_m=2),
                                S(128, 128, 64, stages=6, cluster_m=2, tma_store=False),
                                S(128, 128, 64, stages=6, cluster_m=2)]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--once", default=None)
    p.add_argument("--sms", default="132,130,128,120,96,66")
    args = p.parse_args()
    n, dt = args.n, getattr(torch, args.dtype)
    copies = max(2, -(-3 * 50 * 2**20 // (3 * n * n * 2)))
    ops = [(torch.randn(1, n, n, device="cuda").to(dt), torch.randn(1, n, n, device="cuda").to(dt)) for _ in range(copies)]
    D = torch.empty(1, n, n, device="cuda", dtype=dt)
    one, zero = np.float32(1), np.float32(0)
    ref = (ops[0][0][0].double() @ ops[0][1][0].double().T)
    dev_sms = torch.cuda.get_device_properties(0).multi_processor_count

    def run(cfg, i, sms):
        A, Bt = ops[i % copies]
        sm90.launch(A, Bt, None, D, None, one, zero, cfg, args.dtype, EpilogueSpec(), sms)



    if args.once:
        cfg = CONFIGS[args.once]
        for i in range(3):
            run(cfg, i, dev_sms)
        torch.cuda.synchronize()
        return 0
    print(f"{n}^3 {args.dtype}, {copies} rotating operand copies, device SMs {dev_sms}")
    print("| config | sms | grid CTAs | ms | TFLOP/s | rel err |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, cfg in CONFIGS.items():
        for sms in [int(s) for s in args.sms.split(",")]:
            run(cfg, 0, sms)
            torch.cuda.synchronize()
            err = float((D[0].double() - ref).norm() / ref.norm())
            for i in range(3):
                run(cfg, i, sms)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            reps = 20
            ev[0].record()
            for i in range(reps):
                run(cfg, i, sms)
            ev[1].record()
            torch.cuda.synchronize()
            ms = ev[0].elapsed_time(ev[1]) / reps
            units = -(-n // cfg.blk_m // cfg.cluster_m) * -(-n // cfg.blk_n)
            res = sm90._RESIDENT_CLUSTERS.get((cfg, args.dtype, sms))
            resident = sms // cfg.cluster_m if res is None else min(sms // cfg.cluster_m, res)
            grid = -(-units // -(-units // resident)) * cfg.cluster_m
            print(f"| {name} | {sms} | {grid} | {ms:.3f} | {2 * n**3 / ms / 1e9:.1f} | {err:.1e} |", flush=True)
    print("resident clusters:", {f"{c.name} sms={s}": v for (c, e, s), v in sm90._RESIDENT_CLUSTERS.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
