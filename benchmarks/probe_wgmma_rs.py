#!/usr/bin/env python
"""How long a k-tile of register-A wgmmas takes on this GPU, alone and shared: the question the forty-fifth
session left open about the register-A mixed kernel at M <= 64 (tilecraft/gemm/sm90_mixed_rs.py).

    PYTHONPATH=$PWD python3 benchmarks/probe_wgmma_rs.py [--ns 64,128,256] [--wgs 1,2,4] [--iters 2048]

Each warpgroup of a CTA (one CTA per SM, every SM) repeats ``iters`` times what the kernel's consumer does per
k-tile, without the loads and the conversion: ``wgmma_fence``, four m64nNk16 bf16 wgmmas with A from registers
(64 k) into one accumulator, ``wgmma_commit``, ``wgmma_wait(0)``. With ``--convert C`` each iteration first
rewrites the A fragment by C dependent integer ops per word (a stand-in for the conversion, on the registers the
next wgmmas read). The first thread of each warpgroup reads ``clock64`` around the loop; the table gives the
median cycles per iteration over warpgroups, and the tensor pipe's share: 4 x N / 2 cycles of wgmma work per
iteration and warpgroup (989 TFLOP/s at 1.83 GHz is about 2048 bf16 FMA per SM and cycle), times the
warpgroups, over the cycles.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilecraft as tc  # noqa: E402
from tilecraft import _, dsl  # noqa: E402
from tilecraft.atoms import make_tiled_mma, wgmma_atom  # noqa: E402
from tilecraft.dsl import Constexpr, blockIdx, hopper, threadIdx  # noqa: E402
from tilecraft.dsl.expr import make  # noqa: E402
from tilecraft.gemm.sm90 import smem_layout  # noqa: E402


def _clock() -> object:
    return dsl.declare(make("raw", ("clock64()",), "long long"), "clk")


@dsl.kernel
def rs_wgmma_loop(out, iters, n: Constexpr, wgs: Constexpr, convert: Constexpr):
    """out[blockIdx.x * wgs + warpgroup] = clock64 cycles of `iters` k-tiles of register-A wgmmas."""
    dsl.launch_bounds(128 * wgs, 1)
    sX = dsl.smem_tensor(dsl.bfloat16, smem_layout(dsl.bfloat16, "K", n, 64, 1), align=1024)
    atom = wgmma_atom(n, "bf16", operands="rs")
    thr = make_tiled_mma(atom).get_slice(threadIdx.x % 128)
    acc = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(thr.partition_C(tc.make_identity_tensor((64, n))).shape))
    afrag = dsl.make_rmem_tensor(dsl.uint32, (16,))
    for q in range(16):
        afrag[q] = threadIdx.x & 0x3C003C00
    t0 = _clock()
    for it in dsl.range(iters):
        for q in range(16 if convert else 0):                             # C dependent ops on each word
            for _c in range(convert):
                afrag[q] = (afrag(q) ^ it) & 0x3C3F3C3F
        hopper.fence_operands(afrag)
        hopper.wgmma_fence()
        hopper.wgmma_gemm(atom, afrag, sX(_, _, 0), acc, accumulate=it > 0)
        hopper.wgmma_commit()
        hopper.wgmma_wait(0)
    t1 = _clock()
    with dsl.if_(dsl.eq(threadIdx.x % 128, 0)):
        out[blockIdx.x * wgs + threadIdx.x // 128] = t1 - t0 + (acc(0) > 1e30)   # acc kept live


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="64,128,256", help="wgmma N values (rows of x)")
    ap.add_argument("--wgs", default="1,2,4", help="warpgroups per CTA")
    ap.add_argument("--convert", default="0", help="comma-separated dependent ops per A word per iteration")
    ap.add_argument("--iters", type=int, default=2048)
    a = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# register-A wgmma k-tiles (4 x m64nNk16 bf16, then wait), {torch.cuda.get_device_name()}, {sms} CTAs\n")
    print("| N | warpgroups | convert ops | cycles / k-tile / warpgroup | pipe cycles | tensor pipe share |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (int(v) for v in a.ns.split(",")):
        for wgs in (int(v) for v in a.wgs.split(",")):
            if n * wgs > 512:                                             # N / 2 accumulators a thread: too many
                print(f"| {n} | {wgs} | | (N x warpgroups > 512: the accumulators do not fit) | | |")
                continue
            for conv in (int(v) for v in a.convert.split(",")):
                out = torch.zeros(sms * wgs, dtype=torch.int64, device="cuda")
                for _rep in range(2):                                     # the first launch warms up
                    rs_wgmma_loop.launch(out, a.iters, n, wgs, conv, grid=(sms,), block=(128 * wgs,))
                torch.cuda.synchronize()
                cyc = statistics.median(out.tolist()) / a.iters
                pipe = 4 * n / 2
                print(f"| {n} | {wgs} | {conv} | {cyc:.0f} | {pipe:.0f} | {pipe * wgs / cyc:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
