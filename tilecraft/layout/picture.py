"""Pictures of layouts: CuTe's print_layout table, and SVG/PNG drawings of layouts and thread-value layouts."""
from __future__ import annotations

import os
from typing import Any, Callable

from tilecraft.layout.inttuple import is_static, product
from tilecraft.layout.layout import Layout, size

__all__ = ["print_layout", "layout_table", "draw", "draw_tv", "Picture"]


def _num_digits(x: int) -> int:
    return len(str(abs(int(x))))


def layout_table(L: Any) -> str:
    """The text CuTe's print_layout prints for a rank-2 layout: the layout, then a boxed m×n table of offsets."""
    from tilecraft.layout.layout import cosize
    if L.rank != 2:
        raise ValueError(f"print_layout needs a rank-2 layout, got {L} (rank {L.rank})")
    M, N = size(L[0]), size(L[1])
    if not (is_static(M) and is_static(N)):
        raise ValueError(f"print_layout needs static sizes, got {L}")
    w = _num_digits(cosize(L)) + 2
    border = "    " + "".join("+" + "-" * w for _ in range(N)) + "+"
    lines = [str(L), "    " + "".join(f"  {n:>{w - 2}} " for n in range(N))]
    for m in range(M):
        lines.append(border)
        lines.append(f"{m:>2}  " + "".join(f"| {int(L(m, n)):>{w - 2}} " for n in range(N)) + "|")
    lines.append(border)
    return "\n".join(lines)


def print_layout(L: Any) -> None:
    """Print a rank-2 layout as CuTe's print_layout does."""
    print(layout_table(L))


_PALETTE = [
    "#AFD0F2", "#FFD59E", "#B9E4B0", "#F5B7B1", "#D7BDE2", "#FAE29C", "#A3E4D7", "#F0B27A",
    "#C5CAE9", "#DCEDC8", "#FFCCBC", "#B2EBF2", "#E1BEE7", "#FFF9C4", "#CFD8DC", "#F8BBD0",
]


class Picture:
    """An SVG drawing; shows itself in notebooks, `.save(path)` writes .svg, or .png (needs matplotlib)."""

    def __init__(self, svg: str, cells: list, rows: int, cols: int, title: str):
        self.svg = svg
        self._cells, self._rows, self._cols, self._title = cells, rows, cols, title

    def _repr_svg_(self) -> str:
        return self.svg

    def __str__(self) -> str:
        return self.svg

    def save(self, path: str | os.PathLike) -> str:
        """Write the picture; the format comes from the suffix (.svg always, .png with matplotlib)."""
        path = os.fspath(path)
        if path.endswith(".png"):
            self._save_png(path)
        else:
            with open(path, "w") as f:
                f.write(self.svg)
        return path

    def _save_png(self, path: str) -> None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise RuntimeError("writing PNG needs matplotlib (pip install tilecraft[plot])") from e
        fig, ax = plt.subplots(figsize=(max(2.0, 0.6 * self._cols + 1), max(2.0, 0.45 * self._rows + 1)))
        for (r, c, text, color) in self._cells:
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=color, edgecolor="black", linewidth=0.5))
            ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=7)
        ax.set_xlim(0, self._cols)
        ax.set_ylim(self._rows, 0)
        ax.set_xticks([i + 0.5 for i in range(self._cols)], [str(i) for i in range(self._cols)], fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(self._rows)], [str(i) for i in range(self._rows)], fontsize=7)
        ax.xaxis.tick_top()
        ax.set_title(self._title, fontsize=8)
        ax.set_aspect("equal")
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _svg(cells: list, rows: int, cols: int, title: str) -> str:
    cw, ch, pad = 44, 28, 30
    W, H = pad + cols * cw + 10, pad + 18 + rows * ch + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="monospace" font-size="10">',
           f'<text x="{pad}" y="14">{_esc(title)}</text>']
    for c in range(cols):
        out.append(f'<text x="{pad + c * cw + cw / 2}" y="{pad + 12}" text-anchor="middle">{c}</text>')
    for r in range(rows):
        out.append(f'<text x="{pad - 6}" y="{pad + 18 + r * ch + ch / 2 + 4}" text-anchor="end">{r}</text>')
    for (r, c, text, color) in cells:
        x, y = pad + c * cw, pad + 18 + r * ch
        out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{color}" stroke="black" stroke-width="0.5"/>')
        lines = text.split("\n")
        for k, line in enumerate(lines):
            ty = y + ch / 2 + 4 + (k - (len(lines) - 1) / 2) * 11
            out.append(f'<text x="{x + cw / 2}" y="{ty}" text-anchor="middle">{_esc(line)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _grid(L: Any) -> tuple[int, int, Callable[[int, int], Any]]:
    if L.rank == 1:
        return 1, int(size(L)), lambda m, n: L(n)
    if L.rank != 2:
        raise ValueError(f"draw needs a rank-1 or rank-2 layout, got {L}")
    return int(size(L[0])), int(size(L[1])), lambda m, n: L(m, n)


def draw(x: Any, path: str | os.PathLike | None = None, *, tile: Any = None) -> Picture:
    """Draw a layout (or a host tensor) as a colored grid: cell (m, n) shows L(m, n).

    For a Layout the color follows the offset (cells 16 apart share a color, so bank-like patterns show).
    With ``tile=(M, N)`` the layout is read as a thread-value layout (thread, value) -> index of an M×N
    tile and drawn as CuTe's print_latex draws it (see :func:`draw_tv`). A tensor draws its values.
    Writes `path` when given (.svg, or .png with matplotlib).
    """
    if tile is not None:
        return draw_tv(x, tile, path)
    if hasattr(x, "layout") and hasattr(x, "engine"):
        from tilecraft.tensor import draw_tensor
        return draw_tensor(x, path)
    rows, cols, f = _grid(x)
    cells = []
    for m in range(rows):
        for n in range(cols):
            v = f(m, n)
            cells.append((m, n, str(v), _PALETTE[int(v) % len(_PALETTE)] if isinstance(v, int) else "#FFFFFF"))
    pic = Picture(_svg(cells, rows, cols, str(x)), cells, rows, cols, str(x))
    if path is not None:
        pic.save(path)
    return pic


def draw_tv(tv: Layout, mn_shape: Any, path: str | os.PathLike | None = None) -> Picture:
    """Draw a thread-value layout (thread, value) -> index of an (M, N) tile (column-major), as CuTe's
    print_latex does: each cell says which thread T and value V own it, colored by thread."""
    M, N = (mn_shape if isinstance(mn_shape, tuple) else (mn_shape, 1))
    M, N = int(product(M)), int(product(N))
    T, V = int(size(tv[0])), int(size(tv[1]))
    owner: dict = {}
    for t in range(T):
        for v in range(V):
            idx = tv(t, v)
            if not isinstance(idx, int):
                idx = int(idx)
            m, n = idx % M, idx // M
            if not (0 <= n < N):
                raise ValueError(f"thread {t} value {v} maps to index {idx}, outside the {M}x{N} tile")
            owner.setdefault((m, n), (t, v))
    cells = []
    for (m, n), (t, v) in sorted(owner.items()):
        cells.append((m, n, f"T{t}\nV{v}", _PALETTE[t % len(_PALETTE)]))
    title = f"{tv} over ({M},{N})"
    pic = Picture(_svg(cells, M, N, title), cells, M, N, title)
    if path is not None:
        pic.save(path)
    return pic

