"""Runtime numbers for issue 4: cold compile, disk-cache hit, launch overhead, import time.

    python benchmarks/bench_runtime.py

Prints a table and one JSON line. Without a GPU it measures cold compile (for sm_90a), the cache hit
up to the loaded Module (no kernel load is possible), and import time, and says launch is skipped.

- cold compile: a generated ~300-line SIMT GEMM-like kernel (unrolled register tile, inline PTX,
  only tilecraft's own header), in a fresh process with an empty TILECRAFT_CACHE_DIR and NVRTC's
  own cache off (--no-cache and CUDA_CACHE_DISABLE=1). NVRTC is loaded first by compiling a tiny
  unrelated kernel, so the number is the compile itself; the first-compile-in-a-process time
  (including loading NVRTC) is reported too.
- cache hit: a fresh process whose imports and CUDA context are set up first; timed from the
  compile() call to the kernel loaded on the device.
- launch: host time per launch of a cached empty kernel with 4 tensor arguments on torch's current
  stream, median of 10^4 (synchronized every 100 launches so the launch queue never fills).
- import: wall time of `python -c "import tilecraft"`, median of 7, and the same minus `python -c pass`.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TARGETS = {"cold_compile_s": 0.5, "cache_hit_ms": 5.0, "launch_us": 5.0, "import_s": 0.3}
TILE = 8  # per-thread register tile is TILE x TILE
BM = BN = 128
BK = 8


def gemm_source() -> str:
    """A SIMT GEMM-like kernel written out the way a code generator would: everything unrolled."""
    t = TILE
    lines = [
        "#include <tilecraft/tilecraft.cuh>",
        "",
        "// C = alpha * A @ B + beta * C; A is M x K, B is K x N, row-major; 256 threads, 128 x 128 tile.",
        'extern "C" __global__ void __launch_bounds__(256)',
        "bench_gemm(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,",
        "           tc::i32 M, tc::i32 N, tc::i32 K, float alpha, float beta) {",
        f"    __shared__ __align__(16) float As[2][{BK}][{BM}];",
        f"    __shared__ __align__(16) float Bs[2][{BK}][{BN}];",
        "    const tc::i32 tid = threadIdx.x;",
        "    const tc::i32 tx = tid % 16, ty = tid / 16;",
        f"    const tc::i32 row0 = blockIdx.y * {BM}, col0 = blockIdx.x * {BN};",
    ]
    for i in range(t):
        lines.append("    float " + ", ".join(f"acc{i}_{j} = 0.f" for j in range(t)) + ";")
    lines += [
        "    // stage 0: each thread moves one 16-byte chunk of A^T and of B with cp.async",
        "    const tc::i32 a_r = tid / 2, a_c = (tid % 2) * 4;",
        f"    const tc::i32 b_r = tid / {BN // 4}, b_c = (tid % {BN // 4}) * 4;",
        "    auto load_stage = [&](int stage, int k0) {",
        "        const float* ag = A + (size_t)(row0 + a_r) * K + k0 + a_c;",
        "        const float* bg = B + (size_t)(k0 + b_r) * N + col0 + b_c;",
        "        float4 av = *reinterpret_cast<const float4*>(ag);",
        "        As[stage][a_c + 0][a_r] = av.x;",
        "        As[stage][a_c + 1][a_r] = av.y;",
        "        As[stage][a_c + 2][a_r] = av.z;",
        "        As[stage][a_c + 3][a_r] = av.w;",
        "        tc::cp_async_16(tc::smem_u32(&Bs[stage][b_r][b_c]), bg);",
        "        tc::cp_async_commit();",
        "    };",
        "    load_stage(0, 0);",
        f"    for (tc::i32 k0 = 0, stage = 0; k0 < K; k0 += {BK}, stage ^= 1) {{",
        f"        if (k0 + {BK} < K) load_stage(stage ^ 1, k0 + {BK});",
        f"        if (k0 + {BK} < K) tc::cp_async_wait<1>(); else tc::cp_async_wait<0>();",
        "        __syncthreads();",
    ]
    for kk in range(BK):
        lines.append(f"        {{  // k = {kk}")
        for i in range(t):
            lines.append(f"            const float a{i} = As[stage][{kk}][ty * {t} + {i}];")
        for j in range(t):
            lines.append(f"            const float b{j} = Bs[stage][{kk}][tx * {t} + {j}];")
        for i in range(t):
            fmas = " ".join(
                f'asm("fma.rn.f32 %0, %1, %2, %0;" : "+f"(acc{i}_{j}) : "f"(a{i}), "f"(b{j}));' for j in range(t)
            )
            lines.append(f"            {fmas}")
        lines.append("        }")
    lines += [
        "        __syncthreads();",
        "    }",
        "    // epilogue with bounds checks",
    ]
    for i in range(t):
        lines.append(f"    if (row0 + ty * {t} + {i} < M) {{")
        lines.append(f"        float* crow = C + (size_t)(row0 + ty * {t} + {i}) * N + col0 + tx * {t};")
        for j in range(t):
            lines.append(
                f"        if (col0 + tx * {t} + {j} < N) crow[{j}] = alpha * acc{i}_{j} + beta * crow[{j}];"
            )
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def run_child(code: str, env: dict[str, str] | None = None) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object as its last line."""
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    if r.returncode != 0:
        raise RuntimeError(f"child failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def has_gpu() -> bool:
    return bool(
        run_child(
            """
            import json
            try:
                import torch
                ok = torch.cuda.is_available()
            except ImportError:
                ok = False
            if ok:
                from tilecraft.runtime import device_count
                ok = device_count() > 0
            print(json.dumps({"gpu": ok}))
            """
        )["gpu"]
    )


def measure_import() -> tuple[float, float]:
    def wall(code: str) -> float:
        return run_child(
            f"""
            import json, subprocess, sys, time
            ts = []
            for _ in range(7):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-c", {code!r}], check=True)
                ts.append(time.perf_counter() - t)
            print(json.dumps({{"median": sorted(ts)[3]}}))
            """
        )["median"]

    full = wall("import tilecraft")
    return full, full - wall("pass")


def measure_cold_compile(src_path: str, arch: str) -> tuple[float, float]:
    code = f"""
        import json, time
        import tilecraft.runtime as rt
        src = open({src_path!r}).read()
        first = None
        if {{warm}}:
            rt.compile('extern "C" __global__ void warm(int* x) {{{{ x[0] = 1; }}}}', arch={arch!r}, cache=False,
                       options={{{{"no_cache": True}}}})
        t = time.perf_counter()
        mod = rt.compile(src, arch={arch!r}, options={{{{"no_cache": True}}}})
        dt = time.perf_counter() - t
        assert mod.resources["bench_gemm"].registers > 0
        print(json.dumps({{{{"s": dt}}}}))
    """
    cold, first = [], []
    for _ in range(3):
        for warm, out in ((True, cold), (False, first)):
            with tempfile.TemporaryDirectory() as d:
                env = {"TILECRAFT_CACHE_DIR": d, "CUDA_CACHE_DISABLE": "1"}
                out.append(run_child(code.format(warm=warm), env)["s"])
    return statistics.median(cold), statistics.median(first)


def measure_cache_hit(src_path: str, arch: str, gpu: bool, cache_dir: str) -> float:
    env = {"TILECRAFT_CACHE_DIR": cache_dir}
    run_child(
        f"""
        import json, tilecraft.runtime as rt
        rt.compile(open({src_path!r}).read(), arch={arch!r})
        print(json.dumps({{}}))
        """,
        env,
    )
    code = f"""
        import json, time
        import tilecraft.runtime as rt
        import cuda.core, cuda.bindings.driver
        src = open({src_path!r}).read()
        if {gpu}:
            import torch
            torch.zeros(1, device="cuda")  # CUDA context up front: one-time process cost, not the cache's
            cuda.core.Device().set_current()
        t = time.perf_counter()
        mod = rt.compile(src, arch={arch!r})
        if {gpu}:
            mod.kernel("bench_gemm").handle  # loaded onto the device
        dt = time.perf_counter() - t
        print(json.dumps({{"ms": dt * 1e3}}))
    """
    return statistics.median(run_child(code, env)["ms"] for _ in range(5))


def measure_launch() -> dict[str, float]:
    return run_child(
        """
        import json, statistics, time
        import torch
        import tilecraft.runtime as rt
        src = 'extern "C" __global__ void empty(float* a, float* b, float* c, float* d) {}'
        k = rt.compile(src).kernel("empty")
        t = [torch.empty(1024, device="cuda") for _ in range(4)]
        a, b, c, d = t
        for _ in range(200):
            k.launch(a, b, c, d, grid=1, block=32)
        torch.cuda.synchronize()
        launch = k.launch  # the signature-specialized launcher that replaced the method on first call

        def timed(fn, n=10_000, batch=100):
            ts = []
            clock = time.perf_counter_ns
            for _ in range(n // batch):
                for _ in range(batch):
                    t0 = clock(); fn(); ts.append(clock() - t0)
                torch.cuda.synchronize()
            return statistics.median(ts) / 1e3

        res = {
            "launch_us": timed(lambda: launch(a, b, c, d, grid=1, block=32)),
            "call_us": timed(lambda: k(a, b, c, d, grid=1, block=32)),
            "empty_lambda_us": timed(lambda: None),
        }
        s = torch.cuda.current_stream()
        res["given_stream_us"] = timed(lambda: launch(a, b, c, d, grid=1, block=32, stream=s))
        print(json.dumps(res))
        """
    )


def main() -> int:
    gpu = has_gpu()
    arch = None
    if gpu:
        arch = run_child("import json, tilecraft.runtime as rt; print(json.dumps({'arch': rt.device_info().arch}))")[
            "arch"
        ]
    arch = arch or "sm_90a"
    src = gemm_source()
    with tempfile.TemporaryDirectory() as tmp:
        src_path = str(Path(tmp) / "bench_gemm.cu")
        Path(src_path).write_text(src)
        cold, first = measure_cold_compile(src_path, arch)
        hit = measure_cache_hit(src_path, arch, gpu, str(Path(tmp) / "cache"))
    imp, imp_net = measure_import()
    launch = measure_launch() if gpu else None

    rows = [
        ("cold compile (s)", cold, TARGETS["cold_compile_s"], f"{src.count(chr(10))}-line kernel, {arch}; "
         f"first compile in a process incl. loading NVRTC: {first:.3f} s"),
        ("disk-cache hit (ms)", hit, TARGETS["cache_hit_ms"],
         "fresh process, call -> kernel loaded" if gpu else "fresh process, call -> Module (no GPU: not loaded)"),
        ("import tilecraft (s)", imp, TARGETS["import_s"], f"interpreter start excluded: {imp_net:.3f} s"),
    ]  # fmt: skip
    if launch is not None:
        rows.append(("launch overhead (us)", launch["launch_us"], TARGETS["launch_us"],
                     f"k.launch, 4 tensors; k(...): {launch['call_us']:.2f} us, stream= given: "
                     f"{launch['given_stream_us']:.2f} us, timer floor {launch['empty_lambda_us']:.2f} us"))  # fmt: skip
    print(f"{'metric':<22} {'value':>9} {'target':>8}  ok   notes")
    for name, value, target, note in rows:
        print(f"{name:<22} {value:>9.3f} {target:>8}  {'yes' if value <= target else 'NO ':<4} {note}")
    if launch is None:
        print("launch overhead: skipped (no GPU)")
    result = {
        "gpu": gpu,
        "arch": arch,
        "source_lines": src.count("\n"),
        "cold_compile_s": cold,
        "first_compile_in_process_s": first,
        "cache_hit_ms": hit,
        "import_s": imp,
        "import_net_s": imp_net,
        **({k: v for k, v in launch.items()} if launch else {"launch_us": None}),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
