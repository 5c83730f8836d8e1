#!/usr/bin/env python
"""Profile one GEMM call per contender at one shape under Nsight Compute, at the clocks the GPU runs
(not ncu's locked base clock): does the kernel run power-throttled, how busy are its tensor pipes, what
stalls its warps. The calls inside the profiled range are the 4th of each contender (3 warm-ups first).

    ncu --profile-from-start off --clock-control none --section SpeedOfLight \\
        --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \\
        python3 benchmarks/ncu_gemm.py [--n 4096] [--dtype float16] [--which cublas,sm90,sm80]

``--dtype float32 --which cublas,sgemm`` profiles fp32 SIMT SGEMM: cuBLAS (TF32 off) against the tuned
kernel's tilings named by ``--sgemm`` (tilecraft.gemm.simt_tuned.CONFIGS names, comma-separated).

``--shape MxNxK --configs "S(64, 128, 64, 8, consumers=1);S(...)"`` profiles the Hopper GEMM in each
Sm90Config (S = Sm90Config) at that shape (the names to pass to ``--which``: cublas, sm90 for the pick, and
cfg0, cfg1, ... in order), e.g. with ``--section MemoryWorkloadAnalysis`` for DRAM and L2 traffic.

``--dtype float8_e4m3fn`` profiles e4m3 operands (B K-major): ``cublas`` is ``torch._scaled_mm`` in its default
mode and ``cublas_fast`` with ``use_fast_accum=True``; ``sm90`` is tc.gemm's promoted pick and ``sm90_fast``
its ``fast_accum=True`` pick (bf16 out, unit scales).

``--which w4a16,w8a16,copy`` profiles the decoding case instead: x (M, n) @ W4A16 g128 / W8A16 per-channel
packed weights (n, n) at ``--m`` rows, and a device copy of the W4 weight's bytes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tilecraft.gemm import gemm, pick_config  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--which", default="cublas,sm90,sm80")
    p.add_argument("--m", type=int, default=1, help="rows of x for w4a16 / w8a16")
    p.add_argument("--sgemm", default="128x256x8_w4x8_t256_b1", help="SIMT tilings for --which sgemm")
    p.add_argument("--shape", help="MxNxK instead of n^3")
    p.add_argument("--configs", help="';'-separated Sm90Config expressions, profiled as cfg0, cfg1, ...")
    p.add_argument("--rs", help="';'-separated RsConfig expressions (R = RsConfig): the register-A mixed kernel on the "
                   "W4A16 g128 weight of --which w4a16, profiled (after --which) as rs0, rs1, ...")
    a = p.parse_args()
    dt = getattr(torch, a.dtype)
    M, N, K = (int(x) for x in a.shape.split("x")) if a.shape else (a.n,) * 3
    A = torch.randn(M, K, device="cuda").to(dt)
    B = torch.randn(K, N, device="cuda").to(dt) if dt.itemsize > 1 else torch.randn(N, K, device="cuda").to(dt).t()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    calls = {"cublas": lambda: A @ B, "sm90": lambda: gemm(A, B),
             "sm80": lambda: gemm(A, B, config=pick_config(M, N, K, 1, a.dtype, sms))}
    if dt.itemsize == 1:                                                  # fp8: _scaled_mm and tc.gemm, bf16 out
        one, bf16 = torch.ones((), device="cuda"), torch.bfloat16
        calls = {"cublas": lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=bf16),
                 "cublas_fast": lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=bf16,
                                                         use_fast_accum=True),
                 "sm90": lambda: gemm(A, B, out_dtype=bf16), "sm90_fast": lambda: gemm(A, B, out_dtype=bf16,
                                                                                    fast_accum=True)}
    if a.configs:
        from tilecraft.gemm import Sm90Config

        for i, e in enumerate(a.configs.split(";")):
            cfg = eval(e, {"S": Sm90Config})
            print(f"cfg{i}: {cfg.name}", flush=True)
            out = torch.bfloat16 if dt.itemsize == 1 else None
            calls[f"cfg{i}"] = lambda cfg=cfg, out=out: gemm(A, B, config=cfg, out_dtype=out)
    if "sgemm" in a.which.split(","):
        from tilecraft.gemm import CONFIGS, sgemm_tuned

        torch.backends.cuda.matmul.allow_tf32 = False
        C = torch.empty(a.n, a.n, device="cuda")
        names = a.sgemm.split(",")
        calls["sgemm"] = lambda: [sgemm_tuned(A, B, C, config=CONFIGS[n]) for n in names]
    if a.rs or any(w in a.which for w in ("w4a16", "w8a16", "copy")):
        import tilecraft.quant as Q
        x = torch.randn(a.m, a.n, device="cuda").to(dt)
        w = torch.randn(a.n, a.n, device="cuda") * 0.02
        w4, w8 = Q.pack(Q.quantize(w, 4, 128), dt), Q.pack(Q.quantize(w, 8, None), dt)
        src = torch.empty(w4.nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        calls.update(w4a16=lambda: gemm(x, w4), w8a16=lambda: gemm(x, w8), copy=lambda: dst.copy_(src))
        if a.rs:
            from tilecraft.gemm.sm90_mixed_rs import RsConfig

            for i, e in enumerate(a.rs.split(";")):
                rcfg = eval(e, {"R": RsConfig})
                print(f"rs{i}: {rcfg.name}", flush=True)
                calls[f"rs{i}"] = lambda rcfg=rcfg: Q.gemm(x, w4, config=rcfg)
    names = [n for n in a.which.split(",") if n]
    for name in names + [n for n in calls if n.startswith("rs") and n not in names]:
        for _ in range(3):
            calls[name]()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        calls[name]()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(name, "profiled", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
