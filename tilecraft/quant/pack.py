"""The packed weight layout of the mixed-input GEMM (tilecraft/gemm/mixed.py): ``pack``, ``unpack``.

Layout version 1 ("fragment order"). The kernel computes ``y^T = W^T x^T`` with mma.sync m16n8k16, the
weight as the A operand (16 rows = 16 output columns n, 16 columns = 16 k) and x^T as B. A warp's lane
``t`` holds 8 values of each A tile: the atom's A thread-value layout (``SM80_16x8x16_*.layout_a_tv``)
says which (row, slot): rows g = t / 4 and g + 8, slots 2q, 2q+1, 2q+8, 2q+9 with q = t % 4. A GEMM may
permute k freely as long as A and B agree, so slot s of a 16-k block holds k = 4q + 2 (s >= 8) + s % 2:
lane t's B values are then x[m, 4q .. 4q+3], one 8-byte load.

* ``qweight``: int32 words of shape (N/16, K/KB, 32, 4), KB = 64 (int4) or 32 (int8): the 16 bytes lane t
  loads (one 128-bit load, a warp reads 512 contiguous bytes) for one 16-row tile and KB values of k.
  int4: word j is the whole A operand of k-block j (8 nibbles), interleaved for the magic-number
  conversion: value v of the lane sits in nibble v // 2 + 4 (v % 2), so ``w & 0x000f000f`` holds
  values 0, 1, ``w & 0x00f000f0`` values 2, 3, and ``w >> 8`` the same for values 4..7 (each pair one
  register of the A fragment). int8: words 2j, 2j+1 are k-block j's operand, value v in byte v % 4 of
  word v // 4. Values are stored unsigned: q + 8 (int4) / q + 128 (int8) for symmetric weights, q itself
  with a zero point.
* ``scales`` (and ``zeros``): (N/16, K/G, 8, 2) in the activation dtype: [tile, group, g, h] is the scale
  of row n = 16 tile + g + 8 h, so lane t reads its two rows' scales with one 32-bit load. Zero points
  are stored as the same float type (exact integers 0..255).

The ``PackedFormat`` (bits, group size, zero point, dtype, layout version) travels with the tensors; the
kernel refuses a weight whose format it was not built for.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tilecraft.quant.quantize import BITS, QuantizedWeight, normalize_group, qrange

__all__ = ["LAYOUT_VERSION", "PackedFormat", "PackedWeight", "pack", "unpack", "k_block"]

#: bump when the packed layout changes: weights packed by another version are refused
LAYOUT_VERSION = 1
_DTYPES = ("float16", "bfloat16")


def k_block(bits: int) -> int:
    """k values per 16-byte lane load of one 16-row tile: 64 for int4, 32 for int8."""
    return 64 if bits == 4 else 32


@dataclass(frozen=True)
class PackedFormat:
    """What a packed weight holds: value width, group size along K (None: per-channel), zero points, the
    activation / scale dtype ("float16" or "bfloat16") and the layout version."""

    bits: int
    group_size: int | None
    zero_point: bool
    dtype: str
    version: int = LAYOUT_VERSION

    def __post_init__(self) -> None:
        if self.bits not in BITS:
            raise ValueError(f"bits must be 4 or 8, got {self.bits!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {self.dtype!r}")

    @property
    def name(self) -> str:
        """A short label, e.g. ``int4-g128-fp16`` or ``int8-pc-zp-bf16``."""
        g = f"g{self.group_size}" if self.group_size else "pc"
        zp = "-zp" if self.zero_point else ""
        return f"int{self.bits}-{g}{zp}-{'fp16' if self.dtype == 'float16' else 'bf16'}-v{self.version}"

    @property
    def offset(self) -> int:
        """What storing adds to a signed (symmetric) value to make it unsigned: 8, 128, or 0 with a zero point."""
        return 0 if self.zero_point else 1 << (self.bits - 1)


@dataclass
class PackedWeight:
    """A weight W (K, N) packed for the mixed-input GEMM (see the module docstring for the layout)."""

    qweight: Any
    scales: Any
    zeros: Any
    shape: tuple[int, int]
    format: PackedFormat

    @property
    def group(self) -> int:
        """The effective group size along K (K for per-channel)."""
        return self.format.group_size or self.shape[0]

    @property
    def device(self) -> Any:
        return self.qweight.device

    @property
    def nbytes(self) -> int:
        """Bytes the GEMM streams: packed values, scales and zero points."""
        n = self.qweight.numel() * 4 + self.scales.numel() * 2
        return n + (self.zeros.numel() * 2 if self.zeros is not None else 0)

    def to(self, device: Any) -> "PackedWeight":
        """The same weight on another device."""
        z = self.zeros.to(device) if self.zeros is not None else None
        return PackedWeight(self.qweight.to(device), self.scales.to(device), z, self.shape, self.format)

    def unpack(self) -> QuantizedWeight:
        """The plain QuantizedWeight this was packed from (scales in the packed dtype)."""
        return unpack(self)

    def dequantize(self, dtype: Any = None) -> Any:
        """W' (K, N) = (q - z) * s as float (float32 unless dtype says otherwise): the GEMM's reference."""
        return unpack(self).dequantize(dtype)

    def check(self, fmt: PackedFormat) -> None:
        """Raise ValueError unless this weight is packed in format fmt."""
        if self.format != fmt:
            raise ValueError(f"packed weight format {self.format.name} does not match the kernel's {fmt.name}; "
                             "re-pack the weight (tc.quant.pack) for this kernel")


@functools.lru_cache(maxsize=None)
def _lane_tables() -> tuple[list[list[int]], list[list[int]]]:
    """(row, k) of value v of lane t in a 16x16 A tile, from the MMA atom's A layout and the k permutation."""
    from tilecraft.atoms import SM80_16x8x16_F32F16F16F32_TN as atom
    tv = atom.layout_a_tv
    rows, ks = [], []
    for t in range(32):
        r_t, k_t = [], []
        for v in range(8):
            idx = tv(t, v)                                                 # m + 16 * slot
            r, s = idx % 16, idx // 16
            r_t.append(r)
            k_t.append(4 * ((s % 8) // 2) + 2 * (s // 8) + s % 2)
        rows.append(r_t)
        ks.append(k_t)
    return rows, ks


def _nibble(v: int) -> int:
    """The nibble of a word that holds value v of an int4 A operand (the magic-number interleave)."""
    return v // 2 + 4 * (v % 2)


def _torch() -> Any:
    import torch
    return torch


def _check_shape(K: int, N: int, bits: int) -> None:
    kb = k_block(bits)
    if N % 16:
        raise ValueError(f"pack: N = {N} must be a multiple of 16 (the kernel's row tile)")
    if K % kb:
        raise ValueError(f"pack: K = {K} must be a multiple of {kb} for int{bits} (one 16-byte load per lane "
                         f"covers {kb} values of k)")


def pack(qw: QuantizedWeight, dtype: Any = None) -> PackedWeight:
    """Pack a QuantizedWeight for the mixed-input GEMM. dtype: the activation dtype the GEMM will take
    (torch.float16 / torch.bfloat16; default: the scales' dtype); scales are converted to it."""
    torch = _torch()
    if not isinstance(qw, QuantizedWeight):
        raise TypeError(f"pack takes a QuantizedWeight (tc.quant.quantize), got {type(qw).__name__}")
    q, bits = qw.qweight, qw.bits
    if q.dim() != 2:
        raise ValueError(f"pack: qweight must be 2-D (K, N), got shape {tuple(q.shape)}")
    K, N = q.shape
    if bits not in BITS:
        raise ValueError(f"pack: bits must be 4 or 8, got {bits!r}")
    G = normalize_group(qw.group_size, K)
    _check_shape(K, N, bits)
    zp = qw.zeros is not None
    want = torch.uint8 if zp else torch.int8
    if q.dtype != want:
        raise TypeError(f"pack: qweight must be {want} ({'unsigned, with zero points' if zp else 'signed, symmetric'}),"
                        f" got {q.dtype}")
    lo, hi = qrange(bits, zp)
    if q.numel() and (int(q.min()) < lo or int(q.max()) > hi):
        raise ValueError(f"pack: int{bits} values must lie in [{lo}, {hi}], got [{int(q.min())}, {int(q.max())}]")
    dtype = dtype or qw.scales.dtype
    if dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"pack: dtype must be torch.float16 or torch.bfloat16, got {dtype}")
    for name, t, want_dt in (("scales", qw.scales, None), ("zeros", qw.zeros, torch.uint8)):
        if t is None:
            continue
        if tuple(t.shape) != (K // G, N):
            raise ValueError(f"pack: {name} must have shape (K / group, N) = {(K // G, N)}, got {tuple(t.shape)}")
        if want_dt is not None and t.dtype != want_dt:
            raise TypeError(f"pack: {name} must be {want_dt}, got {t.dtype}")
    if not qw.scales.is_floating_point():
        raise TypeError(f"pack: scales must be floating point, got {qw.scales.dtype}")
    fmt = PackedFormat(bits, None if G == K and qw.group_size is None else G, zp, str(dtype).replace("torch.", ""))
    dev = q.device
    rows, ks = _lane_tables()
    R, Kk = torch.tensor(rows, device=dev), torch.tensor(ks, device=dev)           # (32, 8) each
    u = q.to(torch.int64) + fmt.offset                                              # (K, N) unsigned
    tiles = u.reshape(K // 16, 16, N // 16, 16).permute(2, 0, 3, 1)                 # (N/16, K/16, 16 r, 16 k)
    vals = tiles[:, :, R, Kk]                                                       # (N/16, K/16, 32, 8)
    if bits == 4:
        shifts = torch.tensor([4 * _nibble(v) for v in range(8)], device=dev)
        words = (vals << shifts).sum(-1)                                            # (N/16, K/16, 32)
        words = words.reshape(N // 16, K // 64, 4, 32).transpose(2, 3)              # (N/16, K/64, 32, 4)
    else:
        shifts = torch.tensor([8 * (v % 4) for v in range(8)], device=dev)
        words = (vals << shifts).reshape(N // 16, K // 16, 32, 2, 4).sum(-1)        # (N/16, K/16, 32, 2)
        words = words.reshape(N // 16, K // 32, 2, 32, 2).permute(0, 1, 3, 2, 4)    # (N/16, K/32, 32, 2, 2)
        words = words.reshape(N // 16, K // 32, 32, 4)
    words = torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32).contiguous()
    scales = _pack_rows(qw.scales.to(dtype), N)
    zeros = _pack_rows(qw.zeros.to(dtype), N) if zp else None
    return PackedWeight(words, scales, zeros, (K, N), fmt)


def _pack_rows(s: Any, N: int) -> Any:
    """(groups, N) -> (N/16, groups, 8, 2): [tile, group, g, h] = s[group, 16 tile + g + 8 h]."""
    return s.reshape(s.shape[0], N // 16, 2, 8).permute(1, 0, 3, 2).contiguous()


def _unpack_rows(p: Any) -> Any:
    """The inverse of _pack_rows: (N/16, groups, 8, 2) -> (groups, N)."""
    T, Gs = p.shape[0], p.shape[1]
    return p.permute(1, 0, 3, 2).reshape(Gs, T * 16)


def unpack(pw: PackedWeight) -> QuantizedWeight:
    """The QuantizedWeight a PackedWeight holds (the inverse of pack, scales in the packed dtype)."""
    torch = _torch()
    if not isinstance(pw, PackedWeight):
        raise TypeError(f"unpack takes a PackedWeight, got {type(pw).__name__}")
    fmt = pw.format
    if fmt.version != LAYOUT_VERSION:
        raise ValueError(f"unpack: layout version {fmt.version} is not this library's {LAYOUT_VERSION}")
    K, N = pw.shape
    dev = pw.qweight.device
    rows, ks = _lane_tables()
    R, Kk = torch.tensor(rows, device=dev), torch.tensor(ks, device=dev)
    w = pw.qweight.to(torch.int64) & 0xFFFFFFFF
    if fmt.bits == 4:
        w = w.transpose(2, 3).reshape(N // 16, K // 16, 32)                        # (N/16, K/16, 32)
        shifts = torch.tensor([4 * _nibble(v) for v in range(8)], device=dev)
        vals = (w[..., None] >> shifts) & 0xF                                       # (N/16, K/16, 32, 8)
    else:
        w = w.reshape(N // 16, K // 32, 32, 2, 2).permute(0, 1, 3, 2, 4).reshape(N // 16, K // 16, 32, 2)
        shifts = torch.tensor([8 * (v % 4) for v in range(8)], device=dev)
        vals = (w[..., [v // 4 for v in range(8)]] >> shifts) & 0xFF
    tiles = torch.empty(N // 16, K // 16, 16, 16, dtype=torch.int64, device=dev)
    tiles[:, :, R, Kk] = vals
    u = tiles.permute(1, 3, 0, 2).reshape(K, N)
    q = (u - fmt.offset).to(torch.uint8 if fmt.zero_point else torch.int8)
    zeros = _unpack_rows(pw.zeros).to(torch.uint8) if pw.zeros is not None else None
    return QuantizedWeight(q, _unpack_rows(pw.scales), zeros, fmt.bits, fmt.group_size)
