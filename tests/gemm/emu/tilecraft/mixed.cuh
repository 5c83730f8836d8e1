// Host (g++) stand-ins for tilecraft/mixed.cuh, for tests/gemm/emulate.py: the same names and
// signatures, computed from the packed layout's definition (tilecraft/quant/pack.py) rather than with
// the magic-number bit tricks, so an emulated kernel checks the kernel's data flow and the packing
// against each other, and the device header's arithmetic is left to the GPU tests.
#pragma once
#include <atomic>

#include <tilecraft/atoms.cuh>

namespace tc {
namespace mixed {

inline float half_bits_to_f32(u16 h, bool bf) { return bf ? to_f32(bf16{h}) : to_f32(f16{h}); }
inline u16 f32_to_half_bits(float x, bool bf) { return bf ? to_bf16(x).bits : to_f16(x).bits; }

// value v (0..7) of the lane's A operand, as (q - z) in 16-bit float bits; a[r] holds values 2r, 2r+1
// and belongs to row g (r even) or g + 8 (r odd)
inline void store_pairs(const u32* vals, u32 z, bool bf, u32* a) {
    const float zg = half_bits_to_f32(static_cast<u16>(z & 0xffffu), bf);
    const float zh = half_bits_to_f32(static_cast<u16>(z >> 16), bf);
    for (int r = 0; r < 4; ++r) {
        const float zr = r % 2 ? zh : zg;
        const u16 lo = f32_to_half_bits(static_cast<float>(vals[2 * r]) - zr, bf);
        const u16 hi = f32_to_half_bits(static_cast<float>(vals[2 * r + 1]) - zr, bf);
        a[r] = static_cast<u32>(lo) | (static_cast<u32>(hi) << 16);
    }
}

// int4: value v sits in nibble v / 2 + 4 (v % 2)
inline void dequant_u4(u32 w, u32 z, u32* a, bool bf) {
    u32 vals[8];
    for (int v = 0; v < 8; ++v) vals[v] = (w >> (4 * (v / 2 + 4 * (v % 2)))) & 0xfu;
    store_pairs(vals, z, bf, a);
}
inline void dequant_u4_f16(u32 w, u32 z, u32* a) { dequant_u4(w, z, a, false); }
inline void dequant_u4_bf16(u32 w, u32 z, u32* a) { dequant_u4(w, z, a, true); }

// int8: value v in byte v % 4 of word v / 4
inline void dequant_u8(u32 w0, u32 w1, u32 z, u32* a, bool bf) {
    u32 vals[8];
    for (int v = 0; v < 8; ++v) vals[v] = ((v < 4 ? w0 : w1) >> (8 * (v % 4))) & 0xffu;
    store_pairs(vals, z, bf, a);
}
inline void dequant_u8_f16(u32 w0, u32 w1, u32 z, u32* a) { dequant_u8(w0, w1, z, a, false); }
inline void dequant_u8_bf16(u32 w0, u32 w1, u32 z, u32* a) { dequant_u8(w0, w1, z, a, true); }

// a dense 16-bit weight: the words as loaded (K-contiguous), or rows k = 4q + r paired per column
// (N-contiguous: row g's column in the low halves, g + 8's in the high ones)
inline void dense_a(u32 a0, u32 a1, u32 a2, u32 a3, u32* a) { a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3; }
inline void dense_n_a(u32 p0, u32 p1, u32 p2, u32 p3, u32* a) {
    const u32 rows[4] = {p0, p1, p2, p3};
    for (int r = 0; r < 4; ++r) {
        const u32 lo = rows[r / 2 * 2], hi = rows[r / 2 * 2 + 1];
        const int half = r % 2;                                  // 0: column of row g, 1: of row g + 8
        a[r] = ((lo >> (16 * half)) & 0xffffu) | (((hi >> (16 * half)) & 0xffffu) << 16);
    }
}

inline void prefetch_l2(const void*) {}
inline int zero_after(f32) { return 0; }
inline void red_add_f32(f32* p, f32 v) { std::atomic_ref<f32>(*p).fetch_add(v); }
inline f32 ld_cg_f32(const f32* p) { return std::atomic_ref<f32>(*const_cast<f32*>(p)).load(); }

}  // namespace mixed
}  // namespace tc
