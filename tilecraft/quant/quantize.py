"""Round-to-nearest weight quantization: ``quantize(w, bits, group_size, zero_point)``.

Convention: a weight is ``W`` of shape (K, N), the right operand of ``y = x @ W`` with x (M, K), as
``tc.gemm`` takes it. Scales (and zero points) belong to one output column n and one group of
``group_size`` consecutive rows k (the reduction dimension), or to the whole column (per-channel,
``group_size`` None or -1):

    W[k, n] ~= (q[k, n] - z[k // G, n]) * s[k // G, n]

* symmetric (``zero_point=False``): q is signed, -2^(b-1) .. 2^(b-1)-1, z = 0 and s = max|W| / (2^(b-1)-1);
* asymmetric (``zero_point=True``): q is unsigned, 0 .. 2^b-1, s = (max - min) / (2^b-1) over a range that
  contains 0, and z = round(-min / s), an integer in the same range as q.

Scales are rounded to their storage type (fp16 or bf16) *before* q is computed, so ``dequantize`` with the
stored scales is the exact reference a kernel must reproduce.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["QuantizedWeight", "quantize", "BITS", "GROUP_SIZES"]

#: supported weight widths
BITS = (4, 8)
#: supported group sizes along K (None / -1: one group per column)
GROUP_SIZES = (32, 64, 128)


def _torch() -> Any:
    import torch
    return torch


def normalize_group(group_size: int | None, K: int) -> int:
    """The effective group size: K for per-channel (None or -1), else group_size after checking it."""
    if group_size is None or group_size == -1:
        return K
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size not in GROUP_SIZES:
        raise ValueError(f"group_size must be one of {GROUP_SIZES} or None/-1 (per-channel), got {group_size!r}")
    if K % group_size:
        raise ValueError(f"K = {K} is not a multiple of group_size = {group_size}")
    return group_size


def _check_bits(bits: Any) -> int:
    if isinstance(bits, bool) or bits not in BITS:
        raise ValueError(f"bits must be 4 or 8, got {bits!r}")
    return int(bits)


def qrange(bits: int, zero_point: bool) -> tuple[int, int]:
    """(lowest, highest) stored integer: signed for symmetric weights, unsigned with a zero point."""
    return (0, (1 << bits) - 1) if zero_point else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


@dataclass
class QuantizedWeight:
    """A quantized (K, N) weight in plain (unpacked) form.

    ``qweight`` (K, N): int8 holding signed values (symmetric) or uint8 holding unsigned ones (with zero
    point); ``scales`` (K / G, N) in fp16 or bf16; ``zeros`` (K / G, N) uint8 or None; ``group_size`` G
    (None for per-channel, where there is one group of K rows)."""

    qweight: Any
    scales: Any
    zeros: Any
    bits: int
    group_size: int | None

    @property
    def shape(self) -> tuple[int, int]:
        """(K, N) of the weight."""
        return tuple(self.qweight.shape)  # type: ignore[return-value]

    @property
    def zero_point(self) -> bool:
        """Whether the weight is asymmetric (unsigned q with a zero point)."""
        return self.zeros is not None

    @property
    def group(self) -> int:
        """The effective group size (K for per-channel)."""
        return self.shape[0] if self.group_size is None else self.group_size

    def dequantize(self, dtype: Any = None) -> Any:
        """W' (K, N) = (q - z) * s, computed exactly in float64 then cast to dtype (default float32)."""
        torch = _torch()
        G = self.group
        s = self.scales.double().repeat_interleave(G, dim=0)
        q = self.qweight.double()
        if self.zeros is not None:
            q = q - self.zeros.double().repeat_interleave(G, dim=0)
        return (q * s).to(dtype or torch.float32)


def quantize(w: Any, bits: int, group_size: int | None, zero_point: bool = False,
             scale_dtype: Any = None) -> QuantizedWeight:
    """Round-to-nearest quantization of W (K, N) (see the module docstring).

    w: a floating-point torch tensor (K, N); bits: 4 or 8; group_size: 32, 64, 128 along K, or None / -1
    for one scale per column; zero_point: unsigned values with a per-group zero point instead of signed
    symmetric ones; scale_dtype: torch.float16 or torch.bfloat16 (default: w's dtype when it is one of
    those, else float16)."""
    torch = _torch()
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"quantize takes a torch tensor, got {type(w).__name__}")
    if not w.is_floating_point():
        raise TypeError(f"quantize takes a floating-point weight, got {w.dtype}")
    if w.dim() != 2:
        raise ValueError(f"quantize takes a 2-D weight W (K, N) (the right operand of x @ W), got shape {tuple(w.shape)}")
    bits = _check_bits(bits)
    K, N = w.shape
    if K == 0 or N == 0:
        raise ValueError(f"quantize needs a non-empty weight, got shape {(K, N)}")
    G = normalize_group(group_size, K)
    if scale_dtype is None:
        scale_dtype = w.dtype if w.dtype in (torch.float16, torch.bfloat16) else torch.float16
    if scale_dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"scale_dtype must be torch.float16 or torch.bfloat16, got {scale_dtype}")
    if not torch.isfinite(w).all():
        raise ValueError("quantize: the weight has non-finite values")
    lo, hi = qrange(bits, zero_point)
    wg = w.detach().to(torch.float32).reshape(K // G, G, N)                # (groups, G, N)
    if zero_point:
        wmin = wg.amin(dim=1).clamp(max=0.0)
        wmax = wg.amax(dim=1).clamp(min=0.0)
        s = ((wmax - wmin) / hi)
    else:
        s = wg.abs().amax(dim=1) / hi
    s = torch.where(s > 0, s, torch.ones_like(s)).to(scale_dtype)         # an all-zero group keeps scale 1
    sf = s.to(torch.float32)
    if torch.isinf(sf).any() or (sf == 0).any():
        raise ValueError(f"quantize: a scale is not representable in {scale_dtype} (weights too large or too small)")
    if zero_point:
        z = torch.round(-wmin / sf).clamp(lo, hi)                          # (groups, N)
        q = torch.round(wg / sf[:, None, :]) + z[:, None, :]
        zeros = z.to(torch.uint8)
    else:
        q = torch.round(wg / sf[:, None, :])
        zeros = None
    q = q.clamp(lo, hi).reshape(K, N).to(torch.uint8 if zero_point else torch.int8)
    return QuantizedWeight(q.to(w.device), s.to(w.device), zeros.to(w.device) if zeros is not None else None, bits,
                           None if G == K and group_size in (None, -1) else G)
