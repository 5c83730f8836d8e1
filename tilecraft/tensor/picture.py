"""Pictures of tensors: values in a grid, and which thread of a partition owns each element."""
from __future__ import annotations

import os
from typing import Any

from tilecraft import layout as _L
from tilecraft.layout.picture import _PALETTE, Picture, _svg
from tilecraft.tensor.tensor import Tensor, local_partition, make_identity_tensor

__all__ = ["draw_tensor", "draw_partition"]


def _rows_cols(t: Tensor) -> tuple[int, int]:
    if t.rank == 1:
        return 1, int(_L.size(t.layout))
    if t.rank != 2:
        raise ValueError(f"drawing needs a rank-1 or rank-2 tensor, got rank {t.rank} ({t.layout})")
    return int(_L.size(t.layout[0])), int(_L.size(t.layout[1]))


def draw_tensor(t: Tensor, path: str | os.PathLike | None = None) -> Picture:
    """A grid of t's values, colored by value."""
    rows, cols = _rows_cols(t)
    cells = []
    for m in range(rows):
        for n in range(cols):
            v = t(n) if t.rank == 1 else t(m, n)
            color = _PALETTE[v % len(_PALETTE)] if isinstance(v, int) else "#FFFFFF"
            cells.append((m, n, str(v), color))
    title = repr(t)
    pic = Picture(_svg(cells, rows, cols, title), cells, rows, cols, title)
    if path is not None:
        pic.save(path)
    return pic


def draw_partition(t: Tensor, thr_layout: Any, path: str | os.PathLike | None = None, proj: Any = None) -> Picture:
    """Which thread owns each element of the rank-2 tensor t under local_partition(t, thr_layout, tid):
    each cell shows the thread T and t's value, colored by thread. The ownership is computed by
    partitioning an identity tensor with the same local_partition, so it is exactly what the threads get."""
    rows, cols = _rows_cols(t)
    ident = make_identity_tensor(t.shape)
    thr = thr_layout if isinstance(thr_layout, _L.Layout) else _L.make_layout(thr_layout)
    nthr = int(_L.size(thr if proj is None else _L.Layout(_L.dice(proj, thr.shape), _L.dice(proj, thr.stride))))
    owner: dict = {}
    for tid in range(nthr):
        part = local_partition(ident, thr, tid, proj)
        for c in part:
            owner.setdefault(_flat2(c, t), []).append(tid)
    cells = []
    for m in range(rows):
        for n in range(cols):
            tids = owner.get((m, n), [])
            v = t(n) if t.rank == 1 else t(m, n)
            label = ("T" + ",".join(map(str, tids)) if tids else "-") + f"\n{v}"
            cells.append((m, n, label, _PALETTE[tids[0] % len(_PALETTE)] if tids else "#FFFFFF"))
    title = f"local_partition({t.layout}, {thr})"
    pic = Picture(_svg(cells, rows, cols, title), cells, rows, cols, title)
    if path is not None:
        pic.save(path)
    return pic


def _flat2(c: Any, t: Tensor) -> tuple[int, int]:
    """An identity-tensor coordinate as (row, column) in t's rank-2 (or rank-1) picture."""
    if t.rank == 1:
        return 0, int(_L.crd2idx(c, t.shape))
    m = _L.crd2idx(c[0], t.shape[0]) if isinstance(c[0], tuple) else c[0]
    n = _L.crd2idx(c[1], t.shape[1]) if isinstance(c[1], tuple) else c[1]
    return int(m), int(n)
