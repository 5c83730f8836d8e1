#!/usr/bin/env python
"""Our Triton GEMM, the `triton` contender of `tilecraft bench`.

The kernel itself lives in ``tilecraft/bench/triton_gemm.py`` so the contender registry can import it
from an installed tilecraft (``benchmarks/`` is a script folder, not a package). This script checks it
against torch and times it next to cuBLAS on one shape:

    python benchmarks/triton_gemm.py --m 4096 --n 4096 --k 4096 --dtype bf16
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--dtype", default="bf16", help="fp16, bf16, fp32, tf32, fp8")
    a = p.parse_args(argv)

    from tilecraft.bench.gemm import run_gemm_sweep
    from tilecraft.bench.report import format_table
    from tilecraft.bench.shapes import GemmShape

    sweep = run_gemm_sweep([GemmShape(a.m, a.n, a.k)], a.dtype, ["cublas", "triton"], progress=False)
    print(format_table(sweep.records, show_floor=False))
    for r in sweep.records:
        print(f"{r.contender}: {r.detail}  (rel. error {r.rel_err:.2e})" if r.rel_err is not None else f"{r.contender}: {r.detail}")
    return 1 if sweep.failures() else 0


if __name__ == "__main__":
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
