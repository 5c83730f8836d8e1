"""Named GEMM shape sets.

Every set is a list of :class:`GemmShape` (M, N, K) with a label. C[M,N] = A[M,K] B[K,N]; for the LLM
sets, M is the number of tokens and (N, K) the (out, in) features of a projection, so B is the layer's
weight.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

__all__ = [
    "GemmShape",
    "LLM_M",
    "LLAMA3_8B",
    "LLAMA3_70B",
    "SQUARE_SIZES",
    "SHAPE_SETS",
    "llm_shapes",
    "square_shapes",
    "skinny_shapes",
    "get_shapes",
    "parse_shapes",
]


@dataclass(frozen=True)
class GemmShape:
    """One GEMM problem size, with a human label (e.g. ``"llama8b.qkv"``)."""

    m: int
    n: int
    k: int
    label: str = ""

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) <= 0:
            raise ValueError(f"GEMM dimensions must be positive, got {self.m}x{self.n}x{self.k}")

    @property
    def mnk(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        return (self.m, self.n, self.k)

    @property
    def name(self) -> str:
        """``label M=.. `` for LLM layers, ``MxNxK`` otherwise: what tables and plots print."""
        return f"{self.label} M={self.m}" if self.label else f"{self.m}x{self.n}x{self.k}"


#: Token counts: decode (1..64), small prefill (128, 256), large prefill (1024, 4096).
LLM_M: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)

#: (N, K) of Llama-3-8B projections: fused qkv (4096 + 2*8*128 = 6144), o, fused gate+up (2 x 14336), down.
LLAMA3_8B: dict[str, tuple[int, int]] = {
    "qkv": (6144, 4096),
    "o": (4096, 4096),
    "gate_up": (28672, 4096),
    "down": (4096, 14336),
}

#: (N, K) of Llama-3-70B projections: qkv (8192 + 2*8*128 = 10240), o, gate+up (2 x 28672), down.
LLAMA3_70B: dict[str, tuple[int, int]] = {
    "qkv": (10240, 8192),
    "o": (8192, 8192),
    "gate_up": (57344, 8192),
    "down": (8192, 28672),
}

SQUARE_SIZES: tuple[int, ...] = (1024, 2048, 3072, 4096, 6144, 8192)

# Split-K territory: too few output tiles to fill 132 SMs, so a kernel must split K to use the machine.
_SKINNY: tuple[tuple[int, int, int], ...] = (
    (64, 64, 65536),
    (128, 128, 65536),
    (128, 128, 262144),
    (256, 256, 65536),
    (256, 256, 262144),
    (512, 512, 65536),
    (1024, 1024, 32768),
    (128, 1024, 131072),
)


def square_shapes(sizes: Iterable[int] = SQUARE_SIZES) -> list[GemmShape]:
    """n x n x n for each n."""
    return [GemmShape(s, s, s) for s in sizes]


def llm_shapes(model: str, ms: Iterable[int] = LLM_M) -> list[GemmShape]:
    """Every projection of ``model`` (``"llama8b"`` or ``"llama70b"``) at every token count in ``ms``,
    grouped by projection."""
    layers = {"llama8b": LLAMA3_8B, "llama70b": LLAMA3_70B}[model]
    return [GemmShape(m, n, k, f"{model}.{proj}") for proj, (n, k) in layers.items() for m in ms]


def skinny_shapes() -> list[GemmShape]:
    """Small M*N, large K: the shapes that need split-K."""
    return [GemmShape(m, n, k, "skinny") for m, n, k in _SKINNY]


SHAPE_SETS: dict[str, str] = {
    "square": "n^3 for n in " + ", ".join(map(str, SQUARE_SIZES)),
    "llama8b": "Llama-3-8B qkv/o/gate_up/down x M in " + ",".join(map(str, LLM_M)),
    "llama70b": "Llama-3-70B qkv/o/gate_up/down x M in " + ",".join(map(str, LLM_M)),
    "llm": "llama8b + llama70b",
    "skinny": "small M*N, large K (split-K)",
}


def get_shapes(name: str, ms: Iterable[int] | None = None) -> list[GemmShape]:
    """The shape set ``name`` (see :data:`SHAPE_SETS`); ``ms`` overrides the token counts of LLM sets."""
    ms_t = tuple(ms) if ms is not None else LLM_M
    if name == "square":
        return square_shapes()
    if name in ("llama8b", "llama70b"):
        return llm_shapes(name, ms_t)
    if name == "llm":
        return llm_shapes("llama8b", ms_t) + llm_shapes("llama70b", ms_t)
    if name == "skinny":
        return skinny_shapes()
    raise KeyError(f"unknown shape set {name!r}; known: {', '.join(SHAPE_SETS)}")


_MNK = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def parse_shapes(spec: str, ms: Iterable[int] | None = None) -> list[GemmShape]:
    """Shapes from a command-line spec: named sets and/or explicit ``MxNxK``, separated by ``+`` or ``;``
    or ``,`` (e.g. ``"square"``, ``"llama8b+skinny"``, ``"4096x4096x4096,1x6144x4096"``)."""
    out: list[GemmShape] = []
    for part in re.split(r"[+;,]", spec):
        part = part.strip().lower()
        if not part:
            continue
        m = _MNK.match(part)
        if m:
            out.append(GemmShape(int(m[1]), int(m[2]), int(m[3])))
        else:
            out.extend(get_shapes(part, ms))
    if not out:
        raise ValueError(f"no shapes in {spec!r}")
    return out
