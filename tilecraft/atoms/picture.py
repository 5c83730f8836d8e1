"""Pictures of tiled MMAs and tiled copies: who holds which element, as CuTe's print_latex draws them."""
from __future__ import annotations

import os
from typing import Any

from tilecraft.atoms.copy import TiledCopy
from tilecraft.atoms.mma import TiledMMA
from tilecraft.layout import Layout, Picture, size

__all__ = ["draw_tiled_mma", "draw_tiled_copy", "tv_owners"]

# Thread colors, as tc.draw_tv's; repeated every 8 threads so each quad and warp pattern reads at a glance.
_PALETTE = [
    "#AFD0F2", "#FFD59E", "#B9E4B0", "#F5B7B1", "#D7BDE2", "#FAE29C", "#A3E4D7", "#F0B27A",
]
_CW, _CH, _PAD = 40, 26, 34


def tv_owners(tv: Layout, rows: int, cols: int) -> dict[tuple[int, int], tuple[int, int]]:
    """{(row, col): (thread, value)} for a TV layout into a column-major rows×cols tile; the lowest
    (thread, value) wins where several threads hold the same element (as A or B across warps)."""
    owner: dict[tuple[int, int], tuple[int, int]] = {}
    for t in range(size(tv[0])):
        for v in range(size(tv[1])):
            idx = tv(t, v)
            r, c = idx % rows, idx // rows
            if not 0 <= c < cols:
                raise ValueError(f"thread {t} value {v} maps to index {idx}, outside the {rows}x{cols} tile")
            owner.setdefault((r, c), (t, v))
    return owner


def _panel(out: list, cells: list, owners: dict, x0: int, y0: int, rows: int, cols: int, title: str,
           transpose: bool, row_name: str, col_name: str) -> None:
    """Draw one operand as a grid at (x0, y0); with transpose the tile's (r, c) is drawn at (c, r)."""
    out.append(f'<text x="{x0}" y="{y0 - 20}" font-weight="bold">{title}</text>')
    nr, nc = (cols, rows) if transpose else (rows, cols)
    for c in range(nc):
        out.append(f'<text x="{x0 + c * _CW + _CW / 2}" y="{y0 - 4}" text-anchor="middle">{c}</text>')
    for r in range(nr):
        out.append(f'<text x="{x0 - 4}" y="{y0 + r * _CH + _CH / 2 + 4}" text-anchor="end">{r}</text>')
    out.append(f'<text x="{x0 - 24}" y="{y0 - 4}" fill="#666">{row_name}\\{col_name}</text>')
    for (r, c), (t, v) in sorted(owners.items()):
        gr, gc = (c, r) if transpose else (r, c)
        x, y = x0 + gc * _CW, y0 + gr * _CH
        color = _PALETTE[t % len(_PALETTE)]
        out.append(f'<rect x="{x}" y="{y}" width="{_CW}" height="{_CH}" fill="{color}" stroke="black" '
                   f'stroke-width="0.5"/>')
        out.append(f'<text x="{x + _CW / 2}" y="{y + 11}" text-anchor="middle">T{t}</text>')
        out.append(f'<text x="{x + _CW / 2}" y="{y + 22}" text-anchor="middle">V{v}</text>')
        cells.append((y0 // _CH + gr, x0 // _CW + gc, f"T{t}\nV{v}", color))  # grid cell for PNG


def _picture(panels: list[tuple], title: str, width: int, height: int, path: Any) -> Picture:
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
           'font-size="9">', f'<text x="4" y="14">{title}</text>']
    cells: list = []
    for p in panels:
        _panel(out, cells, *p)
    out.append("</svg>")
    rows = max((r for r, _c, _t, _k in cells), default=0) + 1
    cols = max((c for _r, c, _t, _k in cells), default=0) + 1
    pic = Picture("\n".join(out), cells, rows, cols, title)
    if path is not None:
        pic.save(path)
    return pic


def draw_tiled_mma(mma: TiledMMA, path: str | os.PathLike | None = None) -> Picture:
    """Draw a tiled MMA as CuTe's print_latex does: B (K×N) on top, A (M×K) on the left, C (M×N) at the
    bottom right; each cell names the thread T and value V that hold it, colored by thread."""
    M, N, K = mma.tile_shape
    a, b, c = (tv_owners(mma.get_layoutA_TV(), M, K), tv_owners(mma.get_layoutB_TV(), N, K),
               tv_owners(mma.get_layoutC_TV(), M, N))
    top = _PAD + 40 + K * _CH + 40
    left = _PAD + 10 + K * _CW + 30
    panels = [
        (b, left, _PAD + 40, N, K, "B", True, "k", "n"),
        (a, _PAD + 10, top, M, K, "A", False, "m", "k"),
        (c, left, top, M, N, "C", False, "m", "n"),
    ]
    title = f"TiledMMA {mma.atom.name}, ThrLayoutVMNK {mma.thr_layout_vmnk}, tile {M}x{N}x{K}"
    return _picture(panels, title, left + N * _CW + 20, top + M * _CH + 20, path)


def draw_tiled_copy(copy: TiledCopy, path: str | os.PathLike | None = None) -> Picture:
    """Draw a tiled copy's source (left) and destination (right) TV layouts over its tile."""
    if len(copy.tiler_mn) != 2:
        raise ValueError(f"draw_tiled_copy draws rank-2 tiles, got the tiler {copy.tiler_mn}")
    M, N = (size(m) for m in copy.tiler_mn)
    s, d = tv_owners(copy.get_layoutS_TV(), M, N), tv_owners(copy.get_layoutD_TV(), M, N)
    left2 = _PAD + 10 + N * _CW + 50
    panels = [
        (s, _PAD + 10, _PAD + 40, M, N, "Src", False, "m", "n"),
        (d, left2, _PAD + 40, M, N, "Dst", False, "m", "n"),
    ]
    title = f"TiledCopy {copy.atom.name}, tile {M}x{N}"
    return _picture(panels, title, left2 + N * _CW + 20, _PAD + 40 + M * _CH + 20, path)
