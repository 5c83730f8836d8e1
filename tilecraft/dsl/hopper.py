"""Hopper (sm_90a) operations of the kernel language: TMA, mbarriers, wgmma, warpgroup roles.

These are the constructs a warp-specialized kernel is made of (issue 8); each one emits a call to an
inline-PTX wrapper of ``tilecraft/sm90.cuh`` and makes the kernel include that header.

* **Tensor maps.** A host ``tilecraft.runtime.tma.TmaMap`` (a ``CUtensorMap`` plus the arguments it
  was encoded from and the shared-memory tile layout it fills) passed to a kernel becomes a
  ``const __grid_constant__ CUtensorMap`` parameter; in the kernel it is a :class:`TmaMapArg`. Its
  static parts (box, swizzle, how tensor coordinates become map coordinates, the tile layout) are
  part of the specialization; the tensor's address, extents and strides live in the map only.
* **Copies.** ``tma_load(map, dst, bar, origin)`` moves the box whose first element is tensor element
  ``origin`` into the shared-memory tile ``dst`` (which must have the map's tile layout) and completes
  its bytes on mbarrier ``bar``; ``tma_store`` goes the other way.
* **mbarriers.** ``mbarriers(n)`` allocates n 64-bit barriers in shared memory: ``init``, ``arrive``
  (also on the same barrier of another CTA of the cluster), ``arrive_expect_tx``, ``wait(i, parity)``.
* **wgmma.** ``gmma_desc(tile, major)`` is the 64-bit shared-memory matrix descriptor of a swizzled
  smem tile (its fields from the tile's layout, ``tilecraft.atoms.make_gmma_desc``; its start address
  from the tile's runtime position), ``wgmma_gemm(atom, sA, sB, acc, accumulate)`` issues the
  warpgroup MMAs of acc (64*m, N) += sA (64*m, K) sB (N, K)^T, one per 64-row block and k-block.
  ``wgmma_fence`` / ``wgmma_commit`` / ``wgmma_wait(n)`` order them.
* **Roles.** ``warpgroup_index()`` (warp-uniform), ``setmaxnreg(n)``, ``elect_one()``.
* **Clusters.** ``cluster_rank()``, ``cluster_sync()`` or its halves ``cluster_arrive()`` / ``cluster_wait()``,
  and ``map_shared_rank(smem_tensor, rank)``: the tensor in another CTA's shared memory (distributed shared
  memory), which ``copy`` reads and writes like any other.
* **Programmatic dependent launch.** ``griddep_launch_dependents()`` lets the stream's next kernel (launched
  with ``pdl=True``) start early; ``griddep_wait()`` waits for the previous kernel's completion and memory.
  ``prefetch_l2_bulk(tensor, nbytes)`` asks L2 for a contiguous range, ``tma_prefetch_tile(map, origin)`` for a
  map's box (both safe before the wait: hints).
"""
from __future__ import annotations

from typing import Any

from tilecraft import layout as _L
from tilecraft.atoms.sm90_codegen import HEADER_N
from tilecraft.dsl.expr import BoolExpr, IntExpr, TraceError, Var, make, render
from tilecraft.dsl.memory import PointerEngine, RegisterEngine, smem_tensor, uint64
from tilecraft.dsl.trace import current
from tilecraft.layout import ComposedLayout, Swizzle
from tilecraft.layout.inttuple import _add
from tilecraft.tensor import Tensor, local_tile

__all__ = [
    "TmaMapArg", "tma_load", "tma_prefetch_tile", "tma_store", "tma_store_commit", "tma_store_wait", "tma_prefetch",
    "Barriers", "mbarriers", "fence_barrier_init", "fence_proxy_async",
    "gmma_desc", "wgmma_gemm", "wgmma_fence", "fence_operands", "wgmma_commit", "wgmma_wait",
    "warpgroup_index", "setmaxnreg", "elect_one", "cluster_rank", "cluster_sync", "cluster_arrive", "cluster_wait",
    "map_shared_rank", "named_barrier", "named_arrive",
    "griddep_wait", "griddep_launch_dependents", "prefetch_l2_bulk",
]

_HEADER = "tilecraft/sm90.cuh"


def _use_sm90() -> Any:
    t = current()
    t.includes.add(_HEADER)
    return t


def _u32(x: Any) -> str:
    return render(x, "unsigned")


# ----------------------------------------------------------------------------- tensor maps

class TmaMapArg:
    """A ``CUtensorMap`` kernel parameter: ``key`` is the host map's static description (see
    ``TmaMap.key``), ``args`` its ``TmaEncodeArgs`` (for the coordinate bookkeeping) and ``smem`` the
    tile layout the map fills."""

    def __init__(self, var: Var, args: Any, smem: Any):
        self.var, self.args, self.smem = var, args, smem

    @property
    def ref(self) -> str:
        return f"&{self.var.ph}"

    @property
    def box_bytes(self) -> int:
        """Bytes one load delivers (the mbarrier transaction count of one copy)."""
        return self.args.box_bytes

    def coords(self, origin: Any, cta_rank: int = 0) -> tuple[Any, ...]:
        """Map coordinates (innermost first) of the box starting at tensor element `origin`."""
        return self.args.coords(tuple(origin), cta_rank)

    def __repr__(self) -> str:
        return f"TmaMapArg({self.var.name}, box={self.args.box_dims})"


def _check_tile(m: TmaMapArg, tile: Tensor, what: str) -> None:
    if not isinstance(m, TmaMapArg):
        raise TraceError(f"{what}: expected a tensor-map argument (a TmaMap passed to the kernel), got {m!r}")
    eng = tile.engine
    if not (isinstance(eng, PointerEngine) and eng.space == "smem"):
        raise TraceError(f"{what}: the tile must be in shared memory, got {tile!r}")
    lay = tile.layout
    inner = lay.inner if isinstance(lay, ComposedLayout) else lay
    ref = m.smem.inner if isinstance(m.smem, ComposedLayout) else m.smem
    if _L.coalesce(inner) != _L.coalesce(ref) or (isinstance(lay, ComposedLayout) != isinstance(m.smem, ComposedLayout)) \
            or (isinstance(lay, ComposedLayout) and lay.outer != m.smem.outer):
        raise TraceError(f"{what}: the shared-memory tile {lay} is not the layout the map was made for ({m.smem})")
    if eng.dtype.bits // 8 != m.args.element_bytes:
        raise TraceError(f"{what}: the tile holds {eng.dtype}, the map {m.args.element_bytes}-byte elements")


def _tile_address(tile: Tensor) -> str:
    """The shared-window address of a tile's first element (its offset taken before any swizzle: tiles
    start on whole swizzle periods, which the swizzle leaves alone)."""
    off = _start_offset(tile)
    return f"tc::smem_u32({tile.engine.address(off)})"


def _start_offset(tile: Tensor) -> Any:
    lay = tile.layout
    off = tile.offset
    if isinstance(lay, ComposedLayout):
        off = off + lay.offset if not (isinstance(off, int) and off == 0) else lay.offset
        if isinstance(lay.outer, Swizzle) and lay.outer.bits:
            period = lay.outer.size()
            rest = off.split_multiple(period)[0] if isinstance(off, IntExpr) else off % period
            if not isinstance(rest, int) or lay.outer(rest) != rest:
                raise TraceError(f"a swizzled tile must start where the swizzle is the identity; offset {off}")
    return off


def tma_load(m: TmaMapArg, dst: Tensor, bar: Any, origin: Any, *, multicast: Any = None, cta_rank: Any = 0) -> None:
    """One thread: copy the box at tensor element `origin` into smem tile `dst`, completing on the
    mbarrier at shared address `bar`.

    With a map made for multicast k (``make_tma_map(..., multicast=k)``) this CTA copies slice
    ``cta_rank`` (0..k-1, may be a runtime value) of the tile to the CTAs of the 16-bit ``multicast``
    mask, at the same offset in each (each must expect the whole tile's bytes on its own barrier).
    With a map of one CTA's box and a ``multicast`` mask (``cta_rank`` None), the whole box goes to every
    CTA of the mask: CTAs that split a tile box by box (the Hopper GEMM's column blocks) each send theirs."""
    t = _use_sm90()
    _check_tile(m, dst, "tma_load")
    rank = m.args.rank
    if m.args.multicast == 1:
        if multicast is not None and cta_rank is not None:
            raise TraceError("tma_load: a multicast mask with a map of one CTA's box sends the whole box "
                             "(cta_rank=None); slices need a map made with multicast > 1")
        cs = ", ".join(render(c, "int") for c in m.coords(origin))
        if multicast is not None:
            t.emit(f"tc::tma_load_multicast_{rank}d({_tile_address(dst)}, {m.ref}, {_u32(bar)}, "
                   f"(tc::u16)({render(multicast, 'unsigned')}), {cs});")
            return
        t.emit(f"tc::tma_load_{rank}d({_tile_address(dst)}, {m.ref}, {_u32(bar)}, {cs});")
        return
    cs = _slice_coords(m, origin, cta_rank, "tma_load")
    if multicast is None:
        raise TraceError(f"tma_load: the map splits its tile over {m.args.multicast} CTAs; pass the CTA mask")
    per_slice = m.args.box_bytes // m.args.element_bytes
    sliced = Tensor(dst.engine, dst.layout, dst.offset + cta_rank * per_slice)
    t.emit(f"tc::tma_load_multicast_{rank}d({_tile_address(sliced)}, {m.ref}, {_u32(bar)}, "
           f"(tc::u16)({render(multicast, 'unsigned')}), {cs});")


def tma_prefetch_tile(m: TmaMapArg, origin: Any, cta_rank: Any = None) -> None:
    """One thread: ask L2 for the box ``tma_load`` would copy from tensor element `origin` (with a map made for
    multicast, this CTA's slice `cta_rank` of it, as tma_load takes it). Nothing lands in shared memory and nothing
    completes: a hint, safe before ``griddep_wait``."""
    t = _use_sm90()
    cs = (_slice_coords(m, origin, cta_rank, "tma_prefetch_tile") if m.args.multicast > 1
          else ", ".join(render(c, "int") for c in m.coords(origin)))
    t.emit(f"tc::tma_prefetch_{m.args.rank}d({m.ref}, {cs});")


def _slice_coords(m: TmaMapArg, origin: Any, cta_rank: Any, what: str) -> str:
    """The rendered map coordinates of slice `cta_rank` of the box at tensor element `origin`, for a map made for
    multicast (its box split along ``multicast_dim``); refused without a cta_rank."""
    if cta_rank is None:
        raise TraceError(f"{what}: the map splits its tile over {m.args.multicast} CTAs; pass this CTA's cta_rank")
    coords = list(m.coords(origin))
    md = m.args.multicast_dim
    coords[md] = coords[md] + cta_rank * m.args.box_dims[md]               # this CTA's slice of the box
    return ", ".join(render(c, "int") for c in coords)


def tma_store(m: TmaMapArg, src: Tensor, origin: Any) -> None:
    """One thread: store smem tile `src` (written by ordinary stores, then fence_proxy_async and a
    barrier) to the box at tensor element `origin` (the part inside the tensor)."""
    t = _use_sm90()
    _check_tile(m, src, "tma_store")
    cs = ", ".join(render(c, "int") for c in m.coords(origin))
    t.emit(f"tc::tma_store_{m.args.rank}d({m.ref}, {_tile_address(src)}, {cs});")


def tma_store_commit() -> None:
    """Close this thread's group of TMA stores (``cp.async.bulk.commit_group``)."""
    _use_sm90().emit("tc::tma_store_commit_group();")


def tma_store_wait(n: int, read: bool = True) -> None:
    """Wait until at most n store groups still read their shared memory (``read``), or are incomplete."""
    if not isinstance(n, int) or n < 0:
        raise TraceError(f"tma_store_wait needs a static count >= 0, got {n!r}")
    _use_sm90().emit(f"tc::tma_store_wait{'_read' if read else ''}<{n}>();")


def tma_prefetch(m: TmaMapArg) -> None:
    """Fetch the map into the TMA unit's descriptor cache ahead of the first copy."""
    _use_sm90().emit(f"tc::tma_prefetch_descriptor({m.ref});")


# ----------------------------------------------------------------------------- mbarriers

class Barriers:
    """n mbarriers in shared memory (64-bit each); index them with ints or runtime values."""

    def __init__(self, n: int):
        if not isinstance(n, int) or n < 1:
            raise TraceError(f"mbarriers needs a static count >= 1, got {n!r}")
        _use_sm90()
        self.n = n
        self.storage = smem_tensor(uint64, n, align=8)

    def addr(self, i: Any) -> IntExpr:
        """The shared-window address of barrier i."""
        return make("call", ("tc::smem_u32", make("raw", (self.storage.engine.address(i),), "void*")), "unsigned")

    def init(self, i: Any, count: int | Any) -> None:
        """Initialize barrier i for `count` arrivals per phase (one thread; then fence_barrier_init and
        a CTA or cluster barrier before any use)."""
        current().emit(f"tc::mbarrier_init({_u32(self.addr(i))}, {_u32(count)});")

    def arrive(self, i: Any, cta: Any = None) -> None:
        """Arrive on barrier i (of cluster CTA `cta` when given: the same offset in its shared memory)."""
        if cta is None:
            current().emit(f"tc::mbarrier_arrive({_u32(self.addr(i))});")
        else:
            current().emit(f"tc::mbarrier_arrive_cluster({_u32(self.addr(i))}, {_u32(cta)});")

    def arrive_expect_tx(self, i: Any, nbytes: Any) -> None:
        """Arrive on barrier i and announce `nbytes` transaction bytes of its current phase."""
        current().emit(f"tc::mbarrier_arrive_expect_tx({_u32(self.addr(i))}, {_u32(nbytes)});")

    def wait(self, i: Any, parity: Any, cluster: bool = False) -> None:
        """Block until the phase of barrier i with this parity (0 or 1) has completed; `cluster`: with acquire at
        cluster scope (what a peer CTA stored before arriving here with ``put`` is visible after it)."""
        fn = "mbarrier_wait_parity_cluster" if cluster else "mbarrier_wait_parity"
        current().emit(f"tc::{fn}({_u32(self.addr(i))}, {_u32(parity)});")

    def put(self, i: Any, slots: Tensor, value: Any, cta: Any) -> None:
        """Store value into slots(i) (32-bit, in shared memory) of CTA `cta` of the cluster and arrive on that
        CTA's barrier i, with release at cluster scope: a hand-off its readers take with ``wait(..,
        cluster=True)``."""
        eng = slots.engine
        if not (isinstance(eng, PointerEngine) and eng.space == "smem" and eng.dtype.bits == 32):
            raise TraceError(f"put needs 32-bit shared-memory slots, got {slots!r}")
        slot = f"tc::smem_u32({eng.address(_add(slots.offset, slots.layout(i)))})"
        current().emit(f"tc::queue_put_cluster({slot}, {_u32(self.addr(i))}, {render(value, 'int')}, {_u32(cta)});")


def mbarriers(n: int) -> Barriers:
    """n mbarriers in shared memory."""
    return Barriers(n)


def fence_barrier_init() -> None:
    """Make this thread's mbarrier initializations visible to TMA and to the cluster."""
    _use_sm90().emit("tc::fence_mbarrier_init();")


def fence_proxy_async() -> None:
    """Order this thread's shared-memory writes before later async-proxy (TMA, wgmma) reads."""
    _use_sm90().emit("tc::fence_proxy_async_shared();")


def named_barrier(barrier_id: Any, threads: int) -> None:
    """``bar.sync id, threads``: wait for `threads` threads (a multiple of 32) of the CTA to arrive at
    hardware barrier `barrier_id` (1..15; 0 is ``__syncthreads``'s): how one warpgroup synchronizes
    without the others."""
    _check_named(barrier_id, threads, "named_barrier")
    _use_sm90().emit(f"tc::bar_sync({_u32(barrier_id)}, {threads});")


def named_arrive(barrier_id: Any, threads: int) -> None:
    """``bar.arrive id, threads``: count this thread's arrival at hardware barrier `barrier_id` without
    waiting; the barrier opens for the threads waiting in ``named_barrier(barrier_id, threads)`` once
    `threads` have arrived (one warpgroup signals another)."""
    _check_named(barrier_id, threads, "named_arrive")
    _use_sm90().emit(f"tc::bar_arrive({_u32(barrier_id)}, {threads});")


def _check_named(barrier_id: Any, threads: Any, what: str) -> None:
    if not isinstance(threads, int) or threads <= 0 or threads % 32:
        raise TraceError(f"{what} needs a static thread count, a multiple of 32, got {threads!r}")
    if isinstance(barrier_id, int) and not 1 <= barrier_id <= 15:
        raise TraceError(f"{what}: barrier ids are 1..15 (0 is __syncthreads), got {barrier_id}")


# ----------------------------------------------------------------------------- wgmma

def gmma_desc(tile: Tensor, major: str) -> IntExpr:
    """The wgmma descriptor (``unsigned long long``) of a rank-2 (MN, K) smem tile: fields from its
    swizzled layout (``_static_desc``), start address from where it lies."""
    _use_sm90()
    eng = tile.engine
    if not (isinstance(eng, PointerEngine) and eng.space == "smem"):
        raise TraceError(f"gmma_desc: the tile must be in shared memory, got {tile!r}")
    off = _start_offset(tile) if isinstance(tile.layout, ComposedLayout) else tile.offset
    base = make("raw", (eng.address(off),), "void*")
    return make("call", ("tc::gmma_desc", make("call", ("tc::smem_u32", base), "unsigned"),
                         make("raw", (f"0x{_static_desc(tile, major):016x}ull",), "unsigned long long")),
                "unsigned long long")


def _k_block_desc(s: Tensor, tiler: tuple[int, int], coord: tuple[int, int], major: str) -> Any:
    """The descriptor of k-block coord[1] of smem tile `s` as that of k-block 0 plus the static distance
    between the two, in the descriptor's 16-byte units (the fields agree and the start address only
    moves), so the compiler computes one address per tile row block and k-tile instead of one per
    k-block; else (the distance not static or not whole 16-byte units) its own descriptor."""
    block0 = local_tile(s, tiler, (coord[0], 0))
    first = gmma_desc(block0, major)
    if coord[1] == 0:
        return first
    here = local_tile(s, tiler, coord)
    lay = s.layout
    flat = Tensor(s.engine, ComposedLayout(lay.outer, 0, lay.inner) if isinstance(lay, ComposedLayout) else lay, 0)
    step = _start_offset(local_tile(flat, tiler, coord)) - _start_offset(local_tile(flat, tiler, (coord[0], 0)))
    nbytes = step * s.engine.dtype.bits // 8 if isinstance(step, int) else -1
    if nbytes <= 0 or nbytes % 16 or _static_desc(here, major) != _static_desc(block0, major):
        return gmma_desc(here, major)
    return make("raw", (f"{render(first)} + {nbytes // 16}ull",), "unsigned long long")


def _static_desc(tile: Tensor, major: str) -> int:
    """The fields of `tile`'s wgmma descriptor that do not depend on where it starts."""
    from tilecraft.atoms import make_gmma_desc

    lay = tile.layout
    if isinstance(lay, ComposedLayout):
        return make_gmma_desc(ComposedLayout(lay.outer, 0, lay.inner), major, tile.engine.dtype.bits).value
    return make_gmma_desc(lay, major, tile.engine.dtype.bits).value


def wgmma_gemm(atom: Any, sA: Tensor, sB: Tensor, acc: Tensor, accumulate: Any = True,
               k_blocks: Any = None) -> None:
    """acc += sA @ sB^T by warpgroup MMAs: sA (64*m, K) and sB (N, K) swizzled smem tiles (K-major, or
    MN-major for 16-bit types, as the atom says), acc the warpgroup's fp32 fragment of m blocks of the
    atom's (64, N) accumulators (``partition_fragment_C`` of a tiled MMA of this atom, values first), or a slice
    of a larger fragment at a static offset (``local_tile`` of it: a wider tile's columns split over wgmmas).
    One wgmma per (m block, k-block); ``accumulate`` False (or a runtime condition's negation) makes
    the first k-block overwrite acc instead. Call wgmma_fence before and wgmma_commit after.

    With an "rs" atom, sA is instead the thread's A fragment in registers: 32-bit words (pairs of
    16-bit values), 4 per 16-k block of one (64, K) tile, in the atom's register order (``layout_a_tv``:
    rows g, g + 8 of the warp's 16 and k 2q, 2q + 1, 2q + 8, 2q + 9), blocks one after another.

    ``k_blocks``: only these k-blocks (static indices of the atom's k), in this order; ``accumulate`` then
    applies to the first of them (e.g. a k-tile's blocks issued one at a time as their fragments are ready)."""
    t = _use_sm90()
    if not atom.cxx or atom.operands not in ("ss", "rs"):
        raise TraceError(f"wgmma_gemm: {atom.name} has no wrapper")
    am, bn, k = atom.shape_mnk
    if bn not in HEADER_N:
        t.wgmma_n.add(bn)                                                 # the source defines its wrappers
    N, KB = _L.size(sB.layout[0]), _L.size(sB.layout[1])
    if atom.operands == "rs":
        ra = sA.engine
        words = _L.size(sA.layout)
        if not isinstance(ra, RegisterEngine) or ra.dtype.bits != 32 or atom.shape_mnk[2] != 16:
            raise TraceError(f"wgmma_gemm with {atom.name}: A must be a fragment of 32-bit words (16-bit types), "
                             f"got {sA!r}")
        if _L.cosize(sA.layout) != words or _L.coalesce(sA.layout).stride not in (1, 0):
            raise TraceError(f"wgmma_gemm: the A fragment {sA.layout} must be compact (words in order)")
        M, KA = am, words // 4 * k
        if words % 4:
            raise TraceError(f"wgmma_gemm: the A fragment holds {words} words, not 4 per {k}-k block")
    else:
        M, KA = _L.size(sA.layout[0]), _L.size(sA.layout[1])
    if N != bn or KA != KB or M % am or KA % k:
        raise TraceError(f"wgmma_gemm with {atom.name}: A ({M}, {KA}) and sB {sB.layout} are not (64*m, K) and "
                         f"({bn}, K) tiles with K a multiple of {k}")
    eng = acc.engine
    nd = bn // 2
    if not isinstance(eng, RegisterEngine) or eng.dtype.bits != 32 or _L.size(acc.layout) != nd * (M // am):
        raise TraceError(f"wgmma_gemm: acc must be a 32-bit register fragment of {nd * (M // am)} values, got {acc!r}")
    if _L.cosize(acc.layout) != _L.size(acc.layout) or not _L.coalesce(acc.layout).stride in (1, 0):
        raise TraceError(f"wgmma_gemm: acc {acc.layout} must be a compact fragment (values first)")
    if not isinstance(acc.offset, int):
        raise TraceError(f"wgmma_gemm: acc must start at a static register, got offset {acc.offset!r}")
    ctype = eng.dtype.ctype
    trans = ""
    if atom.shape_mnk[2] == 16:  # 16-bit operands take the transpose bits (rs: B's only)
        trans = (f"<{int(atom.major_b != 'K')}>" if atom.operands == "rs" else
                 f"<{int(atom.major_a != 'K')}, {int(atom.major_b != 'K')}>")
    a_major = "K" if atom.major_a == "K" else "MN"
    b_major = "K" if atom.major_b == "K" else "MN"
    kbs = list(range(KA // k)) if k_blocks is None else list(k_blocks)
    if not kbs or any(not isinstance(kb, int) or not 0 <= kb < KA // k for kb in kbs):
        raise TraceError(f"wgmma_gemm: k_blocks {k_blocks!r} must be static indices in [0, {KA // k})")
    for kb in kbs:
        db = _k_block_desc(sB, (bn, k), (0, kb), b_major)
        for mb in range(M // am):
            if atom.operands == "rs":
                da = f"*reinterpret_cast<const {ra.dtype.ctype}(*)[4]>({ra.address(_add(sA.offset, 4 * kb))})"
            else:
                da = render(_k_block_desc(sA, (am, k), (mb, kb), a_major))
            first = acc.offset + mb * nd                                  # (a slice of a larger fragment)
            for q in range(nd):
                eng.versions[first + q] += 1
            if kb == kbs[0]:
                scale = "1u" if accumulate is True else ("0u" if accumulate is False else
                                                         f"({render(accumulate)}) ? 1u : 0u")
            else:
                scale = "1u"
            arr = f"*reinterpret_cast<{ctype}(*)[{nd}]>({eng.address(first)})"
            t.emit(f"{atom.cxx}{trans}({arr}, {da}, {render(db)}, {scale});")


def wgmma_fence() -> None:
    """``wgmma.fence``: order earlier register and smem accesses before the next wgmmas."""
    _use_sm90().emit("tc::wgmma_fence();")


def fence_operands(frag: Tensor) -> None:
    """Pin every value of a 32-bit register fragment at this point (CuTe's warpgroup_fence_operand):
    the code that computes a register-sourced wgmma operand stays before the wgmma_fence that follows,
    where ptxas wants it (else it serializes the wgmmas), and no instruction is emitted."""
    eng = frag.engine
    if not isinstance(eng, RegisterEngine) or eng.dtype.bits != 32:
        raise TraceError(f"fence_operands: expected a 32-bit register fragment, got {frag!r}")
    t = _use_sm90()
    for i in range(_L.size(frag.layout)):
        off = _add(frag.offset, frag.layout(i))
        t.emit(f"tc::fence_operand({eng.render_access(eng._index(off))});")


def wgmma_commit() -> None:
    """Close the group of wgmmas this warpgroup issued since the last commit."""
    _use_sm90().emit("tc::wgmma_commit_group();")


def wgmma_wait(n: int) -> None:
    """Wait until at most n wgmma groups of this warpgroup are pending."""
    if not isinstance(n, int) or n < 0:
        raise TraceError(f"wgmma_wait needs a static count >= 0, got {n!r}")
    _use_sm90().emit(f"tc::wgmma_wait_group<{n}>();")


# ----------------------------------------------------------------------------- roles

def warpgroup_index() -> IntExpr:
    """threadIdx.x / 128, read so the compiler knows it is uniform across the warp (a shuffle from lane
    0): branches on it are warp-uniform, as setmaxnreg and wgmma require."""
    _use_sm90()
    return make("call", ("tc::warpgroup_index",), "int")


def setmaxnreg(n: int, inc: bool) -> None:
    """The warpgroup's registers per thread become n (inc: take, else give back); the kernel needs
    ``launch_bounds(threads, 1)`` and each role in its own branch."""
    if not isinstance(n, int) or n % 8 or not 24 <= n <= 256:
        raise TraceError(f"setmaxnreg: a static multiple of 8 in [24, 256], got {n!r}")
    _use_sm90().emit(f"tc::setmaxnreg_{'inc' if inc else 'dec'}<{n}>();")


def elect_one() -> BoolExpr:
    """True in one lane of the (full) warp."""
    _use_sm90()
    return make("call", ("tc::elect_one_sync",), "bool")


def cluster_rank() -> IntExpr:
    """This CTA's rank in its cluster."""
    _use_sm90()
    return make("call", ("(int)tc::cluster_ctarank",), "int")


def cluster_sync() -> None:
    """Every thread of every CTA of the cluster meets here (arrive with release, wait with acquire); the
    warp reconverges first (the barrier is .aligned)."""
    t = _use_sm90()
    t.emit("__syncwarp();")
    t.emit("tc::cluster_sync();")


def cluster_arrive() -> None:
    """This thread arrives on the cluster barrier, releasing its earlier memory operations to the cluster
    (``barrier.cluster.arrive``); ``cluster_wait`` completes the phase. Every thread of every CTA of the
    cluster arrives once per phase, so work can run between the two."""
    t = _use_sm90()
    t.emit("__syncwarp();")
    t.emit("tc::cluster_arrive();")


def cluster_wait() -> None:
    """Wait until every thread of the cluster arrived in the current phase (``barrier.cluster.wait``, with
    acquire: the arrivals' earlier writes, shared memory included, are visible after it)."""
    t = _use_sm90()
    t.emit("__syncwarp();")
    t.emit("tc::cluster_wait();")


def map_shared_rank(x: Tensor, cta_rank: Any) -> Tensor:
    """The same shared-memory tensor in CTA `cta_rank` of the cluster (distributed shared memory, cooperative
    groups' ``cluster.map_shared_rank``): same layout and offset, reached through a generic pointer, so
    ``copy`` reads or writes it with ordinary (vector) loads and stores. Only while that CTA runs, and
    ordered by cluster barriers (``cluster_arrive`` / ``cluster_wait``)."""
    eng = x.engine
    if not (isinstance(eng, PointerEngine) and eng.space == "smem"):
        raise TraceError(f"map_shared_rank needs a shared-memory tensor, got {x!r}")
    t = _use_sm90()
    v = t.new_var("dsmem")
    t.emit(f"{eng.dtype.ctype}* {v.ph} = tc::map_shared_rank({eng.var.ph}, {_u32(cta_rank)});")
    return Tensor(PointerEngine(v, eng.dtype, "dsmem", eng.align, None), x.layout, x.offset)


# ----------------------------------------------------------------------------- programmatic dependent launch

def griddep_wait() -> None:
    """Wait until the stream's previous kernel has completed and its writes are visible (``griddepcontrol.wait``):
    in a kernel launched with ``pdl=True``, before the first access to memory that kernel may read or write.
    A no-op in a kernel launched without it."""
    _use_sm90().emit("tc::griddep_wait();")


def griddep_launch_dependents() -> None:
    """Let the stream's next kernel, if launched with ``pdl=True``, start once every CTA of this one has
    executed this (or exited); it still waits (``griddep_wait``) for this kernel's completion before it
    touches memory."""
    _use_sm90().emit("tc::griddep_launch_dependents();")


def prefetch_l2_bulk(t: Tensor, nbytes: Any) -> None:
    """Ask L2 to fetch `nbytes` (a 32-bit multiple of 16) of global memory starting at t's first
    element (16-byte aligned): ``cp.async.bulk.prefetch.L2``, a hint that holds no registers and needs no
    wait; safe before ``griddep_wait`` (L2 is where every kernel's writes meet)."""
    if not isinstance(t.engine, PointerEngine) or t.engine.space != "gmem":
        raise TraceError(f"prefetch_l2_bulk needs a global-memory tensor, got {t!r}")
    if isinstance(nbytes, int) and (nbytes <= 0 or nbytes % 16):
        raise TraceError(f"prefetch_l2_bulk: the byte count must be a positive multiple of 16, got {nbytes}")
    addr = t.engine.address(t.offset)
    _use_sm90().emit(f"tc::prefetch_l2_bulk({addr}, {_u32(nbytes)});")
