#!/usr/bin/env python
"""What the rows of x cost the small-M mixed kernel at M = 16 (issue 9): the M = 16 kernel (two m-blocks: the
HMMAs, shared-memory reads and accumulators of 16 rows) run on an x of 8 rows, so that only 8 rows travel from
L2 (rows 8..15 of the m-block clamp to row 7 and are never stored; rows 0..7 stay exact and are checked).

    PYTHONPATH=$PWD python3 benchmarks/probe_m16_xcost.py [--variants 'warps=8,tiles=4,stages=2,async_copy=1']

Prints probe_pdl_timeline.py's table for each variant: at M = 16, and at M = 8 computed as M = 16 ("x8c16").
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import probe_pdl_timeline as P  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.gemm import mixed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="warps=8,tiles=4,stages=2,async_copy=1")
    ap.add_argument("--modes", default="pdl 2/16")
    args = ap.parse_args()
    real = mixed._kernel_args
    rows = []
    for var in args.variants.split(";"):
        variant = {k: int(v) for k, v in (kv.split("=") for kv in var.split(","))}
        for M, fake in ((16, False), (8, True), (8, False)):
            def kernel_args(*a, **k):
                out = real(*a, **k)
                return out[:10] + (2, 16) + out[12:] if fake else out         # mb = 2, 16 rows per stage
            mixed._kernel_args = kernel_args
            try:
                for r in P.probe("W4A16 g128", M, 24, variant, args.modes.split(",")):
                    rows.append([r["config"], "x8c16" if fake else M, "x".join(map(str, r["grid"])), r["mode"],
                                 *(f"{r[k]:.2f}" for k in ("period", "gap", "work", "tail")), f"{r['err']:.1e}"])
            finally:
                mixed._kernel_args = real
    print(markdown_table(["config", "M", "grid", "mode", "period µs", "gap µs", "work µs", "tail µs", "err"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
