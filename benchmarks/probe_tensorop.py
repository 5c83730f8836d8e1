#!/usr/bin/env python
"""Issue 7: the sm80 tensor-op GEMM's tilings against cuBLAS (fp16 / bf16), every contender timed in turn
over rounds, then sustained with the SM clock and board power sampled.

    PYTHONPATH=$PWD python3 benchmarks/probe_tensorop.py --dtypes float16,bfloat16 --shapes 4096 \\
        --configs "T(128, 256, 32, 2, 4, stages=4, lean_loop=True, smem_epilogue=True)" --rounds 5 --sustain 3

Each round times cuBLAS (torch.matmul) and every tiling once (CUDA events, `--reps` calls after a warm-up,
operands rotated over two copies: 128 MB at 4096^3 fp16, past the 50 MB L2), and the medians over rounds are
compared; every tiling is first checked against float64. ``--configs`` takes ``T(...)`` expressions
(T = TensorOpConfig) separated by ';', or ``pick`` for the heuristic's sm80 entry for the shape. With
``--sustain S`` each contender then runs back to back for S seconds: TFLOP/s at the clock it sustains, the
board power, and joules per TFLOP (``tilecraft.bench.timing.sustain``): a kernel held at the 700 W limit
is bound by its energy per operation, not by its schedule.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft as tc  # noqa: E402
from tilecraft.bench.timing import Timer, against, in_turn, sustain  # noqa: E402
from tilecraft.gemm import TensorOpConfig as T  # noqa: E402
from tilecraft.gemm.op import pick_config  # noqa: E402

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="pick", help="';'-separated T(...) expressions or 'pick'")
    p.add_argument("--dtypes", default="float16,bfloat16")
    p.add_argument("--shapes", default="4096", help="square sizes N or MxNxK, comma-separated")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--sustain", type=float, default=0.0, help="seconds of back-to-back calls per contender (0: none)")
    a = p.parse_args()
    exprs = [e.strip() for e in a.configs.split(";") if e.strip()]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    timer = Timer(warmup_ms=20.0, reps=a.reps)
    print(f"device: {torch.cuda.get_device_name()}\n")
    print("| dtype | shape | contender | ms | TFLOP/s | x cuBLAS | spread | rel err |\n|---|---|---|---:|---:|---:|---:|---:|")
    sustained_rows = []
    for dtype in a.dtypes.split(","):
        dt = getattr(torch, dtype)
        for shape in a.shapes.split(","):
            m, n, k = (int(x) for x in shape.split("x")) if "x" in shape else (int(shape),) * 3
            label = f"{m}³" if m == n == k else f"{m}x{n}x{k}"
            flops = 2 * m * n * k
            operands = [(torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt))
                        for _ in range(2)]
            ref = operands[0][0].double() @ operands[0][1].double()
            runs = {"cuBLAS": (lambda x, w: x @ w, "")}
            for e in exprs:
                cfg = pick_config(m, n, k, 1, dtype, sms) if e == "pick" else eval(e, {"T": T})  # noqa: S307
                if not isinstance(cfg, T):
                    raise SystemExit(f"--configs: {e!r} is not a TensorOpConfig")
                out = tc.gemm(*operands[0], config=cfg)
                err = float((out.double() - ref).norm() / ref.norm())
                name = f"{cfg.name} (pick)" if e == "pick" else cfg.name
                runs[name] = (lambda x, w, cfg=cfg: tc.gemm(x, w, config=cfg), f"{err:.1e}")
            times = in_turn({nm: lambda call=call: timer(call, operands).median_ms for nm, (call, _) in runs.items()},
                            a.rounds)
            stats = against(times, "cuBLAS")
            for nm, (_, err) in runs.items():
                ms, x, spread = stats[nm]
                print(f"| {dtype} | {label} | {nm} | {ms:.3f} | {flops / ms / 1e9:.1f} | {x:.3f}x | {spread:.1%} "
                      f"| {err} |", flush=True)
            if a.sustain > 0:
                base_tf = None
                for nm, (call, _) in runs.items():
                    r = sustain(call, operands, a.sustain)
                    tflops = flops / r.ms / 1e9
                    base_tf = base_tf or tflops
                    sustained_rows.append(f"| {dtype} | {label} | {nm} | {tflops:.1f} | {tflops / base_tf:.3f}x | "
                                          f"{r.clock_mhz:.0f} / {r.min_clock_mhz:.0f} MHz | {r.watts:.0f} W | "
                                          f"{r.watts / tflops:.3f} |")
    if sustained_rows:
        print(f"\n{a.sustain:g} s back to back per contender, clock and power over its last two thirds:\n")
        print("| dtype | shape | contender | TFLOP/s | x cuBLAS | SM clock (median / min) | power | J per TFLOP |\n"
              "|---|---|---|---:|---:|---:|---:|---:|")
        print("\n".join(sustained_rows))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
