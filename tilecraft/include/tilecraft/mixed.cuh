// mixed.cuh: device helpers of the mixed-input GEMM (tilecraft/gemm/mixed.py).
//
// In-register conversion of packed int4 / int8 weights (tilecraft/quant/pack.py, layout v1) to the
// 16-bit A operand of mma.sync m16n8k16, and the atomics of its split-K reduction. Like atoms.cuh, no
// CUDA or C++ headers. Every conversion yields (q - z) exactly: the scale is applied to the fp32
// accumulators per group, so the tensor cores multiply exact small integers by the activations.
//
// Magic numbers: a 16-bit float whose exponent makes the unit in the last place 1 turns low mantissa
// bits into an integer added to a constant: fp16 0x6400 | v = 1024 + v (v < 1024), bf16 0x4300 | v =
// 128 + v (v < 128); fp32 0x4B000000 | v = 2^23 + v. One subtraction (of the constant plus the zero
// point) leaves v - z, exact because every operand is an integer the type holds exactly.
#pragma once

#include <tilecraft/atoms.cuh>

namespace tc {
namespace mixed {

TC_DEVICE u32 prmt(u32 a, u32 b, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
TC_DEVICE u32 hsub2(u32 a, u32 b) {
    u32 d;
    asm("sub.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
TC_DEVICE u32 hfma2(u32 a, u32 b, u32 c) {
    u32 d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
TC_DEVICE u32 bfma2(u32 a, u32 b, u32 c) {
    u32 d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
// c, through a value ptxas cannot fold (%nsmid, the GPU's SM count, is below 2^24 on every GPU, so the
// OR adds nothing). A LOP3 takes one immediate; given both the nibble mask and the magic number as
// constants, ptxas rematerialized one of them with an IMAD.MOV before nearly every LOP3 (about 3 per
// int4 conversion, 12-15% of the small-M kernel's main loop). The magic number computed at run time
// stays in one register for the whole kernel (W4A16 g128 M = 1, N = K = 8192 on an H100: 13.9 -> 13.3 us).
TC_DEVICE u32 kept(u32 c) {
    u32 n;
    asm("mov.u32 %0, %%nsmid;" : "=r"(n));
    return c | (n >> 24);
}

// z: the zero points of the lane's two rows as a pair of 16-bit floats (row g low, row g+8 high).
// a[0], a[2] belong to row g, a[1], a[3] to row g+8 (the m16n8k16 A fragment order).

// int4 -> fp16: (w & 0x000f000f) | 0x6400 = 1024 + v; the x16 nibbles (w & 0x00f000f0) | 0x6400 =
// 1024 + 16 v are scaled by 1/16 in the same fma that subtracts 64 + z.
TC_DEVICE void dequant_u4_f16(u32 w, u32 z, u32* a) {
    const u32 zg = prmt(z, 0, 0x1010), zh = prmt(z, 0, 0x3232);          // {z_g, z_g}, {z_h, z_h}
    const u32 cg = hfma2(zg, 0x3c003c00u, 0x64006400u);                  // 1024 + z_g
    const u32 ch = hfma2(zh, 0xbc00bc00u, 0xd400d400u);                  // -(64 + z_h)
    const u32 w8 = w >> 8, e = kept(0x64006400u);
    a[0] = hsub2((w & 0x000f000fu) | e, cg);
    a[1] = hfma2((w & 0x00f000f0u) | e, 0x2c002c00u, ch);
    a[2] = hsub2((w8 & 0x000f000fu) | e, cg);
    a[3] = hfma2((w8 & 0x00f000f0u) | e, 0x2c002c00u, ch);
}

// int4 -> bf16: four shifts of (w >> 4i) & 0x000f000f | 0x4300 = 128 + v, minus 128 + z in one fma.
TC_DEVICE void dequant_u4_bf16(u32 w, u32 z, u32* a) {
    const u32 zg = prmt(z, 0, 0x1010), zh = prmt(z, 0, 0x3232);
    const u32 cg = bfma2(zg, 0xbf80bf80u, 0xc300c300u);                  // -(128 + z_g)
    const u32 ch = bfma2(zh, 0xbf80bf80u, 0xc300c300u);                  // -(128 + z_h)
    const u32 e = kept(0x43004300u);
    a[0] = bfma2((w & 0x000f000fu) | e, 0x3f803f80u, cg);
    a[1] = bfma2(((w >> 4) & 0x000f000fu) | e, 0x3f803f80u, ch);
    a[2] = bfma2(((w >> 8) & 0x000f000fu) | e, 0x3f803f80u, cg);
    a[3] = bfma2(((w >> 12) & 0x000f000fu) | e, 0x3f803f80u, ch);
}

// int8 -> fp16: prmt places bytes under the 0x64 exponent byte: 1024 + v, minus 1024 + z.
TC_DEVICE void dequant_u8_f16(u32 w0, u32 w1, u32 z, u32* a) {
    const u32 zg = prmt(z, 0, 0x1010), zh = prmt(z, 0, 0x3232);
    const u32 cg = hfma2(zg, 0x3c003c00u, 0x64006400u);                  // 1024 + z_g
    const u32 ch = hfma2(zh, 0x3c003c00u, 0x64006400u);                  // 1024 + z_h
    a[0] = hsub2(prmt(w0, 0x64646464u, 0x4140), cg);
    a[1] = hsub2(prmt(w0, 0x64646464u, 0x4342), ch);
    a[2] = hsub2(prmt(w1, 0x64646464u, 0x4140), cg);
    a[3] = hsub2(prmt(w1, 0x64646464u, 0x4342), ch);
}

// int8 -> bf16 (8 significant bits: too few for 128 + v): through fp32, 2^23 + v minus 2^23 + z, then
// the high halves of two floats (exact: |v - z| <= 255 fits bf16) form the pair.
TC_DEVICE f32 u8_minus(u32 w, u32 sel, f32 c) { return __uint_as_float(prmt(w, 0x4b000000u, sel)) - c; }
TC_DEVICE u32 pack_bf16_hi(f32 lo, f32 hi) { return prmt(__float_as_uint(lo), __float_as_uint(hi), 0x7632); }
TC_DEVICE void dequant_u8_bf16(u32 w0, u32 w1, u32 z, u32* a) {
    const f32 cg = 8388608.0f + __uint_as_float(z << 16), ch = 8388608.0f + __uint_as_float(z & 0xffff0000u);
    a[0] = pack_bf16_hi(u8_minus(w0, 0x7440, cg), u8_minus(w0, 0x7441, cg));
    a[1] = pack_bf16_hi(u8_minus(w0, 0x7442, ch), u8_minus(w0, 0x7443, ch));
    a[2] = pack_bf16_hi(u8_minus(w1, 0x7440, cg), u8_minus(w1, 0x7441, cg));
    a[3] = pack_bf16_hi(u8_minus(w1, 0x7442, ch), u8_minus(w1, 0x7443, ch));
}

// int8 -> bf16 for symmetric formats (q = v + 128), without fp32: of the bytes in bits 0-7 and 16-23 of t,
// 0x4300 | (q & 127) = 128 + (q & 127) minus 0x4300 | (~q & 128) = 256 - (q & 128) is q - 128, exactly (two LOP3s
// with the magic number e = 0x43004300 in a kept register, one bf16 fma).
TC_DEVICE u32 s8x2_bf16(u32 t, u32 e) { return bfma2((~t & 0x00800080u) | e, 0xbf80bf80u, (t & 0x007f007fu) | e); }

// A dense 16-bit weight read in place (tilecraft/gemm/mixed.py, DenseFormat). K-contiguous: the four words
// are the A operand as loaded (ptxas keeps them where they are). N-contiguous: p0..p3 hold rows k = 4q + r of
// W at the columns of tile rows g (low half) and g + 8 (high half); slots 2q, 2q+1 take rows 0, 1 and slots
// 2q+8, 2q+9 rows 2, 3.
TC_DEVICE void dense_a(u32 a0, u32 a1, u32 a2, u32 a3, u32* a) {
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}
TC_DEVICE void dense_n_a(u32 p0, u32 p1, u32 p2, u32 p3, u32* a) {
    a[0] = prmt(p0, p1, 0x5410);
    a[1] = prmt(p0, p1, 0x7632);
    a[2] = prmt(p2, p3, 0x5410);
    a[3] = prmt(p2, p3, 0x7632);
}

// A hint: bring the 128-byte line at p from HBM into L2 (no register, nothing to wait for).
TC_DEVICE void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// 0, computed from v: an offset that makes a load depend on the instruction that produced v, so ptxas
// cannot issue the load before it (blockIdx.x < 2^30, which the compiler cannot know).
TC_DEVICE int zero_after(f32 v) { return __float_as_int(v) & static_cast<int>(blockIdx.x >> 30); }

// ------------------------------------------------------------------ split-K reduction
// Each CTA adds its fp32 partial tile to a zeroed workspace with red.add, then counts itself in; the
// last CTA of a row block (the count reaches `splits`) reads the sums, writes the output, and leaves
// workspace and counter zeroed for the next launch.
TC_DEVICE void red_add_f32(f32* p, f32 v) {
    asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
TC_DEVICE f32 ld_cg_f32(const f32* p) {
    f32 v;
    asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}

}  // namespace mixed
}  // namespace tc
