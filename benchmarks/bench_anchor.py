#!/usr/bin/env python
"""Today's anchor numbers: what cuBLAS and our Triton GEMM do on this GPU, so every later kernel issue
has a fixed point to report against.

    pip install --no-deps -e .            # on the GPU machine (torch and triton come with it)
    python benchmarks/bench_anchor.py --out results/anchor

Measures, in this order: ceilings (1 GiB device-to-device copy; cuBLAS 8192^3 in bf16, fp16, fp32 and
fp8), copy bandwidth at a few sizes, then cuBLAS vs Triton for fp16, bf16 and fp32 on square shapes
(1024..8192) and Llama-3-8B projections (M in 1, 16, 128, 1024, 4096), then fp8 (torch._scaled_mm vs
Triton) on a few sizes. Every contender is checked against float64 before it is timed.

Writes under --out: anchor.md (the Markdown block for benchmarks/RESULTS.md, also printed), anchor.json
(everything), and per dtype anchor_<dtype>.{json,md,png}. anchor.json is rewritten after each dtype, so
an interrupted run keeps what it measured. About 2-3 minutes on an H100.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

# Runnable from a checkout even without `pip install -e .`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tilecraft.bench.gemm import GemmSweep, environment, run_gemm_sweep  # noqa: E402
from tilecraft.bench.problem import DTYPES  # noqa: E402
from tilecraft.bench.report import format_summary, format_wide_table, write_outputs  # noqa: E402
from tilecraft.bench.roofline import Ceilings, measure_ceilings, measure_copy_bandwidth  # noqa: E402
from tilecraft.bench.shapes import GemmShape, llm_shapes, square_shapes  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402

MiB = 1 << 20


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results", help="output directory (default results/)")
    p.add_argument("--dtypes", type=_csv, default=["fp16", "bf16", "fp32"])
    p.add_argument("--square", type=_ints, default=[1024, 2048, 4096, 8192])
    p.add_argument("--m", type=_ints, default=[1, 16, 128, 1024, 4096], help="token counts for llama8b shapes")
    p.add_argument("--fp8-square", type=_ints, default=[2048, 4096, 8192])
    p.add_argument("--no-fp8", action="store_true")
    p.add_argument("--against", type=_csv, default=["cublas", "triton"])
    p.add_argument("--warmup-ms", type=float, default=20.0)
    p.add_argument("--rep-ms", type=float, default=60.0)
    p.add_argument("--quick", action="store_true", help="smoke run: bf16 only, 1024/4096 and M in 1,128")
    a = p.parse_args(argv)
    if a.quick:
        a.dtypes, a.square, a.m, a.fp8_square = ["bf16"], [1024, 4096], [1, 128], [4096]
    return a


def _copy_sizes(ceilings: Ceilings, timer: Timer) -> list[dict[str, Any]]:
    rows = []
    for nbytes in (64 * MiB, 256 * MiB, 1024 * MiB, 4096 * MiB):
        try:
            bw, res = measure_copy_bandwidth(nbytes, timer)
            rows.append({"bytes": nbytes, "TBps": bw / 1e12, "median_ms": res.median_ms,
                         "p10_ms": res.p10_ms, "p90_ms": res.p90_ms, "n": res.n})
        except Exception as e:  # 4 GiB x2 may not fit on a busy device
            rows.append({"bytes": nbytes, "error": f"{type(e).__name__}: {e}"})
    return rows


def _markdown(env: dict[str, Any], command: str, ceilings: Ceilings, copies: list[dict[str, Any]],
              sweeps: dict[str, GemmSweep], wall_s: float) -> str:
    l2 = env.get("l2_bytes")
    l2_txt = f"{l2 / MiB:.0f} MiB" if l2 else "?"
    lines = [
        f"### {env['date'][:10]} — {env.get('device')} (sm_{str(env.get('sm', '?')).replace('.', '')}, "
        f"{env.get('sms')} SMs, L2 {l2_txt})",
        "",
        f"- command: `{command}` ({wall_s / 60:.1f} min)",
        f"- date: {env['date']}; host {env.get('host')}",
        f"- torch {env.get('torch')}, CUDA {env.get('cuda')}, triton {env.get('triton')}, Python {env.get('python')}",
        f"- ceilings (measured): D2D copy {ceilings.copy_bytes_per_s / 1e12:.2f} TB/s (read+write, 1 GiB); "
        + ", ".join(f"cuBLAS {k} 8192³ {v / 1e12:.0f} TFLOP/s" for k, v in ceilings.flops_per_s.items()),
        "- copy bandwidth by size (read+write): "
        + ", ".join(f"{c['bytes'] // MiB} MiB {c['TBps']:.2f} TB/s" if "TBps" in c else f"{c['bytes'] // MiB} MiB failed"
                    for c in copies),
        "- timing: median of CUDA-event times per call, inputs rotated over >= 3x L2, random normal data, "
        "each contender checked against float64 first; ratio = cuBLAS time / contender time",
        "",
    ]
    for dtype, sw in sweeps.items():
        spec = DTYPES[dtype]
        labels = {r.contender: r.detail for r in sw.records if r.ok}
        lines.append(f"#### {dtype} ({spec.note or spec.torch_in})")
        lines.append("")
        for n, lab in labels.items():
            lines.append(f"- {n}: {lab}")
        lines.append("")
        lines.append(format_wide_table(sw.records, metric=["median_us", "tflops", "gbps", "pct_floor"]))
        lines.append("")
        lines.append(format_summary(sw).replace("\n", "  \n"))
        bad = sw.failures()
        if bad:
            lines.append("")
            lines.append("Failures:")
            lines += [f"- {r.shape} {r.contender}: {r.status}: {r.detail}" for r in bad]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench_anchor: no CUDA device", file=sys.stderr)
        return 2
    t0 = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/bench_anchor.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    env = environment()
    print(f"{env.get('device')}: torch {env.get('torch')}, triton {env.get('triton')}", flush=True)

    fp8_ok = not args.no_fp8 and torch.cuda.get_device_capability() >= (8, 9)
    ceil_dtypes = tuple(dict.fromkeys([DTYPES[d].ceiling for d in args.dtypes] + (["fp8"] if fp8_ok else [])))
    ceilings = measure_ceilings(ceil_dtypes)
    print(f"ceilings: copy {ceilings.copy_bytes_per_s / 1e12:.2f} TB/s; "
          + ", ".join(f"{k} {v / 1e12:.0f} TFLOP/s" for k, v in ceilings.flops_per_s.items()), flush=True)
    timer = Timer(warmup_ms=args.warmup_ms, rep_ms=args.rep_ms)
    copies = _copy_sizes(ceilings, timer)

    shapes = square_shapes(args.square) + llm_shapes("llama8b", args.m)
    runs: list[tuple[str, list[GemmShape]]] = [(d, shapes) for d in args.dtypes]
    if fp8_ok:
        fp8_shapes = square_shapes(args.fp8_square) + [GemmShape(m, 28672, 4096, "llama8b.gate_up") for m in (16, 4096)]
        runs.append(("fp8", fp8_shapes))
    sweeps: dict[str, GemmSweep] = {}
    status = 0
    for dtype, shp in runs:
        print(f"\n== {dtype}: {len(shp)} shapes x {args.against}", flush=True)
        try:
            sw = run_gemm_sweep(shp, dtype, args.against, timer=timer, ceilings=ceilings, progress=None,
                                meta={"command": command, "shapes_spec": "anchor"})
        except Exception as e:
            print(f"{dtype} sweep failed: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
            continue
        sweeps[dtype] = sw
        write_outputs(sw, out, f"anchor_{dtype}")
        print(format_wide_table(sw.records, metric=["median_us", "tflops", "pct_floor"]))
        print(format_summary(sw), flush=True)
        if sw.failures():
            status = 1
        (out / "anchor.json").write_text(json.dumps({
            "format": "tilecraft.bench.anchor/1", "meta": {**env, "command": command},
            "ceilings": ceilings.to_dict(), "copy_bandwidth": copies,
            "sweeps": {d: s.to_dict() for d, s in sweeps.items()},
        }, indent=1) + "\n")

    wall = time.time() - t0
    md = _markdown(env, command, ceilings, copies, sweeps, wall)
    (out / "anchor.md").write_text(md + "\n")
    print("\n" + md)
    print(f"\nwrote {out}/anchor.md, anchor.json, anchor_<dtype>.{{json,md,png}} in {wall:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
