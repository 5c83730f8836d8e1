#!/usr/bin/env python
"""The GEMV (M <= 16; fp32, or --dtype bf16 / fp16) against cuBLAS (TF32 off), the SIMT SGEMM's split-K pick (fp32) or
the Hopper kernel's (16-bit), and GEMV tilings, timed in turn.

    PYTHONPATH=$PWD python3 benchmarks/probe_sgemv.py --shapes 1x4096x4096,8x4096x11008 --b-major N,K \
        --configs auto,sgemm,w8u2/s8 --rounds 3

B is torch's row-major (K, N) (``--b-major N``: ``x @ W``) or the transpose of an (N, K) nn.Linear weight
(``--b-major K``: ``x @ W.T``). Contenders: ``cuBLAS`` (torch.matmul), ``sgemm`` (sgemm_tuned with its picks: what
tc.gemm ran for these fp32 shapes before the GEMV), ``hopper`` (tc.gemm with the Hopper kernel's pick: what it ran
for 16-bit ones), ``tc`` (tc.gemm as called, its host path included), ``skinny`` (16-bit: tilecraft.gemm.skinny's pick) or ``sk<warps>.<tiles>.<chunk>.<stages>[a][x][r]``
(its MixedConfig: a async_copy, x x_regs, r runs; ``f<n>`` asks L2 for n sixteenths of the weights before the
PDL wait, 0 without it; ``/s<splits>`` fixes the splits), ``sw<blk_m>[x<blk_n>]s<stages>[c<consumers>][k<splits>][q<stream_k>][t]`` (16-bit: the
Hopper kernel on the swapped problem D^T = B^T A^T, ``swap_call``; blk_n omitted: the rows of x, rounded up to a wgmma N;
t: D stored through shared memory by TMA, ``store_mn``), ``auto`` (sgemv's pick) and GEMV tilings
``w<warps>u<unroll>c<cols>g<rows_group>b<min_blocks>t<0|1: scatter>a<0|1: a_smem>`` (fields omitted keep the
pick's), ``/s<splits>`` for a split count (k_slice follows it). Operands rotate over enough copies that B's bytes
exceed twice the L2; every contender is first checked against float64 (relative Frobenius error). One line per
(shape, major, contender): µs, B's GB/s, x cuBLAS (median over rounds), the rounds' spread, the error.
``--host`` first prints the wall time per call of back-to-back calls (the host path).
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, calls_in_turn  # noqa: E402
import tilecraft as tc  # noqa: E402
from tilecraft.gemm.op import _device_facts, pick_sm90_config  # noqa: E402
from tilecraft.gemm.gemv import MAX_ROWS, pick_sgemv, sgemv, b_vectorizable  # noqa: E402
from tilecraft.gemm.simt_tuned import sgemm_tuned  # noqa: E402


def gemv_call(spec: str, m: int, n: int, k: int, n_major: bool, Bt: torch.Tensor):
    """The sgemv call a contender spec names (None: the pick)."""
    if spec == "auto":
        return lambda x, w: sgemv(x, w)
    name, _, split = spec.partition("/s")
    cfg, splits = pick_sgemv(m, n, k, n_major, 16 // Bt.element_size() if b_vectorizable(Bt) else 1,
                             _device_facts(Bt.device)[0])
    fields = {"w": "warps", "u": "unroll", "c": "cols", "g": "rows_group", "v": "vec", "b": "min_blocks",
              "t": "scatter", "a": "a_smem"}
    for key, val in re.findall(r"([wucgvbta])(\d+)", name):
        cfg = dataclasses.replace(cfg, **{fields[key]: bool(int(val)) if key in "ta" else int(val)})
    if split:
        splits = int(split)
    g = cfg.k_granule(n_major)
    per = -(-(-(-k // g)) // splits) * g
    cfg = dataclasses.replace(cfg, k_slice=max(cfg.min_k_slice(n_major), 1 << max(0, per - 1).bit_length()))
    return lambda x, w, cfg=cfg, s=splits: sgemv(x, w, config=cfg, splits=s)


def skinny_call(spec: str):
    """The skinny_gemm call a contender spec names: ``skinny`` (its pick) or ``sk<w>.<t>.<c>.<p>[a][x][r][/s<n>]``."""
    from tilecraft.gemm.mixed import MixedConfig
    from tilecraft.gemm.skinny import skinny_gemm

    if spec == "skinny":
        return lambda x, w: skinny_gemm(x, w)
    m = re.fullmatch(r"sk(\d+)\.(\d+)\.(\d+)\.(\d+)([axr]*)(?:f(\d+))?(?:/s(\d+))?", spec)
    if not m:
        raise SystemExit(f"bad skinny spec {spec!r}")
    w, t, c, p, flags, pf, splits = m.groups()
    cfg = MixedConfig(int(w), int(t), int(c), int(splits) if splits else None, int(p), async_copy="a" in flags,
                      x_regs="x" in flags, runs="r" in flags)
    return lambda x, w, cfg=cfg, pf=int(pf or 0): skinny_gemm(x, w, config=cfg, pdl_prefetch=pf)


def swap_call(spec: str, dt: torch.dtype, rows: int):
    """``sw<blk_m>[x<blk_n>]s<stages>[c<consumers>][k<splits>][q<stream_k>][t]``: the Hopper kernel on the swapped
    problem D^T (N, M) = B^T A^T, the weight as wgmma's A operand (blk_m of its N rows per tile) and x^T as B (blk_n of
    the M rows), written into D's row-major storage through a column-major view: from the registers, or with ``t``
    through shared memory and TMA stores (``Sm90Config.store_mn``)."""
    from tilecraft.atoms.sm90_codegen import HEADER_N
    from tilecraft.gemm.op import GemmOp
    from tilecraft.gemm.sm90 import Sm90Config

    m = re.fullmatch(r"sw(\d+)(?:x(\d+))?s(\d+)(?:c(\d+))?(?:k(\d+))?(?:q(\d+))?(t?)", spec)
    if not m:
        raise SystemExit(f"bad swap spec {spec!r}")
    bm, bn, st, cons, splits, sk, tma = m.groups()
    bn = bn or next(n for n in HEADER_N if n >= rows)                     # omitted: the rows of x
    cons = int(cons or (2 if int(bm) >= 128 else 1))
    # D^T is column-major: stored from the registers (no epilogue buffers in shared memory), or by TMA from an M-major
    # buffer of each consumer's part
    cfg = Sm90Config(blk_m=int(bm), blk_n=int(bn), blk_k=64, stages=int(st), consumers=cons, splits=int(splits or 1),
                     stream_k=int(sk or 0), tma_store=bool(tma), store_mn=bool(tma))
    cfg.validate()
    op = GemmOp(str(dt).replace("torch.", ""), None, cfg)

    def call(x, w):
        out = torch.empty(x.shape[0], w.shape[1], dtype=x.dtype, device=x.device)
        op(w.t(), x.t(), out=out.t())
        return out
    return call


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="1x4096x4096,4x4096x4096,16x4096x4096", help="MxNxK, comma-separated")
    p.add_argument("--b-major", default="N,K", help="N (x @ W, W (K,N) row-major) and/or K (x @ W.T)")
    p.add_argument("--configs", default="sgemm,auto")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="operands' type; for 16-bit the contender 'hopper' is tc.gemm's Hopper kernel (its pick)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--host", action="store_true",
                   help="also the wall time per call of 2000 back-to-back calls at each shape (host-bound where the "
                        "kernel is shorter than the call's host path): cuBLAS, tc.gemm, sgemv")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    if a.host:
        host_times(a.shapes)
    timer = Timer(warmup_ms=20.0, reps=a.reps)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"device: {torch.cuda.get_device_name()}, L2 {l2 >> 20} MB\n")
    print("| shape | B major | contender | µs | B GB/s | x cuBLAS | spread | rel err |\n"
          "|---|---|---|---:|---:|---:|---:|---:|")
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    es = dt.itemsize
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        for major in a.b_major.split(","):
            n_major = major == "N"
            copies = max(2, -(-2 * l2 // (es * n * k)) + 1)
            ops = []
            for _ in range(copies):
                x = torch.randn(m, k, device="cuda").to(dt)
                w = torch.randn(k, n, device="cuda").to(dt) if n_major else torch.randn(n, k, device="cuda").to(dt).t()
                ops.append((x, w))
            ref = ops[0][0].double() @ ops[0][1].double()
            runs = {"cuBLAS": lambda x, w: x @ w}
            for spec in (s for s in a.configs.split(",") if s):
                if spec == "tc":                             # what users call: tc.gemm's dispatch and host path
                    runs[spec] = lambda x, w: tc.gemm(x, w)
                elif spec == "sgemm":
                    runs[spec] = lambda x, w: sgemm_tuned(x, w)
                elif spec.startswith("sw"):
                    runs[spec] = swap_call(spec, dt, m)
                elif spec.startswith("sk"):
                    runs[spec] = skinny_call(spec)
                elif spec == "hopper":
                    hop = pick_sm90_config(m, n, k, 1, _device_facts(ops[0][0].device)[0])
                    runs[spec] = lambda x, w, hop=hop: tc.gemm(x, w, config=hop)
                else:
                    runs[spec] = gemv_call(spec, m, n, k, n_major, ops[0][1].t())
            errs = {}
            for name, call in list(runs.items()):
                try:
                    out = call(*ops[0])
                except ValueError as e:                  # a tiling that does not fit these operands
                    print(f"| {m}x{n}x{k} | {major} | {name} | - | - | - | - | {e} |", flush=True)
                    del runs[name]
                    continue
                errs[name] = float((out.double() - ref).norm() / ref.norm())
            stats = calls_in_turn(timer, runs, ops, a.rounds, "cuBLAS")
            for name in runs:
                ms, x, spread = stats[name]
                print(f"| {m}x{n}x{k} | {major} | {name} | {ms * 1e3:.2f} | {es * n * k / ms / 1e6:.0f} | {x:.3f}x "
                      f"| {spread:.1%} | {errs[name]:.1e} |", flush=True)
    return 0


def host_times(shapes: str) -> None:
    """Wall µs per call of back-to-back calls (synchronized at the end only): the host path's cost."""
    import time

    print("| shape | cuBLAS µs/call | tc.gemm µs/call | sgemv µs/call |\n|---|---:|---:|---:|")
    for shape in shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        x, w = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        row = []
        calls = {"cuBLAS": lambda: x @ w, "tc.gemm": lambda: tc.gemm(x, w), "sgemv": lambda: sgemv(x, w)}
        for name, call in calls.items():
            if name == "sgemv" and m > MAX_ROWS:
                row.append(float("nan"))                 # more rows than the GEMV takes
                continue
            for _ in range(50):
                call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(2000):
                call()
            torch.cuda.synchronize()
            row.append((time.perf_counter() - t0) / 2000 * 1e6)
        print(f"| {shape} | {row[0]:.1f} | {row[1]:.1f} | {row[2]:.1f} |", flush=True)
    print()


if __name__ == "__main__":
    raise SystemExit(main())
