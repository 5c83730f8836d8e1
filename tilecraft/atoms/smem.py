"""Shared memory for the atoms: swizzled layout atoms, bank-conflict analysis, wgmma descriptors.

All layouts here are in elements of the stored type; a swizzle acts on element offsets (so the
128-byte swizzle of 16-bit data is ``Swizzle(3, 3, 3)``: it moves 16-byte chunks, 8 elements each).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tilecraft import layout as _L
from tilecraft.atoms.types import bits_of
from tilecraft.layout import ComposedLayout, Layout, Swizzle, is_tuple

__all__ = [
    "gmma_layout_atom", "smem_swizzle_atom", "shared_memory_wavefronts", "GmmaDescriptor", "make_gmma_desc",
]

# wgmma's swizzling modes: 16-byte chunks per swizzled row, and the descriptor's 2-bit layout type
# (PTX ISA, "Matrix Descriptor Format": 0 none, 1 128-byte, 2 64-byte, 3 32-byte swizzle).
_SWIZZLE_CHUNKS = {0: 1, 32: 2, 64: 4, 128: 8}
_LAYOUT_TYPE = {0: 0, 128: 1, 64: 2, 32: 3}


def _log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


def _swizzle_for(swizzle_bytes: int, elem_bits: int) -> Swizzle:
    """The swizzle of a `swizzle_bytes` mode on offsets of `elem_bits`-bit elements: XOR the row index
    (mod the rows of the pattern) into the 16-byte chunk index."""
    if swizzle_bytes not in _SWIZZLE_CHUNKS:
        raise ValueError(f"swizzle_bytes must be 0 (none), 32, 64 or 128, got {swizzle_bytes}")
    if elem_bits < 8 or 128 % elem_bits:
        raise ValueError(f"swizzled layouts need elements of 8 to 128 bits that divide 16 bytes, got {elem_bits}")
    return Swizzle(_log2(_SWIZZLE_CHUNKS[swizzle_bytes]), _log2(128 // elem_bits), 3)


def gmma_layout_atom(major: str, swizzle_bytes: int, elem: str | int) -> ComposedLayout:
    """The smallest shared-memory tile wgmma reads with a swizzling mode (CuTe's GMMA::Layout_{K,MN}_
    {INTER,SW32,SW64,SW128}_Atom): K-major is 8 rows × (swizzle width) bytes with K contiguous,
    MN-major the transpose. tile_to_shape it up to a full operand tile."""
    bits = bits_of(elem)
    sw = _swizzle_for(swizzle_bytes, bits)
    width = _SWIZZLE_CHUNKS[swizzle_bytes] * 128 // bits  # elements along the contiguous mode
    if major == "K":
        return ComposedLayout(sw, 0, Layout((8, width), (width, 1)))
    if major == "MN":
        return ComposedLayout(sw, 0, Layout((width, 8), (1, width)))
    raise ValueError(f"major must be 'K' or 'MN', got {major!r}")


def smem_swizzle_atom(elem: str | int, row_bytes: int = 128) -> ComposedLayout:
    """The sm80 shared-memory atom for K-major tiles read by ldmatrix and written by 16-byte cp.async:
    8 rows of `row_bytes` (32, 64 or 128), swizzled so that the 8 rows of any 16-byte column sit in
    distinct bank groups. For 16-bit data and 128-byte rows this is ``Sw<3,3,3> o (8,64):(64,1)``."""
    return gmma_layout_atom("K", row_bytes, elem)


def shared_memory_wavefronts(byte_addresses: Sequence[int], access_bytes: int) -> list[int]:
    """How many shared-memory wavefronts each phase of a warp-wide access needs (1 = conflict free).

    Thread i accesses `access_bytes` (4, 8 or 16) at byte_addresses[i]. The hardware serves a warp in
    phases of 128 bytes (32 threads of 4 bytes, 16 of 8, 8 of 16, which is also how ldmatrix reads the
    8 row addresses of each matrix); a phase needs as many wavefronts as the most distinct 4-byte words
    it touches in any one of the 32 banks.
    """
    if access_bytes not in (4, 8, 16):
        raise ValueError(f"shared-memory accesses are 4, 8 or 16 bytes per thread, got {access_bytes}")
    per_phase = 128 // access_bytes
    out = []
    for p in range(0, len(byte_addresses), per_phase):
        words_in_bank: dict[int, set[int]] = {}
        for a in byte_addresses[p:p + per_phase]:
            if a % access_bytes:
                raise ValueError(f"address {a} is not aligned to the {access_bytes}-byte access")
            for w in range(a // 4, (a + access_bytes) // 4):
                words_in_bank.setdefault(w % 32, set()).add(w)
        out.append(max(len(ws) for ws in words_in_bank.values()))
    return out


@dataclass(frozen=True)
class GmmaDescriptor:
    """wgmma's 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format").

    Fields hold the encoded values: start address, leading- and stride-dimension byte offsets are in
    16-byte units (``(x & 0x3FFFF) >> 4``); ``layout_type`` is the swizzling mode (0 none, 1 128-byte,
    2 64-byte, 3 32-byte); ``base_offset`` is 0 when the swizzle pattern starts at its natural
    alignment (8 rows of the swizzle width). ``value`` is the packed descriptor: bits 0-13, 16-29, 32-45, 49-51 and 62-63.
    """

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    base_offset: int
    layout_type: int

    @property
    def value(self) -> int:
        return (self.start_address | self.leading_byte_offset << 16 | self.stride_byte_offset << 32
                | self.base_offset << 49 | self.layout_type << 62)

    def __str__(self) -> str:
        return (f"GmmaDescriptor: 0x{self.value:016x}\n  start_addr :  0x{self.start_address:04x}\n"
                f"  leading_off:  0x{self.leading_byte_offset:04x} ({self.leading_byte_offset})\n"
                f"  stride_off :  0x{self.stride_byte_offset:04x} ({self.stride_byte_offset})\n"
                f"  base_offset:  0x{self.base_offset:x}\n  layout_type:  0x{self.layout_type:x}")


def _encode(byte_value: int) -> int:
    """PTX's matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    return (byte_value & 0x3FFFF) >> 4


def _swizzle_bytes_of(sw: Swizzle, elem_bits: int) -> int:
    """The swizzling mode (0/32/64/128 bytes) a swizzle on element offsets implements, or ValueError."""
    chunk_base = _log2(128 // elem_bits)  # offset bit of one 16-byte chunk
    if sw.bits == 0:
        return 0
    if sw.base != chunk_base or sw.shift != 3 or sw.bits > 3:
        raise ValueError(f"{sw} on {elem_bits}-bit elements is not a wgmma swizzle (expected "
                         f"Sw<B,{chunk_base},3> with B in 0..3)")
    return 16 << sw.bits


def _stride(L: Layout, *path: int) -> int:
    s = L.stride
    for i in path:
        s = s[i] if is_tuple(s) else s
    if is_tuple(s):
        raise ValueError(f"not a canonical wgmma layout: mode {path} of {L} is not a single stride")
    return s


def make_gmma_desc(smem_layout: Any, major: str, elem: str | int, start_address: int = 0) -> GmmaDescriptor:
    """The wgmma descriptor of a rank-2 (MN, K) operand tile with the given shared-memory layout (a
    swizzled ComposedLayout, possibly a slice with an offset, or a plain Layout, in elements) of a
    buffer starting at byte `start_address`.

    As CuTe's make_gmma_desc: the layout is re-expressed in 16-byte units and divided into the
    canonical form of its swizzling mode, K-major ((8,m),(2,...)) or MN-major ((W,m),(8,k)); the
    strides of that form are the descriptor's byte offsets. Raises ValueError when the layout is
    not one wgmma can read.
    """
    bits = bits_of(elem)
    if isinstance(smem_layout, ComposedLayout):
        if not isinstance(smem_layout.outer, Swizzle) or not isinstance(smem_layout.offset, int):
            raise ValueError(f"make_gmma_desc: expected Swizzle o offset o layout, got {smem_layout}")
        sw_bytes = _swizzle_bytes_of(smem_layout.outer, bits)
        inner = smem_layout.inner
        # A slice of a larger tile (one k-block) starts `offset` elements in, before swizzling: the
        # hardware applies the swizzle to the addresses it forms, as the layout does to offsets.
        start_address += smem_layout.offset * bits // 8
    else:
        sw_bytes, inner = 0, smem_layout
    if inner.rank != 2:
        raise ValueError(f"make_gmma_desc: expected a rank-2 (MN, K) layout, got {inner}")
    per_chunk = 128 // bits
    u128 = _L.upcast(inner, per_chunk)  # in 16-byte units
    W = _SWIZZLE_CHUNKS[sw_bytes]
    if major == "K":
        # ((8 rows, m), (2 chunks along K, ...)): 8 rows W chunks apart; chunk 2 follows chunk 1
        if _L.size(u128[0]) % 8 or _L.size(u128[1]) != 2:
            raise ValueError(f"make_gmma_desc: a K-major operand tile is (8m rows, 32 bytes of K), got {inner}")
        canon = _L.logical_divide(u128, (Layout(8, 1), Layout(2, 1)))
        s00, s10 = _stride(canon, 0, 0), _stride(canon, 1, 0)
        if s00 != W or (sw_bytes and s10 != 1):
            raise ValueError(f"make_gmma_desc: {smem_layout} is not a canonical K-major layout for a "
                             f"{sw_bytes or 'non'}-swizzled operand (in 16-byte units it is {canon})")
        sbo, lbo = _stride(canon, 0, 1), s10
    elif major == "MN":
        if _L.size(u128[1]) * bits != 256:
            raise ValueError(f"make_gmma_desc: an MN-major operand tile spans 32 bytes of K, got {inner}")
        # ((W chunks along MN, m), (8 along K, k))
        canon = _L.logical_divide(u128, (Layout(W, 1), Layout(8, 1)))
        s00, s10 = _stride(canon, 0, 0), _stride(canon, 1, 0)
        if (sw_bytes and s00 != 1) or s10 != W:
            raise ValueError(f"make_gmma_desc: {smem_layout} is not a canonical MN-major layout for a "
                             f"{sw_bytes or 'non'}-swizzled operand (in 16-byte units it is {canon})")
        s01, s11 = _stride(canon, 0, 1), _stride(canon, 1, 1)
        sbo, lbo = (s01, s11) if sw_bytes == 0 else (s11, s01)
    else:
        raise ValueError(f"major must be 'K' or 'MN', got {major!r}")
    if start_address % 16:
        raise ValueError(f"wgmma operands start at 16-byte aligned addresses, got {start_address}")
    # Base offset 0: the buffer holding the tile is aligned to its swizzle pattern (8 rows of the
    # swizzle width, 1024 bytes for 128-byte swizzles), as CuTe assumes; a k-block's start inside the
    # tile (start + 32 bytes, ...) still belongs to that pattern.
    return GmmaDescriptor(_encode(start_address), lbo & 0x3FFF, sbo & 0x3FFF, 0, _LAYOUT_TYPE[sw_bytes])
