#!/usr/bin/env python
"""Where a Hopper GEMM launch spends its time, CTA by CTA: per-CTA timelines of sm90_gemm_kernel (whole tiles,
split-K or stream-K), each launch with operands that are not in L2.

    PYTHONPATH=$PWD python3 benchmarks/probe_sm90_timeline.py --shape 1024x1024x8192 \\
        --configs "S(64, 128, 64, 8, consumers=1);S(64, 128, 64, 8, consumers=1, stream_k=2)"

``sm90_gemm_kernel(timeline=...)``: the first consumer warpgroup of every CTA records its start and, for its first
TIMELINE_ITEMS work units (stream-K items), the time before its main loop, after it, and after the epilogue or
the partial tile's hand-off. Per configuration, over the last of ``--calls`` launches (operands rotated past L2):
the launch's span (first start to last end; with split-K's reduction kernel, the main kernel's), then per CTA (``--ctas`` of them, and the slowest) each item's
k-tiles, main-loop µs and µs per k-tile, and hand-off / epilogue µs, and a summary: the median main-loop µs per
k-tile, the median and largest epilogue / hand-off, and the latest end.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from tilecraft.bench.timing import _calibrate_sleep  # noqa: E402
from tilecraft.gemm import Sm90Config, sm90  # noqa: E402
from tilecraft.gemm.sm90 import TIMELINE_ITEMS  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402


def _problem(cfg: Sm90Config, M: int, N: int, K: int, dt: torch.dtype) -> tuple[list, list, torch.Tensor, Any]:
    """Copies of A (1,M,K) and Bt (1,N,K) past L2 (> 200 MB of operands), D (1,M,N) and the kernel's Launch."""
    copies = max(2, -(-200 * 2**20 // (2 * (M * K + K * N))))
    As = [torch.randn(1, M, K, device="cuda").to(dt) for _ in range(copies)]
    Bts = [(torch.randn(1, N, K, device="cuda") * 0.05).to(dt) for _ in range(copies)]
    D = torch.empty(1, M, N, device="cuda", dtype=dt)
    one, zero = np.float32(1), np.float32(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    elem = str(dt).removeprefix("torch.")
    return As, Bts, D, sm90.Launch(As[0], Bts[0], None, D, None, one, zero, cfg, elem, EpilogueSpec(), sms)


def timeline(cfg: Sm90Config, M: int, N: int, K: int, calls: int, dt: torch.dtype) -> tuple[np.ndarray, torch.Tensor,
                                                                                             torch.Tensor]:
    """The last launch's timeline (grid, 2 + 3 TIMELINE_ITEMS) in ns, its D and the operands it read."""
    As, Bts, D, launch = _problem(cfg, M, N, K, dt)
    copies, one, zero = len(As), np.float32(1), np.float32(0)
    tl = torch.zeros(launch.grid, 2 + 3 * TIMELINE_ITEMS, dtype=torch.int64, device="cuda")
    cfg = launch.cfg
    for i in range(calls):
        A, Bt = As[i % copies], Bts[i % copies]
        W, flags = launch.workspace(D)
        tl.zero_()
        args = launch._args(A, Bt, None, D, None, one, zero, W, flags)
        sm90.sm90_gemm_kernel.launch(*args, timeline=tl, grid=(launch.grid,), block=(cfg.threads,),
                                     cluster=(cfg.cluster, 1, 1) if cfg.cluster > 1 else None)
        if launch.reduce is not None:
            launch.reduce(W, None, D, None, one, zero)
    torch.cuda.synchronize()
    return tl.cpu().numpy(), D, (A, Bt)


def stream(cfg: Sm90Config, M: int, N: int, K: int, launches: int, dt: torch.dtype, events: bool = False) -> None:
    """`launches` calls back to back behind a GPU spin (no kernel between them: each has its own zeroed timeline),
    launched as tc.gemm launches them; per launch: its CTAs' first and median start and first and median
    main-loop begin, and its last end, in µs from the previous launch's last end; and the period (last ends'
    spacing). With `events`, a CUDA event is recorded between the launches (as a timer that times each call does).
    The last launch's D is checked against float64."""
    As, Bts, D, launch = _problem(cfg, M, N, K, dt)
    if launch.reduce is not None:
        raise SystemExit(f"--stream: {launch.cfg.name} needs its reduction kernel after each launch; give one that "
                         "sums its splits in the kernel, or has none")
    copies, one, zero = len(As), np.float32(1), np.float32(0)
    tls = [torch.zeros(launch.grid, 2 + 3 * TIMELINE_ITEMS, dtype=torch.int64, device="cuda") for _ in range(launches)]
    work = [launch.workspace(D) for _ in range(launches)]
    main = launch.main
    for rep in range(2):                                                  # the first pass compiles and warms
        torch.cuda.synchronize()
        torch.cuda._sleep(int(5 * _calibrate_sleep()))                   # 5 ms: every launch queues behind it
        for i, tl in enumerate(tls):
            A, Bt = As[i % copies], Bts[i % copies]
            args = launch._args(A, Bt, None, D, None, one, zero, *work[i])
            sm90.sm90_gemm_kernel.launch(*args, timeline=tl, grid=main.grid, block=main.block, cluster=main.cluster,
                                         pdl=main.pdl, cooperative=main.cooperative)
            if events:
                torch.cuda.Event(enable_timing=True).record()
        torch.cuda.synchronize()
    last = (launches - 1) % copies
    ref = As[last][0].double() @ Bts[last][0].double().T
    err = float((D[0].double() - ref).norm() / ref.norm())
    rows = [tl.cpu().numpy() for tl in tls]
    ends = [r[:, 2:].max() for r in rows]
    print(f"\n### {launch.cfg.name} (rel err {err:.1e}), {launches} launches back to back"
          f"{', an event between them' if events else ''}; "
          "µs from the previous launch's last end\n\n| launch | first start | median start | first begin | "
          "median begin | last end |\n|---:|---:|---:|---:|---:|---:|")
    for i in range(1, launches):
        r, t0 = rows[i], ends[i - 1]
        begin = r[:, 2]
        print(f"| {i} | {(r[:, 1].min() - t0) / 1e3:.2f} | {(np.median(r[:, 1]) - t0) / 1e3:.2f} | "
              f"{(begin.min() - t0) / 1e3:.2f} | {(np.median(begin) - t0) / 1e3:.2f} | {(ends[i] - t0) / 1e3:.2f} |")
    print(f"\nperiod {(ends[-1] - ends[0]) / (launches - 1) / 1e3:.2f} µs")


def report(name: str, tl: np.ndarray, ctas: int) -> None:
    t0 = tl[:, 1].min()
    ends = []
    rows = []
    loops, hand = [], []
    for cta, r in enumerate(tl):
        items = []
        for i in range(TIMELINE_ITEMS):
            b, e, h = r[2 + 3 * i: 5 + 3 * i]
            if b == 0 or h == 0:
                break
            items.append(((b - t0) / 1e3, (e - b) / 1e3, (h - e) / 1e3))
            loops.append((e - b) / 1e3)
            hand.append((h - e) / 1e3)
        end = (max(r[2:]) - t0) / 1e3
        ends.append(end)
        rows.append((cta, int(r[0]), (r[1] - t0) / 1e3, items, end))
    print(f"\n### {name}: span {max(ends):.1f} µs, CTA ends median {np.median(ends):.1f} / min {min(ends):.1f}; "
          f"main loops median {np.median(loops):.1f} µs; epilogue or hand-off median {np.median(hand):.2f}, "
          f"max {max(hand):.2f} µs; CTA ends by decile "
          + " ".join(f"{v:.1f}" for v in np.percentile(ends, range(0, 101, 10))) + "\n")
    print("| CTA | SM | start µs | items: (begin µs, main loop µs, epilogue or hand-off µs) | end µs |\n|---:|---:|---:|---|---:|")
    slowest = sorted(rows, key=lambda x: -x[4])[:3]
    for cta, sm, start, items, end in rows[:ctas] + slowest:
        its = " ".join(f"({b:.1f}, {l:.1f}, {h:.2f})" for b, l, h in items)
        print(f"| {cta} | {sm} | {start:.2f} | {its} | {end:.1f} |")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="1024x1024x8192")
    p.add_argument("--configs", default="S(64, 128, 64, 8, consumers=1);S(64, 128, 64, 8, consumers=1, stream_k=2)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--ctas", type=int, default=6, help="CTAs listed (then the three that end last)")
    p.add_argument("--stream", type=int, default=0, help="instead: this many launches back to back per "
                   "configuration (and with events between them), their seams (see stream())")
    a = p.parse_args()
    M, N, K = (int(x) for x in a.shape.split("x"))
    dt = getattr(torch, a.dtype)
    print(f"# sm90 timelines, {torch.cuda.get_device_name(0)}, {a.shape}, {a.dtype}")
    for e in a.configs.split(";"):
        cfg = eval(e, {"S": Sm90Config})
        if a.stream:
            for ev in (False, True):
                stream(cfg, M, N, K, a.stream, dt, ev)
            continue
        tl, D, (A, Bt) = timeline(cfg, M, N, K, a.calls, dt)
        ref = A[0].double() @ Bt[0].double().T
        err = float((D[0].double() - ref).norm() / ref.norm())
        report(f"{cfg.name} (rel err {err:.1e})", tl, a.ctas)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
