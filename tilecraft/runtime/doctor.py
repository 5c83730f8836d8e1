"""`tilecraft doctor`: report versions, device, cache; compile a test kernel and run it where a GPU exists."""
from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from typing import Any

_TEST_KERNEL = r"""
#include <tilecraft/tilecraft.cuh>

extern "C" __global__ void tilecraft_doctor_axpy(float* __restrict__ y, const float* __restrict__ x, float a, tc::i32 n) {
    tc::i32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
_FALLBACK_ARCH = "sm_90a"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _try(fn: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, fn()
    except Exception as e:  # the doctor reports every failure instead of stopping at the first
        return False, f"{type(e).__name__}: {e}"


def _driver_version() -> str:
    from cuda.bindings import driver

    from tilecraft.runtime.device import check

    v = int(check(driver.cuDriverGetVersion(), "cuDriverGetVersion"))
    return f"{v // 1000}.{v % 1000 // 10}"


def _torch_version() -> str:
    import torch

    cuda = torch.version.cuda or "none"
    return f"{torch.__version__} (CUDA {cuda}, cuda available: {torch.cuda.is_available()})"


def run() -> int:
    """Print the report and return 0 if everything that can work here works, 1 otherwise."""
    import tilecraft
    from tilecraft.runtime import cache, compiler, device

    ok = True

    def line(label: str, value: Any) -> None:
        print(f"  {label:<22} {value}")

    print("tilecraft doctor")
    line("tilecraft", f"{tilecraft.__version__} ({tilecraft.__file__})")
    line("python", f"{platform.python_version()} ({sys.executable})")
    line("cuda-core", _version("cuda-core"))
    line("cuda-bindings", _version("cuda-bindings"))
    line("cuda-pathfinder", _version("cuda-pathfinder"))
    good, nvrtc = _try(compiler.nvrtc_version)
    ok &= good
    line("NVRTC", nvrtc)
    good, drv = _try(_driver_version)
    line("CUDA driver", drv if good else f"none ({drv})")
    good, tv = _try(_torch_version)
    line("torch", tv if good else f"not usable ({tv})")
    line("CUDA headers", compiler._cuda_include_dir() or "not found (only tilecraft's own headers)")
    line("tilecraft headers", compiler.include_dir())

    ndev = device.device_count()
    if ndev:
        for i in range(ndev):
            good, info = _try(lambda i=i: device.device_info(i))
            if not good:
                ok = False
                line(f"device {i}", info)
                continue
            line(f"device {i}", f"{info.name}, cc {info.compute_capability[0]}.{info.compute_capability[1]}, arch {info.arch}")
            line("", f"{info.sm_count} SMs, smem/block opt-in {info.max_shared_memory_per_block_optin // 1024} KB, "
                 f"L2 {info.l2_cache_bytes // (1024 * 1024)} MB, {info.total_memory_bytes / 2**30:.1f} GiB")
        arch = device.device_info().arch
    else:
        line("device", f"none; compiling for {_FALLBACK_ARCH} only")
        arch = _FALLBACK_ARCH

    root = cache.cache_dir()
    entries, size = cache.usage(root)
    line("cache dir", f"{root} ({entries} entries, {size / 1024:.1f} KB)")

    t0 = time.perf_counter()
    good, mod = _try(lambda: compiler.compile(_TEST_KERNEL, arch=arch, cache=False, name="doctor.cu"))
    if not good:
        line("test compile", f"FAILED: {mod}")
        return 1
    res = mod.resources.get("tilecraft_doctor_axpy")
    line("test compile", f"ok for {arch} in {(time.perf_counter() - t0) * 1e3:.0f} ms, {len(mod.cubin)} bytes cubin, "
         f"{res.registers if res else '?'} registers")

    if ndev:
        good, msg = _try(lambda: _run_test_kernel(mod))
        ok &= good and msg.startswith("ok")
        line("test launch", msg)
    else:
        line("test launch", "skipped (no GPU)")
    print("all good" if ok else "problems found (see above)")
    return 0 if ok else 1


def _run_test_kernel(mod: Any) -> str:
    import torch

    if not torch.cuda.is_available():
        return "skipped (torch has no CUDA)"
    n = 1000
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.ones(n, dtype=torch.float32, device="cuda")
    mod.kernel("tilecraft_doctor_axpy")(y, x, 2.0, n, grid=(n + 255) // 256, block=256, sync=True)
    expected = 2.0 * torch.arange(n, dtype=torch.float32) + 1.0
    if not torch.equal(y.cpu(), expected):
        return f"FAILED: wrong result, max error {(y.cpu() - expected).abs().max().item()}"
    return "ok (axpy on 1000 floats matches)"
