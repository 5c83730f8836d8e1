"""The mixed-input GEMM for large M on Hopper (sm_90a): the dense TMA + wgmma kernel with a producer
that dequantizes the weight into the stages. (tc.gemm now runs the register-A kernel of
sm90_mixed_rs.py, faster at every M measured, 64 to 4096 at N = K = 8192; this one runs when a caller
passes its tiling.)

    y (M,N) = x (M,K) @ dequantize(W) (+ bias)      x, y fp16 / bf16; W int4 / int8 (tc.quant.pack, layout v1)

Past a few dozen rows of x the GEMM is no longer a weight stream (tilecraft/gemm/mixed.py, which re-reads
W for every 32 rows) but a compute-bound GEMM whose B operand happens to be stored in 4 or 8 bits. This
kernel is tilecraft/gemm/sm90.py's warp-specialized persistent GEMM with B = W^T, and only the producer
warpgroup changed:

* **Consumers.** Exactly sm90.py's ``consumer``: wgmma from the swizzled K-major stages of A = x (BLK_M,
  BLK_K) and B = W^T (BLK_N, BLK_K) into fp32 accumulators, then the epilogue (bias, cast, predicated
  stores; or with split-K the fp32 partials and sm90's reduction). Same ``_Schedule`` (persistent grid,
  grouped raster, split-K slices), same ``pipeline`` stages and barriers.
* **Producer.** All 128 threads of warpgroup 0. Thread 0 issues the TMA load of the x k-tile as in the
  dense kernel. Every thread loads its share of the packed W k-tile straight from global memory into
  registers, converts it to 16-bit and writes it into the stage's B buffer. Per k-tile a lane of warp w
  owns the 16-row tiles w, w + 4, ... of the CTA's BLK_N rows: one 128-bit load per tile (int4; two for
  int8) that a warp issues as 512 contiguous bytes, exactly the small-M kernel's load (the packed layout
  is the same object for every M; there is no second layout).
* **Fragment order to K-major rows.** The packed words are in mma.sync fragment order: lane (g, q) holds
  rows g and g + 8 at k = 4q .. 4q + 3 of each 16-k block. A 16-byte store into the B stage needs 8
  consecutive k of one row, so lanes q and q ^ 1 swap half their values (one shuffle per word, before
  conversion for int4 and on the bytes for int8): afterwards the even lane owns row g and the odd lane
  row g + 8, k = 8 (q / 2) .. + 7 (include/tilecraft/sm90_mixed.cuh). ``lane_chunk`` states this mapping
  once; the kernel and the CPU model test both use it, and the store address is the stage layout
  ``smem_layout`` applied to (row, k, stage) (the swizzle of the layout, never a hand-written one).
* **Bank-conflict-free stores.** With every lane converting k-block j in its j-th store, the 8 lanes of a
  quarter warp (rows g, g + 8 of two g, two 16-byte k chunks) met in 2 of the 8 bank groups of the
  128-byte swizzle: 4-way conflicts, 12 extra shared-memory wavefronts per STS.128 (ncu), which made the
  producer's stores, not its arithmetic, the bound. Lane (g, q) instead converts block j ^ (2 (q % 2) +
  g % 2) in store j (``block_of``): the tile's words are reordered in place once (a few selects) and the
  8 lanes cover all 8 groups.
* **Conversion and rounding.** mixed.cuh's magic-number converters give q - z exactly in the 16-bit type;
  one ``mul.rn`` by the row's scale then rounds (q - z) * s once to nearest even. The weight the tensor
  cores see is therefore exactly ``dequantize(W)`` cast to fp16 / bf16 (the small-M kernel instead
  multiplies exact integers and applies scales to its fp32 sums; here the scale is inside the operand,
  as a dequantize-then-GEMM does). A k-tile is 64 values of k, so it needs the scales of one group
  (group 64 / 128 / per-channel) or two (group 32) per row; per-channel scales are loaded once per tile.
* **Latency.** ``depth`` k-tiles of packed words live in registers: a buffer is refilled with k-tile
  t + depth as soon as k-tile t's words in it are converted (``register_ring``, a ring of register
  buffers, so the loop is unrolled ``depth`` times). The stages let the producer run up to ``stages``
  k-tiles ahead of the wgmmas. With ``ring`` (the heuristic's choice where ``RING`` measured it faster:
  both widths on the 128x256 tile, int4 on 128-wide tiles) the packed words and scales travel by cp.async
  into a ring of per-thread shared-memory slots instead, ``ring - 1`` k-tiles in flight and no registers
  held (only the thread that copied a slot reads it: no barrier); a k-tile's words are read into registers
  before the producer waits for its stage.
* **Handing a stage over.** The producer waits on the stage's ``empty`` barrier (all 128 threads) before
  overwriting it. After its stores each thread executes ``fence.proxy.async`` (generic-proxy writes become
  visible to wgmma, which reads through the async proxy); the warp then meets at ``__syncwarp`` and lane 0
  arrives on ``full``. ``full`` therefore expects 1 + 4 arrivals: thread 0's ``arrive.expect_tx`` for
  the x bytes, then one per producer warp; the phase completes when those and the TMA bytes are in.
* **Registers.** The producer keeps ``depth`` buffers of packed words (plus scales and zero points) and
  takes ``PRODUCER_REGS`` registers; the consumers ``CONSUMER_REGS`` (104 + 2 * 200 = 3 * 168, the launch's). A
  128x256 tile's k-tile is 16 words per lane for int4 and 32 for int8: two int4 buffers fit (depth 2),
  int8 gets one (depth 1: its loads are issued before the producer waits for the stage to be free, which
  is where a producer that runs ahead of the wgmmas spends its time anyway). The 128x128 tile (small
  M, where the weight stream matters most) has half the words: depth 3 (int4) / 2 (int8). Deeper rings
  spill (measured with NVRTC 13 for every format).
* **Edges.** TMA zero-fills x beyond M and K; the packed format guarantees N % 16 == 0 and K % 64 (int4)
  or K % 32 (int8). Rows past N in a ragged last n-tile re-read the last 16-row tile (finite values whose
  products land in columns the epilogue never stores). For int8 with K % 64 == 32 the last k-tile's
  second half re-reads the last block with scale 0, so it holds zeros (x there is zero-filled, and
  0 * 0 keeps the sums finite).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, fields, replace
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import cp_async
from tilecraft.dsl import Constexpr, hopper, threadIdx
from tilecraft.dsl.expr import make, render
from tilecraft.dsl.trace import current
from tilecraft.gemm.limits import CTA_SMEM
from tilecraft.gemm.sm90 import ELEMENTS, Sm90Config, _advance, _Schedule, consumer, pipeline
from tilecraft.layout.inttuple import imin
from tilecraft.quant.pack import PackedFormat, PackedWeight, k_block
from tilecraft.tensor import Tensor

__all__ = ["Sm90MixedConfig", "sm90_mixed_kernel", "sm90_mixed_gemm", "pick_sm90_mixed_config", "use_sm90_mixed", "with_ring",
           "lane_chunk", "block_of", "block_words", "group_slot", "slot_group", "SM90_MIN_M", "PRODUCER_REGS", "CONSUMER_REGS",
           "pick_config", "register_ring"]

#: rows of x from which tc.quant.gemm on an sm_90 GPU runs this kernel instead of the small-M one: past 32
#: rows the small-M kernel streams W once per 32-row slice (H100, N = K = 8192, M = 48, streams: W4A16 g128
#: 35.7 us here against 48.0 in two slices, W8A16 per-channel 42.3 against 69.0; fourteenth session)
SM90_MIN_M = 33
#: registers per thread of the producer (packed words of `depth` k-tiles, scales, zero points, addresses)
#: and of each consumer warpgroup (128 fp32 accumulators and the epilogue: ptxas puts sm90's consumer at
#: 196 with a bias). setmaxnreg only moves registers the CTA was launched with (384 threads x 168 =
#: 64512), so 104 + 2 * 200 = 504 = 3 * 168 (multiples of 8); asking for more (112 + 2 * 200) made the consumers' setmaxnreg.inc
#: wait forever (the kernel hung on an H100).
PRODUCER_REGS = 104
CONSUMER_REGS = 200
#: blk_n -> smem stages (A and B of 128 x 64 and blk_n x 64 16-bit values: 192 KB either way)
STAGES = {256: 4, 128: 6, 64: 8}
#: (bits, blk_n) -> the deepest ring of packed words that fits PRODUCER_REGS without spills, every format
DEPTH = {(4, 256): 2, (8, 256): 1, (4, 128): 3, (8, 128): 2, (4, 64): 3, (8, 64): 2}
#: (bits, blk_n) -> the cp.async ring the heuristic gives the producer instead of its registers, where it
#: measured faster (H200, session 5, N = K = 8192, after the stores became bank-conflict free): W4A16 g128
#: 263.5 / 1140.7 us at M = 1024 / 4096 with a ring of 4 against 286.7 / 1180.9 with registers, 69.3
#: against 75.1 us at M = 128 (64x128 tile, ring 6); W8A16 per-channel 303.5 / 1273.0 with a ring of 4
#: (the register ring is one k-tile deep there); W8A16 on the 128-wide tile is faster without.
RING = {(4, 256): 4, (8, 256): 4, (4, 128): 6}
#: producer warps: each arrives once on a stage's `full` barrier
PRODUCER_WARPS = 4
_HEADER = "tilecraft/sm90_mixed.cuh"


def _direct_epilogue(tile: Sm90Config) -> Sm90Config:
    """The tiling with the consumers storing y straight from their registers (this kernel passes
    ``consumer`` no TMA map of D), where sm90.py's configurations have that switch."""
    if "tma_store" in {f.name for f in fields(Sm90Config)}:
        return replace(tile, tma_store=False)
    return tile


@dataclass(frozen=True)
class Sm90MixedConfig:
    """A tiling of sm90.py's kernel (``tile``: blk_k 64, the register split of the roles) and how the
    producer's packed words travel: ``depth`` k-tiles of them in its registers (each buffer reloaded once
    converted), or with ``ring`` > 0, a ring of that many k-tiles of per-thread shared-memory slots filled by
    cp.async (ring - 1 in flight, no registers held; depth must then be 1)."""

    tile: Sm90Config = _direct_epilogue(Sm90Config(128, 256, 64, stages=4, producer_regs=PRODUCER_REGS,
                                                   consumer_regs=CONSUMER_REGS))
    depth: int = 1
    ring: int = 0

    @property
    def name(self) -> str:
        return f"{self.tile.name}_d{self.depth}" + (f"_ring{self.ring}" if self.ring else "")

    def ring_bytes(self, fmt: PackedFormat) -> int:
        """Shared memory of the cp.async ring: per k-tile and producer thread, its 16-byte loads of packed
        words and 4-byte scale (and zero-point) pairs."""
        t = self.tile
        tiles = t.blk_n // (16 * PRODUCER_WARPS)
        loads = t.blk_k // k_block(fmt.bits)
        pairs = (2 if fmt.group_size == 32 else 1) * (1 + fmt.zero_point) if fmt.group_size else 0
        return self.ring * 128 * tiles * (16 * loads + 4 * pairs)

    def validate(self, fmt: PackedFormat) -> None:
        """Raise ValueError naming the condition this tiling breaks for weights of format fmt."""
        t = self.tile
        t.validate(2)
        if t.cluster > 1:
            raise ValueError(f"{self.name}: the producer writes B itself; no multicast clusters")
        if t.stream_k:
            raise ValueError(f"{self.name}: stream-K is not wired into the mixed-input kernel (split-K is: tile.splits)")
        if t.pingpong:
            raise ValueError(f"{self.name}: pingpong consumers are not wired into the mixed-input kernel")
        if t.blk_n % (16 * PRODUCER_WARPS):
            raise ValueError(f"{self.name}: blk_n must be a multiple of {16 * PRODUCER_WARPS} (16-row tiles per producer warp)")
        if not 1 <= self.depth <= 4:
            raise ValueError(f"{self.name}: depth must be 1..4")
        if self.ring and (self.depth != 1 or not 2 <= self.ring <= 12):
            raise ValueError(f"{self.name}: a shared-memory ring takes 2..12 k-tiles and depth 1")
        if t.smem_bytes(2) + self.ring_bytes(fmt) > CTA_SMEM:
            raise ValueError(f"{self.name}: the stages and the ring take {t.smem_bytes(2) + self.ring_bytes(fmt)} bytes "
                             "of smem, more than the 227 KB of an SM; use fewer stages or a shorter ring")
        if t.producer_regs < 64:
            raise ValueError(f"{self.name}: the dequantizing producer needs at least 64 registers per thread")
        words = self.depth * t.blk_n // (16 * PRODUCER_WARPS) * 4 * (t.blk_k // k_block(fmt.bits))
        if words > t.producer_regs // 2:
            raise ValueError(f"{self.name}: {words} registers of packed words leave the producer too few of its "
                             f"{t.producer_regs}")


def _half_bits(v: float, dtype: str) -> int:
    """The bits of v as a float16 / bfloat16 (v exact in both)."""
    if dtype == "float16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16


def lane_chunk(thread: Any, i: int, j: int) -> tuple[Any, Any, Any, Any, Any]:
    """What producer thread `thread` (0..127) does with 16-k block j (0..3) of its i-th 16-row tile in a
    k-tile: (tile, lane, h, row, k). It loads lane `lane`'s words of 16-row tile `tile` of the CTA's BLK_N
    rows (tiles of warp w: w, w + 4, ...), keeps row half h (0: row g = lane / 4, 1: row g + 8) after the
    swap with lane ^ 1, and stores 8 values at (row, k .. k + 7) of the (BLK_N, BLK_K) W^T stage. `row`
    is 16 tile + g + 8 h as the stage layout's row coordinate (row % 8, row / 8) = (g, 2 tile + h): the
    swizzle then sees g alone, and the rest is whole 1 KB atoms. Ints give ints, runtime indices
    expressions."""
    lane, warp = thread % 32, thread // 32
    tile = warp + PRODUCER_WARPS * i
    h = lane % 2
    return tile, lane, h, (lane // 4, 2 * tile + h), 16 * j + 8 * (lane % 4 // 2)


def block_xor(lane: Any) -> Any:
    """c = 2 h + g0 (h = lane % 2, g0 = bit 0 of g = lane / 4): lane `lane` converts k-block j ^ c in the
    j-th store of a tile (see block_of)."""
    return 2 * (lane % 2) + lane // 4 % 2


def block_of(lane: Any, j: int) -> Any:
    """The 16-k block (0..3) lane `lane` converts in the j-th store of a tile: j ^ block_xor(lane). A
    quarter warp (8 lanes: two g, four q, each pair (q, q ^ 1) one row g and one g + 8) then writes 8
    distinct 16-byte bank groups of the 128-byte swizzled stage. With block j for every lane, the rows g
    and g + 8 of a pair (same swizzle) and the two g (swizzles differing in bit 0) met in 2 bank groups:
    4-way conflicts, which ncu measured as 12 extra wavefronts per STS.128 (H200, session 5). The partner
    lane (h flipped) converts block j ^ c ^ 2 in the same store, so the words it needs from this lane are
    those of this lane's store j ^ 2. Ints give ints, runtime lanes expressions."""
    return j ^ block_xor(lane)


def block_words(bits: int, j: int) -> tuple[int, tuple[int, ...]]:
    """(load, words) of 16-k block j (0..3) of a k-tile in a lane's packed words: int4 has one 16-byte
    load per k-tile (KB = 64) whose word j is the block; int8 two (KB = 32), block j being words
    2 (j % 2), 2 (j % 2) + 1 of load j // 2 (layout v1, tilecraft/quant/pack.py)."""
    if bits == 4:
        return 0, (j,)
    c, jj = divmod(j, 2)
    return c, (2 * jj, 2 * jj + 1)


def group_slot(group: int | None, j: int) -> int:
    """Which of a k-tile's (at most two) scale groups 16-k block j uses: groups of 32 split the 64 k."""
    return j // 2 if group == 32 else 0


def slot_group(group: int | None, kt: Any, slot: int) -> Any:
    """The scale group (index along K / group) of slot `slot` of k-tile kt (per-channel: 0)."""
    if group is None:
        return 0
    return 2 * kt + slot if group == 32 else kt // (group // 64)


def _packed(fmt: PackedFormat, qw: Any, scales: Any, zeros: Any, N: Any, K: Any) -> tuple[Any, Any, Any]:
    """The packed tensors with their layout-v1 layouts (contiguous: the host checks), static inner modes
    (no mW where qw is None: W read through shared memory, ``sm90_mixed_rs.RsConfig.w_smem``)."""
    KB = k_block(fmt.bits)
    mW = None if qw is None else Tensor(qw.engine, tc.make_layout((N // 16, K // KB, 32, 4), ((K // KB) * 128, 128, 4, 1)))
    groups = K // fmt.group_size if fmt.group_size else 1
    mS = Tensor(scales.engine, tc.make_layout((N // 16, groups, 8, 2), (groups * 16, 16, 2, 1)))
    mZ = Tensor(zeros.engine, mS.layout) if zeros is not None else None
    return mW, mS, mZ


def register_ring(depth: int, k_count: Any, load: Any, body: Any) -> None:
    """The loop over k_count k-tiles with `depth` buffers of packed words in registers: ``load(b, j)``
    fills buffer b with k-tile j (counted from the unit's first); ``body(b, i, refill)`` uses k-tile i from
    buffer b = i % depth (the loop is unrolled depth times, so b is a Python int: registers need static
    indices) and calls ``refill()`` as soon as it has read the buffer. That loads k-tile i + depth into it,
    so every load is issued a whole ``depth`` k-tiles (less the body's reading) ahead of its use. (Loading
    the buffer the previous body freed before the next body instead, depth - 1 k-tiles ahead, let ptxas
    place the unrolled loop's last load after the next k-tile's first wgmma, where it waited on HBM:
    RESULTS.md, session 34.)"""
    for b in range(depth):                                                # the ring's first k-tiles
        with dsl.if_(b < k_count):
            load(b, b)
    for it in dsl.range((k_count + depth - 1) // depth):
        for b in range(depth):                                            # k-tile depth it + b from buffer b
            i = depth * it + b

            def refill(b: int = b, i: Any = i) -> None:
                with dsl.if_(i + depth < k_count):
                    load(b, i + depth)
            if b == 0:
                body(b, i, refill)                                        # it < ceil(k_count / depth): i < k_count
            else:
                with dsl.if_(i < k_count):
                    body(b, i, refill)


@dsl.inline
def producer(cfg: Sm90MixedConfig, fmt: PackedFormat, edges: tuple[bool, bool], shape: tuple[Any, Any, Any], tmA: Any, qw: Any,
             scales: Any, zeros: Any, sA: Any, sB: Any, full_bar: Any, empty_bar: Any, K: Any) -> None:
    """The producer warpgroup's whole life: per k-tile, thread 0 loads x by TMA and every thread turns its
    packed words of W into 16-bit rows of the B stage (see the module docstring). The schedule is
    derived here, after the registers were given back: values computed before the roles split stay live
    across setmaxnreg, and ptxas spilled them to fit the producer's budget."""
    t = current()
    t.includes.add(_HEADER)
    hopper.setmaxnreg(cfg.tile.producer_regs, inc=False)
    sch = _Schedule(cfg.tile, shape, K)
    n_whole, k_whole = edges
    tile_cfg = cfg.tile
    bM, bN, bK = tile_cfg.blk_m, tile_cfg.blk_n, tile_cfg.blk_k
    D = cfg.depth
    N = sch.N
    bf16 = "true" if fmt.dtype == "bfloat16" else "false"
    KB = k_block(fmt.bits)
    KT = bK // KB                                                         # 16-byte loads per tile and k-tile
    TPW = bN // (16 * PRODUCER_WARPS)                                     # 16-row tiles per producer warp
    G = fmt.group_size
    GPT = 2 if G == 32 else 1                                             # groups per k-tile (k-tile: 64 k)
    mW, mS, mZ = _packed(fmt, qw, scales, zeros, N, K)
    groups = K // G if G else 1
    last_tile = N // 16 - 1
    lane = threadIdx.x % 32
    g = lane // 4
    h = lane % 2                                                          # 0: row g after the swap, 1: g + 8
    cx = block_xor(lane)                                                  # store j converts k-block j ^ cx
    wbuf = [dsl.make_rmem_tensor(dsl.int32, (4, KT, TPW)) for _b in range(D)]    # (WORD,LOAD,TILE) per k-tile
    dtype = ELEMENTS[fmt.dtype][0]
    sbuf = [dsl.make_rmem_tensor(dtype, (GPT, TPW)) for _b in range(D)] if G else None   # (GROUP,TILE)
    zbuf = [dsl.make_rmem_tensor(dtype, (GPT, TPW)) for _b in range(D)] if G and fmt.zero_point else None
    spc = dsl.make_rmem_tensor(dtype, (TPW,)) if not G else None         # per-channel: one per tile
    zpc = dsl.make_rmem_tensor(dtype, (TPW,)) if not G and fmt.zero_point else None
    sym_zero = f"{_half_bits(float(fmt.offset), fmt.dtype) * 0x10001:#x}u"
    R = cfg.ring
    if R:
        # the ring: per k-tile, every thread's 16-byte loads (4-byte scale / zero pairs) land in slots of
        # its own, threads adjacent (a quarter warp's accesses cover 128 contiguous bytes: no bank
        # conflicts), and only that thread reads them back: no barrier guards the ring
        cpw = cp_async(16, 32, cache="global")                            # packed words: L2 -> smem, not L1
        cps = cp_async(4, 16)
        sW = dsl.smem_tensor(dsl.int32, tc.make_layout((4, 128, KT, TPW, R)))        # (WORD,THREAD,LOAD,TILE,SLOT)
        sS = dsl.smem_tensor(dtype, tc.make_layout((2, 128, GPT, TPW, R))) if G else None  # (ROW,THREAD,GROUP,TILE,SLOT)
        sZ = dsl.smem_tensor(dtype, tc.make_layout((2, 128, GPT, TPW, R))) if zbuf is not None else None
        thr = threadIdx.x % 128

    def tile_of(n_tile: Any, i: int) -> Any:
        """The global 16-row tile of this lane's i-th tile (past N: the last one, never stored)."""
        tg = n_tile * (bN // 16) + lane_chunk(threadIdx.x, i, 0)[0]
        return tg if n_whole else imin(tg, last_tile)

    def load(b: Any, n_tile: Any, kt: Any) -> None:
        """k-tile kt's packed words (and scales, zero points) of this lane -> register buffer b, or with
        the ring, cp.async into the thread's slots of ring slot b (both rows' scale pair: 4 bytes)."""
        for i in range(TPW):
            tg = tile_of(n_tile, i)
            for c in range(KT):
                kb = kt * KT + c if k_whole else imin(kt * KT + c, K // KB - 1)
                if R:
                    dsl.copy(cpw, mW(tg, kb, lane, _), sW(_, thr, c, i, b))
                else:
                    dsl.copy(mW(tg, kb, lane, _), wbuf[b](_, c, i))        # 16 bytes: 4 words
            for gi in range(GPT if G else 0):
                grp = slot_group(G, kt, gi)
                grp = grp if k_whole else imin(grp, groups - 1)
                if R:
                    dsl.copy(cps, mS(tg, grp, g, _), sS(_, thr, gi, i, b))
                    if zbuf is not None:
                        dsl.copy(cps, mZ(tg, grp, g, _), sZ(_, thr, gi, i, b))
                else:
                    sbuf[b][gi, i] = mS(tg, grp, g, h)
                    if zbuf is not None:
                        zbuf[b][gi, i] = mZ(tg, grp, g, h)

    def stage_in(slot: Any, i: int | None) -> None:
        """The ring: this thread's packed words of ring slot `slot` -> register buffer 0 (i None: all of
        them, read before the stage is waited for), or (i) the i-th tile's row scales (read per tile, so
        that int8 with zero points fits the producer's registers)."""
        if i is None:
            dsl.copy(sW(_, thr, _, _, slot), wbuf[0])
            return
        for gi in range(GPT if G else 0):
            sbuf[0][gi, i] = sS(h, thr, gi, i, slot)
            if zbuf is not None:
                zbuf[0][gi, i] = sZ(h, thr, gi, i, slot)

    def produce(b: int, m_tile: Any, l_idx: Any, kt: Any, stage: Any, phase: Any, slot: Any = None,
                refill: Any = None) -> None:
        """Fill stage `stage` with x's k-tile kt (TMA) and W^T's (from buffer b; with the ring, read from
        ring slot `slot`), then hand it over; then ``refill()`` (register buffers) reloads buffer b."""
        if slot is not None:
            stage_in(slot, None)
        empty_bar.wait(stage, 1 - phase)                                  # the consumers freed the stage
        with dsl.if_(dsl.eq(threadIdx.x, 0)):
            full_bar.arrive_expect_tx(stage, tmA.box_bytes)
            hopper.tma_load(tmA, sA(_, _, stage), full_bar.addr(stage), (m_tile * bM, kt * bK, l_idx))
        for i in range(TPW):
            if slot is not None:
                stage_in(slot, i)
            # reorder the tile's words in place: store j then converts block j ^ cx, whose words sit where
            # block j's were, and sends the partner those of position j ^ 2 (its block j ^ cx ^ 2)
            t.emit(f"tc::mixed90::blocks_xor{4 * KT}(&{render(wbuf[b](0, 0, i))}, {render(cx)});")

            def pair_of(buf: Any, one: Any, j: int) -> str:
                """The row's scale / zero-point pair for store j: group 32 has two per k-tile, block
                j ^ cx taking the one of (j ^ cx) / 2 = j / 2 ^ h."""
                if not G:
                    return f"tc::mixed90::pair({render(one(i))})"
                if GPT == 1:
                    return f"tc::mixed90::pair({render(buf[b](0, i))})"
                a, o = render(buf[b](j // 2, i)), render(buf[b](1 - j // 2, i))
                return f"tc::mixed90::pair({render(h)} ? {o} : {a})"

            for j in range(bK // 16):                                     # the tile's stores
                _tile, _lane, _h, row, k = lane_chunk(threadIdx.x, i, block_of(lane, j))
                s2 = pair_of(sbuf, spc, j)
                z2 = sym_zero if not fmt.zero_point else pair_of(zbuf, zpc, j)
                if not k_whole and fmt.bits == 8:                         # int8, K % 64 == 32: zeros past K
                    s2 = f"({render(2 * kt + (h ^ j // 2) < K // KB)} ? {s2} : 0u)"
                dst = render(make("call", ("tc::smem_u32", make("raw", (sB.engine.address(sB.offset + sB.layout((row, k, stage))),), "void*")), "unsigned"))
                c, words = block_words(fmt.bits, j)                       # position j of the reordered words
                pc, pwords = block_words(fmt.bits, j ^ 2)                 # the partner's block
                w = [f"(tc::u32){render(wbuf[b](wi, c, i))}" for wi in words]
                pw = [f"(tc::u32){render(wbuf[b](wi, pc, i))}" for wi in pwords]
                chunk = "u4_row_chunk" if fmt.bits == 4 else "u8_row_chunk"
                t.emit(f"tc::mixed90::{chunk}<{bf16}>({', '.join(w + pw)}, {z2}, {s2}, {dst});")
        t.emit(f"tc::mixed90::warp_arrive_full({render(full_bar.addr(stage), 'unsigned')});")
        if refill is not None:
            refill()                                                      # buffer b read: its next k-tile
        _advance(stage, phase, tile_cfg.stages)

    with dsl.if_(dsl.eq(threadIdx.x, 0)):
        hopper.tma_prefetch(tmA)
    stage = dsl.declare(0, "stage", const=False)
    phase = dsl.declare(0, "phase", const=False)
    for unit in sch.units():
        m_tile, n_tile, l_idx, k_begin, k_count = sch.coords(unit)
        if not G:                                                         # per-channel: once per tile
            for i in range(TPW):
                tg = tile_of(n_tile, i)
                spc[i] = mS(tg, 0, g, h)
                if zpc is not None:
                    zpc[i] = mZ(tg, 0, g, h)
        if R:
            # k-tiles i+1 .. i+R-1 travel to their slots while k-tile i is converted: one cp.async group
            # per k-tile, committed even when empty so that "R - 2 younger groups" always means "k-tile
            # i's has landed". The slot refilled at step i held k-tile i-1, which this thread read (and
            # converted from registers) at step i-1.
            for b in range(R - 1):
                with dsl.if_(b < k_count):
                    load(b, n_tile, k_begin + b)
                dsl.cp_async_commit()
            for i in dsl.range(k_count):
                dsl.cp_async_wait(R - 2)
                with dsl.if_(i + R - 1 < k_count):
                    load((i + R - 1) % R, n_tile, k_begin + i + R - 1)
                dsl.cp_async_commit()
                produce(0, m_tile, l_idx, k_begin + i, stage, phase, i % R)
        else:
            register_ring(D, k_count, lambda b, j: load(b, n_tile, k_begin + j),
                          lambda b, i, refill: produce(b, m_tile, l_idx, k_begin + i, stage, phase, refill=refill))


@dsl.kernel
def sm90_mixed_kernel(tmA, qw, scales, zeros, bias, D, K, W, cfg: Constexpr, fmt: Constexpr, full: Constexpr,
                      edges: Constexpr):
    """D (1,M,N) = x @ dequantize(W) (+ bias) with x given as a TMA map of its (M,K,1) view and W packed
    (qw, scales, zeros; see tilecraft.quant.pack); see the module docstring. With split-K, W is the
    fp32 workspace (S,1,M,N) of the splits' partial tiles and sm90's reduction kernel finishes.
    edges: (N is a multiple of blk_n, K of the 64-value k-tile); full: M and N are whole tiles."""
    from tilecraft.gemm.tensorop import EpilogueSpec

    tile_cfg = cfg.tile
    dsl.launch_bounds(tile_cfg.threads, 1)
    dtype, _wg = ELEMENTS[fmt.dtype]
    dsl.assume(tile_cfg.blk_k == 64, "the B stage is 64 16-bit values of k (one 128-byte swizzle row)")
    L, M, N = D.shape
    sA, sB, full_bar, empty_bar = pipeline(tile_cfg, dtype, ("K", "K"), producer_arrivals=1 + PRODUCER_WARPS)
    ep = EpilogueSpec(bias="n" if bias is not None else "none")

    wg = hopper.warpgroup_index()
    with dsl.if_(dsl.eq(wg, 0)):
        producer(cfg, fmt, edges, (L, M, N), tmA, qw, scales, zeros, sA, sB, full_bar, empty_bar, K)
    with dsl.else_():
        sch = _Schedule(tile_cfg, (L, M, N), K)                           # each role derives its own (see producer)
        consumer(tile_cfg, fmt.dtype, ("K", "K"), ep, full, sch, sA, sB, full_bar, empty_bar, None, D, W, bias, 1.0,
                 0.0)


# ----------------------------------------------------------------------------- host side

def pick_sm90_mixed_config(fmt: PackedFormat, M: int, N: int, K: int, sms: int) -> Sm90MixedConfig:
    """The dense Hopper tile-count rule's tile shape and split-K for the problem (tilecraft.gemm.op.
    _pick_sm90_by_tiles: 128x256 when the tiles fill the SMs, else 128x128, split along K when even those
    leave SMs idle) with this kernel's stages (no multicast clusters, no epilogue buffers), register split
    and register ring depth, or where RING names one, a cp.async ring (when it leaves at least 3 stages)."""
    from tilecraft.gemm.op import _pick_sm90_by_tiles

    base = _pick_sm90_by_tiles(M, N, K, 1, sms)
    tile = _direct_epilogue(Sm90Config(base.blk_m, base.blk_n, 64, stages=STAGES[base.blk_n], consumers=base.consumers,
                                       raster=base.raster, producer_regs=PRODUCER_REGS, consumer_regs=CONSUMER_REGS,
                                       splits=base.splits))
    cfg = Sm90MixedConfig(tile, DEPTH[(fmt.bits, tile.blk_n)])
    ring = RING.get((fmt.bits, tile.blk_n), 0)
    if ring:
        try:
            ringed = with_ring(cfg, fmt, ring)
        except ValueError:                                                # int8 g32 with zero points: too big
            return cfg
        if ringed.tile.stages >= 3:
            return ringed
    return cfg


def pick_config(fmt: PackedFormat, M: int, N: int, K: int, sms: int) -> Any:
    """What tc.gemm runs on sm_90 for M >= SM90_MIN_M: the register-A kernel (sm90_mixed_rs.py), which
    measured faster than this module's kernel at every M from 64 to 4096 (N = K = 8192) once it split K
    where its tiles are few. This module's kernel runs when a caller passes its tiling
    (``pick_sm90_mixed_config`` picks one)."""
    from tilecraft.gemm.sm90_mixed_rs import pick_rs_config
    return pick_rs_config(M, N, K, sms, fmt)


def with_ring(cfg: Sm90MixedConfig, fmt: PackedFormat, ring: int) -> Sm90MixedConfig:
    """cfg with the producer's packed words in a shared-memory ring of `ring` k-tiles (depth 1), taking
    stages off the pipeline until both fit an SM (at least 2 stages)."""
    out = replace(cfg, depth=1, ring=ring)
    while out.tile.stages > 2 and out.tile.smem_bytes(2) + out.ring_bytes(fmt) > CTA_SMEM:
        out = replace(out, tile=replace(out.tile, stages=out.tile.stages - 1))
    out.validate(fmt)
    return out


def use_sm90_mixed(x: Any, w: PackedWeight) -> bool:
    """Whether tc.quant.gemm runs this kernel: a CUDA tensor on an sm_90 GPU, at least SM90_MIN_M rows."""
    import torch
    if not (isinstance(x, torch.Tensor) and x.is_cuda and x.dim() >= 1 and x.shape[-1] == w.shape[0]):
        return False
    from tilecraft.gemm.op import _device_facts
    if _device_facts(x.device)[1] != (9, 0):
        return False
    return x.numel() // max(w.shape[0], 1) >= SM90_MIN_M


def sm90_mixed_gemm(x: Any, w: PackedWeight, bias: Any = None, config: Any = None) -> Any:
    """y (..., N) = x (..., K) @ dequantize(w) (+ bias) with the Hopper kernel (any M; tc.quant.gemm sends
    M >= SM90_MIN_M here on sm_90): this module's (config a Sm90MixedConfig) or the register-A one of
    sm90_mixed_rs.py (config a RsConfig). The checks are the small-M entry point's; a call's checks,
    tiling and bound launch are resolved once per signature (``mixed.cached_run``)."""
    return sm90_mixed_run(x, w, bias, config)(x, w, bias)


def sm90_mixed_run(x: Any, w: PackedWeight, bias: Any = None, config: Any = None) -> Any:
    """``run(x, w, bias) -> y`` of sm90_mixed_gemm for calls of this signature (``mixed.cached_run``)."""
    from tilecraft.gemm.mixed import cached_run
    return cached_run(("sm90", config), x, w, bias, lambda x, w, bias: _prepare(x, w, bias, config))


def _prepare(x: Any, w: PackedWeight, bias: Any, config: Any) -> Any:
    """Check a call and return ``run(x, w, bias) -> y`` for calls of its signature."""
    import torch
    from tilecraft.gemm.mixed import check_operands

    fmt, K, N, want = check_operands(x, w, bias)
    from tilecraft.gemm.op import _device_facts
    cc = _device_facts(x.device)[1]
    if cc != (9, 0):
        raise ValueError(f"the Hopper mixed-input kernels (config {type(config).__name__}) need an sm_90 GPU, this "
                         f"one is sm_{cc[0]}{cc[1]}; leave config out (or pass a MixedConfig) for the portable kernel")
    x2 = x.reshape(-1, K)
    clone = x2.stride(1) != 1 or x2.stride(0) != K or x2.data_ptr() % 16 != 0  # TMA: 16-byte aligned base and rows
    x2 = x2.clone(memory_format=torch.contiguous_format) if clone else x2
    M, dev, out_shape = x2.shape[0], x.device, (*x.shape[:-1], N)
    y = torch.empty(M, N, dtype=want, device=dev)
    launch = rest = None
    M1 = M
    if M:
        from tilecraft.gemm.sm90_mixed_rs import RsConfig, RsLaunch, split_plan
        sms = _sm_count(x)
        M1, first = split_plan(M, N, K, sms, fmt) if config is None else (0, None)   # rows of the first launch
        M1 = M1 or M
        cfg = config or first or pick_config(fmt, M, N, K, sms)
        cfg.validate(fmt)
        launch = (RsLaunch if isinstance(cfg, RsConfig) else Launch)(x2[:M1], w, bias, y[:M1], cfg, sms)
        if M1 < M:                                     # the other rows: a launch of their own (split_plan)
            rest = _rest_run(x2[M1:], w, bias)

    flat, flat_y = x.dim() == 2, len(out_shape) == 2

    def run(x: Any, w: PackedWeight, bias: Any, out: Any = None) -> Any:
        x2 = x if flat else x.reshape(-1, K)                              # (each view op costs host time)
        x2 = x2.clone(memory_format=torch.contiguous_format) if clone else x2
        y = torch.empty(M, N, dtype=want, device=dev) if out is None else out
        if rest is not None:
            launch(x2[:M1], w, bias, y[:M1])
            rest(x2[M1:], w, bias, y[M1:])
        elif launch is not None:
            launch(x2, w, bias, y)
        return y if flat_y or out is not None else y.reshape(out_shape)
    run.launch = launch                                                   # (for probes: its kernel launch)
    run.rest = rest                                                       # (the other rows' run, or None)
    run.path = launch.path if launch is not None else "sm90_mixed"
    run.config = launch.cfg if launch is not None else config
    return run


def _rest_run(x2: Any, w: PackedWeight, bias: Any) -> Any:
    """``run(x2, w, bias, out)`` writing x2 (r, K) @ dequantize(w) (+ bias) into out (r, N): the second launch
    of a split M (sm90_mixed_rs.split_rows), the kernel tc.gemm runs for r rows (``use_sm90_mixed``)."""
    from tilecraft.gemm.mixed import MixedGemm
    if use_sm90_mixed(x2, w):
        return _prepare(x2, w, bias, None)
    return MixedGemm(w.format)._prepare(x2, w, bias)


def _sm_count(x: Any) -> int:
    from tilecraft.runtime import device_info
    return device_info(x.device.index if x.device.index is not None else 0).sm_count


def launch_args(x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: Sm90MixedConfig) -> tuple[tuple, int]:
    """The kernel's arguments for x2 (M,K) -> y (M,N) (with split-K the workspace in place of the bias,
    which the reduction adds) and the work units of the persistent grid. Pure host work: no launch."""
    import torch
    from tilecraft.gemm.sm90 import effective_splits

    M, K = x2.shape
    N = y.shape[1]
    tile = replace(cfg.tile, splits=effective_splits(K, cfg.tile))
    kcfg = replace(cfg, tile=tile)
    tmA = x_map(x2, w.format.dtype, tile.blk_m, tile.blk_k, tile.stages)
    D3 = y.unsqueeze(0)
    full = M % tile.blk_m == 0 and N % tile.blk_n == 0
    edges = (N % tile.blk_n == 0, K % tile.blk_k == 0)
    units = math.ceil(M / tile.blk_m) * math.ceil(N / tile.blk_n) * tile.splits
    W = None
    if tile.splits > 1:
        W = torch.empty(tile.splits, 1, M, N, dtype=torch.float32, device=y.device)
        bias = None
    return (tmA, w.qweight, w.scales, w.zeros, bias, D3, K, W, kcfg, w.format, full, edges), units


def x_map(x2: Any, dtype: str, rows: int, blk_k: int, stages: int, multicast: int = 1) -> Any:
    """The TMA map of x2 (M,K), K-major, filling one x stage of (rows, blk_k) (both Hopper mixed kernels),
    each load a 1/multicast slice of the rows with a cluster."""
    from tilecraft.gemm.sm90 import _map
    return _map(x2.unsqueeze(0).permute(1, 2, 0), dtype, "K", rows, blk_k, stages, multicast)


def split_reduce(W: Any, y: Any, bias: Any, pdl: bool = False) -> Any:
    """The split-K reduction of the mixed-input kernels: y (M,N) = the sum of the fp32 partial tiles
    W (S,1,M,N) (+ bias along N); call it as ``reduce(W, None, y.unsqueeze(0), bias)``. ``pdl``: launched as
    a programmatic dependent launch of the kernel, which executes ``griddep_launch_dependents``."""
    from tilecraft.gemm.tensorop import EpilogueSpec, SplitReduce
    return SplitReduce(W, None, y.unsqueeze(0), bias, 1.0, 0.0, EpilogueSpec(bias="n" if bias is not None else "none"),
                       pdl=pdl)


class Launch:
    """The persistent launch (one CTA per SM up to the work units, in whole clusters where the tiling has
    them; with split-K, then the reduction) for x2 (M,K) -> y (M,N) of one signature, resolved once: later
    calls of the signature make x's TMA map (cached per address), the split-K workspace, and launch.
    sm90_mixed_rs.RsLaunch is the same launch of the register-A kernel (its kernel takes the same arguments,
    and flags where its splits sum in the kernel: ``fused``, no reduction launch)."""

    path = "sm90_mixed"
    pdl_reduce = False                                                    # (sm90_mixed_rs.RsLaunch: True)

    def __init__(self, x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: Any, sms: int):
        self._given = (cfg, sms)                                          # for the fallback (__call__)
        args, units = self.launch_args(x2, w, bias, y, cfg, sms)
        self.cfg = args[8]                                                # with the splits K allows
        self.K, self.static = args[6], args[8:12]                         # K; cfg, format, full, edges
        # the register-A kernel's flags: its splits sum their partial tiles themselves (zeros, one per tile), or
        # its stream-K CTAs hand over partial tiles (one per CTA and consumer); every launch leaves them at 0, so
        # each stream keeps one set: sm90.stream_flags
        flags = args[12] if len(args) > 12 else None
        self.fused = flags is not None
        self._flags: dict[int, Any] = {}
        self._flag_count = 0 if flags is None else flags.numel()
        self._split_shape = None if args[7] is None else tuple(args[7].shape)
        self.maps: dict[int, Any] = {x2.data_ptr(): args[0]}
        self.wmaps: dict[int, Any] = {}                                   # W's TMA maps (RsConfig.w_smem)
        from tilecraft.gemm.sm90 import resident_clusters
        CL = getattr(self.cfg, "cluster", 1)                              # the register-A kernel's x multicast
        resident = resident_clusters(self.kernel(), args, self.threads, CL, sms, (self.cfg, w.format, sms)) * CL
        # stream-K (the register-A kernel's): every resident CTA takes a share of the partial round's k-tiles
        grid = resident if getattr(self.cfg, "stream_k", 0) else min(units, resident)
        # the fused splits (and stream-K's CTAs) wait on each other at flags: launched cooperatively (all CTAs at once)
        self.main = self.kernel().bind(*args, grid=(grid,), block=(self.threads,),
                                       cluster=(CL, 1, 1) if CL > 1 else None, cooperative=self.fused)
        self.reduce = split_reduce(args[7], y, bias, self.pdl_reduce) if args[7] is not None and not self.fused \
            else None

    @staticmethod
    def launch_args(x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: Any, sms: int) -> tuple[tuple, int]:
        return launch_args(x2, w, bias, y, cfg)

    @staticmethod
    def kernel() -> Any:
        return sm90_mixed_kernel

    @property
    def threads(self) -> int:
        return self.cfg.tile.threads

    def w_arg(self, w: PackedWeight) -> Any:
        """The kernel's argument for W's packed words (sm90_mixed_rs.RsLaunch: a TMA map where W goes
        through shared memory)."""
        return w.qweight

    def y_args(self, y: Any) -> tuple:
        """The kernel's arguments after its flags for y (sm90_mixed_rs.RsLaunch: the timeline and y's TMA map with
        ``store_mn``), or () (this kernel has no flags argument: nothing after the static arguments)."""
        return ()

    def x_map(self, x2: Any, dtype: str) -> Any:
        tile = self.cfg.tile
        return x_map(x2, dtype, tile.blk_m, tile.blk_k, tile.stages)

    def __call__(self, x2: Any, w: PackedWeight, bias: Any, y: Any) -> None:
        from tilecraft.gemm.sm90 import by_address, stream_flags

        tmA = by_address(self.maps, x2, lambda x: self.x_map(x, w.format.dtype))
        D3 = y                 # for the kernel's (1, M, N) view of y: the bound launches read only its address
        tail = self.y_args(y)
        if self.fused:                                                    # the kernel sums the splits, adds the bias
            import torch
            from tilecraft.gemm.sm90 import COOPERATIVE_TOO_LARGE
            from tilecraft.runtime.errors import LaunchError
            W = torch.empty(self._split_shape, dtype=torch.float32, device=y.device)
            try:
                self.main(tmA, self.w_arg(w), w.scales, w.zeros, bias, D3, self.K, W, *self.static,
                          stream_flags(self._flags, self._flag_count, y.device), *tail)
            except LaunchError as e:
                # fewer SMs free to this process than the device reports (MPS with an SM limit): the splits
                # go to the reduction kernel from now on, as where they outnumber the SMs (stream-K: whole tiles)
                if e.code != COOPERATIVE_TOO_LARGE:
                    raise
                self.sum_in_kernel = False
                self.__init__(x2, w, bias, y, *self._given)  # type: ignore[misc]
                self(x2, w, bias, y)
            return
        W = None if self.reduce is None else self.reduce.workspace(D3)
        self.main(tmA, self.w_arg(w), w.scales, w.zeros, bias if W is None else None, D3, self.K, W, *self.static,
                  *((None, *tail) if tail else ()))                       # (no flags)
        if W is not None:                                                 # the reduction adds the bias
            self.reduce(W, None, D3, bias)
