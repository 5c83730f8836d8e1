"""The user-facing GEMM: ``GemmOp`` (a configured operation, CUTLASS's device-level ``Gemm``) and
``gemm`` (one call on torch tensors that picks a configuration).

    D = act(alpha * A @ B + beta * C + bias)      A (..., M, K), B (..., K, N), C / D (..., M, N)

Operands may be row- or column-major (MN- or K-major; detected from strides) and batched through one
leading dimension (broadcast when one side has none). The tensor-op kernel (tensorop.py) needs 16-byte
aligned operands whose contiguous extent and strides are multiples of 8 elements; ``gemm`` copies an
operand that is not into a zero-padded aligned buffer (correct, slower) and says so in
``GemmOp.plan(...).notes``. fp32 inputs run on tensor cores as tf32 only when asked
(``allow_tf32=True``, or torch's ``torch.backends.cuda.matmul.allow_tf32``); otherwise the IEEE fp32
SIMT kernel runs (no batch, no bias or activation there: those fall back to torch for the epilogue).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from tilecraft.gemm.limits import CTA_SMEM
from tilecraft.gemm.sm90 import Sm90Config, fused_split_reduction, row_tiles, split_blocks
from tilecraft.gemm.tensorop import (
    ACTIVATIONS, ELEMENT_TYPES, EpilogueSpec, SplitReduce, TensorOpConfig, tensorop_gemm_kernel,
)

__all__ = ["GemmOp", "gemm", "clear_plans", "HEURISTIC_TABLE", "SM90_TABLE", "pick_config", "pick_sm90_config", "Plan"]

_TORCH_ELEMENTS = {"float16": "float16", "bfloat16": "bfloat16", "float32": "tf32",
                   "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
_FP8 = ("float8_e4m3fn", "float8_e5m2")
_K_MAJOR_ONLY = _FP8 + ("tf32",)      # wgmma has no transposed (MN-major) smem operands for these
#: tf32 on sm_90: an MN-major operand is copied K-major for the Hopper kernel when the other output
#: extent is at least this (the copy's bytes against the GEMM's work; H100: a copied B paid off at
#: M = 4096 and 8192, 276 and 332 TFLOP/s against 192 and 225 on the sm80 path, not at M = 1024)
_TF32_COPY_MIN = 2048
_MIN_ARCH = 80

#: The configurations the heuristic picks from (CI compiles each for sm_80 and sm_90a).
HEURISTIC_TABLE: dict[str, TensorOpConfig] = {c.name: c for c in (
    # big problems: 64x64 per warp, 8 warps; the lean loop and the smem-staged epilogue measured 486 vs
    # 454 TFLOP/s (fp16 4096^3, H100, same run; benchmarks/RESULTS.md)
    TensorOpConfig(128, 256, 32, 2, 4, stages=4, lean_loop=True, smem_epilogue=True),
    # mid-size problems: twice the CTAs (128x128x64, 3 stages, lean + staged: 461 vs 409 for 128x128x32x4)
    TensorOpConfig(128, 128, 64, 2, 2, stages=3, lean_loop=True, smem_epilogue=True),
    TensorOpConfig(128, 128, 64, 2, 2, stages=3),          # fewer barriers per k
    TensorOpConfig(64, 128, 32, 2, 2, stages=4),           # small problems: more CTAs
    TensorOpConfig(128, 128, 32, 2, 2, stages=4, splits=2),   # split-K (slices set per problem)
)}
#: The Hopper (sm_90a) configurations: TMA + wgmma, warp-specialized, persistent (tilecraft/gemm/sm90.py).
SM90_TABLE: dict[str, Sm90Config] = {c.name: c for c in (
    # big problems; 2x1 clusters share B (multicast), the epilogue stores through smem + TMA: fp16 711-751 /
    # 712-780 TFLOP/s at 4096^3 / 8192^3 against 668-688 / 537-727 for 4 stages, no cluster, register
    # epilogue (H100, two runs; benchmarks/RESULTS.md). 4 stages (225 KB with the epilogue's buffers) beat 3
    # with three rounds timed in turn (seventeenth session, bf16): 256x28672x4096 1.000x cuBLAS against 0.906x,
    # 4096x10240x8192 1.043x against 0.987x, 8192x4096x14336 1.034x against 0.999x
    Sm90Config(128, 256, 64, stages=4, consumers=2, cluster_m=2),
    # fewer tiles: twice the CTAs' worth. No cluster: a 2x1 cluster launch alone, without multicast or coupled
    # stages, costs this tile 15% more cycles at bf16 4096^3 (Nsight Compute, thirty-third session, H100: 331K
    # against 287K) and multicast wins back only a third of it. The unclustered CTAs' simultaneous reads of a
    # shared k-tile coalesce in L2's request coalescer (28.3M of 67.1M requested sectors), the clustered ones'
    # less (17.9M in 2x1, 12.8M in 1x2). Timed one round of tiles, x cuBLAS, without / in a 2x1 cluster:
    # 512x4096x4096 1.002 / 0.945, 1024x2048x4096 0.995 / 0.910, 2048x1024x4096 0.996 / 0.881, 1536x1024x8192
    # 1.243 / 1.093
    Sm90Config(128, 128, 64, stages=6, consumers=2),
    # few rows (decode-like M = 128..256): one consumer warpgroup on 64-row tiles, a deep pipeline; the
    # SMs fill without split-K (whose fp32 partials cost more than the GEMM at these sizes)
    Sm90Config(64, 128, 64, stages=8, consumers=1),
    Sm90Config(64, 64, 64, stages=8, consumers=1),
    # 192 columns (16-bit operands only): whole rounds where 128 and 256 leave a round part-filled. H100, bf16,
    # three rounds in turn (twenty-first session): 256x10240x8192 1.009x cuBLAS in one round of 108 tiles against
    # 0.882x for 128x128 with stream-K, 256x6144x4096 1.039x for 64x192 against 0.952x, 1024x6144x4096 1.021x
    # against 1.005x. No cluster: 2x1 clusters of them (each CTA multicasting half of B's k-rows) ran within the
    # machine's spread, 0.98-1.09x the unclustered tile.
    Sm90Config(128, 192, 64, stages=4, consumers=2),
    Sm90Config(64, 192, 64, stages=6, consumers=1),
)}
_TF32_TABLE = (TensorOpConfig(128, 128, 32, 2, 2, stages=3), TensorOpConfig(128, 256, 32, 2, 4, stages=3))


@dataclass
class Plan:
    """What one call runs: the kernel config, the element type, the grid, and notes (fallbacks taken)."""

    config: TensorOpConfig
    elem: str
    grid: tuple[int, int, int]
    notes: list[str] = field(default_factory=list)


def _device_facts(device: Any) -> tuple[int, tuple[int, int]]:
    """(SM count, compute capability) of a CUDA device, queried once per device: the GEMM entry points ask on
    every call, and torch's queries cost microseconds each."""
    import torch
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    facts = _DEVICE_FACTS.get(index)
    if facts is None:
        p = torch.cuda.get_device_properties(index)
        facts = _DEVICE_FACTS[index] = (p.multi_processor_count, (p.major, p.minor))
    return facts


_DEVICE_FACTS: dict[int, tuple[int, tuple[int, int]]] = {}


def _sm_count(device: Any) -> int:
    return _device_facts(device)[0]


def pick_config(M: int, N: int, K: int, L: int, elem: str, sms: int) -> TensorOpConfig:
    """The heuristic: the largest tile that still gives about one wave of CTAs; split-K when even the
    small tiles leave most SMs idle and K is long (each split keeps >= 8 k-tiles)."""
    if elem == "tf32":
        big = _TF32_TABLE[1]
        return big if math.ceil(M / 128) * math.ceil(N / 256) * L >= sms else _TF32_TABLE[0]
    big, mid, _, small, sk = HEURISTIC_TABLE.values()
    if math.ceil(M / big.blk_m) * math.ceil(N / big.blk_n) * L >= sms:
        return big
    tiles = math.ceil(M / mid.blk_m) * math.ceil(N / mid.blk_n) * L
    if tiles >= sms // 2:
        return mid
    k_tiles = math.ceil(K / sk.blk_k)
    splits = min(max(sms // tiles, 1), k_tiles // 8, 32)
    if splits >= 2:
        return replace(sk, splits=splits, split_mode="parallel")
    return small if math.ceil(M / small.blk_m) * math.ceil(N / small.blk_n) * L > tiles else mid


#: Per-SM speed of each SM90_TABLE tile (multiply-adds per ns: tile area x K over the time of one round of
#: tiles), as an H100 ran them at LLM shapes (seventh session, probe_llm.py --gpu-only: 128x256 3100-3500,
#: 128x128 2600-3300, 64x128 2200-2400, 64x64 1300-1600); the bigger tiles reuse more of each loaded byte and
#: keep two consumer warpgroups busy.
_SM90_RATE = {"128x256": 3300.0, "128x128": 3000.0, "64x128": 2300.0, "64x64": 1600.0, "128x192": 3200.0,
              "64x192": 2300.0}
_HBM_BYTES_PER_NS = 3000.0      # the operands' bytes stream at about 3 TB/s (H100 read floor; bench_stream.py)
_SPLIT_REDUCE_NS = 10000.0      # split-K's extra kernel and partial-tile traffic, beyond its bytes (probe_llm)
# split-K summed in the kernel by accumulator blocks (sm90.split_blocks): about 5 µs from the main loop's end to
# the CTA's end, counted here and in the bytes. At 22 small shapes (M 64-1024, N 256-2048, K 4096-65536;
# twenty-ninth session, H100, bf16) the picks this makes, 64x128 in 4-16 splits or 128x128 in 4, ran 0.83-1.15x
# cuBLAS against 0.72-0.99x for whole 64x64 tiles or 128x128 in 32 splits, the picks with 10 µs (one loss:
# 64x2048x4096 0.833x against 0.853x). fp8 too, with its own rates (_FP8_RATE).
_SPLIT_BLOCKS_NS = 3000.0
#: fp8 (promoted, lagged) tiles' per-SM speed over the 16-bit ones: e4m3 4096^3 on an H100 (thirtieth session)
#: ran 128x128 / 64x128 / 64x64 at 5320 / 3940 / 2770 multiply-adds per ns per SM, 1.73-1.77x _SM90_RATE. With
#: 16-bit rates and split-K's 10 µs the fp8 picks leaned to 64x64 whole or 128x128 in many splits; with these
#: and the block form's 3 µs, 64x128 in 4-16 splits at small shapes. Of the 23 picks this changes (M 64-1024, N
#: 256-2048, K 4096-65536, and 128x8192x28672), 20 ran faster (1.01-1.20x: 64x512x65536 21.5 against 25.4 µs,
#: 128x8192x28672 86.7 against 92.9), 2 the same and one slower (64x1024x4096 10.4 against 10.0).
_FP8_RATE = 1.75


def _sm90_estimate(c: Sm90Config, M: int, N: int, K: int, L: int, sms: int, elem_bytes: int,
                   rate: float | None = None) -> float:
    """Estimated ns of configuration c: its rounds of tiles (a persistent grid of one CTA per SM, in whole
    clusters) times a tile's time at the tile's speed (``_SM90_RATE``, or `rate`), against the operands'
    streaming time (a soft maximum of the two); split-K adds its fp32 partials (written and read) and the
    reduction."""
    S = c.splits
    tiles = math.ceil(M / c.blk_m) * math.ceil(N / c.blk_n) * L * S
    rounds = math.ceil(tiles / (sms // c.cluster_m * c.cluster_m))
    if rate is None:
        rate = _SM90_RATE[f"{c.blk_m}x{c.blk_n}"] * (_FP8_RATE if elem_bytes == 1 else 1.0)
    compute = rounds * c.blk_m * c.blk_n * math.ceil(K / S) / rate
    stream = elem_bytes * L * (M * K + K * N) / _HBM_BYTES_PER_NS
    blocks = elem_bytes in (1, 2) and split_blocks(c) and fused_split_reduction(c, tiles, sms)
    fixed = _SPLIT_BLOCKS_NS if blocks else _SPLIT_REDUCE_NS
    reduce = (8 * S * L * M * N / _HBM_BYTES_PER_NS + fixed) if S > 1 else 0.0
    return (compute ** 4 + stream ** 4) ** 0.25 + reduce          # the larger, softened: both cost near the floor


def pick_sm90_config(M: int, N: int, K: int, L: int, sms: int, elem_bytes: int = 2) -> Sm90Config:
    """The Hopper kernel's configuration for a shape: the SM90_TABLE tile (or the 128x128 or 64x128 tile split along
    K) with the least estimated time (``_sm90_estimate``: whole rounds of tiles over the SMs at each tile's
    measured speed, the operands' streaming time, split-K's reduction); on a tie the earlier (bigger) entry.
    Wave quantization decides most shapes: 256x57344 takes 128x128 (7 rounds of 896 tiles) over 128x256 (4
    rounds of 448, each twice the work), 256x10240 128x192 (one round of 108 tiles) over 128x128 (two of 160).
    The 192-column tiles are measured for 16-bit operands only."""
    big, mid, small, tiny, wide, wide_small = SM90_TABLE.values()
    wide_tiles = [wide, wide_small] if elem_bytes == 2 else []

    def fastest(configs: list[Sm90Config]) -> Sm90Config:
        return min(configs, key=lambda c: _sm90_estimate(c, M, N, K, L, sms, elem_bytes))

    candidates = [_unclustered_if_few_m_tiles(c, M) for c in (big, mid, small, tiny)] + wide_tiles
    k_tiles = math.ceil(K / mid.blk_k)
    mid_tiles = math.ceil(M / mid.blk_m) * math.ceil(N / mid.blk_n) * L
    # split-K (clusters measured slower there: 442 vs 532 TFLOP/s at 512x512x65536), >= 4 k-tiles per split; the
    # 64x128 tile in 2, 4, 8 or 16 splits where its tiles are few (twenty-eighth session, H100, x cuBLAS:
    # 256x512x65536 1.017x in 8 splits against 0.943x for 128x128 in 16, 128x512x65536 1.001x against 0.890x,
    # 256x256x65536 0.964x against 0.886x)
    candidates += [replace(mid, splits=S) for S in range(2, min(sms // mid_tiles, k_tiles // 4, 32) + 1)]
    small_tiles = math.ceil(M / small.blk_m) * math.ceil(N / small.blk_n) * L
    candidates += [replace(small, splits=S) for S in (2, 4, 8, 16) if S <= min(sms // small_tiles, k_tiles // 4)]
    if elem_bytes == 2 and _mid_unclustered_wins(mid, M, N, K, L, sms):
        return fastest([replace(big, cluster_m=1), mid] + wide_tiles[:1])
    return fastest(candidates)


def _mid_unclustered_wins(mid: Sm90Config, M: int, N: int, K: int, L: int, sms: int) -> bool:
    """Where the tiles without a cluster measured faster than the estimate's pick (sixteenth session, bf16,
    probe_llm.py --rounds 5, every contender timed in turn, H100): 1.5 to 8 rounds of 128x128 tiles,
    N <= 10240 and K <= 16384, where each CTA computes a few tiles. There the 2x1 cluster's coupled CTAs
    cost more than the multicast saves: 1024x6144x4096 1.007x cuBLAS against 0.970x in a cluster, 2048^3
    1.003x against 0.872x, 512x8192x4096 0.988x against 0.948x for 128x256. At more rounds, wider N or
    longer K the bigger clustered tiles' smaller operand traffic wins (4096x57344x8192: 0.86x against 1.01x
    for 128x256 in 2x1 clusters). The pingpong form of the tile ran within 1.5% of it.

    The estimate then chooses among the unclustered 128x256, 128x128 and 128x192 tiles. Where their rounds
    come to the same work, 128x256 runs the same cycles on two thirds of 128x128's L2 traffic and half its
    instructions (Nsight Compute at bf16 1024x8192x8192: 282.5K against 282.6K cycles, 0.97 against 1.49 GB
    through L2), and so at a higher clock wherever power holds the clock down. Thirty-second session, 5
    rounds in turn, x cuBLAS, 128x256 against the pick before: 1024x8192x8192 1.020 / 0.971,
    1024x4096x14336 1.006 / 0.959, 4096^3 0.998 / 0.966, 2048x4096x4096 1.006 / 0.970, 1536x8192x4096
    0.997 / 0.973 (128x192); faster at 13 of 15 shapes, slower at 2048^3 (0.998 / 1.015: one tile per CTA,
    K = 2048) and 1024x8192x2048 (0.997 / 1.000)."""
    units = math.ceil(M / mid.blk_m) * math.ceil(N / mid.blk_n) * L
    return 1.5 * sms <= units <= 8 * sms and N <= 10240 and K <= 16384


def _pick_sm90_by_tiles(M: int, N: int, K: int, L: int, sms: int) -> Sm90Config:
    """The tile-count rule the mixed-input Hopper kernel's tiling is built on (sm90_mixed, whose stages and
    rings were measured with it): 128x256 when its tiles fill the SMs, else the largest tile that fills 3/4
    of them, split along K when none does and K is long enough."""
    big, mid, small, tiny, *_ = SM90_TABLE.values()

    def tiles(c: Sm90Config) -> int:
        return math.ceil(M / c.blk_m) * math.ceil(N / c.blk_n) * L

    if tiles(big) >= sms:
        return _unclustered_if_few_m_tiles(big, M)
    for c in (mid, small, tiny):
        if tiles(c) >= (3 * sms) // 4:
            return _unclustered_if_few_m_tiles(c, M)
    k_tiles = math.ceil(K / mid.blk_k)
    splits = min(sms // tiles(mid), k_tiles // 4, 32)
    if splits < 2:
        return _unclustered_if_few_m_tiles(tiny if tiles(tiny) > tiles(mid) else mid, M)
    return replace(mid, splits=splits)


def _fp8_config(cfg: Sm90Config, promote: bool = False) -> Sm90Config:
    """The fp8 form of a 16-bit table entry: 128-element (128-byte) k-tiles, at least 4 stages, no
    cluster (fp8 8192^3: 1547 TFLOP/s for 128x256x128 s4 against 1418 for s3 with a 2x1 cluster, H100).
    With ``promote`` (sums in fp32 after every k-tile, see Sm90Config) the consumers' tiles narrow to 64
    sums per thread (128x256 becomes 128x128) and the stages grow into the smem that frees; the consumers
    take 240 registers (the producer 24), so that the promotion is lagged (``Sm90Config.lagged``). (128x192,
    96 sums, ran at 0.80-1.09x the speed of 128x128 at five shapes on an H100, faster only at 8192^3.)"""
    cfg = replace(cfg, blk_k=128, stages=max(cfg.stages, 4), cluster_m=1)
    if not promote:
        return cfg
    cfg = replace(cfg, pingpong=False, promote=promote)
    cfg = replace(cfg, blk_n=min(cfg.blk_n, 64 * 128 // cfg.rows), producer_regs=24, consumer_regs=240)
    while cfg.stages < 8 and replace(cfg, stages=cfg.stages + 1).smem_bytes(1) <= CTA_SMEM:
        cfg = replace(cfg, stages=cfg.stages + 1)
    return cfg


#: Waves of tiles (tiles per SM) from which tc.gemm's promoted fp8 128x128 tile takes its tiles from the queue, in
#: 1x2 clusters (``_fp8_long_walk``)
_QUEUE_WAVES = 80


def _whole_promoted_128(cfg: Sm90Config) -> bool:
    """Whether cfg is the promoted fp8 128x128 tile over whole tiles in single CTAs (what _fp8_config makes of the
    big table entries), the tile the one-wave and long-walk rules replace."""
    return (cfg.promote and cfg.blk_m == cfg.blk_n == 128 and cfg.splits == 1 and not cfg.stream_k
            and cfg.cluster == 1)


def _fp8_long_walk(cfg: Sm90Config, M: int, N: int, L: int, sms: int) -> Sm90Config:
    """The promoted fp8 128x128 tile over a walk of at least _QUEUE_WAVES tiles per SM: from the tile queue
    (``Sm90Config.dynamic``) in 1x2 clusters. Each CTA taking every grid-th tile, the CTAs drift apart over such
    a walk and read the operands' shared tiles from DRAM at different times: e4m3 8192x57344x8192 read 8.4-9.0
    GB from DRAM, _scaled_mm 3.5 (H100, Nsight Compute). From the queue in 1x2 clusters (A multicast) it read
    4.1 GB and ran 1.08x faster, as at 4096x57344x8192 and 8192x28672x4096 (14336 tiles, 109 per SM); at 39-54
    tiles per SM it ran 0.95-1.01x, and at 31 and fewer slower (8192^3 0.92x, 4096^3 0.89x)."""
    if not _whole_promoted_128(cfg):
        return cfg
    tiles = -(-M // 128) * -(-N // 128) * L
    return replace(cfg, cluster_n=2, dynamic=True) if tiles >= _QUEUE_WAVES * sms else cfg


def _fp8_one_wave(cfg: Sm90Config, M: int, N: int, L: int, sms: int) -> Sm90Config:
    """The promoted fp8 128x128 tile where it needs more than one wave and 128x192 tiles (96 sums per thread:
    not lagged, 4 stages) fit in one: 128x192. The estimate's tiles are the 16-bit table's, and _fp8_config narrows
    128x256 to 128x128 after it, so the estimate never weighs the narrowed tile's count. e4m3 256x10240x8192 (160
    tiles of 128x128, 108 of 128x192): 42.2 against 47.2 µs, 1.00x _scaled_mm against 0.90x; at seven such shapes
    (M 256-512) 1.09-1.21x faster than the 128x128 pick (H100)."""
    if not _whole_promoted_128(cfg):
        return cfg
    m_tiles = -(-M // 128) * L
    if m_tiles * -(-N // 128) > sms >= m_tiles * -(-N // 192):
        return Sm90Config(128, 192, 128, stages=4, raster=cfg.raster, promote=True)
    return cfg


def pick_fp8_config(M: int, N: int, K: int, L: int, sms: int, promote: bool = True) -> Sm90Config:
    """tc.gemm's configuration for an fp8 shape: the estimate's pick at fp8's rates, in its fp8 form
    (``_fp8_config``), promoted unless fast accumulation is asked for; 128x192 where that makes one wave of
    tiles, and over long walks from the queue."""
    cfg = _fp8_config(pick_sm90_config(M, N, K, L, sms, 1), promote=promote)
    return _fp8_long_walk(_fp8_one_wave(cfg, M, N, L, sms), M, N, L, sms)


def _tf32_config(cfg: Sm90Config) -> Sm90Config:
    """The tf32 form of a 16-bit table entry: 32-element (128-byte) k-tiles, so a stage holds the same bytes,
    at least 4 stages, no cluster (H100, 4096^3: 411 TFLOP/s for 128x256x32 s4 against 373-400 for s3 with
    a 2x1 cluster; torch's tf32 417)."""
    return replace(cfg, blk_k=32, stages=max(cfg.stages, 4), cluster_m=1)


def _k_major_for_tf32(A: Any, B: Any) -> tuple[Any, Any]:
    """A (..., M, K) and B (..., K, N) for the Hopper tf32 kernel, which reads K-major operands only: an
    MN-major operand is copied K-major (tilecraft's transpose for 2-D, torch's copy for batches) when the
    other output extent amortizes the copy (``_TF32_COPY_MIN``); otherwise it is left as it is, and the
    sm80 tensor-op kernel takes the call."""
    M, N = A.shape[-2], B.shape[-1]
    if A.stride(-1) != 1 and N >= _TF32_COPY_MIN:
        A = _transposed_copy(A.transpose(-1, -2))                         # (..., M, K) row-major
    if B.stride(-2) != 1 and M >= _TF32_COPY_MIN:
        B = _transposed_copy(B).transpose(-1, -2)                        # (..., K, N) with unit stride along K
    return A, B


def _transposed_copy(x: Any) -> Any:
    """x (..., R, C) float32 -> a contiguous (..., C, R) copy of its transpose (tilecraft's transpose for
    matrices its 32-bit offsets reach, torch's copy otherwise)."""
    if x.dim() == 2 and x.numel() < 2**31 and x.stride(0) * (x.shape[0] - 1) + x.stride(1) * (x.shape[1] - 1) < 2**31:
        from tilecraft.kernels.transpose import transpose
        return transpose(x)
    return x.transpose(-1, -2).contiguous()


def _unclustered_if_few_m_tiles(cfg: Sm90Config, M: int) -> Sm90Config:
    """A cluster pairs m-tiles: with one m-tile, or a few and an odd count, the pair's second CTA would
    idle on a tile past M, so those shapes run without clusters. Two m-tiles run without one too: the two
    CTAs that read each n-tile of B read it at about the same time, so L2 serves the second, and the
    cluster only couples them (thirty-second session, bf16, H100, 5 rounds in turn, x cuBLAS, without /
    in a 2x1 cluster: 256x8192x8192 1.007 / 0.972, 256x57344x8192 1.097 / 1.079, 256x28672x4096 1.023 /
    1.008 for 128x256; 256x8192x28672 0.974 / 0.987, and 1.001 / 0.985 in another run)."""
    tiles_m = math.ceil(M / cfg.blk_m)
    if cfg.cluster_m > 1 and (tiles_m <= 2 or (tiles_m % 2 and tiles_m < 8)):
        return replace(cfg, cluster_m=1)
    return cfg


def _is_sm90(device: Any) -> bool:
    return _device_facts(device)[1] == (9, 0)


def _tma_ready(x: Any) -> bool:
    """x (L, R, C) can be read through a TMA map: 16-byte aligned base, a unit stride among the last two
    modes, and the other strides multiples of 16 bytes (batch stride included when L > 1)."""
    s, e = x.stride(), x.element_size()
    if x.data_ptr() % 16 or not (s[2] == 1 or s[1] == 1):
        return False
    inner = 2 if s[2] == 1 else 1
    return all((s[i] * e) % 16 == 0 and s[i] > 0 for i in range(3) if i != inner and (i != 0 or x.shape[0] > 1))


def _batched(x: Any, name: str) -> Any:
    if x.dim() == 2:
        return x.unsqueeze(0)
    if x.dim() == 3:
        return x
    raise ValueError(f"{name} must be 2-D (M,K)/(K,N) or 3-D with a leading batch dimension, got {tuple(x.shape)}")


def _aligned(x: Any) -> bool:
    """x (L, R, C) is ready for the tensor-op kernel: 16-byte pointer, a unit-stride mode among the last
    two whose extent is a multiple of 8, and every other stride a multiple of 8."""
    s = x.stride()
    unit = [d for d in (1, 2) if s[d] == 1]
    if not unit or x.data_ptr() % 16:
        return False
    d = unit[-1]
    if x.shape[d] % 8:
        return False
    return all(s[i] % 8 == 0 for i in range(3) if i != d and x.shape[i] > 1)


def _pad_aligned(x: Any) -> Any:
    """A copy of x (L, R, C) with its contiguous mode (the last one, or the middle when that one has unit
    stride) padded with zeros to a multiple of 8, viewed at x's shape."""
    import torch
    L, R, C = x.shape
    if x.stride(1) == 1 and x.stride(2) != 1:
        buf = torch.zeros(L, C, -(-R // 8) * 8, dtype=x.dtype, device=x.device)
        buf[:, :, :R] = x.transpose(1, 2)
        return buf[:, :, :R].transpose(1, 2)
    buf = torch.zeros(L, R, -(-C // 8) * 8, dtype=x.dtype, device=x.device)
    buf[:, :, :C] = x
    return buf[:, :, :C]


@dataclass(frozen=True)
class GemmOp:
    """A configured GEMM (CUTLASS's device::Gemm): element types, tile/warps/stages/raster, sliced-K and
    split-K (``config``), epilogue (``activation``: none/relu/gelu/silu; ``bias``: "none", "n" (one value per
    column) or "m" (per row)). ``element`` is the operand type ("float16", "bfloat16", "tf32");
    ``out_dtype`` D's type ("float16", "bfloat16", "float32"; default: the operands'). Operand majors
    and batch come from the tensors at call time (each is its own specialization).

    Sliced-K (warps splitting K inside a CTA) is ``TensorOpConfig(warps_k=...)``: warps_k k-slices of
    warps_m x warps_n warps share each k-tile's MMA k-blocks and add their fp32 accumulators in shared
    memory before the epilogue (tensorop.py). It combines with split-K (both modes), which splits K across
    CTAs instead. The heuristic does not pick it: give it as ``config``; ``can_implement`` names what a
    tiling breaks (e.g. fewer than two k-blocks per k-slice, more than 1024 threads, too much smem).
    """

    element: str = "float16"
    out_dtype: str | None = None
    config: TensorOpConfig | Sm90Config = field(default_factory=TensorOpConfig)
    activation: str = "none"
    bias: str = "none"

    def can_implement(self, A: Any, B: Any, C: Any = None, bias: Any = None) -> tuple[bool, str]:
        """(True, "") when this op can run on these torch tensors as given, else (False, why). Checks
        device, arch, dtypes, ranks, shapes, the tile, and the tensor-op kernel's alignment (which
        ``gemm`` repairs by padding, this op does not)."""
        try:
            self._check(A, B, C, bias, need_aligned=True)
        except (TypeError, ValueError) as e:
            return False, str(e)
        return True, ""

    # -- checks
    def _check(self, A: Any, B: Any, C: Any, bias: Any, need_aligned: bool) -> tuple[Any, Any, Any, Any]:
        import torch
        if self.element in _FP8 and not isinstance(self.config, Sm90Config):
            raise ValueError(f"{self.element} operands run on the Hopper kernel only: give an Sm90Config with "
                             "blk_k=128")
        if self.element not in ELEMENT_TYPES and self.element not in _FP8:
            raise ValueError(f"element must be one of {sorted(ELEMENT_TYPES) + list(_FP8)}, got {self.element!r}")
        if self.element in _FP8 and self.out_dtype not in ("float16", "bfloat16", "float32"):
            raise ValueError(f"fp8 GEMMs write float16, bfloat16 or float32 (out_dtype), got {self.out_dtype!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.bias not in ("none", "n", "m"):
            raise ValueError(f"bias must be 'none', 'n' or 'm', got {self.bias!r}")
        self.config.validate(4 if self.element == "tf32" else 1 if self.element in _FP8 else 2)
        hopper = isinstance(self.config, Sm90Config)
        for name, x in (("A", A), ("B", B), ("C", C), ("bias", bias)):
            if x is not None and not isinstance(x, torch.Tensor):
                raise TypeError(f"{name} must be a torch tensor, got {type(x).__name__}")
        want = torch.float32 if self.element == "tf32" else getattr(torch, self.element)
        if A.dtype != want or B.dtype != want:
            raise TypeError(f"this op takes {want} operands, got A {A.dtype} and B {B.dtype}")
        self._check_device(A, B)
        A3, B3 = _batched(A, "A"), _batched(B, "B")
        if A3.shape[2] != B3.shape[1]:
            raise ValueError(f"inner dimensions differ: A {tuple(A.shape)} @ B {tuple(B.shape)}")
        L = max(A3.shape[0], B3.shape[0])
        if A3.shape[0] not in (1, L) or B3.shape[0] not in (1, L):
            raise ValueError(f"batch sizes {A3.shape[0]} and {B3.shape[0]} do not broadcast")
        M, N = A3.shape[1], B3.shape[2]
        if C is not None:
            if C.dtype not in (torch.float16, torch.bfloat16, torch.float32) or C.device != A.device:
                raise TypeError(f"C must be a float tensor on {A.device}, got {C.dtype} on {C.device}")
            if tuple(C.shape[-2:]) != (M, N) or C.dim() not in (2, 3) or (C.dim() == 3 and C.shape[0] not in (1, L)):
                raise ValueError(f"C has shape {tuple(C.shape)}, expected (M, N) = ({M}, {N}) or batched")
        if bias is not None:
            n = N if self.bias == "n" else M
            if self.bias == "none" or bias.dim() != 1 or bias.shape[0] != n or bias.device != A.device:
                raise ValueError(f"bias must be 1-D of length {n} on {A.device} with bias='n'/'m' in the op, "
                                 f"got {tuple(bias.shape)} (op bias={self.bias!r})")
        elif self.bias != "none":
            raise ValueError(f"the op adds a bias along {self.bias} but no bias tensor was given")
        if hopper:
            if not _is_sm90(A.device):
                cc = torch.cuda.get_device_capability(A.device)
                raise ValueError(f"the Hopper kernel (Sm90Config) needs sm_90 (wgmma, TMA), this GPU is sm_{cc[0]}{cc[1]}; "
                                 "use a TensorOpConfig")
            for name, x in (("A", A3), ("B", B3.transpose(1, 2))):
                if self.element in _K_MAJOR_ONLY and x.stride(2) != 1:
                    raise ValueError(f"{'fp8' if self.element in _FP8 else 'tf32'} wgmma reads K-major operands only: "
                                     f"{name} must have unit stride along K (A row-major, B column-major), got "
                                     f"strides {x.stride()}; tc.gemm copies such operands (or takes the sm80 path)")
                if not _tma_ready(x):
                    raise ValueError(f"{name} cannot be read by TMA (16-byte aligned base, a unit stride in the last two "
                                     f"modes, other strides multiples of 16 bytes): shape {tuple(x.shape)}, strides "
                                     f"{x.stride()}; tc.gemm takes the sm80 path for such operands")
            from tilecraft.gemm.sm90 import tma_problem
            why = tma_problem(A3, B3.transpose(1, 2), self.config, self.element)
            if why:
                raise ValueError(f"TMA cannot read the operands as tiled: {why}; tc.gemm takes the sm80 path for them")
        elif need_aligned:
            for name, x in (("A", A3), ("B", B3.transpose(1, 2))):
                if not _aligned(x):
                    raise ValueError(f"{name} is not aligned for the tensor-op kernel (16-byte pointer, a unit-stride "
                                     f"mode of a multiple of 8 elements, other strides multiples of 8): shape "
                                     f"{tuple(x.shape)}, strides {x.stride()}; tc.gemm pads such operands")
        return A3, B3, L, (M, N, A3.shape[2])

    @staticmethod
    def _check_device(A: Any, B: Any) -> None:
        """A and B on one CUDA device of compute capability 8.0 or newer."""
        if not A.is_cuda or A.device != B.device:
            raise ValueError(f"A and B must be CUDA tensors on one device, got {A.device} and {B.device}")
        cc = _device_facts(A.device)[1]
        if cc[0] * 10 + cc[1] < _MIN_ARCH:
            raise ValueError(f"the tensor-op GEMM needs sm_80 or newer (cp.async, bf16 mma.sync), this GPU is "
                             f"sm_{cc[0]}{cc[1]}")

    # -- running
    def plan(self, A: Any, B: Any) -> Plan:
        """The grid and notes of a call (after _check)."""
        A3, B3 = _batched(A, "A"), _batched(B, "B")
        L = max(A3.shape[0], B3.shape[0])
        M, N = A3.shape[1], B3.shape[2]
        cfg = self.config
        tiles = -(-M // cfg.blk_m) * -(-N // cfg.blk_n)
        if isinstance(cfg, Sm90Config):
            return Plan(cfg, self.element, (min(tiles * L, _sm_count(A.device)), 1, 1))
        return Plan(cfg, self.element, (tiles, 1, L * cfg.splits))

    def __call__(self, A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0, bias: Any = None,
                 out: Any = None, pad: bool = False) -> Any:
        """D = act(alpha * A @ B + beta * C + bias) as a new tensor (or into ``out``). With ``pad``, operands
        that are not aligned for the kernel are copied into aligned buffers first; without, they raise.

        The checks, the kernel and its launch shape are resolved once per signature (dtypes, shapes,
        strides, 16-byte alignment and devices of the tensors, whether alpha is 1 and beta 0); later calls
        of that signature only allocate D and launch."""
        return self._call(_signature(A), _signature(B), A, B, C, alpha, beta, bias, out, pad)

    def _call(self, sa: Any, sb: Any, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any,
              pad: bool) -> Any:
        return self._run_for(sa, sb, A, B, C, alpha, beta, bias, out, pad)(A, B, C, alpha, beta, bias, out)

    def _run_for(self, sa: Any, sb: Any, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any,
                 pad: bool) -> Any:
        """``run(A, B, C, alpha, beta, bias, out) -> D`` for calls of this signature (sa, sb: A's and B's)."""
        key = (self, sa, sb, _signature(C), _signature(bias), _signature(out), alpha == 1, beta == 0, pad)
        return _memo(_RUNS, key, lambda: self._prepare(A, B, C, alpha, beta, bias, out, pad))

    def _epilogue_spec(self, C: Any, alpha: float, beta: float, bias: Any) -> EpilogueSpec:
        """The kernels' epilogue for a call of this op with these C, alpha, beta and bias."""
        return EpilogueSpec(read_c=C is not None and beta != 0, unit_alpha=alpha == 1,
                            bias=self.bias if bias is not None else "none", activation=self.activation)

    def _prepare(self, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any, pad: bool) -> Any:
        """Check the call and return ``run(A, B, C, alpha, beta, bias, out) -> D`` for calls of its signature."""
        import numpy as np
        import torch

        A3, B3, L, (M, N, K) = self._check(A, B, C, bias, need_aligned=not pad)
        out_dt = getattr(torch, self.out_dtype) if self.out_dtype else (A.dtype if self.element != "tf32" else torch.float32)
        batched_out = A.dim() == 3 or B.dim() == 3
        d_shape = (L, M, N) if batched_out else (M, N)
        if out is not None and (tuple((out if out.dim() == 3 else out.unsqueeze(0)).shape) != (L, M, N)
                                or out.dtype != out_dt):
            raise ValueError(f"out must be {out_dt} of shape {d_shape}, got {out.dtype} {tuple(out.shape)}")
        dev = A.device
        read_c = C is not None and beta != 0
        ep = self._epilogue_spec(C, alpha, beta, bias)
        hopper = isinstance(self.config, Sm90Config)
        a_dim, b_dim = A.dim(), B.dim()

        def views(A: Any, B: Any, C: Any, out: Any) -> tuple[Any, Any, Any, Any, Any]:
            """D (new or out) and the kernel's views: A3 (L,M,K), Bt (L,N,K), C3 (L,M,N) or None, D3."""
            D = out if out is not None else torch.empty(d_shape, dtype=out_dt, device=dev)
            # (a 2-D operand of one batch takes one view op, not two: each costs about a microsecond of host time)
            A3 = A.unsqueeze(0) if a_dim == 2 and L == 1 else (A if a_dim == 3 else A.unsqueeze(0)).expand(L, M, K)
            Bt = (B.unsqueeze(0) if b_dim == 2 and L == 1 else (B if b_dim == 3 else B.unsqueeze(0)).expand(L, K, N)
                  ).transpose(1, 2)                                       # (L,N,K) as the kernel takes B
            C3 = (C if C.dim() == 3 else C.unsqueeze(0)).expand(L, M, N) if read_c else None
            return D, A3, Bt, C3, (D if D.dim() == 3 else D.unsqueeze(0))

        if M == 0 or N == 0:
            return lambda A, B, C, alpha, beta, bias, out: views(A, B, C, out)[0]
        if K == 0:  # no products: D = act(beta C + bias) (torch, not worth a kernel)
            def run_empty(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
                D, _, _, _, D3 = views(A, B, C, out)
                D3.copy_(_torch_epilogue(torch.zeros(L, M, N, device=dev), C, bias, alpha, beta, self))
                return D
            return run_empty
        D, A3, Bt, C3, D3 = views(A, B, C, out)
        # 2-D operands of one batch: the launches take them as they are (their kernels read the addresses only)
        flat = L == 1 and a_dim == 2 and b_dim == 2 and (not read_c or C.dim() == 2) and (out is None or out.dim() == 2)
        if hopper:
            from tilecraft.gemm import sm90
            copy_a = L > 1 and A3.stride(0) == 0   # a broadcast operand (batch stride 0) becomes a real batch
            copy_b = L > 1 and Bt.stride(0) == 0   # for its TMA map
            A3, Bt = (A3.contiguous() if copy_a else A3), (Bt.contiguous() if copy_b else Bt)
            launch = sm90.Launch(A3, Bt, C3, D3, bias, np.float32(alpha), np.float32(beta), self.config,
                                 self.element, ep, _sm_count(A.device), view=_flat_view if flat else None)
            if flat:                                                      # the kernel's views only where a map is made
                def run_flat(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
                    D = out if out is not None else torch.empty(d_shape, dtype=out_dt, device=dev)
                    launch(A, B, C if read_c else None, D, bias, alpha, beta)
                    return D
                return run_flat

            def run_sm90(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
                D, A3, Bt, C3, D3 = views(A, B, C, out)
                launch(A3.contiguous() if copy_a else A3, Bt.contiguous() if copy_b else Bt, C3, D3, bias,
                       np.float32(alpha), np.float32(beta))
                return D
            return run_sm90
        pad_a, pad_b = pad and not _aligned(A3), pad and not _aligned(Bt)

        def padded(v: tuple[Any, Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any, Any]:
            """views(...) with A3 / Bt copied into aligned buffers where this signature needs it."""
            D, A3, Bt, C3, D3 = v
            return D, (_pad_aligned(A3) if pad_a else A3), (_pad_aligned(Bt) if pad_b else Bt), C3, D3

        D, A3, Bt, C3, D3 = padded((D, A3, Bt, C3, D3))
        cfg = self.config
        grid = self.plan(A, B).grid
        full = (M % cfg.blk_m == 0 and N % cfg.blk_n == 0 and K % cfg.blk_k == 0)
        a, b = np.float32(alpha), np.float32(beta)
        f32, i32 = torch.float32, torch.int32
        if cfg.splits > 1 and cfg.split_mode == "parallel":
            W = torch.empty(cfg.splits, L, M, N, dtype=f32, device=dev)
            main = tensorop_gemm_kernel.bind(A3, Bt, None, D3, None, a, b, W, None, cfg, self.element, EpilogueSpec(),
                                             full, grid=grid, block=(cfg.threads,))
            reduce = SplitReduce(W, C3, D3, bias, a, b, ep)

            def run_parallel(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
                D, A3, Bt, C3, D3 = padded(views(A, B, C, out))
                W = reduce.workspace(D3)
                a, b = np.float32(alpha), np.float32(beta)
                main(A3, Bt, None, D3, None, a, b, W, None, cfg, self.element, EpilogueSpec(), full)
                reduce(W, C3, D3, bias, a, b)
                return D
            return run_parallel
        serial = cfg.splits > 1
        W = torch.empty(L, M, N, dtype=f32, device=dev) if serial else None
        flags = torch.zeros(L, grid[0], dtype=i32, device=dev) if serial else None
        main = tensorop_gemm_kernel.bind(A3, Bt, C3, D3, bias, a, b, W, flags, cfg, self.element, ep, full, grid=grid,
                                         block=(cfg.threads,))
        if flat and not (serial or pad_a or pad_b):
            def run_flat(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
                D = out if out is not None else torch.empty(d_shape, dtype=out_dt, device=dev)
                main(A, B, C if read_c else None, D, bias, alpha, beta, None, None, cfg, self.element, ep, full)
                return D
            return run_flat

        def run_sm80(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, out: Any) -> Any:
            D, A3, Bt, C3, D3 = padded(views(A, B, C, out))
            W = torch.empty(L, M, N, dtype=f32, device=dev) if serial else None
            flags = torch.zeros(L, grid[0], dtype=i32, device=dev) if serial else None
            main(A3, Bt, C3, D3, bias, np.float32(alpha), np.float32(beta), W, flags, cfg, self.element, ep, full)
            return D
        return run_sm80


# (op, operand signatures, alpha == 1, beta == 0, pad) -> the op's run for calls of that signature
_RUNS: dict[Any, Any] = {}


def _flat_view(i: int, x: Any) -> Any:
    """The Hopper kernel's view of a 2-D operand of one batch (sm90.Launch's ``view``): B (K, N) as Bt (1, N, K), the
    others (A, D, C) with a batch of one."""
    return x.unsqueeze(0).transpose(1, 2) if i == 1 else x.unsqueeze(0)


def _memo(cache: dict[Any, Any], key: Any, make: Any) -> Any:
    """cache[key], made by ``make()`` on a miss (the per-signature caches of tc.gemm, GemmOp and the
    mixed-input GEMM; one that reaches 512 entries starts over)."""
    try:
        return cache[key]
    except KeyError:
        pass
    value = make()
    if len(cache) >= 512:
        cache.clear()
    cache[key] = value
    return value


def _signature(x: Any) -> Any:
    """What a call's plan depends on in one operand: dtype, shape, strides, 16-byte alignment, device
    (None for None; a non-tensor is its type, and the checks then refuse it)."""
    if x is None:
        return None
    try:
        return (x.dtype, x.shape, x.stride(), x.data_ptr() % 16, x.device)
    except (AttributeError, TypeError):
        return (type(x), id(x))


def clear_plans() -> None:
    """Forget the picks and resolved launches of earlier calls (tc.gemm, GemmOp, the mixed-input GEMM, the GEMV, the
    SGEMM), so that the next call of each signature is prepared again (tests that watch which kernel a call picks)."""
    from tilecraft.gemm import gemv, mixed, simt_tuned, skinny
    _CALLS.clear()
    _RUNS.clear()
    _PICKS.clear()
    _SKINNY.clear()
    _SWAPPED.clear()
    mixed._RUNS.clear()
    mixed._CALLS.clear()
    skinny._RUNS.clear()
    gemv._PLANS.clear()
    simt_tuned._PLANS.clear()


def _torch_epilogue(acc: Any, C: Any, bias: Any, alpha: float, beta: float, op: GemmOp) -> Any:
    import torch
    x = alpha * acc
    if C is not None and beta != 0:
        x = x + beta * C.float()
    if bias is not None:
        x = x + (bias.float() if op.bias == "n" else bias.float()[:, None])
    return {"none": lambda v: v, "relu": torch.relu, "silu": torch.nn.functional.silu,
            "gelu": torch.nn.functional.gelu}[op.activation](x)


def gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0, bias: Any = None,
         activation: str | None = None, out_dtype: Any = None, bias_along: str = "n",
         config: TensorOpConfig | Sm90Config | None = None,
         allow_tf32: bool | None = None, scale_a: float = 1.0, scale_b: float = 1.0,
         fast_accum: bool | None = None) -> Any:
    """D = act(alpha * A @ B + beta * C + bias) on torch CUDA tensors, with a configuration picked for the
    device and shape (or ``config``). A (..., M, K), B (..., K, N) of float16 / bfloat16 (tensor cores, fp32
    accumulation), float32 (tf32 tensor cores when allowed, else the IEEE SIMT kernel), or fp8 e4m3 / e5m2
    on Hopper (per-tensor ``scale_a`` / ``scale_b``, output bfloat16 unless ``out_dtype`` says otherwise).
    fp8 sums leave the tensor cores' accumulators for fp32 registers every 128 elements of K, as
    ``torch._scaled_mm`` does by default; ``fast_accum=True`` keeps them in the tensor cores throughout, faster and
    less accurate over a long K (``_scaled_mm``'s ``use_fast_accum``). With a ``config``, its ``promote`` decides,
    and a ``fast_accum`` that contradicts it raises.
    On sm_90 16-bit, tf32 and fp8 operands run the TMA + wgmma kernel (tilecraft/gemm/sm90.py) where TMA can
    read them and the shape suits it, the sm80 tensor-op kernel otherwise (tf32 and fp8 wgmma read K-major
    operands only: fp8 operands are copied K-major, tf32 ones when the problem is large enough to amortize
    the copy). Returns a new tensor of ``out_dtype`` (default: A's dtype). Unaligned operands are padded (a
    copy), never refused. A batched A (L, M, K) whose batch and rows merge, times a B shared by the batch (2-D,
    or batch stride 0), runs as one GEMM of L * M rows; 2-D float16 / bfloat16 / fp8 calls of few rows on sm_90, and
    16-bit ones of rows that 64-row tiles divide badly where its tiles are estimated faster (``pick_ragged_swap``),
    run the Hopper kernel on the swapped problem D^T = B^T A^T (SWAP_ROWS, SWAP_FP8_ROWS, ``_swapped_run``) or else, up
    to skinny.MAX_ROWS rows, the skinny GEMM (skinny.py: the weight read in place) where it takes them
    (``_skinny``), with their epilogue; those of at most GEMV_16_ROWS rows that it leaves (fp32 ones of at most
    gemv.MAX_ROWS) run the GEMV (gemv.py), with their bias and activation. The pick, the checks and the launch are
    resolved once per call signature (dtypes, shapes, strides, 16-byte alignment and devices of the tensors, the
    options): repeated calls of a shape cost an allocation, TMA-map lookups and the launch (``clear_plans()`` forgets
    them)."""
    if type(B).__name__ == "PackedWeight":  # quantized weights (tilecraft.quant.pack): the mixed-input GEMM
        from tilecraft.gemm.mixed import mixed_gemm
        if C is not None or alpha != 1.0 or beta != 0.0 or activation or out_dtype is not None or config is not None:
            raise ValueError("tc.gemm(x, packed_weight) takes bias= only (y = x @ dequantize(W) + bias in x's dtype)")
        return mixed_gemm(A, B, bias)
    import torch

    if config is not None and not isinstance(config, (TensorOpConfig, Sm90Config)):
        raise TypeError(f"config must be a TensorOpConfig or an Sm90Config, got {type(config).__name__}")
    key = None
    if type(alpha) in _NUMBERS and type(beta) in _NUMBERS and type(scale_a) in _NUMBERS and type(scale_b) in _NUMBERS:
        sa = _signature(A)
        if allow_tf32 is None and type(sa) is tuple and sa[0] is torch.float32:   # TF32 by torch's flag of the moment
            allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
        key = (sa, _signature(B), _signature(C), _signature(bias), alpha == 1, beta == 0,
               alpha * scale_a * scale_b == 1, scale_a == 1 and scale_b == 1, activation, out_dtype,
               bias_along if bias is not None else None, config, allow_tf32, fast_accum)
        try:
            run = _CALLS.get(key)
        except TypeError:                                                 # an unhashable option: the checks say why
            run = key = None
        if run is not None:
            return run(A, B, C, alpha, beta, bias, scale_a, scale_b)
    run = _plan_call(A, B, C, alpha, beta, bias, activation, out_dtype, bias_along, config, allow_tf32, scale_a,
                     scale_b, fast_accum)
    if key is not None:
        _memo(_CALLS, key, lambda: run)
    return run(A, B, C, alpha, beta, bias, scale_a, scale_b)


#: the types of alpha, beta and the fp8 scales with which tc.gemm keys its decision for a call (``_CALLS``; others,
#: such as numpy or torch scalars, are decided again at each call)
_NUMBERS = (float, int)

# (operand signatures, the call's options) -> tc.gemm's run for calls of that signature (``_plan_call``)
_CALLS: dict[Any, Any] = {}


def _plan_call(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, activation: str | None, out_dtype: Any,
               bias_along: str, config: Any, allow_tf32: bool | None, scale_a: float, scale_b: float,
               fast_accum: bool | None) -> Any:
    """tc.gemm's decision for a call: ``run(A, B, C, alpha, beta, bias, scale_a, scale_b) -> D`` for calls of its
    signature (the operands' signatures, alpha == 1, beta == 0, the scales' product with alpha == 1, the options);
    raises for calls no path takes. The decision is the paths' own (each also keeps its plans per signature):
    folded batch, the swapped problem, the skinny GEMM, the GEMV, then the pick (a GemmOp, or the IEEE fp32
    kernels)."""
    import torch

    from tilecraft.gemm import skinny

    folded = _fold_batch(A, B, C, bias, bias_along)
    if folded is not None:                   # x (L, M, K) @ W (K, N): one GEMM of L * M rows
        A2, B2, C2, (L, M) = folded
        inner = _plan_call(A2, B2, C2, alpha, beta, bias, activation, out_dtype, bias_along, config, allow_tf32,
                           scale_a, scale_b, fast_accum)
        K, b_dim, c_fold = A.shape[2], B.dim(), C is not None

        def run_folded(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, scale_a: float,
                       scale_b: float) -> Any:
            D = inner(A.view(L * M, K), B if b_dim == 2 else B[0], C.view(L * M, C.shape[-1]) if c_fold else None,
                      alpha, beta, bias, scale_a, scale_b)
            return D.view(L, M, D.shape[-1])
        return run_folded
    if config is None and getattr(A, "dtype", None) in (torch.float16, torch.bfloat16) and A.dim() == 2:
        few = _swapped_run(A, B, C, alpha, beta, bias, bias_along, activation, out_dtype, scale_a, scale_b, fast_accum)
        if few is None and A.shape[0] <= skinny.MAX_ROWS:
            few = _skinny_run(A, B, C, alpha, beta, bias, bias_along, activation, out_dtype, scale_a, scale_b,
                              fast_accum)
        if few is not None:
            return lambda A, B, C, alpha, beta, bias, scale_a, scale_b: few(
                A, B, C if beta != 0 else None, float(alpha), float(beta), bias)
    if (config is None and str(getattr(A, "dtype", None)).replace("torch.", "") in _FP8 and A.dim() == 2
            and A.shape[0] <= SWAP_FP8_ROWS[1]):
        scaled = alpha * float(scale_a) * float(scale_b)                  # per-tensor scales, as below
        few8 = _swapped_run(A, B, C, scaled, beta, bias, bias_along, activation, out_dtype, 1.0, 1.0, fast_accum)
        if few8 is not None:
            return lambda A, B, C, alpha, beta, bias, scale_a, scale_b: few8(
                A, B, C if beta != 0 else None, alpha * float(scale_a) * float(scale_b), float(beta), bias)
    if config is None and _gemv_16(A, B, C, bias, bias_along, activation, out_dtype, scale_a, scale_b, fast_accum):
        return _gemv_run(A, B, C, beta, bias, activation, bias_along)
    sa, sb = _signature(A), _signature(B)
    tf32 = torch.backends.cuda.matmul.allow_tf32 if allow_tf32 is None else allow_tf32
    unit_scales = scale_a == 1.0 and scale_b == 1.0
    key = (sa, sb, out_dtype, activation, bias_along if bias is not None else None, config, tf32, unit_scales,
           fast_accum)
    pick = _memo(_PICKS, key, lambda: _pick(A, B, out_dtype, activation, bias_along if bias is not None else "none",
                                            config, tf32, unit_scales, fast_accum))
    if pick is None:
        return _ieee_fp32_run(A, B, C, alpha, beta, bias, activation, bias_along, out_dtype)
    op, prep = pick
    fp8 = op.element in _FP8
    A1, B1 = prep(A, B) if prep is not None else (A, B)
    run = op._run_for(_signature(A1), _signature(B1), A1, B1, C, alpha * float(scale_a) * float(scale_b) if fp8
                      else alpha, beta, bias, None, True)

    def run_op(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, scale_a: float, scale_b: float) -> Any:
        if prep is not None:
            A, B = prep(A, B)
        if fp8:
            alpha = alpha * float(scale_a) * float(scale_b)               # per-tensor scales
        return run(A, B, C, alpha, beta, bias, None)
    return run_op


# (operand signatures, the call's options, TF32 allowed) -> (GemmOp, operand copy or None), or None for IEEE fp32
_PICKS: dict[Any, Any] = {}


#: the most rows of 16-bit operands tc.gemm gives the GEMV (tilecraft.gemm.gemv) rather than the tensor cores. H100,
#: bf16, x cuBLAS (forty-first session, probe_sgemv.py --dtype bf16; B N- / K-contiguous), the GEMV / the Hopper
#: kernel's pick: 1x4096x4096 0.99 / 0.69 and 1.01 / 0.76, 1x8192x8192 0.99 / 0.87 and 0.93 / 0.85, 1x4096x14336
#: 1.04 / 0.94 and 0.97 / 0.94, 1x14336x4096 0.99 / 0.98 and 0.97 / 0.99, 2x4096x4096 (K) 0.98 / 0.76, 2x8192x8192
#: 0.98 / 0.83 and 0.86 / 0.82. From 3 rows it loses where the weight is large or wide: 4x8192x8192 (K) 0.76 / 0.81,
#: 4x14336x4096 0.82 / 1.08 and 0.77 / 1.00, 4x4096x14336 (K) 0.81 / 0.96 (it still won at 4x4096x4096, 0.89 / 0.70
#: and 0.84 / 0.75); at 8 and 16 rows 0.31-0.75 against 0.74-0.91: its FFMAs and 8 warps per SM leave too few loads
#: in flight
GEMV_16_ROWS = 2


def _gemv_16(A: Any, B: Any, C: Any, bias: Any, bias_along: str, activation: str | None, out_dtype: Any,
             scale_a: float, scale_b: float, fast_accum: bool | None) -> bool:
    """tc.gemm runs the GEMV for this call: one it takes (``_gemv_takes``) of at most GEMV_16_ROWS rows with float16 /
    bfloat16 operands of one dtype, no fp8 option, the output (and a C, if given) in A's dtype."""
    import torch

    if not _gemv_takes(A, B, bias, bias_along, activation, GEMV_16_ROWS):
        return False
    if A.dtype not in (torch.float16, torch.bfloat16) or B.dtype != A.dtype:
        return False
    if out_dtype not in (None, A.dtype) or scale_a != 1.0 or scale_b != 1.0 or fast_accum is not None:
        return False
    return C is None or (isinstance(C, torch.Tensor) and C.dtype == A.dtype
                         and tuple(C.shape) == (A.shape[0], B.shape[1]))


# the skinny GEMM's plan of a call signature (tc.gemm's options included), or None where it does not take the call
_SKINNY: dict[Any, Any] = {}


def _few_rows_key(A: Any, B: Any, Cr: Any, alpha: float, bias: Any, bias_along: str, activation: str | None,
                  out_dtype: Any, scale_a: float, scale_b: float, fast_accum: bool | None) -> tuple:
    """What the few-row paths' decision and plan (``_skinny_run``, ``_swapped_run``) depend on in a tc.gemm call: the
    operands' signatures (Cr: C where it is read), the epilogue's options, whether alpha is 1, the fp8 options."""
    return (_signature(A), _signature(B), _signature(Cr), _signature(bias), bias_along, activation, alpha != 1.0,
            out_dtype, scale_a == 1.0 and scale_b == 1.0, fast_accum)


def _skinny_run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, bias_along: str, activation: str | None,
                out_dtype: Any, scale_a: float, scale_b: float, fast_accum: bool | None) -> Any:
    """The skinny GEMM's run for this call where tc.gemm gives it the call (``_skinny``), else None; decided and
    prepared once per signature."""
    Cr = C if beta != 0 else None
    key = _few_rows_key(A, B, Cr, alpha, bias, bias_along, activation, out_dtype, scale_a, scale_b, fast_accum)

    def make() -> Any:
        if not _skinny(A, B, C, alpha, beta, bias, bias_along, activation, out_dtype, scale_a, scale_b, fast_accum):
            return None
        from tilecraft.gemm.skinny import _prepare
        return _prepare(A, B, Cr, alpha, bias, activation, bias_along, None, None, 0)
    return _memo(_SKINNY, key, make)


def _skinny(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, bias_along: str, activation: str | None,
            out_dtype: Any, scale_a: float, scale_b: float, fast_accum: bool | None) -> bool:
    """tc.gemm runs the skinny GEMM (tilecraft.gemm.skinny: 16-bit, few rows, B read in place) for this call: operands
    it takes (``skinny.takes``), the output in A's dtype, no fp8 option, an epilogue it has (C of A's dtype or
    float32, a bias of N or M values of A's dtype or float32, an activation of ACTIVATIONS; anything else goes to the
    path whose checks refuse it), except at most GEMV_16_ROWS rows of an N-contiguous B, where the GEMV ran faster
    (H100, bf16, x cuBLAS: 1x4096x4096 0.98 against 0.95; K-contiguous the skinny GEMM's 1.11 against 0.99)."""
    import torch

    if out_dtype not in (None, getattr(A, "dtype", None)) or scale_a != 1.0 or scale_b != 1.0 or fast_accum is not None:
        return False
    from tilecraft.gemm import skinny
    if activation not in (None,) + ACTIVATIONS or not skinny.takes(A, B):
        return False
    M, N = A.shape[0], B.shape[1]
    ok = (torch.float32, A.dtype)
    if C is not None and beta != 0 and not (isinstance(C, torch.Tensor) and tuple(C.shape) == (M, N)
                                            and C.dtype in ok and C.device == A.device):
        return False
    if bias is not None and not (isinstance(bias, torch.Tensor) and bias.dim() == 1 and bias.dtype in ok
                                 and bias.shape[0] == {"n": N, "m": M}.get(bias_along) and bias.device == A.device):
        return False
    return M > GEMV_16_ROWS or not skinny.skinny_format(A, B).n_major  # K-contiguous B from one row on


#: the rows of 16-bit operands tc.gemm runs on sm_90 as the swapped problem D^T = B^T A^T (``_swapped_run``), by B's
#: contiguous mode: the weight as wgmma's A operand, 64 of its N rows per tile, and the rows of x as wgmma's N (no
#: 64-row tile of x padded from a few rows). H100, bf16, x cuBLAS (forty-third session, probe_sgemv.py; B N- / K-
#: contiguous), the swapped 64x32 tile against the Hopper kernel's pick at 32 rows: 8192x8192 1.013 / 1.005 against
#: 0.986 / 0.975, 4096x4096 0.971 / 0.967 against 0.900 / 0.895, 4096x14336 (2 splits) 1.013 / 1.015 against 0.940 /
#: 0.957; at 48 rows (64x64) 0.96-1.06 against 0.95-1.05. Below 17 rows against the skinny GEMM: an N-contiguous B
#: from 3 rows (4 rows: 6144x4096 1.13 against 0.96, 4096x4096 0.98 against 0.93; 16 rows: 1.07 / 1.08 against 0.98 /
#: 0.93; the GEMV keeps 1-2 rows), a K-contiguous one from 9 (8 rows: 4096x4096 1.04 against 1.09, 4096x14336 1.02
#: against 1.04; 16 rows: 6144x4096 1.05 against 0.96, 8192x8192 1.01 against 0.98, 4096x4096 1.08 against 1.10).
SWAP_ROWS = {"N": (3, 48), "K": (9, 48)}
#: SWAP_ROWS where B^T has more 64-row tiles than the GPU has SMs (``wide``: 128-row tiles; not measured beyond 32
#: rows). x cuBLAS at 8 / 16 / 24 rows against what tc.gemm ran before (the Hopper kernel's pick; the skinny GEMM for a
#: K-contiguous B to 16 rows), B N-contiguous, H100: 10240x8192 1.07 / 1.07 / 1.10 against 0.93 / 0.96 / 1.00,
#: 28672x4096 0.99 / 0.98 / 0.98 against 0.96 / 0.95 / 0.97; H200: 1.04 / 1.05 / 1.06 against 0.83 / 0.87 / 0.94 and
#: 0.96 / 0.96 / 0.96 against 0.83 / 0.86 / 0.89. K-contiguous: 1.02-1.13 against 0.99-1.08 on the H100, 0.97-1.08
#: against 0.89-1.02 on the H200; from 2 rows (H100, 2 / 4 rows: 10240x8192 1.08 / 1.10 against 1.05 / 1.06,
#: 28672x4096 at 4 rows 1.06 against 1.05; 1 row 1.035 against 1.031, left to the skinny GEMM)
SWAP_WIDE_ROWS = {"N": (3, 32), "K": (2, 32)}
#: the rows of fp8 operands (B K-contiguous, as fp8 wgmma reads it) tc.gemm runs as the swapped problem, the same
#: tilings with 128-element k-tiles (and fp32 promotion unless fast_accum). H100, e4m3, bf16 D, x ``_scaled_mm``
#: (forty-third session, probe_fp8.py --swap), at 4 / 16 / 32 rows against tc.gemm's pick: 8192x8192 1.02 / 1.03 /
#: 1.03 against 0.86 / 0.91 / 1.00, 4096x4096 1.02 / 1.02 / 1.01 against 0.81 / 0.90 / 0.96, 28672x4096 (wide,
#: 128-row tiles) 1.02 / 1.02 / 1.04 against 0.99 / 0.99 / 1.02, 10240x8192 1.03 / 1.02 / 1.03 against 0.96 / 1.00 /
#: 1.01
SWAP_FP8_ROWS = (1, 32)

# the swapped problem's run of a call signature (tc.gemm's options included), or None where it does not take the call
_SWAPPED: dict[Any, Any] = {}


def pick_swap_config(M: int, N: int, K: int, sms: int, fp8: bool = False, promote: bool = True) -> Sm90Config:
    """The tiling of the swapped problem (N rows of B^T times M columns of A^T): 64 rows of B^T per tile, one
    consumer warpgroup, 8 stages, wgmma N the rows of x rounded up to a wrapper's N; D is stored straight from the
    registers (column-major for the swapped problem, so no TMA store). Where the 64-row tiles outnumber the SMs,
    128-row tiles of two consumer warpgroups and 6 stages (SWAP_WIDE_ROWS: 6 stages ran 0-5% faster than 8 there,
    and 64-row tiles 1-7% slower, on both the H100 and the H200). Two splits of K where the tiles fill at most
    half of the SMs, K is long and the rows of x at most 32 (4096x14336 at 16 / 32 rows: 1.03 / 1.01 against 1.01 /
    1.00 without, B N-contiguous; at K = 4096 they lost, 0.92 against 0.97; at 48 rows, 0.94 against 1.01). ``fp8``:
    the same tiles with 128-element k-tiles, ``promote`` (SWAP_FP8_ROWS; split-K not measured there)."""
    from tilecraft.atoms.sm90_codegen import HEADER_N
    bn = next(n for n in HEADER_N if n >= M)
    if -(-N // 64) > sms:                                                 # wide: 128-row tiles (SWAP_WIDE_ROWS)
        cfg = Sm90Config(blk_m=128, blk_n=bn, blk_k=64, stages=6, consumers=2, tma_store=False)
    else:
        splits = 2 if -(-N // 64) * 2 <= sms and K >= 8192 and bn <= 32 and not fp8 else 1
        cfg = Sm90Config(blk_m=64, blk_n=bn, blk_k=64, stages=8, consumers=1, splits=splits, tma_store=False)
    return replace(cfg, blk_k=128, promote=promote) if fp8 else cfg


#: The swapped problem's 128 x bn tiles (``pick_ragged_swap``), per-SM speed in _SM90_RATE's units, scaled by (bn /
#: 128)^1.5 below 128 columns. Forty-eighth session (H100, bf16, 3 rounds in turn): at 25 timings of 19 shapes (M =
#: 200..1100, the Llama-3 layers) the tiles of bn = 104..200 ran 1.00-1.21x (median 1.07) the time this rate
#: estimates, where the Hopper kernel's picks ran 1.03-1.27x (median 1.13) _sm90_estimate's; 2850 puts the two on
#: one footing.
_SWAP_RATE = 2850.0


def pick_ragged_swap(M: int, N: int, K: int, sms: int) -> Sm90Config | None:
    """The swapped problem's tiling for 16-bit rows of x that 64-row granules divide badly (the Hopper kernel's
    tiles are 64 or 128 rows of x; wgmma's N, which takes x's rows here, is any multiple of 8): 128 rows of B^T
    (two consumers) by bn = M / t rows of x rounded up to 8, for the t that the estimate finds fastest, D through
    TMA from M-major buffers (``store_mn``), as many stages as fit. None where the Hopper kernel's own pick is
    estimated as fast (``_sm90_estimate`` of ``pick_sm90_config``). E.g. M = 520 at N = K = 8192 splits into four
    136-row tiles, 256 tiles in two rounds, where 128x192 tiles took 215 (forty-eighth session, H100, bf16, B N- /
    K-contiguous, x cuBLAS: 0.96 / 0.93 against 0.70 / 0.69; 4096x14336 1.07 / 1.05 against 0.72 / 0.70; 28672x4096
    1.14 / 1.24 against 1.00 / 1.00; M = 800 at 8192x8192 (200 rows) 1.15 / 1.22 against 0.90 / 0.96)."""
    best, best_ns = None, _sm90_estimate(pick_sm90_config(M, N, K, 1, sms), M, N, K, 1, sms, 2)
    for t, bn in row_tiles(M, 96):
        cfg = Sm90Config(128, bn, 64, consumers=2, store_mn=True)
        stages = max((s for s in range(4, 9) if replace(cfg, stages=s).smem_bytes() <= CTA_SMEM), default=0)
        if not stages:                                                    # (bn > 208: not measured)
            continue
        cfg = replace(cfg, stages=stages)
        ns = _sm90_estimate(cfg, N, M, K, 1, sms, 2, rate=_SWAP_RATE * min(1.0, bn / 128) ** 1.5)
        if ns < best_ns:
            best, best_ns = cfg, ns
    return best


def _swapped_run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, bias_along: str,
                 activation: str | None, out_dtype: Any, scale_a: float, scale_b: float,
                 fast_accum: bool | None) -> Any:
    """``run(A, B, C, alpha, beta, bias) -> D`` that computes D (M, N) as the swapped problem D^T = B^T A^T where
    tc.gemm gives it the call (2-D float16 / bfloat16 operands on sm_90 of SWAP_ROWS rows for B's contiguous mode,
    SWAP_WIDE_ROWS where B has more 64-column blocks than the GPU has SMs, or fp8 ones of SWAP_FP8_ROWS with B
    K-contiguous and A row-major (per-tensor scales folded into alpha by the caller), that TMA reads as swapped; the
    epilogue mirrored: C^T, a bias along the other mode), else None; decided and prepared once per signature."""
    Cr = C if beta != 0 else None
    key = _few_rows_key(A, B, Cr, alpha, bias, bias_along, activation, out_dtype, scale_a, scale_b, fast_accum)

    def make() -> Any:
        import torch
        if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor) and A.dim() == 2 and B.dim() == 2
                and A.is_cuda and B.dtype == A.dtype and (B.stride(0) == 1 or B.stride(1) == 1) and _is_sm90(A.device)):
            return None
        elem = str(A.dtype).replace("torch.", "")
        fp8 = elem in _FP8
        if elem not in ("float16", "bfloat16") and not fp8:
            return None
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        sms = _sm_count(A.device)
        wide = -(-N // 64) > sms
        k_major = B.stride(0) == 1 and K > 1
        low, high = SWAP_FP8_ROWS if fp8 else (SWAP_WIDE_ROWS if wide else SWAP_ROWS)["K" if k_major else "N"]
        if fp8 and not (k_major and A.stride(1) == 1):
            return None                                                   # (fp8 wgmma reads K-major operands only)
        if low <= M <= high:
            cfg = pick_swap_config(M, N, K, sms, fp8, promote=not fast_accum)
        elif M > high and not fp8 and N > 0 and K > 0 and out_dtype in (None, torch.float16, torch.bfloat16):
            cfg = pick_ragged_swap(M, N, K, sms)
        else:
            cfg = None
        if cfg is None:
            return None
        if scale_a != 1.0 or scale_b != 1.0 or (fast_accum is not None and not fp8):
            return None
        if activation not in (None,) + ACTIVATIONS:
            return None
        out = (torch.bfloat16 if fp8 else A.dtype) if out_dtype is None else out_dtype
        if out not in (torch.float16, torch.bfloat16, torch.float32):
            return None
        if bias is not None and bias_along not in ("n", "m"):
            return None
        op = GemmOp(elem, str(out).replace("torch.", ""), cfg, activation or "none",
                    {"n": "m", "m": "n"}[bias_along] if bias is not None else "none")
        if N == 0 or K == 0 or not op.can_implement(B.t(), A.t(), None if Cr is None else Cr.t(), bias)[0]:
            return None                                                   # the other paths take (or refuse) it
        import numpy as np
        from tilecraft.gemm import sm90

        def view(i: int, x: Any) -> Any:
            """The swapped problem's view of operand i (sm90.Launch's ``view``): x (M, K) as the kernel's Bt (1, M, K);
            B (K, N), C and D (M, N) transposed, as B^T (1, N, K), C^T and D^T (1, N, M). One view op each (the host
            path of a decoding step), made only with a new TMA map: the launch passes the operands as they are."""
            return x.unsqueeze(0) if i == 1 else x.as_strided((1, x.shape[1], x.shape[0]),
                                                              (x.shape[1] * x.stride(1), x.stride(1), x.stride(0)))
        dev = A.device
        D = torch.empty(M, N, dtype=out, device=dev)
        launch = sm90.Launch(view(0, B), view(1, A), None if Cr is None else view(3, Cr), view(2, D), bias,
                             np.float32(alpha), np.float32(beta), op.config, op.element,
                             op._epilogue_spec(Cr, alpha, beta, bias), _sm_count(dev), view=view)

        def run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any) -> Any:
            D = torch.empty(M, N, dtype=out, device=dev)
            launch(B, A, C, D, bias, alpha, beta)                         # (views made only with a new TMA map)
            return D
        return run
    return _memo(_SWAPPED, key, make)


def _gemv_takes(A: Any, B: Any, bias: Any, bias_along: str, activation: str | None, rows: int) -> bool:
    """The GEMV's epilogue and shapes take this call: 2-D CUDA A and B, at most `rows` rows of A, an activation of
    ACTIVATIONS or none, and no bias or one it adds: 1-D float32 / float16 / bfloat16 on A's device, N values along
    "n" or M along "m" (anything else goes to the path whose checks refuse it)."""
    import torch

    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)) or A.dim() != 2 or B.dim() != 2:
        return False
    if not A.is_cuda or A.shape[0] > rows or activation not in (None,) + ACTIVATIONS:
        return False
    if bias is None:
        return True
    n = {"n": B.shape[1], "m": A.shape[0]}.get(bias_along)
    return (isinstance(bias, torch.Tensor) and bias.dim() == 1 and bias.shape[0] == n and bias.device == A.device
            and bias.dtype in (torch.float32, torch.float16, torch.bfloat16))


def _fold_batch(A: Any, B: Any, C: Any, bias: Any, bias_along: str) -> tuple[Any, Any, Any, tuple[int, int]] | None:
    """(A2, B2, C2, (L, M)) for a batched A (L, M, K) times one B shared by the batch ((K, N), or (L or 1, K, N)
    with batch stride 0 or extent 1) whose batch and row modes merge into one of L * M rows without a copy, as do
    C's (L, M, N) where C is given: the product is one GEMM of L * M rows (``x @ W`` with x (batch, tokens,
    features), as torch.matmul runs it). Else None: a bias along M (one per row of each batch), a C broadcast over
    the batch, or operands that do not merge keep the batched kernel."""
    import torch

    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)) or A.dim() != 3 or A.shape[0] < 2:
        return None
    if B.dim() == 3 and (B.shape[0] not in (1, A.shape[0]) or B.shape[0] != 1 and B.stride(0) != 0):
        return None                                                     # batch sizes that do not broadcast: refused
    if B.dim() not in (2, 3) or B.shape[-2] != A.shape[2]:              # by the batched path's checks
        return None
    if bias is not None and bias_along != "n" or A.numel() == 0:
        return None
    L, M, K = A.shape
    if C is not None and not (isinstance(C, torch.Tensor) and tuple(C.shape) == (L, M, B.shape[-1])):
        return None                                                     # the batched path's checks say why
    try:
        A2 = A.view(L * M, K)
        C2 = None if C is None else C.view(L * M, C.shape[-1])
    except RuntimeError:                                                # no view without a copy
        return None
    return A2, (B if B.dim() == 2 else B[0]), C2, (L, M)


def _fp8_k_major(A: Any, B: Any) -> tuple[Any, Any]:
    """fp8 operands as wgmma reads them: A (..., M, K) and B (..., K, N) both K-major (copies where not)."""
    A = A if A.stride(-1) == 1 else A.contiguous()
    B = B if B.stride(-2) == 1 else B.transpose(-1, -2).contiguous().transpose(-1, -2)
    return A, B


def _pick(A: Any, B: Any, out_dtype: Any, activation: str | None, bias: str, config: Any, tf32: bool,
          unit_scales: bool, fast_accum: bool | None = None) -> Any:
    """tc.gemm's choice for operands of this signature: (GemmOp, the operand copy it needs or None), or
    None for fp32 without TF32 (the IEEE kernel). Raises for operands no kernel takes."""
    import torch

    if not isinstance(A, torch.Tensor) or not isinstance(B, torch.Tensor):
        raise TypeError(f"tc.gemm takes torch tensors, got {type(A).__name__} and {type(B).__name__}")
    if A.dtype != B.dtype:
        raise TypeError(f"A and B must have one dtype, got {A.dtype} and {B.dtype}")
    name = str(A.dtype).replace("torch.", "")
    if name not in _TORCH_ELEMENTS:
        raise TypeError(f"tc.gemm supports float16, bfloat16, float32 and (on Hopper) float8_e4m3fn / float8_e5m2 "
                        f"operands, got {A.dtype}")
    elem = _TORCH_ELEMENTS[name]
    if fast_accum is not None and elem not in _FP8:
        raise ValueError(f"fast_accum is an option of fp8 GEMMs ({A.dtype} operands accumulate in fp32)")
    if fast_accum is not None and isinstance(config, Sm90Config) and config.promote == fast_accum:
        raise ValueError(f"fast_accum={fast_accum} contradicts the config's promote={config.promote}")
    if elem == "tf32" and not tf32:
        return None
    out = str(out_dtype).replace("torch.", "") if out_dtype is not None else None
    prep = None
    if elem in _FP8:
        if not (A.is_cuda and _is_sm90(A.device)):
            raise TypeError(f"{A.dtype} GEMMs need a Hopper GPU (fp8 wgmma); this is "
                            f"{'a CPU tensor' if not A.is_cuda else 'sm_%d%d' % torch.cuda.get_device_capability(A.device)}")
        prep = _fp8_k_major
        A, B = prep(A, B)
        out = out or "bfloat16"
        if config is None:
            A3, B3 = _batched(A, "A"), _batched(B, "B")
            config = pick_fp8_config(A3.shape[1], B3.shape[2], A3.shape[2], max(A3.shape[0], B3.shape[0]),
                                     _sm_count(A.device), promote=not fast_accum)
    elif not unit_scales:
        raise ValueError("scale_a / scale_b are per-tensor scales of fp8 operands; fold them into alpha otherwise")
    if config is None and A.is_cuda and _is_sm90(A.device):
        if elem == "tf32":
            prep = _k_major_for_tf32
            A, B = prep(A, B)
        A3, B3 = _batched(A, "A"), _batched(B, "B")
        if _tma_ready(A3) and _tma_ready(B3.transpose(1, 2)):
            from tilecraft.gemm.sm90 import ragged_mn, tma_problem
            L, M, K, N = max(A3.shape[0], B3.shape[0]), A3.shape[1], A3.shape[2], B3.shape[2]
            sms = _sm_count(A.device)
            config = pick_sm90_config(M, N, K, L, sms, 4 if elem == "tf32" else 2)
            config = _tf32_config(config) if elem == "tf32" else config
            if elem in ("float16", "bfloat16"):                     # operands whose TMA loads are slow: other tiles
                if B3.stride(2) == 1 and ragged_mn(N):
                    config = _multicast_b_blocks(config, M, N, L, sms)
                elif A3.stride(1) == 1 and ragged_mn(M):
                    config = _bigger_tiles_for_a_blocks(config, M, N, L, sms)
                elif _k_rows_off_sectors(A3) and _k_rows_off_sectors(B3.transpose(1, 2)):
                    config = _multicast_k_rows(config, M, N, L, sms)
            if tma_problem(A3, B3.transpose(1, 2), config, elem):
                config = _readable_sm90_config(config, A3, B3.transpose(1, 2), elem, sms)
    if config is None:
        A3, B3 = _batched(A, "A"), _batched(B, "B")
        config = pick_config(A3.shape[1], B3.shape[2], A3.shape[2], max(A3.shape[0], B3.shape[0]), elem,
                             _sm_count(A.device) if A.is_cuda else 132)
    return GemmOp(elem, out, config, activation or "none", bias), prep


def _multicast_b_blocks(config: Sm90Config, M: int, N: int, L: int, sms: int) -> Sm90Config:
    """The tiling for a row-major B whose N is no multiple of 64 (loaded by 64-element column blocks, rows off
    128-byte lines): a 2x1 cluster whose two CTAs share out B's blocks and multicast them, 128x256 where its tiles
    fill 3/4 of the SMs, else 128x128 where its tiles reach a quarter of the SMs; with two or three m-tiles
    128x256 unclustered; the pick itself where it splits K, has a single m-tile, fewer 128x128 tiles, or N is
    narrower than 128x256's tile (a wider tile would load blocks of zeros). Rows off 32-byte sectors too (N = 8 mod
    16: 1000, 5000, 11000) load slowly, and the multicast halves their loads; on sectors (N = 2000) the bigger tile
    is what pays (3000x2000x1000: 128x256 0.83 with or without the cluster). H100 (thirty-ninth session, probe_llm.py,
    x cuBLAS; unclustered 128x256 / 128x128, then 2x1 128x256 / 128x128): 4000x1000x4000 0.60 / 0.50, **0.96** /
    0.68; 2000x3000x4000 0.65 / 0.57, **0.87** / 0.75; 1000x5000x2000 0.60 / 0.55, **0.71** / 0.70; 8000x3000x1000
    0.72 / 0.55, **0.97** / 0.70; 4096x11000x4096 0.75 / 0.64, **1.08** / 0.93; 3000x2000x1000 0.83 / 0.62,
    **0.83** / 0.67; 2048x1000x4096 (64 tiles of 128x256) 0.68 / 0.67, 0.65 / **0.90**; 1000³ (32) 0.68 / 0.88,
    0.65 / **0.86**. Thin M (run 18, probe_ragged_mn.py): 333x7000x3000 **0.52** / 0.43 (128x256 / 2x1 128x128),
    300x5000x4096 **0.74** / 0.54; 512x1000x1000 (32 tiles of 128x128) 64x128 **0.86** against 0.74 in 2x1."""
    big, mid = list(SM90_TABLE.values())[:2]
    m_tiles = math.ceil(M / big.blk_m)
    if config.splits > 1 or config.stream_k or m_tiles < 2 or N < big.blk_n:
        return config
    if 4 * m_tiles * math.ceil(N / big.blk_n) * L >= 3 * sms:
        return replace(big, cluster_m=2)
    if m_tiles <= 3:                                # 2x1 clusters would leave one of three m-tiles alone
        return replace(big, cluster_m=1)
    if 4 * m_tiles * math.ceil(N / mid.blk_n) * L >= sms:
        return replace(mid, cluster_m=2)
    return config


def _bigger_tiles_for_a_blocks(config: Sm90Config, M: int, N: int, L: int, sms: int) -> Sm90Config:
    """The tiling for a column-major A whose M is no multiple of 64 (loaded by 64-element column blocks, rows off
    32-byte sectors: a weight gradient X^T @ dY of 1000 features): 128x256 where the pick is the unclustered
    128x128 and 128x256's tiles reach half of the SMs (fewer loads per FLOP); otherwise the pick, whose 128x256
    and 128x192 tiles ran at parity. A's multicast does not pay here. H100, x cuBLAS (thirty-ninth session,
    probe_ragged_mn.py --a-major M): 1000x14336x4096 0.60 (128x128) / 1.00 (128x256; 1x2 0.97, 2x1 0.99); kept:
    1000x4096x4096 1.01, 3000x4096x2048 1.03 (128x256; 1x2 0.89, 0.92), 2000x3072x4000 1.03 (128x192),
    5000x8192x4096 0.96 (2x1 128x256), 1000x1024x1000 0.94 (64x128)."""
    big, mid = list(SM90_TABLE.values())[:2]
    if config != mid or N < big.blk_n or 2 * math.ceil(M / big.blk_m) * math.ceil(N / big.blk_n) * L < sms:
        return config
    return replace(big, cluster_m=1)


def _k_rows_off_sectors(x: Any) -> bool:
    """x (L, MN, K) is K-major with rows that start off 32-byte sectors (for 16-bit elements K = 8 mod 16: 1000,
    3000; TMA takes 16-byte aligned rows): each 128-byte box row then touches five sectors, not four."""
    return x.stride(2) == 1 and x.shape[1] > 1 and (x.stride(1) * x.element_size()) % 32 != 0


def _multicast_k_rows(config: Sm90Config, M: int, N: int, L: int, sms: int) -> Sm90Config:
    """The tiling where both operands are K-major with rows off 32-byte sectors (``_k_rows_off_sectors``; K = 1000:
    an nn.Linear weight of 1000 inputs), whose TMA boxes load slowly: 128x256 in a 2x1 cluster (fewer loads per
    FLOP, B multicast) where its tiles reach half of the SMs (and N its width), else 128x128 for a 64x128 pick;
    otherwise, and where the pick splits K, the pick. Rows off 128-byte lines but on 32-byte sectors cost
    nothing: 2048x2048x784 (1568-byte rows) ran 0.98x cuBLAS, 4096x4096x2000 1.03, 4096x4096x4000 0.97 with the
    picks. H100, x cuBLAS (thirty-ninth session, probe_ragged_mn.py --b-major K; the former pick / this):
    4096x4096x3000 0.60 / 0.86, 1000x4096x3000 0.63 / 0.83, 4096x1000x1000 0.70 / 0.84, 2000x2000x1000 0.70 /
    0.84, 2048x2048x1000 0.68 / 0.84, 4096x4096x1000 0.64 / 0.90, 2048x8192x1000 0.65 / 0.90, 333x7000x3000 0.57
    / 0.59, 1000³ 0.77 (64x128) / 0.89 (128x128; 2x1 128x256 0.63); kept: 8192x8192x1000 and x3000,
    4096x14336x1000 (2x1 128x256 already: 0.91-1.05), 512x1000x1000 (64x64, 0.80). A 2x2 cluster of 128x128 ran
    0.73-0.97, best only at 3000x3000x1000 (0.90 against 0.81)."""
    big, mid = list(SM90_TABLE.values())[:2]
    if config.splits > 1 or config.stream_k:
        return config
    m_tiles = math.ceil(M / big.blk_m)
    if m_tiles >= 2 and N >= big.blk_n and 2 * m_tiles * math.ceil(N / big.blk_n) * L >= sms:
        return replace(big, cluster_m=2)
    if config.blk_m == 64 and config.blk_n == mid.blk_n:
        return mid
    return config


def _readable_sm90_config(config: Sm90Config, A3: Any, Bt: Any, elem: str, sms: int) -> Sm90Config | None:
    """Where TMA cannot read the operands tiled as the pick says: the fastest (by ``_sm90_estimate``) 16-bit
    table tile without a cluster that it can read, or None (the sm80 kernel). This is the case of an MN-major
    operand whose MN extent is no multiple of 64 (a column-major A of M = 1000; a row-major B of N = 1000 takes
    ``_multicast_b_blocks`` first): it loads by 64-element column blocks, which a 192-element tile's interleaved
    blocks do not form, nor a 64-element tile's single block split among a multicast's CTAs. Other problems
    (alignment, strides) are the operands', and no tile reads them."""
    from tilecraft.gemm.sm90 import tma_problem

    if elem not in ("float16", "bfloat16"):
        return None
    L, M, K = A3.shape
    N = Bt.shape[1]
    flat = [replace(c, cluster_m=1, cluster_n=1) for c in (config, *SM90_TABLE.values())]
    for c in sorted(dict.fromkeys(flat), key=lambda c: _sm90_estimate(c, M, N, K, L, sms, 2)):
        if not tma_problem(A3, Bt, c, elem):
            return c
    return None


def _gemv_run(A: Any, B: Any, C: Any, beta: float, bias: Any, activation: str | None, bias_along: str) -> Any:
    """tc.gemm's run of the GEMV for calls of this signature: sgemv's plan (gemv.gemv_plan), resolved once, into a new
    D: the GEMV writes C in place, so C is copied where it is read (beta not 0) and left out otherwise."""
    from tilecraft.gemm.gemv import gemv_plan

    read_c = C is not None and beta != 0
    plan = gemv_plan(A, B, C.clone() if read_c else None, None, None, bias, activation, bias_along)

    def run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, scale_a: float, scale_b: float) -> Any:
        return plan.run(A, B, C.clone() if read_c else None, alpha, beta if read_c else 0.0, bias)
    return run


def _ieee_fp32_run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, activation: str | None,
                   bias_along: str, out_dtype: Any) -> Any:
    """tc.gemm's run for IEEE fp32 calls of this signature, resolved once: the GEMV for 2-D operands of at most
    gemv.MAX_ROWS rows (with its bias and activation), the tuned SIMT SGEMM's plan (simt_tuned.sgemm_plan) for other
    2-D ones, else torch's product and epilogue (batch, the SGEMM's epilogue extras); cast where out_dtype says."""
    from tilecraft.gemm.gemv import MAX_ROWS
    from tilecraft.gemm.simt_tuned import sgemm_plan

    read_c = C is not None and beta != 0
    if _gemv_takes(A, B, bias, bias_along, activation, MAX_ROWS):
        run = _gemv_run(A, B, C, beta, bias, activation, bias_along)
    elif A.dim() == 2 and B.dim() == 2 and A.is_cuda and bias is None and activation in (None, "none"):
        plan = sgemm_plan(A, B, C.clone() if read_c else None, alpha, beta if read_c else 0.0)

        def run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, scale_a: float, scale_b: float) -> Any:
            return plan.run(A, B, C.clone() if read_c else None, alpha, beta if read_c else 0.0)
    else:
        def run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, scale_a: float, scale_b: float) -> Any:
            return _torch_fp32(A, B, C, alpha, beta, bias, activation, bias_along)
    if out_dtype is None:
        return run
    return lambda *args: run(*args).to(out_dtype)


def _torch_fp32(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, activation: str | None,
                bias_along: str) -> Any:
    """IEEE fp32 through torch (batched operands, or the SGEMM's epilogue extras): its product, then the epilogue."""
    import torch

    op = GemmOp("tf32", None, TensorOpConfig(), activation or "none", bias_along if bias is not None else "none")
    return _torch_epilogue(torch.matmul(A, B), C, bias, alpha, beta, op)
