#!/usr/bin/env python
"""Issue 6: the tuned SIMT SGEMM against cuBLAS (fp32, TF32 off), and the transpose against a plain copy.

    PYTHONPATH=$PWD python3 benchmarks/bench_sgemm.py --out $OUT/sgemm       # ~1-2 min on an H100

In this order, all in one process:

1. resources: registers, spills and smem of every SGEMM tiling (tilecraft.gemm.simt_tuned.CONFIGS) and
   transpose tiling on this GPU's arch;
2. correctness: every tiling on full tiles (the unpredicated kernel, all four operand majors) and on
   odd shapes (the predicated trace), against float64; every transpose tiling on 8192^2 and odd shapes;
3. timing: fp32 4096^3 and 8192^3 for cuBLAS and every tiling, through tilecraft.bench's GEMM sweep
   (the sweep checks each contender against float64 again, rotates inputs past L2, times with CUDA
   events); the transpose at 8192^2 fp32 against a device-to-device copy of the same bytes
   (``Tensor.copy_``) and against torch's own transpose (``A.t().contiguous()``).

Prints one table per part and writes <out>/sgemm.json (everything) and <out>/sgemm.md (the tables).
``--configs`` picks tilings by name (comma-separated), ``--shapes`` the GEMM sizes.
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

import torch  # noqa: E402

from tilecraft.bench.gemm import environment, run_gemm_sweep  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.contenders import register_contender  # noqa: E402
from tilecraft.bench.shapes import GemmShape  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm import CONFIGS, sgemm_contender, sgemm_tuned, sgemm_tuned_args, sgemm_tuned_kernel  # noqa: E402
from tilecraft.kernels.transpose import CONFIGS as TRANSPOSE_CONFIGS  # noqa: E402
from tilecraft.kernels.transpose import transpose, transpose_args, transpose_kernel  # noqa: E402

def operands(M: int, N: int, K: int, a_major: str, b_major: str, c_major: str = "n") -> tuple[Any, Any, Any]:
    """Random A (M,K), B (K,N) and C (M,N) on the GPU with the given contiguous modes."""
    A = torch.randn(K, M, device="cuda").t() if a_major == "m" else torch.randn(M, K, device="cuda")
    B = torch.randn(K, N, device="cuda") if b_major == "n" else torch.randn(N, K, device="cuda").t()
    C = torch.randn(N, M, device="cuda").t() if c_major == "m" else torch.randn(M, N, device="cuda")
    return A, B, C


def check_sgemm(cfg: Any, M: int, N: int, K: int, a_major: str, b_major: str, c_major: str,
                alpha: float, beta: float) -> dict[str, Any]:
    """One sgemm_tuned call against float64: elementwise within the fp32 dot-product bound."""
    A, B, C = operands(M, N, K, a_major, b_major, c_major)
    C0 = C.clone()
    full = bool(sgemm_tuned_args(A, B, C, alpha, beta, cfg)[0][-1])
    sgemm_tuned(A, B, C, alpha, beta, config=cfg)
    torch.cuda.synchronize()
    ref = alpha * (A.double() @ B.double()) + beta * C0.double()
    bound = (K + 2) * 2.0**-24 * (abs(alpha) * (A.double().abs() @ B.double().abs()) + abs(beta) * C0.double().abs())
    err = (C.double() - ref).abs()
    ok = bool(torch.isfinite(C).all()) and bool((err <= bound + 1e-30).all())
    rel = float(torch.linalg.vector_norm(C.double() - ref) / torch.linalg.vector_norm(ref))
    return {"config": cfg.name, "shape": [M, N, K], "majors": a_major + b_major + c_major, "full": full,
            "alpha": alpha, "beta": beta, "ok": ok, "max_err": float(err.max()), "rel_err": rel}


def correctness(configs: list[Any]) -> list[dict[str, Any]]:
    """Every tiling on full tiles (the benchmark's majors and the opposite ones, beta 0 and not) and on
    odd shapes (the predicated trace); the first tiling also in the mixed majors and at 1x1x1. Each
    distinct case is a compile, so the list is short."""
    rows = []
    for i, cfg in enumerate(configs):
        bm, bn, bk = cfg.blk_m, cfg.blk_n, cfg.blk_k
        cases = [(2 * bm, 3 * bn, 12 * bk, "k", "k", "n", 1.0, 0.5), (2 * bm, 3 * bn, 12 * bk, "m", "n", "m", 1.0, 0.0),
                 (1000, 999, 77, "k", "k", "n", 1.5, -0.5), (129, 257, 1000, "m", "n", "m", 1.0, 0.0)]
        if i == 0:
            cases += [(bm, bn, 4 * bk, "m", "k", "n", 1.0, 0.0), (bm, bn, 4 * bk, "k", "n", "m", 1.0, 0.0),
                      (1, 1, 1, "k", "k", "n", 1.0, 0.0)]
        rows += [check_sgemm(cfg, *case) for case in cases]
    return rows


def check_transposes(configs: list[Any], n: int) -> list[dict[str, Any]]:
    """Every transpose tiling on n x n (the timed size), odd shapes and a strided view: exact equality."""
    rows = []
    for cfg in configs:
        for R, C, strided in ((n, n, False), (1000, 999, False), (1, 777, False), (333, 65, True)):
            A = torch.randn(C, R, device="cuda").t() if strided else torch.randn(R, C, device="cuda")
            B = transpose(A, config=cfg)
            full = bool(transpose_args(A, B, cfg)[0][-1])
            rows.append({"config": cfg.name, "shape": [R, C], "strided": strided, "full": full,
                         "ok": bool(torch.equal(B, A.t()))})
    return rows


def resources(configs: list[Any], tconfigs: list[Any]) -> list[dict[str, Any]]:
    """ptxas's report for each tiling's unpredicated (4096^3, bench majors) and predicated kernels."""
    rows = []
    A, B, C = operands(4096, 4096, 4096, "k", "k", "n")
    for cfg in configs:
        for what, (a, b, c) in (("full", (A, B, C)), ("predicated", (A[:1000, :77], B[:77, :999], C[:1000, :999]))):
            args, _, _ = sgemm_tuned_args(a, b, c, 1.0, 0.0, cfg)
            r = sgemm_tuned_kernel.compile(*args).resources
            rows.append({"kernel": "sgemm", "config": cfg.name, "trace": what, "registers": r.registers,
                         "spills": bool(r.spills), "stack": r.stack_frame_bytes, "smem": r.smem_bytes})
    X = torch.empty(8192, 8192, device="cuda")
    for cfg in tconfigs:
        args, _, _ = transpose_args(X, X, cfg)
        r = transpose_kernel.compile(*args).resources
        rows.append({"kernel": "transpose", "config": cfg.name, "trace": "full", "registers": r.registers,
                     "spills": bool(r.spills), "stack": r.stack_frame_bytes, "smem": r.smem_bytes})
    return rows


def time_transposes(configs: list[Any], n: int, timer: Timer) -> list[dict[str, Any]]:
    """Transpose n x n fp32 with each tiling, torch's transpose and a plain copy of the same bytes."""
    A = torch.randn(n, n, device="cuda")
    B = torch.empty(n, n, device="cuda")
    nbytes = 2 * A.numel() * A.element_size()  # read + write
    runs: list[tuple[str, Any]] = [("copy_ (D2D)", lambda: B.copy_(A)),
                                   ("torch A.t().contiguous()", lambda: A.t().contiguous())]
    runs += [(f"tilecraft {c.name}", (lambda c=c: transpose(A, B, config=c))) for c in configs]
    rows = []
    for name, fn in runs:
        res = timer(fn)
        rows.append({"name": name, "median_ms": res.median_ms, "p10_ms": res.p10_ms, "p90_ms": res.p90_ms,
                     "GBps": nbytes / (res.median_ms * 1e-3) / 1e9})
    copy_gbps = rows[0]["GBps"]
    for r in rows:
        r["pct_copy"] = 100.0 * r["GBps"] / copy_gbps
    return rows


def best_lines(records: list[Any]) -> list[str]:
    """Per shape: the fastest correct tilecraft tiling and its ratio to cuBLAS."""
    lines = []
    for shape in dict.fromkeys(r.shape for r in records):
        ours = [r for r in records if r.shape == shape and r.contender != "cublas" and r.ok and r.ratio]
        if ours:
            b = max(ours, key=lambda r: r.ratio)
            lines.append(f"best at {shape}: {b.contender.removeprefix('tc_')} {b.tflops:.1f} TFLOP/s, "
                         f"{b.ratio:.3f}x cuBLAS")
        else:
            lines.append(f"best at {shape}: no tilecraft tiling ran correctly")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results/sgemm")
    p.add_argument("--configs", default=",".join(CONFIGS), help="SGEMM tilings by name (default: all)")
    p.add_argument("--shapes", default="4096,8192", help="square GEMM sizes")
    p.add_argument("--transpose-n", type=int, default=8192)
    p.add_argument("--warmup-ms", type=float, default=30.0)
    p.add_argument("--rep-ms", type=float, default=150.0)
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_sgemm: needs a CUDA GPU", file=sys.stderr)
        return 2
    t0 = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    configs = [CONFIGS[n] for n in a.configs.split(",") if n]
    tconfigs = list(TRANSPOSE_CONFIGS.values())
    command = "python3 benchmarks/bench_sgemm.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:]))
    env = environment()
    md: list[str] = [f"### {env['date']} — {env.get('device')} (sm_{env.get('sm', '?').replace('.', '')}, "
                     f"{env.get('sms')} SMs)", "", f"- command: `{command}`",
                     f"- torch {env.get('torch')}, CUDA {env.get('cuda')}, Python {env.get('python')}", ""]
    result: dict[str, Any] = {"env": env, "command": command}

    def dump() -> None:
        (out / "sgemm.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
        (out / "sgemm.md").write_text("\n".join(md) + "\n")

    # 1. resources
    res = resources(configs, tconfigs)
    result["resources"] = res
    md += ["#### Resources (ptxas)", "", markdown_table(["kernel", "config", "trace", "regs", "spills", "stack", "smem"],
           [[r["kernel"], r["config"], r["trace"], r["registers"], r["spills"], r["stack"], r["smem"]] for r in res]), ""]
    print("\n".join(md[-4:]), flush=True)
    dump()

    # 2. correctness
    checks = correctness(configs)
    tchecks = check_transposes(tconfigs, a.transpose_n)
    result["correctness"], result["transpose_correctness"] = checks, tchecks
    bad = [c for c in checks + tchecks if not c["ok"]]
    summary = (f"correctness: {len(checks)} SGEMM checks, {len(tchecks)} transpose checks, "
               f"{len(bad)} failed" + "".join(f"\n  FAILED {b}" for b in bad))
    md += ["#### Correctness (float64 reference)", "", summary, ""]
    print(summary, f"({time.time() - t0:.0f} s)", flush=True)
    dump()

    # 3a. SGEMM timing: cuBLAS and every tiling in one sweep
    names = []
    for cfg in configs:
        name = f"tc_{cfg.name}"
        register_contender(name, sgemm_contender(cfg), f"tilecraft SIMT SGEMM {cfg.name}", replace=True)
        names.append(name)
    shapes = [GemmShape(n, n, n) for n in (int(x) for x in a.shapes.split(",") if x)]
    timer = Timer(warmup_ms=a.warmup_ms, rep_ms=a.rep_ms)
    sweep = run_gemm_sweep(shapes, "fp32", ["cublas"] + names, timer=timer, progress=False)
    result["sgemm"] = sweep.to_dict()
    rows = []
    for r in sweep.records:
        rows.append([r.shape, r.contender.removeprefix("tc_"), r.status,
                     f"{r.median_ms:.3f}" if r.median_ms else "-", f"{r.tflops:.1f}" if r.tflops else "-",
                     f"{r.ratio:.3f}x" if r.ratio else "-", f"{r.rel_err:.1e}" if r.rel_err is not None else "-",
                     "" if r.ok else r.detail[:60]])
    md += ["#### fp32 SGEMM vs cuBLAS (TF32 off), same run", "",
           markdown_table(["shape", "contender", "status", "ms", "TFLOP/s", "x cuBLAS", "rel err", "note"], rows), "",
           *(f"- {line}" for line in best_lines(sweep.records)), ""]
    print("\n".join(md[-(5 + len(shapes)):]), f"\n({time.time() - t0:.0f} s)", flush=True)
    dump()

    # 3b. transpose
    trows = time_transposes(tconfigs, a.transpose_n, timer)
    result["transpose"] = trows
    md += [f"#### Transpose {a.transpose_n}x{a.transpose_n} fp32 (read + write bytes)", "",
           markdown_table(["what", "ms", "GB/s", "% of copy"],
                  [[r["name"], f"{r['median_ms']:.3f}", f"{r['GBps']:.0f}", f"{r['pct_copy']:.1f}"] for r in trows]), ""]
    md.append(f"wall time {time.time() - t0:.0f} s")
    print("\n".join(md[-6:]), flush=True)
    dump()
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
