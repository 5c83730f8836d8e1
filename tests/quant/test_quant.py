"""tilecraft.quant on the CPU: quantize's values (round to nearest, scales, zero points), the packed layout
v1 word by word against its definition, pack/unpack round trips of every format, and the errors."""
from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

import tilecraft.quant as Q  # noqa: E402

FORMATS = list(itertools.product((4, 8), (None, 32, 64, 128), (False, True)))


def _w(K: int, N: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(K, N, generator=torch.Generator().manual_seed(seed))


def test_symmetric_int4_values() -> None:
    """A group of 32 rows per column: s = max|w| / 7, q = round(w / s) (half to even) in -8..7."""
    w = torch.zeros(32, 2)
    w[:4, 0] = torch.tensor([0.7, -0.35, 0.1, 0.0])
    w[:3, 1] = torch.tensor([-1.4, 0.2, 1.0])
    qw = Q.quantize(w, 4, 32)
    assert qw.scales.dtype == torch.float16 and qw.zeros is None and qw.qweight.dtype == torch.int8
    s = qw.scales.float()
    assert torch.allclose(s, torch.tensor([[0.1, 0.2]]), rtol=1e-3)
    assert qw.qweight[:4, 0].tolist() == [7, -4, 1, 0]                   # -0.35 / 0.1 = -3.5 -> -4 (even)
    assert qw.qweight[:3, 1].tolist() == [-7, 1, 5]
    assert torch.allclose(qw.dequantize()[:3, 1], torch.tensor([-1.4, 0.2, 1.0]), atol=1e-3)


def test_zero_point_int8_values() -> None:
    """Asymmetric: the range [min(w, 0), max(w, 0)] maps onto 0..255, z = round(-min / s)."""
    w = torch.linspace(-1.0, 3.0, 64).reshape(64, 1).repeat(1, 16)
    qw = Q.quantize(w, 8, None, zero_point=True)
    assert qw.group_size is None and qw.group == 64 and qw.qweight.dtype == torch.uint8
    s = float(qw.scales[0, 0])
    assert abs(s - 4.0 / 255) < 1e-5
    assert int(qw.zeros[0, 0]) == round(1.0 / s)
    assert int(qw.qweight[0, 0]) == 0 and int(qw.qweight[-1, 0]) == 255
    err = (qw.dequantize() - w).abs().max()
    assert err <= s / 2 + 1e-3


@pytest.mark.parametrize("bits,group,zp", FORMATS)
def test_quantize_error_is_half_a_step(bits: int, group: int | None, zp: bool) -> None:
    w = _w(256, 48)
    qw = Q.quantize(w, bits, group, zp)
    G = group or 256
    step = qw.scales.float().repeat_interleave(G, 0)
    err = (qw.dequantize() - w).abs()
    # half a step; with a zero point, rounding z moves the grid by up to another half step at the ends
    assert bool((err <= step * (1.0 if zp else 0.5) * 1.01 + 1e-6).all())
    lo, hi = (0, 2 ** bits - 1) if zp else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    assert int(qw.qweight.min()) >= lo and int(qw.qweight.max()) <= hi


def test_all_zero_group_and_bf16_scales() -> None:
    w = torch.zeros(64, 16, dtype=torch.bfloat16)
    qw = Q.quantize(w, 4, 64)
    assert qw.scales.dtype == torch.bfloat16 and float(qw.scales.float().min()) == 1.0
    assert int(qw.qweight.abs().max()) == 0
    assert Q.quantize(_w(64, 16), 4, 64, scale_dtype=torch.bfloat16).scales.dtype == torch.bfloat16


@pytest.mark.parametrize("bits,group,zp", FORMATS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_pack_unpack_round_trip(bits: int, group: int | None, zp: bool, dtype: torch.dtype) -> None:
    K, N = 256, 48
    qw = Q.quantize(_w(K, N, bits), bits, group, zp)
    pw = Q.pack(qw, dtype)
    kb = 64 if bits == 4 else 32
    G = group or K
    assert tuple(pw.qweight.shape) == (N // 16, K // kb, 32, 4) and pw.qweight.dtype == torch.int32
    assert tuple(pw.scales.shape) == (N // 16, K // G, 8, 2) and pw.scales.dtype == dtype
    assert (pw.zeros is not None) == zp
    assert pw.format == Q.PackedFormat(bits, group, zp, str(dtype)[6:])
    back = pw.unpack()
    assert torch.equal(back.qweight, qw.qweight)
    assert torch.equal(back.scales, qw.scales.to(dtype))
    assert (back.zeros is None) == (qw.zeros is None) and (back.zeros is None or torch.equal(back.zeros, qw.zeros))
    ref = Q.QuantizedWeight(qw.qweight, qw.scales.to(dtype), qw.zeros, bits, group).dequantize(torch.float64)
    assert torch.equal(pw.dequantize(torch.float64), ref)
    assert pw.nbytes == K * N * bits // 8 + (K // G) * N * 2 * (2 if zp else 1)


def _expected_k(q: int, v: int) -> int:
    """k (within a 16-block) of value v of a lane with q = lane % 4: slots 2q, 2q+1 (v = 0..3), 2q+8, 2q+9
    (v = 4..7) permuted to 4q + 0..3 (pack.py's docstring)."""
    return 4 * q + 2 * (v // 4) + v % 2


def _expected_row(g: int, v: int) -> int:
    return g + 8 * ((v // 2) % 2)


@pytest.mark.parametrize("bits", [4, 8])
def test_packed_words_follow_the_mma_fragment_table(bits: int) -> None:
    """Every value of every word sits where the PTX m16n8k16 A-fragment table (rows g, g+8; pairs of
    slots) and the documented interleave put it, independently of the atom layouts pack.py uses."""
    K, N = 128, 32
    q = torch.randint(-(2 ** (bits - 1)), 2 ** (bits - 1), (K, N), dtype=torch.int8,
                      generator=torch.Generator().manual_seed(3))
    qw = Q.QuantizedWeight(q, torch.ones(1, N, dtype=torch.float16), None, bits, None)
    words = Q.pack(qw).qweight.to(torch.int64) & 0xFFFFFFFF
    u = q.to(torch.int64) + 2 ** (bits - 1)
    kb = 64 if bits == 4 else 32
    for tile, blk, lane in itertools.product(range(N // 16), range(K // kb), range(32)):
        g, qq = lane // 4, lane % 4
        for j in range(kb // 16):                                         # k-blocks of this 16-byte load
            for v in range(8):
                row = 16 * tile + _expected_row(g, v)
                k = blk * kb + 16 * j + _expected_k(qq, v)
                if bits == 4:
                    got = (int(words[tile, blk, lane, j]) >> (4 * (v // 2 + 4 * (v % 2)))) & 0xF
                else:
                    got = (int(words[tile, blk, lane, 2 * j + v // 4]) >> (8 * (v % 4))) & 0xFF
                assert got == int(u[k, row]), (tile, blk, lane, j, v)


def test_packed_scales_rows() -> None:
    N = 32
    s = torch.arange(2 * N, dtype=torch.float16).reshape(2, N)
    qw = Q.QuantizedWeight(torch.zeros(64, N, dtype=torch.int8), s, None, 4, 32)
    p = Q.pack(qw).scales
    for tile, grp, g, h in itertools.product(range(2), range(2), range(8), range(2)):
        assert float(p[tile, grp, g, h]) == float(s[grp, 16 * tile + g + 8 * h])


def test_quantize_errors() -> None:
    w = _w(64, 16)
    with pytest.raises(TypeError, match="torch tensor"):
        Q.quantize(w.numpy(), 4, 32)
    with pytest.raises(TypeError, match="floating-point"):
        Q.quantize(torch.ones(64, 16, dtype=torch.int32), 4, 32)
    with pytest.raises(ValueError, match="2-D"):
        Q.quantize(torch.ones(64), 4, 32)
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        Q.quantize(w, 3, 32)
    with pytest.raises(ValueError, match="group_size must be one of"):
        Q.quantize(w, 4, 48)
    with pytest.raises(ValueError, match="K = 96 is not a multiple of group_size = 64"):
        Q.quantize(_w(96, 16), 4, 64)
    with pytest.raises(TypeError, match="scale_dtype"):
        Q.quantize(w, 4, 32, scale_dtype=torch.float32)
    with pytest.raises(ValueError, match="non-finite"):
        Q.quantize(torch.full((64, 16), float("inf")), 4, 32)
    with pytest.raises(ValueError, match="non-empty"):
        Q.quantize(torch.ones(0, 16), 4, None)


def test_pack_errors() -> None:
    qw = Q.quantize(_w(128, 32), 4, 32)
    with pytest.raises(TypeError, match="QuantizedWeight"):
        Q.pack(qw.qweight)
    with pytest.raises(ValueError, match="N = 24 must be a multiple of 16"):
        Q.pack(Q.quantize(_w(128, 24), 4, 32))
    with pytest.raises(ValueError, match="K = 96 must be a multiple of 64 for int4"):
        Q.pack(Q.quantize(_w(96, 16), 4, 32))
    Q.pack(Q.quantize(_w(96, 16), 8, 32))                                # int8 needs K % 32 only
    with pytest.raises(TypeError, match="must be torch.uint8"):
        Q.pack(Q.QuantizedWeight(qw.qweight, qw.scales, torch.zeros_like(qw.scales, dtype=torch.uint8), 4, 32))
    bad = Q.QuantizedWeight(qw.qweight.clone(), qw.scales, None, 4, 32)
    bad.qweight[0, 0] = 9
    with pytest.raises(ValueError, match=r"int4 values must lie in \[-8, 7\]"):
        Q.pack(bad)
    with pytest.raises(ValueError, match="scales must have shape"):
        Q.pack(Q.QuantizedWeight(qw.qweight, qw.scales[:2], None, 4, 32))
    with pytest.raises(TypeError, match="dtype must be"):
        Q.pack(qw, torch.float32)


def test_format_mismatch_is_refused() -> None:
    pw = Q.pack(Q.quantize(_w(128, 32), 4, 128))
    pw.check(Q.PackedFormat(4, 128, False, "float16"))
    with pytest.raises(ValueError, match="int4-g128-fp16-v1 does not match the kernel's int8-g128-fp16-v1"):
        pw.check(Q.PackedFormat(8, 128, False, "float16"))
    old = Q.PackedWeight(pw.qweight, pw.scales, None, pw.shape, Q.PackedFormat(4, 128, False, "float16", version=0))
    with pytest.raises(ValueError, match="layout version 0"):
        old.unpack()
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        Q.PackedFormat(2, None, False, "float16")
