"""Compiling to cubin without a GPU: archs, the a-target, errors, resource reports, the shipped header."""
from __future__ import annotations

import struct

import pytest

import tilecraft.runtime as rt

AXPY = r"""
#include <tilecraft/tilecraft.cuh>
extern "C" __global__ void axpy(float* __restrict__ y, const float* __restrict__ x, float a, tc::i32 n) {
    __shared__ float stage[256];
    tc::i32 i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) y[i] = a * stage[threadIdx.x] + y[i];
}
"""

WGMMA = r"""
extern "C" __global__ void fence_only() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
"""

HEADER_USE = r"""
#include <tilecraft/tilecraft.cuh>
extern "C" __global__ void uses_header(tc::u32* out, const tc::f32* in) {
    __shared__ __align__(16) tc::f32 buf[4 * 128];
    tc::cp_async_16_zfill(tc::smem_u32(buf + 4 * threadIdx.x), in + 4 * threadIdx.x, 16);
    tc::cp_async_commit();
    tc::cp_async_wait<0>();
    tc::bar_sync(0, blockDim.x);
    tc::u32 r0, r1, r2, r3;
    tc::ldmatrix_x4(tc::smem_u32(buf), r0, r1, r2, r3);
    tc::fence_acq_rel_cta();
    out[threadIdx.x] = r0 + r1 + r2 + r3 + tc::lane_id() + tc::warp_id() + tc::smid() + (tc::u32)tc::globaltimer();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (tc::elect_one_sync()) out[0] += tc::cluster_ctarank();
    tc::fence_proxy_async_shared();
    tc::cluster_sync();
#endif
}
"""


def sm_of(cubin: bytes) -> int:
    """The SM number an NVIDIA cubin's ELF header records (bits 8-15 of e_flags)."""
    assert cubin[:4] == b"\x7fELF" and cubin[4] == 2  # 64-bit ELF
    (flags,) = struct.unpack_from("<I", cubin, 48)
    return (flags >> 8) & 0xFF


@pytest.mark.parametrize("arch, sm", [("sm_80", 80), ("sm_90a", 90)])
def test_compiles_cubin_for_named_arch(cache_dir, arch, sm):
    mod = rt.compile(AXPY, arch=arch)
    assert mod.arch == arch
    assert sm_of(mod.cubin) == sm
    assert mod.kernel_names == ("axpy",)


def test_wgmma_needs_the_a_target(cache_dir):
    mod = rt.compile(WGMMA, arch="sm_90a")
    assert sm_of(mod.cubin) == 90
    with pytest.raises(rt.CompileError) as ei:
        rt.compile(WGMMA, arch="sm_90", name="wg.cu")
    e = ei.value
    assert "wgmma.fence" in e.log and "sm_90" in e.log
    assert e.lines == [3]
    msg = str(e)
    assert "wg.cu" in msg and "sm_90" in msg
    assert 'asm volatile("wgmma.fence.sync.aligned;' in msg  # the offending source line is quoted
    assert "    3 |" in msg


def test_front_end_error_quotes_log_and_line(cache_dir):
    src = "extern \"C\" __global__ void k(float* x) {\n    x[0] = undefined_thing;\n}\n"
    with pytest.raises(rt.CompileError) as ei:
        rt.compile(src, arch="sm_80", name="bad.cu")
    e = ei.value
    assert 'identifier "undefined_thing" is undefined' in e.log
    assert e.lines == [2]
    assert "    2 |     x[0] = undefined_thing;" in str(e)
    assert e.arch == "sm_80" and e.source == src


def test_failed_compile_is_not_cached(cache_dir):
    with pytest.raises(rt.CompileError):
        rt.compile("this is not C++", arch="sm_80")
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_resource_usage_from_ptxas(cache_dir):
    mod = rt.compile(AXPY, arch="sm_90a")
    res = mod.resources["axpy"]
    assert res.smem_bytes == 256 * 4
    assert 0 < res.registers <= 255
    assert not res.spills and res.stack_frame_bytes == 0
    assert mod.kernel("axpy").resources == res
    assert "Used" in mod.log and "registers" in mod.log


def test_spills_are_reported(cache_dir):
    src = r"""
    extern "C" __global__ void spilly(float* out, int k) {
        float acc[64];
        #pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = out[i * blockDim.x + threadIdx.x];
        #pragma unroll
        for (int r = 0; r < 8; ++r)
            #pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + r + k) & 63] + 1.f;
        #pragma unroll
        for (int i = 0; i < 64; ++i) out[i * blockDim.x + threadIdx.x] = acc[i];
    }
    """
    res = rt.compile(src, arch="sm_80", options={"max_register_count": 32}).resources["spilly"]
    assert res.registers <= 32
    assert res.stack_frame_bytes > 0


def test_shipped_header_compiles_for_ampere_and_hopper(cache_dir):
    assert (rt.include_dir() / "tilecraft" / "tilecraft.cuh").is_file()
    for arch in ("sm_80", "sm_90a"):
        mod = rt.compile(HEADER_USE, arch=arch)
        assert mod.resources["uses_header"].smem_bytes == 4 * 128 * 4


def test_options_are_passed_and_validated(cache_dir):
    src = 'extern "C" __global__ void k(int* o) { o[0] = VALUE; }'
    a = rt.compile(src, arch="sm_80", options={"define_macro": [("VALUE", "1")]})
    b = rt.compile(src, arch="sm_80", options={"define_macro": [("VALUE", "2")]})
    assert a.cubin != b.cubin and a.key != b.key
    with pytest.raises(ValueError, match="invalid NVRTC option"):
        rt.compile(src, arch="sm_80", options={"no_such_option": True})
    with pytest.raises(ValueError, match="arch="):
        rt.compile(src, options={"arch": "sm_80"})


@pytest.mark.parametrize(
    "given, canonical",
    [("sm_90a", "sm_90a"), ("90a", "sm_90a"), ("SM80", "sm_80"), (80, "sm_80"), ((9, 0), "sm_90a"), ((8, 6), "sm_86"),
     ("sm_100a", "sm_100a")],
)  # fmt: skip
def test_normalize_arch(given, canonical):
    assert rt.normalize_arch(given) == canonical


@pytest.mark.parametrize("bad", ["compute_90", "hopper", "sm_9", "", True])
def test_normalize_arch_rejects(bad):
    with pytest.raises(ValueError, match="not an SM architecture"):
        rt.normalize_arch(bad)


def test_unknown_kernel_and_cxx_kernel_errors(cache_dir):
    mod = rt.compile('extern "C" __global__ void a(int* x) {}\n__global__ void b(int* x) {}', arch="sm_80")
    with pytest.raises(KeyError, match="declared"):
        mod.kernel("nope")
    with pytest.raises(ValueError, match="extern"):
        mod.kernel("b")
    assert [p.ctype for p in mod.kernel("b", params=["int*"]).params] == ["int*"]


def test_compile_does_not_need_a_gpu_when_arch_given(cache_dir, monkeypatch):
    import tilecraft.runtime.device as device

    monkeypatch.setattr(device, "device_count", lambda: 0)
    assert rt.compile(AXPY, arch="sm_80").cubin
    with pytest.raises(RuntimeError, match="arch="):
        rt.compile(AXPY)


def test_ptxas_feature_error_points_at_the_asm_line(cache_dir):
    src = 'extern "C" __global__ void k(unsigned* o) {\n    unsigned r;\n    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));\n    o[0] = r;\n}\n'
    with pytest.raises(rt.CompileError) as ei:
        rt.compile(src, arch="sm_80")
    assert "%cluster_ctarank" in ei.value.log and ei.value.lines == [3]


def test_header_declares_cuda_tensor_map(cache_dir):
    src = '#include <tilecraft/tilecraft.cuh>\nextern "C" __global__ void k(const __grid_constant__ CUtensorMap m, int* o) {\n'
    src += "    static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == 64, \"layout\");\n    o[0] = 1;\n}\n"
    mod = rt.compile(src, arch="sm_90a")
    (m, _) = mod.kernel("k").params
    assert (m.ctype, m.size) == ("CUtensorMap", 128)


def test_sass_of_a_compiled_kernel():
    import tilecraft.runtime as rt

    if rt.find_tool("cuobjdump") is None and rt.find_tool("nvdisasm") is None:
        pytest.skip("no disassembler installed")
    tool = "cuobjdump" if rt.find_tool("cuobjdump") else "nvdisasm"
    mod = rt.compile('extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.f; }', arch="sm_90a")
    text = rt.sass(mod.cubin, tool)
    assert "FMUL" in text or "FADD" in text
    with pytest.raises(ValueError):
        rt.find_tool("objdump")


def test_compile_ptx_shows_the_instructions():
    import tilecraft.runtime as rt

    text = rt.compile_ptx('extern "C" __global__ void k() { asm volatile("wgmma.fence.sync.aligned;"); }',
                          arch="sm_90a")
    assert ".target sm_90a" in text and "wgmma.fence.sync.aligned" in text
    with pytest.raises(rt.CompileError):
        rt.compile_ptx('extern "C" __global__ void k() { undefined_thing(); }', arch="sm_80")
