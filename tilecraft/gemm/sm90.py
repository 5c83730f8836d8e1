"""The Hopper GEMM (sm_90a): TMA + wgmma, warp-specialized, persistent, in the kernel language.

    D (L,M,N) = act(alpha * A (L,M,K) @ B (L,K,N) + beta * C (L,M,N) + bias)

CUTLASS's sm90 "warp-specialized cooperative persistent" design, written with tilecraft.dsl.hopper:

* **Roles.** A CTA is 1 + ``consumers`` warpgroups (128 threads each). Warpgroup 0 is the producer: it
  gives most of its registers back (``setmaxnreg``) and one thread issues the TMA loads. The consumer
  warpgroups take the registers and issue the wgmmas; each owns ``blk_m / consumers`` rows of the tile
  (one to three consumers: 192x192 with three runs 512 threads at 128 registers, 160 per consumer).
* **Pipeline.** ``stages`` shared-memory buffers per operand (128-byte swizzled, the layout that gives
  both the TMA maps and the wgmma descriptors) and two mbarriers per stage: ``full`` (the producer's
  arrive with the stage's transaction bytes; TMA completes it) and ``empty`` (one arrival per consumer
  warpgroup once its wgmmas have read the stage). Stage and phase run on across output tiles.
* **Main loop.** Per k-tile a consumer waits on ``full``, issues blk_k/K wgmmas (m64nNkK, K = 32 bytes
  of the operand type: 16 for 16-bit, 8 for tf32, 32 for fp8) into its fp32 accumulators, commits them
  as a group and waits until only that group is in flight, so the previous k-tile's stage is released
  while this one computes.
* **fp8 promotion.** fp8 wgmma adds its products with fewer mantissa bits than fp32 (relative error
  1.3e-3 at K = 4096 against 1.3e-4 in fp32). With ``promote`` each k-tile's wgmmas start afresh and the
  consumer adds them into a second set of fp32 registers once they are done, as cuBLASLt does unless
  asked for fast accumulation (``_promoted_main_loop``). tc.gemm promotes unless ``fast_accum=True``.
* **Pingpong.** With ``pingpong`` the two consumers take whole tiles in turn (CUTLASS's "pingpong" kernel):
  each holds a whole tile's accumulators, consumer 0 computes the CTA's first, third, ... tile and
  consumer 1 the others. Named barriers pass the main loop from one to the other, so one's epilogue runs
  while the other's wgmmas keep the tensor cores busy, and the stages are read in the order the producer
  fills them. Measured (H100, bf16): within 1.5% of the cooperative kernel on the same 128x128 tile, whose
  producer already fills the next tile's stages during the epilogue; tc.gemm does not pick it.
* **Clusters.** With ``cluster_m`` = 2 two CTAs on neighbouring m-tiles share each B k-tile: each loads half
  (half of the columns; half of the k-rows where an N-major tile has three 64-column blocks, ``smem_layout``)
  and multicasts it to both, and a stage is free only when the consumers of both CTAs released it (a
  CTA-scoped remote arrive: a cluster-scoped release costs a MEMBAR.ALL.GPU per k-tile). ``cluster_n`` = 2
  shares A the same way between neighbouring n-tiles, and both make a 2x2 cluster (ranks m-fastest): each
  CTA loads half of A for its m-tile's two CTAs and half of B for its n-tile's two, and a stage is free once
  the consumers of the three CTAs that write into it (itself, its row and its column) released it.
* **Split-K.** ``splits`` > 1 makes each work unit one k-slice of a tile: the splits write fp32
  partial tiles to a workspace and the sm80 path's reduction kernel sums them and applies the epilogue
  (for shapes with few output tiles and a long K, which otherwise leave most SMs idle). Where every split
  of every tile is resident, the splits sum the tile in this kernel instead, each its share of the rows
  (``_reduce_tile``) or, with 4 or more splits, of the accumulator blocks (``_sum_split_blocks``).
* **Persistent grid.** One CTA per SM walks the output tiles ``blockIdx.x, blockIdx.x + gridDim.x, ...``
  in grouped order (``raster`` m-tiles per group, Triton's / CUTLASS's swizzle) so that concurrently
  computed tiles share A and B in L2; the producer runs ahead into the next tile while the consumers
  finish the epilogue of this one.
* **Edges.** TMA zero-fills what lies outside A and B (ragged M, N, K cost nothing in the main loop);
  the epilogue predicates its stores unless the host says every tile is whole (``full``).
* **Epilogue.** The sm80 path's math (alpha, beta * C, bias along N or M, relu/gelu/silu, cast). A D
  (16-bit or fp32) that TMA can write leaves through shared memory: 128-byte-wide swizzled column chunks,
  two buffers per consumer warpgroup, one TMA store per chunk that runs on under the next chunk and the
  next tile's main loop (``_store_through_smem``); a C of D's type arrives the same way, by a TMA load
  into the chunk's buffer. Otherwise (``tma_store=False``, split-K, a D TMA cannot address) straight from
  the accumulators, pairs of adjacent columns per store.
* **fp8.** e4m3 / e5m2 operands (K-major, as wgmma requires) use m64nNk32 and 128-element k-tiles;
  per-tensor scales fold into alpha; D is fp16, bf16 or fp32.
* **tf32.** fp32 operands (``elem="tf32"``; K-major, as wgmma requires) load through TFLOAT32 TMA
  maps, which round them to nearest tf32, into 32-element (128-byte) k-tiles and feed m64nNk8
  ``.tf32`` wgmmas; D is fp32, fp16 or bf16. The 16-bit tilings with blk_k = 32
  (the same bytes per stage): 128x256x32, 3 stages, 2x1 cluster ran 400-422 TFLOP/s at 4096^3..8192^3
  on an H100, torch's tf32 matmul 405-417.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import gmma_layout_atom, make_tiled_mma, wgmma_atom
from tilecraft.dsl import Constexpr, blockIdx, gridDim, hopper, threadIdx
from tilecraft.dsl.expr import make, render
from tilecraft.dsl.trace import current
from tilecraft.gemm.limits import CTA_SMEM
from tilecraft.layout.inttuple import imax, imin
from tilecraft.runtime.errors import LaunchError
from tilecraft.tensor import Tensor

__all__ = ["Sm90Config", "sm90_gemm_kernel", "smem_layout", "ELEMENTS"]

#: operand element type -> (kernel dtype, wgmma type name)
ELEMENTS = {
    "float16": (dsl.float16, "f16"),
    "bfloat16": (dsl.bfloat16, "bf16"),
    # 8-bit floats only travel (TMA) and feed wgmma as bytes: the kernel never does arithmetic on them
    "float8_e4m3fn": (dsl.uint8, "e4m3"),
    "float8_e5m2": (dsl.uint8, "e5m2"),
    # fp32 data read by the tensor cores as tf32
    "tf32": (dsl.float32, "tf32"),
}


def launch_regs(threads: int) -> int:
    """Registers per thread a warp-specialized kernel of `threads` threads launches with: the cap of
    __launch_bounds__(threads, 1), a multiple of 8 (168 for 384 threads), which its setmaxnreg roles share."""
    return min(65536 // threads, 255) // 8 * 8


@dataclass(frozen=True)
class Sm90Config:
    """One tiling of the Hopper GEMM: CTA tile (blk_m, blk_n, blk_k; blk_k is 128 bytes of the operand
    type, so 64 for 16-bit, 128 for fp8 and 32 for tf32 operands), ``stages`` smem buffers,
    ``consumers`` consumer warpgroups splitting blk_m (each a multiple of 64 rows), ``raster`` m-tiles
    per group of the persistent walk, and the registers per thread of the producer / consumer roles.
    ``pingpong`` makes the two consumer warpgroups take whole tiles in turn instead of halves of each tile:
    one's epilogue runs while the other's main loop keeps the tensor cores busy.
    ``promote`` (fp8 only) adds the tensor cores' sums into fp32 registers after every k-tile (128
    elements): fp8 wgmma accumulates with fewer bits than fp32, which over a long K costs accuracy
    (cuBLASLt does the same unless asked for fast accumulation). It doubles the accumulator registers, or
    triples them where three sets fit (``lagged``).
    ``dynamic`` hands the tiles out in order as CTAs become ready (a global ticket counter) instead of each CTA
    taking every grid-th tile: the CTAs drift apart over a long walk, and those that share an operand's tile
    then read it from DRAM at different times (``_Schedule.claimed_units``).
    ``store_mn`` is for an M-contiguous 16-bit D (tc.gemm's swapped problem: D^T of a row-major D): each consumer
    writes its (64, BLK_N) part into an M-major swizzled buffer, which one TMA store writes out (``d_map``);
    otherwise such a D leaves the registers one value at a time."""

    blk_m: int = 128
    blk_n: int = 256
    blk_k: int = 64
    stages: int = 4
    consumers: int = 2
    raster: int = 8
    producer_regs: int = 40
    consumer_regs: int = 232
    cluster_m: int = 1
    cluster_n: int = 1
    splits: int = 1
    tma_store: bool = True
    stream_k: int = 0
    pingpong: bool = False
    promote: bool = False
    dynamic: bool = False
    store_mn: bool = False

    @property
    def threads(self) -> int:
        """Threads per CTA: the producer warpgroup and the consumers."""
        return 128 * (1 + self.consumers)

    @property
    def launch_regs(self) -> int:
        """Registers per thread at launch (``launch_regs(threads)``); the setmaxnreg roles share exactly
        threads x launch_regs."""
        return launch_regs(self.threads)

    @property
    def cluster(self) -> int:
        """CTAs per cluster: cluster_m along M (sharing B) times cluster_n along N (sharing A)."""
        return self.cluster_m * self.cluster_n

    @property
    def rows(self) -> int:
        """Rows of the tile per consumer warpgroup (all of them when the consumers take turns)."""
        return self.blk_m if self.pingpong else self.blk_m // self.consumers

    @property
    def accumulators(self) -> int:
        """fp32 accumulators per consumer thread: the consumer's (ROWS, BLK_N) part over its 128 threads."""
        return self.rows // 64 * self.blk_n // 2

    @property
    def lagged(self) -> bool:
        """With ``promote``: whether three sets of the consumer's accumulators fit its registers, so that
        the sums take in k-tile j - 1 while k-tile j's wgmmas run (``_promoted_main_loop``): 64 sums per
        thread take 240 registers (producer_regs=24; with 232, C, bias and GELU on ragged tiles spill 8 bytes)."""
        return self.promote and 3 * self.accumulators + 48 <= self.consumer_regs

    @property
    def name(self) -> str:
        return (f"sm90_{self.blk_m}x{self.blk_n}x{self.blk_k}_s{self.stages}_c{self.consumers}"
                + (f"_r{self.raster}" if self.raster != 8 else "") + (f"_cl{self.cluster_m}x{self.cluster_n}" if self.cluster > 1 else "")
                + (f"_sk{self.splits}" if self.splits > 1 else "") + (f"_streamk{self.stream_k}" if self.stream_k else "")
                + ("_pp" if self.pingpong else "") + ("_promote" if self.promote else "") + ("_lag" if self.lagged else "")
                + ("_dyn" if self.dynamic else "")
                + ("" if self.tma_store else "_direct") + ("_mn" if self.store_mn else ""))

    def smem_bytes(self, elem_bytes: int = 2) -> int:
        """Shared memory of the stages, the epilogue's D buffers (two 128-byte-wide column chunks of each
        consumer's rows, or with ``store_mn`` each consumer's whole 16-bit part), the barriers and 1 KB of
        alignment slack."""
        epilogue = (self.blk_m * self.blk_n * 2 if self.store_mn else 2 * self.rows * self.consumers * 128) \
            if self.tma_store else 0
        queue = 48 if self.dynamic else 0                                 # the tile queue's slots and barriers
        return (self.blk_m + self.blk_n) * self.blk_k * self.stages * elem_bytes + epilogue + 16 * self.stages + queue + 1024

    def validate(self, elem_bytes: int = 2) -> None:
        """Raise ValueError naming the condition a tiling breaks."""
        if self.dynamic and (self.splits > 1 or self.stream_k or self.pingpong):
            raise ValueError(f"{self.name}: dynamic hands out whole tiles (no split-K, stream-K or pingpong)")
        if self.consumers < 1 or self.rows % 64 or self.rows * (1 if self.pingpong else self.consumers) != self.blk_m:
            raise ValueError(f"{self.name}: each consumer warpgroup needs a multiple of 64 rows")
        if self.blk_n % 8 or not 8 <= self.blk_n <= 256:
            raise ValueError(f"{self.name}: blk_n must be a multiple of 8 in [8, 256] (one wgmma's N)")
        if self.blk_k * elem_bytes != 128:
            raise ValueError(f"{self.name}: blk_k must be 128 bytes of elements (one 128-byte swizzle row)")
        if self.store_mn and (not self.tma_store or self.rows != 64):
            raise ValueError(f"{self.name}: store_mn stores each consumer's 64 rows by TMA (tma_store, 64 rows "
                             "per consumer)")
        if self.blk_m > 256:
            raise ValueError(f"{self.name}: a TMA box holds at most 256 rows")
        if not 2 <= self.stages <= 8:
            raise ValueError(f"{self.name}: stages must be 2..8")
        acc = self.accumulators
        if acc > 160:
            raise ValueError(f"{self.name}: {acc} fp32 accumulators per consumer thread leave no registers")
        if self.promote and elem_bytes != 1:
            raise ValueError(f"{self.name}: promote is for fp8 operands (16-bit and tf32 wgmma accumulate in fp32)")
        if self.promote and (2 * acc + 40 > self.consumer_regs or self.consumers == 1 and acc > 64):
            raise ValueError(f"{self.name}: promote keeps two sets of {acc} fp32 accumulators per consumer "
                             f"thread, more than {self.consumer_regs} registers hold without spills (64 rows x 192 "
                             "columns per consumer fit with two consumers, 64 x 128 with one)")
        if self.smem_bytes(elem_bytes) > CTA_SMEM:
            raise ValueError(f"{self.name}: {self.smem_bytes(elem_bytes)} bytes of smem exceed the 227 KB of an SM")
        for r in (self.producer_regs, self.consumer_regs):
            if r % 8 or not 24 <= r <= 256:
                raise ValueError(f"{self.name}: register counts must be multiples of 8 in [24, 256]")
        if self.splits < 1:
            raise ValueError(f"{self.name}: splits must be >= 1")
        if self.stream_k not in (0, 1, 2):
            raise ValueError(f"{self.name}: stream_k is 0 (off), 1 (the partial round) or 2 (it and one whole round)")
        if self.stream_k and self.splits > 1:
            raise ValueError(f"{self.name}: stream-K and split-K are two ways to divide K; choose one")
        if self.pingpong and (self.consumers != 2 or self.splits > 1 or self.stream_k):
            raise ValueError(f"{self.name}: pingpong takes two consumer warpgroups and whole tiles (no split-K "
                             "or stream-K)")
        if self.cluster_m not in (1, 2) or self.cluster_n not in (1, 2):
            raise ValueError(f"{self.name}: cluster_m and cluster_n must be 1 or 2 (CTAs of a cluster along M "
                             "sharing B, along N sharing A: clusters up to 2x2)")
        if self.cluster_m > 1 and (self.blk_n // self.cluster_m) * self.blk_k * elem_bytes % 1024:
            raise ValueError(f"{self.name}: each CTA's slice of the multicast B tile must be whole 1 KB swizzle atoms")
        if self.producer_regs + self.consumers * self.consumer_regs > (1 + self.consumers) * self.launch_regs:
            raise ValueError(f"{self.name}: setmaxnreg can only move the registers the CTA launched with "
                             f"({self.threads} x {self.launch_regs}); producer {self.producer_regs} + "
                             f"{self.consumers} x consumer {self.consumer_regs} is more (the kernel would hang)")


def row_tiles(M: int, least: int) -> Any:
    """(t, bn) for the splits of M rows into t tiles of bn = M / t rows rounded up to 8 (a wgmma N): from the fewest
    tiles of at most 256 rows, while bn is at least `least` (tc.gemm's swapped problem, op.pick_ragged_swap; the
    mixed-input kernel's x tiles, sm90_mixed_rs._ragged_or)."""
    for t in range(max(1, -(-M // 256)), M // 8 + 1):
        bn = (-(-M // t) + 7) // 8 * 8
        if bn < least:
            return
        yield t, bn


@functools.lru_cache(maxsize=None)
def smem_layout(dtype: Any, major: str, mn: int, bk: int, stages: int) -> Any:
    """(MN, BLK_K, STAGES) 128-byte swizzled smem of one operand: K-major rows of blk_k elements, or
    MN-major columns of 64 (16-bit) elements with the k-groups of one MN-block adjacent, so that the
    tile is (MN64, K, MN-blocks) for TMA. An odd number (> 1) of MN-blocks (192 columns) puts the
    MN-blocks of one k-group adjacent instead, (MN64, k8, MN-blocks, K/8): a 2x1 cluster then
    multicasts half of the k-groups from each CTA (three blocks do not halve). The wgmma descriptors
    derive from either layout."""
    if major == "K":
        return tc.tile_to_shape(gmma_layout_atom("K", 128, dtype.bits), (mn, bk, stages))
    blocks = mn * dtype.bits // 1024                                      # 128-byte MN-blocks
    return tc.tile_to_shape(gmma_layout_atom("MN", 128, dtype.bits), (mn, bk, stages),
                            (0, 1, 2) if blocks > 1 and blocks % 2 else (1, 0, 2))


def _tile_coords(cfg: Sm90Config, tile: Any, tiles_m: Any, tiles_n: Any, batched: bool) -> tuple[Any, Any, Any]:
    """(m_tile, n_tile, batch) of linear tile index `tile`: per batch, groups of `raster` m-tiles, m
    fastest within a group (neighbouring CTAs share B's n-tile and A's m-tiles in L2)."""
    per_batch = tiles_m * tiles_n
    l_idx = tile // per_batch if batched else 0
    t = tile % per_batch if batched else tile
    group = cfg.raster * tiles_n                                          # tiles per group of m-tiles
    first_m = t // group * cfg.raster
    rows = imin(tiles_m - first_m, cfg.raster)                            # m-tiles in this group
    in_group = t % group
    return first_m + in_group % rows, in_group // rows, l_idx


def _unit_coords(cfg: Sm90Config, unit: Any, units_m: Any, tiles_n: Any, batched: bool, tile_units: Any,
                 per_split: Any, k_tiles: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(m unit, n_tile, batch, first k-tile, k-tiles) of a work unit: a tile (of whole clusters) and,
    with split-K, one of its k-slices (the split is the unit's outermost coordinate)."""
    if cfg.splits == 1:
        return (*_tile_coords(cfg, unit, units_m, tiles_n, batched), 0, k_tiles)
    split = unit // tile_units
    k_begin = split * per_split
    return (*_tile_coords(cfg, unit % tile_units, units_m, tiles_n, batched), k_begin,
            imin(per_split, k_tiles - k_begin))


@contextlib.contextmanager
def _when(cond: Any) -> Any:
    """``with dsl.if_(cond)``, or no condition when cond is None."""
    if cond is None:
        yield
        return
    with dsl.if_(cond):
        yield


def _same(value: Any, _hint: str) -> Any:
    return value


def stream_k_share(units: Any, k_tiles: Any, clusters: Any, c: Any, name: Any = _same,
                   mode: int = 1) -> tuple[Any, Any, Any, Any]:
    """Stream-K's division of the work (Osama et al., "Stream-K", 2023, in its data-parallel hybrids): when
    the units do not make whole rounds over the clusters, the last partial round (`mode` 1; with `mode` 2
    also one whole round before it, so that no cluster's share is a small part of a unit): the last sk_units
    units' sk_units x k_tiles k-iterations are shared evenly, cluster c taking iterations [begin, end) of them
    in unit-major order; the other units stay whole.
    With fewer iterations than clusters, the first `sharers` clusters take one each (no range is empty
    among the sharers: a unit's finisher waits on every cluster from the first peer to its own).
    Returns (sk_units, sharers, begin, end); ints or runtime values alike (`name` gives runtime ones a C++ name).
    """
    rem = units % clusters
    sk_units = name(rem if mode == 1 else dsl.where(dsl.eq(rem, 0), 0, imin(units, rem + clusters)), "sk_units")
    sk_iters = name(sk_units * k_tiles, "sk_iters")
    sharers = name(imax(imin(clusters, sk_iters), 1), "sharers")
    return (sk_units, sharers, name(imin(c, sharers) * sk_iters // sharers, "sk_begin"),
            name(imin(c + 1, sharers) * sk_iters // sharers, "sk_end"))


def stream_k_items(share: tuple[Any, Any, Any, Any], units: Any, k_tiles: Any, clusters: Any,
                   name: Any = _same) -> tuple[Any, Any]:
    """(items, whole): how many pieces of work the cluster with `share` (``stream_k_share``) does, of which
    the first `whole` are whole units (as many for every cluster) and the rest its stream-K segments (one per
    unit its iterations touch)."""
    sk_units, _sharers, begin, end = share
    segments = dsl.where(begin < end, (end - 1) // k_tiles - begin // k_tiles + 1, 0)
    whole = name((units - sk_units) // clusters, "whole")
    return name(whole + segments, "items"), whole


def stream_k_item(item: Any, share: tuple[Any, Any, Any, Any], whole: Any, units: Any, k_tiles: Any,
                  clusters: Any, c: Any, name: Any = _same) -> tuple[Any, Any, Any]:
    """(unit, first k-tile, k-tiles) of cluster c's item-th piece of work: the whole units c, c + clusters,
    ..., then its stream-K segments of the last sk_units units, last unit first.
    Whole units first: every cluster has as many, so the rounds of whole tiles run in step, as without
    stream-K, and the shared iterations come at the end. Last unit first: a share is the top of one unit's K,
    whole units, then the bottom of another's, and the bottom starts at k = 0. Taken in that reverse order,
    every cluster starts its share at k-tile 0 and all of them stay within (k_tiles - share) k-tiles of each
    other, so clusters that run at the same time read the same A and B k-tiles from L2, as whole tiles do.
    (In unit order cluster c would start at k-tile c * share % k_tiles: measured twice the time.)"""
    sk_units, _sharers, begin, end = share
    is_sk = name(item >= whole, "in_stream_k")
    last = (end - 1) // k_tiles                                           # the share's last unit (of the shared)
    unit = name(dsl.where(is_sk, units - sk_units + last - (item - whole), c + item * clusters), "unit")
    base = (unit - (units - sk_units)) * k_tiles                          # its first iteration in the shared ones
    k_begin = dsl.where(is_sk, imax(begin - base, 0), 0)
    k_end = dsl.where(is_sk, imin(end - base, k_tiles), k_tiles)
    return unit, k_begin, k_end - k_begin


def stream_k_owner(iteration: Any, share: tuple[Any, Any, Any, Any], k_tiles: Any) -> Any:
    """The cluster whose stream-K share holds `iteration` (unit * k_tiles + k-tile): cluster c holds
    [c * sk_iters // sharers, (c + 1) * sk_iters // sharers)."""
    sk_units, sharers = share[:2]
    return ((iteration + 1) * sharers - 1) // (sk_units * k_tiles)


def stream_k_first_peer(unit: Any, share: tuple[Any, Any, Any, Any], units: Any, k_tiles: Any) -> Any:
    """The first cluster whose stream-K iterations reach into `unit` (the owner of its k-tile 0), one of the
    last sk_units of `units`.
    The cluster that owns the unit's last k-tile finishes it: it takes that slice last of its share
    (``stream_k_item``), when the clusters from this one up to the one before it have published theirs, each
    the first or only slice of their own shares; it adds their partial tiles."""
    return stream_k_owner((unit - (units - share[0])) * k_tiles, share, k_tiles)


def _release(empty_bar: Any, stage: Any, cluster: Any) -> None:
    """A consumer warpgroup frees `stage` for the producer of every CTA that writes into it: `cluster` is the
    CTA count of a one-dimensional cluster (its CTAs all write into each other's stages), or the ranks of
    those CTAs (``_Schedule.writers``: in a 2x2 cluster this CTA, its row and its column)."""
    if isinstance(cluster, int):
        if cluster == 1:
            empty_bar.arrive(stage)
            return
        cluster = range(cluster)
    for r in cluster:
        empty_bar.arrive(stage, cta=r)


def _advance(stage: Any, phase: Any, stages: int) -> None:
    """The next pipeline slot: stage + 1, wrapping to 0 with the phase flipped."""
    last = dsl.eq(stage, stages - 1)
    dsl.assign(phase, dsl.where(last, 1 - phase, phase))
    dsl.assign(stage, dsl.where(last, 0, stage + 1))


class _Schedule:
    """Trace-time facts of one launch both roles agree on: the problem's extents, the work units (tiles
    of whole clusters, times the k-splits) and which of them this CTA computes."""

    def __init__(self, cfg: Sm90Config, shape: tuple[Any, Any, Any], K: Any):
        name = dsl.declare                                                # runtime values get a C++ name
        self.L, self.M, self.N = shape                                    # of D
        self.batched = not (isinstance(self.L, int) and self.L == 1)
        CLM, CLN = self.CLM, self.CLN = cfg.cluster_m, cfg.cluster_n        # CTAs along M sharing B, along N sharing A
        self.CL = CL = CLM * CLN                                          # (multicast)
        tiles_m = name(tc.ceil_div(self.M, cfg.blk_m), "tiles_m")
        self.tiles_n = name(tc.ceil_div(self.N, cfg.blk_n), "tiles_n")
        self.units_m = name(tc.ceil_div(tiles_m, CLM), "units_m") if CLM > 1 else tiles_m  # m-tiles of whole clusters
        self.units_n = name(tc.ceil_div(self.tiles_n, CLN), "units_n") if CLN > 1 else self.tiles_n  # n-tiles of them
        self.tile_units = name(self.units_m * self.units_n * self.L, "tile_units")
        self.num_units = name(self.tile_units * cfg.splits, "num_units") if cfg.splits > 1 else self.tile_units  # what one cluster computes at a time
        self.k_tiles = name(tc.ceil_div(K, cfg.blk_k), "k_tiles")
        # k-tiles per split (the host makes every split non-empty)
        self.per_split = name(tc.ceil_div(self.k_tiles, cfg.splits), "per_split") if cfg.splits > 1 else self.k_tiles
        self.rank = name(hopper.cluster_rank(), "rank") if CL > 1 else 0  # this CTA's tile in its cluster:
        self.rank_m, self.rank_n = self.rank, 0                           # m-tile rank % CLM, n-tile rank // CLM
        if CLN > 1:
            self.rank_m, self.rank_n = (0, self.rank) if CLM == 1 else (self.rank % CLM, self.rank // CLM)
        self.unit0, self.unit_step = (blockIdx.x // CL, gridDim.x // CL) if CL > 1 else (blockIdx.x, gridDim.x)
        self.cfg = cfg
        if cfg.stream_k:                                                  # this cluster's stream-K items
            self.cluster = name(self.unit0, "cluster") if CL > 1 else blockIdx.x
            self.clusters = name(self.unit_step, "clusters") if CL > 1 else gridDim.x
            self.share = stream_k_share(self.tile_units, self.k_tiles, self.clusters, self.cluster, name, cfg.stream_k)
            # items: whole units, then the segments of its share of the iterations
            self.items, self.whole = stream_k_items(self.share, self.tile_units, self.k_tiles, self.clusters, name)

    def queue(self, tickets: Any) -> None:
        """``dynamic``: the shared memory through which the units this CTA computes reach its roles (two slots,
        each with a ``full`` and an ``empty`` mbarrier), initialized by thread 0; the caller's next CTA (or
        cluster) barrier makes them visible. `tickets` is the global int32 counter the producers claim units
        from (0 before a launch and after it). In a cluster, the producer of rank 0 claims and writes every CTA's
        slot; each slot's readers (the consumer threads, and in the other CTAs the producer) then free it on
        rank 0's ``empty`` barrier."""
        self.tickets = tickets
        self.slots = dsl.smem_tensor(dsl.int32, 2, align=8)
        self.slot_full = hopper.mbarriers(2)                              # the unit is in the slot
        self.slot_empty = hopper.mbarriers(2)                             # (rank 0's:) every reader took it
        readers = self.CL * 128 * self.cfg.consumers + self.CL - 1
        with dsl.if_(dsl.eq(threadIdx.x, 0)):
            for b in range(2):
                self.slot_full.init(b, 1)
                self.slot_empty.init(b, readers)
            hopper.fence_barrier_init()

    def claimed_units(self, producer: bool) -> Any:
        """``dynamic``: this CTA's units, as the claiming producer (rank 0's in a cluster) hands them out. The
        first is the cluster's index; while it loads one unit, the claimer takes a ticket for the next (the
        clusters' count + the counter's old value), so units start in about the order of the tickets. Each unit,
        and at the end one past the last, reaches the readers through the next slot; a reader frees the slot
        once it has branched on the value (its load is done). The claims number exactly num_units (one per unit
        computed, each claimer's last coming back too large), so the claim that takes the count to num_units
        puts it back to 0 for the next launch."""
        CL = self.CL
        unit = dsl.declare(self.unit0, "unit", const=False)
        handed = dsl.declare(0, "handed", const=False)                    # units through the slots so far
        ticket = dsl.declare(0, "ticket", const=False) if producer else None
        claimer = dsl.eq(self.rank, 0) if CL > 1 else None               # None: this producer claims
        reads = not producer or CL > 1                                    # some threads here read a slot:
        reader = dsl.ne(self.rank, 0) if producer and CL > 1 else None    # which (None: all, the consumers)
        for _ in dsl.range(self.num_units + 1):                           # at most: the loop ends at the sentinel
            slot, phase = handed % 2, handed // 2 % 2
            if producer:
                with _when(claimer):
                    self.slot_empty.wait(slot, 1 - phase)
                    if CL == 1:
                        self.slots[slot] = unit
                        self.slot_full.arrive(slot)
                    else:
                        for r in range(CL):
                            self.slot_full.put(slot, self.slots, unit, r)
            if reads:                                                     # a reader: its slot, written by a claimer
                with _when(reader):
                    self.slot_full.wait(slot, phase, cluster=CL > 1)
                    dsl.assign(unit, self.slots(slot))
            with dsl.if_(unit >= self.num_units):
                dsl.break_()
            if reads:
                with _when(reader):
                    self.slot_empty.arrive(slot, cta=0 if CL > 1 else None)   # read: free the slot
            dsl.assign(handed, handed + 1)                                # (slot and phase read the old value)
            if producer:
                with _when(claimer):
                    dsl.assign(ticket, dsl.atomic_add(self.tickets, 0, 1))
            yield unit
            if producer:
                with _when(claimer):
                    with dsl.if_(dsl.eq(ticket, self.num_units - 1)):     # the launch's last claim
                        dsl.flag_release(self.tickets, 0, 0)
                    dsl.assign(unit, self.unit_step + ticket)

    def units(self, consumer: Any = None, producer: bool = False) -> Any:
        """The loop over this CTA's work: units (tiles of whole clusters, k-slices of them with split-K),
        or with stream-K, items (``stream_k_item``). With pingpong, `consumer` (0 or 1) takes every other
        unit, starting with the CTA's first or second. ``dynamic``: the units the producer claims
        (``claimed_units``; `producer` says which side calls)."""
        if self.cfg.dynamic:
            return self.claimed_units(producer)
        if self.cfg.stream_k:
            return dsl.range(self.items)
        if self.cfg.pingpong and consumer is not None:
            return dsl.range(self.unit0 + consumer * self.unit_step, self.num_units, 2 * self.unit_step)
        return dsl.range(self.unit0, self.num_units, self.unit_step)

    def unit(self, item: Any) -> tuple[Any, Any, Any]:
        """Stream-K: (unit, first k-tile, k-tiles) of a loop index of ``units()``."""
        return stream_k_item(item, self.share, self.whole, self.tile_units, self.k_tiles, self.clusters, self.cluster,
                             dsl.declare)

    def coords(self, item: Any) -> tuple[Any, Any, Any, Any, Any]:
        """(m_tile, n_tile, batch, first k-tile, k-tiles) of a loop index of ``units()`` for this CTA."""
        if self.cfg.stream_k:
            unit, k_begin, k_count = self.unit(item)
            m_unit, n_tile, l_idx = _tile_coords(self.cfg, unit, self.units_m, self.units_n, self.batched)
        else:
            m_unit, n_tile, l_idx, k_begin, k_count = _unit_coords(self.cfg, item, self.units_m, self.units_n,
                                                                   self.batched, self.tile_units, self.per_split,
                                                                   self.k_tiles)
        if self.CLN > 1:
            n_tile = n_tile * self.CLN + self.rank_n
        return m_unit * self.CLM + self.rank_m, n_tile, l_idx, k_begin, k_count

    @property
    def writers(self) -> Any:
        """The CTAs whose producers write into this CTA's stages, for ``_release``: the cluster's CTA count
        when it is one-dimensional (all of them), else (2x2) this CTA, the one beside it along M (its
        B slice) and the one along N (its A slice); ranks are m-fastest."""
        if self.CLM == 1 or self.CLN == 1:
            return self.CL
        return [self.rank, (1 - self.rank_m) + 2 * self.rank_n, self.rank_m + 2 * (1 - self.rank_n)]

    def multicast(self) -> tuple[Any, Any]:
        """(A's, B's) multicast: None without, else (CTA mask, this CTA's slice): A goes to the CTAs of this
        CTA's m-tile (same rank_m), B to those of its n-tile (same rank_n)."""
        CLM, CLN = self.CLM, self.CLN
        a = b = None
        if CLN > 1:                                                       # ranks rank_m + CLM j (2x2: 5 << rank_m)
            a = ((1 << CLN) - 1 if CLM == 1 else 5 * (1 + self.rank_m), self.rank_n)
        if CLM > 1:                                                       # ranks i + CLM rank_n (2x2: 3 << 2 rank_n)
            b = ((1 << CLM) - 1 if CLN == 1 else 3 * (1 + 3 * self.rank_n), self.rank_m)
        return a, b

    def peers(self, item: Any) -> tuple[Any, Any]:
        """Stream-K: the CTAs (first, last) whose partial tiles this CTA adds to finish the item's unit
        (none when first > last): the same cluster rank in the clusters before this one that computed
        earlier slices of the unit's K."""
        unit = self.unit(item)[0]
        first = stream_k_first_peer(unit, self.share, self.tile_units, self.k_tiles)
        return first * self.CL + self.rank, (self.cluster - 1) * self.CL + self.rank


@dsl.inline
def pipeline(cfg: Sm90Config, dtype: Any, majors: tuple[str, str], producer_arrivals: int = 1) -> tuple[Any, ...]:
    """The shared memory of the main loop: ``stages`` swizzled buffers per operand, (BLK_M, BLK_K, PIPE) and
    (BLK_N, BLK_K, PIPE), and a ``full`` and an ``empty`` mbarrier per stage, initialized (``full`` expects
    `producer_arrivals` arrivals plus the transaction bytes, ``empty`` one arrival per consumer warpgroup
    of the cluster) and visible to the whole cluster when this returns."""
    a_major, b_major = majors
    sA = dsl.smem_tensor(dtype, smem_layout(dtype, a_major, cfg.blk_m, cfg.blk_k, cfg.stages), align=1024)
    sB = dsl.smem_tensor(dtype, smem_layout(dtype, b_major, cfg.blk_n, cfg.blk_k, cfg.stages), align=1024)
    return (sA, sB, *stage_barriers(cfg, producer_arrivals))


@dsl.inline
def stage_barriers(cfg: Sm90Config, producer_arrivals: int = 1) -> tuple[Any, Any]:
    """A ``full`` and an ``empty`` mbarrier per stage, initialized (``full`` expects `producer_arrivals`
    arrivals plus the transaction bytes, ``empty`` one arrival per consumer warpgroup of the cluster)
    and visible to the whole cluster when this returns."""
    full_bar = hopper.mbarriers(cfg.stages)                               # the stage's operands landed
    empty_bar = hopper.mbarriers(cfg.stages)                              # every consumer read it
    with dsl.if_(dsl.eq(threadIdx.x, 0)):
        for s in range(cfg.stages):
            full_bar.init(s, producer_arrivals)
            # every consumer of the CTAs this one multicasts to: its m-tile's and its n-tile's (with pingpong,
            # one per CTA reads a stage)
            empty_bar.init(s, (1 if cfg.pingpong else cfg.consumers) * (cfg.cluster_m + cfg.cluster_n - 1))
        hopper.fence_barrier_init()
    if cfg.cluster > 1:
        hopper.cluster_sync()                                             # the peers' barriers exist
    else:
        dsl.syncthreads()
    return full_bar, empty_bar


@dsl.inline
def tma_producer(sch: _Schedule, full_bar: Any, empty_bar: Any, stage_bytes: Any, load: Any) -> None:
    """The producer thread's loop: for each of this CTA's work units and its k-tiles, wait until the
    consumers freed the next stage, expect `stage_bytes` on its ``full`` barrier and issue the TMA loads
    ``load(stage, m_tile, n_tile, l_idx, k_tile)``."""
    stage = dsl.declare(0, "stage", const=False)
    phase = dsl.declare(0, "phase", const=False)
    for unit in sch.units(producer=True):
        m_tile, n_tile, l_idx, k_begin, k_count = sch.coords(unit)
        for k_tile in dsl.range(k_begin, k_begin + k_count):
            empty_bar.wait(stage, 1 - phase)                               # the consumers freed the stage
            full_bar.arrive_expect_tx(stage, stage_bytes)
            load(stage, m_tile, n_tile, l_idx, k_tile)
            _advance(stage, phase, sch.cfg.stages)


@dsl.inline
def consumer(cfg: Sm90Config, elem: str, majors: tuple[str, str], ep: Any, full: Any, sch: _Schedule, sA: Any, sB: Any,
             full_bar: Any, empty_bar: Any, C: Any, D: Any, W: Any, bias: Any, alpha: Any, beta: Any,
             tmD: Any = None, sD: Any = None, flags: Any = None, timeline: Any = None, tmC: Any = None,
             c_bar: Any = None) -> None:
    """A consumer warpgroup's whole life: wgmma from the stages into fp32 accumulators, tile after tile,
    each followed by the epilogue of its (ROWS, BLK_N) part (or, with split-K, the fp32 partial). With a
    TMA map of D (tmD) and the epilogue buffers sD (ROWS, CHUNK, 2 * consumers) the tile leaves through
    shared memory and TMA stores (see ``_store_through_smem``); otherwise straight from the registers.
    With stream-K, a unit's slices of K end in one tile: the CTAs that computed an earlier slice leave their
    accumulators in the workspace W and raise their flag (``_publish``), the CTA of the last slice adds them
    and runs the epilogue (``_collect``).

    With pingpong the two consumers take the CTA's units in turn, each whole: consumer 0 the first, third,
    ... and consumer 1 the others. The producer fills the stages in unit order, so each consumer starts
    a unit at ring slot (its index in the CTA's walk) x k_tiles. A consumer waits for its turn before its
    main loop (named barrier 3 + cw), and gives the turn to the other once it has issued its last k-tile.
    The other's epilogue then runs under this one's main loop. The turns keep the consumers' waits on
    ``full`` in slot order: a parity wait can only tell the stage's last phase from the next one."""
    from tilecraft.gemm.tensorop import _store

    hopper.setmaxnreg(cfg.consumer_regs, inc=True)
    dtype, wg_type = ELEMENTS[elem]
    a_major, b_major = majors
    bM, bN, bK = cfg.blk_m, cfg.blk_n, cfg.blk_k
    M, N = sch.M, sch.N
    cw = hopper.warpgroup_index() - 1                                     # this consumer's rows of the tile
    pp = cfg.pingpong
    part = 0 if pp else cw                                                # its (ROWS, BLK_N) block of the tile
    atom = wgmma_atom(bN, wg_type, major_a="K" if a_major == "K" else "MN", major_b="K" if b_major == "K" else "MN")
    thr_mma = make_tiled_mma(atom).get_slice(threadIdx.x % 128)
    acc_shape = thr_mma.partition_C(tc.make_identity_tensor((cfg.rows, bN))).shape
    tCrC = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(acc_shape))   # (V,MMA_M,1) fp32 accumulators
    tCrS = tCrC                                                           # the tile's sums
    if cfg.promote:                                                       # ... in fp32 beside the wgmma's
        tCrS = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(acc_shape))
    tCrL = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(acc_shape)) if cfg.lagged else None  # k-tiles j % 2
    leader = dsl.eq(threadIdx.x % 128, 0)                                 # arrives for the warpgroup
    stage = dsl.declare(0, "stage", const=False)
    phase = dsl.declare(0, "phase", const=False)
    if pp:
        slot = dsl.declare(cw * sch.k_tiles, "slot", const=False)         # ring slot of this unit's first k-tile
    stamp = _timeline(timeline)
    c_tiles = dsl.declare(0, "c_tiles", const=False) if tmC is not None else None   # epilogues that loaded C
    for unit in sch.units(cw):
        m_tile, n_tile, l_idx, k_begin, k_count = sch.coords(unit)
        stamp(0)
        if pp:
            dsl.assign(stage, slot % cfg.stages)
            dsl.assign(phase, slot // cfg.stages % 2)
            with dsl.if_(dsl.ne(unit, sch.unit0)):                        # the CTA's first unit starts at once
                hopper.named_barrier(3 + cw, 256)                         # the other consumer issued its unit
        origin = (m_tile * bM + part * cfg.rows, n_tile * bN, l_idx)      # this consumer's part of the tile
        c_first = None                                                    # C's first chunks (with tmC)
        if tmC is not None:
            c_first = functools.partial(_load_c_first, tmC, c_bar, sD, cw, origin, bN)
        if cfg.promote:
            _promoted_main_loop(cfg, atom, sA, sB, tCrC, tCrS, part, k_count, full_bar, empty_bar, stage, phase,
                                leader, sch.writers, c_first, tCrL)
        else:
            for k_tile in dsl.range(k_count):
                full_bar.wait(stage, phase)                               # the stage's bytes landed
                hopper.wgmma_fence()
                sA_k = tc.local_tile(sA(_, _, stage), (cfg.rows, bK), (part, 0))  # (ROWS,BLK_K)
                hopper.wgmma_gemm(atom, sA_k, sB(_, _, stage), tCrC, accumulate=k_tile > 0)
                hopper.wgmma_commit()
                if c_first is not None:                                   # C's first two chunks, for the epilogue
                    with dsl.if_(leader & dsl.eq(k_tile, 0)):
                        c_first()
                hopper.wgmma_wait(1)                                      # the previous k-tile's wgmmas are done:
                with dsl.if_(leader & (k_tile > 0)):                      # its stage goes back to the producer(s)
                    _release(empty_bar, dsl.where(dsl.eq(stage, 0), cfg.stages - 1, stage - 1), sch.writers)
                _advance(stage, phase, cfg.stages)
        if pp:
            with dsl.if_(unit + sch.unit_step < sch.num_units):           # the next unit is the other's
                hopper.named_arrive(4 - cw, 256)
            dsl.assign(slot, slot + 2 * sch.k_tiles)
        if not cfg.promote:                                               # (the promoted loop ends so itself)
            hopper.wgmma_wait(0)
            with dsl.if_(leader):                                         # the tile's last stage
                _release(empty_bar, dsl.where(dsl.eq(stage, 0), cfg.stages - 1, stage - 1), sch.writers)
        stamp(1)

        #
        # Epilogue: this consumer's (ROWS, BLK_N) part of the tile, from the accumulators
        #
        tiler = (bM, bN)
        coord = (m_tile, n_tile)
        gD = tc.local_tile(tc.local_tile(D(l_idx, _, _), tiler, coord), (cfg.rows, bN), (part, 0))  # (ROWS,BLK_N)
        cD = tc.local_tile(tc.local_tile(tc.make_identity_tensor((M, N)), tiler, coord), (cfg.rows, bN),
                           (part, 0))                                     # (ROWS,BLK_N) -> (m,n)
        tCgD = thr_mma.partition_C(gD)                                    # (V,MMA_M,1)
        tCcD = thr_mma.partition_C(cD)                                    # (V,MMA_M,1) -> (m,n)
        if cfg.splits > 1:                                                # this split's fp32 partial tile
            split = unit // sch.tile_units
            if flags is not None and split_blocks(cfg):                   # summed here, block by block
                tCgC = None
                if ep.read_c:
                    gC = tc.local_tile(tc.local_tile(C(l_idx, _, _), tiler, coord), (cfg.rows, bN), (part, 0))
                    tCgC = thr_mma.partition_C(gC)                        # (V,MMA_M,1)
                _sum_split_blocks(cfg, W, flags, tCrS, tCgC, tCgD, tCcD, unit % sch.tile_units, split, sch.tile_units,
                                  cw, leader, bias, alpha, beta, ep, M, N, full)
                stamp(2)
                continue
            gW = tc.local_tile(tc.local_tile(W(split, l_idx, _, _), tiler, coord), (cfg.rows, bN), (part, 0))
            _store(tCrS, thr_mma.partition_C(gW), tCcD, M, N, full)
            if flags is not None:                                         # the splits of the tile sum it here
                _reduce_tile(cfg, W, C, D, bias, alpha, beta, ep, flags, unit % sch.tile_units, split, m_tile,
                             n_tile, l_idx, cw, leader, full)
            stamp(2)
            continue
        tCgC = None
        if ep.read_c:
            gC = tc.local_tile(tc.local_tile(C(l_idx, _, _), tiler, coord), (cfg.rows, bN), (part, 0))
            tCgC = thr_mma.partition_C(gC)                                # (V,MMA_M,1)
        if not cfg.stream_k:
            _tile_epilogue(cfg, wg_type, tCrS, tCgC, tCgD, tCcD, tmD, sD, cw, leader, bias, alpha, beta, ep, origin,
                           M, N, full, tmC, c_bar, c_tiles)
            stamp(2)
            continue
        with dsl.if_(k_begin + k_count < sch.k_tiles):                    # an earlier slice of K: hand it over
            _publish(cfg, tCrS, W, flags, cw, leader)
        with dsl.else_():
            with dsl.if_(k_begin > 0):                                    # the last slice: add the others'
                _collect(cfg, sch, unit, tCrS, W, flags, cw, leader)
            _tile_epilogue(cfg, wg_type, tCrS, tCgC, tCgD, tCcD, tmD, sD, cw, leader, bias, alpha, beta, ep, origin,
                           M, N, full)
        stamp(2)
    if tmD is not None:
        with dsl.if_(leader):
            hopper.tma_store_wait(0, read=False)                          # every store done before the CTA exits


def split_blocks(cfg: Sm90Config) -> bool:
    """Whether split-K summed in the kernel divides the tile among the splits by 4-value accumulator blocks
    (``_sum_split_blocks``) rather than by rows (``_reduce_tile``): 4 or more splits that divide each
    consumer's blocks evenly. Per-CTA timelines (H100, 128x128 tiles, both forms alternated in one lease): the
    time from the main loop's end to the CTA's end fell from 5.4-5.7 to 4.9-5.1 µs with 8 splits
    (512x512x65536, 512x512x32768) and from 5.65 to 5.0 with 4 (512x1024x16384), and rose from 5.0-5.2 to
    5.8 with 2 (1024x1024x65536), where each split stores half the tile of D in the fragment's 4-byte pieces."""
    return cfg.splits >= 4 and (cfg.accumulators // 4) % cfg.splits == 0


@dsl.inline
def _sum_split_blocks(cfg: Sm90Config, W: Any, flags: Any, tCrS: Any, tCgC: Any, tCgD: Any, tCcD: Any, tile: Any,
                      split: Any, tiles: Any, cw: Any, leader: Any, bias: Any, alpha: Any, beta: Any, ep: Any, M: Any,
                      N: Any, full: Any) -> None:
    """Split-K without a second kernel, by accumulator blocks (``split_blocks``). Split s owns blocks
    [s * per, (s + 1) * per) of each consumer's 4-value accumulator blocks. This consumer warpgroup stores the
    others as the split's partial in fragment order (``_partial`` of the flat W, one per split, tile and
    consumer: 16-byte stores, a warp's covering 512 contiguous bytes; the blocks it sums itself stay in its
    registers, 0.15-0.5 µs less after the main loop with 4 and 8 splits on an H100). It adds 1 to the flag of
    (tile, consumer) with release and waits until all splits have. Each thread then loads its own fragment
    positions of its blocks from the other splits' partials (16 bytes each, all in flight), adds them in split
    order (its own from registers; the result does not depend on timing), applies the epilogue and stores D.
    Last, it counts itself out; the last warpgroup out puts the flag back to 0 for the next launch."""
    from tilecraft.gemm.tensorop import _epilogue

    S, n = cfg.splits, tc.size(tCrS)
    per, per_mb = n // 4 // S, cfg.blk_n // 8                             # blocks this split sums; n8 blocks per row
    mine = _partial(cfg, W, split * tiles + tile, cw, n)
    for r in range(S):                                                    # every block but the ones it sums
        with dsl.if_(dsl.eq(split, r)):
            for q in range(n // 4):
                if not r * per <= q < (r + 1) * per:
                    dsl.copy(Tensor(tCrS.engine, tc.make_layout(4), q * 4), mine(_, q))
    flag = tile * cfg.consumers + cw
    _count_in(flags, flag, S, cw, leader)
    peers = [_partial(cfg, W, p * tiles + tile, cw, n) for p in range(S)]
    for r in range(S):
        with dsl.if_(dsl.eq(split, r)):
            for q in range(r * per, (r + 1) * per):
                parts = []
                for p in range(S):                                        # the other splits' loads all in flight
                    if p == r:
                        parts.append(tCrS)
                        continue
                    frag = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(4))
                    dsl.copy(peers[p](_, q), frag)
                    parts.append(frag)
                for i in range(4):
                    total = parts[0](q * 4 + i if r == 0 else i)
                    for p in range(1, S):
                        total = total + parts[p](q * 4 + i if p == r else i)
                    tCrS[q * 4 + i] = total
                blk = ((_, _, q % per_mb), q // per_mb, 0)
                store = _epilogue_by_halves if _single_16bit_stores(tCgD(blk), full) else _epilogue
                store(tCrS(blk), tCgC(blk) if ep.read_c else None, tCgD(blk), tCcD(blk), bias, alpha, beta, ep, M, N,
                      full)
    _count_out(flags, flag, S, cw, leader)


def _count_in(flags: Any, flag: Any, groups: Any, cw: Any, leader: Any) -> None:
    """The in-kernel split-K sum's meeting: once the consumer warpgroup's stores of its partial are issued
    (its barrier), its leader adds 1 to the counting flag with release and waits until all `groups` have;
    past the second barrier every partial is visible to all 128 threads."""
    hopper.named_barrier(1 + cw, 128)
    with dsl.if_(leader):
        dsl.flag_add_release(flags, flag, 1)
        dsl.flag_wait_at_least(flags, flag, groups)
    hopper.named_barrier(1 + cw, 128)


def _count_out(flags: Any, flag: Any, groups: Any, cw: Any, leader: Any) -> None:
    """After its sums, the warpgroup counts itself out; the last of the `groups` puts the flag back to 0 for
    the next launch (each group added 1 coming in and adds 1 going out)."""
    hopper.named_barrier(1 + cw, 128)
    with dsl.if_(leader):
        dsl.flag_count_reset(flags, flag, 2 * groups)


def split_workspace(D3: Any, cfg: Sm90Config, tiles: int) -> Any:
    """The fp32 partial tiles of split-K summed in the kernel (``Launch.fused``): (S, L, M, N), or with
    ``split_blocks`` flat, one (BLK_M x BLK_N) tile in fragment order per split and tile (``_partial``)."""
    import torch

    if split_blocks(cfg):
        return streamk_workspace(D3, cfg.splits * tiles, cfg)            # the same flat tiles, one per split and tile
    return D3.new_empty((cfg.splits, *D3.shape), dtype=torch.float32)


@dsl.inline
def _reduce_tile(cfg: Sm90Config, W: Any, C: Any, D: Any, bias: Any, alpha: Any, beta: Any, ep: Any, flags: Any,
                 tile: Any, split: Any, m_tile: Any, n_tile: Any, l_idx: Any, cw: Any, leader: Any,
                 full: bool) -> None:
    """Split-K without a second kernel (every split of every tile resident at once: ``Launch.fused``): this
    consumer warpgroup has stored its part of the split's partial tile in W; it adds 1 to the tile's counting
    flag (release) and waits until all splits x consumers have. Then it sums the splits (in split order: the
    result does not depend on timing) of its share of the tile's rows, part split x consumers + cw of
    splits x consumers, applies the epilogue and stores D: 4 columns per thread with 16-byte loads of the
    partials when every tile is whole (N a multiple of 4) and the consumers have registers to spare, else one
    column per thread. Last, it counts itself out; the last warpgroup out puts the flag back to 0 for the next
    launch."""
    from tilecraft.gemm.tensorop import epilogue_value

    S, parts = cfg.splits, cfg.splits * cfg.consumers
    L, M, N = D.shape
    _count_in(flags, tile, parts, cw, leader)
    rows = -(-cfg.blk_m // parts)                                         # rows per part (the last may have fewer)
    first = (split * cfg.consumers + cw) * rows
    per_row = cfg.blk_n // 4                                              # 4-column groups of a row
    if full and 128 % per_row == 0 and cfg.consumer_regs >= 200:
        _reduce_rows_by_4(cfg, W, C, D, bias, alpha, beta, ep, m_tile, n_tile, l_idx, first, rows)
        spots = []
    else:
        spots = [(r, c0) for r in range(rows) for c0 in range(0, cfg.blk_n, 128)]  # this thread's: a column each
    for g in range(0, len(spots), 8):                                     # 8 at a time: their loads all in flight
        sums = []
        for r, c0 in spots[g:g + 8]:
            row, col = first + r, c0 + threadIdx.x % 128
            m, n = m_tile * cfg.blk_m + row, n_tile * cfg.blk_n + col
            inside = (row < cfg.blk_m) & (m < M) & (n < N)
            inside = inside & (col < cfg.blk_n) if cfg.blk_n % 128 else inside
            total = dsl.read_if(inside, W, (0, l_idx, m, n), 0.0)
            for s in range(1, S):
                total = total + dsl.read_if(inside, W, (s, l_idx, m, n), 0.0)
            sums.append((inside, m, n, dsl.declare(total, "total")))
        for inside, m, n, total in sums:
            with dsl.if_(inside):
                c = C(l_idx, m, n) if ep.read_c else None
                b = bias(n if ep.bias == "n" else m) if ep.bias != "none" else None
                D[l_idx, m, n] = epilogue_value(total, c, b, alpha, beta, ep)
    _count_out(flags, tile, parts, cw, leader)


def _reduce_rows_by_4(cfg: Sm90Config, W: Any, C: Any, D: Any, bias: Any, alpha: Any, beta: Any, ep: Any,
                      m_tile: Any, n_tile: Any, l_idx: Any, first: Any, rows: int) -> None:
    """``_reduce_tile``'s sums of rows [first, first + rows) of a whole tile, 4 columns per thread: the 128
    threads cover 128 / (blk_n / 4) rows per pass, 16-byte loads of each split's partial, the loads of a few
    passes in flight at once (rows past the tile are read clamped to it and not stored)."""
    from tilecraft.gemm.tensorop import epilogue_value

    S, per_row = cfg.splits, cfg.blk_n // 4
    per_pass = 128 // per_row
    t = threadIdx.x % 128
    sub, n = t // per_row, n_tile * cfg.blk_n + t % per_row * 4
    passes = -(-rows // per_pass)
    batch = max(1, 16 // S)                                               # passes whose loads are in flight at once
    for p0 in range(0, passes, batch):
        sums = []
        for p in range(p0, min(p0 + batch, passes)):
            r = p * per_pass + sub                                        # of the part's rows
            inside = (r < rows) & (first + r < cfg.blk_m)
            m = m_tile * cfg.blk_m + imin(first + r, cfg.blk_m - 1)
            total = dsl.make_rmem_tensor(dsl.float32, 4)
            part = dsl.make_rmem_tensor(dsl.float32, 4)
            for s in range(S):
                dsl.copy(tc.local_tile(W(s, l_idx, m, _), (4,), (n // 4,)), total if s == 0 else part)
                for v in range(4 if s else 0):
                    total[v] = total(v) + part(v)
            sums.append((inside, m, total))
        for inside, m, total in sums:
            with dsl.if_(inside):
                for v in range(4):
                    c = C(l_idx, m, n + v) if ep.read_c else None
                    b = bias(n + v if ep.bias == "n" else m) if ep.bias != "none" else None
                    D[l_idx, m, n + v] = epilogue_value(total(v), c, b, alpha, beta, ep)


#: work units (stream-K items) per CTA whose times ``sm90_gemm_kernel(timeline=...)`` records
TIMELINE_ITEMS = 6


def _timeline(timeline: Any) -> Any:
    """stamp(f): thread 128 (the first consumer warpgroup's first thread) writes the global timer to field
    2 + 3 i + f of its CTA's row of `timeline` for the i-th work unit it walks (i < TIMELINE_ITEMS), and moves
    to the next unit after field 2. Before the walk it records its SM (field 0) and the timer (field 1).
    Without a timeline, stamp does nothing and the kernel is unchanged."""
    if timeline is None:
        return lambda _f: None
    first = dsl.eq(threadIdx.x, 128)
    with dsl.if_(first):
        timeline[blockIdx.x, 0] = dsl.smid()
        timeline[blockIdx.x, 1] = dsl.globaltimer()
    walked = dsl.declare(0, "walked", const=False)

    def stamp(f: int) -> None:
        with dsl.if_(first & (walked < TIMELINE_ITEMS)):
            timeline[blockIdx.x, 2 + 3 * walked + f] = dsl.globaltimer()
        if f == 2:
            dsl.assign(walked, walked + 1)

    return stamp


@dsl.inline
def _promoted_main_loop(cfg: Sm90Config, atom: Any, sA: Any, sB: Any, acc: Any, sums: Any, part: Any, k_count: Any,
                        full_bar: Any, empty_bar: Any, stage: Any, phase: Any, leader: Any, cluster: Any,
                        c_first: Any = None, acc_b: Any = None) -> None:
    """A unit's main loop with fp8 promotion: each k-tile's wgmmas start afresh (scale-d 0) and, once they
    are done, the warpgroup releases the stage and adds them into the fp32 sums.

    With a second accumulator set acc_b (``cfg.lagged``), k-tile j's wgmmas go into acc or acc_b by the
    parity of j; after issuing them the warpgroup waits only for k-tile j - 1's (``wgmma.wait_group 1``) and
    adds that set while its own k-tile j keeps the tensor cores busy. H100, e4m3 4096^3 (Nsight Compute):
    tensor pipes busy 85.2% of 161.8K cycles against 81.8% of 168.6K for the form below, cuBLASLt's
    promoted kernel 85.7% of 158.9K. Without acc_b the warpgroup waits for its whole k-tile before adding
    (``wgmma.wait_group 0``), and only the other consumer's wgmmas fill the tensor cores meanwhile.
    ``c_first``: what the leader issues after the first k-tile's wgmmas (C's first chunks, ``_load_c_first``)."""
    bK = cfg.blk_k
    dsl.fill(sums, 0.0)

    def issue(into: Any) -> None:                                          # the next k-tile's wgmmas into a set
        full_bar.wait(stage, phase)                                       # the stage's bytes landed
        hopper.wgmma_fence()
        sA_k = tc.local_tile(sA(_, _, stage), (cfg.rows, bK), (part, 0))  # (ROWS,BLK_K)
        hopper.wgmma_gemm(atom, sA_k, sB(_, _, stage), into, accumulate=False)
        hopper.wgmma_commit()
        _advance(stage, phase, cfg.stages)

    def take(done: Any, pending: int) -> None:                            # all but `pending` groups are done:
        hopper.wgmma_wait(pending)                                        # release the stage of the oldest (it
        back = pending + 1                                                # was issued `back` k-tiles ago), add it
        with dsl.if_(leader):
            _release(empty_bar, dsl.where(stage < back, stage + cfg.stages - back, stage - back), cluster)
        dsl.axpby(1.0, done, 1.0, sums)                                   # sums += done

    if acc_b is None:
        for _k_tile in dsl.range(k_count):
            issue(acc)
            if c_first is not None:
                with dsl.if_(leader & dsl.eq(_k_tile, 0)):
                    c_first()
            take(acc, 0)
        return
    issue(acc)                                                            # k-tile 0
    if c_first is not None:
        with dsl.if_(leader):
            c_first()
    for _pair in dsl.range((k_count - 1) // 2):                           # k-tiles 2i + 1 and 2i + 2
        issue(acc_b)
        take(acc, 1)
        issue(acc)
        take(acc_b, 1)
    with dsl.if_(dsl.eq((k_count - 1) % 2, 1)):                           # an even count: one more k-tile
        issue(acc_b)
        take(acc, 1)
        take(acc_b, 0)
    with dsl.else_():
        take(acc, 0)


@dsl.inline
def _tile_epilogue(cfg: Sm90Config, wg_type: str, tCrC: Any, tCgC: Any, tCgD: Any, tCcD: Any, tmD: Any, sD: Any,
                   cw: Any, leader: Any, bias: Any, alpha: Any, beta: Any, ep: Any, origin: tuple[Any, Any, Any],
                   M: Any, N: Any, full: Any, tmC: Any = None, c_bar: Any = None, c_tiles: Any = None) -> None:
    """D of this consumer's (ROWS, BLK_N) part of a finished tile: through shared memory and TMA stores when
    there is a map of D (C too, with a map of C), else straight from the accumulators, one n8 block at a
    time (few live registers beyond the accumulators)."""
    from tilecraft.gemm.tensorop import _epilogue

    if tmD is not None and cfg.store_mn:
        _store_mn_through_smem(cfg, wg_type, tCrC, tCgC, tCcD, tmD, sD, cw, leader, bias, alpha, beta, ep, origin,
                               M, N, full)
        return
    if tmD is not None:
        _store_through_smem(cfg, wg_type, tCrC, tCgC, tCgD, tCcD, tmD, sD, cw, leader, bias, alpha, beta, ep, origin,
                            M, N, full, tmC, c_bar, c_tiles)
        return
    for mb in range(tc.size(tCrC, 1)):
        for j in range(cfg.blk_n // 8):
            blk = ((_, _, j), mb, 0)
            store = _epilogue_by_halves if _single_16bit_stores(tCgD(blk), full) else _epilogue
            store(tCrC(blk), tCgC(blk) if ep.read_c else None, tCgD(blk), tCcD(blk), bias, alpha, beta, ep, M, N, full)


def _single_16bit_stores(tCgD: Any, full: Any) -> bool:
    """Whether the epilogue would store a 16-bit D one value at a time: a ragged tile (stores under predicates) or
    a D whose fragment pairs are not adjacent in memory (column-major)."""
    pair = tCgD.layout(1)                                                 # element 1's offset from element 0
    return tCgD.engine.dtype.bits == 16 and not (full and isinstance(pair, int) and pair == 1)


def _epilogue_by_halves(acc: Any, tCgC: Any, tCgD: Any, tCcD: Any, bias: Any, alpha: Any, beta: Any, ep: Any,
                        M: Any, N: Any, full: Any) -> None:
    """tensorop._epilogue for a 16-bit D stored one value at a time (``_single_16bit_stores``): each pair of
    values converts into one 32-bit register and each half is stored from it. Converted into 16-bit registers,
    as the plain epilogue does, the sums make ptxas serialize every wgmma of the kernel (C7514)."""
    from tilecraft.gemm.tensorop import _pred

    if tCgD.engine.root is not None:
        tCgD.engine.root.written = True                                   # (the stores below bypass engine.write)
    for p in range(tc.size(acc) // 2):
        word = _packed_pair(2 * p, acc, tCgC, tCcD, bias, alpha, beta, ep, M, N, full, tCgD.engine.dtype)
        for h in (0, 1):
            i = 2 * p + h
            with dsl.if_(_pred(tCcD, i, M, N, full)) if not full else contextlib.nullcontext():
                current().emit(f"tc::st_global_lo16({tCgD.engine.address(tCgD.offset + tCgD.layout(i))}, "
                               f"{word}{' >> 16' if h else ''});")


def _packed_pair(i: int, acc: Any, tCgC: Any, tCcD: Any, bias: Any, alpha: Any, beta: Any, ep: Any, M: Any, N: Any,
                 full: Any, d_dtype: Any) -> str:
    """A 32-bit register holding the epilogue values of fragment elements i (low half) and i + 1 in 16-bit d_dtype,
    converted together (``_epilogue_by_halves``, ``_store_mn_through_smem``)."""
    from tilecraft.gemm.tensorop import epilogue_value_at

    pack = "tc::pack_bf16x2" if d_dtype == dsl.bfloat16 else "tc::pack_f16x2"
    lo, hi = (epilogue_value_at(v, acc, tCgC, tCcD, bias, alpha, beta, ep, M, N, full) for v in (i, i + 1))
    return render(dsl.declare(make("raw", (f"{pack}({render(lo)}, {render(hi)})",), "unsigned"), "pair"))


def _store_mn_through_smem(cfg: Sm90Config, wg_type: str, tCrC: Any, tCgC: Any, tCcD: Any, tmD: Any, sD: Any,
                           cw: Any, leader: Any, bias: Any, alpha: Any, beta: Any, ep: Any,
                           origin: tuple[Any, Any, Any], M: Any, N: Any, full: Any) -> None:
    """The ``store_mn`` epilogue (an M-contiguous 16-bit D): the consumer's (64, BLK_N) part goes into its M-major
    buffer by ``stmatrix .trans`` (each 8x8 block of the accumulators, a pair of columns per lane in one 32-bit
    register, stored as 8 rows of 8 M-contiguous values; four blocks per instruction), then out by one TMA store,
    which clips at D's edges. The buffer is rewritten a tile later, once that store has read it."""
    buf = sD(_, _, cw)                                                    # (ROWS,BLK_N), M-major
    blocks = cfg.blk_n // 8                                               # n8 blocks of the accumulators
    _check_store_mn(cfg.blk_n, wg_type)
    # lane l gives the row address of block l / 8 of each instruction: blocks (h, j) = (q % 2, j0 + q // 2) for
    # q = l / 8, rows 8h (+ the warp's 16) of the consumer's 64, columns 8j + l % 8; the next instructions' rows lie
    # 16 columns (2 KB) further each (whole swizzle periods: the same address bits below 1 KB)
    lane, warp = threadIdx.x % 32, threadIdx.x % 128 // 32
    q = lane // 8
    row = buf.engine.address(buf._offset_of((warp * 16 + q % 2 * 8, q // 2 * 8 + lane % 8)))
    base = dsl.declare(make("raw", (f"tc::smem_u32({row})",), "unsigned"), "st_row")
    with dsl.if_(leader):
        hopper.tma_store_wait(0)                                          # the last tile's store has read buf
    hopper.named_barrier(1 + cw, 128)
    t = current()
    for j in range(0, blocks, 2):                                         # acc 4j + 2h + c: block (h, j), column c
        regs = [_packed_pair(4 * jj + 2 * h, tCrC, tCgC, tCcD, bias, alpha, beta, ep, M, N, full, sD.engine.dtype)
                for jj in range(j, min(j + 2, blocks)) for h in (0, 1)]
        x = len(regs)
        at = f"{render(base)} + {j // 2 * 2048}u"
        if x == 4:
            t.emit(f"tc::stmatrix_x4_trans({at}, {', '.join(regs)});")
        else:                                                             # an odd last block: lanes 0-15's rows
            t.emit(f"tc::stmatrix_x2_trans({at}, {', '.join(regs)});")
    hopper.fence_proxy_async()                                            # the writes, visible to TMA
    hopper.named_barrier(1 + cw, 128)
    with dsl.if_(leader):
        hopper.tma_store(tmD, buf, origin)
        hopper.tma_store_commit()


@functools.lru_cache(maxsize=None)
def _check_store_mn(blk_n: int, wg_type: str) -> None:
    """What the ``store_mn`` epilogue assumes: value 4j + 2h + c of the wgmma accumulator fragment of lane l of warp
    w holds row 16w + l / 4 + 8h and column 8j + 2 (l % 4) + c of the (64, BLK_N) part (checked for every thread),
    and 16 columns further in the M-major buffer lie 1024 elements further (whole periods of its swizzle)."""
    lay = smem_layout(dsl.bfloat16, "MN", 64, blk_n, 1)                  # (a 16-bit D's: fp16 is laid out alike)
    for n in range(64):
        for m in range(blk_n - 16):
            if lay((n, m + 16, 0)) != lay((n, m, 0)) + 1024:
                raise AssertionError(f"the M-major D buffer {lay} does not step 16 columns by 1024 elements")
    tiled = make_tiled_mma(wgmma_atom(blk_n, wg_type))
    for thr in range(128):
        part = tiled.get_slice(thr).partition_C(tc.make_identity_tensor((64, blk_n)))
        w, l = thr // 32, thr % 32
        for v in range(tc.size(part)):
            j, h, c = v // 4, v % 4 // 2, v % 2
            if tuple(part(v)) != (16 * w + l // 4 + 8 * h, 8 * j + 2 * (l % 4) + c):
                raise AssertionError(f"wgmma m64n{blk_n}: thread {thr} value {v} is {part(v)}")


def _partial(cfg: Sm90Config, W: Any, cta: Any, cw: Any, n: int) -> Any:
    """This thread's n accumulators in CTA `cta`'s stream-K partial tile (the flat fp32 workspace W holds one
    per CTA and consumer warpgroup), in fragment order: 16 bytes per thread in turn, so that a warp's
    vector stores and loads cover whole 512-byte runs."""
    offset = ((cta * cfg.consumers + cw) * (n // 4) * 128 + threadIdx.x % 128) * 4
    return Tensor(W.engine, tc.make_layout((4, n // 4), (1, 512)), offset)


@dsl.inline
def _publish(cfg: Sm90Config, tCrC: Any, W: Any, flags: Any, cw: Any, leader: Any) -> None:
    """Stream-K, an earlier slice of a unit's K: store the accumulators as this CTA's partial tile, then (every
    thread of the warpgroup past its barrier) raise the warpgroup's flag with release semantics."""
    dsl.copy(tCrC, _partial(cfg, W, blockIdx.x, cw, tc.size(tCrC)))
    hopper.named_barrier(1 + cw, 128)
    with dsl.if_(leader):
        dsl.flag_release(flags, blockIdx.x * cfg.consumers + cw, 1)


@dsl.inline
def _collect(cfg: Sm90Config, sch: _Schedule, item: Any, tCrC: Any, W: Any, flags: Any, cw: Any, leader: Any) -> None:
    """Stream-K, the last slice of a unit's K: add the partial tiles of the CTAs that computed the earlier
    slices, in CTA order (a sum in a fixed order: the result does not depend on timing). Each flag is
    waited for and put back to 0 for the next launch."""
    n = tc.size(tCrC)
    first, last = sch.peers(item)
    for cta in dsl.range(first, last + 1, cfg.cluster):
        with dsl.if_(leader):
            dsl.flag_wait(flags, cta * cfg.consumers + cw, 1)
            dsl.flag_release(flags, cta * cfg.consumers + cw, 0)
        hopper.named_barrier(1 + cw, 128)                                 # the partial is visible to all 128
        part = _partial(cfg, W, cta, cw, n)
        for q in range(n // 4):
            vals = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(4))
            dsl.copy(part(_, q), vals)
            for i in range(4):
                tCrC[q * 4 + i] = tCrC(q * 4 + i) + vals(i)


def _load_c_chunk(tmC: Any, c_bar: Any, sD: Any, cw: Any, origin: tuple[Any, Any, Any], c: int) -> None:
    """One thread: the TMA load of chunk c of this consumer's (ROWS, BLK_N) part of C into the chunk's epilogue
    buffer (``c % 2`` of the warpgroup's two), completing on that buffer's mbarrier."""
    b = cw * 2 + c % 2
    c_bar.arrive_expect_tx(b, tmC.box_bytes)
    hopper.tma_load(tmC, sD(_, _, b), c_bar.addr(b), (origin[0], origin[1] + c * tmC.args.box_dims[0], origin[2]))


def _load_c_first(tmC: Any, c_bar: Any, sD: Any, cw: Any, origin: tuple[Any, Any, Any], blk_n: int) -> None:
    """One thread, at a tile's first k-tile: once the last tile's TMA stores have read the epilogue buffers,
    the loads of C's first two chunks (one per buffer) for this tile's epilogue."""
    hopper.tma_store_wait(0)
    for c in range(min(2, -(-blk_n // tmC.args.box_dims[0]))):
        _load_c_chunk(tmC, c_bar, sD, cw, origin, c)


@dsl.inline
def _store_through_smem(cfg: Sm90Config, wg_type: str, tCrC: Any, tCgC: Any, tCgD: Any, tCcD: Any, tmD: Any, sD: Any,
                        cw: Any, leader: Any, bias: Any, alpha: Any, beta: Any, ep: Any, origin: tuple[Any, Any, Any],
                        M: Any, N: Any, full: Any, tmC: Any = None, c_bar: Any = None, c_tiles: Any = None) -> None:
    """The epilogue through shared memory: the consumer's (ROWS, BLK_N) part goes out in column chunks
    128 bytes wide (64 16-bit columns), each computed into one of the warpgroup's two swizzled buffers
    (the accumulator fragment of an N = CHUNK wgmma partitions it) and stored by one TMA store, which
    clips at D's edges. The stores run on while the warpgroup computes the next chunk and, after the
    last, the next tile's main loop; a buffer is rewritten only once the store issued from it two chunks
    ago has read it. With a TMA map of C (tmC, C of D's type), each chunk of C lands in the buffer first
    (``c_bar``, one mbarrier per buffer; ``c_tiles`` counts this warpgroup's earlier such epilogues, which
    gives each barrier's phase) and the epilogue reads C there, writing D over it in place. The first two
    chunks' loads go out at the main loop's first k-tile (``_load_c_first``): H100, bf16,
    D = A @ B + C, 4096^3 192-194 against 201-208 µs when each chunk loads as its turn comes, 2048^3 31
    against 33-35."""
    from tilecraft.gemm.tensorop import _epilogue_values

    chunk = tc.size(sD, 1)
    chunks = cfg.blk_n // chunk
    per_chunk = chunk // 8                                                # n8 blocks of the accumulators
    bar_id = 1 + cw                                                       # this warpgroup's named barrier
    thr_chunk = make_tiled_mma(wgmma_atom(chunk, wg_type)).get_slice(threadIdx.x % 128)
    for c in range(chunks):
        buf = sD(_, _, cw * 2 + c % 2)                                    # (ROWS,CHUNK)
        with dsl.if_(leader):
            hopper.tma_store_wait(1 if chunks % 2 == 0 else 0)            # the store that last read buf is done
            if tmC is not None and c >= 2:                                # ... and C's chunk may land in it
                _load_c_chunk(tmC, c_bar, sD, cw, origin, c)              # (the main loop loaded chunks 0, 1)
        if tmC is not None:                                               # the buffer's earlier uses set the phase
            c_bar.wait(cw * 2 + c % 2, (c_tiles * ((chunks + 1 - c % 2) // 2) + c // 2) % 2)
        else:
            hopper.named_barrier(bar_id, 128)
        tCsD = thr_chunk.partition_C(buf)                                 # (V,MMA_M,1)
        for mb in range(tc.size(tCrC, 1)):
            for j in range(per_chunk):
                blk = ((_, _, c * per_chunk + j), mb, 0)
                vals = _epilogue_values(tCrC(blk), tCgC(blk) if ep.read_c and tmC is None else  # C from its buffer
                                        tCsD(((_, _, j), mb, 0)) if ep.read_c else None, tCgD(blk), tCcD(blk), bias,
                                        alpha, beta, ep, M, N, full)
                dsl.copy(vals, tCsD(((_, _, j), mb, 0)))
        hopper.fence_proxy_async()                                        # the writes, visible to TMA
        hopper.named_barrier(bar_id, 128)
        with dsl.if_(leader):
            hopper.tma_store(tmD, buf, (origin[0], origin[1] + c * chunk, origin[2]))
            hopper.tma_store_commit()
    if tmC is not None:
        dsl.assign(c_tiles, c_tiles + 1)


@dsl.kernel
def sm90_gemm_kernel(tmA, tmB, C, D, bias, alpha, beta, K, W, cfg: Constexpr, elem: Constexpr, majors: Constexpr,
                     ep: Constexpr, full: Constexpr, tmD=None, flags=None, tmC=None, timeline=None):
    """D (L,M,N) = epilogue(alpha * A @ B^T, C, bias) with A and B given as TMA maps of (M,K,L) and
    (N,K,L) views; see the module docstring. With split-K, W is the fp32 workspace (S,L,M,N) of the
    splits' partial tiles (D then only gives the extents) and splitk_reduce_kernel finishes; with flags the
    splits sum them here (``split_workspace``: (S,L,M,N), or flat in fragment order). tmD, a TMA
    map of D's (M,N,L) view (``d_map``), makes the epilogue store through shared memory; tmC, the same map of
    C (of D's type; whole tiles without stream-K or pingpong), loads C into those buffers. With stream-K, W is
    the flat fp32 workspace of one partial tile per CTA (``streamk_workspace``) and flags its int32 flags, one
    per CTA and consumer warpgroup, 0 before the launch and after it. timeline: None, or an int64
    (grid, 2 + 3 * TIMELINE_ITEMS) tensor in which the first consumer warpgroup of each CTA records its SM, the
    global timer (ns) when it starts, and for each of its first TIMELINE_ITEMS work units (or stream-K items)
    the timer before the main loop, after it, and after the epilogue or hand-off (benchmarks/probe_sm90_timeline.py)."""
    dsl.launch_bounds(cfg.threads, 1)
    dtype, _wg_type = ELEMENTS[elem]
    bM, bN, bK = cfg.blk_m, cfg.blk_n, cfg.blk_k
    dsl.assume(bK * dtype.bits == 1024, f"blk_k={bK} is not 128 bytes of {elem}")
    dsl.assume(dtype.bits == 16 or majors == ("K", "K"),
               f"{elem} wgmma operands must both be K-major (only 16-bit types have the transpose bits)")
    dsl.assume(not cfg.stream_k or (W is not None and flags is not None), "stream-K needs the workspace W and flags")
    dsl.assume(cfg.splits == 1 or flags is None or cfg.cluster == 1,
               "split-K summed in the kernel (flags) takes CTAs without clusters")
    L, M, N = D.shape
    sch = _Schedule(cfg, (L, M, N), K)
    CL = sch.CL
    dsl.assume(not cfg.dynamic or flags is not None, "a dynamic schedule claims its units from flags(0)")
    if cfg.dynamic:
        sch.queue(flags)                                                  # visible after pipeline()'s barrier
    sA, sB, full_bar, empty_bar = pipeline(cfg, dtype, majors)
    sD = epilogue_buffers(cfg, D) if tmD is not None else None           # (ROWS,CHUNK,2*CONSUMERS)
    c_bar = None
    if tmC is not None:                                                   # C's chunks land in the D buffers
        dsl.assume(tmD is not None, "tmC loads C into the epilogue buffers: it needs tmD")
        c_bar = hopper.mbarriers(2 * cfg.consumers)                       # one per buffer
        with dsl.if_(dsl.eq(threadIdx.x, 0)):
            for b in range(2 * cfg.consumers):
                c_bar.init(b, 1)
            hopper.fence_barrier_init()
        dsl.syncthreads()                                                 # initialized before any thread uses them
    # a map of one 64-element column block (a ragged MN-major operand: _map) takes one load per block; where the
    # cluster multicasts that operand, its CTAs share out the blocks (block b from rank b % CTAs), each block to all
    blocks_a = _blocks_of(tmA, bM, bK, tmA.args.element_bytes)
    blocks_b = _blocks_of(tmB, bN, bK, tmB.args.element_bytes)
    split_a = sch.CLN > 1 and tmA.args.multicast == 1                     # A's column blocks, multicast
    split_b = sch.CLM > 1 and tmB.args.multicast == 1                     # B's column blocks, multicast
    dsl.assume((not split_a or blocks_a % sch.CLN == 0) and (not split_b or blocks_b % sch.CLM == 0),
               "a multicast operand's column blocks split evenly among the CTAs that share it")
    # every CTA's slice (a multicast map's box) or block lands: each stage receives the whole tiles
    stage_bytes = (tmA.box_bytes * blocks_a * (sch.CLN if tmA.args.multicast > 1 else 1)
                   + tmB.box_bytes * blocks_b * (sch.CLM if tmB.args.multicast > 1 else 1))

    if cfg.splits > 1:
        # the reduction kernel (SplitReduce, a programmatic dependent launch) may be scheduled now: its CTAs
        # take SMs as this kernel's leave, and wait (griddep_wait) for all of its partials before reading them
        hopper.griddep_launch_dependents()
    wg = hopper.warpgroup_index()
    with dsl.if_(dsl.eq(wg, 0)):
        #
        # Producer: one thread streams k-tiles of A and B into the stages, tile after tile
        #
        hopper.setmaxnreg(cfg.producer_regs, inc=False)
        with dsl.if_(dsl.eq(threadIdx.x, 0)):
            hopper.tma_prefetch(tmA)
            hopper.tma_prefetch(tmB)

            mc_a, mc_b = sch.multicast()

            def blocks(tm: Any, s: Any, bar: Any, count: int, origin: Any, mc: Any, ctas: int) -> None:
                """The column blocks of one operand's stage tile s, origin (mn, k, l): all of them, or with the
                multicast mc (mask, rank) every ctas-th from block `rank`, each to the CTAs of the mask."""
                for b in range(count):
                    tile = s(((_, b) if count > 1 else _), _)
                    at = (origin[0] + 64 * b, origin[1], origin[2])
                    if mc is None:
                        hopper.tma_load(tm, tile, bar, at)
                    else:
                        with dsl.if_(dsl.eq(mc[1], b % ctas)):
                            hopper.tma_load(tm, tile, bar, at, multicast=mc[0], cta_rank=None)

            def load(stage: Any, m_tile: Any, n_tile: Any, l_idx: Any, k_tile: Any) -> None:
                if mc_a is not None and not split_a:                       # this CTA's slice of A, to its row
                    hopper.tma_load(tmA, sA(_, _, stage), full_bar.addr(stage), (m_tile * bM, k_tile * bK, l_idx),
                                    multicast=mc_a[0], cta_rank=mc_a[1])
                else:                                                      # (column blocks: a ragged MN-major A)
                    blocks(tmA, sA(_, _, stage), full_bar.addr(stage), blocks_a, (m_tile * bM, k_tile * bK, l_idx),
                           mc_a, sch.CLN)
                if mc_b is not None and not split_b:                       # this CTA's slice of B, to its column
                    hopper.tma_load(tmB, sB(_, _, stage), full_bar.addr(stage), (n_tile * bN, k_tile * bK, l_idx),
                                    multicast=mc_b[0], cta_rank=mc_b[1])
                else:
                    blocks(tmB, sB(_, _, stage), full_bar.addr(stage), blocks_b, (n_tile * bN, k_tile * bK, l_idx),
                           mc_b, sch.CLM)

            tma_producer(sch, full_bar, empty_bar, stage_bytes, load)
    with dsl.else_():
        consumer(cfg, elem, majors, ep, full, sch, sA, sB, full_bar, empty_bar, C, D, W, bias, alpha, beta, tmD, sD,
                 flags, timeline, tmC, c_bar)
    if CL > 1:
        hopper.cluster_sync()           # no CTA leaves while a peer may still multicast into it or arrive on it


def epilogue_layout(cfg: Sm90Config, d_dtype: Any) -> Any:
    """(ROWS, CHUNK, 2 * consumers): two 128-byte swizzled column chunks of D per consumer warpgroup,
    the tile of D's TMA map (``d_map``) and of the epilogue's fragment stores; with ``store_mn``
    (ROWS, BLK_N, consumers): each consumer's part, M-major (its 64 rows one 128-byte swizzled column)."""
    if cfg.store_mn:
        return smem_layout(d_dtype, "MN", cfg.rows, cfg.blk_n, cfg.consumers)
    return smem_layout(d_dtype, "K", cfg.rows, 1024 // d_dtype.bits, 2 * cfg.consumers)


def epilogue_buffers(cfg: Sm90Config, D: Any) -> Any:
    """The epilogue's shared memory for D's element type (see ``epilogue_layout``)."""
    d_dtype = D.engine.dtype
    return dsl.smem_tensor(d_dtype, epilogue_layout(cfg, d_dtype), align=1024)


# D types the epilogue stores through smem (fp32: 32-column chunks).
_D_TYPES = {"float16": dsl.float16, "bfloat16": dsl.bfloat16, "float32": dsl.float32}


def d_map(D3: Any, cfg: Sm90Config) -> Any:
    """The TMA map that stores D (L,M,N) through the epilogue buffers, or None where TMA cannot write D (not
    N-contiguous, or with ``store_mn`` not a 16-bit M-contiguous D; tiles of no whole 128-byte chunks;
    misaligned; ``tma_store=False``; split-K) and the epilogue stores from registers instead."""
    name = str(D3.dtype).replace("torch.", "")
    if not cfg.tma_store or cfg.splits > 1 or name not in _D_TYPES:
        return None
    if cfg.store_mn:
        if D3.stride(1) != 1 or D3.stride(2) == 1 or _D_TYPES[name].bits != 16:
            return None
    elif D3.stride(2) != 1 or cfg.blk_n % (1024 // _D_TYPES[name].bits):
        return None
    if _d_problem(tuple(D3.shape), D3.stride(), D3.data_ptr() % 16, name, cfg) is not None:
        return None
    return _cached_map(D3.permute(1, 2, 0), lambda: epilogue_layout(cfg, _D_TYPES[name])(_, _, 0), 1,
                       ("D", cfg.rows, cfg.consumers) + ((cfg.blk_n,) if cfg.store_mn else ()))


@functools.lru_cache(maxsize=1024)
def _d_problem(shape: tuple, stride: tuple, mis: int, dtype: str, cfg: Sm90Config) -> str | None:
    return _view_problem("D", shape, stride, mis, dtype, epilogue_layout(cfg, _D_TYPES[dtype])(_, _, 0), 1)


def operand_majors(A3: Any, Bt: Any) -> tuple[str, str]:
    """("K" or "M", "K" or "N"): the contiguous mode of A (L,M,K) and of B given as (L,N,K)."""
    return ("K" if A3.stride(2) == 1 else "M"), ("K" if Bt.stride(2) == 1 else "N")


def make_maps(A3: Any, Bt: Any, cfg: Sm90Config, elem: str) -> tuple[Any, Any]:
    """The TMA maps of A (L,M,K) and B (L,N,K), over their (M,K,L) / (N,K,L) views, each filling one
    stage of the operand's smem layout (the same layout the kernel's descriptors read). Maps are cached
    on everything they encode (address, extents, strides, tile), so a repeated call costs a lookup."""
    a_major, b_major = operand_majors(A3, Bt)
    return (_map(A3.permute(1, 2, 0), elem, a_major, cfg.blk_m, cfg.blk_k, cfg.stages, cfg.cluster_n),
            _map(Bt.permute(1, 2, 0), elem, b_major, cfg.blk_n, cfg.blk_k, cfg.stages, cfg.cluster_m))


_MAPS: dict[Any, Any] = {}   # (address, extents, strides, dtype, tiling) -> TmaMap without its tensor


# TMA element types other than the tensor's: fp32 operands load through TFLOAT32 maps, which round
# each value to nearest tf32 on the way to shared memory (an H100 measured 2.9e-4 relative error at
# K = 1024..4096, torch's tf32 error, against 7.7e-4 from FLOAT32 maps, whose low mantissa bits the
# tensor cores drop).
_MAP_DTYPES = {"tf32": "tf32"}


def _map(x: Any, elem: str, major: str, mn: int, bk: int, stages: int, multicast: int) -> Any:
    """The TMA map of operand view x (MN, K, L) filling its (mn, bk) stage tile; where x is MN-major and its
    MN extent is no multiple of 64 (``ragged_mn``), the map of one 64-element column block of the tile
    (the kernel loads the blocks one by one, and TMA fills the columns past the extent with zeros; under a
    multicast the CTAs share out the blocks, each sending whole ones, so the map is one CTA's)."""
    block = major != "K" and ragged_mn(x.shape[0])
    if block and (mn // 64) % multicast:
        raise ValueError(f"an MN-major operand of extent {x.shape[0]} (no multiple of 64) is loaded by column blocks, "
                         f"and the {mn // 64} of a tile do not split among {multicast} CTAs "
                         f"(tma_problem says so first)")

    def tile() -> Any:
        lay = smem_layout(ELEMENTS[elem][0], "K" if major == "K" else "MN", mn, bk, stages)(_, _, 0)
        return mn_block(lay) if block else lay
    return _cached_map(x, tile, 1 if block else multicast, (elem, major, mn, bk, stages, block), _MAP_DTYPES.get(elem))


def ragged_mn(extent: int) -> bool:
    """Whether an MN-major operand of this MN extent is loaded by 64-element column blocks: the whole-tile
    map views the extent as (64, extent / 64), which needs a multiple of 64."""
    return extent % 64 != 0


def mn_block(tile: Any) -> Any:
    """Column block 0 (64 MN elements, all of K) of an MN-major stage tile ((64, blocks), K)."""
    return tile(((_, 0), _))


def _blocks_of(tm: Any, extent: int, bk: int, element_bytes: int) -> int:
    """How many loads of map tm fill a stage tile of (extent, bk): 1 for a whole-tile map (or a multicast map,
    whose box is this CTA's slice of the tile), extent / 64 for a column block's."""
    return 1 if tm.args.multicast > 1 else extent * bk * element_bytes // tm.box_bytes


def _cached_map(x: Any, tile: Any, multicast: int, tiling: tuple, dtype: str | None = None) -> Any:
    """The TMA map of view x filling the smem tile ``tile()`` (a layout, built only when the map is not
    cached: slicing a swizzled layout cost more than the rest of a launch), from the cache when x's
    address, extents, strides and the tiling match. Cached maps do not hold their tensor: the cache must
    not keep operands alive (it held every rotated benchmark operand until the GPU ran out of memory); a
    map is only found again for a tensor at the same address with the same extents and strides, which it
    describes exactly. `dtype` names the map's element type where it is not the tensor's
    (``TMA_DTYPES``)."""
    from tilecraft.runtime.tma import make_tma_map

    key = (x.data_ptr(), tuple(x.shape), x.stride(), dtype or str(x.dtype), x.device, multicast, tiling)
    m = _MAPS.get(key)
    if m is None:
        if len(_MAPS) >= 1024:
            _MAPS.clear()
        m = _MAPS[key] = replace(make_tma_map(x, tile(), multicast=multicast, dtype=dtype), tensor=None)
    return m


def tma_problem(A3: Any, Bt: Any, cfg: Sm90Config, elem: str) -> str | None:
    """Why the kernel cannot read A (L,M,K) / B (L,N,K) tiled for cfg (an MN-major tf32 or fp8 operand,
    which wgmma does not take; alignment, strides, an MN-major extent that does not split into 64-element
    columns, which TMA does not take), or None when it can. Pure: no GPU needed."""
    a_major, b_major = operand_majors(A3, Bt)
    return _tma_problem(tuple(A3.shape), A3.stride(), A3.data_ptr() % 16, tuple(Bt.shape), Bt.stride(),
                        Bt.data_ptr() % 16, str(A3.dtype), cfg, elem)


@functools.lru_cache(maxsize=1024)
def _tma_problem(a_shape: tuple, a_stride: tuple, a_mis: int, b_shape: tuple, b_stride: tuple, b_mis: int,
                 dtype: str, cfg: Sm90Config, elem: str) -> str | None:
    for name, shape, stride, mis, mn, mc in (("A", a_shape, a_stride, a_mis, cfg.blk_m, cfg.cluster_n),
                                             ("B", b_shape, b_stride, b_mis, cfg.blk_n, cfg.cluster_m)):
        major = "K" if stride[2] == 1 else "MN"
        if major != "K" and ELEMENTS[elem][0].bits != 16:
            return (f"{name}: {elem} wgmma reads K-major operands only (unit stride along K: A row-major, B "
                    f"column-major), got strides {stride} of the ({'L,M,K' if name == 'A' else 'L,N,K'}) view")
        if major != "K" and mn % 64:
            return (f"{name}: an MN-major operand is tiled in 64-element (128-byte swizzle) columns, so its tile "
                    f"extent must be a multiple of 64, got {mn} ({cfg.name})")
        lay = smem_layout(ELEMENTS[elem][0], major, mn, cfg.blk_k, cfg.stages)(_, _, 0)
        if major != "K" and ragged_mn(shape[1]):
            # loaded by 64-element column blocks (_map), each a box of its own; the CTAs that multicast the
            # operand share out a tile's blocks, so those must split evenly among them
            if (mn // 64) % mc:
                return (f"{name}: an MN-major extent that is no multiple of 64 ({shape[1]}) is loaded by column "
                        f"blocks, and the {mn // 64} of a {mn}-element tile do not split among the {mc} CTAs that "
                        f"multicast it ({cfg.name})")
            lay, mc = mn_block(lay), 1
        problem = _view_problem(name, shape, stride, mis, dtype.replace("torch.", ""), lay, mc)
        if problem is not None:
            return problem
    return None


def _view_problem(name: str, shape: tuple, stride: tuple, mis: int, dtype: str, lay: Any, multicast: int) -> str | None:
    """Why TMA cannot map the (MN, K, L) view of a (L, MN, K) tensor onto smem tile `lay` at an address
    with misalignment `mis` ("<name>: <reason>"), or None."""
    from tilecraft.runtime.tma import tma_encode_args

    try:
        tma_encode_args((shape[1], shape[2], shape[0]), (stride[1], stride[2], stride[0]), dtype, lay,
                        multicast=multicast, address=mis)
    except ValueError as e:
        return f"{name}: {e}"
    return None


def effective_splits(K: int, cfg: Sm90Config) -> int:
    """The split count the kernel runs for K: at most cfg.splits, each split non-empty (the kernel gives
    split s the k-tiles [s * ceil(k_tiles / S), ...))."""
    from tilecraft.gemm.tensorop import whole_splits

    return whole_splits(-(-K // cfg.blk_k), cfg.splits)


class Launch:
    """The kernel's launch for one signature of operands: D3 (L,M,N) from A3 (L,M,K), Bt (L,N,K), C3 / bias as
    the epilogue says, with everything but their addresses resolved once (split count, grid, the bound
    kernels, which maps to make). A caller that keys its Launches on the operands' dtypes, shapes, strides,
    16-byte alignment and device (tc.gemm does) runs later operands of that signature with ``launch(...)``:
    three cached TMA maps and one or two driver launches. alpha and beta are floats read at each call.
    Stream-K launches one CTA per SM (in whole clusters) and gives each call a fresh workspace of partial
    tiles; its flags return to 0 by the end of a launch, so each stream keeps one zeroed set. Like CUTLASS's
    stream-K it needs every CTA of the grid resident at once (a CTA that finishes a unit waits for later
    CTAs' partials). Split-K whose work units all fit on the SMs at once (no cluster) sums its tiles in the
    same kernel (``fused``, ``_reduce_tile``), with the same need; otherwise a second kernel does
    (``SplitReduce``, a programmatic dependent launch). Both launch cooperatively: the driver starts every CTA
    together (a kernel of another stream that holds SMs delays the launch instead of leaving CTAs spinning on
    ones that have no SM), and refuses a grid the GPU, or its MPS share, cannot hold at once. Where it refuses
    (``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``: fewer SMs are free to this process than the device reports,
    as under MPS with an SM limit), the launch falls back for good to the forms whose CTAs never wait on each
    other: stream-K becomes the plain persistent walk of the same tiles, fused split-K the reduction kernel.

    ``cooperative=False`` takes those forms from the start.

    ``view``: a caller may launch with its operands as it holds them (e.g. 2-D, or B (K, N) for Bt) and give
    ``view(i, x)``, the kernel's view of operand i (0 A3, 1 Bt, 2 D3, 3 C3) of such an x. Its views then cost
    nothing per call: the kernel reads the operands' addresses only, and the views are made where a TMA map is
    (a new address). Each torch view op costs 1.5-3 µs of host time on the H100's host (benchmarks/probe_host.py);
    the construction itself takes the views."""

    def __init__(self, A3: Any, Bt: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any, cfg: Sm90Config,
                 elem: str, ep: Any, sms: int, cooperative: bool = True, view: Any = None):
        import torch
        from tilecraft.gemm.tensorop import EpilogueSpec, SplitReduce

        L, M, N = D3.shape
        self._given = (cfg, elem, ep, sms)                                # for the fallback (__call__)
        self._view = view if view is not None else _same_view
        self.K = K = A3.shape[2]
        self.cfg = cfg = replace(cfg, splits=effective_splits(K, cfg))
        if not cooperative:
            self.cfg = cfg = replace(cfg, stream_k=0)
        if cfg.stream_k and not stream_k_fits(sms, -(-K // cfg.blk_k)):
            self.cfg = cfg = replace(cfg, stream_k=0)
        self.elem, self.ep = elem, ep
        self.majors = operand_majors(A3, Bt)
        CL, S = cfg.cluster, cfg.splits
        tiles_m, tiles_n = -(-M // cfg.blk_m), -(-N // cfg.blk_n)
        self.tiles = -(-tiles_m // cfg.cluster_m) * -(-tiles_n // cfg.cluster_n) * L   # of whole clusters
        units = self.tiles * S
        self.full = (M % cfg.blk_m == 0 and N % cfg.blk_n == 0 and tiles_m % cfg.cluster_m == 0
                     and tiles_n % cfg.cluster_n == 0)
        self.store = S == 1 and d_map(D3, cfg) is not None                 # the epilogue stores D through TMA
        self._maps: tuple[dict, dict, dict, dict] = ({}, {}, {}, {})     # A, B, D, C
        self._ep0 = EpilogueSpec()                                        # the split-K main kernel's epilogue
        self.fused = cooperative and fused_split_reduction(cfg, units, sms)   # split-K summed in the kernel
        W = split_workspace(D3, cfg, self.tiles) if self.fused else \
            D3.new_empty((S, L, M, N), dtype=torch.float32) if S > 1 else None
        self._split_shape = tuple(W.shape) if self.fused else None        # a call's partials (workspace)
        self._f32 = torch.float32
        self._flags: dict[int, Any] = {}                                  # stream -> stream-K / split-K flags
        self._flag_count = sms * cfg.consumers                            # one per CTA and consumer, grid <= SMs
        flags = None
        if cfg.stream_k or self.fused or cfg.dynamic:                     # (dynamic: flags(0) is the tile queue)
            flags = self.stream_flags(D3)
        if cfg.stream_k:
            W = streamk_workspace(D3, sms, cfg)
        args = self._args(A3, Bt, C3, D3, bias, alpha, beta, W, flags, _same_view)     # (the kernel's views here)
        resident = resident_clusters(sm90_gemm_kernel, args, cfg.threads, CL, sms, (cfg, elem, sms))
        rounds = -(-units // resident)                                    # work units per cluster, at most
        self.grid = -(-units // rounds) * CL                              # as few clusters as keep that count
        if cfg.stream_k:
            self.grid = resident * CL                                     # every SM takes a share of the iterations
        # CTAs that wait on each other's partials (stream-K, the fused split-K) launch cooperatively: the driver
        # starts them all together, so another stream's kernel holding SMs cannot leave some of them waiting
        # on CTAs that have no SM (and refuses a grid the GPU cannot hold rather than hang)
        self.main = sm90_gemm_kernel.bind(*args, grid=(self.grid,), block=(cfg.threads,),
                                          cluster=(CL, 1, 1) if CL > 1 else None,
                                          cooperative=self.fused or bool(cfg.stream_k))
        # the reduction is a programmatic dependent launch: it starts as the splits' CTAs leave the SMs
        self.reduce = SplitReduce(W, C3, D3, bias, alpha, beta, ep, pdl=True) if S > 1 and not self.fused else None

    def _args(self, A3: Any, Bt: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any, W: Any, flags: Any,
              view: Any = None) -> tuple:
        cfg, elem, view = self.cfg, self.elem, view or self._view
        tmA = by_address(self._maps[0], A3, lambda x: _map(view(0, x).permute(1, 2, 0), elem, self.majors[0], cfg.blk_m,
                                                           cfg.blk_k, cfg.stages, cfg.cluster_n))
        tmB = by_address(self._maps[1], Bt, lambda x: _map(view(1, x).permute(1, 2, 0), elem, self.majors[1], cfg.blk_n,
                                                           cfg.blk_k, cfg.stages, cfg.cluster_m))
        if cfg.splits > 1 and not self.fused:
            return (tmA, tmB, None, D3, None, alpha, beta, self.K, W, cfg, elem, self.majors, self._ep0, self.full)
        if self.fused:                                                    # D from the registers, summed splits
            return (tmA, tmB, C3, D3, bias, alpha, beta, self.K, W, cfg, elem, self.majors, self.ep, self.full, None,
                    flags)
        tmD = by_address(self._maps[2], D3, lambda x: d_map(view(2, x), cfg)) if self.store else None
        tmC = None
        if (self.store and self.ep.read_c and not (cfg.stream_k or cfg.pingpong or cfg.store_mn)
                and C3.dtype == D3.dtype):
            # C's chunks land by TMA in the D buffers (H100, bf16, D = A @ B + C: 4096^3 200 against 214 µs
            # with C's fragments loaded from global memory, 8192^3 1550 against 1615-1648); pingpong's
            # 128x128 spilled 72 bytes with C, bias and GELU on ragged tiles
            tmC = by_address(self._maps[3], C3, lambda x: d_map(view(3, x), cfg))
        return (tmA, tmB, C3, D3, bias, alpha, beta, self.K, W, cfg, elem, self.majors, self.ep, self.full, tmD, flags,
                tmC)

    def __call__(self, A3: Any, Bt: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any) -> None:
        W, flags = self.workspace(D3)
        try:
            self.main(*self._args(A3, Bt, C3, D3, bias, alpha, beta, W, flags))
        except LaunchError as e:
            if not (self.main.cooperative and e.code == COOPERATIVE_TOO_LARGE):
                raise
            v = self._view
            self.__init__(v(0, A3), v(1, Bt), None if C3 is None else v(3, C3), v(2, D3), bias, alpha, beta,  # type: ignore[misc]
                          *self._given, cooperative=False, view=None if v is _same_view else v)
            self(A3, Bt, C3, D3, bias, alpha, beta)
            return
        if self.reduce is not None:
            self.reduce(W, C3, D3, bias, alpha, beta)

    def workspace(self, D3: Any) -> tuple[Any, Any]:
        """(W, flags) of one call: split-K's partials for the reduction kernel, or summed in the kernel with the
        stream's flags, or stream-K's partial tiles with them; (None, None) for whole tiles."""
        if self.reduce is not None:
            return self.reduce.workspace(D3), None
        if self.fused:
            return D3.new_empty(self._split_shape, dtype=self._f32), self.stream_flags(D3)
        if self.cfg.stream_k:
            return streamk_workspace(D3, self.grid, self.cfg), self.stream_flags(D3)
        if self.cfg.dynamic:
            return None, self.stream_flags(D3)
        return None, None

    def stream_flags(self, D3: Any) -> Any:
        """Stream-K's flags for the current stream (``stream_flags``)."""
        return stream_flags(self._flags, self._flag_count, D3.device)


def _same_view(i: int, x: Any) -> Any:
    """Launch's default ``view``: the caller passes the kernel's views themselves."""
    return x


#: the driver's refusal of a cooperative grid that the SMs free to this process cannot hold at once
COOPERATIVE_TOO_LARGE = "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"


def stream_flags(cache: dict[int, Any], count: int, device: Any) -> Any:
    """A launch's int32 flags for the current torch stream on device, from its per-stream cache (launches on
    one stream run in turn; two streams must not share flags): `count` zeros made once, left at 0 by every
    launch. Flags first needed during a CUDA graph's capture are that graph's alone: made there, they are zeroed
    only when it replays, so they are not kept for later calls on the stream."""
    import torch

    stream = current_stream_handle(device)
    flags = cache.get(stream)
    if flags is None:
        flags = torch.zeros(count, dtype=torch.int32, device=device)
        if not torch.cuda.is_current_stream_capturing():
            cache[stream] = flags
    return flags


def stream_workspace(cache: dict[int, Any], shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
    """A launch's scratch buffer of `shape` for the current torch stream on device, from its per-stream cache: the
    launches of one stream run in turn and nothing in the buffer outlives a launch, so they share one (made once
    per stream, as ``stream_flags``; one first needed during a CUDA graph's capture is that graph's alone). For
    small buffers: each stays held while its cache lives."""
    import torch

    stream = current_stream_handle(device)
    w = cache.get(stream)
    if w is None:
        w = torch.empty(shape, dtype=dtype, device=device)
        if not torch.cuda.is_current_stream_capturing():
            cache[stream] = w
    return w


def current_stream_handle(device: Any) -> int:
    """The current torch stream's handle on `device` (torch's private getter where it has one, as the launcher
    uses: it skips the public one's per-call checks)."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def fused_split_reduction(cfg: Sm90Config, units: int, sms: int) -> bool:
    """Whether split-K sums its partial tiles in the GEMM kernel itself (``_sum_split_blocks`` or
    ``_reduce_tile``, see ``split_blocks``): every split of every tile must run at once, so the work units
    (tiles x splits) fit on the SMs, one CTA each, and the CTAs form no clusters. (Clusters of a tile's splits,
    summing in distributed shared memory, were measured slower on an H100: 15 clusters of 8 and 30 of 4 are
    resident, and neighbouring SMs then read different k-ranges; RESULTS.md, twenty-eighth session.)"""
    return cfg.splits > 1 and cfg.cluster == 1 and not cfg.stream_k and units <= sms


def stream_k_fits(sms: int, k_tiles: int) -> bool:
    """Whether stream-K's int32 iteration arithmetic (units x k-tiles, times the clusters) holds for a grid of up
    to `sms` CTAs over k_tiles k-tiles."""
    return 2 * sms * sms * k_tiles < 2 ** 31


def streamk_workspace(D3: Any, grid: int, cfg: Sm90Config) -> Any:
    """The stream-K partial tiles of one launch: an fp32 (BLK_M x BLK_N) tile per CTA, flat."""
    import torch

    return D3.new_empty((grid * cfg.blk_m * cfg.blk_n,), dtype=torch.float32)


def by_address(cache: dict[int, Any], x: Any, make: Any) -> Any:
    """The TMA map of operand x from a launch's per-operand cache, keyed by x's address alone (the launch's
    signature fixes extents, strides and tiling), made by ``make(x)`` on a miss (64 addresses at most)."""
    ptr = x.data_ptr()
    m = cache.get(ptr)
    if m is None:
        if len(cache) >= 64:
            cache.clear()
        m = cache[ptr] = make(x)
    return m


def launch(A3: Any, Bt: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any, cfg: Sm90Config, elem: str, ep: Any,
           sms: int) -> None:
    """Run the kernel once: D3 (L,M,N) from A3 (L,M,K), Bt (L,N,K) (TMA-compatible: 16-byte aligned base
    and strides), C3 / bias as the epilogue says; one CTA per SM up to the number of work units. With
    split-K the splits write fp32 partials to a workspace and tensorop's reduction kernel applies the
    epilogue. (``Launch`` keeps what this resolves, for callers that launch one signature again.)"""
    Launch(A3, Bt, C3, D3, bias, alpha, beta, cfg, elem, ep, sms)(A3, Bt, C3, D3, bias, alpha, beta)


# (config, element or weight format, SM count) -> clusters the GPU holds at once (persistent grids in clusters)
_RESIDENT_CLUSTERS: dict[Any, int] = {}


def resident_clusters(kernel: Any, args: tuple, threads: int, cluster: int, sms: int, key: Any) -> int:
    """How many clusters of `cluster` CTAs a persistent grid of `kernel` (launched with `args`) may hold:
    one CTA per SM in whole clusters, capped by what the GPU places at once (GPCs with an odd number of
    free SMs cannot hold a whole cluster everywhere; asked once per `key`)."""
    if cluster == 1:
        return sms
    if key not in _RESIDENT_CLUSTERS:
        _RESIDENT_CLUSTERS[key] = kernel.max_active_clusters(*args, block=(threads,), cluster=(cluster, 1, 1))
    return max(1, min(sms // cluster, _RESIDENT_CLUSTERS[key]))
