"""Raw CUDA test kernels of the sm90 primitives (they test sm90.cuh and runtime.tma, not a GEMM).

Compiled on the CPU by test_gpu_kernels_compile (so a GPU run never finds a typo) and launched by
test_sm90_gpu. Map coordinates arrive as int arrays, innermost first, from TmaEncodeArgs.coords.
"""
from __future__ import annotations

SOURCE = r"""
#include <tilecraft/sm90.cuh>

// The first 1024-byte boundary at or after `p`: swizzled TMA/wgmma tiles are aligned to their
// swizzle pattern (launch with 1024 bytes of slack).
__device__ __forceinline__ tc::u8* align_1024(tc::u8* p) {
    return p + ((1024u - (tc::smem_u32(p) & 1023u)) & 1023u);
}

__device__ __forceinline__ void tma_load(int rank, tc::u32 dst, const CUtensorMap* map, tc::u32 bar, const int* c) {
    switch (rank) {
        case 1: tc::tma_load_1d(dst, map, bar, c[0]); break;
        case 2: tc::tma_load_2d(dst, map, bar, c[0], c[1]); break;
        case 3: tc::tma_load_3d(dst, map, bar, c[0], c[1], c[2]); break;
        case 4: tc::tma_load_4d(dst, map, bar, c[0], c[1], c[2], c[3]); break;
        default: tc::tma_load_5d(dst, map, bar, c[0], c[1], c[2], c[3], c[4]); break;
    }
}

__device__ __forceinline__ void tma_load_multicast(int rank, tc::u32 dst, const CUtensorMap* map, tc::u32 bar,
                                                   tc::u16 mask, const int* c) {
    switch (rank) {
        case 1: tc::tma_load_multicast_1d(dst, map, bar, mask, c[0]); break;
        case 2: tc::tma_load_multicast_2d(dst, map, bar, mask, c[0], c[1]); break;
        case 3: tc::tma_load_multicast_3d(dst, map, bar, mask, c[0], c[1], c[2]); break;
        case 4: tc::tma_load_multicast_4d(dst, map, bar, mask, c[0], c[1], c[2], c[3]); break;
        default: tc::tma_load_multicast_5d(dst, map, bar, mask, c[0], c[1], c[2], c[3], c[4]); break;
    }
}

__device__ __forceinline__ void tma_store(int rank, const CUtensorMap* map, tc::u32 src, const int* c) {
    switch (rank) {
        case 1: tc::tma_store_1d(map, src, c[0]); break;
        case 2: tc::tma_store_2d(map, src, c[0], c[1]); break;
        case 3: tc::tma_store_3d(map, src, c[0], c[1], c[2]); break;
        case 4: tc::tma_store_4d(map, src, c[0], c[1], c[2], c[3]); break;
        default: tc::tma_store_5d(map, src, c[0], c[1], c[2], c[3], c[4]); break;
    }
}

__device__ __forceinline__ void init_barrier(tc::u32 bar) {
    if (threadIdx.x == 0) {
        tc::mbarrier_init(bar, 1);
        tc::fence_mbarrier_init();
    }
}

// One box of `map` into the 1024-aligned dynamic shared memory, landed: thread 0 issues the TMA load on
// a fresh mbarrier, every thread waits for it. Returns the tile.
__device__ tc::u8* tma_load_box(const CUtensorMap* map, tc::u32 bytes, int rank, const int* coords) {
    extern __shared__ tc::u8 dyn[];
    __shared__ __align__(8) tc::u64 bar_storage;
    tc::u8* tile = align_1024(dyn);
    const tc::u32 bar = tc::smem_u32(&bar_storage);
    init_barrier(bar);
    __syncthreads();
    if (threadIdx.x == 0) {
        tc::mbarrier_arrive_expect_tx(bar, bytes);
        tma_load(rank, tc::smem_u32(tile), map, bar, coords);
    }
    tc::mbarrier_wait_parity(bar, 0);
    return tile;
}

// (a) One box into (swizzled) shared memory, completing on an mbarrier; the raw shared-memory image
// goes back out so the host can read it through the layout.
extern "C" __global__ void tma_load_image(const __grid_constant__ CUtensorMap map, tc::u8* image, tc::u32 bytes,
                                          int rank, const int* coords) {
    if (threadIdx.x == 0) tc::tma_prefetch_descriptor(&map);
    tc::u8* tile = tma_load_box(&map, bytes, rank, coords);
    for (tc::u32 i = threadIdx.x; i < bytes; i += blockDim.x) image[i] = tile[i];
}

// (d) Load a box with TMA, negate every 16-bit element with ordinary stores (sign bit), and store the
// box with TMA through a second map: the proxy fence orders those stores before the copy reads.
extern "C" __global__ void tma_negate_roundtrip(const __grid_constant__ CUtensorMap src,
                                                const __grid_constant__ CUtensorMap dst, tc::u32 bytes, int rank,
                                                const int* coords) {
    tc::u8* tile = tma_load_box(&src, bytes, rank, coords);
    tc::u16* h = reinterpret_cast<tc::u16*>(tile);
    for (tc::u32 i = threadIdx.x; i < bytes / 2; i += blockDim.x) h[i] ^= 0x8000u;
    tc::fence_proxy_async_shared();
    __syncthreads();
    if (threadIdx.x == 0) {
        tma_store(rank, &dst, tc::smem_u32(tile), coords);
        tc::tma_store_commit_group();
        tc::tma_store_wait_read<0>();  // the tile may be reused (here: the CTA may exit)
        tc::tma_store_wait<0>();
    }
}

// (b) One warpgroup: A (64 x K) and B (128 x K) tiles by TMA, then K/16 wgmma m64n128k16 f16 -> f32
// with descriptors from make_gmma_desc (relative to the tile; the shared address is added here).
// coords: A's rank and 5 coordinates, then B's.
extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_m64n128_f16(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                  const tc::u64* desc_a, const tc::u64* desc_b, int kblocks, int b_mn_major, tc::u32 bytes_a,
                  tc::u32 bytes_b, const int* coords, float* out) {
    extern __shared__ tc::u8 dyn[];
    __shared__ __align__(8) tc::u64 bar_storage;
    tc::u8* tile_a = align_1024(dyn);
    tc::u8* tile_b = tile_a + ((bytes_a + 1023u) & ~1023u);
    const tc::u32 bar = tc::smem_u32(&bar_storage);
    init_barrier(bar);
    __syncthreads();
    if (threadIdx.x == 0) {
        tc::mbarrier_arrive_expect_tx(bar, bytes_a + bytes_b);
        tma_load(coords[0], tc::smem_u32(tile_a), &map_a, bar, coords + 1);
        tma_load(coords[6], tc::smem_u32(tile_b), &map_b, bar, coords + 7);
    }
    tc::mbarrier_wait_parity(bar, 0);
    const tc::u64 base_a = tc::smem_u32(tile_a) >> 4, base_b = tc::smem_u32(tile_b) >> 4;
    tc::f32 d[64];
    for (int i = 0; i < 64; ++i) d[i] = 0.f;
    tc::wgmma_fence();
    for (int kb = 0; kb < kblocks; ++kb) {
        const tc::u64 da = desc_a[kb] + base_a, db = desc_b[kb] + base_b;
        if (b_mn_major)
            tc::wgmma_m64n128k16_f32_f16_f16_ss<0, 1>(d, da, db, kb > 0);
        else
            tc::wgmma_m64n128k16_f32_f16_f16_ss<0, 0>(d, da, db, kb > 0);
    }
    tc::wgmma_commit_group();
    tc::wgmma_wait_group<0>();
    for (int i = 0; i < 64; ++i) out[64 * threadIdx.x + i] = d[i];
}

// (c) A cluster of CTAs: CTA r loads slice r of the tile and multicasts it to every CTA, so each
// receives the whole tile; each writes its image out. coords: 5 per CTA rank.
extern "C" __global__ void tma_multicast_image(const __grid_constant__ CUtensorMap map, tc::u8* images,
                                               tc::u32 tile_bytes, tc::u32 slice_bytes, int rank, const int* coords) {
    extern __shared__ tc::u8 dyn[];
    __shared__ __align__(8) tc::u64 bar_storage;
    tc::u8* tile = align_1024(dyn);
    const tc::u32 bar = tc::smem_u32(&bar_storage);
    const tc::u32 cta = tc::cluster_ctarank(), ncta = tc::cluster_nctarank();
    init_barrier(bar);
    tc::cluster_sync();  // every CTA's barrier is initialized before any multicast can complete on it
    if (threadIdx.x == 0) {
        tc::mbarrier_arrive_expect_tx(bar, tile_bytes);  // all slices land here, one from each CTA
        tma_load_multicast(rank, tc::smem_u32(tile) + cta * slice_bytes, &map, bar, (tc::u16)((1u << ncta) - 1),
                           coords + 5 * cta);
    }
    tc::mbarrier_wait_parity(bar, 0);
    tc::u8* image = images + (size_t)blockIdx.x * tile_bytes;
    for (tc::u32 i = threadIdx.x; i < tile_bytes; i += blockDim.x) image[i] = tile[i];
    tc::cluster_sync();  // no CTA leaves while a peer may still be reading its shared memory
}
"""
