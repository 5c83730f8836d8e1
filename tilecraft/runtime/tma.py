"""TMA descriptors (``CUtensorMap``) derived from a tensor and the shared-memory layout of its tile.

The tile's shared-memory layout is the single source of truth: the same (swizzled) layout object
gives the wgmma descriptor (``tilecraft.atoms.make_gmma_desc``) and, here, the tensor map that fills
it, so the two cannot disagree on the swizzle or on where an element lands.

How a layout becomes a map. TMA writes its box densely, innermost box dimension first, and applies
its swizzle to the shared-memory byte address. So the tile layout's modes (one per leading tensor
dimension) are split into pieces of contiguous extent, the pieces are sorted by their
shared-memory stride, and they must tile the buffer densely: those sorted pieces are the map's
dimensions. A tensor dimension whose tile is split (e.g. 128 halves of K under a 128-byte swizzle,
whose rows hold 64) becomes several map dimensions, the later ones striding over the earlier; the
map's coordinates for a tile origin then come from ``TmaEncodeArgs.coords``.

``tma_encode_args`` is pure (no CUDA, testable anywhere); ``make_tma_descriptor`` feeds its result
to the driver's ``cuTensorMapEncodeTiled`` and needs a GPU.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft import layout as _L
from tilecraft.layout import ComposedLayout, Layout, Swizzle

__all__ = ["TmaDim", "TmaEncodeArgs", "TmaMap", "make_tma_descriptor", "make_tma_map", "tma_args_for", "tma_encode_args",
           "TMA_DTYPES"]

# Element type name -> (bytes, CUtensorMapDataType suffix). 8-bit floats and signed bytes travel as
# UINT8 (TMA only moves them); tf32 is fp32 in memory, named so for the map's rounding.
TMA_DTYPES: dict[str, tuple[int, str]] = {
    "u8": (1, "UINT8"), "s8": (1, "UINT8"), "e4m3": (1, "UINT8"), "e5m2": (1, "UINT8"),
    "u16": (2, "UINT16"), "s16": (2, "UINT16"), "f16": (2, "FLOAT16"), "bf16": (2, "BFLOAT16"),
    "u32": (4, "UINT32"), "s32": (4, "INT32"), "f32": (4, "FLOAT32"), "tf32": (4, "TFLOAT32"),
    "u64": (8, "UINT64"), "s64": (8, "INT64"), "f64": (8, "FLOAT64"),
}
_TORCH_DTYPES = {
    "uint8": "u8", "int8": "s8", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "uint16": "u16",
    "int16": "s16", "float16": "f16", "bfloat16": "bf16", "uint32": "u32", "int32": "s32",
    "float32": "f32", "uint64": "u64", "int64": "s64", "float64": "f64",
}
_SWIZZLE_ENUM = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_OOB_FILL = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}
_L2_PROMOTION = {0: "NONE", 64: "L2_64B", 128: "L2_128B", 256: "L2_256B"}
_MAX_RANK, _MAX_BOX = 5, 256


@dataclass(frozen=True)
class TmaDim:
    """One dimension of a tensor map: it walks tensor dimension ``tensor_dim`` in steps of ``step``
    elements of that dimension; ``period`` is its extent when a later map dimension continues the
    same tensor dimension (the coordinate then wraps), None when it is the last piece."""

    tensor_dim: int
    step: int
    period: int | None


@dataclass(frozen=True)
class TmaEncodeArgs:
    """Everything ``cuTensorMapEncodeTiled`` takes (enums by member name), plus what a kernel needs to
    use the map: the per-dimension bookkeeping of coordinates and the bytes one copy delivers.

    ``global_dims``, ``box_dims`` and ``element_strides`` are innermost first; ``global_strides``
    (bytes) are those of dimensions 1..rank-1. With ``multicast`` k, one map copy moves 1/k of the
    tile (box dimension ``multicast_dim``, the outermost one with more than one element, divided by
    k): CTA rank r of the multicast group copies slice r to shared-memory byte offset
    ``r * box_bytes`` and map coordinates ``coords(origin, r)``.
    """

    data_type: str
    global_address: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str
    dims: tuple[TmaDim, ...]
    element_bytes: int
    swizzle_bytes: int
    multicast: int
    multicast_dim: int

    @property
    def rank(self) -> int:
        """The map's number of dimensions (1-5)."""
        return len(self.global_dims)

    @property
    def box_bytes(self) -> int:
        """Bytes one copy moves: the mbarrier transaction count of one (per-CTA) load."""
        n = self.element_bytes
        for b in self.box_dims:
            n *= b
        return n

    @property
    def tile_bytes(self) -> int:
        """Bytes of the whole shared-memory tile (all multicast slices)."""
        return self.box_bytes * self.multicast

    @property
    def smem_alignment(self) -> int:
        """The byte alignment the shared-memory tile needs: the swizzle pattern (8 rows of the
        swizzle width) since TMA swizzles by address bits, and at least TMA's 128 bytes."""
        return max(128, 8 * self.swizzle_bytes)

    def coords(self, origin: Sequence[int], cta_rank: int = 0) -> tuple[int, ...]:
        """The map coordinates (innermost first) of the box whose first element is the tensor element
        at `origin` (one index per tensor dimension), for multicast slice `cta_rank`."""
        if not 0 <= cta_rank < self.multicast:
            raise ValueError(f"cta_rank {cta_rank} is outside the multicast group of {self.multicast}")
        out = []
        for i, d in enumerate(self.dims):
            c = origin[d.tensor_dim] // d.step
            out.append(c % d.period if d.period is not None else c)
        out[self.multicast_dim] += cta_rank * self.box_dims[self.multicast_dim]
        return tuple(out)


def _dtype_name(dtype: Any) -> str:
    """A TMA_DTYPES name for `dtype`: a name already, or a torch dtype (by its name, no torch import)."""
    if isinstance(dtype, str) and dtype in TMA_DTYPES:
        return dtype
    name = str(dtype).removeprefix("torch.")
    if name in _TORCH_DTYPES:
        return _TORCH_DTYPES[name]
    raise ValueError(f"TMA: unsupported element type {dtype!r}; expected one of {sorted(TMA_DTYPES)} "
                     f"or a torch dtype among {sorted(_TORCH_DTYPES)}")


def _swizzle_bytes(sw: Swizzle, element_bytes: int) -> int:
    """The TMA swizzle mode (0/32/64/128 bytes) that a Swizzle on element offsets is, or ValueError.

    TMA's modes XOR byte-address bits [4, 4+B) with [7, 7+B) (B = 1, 2, 3 for 32/64/128 bytes): on
    offsets of e-byte elements that is Sw<B, log2(16/e), 3>.
    """
    if sw.bits == 0:
        return 0
    base = (16 // element_bytes).bit_length() - 1
    if element_bytes > 16 or sw.base != base or sw.shift != 3 or sw.bits > 3:
        raise ValueError(f"TMA: {sw} on {element_bytes}-byte elements is not a TMA swizzle "
                         f"(expected Sw<B,{base},3> with B = 1, 2 or 3 for 32-, 64- or 128-byte)")
    return 16 << sw.bits


def _pieces(mode: Layout) -> list[tuple[int, int, int]]:
    """(extent, smem stride, tile-coordinate step) of the contiguous runs of one tile mode, in
    coordinate order; size-1 sub-modes dropped and neighbours that continue each other merged."""
    shapes, strides = _L.flatten(mode.shape), _L.flatten(mode.stride)
    if not isinstance(shapes, tuple):
        shapes, strides = (shapes,), (strides,)
    out: list[tuple[int, int, int]] = []
    step = 1
    for n, s in zip(shapes, strides):
        if not isinstance(n, int) or not isinstance(s, int):
            raise ValueError(f"TMA: the tile layout must be static, got mode {mode}")
        if n == 1:
            continue
        if out and out[-1][1] * out[-1][0] == s:
            e, st, sp = out[-1]
            out[-1] = (e * n, st, sp)
        else:
            out.append((n, s, step))
        step *= n
    return out


def tma_encode_args(
    shape: Sequence[int],
    strides: Sequence[int],
    dtype: Any,
    smem: Layout | ComposedLayout | Sequence[int],
    *,
    swizzle: int | None = None,
    multicast: int = 1,
    oob_fill: str = "zero",
    l2_promotion: int = 256,
    address: int = 0,
) -> TmaEncodeArgs:
    """Compute the arguments of ``cuTensorMapEncodeTiled`` for a tensor and the shared-memory tile.

    `shape` and `strides` are the tensor's, in elements (torch order, any strides); `address` its
    byte address. `smem` is the tile's shared-memory layout in elements -- a Layout, or a
    ComposedLayout ``Swizzle o 0 o Layout`` such as ``tile_to_shape(gmma_layout_atom(...), ...)`` --
    whose modes are the tile's extents along the tensor's leading dimensions (mode i <-> tensor
    dimension i; the remaining tensor dimensions get box extent 1: permute the tensor view so that
    the tiled dimensions come first). Or `smem` is just the box shape: the tile is then laid out
    densely with the tensor's dimensions ordered by stride, swizzled by `swizzle` bytes.

    `swizzle` (0/32/64/128 bytes) defaults to the layout's and must agree with it. `multicast` k
    splits the copy over k CTAs (see TmaEncodeArgs). `oob_fill` is "zero" or "nan" (elements outside
    the tensor read as NaN); `l2_promotion` is 0, 64, 128 or 256 bytes.

    Raises ValueError, naming the rule, when the tensor or tile cannot be a TMA map: unsupported
    dtype; address or strides not multiples of 16 bytes; the tensor's contiguous dimension is not
    the tile's innermost (TMA does not transpose); the tile is not a dense box; a box extent over
    256; more than 5 map dimensions; a box row (innermost extent x element size) that is not a
    multiple of 16 bytes, wider than the swizzle span, or (for a swizzled layout) other than the
    span; a split tensor dimension the earlier pieces do not divide; a swizzle TMA does not have or
    that disagrees with `swizzle`.
    """
    name = _dtype_name(dtype)
    esize, enum = TMA_DTYPES[name]
    shape, strides = tuple(shape), tuple(strides)
    rank = len(shape)
    if not 1 <= rank <= _MAX_RANK or len(strides) != rank:
        raise ValueError(f"TMA: tensors have 1 to {_MAX_RANK} dimensions, one stride each; got shape {shape}, "
                         f"strides {strides}")
    if any(not isinstance(n, int) or n < 1 or n > 1 << 32 for n in shape):
        raise ValueError(f"TMA: every extent must be in [1, 2^32], got shape {shape}")
    if any(not isinstance(s, int) or s < 0 for s in strides):
        raise ValueError(f"TMA: strides must be non-negative ints (in elements), got {strides}")
    if address % 16:
        raise ValueError(f"TMA: the tensor's address must be 16-byte aligned, got {address:#x}")
    if swizzle is not None and swizzle not in _SWIZZLE_ENUM:
        raise ValueError(f"TMA: swizzle must be 0, 32, 64 or 128 (bytes), got {swizzle!r}")
    if oob_fill not in _OOB_FILL:
        raise ValueError(f"TMA: oob_fill must be 'zero' or 'nan', got {oob_fill!r}")
    if l2_promotion not in _L2_PROMOTION:
        raise ValueError(f"TMA: l2_promotion must be 0, 64, 128 or 256 (bytes), got {l2_promotion!r}")
    if not isinstance(multicast, int) or not 1 <= multicast <= 16:
        raise ValueError(f"TMA: multicast must be a CTA count in [1, 16], got {multicast!r}")

    tile, sw_bytes, from_layout = _tile_layout(smem, shape, strides, esize, swizzle)
    if tile.rank > rank:
        raise ValueError(f"TMA: the tile layout {tile} has {tile.rank} modes, the tensor only {rank} dimensions")

    # Pieces of every tiled tensor dimension, sorted by shared-memory stride: the map's dimensions.
    pieces = []  # (smem stride, extent, tensor dim, tile-coordinate step, is the dim's last piece)
    for d in range(tile.rank):
        ps = _pieces(tile[d])
        for j, (extent, s, step) in enumerate(ps):
            pieces.append((s, extent, d, step, j == len(ps) - 1))
    pieces.sort(key=lambda p: p[0])
    expected = 1
    for s, extent, d, _step, _last in pieces:
        if s != expected:
            raise ValueError(f"TMA: the tile layout {smem} is not a dense box: its runs, ordered by stride, "
                             f"are {[(p[1], p[0]) for p in pieces]} (extent, stride); stride {expected} expected "
                             f"where {s} is")
        expected *= extent
    # Tensor dimensions the tile leaves whole (or that are not tiled at all) keep box extent 1.
    covered = {p[2] for p in pieces}
    for d in range(rank):
        if d not in covered:
            pieces.append((expected, 1, d, 1, True))

    contiguous = [d for d in range(rank) if strides[d] == 1 and shape[d] > 1] or [d for d in range(rank) if strides[d] == 1]
    inner = pieces[0]
    if inner[2] not in contiguous or inner[3] != 1:
        raise ValueError(f"TMA cannot transpose: the tile's innermost (stride-1) run walks tensor dimension "
                         f"{inner[2]}, but the tensor (strides {strides}) is contiguous along "
                         f"{'dimension ' + str(contiguous[0]) if contiguous else 'no dimension'}")
    if len(pieces) > _MAX_RANK:
        raise ValueError(f"TMA: this tile needs {len(pieces)} map dimensions ({[(p[2], p[1]) for p in pieces]} as "
                         f"(tensor dim, box extent)); a map has at most {_MAX_RANK}")

    dims, gdims, gstrides, box = [], [], [], []
    for i, (_s, extent, d, step, last) in enumerate(pieces):
        if extent > _MAX_BOX:
            raise ValueError(f"TMA: box extent {extent} along tensor dimension {d} exceeds {_MAX_BOX}; "
                             "tile that dimension in the layout (e.g. tile_to_shape with a smaller atom)")
        if last:
            if shape[d] % step:
                raise ValueError(f"TMA: tensor dimension {d} (extent {shape[d]}) is split into map dimensions "
                                 f"of {step} and more; its extent must be a multiple of {step}")
            gdim = shape[d] // step
        else:
            gdim = extent
        dims.append(TmaDim(d, step, None if last else extent))
        gdims.append(gdim)
        box.append(extent)
        stride_bytes = strides[d] * step * esize
        if i > 0:
            if stride_bytes % 16 or stride_bytes >= 1 << 40:
                raise ValueError(f"TMA: map dimension {i} (tensor dimension {d}, step {step}) has a stride of "
                                 f"{stride_bytes} bytes; strides must be multiples of 16 below 2^40")
            gstrides.append(stride_bytes)

    row = box[0] * esize
    if row % 16:
        raise ValueError(f"TMA: a box row (innermost extent {box[0]} x {esize} bytes = {row}) must be a multiple "
                         "of 16 bytes")
    if sw_bytes and row > sw_bytes:
        raise ValueError(f"TMA: a box row of {row} bytes is wider than the {sw_bytes}-byte swizzle span; "
                         f"tile the innermost dimension by {sw_bytes // esize} elements in the layout")
    if sw_bytes and from_layout and row != sw_bytes:
        # The layout's swizzle is a function of the offset within rows of the span; TMA's placement of
        # narrower rows under a wider swizzle is not that function, so only full rows are derived.
        raise ValueError(f"TMA: a swizzled tile's box row must be exactly the {sw_bytes}-byte swizzle span, "
                         f"got {row} bytes; use a {row}-byte swizzle atom")

    # Multicast splits the outermost box dimension that has more than one element: its slices are
    # consecutive in shared memory, one per CTA of the group.
    split = max((i for i, b in enumerate(box) if b > 1), default=len(box) - 1)
    if multicast > 1:
        if box[split] % multicast:
            raise ValueError(f"TMA multicast: the outermost box extent {box[split]} (tensor dimension "
                             f"{pieces[split][2]}) does not split over {multicast} CTAs")
        box[split] //= multicast
        slice_bytes = esize
        for b in box:
            slice_bytes *= b
        if slice_bytes % max(128, 8 * sw_bytes):
            raise ValueError(f"TMA multicast: each CTA's slice is {slice_bytes} bytes; it must be a multiple of "
                             f"{max(128, 8 * sw_bytes)} (the swizzle pattern, at least 128) so that every slice "
                             "starts aligned")

    return TmaEncodeArgs(
        data_type=f"CU_TENSOR_MAP_DATA_TYPE_{enum}",
        global_address=address,
        global_dims=tuple(gdims),
        global_strides=tuple(gstrides),
        box_dims=tuple(box),
        element_strides=(1,) * len(box),
        interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
        swizzle=f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLE_ENUM[sw_bytes]}",
        l2_promotion=f"CU_TENSOR_MAP_L2_PROMOTION_{_L2_PROMOTION[l2_promotion]}",
        oob_fill=f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{_OOB_FILL[oob_fill]}",
        dims=tuple(dims),
        element_bytes=esize,
        swizzle_bytes=sw_bytes,
        multicast=multicast,
        multicast_dim=split,
    )


def _tile_layout(smem: Any, shape: tuple[int, ...], strides: tuple[int, ...], esize: int,
                 swizzle: int | None) -> tuple[Layout, int, bool]:
    """(the tile's unswizzled layout, its swizzle in bytes, whether it came from a layout)."""
    if isinstance(smem, ComposedLayout):
        if not isinstance(smem.outer, Swizzle) or not isinstance(smem.inner, Layout):
            raise ValueError(f"TMA: expected a Swizzle o offset o Layout tile, got {smem}")
        if smem.offset != 0:
            raise ValueError(f"TMA: the tile layout {smem} starts at offset {smem.offset}; a box starts at 0")
        sw = _swizzle_bytes(smem.outer, esize)
        if swizzle is not None and swizzle != sw:
            raise ValueError(f"TMA: swizzle={swizzle} disagrees with the tile layout's {smem.outer} "
                             f"({sw or 'no'}-byte swizzle)")
        return smem.inner, sw, True
    if isinstance(smem, Layout):
        if swizzle:
            raise ValueError(f"TMA: swizzle={swizzle} but the tile layout {smem} is not swizzled; pass the "
                             "swizzled layout (e.g. tile_to_shape(gmma_layout_atom(...), ...))")
        return smem, 0, True
    box = tuple(smem)
    if not box or len(box) > len(shape) or any(not isinstance(b, int) or b < 1 for b in box):
        raise ValueError(f"TMA: a box shape has 1 to {len(shape)} positive extents, got {smem!r}")
    # Dense in the tensor's own order: its dimensions by increasing stride (the contiguous one first).
    order = sorted(range(len(box)), key=lambda d: (strides[d], d))
    box_strides = [0] * len(box)
    acc = 1
    for d in order:
        box_strides[d] = acc
        acc *= box[d]
    return Layout(box, tuple(box_strides)), swizzle or 0, False


def tma_args_for(tensor: Any, smem: Layout | ComposedLayout | Sequence[int], **kw: Any) -> TmaEncodeArgs:
    """tma_encode_args for a torch tensor: its shape, strides, dtype (or ``dtype=``) and address."""
    dtype = kw.pop("dtype", None)
    return tma_encode_args(tuple(tensor.shape), tuple(tensor.stride()), dtype if dtype is not None else tensor.dtype,
                           smem, address=int(tensor.data_ptr()), **kw)


def make_tma_descriptor(
    tensor: Any,
    smem: Layout | ComposedLayout | Sequence[int],
    *,
    swizzle: int | None = None,
    dtype: Any = None,
    multicast: int = 1,
    oob_fill: str = "zero",
    l2_promotion: int = 256,
) -> Any:
    """Encode the ``cuda.bindings.driver.CUtensorMap`` of a CUDA torch tensor tiled by `smem`.

    Arguments as tma_encode_args (whose result ``tma_args_for`` gives, for the coordinates and byte
    counts a kernel needs); `dtype` overrides the tensor's element type (e.g. "e4m3" for a uint8
    view). Pass the map to a ``const __grid_constant__ CUtensorMap`` kernel parameter; the tensor
    must stay alive while kernels use it. Raises ValueError for what TMA cannot do (before calling
    the driver) and RuntimeError when the driver refuses.
    """
    if not getattr(tensor, "is_cuda", False):
        raise ValueError(f"make_tma_descriptor: the tensor must be a CUDA torch tensor, got {type(tensor).__name__}"
                         f"{' on ' + str(tensor.device) if hasattr(tensor, 'device') else ''}")
    args = tma_args_for(tensor, smem, swizzle=swizzle, dtype=dtype, multicast=multicast, oob_fill=oob_fill,
                        l2_promotion=l2_promotion)
    return encode(args)


def encode(args: TmaEncodeArgs) -> Any:
    """Call ``cuTensorMapEncodeTiled`` with `args` and return the CUtensorMap (needs the CUDA driver)."""
    from cuda.bindings import driver as d

    from tilecraft.runtime.device import init_driver

    init_driver()
    u64, u32 = d.cuuint64_t, d.cuuint32_t  # the binding rejects plain ints in these lists
    err, tmap = d.cuTensorMapEncodeTiled(
        getattr(d.CUtensorMapDataType, args.data_type),
        args.rank,
        args.global_address,
        [u64(v) for v in args.global_dims],
        [u64(v) for v in args.global_strides],
        [u32(v) for v in args.box_dims],
        [u32(v) for v in args.element_strides],
        getattr(d.CUtensorMapInterleave, args.interleave),
        getattr(d.CUtensorMapSwizzle, args.swizzle),
        getattr(d.CUtensorMapL2promotion, args.l2_promotion),
        getattr(d.CUtensorMapFloatOOBfill, args.oob_fill),
    )
    if err != d.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err!r}) for {args}")
    return tmap


@dataclass(frozen=True, eq=False)
class TmaMap:
    """A tensor map for a kernel of the tilecraft language: the encoded ``CUtensorMap`` (None for a
    tensor not on a GPU: such a map can be traced and compiled, not launched), the arguments it was
    encoded from, the shared-memory tile layout it fills, and the tensor (kept alive with the map).

    Passed to a ``@tc.kernel`` it becomes a ``const __grid_constant__ CUtensorMap`` parameter; ``key``,
    the static part (box, swizzle, coordinate bookkeeping, tile layout), is part of the kernel's
    specialization, while the address, extents and strides travel in the map."""

    args: TmaEncodeArgs
    smem: Any
    descriptor: Any
    tensor: Any = None

    @functools.cached_property
    def static_args(self) -> TmaEncodeArgs:
        """The encode arguments without the tensor's address, extents and strides (what a kernel may
        specialize on: maps of different tensors with the same tiling share one compiled kernel)."""
        from dataclasses import replace
        a = self.args
        return replace(a, global_address=0, global_dims=(0,) * a.rank, global_strides=(0,) * len(a.global_strides))

    @functools.cached_property
    def descriptor_bytes(self) -> bytes:
        """The encoded CUtensorMap's 128 bytes (what a launch copies into the kernel's parameters)."""
        import ctypes
        return ctypes.string_at(int(self.descriptor.getPtr()), 128)

    @functools.cached_property
    def key(self) -> tuple[Any, ...]:
        """The static part of the map (computed once: a launch reads it to find its kernel)."""
        a = self.args
        return (a.data_type, a.box_dims, a.element_strides, a.swizzle, a.dims, a.element_bytes, a.multicast,
                a.multicast_dim, repr(self.smem))


def make_tma_map(tensor: Any, smem: Layout | ComposedLayout, **kw: Any) -> TmaMap:
    """The TmaMap of a torch tensor tiled by the shared-memory layout `smem` (keywords as
    tma_encode_args, plus ``dtype``); encoded with the driver when the tensor is on a GPU."""
    args = tma_args_for(tensor, smem, **kw)
    desc = encode(args) if getattr(tensor, "is_cuda", False) else None
    return TmaMap(args, smem, desc, tensor)
