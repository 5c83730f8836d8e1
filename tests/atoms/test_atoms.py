"""The atoms' well-known pictures as exact facts, bijections, partitions of host tensors, bank conflicts
of swizzled shared memory, and wgmma descriptors against the PTX ISA's definition."""
from __future__ import annotations

import numpy as np
import pytest

from tilecraft.atoms import (
    SM80_16x8x8_F32TF32TF32F32_TN, SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x32_S32S8S8S32_TN, SM80_ATOMS,
    GmmaDescriptor, cp_async, draw_tiled_copy, draw_tiled_mma, gmma_layout_atom, ldmatrix, make_gmma_desc,
    make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, shared_memory_wavefronts,
    smem_swizzle_atom, stmatrix, tv_owners, universal_copy, wgmma_atom,
)
from tilecraft.layout import ComposedLayout, Layout, Swizzle, size, tile_to_shape, zipped_divide
from tilecraft.tensor import make_identity_tensor, make_tensor

M16N8K16 = SM80_16x8x16_F32F16F16F32_TN


def _mn(tv: Layout, rows: int, t: int) -> list[tuple[int, int]]:
    """The (row, col) coordinates thread t holds, value by value, in a column-major tile of `rows` rows."""
    return [divmod(tv(t, v), rows)[::-1] for v in range(size(tv[1]))]


# ----------------------------------------------------------------------------- CuTe's pictures

def test_m16n8k16_c_fragment_of_thread_0():
    assert _mn(M16N8K16.layout_c_tv, 16, 0) == [(0, 0), (0, 1), (8, 0), (8, 1)]


def test_m16n8k16_a_fragment_of_thread_5():
    # lane 5: group 1, thread-in-group 1 -> rows 1 and 9, columns 2,3 and 10,11 (PTX ISA's A fragment)
    assert _mn(M16N8K16.layout_a_tv, 16, 5) == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]


def test_m16n8k16_b_fragment_of_thread_6():
    # B is N×K: lane 6 holds column n = 1, k = 4,5 and 12,13
    assert _mn(M16N8K16.layout_b_tv, 8, 6) == [(1, 4), (1, 5), (1, 12), (1, 13)]


def test_m16n8k8_tf32_and_m16n8k32_s8_fragments():
    assert _mn(SM80_16x8x8_F32TF32TF32F32_TN.layout_a_tv, 16, 5) == [(1, 1), (9, 1), (1, 5), (9, 5)]
    # s8: four consecutive k per register
    assert _mn(SM80_16x8x32_S32S8S8S32_TN.layout_a_tv, 16, 5)[:4] == [(1, 4), (1, 5), (1, 6), (1, 7)]


def _check_bijection(tv: Layout, n: int) -> None:
    assert size(tv) == n
    assert sorted(tv(i) for i in range(n)) == list(range(n))


@pytest.mark.parametrize("atom", list(SM80_ATOMS) + [wgmma_atom(n, t, operands="rs") for n, t in
                                                   ((8, "f16"), (64, "bf16"), (256, "f16"), (128, "e4m3"),
                                                    (96, "tf32"))],
                         ids=lambda a: a.name)
def test_every_register_operand_covers_its_tile_once(atom):
    M, N, K = atom.shape_mnk
    _check_bijection(atom.layout_a_tv, M * K)
    _check_bijection(atom.layout_c_tv, M * N)
    if atom.operands == "rr":
        _check_bijection(atom.layout_b_tv, N * K)
    assert atom.arch in ("sm_80", "sm_89", "sm_90a")
    assert f"m{M}n{N}k{K}" in atom.ptx


@pytest.mark.parametrize("n, t", [(64, "f16"), (256, "bf16"), (32, "e5m2"), (256, "tf32")])
def test_wgmma_smem_operands_are_shared_by_the_warpgroup(n, t):
    atom = wgmma_atom(n, t)
    M, N, K = atom.shape_mnk
    assert (M, K) == (64, 256 // {"f16": 16, "bf16": 16, "e5m2": 8, "tf32": 32}[t])
    for tv, rows, cols in ((atom.layout_a_tv, M, K), (atom.layout_b_tv, N, K)):
        assert tv[0].stride == 0 and size(tv[0]) == 128   # every thread: the whole tile, via one descriptor
        _check_bijection(tv[1], rows * cols)
    assert atom.ptx == f"wgmma.mma_async.sync.aligned.m64n{n}k{K}.f32.{t}.{t}"


def test_wgmma_c_fragment_of_thread_0_and_warp_1():
    c = wgmma_atom(64).layout_c_tv
    assert _mn(c, 64, 0)[:4] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert _mn(c, 64, 32)[:2] == [(16, 0), (16, 1)]  # each warp owns 16 rows
    assert _mn(c, 64, 0)[4:6] == [(0, 8), (0, 9)]


def test_ldmatrix_x4_thread_value_layouts():
    atom = ldmatrix(4)
    # source: thread t gives the address of row t (8 contiguous 16-bit values) of the 4 stacked 8x8 matrices
    assert atom.layout_src == Layout((32, 8), (8, 1))
    # destination: of matrix i thread t receives row t/4, columns 2(t%4) and 2(t%4)+1
    dst = atom.layout_dst
    for t in (0, 5, 31):
        for i in range(4):
            got = [divmod(dst(t, j + 2 * i) - 64 * i, 8) for j in range(2)]
            assert got == [(t // 4, 2 * (t % 4)), (t // 4, 2 * (t % 4) + 1)]
    trans = ldmatrix(4, trans=True).layout_dst
    # .trans: thread t receives column t/4, rows 2(t%4) and 2(t%4)+1 (row-major offsets row*8+col)
    assert [divmod(trans(5, j), 8) for j in range(2)] == [(2, 1), (3, 1)]
    assert stmatrix(4).layout_src == atom.layout_dst and stmatrix(4).layout_dst == atom.layout_src


# ----------------------------------------------------------------------------- tiled MMA partitions

def test_2x2_warps_own_each_element_of_a_32x32_c_tile_once():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    assert mma.size() == 128 and mma.tile_shape == (32, 16, 16)
    coords = make_identity_tensor((32, 32))
    owned = [c for t in range(128) for c in mma.get_slice(t).partition_C(coords).tolist()]
    assert len(owned) == 32 * 32 and set(owned) == {(m, n) for m in range(32) for n in range(32)}


def test_partitions_of_numpy_tensors_hold_the_expected_elements():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    A = np.array([[100 * m + k for k in range(16)] for m in range(32)], dtype=np.int32)   # row-major (M,K)
    B = np.array([[100 * n + k for k in range(16)] for n in range(16)], dtype=np.int32)   # (N,K)
    C = np.zeros((32, 16), dtype=np.float32)
    thr = mma.get_slice(5 + 32)  # lane 5 of warp 1: warp (m=1, n=0)
    tA = thr.partition_A(make_tensor(A))
    assert tA.shape == ((2, 2, 2), 1, 1)
    assert tA.tolist() == [1702, 1703, 2502, 2503, 1710, 1711, 2510, 2511]  # rows 16+1, 16+9
    tB = thr.partition_B(make_tensor(B))
    assert tB.tolist() == [102, 103, 110, 111]  # n = 1 (group 1), k = 2,3 and 10,11
    tC = thr.partition_C(make_tensor(C))
    tC.fill([1, 2, 3, 4])  # writes through to C
    assert C[17, 2] == 1 and C[17, 3] == 2 and C[25, 2] == 3 and C[25, 3] == 4 and C.sum() == 10


def test_partition_fragments_are_fresh_compact_storage():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    thr = mma.get_slice(3)
    C = make_tensor(np.zeros((64, 64), dtype=np.float16))
    acc = thr.partition_fragment_C(C, np.float32)
    assert acc.shape == ((2, 2), 2, 4) and acc.dtype == np.float32
    assert acc.layout == Layout(((2, 2), 2, 4))  # column-major, whatever C's layout
    fa = thr.partition_fragment_A(make_tensor(np.ones((64, 32), dtype=np.float16)))
    assert fa.shape == ((2, 2, 2), 2, 2) and fa.tolist() == [0.0] * 32


def test_tiled_mma_rejects_out_of_range_threads_and_extra_modes():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    with pytest.raises(ValueError, match="outside the tiled MMA's 128 threads"):
        mma.get_slice(128)
    with pytest.raises(ValueError, match="more than three"):
        make_tiled_mma(M16N8K16, (1, 1, 1, 1))


# ----------------------------------------------------------------------------- copies

def _simulate(copy, src, dst):
    """Run a tiled copy of one-thread atoms on the host: each thread moves its partition."""
    for t in range(copy.size()):
        thr = copy.get_slice(t)
        s, d = thr.partition_S(src), thr.partition_D(dst)
        assert s.shape == d.shape
        d.fill(s.tolist())


def test_cp_async_tiled_copy_moves_a_tile_into_swizzled_smem():
    g2s = make_tiled_copy(cp_async(16, "f16", cache="global"), Layout((16, 8), (8, 1)), Layout((1, 8)))
    assert g2s.tiler_mn == (16, 64) and g2s.size() == 128
    gmem = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    sA = tile_to_shape(smem_swizzle_atom("f16"), (64, 64))
    store = np.full(64 * 64, -1.0, dtype=np.float32)
    smem = make_tensor(store, sA)
    _simulate(g2s, make_tensor(gmem), smem)
    assert smem.numpy().tolist() == gmem.tolist()
    assert sorted(store.tolist()) == sorted(gmem.ravel().tolist())  # every element written once


def test_tiled_copy_of_coordinates_covers_the_tile_once():
    copy = make_tiled_copy(universal_copy(64, "f16"), Layout((32, 4)), Layout((4, 1)))
    coords = make_identity_tensor((128, 8))
    seen = [c for t in range(copy.size()) for c in copy.get_slice(t).partition_S(coords).tolist()]
    assert sorted(seen) == sorted((m, n) for m in range(128) for n in range(8))
    # each thread's four values are consecutive rows: one 64-bit vector per thread
    assert copy.get_slice(1).partition_S(coords).tolist()[:4] == [(4, 0), (5, 0), (6, 0), (7, 0)]


def test_ldmatrix_fills_the_mma_fragment_with_what_partition_A_reads():
    """copy(s2r, partition_S(sA), retile_D(frag)) followed by mma: the fragment must equal partition_A(sA).
    On the host, thread t's destination registers receive partition_D of the same tile."""
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    s2r = make_tiled_copy_A(ldmatrix(4), mma)
    sA = make_tensor(np.arange(64 * 32, dtype=np.float32), tile_to_shape(smem_swizzle_atom("f16", 64), (64, 32)))
    for t in (0, 5, 37, 127):
        thr_mma, thr_copy = mma.get_slice(t), s2r.get_slice(t)
        frag = thr_mma.partition_fragment_A(sA)
        view = thr_copy.retile_D(frag)
        view.fill(thr_copy.partition_D(sA).tolist())
        assert frag.tolist() == thr_mma.partition_A(sA).tolist()


def test_ldmatrix_sources_and_destinations_are_the_same_elements_per_warp_instruction():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1), (32, Layout((8, 2, 2), (1, 16, 8)), 16))
    s2r = make_tiled_copy_B(ldmatrix(4), mma)
    coords = make_identity_tensor((32, 32))
    for warp in range(4):
        S = [s2r.get_slice(32 * warp + lane).partition_S(coords) for lane in range(32)]
        D = [s2r.get_slice(32 * warp + lane).partition_D(coords) for lane in range(32)]
        for r in range(size(S[0].layout) // 8):  # one ldmatrix.x4 per coordinate of the modes past CPY
            src = {S[lane](v, *_rest(S[lane], r)) for lane in range(32) for v in range(8)}
            dst = {D[lane](v, *_rest(D[lane], r)) for lane in range(32) for v in range(8)}
            assert src == dst and len(src) == 256


def _rest(t, r):
    """The coordinate of the r-th instruction over a partition's modes 1.. (column-major)."""
    from tilecraft.layout import idx2crd
    shp = t.shape[1:]
    return idx2crd(r, shp) if len(shp) > 1 else (r,)


# ----------------------------------------------------------------------------- bank conflicts

def _warp_row_addresses(copy, smem_layout, warp, instr, elem_bytes=2):
    """Byte addresses of each lane's first value in one instruction of a tiled copy's source partition."""
    offsets = make_tensor(np.arange(smem_layout.inner.cosize() if isinstance(smem_layout, ComposedLayout)
                                    else smem_layout.cosize(), dtype=np.int64), smem_layout)
    addrs = []
    for lane in range(32):
        part = copy.get_slice(32 * warp + lane).partition_S(offsets)
        vals = part((None,) + _rest(part, instr)).tolist()
        # one 16-byte vector per lane: 8 consecutive 16-bit elements, 16-byte aligned
        assert vals == list(range(vals[0], vals[0] + 8)) and vals[0] % 8 == 0
        addrs.append(vals[0] * elem_bytes)
    return addrs


@pytest.mark.parametrize("swizzled, wavefronts", [(True, 1), (False, 8)])
def test_ldmatrix_from_swizzled_smem_is_bank_conflict_free(swizzled, wavefronts):
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    s2r = make_tiled_copy_A(ldmatrix(4), mma)
    atom = smem_swizzle_atom("f16") if swizzled else Layout((8, 64), (64, 1))
    assert str(atom) == ("Sw<3,3,3> o 0 o (8,64):(64,1)" if swizzled else "(8,64):(64,1)")
    sA = tile_to_shape(atom, (64, 64))
    for warp in range(4):
        for instr in range(8):
            addrs = _warp_row_addresses(s2r, sA, warp, instr)
            # each phase of 8 lanes: the 8 rows of one 8x8 matrix
            assert shared_memory_wavefronts(addrs, 16) == [wavefronts] * 4
            if swizzled:
                for p in range(4):
                    banks = [(a // 16) % 8 for a in addrs[8 * p:8 * p + 8]]  # 16-byte bank group of each row
                    assert sorted(banks) == list(range(8))


def test_128_bit_cp_async_writes_to_swizzled_smem_are_bank_conflict_free():
    g2s = make_tiled_copy(cp_async(16, "f16", cache="global"), Layout((16, 8), (8, 1)), Layout((1, 8)))
    sA = tile_to_shape(smem_swizzle_atom("f16"), (64, 64))
    offsets = make_tensor(np.arange(64 * 64, dtype=np.int64), sA)
    for warp in range(4):
        for instr in range(4):
            addrs = [2 * g2s.get_slice(32 * warp + lane).partition_D(offsets)(0, instr, 0) for lane in range(32)]
            assert shared_memory_wavefronts(addrs, 16) == [1, 1, 1, 1]


def test_shared_memory_wavefronts_counts_distinct_words_per_bank():
    assert shared_memory_wavefronts([4 * i for i in range(32)], 4) == [1]
    assert shared_memory_wavefronts([128 * i for i in range(32)], 4) == [32]
    assert shared_memory_wavefronts([0] * 32, 4) == [1]  # a broadcast is one word
    assert shared_memory_wavefronts([16 * i for i in range(32)], 8) == [2, 2]  # 16 lanes a phase, 2 words a bank
    assert shared_memory_wavefronts([16 * i for i in range(32)], 16) == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="aligned"):
        shared_memory_wavefronts([4], 16)


# ----------------------------------------------------------------------------- wgmma descriptors

def _desc_bits(d: GmmaDescriptor) -> dict:
    """The fields read back from the packed value at the PTX ISA's bit positions."""
    v = d.value
    return {"start": v & 0x3FFF, "lbo": (v >> 16) & 0x3FFF, "sbo": (v >> 32) & 0x3FFF, "base": (v >> 49) & 7,
            "swizzle": v >> 62}


def test_k_major_sw128_descriptor():
    sA = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 64))
    kblocks = zipped_divide(sA, (64, 16))           # ((64,16),(1,4)): one wgmma's A per k-block
    d = make_gmma_desc(kblocks(None, (0, 0))[0], "K", "f16", start_address=0x1400)
    # SBO: bytes between core matrices adjacent in M (rows 0-7 and 8-15); LBO unused (1) for swizzled K-major
    assert 2 * sA(8, 0) == 1024
    assert _desc_bits(d) == {"start": 0x1400 >> 4, "lbo": 1, "sbo": 1024 >> 4, "base": 0, "swizzle": 1}
    assert d.value == (0x140 | 1 << 16 | 64 << 32 | 1 << 62)
    # k-block 2 starts 32 elements (64 bytes) further, unswizzled: the hardware swizzles the address itself
    d2 = make_gmma_desc(kblocks(None, (0, 2))[0], "K", "f16", start_address=0x1400)
    assert d2.value == d.value + (64 >> 4)


def test_mn_major_sw128_descriptor():
    sB = tile_to_shape(gmma_layout_atom("MN", 128, "f16"), (128, 16))
    d = make_gmma_desc(sB, "MN", "f16")
    # LBO: from the first 64 elements (one 128-byte swizzle row) of N to the next; SBO: from k 0-7 to k 8-15
    assert (2 * sB.inner(64, 0), 2 * sB.inner(0, 8)) == (1024, 2048)
    assert _desc_bits(d) == {"start": 0, "lbo": 1024 >> 4, "sbo": 2048 >> 4, "base": 0, "swizzle": 1}


def test_tf32_k_major_sw128_descriptors_step_32_bytes_per_k_block():
    """The Hopper GEMM's tf32 stage: (128, 32) fp32, one 128-byte swizzle row of K; each m64nNk8 wgmma
    reads 8 of the 32 (32 bytes), so the four k-blocks' descriptors differ only in start, by 2 units."""
    sA = tile_to_shape(gmma_layout_atom("K", 128, "tf32"), (128, 32))
    assert 4 * sA(0, 31) == 124 and 4 * sA(8, 0) == 1024         # rows of 128 bytes, 8-row atoms of 1 KB
    kblocks = zipped_divide(sA, (64, 8))                          # ((64,8),(2,4))
    descs = [make_gmma_desc(kblocks(None, (0, kb))[0], "K", "tf32", start_address=0x2000) for kb in range(4)]
    assert _desc_bits(descs[0]) == {"start": 0x2000 >> 4, "lbo": 1, "sbo": 1024 >> 4, "base": 0, "swizzle": 1}
    assert [d.value - descs[0].value for d in descs] == [0, 2, 4, 6]
    # the second 64 rows (the other consumer's A) start 8 KB further
    d = make_gmma_desc(kblocks(None, (1, 0))[0], "K", "tf32", start_address=0x2000)
    assert d.value - descs[0].value == 64 * 128 >> 4
    # wgmma .tf32 has no transpose: an MN-major tf32 atom is refused
    with pytest.raises(ValueError, match="only K-major"):
        wgmma_atom(64, "tf32", major_b="MN")


@pytest.mark.parametrize("swizzle, layout_type", [(64, 2), (32, 3)])
def test_k_major_narrower_swizzles(swizzle, layout_type):
    s = tile_to_shape(gmma_layout_atom("K", swizzle, "e4m3"), (64, swizzle))  # one swizzle row of e4m3 = K
    d = make_gmma_desc(zipped_divide(s, (64, 32))(None, 0)[0], "K", "e4m3")  # the first 32 bytes of K
    assert _desc_bits(d) == {"start": 0, "lbo": 1, "sbo": 8 * swizzle >> 4, "base": 0, "swizzle": layout_type}


def test_interleaved_k_major_descriptor():
    s = tile_to_shape(gmma_layout_atom("K", 0, "f16"), (64, 16))  # 8x8 core matrices, column of them first
    d = make_gmma_desc(s, "K", "f16")
    # no swizzle: LBO = bytes between the two core matrices along K, SBO = between those along M
    assert (2 * s.inner(0, 8), 2 * s.inner(8, 0)) == (1024, 128)
    assert _desc_bits(d) == {"start": 0, "lbo": 1024 >> 4, "sbo": 128 >> 4, "base": 0, "swizzle": 0}


def test_descriptor_rejects_what_wgmma_cannot_read():
    with pytest.raises(ValueError, match="not a canonical K-major"):
        make_gmma_desc(Layout((64, 16), (16, 1)), "K", "f16")  # rows 32 bytes apart, no swizzle
    with pytest.raises(ValueError, match="not a wgmma swizzle"):
        make_gmma_desc(ComposedLayout(Swizzle(3, 3, 4), 0, Layout((64, 16), (64, 1))), "K", "f16")
    with pytest.raises(ValueError, match="16-byte aligned"):
        make_gmma_desc(tile_to_shape(gmma_layout_atom("K", 32, "f16"), (64, 16)), "K", "f16", start_address=8)


# ----------------------------------------------------------------------------- atoms' own checks

def test_copy_atom_constructors_validate():
    assert cp_async(16, cache="global").ptx == "cp.async.cg.shared.global [dst], [src], 16"
    assert cp_async(4, "f32", zfill=True).cxx == "tc::cp_async_ca_4_zfill"
    assert cp_async(8, "f16").layout_src == Layout((1, 4), (0, 1))
    with pytest.raises(ValueError, match="4, 8 or 16"):
        cp_async(2)
    with pytest.raises(ValueError, match="only 16 bytes"):
        cp_async(8, cache="global")
    with pytest.raises(ValueError, match=r"\.x1/\.x2/\.x4"):
        ldmatrix(3)
    with pytest.raises(ValueError, match="whole number"):
        cp_async(4, 64)
    with pytest.raises(ValueError, match="multiple of 8"):
        wgmma_atom(12)
    with pytest.raises(ValueError, match="only K-major"):
        wgmma_atom(64, "e4m3", major_a="MN")


def test_pictures_name_every_owner():
    mma = make_tiled_mma(M16N8K16, (2, 2, 1))
    pic = draw_tiled_mma(mma)
    assert pic.svg.startswith("<svg") and pic.svg.count("<rect") == 32 * 16 + 16 * 16 + 32 * 16
    assert ">T127</text>" in pic.svg
    owners = tv_owners(mma.get_layoutC_TV(), 32, 16)
    assert owners[(0, 0)] == (0, 0) and owners[(8, 1)] == (0, 3) and owners[(16, 0)] == (32, 0)
    cp = draw_tiled_copy(make_tiled_copy_A(ldmatrix(4), mma))
    assert cp.svg.count("<rect") == 2 * 32 * 16
