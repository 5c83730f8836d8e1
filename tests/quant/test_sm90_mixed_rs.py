"""The Hopper mixed-input GEMM with the weight as wgmma's register A operand (tilecraft/gemm/sm90_mixed_rs.py).

CPU: a model of ``u4_frag`` / ``u8_frag`` (tilecraft/sm90_mixed.cuh), lane by lane: the two shuffles, the
byte permute, the magic-number conversion's value order and the row scales, must give every lane of a
warp exactly its wgmma A-fragment values (``layout_a`` of the rs atom) of dequantize(W) in the 16-bit
type, for every format, ragged K included. Every format compiles by NVRTC for sm_90a without spills and
without ptxas serializing the wgmmas, with HGMMA in the SASS.
GPU: random shapes, every format, against float64; the heuristic's choice through tc.gemm.
"""
from __future__ import annotations

import random
import struct
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mixed_gemm_check import check_mixed_gemm

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft import _, dsl  # noqa: E402
from tilecraft.dsl import hopper, threadIdx  # noqa: E402
from tilecraft.atoms import wgmma_atom  # noqa: E402
from tilecraft.gemm import sm90_mixed, sm90_mixed_rs  # noqa: E402
from tilecraft.gemm.sm90_mixed import block_words, group_slot, slot_group  # noqa: E402
from tilecraft.gemm.sm90_mixed_rs import RsConfig  # noqa: E402
from tilecraft.quant.pack import k_block  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "gemm"))
import sass  # noqa: E402  (tests/gemm/sass.py: SASS loop parsers)

# the producer kernel's tests' formats, weights and byte permute (the same packed weights feed both kernels)
from test_sm90_mixed import _ID, _M32, _TOL, FORMATS, _check, _format, _prmt, _weight, random_case  # noqa: E402


def _frag_values(bits: int, words: list[tuple[int, ...]], lane: int, sym: bool = False) -> list[int]:
    """The 8 unsigned values (A-fragment order v0..v7) lane `lane` converts, from the warp's words of one
    16-k block (words[l]: lane l's one int4 word or two int8 words), as u4_frag / u8_frag shuffle them; ``sym``:
    u8_frag's SYM form, whose sources send their bytes spread and whose pairs are read from bits 0-7 and 16-23."""
    q, src = lane % 4, (lane & 28) | (lane % 4 >> 1)
    odd = q & 1
    if bits == 4:
        x = _prmt(words[src][0], words[src + 2][0], 0x7351 if odd else 0x6240)
        nib = [(x >> (4 * i)) & 0xF for i in range(8)]
        return [nib[v // 2 + 4 * (v % 2)] for v in range(8)]               # value v: nibble v / 2 + 4 (v % 2)
    if sym:
        sel = [0x3120 if l % 4 < 2 else 0x7564 for l in range(32)]
        sent1 = [_prmt(w[0], w[1], sel[l]) for l, w in enumerate(words)]
        sent2 = [_prmt(w[1], w[0], sel[l]) for l, w in enumerate(words)]
    else:
        sent1 = [w[0] if l % 4 < 2 else w[1] for l, w in enumerate(words)]  # what each source lane sends
        sent2 = [w[1] if l % 4 < 2 else w[0] for l, w in enumerate(words)]
    r1 = sent1[src + 2 if odd else src]
    r2 = sent2[src if odd else src + 2]
    lo, hi = (r2, r1) if odd else (r1, r2)
    if sym:                                                               # s8x2_bf16(lo), (lo >> 8), (hi), (hi >> 8)
        return [(w >> (8 * s + 16 * i)) & 0xFF for w in (lo, hi) for s in range(2) for i in range(2)]
    return [(w >> (8 * i)) & 0xFF for w in (lo, hi) for i in range(4)]     # value v: byte v % 4 of word v / 4


def _bf16_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", (b & 0xFFFF) << 16))[0]


def _s8_bf16(q: int) -> float:
    """mixed::s8x2_bf16 on one byte q: (0x4300 | (q & 127)) - (0x4300 | (~q & 128)) as bf16 values (the fma's sum
    is an integer of at most 8 bits, so exact)."""
    return float(torch.tensor(_bf16_bits(0x4300 | (q & 0x7F)) - _bf16_bits(0x4300 | (~q & 0x80)),
                              dtype=torch.float64).to(torch.bfloat16))


def _model_tile(pw: Any, tg: int, kt: int) -> Any:
    """W^T's 16-row tile tg at k-tile kt (16, 64) as the 32 lanes' A fragments hold it after conversion,
    placed by the rs atom's A layout (float64; NaN where no lane put a value): (q - z) * s in the 16-bit
    type, or with per-channel scales (applied to the accumulators) the exact q - z."""
    fmt, K = pw.format, pw.shape[0]
    dt = getattr(torch, fmt.dtype)
    qw = (pw.qweight.to(torch.int64) & _M32).tolist()
    S = pw.scales.double()
    Z = pw.zeros.double() if pw.zeros is not None else None
    KB, G = k_block(fmt.bits), fmt.group_size
    groups = K // G if G else 1
    layout_a = wgmma_atom(64, "f16" if fmt.dtype == "float16" else "bf16", operands="rs").layout_a_tv
    out = torch.full((16, 64), float("nan"), dtype=torch.float64)
    sym = fmt.bits == 8 and fmt.dtype == "bfloat16" and not fmt.zero_point   # u8_frag's SYM form
    for j in range(4):
        c, widx = block_words(fmt.bits, j)
        kb = min(kt * (64 // KB) + c, K // KB - 1)
        words = [tuple(qw[tg][kb][lane][w] for w in widx) for lane in range(32)]
        grp = min(slot_group(G, kt, group_slot(G, j)), groups - 1) if G else 0
        for lane in range(32):
            vals = _frag_values(fmt.bits, words, lane, sym)
            for v in range(8):
                h = v // 2 % 2                                            # rows g (h = 0) and g + 8
                s = float(S[tg, grp, lane // 4, h]) if G else 1.0
                z = float(Z[tg, grp, lane // 4, h]) if Z is not None else fmt.offset
                flat = layout_a(lane, v)                                  # (M64, K16) of warp 0: m + 64 k
                m, k = flat % 64, flat // 64
                assert m < 16
                v_z = _s8_bf16(vals[v]) if sym else vals[v] - z
                out[m, 16 * j + k] = float(torch.tensor(v_z * s, dtype=torch.float64).to(dt))
    return out


MODEL_CASES = [  # (bits, group, zp, dtype, K, N, tg, kt)
    (4, 128, False, torch.float16, 256, 64, 3, 3),
    (4, 64, True, torch.bfloat16, 192, 32, 1, 2),
    (4, 32, False, torch.bfloat16, 128, 16, 0, 1),             # two groups per k-tile
    (4, None, True, torch.float16, 128, 48, 2, 0),
    (8, 128, True, torch.bfloat16, 256, 32, 1, 3),
    (8, 64, False, torch.float16, 128, 16, 0, 1),
    (8, 32, True, torch.float16, 96, 16, 0, 1),                # K % 64 == 32: the second half re-reads k 64..95
    (8, None, False, torch.bfloat16, 160, 16, 0, 2),
    (8, 64, False, torch.bfloat16, 256, 32, 1, 3),                # symmetric int8 bf16 (SYM) with group scales
    (8, None, True, torch.bfloat16, 128, 16, 0, 1),               # int8 bf16 with per-channel zero points
]


@pytest.mark.parametrize("bits,group,zp,dtype,K,N,tg,kt", MODEL_CASES)
def test_fragments_hold_the_dequantized_weight(bits: int, group: int | None, zp: bool, dtype: Any, K: int, N: int,
                                               tg: int, kt: int) -> None:
    pw = _weight(bits, group, zp, dtype, K, N, seed=K + N)
    got = _model_tile(pw, tg, kt)
    qw = pw.unpack()
    if group is None:                                                     # q - z: exact in the 16-bit type
        q = qw.qweight.double() - (qw.zeros.double() if zp else 0.0)
        ref = q.to(dtype).double().t()
    else:
        ref = pw.dequantize(dtype).double().t()                           # (N, K)
    k0 = 64 * kt
    real = min(64, K - k0)
    assert not torch.isnan(got).any()
    assert torch.equal(got[:, :real], ref[16 * tg:16 * tg + 16, k0:k0 + real])
    if real < 64:                                                         # int8, K % 64 == 32: finite values
        assert torch.isfinite(got[:, real:]).all()                        # that meet x's zero fill


def test_header_matches_the_model() -> None:
    text = (Path(tc.__file__).parent / "include" / "tilecraft" / "sm90_mixed.cuh").read_text()
    for c in ("(threadIdx.x & 28u) | ((threadIdx.x & 3u) >> 1)", "(threadIdx.x & 1u) ? 0x7351u : 0x6240u",
              "__shfl_sync(0xffffffffu, w, src), hi = __shfl_sync(0xffffffffu, w, src + 2u)",
              "first = spread ? mixed::prmt(w0, w1, sel) : (q < 2u ? w0 : w1)",
              "second = spread ? mixed::prmt(w1, w0, sel) : (q < 2u ? w1 : w0)",
              "__shfl_sync(0xffffffffu, first, odd ? src + 2u : src)",
              "__shfl_sync(0xffffffffu, second, odd ? src : src + 2u)",
              "lo = odd ? r2 : r1, hi = odd ? r1 : r2",
              "sel = q < 2u ? 0x3120u : 0x7564u",
              "a[1] = mixed::s8x2_bf16(lo >> 8, e);",
              "a[0] = hmul2(a[0], sg); a[1] = hmul2(a[1], sh); a[2] = hmul2(a[2], sg); a[3] = hmul2(a[3], sh);"):
        assert c in text, c
    mixed = (Path(tc.__file__).parent / "include" / "tilecraft" / "mixed.cuh").read_text()
    assert "bfma2((~t & 0x00800080u) | e, 0xbf80bf80u, (t & 0x007f007fu) | e)" in mixed     # _s8_bf16
    assert "mixed::kept(0x43004300u)" in text


# ----------------------------------------------------------------------------- NVRTC

def _args(fmt: tuple, cfg: RsConfig, M: int = 256, K: int = 512, N: int = 512) -> tuple:
    bits, group, zp, dtype = fmt
    pw = _weight(bits, group, zp, dtype, K, N)
    x, y = torch.empty(M, K, dtype=dtype), torch.empty(M, N, dtype=dtype)
    # (stream-K sizes its workspace by the SMs; without them it would run as whole tiles)
    return sm90_mixed_rs.rs_launch_args(x, pw, torch.empty(N, dtype=dtype), y, cfg, 132 if cfg.stream_k else None)[0]


@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_every_format_compiles_unserialized_without_spills(fmt: tuple) -> None:
    for cfg, shape in ((RsConfig(), {}), (RsConfig(blk_m=128, stages=8, depth=3 if fmt[0] == 4 else 2), {}),
                       (replace(sm90_mixed_rs.WIDE, splits=2, w_smem=True), dict(M=33, K=384, N=272)),  # four, ragged
                       (RsConfig(blk_m=64, stages=8, depth=6, splits=2, w_smem=True), dict(M=33, K=384, N=272)),
                       (sm90_mixed_rs.pick_rs_config(150, 8192, 8192, 132, _format(fmt)), dict(M=150, K=384, N=272)),
                       (sm90_mixed_rs.pick_rs_config(200, 8192, 8192, 132, _format(fmt)), dict(M=200, K=384, N=272)),
                       (sm90_mixed_rs.pick_rs_config(320, 8192, 8192, 132, _format(fmt)), dict(M=300, K=384, N=272)),
                       (sm90_mixed_rs.PAIRS, dict(M=1100, K=384, N=272)),    # 2x1 clusters, y by TMA
                       (replace(sm90_mixed_rs.PAIRS, stream_k=1), dict(M=1100, K=384, N=272)),   # and stream-K
                       # ragged x tiles (136 rows), y by TMA
                       (sm90_mixed_rs.pick_rs_config(520, 4096, 14336, 132, _format(fmt)), dict(M=517, K=384, N=272)),
                       # three consumers by 224 rows: two wgmmas a 16-k block (not picked for int8 g32 zp)
                       (sm90_mixed_rs.pick_rs_config(1280, 4096, 4096, 132, _format(fmt)), dict(M=1300, K=384, N=272)),
                       # and by 208 rows, whole tiles: split_plan's first launch (not for int8 g32 zp: the pairs)
                       (sm90_mixed_rs.split_plan(880, 8448, 8192, 132, _format(fmt))[1] or sm90_mixed_rs.PAIRS,
                        dict(M=624, K=384, N=384)),
                       # and by 184 rows, one wgmma a 16-k block (_three_or's narrow tiles, every format)
                       (sm90_mixed_rs.pick_rs_config(1100, 4096, 4096, 132, _format(fmt)), dict(M=1100, K=384, N=384))):
        args = _args(fmt, cfg, **shape)
        assert (args[-1] is not None) == cfg.store_mn                       # y's TMA map
        if cfg.stream_k:                                                    # a partial tile per CTA, the flags
            assert args[7].numel() == 132 * cfg.blk_n * cfg.blk_m and args[12].numel() == 132 * cfg.consumers
        k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*args, arch="sm_90a")
        r = k.resources
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, (cfg.name, r)
        assert "serialized" not in k.module.log, k.module.log
        if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
            text = rt.sass(k.module.cubin)
            assert "HGMMA" in text and "UTMALDG" in text and "SHFL.IDX" in text and "STS.128" not in text
            assert ("UTMASTG" in text) == cfg.store_mn


@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_three_consumers_in_stream_k_keep_spills_out_of_the_k_loop(fmt: tuple) -> None:
    """``_three_stream_k_or``'s picks at 6144 x 4096, M = 1100 (three consumers by 224 rows of x in stream-K mode 2;
    the pairs for groups of 32 with zero points) and 10240 x 8192, M = 800 (by 208 rows in mode 1; the pairs for int8
    in groups of 32 with zero points) compile unserialized, with and without a bias. These kernels hold 128 registers
    a thread (512 threads), and stream-K's state leaves some grouped formats by 224 rows at 4-8 bytes of spills: one
    or two values stored before the main loop and loaded per tile outside it (with a bias, the bias's row offset).
    The main loop over K (the loop with the most HGMMAs, tests/gemm/sass.py) has no local-memory instruction."""
    bits, group, zp, dtype = fmt
    f = _format(fmt)
    picks = [sm90_mixed_rs.pick_rs_config(M, N, K, 132, f) for M, N, K in ((1100, 6144, 4096), (800, 10240, 8192))]
    three = [replace(sm90_mixed_rs.three_consumers(bm, f), stream_k=mode) for bm, mode in ((224, 2), (208, 1))]
    assert [p == t for p, t in zip(picks, three)] == [not (group == 32 and zp), not (bits == 8 and group == 32 and zp)]
    pw = _weight(bits, group, zp, dtype, 384, 384)
    x, y = torch.empty(1100, 384, dtype=dtype), torch.empty(1100, 384, dtype=dtype)
    for cfg in picks:
        for bias in (torch.empty(384, dtype=dtype), None):
            args = sm90_mixed_rs.rs_launch_args(x, pw, bias, y, cfg, 132)[0]
            k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*args, arch="sm_90a")
            r = k.resources
            assert r.spill_store_bytes <= (8 if cfg.blk_m == 224 else 0), (cfg.name, bias is None, r)
            assert "serialized" not in k.module.log
            if r.spill_store_bytes and sass.cuobjdump():                  # the loop with the HGMMAs: over K
                body = sass.hottest_loop_body(sass.sass(k.module.cubin), "HGMMA")
                assert body and not [x for x in body if x.startswith(("STL", "LDL"))], (cfg.name, bias is None)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[0] == 8], ids=_ID)
def test_symmetric_int8_bf16_converts_without_fp32(fmt: tuple) -> None:
    """Symmetric int8 into bf16 takes u8_frag's SYM form (two LOP3s and a bf16 fma a pair, mixed::s8x2_bf16): no
    FADD in the main loop of the narrow three-consumer tile (the one the every-format test compiles) and fewer
    instructions than the zero-point form of the same format, which (like fp16) keeps its converter."""
    bits, group, zp, dtype = fmt
    sym = dtype == torch.bfloat16 and not zp
    cfg = sm90_mixed_rs.pick_rs_config(1100, 4096, 4096, 132, _format(fmt))
    args = _args(fmt, cfg, M=1100, K=384, N=384)
    src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*args)
    assert (f"u8_frag<true, {'true' if group else 'false'}, true>(" in src) == sym
    if dtype != torch.bfloat16 or not sass.cuobjdump():                    # fp16: the source says it all
        return

    def main_loop(f: tuple) -> list[str]:
        k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*_args(f, cfg, M=1100, K=384, N=384), arch="sm_90a")
        return sass.hottest_loop_body(sass.sass(k.module.cubin), "HGMMA")

    body = main_loop(fmt)
    assert any(x.startswith("FADD") for x in body) == zp, cfg.name
    if sym:
        assert len(body) < len(main_loop((bits, group, True, dtype)))


def test_w_through_shared_memory_launches_a_map_of_the_words() -> None:
    """``w_smem``: the kernel's W argument is a TMA map of the packed words viewed (N / 16, K / KB x 128), its box
    one stage (BLK_N / 16 tiles x one k-tile's words); the stage counts against shared memory, and a tiling whose
    stages with W's no longer fit is refused; the kernel loads W by TMA and reads its words from shared memory."""
    from tilecraft.runtime.tma import TmaMap
    for fmt, words in (((4, 128, False, torch.bfloat16), 128), ((8, None, True, torch.float16), 256)):
        cfg = RsConfig(blk_m=64, stages=8, depth=6, splits=2, w_smem=True)
        args = _args(fmt, cfg, M=40, K=1024, N=512)
        qw = args[1]
        assert isinstance(qw, TmaMap) and qw.args.box_dims == (words, 128 // 16)
        assert qw.args.global_dims == (1024 // k_block(fmt[0]) * 128, 512 // 16)
        assert cfg.smem_bytes(fmt[0]) - RsConfig(blk_m=64, stages=8, depth=6, splits=2).smem_bytes(fmt[0]) \
            == 8 * 128 * 64 * fmt[0] // 8
        src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*args)
        assert "tma_load_2d" in src and "sW" in src
        assert "qw +" not in src                                         # no global loads of the words
        assert "qw +" in sm90_mixed_rs.sm90_mixed_rs_kernel.source(*_args(fmt, replace(cfg, w_smem=False), M=40, K=1024,
                                                                            N=512))
    with pytest.raises(ValueError, match="exceed"):                      # 6 x (32 KB of x + 8 KB of int8 W)
        RsConfig(stages=6, w_smem=True).validate(Q.PackedFormat(8, None, False, "bfloat16"))
    RsConfig(stages=5, w_smem=True).validate(Q.PackedFormat(8, None, False, "bfloat16"))
    RsConfig(stages=6).validate(Q.PackedFormat(8, None, False, "bfloat16"))


@dsl.kernel
def _k_blocks_kernel(out, blocks: dsl.Constexpr, halves: dsl.Constexpr = 1):
    """A register-A wgmma of a 64-k tile limited to `blocks` (hopper.wgmma_gemm's ``k_blocks``); with halves = 2,
    two wgmmas of 32 rows of x each into the two halves of one 32-value fragment."""
    from tilecraft.gemm.sm90 import ELEMENTS, smem_layout
    dtype, wg_type = ELEMENTS["bfloat16"]
    sX = dsl.smem_tensor(dtype, smem_layout(dtype, "K", 64, 64, 1), align=1024)
    afrag = dsl.make_rmem_tensor(dsl.uint32, (16,))
    for i in range(16):
        afrag[i] = dsl.convert(threadIdx.x + i, dsl.uint32)
    acc = dsl.make_rmem_tensor(dsl.float32, (32,))
    hopper.wgmma_fence()
    rows = 64 // halves
    for p in range(halves):
        sB = sX(_, _, 0) if halves == 1 else tc.local_tile(sX(_, _, 0), (rows, 64), (p, 0))
        part = acc if halves == 1 else tc.local_tile(acc, (32 // halves,), (p,))
        hopper.wgmma_gemm(wgmma_atom(rows, wg_type, operands="rs"), afrag, sB, part, accumulate=False, k_blocks=blocks)
    hopper.wgmma_commit()
    hopper.wgmma_wait(0)
    out[threadIdx.x] = acc(0) + acc(31)


def test_wgmma_gemm_issues_the_k_blocks_asked_for() -> None:
    """``hopper.wgmma_gemm(k_blocks=...)``: one wgmma per listed 16-k block, in the order given, the first
    taking ``accumulate``; indices outside the tile's blocks, or none, are refused while tracing."""
    from tilecraft.dsl.trace import TraceError
    out = torch.empty(128, dtype=torch.float32)
    src = _k_blocks_kernel.source(out, (2, 0))
    calls = [line for line in src.splitlines() if "wgmma_m64n64k16" in line]
    assert len(calls) == 2 and calls[0].rstrip().endswith("0u);") and calls[1].rstrip().endswith("1u);")
    assert "(afrag + 8)" in calls[0] and "0x4000004000010000ull) + 4ull" in calls[0]  # block 2: words 8.., k 32..
    assert "(afrag)" in calls[1] and "0x4000004000010000ull)," in calls[1]              # then block 0
    assert len([ln for ln in _k_blocks_kernel.source(out, None).splitlines() if "wgmma_m64n64k16" in ln]) == 4
    for bad in ((4,), (), (-1,)):
        with pytest.raises(TraceError, match="k_blocks"):
            _k_blocks_kernel.source(out, bad)


def test_wgmma_gemm_writes_a_slice_of_a_fragment_where_it_starts() -> None:
    """wgmma_gemm's accumulators may be a slice of a larger fragment (RsConfig.mma_parts): the second half's
    wgmmas take the fragment's values 16.., the first half's values 0..; the halves of x's stage start 32 rows
    (4 KB) apart."""
    src = _k_blocks_kernel.source(torch.empty(128, dtype=torch.float32), None, 2)
    calls = [line for line in src.splitlines() if "wgmma_m64n32k16" in line]
    assert len(calls) == 8
    assert all("(*reinterpret_cast<float(*)[16]>(acc)," in c for c in calls[:4]), calls[0]
    assert all("(*reinterpret_cast<float(*)[16]>(acc + 16)," in c for c in calls[4:]), calls[4]
    assert calls[0].split("gmma_desc(")[1] != calls[4].split("gmma_desc(")[1]     # the other half of x's rows


def test_three_consumers_split_their_wgmma_past_192_rows_of_x() -> None:
    """Three consumers by more than 192 rows of x issue two wgmmas per 16-k block, each on half the rows (ptxas
    holds one instruction to the launch's 128 registers: 64x224 would ask for 142); two consumers, or 192 rows, one.
    The halves need a multiple of 16 rows, and the 24 + 3 x 160 registers fit the 512 threads' 128 each."""
    fmt = Q.PackedFormat(4, 128, False, "bfloat16")
    assert sm90_mixed_rs.three_consumers(224, fmt).mma_parts == 2 and RsConfig(blk_n=192, blk_m=192).mma_parts == 1
    assert RsConfig(blk_m=224).mma_parts == 1 and replace(sm90_mixed_rs.WIDE, blk_m=256).mma_parts == 2
    with pytest.raises(ValueError, match="multiple of 16"):
        replace(sm90_mixed_rs.three_consumers(224, fmt), blk_m=200).validate(fmt)
    with pytest.raises(ValueError, match="registers exceed"):
        replace(sm90_mixed_rs.three_consumers(224, fmt), producer_regs=40).validate(fmt)
    assert [sm90_mixed_rs.three_consumers(bm, Q.PackedFormat(b, None, False, "bfloat16")).stages
            for bm in (208, 224) for b in (4, 8)] == [4, 3, 4, 3]
    x, y, b = torch.empty(1300, 384, dtype=torch.bfloat16), torch.empty(1300, 272, dtype=torch.bfloat16), None
    src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*sm90_mixed_rs.rs_launch_args(
        x, _weight(4, 128, False, torch.bfloat16, 384, 272), b, y, sm90_mixed_rs.three_consumers(224, fmt))[0])
    calls = [line for line in src.splitlines() if "wgmma_m64n112k16" in line and "tCrC" in line]
    halves = [sum("[56]>(tCrC + 56)," in c for c in calls), sum("[56]>(tCrC)," in c for c in calls)]
    assert halves[0] == halves[1] > 0 and len(calls) == sum(halves) and "wgmma_m64n224k16" not in src


def test_three_consumers_where_they_fill_whole_rounds() -> None:
    """``_three_or``: 192 x 208 / 224 tiles where t x-tiles of M / t rows fill whole rounds of the SMs at 0.95 the
    time of the other pick, counted at the pairs' rate per multiply-add (sessions 51's measurements: 4096 x 4096 at
    M = 1280 in 22 x 6 = 132 tiles); not where the tiles leave a partial round, nor for int8 in groups of 32 with
    zero points."""
    pick = sm90_mixed_rs.pick_rs_config
    for fmt in (Q.PackedFormat(4, 128, False, "bfloat16"), Q.PackedFormat(8, None, False, "float16")):
        for N, K, M, bm in ((4096, 4096, 1280, 224), (6144, 4096, 800, 208), (14336, 4096, 1100, 224),
                            (8192, 8192, 1200, 208), (8192, 8192, 2600, 224), (4096, 14336, 1280, 224)):
            cfg = pick(M, N, K, 132, fmt)
            assert cfg == sm90_mixed_rs.three_consumers(bm, fmt), (N, K, M, cfg.name)
            assert sm90_mixed_rs.split_rows(M, N, K, 132, fmt) == 0
        assert pick(1024, 6144, 4096, 132, fmt).stream_k                  # 32 x 5 tiles: 1.2 rounds
        assert pick(4096, 8192, 8192, 132, fmt) == replace(sm90_mixed_rs.PAIRS, cluster=2)   # 7 rounds of 1.31
        assert pick(150, 8192, 8192, 132, fmt).consumers == 2
    assert pick(1280, 4096, 4096, 132, Q.PackedFormat(8, 32, True, "bfloat16")).consumers == 2
    # by at most 192 rows (one wgmma a 16-k block): fifty-third session's shapes, every format
    for fmt in (Q.PackedFormat(4, 128, False, "bfloat16"), Q.PackedFormat(8, 32, True, "bfloat16")):
        for N, K, M, bm in ((4096, 4096, 1100, 184), (4096, 4096, 1050, 176), (4096, 4096, 1130, 192),
                            (4096, 14336, 1100, 184), (6144, 4096, 600, 152), (6144, 4096, 700, 176),
                            (8192, 8192, 528, 176), (8192, 8192, 570, 192), (57344, 8192, 520, 176)):
            cfg = pick(M, N, K, 132, fmt)
            assert cfg == sm90_mixed_rs.three_consumers(bm, fmt) and cfg.mma_parts == 1, (N, K, M, cfg.name)
            assert sm90_mixed_rs.split_plan(M, N, K, 132, fmt) == (0, None)
        assert pick(1152, 4096, 4096, 132, fmt) == sm90_mixed_rs.three_consumers(192, fmt)
        assert sm90_mixed_rs._narrow_three_tiles(1100, 6144) == (184, 6 * 32)           # 1.45 rounds: not taken
        assert pick(1100, 6144, 4096, 132, fmt) != sm90_mixed_rs.three_consumers(184, fmt)
    assert sm90_mixed_rs._narrow_three_tiles(256, 8192) is None                          # 128 rows: two consumers'
    assert sm90_mixed_rs.single_rounds(sm90_mixed_rs.three_consumers(224, Q.PackedFormat(4, 128, False, "bfloat16")),
                                       4096, 8192, 132) == 7 * 192 * 224 / (128 * 256)


def test_interleaved_k_blocks_issue_each_wgmma_after_its_fragment() -> None:
    """``interleave``: a k-tile's four 16-k blocks are converted and issued one at a time (a wgmma fence before
    each block's wgmma, one commit and one wait per k-tile), so the conversion of block j + 1 runs while block
    j's wgmma does; the first block alone starts a new sum. Without it, one fence and four wgmmas."""
    fmt = (4, 128, False, torch.bfloat16)
    for ws in (True, False):
        cfg = RsConfig(blk_m=192, stages=6, splits=2, w_smem=ws, interleave=True)
        src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*_args(fmt, cfg, M=150))
        plain = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*_args(fmt, replace(cfg, interleave=False), M=150))
        bodies = plain.count("tc::wgmma_commit_group();")               # the ring's unrolled k-tile bodies
        assert bodies >= 1 and src.count("tc::wgmma_commit_group();") == bodies
        assert src.count("tc::wgmma_fence();") == 4 * plain.count("tc::wgmma_fence();") == 4 * bodies
        assert src.count("? 1u : 0u") == plain.count("? 1u : 0u") == bodies   # accumulate=i > 0: block 0 only
        assert src.count("u4_frag") == plain.count("u4_frag") == 4 * bodies
    k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*_args(fmt, cfg, M=150), arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, k.module.log
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert text.count("WARPGROUP.ARRIVE") == text.count("HGMMA.64x192x16") > 0     # a fence per block


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[1] in (None, 128) and not f[2]], ids=_ID)
def test_split_k_compiles_to_fp32_partials(fmt: tuple) -> None:
    for rows in (64, 128):
        args = _args(fmt, RsConfig(blk_m=rows, stages=8, depth=6, splits=2), M=128, K=1024)
        assert args[8].splits == 2 and args[7].dtype == torch.float32 and args[4] is None  # the reduction: bias
        k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*args, arch="sm_90a")
        assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, k.module.log
        src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*args)
        assert "tile_units" in src and "Wk" in src
        assert "griddep_launch_dependents" in src                        # the reduction: a dependent launch
    assert sm90_mixed_rs.RsLaunch.pdl_reduce and not sm90_mixed.Launch.pdl_reduce
    assert "griddep_launch_dependents" not in sm90_mixed_rs.sm90_mixed_rs_kernel.source(*_args(fmt, RsConfig()))
    cfg = RsConfig(blk_m=128, stages=8, depth=6, splits=2)
    assert sm90_mixed_rs.rs_launch_args(torch.empty(128, 128, dtype=fmt[3]), _weight(*fmt, 128, 256),
                                        None, torch.empty(128, 256, dtype=fmt[3]), cfg)[0][8].splits == 2
    one = _args(fmt, cfg, M=128, K=fmt[1] or 64)                         # k-tiles: 2 (g128), 1 (per channel)
    assert one[8].splits == (2 if fmt[1] else 1) and (one[7] is None) == (not fmt[1])


def test_bad_tilings_are_refused() -> None:
    fmt = Q.PackedFormat(4, 128, False, "float16")
    with pytest.raises(ValueError, match="blk_n"):
        RsConfig(blk_n=320).validate(fmt)
    with pytest.raises(ValueError, match="registers"):
        RsConfig(blk_n=192).validate(fmt)                                # 3 x 232 do not fit 512 threads
    RsConfig(blk_n=192, blk_m=128, stages=8, consumer_regs=152).validate(fmt)
    sm90_mixed_rs.WIDE.validate(fmt)                                     # 24 + 4 x 112 <= 5 x 96
    with pytest.raises(ValueError, match="smem"):
        RsConfig(stages=8).validate(fmt)                                 # 8 x 32 KB of x
    with pytest.raises(ValueError, match="depth"):
        RsConfig(depth=9).validate(fmt)
    with pytest.raises(ValueError, match="registers"):
        RsConfig(consumer_regs=240).validate(fmt)
    with pytest.raises(ValueError, match="splits"):
        RsConfig(splits=0).validate(fmt)
    with pytest.raises(ValueError, match="cluster"):
        RsConfig(cluster=3).validate(fmt)
    RsConfig(blk_m=128, stages=8, splits=2, cluster=2).validate(fmt)           # pairs share x within a k-slice
    RsConfig().validate(fmt)
    RsConfig(cluster=2).validate(fmt)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[1] in (None, 128) and not f[2]], ids=_ID)
def test_cluster_multicasts_x(fmt: tuple) -> None:
    """cluster=2: each CTA loads half of the x box (a map of 128 of the 256 rows) and multicasts it; the
    consumers free a stage in both CTAs; a ragged pair of W tiles (3 tiles of 128 rows) is not whole."""
    cfg = RsConfig(cluster=2)
    assert cfg.name == "rs_128x256x64_s6_d2_cl2" and cfg.schedule.cluster_m == 2
    args = _args(fmt, cfg)
    assert args[0].args.multicast == 2 and args[0].args.box_dims[1] == 128
    assert args[10] and args[11] == (True, True)                          # N = 512: two whole pairs
    ragged = _args(fmt, cfg, N=384)
    assert not ragged[10] and ragged[11] == (False, True)                 # the second pair's second CTA: past N
    assert sm90_mixed_rs.rs_launch_args(torch.empty(256, 512, dtype=fmt[3]), _weight(*fmt, 512, 384), None,
                                        torch.empty(256, 384, dtype=fmt[3]), cfg)[1] == 4   # CTAs in whole pairs
    k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, k.module.log
    src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*args)
    assert "tma_load_multicast" in src and "cluster_sync" in src
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert ".MULTICAST" in text and text.count("MEMBAR.ALL.GPU") == 2      # only the two cluster syncs


def test_heuristic_takes_the_register_a_kernel_and_splits_k_where_tiles_are_few() -> None:
    from tilecraft.gemm.sm90_mixed import pick_config
    fmt = Q.PackedFormat(4, 128, False, "bfloat16")
    assert pick_config(fmt, 4096, 8192, 8192, 132) == sm90_mixed_rs.PAIRS          # 256 rows of x, pairs share x
    assert pick_config(fmt, 512, 8192, 8192, 132) == sm90_mixed_rs.PAIRS           # 128 tiles: 97% of the SMs
    # M = 385: two tiles of 200 rows (ragged x tiles, y by TMA), one round, where pairs of 256 rows took one too
    assert pick_config(fmt, 385, 8192, 8192, 132) == RsConfig(blk_m=200, stages=6, w_smem=True, store_mn=True)
    assert pick_config(fmt, 33792, 128, 8192, 132) == replace(sm90_mixed_rs.PAIRS, cluster=1)   # one W tile: no pair
    assert sm90_mixed_rs.tiling(40000, 128, 8192, 132, fmt).blk_m == 152         # 264 tiles: two full rounds
    assert pick_config(fmt, 40000, 128, 8192, 132).stream_k == 2                 # (157 units in stream-K: 1.39)
    assert pick_config(fmt, 512, 4096, 8192, 132) == RsConfig(blk_m=128, stages=8, depth=6)  # 128 tiles of 128
    # M = 129..256: one tile of 192 or 256 x rows (256: k-blocks interleaved), W in smem, 2 slices of 128 k-tiles
    assert pick_config(fmt, 256, 8192, 8192, 132) == RsConfig(blk_m=256, stages=5, splits=2, w_smem=True,
                                                               interleave=True)
    assert pick_config(fmt, 129, 8192, 8192, 132) == RsConfig(blk_m=192, stages=6, splits=2, w_smem=True)
    assert pick_config(Q.PackedFormat(8, 64, True, "float16"), 200, 8192, 8192, 132).depth == 1   # (2 spills)
    # M = 257..384: two tiles of 192 rows (128 units: no slices), or of M / 2 rows where fewer (ragged x tiles); wide
    # N: no slices either (the partials would cross the reduction kernel)
    assert pick_config(fmt, 384, 8192, 8192, 132) == RsConfig(blk_m=192, stages=6, w_smem=True)
    assert pick_config(fmt, 320, 8192, 8192, 132) == RsConfig(blk_m=160, stages=6, w_smem=True, store_mn=True)
    assert pick_config(fmt, 160, 28672, 4096, 132) == RsConfig(blk_m=192, stages=6, w_smem=True)
    assert pick_config(fmt, 300, 4096, 14336, 132).splits == 2
    # M > 384: 192-row tiles where they take fewer, fuller rounds than 2x1 clusters of 256 rows (or M / t rows)
    assert pick_config(fmt, 768, 8192, 8192, 132) == RsConfig(blk_m=192, stages=6, w_smem=True)
    assert pick_config(fmt, 768, 4096, 14336, 132).blk_m == 192                   # 128 tiles (256 rows: 96)
    assert pick_config(fmt, 640, 4096, 14336, 132).blk_m == sm90_mixed_rs.tiling(640, 8192, 8192, 132, fmt).blk_m == 160
    # (at 8192 x 8192 three consumers by 224 rows take one round of 43 x 3 tiles: _three_or)
    assert pick_config(fmt, 640, 8192, 8192, 132) == sm90_mixed_rs.three_consumers(224, fmt)
    assert pick_config(fmt, 448, 8192, 8192, 132) == sm90_mixed_rs.PAIRS           # 192 rows: 192 tiles, 2 rounds
    assert pick_config(fmt, 896, 8192, 8192, 132) == sm90_mixed_rs.PAIRS           # 3 rounds against 2
    # 43 x 5 tiles of three consumers by 224 rows: 1.63 rounds in stream-K (_three_stream_k_or)
    assert pick_config(fmt, 1088, 8192, 8192, 132) == replace(sm90_mixed_rs.three_consumers(224, fmt), stream_k=1)
    assert pick_config(fmt, 1536, 8192, 8192, 132) == sm90_mixed_rs.PAIRS          # 4 rounds against 3
    assert pick_config(fmt, 4096, 8192, 8192, 132) == sm90_mixed_rs.PAIRS
    assert pick_config(fmt, 512, 4096, 8192, 132).blk_m == 128                    # 64 tiles of 256 rows: no round
    assert pick_config(fmt, 576, 4096, 8192, 132).blk_m == 144                    # 96 tiles of 192: not a round
    g32 = Q.PackedFormat(4, 32, True, "bfloat16")                                 # two scale groups per k-tile:
    assert pick_config(g32, 256, 8192, 8192, 132) == RsConfig(blk_m=128, stages=8, depth=6)   # 256 rows lost
    assert pick_config(g32, 192, 8192, 8192, 132).blk_m == 192
    assert pick_config(fmt, 200, 8192, 256, 132) == RsConfig(blk_m=128, stages=8, depth=6)  # 4 k-tiles: no slices
    assert pick_config(fmt, 128, 8192, 8192, 132).splits == 2                     # 64 tiles: 2 slices, one round
    assert pick_config(fmt, 128, 4096, 4096, 132).splits == 4                     # 32 tiles
    assert pick_config(fmt, 128, 6144, 4096, 132).splits == 2                     # 48 tiles: 3 slices take 2 rounds
    wide = replace(sm90_mixed_rs.WIDE, splits=4, w_smem=True)
    assert pick_config(fmt, 64, 8192, 8192, 132) == wide                          # 32 tiles of 256 rows, W in smem
    assert pick_config(fmt, 40, 8192, 8192, 132).consumers == 4
    assert pick_config(fmt, 64, 4096, 8192, 132) == RsConfig(blk_m=64, stages=8, depth=6, splits=4, w_smem=True)
    assert pick_config(fmt, 64, 8192, 1024, 132) == RsConfig(blk_m=64, stages=8, depth=6, splits=2, w_smem=True)
    assert pick_config(fmt, 100, 512, 1024, 132).splits == 2                      # 16 k-tiles: at least 8 a slice
    assert pick_config(fmt, 100, 512, 256, 132).splits == 1
    assert pick_config(fmt, 128, 8192, 8192, 132).w_smem and not pick_config(fmt, 448, 8192, 8192, 132).w_smem
    for int8 in (Q.PackedFormat(8, 64, True, "bfloat16"), Q.PackedFormat(8, None, False, "float16")):
        # int8 at M <= 64: 128 rows of W in two consumers, W in smem (WIDE ran 10% slower there)
        assert pick_config(int8, 64, 8192, 8192, 132) == RsConfig(blk_m=64, stages=8, depth=6, splits=2, w_smem=True)
    assert sm90_mixed_rs.wide_depth(Q.PackedFormat(8, 64, True, "bfloat16")) == 1   # explicit WIDE, words in registers


def test_ragged_x_tiles_where_they_take_fewer_rounds() -> None:
    """sm90_mixed_rs._ragged_or: from M = 257, tiles of M / t rows of x (rounded up to 8, no multiple of 64, 128 < bM
    < 256) where they fill their rounds and take at most 0.9 of the pick's rounds: W through shared memory, y by TMA
    (store_mn), the stages that fit (at most 6). A tile's time in 256-row ones is linear between the measured 64, 128,
    192 and 256 rows."""
    unit = sm90_mixed_rs._x_tile_unit
    assert [unit(b) for b in (32, 64, 128, 192, 256)] == [0.5, 0.5, 0.65, 0.85, 1.0]
    assert unit(160) == pytest.approx(0.75) and unit(224) == pytest.approx(0.925)
    for fmt in FORMATS:
        f = _format(fmt)
        c = sm90_mixed_rs.pick_rs_config(520, 4096, 14336, 132, f)           # 4 x 32 tiles of 136 rows: one round
        assert (c.blk_m, c.store_mn, c.w_smem, c.splits, c.cluster) == (136, True, True, 1, 1), (fmt, c)
        assert c.smem_bytes(f.bits) <= 227 * 1024 and (c.stages == 6 or replace(c, stages=c.stages + 1).smem_bytes(
            f.bits) > 227 * 1024)
        for M in (256, 512, 1024, 2048, 4096):                                 # whole 128- / 256-row tiles: as before
            assert sm90_mixed_rs.pick_rs_config(M, 8192, 8192, 132, f).blk_m % 64 == 0
    fmt = _format(FORMATS[0])
    assert sm90_mixed_rs.pick_rs_config(800, 28672, 4096, 132, fmt).blk_m == 200      # 896 tiles: 7 rounds, 97% full
    # 192 tiles of 136 rows would fill 73% of 2 rounds (the 192-row tiles' rounds, and the pairs' in stream-K, fewer)
    assert sm90_mixed_rs.tiling(520, 6144, 4096, 132, fmt).blk_m == 192


def test_stream_k_where_the_pairs_leave_a_partial_round() -> None:
    """sm90_mixed_rs._stream_k_or: from M = 513 the 2x1-cluster 256-row tiles in stream-K where their units make more
    than a round of the clusters but no whole number of rounds, and the estimate (their rounds as a fraction, plus
    STREAM_K_ROUNDS, which grows with the CTAs sharing a unit) is at most 0.98 of the other pick's. The shapes the
    forty-ninth session measured, where it ran faster than the picks before: mode 1 where up to 3 clusters share a
    unit of the partial round, else mode 2 (one whole round more shared), which ran faster there. (At 4096 x 14336,
    M = 2632 tc.gemm now runs three consumers by 224 rows of x: ``_three_or``.)"""
    fmt = Q.PackedFormat(4, 128, False, "bfloat16")

    def pick(M: int, N: int, K: int, sms: int, fmt: Any) -> RsConfig:                # (without _three_or)
        return sm90_mixed_rs._stream_k_or(sm90_mixed_rs.tiling(M, N, K, sms, fmt), M, N, K, sms)

    sk = replace(sm90_mixed_rs.PAIRS, stream_k=1)
    for N, K, M in ((6144, 4096, 1024), (4096, 14336, 1536), (4096, 14336, 1700), (8192, 8192, 1280),   # 2-3 a unit
                    (10240, 8192, 1024), (14336, 4096, 1024), (8192, 28672, 1280), (14336, 4096, 840),
                    (4096, 14336, 2632), (8192, 8192, 2184)):
        assert pick(M, N, K, 132, fmt) == sk, (N, K, M)
        # (4096 x 14336, M = 1700: 6 x 224 rows of three consumers, then 356 rows: split_plan's _three_firsts)
        assert sm90_mixed_rs.split_rows(M, N, K, 132, fmt) == (1344 if (N, K, M) == (4096, 14336, 1700) else 0)
    for N, K, M in ((6144, 4096, 520), (6144, 4096, 712), (6144, 4096, 1536), (28672, 4096, 648),   # 4-17 a unit
                    (28672, 4096, 1536), (57344, 8192, 712), (8192, 8192, 3656), (10240, 8192, 2440)):
        assert pick(M, N, K, 132, fmt) == replace(sk, stream_k=2), (N, K, M)
        assert sm90_mixed_rs.split_rows(M, N, K, 132, fmt) == 0
    # 72 units, 6 of them shared by 11 clusters each in mode 1: mode 2 shares all 72, each by about 2
    assert sm90_mixed_rs.tiling(712, 6144, 4096, 132, fmt).blk_m == 144
    assert pick(4096, 8192, 8192, 132, fmt) == sm90_mixed_rs.PAIRS       # 7.76 rounds: too little to win back
    assert pick(1024, 4096, 14336, 132, fmt) == sm90_mixed_rs.PAIRS      # 128 units: one round
    assert pick(512, 6144, 4096, 132, fmt).stream_k == 0                 # (M <= 512)
    assert pick(1024, 128, 8192, 132, fmt).stream_k == 0                 # 4 units: less than a round
    rounds = sm90_mixed_rs.single_rounds
    assert rounds(sk, 1024, 6144, 132, 4096) == pytest.approx(192 / 132 + 0.15 + 0.1 + 0.03)   # 3 CTAs a unit
    assert rounds(sk, 1024, 6144, 132, 16384) == pytest.approx(192 / 132 + 0.15 + 0.13 / 4)
    assert rounds(sk, 712, 6144, 132, 4096) == pytest.approx(144 / 132 + 0.15 + 0.1 + 0.03 * 9)  # 11 CTAs a unit
    assert rounds(replace(sk, stream_k=2), 712, 6144, 132, 4096) == pytest.approx(144 / 132 + 0.15 + 0.1)
    with pytest.raises(ValueError, match="one at a time"):
        replace(sk, splits=2).validate(fmt)
    with pytest.raises(ValueError, match="stream_k is 0"):
        replace(sk, stream_k=3).validate(fmt)


def test_three_consumers_in_stream_k_where_they_leave_a_partial_round() -> None:
    """``_three_stream_k_or``: ``_three_tiles``'s 192 x 208 / 224 tiles in stream-K where they make more than one round
    of the SMs but leave the last partial (mode 1, or mode 2 where a unit of the partial round would have more than 3
    sharers), at most 0.95 of the other pick's time; their stream-K cost counted in the pairs' rounds (not scaled by
    the larger tile). The fifty-third session's shapes (H200, each 2-17% faster than the pick before but for 4096 x
    4096, M = 2060, even) and the ones it left: 6144 x 4096, M = 1024 (even with the pairs in stream-K) and 1152
    (192-row tiles: no three consumers); not for int4 in groups of 32 with zero points at 224 rows (its kernel spills
    20 bytes), nor for int8 in groups of 32 with zero points at all."""
    pick = sm90_mixed_rs.pick_rs_config
    for fmt in (Q.PackedFormat(4, 128, False, "bfloat16"), Q.PackedFormat(8, None, False, "float16"),
                Q.PackedFormat(4, 64, True, "float16")):
        for N, K, M, bm, mode in ((6144, 4096, 1100, 224, 2), (6144, 4096, 1300, 224, 1), (6144, 4096, 2880, 224, 2),
                                  (8192, 8192, 1100, 224, 1), (8192, 8192, 1550, 224, 2), (10240, 8192, 800, 208, 1),
                                  (10240, 8192, 1100, 224, 2), (10240, 8192, 1300, 224, 1), (14336, 4096, 600, 208, 1),
                                  (14336, 4096, 850, 224, 2), (14336, 4096, 1300, 224, 1), (28672, 4096, 600, 208, 1),
                                  (4096, 4096, 2060, 208, 1)):
            assert pick(M, N, K, 132, fmt) == replace(sm90_mixed_rs.three_consumers(bm, fmt), stream_k=mode), (N, K, M)
            assert sm90_mixed_rs.split_plan(M, N, K, 132, fmt) == (0, None), (N, K, M)
        assert pick(1024, 6144, 4096, 132, fmt) == replace(sm90_mixed_rs.PAIRS, cluster=2, stream_k=1)
        assert pick(1152, 6144, 4096, 132, fmt) == replace(sm90_mixed_rs.PAIRS, cluster=2)
        assert pick(1100, 4096, 4096, 132, fmt).stream_k == 0            # 22 x 5 tiles: less than a round
        assert pick(1280, 4096, 4096, 132, fmt) == sm90_mixed_rs.three_consumers(224, fmt)   # one whole round
    g32zp = Q.PackedFormat(4, 32, True, "bfloat16")
    assert pick(1100, 6144, 4096, 132, g32zp).consumers == 2                     # (224 rows spill)
    assert pick(800, 10240, 8192, 132, g32zp) == replace(sm90_mixed_rs.three_consumers(208, g32zp), stream_k=1)
    assert pick(800, 10240, 8192, 132, Q.PackedFormat(8, 32, True, "bfloat16")).consumers == 2
    # 32 x 5 tiles of 192 x 224 in mode 2: 160 / 132 rounds of 1.3125 pair tiles, 0.15 + 0.1 for stream-K at K = 4096
    three = replace(sm90_mixed_rs.three_consumers(224, Q.PackedFormat(4, 128, False, "bfloat16")), stream_k=2)
    assert sm90_mixed_rs.single_rounds(three, 1100, 6144, 132, 4096) == pytest.approx(
        160 / 132 * 192 * 224 / (128 * 256) + 0.15 + 0.1)


def test_ragged_m_splits_into_whole_rounds_and_a_launch_for_the_rest() -> None:
    """sm90_mixed_rs.split_rows: 256 q rows in 2x1-cluster tiles that fill their rounds (or bm t rows of three
    consumers: test_split_plan_takes_three_consumer_first_launches), the rest (1..384 rows) in a launch of its own,
    where that takes fewer rounds' time than one launch."""
    split = sm90_mixed_rs.split_rows
    for fmt in (Q.PackedFormat(4, 128, False, "bfloat16"), Q.PackedFormat(8, None, False, "float16")):
        # N = K = 8192 (64 W tiles, 132 SMs): 512 rows are one round (97% full), 1024 two
        # (M = 513 / 576 / 640: one launch of three consumers by 176 / 192 / 224 rows, 43 x 3 tiles in one round:
        # _three_or)
        assert [split(M, 8192, 8192, 132, fmt) for M in (513, 576, 640, 700)] == [0, 0, 0, 512]
        # M = 1025 / 1088: one launch of three consumers by 208 / 224 rows in stream-K (43 x 5 tiles, 1.63 rounds:
        # _three_stream_k_or), against 3 x 224 rows, then 353 (_three_firsts), and 1024 rows of pairs, then 64;
        # M = 1200: 6 tiles of 200 rows (3 rounds of 0.87); M = 1280: the pairs in stream-K (2.42 rounds and its cost)
        assert [split(M, 8192, 8192, 132, fmt) for M in (1025, 1088, 1200, 1280)] == [0, 0, 0, 0]
        assert split(2112, 8192, 8192, 132, fmt) == 1872        # 9 x 208 rows of three consumers, then 240 rows
        assert split(768, 8192, 8192, 132, fmt) == 512         # 1 + 0.57 rounds against 2 of 192-row tiles
        assert split(1024, 8192, 8192, 132, fmt) == split(4096, 8192, 8192, 132, fmt) == 0   # whole rounds
        # M = 896 / 900: 3 x 224 rows of three consumers (one round), then 224 / 228 rows (_three_firsts; at M = 880
        # they ran 14% faster than 512 rows of pairs and 368 in two 192-row tiles)
        assert split(896, 8192, 8192, 132, fmt) == split(900, 8192, 8192, 132, fmt) == 672
        assert split(800, 8192, 8192, 132, fmt) == 0           # 4 tiles of 200 rows: two rounds of 0.89
        assert split(1000, 8192, 8192, 132, fmt) == 0
        assert split(1400, 4096, 14336, 132, fmt) == 1024 and split(1536, 4096, 14336, 132, fmt) == 0
        assert split(512, 8192, 8192, 132, fmt) == split(300, 8192, 8192, 132, fmt) == 0
        # 4096 x 14336 (32 W tiles): 1024 rows fill a round; M = 640's 512 rows would leave half the SMs idle
        # (M = 1280: one launch of 22 x 6 tiles of three consumers by 224 rows, one round: _three_or)
        # (M = 1100: one round of 22 x 6 tiles of three consumers by 184 rows: _three_or's narrow tiles)
        assert split(1100, 4096, 14336, 132, fmt) == 0 and split(1280, 4096, 14336, 132, fmt) == 0
        assert split(640, 4096, 14336, 132, fmt) == 0
        assert split(600, 28672, 4096, 132, fmt) == 0          # 448 pair tiles: 85% of 4 rounds
        # 28672 x 4096: the rest's own pick at M = 64 runs 224 pair tiles, two rounds: 7 + 2 against 9 rounds
        assert split(1088, 28672, 4096, 132, fmt) == 0 and split(1300, 28672, 4096, 132, fmt) == 0
        assert sm90_mixed_rs.pick_rs_config(1300, 28672, 4096, 132, fmt).mma_parts == 2   # 150 x 6 tiles: 6.8 rounds
        assert split(700, 128, 8192, 132, fmt) == 0            # one W tile: no pairs
        # short K: the second launch's fixed cost weighs more
        assert split(720, 8192, 8192, 132, fmt) == 512 and split(720, 8192, 4096, 132, fmt) == 0
    assert sm90_mixed_rs.single_rounds(RsConfig(cluster=2), 1088, 8192, 132) == 3
    assert sm90_mixed_rs.single_rounds(RsConfig(blk_m=192, stages=6, w_smem=True), 640, 8192, 132) == 0.85 * 2
    assert sm90_mixed_rs.single_rounds(sm90_mixed_rs.WIDE, 64, 8192, 132) == 1.0    # 32 tiles of 256 W rows


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_split_k_sums_in_the_kernel_where_every_unit_fits(fmt: tuple) -> None:
    """Where tiles x splits fit on the SMs (one CTA each, no cluster), the launch passes the bias and int32 zero
    flags, one per tile of y, and the kernel sums the splits itself (sm90._reduce_tile's counting flags; no
    dependent launch to let in). Otherwise (or with 256 rows of x) it passes the workspace alone, for the
    reduction kernel. The register-tightest tiling (WIDE, ragged) compiles so without spills."""
    dtype = fmt[3]
    wide = replace(sm90_mixed_rs.WIDE, splits=2, depth=sm90_mixed_rs.wide_depth(_format(fmt)))
    x, y, b = torch.empty(33, 384, dtype=dtype), torch.empty(33, 272, dtype=dtype), torch.empty(272, dtype=dtype)
    pw = _weight(*fmt, 384, 272)
    args, units = sm90_mixed_rs.rs_launch_args(x, pw, b, y, wide, sms=132)
    assert units == 4 and args[4] is b and args[7].shape == (2, 1, 33, 272)
    flags = args[12]
    assert flags.dtype == torch.int32 and flags.shape == (2,) and not flags.any()   # one per tile of y
    k = sm90_mixed_rs.sm90_mixed_rs_kernel.compile(*args, arch="sm_90a")
    r = k.resources
    assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0 and "serialized" not in k.module.log, (r, k.module.log)
    src = sm90_mixed_rs.sm90_mixed_rs_kernel.source(*args)
    assert "flags" in src and "griddep_launch_dependents" not in src
    big = RsConfig(splits=2)                                              # 256 rows of x: the sum would spill
    for sms, cfg in ((3, wide), (132, replace(wide, cluster=2)), (132, big)):   # units > SMs; a cluster; blk_m 256
        args, _units = sm90_mixed_rs.rs_launch_args(x, pw, b, y, cfg, sms=sms)
        assert args[12] is None and args[4] is None and args[7] is not None
    assert sm90_mixed_rs.rs_launch_args(x, pw, b, y, replace(wide, splits=1), sms=132)[0][12] is None


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[1] in (None, 32) and f[3] is torch.bfloat16], ids=_ID)
def test_gpu_split_k_summed_in_the_kernel(fmt: tuple) -> None:
    """The same split-K problem (ragged M and N, a bias) summed in the kernel (every unit resident) and by the
    reduction kernel (the launch told of 2 SMs), against float64; the in-kernel sum twice in a row (its flags
    back at 0) and on a second stream (flags of its own)."""
    bits, group, zp, dtype = fmt
    K, N, M = 512, 272, 100
    pw = _weight(bits, group, zp, dtype, K, N).to("cuda")
    x = torch.randn(M, K).to(dtype).cuda()
    b = torch.randn(N).to(dtype).cuda()
    cfg = RsConfig(blk_m=64, stages=8, depth=4, splits=2)
    fused = sm90_mixed_rs.RsLaunch(x, pw, b, torch.empty(M, N, dtype=dtype, device="cuda"), cfg, 132)
    plain = sm90_mixed_rs.RsLaunch(x, pw, b, torch.empty(M, N, dtype=dtype, device="cuda"), cfg, 2)
    assert fused.fused and fused.reduce is None and not plain.fused and plain.reduce is not None
    assert fused.main.cooperative and not plain.main.cooperative        # its CTAs wait on each other
    outs = []
    for launch in (fused, fused, plain):
        y = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
        launch(x, pw, b, y)
        outs.append(y)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
        fused(x, pw, b, y)
    side.synchronize()
    outs.append(y)
    torch.cuda.synchronize()
    assert len(fused._flags) == 2 and all(not f.any() for f in fused._flags.values())
    for y in outs:
        _check(y, x, pw, b)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[3])   # the sum's order is fixed


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_random_shapes(fmt: tuple) -> None:
    rng = random.Random("rs" + _ID(fmt))
    for M, cfg in ((64, RsConfig(blk_m=128, stages=8)), (rng.randint(65, 300), RsConfig()),
                   (rng.randint(300, 1500), RsConfig(depth=1)), (2048, RsConfig()),
                   (rng.randint(200, 1500), RsConfig(cluster=2)), (rng.randint(200, 1500), sm90_mixed_rs.PAIRS),
                   (rng.randint(64, 300), RsConfig(blk_m=128, stages=8, depth=6, splits=rng.randint(2, 5))),
                   (rng.randint(64, 300), RsConfig(blk_m=128, stages=8, depth=4, splits=rng.randint(2, 4), cluster=2)),
                   (rng.randint(1, 64), RsConfig(blk_m=64, stages=8, depth=4, splits=2, cluster=2)),
                   (rng.randint(1, 300), RsConfig(blk_n=192, blk_m=128, stages=8, depth=3, consumer_regs=152,
                                                  splits=rng.randint(1, 3))),
                   (rng.randint(1, 128), RsConfig(blk_n=256, blk_m=64, stages=8, depth=4, producer_regs=24,
                                                  consumer_regs=112, splits=rng.randint(1, 4))),
                   (rng.randint(1, 64), RsConfig(blk_m=64, stages=8, depth=5, splits=rng.randint(1, 3))),
                   (rng.randint(1, 128), replace(sm90_mixed_rs.WIDE, depth=1, splits=rng.randint(1, 4)))):
        random_case(fmt, rng, M, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_ragged_x_tiles_store_y_by_tma(fmt: tuple) -> None:
    """x tiles of rows no multiple of 64 (wgmma N = 136, 200, 104) with y through M-major buffers and TMA stores
    (``store_mn``) at random shapes (ragged M, N, K), and a y whose rows TMA cannot store (a view 8 bytes off: the
    epilogue stores from the registers); then tc.gemm where its pick takes such tiles (M = 520, N = 32 x SMs),
    against float64."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    rng = random.Random("ragged" + _ID(fmt))
    for bm, stages in ((136, 6), (200, 5), (104, 6)):
        cfg = RsConfig(blk_m=bm, stages=stages, w_smem=True, store_mn=True)
        random_case(fmt, rng, rng.randint(bm // 2, 3 * bm), cfg)
    bits, group, zp, dtype = fmt
    pw = _weight(bits, group, zp, dtype, 256, 272).to("cuda")
    x = torch.randn(300, 256).to(dtype).cuda()
    y = torch.empty(300 * 272 + 4, dtype=dtype, device="cuda")[4:].view(300, 272)   # rows 8 bytes off 16
    cfg = RsConfig(blk_m=136, stages=6, w_smem=True, store_mn=True)
    assert sm90_mixed_rs.y_map(y, cfg) is None and sm90_mixed_rs.y_map(torch.empty_like(y), cfg) is not None
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    launch = sm90_mixed_rs.RsLaunch(x, pw, None, y, cfg, sms)                # planned for this y: no map
    assert not launch.stores_y
    launch(x, pw, None, y)
    _check(y, x, pw, None)
    pw = _weight(bits, group, zp, dtype, 512, 32 * sms).to("cuda")
    cfg = sm90_mixed_rs.pick_rs_config(520, 32 * sms, 512, sms, pw.format)
    assert cfg.store_mn and cfg.blk_m == 136 and sm90_mixed_rs.split_rows(520, 32 * sms, 512, sms, pw.format) == 0
    x = torch.randn(520, 512).to(dtype).cuda()
    b = torch.randn(32 * sms).to(dtype).cuda()
    check_mixed_gemm(tc.gemm(x, pw, bias=b), x, pw, b, _TOL, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[1] in (None, 128) and f[2] == (f[3] is torch.float16)],
                         ids=_ID)
def test_gpu_stream_k(fmt: tuple) -> None:
    """Stream-K: the units of the last partial round of the SMs shared by every CTA along K, the earlier slices' fp32
    partial tiles handed over through the workspace and flags. 2x1-cluster 256-row tiles with y by TMA (modes 1 and
    2, the latter also with fewer units than clusters), and 128x256 tiles storing y from the registers, at ragged M and
    N whose units make 1.3-1.4 rounds; twice in a row (the flags back at 0, the same bits: the partials are added in a
    fixed order); then tc.gemm where its pick takes stream-K; against float64."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    bits, group, zp, dtype = fmt
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    K = 1408                                                             # 22 k-tiles
    pairs_n = 256 * -(-(sms // 2) * 14 // 30) - 80                      # 3 x-tiles of 1.4 rounds' clusters, ragged N
    cases = ((replace(sm90_mixed_rs.PAIRS, stream_k=1), 520, pairs_n), (replace(sm90_mixed_rs.PAIRS, stream_k=2), 520,
             pairs_n), (RsConfig(stream_k=1), 300, 128 * -(-sms * 13 // 20) - 48),
             # mode 2 with fewer units than clusters: every unit shared by several clusters, whose last slice adds
             # the partials of all the others
             (replace(sm90_mixed_rs.PAIRS, stream_k=2), 200, 2560 - 48))
    for cfg, M, N in cases:
        pw = _weight(bits, group, zp, dtype, K, N, seed=M).to("cuda")
        g = torch.Generator().manual_seed(N)
        x = torch.randn(M, K, generator=g).to(dtype).cuda()
        b = torch.randn(N, generator=g).to(dtype).cuda()
        launch = sm90_mixed_rs.RsLaunch(x, pw, b, torch.empty(M, N, dtype=dtype, device="cuda"), cfg, sms)
        assert launch.cfg.stream_k and launch.fused and launch.main.cooperative
        assert launch.stores_y == cfg.store_mn
        outs = []
        for _i in range(2):
            y = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
            launch(x, pw, b, y)
            outs.append(y)
        torch.cuda.synchronize()
        assert all(not f.any() for f in launch._flags.values())
        _check(outs[0], x, pw, b)
        assert torch.equal(outs[0], outs[1]), cfg.name
    f = _format(fmt)
    if sm90_mixed_rs.pick_rs_config(1024, 6144, 4096, sms, f).stream_k:   # (132 SMs: 96 units, 1.45 rounds)
        pw = _weight(bits, group, zp, dtype, 4096, 6144).to("cuda")
        x = torch.randn(1024, 4096).to(dtype).cuda()
        _check(tc.gemm(x, pw), x, pw, None)


@pytest.mark.gpu
def test_gpu_tc_gemm_runs_the_register_a_kernel_at_large_m() -> None:
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    from tilecraft.gemm import mixed
    from tilecraft.gemm.op import clear_plans

    clear_plans()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    N = 64 * sms                                    # tiles of 128 rows of W and 128 of x: one per SM
    pw = _weight(4, 128, False, torch.float16, 256, N).to("cuda")
    x = torch.randn(2, 100, 256).to(torch.float16).cuda()                  # M = 200: ragged, batched
    y = tc.gemm(x, pw)
    check_mixed_gemm(y.reshape(200, N), x.reshape(200, 256), pw, None, _TOL, torch.float16)
    assert [(r.path, r.config.blk_m) for r in mixed._RUNS.values()] == [("sm90_mixed_rs", 128)]


def test_split_plan_takes_three_consumer_first_launches() -> None:
    """sm90_mixed_rs.split_plan: a first launch of three consumers by 224 or 208 rows of x where t such x tiles fill
    their rounds of the SMs and the rest (1..384 rows) runs in a launch of its own, by the rounds model; not with a
    rest of 33..256 rows below 8192 x 8192 weights, where such rests ran slower than the model (fifty-second session,
    H200), nor for int8 in groups of 32 with zero points."""
    plan, three = sm90_mixed_rs.split_plan, sm90_mixed_rs.three_consumers
    for fmt in (Q.PackedFormat(4, 128, False, "bfloat16"), Q.PackedFormat(8, None, False, "float16")):
        # measured faster (H200): rests in the small-M kernel, in one launch of 256 rows, in two 192-row tiles
        for N, K, M, M1, bm in ((6144, 4096, 920, 896, 224), (4096, 4096, 1360, 1344, 224), (8192, 8192, 880, 624, 208),
                                (2048, 8192, 3000, 2688, 224), (28672, 4096, 1600, 1344, 224),
                                (10240, 8192, 1800, 1568, 224), (57344, 8192, 900, 672, 224)):
            assert plan(M, N, K, 132, fmt) == (M1, three(bm, fmt)), (N, K, M)
        # measured slower: rests of 112-256 rows below 8192 x 8192 weights (one launch, as before)
        for N, K, M in ((6144, 4096, 1100), (14336, 4096, 1296), (2048, 8192, 2800)):
            assert plan(M, N, K, 132, fmt) == (0, None), (N, K, M)
            assert all(not 32 < M - rows <= 256 for rows, _, _ in sm90_mixed_rs._three_firsts(M, N, K, 132, fmt))
        # the first launches offered: whole rounds (43 W tiles of 192 rows x 3 = 129 of 132), rests of 1..384 rows
        assert [(rows, c.blk_m) for rows, c, _ in sm90_mixed_rs._three_firsts(880, 8192, 8192, 132, fmt)] == \
            [(672, 224), (624, 208)]
        assert sm90_mixed_rs._three_firsts(1200, 8192, 8192, 132, fmt) == []      # 4 or 5 x tiles: partial rounds
    zp8 = Q.PackedFormat(8, 32, True, "bfloat16")
    assert sm90_mixed_rs._three_firsts(880, 8192, 8192, 132, zp8) == [] and plan(880, 8192, 8192, 132, zp8)[1] == \
        sm90_mixed_rs.PAIRS


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f[1] in (None, 32)], ids=_ID)
def test_gpu_ragged_m_runs_in_two_launches(fmt: tuple) -> None:
    """tc.gemm where split_rows splits M: 1024 (512) rows in 2x1-cluster tiles, then the rest through the small-M
    kernel (M = 1050), the register-A kernel's pick for it (M = 675, 163 rows), or two 192-row tiles (M = 1377, 353
    rows; at M = 1300 three consumers by 224 rows now fill one round in one launch, and at 1345 the first launch is
    6 x 208 rows of them); or 3 x 208 rows in three-consumer tiles, then 256 rows (M = 880, split_plan's
    ``_three_firsts``); batched x, a bias, against float64. (Until the fifty-third session M = 517 and 576 at N = 64
    x SMs split too; three consumers by 176 and 192 rows now fill their round in one launch.)"""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    from tilecraft.gemm import mixed
    from tilecraft.gemm.op import clear_plans

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bits, group, zp, dtype = fmt
    # sms / 2 W tiles: 512 rows of pairs are one round; sms / 4: 1024 rows; 3 sms / 4: 1024 rows in 3 rounds
    cases = [(1050, 96 * sms, 4096, 1024, "mixed"), (675, 64 * sms, 8192, 512, "sm90_mixed_rs"),
             (1377, 32 * sms, 4096, 1024, "sm90_mixed_rs")]
    if not (bits == 8 and group == 32 and zp):                            # (its three-consumer kernel spills)
        cases.append((880, 192 * (sms // 3), 8192, 624, "sm90_mixed_rs"))
    for M, N, K, M1, rest in cases:
        pw = _weight(bits, group, zp, dtype, K, N).to("cuda")
        b = torch.randn(N).to(dtype).cuda()
        first = sm90_mixed_rs.PAIRS if M1 % 256 == 0 else sm90_mixed_rs.three_consumers(208, pw.format)   # (624)
        assert sm90_mixed_rs.split_plan(M, N, K, sms, pw.format) == (M1, first)
        clear_plans()
        x = torch.randn(M, K).to(dtype).cuda()
        y = tc.gemm(x.reshape(1, M, K), pw, bias=b)
        assert y.shape == (1, M, N)
        check_mixed_gemm(y[0], x, pw, b, _TOL, dtype)
        (run,) = mixed._RUNS.values()
        assert (run.path, run.config, run.rest.path) == ("sm90_mixed_rs", first, rest)
        torch.testing.assert_close(tc.gemm(x, pw, bias=b), y[0], rtol=0, atol=0)   # again, 2-D: the same values


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", [(4, 128, False, torch.bfloat16), (8, None, False, torch.float16),
                                 (8, 32, True, torch.bfloat16), (4, 32, True, torch.float16)], ids=_ID)
def test_gpu_tc_gemm_runs_three_consumers(fmt: tuple) -> None:
    """tc.gemm at M = 1100 (on 132 SMs) with a bias, against float64: at 6144 x 4096, 32 x 5 tiles of three consumers
    by 224 rows of x in stream-K mode 2 (``_three_stream_k_or``; not for groups of 32 with zero points); at 4096 x
    4096, one round of 22 x 6 tiles by 184 rows, one wgmma a 16-k block (``_three_or``'s narrow tiles; every
    format)."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    from tilecraft.gemm import mixed
    from tilecraft.gemm.op import clear_plans

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bits, group, zp, dtype = fmt
    M, K = 1100, 4096
    for N in (6144, 4096):
        pw = _weight(bits, group, zp, dtype, K, N).to("cuda")
        b = torch.randn(N).to(dtype).cuda()
        x = torch.randn(M, K).to(dtype).cuda()
        clear_plans()
        y = tc.gemm(x, pw, bias=b)
        check_mixed_gemm(y, x, pw, b, _TOL, dtype)
        (run,) = mixed._RUNS.values()
        assert run.path == "sm90_mixed_rs" and run.config == sm90_mixed_rs.pick_rs_config(M, N, K, sms, pw.format)
        if sms != 132:
            continue
        if N == 4096:
            assert run.config == sm90_mixed_rs.three_consumers(184, pw.format) and run.config.mma_parts == 1
        else:
            three = replace(sm90_mixed_rs.three_consumers(224, pw.format), stream_k=2)
            assert (run.config == three) == (group != 32 or not zp), run.config.name


@pytest.mark.gpu
def test_gpu_tc_quant_gemm_takes_an_rs_config_at_any_m() -> None:
    """tc.quant.gemm(config=RsConfig(...)) runs the register-A kernel, also below SM90_MIN_M rows."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    from tilecraft.gemm import mixed
    from tilecraft.gemm.op import clear_plans

    clear_plans()
    pw = _weight(4, 128, False, torch.bfloat16, 512, 256).to("cuda")
    x = torch.randn(5, 512).to(torch.bfloat16).cuda()
    b = torch.randn(256).to(torch.bfloat16).cuda()
    y = Q.gemm(x, pw, b, config=RsConfig(blk_m=64, stages=8, depth=4))
    check_mixed_gemm(y, x, pw, b, _TOL, torch.bfloat16)
    assert [r.path for r in mixed._RUNS.values()] == ["sm90_mixed_rs"]


@pytest.mark.gpu
@pytest.mark.parametrize("bits,K", [(8, 96), (8, 160), (4, 64)])
def test_gpu_ragged_k(bits: int, K: int) -> None:
    """K % 64 == 32 (int8: the last k-tile's second half), a single k-tile; split-K with fewer k-tiles
    than splits (the launch runs as many as K allows)."""
    pw = _weight(bits, None, True, torch.bfloat16, K, 272).to("cuda")
    x = torch.randn(200, K).to(torch.bfloat16).cuda()
    b = torch.randn(272).to(torch.bfloat16).cuda()
    for cfg in (RsConfig(), RsConfig(blk_m=128, stages=8, splits=3)):
        y = sm90_mixed.sm90_mixed_gemm(x, pw, b, cfg)
        torch.cuda.synchronize()
        check_mixed_gemm(y, x, pw, b, _TOL, torch.bfloat16)


#: three consumers by more than 192 rows of x: two wgmmas per 16-k block (RsConfig.mma_parts), 24 + 3 x 160 registers
WIDE_X = RsConfig(blk_n=192, blk_m=224, stages=3, producer_regs=24, consumer_regs=160, w_smem=True, store_mn=True)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_three_consumers_by_two_wgmmas(fmt: tuple) -> None:
    """Three consumer warpgroups by 224 and 208 rows of x, each 16-k block's wgmma split in two along x's rows
    (the halves' accumulators side by side in one fragment): random shapes (ragged M, N and K's groups), y by TMA
    and from the registers, interleaved k-blocks, and stream-K (224 rows in mode 1, 208 in mode 2), against
    float64."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    rng = random.Random("x2" + _ID(fmt))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for M, cfg in ((rng.randint(100, 700), WIDE_X), (rng.randint(100, 700), replace(WIDE_X, store_mn=False)),
                   (rng.randint(100, 700), replace(WIDE_X, blk_m=208, interleave=True))):
        random_case(fmt, rng, M, cfg)
    bits, group, zp, dtype = fmt
    # 600 rows: 3 x 224, 1.5 rounds of units (stream-K mode 1); 390 rows: 2 x 208, 1.2 rounds (mode 2)
    for M, N, cfg in ((600, 192 * (sms // 2) - 80, replace(WIDE_X, stream_k=1)),
                      (390, 192 * (sms * 3 // 5) - 48, replace(WIDE_X, blk_m=208, stream_k=2))):
        K = 1024
        pw = _weight(bits, group, zp, dtype, K, N, seed=M).to("cuda")
        x = torch.randn(M, K).to(dtype).cuda()
        b = torch.randn(N).to(dtype).cuda()
        launch = sm90_mixed_rs.RsLaunch(x, pw, b, torch.empty(M, N, dtype=dtype, device="cuda"), cfg, sms)
        assert launch.cfg.stream_k and launch.fused
        y = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
        launch(x, pw, b, y)
        torch.cuda.synchronize()
        _check(y, x, pw, b)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_w_through_shared_memory(fmt: tuple) -> None:
    """``RsConfig.w_smem``: W's words come by TMA into the x stages' barrier, rows past N and words past K zero;
    random shapes (ragged N, M and K's groups), split-K summed in the kernel and by the reduction kernel, a
    cluster, against float64."""
    rng = random.Random("ws" + _ID(fmt))
    for M, cfg in ((rng.randint(1, 64), replace(sm90_mixed_rs.WIDE, w_smem=True, splits=rng.randint(1, 4))),
                   (rng.randint(33, 128), RsConfig(blk_m=128, stages=8, depth=4, splits=rng.randint(1, 3), w_smem=True)),
                   (rng.randint(129, 400), RsConfig(blk_m=128, stages=6, depth=4, w_smem=True)),
                   (rng.randint(100, 600), RsConfig(blk_m=128, stages=6, depth=2, cluster=2, w_smem=True)),
                   (rng.randint(1, 64), RsConfig(blk_m=64, stages=8, depth=4, splits=2, w_smem=True))):
        random_case(fmt, rng, M, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", FORMATS, ids=_ID)
def test_gpu_interleaved_k_blocks(fmt: tuple) -> None:
    """The heuristic's tilings at M > 128 (W in smem; one tile of x rows split along K and summed by the reduction
    kernel, or tiles of 192), and ``interleave`` (each 16-k block's wgmma issued once its fragment is converted)
    with 192 rows, W's words in registers, 2x1 clusters, and four consumers, on random shapes against float64."""
    rng = random.Random("il" + _ID(fmt))
    f = _format(fmt)
    for M, cfg in ((rng.randint(129, 192), sm90_mixed_rs.pick_rs_config(150, 8192, 8192, 132, f)),
                   (rng.randint(150, 256), sm90_mixed_rs.pick_rs_config(200, 8192, 8192, 132, f)),
                   (rng.randint(257, 1200), sm90_mixed_rs.pick_rs_config(320, 8192, 8192, 132, f)),
                   (rng.randint(129, 300), RsConfig(blk_m=192, stages=6, splits=2, w_smem=True, interleave=True)),
                   (rng.randint(1, 400), RsConfig(blk_m=128, stages=6, depth=2, splits=rng.randint(1, 3),
                                                  interleave=True)),
                   (rng.randint(100, 600), RsConfig(blk_m=128, stages=6, depth=2, cluster=2, interleave=True)),
                   (rng.randint(1, 64), replace(sm90_mixed_rs.WIDE, w_smem=True, splits=2, interleave=True))):
        random_case(fmt, rng, M, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("bits,K", [(8, 96), (8, 160), (4, 64)])
def test_gpu_w_through_shared_memory_ragged_k(bits: int, K: int) -> None:
    """``w_smem`` where K % 64 == 32 (int8: W's last k-tile half past the words, read as zeros) and a single
    k-tile; N = 272 leaves the last 256-row tile ragged."""
    pw = _weight(bits, None, True, torch.bfloat16, K, 272).to("cuda")
    x = torch.randn(50, K).to(torch.bfloat16).cuda()
    b = torch.randn(272).to(torch.bfloat16).cuda()
    for cfg in (replace(sm90_mixed_rs.WIDE, w_smem=True), RsConfig(blk_m=128, stages=8, splits=3, w_smem=True)):
        y = sm90_mixed.sm90_mixed_gemm(x, pw, b, cfg)
        torch.cuda.synchronize()
        check_mixed_gemm(y, x, pw, b, _TOL, torch.bfloat16)
