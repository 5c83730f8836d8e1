"""CuTe's Tensor: an engine plus a layout (plus an offset into the engine), and the partitioning
algorithms. The same functions serve host tensors, layouts and, in the kernel language, pointer tensors:
they only ever transform the layout and the offset."""
from __future__ import annotations

import itertools
from typing import Any

from tilecraft import layout as _L
from tilecraft.layout import Layout, has_underscore, is_static, is_tuple
from tilecraft.layout.inttuple import _add, dice, idx2crd, product, product_each, tuple_str
from tilecraft.tensor.engine import CoordEngine, Engine, engine_and_layout

__all__ = [
    "Tensor", "make_tensor", "make_identity_tensor", "make_fragment_like", "make_tensor_like",
    "local_tile", "local_partition", "inner_partition", "outer_partition", "recast", "domain_offset",
    "composition", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "coalesce",
    "print_tensor", "tensor_str", "is_tensor", "make_layout_like",
]


class Tensor:
    """A view of an engine's elements through a layout: element c lives at engine[offset + layout(c)].

    ``t(c)`` / ``t[c]`` read an element (1-D, N-D or hierarchical coordinate); a coordinate with
    ``None``/``tc._`` (or ``:`` inside ``[]``) returns a Tensor view of the kept modes, sharing storage.
    ``t[c] = v`` writes (a view is filled from a scalar or a same-size sequence).
    """

    __slots__ = ("engine", "layout", "offset")

    def __init__(self, engine: Engine, layout: Any, offset: Any = 0):
        self.engine, self.layout, self.offset = engine, layout, offset

    # -- properties
    @property
    def shape(self) -> Any:
        return self.layout.shape

    @property
    def stride(self) -> Any:
        return self.layout.stride

    @property
    def dtype(self) -> Any:
        return self.engine.dtype

    @property
    def rank(self) -> int:
        return self.layout.rank

    def size(self) -> Any:
        return product(self.layout.shape)

    def __len__(self) -> int:
        return self.rank

    # -- element access and slicing
    def _offset_of(self, coord: Any) -> Any:
        return _add(self.offset, self.layout(coord))

    def _view(self, coord: Any) -> "Tensor":
        if isinstance(self.layout, Layout):
            sub, off = _L.slice_and_offset(coord, self.layout)
            return Tensor(self.engine, sub, _add(self.offset, off))
        sub = self.layout(coord)  # ComposedLayout carries the offset inside
        return Tensor(self.engine, sub, self.offset)

    def __call__(self, *args: Any) -> Any:
        coord = args[0] if len(args) == 1 else args
        if has_underscore(coord):
            return self._view(coord)
        return self.engine.read(self._offset_of(coord))

    def __getitem__(self, key: Any) -> Any:
        coord = _key_to_coord(key)
        if has_underscore(coord):
            return self._view(coord)
        return self.engine.read(self._offset_of(coord))

    def __setitem__(self, key: Any, value: Any) -> None:
        coord = _key_to_coord(key)
        if has_underscore(coord):
            self._view(coord).fill(value)
            return
        self.engine.write(self._offset_of(coord), value)

    def fill(self, value: Any) -> None:
        """Write value to every element (or the elements of a same-size sequence, in index order)."""
        n = self.size()
        if hasattr(value, "__len__") and not isinstance(value, str):
            vals = list(value.tolist() if hasattr(value, "tolist") else value)
            if len(vals) != n:
                raise ValueError(f"cannot assign {len(vals)} values to a tensor of {n} elements")
        else:
            vals = itertools.repeat(value, n)
        for i, v in zip(range(n), vals):
            self.engine.write(self._offset_of(i), v)

    def __iter__(self):
        for i in range(self.size()):
            yield self(i)

    def tolist(self) -> list:
        """The elements in index order (colexicographic over the shape)."""
        return [self(i) for i in range(self.size())]

    def numpy(self) -> Any:
        """The elements as a numpy array of shape product_each(shape) (a copy)."""
        import numpy as np
        shp = product_each(self.shape)
        shp = shp if is_tuple(shp) else (shp,)
        return np.array(self.tolist()).reshape(shp, order="F")

    def __str__(self) -> str:
        return tensor_str(self)

    def __repr__(self) -> str:
        return f"Tensor({self.engine.describe()} o {_offset_str(self.offset)}{self.layout})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(tensor_str(self))


def _offset_str(off: Any) -> str:
    return "" if isinstance(off, int) and off == 0 else f"+{off} o "


def _key_to_coord(key: Any) -> Any:
    """Python indexing to a CuTe coordinate: ':' means '_'; other Python slices are refused."""
    if isinstance(key, slice):
        if key == slice(None):
            return None
        raise TypeError("only ':' slices are supported; use local_tile / domain_offset for sub-ranges")
    if isinstance(key, tuple):
        return tuple(_key_to_coord(k) for k in key)
    return key


def is_tensor(x: Any) -> bool:
    """True for a tilecraft Tensor."""
    return isinstance(x, Tensor)


def make_tensor(engine: Any, layout: Any = None, *args: Any) -> Tensor:
    """A tensor over `engine` (a numpy array, a torch tensor, a list, or an Engine) with `layout`.

    Without a layout a numpy/torch tensor keeps its own shape and strides (in elements); a list is 1-D.
    ``make_tensor(x, shape, stride)`` is short for ``make_tensor(x, make_layout(shape, stride))``.
    The layout addresses x's memory from its first element, as a CuTe pointer would.
    """
    eng, own_shape, own_stride = engine_and_layout(engine)
    if layout is None:
        layout = Layout(own_shape, own_stride)
    elif not _L.is_layout(layout):
        layout = _L.make_layout(layout, *args)
    if isinstance(layout, Layout) and is_static(layout.shape) and is_static(layout.stride) and product(layout.shape):
        need = _L.cosize(layout)
        if need > len(eng):
            raise ValueError(f"the layout {layout} reaches offset {need - 1}, but the storage has {len(eng)} elements")
    return Tensor(eng, layout)


def make_identity_tensor(shape: Any) -> Tensor:
    """The tensor whose element at each coordinate of shape is that coordinate (for bounds predicates)."""
    lay = _L.make_identity_layout(shape)
    return Tensor(CoordEngine(lay.shape), lay)


def make_layout_like(L: Layout) -> Layout:
    """A compact layout of L's shape whose strides follow the order of L's strides (stride-0 modes stay 0)."""
    shp, std = L.shape, L.stride

    def fz(d: Any, s: Any) -> Any:
        if is_tuple(d):
            return tuple(fz(di, si) for di, si in zip(d, s))
        return 1 if isinstance(d, int) and d == 0 else s

    filtered = fz(std, shp)
    lay = _ordered_like(filtered, std)
    return Layout(shp, lay.stride)


def _ordered_like(shape: Any, stride: Any) -> Layout:
    """A compact layout of shape whose strides grow in the order of `stride`; column-major when some
    stride is symbolic (its order is unknown while tracing a kernel, where CuTe also falls back)."""
    if not is_static(stride):
        return _L.make_layout(shape)
    return _L.make_ordered_layout(shape, stride)


def _zero_strides_to_ones(m0: Layout) -> Any:
    """Mode 0's shape with stride-0 leaves turned into size 1 (so compact strides skip them)."""
    def fz(d: Any, s: Any) -> Any:
        if is_tuple(d):
            return tuple(fz(di, si) for di, si in zip(d, s))
        return 1 if isinstance(d, int) and d == 0 else s
    return fz(m0.stride, m0.shape)


def make_fragment_like(x: Any, dtype: Any = None) -> Any:
    """Fresh storage shaped like x (a Tensor or a Layout): mode 0 compact column-major (CuTe's choice,
    since mode 0 is the value mode of copy/MMA atoms), other modes ordered like x's strides. A swizzled
    x (Swizzle o layout) is laid out like its inner layout: registers are not swizzled."""
    from tilecraft.layout import ComposedLayout
    if isinstance(x, (Layout, ComposedLayout)):
        return _fragment_with_zero_strides(x.inner if isinstance(x, ComposedLayout) else x)
    lay = x.layout.inner if isinstance(x.layout, ComposedLayout) else x.layout
    return _alloc_like(x, _fragment_with_zero_strides(lay), dtype)


def _fragment_with_zero_strides(L: Layout) -> Layout:
    if L.rank > 1 and is_static(L.shape):
        m0 = L[0]
        m0_compact = Layout(m0.shape, _L.make_layout(_zero_strides_to_ones(m0)).stride)
        rest = _L.take(L, 1, L.rank)
        return _L.tiled_product(m0_compact, _ordered_like(rest.shape, rest.stride))
    return _L.make_layout(L.shape)


def make_tensor_like(x: Tensor, dtype: Any = None) -> Tensor:
    """Fresh storage with x's shape and a compact layout ordered like x's strides."""
    return _alloc_like(x, make_layout_like(x.layout), dtype)


def _alloc_like(x: Tensor, lay: Layout, dtype: Any) -> Tensor:
    n = _L.cosize(lay)
    eng = x.engine.new(n)
    t = Tensor(eng, lay)
    if dtype is not None:
        eng2, _off = _retype(eng, dtype, n)
        t = Tensor(eng2, lay)
    return t


def _retype(eng: Engine, dtype: Any, n: int) -> tuple[Engine, int]:
    from tilecraft.tensor.engine import NumpyEngine, TorchEngine
    if isinstance(eng, NumpyEngine):
        import numpy as np
        return NumpyEngine(np.zeros(n, dtype=dtype)), 0
    if isinstance(eng, TorchEngine):
        import torch
        return TorchEngine(torch.zeros(n, dtype=dtype, device=eng.flat.device)), 0
    if hasattr(eng, "retype"):  # the kernel language's register fragments
        return eng.retype(dtype, n), 0
    return eng, 0


def _on_layout(fn: Any, x: Any, *args: Any) -> Any:
    if isinstance(x, Tensor):
        return Tensor(x.engine, fn(x.layout, *args), x.offset)
    return fn(x, *args)


def composition(x: Any, tiler: Any) -> Any:
    """Layout composition; on a tensor, composes its layout (same storage)."""
    return _on_layout(_L.composition, x, tiler)


def logical_divide(x: Any, tiler: Any) -> Any:
    """logical_divide of a layout, or of a tensor's layout (same storage)."""
    return _on_layout(_L.logical_divide, x, tiler)


def zipped_divide(x: Any, tiler: Any) -> Any:
    """zipped_divide of a layout, or of a tensor's layout: ((tile), (rest))."""
    return _on_layout(_L.zipped_divide, x, tiler)


def tiled_divide(x: Any, tiler: Any) -> Any:
    """tiled_divide of a layout, or of a tensor's layout: ((tile), rest0, rest1, ...)."""
    return _on_layout(_L.tiled_divide, x, tiler)


def flat_divide(x: Any, tiler: Any) -> Any:
    """flat_divide of a layout, or of a tensor's layout: (tile0, tile1, ..., rest0, rest1, ...)."""
    return _on_layout(_L.flat_divide, x, tiler)


def coalesce(x: Any, profile: Any = None) -> Any:
    """coalesce of a layout, or of a tensor's layout (same elements, simplest layout)."""
    return _on_layout(_L.coalesce, x, profile)


def _rep(n: int) -> Any:
    """CuTe's repeat<n>(_): a single '_' for n == 1, else a tuple of them."""
    return None if n == 1 else (None,) * n


def _append_underscores(coord: Any, n: int) -> Any:
    if not is_tuple(coord):
        return coord if n == 1 else (coord,) + (None,) * (n - 1)
    if len(coord) > n:
        raise ValueError(f"coordinate {tuple_str(coord)} has more modes than the {n} it indexes")
    return coord + (None,) * (n - len(coord))


def _rank0(x: Any) -> int:
    lay = x.layout if isinstance(x, Tensor) else x
    return lay[0].rank


def inner_partition(x: Any, tiler: Any, coord: Any) -> Any:
    """zipped_divide by tiler, keep the tile, index the rest by coord: the tile at coord."""
    tiled = zipped_divide(x, tiler)
    lay = tiled.layout if isinstance(tiled, Tensor) else tiled
    r0, r1 = lay[0].rank, lay[1].rank
    c1 = _append_underscores(coord, r1) if is_tuple(coord) else coord
    return tiled(_rep(r0), c1)


def outer_partition(x: Any, tiler: Any, coord: Any) -> Any:
    """zipped_divide by tiler, index the tile by coord, keep the rest: every tile's element at coord."""
    tiled = zipped_divide(x, tiler)
    lay = tiled.layout if isinstance(tiled, Tensor) else tiled
    r0, r1 = lay[0].rank, lay[1].rank
    c0 = _append_underscores(coord, r0) if is_tuple(coord) else coord
    return tiled(c0, _rep(r1))


def _dice_proj(proj: Any, x: Any) -> Any:
    """Keep the modes of x where proj has an integer (CuTe's Step<_1,X,_1> is proj=(1, None, 1))."""
    if isinstance(x, Layout):
        return Layout(dice(proj, x.shape), dice(proj, x.stride))
    return dice(proj, x)


def local_tile(x: Any, tiler: Any, coord: Any, proj: Any = None) -> Any:
    """The tile at `coord` of x divided by `tiler` (a ``_`` in coord keeps all tiles along that mode).

    With ``proj`` (e.g. ``(1, None, 1)`` for CuTe's ``Step<_1,X,_1>``) only the modes of tiler and
    coord where proj is an integer are used: one CTA tiler serves A, B and C.
    """
    tiler = _L.layout._as_tuple(tiler)
    if proj is not None:
        tiler, coord = _dice_proj(proj, tiler), _dice_proj(proj, coord)
    return inner_partition(x, tiler, coord)


def _flat_coord(L: Layout, index: Any) -> Any:
    """The coordinate (one integer per top-level mode) that L maps to `index` (Layout::get_flat_coord)."""
    hier = idx2crd(index, L.shape, L.stride)
    if not is_tuple(L.shape):
        return hier
    out = []
    for c, s in zip(hier, L.shape):
        out.append(_L.crd2idx(c, s) if is_tuple(s) else c)
    return tuple(out)


def local_partition(x: Any, thr_layout: Layout, index: Any, proj: Any = None) -> Any:
    """The elements of x owned by thread `index` when the threads, arranged by `thr_layout`
    ((m, n) -> thread index), tile x repeatedly: element (i, j) of the result is the thread's i-th
    element along mode 0 and j-th along mode 1 (the threads' elements are interleaved)."""
    if not isinstance(thr_layout, Layout):
        thr_layout = _L.make_layout(thr_layout)
    if isinstance(index, int) and not 0 <= index < _L.size(thr_layout):
        raise ValueError(f"thread index {index} is outside the thread layout {thr_layout} "
                         f"({_L.size(thr_layout)} threads)")
    if proj is not None:
        thr_layout = _dice_proj(proj, thr_layout)
    return outer_partition(x, product_each(thr_layout.shape), _flat_coord(thr_layout, index))


def recast(x: Tensor, dtype: Any) -> Tensor:
    """The same memory viewed as elements of `dtype`: the layout is upcast/downcast by the width ratio."""
    old_bits = x.engine.bits()
    eng, off = x.engine.recast(dtype, x.offset)
    new_bits = eng.bits()
    return Tensor(eng, _L.recast_layout(x.layout, old_bits, new_bits), off)


def domain_offset(coord: Any, x: Tensor) -> Tensor:
    """x shifted so that its coordinate `coord` becomes the origin (same layout, moved offset)."""
    return Tensor(x.engine, x.layout, _add(x.offset, x.layout(coord)))


# --------------------------------------------------------------------------- printing

def _fmt(v: Any) -> str:
    if isinstance(v, float) or type(v).__name__ in ("float32", "float16", "float64", "bfloat16"):
        return f"{float(v):10.2e}"
    if is_tuple(v):
        return f"{tuple_str(v):>8}"
    return f"{v:>4}" if isinstance(v, int) else f"{str(v):>6}"


def _table(t: Tensor) -> list[str]:
    r = t.rank
    if r == 1:
        return [_fmt(t(m)) for m in range(t.size())]
    if r == 2:
        M, N = _L.size(t.layout[0]), _L.size(t.layout[1])
        return ["".join(_fmt(t(m, n)) for n in range(N)) for m in range(M)]
    if r in (3, 4):
        K = _L.size(t.layout[r - 1])
        sep = ("-" if r == 3 else "=") * (5 * int(_L.size(t.layout[1])))
        lines: list[str] = []
        for k in range(K):
            if k:
                lines.append(sep)
            lines += _table(t((None,) * (r - 1) + (k,)))
        return lines
    return [_fmt(v) for v in t.tolist()]


def tensor_str(t: Tensor) -> str:
    """What print_tensor prints: a header (engine, element type, layout), then the values in rows."""
    head = f"{t.engine.describe()} o {_offset_str(t.offset)}{t.layout}:"
    return "\n".join([head] + _table(t))


def print_tensor(t: Tensor) -> None:
    """Print a tensor as CuTe's print_tensor does: header, then rank-1 column, rank-2 rows, rank-3/4 slices."""
    print(tensor_str(t))

