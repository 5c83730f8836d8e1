"""MMA atoms and tiled MMAs, CuTe's way: which thread holds which element is a layout.

An MMA atom is one tensor-core instruction described by layouts: ``thr_id`` maps the atom's logical
thread to a thread index, and the A/B/C thread-value layouts map (thread, value) to the column-major
index of an element in the M×K, N×K and M×N tiles (CuTe's ``MMA_Traits``). A tiled MMA repeats the
atom over a layout of atoms (warps) and optionally permutes the M/N/K modes (CuTe's ``TiledMMA``);
its thread slices partition any tensor (host array, pointer or register tensor) through the tensor
layer's layout functions only, so the same code serves numpy and the kernel language.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilecraft import layout as _L
from tilecraft.atoms.types import bits_of
from tilecraft.atoms.sm90_codegen import WGMMA_TYPE_PAIRS, wgmma_name
from tilecraft.layout import Layout, make_layout, right_inverse, size
from tilecraft.tensor import Tensor, make_fragment_like, zipped_divide
from tilecraft.tensor import composition as _compose
from tilecraft.tensor import logical_divide as _ldivide
from tilecraft.tensor.tensor import _flat_coord

__all__ = [
    "MMAAtom", "TiledMMA", "ThrMMA", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
    "partition_shape_C", "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_16x8x32_S32S8S8S32_TN",
    "SM89_16x8x32_F32E4M3E4M3F32_TN", "SM80_ATOMS", "wgmma_atom",
]


@dataclass(frozen=True)
class MMAAtom:
    """One MMA instruction as layouts (CuTe's MMA_Traits).

    ``layout_a_tv``: (thread, value) -> index of A's element in the M×K tile (column-major, so
    index m + M*k); ``layout_b_tv``: into the N×K tile; ``layout_c_tv``: into the M×N tile.
    ``thr_id``: logical thread -> thread index within the instruction's threads (a warp, or a
    warpgroup for wgmma). ``ptx`` is the instruction, ``cxx`` the atoms.cuh wrapper that issues it
    (for wgmma: the sm90.cuh wrapper, "" for type combinations it has none for).
    """

    name: str
    ptx: str
    shape_mnk: tuple[int, int, int]
    thr_id: Layout
    layout_a_tv: Layout
    layout_b_tv: Layout
    layout_c_tv: Layout
    a_type: str
    b_type: str
    c_type: str
    arch: str
    cxx: str
    # wgmma only: A/B come from shared memory through descriptors ("ss"), or A from registers ("rs").
    operands: str = "rr"
    major_a: str = "K"
    major_b: str = "K"

    @property
    def num_threads(self) -> int:
        """The threads one instruction takes (32, or 128 for a wgmma warpgroup)."""
        return size(self.thr_id)

    def __str__(self) -> str:
        return (f"MMA_Atom {self.name}\n  ThrID:      {self.thr_id}\n  Shape_MNK:  {self.shape_mnk}\n"
                f"  LayoutA_TV: {self.layout_a_tv}\n  LayoutB_TV: {self.layout_b_tv}\n"
                f"  LayoutC_TV: {self.layout_c_tv}")


# (T32,V4) -> (M16,N8): the accumulator layout shared by every m16n8 sm80/sm89 atom.
_SM80_16x8_ROW = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
# (T32,V4) -> (M8,N16) and (T32,V2) -> (M8,N8)
_SM80_8x16_ROW = Layout(((4, 8), 4), ((32, 1), 8))


def _sm80(name: str, ptx_types: str, mnk: tuple[int, int, int], a: Layout, b: Layout, types: tuple[str, str, str],
          arch: str, cxx: str) -> MMAAtom:
    m, n, k = mnk
    return MMAAtom(name, f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{ptx_types}", mnk, Layout(32), a, b, _SM80_16x8_ROW,
                   types[0], types[1], types[2], arch, cxx)


_A_16x16 = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
_B_8x16 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))

SM80_16x8x16_F32F16F16F32_TN = _sm80("SM80_16x8x16_F32F16F16F32_TN", "f32.f16.f16.f32", (16, 8, 16), _A_16x16,
                                     _B_8x16, ("f16", "f16", "f32"), "sm_80", "tc::mma_m16n8k16_f32_f16")
SM80_16x8x16_F32BF16BF16F32_TN = _sm80("SM80_16x8x16_F32BF16BF16F32_TN", "f32.bf16.bf16.f32", (16, 8, 16),
                                       _A_16x16, _B_8x16, ("bf16", "bf16", "f32"), "sm_80",
                                       "tc::mma_m16n8k16_f32_bf16")
SM80_16x8x16_F16F16F16F16_TN = _sm80("SM80_16x8x16_F16F16F16F16_TN", "f16.f16.f16.f16", (16, 8, 16), _A_16x16,
                                     _B_8x16, ("f16", "f16", "f16"), "sm_80", "tc::mma_m16n8k16_f16_f16")
SM80_16x8x8_F32TF32TF32F32_TN = _sm80("SM80_16x8x8_F32TF32TF32F32_TN", "f32.tf32.tf32.f32", (16, 8, 8),
                                      Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
                                      Layout(((4, 8), 2), ((8, 1), 32)), ("tf32", "tf32", "f32"), "sm_80",
                                      "tc::mma_m16n8k8_f32_tf32")
_A_16x32_8BIT = Layout(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))
_B_8x32_8BIT = Layout(((4, 8), (4, 2)), ((32, 1), (8, 128)))
SM80_16x8x32_S32S8S8S32_TN = _sm80("SM80_16x8x32_S32S8S8S32_TN", "s32.s8.s8.s32", (16, 8, 32), _A_16x32_8BIT,
                                   _B_8x32_8BIT, ("s8", "s8", "s32"), "sm_80", "tc::mma_m16n8k32_s32_s8")
SM89_16x8x32_F32E4M3E4M3F32_TN = _sm80("SM89_16x8x32_F32E4M3E4M3F32_TN", "f32.e4m3.e4m3.f32", (16, 8, 32),
                                       _A_16x32_8BIT, _B_8x32_8BIT, ("e4m3", "e4m3", "f32"), "sm_89",
                                       "tc::mma_m16n8k32_f32_e4m3")

SM80_ATOMS: tuple[MMAAtom, ...] = (
    SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x16_F32BF16BF16F32_TN, SM80_16x8x16_F16F16F16F16_TN,
    SM80_16x8x8_F32TF32TF32F32_TN, SM80_16x8x32_S32S8S8S32_TN, SM89_16x8x32_F32E4M3E4M3F32_TN,
)

# ----------------------------------------------------------------------------------- sm90 wgmma

_WGMMA_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2")


def _wgmma_c_layout(n: int) -> Layout:
    """(T128,V) -> (M64,N): each warp owns 16 rows; a thread holds pairs of columns in rows r, r+8."""
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def _wgmma_a_register_layout(bits: int) -> Layout:
    """(T128,V) -> (M64,K): A from registers, the m16n8 A fragment repeated over the four warps."""
    if bits == 16:
        return Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))
    if bits == 8:
        return Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))
    if bits == 32:
        return Layout(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256)))
    raise ValueError(f"no register-sourced wgmma A layout for {bits}-bit elements")


def _wgmma_smem_layout(mn: int, k: int) -> Layout:
    """(T128,V) -> (MN,K) for an operand in shared memory: every thread 'holds' the whole tile (stride-0
    thread mode), since the instruction reads it through one descriptor."""
    return Layout((128, (mn, k)), (0, (1, mn)))


def wgmma_atom(n: int, a_type: str = "f16", b_type: str | None = None, c_type: str = "f32", *,
               operands: str = "ss", major_a: str = "K", major_b: str = "K") -> MMAAtom:
    """The sm90a warpgroup MMA ``wgmma.mma_async ... m64nNkK`` as an atom (CuTe's SM90 GMMA traits).

    K is 256 bits of A's element type (16 for f16/bf16, 32 for e4m3/e5m2, 8 for tf32). ``operands``
    is "ss" (A and B through shared-memory descriptors) or "rs" (A from registers). 8-bit and tf32
    operands must be K-major, as the instruction requires.
    """
    b_type = a_type if b_type is None else b_type
    if a_type not in _WGMMA_TYPES or b_type not in _WGMMA_TYPES:
        raise ValueError(f"wgmma: unsupported operand types {a_type}/{b_type}; expected one of {_WGMMA_TYPES}")
    bits = bits_of(a_type)
    if bits_of(b_type) != bits:
        raise ValueError(f"wgmma: A ({a_type}) and B ({b_type}) must have the same width")
    if not (n % 8 == 0 and 8 <= n <= 256):
        raise ValueError(f"wgmma: N must be a multiple of 8 in [8, 256], got {n}")
    if operands not in ("ss", "rs"):
        raise ValueError(f"wgmma: operands must be 'ss' or 'rs', got {operands!r}")
    if bits != 16 and (major_a != "K" or major_b != "K"):
        raise ValueError(f"wgmma with {a_type} operands supports only K-major A and B")
    if operands == "rs" and major_a != "K":
        raise ValueError("wgmma: A from registers is always K-major")
    k = 256 // bits
    a = _wgmma_a_register_layout(bits) if operands == "rs" else _wgmma_smem_layout(64, k)
    ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{c_type}.{a_type}.{b_type}"
    name = f"SM90_64x{n}x{k}_{c_type.upper()}{a_type.upper()}{b_type.upper()}_{operands.upper()}"
    # The wrapper in tilecraft/sm90.cuh (or emitted by sm90_codegen for N outside its header), where
    # one exists: f32 accumulation of the f16/bf16/tf32/fp8 pairs.
    has_wrapper = c_type == "f32" and (a_type, b_type) in WGMMA_TYPE_PAIRS
    cxx = f"tc::{wgmma_name(n, a_type, b_type, operands)}" if has_wrapper else ""
    return MMAAtom(name, ptx, (64, n, k), Layout(128), a, _wgmma_smem_layout(n, k), _wgmma_c_layout(n),
                   a_type, b_type, c_type, "sm_90a", cxx, operands, major_a, major_b)


# ----------------------------------------------------------------------------------- tiled MMA

def _mode(x: Any, i: int) -> Layout:
    return x.layout[i] if isinstance(x, Tensor) else x[i]


def _layout_of(x: Any) -> Any:
    return x.layout if isinstance(x, Tensor) else x


def _rep(n: int) -> Any:
    """CuTe's repeat<n>(_): one '_' for n == 1, else a tuple of them."""
    return None if n == 1 else (None,) * n


@dataclass(frozen=True)
class TiledMMA:
    """An MMA atom repeated over a layout of atoms, with optional M/N/K permutations (CuTe's TiledMMA).

    ``thr_layout_vmnk`` = tiled_product(atom.thr_id, atom_layout_mnk): (ThrV, ThrM, ThrN, ThrK) ->
    thread index. ``permutation_mnk[i]`` is None (CuTe's ``_``: the atoms' own tile) or a layout/size
    that reorders mode i of the tensor before it is tiled by the atom.
    """

    atom: MMAAtom
    atom_layout_mnk: Layout
    permutation: tuple[Any, Any, Any] = (None, None, None)
    thr_layout_vmnk: Layout = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "thr_layout_vmnk", _L.tiled_product(self.atom.thr_id, self.atom_layout_mnk))

    # -- sizes
    def size(self) -> int:
        """The number of threads."""
        return size(self.thr_layout_vmnk)

    def permutation_mnk(self, i: int) -> Any:
        """The tiler applied to mode i before the atom tiles it (the atoms' extent when not permuted)."""
        perm = self.permutation[i]
        if perm is None:
            return self.atom.shape_mnk[i] * size(self.thr_layout_vmnk[i + 1])
        return perm

    def tile_size_mnk(self, i: int) -> int:
        """The extent of mode i (M, N or K) that one application of the tiled MMA covers."""
        return size(self.permutation_mnk(i))

    @property
    def tile_shape(self) -> tuple[int, int, int]:
        """(M, N, K) covered by one application of the tiled MMA."""
        return (self.tile_size_mnk(0), self.tile_size_mnk(1), self.tile_size_mnk(2))

    # -- (M,N,...) -> ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))
    def _thrfrg(self, x: Any, modes: tuple[int, int], atom_tv: Layout) -> Any:
        """Tile x by the permutation, then by the atom's tile, turn the atom mode from (m, n) into
        (thread, value), then tile the atom repetitions by the thread layout's modes."""
        i, j = modes
        rank = _layout_of(x).rank
        if rank < 2:
            raise ValueError(f"a tiled MMA partitions tensors of rank >= 2, got {_layout_of(x)}")
        t = _ldivide(x, (self.permutation_mnk(i), self.permutation_mnk(j)))                  # (PermI,PermJ)
        t = zipped_divide(t, (Layout(self.atom.shape_mnk[i]), Layout(self.atom.shape_mnk[j])))
        t = _compose(t, (atom_tv, None))                                  # ((ThrV,FrgV),(RestI,RestJ))
        thr_tile = (None, (Layout(size(self.thr_layout_vmnk[i + 1])), Layout(size(self.thr_layout_vmnk[j + 1]))))
        return zipped_divide(t, thr_tile)                     # ((ThrV,(ThrI,ThrJ)),(FrgV,(RestI,RestJ)))

    def thrfrg_A(self, x: Any) -> Any:
        """(M,K,...) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...)))."""
        return self._thrfrg(x, (0, 2), self.atom.layout_a_tv)

    def thrfrg_B(self, x: Any) -> Any:
        """(N,K,...) -> ((ThrV,(ThrN,ThrK)),(FrgV,(RestN,RestK,...)))."""
        return self._thrfrg(x, (1, 2), self.atom.layout_b_tv)

    def thrfrg_C(self, x: Any) -> Any:
        """(M,N,...) -> ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))."""
        return self._thrfrg(x, (0, 1), self.atom.layout_c_tv)

    # -- (thread index, value) -> coordinate index of the whole tile
    def _thridx_to_thrid(self) -> Layout:
        """thread index -> (ThrV,ThrM,ThrN,ThrK) coordinate index (padding the layout to a bijection)."""
        vmnk = self.thr_layout_vmnk
        n = size(vmnk)
        return _L.composition(Layout((n, 1), (1, 0)), right_inverse(make_layout(vmnk, _L.complement(vmnk))))

    def get_layoutC_TV(self) -> Layout:
        """(thread index, value) -> index of the (tile M × tile N) C tile, column-major."""
        ref = Layout((self.tile_size_mnk(0), self.tile_size_mnk(1)))
        return _L.composition(self.thrfrg_C(ref), (self._thridx_to_thrid(), None))

    def get_layoutA_TV(self) -> Layout:
        """(thread index, value) -> index of the (tile M × tile K) A tile; threads along N share A."""
        vmnk = self.thr_layout_vmnk
        ref = Layout((self.tile_size_mnk(0), self.tile_size_mnk(2)))
        atile = (None, (Layout((size(vmnk[1]), size(vmnk[2])), (1, 0)), None))
        return _L.composition(_L.composition(self.thrfrg_A(ref), (atile, None)), (self._thridx_to_thrid(), None))

    def get_layoutB_TV(self) -> Layout:
        """(thread index, value) -> index of the (tile N × tile K) B tile; threads along M share B."""
        vmnk = self.thr_layout_vmnk
        ref = Layout((self.tile_size_mnk(1), self.tile_size_mnk(2)))
        btile = (None, (Layout((size(vmnk[1]), size(vmnk[2])), (0, 1)), None))
        return _L.composition(_L.composition(self.thrfrg_B(ref), (btile, None)), (self._thridx_to_thrid(), None))

    def get_slice(self, thr_idx: Any) -> "ThrMMA":
        """The view of thread thr_idx (an int, or a symbolic thread index in the kernel language)."""
        if isinstance(thr_idx, int) and not 0 <= thr_idx < self.size():
            raise ValueError(f"thread index {thr_idx} is outside the tiled MMA's {self.size()} threads")
        return ThrMMA(self, _flat_coord(self.thr_layout_vmnk, thr_idx))

    get_thread_slice = get_slice

    def __str__(self) -> str:
        perm = tuple("_" if p is None else str(p) for p in self.permutation)
        return (f"TiledMMA\n  ThrLayoutVMNK:  {self.thr_layout_vmnk}\n  PermutationMNK: ({','.join(perm)})\n"
                f"{self.atom}")


def make_tiled_mma(atom: MMAAtom, atom_layout: Any = (1, 1, 1), permutation: Any = None) -> TiledMMA:
    """Repeat `atom` over `atom_layout` ((m, n, k) -> atom index; a Layout or a shape, padded to rank 3
    with 1:0) and reorder the tensor modes by `permutation` (a tuple of up to three tilers, None
    meaning CuTe's ``_``)."""
    lay = atom_layout if isinstance(atom_layout, Layout) else Layout(atom_layout)
    if lay.rank > 3:
        raise ValueError(f"make_tiled_mma: the atom layout {lay} has more than three (M, N, K) modes")
    lay = _L.append(lay, Layout(1, 0), n=3)
    perm = tuple(permutation) if permutation is not None else ()
    if len(perm) > 3:
        raise ValueError(f"make_tiled_mma: {len(perm)} permutations given, at most three (M, N, K)")
    perm = perm + (None,) * (3 - len(perm))
    return TiledMMA(atom, lay, perm)


class ThrMMA:
    """One thread's view of a tiled MMA (CuTe's ThrMMA): partitions A, B, C tiles of any tensor."""

    __slots__ = ("tiled_mma", "thr_vmnk")

    def __init__(self, tiled_mma: TiledMMA, thr_vmnk: Any):
        self.tiled_mma, self.thr_vmnk = tiled_mma, thr_vmnk

    def _partition(self, thr: Any, coord: tuple) -> Any:
        rest_rank = _mode(thr, 1)[1].rank
        return thr(coord, (None, _rep(rest_rank)))

    def partition_A(self, a: Any) -> Any:
        """The elements of an (M,K,...) tensor this thread feeds to the MMAs: (FrgV, RestM, RestK, ...)."""
        v, m, _n, k = self.thr_vmnk
        return self._partition(self.tiled_mma.thrfrg_A(a), (v, (m, k)))

    def partition_B(self, b: Any) -> Any:
        """The elements of an (N,K,...) tensor this thread feeds to the MMAs: (FrgV, RestN, RestK, ...)."""
        v, _m, n, k = self.thr_vmnk
        return self._partition(self.tiled_mma.thrfrg_B(b), (v, (n, k)))

    def partition_C(self, c: Any) -> Any:
        """The elements of an (M,N,...) tensor this thread accumulates: (FrgV, RestM, RestN, ...)."""
        v, m, n, _k = self.thr_vmnk
        return self._partition(self.tiled_mma.thrfrg_C(c), (v, (m, n)))

    def partition_fragment_A(self, a: Tensor, dtype: Any = None) -> Tensor:
        """Fresh storage shaped like partition_A(a), laid out like it (make_fragment_like)."""
        return make_fragment_like(self.partition_A(a), dtype)

    def partition_fragment_B(self, b: Tensor, dtype: Any = None) -> Tensor:
        """Fresh storage shaped like partition_B(b), laid out like it (make_fragment_like)."""
        return make_fragment_like(self.partition_B(b), dtype)

    def partition_fragment_C(self, c: Tensor, dtype: Any = None) -> Tensor:
        """Fresh accumulators shaped like partition_C(c), compact column-major: CuTe never bases the
        accumulator layout on C's memory layout."""
        p = self.partition_C(c)
        return make_fragment_like(Tensor(p.engine, Layout(p.shape)), dtype)

    def __repr__(self) -> str:
        return f"ThrMMA(thr_vmnk={self.thr_vmnk})"


def _partition_shape(thrfrg: Any, shape: Any) -> Any:
    dummy = thrfrg(Layout(shape))
    sliced = dummy(0, (None, _rep(dummy[1][1].rank)))
    return sliced.shape


def partition_shape_A(mma: TiledMMA, shape_mk: Any) -> Any:
    """The shape partition_A gives every thread for an A tile of shape_mk: (FrgV, RestM, RestK, ...)."""
    return _partition_shape(mma.thrfrg_A, shape_mk)


def partition_shape_B(mma: TiledMMA, shape_nk: Any) -> Any:
    """The shape partition_B gives every thread for a B tile of shape_nk: (FrgV, RestN, RestK, ...)."""
    return _partition_shape(mma.thrfrg_B, shape_nk)


def partition_shape_C(mma: TiledMMA, shape_mn: Any) -> Any:
    """The shape partition_C gives every thread for a C tile of shape_mn: (FrgV, RestM, RestN, ...)."""
    return _partition_shape(mma.thrfrg_C, shape_mn)
