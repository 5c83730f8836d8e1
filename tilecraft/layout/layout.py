"""CuTe's Layout and its algebra.

A layout is a function from coordinates to offsets given by a shape and a congruent stride. Every
operation below is CuTe C++'s for static integers (plain ints): results agree mode for mode, size-1 modes
are dropped where CuTe drops them, and where CuTe's static checks would fail to compile we raise
``ValueError`` naming the condition. Symbolic integers (:class:`~tilecraft.layout.inttuple.SymbolicInt`)
go through the same code; decisions that need their value are skipped the way CuTe skips them for
dynamic integers.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Sequence

from tilecraft.layout.basis import ScaledBasis
from tilecraft.layout.inttuple import (
    _add, _div, _is_const, _mul, ceil_div, compact_col_major, compact_row_major, congruent, crd2idx,
    flatten, has_underscore, imin, is_int, is_static, is_tuple, is_underscore, product, product_each,
    signum, slice_, dice, tuple_str, evenly_divides,
)

__all__ = [
    "Layout", "LayoutLeft", "LayoutRight", "make_layout", "make_ordered_layout", "make_identity_layout",
    "size", "cosize", "shape", "stride", "get", "select", "take", "append", "prepend", "replace", "group",
    "flatten_layout", "slice_and_offset", "coalesce", "filter_zeros", "filter", "composition", "complement",
    "right_inverse", "left_inverse", "max_common_layout", "max_common_vector", "nullspace",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "tile_to_shape", "upcast", "downcast", "recast_layout", "zip_layouts", "tile_unzip", "is_layout",
]


class LayoutLeft:
    """Tag: compact column-major strides (the leftmost mode has stride 1)."""


class LayoutRight:
    """Tag: compact row-major strides (the rightmost mode has stride 1)."""


def _as_tuple(x: Any) -> Any:
    """Lists become tuples, recursively (shapes written with brackets are accepted)."""
    if isinstance(x, (list, tuple)):
        return tuple(_as_tuple(e) for e in x)
    return x


def _check_shape(shape: Any) -> None:
    if is_tuple(shape):
        for e in shape:
            _check_shape(e)
    elif not is_int(shape):
        raise TypeError(f"shape leaves must be integers, got {shape!r}")
    elif isinstance(shape, int) and shape < 0:
        raise ValueError(f"shape leaves must be non-negative, got {shape}")


def _check_stride(stride: Any) -> None:
    if is_tuple(stride):
        for e in stride:
            _check_stride(e)
    elif not (is_int(stride) or isinstance(stride, ScaledBasis)):
        raise TypeError(f"stride leaves must be integers or basis elements, got {stride!r}")


class Layout:
    """A function from coordinates to offsets: ``L(c) = sum(c_i * d_i)`` over shape and stride.

    ``Layout(shape)`` is compact column-major (CuTe's LayoutLeft; static size-1 modes get stride 0).
    ``L(17)``, ``L(1, 2)`` and ``L(1, (0, 1))`` are 1-D, 2-D and hierarchical coordinates of the same
    element; a coordinate containing ``None``/``tc._`` slices instead and returns the kept modes.
    ``L[i]`` is mode i.
    """

    __slots__ = ("_shape", "_stride")

    def __init__(self, shape: Any, stride: Any = None):
        shape = _as_tuple(shape)
        _check_shape(shape)
        if stride is None:
            stride = compact_col_major(shape)
        else:
            stride = _as_tuple(stride)
            _check_stride(stride)
            if not congruent(shape, stride):
                raise ValueError(f"shape {tuple_str(shape)} and stride {tuple_str(stride)} are not congruent")
        self._shape = shape
        self._stride = stride

    @property
    def shape(self) -> Any:
        return self._shape

    @property
    def stride(self) -> Any:
        return self._stride

    @property
    def rank(self) -> int:
        return len(self._shape) if is_tuple(self._shape) else 1

    @property
    def depth(self) -> int:
        from tilecraft.layout.inttuple import depth
        return depth(self._shape)

    def size(self) -> Any:
        return product(self._shape)

    def cosize(self) -> Any:
        return cosize(self)

    def __call__(self, *args: Any) -> Any:
        coord = args[0] if len(args) == 1 else args
        if has_underscore(coord):
            return Layout(slice_(coord, self._shape), slice_(coord, self._stride))
        return crd2idx(coord, self._shape, self._stride)

    def __getitem__(self, i: Any) -> "Layout":
        if isinstance(i, tuple):
            out = self
            for j in i:
                out = out[j]
            return out
        if not is_tuple(self._shape):
            if i not in (0, -1):
                raise IndexError(f"mode {i} out of range for the rank-1 layout {self}")
            return self
        return Layout(self._shape[i], self._stride[i])

    def __len__(self) -> int:
        return self.rank

    def __iter__(self) -> Iterator["Layout"]:
        for i in range(self.rank):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._shape == other._shape and self._stride == other._stride

    def __hash__(self) -> int:
        return hash((self._shape, self._stride))

    def __str__(self) -> str:
        return f"{tuple_str(self._shape)}:{tuple_str(self._stride)}"

    def __repr__(self) -> str:
        return f"Layout({tuple_str(self._shape)}, {tuple_str(self._stride)})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def is_layout(x: Any) -> bool:
    """True for a Layout or a ComposedLayout."""
    from tilecraft.layout.swizzle import ComposedLayout
    return isinstance(x, (Layout, ComposedLayout))


def _unwrap(t: Any) -> Any:
    while is_tuple(t) and len(t) == 1:
        t = t[0]
    return t


def make_layout(*args: Any) -> Layout:
    """make_layout(shape, stride=None) or make_layout(L0, L1, ...).

    With a shape: stride may be a tuple, ``tc.LayoutLeft`` (column-major, the default) or
    ``tc.LayoutRight`` (row-major). With layouts: a layout whose modes are the given layouts
    (one layout gives a rank-1 layout wrapping it, as in CuTe).
    """
    if args and all(isinstance(a, Layout) for a in args):
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if not 1 <= len(args) <= 2:
        raise TypeError("make_layout takes (shape, stride=None) or one or more Layouts")
    shape = _as_tuple(args[0])
    stride = args[1] if len(args) == 2 else None
    if stride is None or stride is LayoutLeft or isinstance(stride, LayoutLeft):
        return Layout(shape, compact_col_major(shape))
    if stride is LayoutRight or isinstance(stride, LayoutRight):
        return Layout(shape, compact_row_major(shape))
    return Layout(shape, stride)


def make_ordered_layout(shape: Any, order: Any) -> Layout:
    """A compact layout of shape whose strides grow in the order given by `order`
    (``make_ordered_layout((2,2,2,2), (0,2,3,1))`` -> ``(2,2,2,2):(1,4,8,2)``)."""
    shape = _as_tuple(shape)
    order = _as_tuple(order)
    if order is LayoutLeft:
        return make_layout(shape, LayoutLeft)
    if order is LayoutRight:
        return make_layout(shape, LayoutRight)
    ref_shape = flatten(_product_like(shape, order))
    ref_order = flatten(order)
    if not is_tuple(ref_shape):
        ref_shape, ref_order = (ref_shape,), (ref_order,)
    if not is_static(ref_order):
        raise ValueError("make_ordered_layout: the order must be static integers")

    def strides(s: Any, o: Any) -> Any:
        if is_tuple(o):
            if not is_tuple(s) or len(s) != len(o):
                raise ValueError(f"make_ordered_layout: order {tuple_str(order)} does not match shape {tuple_str(shape)}")
            return tuple(strides(si, oi) for si, oi in zip(s, o))
        start = product(tuple(rs for rs, ro in zip(ref_shape, ref_order) if ro < o))
        return compact_col_major(s, start)

    return Layout(shape, strides(shape, order))


def _product_like(shape: Any, profile: Any) -> Any:
    """The product of each sub-shape of shape at the leaves of profile."""
    if is_tuple(profile):
        return tuple(_product_like(s, p) for s, p in zip(shape, profile))
    return product(shape)


def make_identity_layout(shape: Any) -> Layout:
    """The layout that maps each coordinate of shape to itself: strides are basis elements."""
    from tilecraft.layout.basis import make_basis_like
    shape = _as_tuple(shape)
    return Layout(shape, make_basis_like(shape))


# --------------------------------------------------------------------------- accessors

def shape(x: Any, *modes: int) -> Any:
    """The shape of a layout (or an IntTuple itself), optionally of a nested mode."""
    s = x.shape if hasattr(x, "shape") and not is_tuple(x) else x
    for m in modes:
        s = s[m] if is_tuple(s) else s
    return s


def stride(x: Layout, *modes: int) -> Any:
    """The stride of a layout, optionally of a nested mode."""
    d = x.stride
    for m in modes:
        d = d[m] if is_tuple(d) else d
    return d


def size(x: Any, *modes: int) -> Any:
    """The number of coordinates: product of the shape (of a layout, tensor or IntTuple)."""
    return product(shape(x, *modes))


def cosize(x: Any, *modes: int) -> Any:
    """The size of the codomain: L(last coordinate) + 1, i.e. one past the largest offset."""
    from tilecraft.layout.swizzle import ComposedLayout
    if isinstance(x, ComposedLayout):
        return cosize(x.inner, *modes)
    L = get(x, *modes) if modes else x
    fs, fd = flatten(L.shape), flatten(L.stride)
    if not is_tuple(fs):
        fs, fd = (fs,), (fd,)
    return _add(_sum_terms((s - 1, abs(d)) for s, d in zip(fs, fd)), 1)


def _sum_terms(terms: Any) -> Any:
    """sum(a*b) over pairs, folding static zeros and ones."""
    out: Any = 0
    for a, b in terms:
        out = _add(out, _mul(a, b))
    return out


def get(L: Any, *modes: int) -> Any:
    """The sub-layout at a (nested) mode: get(L, 1, 0) is mode 0 of mode 1."""
    for m in modes:
        L = L[m]
    return L


def select(L: Layout, *modes: int) -> Layout:
    """A layout made of the given modes of L, in the given order."""
    if len(modes) == 1 and isinstance(modes[0], (tuple, list)):
        modes = tuple(modes[0])
    return make_layout(*[L[m] for m in modes])


def take(L: Layout, begin: int, end: int) -> Layout:
    """The layout of modes [begin, end) of L."""
    return make_layout(*[L[m] for m in range(begin, end)])


def _modes(L: Layout) -> list:
    return [L[i] for i in range(L.rank)] if is_tuple(L.shape) else [L]


def append(L: Layout, x: Layout | None = None, n: int | None = None) -> Layout:
    """L with the layout x (default ``1:0``) appended as a new last mode; with n, pad to rank n."""
    x = Layout(1, 0) if x is None else x
    modes = _modes(L)
    if n is None:
        return make_layout(*modes, x)
    if n < len(modes):
        raise ValueError(f"append: layout {L} already has rank {len(modes)} > {n}")
    if n == len(modes) and (is_tuple(L.shape) or n == 1):
        return L
    return make_layout(*modes, *([x] * (n - len(modes))))


def prepend(L: Layout, x: Layout | None = None, n: int | None = None) -> Layout:
    """L with the layout x (default ``1:0``) prepended as a new first mode; with n, pad to rank n."""
    x = Layout(1, 0) if x is None else x
    modes = _modes(L)
    if n is None:
        return make_layout(x, *modes)
    if n == len(modes) and (is_tuple(L.shape) or n == 1):
        return L
    return make_layout(*([x] * (n - len(modes))), *modes)


def replace(L: Layout, i: int, x: Layout) -> Layout:
    """L with mode i replaced by the layout x."""
    modes = _modes(L)
    modes[i] = x
    return make_layout(*modes)


def group(L: Layout, begin: int, end: int) -> Layout:
    """L with modes [begin, end) grouped into one mode."""
    modes = _modes(L)
    inner = make_layout(*modes[begin:end])
    return make_layout(*modes[:begin], inner, *modes[end:])


def flatten_layout(L: Layout) -> Layout:
    """L with a flat (depth ≤ 1) shape and stride; the function is unchanged."""
    return Layout(flatten(L.shape), flatten(L.stride))


def slice_and_offset(coord: Any, L: Layout) -> tuple[Layout, Any]:
    """Slice L at a coordinate with ``_``: the layout of the kept modes and the offset of the fixed ones."""
    sliced = Layout(slice_(coord, L.shape), slice_(coord, L.stride))
    offset = crd2idx(dice(coord, coord), dice(coord, L.shape), dice(coord, L.stride)) \
        if is_tuple(coord) else (0 if is_underscore(coord) else crd2idx(coord, L.shape, L.stride))
    return sliced, offset


def _acts_on_inner(fn: Callable[..., Any]) -> Callable[..., Any]:
    """On a ComposedLayout, apply `fn` to its inner layout; the outer function and offset ride along."""
    @functools.wraps(fn)
    def wrapper(L: Any, *args: Any) -> Any:
        from tilecraft.layout.swizzle import ComposedLayout
        if isinstance(L, ComposedLayout):
            return L.with_inner(wrapper(L.inner, *args))
        return fn(L, *args)
    return wrapper


def _transform_layout(L: Layout, tiler: Sequence[Any], f: Callable[[Layout, Any], Layout]) -> Layout:
    """make_layout(f(L[i], tiler[i]) for the modes tiler covers, then L's remaining modes unchanged."""
    modes = _modes(L)
    if len(tiler) > len(modes):
        raise ValueError(f"tiler {tuple_str(tiler)} has more modes than the layout {L}")
    return make_layout(*[f(m, t) for m, t in zip(modes, tiler)], *modes[len(tiler):])


# --------------------------------------------------------------------------- coalesce / filter

def _bw_coalesce(fshape: tuple, fstride: tuple, new_shape: Any, new_stride: Any) -> Layout:
    """Merge adjacent modes from the back: skip size-1 modes, merge when s_i*d_i == d_{i+1} statically."""
    for s, d in zip(reversed(fshape), reversed(fstride)):
        if _is_const(s, 1):
            continue
        if _is_const(new_shape, 1):
            new_shape, new_stride = s, d
            continue
        front_s = new_shape[0] if is_tuple(new_shape) else new_shape
        front_d = new_stride[0] if is_tuple(new_stride) else new_stride
        if _static_value(front_s) and _static_value(s) and _static_value(d) and _static_value(front_d) \
                and _mul(s, d) == front_d:
            if is_tuple(new_shape):
                new_shape = (s * front_s,) + new_shape[1:]
                new_stride = (d,) + new_stride[1:]
            else:
                new_shape, new_stride = s * front_s, d
        else:
            new_shape = (s,) + (new_shape if is_tuple(new_shape) else (new_shape,))
            new_stride = (d,) + (new_stride if is_tuple(new_stride) else (new_stride,))
    if _is_const(new_shape, 1):
        return Layout(1, 0)
    return Layout(new_shape, new_stride)


def _static_value(x: Any) -> bool:
    if isinstance(x, ScaledBasis):
        return x.is_static()
    return is_static(x)


def _flat(L: Layout) -> tuple[tuple, tuple]:
    fs, fd = flatten(L.shape), flatten(L.stride)
    if not is_tuple(fs):
        return (fs,), (fd,)
    if len(fs) == 0:
        return (1,), (0,)
    return fs, fd


@_acts_on_inner
def coalesce(L: Layout, profile: Any = None) -> Layout:
    """The simplest layout equal to L as a function on [0, size(L)): size-1 modes dropped, contiguous
    modes merged, depth ≤ 1. With a tuple profile, coalesce each mode of L separately."""
    if is_tuple(profile):
        return _transform_layout(L, profile, lambda m, p: coalesce(m, p))
    fs, fd = _flat(L)
    return _bw_coalesce(fs[:-1], fd[:-1], fs[-1], fd[-1])


def _coalesce_x(L: Layout) -> Layout:
    """coalesce that also keeps the function outside the domain (a trailing size-1 mode keeps its stride)."""
    fs, fd = _flat(L)
    last = 2 if _is_const(fs[-1], 1) else fs[-1]
    return _bw_coalesce(fs[:-1], fd[:-1], last, fd[-1])


def filter_zeros(L: Layout, profile: Any = None) -> Layout:
    """L with every stride-0 mode (or every mode at a 0 of `profile`) given size 1."""
    ref = L.stride if profile is None else profile

    def fz(r: Any, s: Any) -> Any:
        if is_tuple(r):
            return tuple(fz(ri, si) for ri, si in zip(r, s))
        return 1 if _is_const(r, 0) else s

    return Layout(fz(ref, L.shape), L.stride)


def filter(L: Layout, profile: Any = None) -> Layout:
    """L without its stride-0 and size-1 modes, coalesced (``1:0`` if nothing remains)."""
    if is_tuple(profile):
        return _transform_layout(L, profile, lambda m, p: filter(m, p))
    return coalesce(filter_zeros(L))


def _coalesce_shape(s: Any) -> Any:
    """Multiply neighbouring modes that are both static or both symbolic (CuTe's coalesce(shape))."""
    f = flatten(s)
    if not is_tuple(f):
        return f
    out: list = [f[0]]
    for a in f[1:]:
        if is_static(out[-1]) == is_static(a):
            out[-1] = _mul(out[-1], a)
        else:
            out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


# --------------------------------------------------------------------------- composition

def _composition_impl(lshape: Any, lstride: Any, rshape: Any, rstride: Any, usage: dict | None = None) -> Layout:
    """A ∘ (rshape:rstride) for a flat (coalesced) A. `usage` collects, per mode of A, the largest
    coordinate each leaf of the right-hand layout reaches there (for the distributivity check)."""
    if is_tuple(rshape):
        return make_layout(*[_composition_impl(lshape, lstride, s, d, usage) for s, d in zip(rshape, rstride)])
    if isinstance(rstride, ScaledBasis):
        lsh, lst = _basis_get(rstride.mode, lshape), _basis_get(rstride.mode, lstride)
        return _composition_impl(lsh, lst, rshape, rstride.value)
    if _is_const(rstride, 0):
        return Layout(rshape, rstride)
    if not is_tuple(lshape):
        return Layout(rshape, _mul(rstride, lstride))
    R = len(lshape)
    result_shape: list = []
    result_stride: list = []
    rest_shape, rest_stride = rshape, rstride
    for i in range(R - 1):
        curr_shape, curr_stride = lshape[i], lstride[i]
        if is_static(curr_shape) and is_static(rest_stride):
            if not (rest_stride % curr_shape == 0 or rest_stride < curr_shape):
                raise ValueError(
                    f"composition: stride divisibility condition fails: the stride {rest_stride} of the "
                    f"right-hand layout neither divides by nor is smaller than the mode size {curr_shape} "
                    f"of the left-hand layout {Layout(lshape, lstride)}")
        abs_rest = abs(rest_stride)
        next_shape = ceil_div(curr_shape, abs_rest)
        if is_static(curr_shape) and is_static(rest_stride) and is_static(rest_shape) \
                and abs_rest % curr_shape != 0 and curr_shape % abs_rest != 0 and rest_shape > next_shape:
            # CuTe's weak condition admits this case and returns a wrong layout: the elements past this
            # mode would not start the next mode at coordinate 0.
            raise ValueError(
                f"composition: stride divisibility condition fails: stride {rest_stride} does not divide "
                f"the mode size {curr_shape} of {Layout(lshape, lstride)}, and {rest_shape} elements "
                f"do not fit inside that mode")
        next_stride = _mul(ceil_div(abs_rest, curr_shape), signum(rest_stride))
        if _is_const(next_shape, 1) or _is_const(rest_shape, 1):
            rest_stride = next_stride
            continue
        new_shape = imin(next_shape, rest_shape)
        if is_static(new_shape) and is_static(rest_shape) and rest_shape % new_shape != 0:
            raise ValueError(
                f"composition: shape divisibility condition fails: {rest_shape} elements of the right-hand "
                f"layout do not split evenly over {new_shape} of the left-hand mode {curr_shape} "
                f"in {Layout(lshape, lstride)}")
        result_shape.append(new_shape)
        result_stride.append(_mul(rest_stride, curr_stride))
        if usage is not None and is_static(new_shape) and is_static(rest_stride):
            usage[i] = usage.get(i, 0) + (new_shape - 1) * abs(rest_stride)
        rest_shape = _div(rest_shape, new_shape)
        rest_stride = next_stride
    if not result_shape:
        return Layout(rest_shape, _mul(rest_stride, lstride[-1]))
    if _is_const(rest_shape, 1):
        return Layout(_unwrap(tuple(result_shape)), _unwrap(tuple(result_stride)))
    return Layout(tuple(result_shape) + (rest_shape,), tuple(result_stride) + (_mul(rest_stride, lstride[-1]),))


def _basis_get(mode: tuple, t: Any) -> Any:
    for m in mode:
        t = t[m] if is_tuple(t) else t
    return t


def composition(A: Any, B: Any) -> Any:
    """A ∘ B: the layout R with R(c) == A(B(c)) for every coordinate c of B, compatible with B.

    B may be a Layout, an integer n (meaning ``n:1``), ``_`` (identity), or a tuple tiler whose
    i-th element is composed with mode i of A (modes of A past the tiler are dropped, as in CuTe).
    Raises ValueError when CuTe's stride or shape divisibility condition fails.
    """
    from tilecraft.layout.swizzle import ComposedLayout, Swizzle
    if isinstance(A, Swizzle):
        return ComposedLayout(A, 0, B if isinstance(B, Layout) else make_layout(B))
    if isinstance(A, ComposedLayout):
        return A.with_inner(composition(A.inner, B))
    if not isinstance(A, Layout):
        raise TypeError(f"composition: the left-hand side must be a layout, got {A!r}")
    if isinstance(B, Layout):
        flat = _coalesce_x(A)
        usage: dict = {}
        R = _composition_impl(flat.shape, flat.stride, B.shape, B.stride, usage)
        # Composition distributes over B's modes only when their coordinates in each mode of A add
        # without carrying into the next mode (CuTe assumes this and can return a wrong layout).
        for i, reach in usage.items():
            s_i = flat.shape[i]
            if is_static(s_i) and reach >= s_i:
                raise ValueError(
                    f"composition: {B} is not admissible for {A}: its modes together reach coordinate "
                    f"{reach} of the mode of size {s_i} (A coalesced is {flat}), so A ∘ B is not a layout")
        return R
    if isinstance(B, (Swizzle, ComposedLayout)):
        return ComposedLayout(A, 0, B)
    B = _as_tuple(B)
    if is_tuple(B):
        if len(B) > A.rank:
            raise ValueError(f"composition: tiler {tuple_str(B)} has more modes than {A}")
        return make_layout(*[composition(A[i], b) for i, b in enumerate(B)])
    if is_underscore(B):
        return A
    if is_int(B):
        flat = _coalesce_x(A)
        return _composition_impl(flat.shape, flat.stride, B, 1)
    raise TypeError(f"composition: cannot compose with {B!r}")


# --------------------------------------------------------------------------- complement / inverses

def complement(L: Layout, cotarget: Any = None) -> Layout:
    """The layout that fills the holes of L up to `cotarget`: ordered, disjoint from the image of L
    (except at 0), and size(L) * size(complement) covers cotarget. Raises ValueError when L is not
    injective or its strides do not divide one another (no such layout exists)."""
    F = filter(L)
    if cotarget is None:
        cotarget = cosize(F)
    elif isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    cotarget = _as_tuple(cotarget)
    fshape, fstride = F.shape, F.stride
    if _is_const(fstride, 0):
        return make_layout(_coalesce_shape(cotarget))
    shp = list(fshape) if is_tuple(fshape) else [fshape]
    std = list(fstride) if is_tuple(fstride) else [fstride]
    R = len(shp)
    if R > 1 and not is_static(tuple(std)):
        raise ValueError(f"complement: symbolic strides are supported only for rank-1 layouts, got {L}")
    if any(isinstance(d, ScaledBasis) for d in std):
        raise ValueError(f"complement: a layout with basis strides has no complement: {L}")
    if R > 1 and any(d < 0 for d in std):
        raise ValueError(f"complement: negative strides are not supported: {L}")
    result_shape: list = []
    result_stride: list = [1]
    divisible = True
    for _i in range(R - 1):
        min_stride = min(std)
        j = std.index(min_stride)
        last = result_stride[-1]
        if min_stride // last == 0:
            raise ValueError(_complement_error(L, min_stride, last))
        divisible = divisible and min_stride % last == 0
        result_shape.append(min_stride // last)
        result_stride.append(min_stride * shp[j])
        del shp[j], std[j]
    last = result_stride[-1]
    if is_static(std[0]) and is_static(last):
        if std[0] // last == 0:
            raise ValueError(_complement_error(L, std[0], last))
        divisible = divisible and std[0] % last == 0
    result_shape.append(_div(std[0], last) if not _is_const(last, 1) else std[0])
    new_stride = _mul(std[0], shp[0])
    rest_shape = _coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_col_major(rest_shape, new_stride)
    result = coalesce(Layout((tuple(result_shape), rest_shape), (tuple(result_stride), rest_stride)))
    if not divisible:
        # CuTe divides with truncation here; its answer is still a complement when the cotarget is
        # small enough. Keep it only where it provably is one.
        _check_complement(L, F, result, cotarget)
    return result


def _check_complement(L: Layout, F: Layout, C: Layout, cotarget: Any) -> None:
    """Raise unless (F, C) is injective and covers [0, cotarget): C is then a true complement."""
    M = product(cotarget)
    n = product(F.shape) * product(C.shape)
    if not (is_static(M) and is_static(n)) or n > (1 << 16):
        raise ValueError(f"complement: the strides of {L} do not divide one another, so no complement "
                         f"is guaranteed (and it cannot be checked here)")
    both = make_layout(F, C)
    image = [both(i) for i in range(n)]
    if len(set(image)) != n or not set(range(M)) <= set(image):
        raise ValueError(f"complement: the layout {L} has no complement within {tuple_str(cotarget)}: its strides "
                         f"do not divide one another and the holes cannot be filled by one layout")


def _complement_error(L: Layout, d: int, covered: int) -> str:
    if d < covered:
        return (f"complement: the layout {L} is not injective (stride {d} lands inside the {covered} "
                f"offsets already covered)")
    return (f"complement: the layout {L} has no complement: stride {d} is not a multiple of {covered}, "
            f"the extent covered by its smaller modes")


def _exchange_sort(idx: list, keys: Any) -> list:
    """Indices ordered by key with CuTe's (unstable) exchange sort, so ties break exactly as in CuTe."""
    a = list(idx)
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if keys[a[j]] < keys[a[i]]:
                a[i], a[j] = a[j], a[i]
    return a


def right_inverse(L: Layout) -> Layout:
    """The layout R with L(R(i)) == i for every i < size(R), as large as L admits."""
    if is_underscore(L):
        return L
    cl = coalesce(L)
    lshape = cl.shape if is_tuple(cl.shape) else (cl.shape,)
    lstride = cl.stride if is_tuple(cl.stride) else (cl.stride,)
    preprod = [1]
    for s in lshape:
        preprod.append(_mul(preprod[-1], s))
    idx = _exchange_sort([i for i, d in enumerate(lstride) if is_static(d)], lstride)
    rshape: list = [1]
    rstride: list = [0]
    curr: Any = 1
    for i in idx:
        if is_static(curr) and lstride[i] == curr:
            rshape.append(lshape[i])
            rstride.append(preprod[i])
            curr = _mul(lshape[i], lstride[i])
    return coalesce(Layout(tuple(rshape), tuple(rstride)))


def left_inverse(L: Layout) -> Layout:
    """The layout R with R(L(i)) == i for every i < size(L) (a quasi-inverse when L is not injective).
    Raises ValueError when L's strides are not static or fail the divisibility condition."""
    if is_underscore(L):
        return L
    cl = coalesce(L)
    lshape = cl.shape if is_tuple(cl.shape) else (cl.shape,)
    lstride = cl.stride if is_tuple(cl.stride) else (cl.stride,)
    if not is_static(lstride):
        raise ValueError(f"left_inverse requires static strides, got {L}")
    preprod = [1]
    for s in lshape:
        preprod.append(_mul(preprod[-1], s))
    order = _exchange_sort(list(range(len(lstride))), lstride)
    rshape: list = []
    rstride: list = [0]
    for i in order:
        d = lstride[i]
        if d == 0:
            continue
        sz = product(tuple(rshape))
        if is_static(sz) and d % sz != 0:
            raise ValueError(f"left_inverse: divisibility condition fails: stride {d} of {L} is not a "
                             f"multiple of {sz}")
        rshape.append(_div(d, sz))
        rstride.append(preprod[i])
    rshape.append(lshape[order[-1]])
    return coalesce(Layout(tuple(rshape), tuple(rstride)))


def max_common_layout(A: Layout, B: Layout) -> Layout:
    """The layout R of the most contiguous elements that A and B agree on: A(R(i)) == B(R(i)) == i."""
    inv_b = right_inverse(B)
    common = coalesce(composition(A, inv_b))
    s0, d0 = common[0].shape, common[0].stride
    if is_static(s0) and _is_const(d0, 1):
        return composition(inv_b, common[0])
    return Layout(1, 0)


def max_common_vector(A: Layout, B: Layout) -> int:
    """The number N of contiguous elements that A and B agree on (A(B⁻¹(i)) == i for i < N); N ≥ 1."""
    common = coalesce(composition(A, right_inverse(B)))
    s0, d0 = common[0].shape, common[0].stride
    if is_static(s0) and _is_const(d0, 1):
        return s0
    return 1


def nullspace(L: Layout) -> Layout:
    """The layout of the coordinates that L maps to 0 (its stride-0 modes), compactly strided."""
    fs, fd = _flat(L)
    rstride = compact_col_major(fs)
    keep = [i for i, d in enumerate(fd) if _is_const(d, 0)]
    if not keep:
        return Layout(1, 0)
    return Layout(_unwrap(tuple(fs[i] for i in keep)), _unwrap(tuple(rstride[i] for i in keep)))


# --------------------------------------------------------------------------- zip helpers

def zip_layouts(*layouts: Layout) -> Layout:
    """make_layout of the i-th modes of each layout paired: zip((a,b),(c,d)) -> ((a,c),(b,d))."""
    shapes = tuple(L.shape for L in layouts)
    strides = tuple(L.stride for L in layouts)
    return Layout(_zip(shapes), _zip(strides))


def _zip(t: tuple) -> Any:
    if is_tuple(t) and t and is_tuple(t[0]):
        n = len(t[0])
        if any(not is_tuple(e) or len(e) != n for e in t):
            raise ValueError(f"zip: mismatched ranks in {tuple_str(t)}")
        return tuple(tuple(e[j] for e in t) for j in range(n))
    return (t,) if is_tuple(t) else t


def _zip2_by(t: Any, guide: Any) -> Any:
    if is_tuple(guide):
        if not is_tuple(t) or len(t) < len(guide):
            raise ValueError(f"mismatched ranks: {tuple_str(t)} against the tiler")
        split = [_zip2_by(t[i], g) for i, g in enumerate(guide)]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[len(guide):]))
    if not is_tuple(t) or len(t) != 2:
        raise ValueError(f"expected a rank-2 mode (tile, rest), got {tuple_str(t)}")
    return t


def tile_unzip(L: Layout, tiler: Any) -> Layout:
    """Gather the (tile, rest) pairs at the leaves of tiler into ((tiles...), (rests...))."""
    tiler = _as_tuple(tiler)
    return Layout(_zip2_by(L.shape, tiler), _zip2_by(L.stride, tiler))


def _slice_modes(L: Layout, r0: bool) -> Layout:
    """L(_, repeat(_)) or L(repeat(_), repeat(_)): unpack mode 1 (and mode 0 when r0) into the top level."""
    def rep(n: int) -> Any:
        return None if n == 1 else (None,) * n
    c0 = rep(L[0].rank) if r0 else None
    return L(c0, rep(L[1].rank))


# --------------------------------------------------------------------------- divide

@_acts_on_inner
def logical_divide(L: Any, tiler: Any) -> Any:
    """Split L into (tile, rest): L ∘ (tiler, complement(tiler, shape(L))). A tuple tiler divides
    each mode of L by its element; modes past the tiler are kept."""
    tiler = _as_tuple(tiler)
    if isinstance(tiler, Layout):
        return composition(L, make_layout(tiler, complement(tiler, coalesce(L).shape)))
    if is_tuple(tiler):
        return _transform_layout(L, tiler, logical_divide)
    if is_underscore(tiler):
        return L
    if is_int(tiler):
        return logical_divide(L, Layout(tiler))
    raise TypeError(f"logical_divide: bad tiler {tiler!r}")


@_acts_on_inner
def zipped_divide(L: Any, tiler: Any) -> Any:
    """logical_divide gathered into ((tile modes...), (rest modes...))."""
    return tile_unzip(logical_divide(L, tiler), tiler)


@_acts_on_inner
def tiled_divide(L: Any, tiler: Any) -> Any:
    """zipped_divide with the rest modes unpacked: ((tile modes...), rest0, rest1, ...)."""
    return _slice_modes(zipped_divide(L, tiler), r0=False)


@_acts_on_inner
def flat_divide(L: Any, tiler: Any) -> Any:
    """zipped_divide with both groups unpacked: (tile0, tile1, ..., rest0, rest1, ...)."""
    return _slice_modes(zipped_divide(L, tiler), r0=True)


# --------------------------------------------------------------------------- product

@_acts_on_inner
def logical_product(block: Any, tiler: Any) -> Any:
    """(block, complement(block, size(block)*cosize(tiler)) ∘ tiler): the block repeated as the tiler
    says. A tuple tiler multiplies mode by mode."""
    tiler = _as_tuple(tiler)
    if isinstance(tiler, Layout):
        return make_layout(block, composition(complement(block, _mul(size(block), cosize(tiler))), tiler))
    if is_tuple(tiler):
        return _transform_layout(block, tiler, logical_product)
    if is_underscore(tiler):
        return block
    if is_int(tiler):
        return logical_product(block, Layout(tiler))
    raise TypeError(f"logical_product: bad tiler {tiler!r}")


@_acts_on_inner
def zipped_product(block: Any, tiler: Any) -> Any:
    """logical_product gathered into ((block modes...), (product modes...))."""
    return tile_unzip(logical_product(block, tiler), tiler)


@_acts_on_inner
def tiled_product(block: Any, tiler: Any) -> Any:
    """zipped_product with the product modes unpacked."""
    return _slice_modes(zipped_product(block, tiler), r0=False)


@_acts_on_inner
def flat_product(block: Any, tiler: Any) -> Any:
    """zipped_product with both groups unpacked."""
    return _slice_modes(zipped_product(block, tiler), r0=True)


def _as_layout(x: Any) -> Layout:
    return x if isinstance(x, Layout) else make_layout(_as_tuple(x))


@_acts_on_inner
def blocked_product(block: Any, tiler: Any) -> Any:
    """The block repeated over the tiler, mode by mode: result mode i is (block_i, tiler_i)."""
    tiler = _as_layout(tiler)
    R = max(block.rank, tiler.rank)
    result = logical_product(append(block, n=R), append(tiler, n=R))
    return zip_layouts(result[0], result[1])


@_acts_on_inner
def raked_product(block: Any, tiler: Any) -> Any:
    """The block interleaved over the tiler, mode by mode: result mode i is (tiler_i, block_i)."""
    tiler = _as_layout(tiler)
    R = max(block.rank, tiler.rank)
    result = logical_product(append(block, n=R), append(tiler, n=R))
    return zip_layouts(result[1], result[0])


@_acts_on_inner
def tile_to_shape(block: Any, trg_shape: Any, order: Any = LayoutLeft) -> Any:
    """Repeat block (blocked_product) until it has shape trg_shape; `order` says which modes the
    repetitions run along first. Raises ValueError when the block does not divide the target."""
    trg_shape = _as_tuple(trg_shape)
    R = len(trg_shape) if is_tuple(trg_shape) else 1
    if block.rank > R:
        raise ValueError(f"tile_to_shape: the block {block} has more modes than the target {tuple_str(trg_shape)}")
    padded = append(block, n=R)
    block_shape = product_each(padded.shape)
    target_shape = product_each(trg_shape)
    if is_static(target_shape) and is_static(block_shape) and not evenly_divides(target_shape, block_shape):
        raise ValueError(f"tile_to_shape: the block shape {tuple_str(block_shape)} does not divide the "
                         f"target shape {tuple_str(target_shape)}")
    product_shape = ceil_div(target_shape, block_shape)
    return blocked_product(padded, make_ordered_layout(product_shape, order))


# --------------------------------------------------------------------------- recast

def upcast(L: Layout, n: int) -> Layout:
    """L re-expressed for elements n times wider: the stride-1 mode shrinks by n, other strides divide by n."""
    def up(s: Any, d: Any) -> Layout:
        if is_tuple(s):
            return make_layout(*[up(si, di) for si, di in zip(s, d)])
        if _is_const(d, 0):
            return Layout(s, d)
        if is_static(d):
            if d % n != 0 and n % d != 0:
                raise ValueError(f"upcast: divisibility condition fails for stride {d} and factor {n}")
            return Layout(ceil_div(s, ceil_div(n, abs(d))), signum(d) * ceil_div(abs(d), n))
        return Layout(s, d // n)
    return up(L.shape, L.stride)


def downcast(L: Layout, n: int) -> Layout:
    """L re-expressed for elements n times narrower: the stride-1 mode grows by n, other strides times n."""
    if 1 not in flatten(L.stride if is_tuple(L.stride) else (L.stride,)) and \
            -1 not in flatten(L.stride if is_tuple(L.stride) else (L.stride,)):
        raise ValueError(f"downcast requires a stride-1 mode (adjacent elements), got {L}")

    def down(s: Any, d: Any) -> Layout:
        if is_tuple(s):
            return make_layout(*[down(si, di) for si, di in zip(s, d)])
        if _is_const(d, 1) or _is_const(d, -1):
            return Layout(_mul(s, n), d)
        return Layout(s, _mul(d, n))
    return down(L.shape, L.stride)


def recast_layout(L: Layout, old_bits: int, new_bits: int) -> Layout:
    """L for elements of old_bits re-expressed for elements of new_bits (upcast/downcast by the ratio)."""
    from math import gcd
    g = gcd(new_bits, old_bits)
    num, den = new_bits // g, old_bits // g
    if num == 1 and den == 1:
        return L
    if num == 1:
        return downcast(L, den)
    if den == 1:
        return upcast(L, num)
    return downcast(upcast(L, num), den)
