"""Swizzle functions and composed layouts (CuTe's ``Swizzle<B,M,S>`` and ``ComposedLayout``)."""
from __future__ import annotations

from typing import Any

from tilecraft.layout.inttuple import SymbolicInt, _add, has_underscore, is_static, product
from tilecraft.layout.layout import Layout, slice_and_offset

__all__ = ["Swizzle", "ComposedLayout", "make_composed_layout"]


class Swizzle:
    """Swizzle<B,M,S>: XOR the B bits at [M+S, M+S+B) of an offset into the bits at [M, M+B).

    With S < 0 the bits move the other way. Swizzle<0,M,S> is the identity. Offsets keep their low
    M bits (an M-bit "unit" stays contiguous), which is why 128-byte swizzles of 16-bit data use M=3.
    """

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int):
        if bits < 0 or base < 0:
            raise ValueError(f"Swizzle<{bits},{base},{shift}>: bits and base must be non-negative")
        if abs(shift) < bits:
            raise ValueError(f"Swizzle<{bits},{base},{shift}>: |shift| must be at least bits "
                             "(the XOR source and target bit ranges would overlap)")
        self.bits, self.base, self.shift = bits, base, shift

    @property
    def yyy_mask(self) -> int:
        """The source bits (moved down onto the target bits)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The target bits (flipped by the source bits)."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: Any) -> Any:
        if self.bits == 0:
            return offset
        if isinstance(offset, SymbolicInt):
            # the swizzle reads and writes only the bits below its period: whole periods pass through,
            # so runtime stage or tile offsets stay out of the XOR
            rest, whole = offset.split_multiple(self.size())
            if not (isinstance(whole, int) and whole == 0):
                return _add(self(rest), whole)
        moved = offset & self.yyy_mask
        moved = moved >> self.shift if self.shift >= 0 else moved << -self.shift
        return offset ^ moved

    def size(self) -> int:
        """The period of the swizzle in offsets."""
        return 1 << (self.bits + self.base + abs(self.shift))

    def cosize(self) -> int:
        return self.size()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Swizzle) and (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash(("Sw", self.bits, self.base, self.shift))

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    __repr__ = __str__


class ComposedLayout:
    """outer ∘ (offset + inner): the coordinate goes through `inner` (a Layout), is shifted by `offset`,
    then through `outer` (a Swizzle or a Layout). The algebra (divide, product, tile_to_shape,
    composition with a tiler, slicing) acts on `inner`; outer and offset ride along."""

    __slots__ = ("outer", "offset", "inner")

    def __init__(self, outer: Any, offset: Any, inner: Any):
        if not isinstance(inner, (Layout, ComposedLayout)):
            raise TypeError(f"ComposedLayout: the inner function must be a layout, got {inner!r}")
        self.outer, self.offset, self.inner = outer, offset, inner

    def with_inner(self, inner: Any) -> "ComposedLayout":
        return ComposedLayout(self.outer, self.offset, inner)

    @property
    def shape(self) -> Any:
        return self.inner.shape

    @property
    def rank(self) -> int:
        return self.inner.rank

    def size(self) -> Any:
        return product(self.inner.shape)

    def __call__(self, *args: Any) -> Any:
        coord = args[0] if len(args) == 1 else args
        if has_underscore(coord):
            sliced, off = slice_and_offset(coord, self.inner)
            return ComposedLayout(self.outer, _add(self.offset, off), sliced)
        return self.outer(_add(self.offset, self.inner(coord)))

    def __getitem__(self, i: Any) -> "ComposedLayout":
        return self.with_inner(self.inner[i])

    def __len__(self) -> int:
        return self.rank

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposedLayout) and (self.outer, self.offset, self.inner) == \
            (other.outer, other.offset, other.inner)

    def __hash__(self) -> int:
        return hash((self.outer, self.offset if is_static(self.offset) else id(self.offset), self.inner))

    def __str__(self) -> str:
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self})"


def make_composed_layout(outer: Any, offset: Any, inner: Layout) -> ComposedLayout:
    """outer ∘ (offset + inner)."""
    return ComposedLayout(outer, offset, inner)
