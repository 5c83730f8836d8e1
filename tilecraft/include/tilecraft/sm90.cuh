// sm90.cuh: Hopper's asynchronous machinery as thin inline-PTX wrappers (issue 8's atoms).
//
// mbarriers, TMA (cp.async.bulk.tensor) loads with and without cluster multicast and stores, the
// proxy and mbarrier-init fences, setmaxnreg, cluster ranks/barriers/mapa, and (from the generated
// sm90_wgmma.cuh) the warpgroup MMAs. stmatrix, the wgmma fences and elect.sync / cluster_sync /
// fence_proxy_async_shared come from atoms.cuh and tilecraft.cuh, included here.
//
// Conventions, as in atoms.cuh: no CUDA or C++ standard headers; shared-memory operands are 32-bit
// shared-window addresses (tc::smem_u32), tensor maps are pointers to `const __grid_constant__
// CUtensorMap` kernel parameters, TMA coordinates are in elements, innermost dimension first (the
// order the map was encoded in; tilecraft.runtime.tma computes both).
//
// TMA and mbarriers need sm_90; wgmma and setmaxnreg need the architecture-specific sm_90a (ptxas
// rejects them for sm_90 with an error naming the instruction).
#pragma once

#include <tilecraft/atoms.cuh>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "tilecraft/sm90.cuh: TMA, mbarrier and wgmma need a Hopper target; compile with arch='sm_90a'"
#endif

namespace tc {

// ------------------------------------------------------------------ mbarrier (shared::cta, 64-bit)
// A barrier completes a phase when `count` arrivals have happened and every byte announced through
// expect_tx has landed; waiters name the phase by its parity (0 for the first, then 1, 0, ...).

TC_DEVICE void mbarrier_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initializations of this thread visible to the async proxy (TMA's complete_tx) and to
// the other CTAs of the cluster; follow it with a CTA (or cluster) barrier before any use.
TC_DEVICE void fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

TC_DEVICE void mbarrier_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrive on the barrier at the same shared-memory offset in CTA `cta_rank` of the cluster: how a
// consumer tells every producer CTA of a multicast that its slot is free again. The arrive keeps the
// default .release.cta semantics: what it orders is this warpgroup's reads of the slot (wgmma, already
// waited for) before the producer's TMA overwrites it. `.release.cluster` would compile to
// MEMBAR.ALL.GPU before every arrive, which waits for the thread's outstanding global stores (the
// epilogue's) and measured twice as slow a GEMM with 2x1 clusters on an H100.
TC_DEVICE void mbarrier_arrive_cluster(u32 bar, u32 cta_rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(bar),
        "r"(cta_rank)
        : "memory");
}

// Arrive once and announce `bytes` more transaction bytes for the current phase (the producer's
// call before issuing the TMA loads that complete on this barrier).
TC_DEVICE void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// Announce bytes without arriving (several loads of one phase issued by different threads).
TC_DEVICE void mbarrier_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// True once the phase with this parity has completed. try_wait (not test_wait) lets the hardware
// suspend the thread for a while before answering, so a spin on it does not hammer the barrier.
TC_DEVICE bool mbarrier_try_wait_parity(u32 bar, u32 parity) {
    u32 done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done != 0;
}

// Block until the phase with this parity has completed.
TC_DEVICE void mbarrier_wait_parity(u32 bar, u32 parity) {
    while (!mbarrier_try_wait_parity(bar, parity)) {
    }
}

// ------------------------------------------------------------------ TMA: global -> shared
// One thread issues the copy of a whole box; it lands in shared memory (swizzled as the map says)
// and completes `bytes` of the mbarrier's transaction count. The .shared::cluster destination with
// a CTA-local address is the form sm_90 accepts for a CTA's own shared memory.

// ------------------------------------------------------------------ programmatic dependent launch
// A kernel launched with the programmatic-stream-serialization attribute may start while the stream's
// previous kernel still runs (once all of that kernel's CTAs have executed launch_dependents, or exited).
// griddep_wait blocks until the previous kernel has completed and its memory is visible; nothing the
// previous kernel reads or writes may be touched before it. Without the attribute both are no-ops.

TC_DEVICE void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
TC_DEVICE void griddep_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// Ask L2 to fetch `bytes` (a multiple of 16) from global address `p` (16-byte aligned); a hint, no
// completion to wait for, no registers held.
TC_DEVICE void prefetch_l2_bulk(const void* p, u32 bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

TC_DEVICE u64 tmap_u64(const CUtensorMap* map) { return reinterpret_cast<u64>(map); }

// Fetch the descriptor into the TMA unit's cache ahead of the first copy.
TC_DEVICE void tma_prefetch_descriptor(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(tmap_u64(map)) : "memory");
}

TC_DEVICE void tma_load_1d(u32 dst, const CUtensorMap* map, u32 bar, i32 c0) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                 ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "r"(c0)
                 : "memory");
}
TC_DEVICE void tma_load_2d(u32 dst, const CUtensorMap* map, u32 bar, i32 c0, i32 c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
TC_DEVICE void tma_load_3d(u32 dst, const CUtensorMap* map, u32 bar, i32 c0, i32 c1, i32 c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
                 "[%2];" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
TC_DEVICE void tma_load_4d(u32 dst, const CUtensorMap* map, u32 bar, i32 c0, i32 c1, i32 c2, i32 c3) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
                 "%6}], [%2];" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}
TC_DEVICE void tma_load_5d(u32 dst, const CUtensorMap* map, u32 bar, i32 c0, i32 c1, i32 c2, i32 c3, i32 c4) {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
                 "%6, %7}], [%2];" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

// Ask L2 for a box (no shared memory, no barrier: a hint, which may run before griddepcontrol.wait).
TC_DEVICE void tma_prefetch_1d(const CUtensorMap* map, i32 c0) {
    asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%0, {%1}];" ::"l"(tmap_u64(map)), "r"(c0)
                 : "memory");
}
TC_DEVICE void tma_prefetch_2d(const CUtensorMap* map, i32 c0, i32 c1) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(tmap_u64(map)), "r"(c0),
                 "r"(c1) : "memory");
}
TC_DEVICE void tma_prefetch_3d(const CUtensorMap* map, i32 c0, i32 c1, i32 c2) {
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(tmap_u64(map)), "r"(c0),
                 "r"(c1), "r"(c2) : "memory");
}
TC_DEVICE void tma_prefetch_4d(const CUtensorMap* map, i32 c0, i32 c1, i32 c2, i32 c3) {
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];" ::"l"(tmap_u64(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
TC_DEVICE void tma_prefetch_5d(const CUtensorMap* map, i32 c0, i32 c1, i32 c2, i32 c3, i32 c4) {
    asm volatile("cp.async.bulk.prefetch.tensor.5d.L2.global.tile [%0, {%1, %2, %3, %4, %5}];" ::"l"(tmap_u64(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}

// Multicast: the box lands at the same offset `dst` in every CTA whose bit is set in `cta_mask`
// (bit i = cluster CTA rank i), and completes bytes on the barrier at offset `bar` in each of them.
// Each destination CTA must have announced the bytes it will receive on its own barrier.
TC_DEVICE void tma_load_multicast_1d(u32 dst, const CUtensorMap* map, u32 bar, u16 cta_mask, i32 c0) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%4}], [%2], %3;" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "h"(cta_mask), "r"(c0)
                 : "memory");
}
TC_DEVICE void tma_load_multicast_2d(u32 dst, const CUtensorMap* map, u32 bar, u16 cta_mask, i32 c0, i32 c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "h"(cta_mask), "r"(c0),
                 "r"(c1)
                 : "memory");
}
TC_DEVICE void tma_load_multicast_3d(u32 dst, const CUtensorMap* map, u32 bar, u16 cta_mask, i32 c0, i32 c1, i32 c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "h"(cta_mask),
                 "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
TC_DEVICE void tma_load_multicast_4d(u32 dst, const CUtensorMap* map, u32 bar, u16 cta_mask, i32 c0, i32 c1, i32 c2,
                                     i32 c3) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar), "h"(cta_mask),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}
TC_DEVICE void tma_load_multicast_5d(u32 dst, const CUtensorMap* map, u32 bar, u16 cta_mask, i32 c0, i32 c1, i32 c2,
                                     i32 c3, i32 c4) {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;" ::"r"(dst), "l"(tmap_u64(map)), "r"(bar),
                 "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

// ------------------------------------------------------------------ TMA: shared -> global
// The box at `src` (written by ordinary stores: fence_proxy_async_shared() in each writing thread,
// then a barrier, before the issuing thread stores) goes to the map's box at the coordinates.
// Stores are tracked in bulk groups: commit, then wait until the shared memory may be reused.

TC_DEVICE void tma_store_1d(const CUtensorMap* map, u32 src, i32 c0) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(tmap_u64(map)),
                 "r"(src), "r"(c0)
                 : "memory");
}
TC_DEVICE void tma_store_2d(const CUtensorMap* map, u32 src, i32 c0, i32 c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(tmap_u64(map)),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
TC_DEVICE void tma_store_3d(const CUtensorMap* map, u32 src, i32 c0, i32 c1, i32 c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                     tmap_u64(map)),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
TC_DEVICE void tma_store_4d(const CUtensorMap* map, u32 src, i32 c0, i32 c1, i32 c2, i32 c3) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
                     tmap_u64(map)),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}
TC_DEVICE void tma_store_5d(const CUtensorMap* map, u32 src, i32 c0, i32 c1, i32 c2, i32 c3, i32 c4) {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::"l"(
                     tmap_u64(map)),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

TC_DEVICE void tma_store_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most N committed store groups still read their shared memory (it may be reused).
template <int N>
TC_DEVICE void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Wait until at most N committed store groups are incomplete (their writes are done).
template <int N>
TC_DEVICE void tma_store_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// ------------------------------------------------------------------ register reallocation (sm90a)
// A warpgroup gives registers back (producers) or takes them (consumers); N per thread, a multiple
// of 8 in [24, 256]. Only honored when the kernel has a register cap at entry
// (__launch_bounds__(threads, 1)) and each warpgroup's role is one branch of an if/else.
template <u32 N>
TC_DEVICE void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <u32 N>
TC_DEVICE void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// ------------------------------------------------------------------ wgmma descriptors, warpgroup roles
// A descriptor whose fields (leading/stride byte offsets, swizzle mode, and the tile's static start
// within its buffer, all encoded) come from the layout at trace time, plus the buffer's runtime
// shared-window address in 16-byte units (addresses stay below 256 KB, so the 14-bit field cannot carry).
TC_DEVICE u64 gmma_desc(u32 smem_addr, u64 fields) { return fields + ((smem_addr & 0x3FFFFu) >> 4); }

// threadIdx.x / 128 broadcast from lane 0, so that the compiler knows it is warp-uniform (branches on a
// warpgroup's role must be, for setmaxnreg and wgmma).
TC_DEVICE int warpgroup_index() { return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0); }

// ------------------------------------------------------------------ clusters
// cluster_ctarank() and cluster_sync() (arrive + wait) are in tilecraft.cuh.

TC_DEVICE u32 cluster_nctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

// arrive + wait split, so that independent work can overlap the cluster barrier. The default
// arrive releases this thread's prior memory operations to the cluster; the relaxed one does not
// (cheaper, for pure execution sync such as "every CTA has started").
TC_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;" ::: "memory"); }
TC_DEVICE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
TC_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// A tile queue's hand-off to CTA `cta_rank` of the cluster: store `value` into its copy of `slot`, then arrive
// on its copy of the slot's barrier with release at cluster scope, so that a reader that waits on that barrier
// with acquire at cluster scope (mbarrier_wait_parity_cluster) reads the value. Once per tile: the release's
// MEMBAR costs nothing there.
TC_DEVICE void queue_put_cluster(u32 slot, u32 bar, int value, u32 cta_rank) {
    asm volatile(
        "{\n"
        ".reg .b32 rslot, rbar;\n"
        "mapa.shared::cluster.u32 rslot, %0, %3;\n"
        "mapa.shared::cluster.u32 rbar, %1, %3;\n"
        "st.shared::cluster.s32 [rslot], %2;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [rbar];\n"
        "}\n" ::"r"(slot),
        "r"(bar), "r"(value), "r"(cta_rank)
        : "memory");
}

// mbarrier_wait_parity with acquire at cluster scope: what a peer CTA stored before its release-cluster arrive
// (queue_put_cluster) is visible after it.
TC_DEVICE void mbarrier_wait_parity_cluster(u32 bar, u32 parity) {
    u32 done;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// The shared::cluster address of the same shared-memory offset in CTA `cta_rank` of the cluster.
TC_DEVICE u32 mapa_shared(u32 smem_addr, u32 cta_rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr), "r"(cta_rank));
    return r;
}

// The generic address of the same shared-memory location as `p` in CTA `cta_rank` of the cluster
// (distributed shared memory; cooperative groups' cluster.map_shared_rank): ordinary loads and stores
// through it reach that CTA's shared memory while the CTA runs (a cluster barrier orders them).
template <class T>
TC_DEVICE T* map_shared_rank(T* p, u32 cta_rank) {
    u64 r;
    asm("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(reinterpret_cast<u64>(p)), "r"(cta_rank));
    return reinterpret_cast<T*>(r);
}

// Read 32 bits at a shared::cluster address (another CTA's shared memory, through mapa_shared).
TC_DEVICE u32 ld_shared_cluster_u32(u32 cluster_addr) {
    u32 r;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(r) : "r"(cluster_addr) : "memory");
    return r;
}

// ------------------------------------------------------------------ 16-bit stores of wgmma sums
// Two f32 as one register of 16-bit floats (lo in the low half), and a store of that register's low half.
// A wgmma kernel that stores its sums as single 16-bit values (a column-major or ragged D without TMA) keeps
// them in 32-bit registers this way: converted one at a time into 16-bit registers, ptxas serializes the
// kernel's wgmmas (C7514: "non wgmma instructions reading accumulator registers").
TC_DEVICE u32 pack_f16x2(f32 lo, f32 hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
TC_DEVICE u32 pack_bf16x2(f32 lo, f32 hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
TC_DEVICE void st_global_lo16(void* p, u32 v) { asm volatile("st.global.b16 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }

}  // namespace tc

#include <tilecraft/sm90_wgmma.cuh>
