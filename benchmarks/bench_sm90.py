#!/usr/bin/env python
"""Issue 8: the Hopper GEMM (TMA + wgmma, warp-specialized, persistent) against cuBLAS, in one run.

    PYTHONPATH=$PWD python3 benchmarks/bench_sm90.py --out $OUT/sm90          # ~2-4 min on an H100

1. resources (registers, spills) of every timed configuration for sm_90a, and whether its SASS has HGMMA;
2. correctness against float64: ragged shapes, all four operand majors, batch (and broadcast batch),
   every epilogue, bf16 and fp32 outputs (tc.gemm / GemmOp with an Sm90Config); failures printed;
3. fp16 and bf16 at 4096^3 and 8192^3: cuBLAS, the sm80 tensor-op heuristic, and the Hopper variants
   (tilecraft.bench's sweep: float64 check, inputs rotated past L2, CUDA-event medians);
4. (--llm) the LLM shape sweep of issue 8 with tc.gemm's pick against cuBLAS.

Writes <out>/sm90.json and <out>/sm90.md. Exit status 1 when a correctness check failed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from tilecraft.bench.contenders import register_contender  # noqa: E402
from tilecraft.bench.gemm import environment, run_gemm_sweep  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.shapes import GemmShape  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm import GemmOp, Sm90Config, TensorOpConfig, tensorop_contender  # noqa: E402
from tilecraft.gemm import gemm as tc_gemm  # noqa: E402
from bench_tensorop import _operand, _reference  # noqa: E402  (the same operands and float64 reference)
from probe_llm import LLM_SHAPES  # noqa: E402  (issue 8's 40 LLM shapes)

S = Sm90Config
VARIANTS: list[Sm90Config] = [
    S(128, 256, 64, stages=3, cluster_m=2), S(128, 256, 64, stages=4, cluster_m=2), S(128, 256, 64, stages=4),
    S(128, 256, 64, stages=4, tma_store=False), S(128, 256, 64, stages=3, cluster_m=2, raster=16),
    S(128, 128, 64, stages=6, cluster_m=2),
]
SM80_BEST = TensorOpConfig(128, 256, 32, 2, 4, stages=4, lean_loop=True, smem_epilogue=True)
_DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
_TOL = {"float16": 2e-3, "bfloat16": 1.5e-2, "float32": 1e-4}


def check_case(case: dict[str, Any]) -> dict[str, Any]:
    """One GemmOp call with an Sm90Config against float64."""
    M, N, K = case["M"], case["N"], case["K"]
    dt = _DT[case.get("dtype", "float16")]
    L = case.get("L")
    majors = case.get("majors", "kk")
    A = _operand(L, M, K, majors[0] == "k", dt)
    B = _operand(None if case.get("bcast") else L, K, N, majors[1] != "k", dt)
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
    C = torch.randn(*((M, N) if L is None else (L, M, N)), device="cuda").to(dt) if case.get("C") else None
    along = case.get("bias", "none")
    bias = torch.randn(N if along == "n" else M, device="cuda").to(dt) if along != "none" else None
    act, out = case.get("act", "none"), case.get("out")
    cfg = case.get("config", S())
    name = (f"{M}x{N}x{K} {case.get('dtype', 'float16')} {majors} L={L}{' bcast' if case.get('bcast') else ''} "
            f"a={alpha} b={beta} bias={along} {act} out={out} {cfg.name}")
    row: dict[str, Any] = {"case": name, "ok": False}
    try:
        op = GemmOp(case.get("dtype", "float16"), out, cfg, act, along)
        D = op(A, B, C, alpha=alpha, beta=beta, bias=bias)
        torch.cuda.synchronize()
        ref = _reference(A, B, C, alpha, beta, bias, along, act)
        err = float((D.double() - ref).norm() / ref.norm().clamp_min(1e-30))
        tol = _TOL[out or case.get("dtype", "float16")]
        row.update(ok=err <= tol, err=err, tol=tol)
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        row.update(error=f"{type(e).__name__}: {e}"[:400])
    return row


def correctness_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for M, N, K in [(128, 256, 64), (256, 512, 1024), (1000, 1000, 1000), (333, 517, 264), (1, 8, 8), (2000, 1999, 1992),
                    (4096, 4096, 4096)]:
        cases.append(dict(M=M, N=N, K=K))
    for majors in ("mk", "kn", "mn"):
        cases.append(dict(M=832, N=640, K=520, majors=majors))  # MN-major extents: multiples of 64
        cases.append(dict(M=512, N=512, K=512, majors=majors, dtype="bfloat16"))
    cases += [
        dict(M=300, N=500, K=136, L=3), dict(M=300, N=500, K=136, L=3, bcast=True),
        dict(M=515, N=260, K=200, C=True, alpha=0.5, beta=-1.5), dict(M=515, N=260, K=200, bias="n", act="relu"),
        dict(M=515, N=260, K=200, bias="m", act="gelu"), dict(M=515, N=260, K=200, act="silu", out="float32"),
        dict(M=1024, N=1024, K=1024, dtype="bfloat16", C=True, beta=1.0, bias="n", act="silu"),
    ]
    for cfg in VARIANTS[1:]:
        cases.append(dict(M=1100, N=900, K=704, config=cfg))
    cases.append(dict(M=1344, N=768, K=520, majors="mn", config=S(128, 256, 64, stages=4, cluster_m=2)))
    cases.append(dict(M=512, N=512, K=8192, C=True, beta=-1.0, bias="n", act="gelu", config=S(128, 128, 64, 6, splits=8)))
    cases.append(dict(M=384, N=512, K=256, L=3, C=True, beta=0.5, config=S(128, 256, 64, stages=4, cluster_m=2)))
    return cases


def _fp8_contender(cfg: Sm90Config) -> Any:
    from tilecraft.bench.contenders import Kernel

    def factory(problem: Any) -> Any:
        return Kernel(fn=lambda a, b: tc_gemm(a, b, config=cfg, out_dtype=torch.bfloat16), prepare=lambda x: (x.a, x.b),
                      label=f"tilecraft fp8 {cfg.name}, bf16 out")
    return factory


def resources() -> list[list[Any]]:
    from tilecraft import runtime as rt
    from tilecraft.gemm import sm90
    from tilecraft.gemm.tensorop import EpilogueSpec
    import numpy as np

    rows = []
    for cfg in VARIANTS:
        A = torch.empty(1, 256, 256, dtype=torch.float16)
        Bt = torch.empty(1, 256, 256, dtype=torch.float16)
        D = torch.empty(1, 256, 256, dtype=torch.float16)
        tmA, tmB = sm90.make_maps(A, Bt, cfg, "float16")
        k = sm90.sm90_gemm_kernel.compile(tmA, tmB, None, D, None, np.float32(1), np.float32(0), 256, None, cfg, "float16",
                                          ("K", "K"), EpilogueSpec(), True, arch="sm_90a")
        r = k.resources
        sass = rt.sass(k.module.cubin) if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm") else ""
        rows.append([cfg.name, r.registers, r.spill_store_bytes, r.stack_frame_bytes, "HGMMA" in sass])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/sm90")
    p.add_argument("--llm", action="store_true")
    p.add_argument("--skip-check", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"env": environment(), "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    md: list[str] = []
    failed = False

    try:
        rows = resources()
        report["resources"] = rows
        md.append(markdown_table(["config", "regs", "spill B", "stack B", "HGMMA"], rows))
        print(md[-1], flush=True)
    except Exception:  # noqa: BLE001
        traceback.print_exc()

    if not args.skip_check:
        rows = []
        for case in correctness_cases():
            r = check_case(case)
            rows.append(r)
            print(("ok  " if r["ok"] else "FAIL") + f" {r['case']} err={r.get('err', '-')} {r.get('error', '')}",
                  flush=True)
        report["correctness"] = rows
        bad = [r for r in rows if not r["ok"]]
        failed = bool(bad)
        md.append(f"correctness: {len(rows) - len(bad)}/{len(rows)} cases within tolerance")
        print(md[-1], flush=True)

    names = []
    for cfg in VARIANTS:
        name = f"tc_{cfg.name}"
        register_contender(name, tensorop_contender(cfg), f"tilecraft {cfg.name}", replace=True)
        names.append(name)
    register_contender("tc_sm80", tensorop_contender(SM80_BEST), "tilecraft sm80 best", replace=True)
    register_contender("tc_auto", tensorop_contender(None), "tc.gemm's pick", replace=True)
    timer = Timer()
    sweeps = []
    for dtype in ("fp16", "bf16"):
        for n in (4096, 8192):
            sw = run_gemm_sweep([GemmShape(n, n, n)], dtype, ["cublas", "tc_sm80", "tc_auto"] + names, timer=timer,
                                progress=False)
            rows = [[r.shape, dtype, r.contender, r.status, f"{r.tflops:.1f}" if r.tflops else "-",
                     f"{r.ratio:.3f}x" if r.ratio else "-", r.detail[:60]] for r in sw.records]
            md.append(markdown_table(["shape", "dtype", "contender", "status", "TFLOP/s", "vs cuBLAS", "detail"], rows))
            print(md[-1], flush=True)
            sweeps += [r.to_dict() for r in sw.records]
    fp8 = [S(128, 256, 128, stages=3, cluster_m=2), S(128, 256, 128, stages=4, cluster_m=2), S(128, 256, 128, stages=4)]
    fp8_names = []
    for cfg in fp8:
        name = f"tc_fp8_{cfg.name}"
        register_contender(name, _fp8_contender(cfg), f"tilecraft fp8 {cfg.name}", replace=True)
        fp8_names.append(name)
    for n in (4096, 8192):
        sw = run_gemm_sweep([GemmShape(n, n, n)], "fp8", ["scaled_mm"] + fp8_names, baseline="scaled_mm", timer=timer,
                            progress=False)
        rows = [[r.shape, "fp8", r.contender, r.status, f"{r.tflops:.1f}" if r.tflops else "-",
                 f"{r.ratio:.3f}x" if r.ratio else "-", r.detail[:60]] for r in sw.records]
        md.append(markdown_table(["shape", "dtype", "contender", "status", "TFLOP/s", "vs _scaled_mm", "detail"], rows))
        print(md[-1], flush=True)
        sweeps += [r.to_dict() for r in sw.records]
    report["sweeps"] = sweeps
    from tilecraft.gemm import sm90
    report["resident_clusters"] = {f"{c.name} {e} sms={n}": v for (c, e, n), v in sm90._RESIDENT_CLUSTERS.items()}
    print("resident clusters (cuOccupancyMaxActiveClusters):", report["resident_clusters"], flush=True)

    if args.llm:
        shapes = [GemmShape(m, n, k) for m, n, k in LLM_SHAPES]
        skinny = run_gemm_sweep([GemmShape(512, 512, 65536)], "fp16", ["cublas", "tc_sm80", "tc_auto"], timer=timer,
                                progress=False)
        md.append(markdown_table(["shape", "contender", "status", "TFLOP/s", "vs cuBLAS"],
                                 [[r.shape, r.contender, r.status, f"{r.tflops:.1f}" if r.tflops else "-",
                                   f"{r.ratio:.3f}x" if r.ratio else "-"] for r in skinny.records]))
        print(md[-1], flush=True)
        report["skinny"] = [r.to_dict() for r in skinny.records]
        llm = []
        for dtype in ("bf16",):
            sw = run_gemm_sweep(shapes, dtype, ["cublas", "tc_auto"], timer=timer, progress=False)
            llm += [r.to_dict() for r in sw.records]
            ours = [r for r in sw.records if r.contender == "tc_auto"]
            wins = sum(1 for r in ours if r.ratio and r.ratio >= 1.0)
            rows = [[r.shape, r.status, f"{r.tflops:.1f}" if r.tflops else "-", f"{r.ratio:.3f}x" if r.ratio else "-"]
                    for r in ours]
            md.append(markdown_table(["shape", "status", "TFLOP/s", "vs cuBLAS"], rows)
                      + f"\n\nLLM sweep {dtype}: tc.gemm >= cuBLAS on {wins}/{len(ours)} shapes")
            print(md[-1], flush=True)
        report["llm"] = llm

    (out / "sm90.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "sm90.md").write_text("\n\n".join(md) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
