"""Launching kernels on torch tensors on a real GPU (skipped cleanly without one)."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

import tilecraft.runtime as rt

pytestmark = pytest.mark.gpu

KERNELS = r"""
#include <tilecraft/tilecraft.cuh>

extern "C" __global__ void axpy(float* __restrict__ y, const float* __restrict__ x, float a, tc::i32 n) {
    tc::i32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void scalars(double* out, float f, double d, long long q, unsigned u, short s, bool b, char c) {
    out[0] = f; out[1] = d; out[2] = (double)q; out[3] = u; out[4] = s; out[5] = b; out[6] = c;
}

struct Triple { int a; float b; long long c; };
extern "C" __global__ void by_value(Triple t, long long* out) { out[0] = t.a; out[1] = (long long)(t.b * 2); out[2] = t.c; }

extern "C" __global__ void tensor_map_bytes(const __grid_constant__ CUtensorMap map, unsigned long long* out) {
    const unsigned long long* words = reinterpret_cast<const unsigned long long*>(&map);
    out[threadIdx.x] = words[threadIdx.x];
}

extern "C" __global__ void big_smem(int* correct, int n) {
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i;
    __syncthreads();
    int ok = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ok += buf[n - 1 - i] == n - 1 - i;
    atomicAdd(correct, ok);
}

extern "C" __global__ void __launch_bounds__(128) bounded(int* out) { out[threadIdx.x] = threadIdx.x; }

extern "C" __global__ void cluster_ids(unsigned* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned rank, cid;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    if (threadIdx.x == 0) { out[2 * blockIdx.x] = rank; out[2 * blockIdx.x + 1] = cid; }
#endif
}

extern "C" __global__ void wgmma_fence(int* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
    out[threadIdx.x] = 1;
}
"""


@pytest.fixture(scope="module")
def torch():
    import torch

    return torch


@pytest.fixture(scope="module")
def mod():
    return rt.compile(KERNELS)


def test_device_facts(torch):
    info = rt.device_info()
    major, minor = torch.cuda.get_device_capability()
    assert info.compute_capability == (major, minor)
    assert info.sm_count == torch.cuda.get_device_properties(0).multi_processor_count
    assert info.max_shared_memory_per_block == 48 * 1024
    assert info.max_shared_memory_per_block_optin > info.max_shared_memory_per_block
    assert info.l2_cache_bytes > 1 << 20 and info.warp_size == 32
    assert info.arch == (f"sm_{major}{minor}a" if major >= 9 else f"sm_{major}{minor}")


def test_default_arch_is_current_device(mod):
    assert mod.arch == rt.device_info().arch


def test_axpy_on_tensors(torch, mod):
    n = 10_000
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    expected = 0.1 * x.double() + y.double()
    mod["axpy"](y, x, 0.1, n, grid=(n + 255) // 256, block=256)
    torch.cuda.synchronize()
    # float32 math with a = float32(0.1): agrees with the float64 reference to float32 rounding
    torch.testing.assert_close(y.double(), expected, rtol=1e-6, atol=1e-6)


def test_python_float_becomes_c_float_and_other_scalars(torch, mod):
    out = torch.zeros(8, dtype=torch.float64, device="cuda")
    mod["scalars"](out, 0.1, 0.1, -(2**40), 2**32 - 1, -7, True, -3, grid=1, block=1, sync=True)
    got = out.cpu().tolist()
    import struct

    assert got[0] == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1  # rounded to float, not passed as double
    assert got[1] == 0.1 and got[2] == -(2**40) and got[3] == 2**32 - 1 and got[4] == -7 and got[5] == 1 and got[6] == -3


def test_struct_by_value(torch, mod):
    class Triple(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int), ("b", ctypes.c_float), ("c", ctypes.c_longlong)]

    out = torch.zeros(3, dtype=torch.int64, device="cuda")
    mod["by_value"](Triple(-5, 10.25, 2**50), out, grid=1, block=1, sync=True)
    assert out.cpu().tolist() == [-5, 20, 2**50]


def test_tensor_map_as_grid_constant(torch, mod):
    from cuda.bindings import driver

    src = torch.zeros(64, 64, dtype=torch.float16, device="cuda")
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, src.data_ptr(),
        [driver.cuuint64_t(64), driver.cuuint64_t(64)], [driver.cuuint64_t(64 * 2)],
        [driver.cuuint32_t(64), driver.cuuint32_t(64)], [driver.cuuint32_t(1), driver.cuuint32_t(1)], driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B, driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )  # fmt: skip
    assert err == driver.CUresult.CUDA_SUCCESS
    out = torch.zeros(16, dtype=torch.int64, device="cuda")
    mod["tensor_map_bytes"](tmap, out, grid=1, block=16, sync=True)
    expected = ctypes.string_at(int(tmap.getPtr()), 128)
    assert out.cpu().numpy().tobytes() == expected


def test_dynamic_smem_over_48k(torch, mod):
    n = 150 * 1024 // 4
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    mod["big_smem"](out, n, grid=1, block=256, smem=n * 4, sync=True)
    assert out.item() == n
    assert mod["big_smem"].attributes.max_dynamic_shared_size_bytes >= n * 4


def test_cluster_launch(torch, mod):
    if not rt.device_info().cluster_launch:
        pytest.skip("device has no thread block clusters")
    out = torch.full((16,), 99, dtype=torch.int32, device="cuda")
    mod["cluster_ids"](out, grid=8, block=32, cluster=2, sync=True)
    pairs = out.view(8, 2).cpu().tolist()
    assert pairs == [[b % 2, b // 2] for b in range(8)]  # grid counts blocks; 4 clusters of 2


def test_given_stream_and_current_stream(torch, mod):
    n = 4096
    x = torch.ones(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    mod["axpy"](y, x, 3.0, n, grid=n // 256, block=256, stream=s)
    s.synchronize()
    assert torch.all(y == 3.0)
    with torch.cuda.stream(s):
        mod["axpy"](y, x, 1.0, n, grid=n // 256, block=256)  # on torch's current stream, which is s now
    s.synchronize()
    assert torch.all(y == 4.0)


def test_argument_errors(torch, mod):
    n = 16
    y = torch.zeros(n, device="cuda")
    k = mod["axpy"]
    with pytest.raises(ValueError, match=r"argument 1 \(const float\* __restrict__ x\): tensor is on cpu"):
        k(y, torch.zeros(n), 1.0, n, grid=1, block=32)
    with pytest.raises(TypeError, match=r"tensor dtype is torch.float16, expected torch.float32"):
        k(y, torch.zeros(n, dtype=torch.float16, device="cuda"), 1.0, n, grid=1, block=32)
    with pytest.raises(TypeError, match=r"argument 3 \(i32 n\): expected an integer, got float"):
        k(y, y, 1.0, 16.0, grid=1, block=32)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        k(y, y, 1.0, grid=1, block=32)
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="tensor is on cuda:1 but the kernel launches on cuda:0"):
            k(y, torch.zeros(n, device="cuda:1"), 1.0, n, grid=1, block=32)


def test_launch_failure_names_kernel_and_config(torch, mod):
    out = torch.zeros(256, dtype=torch.int32, device="cuda")
    with pytest.raises(rt.LaunchError) as ei:
        mod["bounded"](out, grid=1, block=256)
    assert ei.value.kernel == "bounded" and "block=(256, 1, 1)" in str(ei.value)
    assert "at most 128" in str(ei.value)
    mod["bounded"](out, grid=1, block=128, sync=True)  # the context is still healthy
    assert out[:128].cpu().tolist() == list(range(128))


def test_wgmma_kernel_runs_on_the_default_arch(torch, mod):
    out = torch.zeros(128, dtype=torch.int32, device="cuda")
    mod["wgmma_fence"](out, grid=1, block=128, sync=True)
    assert out.sum().item() == 128


def test_resources_and_attributes_agree(mod):
    k = mod["axpy"]
    assert k.resources.registers == k.attributes.num_regs


def test_kernel_fault_raises_with_kernel_name(tmp_path):
    # A fault poisons the CUDA context, so it happens in a child process.
    script = textwrap.dedent(
        """
        import torch, tilecraft.runtime as rt
        src = 'extern "C" __global__ void faulty(int* p) { p[threadIdx.x] = 1; }'
        k = rt.compile(src).kernel("faulty")
        torch.zeros(1, device="cuda")
        try:
            k(16, grid=2, block=64, sync=True)
        except rt.LaunchError as e:
            print("LAUNCH_ERROR", e.kernel, e.code)
            print(e)
        """
    )
    env = dict(os.environ, TILECRAFT_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert "LAUNCH_ERROR faulty CUDA_ERROR_ILLEGAL_ADDRESS" in r.stdout, r.stdout + r.stderr
    assert "grid=(2, 1, 1) block=(64, 1, 1)" in r.stdout


def test_doctor_runs_the_test_kernel(capsys):
    from tilecraft.runtime import doctor

    assert doctor.run() == 0
    assert "test launch            ok" in capsys.readouterr().out
