#!/usr/bin/env python
"""Issue 8's LLM sweep, the shapes tc.gemm loses: time candidate Hopper configurations against cuBLAS at a
few (M, N, K), in one process, float64-checked first, weights rotated past L2.

    PYTHONPATH=$PWD python3 benchmarks/probe_llm.py [--shapes 128x6144x4096,...] [--dtype bfloat16]

Each call is timed with CUDA events (tilecraft.bench's Timer, operands rotated call by call) and no GPU sleep
covers the host's enqueue time, so a slow host path shows here as it does to a caller in a loop (sixth session:
every tilecraft call was host-bound); ``--gpu-only`` times the GPU alone; ``--picks`` compares, at issue 8's 40 LLM
shapes, the heuristic's pick with the tile-count rule's where they differ (with ``--baseline FILE``, with another
commit's picks written by ``benchmarks/picks_json.py``); ``--streamk`` compares, at the 40 shapes (or ``--shapes``), the
pick with every SM90_TABLE tile with and without stream-K; ``--pingpong`` compares, at the 40 shapes (or ``--shapes``), the
pick with the pingpong tilings (PINGPONG: the consumers take whole tiles in turn); ``--sustain SECONDS`` then runs each
contender back to back for that long (the SM clock and power it sustains, joules per TFLOP). Candidates: tc.gemm's automatic pick, and the configurations in
CANDIDATES (those that do not validate at a shape are skipped). One line per (shape, contender): µs,
TFLOP/s, x cuBLAS, relative error.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.timing import Timer, against, in_turn  # noqa: E402
from dataclasses import replace  # noqa: E402

from tilecraft.gemm import SM90_TABLE, Sm90Config, gemm  # noqa: E402
from tilecraft.gemm.op import _pick_sm90_by_tiles, _unclustered_if_few_m_tiles, pick_sm90_config  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_sgemm import sustained  # noqa: E402

LLM_NK = [(4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (8192, 8192), (10240, 8192), (57344, 8192),
          (8192, 28672)]                                                  # Llama-3-8B/70B (N, K)
#: issue 8's 40 LLM shapes (M, N, K): M in {128, 256, 1024, 4096, 8192} x LLM_NK (bench_sm90.py --llm too)
LLM_SHAPES = [(m, n, k) for m in (128, 256, 1024, 4096, 8192) for n, k in LLM_NK]

S = Sm90Config
CANDIDATES = [S(64, 64, 64, stages=8, consumers=1), S(64, 128, 64, stages=8, consumers=1),
              S(128, 64, 64, stages=8), S(128, 128, 64, stages=6), S(128, 128, 64, stages=6, splits=2),
              S(128, 128, 64, stages=6, splits=3), S(128, 256, 64, stages=3, splits=2),
              S(64, 256, 64, stages=5, consumers=1), S(128, 64, 64, stages=8, splits=2),
              S(128, 128, 64, stages=6, cluster_m=2), S(128, 256, 64, stages=4)]

#: the consumers take whole tiles in turn (one's epilogue under the other's main loop)
PINGPONG = [S(64, 256, 64, stages=4, pingpong=True), S(64, 256, 64, stages=4, cluster_m=2, pingpong=True),
            S(128, 128, 64, stages=5, pingpong=True), S(128, 128, 64, stages=5, cluster_m=2, pingpong=True)]


def _nan_block(shape: tuple, dtype: torch.dtype) -> None:
    """Leave a NaN-filled block of D's size in torch's caching allocator, which hands it to the next allocation of
    that size (the contender's D; the previous contender's D is still held). A tile the contender does not write
    then shows as NaN in the check, not as an earlier contender's correct result."""
    torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="128x6144x4096,256x6144x4096,128x10240x8192,256x10240x8192,"
                                       "256x57344x8192,128x4096x4096,256x4096x14336")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--gpu-only", action="store_true", help="cover the host's enqueue time with a GPU sleep: "
                   "the kernels' GPU time alone")
    p.add_argument("--picks", action="store_true", help="issue 8's 40 LLM shapes, the heuristic against the "
                   "tile-count rule it replaced (_pick_sm90_by_tiles) instead of CANDIDATES")
    p.add_argument("--streamk", action="store_true", help="every SM90_TABLE tile without and with stream-K (modes 1 and 2)")
    p.add_argument("--baseline", help="with --picks: a JSON file of another commit's picks ({'MxNxK': 'S(...)'}, "
                   "benchmarks/picks_json.py), timed beside the pick where they differ, instead of the tile-count rule")
    p.add_argument("--rounds", type=int, default=1, help="time the contenders in turn this many times (medians)")
    p.add_argument("--pingpong", action="store_true", help="the pick against the pingpong tilings (PINGPONG)")
    p.add_argument("--configs", help="';'-separated Sm90Config expressions (S = Sm90Config), e.g. "
                   "'S(128, 128, 64, stages=5, pingpong=True, raster=16)': the pick against these instead")
    p.add_argument("--out-dtype", help="D's element type for every contender (cuBLAS through torch.mm's out_dtype), "
                   "e.g. float32; the operands' type when unset")
    p.add_argument("--with-c", action="store_true", help="D = A @ B + C for every contender (cuBLAS: torch.addmm)")
    p.add_argument("--sustain", type=float, default=0.0, help="then each contender back to back for this many "
                   "seconds: the SM clock and power it sustains, joules per TFLOP (probe_sgemm.sustained)")
    p.add_argument("--variants", help="';'-separated Sm90Config field settings, e.g. 'stages=6;raster=16': "
                   "beside the pick, the pick with each (instead of CANDIDATES)")
    a = p.parse_args()
    if a.baseline and not a.picks:
        p.error("--baseline gives the picks to time beside tc.gemm's at the 40 shapes: it needs --picks")
    if a.picks or ((a.streamk or a.pingpong) and "--shapes" not in sys.argv):          # issue 8's 40 LLM shapes
        a.shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in LLM_SHAPES)
    baseline = json.loads(Path(a.baseline).read_text()) if a.baseline else {}
    timer = Timer(gpu_sleep=a.gpu_only, warmup_ms=5.0, reps=a.reps)     # without --gpu-only the host's time shows
    dt = getattr(torch, a.dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| shape | contender | µs | TFLOP/s | x cuBLAS | rel err |\n|---|---|---:|---:|---:|---:|")
    for shape in a.shapes.split(","):
        M, N, K = (int(x) for x in shape.split("x"))
        copies = max(2, -(-200 * 2**20 // (2 * (M * K + K * N))))          # > 200 MB of operands: not in L2
        xs = [torch.randn(M, K, device="cuda").to(dt) for _ in range(copies)]
        ws = [(torch.randn(K, N, device="cuda") * 0.05).to(dt) for _ in range(copies)]
        cs = [torch.randn(M, N, device="cuda").to(dt) for _ in range(copies)] if a.with_c else [None] * copies
        ref = xs[0].double() @ ws[0].double() + (cs[0].double() if a.with_c else 0)
        operands = list(zip(xs, ws, cs))                                  # rotated call by call

        flop = 2 * M * N * K
        auto = pick_sm90_config(M, N, K, 1, sms)
        contenders = [("auto " + auto.name, None)] + ([] if a.variants else [(c.name, c) for c in CANDIDATES])
        if a.streamk:
            tiles = [_unclustered_if_few_m_tiles(c, M) for c in SM90_TABLE.values()]
            variants = [v for c in tiles for v in (c, replace(c, stream_k=1), replace(c, stream_k=2))]
            variants += [Sm90Config(128, 128, 64, stages=6, splits=S) for S in (4, 8)]   # split-K beside it
            contenders = [("auto " + auto.name, auto)] + [(v.name, v) for v in variants if v != auto]
        elif a.configs:
            contenders = [("auto " + auto.name, auto)] + [(c.name, c) for c in
                                                          (eval(e, {"S": S}) for e in a.configs.split(";"))]
        elif a.pingpong:
            contenders = [("auto " + auto.name, auto)] + [(c.name, c) for c in PINGPONG]
        elif a.picks and a.baseline:
            base = eval(baseline[shape], {"S": S})
            contenders = [("auto " + auto.name, auto)] + ([("base " + base.name, base)] if base != auto else [])
        elif a.picks:
            rule = _pick_sm90_by_tiles(M, N, K, 1, sms)
            contenders = [("auto " + auto.name, auto)] + ([("tiles " + rule.name, rule)] if rule != auto else [])
        if a.variants:
            variants = (eval(f"replace(auto, {e})", {"replace": replace, "auto": auto}) for e in a.variants.split(";"))
            contenders += [("auto " + v.name, v) for v in variants if v != auto]
        out_dt = getattr(torch, a.out_dtype) if a.out_dtype else None
        if a.with_c:
            cublas = lambda x, w, c: torch.addmm(c, x, w)                 # noqa: E731
        else:
            cublas = (lambda x, w, c: torch.mm(x, w, out_dtype=out_dt)) if out_dt else (lambda x, w, c: x @ w)
        runs = [("cuBLAS", cublas, "")]                                   # (name, call, relative error)
        for name, cfg in contenders:
            if cfg is not None:
                try:
                    cfg.validate()
                except ValueError:
                    continue
            _nan_block(ref.shape, out_dt or xs[0].dtype)
            try:
                out = gemm(xs[0], ws[0], cs[0], beta=1.0, config=cfg, out_dtype=out_dt)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a candidate the kernel refuses at this shape
                print(f"| {shape} | {name} | {type(e).__name__}: {str(e)[:80]} | | | |", flush=True)
                continue
            err = float((out.double() - ref).norm() / ref.norm())
            runs.append((name, lambda x, w, c, cfg=cfg: gemm(x, w, c, beta=1.0, config=cfg, out_dtype=out_dt),
                         f"{err:.1e}"))
        times = in_turn({name: lambda call=call: timer(call, operands).median_ms * 1000 for name, call, _ in runs},
                        a.rounds)                                         # every contender timed in turn
        stats = against(times, "cuBLAS")
        for name, _, err in runs:
            us, x, _spread = stats[name]
            print(f"| {shape} | {name} | {us:.1f} | {flop / us / 1e6:.1f} | {x:.3f}x | {err} |", flush=True)
        if a.sustain > 0:
            sustained(shape, flop, {name: call for name, call, _ in runs}, operands, a.sustain)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
