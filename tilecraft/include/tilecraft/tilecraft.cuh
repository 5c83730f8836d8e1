// tilecraft.cuh: the few device helpers every generated kernel may use.
//
// Deliberately self-contained: no CUDA or C++ standard headers, so NVRTC's front end
// stays fast (~0.1 s per kernel instead of ~1 s with the CCCL headers). Everything
// here is fixed-width types and thin inline-PTX wrappers; the richer atoms (TMA, wgmma,
// mbarrier pipelines) build on these in later layers.
#pragma once

#define TC_DEVICE __device__ __forceinline__

// TMA descriptors are kernel parameters (`const __grid_constant__ CUtensorMap`). <cuda.h> declares
// the type but cannot be included under NVRTC (it needs the C library), so the same 128-byte,
// 64-byte-aligned layout is declared here, unless cuda.h was somehow included first.
#ifndef __cuda_cuda_h__
typedef struct CUtensorMap_st {
    alignas(64) unsigned long long opaque[16];
} CUtensorMap;
#endif

#include <tilecraft/types.cuh>   // i8 .. u64, f32, f64

namespace tc {
static_assert(sizeof(void*) == 8, "tilecraft assumes 64-bit device pointers");

// Special registers read through PTX: %laneid is exact even for irregular block shapes,
// where threadIdx.x % 32 is not.
TC_DEVICE u32 lane_id() {
    u32 r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}

TC_DEVICE u32 warp_id() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5; }

TC_DEVICE u32 smid() {
    u32 r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

TC_DEVICE u64 globaltimer() {
    u64 r;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(r));
    return r;
}

// Shared-memory instructions (cp.async, ldmatrix, mbarrier, wgmma descriptors) take a
// 32-bit shared-window address, not a generic pointer.
TC_DEVICE u32 smem_u32(const void* p) {
    return static_cast<u32>(__cvta_generic_to_shared(p));
}

TC_DEVICE void bar_sync(u32 id, u32 nthreads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

// Arrive at a named barrier without waiting (the waiters use bar_sync with the same thread count).
TC_DEVICE void bar_arrive(u32 id, u32 nthreads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

TC_DEVICE void fence_acq_rel_cta() { asm volatile("fence.acq_rel.cta;" ::: "memory"); }

// Ampere asynchronous copies, global -> shared, 16 bytes per thread, bypassing L1.
TC_DEVICE void cp_async_16(u32 smem_addr, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr), "l"(gmem) : "memory");
}

// src_bytes < 16 zero-fills the rest: the standard way to guard a ragged tile edge.
TC_DEVICE void cp_async_16_zfill(u32 smem_addr, const void* gmem, u32 src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes)
                 : "memory");
}

TC_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N>
TC_DEVICE void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

TC_DEVICE void ldmatrix_x4(u32 smem_addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Hopper: one elected lane of a full warp, and the proxy fence that orders generic-proxy
// shared-memory writes before TMA / wgmma reads them.
TC_DEVICE bool elect_one_sync() {
    u32 pred = 0;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "elect.sync _|p, 0xffffffff;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(pred));
    return pred != 0;
}

TC_DEVICE void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

TC_DEVICE u32 cluster_ctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

TC_DEVICE void cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}
#endif

}  // namespace tc
