#!/usr/bin/env python
"""Tilings of the small-M mixed-input kernel at the LLM layer shapes whose pick leaves a wave part-empty.

    PYTHONPATH=$PWD python3 benchmarks/probe_small_m.py [--rounds 3] [--cases 70b-qkv-8,...]

Each case (a Llama-3 layer weight, M, W4A16 g128 or W8A16 per channel, bf16) times tc.gemm's pick and the
candidate tilings beside it as a decoding stream does (``--calls`` back-to-back programmatic dependent launches
per sample, bench_decode.py's ``stream+pdl``), every contender in turn ``--rounds`` times, rotating weight
copies past L2; each is checked against float64 first. The grid column is row blocks x splits of K (the
launch's choice unless the tiling fixes them) and the CTAs per SM that makes.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_mixed as BM  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
from bench_decode import _err, _us  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import in_turn  # noqa: E402
from tilecraft.gemm.mixed import MixedConfig, MixedGemm, launch_grid, most_stages, pick_mixed_config  # noqa: E402

C = MixedConfig


#: (name, K, N): the eight weights the cases below sweep (Llama-3-8B / 70B layers and N = K = 8192)
LAYERS = (("square", 8192, 8192), ("8b-qkv", 4096, 6144), ("8b-o", 4096, 4096), ("8b-down", 14336, 4096),
          ("8b-gate_up", 4096, 28672), ("70b-qkv", 8192, 10240), ("70b-down", 28672, 8192),
          ("70b-gate_up", 8192, 57344))


def _layers(*left_out: str) -> tuple[tuple[str, int, int], ...]:
    """LAYERS without the named ones."""
    return tuple(layer for layer in LAYERS if layer[0] not in left_out)


def _pick(K: int, N: int, M: int, bits: int = 8, group: int | None = None, zp: bool = False) -> MixedConfig:
    """tc.gemm's pick for a bf16 weight of `bits` (per channel unless `group`) at (K, N, M)."""
    return pick_mixed_config(Q.PackedFormat(bits, group, zp, "bfloat16"), M, K, N)


def _c64(K: int, N: int, M: int) -> list[MixedConfig]:
    """W8A16 per-channel's pick at (K, N, M) with chunks of 64, in its stages, four and six."""
    pick = _pick(K, N, M)
    return list(dict.fromkeys([replace(pick, chunk=64, stages=p) for p in (pick.stages, 4, 6)]))


def _usual(bits: int) -> Q.PackedFormat:
    """The bf16 format the cases time by default: W4A16 g128, W8A16 per channel."""
    return Q.PackedFormat(bits, 128 if bits == 4 else None, False, "bfloat16")


def _others(pick: MixedConfig, cands: list[MixedConfig]) -> list[MixedConfig]:
    """cands without repeats and without the pick."""
    return [c for c in dict.fromkeys(cands) if c != pick]


def _one_wave(cfg: MixedConfig, fmt: Q.PackedFormat, M: int, N: int, sms: int = 132) -> MixedConfig | None:
    """cfg in the most stages, up to four, that keep its row blocks in one wave on `sms` SMs (four where no count does),
    as pick_mixed_config's shared-memory tilings take them (``most_stages``)."""
    return most_stages(cfg, fmt, M, -(-(N // (16 * cfg.tiles)) // sms))


def _tiles4(K: int, N: int, M: int, bits: int) -> list[MixedConfig]:
    """Around four tiles a CTA (x read from L2 once per four tiles of weights) at (K, N, M), bf16, W4A16 g128 or W8A16
    per channel: the pick's two tiles in four stages, four tiles of 4 warps in the stages that keep one wave, four of
    8 warps in two stages."""
    fmt = _usual(bits)
    pick = pick_mixed_config(fmt, M, K, N)
    chunk = 128 if bits == 4 else 64
    return _others(pick, [replace(pick, stages=4), _one_wave(C(4, 4, chunk, stages=4, async_copy=True), fmt, M, N),
                          C(8, 4, chunk, stages=2, async_copy=True)])


def _two_tiles(K: int, N: int, M: int, bits: int, group: int | None, zp: bool) -> list[MixedConfig]:
    """The bf16 pick at (K, N, M) as it was before four tiles replaced two in two stages (fifty-sixth session), where
    it changed."""
    pick = _pick(K, N, M, bits, group, zp)
    return [replace(pick, tiles=2, stages=2)] if pick.tiles == 4 and pick.warps == 4 else []


def _more_tiles(K: int, N: int, M: int, bits: int) -> list[MixedConfig]:
    """W4A16 g128 / W8A16 per channel's bf16 pick at (K, N, M) in three and four stages, and in two and four tiles,
    each in the stages that keep one wave by shared memory."""
    fmt = _usual(bits)
    pick = pick_mixed_config(fmt, M, K, N)
    return _others(pick, [replace(pick, stages=p) for p in (3, 4)]
                   + [_one_wave(replace(pick, tiles=t), fmt, M, N) for t in (2, 4)])


def _one_wave_int4(K: int, N: int, M: int, group: int | None, zp: bool = False) -> list[MixedConfig]:
    """int4's bf16 pick at (K, N, M <= 4) as it was before one tile kept four stages (fifty-sixth session): the stages
    that keep one wave by shared memory, where they are fewer."""
    fmt = Q.PackedFormat(4, group, zp, "bfloat16")
    pick = pick_mixed_config(fmt, M, K, N)
    return _others(pick, [_one_wave(pick, fmt, M, N)])


def _other_deal(K: int, N: int, M: int) -> MixedConfig:
    """W8A16 per-channel's pick at (K, N, M) with its chunks dealt the other way: runs for round-robin and back."""
    pick = _pick(K, N, M)
    return replace(pick, runs=not pick.runs)


def _before_c64(K: int, N: int, M: int, group: int | None = None, zp: bool = False) -> list[MixedConfig]:
    """int8's pick at (K, N, M) as it was before chunks of 64 (``INT8_CHUNK64_FROM_M``), and the pick in four stages
    where it has fewer."""
    import tilecraft.gemm.mixed as MX
    pick, saved = _pick(K, N, M, 8, group, zp), MX.INT8_CHUNK64_FROM_M
    MX.INT8_CHUNK64_FROM_M = 1 << 30
    try:
        old = _pick(K, N, M, 8, group, zp)
    finally:
        MX.INT8_CHUNK64_FROM_M = saved
    return [old] + ([replace(pick, stages=4)] if pick.stages < 4 else [])


T1 = C(4, 1, 128, stages=4, async_copy=True)
T2 = C(4, 2, 128, stages=4, async_copy=True)
WIDE = C(8, 4, 128, stages=2, async_copy=True)
W8T2 = C(8, 2, 128, stages=2, async_copy=True)
XT1 = C(4, 1, 128, stages=4, async_copy=True, x_regs=True)
XT2 = C(4, 2, 128, stages=4, async_copy=True, x_regs=True)
XW8T2 = C(8, 2, 128, stages=2, async_copy=True, x_regs=True)
Q8_16 = [C(8, 4, 64, stages=p, async_copy=True) for p in (2, 3)] + [C(8, 4, 64, stages=4, async_copy=True, x_regs=True)]
#: name -> (K, N, M, bits, group, zero point, candidates); the first runs of this probe (thirty-sixth session)
#: led to pick_mixed_config's wave balance (``wave_fill``): the "old" tilings are the picks before it
CASES = {
    "70b-qkv-8-w4": (8192, 10240, 8, 4, 128, False, [T1, C(4, 1, 128, stages=3, async_copy=True),
                                                     C(4, 2, 128, stages=3, async_copy=True)]),
    "70b-qkv-16-w4": (8192, 10240, 16, 4, 128, False, [WIDE, T2, T1, C(8, 4, 128, stages=2, async_copy=True,
                                                                        splits=2), C(4, 2, 128, stages=3)]),
    "8b-qkv-16-w4": (4096, 6144, 16, 4, 128, False, [W8T2, T2, T1, C(8, 4, 128, stages=2, async_copy=True, splits=2)]),
    "8b-gate_up-16-w4": (4096, 28672, 16, 4, 128, False, [W8T2, T2, C(4, 2, 128, stages=3)]),
    "8b-qkv-8-w8": (4096, 6144, 8, 8, None, False, [T2, C(4, 1, 128, stages=3, async_copy=True)]),
    "8b-qkv-16-w8": (4096, 6144, 16, 8, None, False, [C(4, 2, 128, stages=3, async_copy=True, runs=True),
                                                      C(4, 1, 128, stages=3, async_copy=True, runs=True)]),
    "70b-qkv-8-w8": (8192, 10240, 8, 8, None, False, [T1, C(4, 1, 128, stages=3, async_copy=True)]),
    "square-8-w4": (8192, 8192, 8, 4, 128, False, [T1]),                  # a balanced control
    # the tilings the wave balance changes, against the old picks
    "70b-qkv-16-w4zp": (8192, 10240, 16, 4, 128, True, [WIDE]),
    "70b-qkv-12-w4g32": (8192, 10240, 12, 4, 32, False, [C(8, 4, 64, stages=2, async_copy=True)]),
    "8b-qkv-8-w4zp": (4096, 6144, 8, 4, 128, True, [T2]),
    "8b-qkv-4-w8": (4096, 6144, 4, 8, None, False, [T1]),                 # unchanged: a control
    "x-16-w4": (4096, 12288, 16, 4, 128, False, [WIDE]),
    "y-16-w4": (3584, 18944, 16, 4, 128, False, [WIDE]),
    "8b-qkv-6-w8pc": (4096, 6144, 6, 8, None, True, [T2]),
    # short weights (K = 4096 or N = 4096), where a call is 6-15 us
    "8b-qkv-1-w4": (4096, 6144, 1, 4, 128, False, [C(4, 1, 128, stages=4, async_copy=True, splits=1),
                                                   C(4, 1, 128, stages=4, async_copy=True, splits=3),
                                                   C(4, 1, 128, stages=2, async_copy=True), C(4, 2, 128, stages=4,
                                                                                              async_copy=True)]),
    "8b-qkv-8-w4": (4096, 6144, 8, 4, 128, False, [T1, C(4, 2, 128, stages=4, async_copy=True, splits=1),
                                                   C(4, 2, 128, stages=3, async_copy=True)]),
    "8b-down-8-w4": (14336, 4096, 8, 4, 128, False, [T1, C(4, 2, 128, stages=3, async_copy=True),
                                                     C(4, 2, 128, stages=4, async_copy=True, splits=2)]),
    # M = 16 where four tiles make 64 row blocks; three stages against four at M = 5..8
    "8b-o-16-w4": (4096, 4096, 16, 4, 128, False, [W8T2, T2, C(4, 2, 128, stages=3, async_copy=True), T1]),
    "8b-down-16-w4": (14336, 4096, 16, 4, 128, False, [W8T2, T2, C(4, 2, 128, stages=3, async_copy=True), T1]),
    "square-8-p3": (8192, 8192, 8, 4, 128, False, [C(4, 2, 128, stages=3, async_copy=True)]),
    # x in registers (x_regs, thirty-seventh session): the stages hold only the weights, so at M = 9..16 the
    # M = 1..8 tilings fit (four stages, several CTAs per SM) and more stages fit
    **{f"xr-{shape}-{M}-w4": (K, N, M, 4, 128, False, [XT2, XT1])
       for shape, K, N in (("square", 8192, 8192), ("8b-qkv", 4096, 6144), ("8b-o", 4096, 4096),
                           ("8b-down", 14336, 4096), ("70b-qkv", 8192, 10240)) for M in (1, 8, 16)},
    **{f"xr-square-{M}-w8": (8192, 8192, M, 8, None, False, [XT1, XT2, C(4, 1, 128, stages=3, async_copy=True,
                                                                       runs=True, x_regs=True)]) for M in (8, 16)},
    **{f"xr-{shape}-{M}-w4": (K, N, M, 4, 128, False, [XW8T2, XT2])
       for shape, K, N in (("square", 8192, 8192), ("8b-qkv", 4096, 6144), ("8b-down", 14336, 4096),
                           ("70b-qkv", 8192, 10240)) for M in (24, 32)},
    "xr-square-32-w8": (8192, 8192, 32, 8, None, False, [XT2, XT1]),
    # M = 9..16 where the wave balance takes two tiles of 8 warps (70B qkv) or keeps four (N = 12288, 18944):
    # four stages of 4 warps with x in registers beside them
    **{f"b16-{shape}-{M}-{tag}": (K, N, M, 4, group, zp, [C(4, 2, 64 if group == 32 else 128, stages=4,
                                                            async_copy=True, x_regs=True),
                                                          C(8, 2 if shape == "70b-qkv" else 4,
                                                            64 if group == 32 else 128, stages=2, async_copy=True)])
       for shape, K, N in (("70b-qkv", 8192, 10240), ("x", 4096, 12288), ("y", 3584, 18944))
       for M in (12, 16) for tag, group, zp in (("w4", 128, False), ("w4zp", 128, True), ("w4g32", 32, False))
       if shape == "70b-qkv" or tag == "w4"},
    # M = 9..16 at the widest layers (many waves of row blocks): x in registers in 4 or 8 warps
    **{f"g16-{shape}-{M}-w4": (K, N, M, 4, 128, False, [XT2, C(8, 4, 128, stages=2, async_copy=True, x_regs=True)])
       for shape, K, N in (("8b-gate_up", 4096, 28672), ("70b-gate_up", 8192, 57344), ("70b-down", 28672, 8192))
       for M in (12, 16)},
    # M = 17..32's pick with x in registers against the pick before it (x in the stages) and the other form
    **{f"m32-{shape}-{M}-w{bits}": (K, N, M, bits, 128 if bits == 4 else None, False,
                                    [C(8 if bits == 4 else 4, 2, 128, stages=2, async_copy=True), XT2, XW8T2]
                                    if bits == 4 else [C(4, 2, 128, stages=2, async_copy=True),
                                                       C(4, 2, 128, stages=2, async_copy=True, x_regs=True)])
       for shape, K, N in LAYERS
       for M in (20, 32) for bits in (4, 8)},
    # M = 9..16 where the pick keeps one CTA of 8 warps on four tiles (two stages: x fills the rest): the same
    # CTA with x in registers has room for three or four stages of weights (thirty-eighth session)
    **{f"q16-{shape}-{M}-w4": (K, N, M, 4, 128, False,
                               [C(8, 4, 128, stages=2, async_copy=True, x_regs=True),
                                C(8, 4, 128, stages=3, async_copy=True, x_regs=True),
                                C(8, 4, 128, stages=4, async_copy=True, x_regs=True),
                                C(8, 4, 64, stages=4, async_copy=True, x_regs=True),
                                C(8, 4, 64, stages=6, async_copy=True, x_regs=True)])
       for shape, K, N in (("square", 8192, 8192), ("8b-gate_up", 4096, 28672), ("70b-down", 28672, 8192))
       for M in (12, 16)},
    # the same pick's CTA with each warp on a run of chunks, and asking L2 for chunks ahead (no registers held)
    **{f"r16-{shape}-{M}-w4": (K, N, M, 4, 128, False,
                               [C(8, 4, 128, stages=2, async_copy=True, runs=True),
                                C(8, 4, 128, stages=2, async_copy=True, prefetch=2),
                                C(8, 4, 128, stages=2, async_copy=True, prefetch=4),
                                C(8, 4, 128, stages=2, async_copy=True, runs=True, prefetch=2)])
       for shape, K, N in (("square", 8192, 8192), ("70b-down", 28672, 8192)) for M in (12, 16)},
    # W8A16 at M = 16 on an H200 (70% of the copy, 84-90% at M <= 8; fifty-fifth session): chunks of 64 (half the
    # stage, so more stages or CTAs per SM), 8 warps, x in registers with runs
    "s16-square-w8": (8192, 8192, 16, 8, None, False,
                      [C(4, 2, 64, stages=4, async_copy=True, runs=True), C(4, 2, 64, stages=6, async_copy=True,
                                                                           runs=True),
                       C(4, 1, 128, stages=3, async_copy=True, runs=True), C(8, 2, 128, stages=2, async_copy=True,
                                                                           runs=True),
                       C(4, 2, 128, stages=4, async_copy=True, runs=True, x_regs=True)]),
    # run 1 found chunks of 64 in four stages 1.17x the pick there: their neighbours, M = 12 and the Llama-3 layers
    **{f"c64-square-{M}-w8": (8192, 8192, M, 8, None, False,
                              [C(4, 2, 64, stages=p, async_copy=True, runs=True) for p in (3, 4, 5)]
                              + [C(4, 2, 32, stages=p, async_copy=True, runs=True) for p in (4, 6, 8)])
       for M in (12, 16)},
    **{f"c64-{shape}-16-w8": (K, N, 16, 8, None, False, [C(4, 2, 64, stages=4, async_copy=True, runs=True),
                                                         C(4, 1, 64, stages=4, async_copy=True, runs=True)])
       for shape, K, N in _layers("square", "70b-gate_up")},
    "c64-square-8-w8": (8192, 8192, 8, 8, None, False, [C(4, 2, 64, stages=p, async_copy=True) for p in (4, 6)]),
    # and for int4: M = 16 (8 warps on four tiles) and M = 1 / 8
    "c64-square-16-w4": (8192, 8192, 16, 4, 128, False, [C(8, 4, 64, stages=p, async_copy=True) for p in (2, 3, 4)]),
    "c64-square-1-w4": (8192, 8192, 1, 4, 128, False, [C(4, 1, 64, stages=p, async_copy=True) for p in (4, 6, 8)]),
    "c64-square-8-w4": (8192, 8192, 8, 4, 128, False, [C(4, 2, 64, stages=p, async_copy=True) for p in (4, 6, 8)]),
    # run 2: chunks of 64 won at every int8 M = 16 layer but 70B qkv (even); M <= 8 (the pick's own tiling with
    # chunks of 64, and four stages), the other formats and the two layers left
    **{f"c64m-{shape}-{M}-w8": (K, N, M, 8, None, False, _c64(K, N, M))
       for shape, K, N in _layers("70b-qkv", "70b-gate_up")
       for M in (1, 4, 8)},
    "c64-70b-qkv-16-w8b": (8192, 10240, 16, 8, None, False, [C(4, 2, 64, stages=p, async_copy=True, runs=True)
                                                               for p in (2, 3)]),
    "c64-70b-gate_up-16-w8": (8192, 57344, 16, 8, None, False, [C(4, 2, 64, stages=4, async_copy=True, runs=True)]),
    "c64-square-16-w8g128": (8192, 8192, 16, 8, 128, False, [C(4, 2, 64, stages=4, async_copy=True, runs=True)]),
    "c64-square-16-w8zp": (8192, 8192, 16, 8, None, True, [C(4, 2, 64, stages=4, async_copy=True, runs=True)]),
    # the rule taken (int8 from M = 5: chunks of 64) against the picks before it, at the Llama-3 layers
    **{f"n64-{shape}-{M}-w8{tag}": (K, N, M, 8, group, zp, _before_c64(K, N, M, group, zp))
       for shape, K, N in LAYERS
       for M in (5, 8, 12, 16) for tag, group, zp in (("", None, False), ("g128", 128, False), ("zp", None, True))
       if not tag or shape in ("square", "70b-qkv")},
    # the new pick at M = 16 (83% of the copy on an H200) against its neighbours: round-robin chunks, x in registers
    # (the stages then hold 2 KB of weights per warp), one tile
    "e16-square-w8": (8192, 8192, 16, 8, None, False,
                      [C(4, 2, 64, stages=4, async_copy=True), C(4, 1, 64, stages=4, async_copy=True, runs=True)]
                      + [C(4, 2, 64, stages=p, async_copy=True, runs=True, x_regs=True) for p in (4, 6, 8)]),
    # int8 at M = 9..16 in chunks of 64: the pick with its chunks dealt the other way (runs or round-robin)
    **{f"rr-{shape}-{M}-w8": (K, N, M, 8, None, False, [_other_deal(K, N, M)])
       for shape, K, N in LAYERS for M in (12, 16)},
    # int8 at M = 9..16 reads as many bytes of x from L2 as of weights (two tiles a warp): four tiles in 8 warps (as
    # int4 there) read half, in two or three stages with x in them or four with x in registers
    **{f"q8-{shape}-{M}-w8": (K, N, M, 8, None, False, Q8_16) for shape, K, N in LAYERS for M in (12, 16)},
    **{f"q8-square-16-w8{tag}": (8192, 8192, 16, 8, group, zp, Q8_16)
       for tag, group, zp in (("g128", 128, False), ("zp", None, True))},
    # run 1: four tiles 1.04-1.11x at 70B down / gate_up and 8B down, 0.80-0.97x elsewhere; a grid of K and N to
    # find where (two stages)
    **{f"q8k-{K}x{N}-{M}-w8": (K, N, M, 8, None, False, Q8_16[:1])
       for K in (8192, 14336, 28672) for N in (8192, 16384, 28672) for M in (16,)},
    **{f"q8k-{K}x8192-9-w8": (K, 8192, 9, 8, None, False, Q8_16[:1]) for K in (8192, 28672)},
    # run 2: 1.04-1.17x where the weights take 224 MiB or more and four tiles fill the waves; M = 8 there (int4 and
    # int8: x as many bytes as the weights at int4), and four tiles of 4 warps at M = 16
    **{f"q8m-{K}x{N}-8-w{bits}": (K, N, 8, bits, 128 if bits == 4 else None, False,
                                  [C(8, 4, 128 if bits == 4 else 64, stages=p, async_copy=True) for p in (2, 3)])
       for K, N in ((8192, 8192), (14336, 16384), (28672, 8192), (8192, 57344)) for bits in (4, 8)},
    **{f"q8w-{K}x{N}-16-w8": (K, N, 16, 8, None, False,
                              [C(8, 4, 64, stages=2, async_copy=True)] + [C(4, 4, 64, stages=p, async_copy=True)
                                                                          for p in (2, 3, 4)])
       for K, N in ((8192, 8192), (28672, 8192), (14336, 16384))},
    # run 3: where one wave of two tiles leaves two stages (N >= 16384 at M = 16) four tiles ran 1.2-1.37x; the
    # pick against four tiles over wide weights (int8 at M = 16, int4 at M = 8)
    **{f"t4-{K}x{N}-{M}-w{bits}": (K, N, M, bits, 128 if bits == 4 else None, False, _tiles4(K, N, M, bits))
       for K in (4096, 8192, 14336) for N in (12288, 14336, 16384, 28672) for bits, M in ((8, 16), (4, 8))},
    # the rule taken (four tiles where one wave of two leaves two stages) against the picks before it: other formats,
    # M and N
    **{f"f4-{K}x{N}-{M}-w{bits}{tag}": (K, N, M, bits, group, zp, _two_tiles(K, N, M, bits, group, zp))
       for K, N, M, bits, group, zp, tag in (
           (4096, 14336, 12, 8, None, False, ""), (8192, 16384, 9, 8, None, False, ""),
           (8192, 14336, 16, 8, 128, False, "g128"), (8192, 14336, 16, 8, None, True, "zp"),
           (8192, 14336, 5, 4, 128, False, "g128"), (8192, 14336, 8, 4, 128, True, "g128zp"),
           (4096, 14336, 8, 4, 64, False, "g64"), (8192, 22016, 8, 8, None, False, ""),
           (14336, 16384, 16, 8, None, False, ""), (4096, 13824, 16, 8, None, False, ""))},
    # int4 at M = 16 (the pick: four tiles of 8 warps, one CTA an SM): four tiles of 4 warps, two CTAs an SM by
    # splitting K where the row blocks alone make one
    **{f"w16-{K}x{N}-16-w4": (K, N, 16, 4, 128, False,
                              [C(4, 4, 128, stages=2, async_copy=True), C(4, 4, 64, stages=4, async_copy=True),
                               C(4, 4, 128, stages=2, async_copy=True, splits=2),
                               C(4, 4, 64, stages=4, async_copy=True, splits=2),
                               C(4, 4, 128, stages=3, async_copy=True, x_regs=True, splits=2)])
       for K, N in ((8192, 8192), (8192, 16384), (28672, 8192))},
    # where no stage count keeps one wave the pick takes four stages (two CTAs an SM for int8 at M = 16: 74-78% of the
    # copy against 85% at 8192²); fewer stages, more CTAs an SM
    **{f"mw-{K}x{N}-{M}-w{bits}": (K, N, M, bits, 128 if bits == 4 else None, False,
                                   [C(4, 2, 128 if bits == 4 else 64, stages=p, async_copy=True) for p in (2, 3)])
       for K, N in ((4096, 28672), (8192, 28672), (8192, 57344), (14336, 28672)) for bits, M in ((8, 16), (8, 12),
                                                                                                 (4, 8))},
    # M = 1..4 (one tile) where one wave by shared memory leaves two or three stages (the registers may allow fewer
    # CTAs an SM than that wave needs): more stages, or two or four tiles a CTA in the stages that keep one wave (run 9
    # of the fifty-sixth session, before int4 in one tile kept four stages: its int4 candidates differ now)
    **{f"o4-{K}x{N}-{M}-w{bits}": (K, N, M, bits, 128 if bits == 4 else None, False, _more_tiles(K, N, M, bits))
       for K, N, M, bits in ((8192, 28672, 1, 4), (4096, 28672, 1, 4), (8192, 22016, 1, 4), (8192, 16384, 4, 4),
                             (8192, 14336, 4, 4), (8192, 16384, 1, 8), (8192, 14336, 1, 8), (8192, 16384, 4, 8),
                             (4096, 14336, 4, 8), (8192, 12288, 4, 8))},
    # the rule taken (int4 in one tile keeps four stages) against the picks before it
    **{f"s4-{K}x{N}-{M}-w4{tag}": (K, N, M, 4, group, zp, _one_wave_int4(K, N, M, group, zp))
       for K, N, M, group, zp, tag in (
           (8192, 28672, 1, 128, False, "g128"), (4096, 28672, 1, 128, False, "g128"),
           (8192, 22016, 1, 128, False, "g128"), (8192, 16384, 2, 128, False, "g128"),
           (8192, 13824, 3, 128, False, "g128"), (8192, 16384, 4, 128, False, "g128"),
           (8192, 14336, 4, 128, False, "g128"), (8192, 18944, 2, 128, False, "g128"),
           (8192, 22016, 4, 128, False, "g128"), (8192, 28672, 2, 32, False, "g32"),
           (8192, 18944, 4, None, False, "pc"), (8192, 14336, 3, 128, True, "g128zp"))},
    # int4 at M = 2..4 in one tile reads as many bytes of x from L2 as of weights at M = 4: two or four tiles
    **{f"m4-{shape}-{M}-w4": (K, N, M, 4, 128, False, [C(4, t, 128, stages=4, async_copy=True) for t in (2, 4)])
       for shape, K, N in (("square", 8192, 8192), ("8b-qkv", 4096, 6144), ("8b-gate_up", 4096, 28672),
                           ("70b-down", 28672, 8192), ("x", 8192, 16384)) for M in (2, 4)},
    # run 11: two tiles 1.07-1.13x at M = 2 / 4 but where they leave fewer than two CTAs an SM (8B qkv); M = 1 and 3
    **{f"m4-{shape}-{M}-w4": (K, N, M, 4, 128, False, [C(4, 2, 128, stages=4, async_copy=True)])
       for shape, K, N in (("square", 8192, 8192), ("8b-gate_up", 4096, 28672), ("70b-down", 28672, 8192),
                           ("70b-qkv", 8192, 10240)) for M in (1, 3)},
    # the rule taken (int4 at M = 1..4 in two tiles where they fill the SMs) against the picks before it (one tile)
    **{f"t2-{K}x{N}-{M}-w4{tag}": (K, N, M, 4, group, zp, [replace(_pick(K, N, M, 4, group, zp), tiles=1)])
       for K, N, M, group, zp, tag in (
           (8192, 8192, 1, 128, False, "g128"), (4096, 4096, 1, 128, False, "g128"),
           (4096, 4096, 4, 128, False, "g128"), (14336, 4096, 1, 128, False, "g128"),
           (8192, 57344, 1, 128, False, "g128"), (8192, 8192, 1, 32, False, "g32"),
           (8192, 8192, 2, 128, True, "g128zp"), (8192, 8192, 4, None, False, "pc"),
           (4096, 28672, 1, 128, False, "g128"), (8192, 16384, 4, 128, False, "g128"))},
    # the warps' reduction in the weights' stages (``reuse``, fifty-seventh session): int4 at M = 12 / 16 where 8 warps
    # take four tiles (three stages, from two), int8 at M = 12 / 16 in two tiles (four stages where three keep the
    # wave, three where four tiles were taken), int4 at M = 1..4 in two tiles at N = 16384 (four stages in one wave)
    **{f"u16-{shape}-{M}-w4": (K, N, M, 4, 128, False, [replace(_pick(K, N, M, 4, 128), stages=3, reuse=True),
                                                       replace(_pick(K, N, M, 4, 128), reuse=True)])
       for shape, K, N in (("square", 8192, 8192), ("8b-qkv", 4096, 6144), ("8b-gate_up", 4096, 28672),
                           ("70b-down", 28672, 8192), ("x", 8192, 16384)) for M in (12, 16)},
    **{f"u8-{K}x{N}-{M}-w8": (K, N, M, 8, None, False, [C(4, 2, 64, stages=4 if N < 14336 else 3, async_copy=True,
                                                         reuse=True)])
       for K, N in ((8192, 10240), (8192, 12288), (8192, 14336), (8192, 16384)) for M in (12, 16)},
    **{f"u4-8192x16384-{M}-w4": (8192, 16384, M, 4, 128, False, [C(4, 2, 128, stages=4, async_copy=True, reuse=True),
                                                                C(4, 2, 128, stages=3, async_copy=True),
                                                                C(4, 1, 128, stages=4, async_copy=True)])
       for M in (1, 2, 4)},
    # run 2: four stages with reuse won at 8192 x 16384, M = 4 (one wave where three CTAs an SM took 1.3): more formats
    # and weights where four CTAs an SM make one wave
    **{f"r4-{K}x{N}-{M}-w4{tag}": (K, N, M, 4, group, zp, [replace(_pick(K, N, M, 4, group, zp), reuse=True)])
       for K, N, M, group, zp, tag in (
           (8192, 16384, 3, 128, False, "g128"), (8192, 16384, 4, 128, True, "g128zp"),
           (8192, 16384, 4, 32, False, "g32"), (8192, 16384, 4, None, False, "pc"),
           (4096, 16384, 4, 128, False, "g128"),
           (14336, 16384, 4, 128, False, "g128"), (8192, 16896, 4, 128, False, "g128"))},
    # the rule taken (int4 at M <= 4: reuse where only that lets the wave's CTAs share the SMs) at the wider weights
    # it changes, against the pick without it
    **{f"r5-{K}x{N}-{M}-w4{tag}": (K, N, M, 4, group, zp, [replace(_pick(K, N, M, 4, group, zp), reuse=False)])
       for K, N, M, group, zp, tag in (
           (8192, 18944, 2, 128, False, "g128"), (8192, 18944, 1, 128, True, "g128zp"),
           (8192, 22016, 1, None, False, "pc"),
           (8192, 18944, 4, 32, True, "g32zp"), (8192, 16384, 3, 128, False, "g128"),
           (4096, 28672, 2, 32, False, "g32"), (8192, 32768, 1, 32, False, "g32"))},
    # the one format the rule changes that runs 2-4 did not time (g64 with zero points, M = 1, N = 16384)
    "r6-8192x16384-1-w4g64zp": (8192, 16384, 1, 4, 64, True, [replace(_pick(8192, 16384, 1, 4, 64, True), reuse=False)]),
    # int4 at M = 5..8 (8 rows of x: 17.9 KB a stage of two tiles): where four tiles in three stages are taken (one
    # wave of two tiles left them two), two tiles in three with the reduction in them (four CTAs an SM)
    **{f"u58-{K}x{N}-{M}-w4": (K, N, M, 4, 128, False, [C(4, 2, 128, stages=3, async_copy=True, reuse=True)])
       for K, N in ((8192, 14336), (8192, 16384), (4096, 14336)) for M in (6, 8)},
    # int4 at M = 1..8 in two tiles (N = K = 8192): 8 warps a CTA (16 an SM), and other stage counts
    **{f"w8t2-square-{M}-w4": (8192, 8192, M, 4, 128, False, [C(8, 2, 128, stages=p, async_copy=True) for p in (4, 3)]
                               + [C(4, 2, 128, stages=p, async_copy=True) for p in (6, 3)])
       for M in (1, 4, 8)},
    # int4 at M = 16: more warps a CTA in chunks of 64 (the reduction in the stages)
    "w16-square-16-w4": (8192, 8192, 16, 4, 128, False, [C(16, 4, 64, stages=2, async_copy=True, reuse=True),
                                                         C(8, 4, 64, stages=4, async_copy=True, reuse=True),
                                                         C(8, 4, 64, stages=2, async_copy=True)]),
    "70b-qkv-8-p3": (8192, 10240, 8, 4, 128, False, [C(4, 2, 128, stages=3, async_copy=True)]),
    "8b-gate_up-8-p3": (4096, 28672, 8, 4, 128, False, [C(4, 2, 128, stages=3, async_copy=True)]),
    "70b-down-8-p3": (28672, 8192, 8, 4, 128, False, [C(4, 2, 128, stages=3, async_copy=True)]),
}


def contender(K: int, N: int, M: int, bits: int, group: int | None, zp: bool, cfg: MixedConfig | None,
              calls: int) -> tuple[Any, dict]:
    pws = BM._packed(K, N, bits, group, torch.bfloat16, zp)
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    op = MixedGemm(pws[0].format, config=cfg, pdl=True)
    err = _err(op(x, pws[0]), x, pws[0])
    use = cfg or pick_mixed_config(pws[0].format, M, K, N, torch.cuda.get_device_properties(0).multi_processor_count)
    blocks, splits = launch_grid(x, pws[0], use)
    sets = [(x, p) for p in pws]
    info = {"config": use.name + (" (pick)" if cfg is None else ""), "grid": f"{blocks}x{splits}",
            "per_sm": blocks * splits / torch.cuda.get_device_properties(0).multi_processor_count, "err": err,
            "bytes": pws[0].nbytes + 2 * M * (K + N)}
    return (lambda: _us(op, sets, calls)), info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=32)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--splits", default="", help="instead of the cases' candidates, the pick with these split-K "
                    "counts (comma-separated) at --split-shapes")
    ap.add_argument("--split-shapes", default="square:8192:8192,8b-qkv:4096:6144,8b-o:4096:4096,8b-down:14336:4096,"
                    "70b-down:28672:8192", help="NAME:K:N,... for --splits, at --split-ms and W4A16 g128 / W8A16 pc")
    ap.add_argument("--split-ms", default="1,8")
    ap.add_argument("--split-bits", default="4")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    copy = BM.copy_bandwidth(1 << 30)
    print(f"# small-M tilings, {torch.cuda.get_device_name(0)}, copy {copy:.0f} GB/s, {args.rounds} rounds in turn\n")
    cases = {name: CASES[name] for name in args.cases.split(",")}
    if args.splits:
        cases = {}
        for spec in args.split_shapes.split(","):
            label, K, N = spec.split(":")
            for M in map(int, args.split_ms.split(",")):
                for bits in map(int, args.split_bits.split(",")):
                    group = 128 if bits == 4 else None
                    pick = pick_mixed_config(Q.PackedFormat(bits, group, False, "bfloat16"), M, int(K), int(N))
                    cases[f"{label}-{M}-w{bits}"] = (int(K), int(N), M, bits, group, False,
                                                     [replace(pick, splits=s) for s in map(int, args.splits.split(","))])
    rows = []
    for name, (K, N, M, bits, group, zp, cands) in cases.items():
        timers, infos = {}, {}
        for i, cfg in enumerate([None, *cands]):
            try:
                timers[i], infos[i] = contender(K, N, M, bits, group, zp, cfg, args.calls)
            except Exception as e:                                        # a tiling this shape refuses
                rows.append([name, cfg.name if cfg else "pick", "", "", "", "", f"{type(e).__name__}: {e}"[:70]])
        times = {i: statistics.median(t) for i, t in in_turn(timers, args.rounds).items()}
        base = times.get(0)
        for i, us in times.items():
            inf = infos[i]
            ok = "" if inf["err"] < 1.2e-2 else f"WRONG {inf['err']:.1e}"
            rows.append([name, inf["config"], inf["grid"], f"{inf['per_sm']:.2f}", f"{us:.2f}",
                         f"{100 * inf['bytes'] / us / 1e3 / copy:.0f}%", f"{base / us:.3f}x pick {ok}" if base else ok])
        torch.cuda.empty_cache()
    print(markdown_table(["case", "tiling", "grid", "CTAs/SM", "µs (stream+pdl)", "% copy", "notes"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
