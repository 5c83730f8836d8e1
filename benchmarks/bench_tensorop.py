#!/usr/bin/env python
"""Issue 7: the portable tensor-op GEMM (sm80+) and tc.gemm against cuBLAS, in one run.

    PYTHONPATH=$PWD python3 benchmarks/bench_tensorop.py --out $OUT/tensorop     # ~2-3 min on an H100

In this order, all in one process, each part robust to the failure of one variant (its error is
recorded, the run goes on):

1. resources: registers, spills and smem of every timed configuration on this GPU's arch, and of the
   heuristic table for sm_80 (the same kernels must build for A100-class GPUs);
2. correctness against float64: odd shapes (1..2000), all four operand majors, batch (and broadcast
   batch), every epilogue (alpha/beta, bias along N and M, relu/gelu/silu, fp16/bf16/fp32 outputs),
   both split-K modes, tf32, unaligned operands (tc.gemm's padded path); failures printed;
3. fp16 and bf16 4096^3: cuBLAS, every CTA/warp/stage/raster variant and the opt-in lean_loop /
   smem_epilogue switches (tilecraft.bench's sweep: checks
   each against float64, rotates inputs past L2, CUDA-event medians);
4. tf32 4096^3 against cuBLAS with TF32 on (also with B stored K-major, untimed);
5. skinny 512x512x65536 fp16: cuBLAS, no split-K, parallel and serial split-K at several slice counts.

Prints a table per part and writes <out>/tensorop.json (everything) and <out>/tensorop.md (a block for
benchmarks/RESULTS.md). Exit status 1 when any correctness check failed, 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

# Runnable from a checkout even without `pip install -e .`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.bench.contenders import register_contender  # noqa: E402
from tilecraft.bench.gemm import environment, run_gemm_sweep  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.shapes import GemmShape  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm import HEURISTIC_TABLE, TensorOpConfig, pick_config, tensorop_contender  # noqa: E402
from tilecraft.gemm import gemm as tc_gemm  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec, tensorop_gemm_kernel  # noqa: E402

T = TensorOpConfig
_FAST = {"lean_loop": True, "smem_epilogue": True}
#: Variants timed at 4096^3 (fp16 and bf16): the heuristic's big tile without the speed switches (the
#: reference), then the switches (_lean: rotating stage counters and running k-offsets; _se: D staged
#: through smem) on the 64x64-per-warp tilings the last runs ranked best (256x128x64 s3: 492-499 TFLOP/s),
#: with deeper pipelines, the other k-tile and rasterization around them. --variants replaces the list.
VARIANTS: list[TensorOpConfig] = [
    T(128, 256, 32, 2, 4, stages=4),
    T(128, 256, 32, 2, 4, stages=4, **_FAST), T(128, 256, 32, 2, 4, stages=6, **_FAST),
    T(128, 256, 64, 2, 4, stages=3, **_FAST), T(128, 256, 64, 2, 4, stages=4, **_FAST),
    T(256, 128, 32, 4, 2, stages=4, **_FAST), T(256, 128, 32, 4, 2, stages=6, **_FAST),
    T(256, 128, 64, 4, 2, stages=3, **_FAST), T(256, 128, 64, 4, 2, stages=4, **_FAST),
    T(256, 128, 64, 4, 2, stages=3, raster=4, **_FAST), T(256, 128, 64, 4, 2, stages=3, raster=16, **_FAST),
    T(128, 128, 64, 2, 2, stages=4, **_FAST),
]
SWITCH_VARIANTS: list[TensorOpConfig] = [c for c in VARIANTS if c.lean_loop]
PARTS = ("resources", "correctness", "fp16", "bf16", "tf32", "skinny")
SKINNY = (512, 512, 65536)
SKINNY_BASE = T(128, 128, 32, 2, 2, stages=4)
SKINNY_SPLITS = [(8, "parallel"), (16, "parallel"), (32, "parallel"), (64, "parallel"), (16, "serial"),
                 (32, "serial")]
#: sliced-K (warps_k k-slices of warps share each k-tile) with and without split-K on the skinny shape
SKINNY_SLICED = [T(128, 128, 64, 2, 2, stages=3, warps_k=2, splits=16, lean_loop=True),
                 T(64, 128, 64, 1, 2, stages=4, warps_k=2, splits=16, lean_loop=True),
                 T(128, 128, 64, 2, 2, stages=3, warps_k=2, lean_loop=True)]
#: tf32 (32-element k-tiles are 128 bytes): the heuristic's two tiles, then with the speed switches
TF32_VARIANTS = [T(128, 128, 32, 2, 2, stages=3), T(128, 256, 32, 2, 4, stages=3),
                 T(128, 256, 32, 2, 4, stages=3, **_FAST), T(128, 256, 32, 2, 4, stages=4, **_FAST),
                 T(256, 128, 32, 4, 2, stages=4, **_FAST), T(128, 128, 32, 2, 2, stages=4, **_FAST)]

_DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# relative Frobenius error bounds by output type (a few roundings of the output; fp32 output of 16-bit
# inputs is exact products with fp32 sums)
_TOL = {"float16": 2e-3, "bfloat16": 1.5e-2, "float32": 1e-4, "tf32": 5e-3}


def _operand(L: int | None, R: int, C: int, contiguous_last: bool, dtype: Any) -> Any:
    """Random (L?, R, C) with the last mode contiguous, or the middle one (a transposed view)."""
    shape = (R, C) if contiguous_last else (C, R)
    if L is not None:
        shape = (L,) + shape
    x = torch.randn(*shape, device="cuda").to(dtype)
    return x if contiguous_last else x.transpose(-1, -2)


def _reference(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, bias_along: str, act: str) -> Any:
    x = alpha * (A.double() @ B.double())
    if C is not None and beta != 0:
        x = x + beta * C.double()
    if bias is not None:
        x = x + (bias.double() if bias_along == "n" else bias.double()[:, None])
    return {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "silu": torch.nn.functional.silu}[act](x)


def check_case(case: dict[str, Any]) -> dict[str, Any]:
    """One tc.gemm (or GemmOp) call against float64; case keys: M N K dtype majors (A,B: 'k' or 'mn'),
    L (batch or None), bcast (B without batch), alpha beta, C (bool), bias (none/n/m), act, out, config,
    tf32."""
    M, N, K = case["M"], case["N"], case["K"]
    dt = _DT[case.get("dtype", "float16")]
    L = case.get("L")
    a_k, b_k = case.get("majors", "kk")[0] == "k", case.get("majors", "kk")[1] == "k"
    A = _operand(L, M, K, a_k, dt)
    B = _operand(None if case.get("bcast") else L, K, N, not b_k, dt)
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
    shape_c = (M, N) if L is None else (L, M, N)
    C = torch.randn(*shape_c, device="cuda").to(_DT[case.get("c_dtype", case.get("out", "float16"))]) \
        if case.get("C") else None
    along = case.get("bias", "none")
    bias = torch.randn(N if along == "n" else M, device="cuda").to(dt) if along != "none" else None
    act = case.get("act", "none")
    out = case.get("out")
    row: dict[str, Any] = {"case": case_name(case), "ok": False}
    try:
        D = tc_gemm(A, B, C, alpha=alpha, beta=beta, bias=bias, activation=act, out_dtype=_DT[out] if out else None,
                    bias_along=along if along != "none" else "n", config=case.get("config"),
                    allow_tf32=case.get("tf32"))
        torch.cuda.synchronize()
        ref = _reference(A, B, C, alpha, beta, bias, along, act)
        err = float(torch.linalg.vector_norm(D.double() - ref) / max(float(torch.linalg.vector_norm(ref)), 1e-30))
        # tf32 operands round to 10-bit mantissas: their bound holds whatever the output type
        out_name = "tf32" if case.get("tf32") else (out or case.get("dtype", "float16"))
        tol = _TOL[out_name]
        row.update(ok=bool(torch.isfinite(D).all()) and err <= tol, rel_err=err, tol=tol)
    except Exception as e:  # one failing variant must not end the run
        row.update(error=f"{type(e).__name__}: {e}"[:400], trace=traceback.format_exc()[-1500:])
    return row


def case_name(c: dict[str, Any]) -> str:
    parts = [f"{c['M']}x{c['N']}x{c['K']}", c.get("dtype", "float16"), c.get("majors", "kk")]
    for key in ("L", "bcast", "alpha", "beta", "bias", "act", "out", "tf32"):
        if c.get(key) not in (None, False, "none", 1.0 if key == "alpha" else 0.0):
            parts.append(f"{key}={c[key]}")
    if c.get("config") is not None:
        parts.append(c["config"].name)
    return " ".join(str(p) for p in parts)


def correctness_cases(seed: int = 7) -> list[dict[str, Any]]:
    """The fuzz of issue 7 at a size one run affords (each distinct case compiles a specialization)."""
    rng = random.Random(seed)
    odd = lambda: rng.randint(1, 2000)  # noqa: E731
    cases: list[dict[str, Any]] = []
    for majors in ("kk", "km", "mk", "mm"):  # A K-/M-major x B K-/N-major, odd shapes (predicated)
        cases.append({"M": odd(), "N": odd(), "K": odd(), "majors": majors})
    for majors in ("kk", "mm"):  # full tiles (unpredicated), bf16
        cases.append({"M": 512, "N": 768, "K": 256, "majors": majors, "dtype": "bfloat16"})
    cases += [
        {"M": 1, "N": 1, "K": 1},
        {"M": 1000, "N": 8, "K": 4096, "majors": "km"},
        {"M": 333, "N": 1999, "K": 77, "majors": "mk", "dtype": "bfloat16"},
        {"M": 300, "N": 200, "K": 136, "L": 3, "majors": "kk"},                        # batch
        {"M": 256, "N": 128, "K": 64, "L": 4, "bcast": True, "majors": "mk"},           # broadcast B
        {"M": 777, "N": 555, "K": 333, "C": True, "alpha": 0.5, "beta": -1.25},       # alpha/beta
        {"M": 512, "N": 384, "K": 256, "C": True, "beta": 1.0, "bias": "n", "act": "relu"},
        {"M": 1001, "N": 257, "K": 129, "bias": "m", "act": "gelu", "dtype": "bfloat16"},
        {"M": 640, "N": 640, "K": 320, "bias": "n", "act": "silu", "out": "float32"},
        {"M": 999, "N": 1001, "K": 1003, "out": "bfloat16", "act": "gelu", "C": True, "beta": 0.5,
         "c_dtype": "float32"},
        {"M": 768, "N": 512, "K": 5000, "config": T(128, 128, 32, 2, 2, stages=4, splits=7)},     # parallel
        {"M": 333, "N": 444, "K": 3001, "majors": "mm", "C": True, "beta": 1.0, "bias": "n", "act": "relu",
         "config": T(128, 128, 32, 2, 2, stages=4, splits=5)},
        {"M": 512, "N": 512, "K": 8192, "config": T(128, 128, 32, 2, 2, stages=4, splits=16, split_mode="serial")},
        {"M": 257, "N": 383, "K": 2999, "majors": "km", "C": True, "alpha": 2.0, "beta": 0.5, "act": "silu",
         "config": T(128, 128, 32, 2, 2, stages=3, splits=6, split_mode="serial")},
        {"M": 100, "N": 100, "K": 64, "config": T(128, 128, 32, 2, 2, stages=3, splits=8)},  # empty splits
        {"M": 1024, "N": 1024, "K": 1024, "dtype": "float32", "tf32": True},
        {"M": 555, "N": 333, "K": 1111, "dtype": "float32", "tf32": True},
        {"M": 600, "N": 500, "K": 400, "dtype": "float32", "tf32": False},               # IEEE fp32 path
    ]
    for cfg in list(HEURISTIC_TABLE.values()) + VARIANTS + TF32_VARIANTS[2:]:  # table and timed variants,
        # forced (on sm_90 the automatic choice is the Hopper kernel), on an odd shape
        case = {"M": 1100, "N": 900, "K": 700, "majors": "km", "config": cfg}
        cases.append(dict(case, dtype="float32", tf32=True) if cfg in TF32_VARIANTS else case)
    for cfg in SWITCH_VARIANTS:  # whole tiles: the staged epilogue's path, with C, bias and an activation
        cases.append({"M": 1024, "N": 768, "K": 512, "majors": "kk", "C": True, "beta": 0.5, "bias": "n",
                      "act": "relu", "config": cfg})
    for i, cfg in enumerate(SKINNY_SLICED):  # sliced-K: odd and whole shapes, majors, epilogues, split-K
        cases.append({"M": 700 + i, "N": 300 + 7 * i, "K": 3000 + i, "majors": ["km", "mk", "mm"][i], "C": True,
                      "beta": 0.5, "bias": "m", "act": "silu", "config": cfg})
        cases.append({"M": 512, "N": 512, "K": 4096, "dtype": "bfloat16", "config": cfg})
    cases.append({"M": 999, "N": 555, "K": 777, "dtype": "float32", "tf32": True,
                  "config": T(128, 128, 32, 2, 2, stages=3, warps_k=2)})
    for cfg in TF32_VARIANTS[2:]:  # the same for tf32 (fp32 D staged through smem)
        cases.append({"M": 1024, "N": 768, "K": 512, "dtype": "float32", "tf32": True, "C": True, "beta": 0.5,
                      "out": "float32", "config": cfg})
    return cases


def resources(configs: list[TensorOpConfig], arch: str | None) -> list[dict[str, Any]]:
    """ptxas's report of the full fp16 kernel (bench majors: A K-major, B N-major) per configuration."""
    rows = []
    n = 512  # a multiple of every tile: the unpredicated kernel
    A = torch.empty(1, n, n, dtype=torch.float16)
    B = torch.empty(1, n, n, dtype=torch.float16).transpose(1, 2)
    D = torch.empty(1, n, n, dtype=torch.float16)
    for cfg in configs:
        row: dict[str, Any] = {"config": cfg.name, "arch": arch or "device"}
        try:
            W = torch.empty(cfg.splits, 1, n, n) if cfg.splits > 1 else None
            r = tensorop_gemm_kernel.compile(A, B, None, D, None, 1.0, 0.0, W, None, cfg, "float16", EpilogueSpec(),
                                             True, arch=arch).resources
            row.update(registers=r.registers, spills=bool(r.spills), stack=r.stack_frame_bytes,
                       smem=cfg.smem_bytes())
        except Exception as e:
            row.update(error=f"{type(e).__name__}: {e}"[:300])
        rows.append(row)
    return rows


def sweep_rows(sweep: Any) -> list[list[Any]]:
    rows = []
    for r in sweep.records:
        rows.append([r.shape, r.contender.removeprefix("tc_"), r.status, f"{r.median_ms:.3f}" if r.median_ms else "-",
                     f"{r.tflops:.1f}" if r.tflops else "-", f"{r.ratio:.3f}x" if r.ratio else "-",
                     f"{r.rel_err:.1e}" if r.rel_err is not None else "-", "" if r.ok else r.detail[:70]])
    return rows


def best_line(sweep: Any, what: str) -> str:
    ours = [r for r in sweep.records if r.contender != "cublas" and r.ok and r.ratio]
    base = [r for r in sweep.records if r.contender == "cublas" and r.tflops]
    if not ours:
        return f"{what}: no tilecraft variant ran correctly"
    b = max(ours, key=lambda r: r.ratio)
    cub = f", cuBLAS {base[0].tflops:.1f} TFLOP/s" if base else ""
    return f"{what}: best {b.contender.removeprefix('tc_')} {b.tflops:.1f} TFLOP/s = {b.ratio:.3f}x cuBLAS{cub}"


def register(name: str, cfg: TensorOpConfig | None) -> str:
    """A contender running tc.gemm with `cfg` (the sm80 tensor-op kernel), or with None its automatic choice
    (the Hopper kernel on sm_90, where it applies: `tc_auto`)."""
    register_contender(name, tensorop_contender(cfg), f"tilecraft tensor-op {cfg.name}" if cfg else
                       "tc.gemm, automatic choice (the Hopper kernel on sm_90)", replace=True)
    return name


def _with_pick(variants: list[TensorOpConfig], elem: str) -> list[TensorOpConfig]:
    """The sm80 heuristic's own pick for 4096^3 on this GPU first, then the variants (without repeating it)."""
    pick = pick_config(4096, 4096, 4096, 1, elem, torch.cuda.get_device_properties(0).multi_processor_count)
    return [pick] + [c for c in variants if c != pick]


def register_kmajor_b(name: str, cfg: TensorOpConfig) -> str:
    """A contender whose untimed prepare stores B K-major (a layout change, as the harness allows): tf32
    has no transposing ldmatrix, so an N-major B is read element by element; this shows the cost."""
    from tilecraft.bench.contenders import Kernel, Missing

    def factory(problem: Any) -> Any:
        if problem.dtype not in ("tf32", "fp16", "bf16"):
            return Missing(f"no {problem.dtype} kernel")
        tf32 = problem.dtype == "tf32"
        return Kernel(fn=lambda a, b: tc_gemm(a, b, config=cfg, allow_tf32=tf32 or None),
                      prepare=lambda x: (x.a, x.b.t().contiguous().t()),
                      label=f"tilecraft tensor-op {cfg.name}, B stored K-major (untimed)")

    register_contender(name, factory, f"tilecraft tensor-op {cfg.name}, B K-major", replace=True)
    return name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results/tensorop")
    p.add_argument("--warmup-ms", type=float, default=20.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--quick", action="store_true", help="fewer variants (a smoke run)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument("--variants", nargs="*", default=None, metavar="EXPR",
                   help="the fp16/bf16 variants instead of the built-in list, as TensorOpConfig expressions "
                        "with T = TensorOpConfig, e.g. 'T(256, 128, 64, 4, 2, stages=4, lean_loop=True)'")
    a = p.parse_args(argv)
    parts = set(a.parts.split(","))
    if parts - set(PARTS):
        p.error(f"unknown parts {sorted(parts - set(PARTS))}; known: {','.join(PARTS)}")
    if not torch.cuda.is_available():
        print("bench_tensorop: needs a CUDA GPU", file=sys.stderr)
        return 2
    t0 = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python3 benchmarks/bench_tensorop.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:]))
    env = environment()
    md: list[str] = [f"### {env['date']} — {env.get('device')} (sm_{str(env.get('sm', '?')).replace('.', '')}, "
                     f"{env.get('sms')} SMs)", "", f"- command: `{command}`",
                     f"- torch {env.get('torch')}, CUDA {env.get('cuda')}, Python {env.get('python')}", ""]
    result: dict[str, Any] = {"env": env, "command": command}
    variants = VARIANTS[:4] if a.quick else VARIANTS
    if a.variants:
        variants = [eval(x, {"T": TensorOpConfig}) for x in a.variants]  # noqa: S307 (the user's own command line)

    def dump() -> None:
        result["wall_s"] = time.time() - t0
        (out / "tensorop.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
        (out / "tensorop.md").write_text("\n".join(md) + "\n")

    def part(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # record and go on: one run must tell as much as it can
            msg = f"{name} FAILED: {type(e).__name__}: {e}"
            print(msg, traceback.format_exc(), sep="\n", flush=True)
            result.setdefault("errors", []).append({"part": name, "error": msg, "trace": traceback.format_exc()})
            md.extend([f"- {msg[:300]}", ""])
        print(f"[{name} done at {time.time() - t0:.0f} s]", flush=True)
        dump()

    # 1. resources
    def p_resources() -> None:
        rows = resources(variants, None) + resources(list(HEURISTIC_TABLE.values()), "sm_80")
        result["resources"] = rows
        md.extend(["#### Resources (ptxas; fp16, A K-major, B N-major)", "",
                   markdown_table(["config", "arch", "regs", "spills", "stack", "smem B", "error"],
                          [[r["config"], r["arch"], r.get("registers", "-"), r.get("spills", "-"), r.get("stack", "-"),
                            r.get("smem", "-"), r.get("error", "")[:60]] for r in rows]), ""])
        print("\n".join(md[-3:]), flush=True)

    bad: list[dict[str, Any]] = []

    # 2. correctness
    def p_correctness() -> None:
        rows = [check_case(c) for c in correctness_cases()]
        result["correctness"] = rows
        bad.extend(r for r in rows if not r["ok"])
        summary = f"correctness: {len(rows)} checks against float64, {len(bad)} failed"
        lines = [f"  FAILED {b['case']}: " + (f"rel err {b['rel_err']:.2e} > {b['tol']:.0e}" if "rel_err" in b
                                               else b.get("error", "")) for b in bad]
        md.extend(["#### Correctness (float64 reference, relative Frobenius error)", "", summary, *lines, ""])
        print(summary, *lines, *(b.get("trace", "") for b in bad[:3]), sep="\n", flush=True)

    timer = Timer(warmup_ms=a.warmup_ms, rep_ms=a.rep_ms)

    # 3. fp16 / bf16 4096^3
    def p_square(dtype: str) -> Callable[[], None]:
        def run() -> None:
            names = [register("tc_auto", None)] + [register(f"tc_{c.name}", c) for c in _with_pick(variants, "float16")]
            sweep = run_gemm_sweep([GemmShape(4096, 4096, 4096)], dtype, ["cublas"] + names, timer=timer,
                                   progress=False)
            result[f"{dtype}_4096"] = sweep.to_dict()
            md.extend([f"#### {dtype} 4096^3 vs cuBLAS (A K-major, B N-major, fp32 accumulate)", "",
                       markdown_table(["shape", "contender", "status", "ms", "TFLOP/s", "x cuBLAS", "rel err", "note"],
                              sweep_rows(sweep)), "", f"- {best_line(sweep, dtype + ' 4096^3')}", ""])
            print("\n".join(md[-5:]), flush=True)
        return run

    # 4. skinny split-K
    def p_skinny() -> None:
        M, N, K = SKINNY
        names = [register("tc_nosplit_" + SKINNY_BASE.name, SKINNY_BASE), register("tc_auto", None)]
        for s, mode in SKINNY_SPLITS:
            cfg = replace(SKINNY_BASE, splits=s, split_mode=mode)
            names.append(register(f"tc_{cfg.name}", cfg))
        names += [register(f"tc_{cfg.name}", cfg) for cfg in SKINNY_SLICED]
        sweep = run_gemm_sweep([GemmShape(M, N, K)], "fp16", ["cublas"] + names, timer=timer, progress=False)
        result["skinny"] = sweep.to_dict()
        recs = {r.contender: r for r in sweep.records}
        base = recs.get(names[0])
        ours = [r for r in sweep.records if r.contender.startswith("tc_") and r.ok and r.median_ms]
        lines = []
        if base is not None and base.ok and base.median_ms and ours:
            b = min(ours, key=lambda r: r.median_ms)
            lines.append(f"- split-K speedup: {base.median_ms / b.median_ms:.2f}x over no split "
                         f"({b.contender.removeprefix('tc_')}), {b.ratio:.3f}x cuBLAS")
        md.extend([f"#### Skinny {M}x{N}x{K} fp16: split-K", "",
                   markdown_table(["shape", "contender", "status", "ms", "TFLOP/s", "x cuBLAS", "rel err", "note"],
                          sweep_rows(sweep)), "", *lines, ""])
        print("\n".join(md[-(5 + len(lines)):]), flush=True)

    # 5. tf32
    def p_tf32() -> None:
        names = [register("tc_auto", None)] + [register(f"tc_{c.name}", c) for c in _with_pick(TF32_VARIANTS, "tf32")]
        names += [register_kmajor_b(f"tc_{c.name}_Bk", c) for c in TF32_VARIANTS[:2]]
        sweep = run_gemm_sweep([GemmShape(4096, 4096, 4096)], "tf32", ["cublas"] + names, timer=timer, progress=False)
        result["tf32_4096"] = sweep.to_dict()
        md.extend(["#### tf32 4096^3 vs cuBLAS (TF32 on)", "",
                   markdown_table(["shape", "contender", "status", "ms", "TFLOP/s", "x cuBLAS", "rel err", "note"],
                          sweep_rows(sweep)), "", f"- {best_line(sweep, 'tf32 4096^3')}", ""])
        print("\n".join(md[-5:]), flush=True)

    steps = {"resources": p_resources, "correctness": p_correctness, "fp16": p_square("fp16"),
             "bf16": p_square("bf16"), "tf32": p_tf32,
             "skinny": p_skinny}  # last: serial split-K spins on flags (in-order CTA dispatch assumed)
    for name in PARTS:
        if name in parts:
            part(name, steps[name])
    md.append(f"wall time {time.time() - t0:.0f} s")
    dump()
    print(f"wall time {time.time() - t0:.0f} s")
    return 1 if bad or "correctness" not in result else 0


if __name__ == "__main__":
    raise SystemExit(main())
