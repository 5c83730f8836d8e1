"""Layout helpers for partitioning tiles among threads with vector accesses (pure layout algebra on
kernel tensors; nothing here emits code)."""
from __future__ import annotations

from typing import Any

from tilecraft import layout as _L
from tilecraft.tensor import Tensor

__all__ = ["vector_permutation", "permute_modes"]


def vector_permutation(threads: int, extent: int, vec: int = 4) -> Any:
    """The permutation of [0, extent) under which raked partitioning (``local_partition``) among
    ``threads`` threads gives each thread runs of ``vec`` contiguous elements: index
    t + threads * (v + vec * r) -> vec * t + v + threads * vec * r (thread t, element v of its run r).
    CuTe's TiledMMA / TiledCopy permutation tile. Raises ValueError unless threads * vec divides extent."""
    if extent % (threads * vec):
        raise ValueError(f"vector_permutation: {threads} threads x {vec} elements must divide {extent}")
    return _L.make_layout((threads, vec, extent // (threads * vec)), (vec, 1, threads * vec))


def permute_modes(x: Tensor, *modes: int) -> Tensor:
    """The same tensor with its top-level modes in the order ``modes`` (a view: same engine and
    offset). ``copy`` vectorizes along the first mode, so this puts the contiguous mode first."""
    return Tensor(x.engine, _L.select(x.layout, *modes), x.offset)
