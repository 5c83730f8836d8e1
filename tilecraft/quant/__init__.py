"""Weight quantization for the mixed-input GEMM (issue 9).

* ``quantize(w, bits, group_size, zero_point=False)``: round-to-nearest int4 / int8 quantization of a
  weight W (K, N), the right operand of ``x @ W`` (quantize.py), giving a ``QuantizedWeight`` with
  ``.dequantize()``;
* ``pack(qw, dtype=None)``: the ``PackedWeight`` layout the kernel streams (pack.py), ``unpack`` back;
* ``gemm(x, packed_w, bias=None)``: y = x @ dequantize(W) (+ bias) on the GPU with the mixed-input
  kernel (tilecraft/gemm/mixed.py).

This package needs only torch; the kernel language loads when ``gemm`` is first called.
"""
from __future__ import annotations

from typing import Any

from tilecraft.quant.pack import LAYOUT_VERSION, PackedFormat, PackedWeight, k_block, pack, unpack
from tilecraft.quant.quantize import BITS, GROUP_SIZES, QuantizedWeight, quantize

__all__ = ["quantize", "QuantizedWeight", "pack", "unpack", "PackedWeight", "PackedFormat", "LAYOUT_VERSION",
           "BITS", "GROUP_SIZES", "k_block", "gemm"]


def gemm(x: Any, packed_w: PackedWeight, bias: Any = None, **kwargs: Any) -> Any:
    """y (..., N) = x (..., K) @ dequantize(W) (+ bias) with the mixed-input GEMM (see
    tilecraft.gemm.mixed.mixed_gemm for the keyword options)."""
    from tilecraft.gemm.mixed import mixed_gemm
    return mixed_gemm(x, packed_w, bias, **kwargs)
