#!/usr/bin/env python
"""Where the register-A mixed kernel (tilecraft/gemm/sm90_mixed_rs.py) spends a launch, CTA by CTA.

    PYTHONPATH=$PWD python3 benchmarks/probe_rs_timeline.py --m 64 [--format 4:128] \\
        [--configs "R(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112, splits=4, w_smem=True)"]

``sm90_mixed_rs_kernel(timeline=...)``: the first consumer warpgroup of every CTA records its SM and start, and per
work unit the global timer before its main loop, after it, and after its epilogue (or its split-K partial and,
where the kernel sums the splits, the sum; with stream-K, per item: its slice's hand-over, or the others' partials
added and the epilogue). Clusters and stream-K launch as tc.gemm launches them (stream-K: a CTA per SM). x (M, 8192)
@ W (8192, 8192) (``--nk`` to change), the weight rotated over copies past L2, the last of ``--calls`` launches
reported as benchmarks/probe_sm90_timeline.py does; the result is checked against float64. Configurations default to
tc.gemm's pick (an empty --configs).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import tilecraft.quant as Q  # noqa: E402
from probe_sm90_timeline import report  # noqa: E402
from tilecraft.gemm.sm90 import TIMELINE_ITEMS  # noqa: E402
from tilecraft.gemm.sm90_mixed_rs import RsConfig, pick_rs_config, rs_launch_args, sm90_mixed_rs_kernel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--nk", default="8192x8192", help="N x K of the weight")
    ap.add_argument("--format", default="4:128", help="BITS:GROUP (GROUP 0: per channel)")
    ap.add_argument("--configs", default="", help="';'-separated RsConfig expressions (R = RsConfig); empty: the pick")
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--partials-only", action="store_true", help="split-K partials left for the reduction kernel (not "
                    "launched: the epilogue is the partial's store alone; y is then not checked)")
    ap.add_argument("--ctas", type=int, default=6, help="CTAs listed (and the three that end last)")
    a = ap.parse_args()
    N, K = (int(v) for v in a.nk.split("x"))
    bits, group = (int(v) for v in a.format.split(":"))
    dt = torch.bfloat16
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    w = torch.randn(K, N, device="cuda") * 0.02
    pw0 = Q.pack(Q.quantize(w, bits, group or None), dt)
    copies = max(2, -(-200 * 2**20 // pw0.nbytes))
    pws = [pw0] + [Q.PackedWeight(pw0.qweight.clone(), pw0.scales.clone(), None, pw0.shape, pw0.format)
                   for _ in range(copies - 1)]
    x = torch.randn(a.m, K, device="cuda").to(dt)
    ref = x.double() @ pw0.dequantize(dt).double()
    cfgs = [eval(e, {"R": RsConfig}) for e in a.configs.split(";") if e.strip()] or \
        [pick_rs_config(a.m, N, K, sms, pw0.format)]
    print(f"# register-A kernel timelines, x ({a.m}, {K}) @ W{bits} g{group or 'pc'} ({K}, {N}), "
          f"{torch.cuda.get_device_name()}")
    for cfg in cfgs:
        y = torch.empty(a.m, N, device="cuda", dtype=dt)
        tl = None
        for i in range(a.calls):
            args, units = rs_launch_args(x, pws[i % copies], None, y, cfg, None if a.partials_only else sms)
            run_cfg, flags = args[8], args[12]
            CL = run_cfg.cluster
            grid = sms // CL * CL if run_cfg.stream_k else units     # (stream-K: a CTA per SM, whole clusters)
            if grid > sms:
                print(f"\n### {run_cfg.name}: {units} work units on {sms} SMs: not probed here")
                break
            if tl is None:
                tl = torch.zeros(grid, 2 + 3 * TIMELINE_ITEMS, dtype=torch.int64, device="cuda")
            tl.zero_()
            extra = dict(tmD=args[14]) if len(args) > 13 else {}              # (y by TMA: store_mn)
            sm90_mixed_rs_kernel.launch(*args[:13], timeline=tl, **extra, grid=(grid,), block=(run_cfg.threads,),
                                        cluster=(CL, 1, 1) if CL > 1 else None, cooperative=flags is not None)
        else:
            torch.cuda.synchronize()
            if args[7] is not None and flags is None:
                print(f"\n### {run_cfg.name}: split-K partials only (the reduction kernel not launched): y not checked")
            else:
                y_ref = x.double() @ pws[(a.calls - 1) % copies].dequantize(dt).double()
                err = float((y.double() - y_ref).norm() / ref.norm())
                print(f"\n{run_cfg.name}: rel err {err:.1e}, {grid} CTAs of {run_cfg.threads} threads")
            report(run_cfg.name, tl.cpu().numpy(), a.ctas)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
