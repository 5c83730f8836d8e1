"""The mixed-input GEMM for large M on Hopper with the weight as wgmma's register A operand.

    y (M,N) = x (M,K) @ dequantize(W) (+ bias)      x, y fp16 / bf16; W int4 / int8 (tc.quant.pack, layout v1)

tilecraft/gemm/sm90_mixed.py dequantizes W in one producer warpgroup into a 16-bit shared-memory stage
that both consumer warpgroups read: that warpgroup's conversion and stores bound it (0.53-0.65x the
dense kernel, RESULTS.md). Here the kernel computes the transposed product, y^T (N, M) = W (N, K) x^T,
so that W is wgmma's A operand, which may come from registers, and every consumer thread converts its
own share of W (the layout TensorRT-LLM's Hopper mixed GEMM uses):

* **Producer.** One thread of warpgroup 0 loads the x k-tiles (BLK_M rows of x, 64 k, 128-byte swizzle)
  by TMA into ``stages`` buffers: x is wgmma's B operand, K-major, exactly the dense kernel's B stage.
  With ``cluster`` = 2 (the heuristic's 256-row tiles) two CTAs on neighbouring W row blocks share the
  x k-tile: each loads half of its rows and multicasts them to both, as the dense kernel shares B, which
  halves x's L2 traffic (x was re-read once per 128 rows of W). With split-K both CTAs of a pair work on
  the same k-slice.
* **Consumers.** One to four consumer warpgroups (``blk_n`` / 64; the heuristic's ``WIDE`` tiling for int4 at
  M <= 64 has four, for more warps to hide each k-tile's load, conversion and wgmma). Warpgroup c owns 64 rows of W
  (output columns n), warp w of it the 16-row tile 4 c + w of the CTA's BLK_N. Per k-tile a lane loads its
  16 bytes of that tile's packed words (int4; two loads for int8) straight from global memory: the same 512
  contiguous bytes per warp as the small-M kernel, into a ring of ``depth`` k-tiles in registers. A buffer
  is refilled as soon as its words are converted, so each load has ``depth`` whole k-tiles to arrive
  (``register_ring``). The earlier ring loaded a buffer before the next k-tile's body, depth - 1 k-tiles
  ahead, and ptxas put the unrolled loop's last load after the next k-tile's wgmmas. There the consumers
  waited on W's loads: a quarter of the warps' stall samples at M = 128. Refilling at once made the kernel
  4-12% faster from M = 64 to 4096 (RESULTS.md, session 34).
  **W through shared memory** (``w_smem``, the heuristic's tilings up to 384 rows of x, and its 192-row tiles
  at any M): the producer also loads the CTA's k-tile of packed words by TMA (one 2-D box: BLK_N / 16
  tiles of 512 or 1024 bytes, TMA zero-filling rows past N and words past K), completing on the x stage's
  barrier, and each lane reads its 16 bytes of the stage (``LDS.128``, a warp's 512 contiguous bytes). W's
  bytes in flight are then the stages' (up to 128 KB a CTA), not the registers', and the ring holds the scales
  alone. Session 45 (H100, N = K =
  8192, three rounds in turn): 4-10% faster at M = 40..128 for W8A16 and W4A16 per-channel, 3-7% for W4A16
  g128 at M <= 64, equal for W4A16 g32 with zero points (RESULTS.md).
  Layout v1's k order (lane q holds k 4q .. 4q + 3) is not wgmma's (k 2q, 2q + 1, 2q + 8, 2q + 9, and x in
  shared memory keeps its natural order), so two shuffles per word give each lane the bytes it needs
  (tilecraft/sm90_mixed.cuh, ``u4_frag`` / ``u8_frag``); mixed.cuh's magic-number converters make exact q - z.
  Group scales: one ``mul.rn`` by the row's scale rounds once, the same values as the producer path and as
  ``dequantize(W)`` cast to 16 bits. Per-channel scales: the fragments keep q - z and the fp32 accumulators
  are multiplied by the row's scale once per tile, as the small-M kernel does (the product rounds only in the
  output; int8 bf16 saves 24 of its ~135 conversion instructions per k-tile).
  Symmetric int8 into bf16 (``u8_frag``'s SYM, fifty-fourth session): the sources shuffle their bytes already
  spread to a pair's 16-bit halves, and two LOP3s and one bf16 fma make each pair (``mixed::s8x2_bf16``) where
  the fp32 route took three PRMTs and two FADDs; 246 instructions per warp and two k-tiles at 192 x 176 instead
  of 293, none of them FADD. H200, W8A16 per-channel, x tilecraft's dense bf16 in the same process: 4096 x 4096,
  M = 1050 0.97-0.99x against 0.89-0.90x; N = K = 8192, M = 540 110.8 against 118.5 us; 4096 x 14336, M = 1100
  191.5 against 205.8 us; even (within the runs' 2-10% spread) at the 224-row stream-K tiles.
* **Overlap.** A warpgroup converts k-tile i + 1 only after its wgmmas of k-tile i are done
  (``wgmma_wait(0)``, which also frees the x stage); the tensor cores stay busy through the other
  consumer warpgroup, whose wgmmas run while this one converts. Two variants were measured slower.
  - Converting k-tile i + 1 into a second fragment buffer while k-tile i's wgmmas run (``wgmma_wait(1)``).
    It compiles unserialized, since ``fence_operands`` pins the fragments. Sessions 9 and 34 measured it
    4-23% slower at M <= 256 (session 34: within 3% either way at M >= 1024). Both versions also wrote
    the buffer that k-tile i - 1's wgmmas could still be reading:
    ``benchmarks/patches/rs_overlap_wrong_buffer.diff``. With W through shared memory (session 45: the next
    stage waited for and read while k-tile i's wgmmas run; correct) it ran 0-6% slower at M = 40..128 and
    up to 21% at 256: ``benchmarks/patches/rs_ws_overlap.diff``. One wgmma wait for two k-tiles (two
    fragment buffers) ran within 1-2%: ``benchmarks/patches/rs_ws_pairs.diff``; two accumulators taking
    alternate k-blocks, 0-4% slower: ``benchmarks/patches/rs_ws_chains.diff``.
  - Making the two warpgroups take turns issuing gained nothing.
  **Interleaved k-blocks** (``interleave``, the heuristic's 256-row tiles at M = 193..256): within
  the k-tile, each 16-k block's fragment is converted and its wgmma issued at once (a ``wgmma_fence`` before
  each; one commit and one wait per k-tile), so block j + 1 converts while block j's wgmma runs. With 192 or
  256 x rows and W through shared memory it ran 0-3% faster than issuing the four together (session 46, H100:
  54.3 / 59.2 us against 56.1 / 59.6 at M = 256, W4A16 g128 / W8A16 per-channel); elsewhere it ran equal or
  slower (192 x rows with W in shared memory at M = 192 / 384 / 640: W4A16 within 1%, W8A16 0-4% slower; M = 64
  and 128: 1-11% slower; 128x128 unsplit at M = 256: 8% slower; 2x1 clusters at M = 512: 2-5% slower).
  At M = 64 (``WIDE``, W through shared memory) Nsight Compute finds the tensor pipe 35% busy and the SM
  issuing 45% of cycles: 139 instructions per warp and k-tile (80 of them the conversion), the warps'
  stalls mostly on the wgmma wait and the stage's barrier. Leaving out the conversion entirely (wrong
  results, ``benchmarks/patches/rs_skip_convert.diff``) saved only 2.5 of 29 us.
* **Epilogue.** The accumulators are a (64, BLK_M) block of y^T: the consumer stores them into y's
  transposed view through the sm80 path's epilogue (bias along y^T's rows, cast, predicated at M and N).
* **Split-K.** Where the tiles leave SMs idle (M <= 256 or so), ``splits`` CTAs share a tile's k-tiles;
  each stores its fp32 partial block into a workspace. Where every split of every tile runs at once (one
  CTA per SM, no cluster) and blk_m <= 128, the tile's splits x consumers warpgroups then meet at a
  counting flag and each sums a share of the tile's rows in split order, adds the bias and stores y
  (sm90's ``_reduce_tile``, as the dense kernel does); otherwise sm90's reduction kernel sums them
  (+ bias), as a dependent launch.
* **Stream-K** (``stream_k``; tc.gemm's pick from M = 513 where the 2x1-cluster 256-row tiles leave a partial round
  of the SMs, ``_stream_k_or``). The dense kernel's schedule (sm90.stream_k_share): whole units first, then every
  cluster takes an even share of the last partial round's k-tiles (mode 2: and of one whole round more), the top of
  one unit's K and the bottom of another's. A CTA whose slice of a unit is not the last stores its fp32 accumulators
  (scaled by per-channel scales already) as its partial tile and raises its flag; the CTA of the last slice adds the
  earlier slices' partials in CTA order and runs the epilogue (sm90's ``_publish`` / ``_collect``). The launch is
  cooperative, one CTA per SM. Forty-ninth session (H100, W4A16 g128 / W8A16 per-channel): 4096 x 14336, M = 1536
  249.2 / 272.3 us against 274.8 / 318.7; 10240 x 8192, M = 1024 247.2 / 265.3 against 278.8 / 296.6 (split in two
  launches); the shared k-tiles cost 0.25-0.5 of a round at K = 4096 (RESULTS.md).
* **Three consumers by more than 192 rows of x** (``three_consumers``; tc.gemm's pick where 192 x 208 or 192 x 224
  tiles fill whole rounds of the SMs, ``_three_or``). ptxas holds every instruction to the registers the launch
  gives each thread (128 for 512 threads), whatever setmaxnreg gives the warpgroup later, and a 64x224 wgmma asks
  for 142: such tiles split each 16-k block's wgmma in two along x's rows (``mma_parts``; 64x112 each, into the two
  halves of one accumulator fragment), with 24 + 3 x 160 registers. Per multiply-add they run at the 2x1-cluster
  256-row tiles' rate (fifty-first session, H100: 1.157 / 1.146 the time for 1.148 the rounds' work at N = K = 8192,
  M = 4096), so their tile shape serves where 128 x 256 tiles leave a partial round: 4096 x 4096, M = 1280 (22 x 6
  = 132 tiles) 62.2 / 65.9 us against 73.8 / 77.7 (W4A16 g128 / W8A16 per-channel; RESULTS.md). Where they make
  more than one round but leave the last partial, they run in stream-K (``_three_stream_k_or``; fifty-third
  session, H200: 6144 x 4096, M = 1100, 32 x 5 tiles of 192 x 224 in mode 2 82.9 / 86.5 us against the pairs' 93.8 /
  95.3 in two rounds; 2-17% faster than the picks before at 12 of 13 shapes, even at the 13th). Three consumers by
  at most 192 rows (one wgmma a 16-k block) are taken too where they fill whole rounds (``_three_or``'s narrow
  tiles; fifty-third session, H200: 4096 x 4096, M = 1100, 22 x 6 tiles of 192 x 184 52.1 / 62.6 us against 64.3 /
  68.2 in two launches).
* **Ragged M** (tc.gemm without a config; ``split_rows``). Where the 2x1-cluster 256-row tiles of 256 q rows fill
  their rounds of the SMs but the rows past them would add a partial round, those r = M - 256 q rows (1..384)
  run as a second launch of the kernel picked for them (the small-M kernel up to 32 rows): at N = K = 8192, M =
  640 takes one round of 512 rows and the time of M = 128, not two rounds of 192-row tiles. Session 47 (H100,
  tc.gemm against one launch, W4A16 g128 / W8A16 per-channel, us): M = 576 124.2 / 145.2 against 155.9 / 168.4,
  1088 212.1 / 245.5 against 252.5 / 265.9; 4096 x 14336, M = 1280 206.1 / 219.6 against 270.7 / 292.9. The first
  launch may instead be t x tiles of three consumers by 224 or 208 rows that fill their rounds (``split_plan``,
  fifty-second session, H200: N = K = 8192, M = 880 in 624 + 256 rows 156.1 / 166.7 against 180.5 / 194.9).
* **Edges.** TMA zero-fills x past M and K. N % 16 == 0 (the packed format): a ragged last n-tile's
  warps past N re-read the last 16-row tile, whose products land in rows the epilogue never stores. int8
  with K % 64 == 32: the last k-tile's second half re-reads the last 32 k, multiplied by x's zero fill.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import make_tiled_mma, wgmma_atom
from tilecraft.dsl import Constexpr, hopper, threadIdx
from tilecraft.dsl.expr import render
from tilecraft.dsl.trace import current
from tilecraft.gemm.limits import CTA_SMEM
from tilecraft.gemm.sm90 import (
    ELEMENTS, Sm90Config, _advance, _release, _Schedule, launch_regs, row_tiles, smem_layout, stage_barriers,
    tma_producer,
)
from tilecraft.gemm.sm90_mixed import (
    _HEADER, Launch, _half_bits, _packed, block_words, group_slot, register_ring, slot_group,
)
from tilecraft.layout.inttuple import imin
from tilecraft.quant.pack import PackedFormat, PackedWeight, k_block
from tilecraft.tensor import Tensor

__all__ = ["RsConfig", "RsLaunch", "sm90_mixed_rs_kernel", "rs_launch_args", "pick_rs_config", "x_map", "split_rows",
           "split_plan", "PAIRS"]

#: x rows per CTA -> stages of x (32 KB per 256-row k-tile)
STAGES = {256: 6, 128: 8, 64: 8}
#: x rows per CTA -> stages of x and W's words (``w_smem``) of the heuristic's 192- and 256-row tiles (M > 128)
SHORT_STAGES = {192: 6, 256: 5}


@dataclass(frozen=True)
class RsConfig:
    """A tiling of the register-A kernel: ``blk_n`` rows of W (64 per consumer warpgroup, one to four of
    them), ``blk_m`` rows of x (wgmma's N), ``stages`` x buffers, ``depth`` k-tiles of packed words per
    thread in flight, ``raster`` n-tiles per group of the persistent walk, the registers of the roles
    (two consumers: 40 + 2 x 232 = 3 x 168; four: 24 + 4 x 112 <= 5 x 96), ``splits`` slices of K (fp32
    partial tiles, summed in the kernel or by sm90's reduction kernel), and
    ``cluster`` CTAs on neighbouring row blocks of W sharing each x k-tile: each loads 1/cluster of the
    x box and multicasts it to both (the dense kernel's B multicast, sm90.py's ``cluster_m``); ``w_smem``: W's
    packed words come by TMA into each stage beside x (the module docstring), and ``depth`` buffers only the
    scales; ``interleave``: each 16-k block's wgmma issued as soon as its fragment is converted (the module
    docstring, Overlap); ``store_mn``: each consumer's (64, BLK_M) block of y^T goes into an M-major buffer in
    shared memory (y's N contiguous) and out by one TMA store (sm90.Sm90Config.store_mn), where y's rows are
    16-byte aligned; otherwise the block leaves the registers one value at a time; ``stream_k`` (1, or 2 with one
    whole round more): the units of the last partial round of the SMs are shared evenly along K by every CTA
    (sm90.Sm90Config.stream_k; the module docstring). Three or four consumers by more than 192 rows of x split each
    16-k block's wgmma in two along x's rows (``mma_parts``)."""

    blk_n: int = 128
    blk_m: int = 256
    stages: int = 6
    depth: int = 2
    raster: int = 8
    producer_regs: int = 40
    consumer_regs: int = 232
    splits: int = 1
    cluster: int = 1
    w_smem: bool = False
    interleave: bool = False
    store_mn: bool = False
    stream_k: int = 0

    @property
    def consumers(self) -> int:
        return self.blk_n // 64

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def mma_parts(self) -> int:
        """wgmmas per 16-k block, each on a slice of the x rows: 2 where three or four consumers (512 or 640
        threads, 128 or 96 registers at launch) take more than 192 rows of x. ptxas holds one instruction's
        registers to the launch's count, whatever setmaxnreg gives the warpgroup (a 64x224 wgmma asks for 142),
        so the wgmma is split along its N."""
        return 2 if self.consumers > 2 and self.blk_m > 192 else 1

    @property
    def name(self) -> str:
        return f"rs_{self.blk_n}x{self.blk_m}x64_s{self.stages}_d{self.depth}" + (
            f"_r{self.raster}" if self.raster != 8 else "") + (f"_sk{self.splits}" if self.splits > 1 else "") + (
            f"_cl{self.cluster}" if self.cluster > 1 else "") + ("_ws" if self.w_smem else "") + (
            "_il" if self.interleave else "") + ("_mn" if self.store_mn else "") + (
            f"_streamk{self.stream_k}" if self.stream_k else "")

    @property
    def schedule(self) -> Sm90Config:
        """The tiling as sm90's schedule sees it: tiles of y^T, (BLK_N rows of W) x (BLK_M rows of x)."""
        return Sm90Config(self.blk_n, self.blk_m, 64, self.stages, self.consumers, self.raster, self.producer_regs,
                          self.consumer_regs, cluster_m=self.cluster, tma_store=self.store_mn, splits=self.splits,
                          store_mn=self.store_mn, stream_k=self.stream_k)

    @property
    def y_tiles(self) -> Sm90Config:
        """The tiles of y itself, (BLK_M rows of x) x (BLK_N columns), as sm90's in-kernel split-K sum
        (``_reduce_tile``) walks them: each of the splits x consumers warpgroups sums a share of the rows."""
        return Sm90Config(self.blk_m, self.blk_n, 64, self.stages, self.consumers, self.raster, self.producer_regs,
                          self.consumer_regs, tma_store=False, splits=self.splits)

    def w_stage_bytes(self, bits: int = 8) -> int:
        """Bytes of W's packed words per stage with ``w_smem`` (BLK_N rows x 64 k at `bits`), else 0."""
        return self.blk_n * 64 * bits // 8 if self.w_smem else 0

    def smem_bytes(self, bits: int = 8) -> int:
        """The stages (x, and W's words with ``w_smem``), y^T's buffers with ``store_mn``, the barriers, 1 KB of
        alignment slack."""
        epilogue = self.blk_n * self.blk_m * 2 if self.store_mn else 0
        return (self.blk_m * 64 * 2 + self.w_stage_bytes(bits)) * self.stages + epilogue + 16 * self.stages + 1024

    def validate(self, fmt: PackedFormat) -> None:
        """Raise ValueError naming the condition this tiling breaks."""
        if self.blk_n not in (64, 128, 192, 256):
            raise ValueError(f"{self.name}: blk_n must be 64, 128, 192 or 256 (one to four consumer warpgroups of "
                             "64 rows)")
        if self.blk_m % 8 or not 8 <= self.blk_m <= 256:
            raise ValueError(f"{self.name}: blk_m must be a multiple of 8 in [8, 256] (wgmma's N)")
        if self.blk_m % (8 * self.mma_parts):
            raise ValueError(f"{self.name}: blk_m must be a multiple of {8 * self.mma_parts} ({self.mma_parts} wgmmas "
                             f"of a multiple of 8 rows of x each)")
        if self.blk_m % 64 and (self.splits > 1 or self.cluster > 1):
            raise ValueError(f"{self.name}: x tiles of no multiple of 64 rows take no split-K or cluster")
        if not 1 <= self.depth <= 8:
            raise ValueError(f"{self.name}: depth must be 1..8")
        if not 2 <= self.stages <= 8:
            raise ValueError(f"{self.name}: stages must be 2..8")
        if not 1 <= self.splits <= 16:
            raise ValueError(f"{self.name}: splits must be 1..16")
        if self.cluster not in (1, 2):
            raise ValueError(f"{self.name}: cluster must be 1 or 2 (CTAs sharing each x k-tile)")
        if self.stream_k not in (0, 1, 2):
            raise ValueError(f"{self.name}: stream_k is 0 (off), 1 (the partial round) or 2 (it and one whole round)")
        if self.stream_k and self.splits > 1:
            raise ValueError(f"{self.name}: stream-K and split-K are two ways of dividing K: one at a time")
        if self.smem_bytes(fmt.bits) > CTA_SMEM:
            raise ValueError(f"{self.name}: {self.smem_bytes(fmt.bits)} bytes of smem exceed the 227 KB of an SM")
        launch = launch_regs(self.threads)
        if self.producer_regs + self.consumers * self.consumer_regs > (1 + self.consumers) * launch:
            raise ValueError(f"{self.name}: producer {self.producer_regs} + {self.consumers} x consumer "
                             f"{self.consumer_regs} registers exceed the {self.threads} x {launch} launched with")


@dsl.inline
def _consumer(cfg: RsConfig, fmt: PackedFormat, full: bool, edges: tuple[bool, bool], shape: tuple[Any, Any, Any],
              sX: Any, full_bar: Any, empty_bar: Any, qw: Any, scales: Any, zeros: Any, bias: Any, D: Any, K: Any,
              Wk: Any, flags: Any, sW: Any = None, timeline: Any = None, tmD: Any = None, sD: Any = None) -> None:
    """A consumer warpgroup's life: per k-tile, convert its 64 rows of W into A fragments, wgmma them
    against the x stage, and after each tile store its (64, BLK_M) block of y^T (with split-K, its
    fp32 partial into the workspace Wk (S,1,M,N); with flags, the splits then sum the tile of y)."""
    from tilecraft.gemm.sm90 import _collect, _publish, _reduce_tile, _store_mn_through_smem, _timeline
    from tilecraft.gemm.tensorop import EpilogueSpec, _epilogue, _store

    hopper.setmaxnreg(cfg.consumer_regs, inc=True)
    current().includes.add(_HEADER)
    L, M, N = shape
    sch = _Schedule(cfg.schedule, (L, N, M), K)                           # tiles of y^T (N, M)
    n_whole, k_whole = edges
    bN, bM = cfg.blk_n, cfg.blk_m
    dtype, wg_type = ELEMENTS[fmt.dtype]
    bf16 = "true" if fmt.dtype == "bfloat16" else "false"
    cw = hopper.warpgroup_index() - 1                                     # this consumer's 64 rows of W
    warp = threadIdx.x % 128 // 32
    lane = threadIdx.x % 32
    g = lane // 4
    atom = wgmma_atom(bM, wg_type, operands="rs")
    tiled_mma, cC = make_tiled_mma(atom), tc.make_identity_tensor((64, bM))   # (64,BLK_M) -> (n,m)
    thr_mma = tiled_mma.get_slice(threadIdx.x % 128)
    tCrC = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(thr_mma.partition_C(cC).shape))
    parts = cfg.mma_parts                                                 # wgmmas on slices of the x rows:
    part_atom = atom if parts == 1 else wgmma_atom(bM // parts, wg_type, operands="rs")
    part_acc = [tc.local_tile(Tensor(tCrC.engine, tc.make_layout(tc.size(tCrC))), (tc.size(tCrC) // parts,), (p,))
                for p in range(parts)]                                    # columns 8c.. of a value-first fragment

    def mma(stage: Any, accumulate: Any, k_blocks: Any = None) -> None:
        """The k-tile's wgmmas (those of `k_blocks`) of the A fragments against x's stage."""
        for p in range(parts):
            sB = sX(_, _, stage) if parts == 1 else tc.local_tile(sX(_, _, stage), (bM // parts, 64), (p, 0))
            hopper.wgmma_gemm(part_atom, afrag, sB, tCrC if parts == 1 else part_acc[p], accumulate=accumulate,
                              k_blocks=k_blocks)
    KB = k_block(fmt.bits)
    KT = 64 // KB                                                         # 16-byte loads per k-tile
    G = fmt.group_size
    GPT = 2 if G == 32 else 1                                             # scale groups per k-tile
    mW, mS, mZ = _packed(fmt, qw if sW is None else None, scales, zeros, N, K)
    groups = K // G if G else 1
    Dp = cfg.depth
    wbuf = [dsl.make_rmem_tensor(dsl.int32, (4, KT)) for _b in range(1 if sW is not None else Dp)]  # (WORD,LOAD)
    sbuf = [dsl.make_rmem_tensor(dtype, (2, GPT)) for _b in range(Dp if G else 1)]  # (ROW,GROUP): rows g, g + 8
    zbuf = [dsl.make_rmem_tensor(dtype, (2, GPT)) for _b in range(Dp if G else 1)] if fmt.zero_point else None
    afrag = dsl.make_rmem_tensor(dsl.uint32, (16,))                      # 4 words per 16-k block
    sym_zero = f"{_half_bits(float(fmt.offset), fmt.dtype) * 0x10001:#x}u"
    leader = dsl.eq(threadIdx.x % 128, 0)

    def pair(buf: Any, gi: int) -> str:
        """The lane's two rows' 16-bit values (scales or zero points) as one 32-bit register."""
        return f"*reinterpret_cast<const unsigned*>({buf.engine.address(buf.layout((0, gi)))})"

    def load(b: int, tg: Any, kt: Any) -> None:
        """k-tile kt's packed words of 16-row tile tg (and its group scales) -> buffer b (with W in shared
        memory, the scales alone)."""
        for c in range(KT if sW is None else 0):
            kb = kt * KT + c if k_whole else imin(kt * KT + c, K // KB - 1)
            dsl.copy(mW(tg, kb, lane, _), wbuf[b](_, c))                  # 16 bytes: 4 words
        for gi in range(GPT if G else 0):
            grp = slot_group(G, kt, gi)
            grp = grp if k_whole else imin(grp, groups - 1)
            dsl.copy(mS(tg, grp, g, _), sbuf[b](_, gi))                   # rows g, g + 8: 4 bytes
            if zbuf is not None:
                dsl.copy(mZ(tg, grp, g, _), zbuf[b](_, gi))

    def convert(b: int, a: Any, blocks: Any = range(4)) -> None:
        """Buffer b's words (with W in shared memory, the one word buffer) and scales -> the A fragments `a`
        of these of the k-tile's four 16-k blocks."""
        t = current()
        sb = sbuf[b if G else 0]
        wb = wbuf[0 if sW is not None else b]
        for j in blocks:
            c, words = block_words(fmt.bits, j)
            w = [f"(unsigned){render(wb(wi, c))}" for wi in words]
            gi = group_slot(G, j) if G else 0
            s2 = pair(sb, gi)
            z2 = pair(zbuf[b if G else 0], gi) if zbuf is not None else sym_zero
            dst = f"*reinterpret_cast<unsigned(*)[4]>({a.engine.address(4 * j)})"
            fn = "u4_frag" if fmt.bits == 4 else "u8_frag"
            flags = "" if G else ", false"                                # SCALE: group scales in the fragment
            if fmt.bits == 8 and fmt.dtype == "bfloat16" and zbuf is None:   # SYM: q = v + 128, no fp32
                flags = f", {'true' if G else 'false'}, true"
            t.emit(f"tc::mixed90::{fn}<{bf16}{flags}>({', '.join(w)}, {z2}, {s2}, {dst});")
            for q in range(4 * j, 4 * j + 4):
                a.engine.versions[q] += 1

    # per-channel scales multiply the fp32 accumulators after the main loop (the fragments hold the exact
    # q - z): accumulator i belongs to row g (h = 0) or g + 8 (h = 1) of the warp's 16
    lane0 = tiled_mma.get_slice(0).partition_C(cC)                       # static coordinates: every lane's rows
    row_half = [int(lane0(i)[0]) % 16 // 8 for i in range(tc.size(tCrC))]   # repeat lane 0's within its 16
    if sW is not None:                    # the stage's words as the lanes read them: (TILE,LOAD,LANE,WORD,PIPE)
        sWl = Tensor(sW.engine, tc.make_layout((bN // 16, KT, 32, 4, cfg.stages),
                                               (KT * 128, 128, 4, 1, bN // 16 * KT * 128)))
    stamp = _timeline(timeline)                                          # (benchmarks/probe_rs_timeline.py)
    stage = dsl.declare(0, "stage", const=False)
    phase = dsl.declare(0, "phase", const=False)
    for unit in sch.units():
        n_tile, m_tile, l_idx, k_begin, k_count = sch.coords(unit)
        stamp(0)
        tg = n_tile * (bN // 16) + cw * 4 + warp                          # this warp's 16-row tile of W
        tg = dsl.declare(tg if n_whole else imin(tg, N // 16 - 1), "tg")
        if not G:                                                         # per-channel: once per tile
            dsl.copy(mS(tg, 0, g, _), sbuf[0](_, 0))
            if zbuf is not None:
                dsl.copy(mZ(tg, 0, g, _), zbuf[0](_, 0))
            row_scale = [dsl.convert(sbuf[0](h, 0), dsl.float32) for h in range(2)]

        def step(b: int, i: Any, refill: Any) -> None:
            """k-tile i (its words in buffer b): convert, refill the buffer with k-tile i + depth, wait
            for x, wgmma, free the stage. With W in shared memory: wait for the stage (x and W), read the
            lane's words from it, convert (the scales from buffer b), refill the scales, wgmma."""
            if sW is not None:
                full_bar.wait(stage, phase)                               # x's and W's k-tile landed
                for c in range(KT):
                    dsl.copy(sWl(cw * 4 + warp, c, lane, _, stage), wbuf[0](_, c))   # 16 bytes: LDS.128
            if cfg.interleave:                                            # block j's wgmma runs while j + 1 converts
                for j in range(4):
                    convert(b, afrag, (j,))
                    hopper.fence_operands(tc.local_tile(afrag, (4,), (j,)))
                    if sW is None and j == 0:
                        full_bar.wait(stage, phase)
                    hopper.wgmma_fence()
                    mma(stage, i > 0 if j == 0 else True, (j,))
                refill()
                hopper.wgmma_commit()
            else:
                convert(b, afrag)
                refill()                                                  # W's loads: a whole ring ahead
                hopper.fence_operands(afrag)                              # converted before the wgmma pipeline
                if sW is None:
                    full_bar.wait(stage, phase)                           # x's k-tile landed
                hopper.wgmma_fence()
                mma(stage, i > 0)
                hopper.wgmma_commit()
            hopper.wgmma_wait(0)                                          # (see the module docstring: Overlap)
            with dsl.if_(leader):
                _release(empty_bar, stage, cfg.cluster)                   # the stage goes back to the producer(s)
            _advance(stage, phase, cfg.stages)

        register_ring(Dp, k_count, lambda b, j: load(b, tg, k_begin + j), step)
        stamp(1)
        if not G:                                                         # per-channel: the row's scale, once
            for i, h in enumerate(row_half):
                tCrC[i] = tCrC(i) * row_scale[h]

        # Epilogue: this warpgroup's (64, BLK_M) block of y^T into y's transposed view
        tiler, coord = (bN, bM), (n_tile, m_tile)
        gDt = dsl.permute_modes(D(l_idx, _, _), 1, 0)                     # (N,M) view of y
        gD = tc.local_tile(tc.local_tile(gDt, tiler, coord), (64, bM), (cw, 0))
        cD = tc.local_tile(tc.local_tile(tc.make_identity_tensor((N, M)), tiler, coord), (64, bM), (cw, 0))
        tCgD = thr_mma.partition_C(gD)                                    # (V,1,1)
        tCcD = thr_mma.partition_C(cD)                                    # (V,1,1) -> (n,m)
        if cfg.splits > 1:                                                # this split's fp32 partial block
            gWt = dsl.permute_modes(Wk(unit // sch.tile_units, l_idx, _, _), 1, 0)
            gW = tc.local_tile(tc.local_tile(gWt, tiler, coord), (64, bM), (cw, 0))
            _store(tCrC, thr_mma.partition_C(gW), tCcD, N, M, full)
            if flags is not None:                                         # the tile's splits sum it (and add bias)
                _reduce_tile(cfg.y_tiles, Wk, None, D, bias, 1.0, 0.0, EpilogueSpec(bias="n" if bias is not None
                             else "none"), flags, unit % sch.tile_units, unit // sch.tile_units, m_tile, n_tile,
                             l_idx, cw, leader, full)
            stamp(2)
            continue
        ep = EpilogueSpec(bias="m" if bias is not None else "none")       # y^T's rows: one bias value each

        def store_y() -> None:
            if tmD is not None:                                           # through shared memory, by TMA
                _store_mn_through_smem(cfg.schedule, wg_type, tCrC, None, tCcD, tmD, sD, cw, leader, bias, 1.0, 0.0,
                                       ep, (n_tile * bN + cw * 64, m_tile * bM, l_idx), N, M, full)
                return
            for j in range(bM // 8):
                blk = ((_, _, j), 0, 0)
                _epilogue(tCrC(blk), None, tCgD(blk), tCcD(blk), bias, 1.0, 0.0, ep, N, M, full)

        if cfg.stream_k:                                                  # (as sm90's consumer)
            with dsl.if_(k_begin + k_count < sch.k_tiles):                # an earlier slice of K: hand it over
                _publish(cfg.schedule, tCrC, Wk, flags, cw, leader)
            with dsl.else_():
                with dsl.if_(k_begin > 0):                                # the last slice: add the others'
                    _collect(cfg.schedule, sch, unit, tCrC, Wk, flags, cw, leader)
                store_y()
        else:
            store_y()
        stamp(2)
    if tmD is not None:
        with dsl.if_(leader):
            hopper.tma_store_wait(0, read=False)                          # every store done before the CTA exits


@dsl.kernel
def sm90_mixed_rs_kernel(tmX, qw, scales, zeros, bias, D, K, Wk, cfg: Constexpr, fmt: Constexpr, full: Constexpr,
                         edges: Constexpr, flags=None, timeline=None, tmD=None):
    """D (1,M,N) = x @ dequantize(W) (+ bias), x given as a TMA map of its (M,K,1) view filling one x
    stage, W packed (qw, scales, zeros; tilecraft.quant.pack). See the module docstring. With split-K,
    Wk is the fp32 workspace (S,1,M,N) of the splits' partial tiles and sm90's reduction kernel
    finishes (None without), or with flags (int32 zeros, one per tile of y, left at 0) the splits of
    each tile sum it here and add the bias (every unit resident: ``fused_split_reduction``). With stream-K, Wk
    is the flat fp32 workspace of a partial tile per CTA and flags one int32 zero per CTA and consumer warpgroup
    (left at 0; the launch cooperative, a CTA per SM). edges: (N is a multiple of blk_n, K of 64); full: M and N
    are whole tiles. timeline: None, or sm90_gemm_kernel's int64
    (grid, 2 + 3 * TIMELINE_ITEMS) record of each CTA's first consumer warpgroup (its SM, its start, and per work
    unit the global timer before the main loop, after it and after the epilogue or split-K sum;
    benchmarks/probe_rs_timeline.py); without it the kernel is unchanged. tmD (``store_mn``): the TMA map of y^T's
    (N,M,1) view that stores each consumer's (64, BLK_M) block from its buffer."""
    dsl.launch_bounds(cfg.threads, 1)
    dtype, _wg = ELEMENTS[fmt.dtype]
    L, M, N = D.shape
    sX = dsl.smem_tensor(dtype, smem_layout(dtype, "K", cfg.blk_m, 64, cfg.stages), align=1024)  # (BLK_M,64,PIPE)
    sW = dsl.smem_tensor(dsl.int32, w_stage_layout(cfg, fmt, cfg.stages), align=128) if cfg.w_smem else None
    sD = None
    if tmD is not None:                                                   # (64,BLK_M,CONSUMERS) of y^T, M-major
        dsl.assume(cfg.store_mn and cfg.splits == 1, "tmD stores whole tiles of a store_mn tiling")
        sD = dsl.smem_tensor(dtype, smem_layout(dtype, "MN", 64, cfg.blk_m, cfg.consumers), align=1024)
    full_bar, empty_bar = stage_barriers(cfg.schedule)                   # x's k-tile landed / both consumers read it
    if cfg.splits > 1 and flags is None:
        # the reduction kernel (a programmatic dependent launch, RsLaunch.pdl_reduce) may be scheduled now: its
        # CTAs take SMs as this kernel's leave, and wait (griddep_wait) for all of its partials before reading them
        hopper.griddep_launch_dependents()

    wg = hopper.warpgroup_index()
    with dsl.if_(dsl.eq(wg, 0)):
        hopper.setmaxnreg(cfg.producer_regs, inc=False)
        with dsl.if_(dsl.eq(threadIdx.x, 0)):
            sch = _Schedule(cfg.schedule, (L, N, M), K)
            CL = cfg.cluster
            hopper.tma_prefetch(tmX)
            mc = dict(multicast=(1 << CL) - 1, cta_rank=sch.rank) if CL > 1 else {}  # this CTA's slice, to both
            KT = 64 // k_block(fmt.bits)                                  # 16-byte words of a lane per k-tile

            def load(stage: Any, w_tile: Any, x_tile: Any, l_idx: Any, k_tile: Any) -> None:
                hopper.tma_load(tmX, sX(_, _, stage), full_bar.addr(stage), (x_tile * cfg.blk_m, k_tile * 64, l_idx),
                                **mc)
                if cfg.w_smem:                                            # W's k-tile of the CTA's rows, its own
                    hopper.tma_load(qw, sW(_, _, stage), full_bar.addr(stage),
                                    (w_tile * (cfg.blk_n // 16), k_tile * KT * 128))
            w_bytes = qw.box_bytes if cfg.w_smem else 0
            tma_producer(sch, full_bar, empty_bar, tmX.box_bytes * CL + w_bytes, load)  # the schedule's n-tiles: x's rows
    with dsl.else_():
        _consumer(cfg, fmt, full, edges, (L, M, N), sX, full_bar, empty_bar, qw, scales, zeros, bias, D, K, Wk,
                  flags, sW, timeline, tmD, sD)
    if cfg.cluster > 1:
        hopper.cluster_sync()           # no CTA leaves while a peer may still multicast into it or arrive on it


# ----------------------------------------------------------------------------- host side

def x_map(x2: Any, dtype: str, cfg: RsConfig) -> Any:
    """The TMA map of x2 (M,K), K-major, filling one x stage (BLK_M rows, 64 k; with a cluster, each CTA's
    load is its slice of the rows)."""
    from tilecraft.gemm.sm90_mixed import x_map as stage_map
    return stage_map(x2, dtype, cfg.blk_m, 64, cfg.stages, cfg.cluster)


def w_stage_layout(cfg: RsConfig, fmt: PackedFormat, stages: int | None = None) -> Any:
    """W's packed words of one stage with ``w_smem``: (BLK_N / 16 tiles, the 128 words per 16-byte load of
    the k-tile's KT loads), as layout v1 keeps them (lane t's 16 bytes of load c at word 128 c + 4 t); with
    `stages`, a third mode of the stages."""
    rows, words = cfg.blk_n // 16, 64 // k_block(fmt.bits) * 128
    if stages is None:
        return tc.make_layout((rows, words), (words, 1))
    return tc.make_layout((rows, words, stages), (words, 1, rows * words))


def w_map(qweight: Any, cfg: RsConfig, fmt: PackedFormat) -> Any:
    """The TMA map of the packed words (N / 16, K / KB, 32, 4) viewed as (N / 16, K / KB x 128) words,
    filling one W stage of ``w_smem`` (rows past N and words past K read as zeros)."""
    from tilecraft.gemm.sm90 import _cached_map
    q2 = qweight.view(qweight.shape[0], -1)
    return _cached_map(q2, lambda: w_stage_layout(cfg, fmt), 1, ("rs_w", cfg.blk_n, fmt.bits))


def rs_launch_args(x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: RsConfig, sms: int | None = None
                   ) -> tuple[tuple, int]:
    """The kernel's arguments for x2 (M,K) -> y (M,N) and its work units (tiles of y^T times the splits K
    allows). With split-K, the workspace, and no bias (the reduction kernel adds it); but where every
    unit fits on the `sms` SMs at once (``fused_split_reduction``) and blk_m <= 128, the flags too, and the
    bias: the kernel sums the splits itself. With stream-K, a partial tile's workspace and the flags for up to
    `sms` CTAs (without `sms`, the launch cannot be cooperative: whole tiles instead)."""
    import torch
    from tilecraft.gemm.sm90 import effective_splits, fused_split_reduction, stream_k_fits, streamk_workspace

    M, K = x2.shape
    N = y.shape[1]
    cfg = replace(cfg, splits=effective_splits(K, cfg.schedule))
    w_tiles = math.ceil(N / cfg.blk_n)
    whole_n = N % cfg.blk_n == 0 and w_tiles % cfg.cluster == 0           # no CTA of a cluster past N
    full = M % cfg.blk_m == 0 and whole_n
    edges = (whole_n, K % 64 == 0)
    units = math.ceil(M / cfg.blk_m) * math.ceil(w_tiles / cfg.cluster) * cfg.cluster * cfg.splits  # CTAs' worth
    Wk = flags = None
    if cfg.stream_k and (sms is None or not stream_k_fits(sms, math.ceil(K / 64))):
        cfg = replace(cfg, stream_k=0)                                    # (no cooperative grid)
    if cfg.stream_k:                                  # a partial tile per CTA and the flags: the grid's CTAs <= sms
        Wk = streamk_workspace(y, sms, cfg.schedule)
        flags = torch.zeros(sms * cfg.consumers, dtype=torch.int32, device=y.device)
    if cfg.splits > 1:
        Wk = torch.empty(cfg.splits, 1, M, N, dtype=torch.float32, device=y.device)
        # summed here only up to 128 rows of x: with 256 (128 accumulators a thread) the sum's code made
        # ptxas spill 4-72 bytes in every format (the reduction kernel's build spills none at M = 256)
        if sms is not None and cfg.blk_m <= 128 and fused_split_reduction(cfg.schedule, units, sms):
            flags = torch.zeros(units // cfg.splits, dtype=torch.int32, device=y.device)   # one per tile
        else:
            bias = None
    qw = w_map(w.qweight, cfg, w.format) if cfg.w_smem else w.qweight
    args = (x_map(x2, w.format.dtype, cfg), qw, w.scales, w.zeros, bias, y.unsqueeze(0), K, Wk, cfg, w.format,
            full, edges, flags)
    tmD = y_map(y, cfg)
    return (args + (None, tmD) if tmD is not None else args), units


def y_map(y: Any, cfg: RsConfig) -> Any:
    """The TMA map of y^T's (N,M,1) view that the ``store_mn`` epilogue stores through, or None (no store_mn, split-K,
    or rows of y that TMA cannot store: the epilogue then stores from the registers)."""
    from tilecraft.gemm.sm90 import d_map
    if not cfg.store_mn or cfg.splits > 1:
        return None
    return d_map(y.t().unsqueeze(0), cfg.schedule)


class RsLaunch(Launch):
    """sm90_mixed.Launch of the register-A kernel: the persistent launch (one CTA per SM up to the work
    units; with split-K, then the reduction) for x2 (M,K) -> y (M,N) of one signature, resolved once."""

    path = "sm90_mixed_rs"
    pdl_reduce = True                                                     # the kernel lets the reduction start early
    sum_in_kernel = True                                                  # where every unit fits (rs_launch_args)

    def __init__(self, x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: Any, sms: int):
        super().__init__(x2, w, bias, y, cfg, sms)
        self.stores_y = y_map(y, self.cfg) is not None                    # (as rs_launch_args bound it)
        self.ymaps: dict[int, Any] = {}                                   # y's TMA maps (store_mn)

    def launch_args(self, x2: Any, w: PackedWeight, bias: Any, y: Any, cfg: Any, sms: int) -> tuple[tuple, int]:
        return rs_launch_args(x2, w, bias, y, cfg, sms if self.sum_in_kernel else None)

    @staticmethod
    def kernel() -> Any:
        return sm90_mixed_rs_kernel

    @property
    def threads(self) -> int:
        return self.cfg.threads

    def x_map(self, x2: Any, dtype: str) -> Any:
        return x_map(x2, dtype, self.cfg)

    def w_arg(self, w: PackedWeight) -> Any:
        if not self.cfg.w_smem:
            return w.qweight
        from tilecraft.gemm.sm90 import by_address
        return by_address(self.wmaps, w.qweight, lambda q: w_map(q, self.cfg, w.format))

    def y_args(self, y: Any) -> tuple:
        """(timeline, tmD) where the epilogue stores y by TMA (``store_mn``: y_map, cached per address), else ()."""
        if not self.stores_y:
            return ()
        from tilecraft.gemm.sm90 import by_address
        return None, by_address(self.ymaps, y, lambda v: y_map(v, self.cfg))


#: the 256-row tiles in 2x1 clusters sharing x (pick_rs_config; split_rows's first launch), y through M-major buffers
#: by stmatrix and TMA (store_mn), which leaves five stages (forty-eighth session, H100, three rounds in turn, W4A16
#: g128 / W8A16 per-channel, us, against six stages with y from the registers: N = K = 8192, M = 1024 193.5 / 200.8
#: against 203.7 / 211.4, M = 4096 779.5 / 814.7 against 798.1 / 833.9; 28672 x 4096, M = 1088 416.6 / 457.9 against
#: 440.2 / 474.8; 4096 x 14336, M = 1024 171.1 / 173.2 against 173.8 / 180.4)
PAIRS = RsConfig(cluster=2, stages=5, store_mn=True)

#: M <= 64: 256 rows of W per CTA in four consumer warpgroups of 64 rows, 64 rows of x, two k-tiles of words in
#: flight (deeper spills in the ragged kernels of several formats); the heuristic takes it for int4 with W through
#: shared memory (``w_smem``: the depth then buffers the scales alone)
WIDE = RsConfig(blk_n=256, blk_m=64, stages=8, depth=2, producer_regs=24, consumer_regs=112)


def wide_depth(fmt: PackedFormat) -> int:
    """The ring depth of ``WIDE`` (four consumers of 112 registers) with W's words in registers for fmt: 2,
    but 1 for grouped int8 with zero points, whose ragged kernels spill 4 bytes at depth 2 (with one buffer
    refilled at once, W's loads are one whole k-tile ahead, as the ring of 2 that loaded a buffer before the
    next body had them). (The heuristic's ``WIDE`` reads W through shared memory, int4 only.)"""
    return 1 if fmt.bits == 8 and fmt.group_size and fmt.zero_point else WIDE.depth


def pick_rs_config(M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> RsConfig:
    """The register-A tiling for y (M, N) = x (M, K) @ W: ``tiling``'s, or its 256-row tiles in stream-K where they
    take fewer rounds (``_stream_k_or``), or three consumers by 208 or 224 rows of x where those make whole rounds
    in less time (``_three_or``), or more than one but no whole round in stream-K (``_three_stream_k_or``)."""
    cfg = _stream_k_or(tiling(M, N, K, sms, fmt), M, N, K, sms)
    return _three_stream_k_or(_three_or(cfg, M, N, K, sms, fmt), M, N, K, sms, fmt)


def three_consumers(bm: int, fmt: PackedFormat) -> RsConfig:
    """Three consumer warpgroups (192 rows of W) by bm rows of x (past 192 two wgmmas a 16-k block, ``mma_parts``),
    24 + 3 x 160 registers, W through shared memory, y by TMA, as many stages as fit, up to 4 (by 224 rows 4 for
    int4, 3 for int8)."""
    c = RsConfig(blk_n=192, blk_m=bm, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True)
    return replace(c, stages=max(s for s in range(2, 5) if replace(c, stages=s).smem_bytes(fmt.bits) <= CTA_SMEM))


def _three_tiles(M: int, N: int, fmt: PackedFormat) -> tuple[int, int] | None:
    """(bm, tiles): three consumers by bm = M / t rows of x (t the fewest x tiles of at most 224 rows; bm rounded up to
    16), and their tiles; None below 208 rows, and for int8 in groups of 32 with zero points (its kernel spills 4
    bytes)."""
    if M <= 192 or fmt.bits == 8 and fmt.group_size == 32 and fmt.zero_point:
        return None
    t = -(-M // 224)
    bm = -(-M // (16 * t)) * 16
    return (bm, t * -(-N // 192)) if bm >= 208 else None


def _narrow_three_tiles(M: int, N: int) -> tuple[int, int] | None:
    """(bm, tiles): three consumers by bm = M / t rows of x (``row_tiles``'s fewest x tiles of at most 192 rows; bm
    rounded up to 8), and their tiles; None at 128 rows or fewer."""
    return next(((bm, t * -(-N // 192)) for t, bm in row_tiles(M, 136) if bm <= 192), None)


def _three_or(cfg: RsConfig, M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> RsConfig:
    """cfg, or from M = 193 tiles of three consumers by bm = M / t rows of x (``_three_tiles``), or by bm = M / t of at
    most 192 rows (t the fewest such x tiles; bm rounded up to 8, more than 128: one wgmma a 16-k block), where they
    fill at least 0.9 of their rounds of the SMs and take at most 0.95 of cfg's time (``single_rounds``: per
    multiply-add those of more than 192 rows run at the 2x1-cluster 256-row tiles' rate, the others at the rate of
    two consumers' tiles of as many rows); of the two, the faster. Fifty-first session (H100, W4A16 g128 / W8A16
    per-channel, three rounds in turn, us): 4096 x 4096, M = 1280 (22 x 6 = 132 tiles of 192 x 224) 62.2 / 65.9
    against 73.8 / 77.7 (1024 + 256 rows in two launches; tilecraft's dense bf16 57.3); N = K = 8192, M = 4096, 43 x
    19 tiles in 7 rounds 865.4 / 920.3 against the pairs' 748.3 / 803.0 in 8 rounds: 1.157 / 1.146 the time for 1.148
    the rounds' multiply-adds. Fifty-third session (H200, the same formats): 4096 x 4096, M = 1100 (22 x 6 tiles of
    192 x 184) 52.1 / 62.6 against 64.3 / 68.2 (1024 + 76 rows in two launches; dense 60.0); 4096 x 14336, M = 1100
    189.6 / 217.1 against 204.4 / 215.9; N = K = 8192, M = 528 (43 x 3 tiles of 192 x 176) 105.4 / 125.1 against
    116.8 / 131.6 (512 + 16 rows)."""
    best, bar = cfg, 0.95 * single_rounds(cfg, M, N, sms, K)
    for three in (_three_tiles(M, N, fmt), _narrow_three_tiles(M, N)):
        if three is None or not fill_their_rounds(three[1], sms):
            continue
        c = three_consumers(three[0], fmt)
        if single_rounds(c, M, N, sms, K) <= bar:
            best, bar = c, single_rounds(c, M, N, sms, K)
    return best


def _three_stream_k_or(cfg: RsConfig, M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> RsConfig:
    """cfg, or ``_three_tiles``'s tiles in stream-K where they make more than one round of the SMs but do not fill
    their last (mode 1, or 2 where that would share a unit among more than 3 CTAs, as ``_stream_k_or``) and take at
    most 0.95 of cfg's time (``single_rounds``). Not by 224 rows for int4 in groups of 32 with zero points (its
    stream-K kernel spills 20 bytes; by 208 rows it spills none). Fifty-third session (H200, three rounds in turn,
    W4A16 g128 / W8A16 per-channel, us): 6144 x 4096, M = 1100, 32 x 5 tiles of 192 x 224 in mode 2 82.9 / 86.5
    against the pairs' 93.8 / 95.3 (two rounds; mode 1 87.9 / 91.7; tilecraft's dense bf16 78.1). Where the model
    leaves the pick: M = 1024 (208 rows, mode 2) 84.1 / 90.8 against the pairs in stream-K 83.9 / 89.9, and M = 1152
    (192-row tiles are not three consumers' form)."""
    three = _three_tiles(M, N, fmt)
    if three is None or three[1] <= sms or fill_their_rounds(three[1], sms):
        return cfg
    bm, tiles = three
    if bm > 208 and fmt.bits == 4 and fmt.group_size == 32 and fmt.zero_point:
        return cfg
    c = replace(three_consumers(bm, fmt), stream_k=1 if 3 * (tiles % sms) >= sms else 2)
    return c if single_rounds(c, M, N, sms, K) <= 0.95 * single_rounds(cfg, M, N, sms, K) else cfg


def tiling(M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> RsConfig:
    """The register-A tiling for y (M, N) = x (M, K) @ W without stream-K. At M = 129..384, tiles of 192 x rows
    (one from M <= 192, two from 257) or one of 256 (M = 193..256, not for groups of 32, which ran 7% slower there;
    k-blocks interleaved), W through shared memory, split along K only where the tiles leave SMs idle (the partials then
    cross sm90's reduction kernel), when those tiles and slices cover 90% of the SMs; from M = 385 the
    192-row tiles too where they cover 90% of the SMs unsplit and, counting a 192-row tile 0.85 of a 256-row
    one, take at most 0.9 the rounds' time of the 2x1-cluster 256-row tiles (or those leave SMs idle; N > 128
    only). Else 256 rows of x per CTA when those tiles cover 90% of the SMs; else, for int4 at M <= 64, 256 rows
    of W per CTA (``WIDE``, four consumer warpgroups) split along K where those tiles and slices cover 90% of
    the SMs; else 128 rows of W and 128 rows of x (64 from M <= 64), split along K. Up to 128 rows of x, W comes
    through shared memory (``w_smem``). The slices: S <= 4 (at least 8 k-tiles each), the fewest rounds of the
    SMs per slice. From M = 257, tiles of M / t rows of x instead where they take fewer rounds (``_ragged_or``);
    the 256-row tiles in 2x1 clusters are ``PAIRS``.

    Session 46 (H100, three rounds in turn, tc.gemm's picks against the picks before, us; W4A16 g128 / W8A16
    per-channel unless said): N = K = 8192, M = 160 45.9 / 49.8 against 76.9 / 82.6 (two 128-row tiles), M = 192
    47.5 / 51.9 against 59.9 / 66.3, M = 256 54.9 / 59.8 against 60.1 / 65.9 (W8A16 g128 with zero points 65.0
    against 72.2; W4A16 g32 with zero points 69.1 against 64.9: groups of 32 keep 128-row tiles there), M = 300
    80.7 / 88.7 against 99.4 / 101.4 (the 2x1-cluster 256-row tiles), M = 384 74.8 / 92.5 against 96.9 / 104.9;
    N x K = 4096 x 14336, M = 160 / 256: 43.1 / 49.1 against 58.0 / 58.7 (W4A16); 28672 x 4096, M = 160 79.2
    against 100.6; 57344 x 8192, M = 160 / 300: 314 / 597 against 374 / 631 (W4A16); N = K = 8192, M = 576 / 640
    / 704: 151.3 / 170.7 / 165.0 and 168.5 / 179.5 / 183.0 against 174.7 / 180.4 / 181.0 and 188.6 / 191.8 /
    196.4 (2x1 clusters of 256 rows; at 448 and 896, where 192 rows take more rounds, they ran 149.7 / 231.3
    against 98.9 / 192.9); 4096 x 14336, M = 640: 143.3 / 152.8 against 162.3 / 174.1 (128x128 in 4 slices);
    28672 x 4096, M = 576: 243.8 / 281.2 against 279.9 / 301.6; N = K = 8192, M = 1088 / 1152: 250.2 / 256.7 and
    279.1 / 282.4 against 276.5 / 279.6 and 297.6 / 297.3 (at 1536, 4 rounds against 3: 356.2 against 302.6);
    4096 x 14336, M = 1280 / 2112: 266.0 / 416.3 and 294.3 / 458.5 against 302.3 / 463.4 and 316.4 / 494.3.
    Tilings not taken: 256 rows of W (four
    consumers) by 128 of x at M = 96..128 (39-41 against 38 us); 192 rows of W (three consumers, 3 slices, W in
    shared memory) at M = 64..128 (W4A16 within 1.6-4.5% at M = 96..128 with depth 4, W8A16 1-4% slower); 256 x
    rows in 2x1 clusters at M = 192..256 (W4A16 6% slower, W8A16 within 2%); W in shared memory or interleaved
    in the 2x1-cluster tiles at M = 512 / 1024 (0-5% slower).

    Session 45 (H100, three rounds in turn, tc.gemm against the picks before, us): W through shared memory at M
    = 40 / 64 / 128, N = K = 8192: W8A16 per-channel 34.2 / 34.7 / 41.0 against 35.8 / 37.4 / 44.6 (int8 takes
    128 rows of W at M <= 64: ``WIDE`` with W in shared memory ran 38.0-38.7), W8A16 g128 with zero points 36.3
    / 37.2 / 45.1 against 38.7 / 40.2 / 48.1, W4A16 per-channel 25.5 / 26.1 / 36.6 against 27.5 / 29.1 / 37.4,
    W4A16 g128 27.9 / 29.0 / 37.3 against 29.0 / 30.9 / 39.1, W4A16 g32 with zero points 32.4 / 33.8 / 41.1
    against 32.3 / 34.0 / 40.9; at N = 4096, K = 14336 2-6% faster for W4A16 g128 and W8A16 per-channel. At M =
    256 (128 rows of x, unsplit) it ran within 1% (60.1 / 66.2 against 59.9 / 65.4, W4A16 g128 / W8A16
    per-channel): not taken.

    Earlier measurements (H100, N = K = 8192, W4A16 g128): 256 rows beat the producer kernel (sm90_mixed.py)
    from M = 512 (101 against 163 us) to 4096 (874 against 1165 us), 128 rows at M = 256 (73 against 82 us)
    (session 8); with split-K, 128 rows at M = 128 (49.7 us, 2 slices, against 69.1) and 64 rows at M = 64 (40.6
    us against 45.9 with 128 rows; at M = 128 64-row tiles took 71.7) (session 9). The 256-row tiles run in 2x1
    clusters sharing x (H100, session 17, three rounds in turn: W8A16 per-channel 224.5 -> 215.7 us at M = 1024
    and 875.0 -> 850.8 at 4096, 0.91-0.94x tilecraft's dense bf16; W4A16 g128 209.6 -> 205.1 and 829.4 ->
    810.4). Four consumer warpgroups of W per CTA hide more of each k-tile's load -> convert -> wgmma chain
    (session 20, three rounds in turn, W4A16 g128 / W8A16 per-channel): ``WIDE`` in 4 slices took 37.0 / 44.3 us
    at M = 64 and 34.3 / 38.9 at M = 40, against 39.3 / 44.8 and 37.5 / 43.1 for 128 rows of W in 2 slices.
    Depth 3 or 4 would be faster still at M = 64 (34.5-34.9 / 41.5-42.2) but spills in the ragged kernels of
    several formats (four consumers get 112 registers). At M = 128 the 256x128 tile (depth 2, spilling in most
    formats) took 45.1-45.6 us against 48.8-48.9, and 192 rows in 3 slices 47.4-47.6: not taken (spills, or
    within 3%); at M = 256 every split form lost to 128 rows unsplit (70.0 us against 81-105; session 46's
    256-row tile with W in shared memory wins there). Since W's ring refills each buffer at once (session 34,
    H100, three rounds in turn, W4A16 g128 / W8A16 per-channel), the 128- and 64-row tiles keep 6 k-tiles of W
    in flight: 40.7 / 46.3 us at M = 128 against 42.0 / 47.9 with 4 (45.1 / 51.0 with the earlier ring of 4),
    and 59.5 / 65.4 at M = 256 against 62.7 / 67.8 (69.6 / 73.1). A ring of 8 ran within 1%, and it spills in
    int8 g32 with zero points. The 256-row tiles keep depth 2: depth 4 ran 191.5 against 209.2 us at M = 1024
    but 805.1 against 779.4 at 4096, and depth 3 202.4 against 181.1 at 1024."""
    w_tiles = -(-N // 128)
    k_tiles = -(-K // 64)

    def slices(tiles: int) -> int:
        return min((s for s in range(1, 5) if s == 1 or k_tiles >= 8 * s), key=lambda s: -(-tiles * s // sms) / s)

    def rounds(tiles: int) -> int:
        return -(-tiles // sms)

    pairs = -(-M // 256) * w_tiles                                        # 256-row tiles (2x1 clusters of them)
    if M > 128 and not (192 < M <= 256 and fmt.group_size == 32):        # tiles of 192 / 256 rows, W in smem
        rows = 256 if 192 < M <= 256 else 192
        tiles = -(-M // rows) * w_tiles
        splits = 1 if tiles >= 0.9 * sms else slices(tiles)             # (partials through the reduction kernel)
        fewer_rounds = pairs < 0.9 * sms or 0.85 * rounds(tiles) <= 0.9 * rounds(pairs)   # 192 rows: 0.85 the time
        if tiles * splits >= 0.9 * sms and (M <= 384 or splits == 1 and w_tiles > 1 and fewer_rounds):
            depth = 1 if rows == 256 and fmt.group_size and fmt.zero_point else 2   # (2 spills the ragged kernels)
            return _ragged_or(RsConfig(blk_m=rows, stages=SHORT_STAGES[rows], depth=depth, splits=splits,
                                       w_smem=True, interleave=rows == 256), M, N, sms, fmt)
    if pairs >= 0.9 * sms:
        return _ragged_or(replace(PAIRS, cluster=2 if w_tiles > 1 else 1), M, N, sms, fmt)
    ws = M <= 128                                                         # W through shared memory
    if M <= WIDE.blk_m and fmt.bits == 4:
        tiles = -(-N // WIDE.blk_n)
        if tiles * slices(tiles) >= 0.9 * sms:
            return replace(WIDE, splits=slices(tiles), w_smem=True)
    rows = 64 if M <= 64 else 128
    tiles = -(-M // rows) * w_tiles
    return _ragged_or(RsConfig(blk_m=rows, stages=8, depth=6, splits=slices(tiles), w_smem=ws), M, N, sms, fmt)


def _ragged_or(cfg: RsConfig, M: int, N: int, sms: int, fmt: PackedFormat) -> RsConfig:
    """cfg, or for M > 256 the tiles of bM = M / t rows of x (rounded up to 8; 128 < bM < 256, no multiple of 64)
    where those take at most 0.9 of cfg's rounds (``single_rounds``) in one round or more of the SMs each at
    least 0.9 full: W through shared memory, y through M-major buffers and TMA stores (``store_mn``), as many
    stages as fit up to 6. Forty-eighth session (H100, W4A16 g128 / W8A16 per-channel, us): 4096 x 14336, M =
    520, 136-row tiles (one round of 128) 110.1 / 109.3 against 143.0 / 157.8 for 128x128 in 4 slices (114.7 /
    121.9 with y from the registers); at M = 1100, 144-row tiles (two rounds) 232.3 / 244.7 lost to 1024 + 76
    rows in two launches (198.6 / 215.5): the rounds count a tile of 144 rows 0.7 of a 256-row one."""
    if M <= 256:
        return cfg
    w_tiles = -(-N // 128)
    best, best_rounds = cfg, 0.9 * single_rounds(cfg, M, N, sms)
    for t, bm in row_tiles(M, 136):                                       # (more than 128 rows)
        tiles = t * w_tiles
        if bm % 64 == 0 or not fill_their_rounds(tiles, sms):           # (256 rows: the pairs)
            continue
        c = RsConfig(blk_m=bm, depth=2, w_smem=True, store_mn=True)
        c = replace(c, stages=max(s for s in range(2, 7) if replace(c, stages=s).smem_bytes(fmt.bits) <= CTA_SMEM))
        if single_rounds(c, M, N, sms) <= best_rounds:
            best, best_rounds = c, single_rounds(c, M, N, sms)
    return best


#: the time of a launch of r <= 256 rows of x (the kernel tc.gemm picks for them) at N = K = 8192, in rounds of
#: the 2x1-cluster 256-row tiles over the same K: (r at most, rounds). H100, W8A16 per-channel (W4A16 runs 0-15%
#: faster): 25 us at M = 16 (the small-M kernel), 31 at 64, 41.5 at 128, 52 at 192, 60 at 256, against 105 for a
#: round of 256-row tiles (M = 1024 in two rounds: 209.6 us). Less ``LAUNCH_ROUNDS``, it scales with N (the launch
#: streams W, split along K where its tiles are few); the launch's fixed cost scales with 1 / K.
REST_ROUNDS = ((32, 0.25), (64, 0.30), (128, 0.40), (192, 0.50), (256, 0.57))
#: a launch's fixed cost (about 5 us: the launch, the pipeline's fill and drain) in rounds of 256-row tiles at K = 8192
LAUNCH_ROUNDS = 0.05


#: stream-K's cost beyond its units' rounds as a fraction, in rounds of 256-row tiles: a part that scales with K (the
#: shared k-tiles run slower: the CTAs of the partial round no longer read the same x k-tiles together), and parts
#: that do not, given at K = 4096 (they scale with 4096 / K): the shares' pipeline fill and hand-over, and each CTA
#: past two that shares a unit (its finisher waits for and adds every other's partial tile in turn). Forty-ninth
#: session (H100, W4A16 g128 / W8A16 per-channel): 0.24-0.28 rounds at K = 4096, 0.13-0.20 at 8192 and 0-0.19 at
#: 14336 with 2-4 CTAs a unit (M = 1024..1700); 0.45-0.55 at K = 4096 with 11 (6144 x 4096, M = 520 and 712).
STREAM_K_ROUNDS = (0.15, 0.1, 0.03)


def _stream_k_or(cfg: RsConfig, M: int, N: int, K: int, sms: int) -> RsConfig:
    """cfg, or from M = 513 the 2x1-cluster 256-row tiles (``PAIRS``) in stream-K where their units make more than
    one round of the clusters but no whole number of rounds, and they take at most 0.98 of cfg's rounds
    (``single_rounds``: the units' rounds as a fraction, plus ``STREAM_K_ROUNDS``). Mode 1 shares the units of the
    last partial round evenly among all clusters along K (sm90.stream_k_share); where that would share a unit among
    more than 3 clusters, mode 2, which shares one whole round more, so that each cluster's share spans a unit or
    more.

    Forty-ninth session (H100, three rounds in turn, tc.gemm against what it ran before, us, W4A16 g128 / W8A16
    per-channel; RESULTS.md has 20 shapes): mode 1 at 4096 x 14336, M = 1536 249.2 / 272.3 against 274.8 / 318.7
    (192-row tiles); 10240 x 8192, M = 1024 247.2 / 265.3 against 278.8 / 296.6 (split_rows's two launches); 6144 x
    4096, M = 1024 83.0 / 84.7 against 84.9 / 88.6 (208-row tiles). Mode 2 at 6144 x 4096, M = 520 59.6 / 65.2
    against 74.9 / 81.2 in mode 1 and 80.6 / 86.8 before (192-row tiles); M = 712 61.4 / 66.9 against 76.0 / 80.9
    in mode 1 (a ring of 4) and 64.6 / 68.6 before (144-row tiles); N = K = 8192, M = 3656 707.5 / 753.6 against
    725.7 / 759.8 in mode 1 and 724.3 / 756.9 before (3584 + 72 rows). Slower: 8192 x 28672, M = 1280, W8A16 918.9
    against 894.8 (1024 + 256 rows); 57344 x 8192, M = 712, W8A16 in mode 2 1110.5 against 1073.6 in mode 1 (1106.9
    before)."""
    if M <= 512 or cfg.splits > 1:
        return cfg
    w_tiles = -(-N // 128)
    cl = 2 if w_tiles > 1 else 1
    units, clusters = -(-M // 256) * -(-w_tiles // cl), sms // cl
    if units <= clusters or units % clusters == 0:
        return cfg
    # more than 3 clusters a shared unit in mode 1 (its partial round under a third full): mode 2
    sk = replace(PAIRS, cluster=cl, stream_k=1 if 3 * (units % clusters) >= clusters else 2)
    return sk if single_rounds(sk, M, N, sms, K) <= 0.98 * single_rounds(cfg, M, N, sms, K) else cfg


def single_rounds(cfg: RsConfig, M: int, N: int, sms: int, K: int = 8192) -> float:
    """The time of one launch of cfg for M rows of x in rounds of the 2x1-cluster 256-row tiles over the same K,
    where its tiles bound it (not for a launch that streams W, split along K): their rounds (the pairs), 0.85
    a round of 192-row tiles (pick_rs_config's count), 0.65 a round of 128-row ones (H100, 4096 x 14336, M =
    640: 143 us against 176 for a 256-row round), 0.5 of 64-row ones, twice that for 256 rows of W, divided
    among the slices of K; with stream-K, the rounds as a fraction plus ``STREAM_K_ROUNDS`` (in units of the pairs'
    rounds also for three consumers' larger tiles: at 6144 x 4096, M = 1100, 32 x 5 tiles of 192 x 224 in mode 2 took
    1.77 / 1.82 of the pairs' rounds (W4A16 g128 / W8A16 per-channel, H200), 0.18-0.23 above their 1.59 rounds of
    multiply-adds, where ``STREAM_K_ROUNDS`` says 0.25 and scaled by the tile's 1.31 0.33)."""
    w_tiles = -(-N // cfg.blk_n)
    tiles = -(-M // cfg.blk_m) * -(-w_tiles // cfg.cluster) * cfg.cluster
    slots = sms // cfg.cluster * cfg.cluster
    unit = _x_tile_unit(cfg.blk_m) * cfg.blk_n / 128
    if cfg.mma_parts > 1:                                                 # three consumers: the pairs' rate
        unit = cfg.blk_n * cfg.blk_m / (128 * 256)
    if cfg.stream_k:                                                      # (_stream_k_or)
        scaled, fixed, per_sharer = STREAM_K_ROUNDS
        rest = tiles % slots                                              # the shared units' tiles (mode 1)
        sharers = -(-slots // rest) if rest and cfg.stream_k == 1 else 2  # CTAs a shared unit, about
        over = scaled + (fixed + per_sharer * max(0, sharers - 2)) * 4096 / K
        return unit * tiles / slots + (over if cfg.mma_parts > 1 else unit * over)   # (three: _three_stream_k_or)
    return unit * -(-tiles * cfg.splits // slots) / cfg.splits


def fill_their_rounds(tiles: int, slots: int) -> bool:
    """Whether tiles fill at least 0.9 of their rounds of slots (SMs, or a cluster's SMs in even counts)."""
    return tiles >= 0.9 * slots * -(-tiles // slots)


def _x_tile_unit(bm: int) -> float:
    """A tile of bm rows of x in 256-row ones' time (``single_rounds``): 1 at 256, 0.85 at 192, 0.65 at 128, 0.5 at
    64, linear between them."""
    points = ((64, 0.5), (128, 0.65), (192, 0.85), (256, 1.0))
    if bm <= 64:
        return 0.5
    lo, hi = next((a, b) for a, b in zip(points, points[1:]) if bm <= b[0])
    return lo[1] + (bm - lo[0]) * (hi[1] - lo[1]) / (hi[0] - lo[0])


def split_rows(M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> int:
    """The rows of x a first launch of tc.gemm's mixed-input GEMM takes when M splits into two launches (0:
    one launch; ``split_plan`` gives its tiling too): 256 q rows in 2x1-cluster 256-row tiles that fill at least 0.9
    of their rounds of the SMs (or bm t rows in three-consumer tiles of bm = 224 or 208 rows, ``_three_firsts``), then
    the other r (1..384) rows in a second launch of the kernel picked for them (the small-M kernel
    up to 32 rows, two 192-row tiles past 256), where the two take at most 0.95 the rounds of pick_rs_config's
    one launch (``REST_ROUNDS`` up to 256 rows, else ``single_rounds``); of two such q, the faster. The one
    launch loses a partial round to the ragged rows: at N = K = 8192, M = 640 runs 4 m-tiles of 192 rows (1.94
    rounds) where 512 rows take one round and the other 128 rows the time of a launch at M = 128. Where the
    rest's own pick runs unsplit tiles (wide N), their rounds count if more (``single_rounds``).

    Session 47 (H100, three rounds in turn, tc.gemm against the other choice, us; W4A16 g128 / W8A16
    per-channel): N = K = 8192, M = 520 / 576 / 640 / 704 / 768: 110.5 / 124.2 / 134.1 / 143.5 / 150.7 and 130.0 /
    145.2 / 156.4 / 152.9 / 161.5 against 152.6 / 155.9 / 163.3 / 166.9 / 164.7 and 165.7 / 168.4 / 172.5 / 176.2 /
    177.3 (192-row tiles); M = 1088 / 1152 / 1216 / 1600 / 2112: 212.1 / 234.5 / 251.3 / 320.5 / 419.4 and 245.5 /
    254.0 / 266.9 / 351.5 / 460.8 against 252.5 / 248.5 / 284.2 / 380.4 / 483.3 and 265.9 / 272.3 / 308.1 / 407.8
    / 511.0; 4096 x 14336, M = 1100 / 1280 / 2112: 190.5 / 206.1 / 368.7 and 201.6 / 219.6 / 390.0 against 258.2 /
    270.7 / 416.8 and 281.3 / 292.9 / 445.5; 28672 x 4096, M = 1300 (20 rows in the small-M kernel): 504.4 / 552.7
    against 544.9 / 588.4. Not split: 28672 x 4096 at M = 1088, where the rest's pick (224 pair tiles) takes two
    rounds: 440.5 / 468.3 in one launch against 487.3 / 529.9. At 1152 a first lease ran both within 1%, when the
    rule's bar was 0.92 (0.95 now: M = 768 split ran 8-9% faster, where the model had said 8%). Rests of
    257..384 rows (two 192-row tiles), where q pairs would leave SMs idle and q - 1 fill theirs: N = K = 8192,
    M = 800 / 880: 183.1 / 188.2 and 198.4 / 200.1 against 190.7 / 200.3 and 207.3 / 209.0 (pairs in two rounds);
    4096 x 14336, M = 1300 / 1400 / 2400: 246.8 / 249.2 / 420.0 and 261.7 / 265.0 / 444.1 against 271.6 / 292.9 /
    483.7 and 289.4 / 306.4 / 523.9."""
    return split_plan(M, N, K, sms, fmt)[0]


def split_plan(M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> tuple[int, RsConfig | None]:
    """``split_rows``'s rows of the first launch and its tiling: ``PAIRS`` for 256 q rows, or three consumers by bm
    (224 or 208) rows of x for bm t rows (``_three_firsts``) where those tiles fill at least 0.9 of their rounds;
    (0, None) for one launch. Of the candidates, the fewest rounds (with the rest's) at most 0.95 of one launch's."""
    if M <= 512 or N <= 128:
        return 0, None
    best, bar = (0, None), 0.95 * single_rounds(pick_rs_config(M, N, K, sms, fmt), M, N, sms, K)
    w_tiles, slots = -(-N // 128), sms // 2 * 2
    firsts = []
    for q in range((M - 1) // 256, max(1, (M - 385) // 256), -1):      # the rest: 1..384 rows
        if fill_their_rounds(q * w_tiles, slots):                         # (else the pairs leave SMs idle)
            firsts.append((256 * q, PAIRS, -(-q * w_tiles // slots)))
    firsts += _three_firsts(M, N, K, sms, fmt)
    for rows, cfg, rounds in firsts:
        total = rounds + _rest_rounds(M - rows, N, K, sms, fmt)
        if total < bar or total == bar and cfg is PAIRS:                  # (a tie: the pairs)
            best, bar = (rows, cfg), total
    return best


def _three_firsts(M: int, N: int, K: int, sms: int, fmt: PackedFormat) -> list[tuple[int, RsConfig, float]]:
    """split_plan's first launches of three consumers by bm = 224 or 208 rows of x (``three_consumers``): bm t rows
    in t x-tiles that fill at least 0.9 of their rounds of the SMs, leaving 1..384 rows; with their rounds
    (``single_rounds``). None for int8 in groups of 32 with zero points (as ``_three_or``). For a weight of fewer than
    8192 x 8192 elements, not with a rest of 33..256 rows: ``REST_ROUNDS`` (measured at N = K = 8192) scales such a
    rest with N, and there it ran up to twice that (fifty-second session, H200, us, W4A16 g128 / W8A16 per-channel,
    split against tc.gemm before: 6144 x 4096, M = 1100, 204 rows, 94.4 / 100.2 against 91.7 / 98.0; 14336 x 4096,
    M = 1296, 256 rows, 262.5 / 282.1 against 254.8 / 277.5; 2048 x 8192, M = 2800, 112 rows, 142.7 / 141.6 against
    138.8 / 146.8). Where they are taken, 10 of 11 shapes measured ran 1-17% faster in both formats, and 4096 x
    14336, M = 1700 even / 3% faster (RESULTS.md): 6144 x 4096, M = 920 (896 rows + 24 in the small-M kernel) 71.6 /
    75.9 against 82.8 / 90.0; N = K = 8192, M = 880 (624 + 256) 156.1 / 166.7 against 180.5 / 194.9 (512 + 368);
    2048 x 8192, M = 3000 (2688 + 312) 143.6 / 148.0 against 165.5 / 177.9."""
    if fmt.bits == 8 and fmt.group_size == 32 and fmt.zero_point:
        return []
    out, w_tiles = [], -(-N // 192)
    for bm in (224, 208):
        cfg = three_consumers(bm, fmt)
        for t in range(max(1, (M - 384) // bm), (M - 1) // bm + 1):
            tiles, r = t * w_tiles, M - bm * t
            if 1 <= r <= 384 and fill_their_rounds(tiles, sms) and (N * K >= 8192 * 8192 or not 32 < r <= 256):
                out.append((bm * t, cfg, single_rounds(cfg, bm * t, N, sms, K)))
    return out


def _rest_rounds(r: int, N: int, K: int, sms: int, fmt: PackedFormat) -> float:
    """The time of a launch of the r rows of a split M (the kernel picked for them: the small-M kernel up to 32 rows,
    two 192-row tiles past 256) in rounds of the 2x1-cluster 256-row tiles over the same K: ``REST_ROUNDS`` up to 256
    rows, else ``single_rounds``, plus a launch's fixed cost."""
    other = pick_rs_config(r, N, K, sms, fmt)
    if r > 256:                                          # its pick's tiles (two of 192 rows where K allows)
        return single_rounds(other, r, N, sms) + LAUNCH_ROUNDS * 8192 / K
    rest = next(c for most, c in REST_ROUNDS if r <= most) - LAUNCH_ROUNDS
    rest = rest * N / 8192 + LAUNCH_ROUNDS * 8192 / K
    if r > 32 and other.splits == 1:          # wide N: the rest's pick may run whole tiles (at N = 28672, M = 64:
        rest = max(rest, single_rounds(other, r, N, sms))   # 224 2x1-cluster tiles of 256 rows, two rounds)
    return rest
