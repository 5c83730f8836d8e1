// atoms.cuh: the instructions behind tilecraft.atoms, as thin inline-PTX wrappers.
//
// Each Python atom (tilecraft/atoms) names the wrapper that issues it in its `cxx` field; which
// thread holds which element is the atom's layouts' business, not this header's. Like
// tilecraft.cuh (which it includes, and whose cp_async_16 / ldmatrix_x4 / fences it keeps), no CUDA
// or C++ standard headers: fragments are passed as 32-bit registers (two 16-bit or four 8-bit
// elements each, packed as the PTX ISA's fragment tables say) and shared-memory operands as
// 32-bit shared-window addresses (tc::smem_u32).
#pragma once

#include <tilecraft/tilecraft.cuh>

namespace tc {

// ------------------------------------------------------------------ 16-bit floats and epilogue math
// Storage types (cuda_fp16.h would cost ~1 s of NVRTC front end per kernel): kernels move them as
// bits (copies, ldmatrix, mma.sync operands) and compute in f32 through these conversions.
struct alignas(2) f16 { u16 bits; };
struct alignas(2) bf16 { u16 bits; };

TC_DEVICE f32 to_f32(f16 h) {
    f32 r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h.bits));
    return r;
}
TC_DEVICE f32 to_f32(bf16 h) { return __uint_as_float(static_cast<u32>(h.bits) << 16); }
TC_DEVICE f32 to_f32(f32 x) { return x; }
TC_DEVICE f16 to_f16(f32 x) {
    f16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
    return r;
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
TC_DEVICE bf16 to_bf16(f32 x) {
    bf16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
    return r;
}
#endif

// Activations of GEMM epilogues, in f32. gelu is the erf form (torch's default), silu x*sigmoid(x).
TC_DEVICE f32 relu(f32 x) { return fmaxf(x, 0.0f); }
TC_DEVICE f32 gelu(f32 x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
TC_DEVICE f32 silu(f32 x) { return x / (1.0f + __expf(-x)); }

// ------------------------------------------------------------------ universal (vectorized) copies
// One thread moves 1..16 contiguous bytes with one load and one store; both addresses must be
// aligned to the width (the layouts guarantee it when they vectorize).
struct alignas(8) b64_t { u32 x, y; };
struct alignas(16) b128_t { u32 x, y, z, w; };

TC_DEVICE void copy_b8(const void* src, void* dst) { *static_cast<u8*>(dst) = *static_cast<const u8*>(src); }
TC_DEVICE void copy_b16(const void* src, void* dst) { *static_cast<u16*>(dst) = *static_cast<const u16*>(src); }
TC_DEVICE void copy_b32(const void* src, void* dst) { *static_cast<u32*>(dst) = *static_cast<const u32*>(src); }
TC_DEVICE void copy_b64(const void* src, void* dst) { *static_cast<b64_t*>(dst) = *static_cast<const b64_t*>(src); }
TC_DEVICE void copy_b128(const void* src, void* dst) {
    *static_cast<b128_t*>(dst) = *static_cast<const b128_t*>(src);
}

// ------------------------------------------------------------------ cp.async (sm80): global -> shared
// .ca caches in L1 (4, 8 or 16 bytes), .cg only in L2 (16 bytes). The _zfill forms copy src_bytes
// (0 for a false predicate) and zero-fill the rest: how a ragged tile edge is guarded.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TC_CP_ASYNC(NAME, LEVEL, N)                                                                     \
    TC_DEVICE void NAME(u32 smem_addr, const void* gmem) {                                             \
        asm volatile("cp.async." LEVEL ".shared.global [%0], [%1], " #N ";" ::"r"(smem_addr), "l"(gmem) \
                     : "memory");                                                                      \
    }                                                                                                  \
    TC_DEVICE void NAME##_zfill(u32 smem_addr, const void* gmem, u32 src_bytes) {                      \
        asm volatile("cp.async." LEVEL ".shared.global [%0], [%1], " #N ", %2;" ::"r"(smem_addr),       \
                     "l"(gmem), "r"(src_bytes)                                                         \
                     : "memory");                                                                      \
    }
TC_CP_ASYNC(cp_async_ca_4, "ca", 4)
TC_CP_ASYNC(cp_async_ca_8, "ca", 8)
TC_CP_ASYNC(cp_async_ca_16, "ca", 16)
TC_CP_ASYNC(cp_async_cg_16, "cg", 16)
#undef TC_CP_ASYNC
#endif

// ------------------------------------------------------------------ ldmatrix (sm75): shared -> registers
// Threads 8i..8i+7 give the row addresses of matrix i (16 bytes each); thread t receives 32 bits of
// every matrix: row t/4, elements 2(t%4) and 2(t%4)+1 (with .trans: column t/4, rows 2(t%4), +1).
TC_DEVICE void ldmatrix_x1(u32 smem_addr, u32& r0) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(smem_addr));
}
TC_DEVICE void ldmatrix_x2(u32 smem_addr, u32& r0, u32& r1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(smem_addr));
}
TC_DEVICE void ldmatrix_x1_trans(u32 smem_addr, u32& r0) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(smem_addr));
}
TC_DEVICE void ldmatrix_x2_trans(u32 smem_addr, u32& r0, u32& r1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r0), "=r"(r1)
                 : "r"(smem_addr));
}
TC_DEVICE void ldmatrix_x4_trans(u32 smem_addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
}

// ------------------------------------------------------------------ stmatrix (sm90): registers -> shared
// ldmatrix in reverse: the same thread <-> element assignment, written to the row addresses.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
TC_DEVICE void stmatrix_x1(u32 smem_addr, u32 r0) {
    asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(smem_addr), "r"(r0) : "memory");
}
TC_DEVICE void stmatrix_x2(u32 smem_addr, u32 r0, u32 r1) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(smem_addr), "r"(r0), "r"(r1)
                 : "memory");
}
TC_DEVICE void stmatrix_x4(u32 smem_addr, u32 r0, u32 r1, u32 r2, u32 r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
TC_DEVICE void stmatrix_x1_trans(u32 smem_addr, u32 r0) {
    asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" ::"r"(smem_addr), "r"(r0) : "memory");
}
TC_DEVICE void stmatrix_x2_trans(u32 smem_addr, u32 r0, u32 r1) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(smem_addr), "r"(r0),
                 "r"(r1)
                 : "memory");
}
TC_DEVICE void stmatrix_x4_trans(u32 smem_addr, u32 r0, u32 r1, u32 r2, u32 r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
#endif

// ------------------------------------------------------------------ mma.sync (sm80 / sm89)
// d = a * b + c for one warp; A row-major (M×K), B column-major (K×N), as the .row.col forms require.
// a: 4 registers, b: 2 registers, c/d: 4 accumulators (2 packed f16x2 registers for f16 accumulation).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TC_MMA_F32(NAME, SHAPE_TYPES)                                                                       \
    TC_DEVICE void NAME(f32* d, const u32* a, const u32* b, const f32* c) {                                \
        asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "     \
                     "{%10, %11, %12, %13};"                                                               \
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                      \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), \
                       "f"(c[2]), "f"(c[3]));                                                              \
    }
TC_MMA_F32(mma_m16n8k16_f32_f16, "m16n8k16.row.col.f32.f16.f16.f32")
TC_MMA_F32(mma_m16n8k16_f32_bf16, "m16n8k16.row.col.f32.bf16.bf16.f32")
TC_MMA_F32(mma_m16n8k8_f32_tf32, "m16n8k8.row.col.f32.tf32.tf32.f32")
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
TC_MMA_F32(mma_m16n8k32_f32_e4m3, "m16n8k32.row.col.f32.e4m3.e4m3.f32")
#endif
#undef TC_MMA_F32

TC_DEVICE void mma_m16n8k16_f16_f16(u32* d, const u32* a, const u32* b, const u32* c) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

TC_DEVICE void mma_m16n8k32_s32_s8(i32* d, const u32* a, const u32* b, const i32* c) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]),
                   "r"(c[3]));
}
#endif

// ------------------------------------------------------------------ flags and semaphores
// One thread's halves of a hand-off through a global flag: spin until *flag == value with acquire loads;
// store value with release semantics, so a waiter that sees it also sees the writes ordered before it.
// A group smaller than the CTA (a warpgroup) meets at its own named barrier around them.
TC_DEVICE void flag_wait(const int* flag, int value) {
    int v;
    do {
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } while (v != value);
}
TC_DEVICE void flag_release(int* flag, int value) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
// A counting flag, for many groups meeting at one: each adds value with release semantics; a waiter spins
// until the count reaches value (acquire loads); flag_count_reset adds 1 (relaxed) and the group whose add
// brings the count to `total` puts it back to 0 (every other group has passed its wait by then).
TC_DEVICE void flag_add_release(int* flag, int value) {
    asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
TC_DEVICE void flag_wait_at_least(const int* flag, int value) {
    int v;
    do {
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } while (v < value);
}
TC_DEVICE void flag_count_reset(int* flag, int total) {
    int old;
    asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(flag) : "memory");
    if (old == total - 1) *flag = 0;
}

// A work queue's ticket: add value to *counter and return what it held (relaxed: the ticket orders no
// data). The value arrives when first used, so a claim made early hides the atomic's round trip.
TC_DEVICE int atomic_add_relaxed(int* counter, int value) {
    int old;
    asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(value) : "memory");
    return old;
}

// CUTLASS's Semaphore (serial split-K), the whole-CTA form: thread 0 waits for the flag, then the CTA meets
// at a barrier; release: a barrier (the CTA's writes are issued), then thread 0 stores the next value.
TC_DEVICE void semaphore_wait(const int* flag, int value) {
    if (threadIdx.x == 0) flag_wait(flag, value);
    __syncthreads();
}
TC_DEVICE void semaphore_release(int* flag, int value) {
    __syncthreads();
    if (threadIdx.x == 0) flag_release(flag, value);
}

// Split-K's "the last CTA finishes": every CTA of a group counts itself in at *counter once its writes are issued;
// the CTA whose add brings the count to `total` gets true in every thread and puts the counter back to 0 for the
// next launch. One fence per CTA, not per thread (the pattern of a grid-wide barrier): the first barrier orders
// every thread's writes before thread 0's acq_rel atomic, whose release is cumulative, so they are visible at gpu
// scope before the count is; in the last CTA the atomic's acquire and the second barrier order the count before
// every thread's loads of the others' writes (ld_cg, or relaxed gpu-scope loads: L1 is not coherent).
TC_DEVICE bool cta_arrive_last(int* counter, int total) {
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        int old;
        asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
        last = old == total - 1;
        if (last) *counter = 0;
    }
    __syncthreads();
    return last != 0;
}
TC_DEVICE float ld_cg(const float* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}

// ------------------------------------------------------------------ wgmma ordering (sm90a)
// The warpgroup MMAs themselves come with issue 8; these order them against register and
// shared-memory traffic: fence before the first wgmma that reads registers written since, commit
// the issued wgmmas as a group, and wait until at most N groups are pending.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
TC_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TC_DEVICE void wgmma_commit_group() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
TC_DEVICE void wgmma_wait_group() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
#endif
// Pin a register operand's value here: the compiler may not move the arithmetic that defines it past
// this point (after a wgmma.fence it would sit inside the wgmma pipeline, which ptxas then
// serializes), nor reads of it above. No instruction results.
TC_DEVICE void fence_operand(u32& r) { asm volatile("" : "+r"(r)::"memory"); }
TC_DEVICE void fence_operand(f32& r) { asm volatile("" : "+f"(r)::"memory"); }

}  // namespace tc
