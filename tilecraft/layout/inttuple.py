"""IntTuples: integers and (nested) tuples of integers, CuTe's shapes, strides and coordinates.

Integers are either *static* (plain Python ``int``; the algebra decides everything about them now) or
*symbolic* (a :class:`SymbolicInt`, e.g. a runtime extent inside a traced kernel). Every function here
works on both: arithmetic goes through Python operators, and a decision that needs a value (a
divisibility condition, "is this mode of size 1?") is taken only for static integers, exactly as CuTe
takes it only for ``Int<N>``.
"""
from __future__ import annotations

from functools import reduce
from typing import Any, Callable, Iterable, Union

__all__ = [
    "SymbolicInt", "Underscore", "_", "IntTuple",
    "is_int", "is_static", "is_tuple", "is_underscore", "has_underscore",
    "product", "product_each", "rank", "depth", "flatten", "unflatten", "prefix_product", "suffix_product",
    "inner_product", "shape_div", "ceil_div", "elem_scale", "crd2idx", "idx2crd", "crd2crd",
    "congruent", "weakly_congruent", "compatible", "evenly_divides", "repeat_like", "slice_", "dice",
    "signum", "imin", "imax", "tuple_str",
]


class SymbolicInt:
    """Base of integers whose value is not known while the algebra runs (runtime extents, indices).

    The layout algebra only ever combines integers with ``+ - * // %``, ``min``/``max`` (through
    :func:`imin`/:func:`imax`) and comparisons with static integers that it guards with
    :func:`is_static`. A subclass implements :meth:`_binop` to build an expression; the kernel language
    (layer 3) provides one that prints as C++. ``==`` and ``hash`` must stay structural (two equal
    expressions compare equal) so layouts holding symbolic integers can be compared and cached.
    """

    def _binop(self, op: str, other: Any, reflected: bool) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _unop(self, op: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def split_multiple(self, m: int) -> tuple[Any, Any]:
        """(rest, multiple) with self == rest + multiple and multiple known to be a multiple of m (0 when
        nothing is known). Lets a swizzle of period m act on rest only: sw(r + k*m) == sw(r) + k*m."""
        return self, 0

    def __add__(self, o): return self._binop("+", o, False)
    def __radd__(self, o): return self._binop("+", o, True)
    def __sub__(self, o): return self._binop("-", o, False)
    def __rsub__(self, o): return self._binop("-", o, True)
    def __mul__(self, o): return self._binop("*", o, False)
    def __rmul__(self, o): return self._binop("*", o, True)
    def __floordiv__(self, o): return self._binop("//", o, False)
    def __rfloordiv__(self, o): return self._binop("//", o, True)
    def __mod__(self, o): return self._binop("%", o, False)
    def __rmod__(self, o): return self._binop("%", o, True)
    def __and__(self, o): return self._binop("&", o, False)
    def __rand__(self, o): return self._binop("&", o, True)
    def __or__(self, o): return self._binop("|", o, False)
    def __ror__(self, o): return self._binop("|", o, True)
    def __xor__(self, o): return self._binop("^", o, False)
    def __rxor__(self, o): return self._binop("^", o, True)
    def __rshift__(self, o): return self._binop(">>", o, False)
    def __lshift__(self, o): return self._binop("<<", o, False)
    def __neg__(self): return self._unop("-")
    def __abs__(self): return self._unop("abs")

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of the runtime integer {self} is not known while tracing; "
            "use tc.if_(...) for a runtime branch, or a static int where the algebra needs a decision")


class Underscore:
    """CuTe's ``_``: 'keep this mode' in a slicing coordinate, 'all tiles' in local_tile."""

    _instance: "Underscore | None" = None

    def __new__(cls) -> "Underscore":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "_"

    def __reduce__(self):
        return (Underscore, ())


_ = Underscore()

IntTuple = Union[int, SymbolicInt, tuple]


def is_tuple(x: Any) -> bool:
    """True for a (possibly nested) tuple IntTuple."""
    return isinstance(x, tuple)


def is_int(x: Any) -> bool:
    """True for a static or symbolic integer (not a tuple, not an underscore, not a bool)."""
    return (isinstance(x, int) and not isinstance(x, bool)) or isinstance(x, SymbolicInt)


def is_static(x: Any) -> bool:
    """True when every integer in x is a plain Python int (known now)."""
    if isinstance(x, tuple):
        return all(is_static(e) for e in x)
    return isinstance(x, int) and not isinstance(x, bool)


def _is_const(x: Any, v: int) -> bool:
    """True only when x is the static integer v (CuTe's is_constant<v, X>)."""
    return isinstance(x, int) and not isinstance(x, bool) and x == v


def is_underscore(x: Any) -> bool:
    """True for ``tc._`` or ``None`` (both mean 'keep this mode')."""
    return x is None or isinstance(x, Underscore)


def has_underscore(x: Any) -> bool:
    """True when a coordinate contains ``_``/``None`` anywhere."""
    if isinstance(x, tuple):
        return any(has_underscore(e) for e in x)
    return is_underscore(x)


def _check_int(x: Any, what: str = "IntTuple") -> None:
    if not is_int(x):
        raise TypeError(f"{what} leaves must be integers, got {x!r} ({type(x).__name__})")


def signum(a: Any) -> Any:
    """-1, 0 or 1 for a static integer; a symbolic integer is assumed positive (as CuTe assumes)."""
    if isinstance(a, int):
        return (a > 0) - (a < 0)
    return 1


def imin(a: Any, b: Any) -> Any:
    """min for static or symbolic integers."""
    if is_static(a) and is_static(b):
        return min(a, b)
    x = a if isinstance(a, SymbolicInt) else b
    return x._binop("min", b if x is a else a, False)


def imax(a: Any, b: Any) -> Any:
    """max for static or symbolic integers."""
    if is_static(a) and is_static(b):
        return max(a, b)
    x = a if isinstance(a, SymbolicInt) else b
    return x._binop("max", b if x is a else a, False)


def _div(a: Any, b: Any) -> Any:
    """C++ integer division (truncating) for static ints; ``//`` for symbolic ones."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a // b


def _mul(a: Any, b: Any) -> Any:
    """Multiply, folding static 0 and 1 so symbolic expressions stay small."""
    if _is_const(a, 1):
        return b
    if _is_const(b, 1):
        return a
    if _is_const(a, 0) or _is_const(b, 0):
        return 0
    return a * b


def _add(a: Any, b: Any) -> Any:
    """Add, folding static 0."""
    if _is_const(a, 0):
        return b
    if _is_const(b, 0):
        return a
    return a + b


def product(a: IntTuple) -> Any:
    """The product of all integers in a (1 for the empty tuple)."""
    if isinstance(a, tuple):
        return reduce(_mul, (product(e) for e in a), 1)
    _check_int(a)
    return a


def product_each(a: IntTuple) -> Any:
    """The product of each top-level mode of a (a itself for an integer)."""
    if isinstance(a, tuple):
        return tuple(product(e) for e in a)
    return a


def rank(a: Any) -> int:
    """The number of top-level modes: len of a tuple, 1 for an integer (or a Layout's shape)."""
    a = getattr(a, "shape", a)
    return len(a) if isinstance(a, tuple) else 1


def depth(a: Any) -> int:
    """Nesting depth: 0 for an integer, 1 + max depth of the modes for a tuple."""
    a = getattr(a, "shape", a)
    if isinstance(a, tuple):
        return 1 + max((depth(e) for e in a), default=0)
    return 0


def flatten(a: IntTuple) -> IntTuple:
    """The leaves of a as a flat tuple (an integer stays an integer); a layout gets a flat shape and
    stride (the same function)."""
    if hasattr(a, "shape") and hasattr(a, "stride") and not isinstance(a, tuple):
        return type(a)(flatten(a.shape), flatten(a.stride))
    if isinstance(a, tuple):
        return tuple(x for e in a for x in (flatten(e) if isinstance(e, tuple) else (e,)))
    return a


def unflatten(flat: Iterable[Any], profile: IntTuple) -> IntTuple:
    """Re-nest the flat sequence `flat` to the profile of `profile` (inverse of flatten)."""
    it = iter(flat)

    def build(p: Any) -> Any:
        if isinstance(p, tuple):
            return tuple(build(e) for e in p)
        return next(it)

    out = build(profile)
    if next(it, None) is not None:
        raise ValueError(f"unflatten: more leaves than the profile {tuple_str(profile)} holds")
    return out


def prefix_product(a: IntTuple, init: Any = 1) -> IntTuple:
    """Exclusive prefix product: prefix_product((2,3,4)) == (1,2,6); congruent with a."""
    if isinstance(a, tuple):
        out = []
        for e in a:
            out.append(prefix_product(e, init))
            init = _mul(init, product(e))
        return tuple(out)
    return init


def suffix_product(a: IntTuple, init: Any = 1) -> IntTuple:
    """Exclusive suffix product: suffix_product((2,3,4)) == (12,4,1); congruent with a."""
    if isinstance(a, tuple):
        out = []
        for e in reversed(a):
            out.append(suffix_product(e, init))
            init = _mul(init, product(e))
        return tuple(reversed(out))
    return init


def inner_product(a: IntTuple, b: IntTuple) -> Any:
    """Sum of products of corresponding leaves of congruent a and b."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise ValueError(f"inner_product needs congruent tuples, got {tuple_str(a)} and {tuple_str(b)}")
        return reduce(_add, (inner_product(x, y) for x, y in zip(a, b)), 0)
    return _mul(a, b)


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """Ceiling division; element-wise for tuples (missing modes of b count as 1), a folded
    division when a is a tuple and b an integer, and a / size(b) when only b is a tuple."""
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(b) > len(a):
                raise ValueError(f"ceil_div: {tuple_str(b)} has more modes than {tuple_str(a)}")
            b = b + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, b))
        out = []
        for e in a:
            out.append(ceil_div(e, b))
            b = ceil_div(b, product(e))
        return tuple(out)
    if isinstance(b, tuple):
        return ceil_div(a, product(b))
    if _is_const(b, 1):
        return a
    if isinstance(a, int) and isinstance(b, int):
        return -((-a) // b) if b > 0 else _div(a + b + 1, b)
    return (a + b - 1) // b


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe's shape division: ceil(a / b) where a divides b or b divides a.

    Tuple a with integer b folds the division through the modes: shape_div((4,5,6),40) == (1,1,3).
    Raises ValueError when static integers fail the divisibility condition.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise ValueError(f"shape_div: mismatched ranks {tuple_str(a)} and {tuple_str(b)}")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for e in a:
            out.append(shape_div(e, b))
            b = shape_div(b, e)
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    if isinstance(a, int) and isinstance(b, int):
        if b == 0 or (a % b != 0 and b % a != 0):
            raise ValueError(f"shape_div: divisibility condition fails: neither {a} nor {b} divides the other")
    return ceil_div(a, b)


def elem_scale(a: IntTuple, b: IntTuple) -> IntTuple:
    """Scale each leaf of a by the product of the corresponding mode of b."""
    if isinstance(a, tuple):
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return _mul(a, product(b))


def repeat_like(a: IntTuple, v: Any) -> IntTuple:
    """A tuple congruent with a whose every leaf is v."""
    if isinstance(a, tuple):
        return tuple(repeat_like(e, v) for e in a)
    return v


def compact_col_major(shape: IntTuple, current: Any = 1) -> IntTuple:
    """Column-major (LayoutLeft) compact strides; static size-1 modes get stride 0, as in CuTe."""
    return _compact(shape, current, left=True)[0]


def compact_row_major(shape: IntTuple, current: Any = 1) -> IntTuple:
    """Row-major (LayoutRight) compact strides; static size-1 modes get stride 0, as in CuTe."""
    return _compact(shape, current, left=False)[0]


def _compact(shape: Any, current: Any, left: bool) -> tuple:
    if isinstance(shape, tuple):
        out: list = [None] * len(shape)
        order = range(len(shape)) if left else reversed(range(len(shape)))
        for i in order:
            out[i], current = _compact(shape[i], current, left)
        return tuple(out), current
    _check_int(shape, "shape")
    if _is_const(shape, 1):
        return 0, current
    return current, _mul(current, shape)


def crd2idx(coord: IntTuple, shape: IntTuple, stride: IntTuple | None = None) -> Any:
    """Map a coordinate to an index.

    With a stride: the offset sum(c_i * d_i), where an integer coordinate into a tuple mode is first
    split colexicographically (so 1-D, N-D and hierarchical coordinates all work). Without a stride:
    the colexicographic index of the coordinate in shape.
    """
    if stride is None:
        stride = compact_col_major(shape)
        # compact strides use 0 for size-1 modes; the index of such a coordinate is 0 anyway.
    if isinstance(coord, tuple):
        if not isinstance(shape, tuple) or len(coord) != len(shape):
            raise ValueError(f"coordinate {tuple_str(coord)} does not match shape {tuple_str(shape)}")
        return reduce(_add, (crd2idx(c, s, d) for c, s, d in zip(coord, shape, stride)), 0)
    if is_underscore(coord):
        raise ValueError("crd2idx: coordinate contains '_'; slice the layout instead")
    _check_int(coord, "coordinate")
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple) or len(shape) != len(stride):
            raise ValueError(f"shape {tuple_str(shape)} and stride {tuple_str(stride)} are not congruent")
        result: Any = 0
        n = len(shape)
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == n - 1:
                result = _add(result, crd2idx(coord, s, d))
            elif _is_const(coord, 0):
                continue
            else:
                ps = product(s)
                result = _add(result, crd2idx(coord % ps if not _is_const(ps, 1) else 0, s, d))
                coord = _div(coord, ps) if not _is_const(ps, 1) else coord
        return result
    return _mul(coord, stride)


def idx2crd(idx: IntTuple, shape: IntTuple, stride: IntTuple | None = None) -> IntTuple:
    """Split an index into a coordinate of shape (idx2crd(16,(3,(2,3))) == (1,(1,2))).

    Without a stride the split is colexicographic and the last leaf keeps whatever is left (as CuTe's
    idx2crd(i, shape)); with a stride each leaf is (idx // d) % s, which inverts crd2idx for compact
    layouts.
    """
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise ValueError(f"index {tuple_str(idx)} does not match shape {tuple_str(shape)}")
        st = stride if stride is not None else (None,) * len(shape)
        return tuple(idx2crd(i, s, d) for i, s, d in zip(idx, shape, st))
    _check_int(idx, "index")
    if stride is None:
        if not isinstance(shape, tuple):
            return idx
        leaves = flatten(shape)
        out = []
        for i, s in enumerate(leaves):
            if i == len(leaves) - 1:
                out.append(idx)
            elif _is_const(s, 1):
                out.append(0)
            else:
                out.append(idx % s)
                idx = _div(idx, s)
        return unflatten(out, shape)
    if isinstance(shape, tuple) and not isinstance(stride, tuple):
        stride = prefix_product(shape, stride)                        # compact from that stride; size-1 modes keep it
    if isinstance(shape, tuple):
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride))
    if _is_const(shape, 1):
        return 0
    return (_div(idx, stride) if not _is_const(stride, 1) else idx) % shape


def crd2crd(coord: IntTuple, src_shape: IntTuple, dst_shape: IntTuple) -> IntTuple:
    """Re-express a coordinate of src_shape as the coordinate of the same index in dst_shape."""
    if isinstance(coord, tuple) and isinstance(src_shape, tuple) and isinstance(dst_shape, tuple):
        return tuple(crd2crd(c, s, d) for c, s, d in zip(coord, src_shape, dst_shape))
    return idx2crd(crd2idx(coord, src_shape), dst_shape)


def congruent(a: IntTuple, b: IntTuple) -> bool:
    """True when a and b have the same nesting profile."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def weakly_congruent(a: IntTuple, b: IntTuple) -> bool:
    """True when a's profile is a coarsening of b's (an integer in a may match a tuple in b)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple)


def compatible(a: IntTuple, b: IntTuple) -> bool:
    """True when every coordinate of shape a is also a coordinate of shape b (same size at each
    leaf of a)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple):
        return False
    pb = product(b)
    if is_static(a) and is_static(pb):
        return a == pb
    return a is pb or (not is_static(a) and not is_static(pb) and a == pb)


def evenly_divides(shape: IntTuple, tiler: IntTuple) -> bool:
    """True when each mode of shape is a multiple of the corresponding tiler mode (static check;
    symbolic modes are assumed to divide)."""
    if isinstance(tiler, tuple):
        shape_t = shape if isinstance(shape, tuple) else (shape,)
        if len(tiler) > len(shape_t):
            return False
        return all(evenly_divides(s, t) for s, t in zip(shape_t, tiler))
    s, t = product(shape), product(getattr(tiler, "shape", tiler))
    if is_static(s) and is_static(t):
        return s % t == 0
    return True


def slice_(crd: Any, trg: IntTuple) -> IntTuple:
    """Keep the parts of trg paired with ``_`` in crd, flattened one level as CuTe's slice does."""
    if isinstance(crd, tuple):
        return _filter_by(crd, trg, keep_underscores=True)
    return trg if is_underscore(crd) else ()


def dice(crd: Any, trg: IntTuple) -> IntTuple:
    """Keep the parts of trg paired with integers in crd (the complement of slice_)."""
    if isinstance(crd, tuple):
        return _filter_by(crd, trg, keep_underscores=False)
    return () if is_underscore(crd) else trg


def _filter_by(c: Any, t: Any, keep_underscores: bool) -> tuple:
    """The parts of t whose coordinate in c is (or is not) ``_``, each lifted into a 1-tuple and concatenated."""
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(c) != len(t):
            raise ValueError(f"coordinate {tuple_str(c)} does not match {tuple_str(t)}")
        return tuple(x for ci, ti in zip(c, t) for x in _filter_by(ci, ti, keep_underscores))
    return (t,) if is_underscore(c) == keep_underscores else ()


def tuple_str(a: Any) -> str:
    """CuTe's printed form of an IntTuple: (8,(2,2)); a 1-tuple prints as (4)."""
    if isinstance(a, tuple):
        return "(" + ",".join(tuple_str(e) for e in a) + ")"
    if is_underscore(a):
        return "_"
    return str(a)


def transform_leaf(a: Any, f: Callable[[Any], Any]) -> Any:
    """Apply f to every leaf of a, keeping the profile."""
    if isinstance(a, tuple):
        return tuple(transform_leaf(e, f) for e in a)
    return f(a)
