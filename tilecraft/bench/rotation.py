"""How many copies of a benchmark's inputs keep them out of L2.

A kernel timed on the same inputs over and over reads them from L2 after the first call once they fit
(H100: 50 MB, H200: 60 MB), and then a "GB/s" figure measures L2, not HBM. Rotating among enough
distinct copies that the working set of one full rotation is several times L2 means every call finds
its inputs evicted by the calls between.
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["DEFAULT_L2_BYTES", "l2_cache_bytes", "copies_for_rotation", "tensor_bytes"]

#: Used when the device does not report its L2 size: the larger of H100 (50 MB) and H200 (60 MB), so the
#: rotation errs on the side of too many copies.
DEFAULT_L2_BYTES = 60 * 1024 * 1024


def l2_cache_bytes(device: Any = None) -> int:
    """L2 size of a CUDA device in bytes, or :data:`DEFAULT_L2_BYTES` where it cannot be queried."""
    try:
        import torch

        if not torch.cuda.is_available():
            return DEFAULT_L2_BYTES
        props = torch.cuda.get_device_properties(device if device is not None else torch.cuda.current_device())
        size = int(getattr(props, "L2_cache_size", 0) or 0)
        return size if size > 0 else DEFAULT_L2_BYTES
    except Exception:
        return DEFAULT_L2_BYTES


def copies_for_rotation(
    bytes_per_call: int,
    l2_bytes: int = DEFAULT_L2_BYTES,
    *,
    factor: float = 3.0,
    max_bytes: int | None = None,
    max_copies: int = 1024,
) -> int:
    """Number of input copies so that one rotation touches at least ``factor`` x L2 bytes.

    ``bytes_per_call`` counts the input bytes one call reads (outputs are freshly written and do not
    help a later call). The result is ``ceil(factor * l2_bytes / bytes_per_call)``, at least 1. Inputs
    already larger than ``factor`` x L2 need no second copy: by the time a call comes back to the start
    of its operands, the rest of them has evicted it.

    ``max_bytes`` caps the memory of all copies together (the copies are real allocations); the cap
    wins over ``factor`` but never goes below one copy.
    """
    if bytes_per_call <= 0:
        raise ValueError(f"bytes_per_call must be positive, got {bytes_per_call}")
    if l2_bytes <= 0:
        raise ValueError(f"l2_bytes must be positive, got {l2_bytes}")
    if factor <= 0:
        raise ValueError(f"factor must be positive, got {factor}")
    n = max(1, math.ceil(factor * l2_bytes / bytes_per_call))
    n = min(n, max_copies)
    if max_bytes is not None:
        n = min(n, max(1, max_bytes // bytes_per_call))
    return n


def tensor_bytes(*tensors: Any) -> int:
    """Bytes of storage a set of tensors occupy (``numel * element_size``), ignoring None entries."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        total += int(t.numel()) * int(t.element_size())
    return total
