#!/usr/bin/env python
"""What a cooperative launch costs the kernels whose CTAs wait on each other (one process, in turn).

    PYTHONPATH=$PWD python3 benchmarks/probe_cooperative.py [--rounds 3]

tc.gemm launches cooperatively (every CTA started together) the launches that sum split-K in the kernel
(the dense Hopper GEMM's and the register-A mixed kernel's ``fused``) and stream-K; see
tilecraft/bench/residency.py for the hang it prevents. Each row times the same launch both ways: the
register-A kernel's picks at M = 64 and 128 (W4A16 g128, W8A16 per channel; N = K = 8192), the dense bf16
picks that sum their splits in the kernel (512x512x65536, 128x1024x8192, 256x1024x8192) and stream-K in 2x1
clusters (256x2560x4096). Every contender is checked against float64 first; operands rotate past L2.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tilecraft.quant as Q  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import Timer, in_turn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed import _copies  # noqa: E402

TIMER = Timer(warmup_ms=25, rep_ms=100, min_reps=20)
DT = torch.bfloat16


def _err(y: Any, ref: Any) -> float:
    return float((y.double() - ref).norm() / ref.norm())


def mixed(M: int, bits: int, group: int | None) -> tuple[dict[str, Callable[[], float]], str, float]:
    from tilecraft.gemm.sm90_mixed import _prepare

    K = N = 8192
    pw0 = Q.pack(Q.quantize(torch.randn(K, N, device="cuda") * 0.02, bits, group), DT)
    pws = [pw0] + [Q.PackedWeight(pw0.qweight.clone(), pw0.scales.clone(), None, pw0.shape, pw0.format)
                   for _ in range(_copies(pw0.nbytes) - 1)]
    x = torch.randn(M, K, device="cuda").to(DT)
    coop, plain = _prepare(x, pw0, None, None), _prepare(x, pw0, None, None)
    plain.launch.main.cooperative = False
    ref = x.double() @ pw0.dequantize(DT).double()
    err = max(_err(run(x, pw0, None), ref) for run in (coop, plain))
    timers = {name: (lambda run=run: TIMER(lambda xx, p: run(xx, p, None), [(x, p) for p in pws]).median_ms * 1e3)
              for name, run in (("cooperative", coop), ("plain", plain))}
    return timers, f"{coop.launch.cfg.name} fused={coop.launch.fused}", err


def dense(M: int, N: int, K: int, cfg: Any = None) -> tuple[dict[str, Callable[[], float]], str, float]:
    from tilecraft.gemm import sm90
    from tilecraft.gemm.op import pick_sm90_config
    from tilecraft.gemm.tensorop import EpilogueSpec

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cfg = cfg or pick_sm90_config(M, N, K, 1, sms)
    n = _copies(2 * (M * K + N * K))
    ops = [(torch.randn(1, M, K, device="cuda").to(DT), torch.randn(1, N, K, device="cuda").to(DT)) for _ in range(n)]
    D3 = torch.empty(1, M, N, device="cuda", dtype=DT)
    one, zero = np.float32(1), np.float32(0)
    coop, plain = (sm90.Launch(*ops[0], None, D3, None, one, zero, cfg, "bfloat16", EpilogueSpec(), sms)
                   for _ in range(2))
    plain.main.cooperative = False
    ref = ops[0][0][0].double() @ ops[0][1][0].double().t()
    errs = []
    for launch in (coop, plain):
        D3.fill_(float("nan"))
        launch(*ops[0], None, D3, None, one, zero)
        errs.append(_err(D3[0], ref))

    def timer(launch: Any) -> Callable[[], float]:
        return lambda: TIMER(lambda A3, Bt: launch(A3, Bt, None, D3, None, one, zero), ops).median_ms * 1e3
    form = "fused" if coop.fused else "stream-K" if coop.cfg.stream_k else "plain"
    return {"cooperative": timer(coop), "plain": timer(plain)}, f"{coop.cfg.name} {form}", max(errs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    from tilecraft.gemm.sm90 import Sm90Config

    cases = [(f"W4A16 g128 M={m}", lambda m=m: mixed(m, 4, 128)) for m in (64, 128)]
    cases += [(f"W8A16 pc M={m}", lambda m=m: mixed(m, 8, None)) for m in (64, 128)]
    cases += [(f"bf16 {m}x{n}x{k}", lambda s=(m, n, k): dense(*s)) for m, n, k in
              ((512, 512, 65536), (128, 1024, 8192), (256, 1024, 8192))]
    cases += [("bf16 256x2560x4096 stream-K", lambda: dense(256, 2560, 4096, Sm90Config(stages=3, cluster_m=2,
                                                                                         stream_k=2)))]
    rows = []
    print(f"# cooperative against plain launches, {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"{args.rounds} rounds in turn\n")
    for label, make in cases:
        timers, config, err = make()
        if err > 1e-2:
            rows.append([label, config, "-", "-", "-", f"wrong: {err:.2e}"])
            continue
        t = {k: statistics.median(v) for k, v in in_turn(timers, args.rounds).items()}
        rows.append([label, config, f"{t['cooperative']:.2f}", f"{t['plain']:.2f}",
                     f"{t['plain'] / t['cooperative']:.3f}", f"{err:.1e}"])
        torch.cuda.empty_cache()
    print(markdown_table(["case", "config", "cooperative us", "plain us", "plain / coop", "rel err"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
