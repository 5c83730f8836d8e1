#!/usr/bin/env python
"""Issue 9 at decoding sizes: the small-M mixed-input GEMM as a stream of kernels, the way a decoding step
runs its layers (back to back, or in a CUDA graph), against cuBLAS run the same way.

    PYTHONPATH=$PWD python3 benchmarks/bench_decode.py [--quick] [--calls 32] [--pdl-prefetch 0,2,4] [--json out.json]

Per shape (N = K = 8192, and Llama-3-8B / 70B layers without --quick), M in {1, 2, 4, 8, 16}, and format
(W4A16 g128 and W8A16 per-channel, bf16 activations), three timings of the same kernel, all rotating
among >= 4 copies of the weights (one rotation > 3x L2, so every call streams its weight from HBM):

* ``call``: one CUDA-event pair around each call of tc.gemm's path (bench_mixed.py's figure);
* ``stream``: ``--calls`` back-to-back calls between one event pair, time per call
  (``Timer(calls_per_sample=...)``), as ordinary launches (``MixedGemm(pdl=False)``);
* ``stream+pdl``: the same as programmatic dependent launches (``MixedGemm(pdl=True)``, tc.gemm's default
  on sm_90 since the eleventh session): each kernel's CTAs take the SM slots the previous one leaves (at
  most ``mixed.pdl_ctas_per_sm`` per SM), ask L2 for the start of their weights, and wait
  (``griddepcontrol.wait``) for the previous kernel before they read x or write y. ``--pdl-prefetch``
  times each given fraction (sixteenths of a CTA's weights prefetched, ``MixedGemm(pdl_prefetch=)``).

The ratios and "% copy" take the faster of ``stream`` and the default fraction's ``stream+pdl``.
``--graph`` adds ``graph+pdl``: the default fraction's ``--calls`` calls captured in one CUDA graph
(torch.cuda.graph) and replayed, time per call (a replay queued behind a GPU spin, as the streams are), and
cuBLAS's calls in a graph the same way.

cuBLAS (torch.matmul, bf16 dense weight) is timed per call and as a stream. The ratios of the last
columns compare like with like (stream against stream). "% copy" is GB/s (the bytes one call must move:
packed weight, scales, x, y) over the GB/s of a 1 GB device-to-device copy (read + write) in the same run.
Every configuration is checked against float64 x @ dequantize(W) first; on square shapes also a dependent
chain (x of call i+1 = y of call i, programmatic dependent launches, no synchronization in between), each
step against float64 of its own input.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_mixed as BM  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm import mixed  # noqa: E402
from tilecraft.gemm.mixed import MixedGemm, mixed_gemm  # noqa: E402

DEFAULT = mixed.PDL_PREFETCH

MS = [1, 2, 4, 8, 16]
FORMATS = [("W4A16 g128", 4, 128), ("W8A16 pc", 8, None)]
TOL = 1.2e-2                                                              # bf16 output rounding


def _timer(calls: int) -> Timer:
    return Timer(warmup_ms=20, rep_ms=60, min_reps=20 * calls, calls_per_sample=calls)


def _us(fn: Any, sets: list[tuple], calls: int) -> float:
    return _timer(calls)(fn, sets).median_ms * 1e3


def _graph_us(fn: Any, sets: list[tuple], calls: int) -> float:
    """Time per call of `calls` calls of fn (rotating over sets) captured in one CUDA graph and replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                                         # warm up off the capturing stream
        for args in sets[:2]:
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*sets[i % len(sets)])
    t = Timer(warmup_ms=20, rep_ms=60, min_reps=20)(graph.replay, [()])
    return t.median_ms * 1e3 / calls


def _err(y: Any, x: Any, pw: Any) -> float:
    ref = x.double() @ pw.dequantize(torch.float64)
    return float((y.double() - ref).norm() / ref.norm())


def chain_error(run: Any, pws: list, M: int, steps: int = 12) -> float:
    """The largest relative error over a dependent chain x_{i+1} = y_i (square weights) of `run`'s calls,
    launched back to back, checked after one sync."""
    x = torch.randn(M, pws[0].shape[0], device="cuda").to(torch.bfloat16)
    xs = [x]
    for i in range(steps):
        xs.append(run(xs[-1], pws[i % len(pws)]))
    torch.cuda.synchronize()
    return max(_err(xs[i + 1], xs[i], pws[i % len(pws)]) for i in range(steps))


def ours(K: int, N: int, M: int, bits: int, group: int | None, calls: int, fractions: list[int],
         graph: bool = False) -> dict:
    pws = BM._packed(K, N, bits, group, torch.bfloat16)
    pw0 = pws[0]
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    plain = MixedGemm(pw0.format, pdl=False)
    sets = [(x, p) for p in pws]
    errs = [_err(plain(x, pw0), x, pw0)]
    r = {"call": _us(mixed_gemm, sets, 1), "stream": _us(plain, sets, calls), "copies": len(pws),
         "bytes": pw0.nbytes + 2 * M * (K + N)}
    for f in fractions:
        pdl = MixedGemm(pw0.format, pdl=True, pdl_prefetch=f)
        errs.append(_err(pdl(x, pw0), x, pw0))
        if K == N:
            errs.append(chain_error(pdl, pws, M))
        r[f"pdl{f}"] = _us(pdl, sets, calls)
        if graph and f == DEFAULT:
            r["graph"] = _graph_us(pdl, sets, calls)
            y = pdl(x, pw0)                                               # eager again after the capture
            errs.append(_err(y, x, pw0))
    r["err"] = max(errs)
    return r


def cublas(K: int, N: int, M: int, calls: int, graph: bool = False) -> dict:
    n = BM._copies(K * N * 2)
    ws = [torch.randn(K, N, device="cuda").to(torch.bfloat16) for _ in range(n)]
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    sets = [(x, w) for w in ws]
    r = {"call": _us(torch.matmul, sets, 1), "stream": _us(torch.matmul, sets, calls)}
    if graph:
        r["graph"] = _graph_us(torch.matmul, sets, calls)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only N = K = 8192")
    ap.add_argument("--ms", default=",".join(map(str, MS)), help="comma-separated M values")
    ap.add_argument("--calls", type=int, default=32, help="back-to-back calls per timed sample of the streams")
    ap.add_argument("--pdl-prefetch", default=str(DEFAULT),
                    help=f"comma-separated sixteenths of a CTA's weights to prefetch (default: MixedGemm's, {DEFAULT})")
    ap.add_argument("--graph", action="store_true", help="also time the calls captured in a CUDA graph")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    props = torch.cuda.get_device_properties(0)
    print(f"# decoding stream, {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}\n")
    copy = BM.copy_bandwidth(1 << 30)
    print(f"copy bandwidth (1 GB D2D, read + write): {copy:.0f} GB/s\n")
    fractions = sorted({int(f) for f in args.pdl_prefetch.split(",")} | {DEFAULT})
    pcols = [f"stream+pdl {f}/16 µs" + (" (default)" if f == DEFAULT else "") for f in fractions]
    rows, out, bad = [], [], 0
    for name, K, N in BM.SHAPES[:1] if args.quick else BM.SHAPES:
        for M in (int(m) for m in args.ms.split(",")):
            dense = BM._safe(cublas, K, N, M, args.calls, args.graph)
            out.append({"shape": name, "K": K, "N": N, "M": M, "kernel": "cuBLAS bf16", **dense})
            if "call" in dense:
                rows.append([name, M, "cuBLAS bf16", f"{dense['call']:.1f}", f"{dense['stream']:.1f}",
                             *[""] * len(fractions), *([f"{dense['graph']:.1f}"] if args.graph else []),
                             *[""] * 4])
            for label, bits, group in FORMATS:
                r = BM._safe(ours, K, N, M, bits, group, args.calls, fractions, args.graph)
                out.append({"shape": name, "K": K, "N": N, "M": M, "kernel": label, **r})
                if "call" not in r:
                    rows.append([name, M, label, *[""] * (len(fractions) + 5 + args.graph), r["missing"][:60]])
                    continue
                best = min(r["stream"], r[f"pdl{DEFAULT}"])
                ok = r["err"] <= TOL
                bad += not ok
                vs = (f"{dense['stream'] / best:.2f}x", f"{dense['call'] / r['call']:.2f}x") \
                    if "stream" in dense else ("", "")
                rows.append([name, M, label, f"{r['call']:.1f}", f"{r['stream']:.1f}",
                             *[f"{r[f'pdl{f}']:.1f}" for f in fractions], *([f"{r['graph']:.1f}"] if args.graph else []),
                             f"{100 * r['bytes'] / best / 1e3 / copy:.0f}%", *vs,
                             f"err {r['err']:.1e}{'' if ok else ' FAIL'}"])
    gcols = ["graph+pdl µs (cuBLAS: graph)"] if args.graph else []
    print(markdown_table(["shape", "M", "kernel", "call µs", "stream µs", *pcols, *gcols, "% copy (best stream)",
                          "vs cuBLAS (streams)", "vs cuBLAS (calls)", "notes"], rows))
    if args.json:
        args.json.write_text(json.dumps({"copy_GBps": copy, "rows": out}, indent=1, default=str))
    print(f"\n{bad} correctness failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
