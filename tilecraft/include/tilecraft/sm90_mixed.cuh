// sm90_mixed.cuh: the producer's dequantization of the Hopper mixed-input GEMM (tilecraft/gemm/sm90_mixed.py).
//
// A producer lane holds packed words in the small-M kernel's fragment order (tilecraft/quant/pack.py,
// layout v1): for one 16-row tile and one 16-k block, lane (g = lane / 4, q = lane % 4) has rows g and
// g + 8 at k 4q .. 4q + 3. wgmma reads W^T from shared memory as K-major rows, so a 16-byte store must
// hold 8 consecutive k of one row. Lanes q and q ^ 1 therefore swap halves: the even lane keeps row g
// (its k 4q .. 4q+3, the odd lane's 4q+4 .. 4q+7), the odd lane row g + 8. Then both convert with
// mixed.cuh's magic numbers (exact q - z), multiply by the row's scale in the 16-bit type (one
// rounding: the value is (q - z) * s rounded to nearest even, what dequantize(W).to(fp16/bf16) gives),
// and store 16 bytes.
//
// Row chunk order after the swap: offset e (0..7) of the 8 k values sits where mixed.cuh's converters
// expect A-fragment value e, so the converted registers are the chunk's (0,1), (4,5), (2,3), (6,7)
// pairs for int4 and (0,1), (2,3), (4,5), (6,7) for int8.
#pragma once

#include <tilecraft/mixed.cuh>
#include <tilecraft/sm90.cuh>

namespace tc {
namespace mixed90 {

TC_DEVICE u32 rotl(u32 w, u32 n) {
    u32 d;
    asm("shf.l.wrap.b32 %0, %1, %1, %2;" : "=r"(d) : "r"(w), "r"(n));
    return d;
}
TC_DEVICE u32 lop_keep(u32 a, u32 b, u32 keep) { return (a & keep) | (b & ~keep); }  // one LOP3
TC_DEVICE u32 hmul2(u32 a, u32 b) {
    u32 d;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
TC_DEVICE u32 bmul2(u32 a, u32 b) {
    u32 d;
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
TC_DEVICE void st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
// {h, h}: a 16-bit float in both halves of a register (a row's scale or zero point for every value)
TC_DEVICE u32 pair(f16 h) { return static_cast<u32>(h.bits) * 0x10001u; }
TC_DEVICE u32 pair(bf16 h) { return static_cast<u32>(h.bits) * 0x10001u; }
TC_DEVICE bool odd_lane() { return (threadIdx.x & 1u) != 0; }
// The words a lane converts, reordered in place so that store j converts k-block j ^ c (c = 2 h + g0,
// see block_of in sm90_mixed.py): bit 0 of c swaps blocks 2i and 2i + 1, bit 1 swaps blocks i and i + 2.
// int4: word b is block b; int8: block b is words 2 (b % 2), +1 of load b / 2 (loads 4 words apart).
TC_DEVICE void swap_if(bool p, u32& a, u32& b) {
    const u32 x = p ? b : a, y = p ? a : b;
    a = x;
    b = y;
}
template <typename T>
TC_DEVICE void blocks_xor4(T* w, u32 c) {  // int4: 4 words, one per block
    u32* v = reinterpret_cast<u32*>(w);
    swap_if(c & 1u, v[0], v[1]); swap_if(c & 1u, v[2], v[3]);
    swap_if(c & 2u, v[0], v[2]); swap_if(c & 2u, v[1], v[3]);
}
template <typename T>
TC_DEVICE void blocks_xor8(T* w, u32 c) {  // int8: 8 words, two loads of two blocks
    u32* v = reinterpret_cast<u32*>(w);
    swap_if(c & 1u, v[0], v[2]); swap_if(c & 1u, v[1], v[3]); swap_if(c & 1u, v[4], v[6]); swap_if(c & 1u, v[5], v[7]);
    swap_if(c & 2u, v[0], v[4]); swap_if(c & 2u, v[1], v[5]); swap_if(c & 2u, v[2], v[6]); swap_if(c & 2u, v[3], v[7]);
}
// int4: word w of this lane (nibble v / 2 + 4 (v % 2) holds A-fragment value v) for the k-block it
// converts, and `send`, its word of the k-block its partner converts in the same store (the two may
// differ). The even lane sends its word rotated right by 4 (the odd nibbles, row g + 8, move onto the
// even ones), the odd lane rotated left by 4; each keeps its own row's nibbles and takes the partner's
// of the same row. z2, s2: the row's zero point and scale as 16-bit pairs; dst: the chunk's
// shared-memory address.
template <bool BF16>
TC_DEVICE void u4_row_chunk(u32 w, u32 send, u32 z2, u32 s2, u32 dst) {
    const bool odd = odd_lane();
    const u32 sent = rotl(send, odd ? 4u : 28u);
    const u32 got = __shfl_xor_sync(0xffffffffu, sent, 1);
    const u32 x = lop_keep(w, got, odd ? 0xf0f0f0f0u : 0x0f0f0f0fu);
    u32 a[4];
    if (BF16) {
        mixed::dequant_u4_bf16(x, z2, a);
        st_shared_v4(dst, bmul2(a[0], s2), bmul2(a[2], s2), bmul2(a[1], s2), bmul2(a[3], s2));
    } else {
        mixed::dequant_u4_f16(x, z2, a);
        st_shared_v4(dst, hmul2(a[0], s2), hmul2(a[2], s2), hmul2(a[1], s2), hmul2(a[3], s2));
    }
}

// int8: words w0, w1 of the 16-k block this lane converts (value v in byte v % 4 of word v / 4; bytes
// 0, 1 row g and 2, 3 row g + 8 in each), p0, p1 of the block its partner converts. The lane keeps its
// row's four bytes and sends the other row's.
template <bool BF16>
TC_DEVICE void u8_row_chunk(u32 w0, u32 w1, u32 p0, u32 p1, u32 z2, u32 s2, u32 dst) {
    const bool odd = odd_lane();
    const u32 mine = mixed::prmt(w0, w1, odd ? 0x7632u : 0x5410u);
    const u32 sent = mixed::prmt(p0, p1, odd ? 0x5410u : 0x7632u);
    const u32 got = __shfl_xor_sync(0xffffffffu, sent, 1);
    const u32 lo = odd ? got : mine, hi = odd ? mine : got;           // k offsets 0..3, 4..7
    u32 a[4];
    if (BF16) {
        mixed::dequant_u8_bf16(lo, hi, z2, a);
        st_shared_v4(dst, bmul2(a[0], s2), bmul2(a[1], s2), bmul2(a[2], s2), bmul2(a[3], s2));
    } else {
        mixed::dequant_u8_f16(lo, hi, z2, a);
        st_shared_v4(dst, hmul2(a[0], s2), hmul2(a[1], s2), hmul2(a[2], s2), hmul2(a[3], s2));
    }
}

// The producer warp's share of a stage is written: make it visible to wgmma (the async proxy), then
// one lane arrives on the stage's `full` barrier for the warp.
TC_DEVICE void warp_arrive_full(u32 bar) {
    fence_proxy_async_shared();
    __syncwarp();
    if ((threadIdx.x & 31u) == 0) mbarrier_arrive(bar);
}

// ------------------------------------------------------------------ the weight as wgmma's register A
// (tilecraft/gemm/sm90_mixed_rs.py) The consumer lanes convert W themselves into wgmma's A fragment:
// lane (g, q) of warp w holds rows g, g + 8 of the warp's 16 at k 2q, 2q + 1, 2q + 8, 2q + 9 of each
// 16-k block (the m16n8k16 order, here with k in its natural order: x, wgmma's B, comes from shared
// memory as TMA wrote it). Layout v1 instead gives lane q the k 4q .. 4q + 3 (values 0..3: k 4q, 4q + 1;
// values 4..7: k 4q + 2, 4q + 3), so lane q takes its k 2q, 2q + 1 from lane q / 2 and its k 2q + 8,
// 2q + 9 from lane q / 2 + 2 (same g): the half of their word that holds them, values 0..3 for even q,
// 4..7 for odd q. The result is a layout-v1 word of natural k, which mixed.cuh's converters turn into
// the fragment; then one mul.rn per register by the row's scale (the same rounding as the producer's).
// s2: the scales of the lane's rows g (low half) and g + 8 (high); z2 likewise. SCALE = false leaves the
// exact q - z in the fragment (per-channel scales: the kernel scales the fp32 accumulators instead).
TC_DEVICE u32 src_lane_lo() { return (threadIdx.x & 28u) | ((threadIdx.x & 3u) >> 1); }  // (g, q / 2)

template <bool BF16>
TC_DEVICE void scale_frag(u32 s2, u32 (&a)[4]) {
    const u32 sg = mixed::prmt(s2, 0, 0x1010), sh = mixed::prmt(s2, 0, 0x3232);
    if (BF16) {
        a[0] = bmul2(a[0], sg); a[1] = bmul2(a[1], sh); a[2] = bmul2(a[2], sg); a[3] = bmul2(a[3], sh);
    } else {
        a[0] = hmul2(a[0], sg); a[1] = hmul2(a[1], sh); a[2] = hmul2(a[2], sg); a[3] = hmul2(a[3], sh);
    }
}

// int4: nibble v / 2 + 4 (v % 2) holds value v, so values 0..3 are bytes 0 and 2, values 4..7 bytes 1
// and 3; the new word takes those of the first source into bytes 0, 2 and of the second into 1, 3.
template <bool BF16, bool SCALE = true>
TC_DEVICE void u4_frag(u32 w, u32 z2, u32 s2, u32 (&a)[4]) {
    const u32 src = src_lane_lo();
    const u32 lo = __shfl_sync(0xffffffffu, w, src), hi = __shfl_sync(0xffffffffu, w, src + 2u);
    const u32 x = mixed::prmt(lo, hi, (threadIdx.x & 1u) ? 0x7351u : 0x6240u);
    if (BF16) mixed::dequant_u4_bf16(x, z2, a); else mixed::dequant_u4_f16(x, z2, a);
    if (SCALE) scale_frag<BF16>(s2, a);
}

// int8: value v is byte v % 4 of word v / 4, so a lane wants word (q % 2) of both sources. Source lane
// q' is read by one even and one odd lane of its quad, in different shuffles: in the first, even lanes
// read from q / 2 and odd lanes from q / 2 + 2, and a source sends w0 if q' < 2, else w1; the second
// swaps the roles.
// SYM (bf16, q = v + 128, z2 unused): the sources send their word's bytes spread, (g, k), (g + 8, k), (g, k + 1),
// (g + 8, k + 1), so that row g's pair lies in bits 0-7 and 16-23 and row g + 8's 8 bits higher, where
// mixed::s8x2_bf16 takes them (two LOP3s and a bf16 fma a pair instead of three PRMTs and two FADDs).
template <bool BF16, bool SCALE = true, bool SYM = false>
TC_DEVICE void u8_frag(u32 w0, u32 w1, u32 z2, u32 s2, u32 (&a)[4]) {
    const u32 q = threadIdx.x & 3u, odd = q & 1u, src = src_lane_lo();
    constexpr bool spread = BF16 && SYM;
    const u32 sel = q < 2u ? 0x3120u : 0x7564u;                          // (SYM: the bytes spread)
    const u32 first = spread ? mixed::prmt(w0, w1, sel) : (q < 2u ? w0 : w1);
    const u32 second = spread ? mixed::prmt(w1, w0, sel) : (q < 2u ? w1 : w0);
    const u32 r1 = __shfl_sync(0xffffffffu, first, odd ? src + 2u : src);
    const u32 r2 = __shfl_sync(0xffffffffu, second, odd ? src : src + 2u);
    const u32 lo = odd ? r2 : r1, hi = odd ? r1 : r2;
    if (spread) {
        const u32 e = mixed::kept(0x43004300u);
        a[0] = mixed::s8x2_bf16(lo, e);
        a[1] = mixed::s8x2_bf16(lo >> 8, e);
        a[2] = mixed::s8x2_bf16(hi, e);
        a[3] = mixed::s8x2_bf16(hi >> 8, e);
    } else if (BF16) {
        mixed::dequant_u8_bf16(lo, hi, z2, a);
    } else {
        mixed::dequant_u8_f16(lo, hi, z2, a);
    }
    if (SCALE) scale_frag<BF16>(s2, a);
}

}  // namespace mixed90
}  // namespace tc
