"""Run a generated kernel on the CPU, for correctness tests on a machine without a GPU.

The kernel's CUDA C++ is compiled with the host's g++ (C++20) after a small prelude maps CUDA's
vocabulary onto the host: each block's threads are std::threads, ``__syncthreads()`` is a
std::barrier, ``__shared__`` arrays are static (blocks run one after another), ``uint4``/``uint2`` are
plain structs. Kernels that use atoms (``#include <tilecraft/atoms.cuh>``) get the host stand-ins in
``tests/gemm/emu/tilecraft/atoms.cuh``: warp-wide instructions (ldmatrix, mma.sync) meet at a per-warp
barrier, cp.async copies land at cp.async.wait_group. Pointer arguments are CPU torch tensors (their data pointers), so a kernel computes on
host memory exactly the addresses it would compute on the GPU. Slow (a thread per CUDA thread): meant
for small problems that cover every code path, not for timing.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

_PRELUDE = r"""
#include <algorithm>
#include <barrier>
#include <deque>
#include <thread>
#include <vector>
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct Dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local Dim3 threadIdx;
static Dim3 blockIdx, blockDim, gridDim;
static std::barrier<>* tc_barrier;
#define __syncthreads() tc_barrier->arrive_and_wait()
static std::vector<std::barrier<>*> tc_warp_barriers;
static std::vector<unsigned char> tc_scratch;
std::barrier<>* tc_warp_barrier() { return tc_warp_barriers[threadIdx.x / 32]; }
#define __syncwarp() tc_warp_barrier()->arrive_and_wait()
void* tc_warp_scratch() { return tc_scratch.data() + threadIdx.x / 32 * 32 * 64; }
template <class T> T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    // through the warp's scratch: everyone writes, meets, reads its partner, meets again before the next use
    T* s = static_cast<T*>(tc_warp_scratch());
    const unsigned lane = threadIdx.x % 32;
    s[lane] = v;
    __syncwarp();
    const T r = s[lane ^ static_cast<unsigned>(lane_mask)];
    __syncwarp();
    return r;
}
#define __global__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
using std::min;
using std::max;
"""

_CACHE: dict[str, Any] = {}


def available() -> bool:
    """True when a C++20 host compiler (g++) is on the PATH."""
    return shutil.which("g++") is not None


def _params(source: str, name: str) -> list[str]:
    """The C++ types of the kernel's parameters, in order: 'ptr', 'int' or 'float'."""
    m = re.search(rf"{name}\(\s*(.*?)\)\s*\{{", source, re.S)
    if m is None:
        raise ValueError(f"no kernel {name} in the source")
    kinds = []
    for decl in (d.strip() for d in m.group(1).split(",") if d.strip()):
        kinds.append("ptr" if "*" in decl else decl.split()[0])
    return kinds


def _library(source: str, name: str) -> Any:
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    if key in _CACHE:
        return _CACHE[key]
    kinds = _params(source, name)
    call_args = []  # each parameter read from args[i] (pointers arrive as void* and are cast back)
    body_src = source.replace("extern \"C\" ", "static ")
    # dynamic shared memory (kernels past 48 KB): one static buffer as large as an SM's
    body_src = re.sub(r"extern __shared__ __align__\((\d+)\) unsigned char (\w+)\[\];",
                      r"alignas(\1) static unsigned char \2[232448];", body_src)
    decl = re.search(rf"{name}\(\s*(.*?)\)\s*\{{", source, re.S).group(1)
    ptypes = [d.strip().rsplit(" ", 1)[0] for d in decl.split(",") if d.strip()]
    for i, (k, t) in enumerate(zip(kinds, ptypes)):
        call_args.append(f"({t.replace('__restrict__', '').strip()})(*(void**)args[{i}])" if k == "ptr"
                         else f"*({k}*)args[{i}]")
    runner = f"""
extern "C" void tc_run(void** args, unsigned gx, unsigned gy, unsigned gz, unsigned threads) {{
    gridDim = Dim3{{gx, gy, gz}};
    blockDim = Dim3{{threads, 1, 1}};
    std::barrier<> bar(threads);
    tc_barrier = &bar;
    std::deque<std::barrier<>> warps;  // barriers cannot move: a deque keeps them in place
    tc_warp_barriers.clear();
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) {{
        warps.emplace_back(std::min(threads - 32 * w, 32u));
        tc_warp_barriers.push_back(&warps.back());
    }}
    tc_scratch.assign((threads + 31) / 32 * 32 * 64, 0);
    for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {{
        blockIdx = Dim3{{x, y, z}};
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([=] {{ threadIdx = Dim3{{t, 0, 0}}; {name}({", ".join(call_args)}); }});
        for (auto& th : pool) th.join();
    }}
}}
"""
    d = tempfile.mkdtemp(prefix="tc_emu_")
    src = os.path.join(d, "k.cpp")
    lib = os.path.join(d, "k.so")
    with open(src, "w") as f:
        f.write(_PRELUDE + body_src + runner)
    emu_include = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emu")
    from tilecraft.runtime.compiler import include_dir  # tilecraft/types.cuh (after the stand-ins)
    # TC_EMU_SANITIZE=1 builds with AddressSanitizer (run python with LD_PRELOAD=$(g++ -print-file-name=libasan.so))
    sanitize = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"] if os.environ.get("TC_EMU_SANITIZE") else []
    r = subprocess.run(["g++", "-std=c++20", "-O1", "-fno-strict-aliasing", "-shared", "-fPIC", "-pthread",
                        *sanitize, "-w", "-I", emu_include, "-I", str(include_dir()), src, "-o", lib],
                       capture_output=True, text=True)
    if r.returncode:
        shutil.rmtree(d, ignore_errors=True)
        raise RuntimeError(f"g++ failed on the emulated kernel:\n{r.stderr[-4000:]}")
    try:
        handle = ctypes.CDLL(lib)  # the loaded library stays mapped after its file is removed
    finally:
        shutil.rmtree(d, ignore_errors=True)
    handle.tc_run.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                              ctypes.c_uint]
    _CACHE[key] = (handle, kinds)
    return _CACHE[key]


def launch(kernel: Any, grid: Any, block: Any, *args: Any, **kwargs: Any) -> None:
    """Run ``kernel[grid, block](*args)`` on the CPU (tensors must be CPU torch tensors)."""
    key, leaves, _ = kernel._key(args, kwargs)
    spec = kernel._specialization(key)
    _run(spec, [leaves[i] for i in spec.used], grid, block)


def bind(kernel: Any, *args: Any, grid: Any, block: Any, **kw: Any) -> Any:
    """``kernel.bind(*args, grid=..., block=...)`` run on the CPU: as tilecraft's BoundLaunch, later calls take only
    the tensors' addresses and the floats from their arguments (the specialization is the bound arguments')."""
    from tilecraft.dsl.kernel import BoundLaunch

    where: list[Any] = []
    key, leaves, _ = kernel._key(args, {}, where)
    spec = kernel._specialization(key)
    bound = BoundLaunch(kernel, key, None, spec, [leaves[i] for i in spec.used], [where[i] for i in spec.used],
                        grid, block, None)
    return lambda *call, stream=None: _run(spec, bound.values(call), grid, block)


def _run(spec: Any, values: list[Any], grid: Any, block: Any) -> None:
    """Run the specialization's kernel on the CPU with these parameter values."""
    handle, kinds = _library(spec.source, spec.name)
    keep = []
    ptrs = (ctypes.c_void_p * len(values))()
    for i, (k, v) in enumerate(zip(kinds, values)):
        if k == "ptr":
            c = ctypes.c_void_p(v.data_ptr())
        elif k == "int":
            c = ctypes.c_int(int(v))
        elif k == "float":
            c = ctypes.c_float(float(v))
        else:
            raise TypeError(f"unsupported parameter type {k}")
        keep.append(c)
        ptrs[i] = ctypes.cast(ctypes.pointer(c), ctypes.c_void_p)
    g = (grid,) if isinstance(grid, int) else tuple(grid)
    g = g + (1,) * (3 - len(g))
    b = block if isinstance(block, int) else int(block[0])
    handle.tc_run(ptrs, g[0], g[1], g[2], b)


def route_launches(monkeypatch: Any) -> None:
    """Make every ``@tc.kernel`` launch run in this emulator for the test (skip it without g++)."""
    import pytest

    if not available():
        pytest.skip("no g++")
    from tilecraft.dsl.kernel import Kernel
    from tilecraft.gemm import gemv, mixed, op, skinny
    monkeypatch.setattr(Kernel, "launch", lambda self, *a, grid, block, stream=None, **kw:
                        launch(self, grid, block, *a, **kw))
    monkeypatch.setattr(Kernel, "bind", lambda self, *a, grid, block, cluster=None, pdl=False, max_ctas_per_sm=None:
                        bind(self, *a, grid=grid, block=block))
    # calls prepared here launch into the emulator: they live in caches of their own for the test
    for module, name in ((op, "_CALLS"), (op, "_RUNS"), (op, "_PICKS"), (op, "_SKINNY"), (op, "_SWAPPED"), (mixed, "_RUNS"), (mixed, "_CALLS"),
                         (gemv, "_PLANS"), (skinny, "_RUNS")):
        monkeypatch.setattr(module, name, {})
