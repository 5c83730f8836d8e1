#!/usr/bin/env python
"""Where a tc.gemm call's host time goes: each step of the launch path timed alone (µs per call, the median of
5 batches of back-to-back calls), from the driver's own launch of an empty kernel up to a whole tc.gemm call,
then a cProfile (by own time) of the whole calls.

    PYTHONPATH=$PWD python3 benchmarks/probe_host.py [--n 2000] [--profile]

host_overhead.py compares whole calls with torch; this probe splits them into their parts.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tilecraft as tc  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from host_overhead import print_profile  # noqa: E402
from tilecraft.gemm import op as gop  # noqa: E402


def per_call(fn, n: int, batches: int = 5) -> float:
    """Host µs per call: the median over batches of n back-to-back calls (the GPU drained between batches). A batch
    must not fill the GPU's launch queue: past that, a launch waits for the GPU and the time is the kernel's."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / n)
        torch.cuda.synchronize()
    return statistics.median(out)


def closure(fn, name: str):
    """The value of free variable `name` of closure fn."""
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=200, help="calls per batch (few enough that the launch queue never fills)")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--only", default="", help="the tc.gemm cases whose name contains one of these comma-separated strings (and no single steps)")
    a = p.parse_args()
    n = a.n
    rows: list[tuple[str, float]] = []

    def row(name: str, fn, count: int = n) -> None:
        us = per_call(fn, count)
        rows.append((name, us))
        print(f"| {name} | {us:.2f} |", flush=True)

    print("| step | host µs per call |\n|---|---:|")
    if a.only:
        return cases_and_profile(a, row)

    from cuda.bindings import driver as d
    mod = rt.compile('extern "C" __global__ void empty0() {}\n'
                     'extern "C" __global__ void empty4(const float* a, const float* b, float* c, float* e, int m, '
                     'int k) {}\n', name="probe_host.cu")
    k0, k4 = mod.kernel("empty0"), mod.kernel("empty4")
    k0(grid=1, block=32)
    torch.cuda.synchronize()
    fn = d.CUfunction(int(k0.handle.handle))
    hs = torch.cuda.current_stream().cuda_stream
    row("driver cuLaunchKernel (cuda.bindings), empty kernel", lambda: d.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, hs, 0, 0))
    cfg = d.CUlaunchConfig()
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = 32, 1, 1
    cfg.sharedMemBytes = 0
    cfg.hStream = hs

    row("driver cuLaunchKernelEx (cuda.bindings), no attributes", lambda: d.cuLaunchKernelEx(cfg, fn, 0, 0))

    def ex_set_stream():
        cfg.hStream = hs
        d.cuLaunchKernelEx(cfg, fn, 0, 0)
    row("  + setting hStream each call", ex_set_stream)
    attr = d.CUlaunchAttribute()
    attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    attr.value.cooperative = 1
    cfg2 = d.CUlaunchConfig()
    cfg2.gridDimX = cfg2.gridDimY = cfg2.gridDimZ = 1
    cfg2.blockDimX, cfg2.blockDimY, cfg2.blockDimZ = 32, 1, 1
    cfg2.hStream = hs
    cfg2.attrs = [attr]
    cfg2.numAttrs = 1
    row("driver cuLaunchKernelEx, cooperative attribute", lambda: d.cuLaunchKernelEx(cfg2, fn, 0, 0))
    lib = ctypes.CDLL("libcuda.so.1")
    cl = lib.cuLaunchKernel
    cl.restype = ctypes.c_int
    cl.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                                                              ctypes.c_void_p]
    fptr = int(k0.handle.handle)
    row("ctypes libcuda cuLaunchKernel, empty kernel", lambda: cl(fptr, 1, 1, 1, 32, 1, 1, 0, hs, None, None))
    row("tilecraft Kernel launch, empty kernel", lambda: k0(grid=1, block=32))
    t = [torch.empty(1024, device="cuda") for _ in range(4)]
    row("tilecraft Kernel launch, 4 tensors + 2 ints", lambda: k4(t[0], t[1], t[2], t[3], 5, 7, grid=1, block=32))
    row("tilecraft Kernel launch, 4 raw addresses + 2 ints",
        lambda: k4(t[0].data_ptr(), 1, 2, 3, 5, 7, grid=1, block=32))

    x = torch.randn(128, 6144, device="cuda").to(torch.bfloat16)
    row("torch.empty((128, 6144), bf16)", lambda: torch.empty((128, 6144), dtype=torch.bfloat16, device=x.device))
    row("x.new_empty((128, 6144))", lambda: x.new_empty((128, 6144)))
    row("x.unsqueeze(0)", lambda: x.unsqueeze(0))
    row("x.as_strided(...)", lambda: x.as_strided((1, 6144, 128), (6144 * 128, 1, 6144)))
    row("x.data_ptr()", x.data_ptr)
    row("x.stride()", x.stride)
    row("x.device", lambda: x.device)
    row("gop._signature(x)", lambda: gop._signature(x))
    row("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0))
    row("np.float32(1.0)", lambda: np.float32(1.0))
    row("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32)
    row("torch.cuda.is_current_stream_capturing()", torch.cuda.is_current_stream_capturing)

    return cases_and_profile(a, row)


def cases_and_profile(a, row) -> int:
    n = a.n
    dt = torch.bfloat16
    cases = []
    for M, N, K, k_major in ((128, 6144, 4096, False), (4096, 4096, 4096, False), (4, 4096, 4096, False),
                             (24, 4096, 4096, True), (8, 4096, 4096, True)):
        A = torch.randn(M, K, device="cuda").to(dt)
        B = (torch.randn(K, N, device="cuda") * 0.05).to(dt)
        B = B.t().contiguous().t() if k_major else B
        name = f"{M}x{N}x{K} B {'K' if k_major else 'N'}"
        cases.append((name, A, B))
    A, B = torch.randn(1, 8192, device="cuda").to(dt), torch.randn(8192, 8192, device="cuda").to(dt)
    cases.append(("1x8192x8192 B N (GEMV)", A, B))
    import tilecraft.quant as Q
    w4 = Q.pack(Q.quantize(torch.randn(8192, 8192, device="cuda") * 0.02, 4, 128), dt)
    for M in (1, 256):
        cases.append((f"W4A16 {M}x8192x8192", torch.randn(M, 8192, device="cuda").to(dt), w4))
    torch.backends.cuda.matmul.allow_tf32 = False
    for M, N, K in ((1, 4096, 4096), (32, 256, 256)):
        cases.append((f"{M}x{N}x{K} fp32", torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")))
    if a.only:
        cases = [c for c in cases if any(o in c[0] for o in a.only.split(","))]
    for name, A, B in cases:
        gop.clear_plans()
        tc.gemm(A, B)
        torch.cuda.synchronize()
        count = n
        row(f"{name}: tc.gemm", lambda A=A, B=B: tc.gemm(A, B), count)
        if isinstance(B, torch.Tensor):
            row(f"{name}: torch A @ B", lambda A=A, B=B: A @ B, count)
        plans = list(gop._CALLS.values())
        if not plans:
            continue
        run, launch = plans[0], None
        while launch is None and run is not None and run.__closure__:     # tc.gemm's run -> the path's -> its Launch
            names = run.__code__.co_freevars
            launch = closure(run, "launch") if "launch" in names else None
            if launch is None:
                inner = [n for n in ("run", "few", "few8", "inner") if n in names]
                run = closure(run, inner[0]) if inner else None
                if run is not None:
                    row(f"{name}: the path's run ({run.__qualname__})",
                        (lambda r=run: r(A, B, None, 1.0, 0.0, None, None)) if "GemmOp._prepare" in run.__qualname__
                        else (lambda r=run: r(A, B, None, 1.0, 0.0, None)), count)
        if launch is None or not hasattr(launch, "_args"):
            continue
        D = torch.empty(A.shape[0], B.shape[1], dtype=dt, device="cuda")
        args = (A, B, None, D, None) if launch._view is gop._flat_view else (B, A, None, D, None)
        one, zero = 1.0, 0.0
        row(f"{name}: sm90.Launch(...) (split {launch.cfg.splits}, fused {launch.fused}, "
            f"cooperative {launch.main.cooperative}, cluster {launch.main.cluster})",
            lambda: launch(*args, one, zero), count)
        W, flags = launch.workspace(args[3])
        row(f"{name}:   Launch.workspace", lambda: launch.workspace(args[3]), count)
        row(f"{name}:   Launch._args", lambda: launch._args(*args, one, zero, W, flags), count)
        largs = launch._args(*args, one, zero, W, flags)
        m = launch.main
        row(f"{name}:   BoundLaunch.values", lambda: m.values(largs), count)
        vals = m.values(largs)
        row(f"{name}:   the kernel's launcher (values given)",
            lambda: m.kernel(*vals, grid=m.grid, block=m.block, smem=m.smem, stream=None, cluster=m.cluster,
                             pdl=m.pdl, cooperative=m.cooperative), count)
        row(f"{name}:   the bound launch (values, then the launcher of its configuration)", lambda: m(*largs), count)
        fixed = m.kernel.launcher(m.grid, m.block, m.smem, m.cluster, m.pdl, m.cooperative)
        row(f"{name}:   the launcher of its configuration (values given)", lambda: fixed(*vals), count)
        L, cfg = fixed.__globals__["_L"], fixed.__globals__["_cfg0"]
        if cfg.ex is None:                                                # (the last launch's parameters, again)
            hs = torch.cuda.current_stream().cuda_stream
            drv = L.driver.cuLaunchKernel
            row(f"{name}:   the driver's cuLaunchKernel of this kernel and its parameters",
                lambda: drv(L.fn, *cfg.dims, cfg.smem, hs, L.params_address, 0), count)
    torch.cuda.synchronize()
    if a.profile:
        for name, A, B in cases:
            calls = 200 if A.shape[0] < 4096 else 20
            print_profile(f"cProfile (own time), {calls} calls: {name}", lambda A=A, B=B: tc.gemm(A, B), calls,
                          "tottime", 25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
