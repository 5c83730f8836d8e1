// Host (g++) stand-ins for tilecraft/atoms.cuh, for tests/gemm/emulate.py: the same names and
// signatures, computed on the CPU by the std::threads that play CUDA threads.
//
// Warp-wide instructions (ldmatrix, mma.sync) are cooperative: each lane deposits its operands in its
// warp's scratch, the warp's 32 threads meet at a barrier, each lane computes its own results from
// everyone's operands, and they meet again before the scratch is reused. cp.async copies are queued
// per thread and land at cp.async.wait_group (the latest moment the hardware may land them), so a
// missing wait shows up as stale shared memory.
#pragma once
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#define TC_DEVICE inline

// from emulate.py's prelude: threadIdx, __syncthreads, tc_warp_barrier() (the calling thread's warp's
// barrier of 32) and tc_warp_scratch() (64 bytes per lane of the calling thread's warp)

#include <tilecraft/types.cuh>   // the device headers' fixed-width types (tilecraft/include)

namespace tc {

struct alignas(2) f16 { u16 bits; };
struct alignas(2) bf16 { u16 bits; };

inline f32 to_f32(f16 h) { _Float16 x; std::memcpy(&x, &h.bits, 2); return static_cast<f32>(x); }
inline f32 to_f32(bf16 h) { u32 u = static_cast<u32>(h.bits) << 16; f32 r; std::memcpy(&r, &u, 4); return r; }
inline f32 to_f32(f32 x) { return x; }
inline f16 to_f16(f32 x) { _Float16 h = static_cast<_Float16>(x); f16 r; std::memcpy(&r.bits, &h, 2); return r; }
inline bf16 to_bf16(f32 x) {
    u32 u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return bf16{static_cast<u16>((u >> 16) | 0x40)};
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return bf16{static_cast<u16>(u >> 16)};
}
inline f32 relu(f32 x) { return x > 0.0f ? x : 0.0f; }
inline f32 gelu(f32 x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
inline f32 silu(f32 x) { return x / (1.0f + std::exp(-x)); }

// Shared-memory "addresses" are host pointers here (generated code only passes them through).
typedef const void* smem_addr_t;
inline smem_addr_t smem_u32(const void* p) { return p; }

// ---------------------------------------------------------------- universal copies
template <int N>
inline void copy_bytes(const void* src, void* dst) { std::memcpy(dst, src, N); }
inline void copy_b8(const void* s, void* d) { copy_bytes<1>(s, d); }
inline void copy_b16(const void* s, void* d) { copy_bytes<2>(s, d); }
inline void copy_b32(const void* s, void* d) { copy_bytes<4>(s, d); }
inline void copy_b64(const void* s, void* d) { copy_bytes<8>(s, d); }
inline void copy_b128(const void* s, void* d) { copy_bytes<16>(s, d); }

// ---------------------------------------------------------------- cp.async: queued, landed at wait
struct PendingCopy { void* dst; const void* src; u32 n, src_bytes; };
inline thread_local std::vector<std::vector<PendingCopy>> cp_groups;  // committed groups, oldest first
inline thread_local std::vector<PendingCopy> cp_open;                 // not yet committed

inline void cp_async_n(smem_addr_t s, const void* g, u32 n, u32 src_bytes) {
    cp_open.push_back({const_cast<void*>(s), g, n, src_bytes});
}
inline void cp_async_ca_4(smem_addr_t s, const void* g) { cp_async_n(s, g, 4, 4); }
inline void cp_async_ca_8(smem_addr_t s, const void* g) { cp_async_n(s, g, 8, 8); }
inline void cp_async_ca_16(smem_addr_t s, const void* g) { cp_async_n(s, g, 16, 16); }
inline void cp_async_cg_16(smem_addr_t s, const void* g) { cp_async_n(s, g, 16, 16); }
inline void cp_async_ca_4_zfill(smem_addr_t s, const void* g, u32 b) { cp_async_n(s, g, 4, b); }
inline void cp_async_ca_8_zfill(smem_addr_t s, const void* g, u32 b) { cp_async_n(s, g, 8, b); }
inline void cp_async_ca_16_zfill(smem_addr_t s, const void* g, u32 b) { cp_async_n(s, g, 16, b); }
inline void cp_async_cg_16_zfill(smem_addr_t s, const void* g, u32 b) { cp_async_n(s, g, 16, b); }
inline void cp_async_commit() { cp_groups.push_back(std::move(cp_open)); cp_open.clear(); }
template <int N>
inline void cp_async_wait() {
    while (cp_groups.size() > static_cast<size_t>(N)) {
        for (const PendingCopy& c : cp_groups.front()) {
            std::memset(c.dst, 0, c.n);
            if (c.src_bytes) std::memcpy(c.dst, c.src, c.src_bytes);
        }
        cp_groups.erase(cp_groups.begin());
    }
}

// ---------------------------------------------------------------- ldmatrix
inline unsigned lane() { return threadIdx.x % 32; }

template <int NUM, bool TRANS>
inline void ldmatrix(smem_addr_t addr, u32* out) {
    const void** rows = static_cast<const void**>(tc_warp_scratch());
    rows[lane()] = addr;
    tc_warp_barrier()->arrive_and_wait();
    unsigned t = lane();
    for (int i = 0; i < NUM; ++i) {
        u16 v[2];
        for (int e = 0; e < 2; ++e) {
            // row t/4, elements 2(t%4)+e of matrix i; .trans: column t/4, rows 2(t%4)+e
            const u16* p = TRANS ? static_cast<const u16*>(rows[8 * i + 2 * (t % 4) + e]) + t / 4
                                 : static_cast<const u16*>(rows[8 * i + t / 4]) + 2 * (t % 4) + e;
            v[e] = *p;
        }
        out[i] = static_cast<u32>(v[0]) | (static_cast<u32>(v[1]) << 16);
    }
    tc_warp_barrier()->arrive_and_wait();
}
inline void ldmatrix_x1(smem_addr_t a, u32& r0) { u32 o[1]; ldmatrix<1, false>(a, o); r0 = o[0]; }
inline void ldmatrix_x2(smem_addr_t a, u32& r0, u32& r1) { u32 o[2]; ldmatrix<2, false>(a, o); r0 = o[0]; r1 = o[1]; }
inline void ldmatrix_x4(smem_addr_t a, u32& r0, u32& r1, u32& r2, u32& r3) {
    u32 o[4]; ldmatrix<4, false>(a, o); r0 = o[0]; r1 = o[1]; r2 = o[2]; r3 = o[3];
}
inline void ldmatrix_x1_trans(smem_addr_t a, u32& r0) { u32 o[1]; ldmatrix<1, true>(a, o); r0 = o[0]; }
inline void ldmatrix_x2_trans(smem_addr_t a, u32& r0, u32& r1) { u32 o[2]; ldmatrix<2, true>(a, o); r0 = o[0]; r1 = o[1]; }
inline void ldmatrix_x4_trans(smem_addr_t a, u32& r0, u32& r1, u32& r2, u32& r3) {
    u32 o[4]; ldmatrix<4, true>(a, o); r0 = o[0]; r1 = o[1]; r2 = o[2]; r3 = o[3];
}

// ---------------------------------------------------------------- mma.sync (PTX ISA fragment tables)
struct MmaLane { u32 a[4], b[2]; };

inline float half_of(u32 w, int hi, bool bf) {
    u16 h = static_cast<u16>(hi ? w >> 16 : w);
    return bf ? to_f32(bf16{h}) : to_f32(f16{h});
}

// After the warp's operands are gathered into A (16 x K) and B (K x 8): the warp meets again (the scratch
// may then be reused) and this lane's C rows g, g+8 x cols 2q, 2q+1 become d = A B + c.
template <int K>
inline void mma_lane_result(f32* d, const float (&A)[16][K], const float (&B)[K][8], const f32* c) {
    tc_warp_barrier()->arrive_and_wait();
    unsigned g = lane() / 4, q = lane() % 4;
    f32 out[4];
    for (int i = 0; i < 4; ++i) {
        unsigned row = g + 8 * (i >> 1), col = 2 * q + (i & 1);
        float acc = c[i];
        for (int k = 0; k < K; ++k) acc += A[row][k] * B[k][col];
        out[i] = acc;
    }
    for (int i = 0; i < 4; ++i) d[i] = out[i];
}

// m16n8k16, 16-bit A/B: lane (g = lane/4, q = lane%4) holds A rows g, g+8 x cols 2q.., 2q+8..; B cols g x
// rows 2q.., 2q+8..; C rows g, g+8 x cols 2q, 2q+1.
inline void mma_16816(f32* d, const u32* a, const u32* b, const f32* c, bool bf) {
    MmaLane* s = static_cast<MmaLane*>(tc_warp_scratch());
    s[lane()] = MmaLane{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
    tc_warp_barrier()->arrive_and_wait();
    float A[16][16], B[16][8];
    for (unsigned t = 0; t < 32; ++t) {
        unsigned g = t / 4, q = t % 4;
        for (int r = 0; r < 4; ++r)
            for (int e = 0; e < 2; ++e) A[g + 8 * (r & 1)][2 * q + e + 8 * (r >> 1)] = half_of(s[t].a[r], e, bf);
        for (int r = 0; r < 2; ++r)
            for (int e = 0; e < 2; ++e) B[2 * q + e + 8 * r][g] = half_of(s[t].b[r], e, bf);
    }
    mma_lane_result(d, A, B, c);
}
inline void mma_m16n8k16_f32_f16(f32* d, const u32* a, const u32* b, const f32* c) { mma_16816(d, a, b, c, false); }
inline void mma_m16n8k16_f32_bf16(f32* d, const u32* a, const u32* b, const f32* c) { mma_16816(d, a, b, c, true); }

// m16n8k8 tf32: A rows g, g+8 x cols q, q+4; B rows q, q+4 x col g (tf32 keeps 10 mantissa bits).
inline float tf32(u32 w) { w &= 0xffffe000u; float r; std::memcpy(&r, &w, 4); return r; }
inline void mma_m16n8k8_f32_tf32(f32* d, const u32* a, const u32* b, const f32* c) {
    MmaLane* s = static_cast<MmaLane*>(tc_warp_scratch());
    s[lane()] = MmaLane{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
    tc_warp_barrier()->arrive_and_wait();
    float A[16][8], B[8][8];
    for (unsigned t = 0; t < 32; ++t) {
        unsigned g = t / 4, q = t % 4;
        for (int r = 0; r < 4; ++r) A[g + 8 * (r & 1)][q + 4 * (r >> 1)] = tf32(s[t].a[r]);
        for (int r = 0; r < 2; ++r) B[q + 4 * r][g] = tf32(s[t].b[r]);
    }
    mma_lane_result(d, A, B, c);
}

// ---------------------------------------------------------------- semaphores (blocks run in order here)
inline void semaphore_wait(const int* flag, int value) {
    while (std::atomic_ref<int>(*const_cast<int*>(flag)).load() != value) {
    }
    __syncthreads();
}
inline void semaphore_release(int* flag, int value) {
    __syncthreads();
    if (threadIdx.x == 0) std::atomic_ref<int>(*flag).store(value);
}
inline bool cta_arrive_last(int* counter, int total) {
    static int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        const int old = std::atomic_ref<int>(*counter).fetch_add(1);
        last = old == total - 1;
        if (last) std::atomic_ref<int>(*counter).store(0);
    }
    __syncthreads();
    const bool mine = last != 0;
    __syncthreads();                 // everyone has read `last` before the next block's thread 0 writes it
    return mine;
}
inline float ld_cg(const float* p) { return *p; }
}  // namespace tc
