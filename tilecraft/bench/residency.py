"""Whether a kernel whose CTAs wait on each other survives a GPU it shares: two such launches on two streams.

tilecraft's split-K summed in the kernel (the dense Hopper GEMM's and the register-A mixed kernel's ``fused``
launches) and stream-K have CTAs that wait for other CTAs of the same grid, so every CTA must hold an SM at
once. ``priority_scenario`` builds the case where that fails unless the launch is cooperative:

1. a *holder* kernel takes every SM (one CTA each, all of the shared memory) and gives them back one at a
   time, `hold_us` apart;
2. launch B of the GEMM goes on a low-priority stream and collects the SMs as they come free;
3. `wait_ms` later, launch C of the same GEMM goes on a high-priority stream, whose CTAs take the SMs still to
   come ahead of B's.

Launched plainly, B and C can each end up holding part of the SMs, every CTA waiting on CTAs of its grid
that have no SM: neither finishes. Launched cooperatively, the driver starts each grid only as a whole.

    python3 -m tilecraft.bench.residency {rs,dense,streamk} {coop,plain}

prints the scenario's milliseconds and both results' errors against float64 (run it under a timeout: the
plain launch can hang for good).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable

_CYCLES_PER_US = 1755                                                     # about an H100's clock under load
USAGE = "python3 -m tilecraft.bench.residency {rs,dense,streamk} {coop,plain}"
HOLD_SRC = r"""
extern "C" __global__ void hold_sms(long long cycles) {
    // CTA b holds its SM (all of its shared memory, so nothing else fits beside it) for (b + 1) * cycles
    extern __shared__ int held[];
    long long start = clock64(), until = cycles * (blockIdx.x + 1);
    while (clock64() - start < until) { }
    if (threadIdx.x == 0) held[0] = blockIdx.x;
}
"""


def _gemm(path: str) -> tuple[Callable[[Any], Any], Callable[[bool], None], Any]:
    """(call(stream) -> output, set_cooperative(flag), float64 reference) of one GEMM whose launch sums its
    split-K partials in the kernel (``rs``: W4A16 g128 at M = 64, N = K = 8192, tc.gemm's pick; ``dense``:
    bf16 512x512x65536, the pick) or runs stream-K in 2x1 clusters (``streamk``: bf16 256x2560x4096)."""
    import numpy as np
    import torch

    from tilecraft.gemm.op import pick_sm90_config
    from tilecraft.runtime import device_info

    sms = device_info(0).sm_count
    if path == "rs":
        import tilecraft.quant as Q
        from tilecraft.gemm.sm90_mixed import _prepare

        torch.manual_seed(0)
        pw = Q.pack(Q.quantize(torch.randn(8192, 8192, device="cuda") * 0.02, 4, 128), torch.bfloat16)
        x = torch.randn(64, 8192, device="cuda").to(torch.bfloat16)
        run = _prepare(x, pw, None, None)
        launch = run.launch
        if not launch.fused:
            raise RuntimeError(f"the M = 64 pick ({launch.cfg.name}) does not sum its splits in the kernel here")
        ref = x.double() @ pw.dequantize(torch.bfloat16).double()

        def call(stream: Any) -> Any:
            with torch.cuda.stream(stream):
                return run(x, pw, None)
    else:
        from tilecraft.gemm import sm90
        from tilecraft.gemm.sm90 import Sm90Config
        from tilecraft.gemm.tensorop import EpilogueSpec

        M, N, K = (512, 512, 65536) if path == "dense" else (256, 2560, 4096)
        torch.manual_seed(0)
        A3 = torch.randn(1, M, K, device="cuda").to(torch.bfloat16)
        Bt = torch.randn(1, N, K, device="cuda").to(torch.bfloat16)
        cfg = pick_sm90_config(M, N, K, 1, sms) if path == "dense" else \
            Sm90Config(stages=3, cluster_m=2, stream_k=2)
        D3 = torch.empty(1, M, N, device="cuda", dtype=torch.bfloat16)
        one, zero = np.float32(1), np.float32(0)
        launch = sm90.Launch(A3, Bt, None, D3, None, one, zero, cfg, "bfloat16", EpilogueSpec(), sms)
        if not (launch.fused or launch.cfg.stream_k):
            raise RuntimeError(f"{cfg.name} at {M}x{N}x{K} neither sums its splits in the kernel nor runs stream-K")
        ref = A3[0].double() @ Bt[0].double().t()

        def call(stream: Any) -> Any:
            with torch.cuda.stream(stream):
                D = torch.empty(1, M, N, device="cuda", dtype=torch.bfloat16)
                launch(A3, Bt, None, D, None, one, zero)
                return D[0]

    def set_cooperative(flag: bool) -> None:
        launch.main.cooperative = flag

    return call, set_cooperative, ref


def priority_scenario(path: str, cooperative: bool, hold_us: float = 50.0, wait_ms: float = 3.0) -> dict:
    """Run the scenario of the module docstring once; returns its milliseconds and the two results' relative
    errors. With ``cooperative=False`` it may never return."""
    import torch

    import tilecraft.runtime as rt

    call, set_cooperative, ref = _gemm(path)
    set_cooperative(cooperative)
    low, high = torch.cuda.Stream.priority_range()                       # (least, greatest): greatest is lower
    slow, fast, side = torch.cuda.Stream(priority=low), torch.cuda.Stream(priority=high), torch.cuda.Stream()
    for s in (slow, fast):                                                # compile, maps, flags of each stream
        call(s)
    torch.cuda.synchronize()
    info = rt.device_info(0)
    hold = rt.compile(HOLD_SRC, name="hold_sms.cu").kernel("hold_sms")
    smem = info.max_shared_memory_per_block_optin
    cycles = int(hold_us * _CYCLES_PER_US)
    start = time.perf_counter()
    hold(cycles, grid=info.sm_count, block=32, smem=smem, stream=side)
    b = call(slow)
    time.sleep(wait_ms / 1e3)
    c = call(fast)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1e3
    errs = [float((y.double() - ref).norm() / ref.norm()) for y in (b, c)]
    return {"ms": ms, "errors": errs, "priorities": (low, high), "cycles": cycles}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("rs", "dense", "streamk") or argv[1] not in ("coop", "plain"):
        print(USAGE)
        return 2
    r = priority_scenario(argv[0], argv[1] == "coop")
    print(f"{argv[0]} {argv[1]}: finished in {r['ms']:.1f} ms, rel err {r['errors'][0]:.2e} / {r['errors'][1]:.2e}, "
          f"stream priorities {r['priorities']}, hold {r['cycles']} cycles per CTA", flush=True)
    return 0 if max(r["errors"]) < 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
