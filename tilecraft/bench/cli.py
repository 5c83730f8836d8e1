"""``tilecraft bench ...``: side-by-side benchmarks from the command line.

    tilecraft bench gemm --dtype bf16 --shapes llama8b --against cublas,triton --out results/
    tilecraft bench ceilings --dtypes bf16,fp16,fp32
    tilecraft bench list
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

__all__ = ["run", "build_parser", "default_contenders"]

_BUILTIN = ("cublas", "triton", "scaled_mm", "int4_mm", "tilecraft")


def default_contenders(dtype: str) -> list[str]:
    """cuBLAS, Triton, tilecraft (reported missing until it exists), torch's int4 kernel for w4a16, and
    any extra contender a module registered."""
    from tilecraft.bench.contenders import list_contenders

    names = ["cublas", "triton", "tilecraft"]
    if dtype == "w4a16":
        names.append("int4_mm")
    names += [n for n in list_contenders() if n not in _BUILTIN]
    return names


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _ints(s: str) -> list[int]:
    return [int(x) for x in _csv(s)]


def build_parser() -> argparse.ArgumentParser:
    """The ``tilecraft bench`` argument parser."""
    from tilecraft.bench.problem import DTYPES
    from tilecraft.bench.shapes import SHAPE_SETS

    p = argparse.ArgumentParser(prog="tilecraft bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)

    g = sub.add_parser("gemm", help="GEMM contenders side by side",
                       description="Check every contender against a float64 reference, then time it with CUDA "
                                   "events on rotating random inputs; print TFLOP/s, GB/s, ratio to the baseline "
                                   "and % of the measured roofline floor; write JSON, Markdown and a PNG.")
    g.add_argument("--dtype", default="bf16",
                   help=f"comma-separated, from: {', '.join(DTYPES)} (default bf16)")
    g.add_argument("--shapes", default="square",
                   help="named sets (" + ", ".join(SHAPE_SETS) + ") and/or MxNxK, joined by ',' or '+' "
                        "(default square)")
    g.add_argument("--m", type=_ints, default=None, help="token counts for the LLM sets, e.g. 1,16,128,4096")
    g.add_argument("--against", type=_csv, default=None,
                   help="contenders, comma-separated (default: cublas,triton,tilecraft [+int4_mm for w4a16])")
    g.add_argument("--baseline", default="cublas", help="ratio denominator, always run (default cublas)")
    g.add_argument("--out", default="results", help="output directory (default results/)")
    g.add_argument("--name", default=None, help="file stem (default gemm_<dtype>_<shapes>)")
    g.add_argument("--warmup-ms", type=float, default=25.0)
    g.add_argument("--rep-ms", type=float, default=100.0, help="timed time per contender and shape (default 100)")
    g.add_argument("--reps", type=int, default=None, help="fixed number of timed calls (overrides --rep-ms)")
    g.add_argument("--flush-l2", action="store_true", help="also overwrite L2 before every timed call")
    g.add_argument("--no-ceilings", action="store_true", help="skip measuring ceilings (no %% of floor)")
    g.add_argument("--no-plot", action="store_true", help="skip the PNG")
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="force the progress bar")
    g.add_argument("--no-progress", dest="progress", action="store_false")
    g.add_argument("--seed", type=int, default=0)

    c = sub.add_parser("ceilings", help="measure copy bandwidth and cuBLAS GEMM rates on this GPU")
    c.add_argument("--dtypes", type=_csv, default=["bf16"], help="GEMM dtypes to measure (default bf16)")
    c.add_argument("--out", default=None, help="write ceilings.json here")

    sub.add_parser("list", help="contenders, shape sets and dtypes")
    return p


def run(argv: list[str]) -> int:
    """Entry point of ``tilecraft bench``; returns the exit status (1 if a contender was wrong or raised,
    2 when there is no GPU to benchmark on)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help and usage errors
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    if args.what == "list":
        return _list()
    if not _has_cuda():
        print("tilecraft bench: no CUDA device here; benchmarks run on a GPU machine.", file=sys.stderr)
        return 2
    if args.what == "ceilings":
        return _ceilings(args)
    return _gemm(args, argv)


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _list() -> int:
    from tilecraft.bench.contenders import list_contenders
    from tilecraft.bench.problem import DTYPES
    from tilecraft.bench.shapes import SHAPE_SETS

    print("contenders:")
    for n, d in list_contenders().items():
        print(f"  {n:12s} {d}")
    print("shape sets:")
    for n, d in SHAPE_SETS.items():
        print(f"  {n:12s} {d}")
    print("dtypes:")
    for n, s in DTYPES.items():
        print(f"  {n:12s} {s.note or s.torch_in}")
    return 0


def _ceilings(args: argparse.Namespace) -> int:
    import json

    from tilecraft.bench.roofline import measure_ceilings

    ceil = measure_ceilings(tuple(args.dtypes))
    print(f"{ceil.device}: copy {ceil.copy_bytes_per_s / 1e12:.2f} TB/s (read+write)")
    for k, v in ceil.flops_per_s.items():
        print(f"  {k}: {v / 1e12:.0f} TFLOP/s  ({ceil.notes.get('gemm_' + k, '')})")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "ceilings.json").write_text(json.dumps(ceil.to_dict(), indent=1) + "\n")
    return 0


def _gemm(args: argparse.Namespace, argv: list[str]) -> int:
    from tilecraft.bench.gemm import run_gemm_sweep
    from tilecraft.bench.problem import DTYPES
    from tilecraft.bench.report import format_summary, format_table, write_outputs
    from tilecraft.bench.roofline import add_gemm_ceiling, measure_ceilings
    from tilecraft.bench.shapes import parse_shapes
    from tilecraft.bench.timing import Timer

    dtypes = _csv(args.dtype)
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        print(f"unknown dtype(s) {bad}; known: {', '.join(DTYPES)}", file=sys.stderr)
        return 2
    try:
        shapes = parse_shapes(args.shapes, args.m)
    except (KeyError, ValueError) as e:
        print(f"bad --shapes: {e}", file=sys.stderr)
        return 2
    timer = Timer(warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, reps=args.reps, flush_l2=args.flush_l2)
    command = "tilecraft bench " + " ".join(shlex.quote(a) for a in argv)
    ceilings = None
    if not args.no_ceilings:
        ceilings = measure_ceilings(tuple(dict.fromkeys(DTYPES[d].ceiling for d in dtypes)))
        print(f"ceilings on {ceilings.device}: copy {ceilings.copy_bytes_per_s / 1e12:.2f} TB/s; "
              + ", ".join(f"{k} {v / 1e12:.0f} TFLOP/s" for k, v in ceilings.flops_per_s.items()))
    status = 0
    for dtype in dtypes:
        if ceilings is not None:
            add_gemm_ceiling(ceilings, DTYPES[dtype].ceiling)
        against = args.against if args.against is not None else default_contenders(dtype)
        sweep = run_gemm_sweep(shapes, dtype, against, baseline=args.baseline, timer=timer, ceilings=ceilings,
                               seed=args.seed, progress=args.progress,
                               meta={"command": command, "shapes_spec": args.shapes})
        print(f"\nGEMM {dtype} ({DTYPES[dtype].note or DTYPES[dtype].torch_in}) on {sweep.meta.get('device')}, "
              f"torch {sweep.meta.get('torch')}, triton {sweep.meta.get('triton')}")
        print(format_table(sweep.records, show_floor=ceilings is not None))
        print(format_summary(sweep))
        stem = args.name or f"gemm_{dtype}_{re.sub(r'[^A-Za-z0-9]+', '-', args.shapes).strip('-')}"
        if args.name and len(dtypes) > 1:
            stem = f"{args.name}_{dtype}"
        written = write_outputs(sweep, args.out, stem, plot=not args.no_plot)
        print("wrote " + ", ".join(str(v) for k, v in written.items() if k != "plot_error"))
        if "plot_error" in written:
            print(f"plot not written: {written['plot_error']}", file=sys.stderr)
        if sweep.failures():
            status = 1
    return status
