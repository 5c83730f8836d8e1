"""Copy atoms and tiled copies, CuTe's way: which thread moves which element is a layout.

A copy atom is one data-movement instruction described by layouts in bits (CuTe's ``Copy_Traits``):
``src_bits`` / ``dst_bits`` map (thread, value) to the bit each thread reads / writes, ``ref_bits`` is
the reference the tiled copy is built on. Given the element type, those become layouts in elements
(``layout_src``/``layout_dst``/``layout_ref``). A tiled copy places atoms over a (thread, value) ->
coordinate layout of a tile (CuTe's ``TiledCopy``); its thread slices partition source and
destination tensors of any engine through the tensor layer's layout functions only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilecraft import layout as _L
from tilecraft.atoms.mma import TiledMMA
from tilecraft.atoms.types import bits_of
from tilecraft.layout import Layout, is_tuple, product_each, right_inverse, size, upcast
from tilecraft.tensor import Tensor, zipped_divide
from tilecraft.tensor import composition as _compose

__all__ = [
    "CopyAtom", "TiledCopy", "ThrCopy", "universal_copy", "cp_async", "ldmatrix", "stmatrix",
    "make_tiled_copy", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
]


@dataclass(frozen=True)
class CopyAtom:
    """One copy instruction as layouts (CuTe's Copy_Atom<Copy_Traits<Op>, ValType>).

    ``thr_id``: logical thread -> thread index (1 thread, or a warp for ldmatrix/stmatrix).
    ``src_bits``/``dst_bits``/``ref_bits``: (thread, value) -> bit, for source, destination and the
    reference; ``val_bits`` is the element width that turns them into element layouts. ``ptx`` is the
    instruction, ``cxx`` the atoms.cuh wrapper that issues it.
    """

    name: str
    ptx: str
    thr_id: Layout
    src_bits: Layout
    dst_bits: Layout
    ref_bits: Layout
    val_bits: int
    arch: str
    cxx: str

    def __post_init__(self) -> None:
        for what, lay in (("source", self.src_bits), ("destination", self.dst_bits), ("reference", self.ref_bits)):
            bits = size(lay[1])
            if bits % self.val_bits:
                raise ValueError(f"{self.name}: each thread's {what} holds {bits} bits, not a whole number of "
                                 f"{self.val_bits}-bit elements")

    @property
    def layout_src(self) -> Layout:
        """(thread, value) -> source element offset."""
        return upcast(self.src_bits, self.val_bits)

    @property
    def layout_dst(self) -> Layout:
        """(thread, value) -> destination element offset."""
        return upcast(self.dst_bits, self.val_bits)

    @property
    def layout_ref(self) -> Layout:
        """(thread, value) -> reference element offset (the TV layout a tiled copy tiles)."""
        return upcast(self.ref_bits, self.val_bits)

    @property
    def num_threads(self) -> int:
        """The threads one instruction takes (1, or a warp for ldmatrix/stmatrix)."""
        return size(self.thr_id)

    @property
    def num_val_src(self) -> int:
        """Source elements per thread per instruction."""
        return size(self.layout_src[1])

    @property
    def num_val_dst(self) -> int:
        """Destination elements per thread per instruction."""
        return size(self.layout_dst[1])

    def with_value_bits(self, val: str | int) -> "CopyAtom":
        """The same instruction moving elements of another type (e.g. ldmatrix of f16 or of bf16)."""
        return CopyAtom(self.name, self.ptx, self.thr_id, self.src_bits, self.dst_bits, self.ref_bits,
                        bits_of(val), self.arch, self.cxx)

    def __str__(self) -> str:
        return (f"Copy_Atom {self.name} ({self.val_bits}-bit values)\n  ThrID:        {self.thr_id}\n"
                f"  ValLayoutSrc: {self.layout_src}\n  ValLayoutDst: {self.layout_dst}\n"
                f"  ValLayoutRef: {self.layout_ref}")


def _one_thread(bits: int) -> Layout:
    """(T1, V bits) -> bit: one thread moving `bits` contiguous bits."""
    return Layout((1, bits))


def universal_copy(bits: int = 128, val: str | int | None = None) -> CopyAtom:
    """One thread copying `bits` (8..128) contiguous bits with a plain vectorized load and store
    (CuTe's UniversalCopy<uint{bits}_t>)."""
    if bits not in (8, 16, 32, 64, 128):
        raise ValueError(f"universal_copy: bits must be 8, 16, 32, 64 or 128, got {bits}")
    L = _one_thread(bits)
    return CopyAtom(f"UniversalCopy<uint{bits}_t>", f"ld.b{bits} / st.b{bits}", Layout(1), L, L, L,
                    bits_of(bits if val is None else val), "sm_50", f"tc::copy_b{bits}")


def cp_async(nbytes: int = 16, val: str | int | None = None, *, cache: str = "always", zfill: bool = False) -> CopyAtom:
    """One thread's asynchronous global->shared copy of 4, 8 or 16 bytes (``cp.async``, sm80).

    ``cache="always"`` (.ca, through L1) or ``"global"`` (.cg, L2 only, 16 bytes only). ``zfill``
    gives the predicated form: a false predicate copies 0 source bytes and zero-fills the
    destination, which is how ragged tile edges are guarded.
    """
    if nbytes not in (4, 8, 16):
        raise ValueError(f"cp.async copies 4, 8 or 16 bytes, got {nbytes}")
    if cache not in ("always", "global"):
        raise ValueError(f"cp.async cache must be 'always' (.ca) or 'global' (.cg), got {cache!r}")
    if cache == "global" and nbytes != 16:
        raise ValueError("cp.async.cg copies only 16 bytes")
    L = _one_thread(8 * nbytes)
    level = "ca" if cache == "always" else "cg"
    ptx = f"cp.async.{level}.shared.global [dst], [src], {nbytes}" + (", src_bytes" if zfill else "")
    name = f"SM80_CP_ASYNC_CACHE{cache.upper()}{'_ZFILL' if zfill else ''}<uint{8 * nbytes}_t>"
    cxx = f"tc::cp_async_{level}_{nbytes}" + ("_zfill" if zfill else "")
    return CopyAtom(name, ptx, Layout(1), L, L, L, bits_of(8 * nbytes if val is None else val), "sm_80", cxx)


# ldmatrix: (src-thr, src-val) -> bit. Thread t supplies the address of one 128-bit row; with fewer
# than four matrices the upper threads' addresses are ignored (stride-0 thread modes).
_LDSM_SRC = {
    1: Layout(((8, 4), 128), ((128, 0), 1)),
    2: Layout(((16, 2), 128), ((128, 0), 1)),
    4: Layout((32, 128), (128, 1)),
}
# (dst-thr, dst-val) -> bit: thread t receives 32 bits of each 8x8 matrix, i.e. row t/4, bits 32*(t%4)..
_LDSM_DST_N = {
    1: Layout((32, 32), (32, 1)),
    2: Layout((32, (32, 2)), (32, (1, 1024))),
    4: Layout((32, (32, 4)), (32, (1, 1024))),
}
# .trans: thread t receives the 16-bit elements of column t/4, rows 2*(t%4) and 2*(t%4)+1.
_LDSM_DST_T = {
    1: Layout(((4, 8), (16, 2)), ((256, 16), (1, 128))),
    2: Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024))),
    4: Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024))),
}


def _check_num(num: int, what: str) -> None:
    if num not in (1, 2, 4):
        raise ValueError(f"{what} moves 1, 2 or 4 8x8 matrices (.x1/.x2/.x4), got {num}")


def ldmatrix(num: int = 4, trans: bool = False, val: str | int = "f16") -> CopyAtom:
    """The warp-wide shared->register load of `num` 8x8 matrices of 16-bit elements (``ldmatrix``,
    sm75+), optionally transposed: CuTe's SM75_U32x{1,2,4}_LDSM_N / SM75_U16x{2,4,8}_LDSM_T."""
    _check_num(num, "ldmatrix")
    dst = (_LDSM_DST_T if trans else _LDSM_DST_N)[num]
    name = f"SM75_U16x{2 * num}_LDSM_T" if trans else f"SM75_U32x{num}_LDSM_N"
    ptx = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    cxx = f"tc::ldmatrix_x{num}{'_trans' if trans else ''}"
    return CopyAtom(name, ptx, Layout(32), _LDSM_SRC[num], dst, dst, bits_of(val), "sm_75", cxx)


def stmatrix(num: int = 4, trans: bool = False, val: str | int = "f16") -> CopyAtom:
    """The warp-wide register->shared store of `num` 8x8 matrices (``stmatrix``, sm90): ldmatrix with
    source and destination exchanged (CuTe's SM90_U32x{1,2,4}_STSM_N / SM90_U16x{2,4,8}_STSM_T)."""
    _check_num(num, "stmatrix")
    src = (_LDSM_DST_T if trans else _LDSM_DST_N)[num]
    name = f"SM90_U16x{2 * num}_STSM_T" if trans else f"SM90_U32x{num}_STSM_N"
    ptx = f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    cxx = f"tc::stmatrix_x{num}{'_trans' if trans else ''}"
    return CopyAtom(name, ptx, Layout(32), src, _LDSM_SRC[num], src, bits_of(val), "sm_90", cxx)


# ----------------------------------------------------------------------------------- tiled copy

def _rep(n: int) -> Any:
    """CuTe's repeat<n>(_): one '_' for n == 1, else a tuple of them."""
    return None if n == 1 else (None,) * n


def _layout_of(x: Any) -> Any:
    return x.layout if isinstance(x, Tensor) else x


def _as_shape_tuple(s: Any) -> tuple:
    return s if is_tuple(s) else (s,)


@dataclass(frozen=True)
class TiledCopy:
    """Copy atoms placed over a tile (CuTe's TiledCopy): ``layout_tv`` maps (thread index, value
    index) to the column-major index of an element of the tile of shape ``tiler_mn``."""

    atom: CopyAtom
    layout_tv: Layout
    tiler_mn: tuple

    def __post_init__(self) -> None:
        nthr, nval = size(self.layout_tv[0]), size(self.layout_tv[1])
        if nthr % self.atom.num_threads:
            raise ValueError(f"the tiled copy has {nthr} threads, not a multiple of the atom's {self.atom.num_threads}")
        if nval % size(self.atom.layout_ref[1]):
            raise ValueError(f"the tiled copy gives each thread {nval} values, not a multiple of the atom's "
                             f"{size(self.atom.layout_ref[1])}")

    def size(self) -> int:
        """The number of threads."""
        return size(self.layout_tv[0])

    def _tile2thrfrg(self, x: Any, ref2trg: Layout) -> Any:
        """((TileM,TileN,...),(RestM,RestN,...)) -> (Thr,(FrgV,FrgX),(RestM,RestN,...)): the tile mode
        becomes (thread, (values of one atom, atoms)) expressed for the source or destination."""
        atom_tv = _L.zipped_divide(self.layout_tv, (self.atom.num_threads, size(self.atom.layout_ref[1])))
        trg_tv = _L.composition(atom_tv, (ref2trg, None))  # ((trg_tid,trg_val),(rest_tid,rest_val)) -> (m,n)
        thrval2mn = _L.coalesce(_L.zip_layouts(trg_tv[0], trg_tv[1]), (1, (1, 1)))
        tv = _compose(x, (thrval2mn, None))                  # ((tid,(val,rest_val)),(RestM,RestN,...))
        return tv((None, None), None)

    def tidfrg_S(self, x: Any) -> Any:
        """(M,N,...) -> (Thr,(FrgV,FrgX),(RestM,RestN,...)) for the source."""
        atom = self.atom
        return self._tile2thrfrg(zipped_divide(x, self.tiler_mn),
                                 _L.composition(right_inverse(atom.layout_ref), atom.layout_src))

    def tidfrg_D(self, x: Any) -> Any:
        """(M,N,...) -> (Thr,(FrgV,FrgX),(RestM,RestN,...)) for the destination."""
        atom = self.atom
        return self._tile2thrfrg(zipped_divide(x, self.tiler_mn),
                                 _L.composition(right_inverse(atom.layout_ref), atom.layout_dst))

    def get_layoutS_TV(self) -> Layout:
        """(thread index, value) -> index in the tile, for the source."""
        ref = Layout((self.tiler_mn, 1))
        atom = self.atom
        return self._tile2thrfrg(ref, _L.composition(right_inverse(atom.layout_ref), atom.layout_src))(None, None, 0)

    def get_layoutD_TV(self) -> Layout:
        """(thread index, value) -> index in the tile, for the destination."""
        ref = Layout((self.tiler_mn, 1))
        atom = self.atom
        return self._tile2thrfrg(ref, _L.composition(right_inverse(atom.layout_ref), atom.layout_dst))(None, None, 0)

    def retile(self, x: Any) -> Any:
        """A thread's fragment (V, M, N, ...) re-viewed as the copy needs it: ((atom values, rest
        values), RestM, RestN, ...). Used to copy into register fragments that another partitioning
        (e.g. a tiled MMA's partition_fragment_A) made."""
        lay = _layout_of(x)
        R = lay.rank
        V = size(lay[0])
        nthr = self.size()
        frg_mn = upcast(_L.composition(right_inverse(self.layout_tv), Layout(self.tiler_mn)), nthr * V)
        frg_v = _L.zipped_divide(_L.logical_product(Layout(V), right_inverse(frg_mn)),
                                 Layout(size(self.atom.layout_ref[1])))
        tiler = (V,) + _as_shape_tuple(product_each(frg_mn.shape))
        t = zipped_divide(x, tiler)                                      # ((TileV,TileM,TileN,...),(1,RestM,...))
        v = _compose(t, (frg_v, None))                                   # ((atom_vals,rest_vals),(1,RestM,...))
        return v(None, 0 if R == 1 else (0,) + (None,) * (R - 1))

    def get_slice(self, thr_idx: Any) -> "ThrCopy":
        """The view of thread thr_idx (an int, or a symbolic thread index in the kernel language)."""
        if isinstance(thr_idx, int) and not 0 <= thr_idx < self.size():
            raise ValueError(f"thread index {thr_idx} is outside the tiled copy's {self.size()} threads")
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice

    def __str__(self) -> str:
        return f"TiledCopy\n  Tiler_MN:       {self.tiler_mn}\n  TiledLayout_TV: {self.layout_tv}\n{self.atom}"


class ThrCopy:
    """One thread's view of a tiled copy (CuTe's ThrCopy)."""

    __slots__ = ("tiled_copy", "thr_idx")

    def __init__(self, tiled_copy: TiledCopy, thr_idx: Any):
        self.tiled_copy, self.thr_idx = tiled_copy, thr_idx

    def partition_S(self, x: Any) -> Any:
        """The source elements this thread copies: (CPY, CPY_M, CPY_N, ...), CPY = one atom's values
        times the atoms this thread issues per tile."""
        return self.tiled_copy.tidfrg_S(x)(self.thr_idx, None, _rep(_layout_of(x).rank))

    def partition_D(self, x: Any) -> Any:
        """The destination elements this thread copies: (CPY, CPY_M, CPY_N, ...)."""
        return self.tiled_copy.tidfrg_D(x)(self.thr_idx, None, _rep(_layout_of(x).rank))

    def retile_S(self, x: Any) -> Any:
        """A register fragment of this thread re-viewed as a copy source (see TiledCopy.retile)."""
        return self.tiled_copy.retile(x)

    def retile_D(self, x: Any) -> Any:
        """A register fragment of this thread re-viewed as a copy destination (see TiledCopy.retile)."""
        return self.tiled_copy.retile(x)

    def __repr__(self) -> str:
        return f"ThrCopy(thr_idx={self.thr_idx})"


def make_tiled_copy(atom: CopyAtom, thr_layout: Any, val_layout: Any = 1) -> TiledCopy:
    """Threads arranged by thr_layout ((m, n) -> thread index), each moving a block of values arranged
    by val_layout ((m, n) -> value index): the tile is their raked product."""
    thr = thr_layout if isinstance(thr_layout, Layout) else Layout(thr_layout)
    val = val_layout if isinstance(val_layout, Layout) else Layout(val_layout)
    layout_mn = _L.raked_product(thr, val)                    # (M,N) -> (thr_idx, val_idx)
    layout_tv = _L.composition(right_inverse(layout_mn), Layout((size(thr), size(val))))  # (thr,val) -> (M,N)
    return TiledCopy(atom, layout_tv, _as_shape_tuple(product_each(layout_mn.shape)))


def make_tiled_copy_A(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    """A tiled copy whose threads hold A exactly as the tiled MMA's threads need it."""
    return TiledCopy(atom, mma.get_layoutA_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(2)))


def make_tiled_copy_B(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    """A tiled copy whose threads hold B exactly as the tiled MMA's threads need it."""
    return TiledCopy(atom, mma.get_layoutB_TV(), (mma.tile_size_mnk(1), mma.tile_size_mnk(2)))


def make_tiled_copy_C(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    """A tiled copy whose threads hold C exactly as the tiled MMA's threads hold the accumulators."""
    return TiledCopy(atom, mma.get_layoutC_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(1)))
