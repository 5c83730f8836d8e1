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
src = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] += 1.f; }'
pr = cProfile.Profile(); t = time.perf_counter(); pr.enable()
rt.compile(src).kernel("k").handle
pr.disable(); print(f"hit: {(time.perf_counter() - t) * 1e3:.2f} ms")
pstats.Stats(pr).sort_stats("cumulative").print_stats(18)
'''

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TILECRAFT_CACHE_DIR=d)
        subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True)  # fill the cache
        subprocess.run([sys.executable, "-c", CHILD], env=env)
