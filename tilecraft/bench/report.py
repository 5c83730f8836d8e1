"""Tables, JSON and plots of GEMM sweeps.

Tables are Markdown (pipes), readable in a terminal and pasteable into ``benchmarks/RESULTS.md``.
matplotlib is imported only by :func:`plot_ratios`, and through its object API with the Agg canvas, so
no global backend is switched and no display is needed.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from tilecraft.bench.gemm import GemmRecord, GemmSweep

__all__ = ["format_table", "format_wide_table", "format_summary", "write_outputs", "plot_ratios"]


def _fmt(x: float | None, spec: str, empty: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return empty
    return format(x, spec)


def _render(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    """A right-aligned Markdown table of any values (each cell printed with str)."""
    cells = [[str(c) for c in r] for r in rows]
    return _render([str(h) for h in headers], cells, [True] * len(headers))


def format_table(
    records: Iterable[GemmRecord], *, show_floor: bool = True, baseline_name: str = "cuBLAS", max_note: int = 90
) -> str:
    """One row per (shape, contender): median time, spread (half the p10-p90 range, relative to the
    median), TFLOP/s, GB/s, ratio to the baseline, % of floor and the binding ceiling. Missing, wrong
    and error rows show the status and, in the note column, why."""
    header = ["shape", "contender", "time us", "p10-p90", "TFLOP/s", "GB/s", f"vs {baseline_name}"]
    if show_floor:
        header += ["% floor", "bound"]
    header.append("note")
    rows: list[list[str]] = []
    for r in records:
        if r.ok:
            spread = ""
            if r.p10_ms is not None and r.p90_ms is not None and r.median_ms:
                spread = f"±{50 * (r.p90_ms - r.p10_ms) / r.median_ms:.1f}%"
            row = [r.shape, r.contender, _fmt(r.median_ms * 1e3 if r.median_ms else None, ".1f"), spread,
                   _fmt(r.tflops, ".1f"), _fmt(r.gbps, ".0f"), _fmt(r.ratio, ".2f", "-") + ("x" if r.ratio else "")]
            if show_floor:
                row += [_fmt(r.pct_floor, ".0f", "-"), r.bound or ""]
            row.append("")
        else:
            row = [r.shape, r.contender, r.status.upper(), "", "", "", ""]
            if show_floor:
                row += ["", ""]
            row.append((r.detail.split(";")[0] if r.detail else "")[:max_note])
        rows.append(row)
    right = [False, False, True, True, True, True, True] + ([True, False] if show_floor else []) + [False]
    return _render(header, rows, right)


_METRICS = {
    "tflops": ("TFLOP/s", ".1f", 1.0),
    "gbps": ("GB/s", ".0f", 1.0),
    "median_ms": ("ms", ".3f", 1.0),
    "median_us": ("us", ".1f", 1e3),
    "pct_floor": ("% floor", ".0f", 1.0),
}


def format_wide_table(
    records: Iterable[GemmRecord], *, metric: str | Sequence[str] = "tflops", baseline: str = "cublas"
) -> str:
    """One row per shape; per contender a column for each metric (``"tflops"``, ``"gbps"``,
    ``"median_ms"``, ``"median_us"``, ``"pct_floor"``), then each non-baseline contender's ratio to the
    baseline. Non-ok cells show the status in capitals."""
    records = list(records)
    metrics = [metric] if isinstance(metric, str) else list(metric)
    for m in metrics:
        if m not in _METRICS:
            raise ValueError(f"unknown metric {m!r}; known: {', '.join(_METRICS)}")
    shapes = list(dict.fromkeys(r.shape for r in records))
    names = list(dict.fromkeys(r.contender for r in records))
    by = {(r.shape, r.contender): r for r in records}
    others = [n for n in names if n != baseline]
    header = ["shape"] + [f"{n} {_METRICS[m][0]}" for n in names for m in metrics] + [f"{n}/{baseline}" for n in others]
    rows = []
    for s in shapes:
        row = [s]
        for n in names:
            r = by.get((s, n))
            for m in metrics:
                _, spec, scale = _METRICS[m]
                attr = "median_ms" if m == "median_us" else m
                if r is None:
                    row.append("")
                elif r.ok:
                    v = getattr(r, attr)
                    row.append(_fmt(v * scale if v is not None else None, spec, "-"))
                else:
                    row.append(r.status.upper())
        for n in others:
            r = by.get((s, n))
            row.append(_fmt(r.ratio, ".2f") + "x" if r is not None and r.ok and r.ratio else "-")
        rows.append(row)
    return _render(header, rows, [False] + [True] * (len(header) - 1))


def format_summary(sweep: GemmSweep) -> str:
    """Geometric-mean ratio per contender and a count of missing/wrong/error, one line each."""
    lines = []
    names = list(dict.fromkeys(r.contender for r in sweep.records))
    for n in names:
        rs = [r for r in sweep.records if r.contender == n]
        ratios = [r.ratio for r in rs if r.ok and r.ratio]
        counts = {s: sum(r.status == s for r in rs) for s in ("ok", "missing", "wrong", "error")}
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
        c = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        lines.append(f"{n}: geomean ratio {_fmt(gm, '.2f', '-')}x over {len(ratios)} shapes ({c})")
        if counts["missing"] and counts["missing"] == len(rs):
            lines[-1] += f"; {rs[0].detail}"
    return "\n".join(lines)


def plot_ratios(
    records: Iterable[GemmRecord],
    path: str | Path,
    *,
    baseline: str = "cublas",
    title: str = "",
) -> Path:
    """PNG bar chart: per shape, each contender's speed relative to the baseline (1.0 = parity).

    The baseline itself is the line at 1.0. Contenders without a number on a shape (missing, wrong, error) get no bar there; the legend says
    how many shapes each one has. Returns the path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    records = list(records)
    shapes = list(dict.fromkeys(r.shape for r in records))
    names = [c for c in dict.fromkeys(r.contender for r in records) if c != baseline] or [baseline]
    by = {(r.shape, r.contender): r for r in records}
    width_in = min(60.0, max(6.0, 0.38 * len(shapes) * max(1, len(names))))
    fig = Figure(figsize=(width_in, 4.8), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    n = max(1, len(names))
    bar_w = 0.8 / n
    for j, name in enumerate(names):
        xs, ys = [], []
        for i, s in enumerate(shapes):
            r = by.get((s, name))
            if r is not None and r.ok and r.ratio:
                xs.append(i - 0.4 + bar_w * (j + 0.5))
                ys.append(r.ratio)
        other = {}
        for s in shapes:
            r = by.get((s, name))
            if r is not None and not r.ok:
                other[r.status] = other.get(r.status, 0) + 1
        label = f"{name} ({len(ys)}/{len(shapes)} shapes" + "".join(f"; {v} {k}" for k, v in other.items()) + ")"
        ax.bar(xs, ys, width=bar_w, label=label, color=f"C{j % 10}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    top = max([1.0] + [r.ratio for r in records if r.ok and r.ratio and r.contender in names])
    ax.set_ylim(0, top * 1.3)  # headroom for the legend
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=70, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(shapes) - 0.4)
    ax.set_ylabel(f"speed vs {baseline} (x, higher is faster)")
    ax.set_title(title or f"ratio to {baseline}")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def write_outputs(sweep: GemmSweep, out_dir: str | Path, stem: str, *, plot: bool = True) -> dict[str, Any]:
    """Write ``<stem>.json`` and ``<stem>.png`` (and ``<stem>.md`` with the table) under ``out_dir``.

    Returns the paths written; a plot that fails (matplotlib missing) is reported in ``"plot_error"``
    rather than losing the JSON.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Any] = {"json": sweep.save_json(out / f"{stem}.json")}
    md = out / f"{stem}.md"
    md.write_text(format_table(sweep.records, show_floor=sweep.ceilings is not None) + "\n\n" + format_summary(sweep) + "\n")
    written["md"] = md
    if plot:
        try:
            title = f"GEMM {sweep.meta.get('dtype', '')} on {sweep.meta.get('device', '?')}: ratio to {sweep.meta.get('baseline') or 'baseline'}"
            written["png"] = plot_ratios(sweep.records, out / f"{stem}.png", baseline=sweep.meta.get("baseline") or "cublas", title=title)
        except Exception as e:
            written["plot_error"] = f"{type(e).__name__}: {e}"
    return written
