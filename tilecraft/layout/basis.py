"""Scaled basis elements: strides that map into a coordinate space instead of a linear index.

``E(0)``, ``E(1)``, ``E(1, 0)`` are the unit vectors of a (nested) coordinate space. A layout whose strides
are basis elements (an *identity layout*, ``(M,N):(E0,E1)``) maps a coordinate to itself, so partitioning
it with the ordinary algebra tells each thread which coordinates it owns — CuTe's tool for predicates.
"""
from __future__ import annotations

from typing import Any

from tilecraft.layout.inttuple import is_static, is_tuple, tuple_str

__all__ = ["ScaledBasis", "ArithTuple", "E", "make_basis_like"]


class ScaledBasis:
    """value · E<mode...>: the value placed at position `mode` (a path into nested coordinates)."""

    __slots__ = ("value", "mode")

    def __init__(self, value: Any, mode: tuple[int, ...]):
        self.value = value
        self.mode = tuple(mode)

    def __mul__(self, k: Any) -> "ScaledBasis":
        if isinstance(k, (ScaledBasis, ArithTuple)):
            raise TypeError("cannot multiply two basis elements")
        return ScaledBasis(self.value * k, self.mode)

    __rmul__ = __mul__

    def __neg__(self) -> "ScaledBasis":
        return ScaledBasis(-self.value, self.mode)

    def __abs__(self) -> "ScaledBasis":
        return ScaledBasis(abs(self.value), self.mode)

    def __add__(self, other: Any) -> Any:
        return ArithTuple.of(self) + other

    __radd__ = __add__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ScaledBasis):
            return self.mode == other.mode and is_static(self.value) and is_static(other.value) \
                and self.value == other.value
        return isinstance(other, int) and other == 0 and self.value == 0

    def __hash__(self) -> int:
        return hash(("E", self.mode, self.value if is_static(self.value) else id(self.value)))

    def is_static(self) -> bool:
        return is_static(self.value)

    def __repr__(self) -> str:
        return f"{self.value}@{','.join(map(str, self.mode))}" if not (self.value == 1) else \
            "E<" + ",".join(map(str, self.mode)) + ">"


def E(*mode: int) -> ScaledBasis:
    """The unit basis element along `mode` (``E(1)`` is CuTe's ``E<1>``, ``E(1,0)`` is ``E<1,0>``)."""
    return ScaledBasis(1, mode)


class ArithTuple:
    """A coordinate built by adding basis elements: a (nested) tuple with element-wise addition."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    @staticmethod
    def of(b: ScaledBasis) -> "ArithTuple":
        return ArithTuple(_place(b.value, b.mode, ()))

    def __add__(self, other: Any) -> "ArithTuple":
        if isinstance(other, ScaledBasis):
            other = ArithTuple.of(other)
        if isinstance(other, ArithTuple):
            return ArithTuple(_tuple_add(self.value, other.value))
        if isinstance(other, int) and other == 0:
            return self
        raise TypeError(f"cannot add {other!r} to the coordinate {self}")

    __radd__ = __add__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArithTuple):
            return _pad_eq(self.value, other.value)
        if isinstance(other, tuple):
            return _pad_eq(self.value, other)
        return False

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return tuple_str(self.value)


def _place(v: Any, mode: tuple, _: tuple) -> tuple:
    """A tuple that is zero except for v at the nested position `mode`."""
    i, rest = mode[0], mode[1:]
    inner = _place(v, rest, ()) if rest else v
    return tuple(0 for _ in range(i)) + (inner,)


def _tuple_add(a: Any, b: Any) -> Any:
    if is_tuple(a) and is_tuple(b):
        n = max(len(a), len(b))
        a = a + (0,) * (n - len(a))
        b = b + (0,) * (n - len(b))
        return tuple(_tuple_add(x, y) for x, y in zip(a, b))
    if is_tuple(a):
        return _tuple_add(a, (b,)) if b != 0 else a
    if is_tuple(b):
        return _tuple_add((a,), b) if a != 0 else b
    return a + b


def _pad_eq(a: Any, b: Any) -> bool:
    if is_tuple(a) or is_tuple(b):
        a = a if is_tuple(a) else (a,)
        b = b if is_tuple(b) else (b,)
        n = max(len(a), len(b))
        a = a + (0,) * (n - len(a))
        b = b + (0,) * (n - len(b))
        return all(_pad_eq(x, y) for x, y in zip(a, b))
    return a == b


def make_basis_like(shape: Any, path: tuple[int, ...] = ()) -> Any:
    """Basis strides congruent with shape: (M,(N,K)) -> (E<0>,(E<1,0>,E<1,1>))."""
    if is_tuple(shape):
        return tuple(make_basis_like(s, path + (i,)) for i, s in enumerate(shape))
    return ScaledBasis(1, path) if path else 1
