"""The mixed-input GEMM (tilecraft/gemm/mixed.py).

CPU: a bit-level model of mixed.cuh's magic-number conversions (numpy 16-bit floats, the header's
constants) against the packed layout; every format run in the emulator (tests/gemm/emulate.py) against
float64 x @ dequantize(W), through tc.quant.gemm with its launches redirected there (split-K, M past 64,
bias); every format compiled by NVRTC for sm_80 and sm_90a without spills; the entry point's errors.
GPU: random shapes, every format, M from 1 to 100 against float64.
"""
from __future__ import annotations

import itertools
import random
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mixed_gemm_check import check_mixed_gemm

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
from tilecraft.gemm import mixed  # noqa: E402
from tilecraft.gemm.mixed import MixedConfig, mixed_gemm_kernel, pick_mixed_config  # noqa: E402
from tilecraft.runtime.disasm import find_tool, sass  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemm"))
import emulate  # noqa: E402

DTYPES = (torch.float16, torch.bfloat16)
FORMATS = list(itertools.product((4, 8), (None, 32, 64, 128), (False, True), DTYPES))
_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.2e-2}  # relative Frobenius error: a rounding of y


def _problem(bits: int, group: int | None, zp: bool, dtype: Any, M: int, K: int, N: int, seed: int = 0,
             device: str = "cpu", bias: bool = True) -> tuple:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(K, N, generator=g) * 0.05
    pw = Q.pack(Q.quantize(w, bits, group, zp), dtype).to(device)
    x = torch.randn(M, K, generator=g).to(dtype).to(device)
    b = torch.randn(N, generator=g).to(dtype).to(device) if bias else None
    return x, pw, b


def _check(y: Any, x: Any, pw: Any, b: Any) -> None:
    check_mixed_gemm(y, x, pw, b, _TOL, torch.float64)


# ----------------------------------------------------------------------------- the conversions, bit by bit

def _h(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def _hb(x: float) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def _b(bits: int) -> float:
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def _bb(x: float) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0]) >> 16  # exact values only


def _halves(w: int) -> tuple[int, int]:
    return w & 0xFFFF, w >> 16


def _model_u4(w: int, z: int, bf: bool) -> list[int]:
    """mixed.cuh's dequant_u4_f16 / _bf16 on one word: the four A registers (16-bit pairs)."""
    zg, zh = _halves(z)
    out = []
    for r in range(4):
        zr = zh if r % 2 else zg
        pair = []
        for half in (0, 1):
            if bf:  # ((w >> 4r) & 0x000f000f) | 0x43004300, times 1 minus (128 + z)
                m = (((w >> (4 * r)) & 0x000F000F) | 0x43004300) >> (16 * half) & 0xFFFF
                pair.append(_bb(_b(m) - (128 + _b(zr))))
            else:
                src = w if r < 2 else w >> 8
                if r % 2 == 0:  # (src & 0x000f000f) | 0x6400, minus 1024 + z
                    m = ((src & 0x000F000F) | 0x64006400) >> (16 * half) & 0xFFFF
                    pair.append(_hb(_h(m) - (_h(zr) + 1024)))
                else:  # (src & 0x00f000f0) | 0x6400, times 1/16 minus (64 + z)
                    m = ((src & 0x00F000F0) | 0x64006400) >> (16 * half) & 0xFFFF
                    pair.append(_hb(_h(m) * 0.0625 - (64 + _h(zr))))
        out.append(pair[0] | pair[1] << 16)
    return out


def _model_u8(w0: int, w1: int, z: int, bf: bool) -> list[int]:
    """dequant_u8_f16 (bytes under 0x64: 1024 + v) / _bf16 (through fp32: 2^23 + v)."""
    zg, zh = _halves(z)
    out = []
    for r in range(4):
        w = w0 if r < 2 else w1
        pair = []
        for e in (0, 1):
            v = (w >> (8 * (2 * (r % 2) + e))) & 0xFF
            zr = zh if r % 2 else zg
            if bf:
                pair.append(_bb((8388608.0 + v) - (8388608.0 + _b(zr))))
            else:
                pair.append(_hb(_h(0x6400 | v) - (_h(zr) + 1024)))
        out.append(pair[0] | pair[1] << 16)
    return out


@pytest.mark.parametrize("bits,bf", list(itertools.product((4, 8), (False, True))))
def test_conversion_model_gives_q_minus_z(bits: int, bf: bool) -> None:
    """For random words and zero points, register r value e of the conversion is (q - z) of A-fragment
    value 2r + e, where the packed layout puts q (nibble v/2 + 4(v%2), or byte v%4 of word v/4)."""
    rng = random.Random(bits * 2 + bf)
    enc = _bb if bf else _hb
    dec = _b if bf else _h
    for _ in range(200):
        words = [rng.getrandbits(32), rng.getrandbits(32)]
        zs = [rng.randrange(2 ** bits), rng.randrange(2 ** bits)]
        z = enc(zs[0]) | enc(zs[1]) << 16
        if bits == 4:
            regs = _model_u4(words[0], z, bf)
            vals = [(words[0] >> (4 * (v // 2 + 4 * (v % 2)))) & 0xF for v in range(8)]
        else:
            regs = _model_u8(words[0], words[1], z, bf)
            vals = [(words[v // 4] >> (8 * (v % 4))) & 0xFF for v in range(8)]
        for v in range(8):
            r, e = divmod(v, 2)
            got = dec((regs[r] >> (16 * e)) & 0xFFFF)
            assert got == vals[v] - zs[r % 2], (v, vals[v], zs)


def test_header_constants_match_the_model() -> None:
    """The model above uses the constants written in mixed.cuh (so the two cannot drift apart)."""
    text = (Path(tc.__file__).parent / "include" / "tilecraft" / "mixed.cuh").read_text()
    for c in ("0x000f000fu", "0x00f000f0u", "0x64006400u", "0x2c002c00u", "0xd400d400u", "0x3c003c00u",
              "0xbc00bc00u", "0x43004300u", "0x3f803f80u", "0xbf80bf80u", "0xc300c300u", "0x4140", "0x4342",
              "0x7440", "0x7443", "0x7632", "0x4b000000u", "8388608.0f"):
        assert c in text, c
    assert _hb(1 / 16) == 0x2C00 and _hb(-64.0) == 0xD400 and _bb(-128.0) == 0xC300 and _bb(1.0) == 0x3F80
    assert mixed._SYMMETRIC_ZERO == {("float16", 4): _hb(8.0) * 0x10001, ("float16", 8): _hb(128.0) * 0x10001,
                                     ("bfloat16", 4): _bb(8.0) * 0x10001, ("bfloat16", 8): _bb(128.0) * 0x10001}


# ----------------------------------------------------------------------------- emulated

@pytest.fixture
def emulated(monkeypatch: Any) -> None:
    """tc.quant.gemm on CPU tensors: launches run in the emulator, the device check is skipped."""
    emulate.route_launches(monkeypatch)
    monkeypatch.setattr(mixed, "_check_device", lambda x: None)


#: every (bits, group, zero point, dtype) once, with a spread of M, tilings and split-K slices
EMULATED = [
    (4, 128, False, torch.float16, 1, 256, 64, MixedConfig(4, 4, 128, splits=2)),
    (4, 128, True, torch.bfloat16, 16, 256, 64, MixedConfig(2, 2, 128, splits=1)),
    (4, 64, False, torch.bfloat16, 3, 256, 32, MixedConfig(2, 1, 64, splits=2)),
    (4, 64, True, torch.float16, 9, 128, 64, None),
    (4, 32, False, torch.float16, 8, 128, 32, MixedConfig(1, 2, 64, splits=2)),
    (4, 32, True, torch.bfloat16, 5, 256, 16, None),
    (4, None, False, torch.bfloat16, 2, 128, 64, MixedConfig(2, 4, 64, splits=2)),
    (4, None, True, torch.float16, 24, 128, 32, None),
    (8, 128, False, torch.bfloat16, 7, 256, 32, None),
    (8, 128, True, torch.float16, 1, 128, 32, MixedConfig(2, 2, 128)),
    (8, 64, False, torch.float16, 12, 128, 16, MixedConfig(2, 1, 64, splits=2)),
    (8, 64, True, torch.bfloat16, 4, 192, 32, None),
    (8, 32, False, torch.bfloat16, 1, 96, 32, None),
    (8, 32, True, torch.float16, 6, 128, 32, MixedConfig(4, 2, 32, splits=2)),
    (8, None, False, torch.float16, 3, 96, 32, None),
    (8, None, True, torch.bfloat16, 17, 160, 16, MixedConfig(2, 1, 32, splits=3)),
    # the pipeline knobs: 3 and 4 register buffers over chunk counts that are not multiples of them, L2
    # prefetch past the warp's last chunk, a register cap
    (4, 128, False, torch.float16, 1, 1280, 64, MixedConfig(2, 4, 128, splits=2, stages=3)),
    (4, 64, True, torch.bfloat16, 5, 1088, 32, MixedConfig(2, 2, 64, splits=2, stages=4, prefetch=3)),
    (8, None, False, torch.float16, 12, 640, 32, MixedConfig(2, 2, 64, stages=3, prefetch=2, min_ctas=3)),
    (8, 32, True, torch.bfloat16, 2, 384, 16, MixedConfig(1, 1, 32, splits=3, prefetch=8)),
    # shared-memory stages through cp.async: more stages than a warp has chunks, uneven chunk counts, zero
    # points (their own slots), per-channel scales (no scale slots), int8's two words per k-block
    (4, 128, False, torch.float16, 1, 1280, 64, MixedConfig(2, 2, 128, splits=2, stages=6, async_copy=True)),
    (4, 64, True, torch.bfloat16, 5, 1088, 32, MixedConfig(2, 2, 64, splits=2, stages=8, prefetch=1, async_copy=True)),
    (8, None, True, torch.float16, 12, 640, 32, MixedConfig(2, 2, 64, stages=3, async_copy=True)),
    (8, 32, False, torch.bfloat16, 20, 384, 16, MixedConfig(1, 1, 32, splits=3, stages=12, async_copy=True)),
    # 16 warps (512 threads), one CTA of four tiles: a chunk each
    (4, 128, False, torch.float16, 1, 2048, 64, MixedConfig(16, 4, 128, stages=2, async_copy=True)),
    # chunks shorter than a group (each scaled by its group's scales), in registers and in shared memory
    (4, 128, False, torch.float16, 16, 1024, 64, MixedConfig(8, 4, 64, stages=4, async_copy=True)),
    (8, 128, True, torch.bfloat16, 3, 768, 32, MixedConfig(2, 2, 32, splits=2, stages=3)),
    (4, 128, False, torch.bfloat16, 9, 1280, 32, MixedConfig(2, 1, 64, splits=3, stages=5, async_copy=True)),
    # each warp a run of chunks, of uneven lengths, in registers and shared memory (and L2 prefetch)
    (4, 64, True, torch.float16, 3, 1088, 32, MixedConfig(4, 2, 64, splits=2, stages=3, prefetch=2, runs=True)),
    (8, 128, False, torch.bfloat16, 11, 1280, 64, MixedConfig(4, 2, 128, stages=4, async_copy=True, runs=True)),
    (8, None, True, torch.float16, 16, 2304, 32, None),                  # int8's pick at M = 9..16 takes runs
    # the wave balance's tilings (pick_mixed_config at Llama-3 qkv widths): int4's M = 9..16 in two tiles of 8
    # warps, int8's one tile in 4 warps with runs at M = 9..16
    (4, 32, True, torch.bfloat16, 12, 1024, 64, MixedConfig(8, 2, 64, stages=2, async_copy=True)),
    (8, None, False, torch.float16, 16, 1280, 32, MixedConfig(4, 1, 128, stages=2, async_copy=True, runs=True)),
    # x in registers a chunk ahead (x_regs): an even stage count (two x buffers) and an odd one (three),
    # chunk counts that are not multiples of them, M = 16 and 32 (two and four m-blocks), runs, splits,
    # chunks shorter than a group, zero points
    (4, 128, False, torch.bfloat16, 16, 1280, 64, MixedConfig(4, 2, 128, splits=2, stages=4, async_copy=True, x_regs=True)),
    (4, 64, True, torch.float16, 7, 1088, 32, MixedConfig(2, 2, 64, splits=2, stages=3, async_copy=True, x_regs=True)),
    (8, None, True, torch.bfloat16, 13, 1280, 32, MixedConfig(4, 1, 128, stages=3, async_copy=True, runs=True,
                                                               x_regs=True)),
    (4, 128, True, torch.float16, 32, 1024, 64, MixedConfig(8, 2, 64, stages=2, async_copy=True, x_regs=True)),
    (8, 32, False, torch.float16, 1, 384, 16, MixedConfig(1, 1, 32, splits=3, stages=5, async_copy=True, x_regs=True)),
]


@pytest.mark.parametrize("bits,group,zp,dtype,M,K,N,cfg", EMULATED)
def test_emulated_every_format(emulated: None, bits: int, group: int | None, zp: bool, dtype: Any, M: int, K: int,
                               N: int, cfg: MixedConfig | None) -> None:
    x, pw, b = _problem(bits, group, zp, dtype, M, K, N, seed=M + K)
    y = Q.gemm(x, pw, b, config=cfg)
    _check(y, x, pw, b)
    ws, cnt = mixed._WORKSPACES.get(("cpu", 0), (torch.zeros(1), torch.zeros(1)))   # none made without split-K
    assert float(ws.abs().sum()) == 0 and int(cnt.abs().sum()) == 0       # left zeroed for the next call


def test_default_shared_memory_stages_keep_one_wave() -> None:
    """At N = K = 8192 the heuristic's shared-memory stages let ceil(CTAs / 132) CTAs share an H100 SM (227 KB,
    1 KB reserved per CTA), so the grid runs in one wave: W8 at M = 16 in chunks of 128 took three stages (34 KB
    each), not four; in chunks of 64 (``INT8_CHUNK64_FROM_M``) four of 17 KB fit; where no count keeps one wave (32
    SMs), four."""
    for bits, group in ((4, 128), (8, None), (4, 32), (8, 64)):
        fmt = Q.PackedFormat(bits, group, False, "bfloat16")
        for M in (1, 4, 8, 16):
            cfg = pick_mixed_config(fmt, M, 8192, 8192)
            if cfg.async_copy:
                per_sm = -(-(8192 // (16 * cfg.tiles)) // 132)
                red = 16 * cfg.tiles * 8 * (-(-M // 8)) * cfg.warps * 4               # the warps' meeting place
                assert per_sm * (mixed.stage_smem_bytes(cfg, fmt, M) + red + 1024) <= 233472, (bits, group, M, cfg)
    w8 = Q.PackedFormat(8, None, False, "bfloat16")
    assert pick_mixed_config(w8, 16, 8192, 8192).stages == 4 and pick_mixed_config(w8, 1, 8192, 8192).stages == 4
    assert pick_mixed_config(w8, 16, 8192, 8192, sms=32).stages == 4                 # two waves whatever the stages
    with pytest.MonkeyPatch.context() as mp:                                         # chunks of 128
        mp.setattr(mixed, "INT8_CHUNK64_FROM_M", 1 << 30)
        assert pick_mixed_config(w8, 16, 8192, 8192).stages == 3


def test_int4_at_m_1_to_4_takes_four_stages_and_two_tiles_where_they_fill_the_sms() -> None:
    """int4 at M = 1..4 takes four stages at every N (every group size, zero points or not, fp16 and bf16), where one
    wave would have taken two or three at N = 13824..28672; two tiles where they make 1.5 row blocks an SM or more and
    fill the SMs evenly (N = K = 8192, Llama-3-8B gate_up, 70B down / gate_up), one elsewhere (8B qkv / o / down, 70B
    qkv). int8 still fits its stages to one wave (per channel at M = 1, N = 16384: two) in one tile."""
    two = {(8192, 8192), (4096, 28672), (28672, 8192), (8192, 57344), (8192, 16384)}
    one = {(4096, 6144), (4096, 4096), (14336, 4096), (8192, 10240)}
    for group, zp, dt in itertools.product((None, 32, 64, 128), (False, True), ("float16", "bfloat16")):
        fmt = Q.PackedFormat(4, group, zp, dt)
        for M, (K, N) in itertools.product((1, 2, 3, 4), sorted(two | one)):
            cfg = pick_mixed_config(fmt, M, K, N)
            want = 2 if (K, N) in two else 1
            got = (cfg.warps, cfg.tiles, cfg.stages, cfg.async_copy)
            assert got == (4, want, 4, True), (group, zp, dt, M, K, N, cfg)
    w8 = pick_mixed_config(Q.PackedFormat(8, None, False, "bfloat16"), 1, 8192, 16384)
    assert (w8.tiles, w8.stages) == (1, 2)


def test_int4_at_m_3_to_4_moves_the_reduction_into_the_stages_where_that_makes_one_wave() -> None:
    """int4 at M <= 4 in two tiles keeps four stages; the warps' reduction moves into them (``reuse``) exactly where
    only that lets the wave's CTAs share the SMs: g128 at M = 3..4, N = 16384, whose four 13.3 KB stages and 4 KB
    reduction let three CTAs an SM run 1.3 waves of 512 (four with the reduction in the stages); not where the CTAs fit
    either way (M = 1 / 2, groups of 32, per channel, N = K = 8192) or neither (g128 with zero points), nor where the
    wave needs more than four CTAs an SM (the registers decide there), nor for int8."""
    def smem(cfg: MixedConfig, fmt: Q.PackedFormat, M: int, per_sm: int) -> bool:
        return per_sm * (mixed.cta_smem_bytes(cfg, fmt, M) + 1024) <= 233472

    for group, zp, dt in itertools.product((None, 32, 64, 128), (False, True), ("float16", "bfloat16")):
        fmt = Q.PackedFormat(4, group, zp, dt)
        for M, (K, N) in itertools.product((1, 2, 3, 4), ((8192, 8192), (4096, 16384), (8192, 16384))):
            cfg = pick_mixed_config(fmt, M, K, N)
            per_sm = -(-N // (32 * 132))
            only_so = not smem(replace(cfg, reuse=False), fmt, M, per_sm) and smem(replace(cfg, reuse=True), fmt, M,
                                                                                    per_sm)
            assert (cfg.tiles, cfg.stages, cfg.reuse) == (2, 4, only_so), (group, zp, dt, M, K, N, cfg)
    picks = {(M, group, zp): pick_mixed_config(Q.PackedFormat(4, group, zp, "bfloat16"), M, 8192, 16384).reuse
             for M, group, zp in ((1, 128, False), (2, 128, False), (3, 128, False), (4, 128, False), (4, 128, True),
                                  (4, 32, False), (4, None, False))}
    assert [k for k, v in picks.items() if v] == [(3, 128, False), (4, 128, False)]
    for M, group, N in ((1, None, 22016), (2, 128, 18944), (1, 32, 32768), (2, 32, 28672)):   # five to eight an SM
        assert not pick_mixed_config(Q.PackedFormat(4, group, False, "bfloat16"), M, 8192, N).reuse
    for M in (1, 8, 16):
        assert not pick_mixed_config(Q.PackedFormat(8, None, False, "bfloat16"), M, 8192, 16384).reuse


def test_reduction_in_the_stages() -> None:
    """MixedConfig.reuse: the warps' reduction takes over the weights' stages after one more barrier (every copy
    landed, every warp done with them), so the CTA needs no shared memory of its own for it; validate refuses it
    without shared-memory stages, and where the stages are smaller than the reduction."""
    fmt = Q.PackedFormat(4, 128, False, "bfloat16")
    cfg = MixedConfig(4, 2, 128, stages=4, async_copy=True)
    u = replace(cfg, reuse=True)
    assert u.name == cfg.name + "_u"
    assert mixed.cta_smem_bytes(cfg, fmt, 4) - mixed.cta_smem_bytes(u, fmt, 4) == 32 * 8 * 4 * 4   # BN x 8 x warps
    with pytest.raises(ValueError, match="reuse needs"):
        replace(u, async_copy=False).validate(fmt, 1024, 1024, 4)
    short = MixedConfig(4, 2, 64, stages=2, async_copy=True, reuse=True)   # one 64-k block a tile: 2 slots a warp
    short.validate(fmt, 1024, 1024, 16)
    with pytest.raises(ValueError, match="reuse needs"):
        short.validate(fmt, 1024, 1024, 24)                                # 3 m-blocks of sums a warp and tile
    plain = _compile_args(4, 128, False, torch.bfloat16, 4)
    args = (*plain[:9], replace(plain[9], reuse=True), *plain[10:])
    src, plain_src = mixed_gemm_kernel.source(*args), mixed_gemm_kernel.source(*plain)
    assert "float sRed[" in plain_src and "float sRed[" not in src
    assert src.count("__syncthreads();") == plain_src.count("__syncthreads();") + 1
    assert "tc::cp_async_wait<0>();\n    __syncthreads();\n    float* sRed = reinterpret_cast<float*>(sW);" in src
    r_plain, r_reuse = (mixed_gemm_kernel.compile(*a, arch="sm_90a").resources for a in (plain, args))
    assert r_plain.smem_bytes - r_reuse.smem_bytes >= 16 * 8 * 4 * 4 and r_reuse.spill_store_bytes == 0


def test_int8_takes_chunks_of_64_from_m_5() -> None:
    """int8 in the shared-memory stages takes chunks of 64 from M = 5 to 16 (every group size, zero points or not),
    128 (64 for groups of 32) below; int4 keeps its chunks. At Llama-3-8B gate_up (896 row blocks at M = 16) four
    17 KB stages put two CTAs on an SM where four of 34 KB left one."""
    for group, zp, dt in itertools.product((None, 32, 64, 128), (False, True), ("float16", "bfloat16")):
        fmt = Q.PackedFormat(8, group, zp, dt)
        for M in (1, 4, 5, 8, 12, 16):
            cfg = pick_mixed_config(fmt, M, 8192, 8192)
            assert cfg.async_copy and cfg.chunk == (64 if M >= 5 or group == 32 else 128), (group, zp, M, cfg)
            cfg.validate(fmt, 8192, 8192, M)
        w4 = Q.PackedFormat(4, group, zp, dt)
        assert pick_mixed_config(w4, 8, 8192, 8192).chunk == (64 if group == 32 else 128)
    w8 = Q.PackedFormat(8, None, False, "bfloat16")
    gate_up = pick_mixed_config(w8, 16, 4096, 28672)
    assert (gate_up.chunk, gate_up.stages) == (64, 4) and 2 * (mixed.cta_smem_bytes(gate_up, w8, 16) + 1024) <= 233472


def test_four_tiles_where_one_wave_of_two_leaves_two_stages() -> None:
    """Where two tiles would keep one wave only in two stages (int4 at M = 5..8, int8 at M = 9..16; N = 13824..16384
    for W4A16 g128 and W8A16 per channel) the pick takes four tiles a CTA of 4 warps in three stages (half the CTAs,
    twice the weights per byte of x), chunks dealt round-robin, two CTAs an SM; nowhere else (two tiles keep three
    stages or more at N = 8192 / 12288, no count keeps one wave at 28672; one tile at M <= 4)."""
    four = {(4, M) for M in range(5, 9)} | {(8, M) for M in range(9, 17)}
    measured = {(4, 128, False, "bfloat16"), (8, None, False, "bfloat16")}
    for bits, group, zp, dt in itertools.product((4, 8), (None, 64, 128), (False, True), ("float16", "bfloat16")):
        fmt = Q.PackedFormat(bits, group, zp, dt)
        for M, K, N in itertools.product((1, 4, 5, 8, 9, 12, 16), (4096, 14336), (8192, 12288, 13824, 16384, 28672)):
            cfg = pick_mixed_config(fmt, M, K, N)
            wide = (cfg.warps, cfg.tiles) == (4, 4)
            if (bits, group, zp, dt) in measured:
                assert wide == ((bits, M) in four and N in (13824, 16384)), (bits, group, M, K, N, cfg)
            if wide:
                assert (bits, M) in four and N in (13824, 16384) and cfg.stages == 3 and not cfg.runs, (fmt, M, N, cfg)
                cfg.validate(fmt, K, N, M)
                assert 2 * (mixed.cta_smem_bytes(cfg, fmt, M) + 1024) <= 233472      # two CTAs an SM: one wave
                two = replace(cfg, tiles=2, stages=3)
                assert 4 * (mixed.cta_smem_bytes(two, fmt, M) + 1024) > 233472       # two tiles: two stages


def test_int4_at_m_9_to_16_takes_four_tiles_in_eight_warps() -> None:
    """int4 at M = 9..16 (where N allows four 16-row tiles): 8 warps, two shared-memory stages, the chunks
    dealt round-robin, a valid tiling for every group size; M = 8 keeps its 4 warps, and N = 16 x odd falls
    back to register buffers. int8 at M = 9..16 gives each warp a run of chunks in one tile or in chunks of 128, and
    at M = 8 not."""
    for group, M in itertools.product((None, 32, 64, 128), (9, 16)):
        fmt = Q.PackedFormat(4, group, True, "float16")
        cfg = pick_mixed_config(fmt, M, 4096, 8192)
        got = (cfg.warps, cfg.tiles, cfg.stages, cfg.async_copy, cfg.runs)
        assert got == (8, 4, 2, True, False), (group, M, cfg)
        cfg.validate(fmt, 4096, 8192, M)
    fmt = Q.PackedFormat(4, 128, False, "bfloat16")
    assert pick_mixed_config(fmt, 8, 8192, 8192).warps == 4
    odd = pick_mixed_config(fmt, 16, 8192, 16 * 513)
    assert not odd.async_copy and 16 * 513 % (16 * odd.tiles) == 0
    w8 = Q.PackedFormat(8, None, False, "bfloat16")
    assert [pick_mixed_config(w8, M, 8192, 8192).runs for M in (1, 8, 9, 16)] == [False] * 4  # chunks of 64, 2 tiles
    assert [pick_mixed_config(w8, M, 4096, 6144).runs for M in (8, 9, 16)] == [False, True, True]  # one tile
    with pytest.MonkeyPatch.context() as mp:                                         # chunks of 128
        mp.setattr(mixed, "INT8_CHUNK64_FROM_M", 1 << 30)
        assert [pick_mixed_config(w8, M, 8192, 8192).runs for M in (8, 9, 16)] == [False, True, True]


def test_lopsided_grids_take_half_the_tiles() -> None:
    """Where the pick's CTAs would leave the SMs lopsided (``wave_fill``: the mean CTAs per SM over the most
    any SM runs) and half the tiles spread them better: int8 at N = 6144 (192 row blocks of two tiles, one
    split: fill 0.73) takes one tile at M = 5..16, and so does int4 at M = 5..8; int4 at M = 9..16 takes two
    tiles of 8 warps at N = 10240 (160 blocks of four: fill 0.61) where two tiles of 4 warps with x in registers
    would not make 0.8 of three CTAs per SM (144 SMs; on 132 they do, and are taken, as at N = 12288), not at
    18944 (0.75: measured slower) nor where the grid is even, and at N = 4096 (64 blocks of four would need two
    slices)."""
    w8, w4, w4z = (Q.PackedFormat(b, g, z, "bfloat16") for b, g, z in ((8, None, False), (4, 128, False),
                                                                         (4, 128, True)))
    assert mixed.wave_fill(pick_mixed_config(w8, 8, 4096, 6144), w8, 8, 4096, 6144, 132) > 0.96
    assert mixed.wave_fill(MixedConfig(4, 2, 128, stages=4, async_copy=True), w8, 8, 4096, 6144, 132) < 0.73
    for M in (5, 8, 9, 16):
        cfg = pick_mixed_config(w8, M, 4096, 6144)
        assert (cfg.tiles, cfg.runs) == (1, M > 8), (M, cfg)
        assert pick_mixed_config(w8, M, 8192, 8192).tiles == 2                 # 256 blocks: 1.94 per SM
        assert pick_mixed_config(w8, M, 8192, 10240).tiles == 2                # 320: 2.42 (fill 0.81) stays
    assert pick_mixed_config(w4z, 8, 4096, 6144).tiles == 1
    assert pick_mixed_config(w4, 8, 4096, 6144).tiles == 1                     # 192 blocks reach the SMs unsplit
    for M in (9, 12, 16):
        # two tiles in 4 warps with x in registers where they make 0.8-1.0 of three CTAs per SM
        for N in (10240, 12288):
            cfg = pick_mixed_config(w4, M, 8192, N)
            assert (cfg.tiles, cfg.warps, cfg.stages, cfg.x_regs) == (2, 4, 4, True), (M, N, cfg)
        assert pick_mixed_config(w4, M, 8192, 10240, sms=144).warps == 8        # 320 blocks: 0.74 of 432
        assert (pick_mixed_config(w4, M, 8192, 10240, sms=144).tiles, pick_mixed_config(w4, M, 8192, 10240,
                                                                                         sms=144).x_regs) == (2, False)
        for N in (8192, 18944, 6144, 28672):
            assert pick_mixed_config(w4, M, 4096, N).tiles == 4, (M, N)
    assert mixed.wave_fill(MixedConfig(8, 4, 128, stages=2, async_copy=True), w4, 16, 8192, 10240, 132) < 0.62
    # N = 4096: 64 blocks of four tiles would need two slices, 128 of two reach the SMs unsplit
    for K in (4096, 14336):
        cfg = pick_mixed_config(w4, 16, K, 4096)
        assert (cfg.warps, cfg.tiles) == (8, 2) and mixed.grid_splits(cfg, w4, 16, K, 4096, 132) == 1
    assert mixed.grid_splits(MixedConfig(8, 4, 128, stages=2, async_copy=True), w4, 16, 4096, 4096, 132) == 2


def test_m_17_to_32_takes_two_tiles_in_shared_memory_stages_where_they_fit() -> None:
    """M = 17..32: two tiles, x in registers, shared-memory stages of weights: for int4 four stages of 4 warps
    where two CTAs per SM fill the waves at least 0.8 as well as one (N = 8192, 6144, 28672 on 132 SMs), else
    two stages of 8 warps (N = 4096: 128 blocks; 10240: 320); for int8 two stages of 4 warps; x in the stages
    where ptxas would spill (groups of 64 at M = 25..32; four stages with zero points there take 8 warps), and at
    M = 25..32 where the row blocks are no more than the SMs, or for int8 where its registers (two CTAs per SM,
    not three) take more waves (N = 10240).
    Every pick of every format and M fits the GPU's shared memory per CTA (an H100's 227 KB, an A100's 163 KB,
    sm_89's 99 KB), falling back to register buffers where the stages would not."""
    deep, wide, wide8 = (4, 2, 4, True, True), (8, 2, 2, True, True), (4, 2, 2, True, True)
    for bits, group, zp, M, N, want in ((4, 128, False, 17, 8192, deep), (4, 128, False, 32, 6144, deep),
                                        (4, 128, False, 24, 28672, deep), (4, 128, False, 24, 4096, wide),
                                        (4, 128, False, 32, 10240, wide), (4, 128, True, 24, 8192, deep),
                                        (4, 128, True, 32, 8192, wide), (4, 64, False, 24, 8192, deep),
                                        (4, 64, False, 32, 8192, (8, 2, 2, True, False)),
                                        (8, 128, False, 24, 4096, wide8), (8, None, True, 24, 10240, wide8),
                                        (8, None, True, 32, 10240, (4, 2, 2, True, False)),
                                        (8, None, False, 32, 8192, wide8),
                                        (4, 128, False, 32, 4096, (8, 2, 2, True, False)),
                                        (8, 64, True, 32, 8192, (4, 2, 2, True, False))):
        cfg = pick_mixed_config(Q.PackedFormat(bits, group, zp, "bfloat16"), M, 8192, N)
        assert (cfg.warps, cfg.tiles, cfg.stages, cfg.async_copy, cfg.x_regs) == want, (bits, group, zp, M, N, cfg)
    for smem in (232448, A100_SMEM, 101376):
        for (bits, group, zp, dtype), M in itertools.product(FORMATS, (1, 5, 8, 12, 16, 24, 32)):
            fmt = Q.PackedFormat(bits, group, zp, str(dtype).split(".")[1])
            cfg = pick_mixed_config(fmt, M, 4096, 4096, smem=smem)
            cfg.validate(fmt, 4096, 4096, M)
            assert mixed.cta_smem_bytes(cfg, fmt, M) <= smem, (smem, fmt, M, cfg)
    assert not pick_mixed_config(Q.PackedFormat(4, 128, False, "bfloat16"), 16, 8192, 8192, smem=A100_SMEM).async_copy
    # int8, 8 warps at M = 32: the stages alone fit (200 KB) but not with the warps' 32 KB reduction
    with pytest.raises(ValueError, match="stages and the warps' reduction take 237568 bytes"):
        MixedConfig(8, 2, 128, stages=2, async_copy=True).validate(Q.PackedFormat(8, None, False, "bfloat16"),
                                                                   8192, 8192, 32)


def test_emulated_default_decoding_config(emulated: None) -> None:
    """The heuristic's configuration at M = 1 (shared-memory stages) on a split-K problem whose warps have
    uneven chunk counts."""
    assert pick_mixed_config(Q.PackedFormat(4, 128, False, "float16"), 1, 1408, 64).async_copy
    x, pw, b = _problem(4, 128, False, torch.float16, 1, 1408, 64)
    _check(Q.gemm(x, pw, b), x, pw, b)


def test_emulated_batched_x_and_m_past_64(emulated: None) -> None:
    """x (2, 35, K): 70 rows run as 32 + 32 + 6; no bias."""
    x, pw, _b = _problem(4, 128, False, torch.float16, 70, 128, 16, bias=False)
    y = tc.quant.gemm(x.reshape(2, 35, 128), pw)
    assert y.shape == (2, 35, 16)
    _check(y.reshape(70, 16), x, pw, None)


# ----------------------------------------------------------------------------- NVRTC

#: an A100's opt-in shared memory per CTA (163 KB): sm_80 compiles take the tilings that GPU gets
A100_SMEM = 166912


def _compile_args(bits: int, group: int | None, zp: bool, dtype: Any, M: int, K: int = 1024, N: int = 1024,
                  smem: int | None = None, pick_at: tuple[int, int] | None = None) -> tuple:
    """The kernel's arguments for a (K, N) weight and M rows, tiled as tc.gemm picks them for that weight, or as it
    picks them for a weight of `pick_at` = (K, N) (the tensors stay small: quick to quantize on the CPU)."""
    pw = Q.pack(Q.quantize(torch.randn(K, N), bits, group, zp), dtype)
    cfg = pick_mixed_config(pw.format, M, *(pick_at or (K, N)), **({"smem": smem} if smem else {}))
    return (torch.empty(M, K, dtype=dtype), pw.qweight, pw.scales, pw.zeros, torch.empty(N, dtype=dtype),
            torch.empty(M, N, dtype=dtype), torch.empty(M, N), torch.empty(N // 16, dtype=torch.int32), pw.format,
            cfg, -(-M // 8), mixed.stage_x_rows(cfg, M))


def _resources(arch: str, fmt: tuple, M: int) -> Any:
    return mixed_gemm_kernel.compile(*_compile_args(*fmt, M, smem=A100_SMEM if arch == "sm_80" else None),
                                     arch=arch).resources


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_format_compiles_without_spills(arch: str) -> None:
    """The heuristic's kernel (split-K, bias) of every format at M = 1 (the decoding case)."""
    for fmt in FORMATS:
        r = _resources(arch, fmt, 1)
        assert r.spills == 0 and r.stack_frame_bytes == 0 and r.registers <= 255, (arch, fmt, r)


@pytest.mark.skipif(find_tool("cuobjdump") is None, reason="no cuobjdump")
@pytest.mark.parametrize("dtype", DTYPES)
def test_int4_conversion_keeps_its_constants_in_registers(dtype: Any) -> None:
    """The int4 conversion's magic number comes through tc::mixed::kept, so ptxas holds it in a register
    instead of rematerializing a constant with an IMAD.MOV before nearly every LOP3 (W4 g128, M = 1,
    sm_90a, NVRTC 13: 101 such moves before, 3 after; the main loop lost 12-15% of its instructions)."""
    k = mixed_gemm_kernel.compile(*_compile_args(4, 128, False, dtype, 1), arch="sm_90a")
    text = sass(k.module.cubin)
    moves = len(re.findall(r"IMAD\.MOV\.U32 R\d+, RZ, RZ, 0x", text))
    assert moves <= 8, moves
    assert len(re.findall(r"\bHMMA\.16816", text)) >= 8                   # the conversion feeds the mma


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("M", [16, 24, 32])
def test_every_format_compiles_at_larger_m(arch: str, M: int) -> None:
    """M = 16 without spills, and on sm_90a M = 24 and the picks with x in registers at M = 32. Otherwise
    ptxas (NVRTC 13) may settle on a 4-byte spill: at M = 32 int8 g64 with zero points (x in the stages) at
    128 registers; for sm_80 int8 per channel with zero points at M = 17..24 (x in registers) at 168:
    allowed, nothing more."""
    for fmt in FORMATS:
        r = _resources(arch, fmt, M)
        x_regs = _compile_args(*fmt, M)[9].x_regs
        none = M <= 16 or (arch == "sm_90a" and (M <= 24 or x_regs))
        assert r.stack_frame_bytes <= (0 if none else 8), (arch, fmt, M, r)


@pytest.mark.parametrize("bits,M,N", [(4, 1, 8192), (4, 4, 16384), (4, 8, 16384), (8, 16, 16384)])
def test_wide_weight_picks_compile_without_spills(bits: int, M: int, N: int) -> None:
    """The picks of wide weights, which take more tiles than narrow ones (int4 at M = 1..4: two at N = K = 8192, and at
    N = 16384 with the reduction in the stages for g128; int4 at M = 5..8 and int8 at M = 9..16: four at N = 16384
    where two would keep two stages), compile for sm_90a without spills, every format."""
    tiles, reuse = set(), set()
    for group, zp, dtype in itertools.product((None, 32, 64, 128), (False, True), DTYPES):
        args = _compile_args(bits, group, zp, dtype, M, pick_at=(8192, N))
        cfg = args[9]
        tiles.add(cfg.tiles)
        reuse.add(cfg.reuse)
        r = mixed_gemm_kernel.compile(*args, arch="sm_90a").resources
        assert not r.spills and r.stack_frame_bytes == 0 and r.registers <= 255, (group, zp, dtype, cfg, r)
    assert max(tiles) == (2 if M <= 4 else 4), tiles
    assert reuse == ({False, True} if (M, N) == (4, 16384) else {False}), reuse


def _bench() -> Any:
    """benchmarks/bench_mixed.py as a module (its sweep's configurations)."""
    from benchmark_script import load_benchmark
    return load_benchmark("bench_mixed")


def _sweep_variants(Ms: tuple[int, ...]) -> list[tuple]:
    """(format, M, config) of every kernel --sweep compiles (splits are the grid's: one kernel each)."""
    bench = _bench()
    out = {}
    for bits, group in ((4, 128), (8, None)):
        for M in Ms:
            for cfg in bench.sweep_configs(bits, M):
                fmt = (bits, group, False, torch.float16)
                cfg = cfg or pick_mixed_config(Q.PackedFormat(bits, group, False, "float16"), M, 8192, 8192)
                out[(fmt, -(-M // 8), mixed.replace(cfg, splits=None))] = (fmt, M, cfg)
    return list(out.values())


def _variant_resources(arch: str, fmt: tuple, M: int, cfg: MixedConfig) -> Any:
    args = list(_compile_args(*fmt, M))
    args[9] = mixed.replace(cfg, splits=None)
    args[11] = mixed.stage_x_rows(cfg, M)
    return mixed_gemm_kernel.compile(*args, arch=arch).resources


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_pipeline_knobs_compile_without_spills(arch: str) -> None:
    """stages 2-4, prefetch and min_ctas on the decoding tiling, and 64-value chunks (half a group) in five
    shared-memory stages: no spills, and the register cap holds."""
    fmt = (4, 128, False, torch.float16)
    for cfg in (MixedConfig(4, 2, 128, stages=3), MixedConfig(4, 1, 128, stages=4, prefetch=4),
                MixedConfig(4, 4, 128, prefetch=2), MixedConfig(4, 2, 128, min_ctas=4, prefetch=2),
                MixedConfig(8, 4, 64, stages=5, async_copy=True)):
        r = _variant_resources(arch, fmt, 1, cfg)
        assert r.spills == 0 and r.stack_frame_bytes == 0, (arch, cfg, r)
        if cfg.min_ctas:
            assert r.registers <= 65536 // (cfg.threads * cfg.min_ctas), (arch, cfg, r)


def test_programmatic_dependent_launch_compiles() -> None:
    """prefetch_pdl (sm_90a): one thread asks L2 for each tile's first chunks (UBLKPF.L2: weights, and scales
    and zero points when grouped), every thread waits for the previous kernel (ACQBULK) and then lets the
    next one launch (PREEXIT) before anything else touches global memory; registers as without it."""
    for fmt, M in (((4, 128, False, torch.float16), 1), ((8, None, False, torch.bfloat16), 16),
                   ((4, 32, True, torch.bfloat16), 1)):
        args = _compile_args(*fmt, M)
        plain = mixed_gemm_kernel.compile(*args, arch="sm_90a")
        k = mixed_gemm_kernel.compile(*args, 8, arch="sm_90a")               # half of each CTA's k-range
        src = mixed_gemm_kernel.source(*args, 8)
        assert "tc::griddep_wait();" in src and "tc::griddep_launch_dependents();" in src
        ops = [ln.split(";")[0].split("*/")[-1].strip() for ln in sass(k.module.cubin).splitlines() if "*/" in ln]
        ops = [o.split()[0] if o else "" for o in ops]
        n_pf = ops.count("UBLKPF.L2")
        tiles = args[9].tiles
        assert n_pf == tiles * (1 + (fmt[1] is not None) + fmt[2]), (fmt, n_pf)
        first_mem = next(i for i, o in enumerate(ops) if o.startswith(("LDG", "STG", "RED", "ATOM", "LDGSTS")))
        assert ops.index("UBLKPF.L2") < ops.index("ACQBULK") < ops.index("PREEXIT") < first_mem, fmt
        assert k.resources.spills == 0 and k.resources.registers <= plain.resources.registers + 8, fmt
        assert "ACQBULK" not in sass(plain.module.cubin)


def test_pdl_prefetch_fraction() -> None:
    """prefetch_pdl = 0: a programmatic dependent launch with no prefetch (the wait and the trigger only);
    tc.gemm's default is a valid fraction."""
    args = _compile_args(4, 128, False, torch.float16, 1)
    ops = sass(mixed_gemm_kernel.compile(*args, 0, arch="sm_90a").module.cubin)
    assert "ACQBULK" in ops and "PREEXIT" in ops and "UBLKPF" not in ops
    assert isinstance(mixed.PDL_PREFETCH, int) and 0 <= mixed.PDL_PREFETCH <= 16


def test_timeline_records_four_fields_without_costing_registers() -> None:
    """timeline= (benchmarks/probe_pdl_timeline.py): thread 0 writes the SM and the global timer at entry,
    after the wait and at the end (split-K: after the last CTA's stores), reading %smid / %globaltimer at
    those points; the PDL kernel keeps its registers and shared memory."""
    args = _compile_args(4, 128, False, torch.float16, 1, 8192, 8192)
    tl = torch.empty(512, 4, dtype=torch.int64)
    src = mixed_gemm_kernel.source(*args, 2, tl)
    body = src[src.index("tc::globaltimer()"):]
    order = [body.index(s) for s in ("* timeline_stride_0 + 1] =", "* timeline_stride_0] =", "tc::griddep_wait()",
                                     "* timeline_stride_0 + 2] =", "cta_arrive_last", "* timeline_stride_0 + 3] =")]
    assert order == sorted(order), order
    assert src.count("tc::globaltimer()") == 3 and src.count("tc::smid()") == 1
    base = mixed_gemm_kernel.compile(*args, 2, arch="sm_90a").resources
    timed = mixed_gemm_kernel.compile(*args, 2, tl, arch="sm_90a").resources
    assert (timed.registers, timed.smem_bytes, timed.spill_store_bytes) == (base.registers, base.smem_bytes, 0)
    assert "globaltimer" not in mixed_gemm_kernel.source(*args, 2)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_sweep_variants_compile(arch: str) -> None:
    """Every kernel bench_mixed.py --sweep times compiles; all but those capped to 4 CTAs per SM (where
    ptxas may trade a few spills for occupancy, which the sweep then measures) without spills."""
    for fmt, M, cfg in _sweep_variants((1, 16)):
        r = _variant_resources(arch, fmt, M, cfg)
        assert r.registers <= 255 and (cfg.min_ctas or r.stack_frame_bytes == 0), (arch, fmt, M, cfg, r)


def test_sweep_configs_are_valid() -> None:
    """Every configuration of the sweep passes validate() at N = K = 8192."""
    bench = _bench()
    for bits, group in ((4, 128), (8, None)):
        fmt = Q.PackedFormat(bits, group, False, "float16")
        for M in (1, 2, 4, 8, 16):
            cfgs = bench.sweep_configs(bits, M)
            assert None in cfgs and len(set(cfgs)) == len(cfgs)
            for cfg in cfgs:
                (cfg or pick_mixed_config(fmt, M, 8192, 8192)).validate(fmt, 8192, 8192, M)


# ----------------------------------------------------------------------------- the grid

def test_pick_splits_reach_the_sms_in_one_wave() -> None:
    """_pick_splits keeps blocks x splits within the resident slots and a chunk per warp, and is the fewest
    splits whose CTAs reach 9 SMs in 10 (1 where the row blocks do); Llama-3-8B o at 3 CTAs per SM on 132
    SMs: 256 row blocks unsplit, 64 blocks of four tiles (one CTA per SM) in 2 slices, 96 (past one wave
    at 2) not split."""
    rng = random.Random(3)
    for _ in range(500):
        blocks, chunks, warps = rng.randint(1, 600), rng.randint(1, 300), rng.choice((1, 2, 4, 8))
        slots, sms = rng.randint(1, 800), rng.choice((66, 108, 132))
        s = mixed._pick_splits(blocks, chunks, warps, slots, sms)
        most = max(1, min(slots // blocks, chunks // warps, 64))
        assert 1 <= s <= most
        assert blocks * s >= sms * 9 // 10 or s == most
        assert s == 1 or blocks * (s - 1) < sms * 9 // 10
    assert mixed._pick_splits(256, 32, 4, 3 * 132, 132) == 1
    assert mixed._pick_splits(128, 32, 4, 3 * 132, 132) == 1
    assert mixed._pick_splits(64, 112, 8, 132, 132) == 2
    assert mixed._pick_splits(96, 32, 8, 132, 132) == 1


def test_launch_grid_off_a_gpu() -> None:
    """Off a GPU the launch assumes 132 SMs and 3 CTAs each; a config's own splits are kept."""
    x, pw, _b = _problem(4, 128, False, torch.float16, 1, 8192, 1024, bias=False)
    assert mixed.launch_grid(x, pw, MixedConfig(4, 4, 128)) == (16, 8)     # 128 CTAs
    assert mixed.launch_grid(x, pw, MixedConfig(4, 4, 128, splits=5)) == (16, 5)


@pytest.mark.gpu
def test_gpu_launch_grid_uses_the_kernels_occupancy() -> None:
    """On a GPU the CTAs per SM are the driver's occupancy of the compiled kernel (cached): for register
    buffers its registers' limit, for 8 shared-memory stages a limit its stages explain; the split
    picker fills the GPU with them."""
    x, pw, _b = _problem(4, 128, False, torch.float16, 1, 8192, 1024, device="cuda", bias=False)
    props = torch.cuda.get_device_properties(0)
    for cfg in (MixedConfig(4, 4, 128), MixedConfig(4, 2, 128, stages=8, async_copy=True)):
        args = mixed._kernel_args(x, pw, None, None, cfg)
        per_sm = mixed_gemm_kernel.max_active_blocks(*args, block=(cfg.threads,))
        assert mixed_gemm_kernel.max_active_blocks(*args, block=(cfg.threads,)) == per_sm
        regs = mixed_gemm_kernel.compile(*args).resources.registers
        by_regs = min(65536 // (-(-regs * 32 // 256) * 256 * cfg.warps), 2048 // cfg.threads)
        stages = mixed.stage_smem_bytes(cfg, pw.format, 1)
        if not cfg.async_copy:
            assert per_sm == by_regs, (cfg, regs, per_sm)
        else:
            assert 1 <= per_sm <= by_regs and per_sm * stages <= props.shared_memory_per_multiprocessor
            assert per_sm == by_regs or (per_sm + 1) * stages > props.shared_memory_per_multiprocessor - 8192, \
                (cfg, regs, stages, per_sm)
        blocks, splits = mixed.launch_grid(x, pw, cfg)
        slots = props.multi_processor_count * per_sm
        sms = props.multi_processor_count
        assert blocks * splits <= slots and splits == mixed._pick_splits(blocks, 64, 4, slots, sms)


# ----------------------------------------------------------------------------- errors

def test_entry_point_errors(emulated: None) -> None:
    x, pw, b = _problem(4, 128, False, torch.float16, 2, 128, 32)
    with pytest.raises(TypeError, match="PackedWeight"):
        Q.gemm(x, pw.unpack())
    with pytest.raises(TypeError, match="packed for torch.float16 activations"):
        Q.gemm(x.to(torch.bfloat16), pw)
    with pytest.raises(ValueError, match=r"K = 128"):
        Q.gemm(x[:, :64], pw)
    with pytest.raises(ValueError, match="bias must be a"):
        Q.gemm(x, pw, b[:16])
    with pytest.raises(ValueError, match="does not match the kernel's int8"):
        mixed.MixedGemm(Q.PackedFormat(8, 128, False, "float16"))(x, pw)
    forged = Q.PackedWeight(pw.qweight[:, :1].contiguous(), pw.scales, None, pw.shape, pw.format)
    with pytest.raises(ValueError, match="packed qweight must be a contiguous"):
        Q.gemm(x, forged)
    x8, pw8, _b8 = _problem(8, 64, False, torch.float16, 2, 192, 32)
    with pytest.raises(ValueError, match="chunk must be a multiple or a divisor of the group size 64"):
        Q.gemm(x8, pw8, config=MixedConfig(chunk=96))
    with pytest.raises(ValueError, match="N = 32 is not a multiple of 16 x tiles = 64"):
        Q.gemm(x, pw, config=MixedConfig(tiles=4))
    with pytest.raises(ValueError, match=r"stages must be in 2\.\.4"):
        Q.gemm(x, pw, config=MixedConfig(tiles=2, stages=5))
    with pytest.raises(ValueError, match="prefetch must be in 0..8"):
        Q.gemm(x, pw, config=MixedConfig(tiles=2, prefetch=9))
    with pytest.raises(ValueError, match="min_ctas must be in 1..16"):
        Q.gemm(x, pw, config=MixedConfig(tiles=2, min_ctas=17))
    with pytest.raises(ValueError, match=r"pdl_prefetch must be an int in 0\.\.16"):
        mixed.MixedGemm(pw.format, pdl_prefetch=17)(x, pw)
    with pytest.raises(ValueError, match="need an sm_90 or newer GPU"):
        mixed.MixedGemm(pw.format, pdl=True)(x, pw)                       # the emulator's CPU tensors


def test_config_types_route_or_are_refused(monkeypatch: Any) -> None:
    """tc.quant.gemm's config: a MixedConfig runs the small-M kernel, an RsConfig or Sm90MixedConfig a Hopper
    kernel (which refuses a GPU that is not sm_90, naming the way out), anything else is a TypeError."""
    from tilecraft.gemm import op, sm90_mixed
    from tilecraft.gemm.sm90_mixed_rs import RsConfig

    x, pw, b = _problem(4, 128, False, torch.float16, 2, 128, 32)
    with pytest.raises(TypeError, match="config must be a MixedConfig, an RsConfig or an Sm90MixedConfig, got str"):
        Q.gemm(x, pw, config="w4_t1_c128")
    routed: list = []
    with monkeypatch.context() as m:
        m.setattr(sm90_mixed, "sm90_mixed_run", lambda x, w, bias, config=None: routed.append(config) or
                  (lambda x, w, bias: "hopper"))
        for cfg in (RsConfig(blk_m=64), sm90_mixed.pick_sm90_mixed_config(pw.format, 256, 32, 128, 132)):
            assert Q.gemm(x, pw, b, config=cfg) == "hopper"
        assert [type(c) for c in routed] == [RsConfig, sm90_mixed.Sm90MixedConfig]
    op.clear_plans()                                                            # (the routed calls' plans)
    monkeypatch.setattr(mixed, "_check_device", lambda x: None)                 # an sm_80 GPU, faked
    monkeypatch.setattr(op, "_device_facts", lambda device: (108, (8, 0)))
    with pytest.raises(ValueError, match=r"config RsConfig\) need an sm_90 GPU, this one is sm_80; leave config out"):
        Q.gemm(x, pw, b, config=RsConfig(blk_m=64))


def test_programmatic_launches_by_default_on_sm90_with_an_occupancy_cap(monkeypatch: Any) -> None:
    """On an sm_90 GPU MixedGemm launches as programmatic dependent launches unless told otherwise, each at
    most ceil(CTAs / SMs) CTAs per SM (``pdl_ctas_per_sm``); before sm_90, or with pdl=False, plainly and
    uncapped. The GPU is faked: the launches are recorded, not run."""
    from tilecraft.dsl.kernel import Kernel

    x, pw, _b = _problem(4, 128, False, torch.float16, 1, 1024, 4096)
    binds: list[dict] = []
    monkeypatch.setattr(Kernel, "bind", lambda self, *a, **kw: binds.append(kw) or (lambda *args, stream=None: None))
    monkeypatch.setattr(mixed, "_check_device", lambda x: None)
    monkeypatch.setattr(mixed, "_sm_count", lambda x: 132)
    monkeypatch.setattr(mixed, "_RUNS", {})
    for cc, pdl, want in (((9, 0), None, True), ((9, 0), False, False), ((8, 0), None, False)):
        monkeypatch.setattr(mixed, "_device_cc", lambda x, cc=cc: cc)
        run = mixed.cached_run(("probe", cc, pdl), x, pw, None, mixed.MixedGemm(pw.format, pdl=pdl)._prepare)
        kw = binds[-1]
        blocks, splits = kw["grid"]
        assert run.pdl == kw["pdl"] == want, (cc, pdl)
        assert kw["max_ctas_per_sm"] == (-(-blocks * splits // 132) if want else None), (cc, pdl, kw)
    assert mixed.pdl_ctas_per_sm(512, 132) == 4 and mixed.pdl_ctas_per_sm(100, 132) == 1
    with pytest.raises(TypeError, match="pdl must be None, True or False"):
        mixed.MixedGemm(pw.format, pdl="yes")(x, pw)


def test_device_check_needs_cuda() -> None:
    x, pw, _b = _problem(4, 128, False, torch.float16, 2, 128, 32)
    with pytest.raises(ValueError, match="CUDA tensors"):
        Q.gemm(x, pw)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", FORMATS)
def test_gpu_random_shapes(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    rng = random.Random(f"{bits}-{group}-{zp}-{dtype}")
    G = group or 128
    for M in (1, rng.randint(2, 8), rng.randint(9, 16), rng.randint(17, 32), 100):
        K = G * rng.randint(1, 24) * (2 if bits == 4 and G == 32 else 1)
        N = 16 * rng.randint(1, 96)
        x, pw, b = _problem(bits, group, zp, dtype, M, K, N, seed=M, device="cuda", bias=rng.random() < 0.5)
        y = Q.gemm(x, pw, b)
        torch.cuda.synchronize()
        _check(y, x, pw, b)


def _gpu_configs(fmt: tuple, tag: str, cases: Any, k_range: tuple[int, int], n_unit: int,
                 n_range: tuple[int, int]) -> None:
    """Each (M, config) of cases(rng) on a random K = 128 x k_range, N = n_unit x n_range problem of format
    fmt (bias half the time) against float64; rng seeded by the format and tag."""
    bits, group, zp, dtype = fmt
    rng = random.Random(f"{bits}-{group}-{zp}-{dtype}-{tag}")
    for M, cfg in cases(rng):
        K = 128 * rng.randint(*k_range)
        N = n_unit * rng.randint(*n_range)
        x, pw, b = _problem(bits, group, zp, dtype, M, K, N, seed=M, device="cuda", bias=rng.random() < 0.5)
        y = Q.gemm(x, pw, b, config=cfg)
        torch.cuda.synchronize()
        _check(y, x, pw, b)


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", FORMATS)
def test_gpu_async_copy_stages(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    """Shared-memory stages through cp.async (every format, M up to 32, chunk counts that are not multiples
    of the stages, split-K by the heuristic and fixed) against float64."""
    # 7 stages: int8 g32 with zero points at 8 is over SMEM_MAX (validate refuses it)
    _gpu_configs((bits, group, zp, dtype), "async", lambda rng: (
        (1, MixedConfig(4, 2, 128, stages=7, async_copy=True)),
        (rng.randint(2, 16), MixedConfig(4, 1, 128, stages=6, async_copy=True)),
        (rng.randint(17, 32), MixedConfig(2, 2, 128, splits=3, stages=4, async_copy=True))), (3, 40), 32, (1, 48))


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", FORMATS)
def test_gpu_x_in_registers(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    """x_regs (x's fragments from global memory a chunk ahead, the stages holding weights only): every format,
    an even and an odd stage count, M up to 32, split-K by the heuristic and fixed, runs, against float64."""
    _gpu_configs((bits, group, zp, dtype), "xregs", lambda rng: (
        (rng.randint(1, 8), MixedConfig(4, 1, 128, stages=4, async_copy=True, x_regs=True)),
        (rng.randint(9, 16), MixedConfig(4, 2, 128, stages=4, async_copy=True, x_regs=True)),
        (rng.randint(9, 16), MixedConfig(4, 1, 128, stages=3, async_copy=True, runs=True, x_regs=True)),
        (rng.randint(17, 32), MixedConfig(8, 2, 128, splits=3, stages=2, async_copy=True, x_regs=True))),
        (3, 40), 32, (1, 48))


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", FORMATS)
def test_gpu_short_chunks(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    """Chunks of 64 k (shorter than groups of 128: each chunk scaled by its group's scales) in shared-memory
    and register stages against float64."""
    _gpu_configs((bits, group, zp, dtype), "short", lambda rng: (
        (rng.randint(9, 16), MixedConfig(4, 4, 64, stages=4, async_copy=True)),     # valid for all formats
        (rng.randint(1, 8), MixedConfig(4, 2, 64, stages=3))), (2, 64), 64, (1, 24))


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,M,K,N", [(8, None, False, 8, 4096, 6144), (8, None, True, 16, 4096, 6144),
                                                  (4, 128, True, 6, 4096, 6144), (4, 128, False, 12, 8192, 10240),
                                                  (4, 32, True, 16, 8192, 10240), (4, 128, False, 16, 4096, 4096)])
def test_gpu_wave_balanced_picks(bits: int, group: int | None, zp: bool, M: int, K: int, N: int) -> None:
    """The picks the wave balance changes (Llama-3-8B / 70B qkv widths) against float64."""
    x, pw, b = _problem(bits, group, zp, torch.bfloat16, M, K, N, seed=M, device="cuda")
    cfg = pick_mixed_config(pw.format, M, K, N, torch.cuda.get_device_properties(0).multi_processor_count)
    assert cfg.tiles == (1 if bits == 8 or M <= 8 else 2)
    y = Q.gemm(x, pw, b)
    torch.cuda.synchronize()
    _check(y, x, pw, b)


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype,M,K,N", [(8, None, False, torch.bfloat16, 12, 4096, 14336),
                                                        (8, 128, True, torch.float16, 16, 1024, 16384),
                                                        (4, 128, False, torch.bfloat16, 5, 2048, 14336),
                                                        (4, 64, True, torch.float16, 8, 1024, 16384),
                                                        (4, 32, True, torch.float16, 7, 1024, 22016)])
def test_gpu_four_tile_picks(bits: int, group: int | None, zp: bool, dtype: Any, M: int, K: int, N: int) -> None:
    """The picks that take four tiles where one wave of two leaves two stages, against float64."""
    x, pw, b = _problem(bits, group, zp, dtype, M, K, N, seed=M, device="cuda", bias=True)
    cfg = pick_mixed_config(pw.format, M, K, N, torch.cuda.get_device_properties(0).multi_processor_count)
    assert (cfg.warps, cfg.tiles, cfg.stages) == (4, 4, 3), cfg
    y = Q.gemm(x, pw, b)
    torch.cuda.synchronize()
    _check(y, x, pw, b)


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", FORMATS)
def test_gpu_reduction_in_the_stages(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    """reuse (the warps' reduction in the weights' stages): every format, one to four m-blocks, 4 and 8 warps, split-K
    by the heuristic and fixed, x in the stages and in registers, against float64; and the picks that take it."""
    chunk = 64 if group == 32 else 128
    _gpu_configs((bits, group, zp, dtype), "reuse", lambda rng: (
        (rng.randint(1, 4), MixedConfig(4, 2, chunk, stages=4, async_copy=True, reuse=True)),
        (rng.randint(5, 16), MixedConfig(8, 4 if bits == 4 else 2, chunk, stages=2, async_copy=True, reuse=True)),
        (rng.randint(9, 16), MixedConfig(4, 2, chunk, stages=3, async_copy=True, x_regs=True, reuse=True)),
        (rng.randint(17, 32), MixedConfig(4, 1, 128, splits=3, stages=2, async_copy=True, reuse=True))),
        (3, 40), 64, (1, 48))
    for M, K in ((3, 1024), (4, 4096)):
        x, pw, b = _problem(bits, group, zp, dtype, M, K, 16384, seed=M, device="cuda", bias=True)
        y = Q.gemm(x, pw, b)
        torch.cuda.synchronize()
        _check(y, x, pw, b)


@pytest.mark.gpu
def test_gpu_llama_shape_and_repeated_calls() -> None:
    """N = K = 4096 int4 g128 (split-K): three calls give the same answer up to fp32 reassociation."""
    x, pw, b = _problem(4, 128, False, torch.float16, 4, 4096, 4096, device="cuda")
    ys = [Q.gemm(x, pw, b) for _ in range(3)]
    for y in ys:
        _check(y, x, pw, b)
    assert float((ys[0].float() - ys[2].float()).abs().max()) <= 2e-2 * float(ys[0].float().abs().max())


@pytest.mark.gpu
@pytest.mark.parametrize("bits,group,zp,dtype", [(4, 128, False, torch.bfloat16), (8, None, False, torch.float16),
                                                 (4, 32, True, torch.float16), (8, 64, True, torch.bfloat16)])
def test_gpu_dependent_chain_with_programmatic_launches(bits: int, group: int | None, zp: bool, dtype: Any) -> None:
    """x of call i+1 = y of call i, 24 calls back to back with no synchronization, as programmatic dependent
    launches (MixedGemm(pdl=True): each kernel starts during its predecessor and must wait for it before
    reading x or using the shared split-K workspace): every step equals float64 of its own input; the same
    chain launched without PDL too. Every fourth input is rescaled (so the values stay in range)."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("programmatic dependent launches need sm_90")
    for M, K in ((1, 2048), (5, 1024), (16, 4096)):
        pws = [_problem(bits, group, zp, dtype, 1, K, K, seed=s, device="cuda", bias=False)[1] for s in range(3)]
        x0 = torch.randn(M, K, device="cuda").to(dtype)
        for pdl in (True, False):
            run = mixed.MixedGemm(pws[0].format, pdl=pdl)
            xs = [x0]
            for i in range(24):
                xs.append(run(xs[-1] / xs[-1].abs().amax().clamp(min=1e-3) if i % 4 == 3 else xs[-1], pws[i % 3]))
            torch.cuda.synchronize()
            planned = mixed.cached_run(("sm80", run), x0, pws[0], None, run._prepare)   # the calls' plan
            assert planned.pdl == pdl
            for i in range(24):
                xin = xs[i] / xs[i].abs().amax().clamp(min=1e-3) if i % 4 == 3 else xs[i]
                _check(xs[i + 1], xin, pws[i % 3], None)


@pytest.mark.gpu
def test_tc_gemm_dispatches_packed_weights():
    """tc.gemm(x, packed_weight, bias=...) is the mixed-input GEMM; other epilogue arguments are refused."""
    torch.manual_seed(0)
    x = torch.randn(4, 1024, device="cuda", dtype=torch.float16)
    w = torch.randn(1024, 512)
    pw = Q.pack(Q.quantize(w, 4, 128), torch.float16).to("cuda")
    bias = torch.randn(512, device="cuda", dtype=torch.float16)
    y = tc.gemm(x, pw, bias=bias)
    ref = x.double() @ pw.dequantize().double().cuda() + bias.double()
    assert float((y.double() - ref).norm() / ref.norm()) < 2e-3
    with pytest.raises(ValueError, match="bias= only"):
        tc.gemm(x, pw, alpha=2.0)
