"""The Hopper mixed-input GEMM for large M (tilecraft/gemm/sm90_mixed.py).

CPU: a model of the producer, thread by thread (the words each lane loads, the half swap with lane ^ 1
as sm90_mixed.cuh does it in bits, the scale and zero point of its row, the 16-byte store at the
address the stage layout gives) builds the (BLK_N, BLK_K) W^T stage from a packed weight, and it must
equal dequantize(W).to(fp16 / bf16)^T bit for bit, ragged N and K included; every format compiles by
NVRTC for sm_90a, both tilings, without spills, with HGMMA in the SASS.
GPU (H100 / H200): random shapes, every format, M from 64 to 4096, against float64; tc.gemm takes the
new path for large M.
"""
from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
from mixed_gemm_check import check_mixed_gemm

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft import dsl  # noqa: E402
from tilecraft.gemm import sm90, sm90_mixed  # noqa: E402
from tilecraft.gemm.sm90 import Sm90Config  # noqa: E402
from tilecraft.gemm.sm90_mixed import (  # noqa: E402
    Sm90MixedConfig, block_words, group_slot, lane_chunk, pick_sm90_mixed_config, slot_group,
)
from tilecraft.quant.pack import k_block  # noqa: E402

DTYPES = (torch.float16, torch.bfloat16)
FORMATS = list(itertools.product((4, 8), (None, 32, 64, 128), (False, True), DTYPES))
_ID = lambda f: f"int{f[0]}-g{f[1]}-{'zp' if f[2] else 'sym'}-{str(f[3])[6:]}"  # noqa: E731
_M32 = 0xFFFFFFFF


def _format(fmt: tuple) -> Q.PackedFormat:
    """The PackedFormat of a FORMATS entry."""
    return Q.PackedFormat(fmt[0], fmt[1], fmt[2], str(fmt[3])[6:])


def _weight(bits: int, group: int | None, zp: bool, dtype: Any, K: int, N: int, seed: int = 0) -> Any:
    g = torch.Generator().manual_seed(seed)
    return Q.pack(Q.quantize(torch.randn(K, N, generator=g) * 0.05, bits, group, zp), dtype)


# ----------------------------------------------------------------------------- the producer, modelled

def _rotl(w: int, n: int) -> int:
    return ((w << n) | (w >> (32 - n))) & _M32


def _prmt(a: int, b: int, sel: int) -> int:
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def _u4_row(w: int, partner: int, odd: bool) -> list[int]:
    """sm90_mixed.cuh's u4_row_chunk: the 8 unsigned values it stores, k offsets 0..7. The partner sent its
    word rotated by its own parity's amount; the converters' registers hold nibbles (r, r + 4) and the
    store writes registers 0, 2, 1, 3."""
    got = _rotl(partner, 4 if not odd else 28)                              # the partner's parity is not odd
    keep = 0xF0F0F0F0 if odd else 0x0F0F0F0F
    x = (w & keep) | (got & ~keep & _M32)
    nib = [(x >> (4 * i)) & 0xF for i in range(8)]
    regs = [(nib[r], nib[r + 4]) for r in range(4)]
    return [v for r in (0, 2, 1, 3) for v in regs[r]]


def _u8_row(w: tuple[int, int], partner: tuple[int, int], odd: bool) -> list[int]:
    """u8_row_chunk: keep this row's bytes, take the partner's of the same row; registers 0..3 in order."""
    mine = _prmt(w[0], w[1], 0x7632 if odd else 0x5410)
    got = _prmt(partner[0], partner[1], 0x5410 if not odd else 0x7632)    # sent by the partner (parity: not odd)
    lo, hi = (got, mine) if odd else (mine, got)
    return [(v >> (8 * i)) & 0xFF for v in (lo, hi) for i in range(4)]


def test_header_matches_the_model() -> None:
    """The model above uses the header's constants and store orders (so the two cannot drift apart)."""
    text = (Path(tc.__file__).parent / "include" / "tilecraft" / "sm90_mixed.cuh").read_text()
    for c in ("rotl(send, odd ? 4u : 28u)", "odd ? 0xf0f0f0f0u : 0x0f0f0f0fu", "prmt(w0, w1, odd ? 0x7632u : 0x5410u)",
              "prmt(p0, p1, odd ? 0x5410u : 0x7632u)", "lo = odd ? got : mine, hi = odd ? mine : got",
              "mul2(a[0], s2), hmul2(a[2], s2), hmul2(a[1], s2), hmul2(a[3], s2)",
              "mul2(a[0], s2), hmul2(a[1], s2), hmul2(a[2], s2), hmul2(a[3], s2)",
              "mul.rn.f16x2", "mul.rn.bf16x2", "__shfl_xor_sync(0xffffffffu, sent, 1)"):
        assert c in text, c


def _stage_from_producer(pw: Any, cfg: Sm90MixedConfig, n_tile: int, kt: int, stage: int) -> Any:
    """The (BLK_N, BLK_K) tile the 128 producer threads write into stage `stage` for k-tile kt of n-tile
    n_tile, read back through the stage layout (float64; NaN where nothing was written)."""
    fmt, (K, N) = pw.format, pw.shape
    dt = getattr(torch, fmt.dtype)
    t = cfg.tile
    bN, bK = t.blk_n, t.blk_k
    lay = sm90.smem_layout(dsl.float16 if fmt.dtype == "float16" else dsl.bfloat16, "K", bN, bK, t.stages)
    smem = torch.full((tc.cosize(lay),), float("nan"), dtype=torch.float64)
    qw = (pw.qweight.to(torch.int64) & _M32).tolist()
    S = pw.scales.double()
    Z = pw.zeros.double() if pw.zeros is not None else None
    KB = k_block(fmt.bits)
    G = fmt.group_size
    groups = K // G if G else 1
    for thread in range(128):
        for i in range(bN // 64):
            for j in range(bK // 16):
                tile, lane, h, row, k = lane_chunk(thread, i, j)
                tg = min(n_tile * bN // 16 + tile, N // 16 - 1)
                c, words = block_words(fmt.bits, j)
                kb = kt * (bK // KB) + c
                valid = kb < K // KB
                kb = min(kb, K // KB - 1)
                mine = [qw[tg][kb][lane][w] for w in words]
                other = [qw[tg][kb][lane ^ 1][w] for w in words]
                odd = lane % 2 == 1
                vals = _u4_row(mine[0], other[0], odd) if fmt.bits == 4 else _u8_row(tuple(mine), tuple(other), odd)
                grp = min(slot_group(G, kt, group_slot(G, j)), groups - 1)
                s = float(S[tg, grp, lane // 4, h]) if valid else 0.0
                z = float(Z[tg, grp, lane // 4, h]) if Z is not None else fmt.offset
                out = (torch.tensor(vals, dtype=torch.float64) - z) * s      # exact in float64 and float32
                off = lay((row, k, stage))
                smem[off:off + 8] = out.to(dt).double()                      # one rounding, as mul.rn
    return torch.tensor([[float(smem[lay((r, kk, stage))]) for kk in range(bK)] for r in range(bN)], dtype=torch.float64)


MODEL_CASES = [  # (bits, group, zp, dtype, K, N, tile, n_tile, kt): every format once, ragged N and K
    (4, 128, False, torch.float16, 256, 320, 256, 1, 3),       # N = 320: the second n-tile has 64 real rows
    (4, 64, True, torch.bfloat16, 192, 256, 256, 0, 2),
    (4, 32, False, torch.bfloat16, 128, 128, 128, 0, 1),       # two groups per k-tile
    (4, None, True, torch.float16, 128, 192, 128, 1, 0),
    (8, 128, True, torch.bfloat16, 256, 256, 256, 0, 3),
    (8, 64, False, torch.float16, 128, 128, 128, 0, 1),
    (8, 32, True, torch.float16, 96, 128, 128, 0, 1),          # K % 64 == 32: the k-tile's second half is zero
    (8, None, False, torch.bfloat16, 160, 64, 256, 0, 2),      # ragged K, per-channel, N < BLK_N
]


@pytest.mark.parametrize("bits,group,zp,dtype,K,N,blk_n,n_tile,kt", MODEL_CASES)
def test_producer_model_writes_the_dequantized_tile(bits: int, group: int | None, zp: bool, dtype: Any, K: int,
                                                     N: int, blk_n: int, n_tile: int, kt: int) -> None:
    pw = _weight(bits, group, zp, dtype, K, N, seed=K + N)
    cfg = Sm90MixedConfig(Sm90Config(128, blk_n, 64, stages=4), 1)
    got = _stage_from_producer(pw, cfg, n_tile, kt, stage=2)
    ref = pw.dequantize(dtype).double().T                                  # (N, K) in the 16-bit type
    rows = range(n_tile * blk_n, min((n_tile + 1) * blk_n, N))
    want = torch.zeros(blk_n, 64, dtype=torch.float64)
    k_hi = min(64 * kt + 64, K)
    want[:len(rows), :k_hi - 64 * kt] = ref[rows.start:rows.stop, 64 * kt:k_hi]
    assert not torch.isnan(got).any()                                      # every element written once
    assert torch.equal(got[:len(rows)], want[:len(rows)])                  # bit-exact dequantized rows
    assert torch.isfinite(got).all()                                       # rows past N: finite repeats


def test_lane_chunks_tile_the_stage_once() -> None:
    """The (thread, tile, block) -> (row, k) map covers every 8-value chunk of a (BLK_N, 64) stage once."""
    for bn in (128, 256):
        seen = sorted((r[0] + 8 * r[1], k) for th in range(128) for i in range(bn // 64) for j in range(4)
                      for (*_x, r, k) in [lane_chunk(th, i, j)])
        assert seen == [(r, k) for r in range(bn) for k in range(0, 64, 8)]


@pytest.mark.parametrize("bn", [128, 256])
def test_producer_stores_are_bank_conflict_free(bn: int) -> None:
    """Every STS.128 of a producer warp: each quarter warp (8 lanes, the unit a 16-byte store is served
    in) writes 8 distinct 16-byte bank groups of the swizzled stage, through block_of's per-lane k-block
    order; the plain order (block j for every lane) would put the 8 lanes in 2 groups (4-way)."""
    lay = sm90.smem_layout(dsl.bfloat16, "K", bn, 64, 3)

    def groups(block: Any, thread0: int, i: int, j: int) -> list[int]:
        out = []
        for thread in range(thread0, thread0 + 32):
            _t, lane, _h, row, k = lane_chunk(thread, i, block(thread % 32, j))
            out.append(lay((row, k, 1)) * 2 // 16 % 8)                     # 16-byte bank group of the store
        return out

    for warp in range(4):
        for i in range(bn // 64):
            for j in range(4):
                g = groups(sm90_mixed.block_of, 32 * warp, i, j)
                assert all(len(set(g[q:q + 8])) == 8 for q in range(0, 32, 8)), (warp, i, j, g)
                plain = groups(lambda lane, j: j, 32 * warp, i, j)
                assert all(len(set(plain[q:q + 8])) == 2 for q in range(0, 32, 8))
    # every lane still converts each of its 4 blocks once per tile, and its partner's block is j ^ 2's
    for lane in range(32):
        assert sorted(sm90_mixed.block_of(lane, j) for j in range(4)) == [0, 1, 2, 3]
        assert all(sm90_mixed.block_of(lane ^ 1, j) == sm90_mixed.block_of(lane, j ^ 2) for j in range(4))


# ----------------------------------------------------------------------------- NVRTC

def _compile_args(fmt: tuple, cfg: Sm90MixedConfig, M: int = 256, K: int = 512, N: int = 512, bias: bool = True):
    bits, group, zp, dtype = fmt
    pw = _weight(bits, group, zp, dtype, K, N)
    x, y = torch.empty(M, K, dtype=dtype), torch.empty(M, N, dtype=dtype)
    args, _units = sm90_mixed.launch_args(x, pw, torch.empty(N, dtype=dtype) if bias else None, y, cfg)
    return args


def _configs(fmt: tuple) -> list[Sm90MixedConfig]:
    """The heuristic's tilings: the big tile (M >= 1024) and the split-K 128x128 one (M = 128)."""
    pf = _format(fmt)
    return [pick_sm90_mixed_config(pf, 4096, 8192, 8192, 132), pick_sm90_mixed_config(pf, 128, 8192, 8192, 132)]


@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_every_format_compiles_with_hgmma_and_no_spills(fmt: tuple) -> None:
    for cfg in _configs(fmt):
        args = _compile_args(fmt, cfg)
        k = sm90_mixed.sm90_mixed_kernel.compile(*args, arch="sm_90a")
        r = k.resources
        # int8 with zero points keeps 8 words, scales and zero points per tile in the producer's 104
        # registers; since the stores became conflict free (block_xor's in-place reordering) ptxas spills
        # one register there (4 bytes, int8-gNone-zp-float16 and int8-g32-zp-bfloat16): allowed, no more
        allowed = 8 if fmt[0] == 8 and fmt[2] else 0
        assert r.spill_store_bytes <= allowed // 2 and r.stack_frame_bytes <= allowed, (cfg.name, r)
        assert "serialized" not in k.module.log, k.module.log
        src = sm90_mixed.sm90_mixed_kernel.source(*args)
        assert f"setmaxnreg_dec<{cfg.tile.producer_regs}>" in src and "u4_row_chunk" in src or "u8_row_chunk" in src
        if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
            text = rt.sass(k.module.cubin)
            assert "HGMMA" in text and "UTMALDG" in text and "STS.128" in text and "SHFL.BFLY" in text


def test_configs_respect_the_register_file() -> None:
    for fmt in FORMATS:
        pf = _format(fmt)
        for cfg in _configs(fmt):
            cfg.validate(pf)
            t = cfg.tile
            assert 128 * (t.producer_regs + t.consumers * t.consumer_regs) <= 65536
    with pytest.raises(ValueError, match="depth"):
        Sm90MixedConfig(depth=5).validate(Q.PackedFormat(4, 128, False, "float16"))
    with pytest.raises(ValueError, match="at least 64 registers"):
        Sm90MixedConfig(Sm90Config(producer_regs=40)).validate(Q.PackedFormat(4, 128, False, "float16"))


def test_cpu_tensors_are_refused() -> None:
    pw = _weight(4, 128, False, torch.float16, 128, 64)
    with pytest.raises(ValueError, match="CUDA tensors"):
        sm90_mixed.sm90_mixed_gemm(torch.zeros(128, 128, dtype=torch.float16), pw)
    assert not sm90_mixed.use_sm90_mixed(torch.zeros(128, 128, dtype=torch.float16), pw)


# ----------------------------------------------------------------------------- GPU

#: relative Frobenius error vs float64 on the same 16-bit dequantized weights: the kernel's B operand is
#: exactly dequantize(W) in the 16-bit type (checked bit for bit above), products are exact and summed in
#: fp32 (error ~ sqrt(K) 2^-24, negligible), so what remains is the one rounding of y to fp16 / bf16:
#: RMS relative u / sqrt(3) with u = 2^-11 (2.8e-4) / 2^-8 (2.3e-3); the bound is ~3.5x / 2.6x that.
_TOL = {torch.float16: 1e-3, torch.bfloat16: 6e-3}


def _check(y: Any, x: Any, pw: Any, b: Any) -> None:
    check_mixed_gemm(y, x, pw, b, _TOL, x.dtype)


def _on_device(pw: Any) -> Any:
    return pw.to("cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_random_shapes(fmt: tuple) -> None:
    rng = random.Random(_ID(fmt))
    for M in (64, rng.randint(65, 300), rng.randint(300, 1500), 4096):
        random_case(fmt, rng, M)


def random_case(fmt: tuple, rng: random.Random, M: int, cfg: Any = None) -> None:
    """x (M, K) @ a random weight of format fmt (K a multiple of its group, N of 16, drawn from rng; a bias
    half the time) through sm90_mixed_gemm with tiling cfg (None: the heuristic's), against float64."""
    bits, group, zp, dtype = fmt
    G = group or 64
    K = G * rng.randint(1, 40) * (2 if bits == 4 and G == 32 else 1)
    N = 16 * rng.randint(1, 200)
    pw = _weight(bits, group, zp, dtype, K, N, seed=M).to("cuda")
    g = torch.Generator().manual_seed(M)
    x = torch.randn(M, K, generator=g).to(dtype).cuda()
    b = torch.randn(N, generator=g).to(dtype).cuda() if rng.random() < 0.5 else None
    y = sm90_mixed.sm90_mixed_gemm(x, pw, b, cfg)
    torch.cuda.synchronize()
    _check(y, x, pw, b)


@pytest.mark.gpu
@pytest.mark.parametrize("bits,K", [(8, 96), (8, 160), (4, 64)])
def test_gpu_ragged_k_and_every_tiling(bits: int, K: int) -> None:
    """K % 64 == 32 (int8), a single k-tile; each tiling (split-K, the deep ring) on the same problem."""
    pw = _weight(bits, None, True, torch.bfloat16, K, 272).to("cuda")
    x = torch.randn(200, K).to(torch.bfloat16).cuda()
    for tile, depth in ((Sm90Config(128, 256, 64, stages=4, producer_regs=104, consumer_regs=200), 1),
                        (Sm90Config(128, 128, 64, stages=6, producer_regs=104, consumer_regs=200, splits=2), 2)):
        y = sm90_mixed.sm90_mixed_gemm(x, pw, None, Sm90MixedConfig(tile, depth))
        torch.cuda.synchronize()
        _check(y, x, pw, None)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_cp_async_ring(fmt: tuple) -> None:
    """The producer's packed words through a shared-memory ring (cp.async), both tiles, ragged N, a K
    whose k-tiles outnumber the ring and one shorter than it, split-K (the ring restarts per work unit)."""
    bits, group, zp, dtype = fmt
    pf = Q.PackedFormat(bits, group, zp, str(dtype)[6:])
    G = group or 64
    for M, K, N, ring in ((300, G * 40 if G >= 64 else 2560, 16 * 37, 4), (130, 128, 16 * 9, 6), (64, 4096, 512, 3)):
        base = pick_sm90_mixed_config(pf, M, N, K, 132)
        cfg = sm90_mixed.with_ring(base, pf, ring)
        pw = _weight(bits, group, zp, dtype, K, N, seed=M).to("cuda")
        g = torch.Generator().manual_seed(K)
        x = torch.randn(M, K, generator=g).to(dtype).cuda()
        b = torch.randn(N, generator=g).to(dtype).cuda()
        y = sm90_mixed.sm90_mixed_gemm(x, pw, b, cfg)
        torch.cuda.synchronize()
        _check(y, x, pw, b)


@pytest.mark.gpu
def test_gpu_large_square_and_batched_x() -> None:
    """N = K = 4096 int4 g128 at M = 2048 (several waves of the persistent grid); x (2, 1024, K)."""
    pw = _weight(4, 128, False, torch.float16, 4096, 4096).to("cuda")
    x = torch.randn(2, 1024, 4096).to(torch.float16).cuda()
    y = tc.quant.gemm(x, pw)
    assert y.shape == (2, 1024, 4096)
    _check(y.reshape(2048, 4096), x.reshape(2048, 4096), pw, None)


@pytest.mark.gpu
def test_tc_gemm_dispatches_large_m_to_the_hopper_kernel() -> None:
    """On sm_90, tc.gemm(x, packed_w) runs the Hopper kernels from SM90_MIN_M rows on (the register-A
    one, sm90_mixed_rs.py, is the heuristic's pick) and the small-M one below."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    from tilecraft.gemm import mixed
    from tilecraft.gemm.op import clear_plans

    clear_plans()                                    # the runs below are the ones these three calls prepare
    pw = _weight(4, 128, False, torch.bfloat16, 1024, 512).to("cuda")
    bias = torch.randn(512).to(torch.bfloat16).cuda()
    for M in (sm90_mixed.SM90_MIN_M - 1, sm90_mixed.SM90_MIN_M, 1024):
        x = torch.randn(M, 1024).to(torch.bfloat16).cuda()
        y = tc.gemm(x, pw, bias=bias)
        _check(y, x, pw, bias)
    assert [run.path for run in mixed._RUNS.values()] == ["mixed", "sm90_mixed_rs", "sm90_mixed_rs"]
