"""Element types the atoms name, by their PTX spelling, and their widths in bits."""
from __future__ import annotations

__all__ = ["BITS", "bits_of"]

BITS: dict[str, int] = {
    "f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
    "s32": 32, "u32": 32, "s16": 16, "u16": 16, "s8": 8, "u8": 8,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
}


def bits_of(t: str | int) -> int:
    """The width in bits of an element type given by name ("f16", "e4m3", ...) or as a bit count."""
    if isinstance(t, int) and not isinstance(t, bool):
        if t <= 0:
            raise ValueError(f"an element width must be positive, got {t}")
        return t
    if t not in BITS:
        raise ValueError(f"unknown element type {t!r}; expected a bit count or one of {sorted(BITS)}")
    return BITS[t]
