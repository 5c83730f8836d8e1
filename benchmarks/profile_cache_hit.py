"""Where a disk-cache hit spends its time (fresh process, CUDA context already up): cProfile's top entries."""
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile

CHILD = r'''
import cProfile, pstats, sys, time
import torch, cuda.core
import tilecraft.runtime as rt
torch.zeros(1, device="cuda"); cuda.core.Device().set_current()
sys.path.insert(0, "benchmarks")
from bench_runtime import gemm_source
for name, src in (("tiny", 'extern "C" __global__ void bench_gemm(float* a) { a[threadIdx.x] += 1.f; }'),
                  ("gemm", gemm_source())):
    t0 = time.perf_counter(); mod = rt.compile(src); t1 = time.perf_counter()
    oc = mod._load(); t2 = time.perf_counter()
    k = mod.kernel("bench_gemm").handle; t3 = time.perf_counter()
    print(f"{name}: cubin {len(mod.cubin)} B; compile() {1e3*(t1-t0):.2f} ms, ObjectCode {1e3*(t2-t1):.2f} ms, "
          f"get_kernel {1e3*(t3-t2):.2f} ms")
pr = cProfile.Profile(); pr.enable()
rt.clear_memory_cache(); rt.compile(gemm_source()).kernel("bench_gemm").handle
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(12)
'''

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TILECRAFT_CACHE_DIR=d)
        subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True)  # fill the cache
        print("second process (disk-cache hits):")
        subprocess.run([sys.executable, "-c", CHILD], env=env)
