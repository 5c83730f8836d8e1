"""A tiny progress bar on stderr for long sweeps (no tqdm dependency); silent when stderr is not a TTY."""
from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, "gemm bf16") as p: ... p.update(note="4096x4096x4096")``.

    Draws ``desc [#####.....] 12/48  25%  0:41 left  note`` in place. ``enabled=None`` means "when the
    stream is a terminal", so logs and CI output stay clean.
    """

    def __init__(self, total: int, desc: str = "", *, stream: TextIO | None = None, enabled: bool | None = None,
                 width: int = 28) -> None:
        self.total = max(0, int(total))
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.width = width
        self.done = 0
        self._t0 = time.monotonic()
        self._last_len = 0

    def render(self, note: str = "") -> str:
        """The bar's current text (without the carriage return)."""
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self._t0
        eta = ""
        if 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            eta = f"  {int(left // 60)}:{int(left % 60):02d} left"
        text = f"{self.desc} [{bar}] {self.done}/{self.total} {100 * frac:3.0f}%{eta}"
        return f"{text}  {note}" if note else text

    def update(self, n: int = 1, note: str = "") -> None:
        """Advance by ``n`` steps and redraw."""
        self.done = min(self.total, self.done + n)
        self.draw(note)

    def draw(self, note: str = "") -> None:
        """Redraw without advancing (e.g. to show what is running now)."""
        if not self.enabled:
            return
        text = self.render(note)
        pad = max(0, self._last_len - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._last_len = len(text)

    def close(self) -> None:
        """Clear the bar's line."""
        if self.enabled and self._last_len:
            self.stream.write("\r" + " " * self._last_len + "\r")
            self.stream.flush()
            self._last_len = 0

    def __enter__(self) -> "Progress":
        self.draw()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
