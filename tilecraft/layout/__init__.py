"""Layer 1: CuTe's layout algebra in pure Python (no dependencies)."""
from tilecraft.layout.basis import ArithTuple, E, ScaledBasis, make_basis_like
from tilecraft.layout.inttuple import (
    SymbolicInt, Underscore, _, ceil_div, compatible, congruent, crd2crd, crd2idx, depth, dice, elem_scale,
    evenly_divides, flatten, has_underscore, idx2crd, inner_product, is_int, is_static, is_tuple,
    is_underscore, prefix_product, product, product_each, rank, repeat_like, shape_div, slice_,
    suffix_product, unflatten, weakly_congruent,
)
from tilecraft.layout.layout import (
    Layout, LayoutLeft, LayoutRight, append, blocked_product, coalesce, complement, composition, cosize,
    downcast, filter, filter_zeros, flat_divide, flat_product, flatten_layout, get, group, is_layout,
    left_inverse, logical_divide, logical_product, make_identity_layout, make_layout, make_ordered_layout,
    max_common_layout, max_common_vector, nullspace, prepend, raked_product, recast_layout, replace,
    right_inverse, select, shape, size, slice_and_offset, stride, take, tile_to_shape, tile_unzip,
    tiled_divide, tiled_product, upcast, zip_layouts, zipped_divide, zipped_product,
)
from tilecraft.layout.picture import Picture, draw, draw_tv, layout_table, print_layout
from tilecraft.layout.swizzle import ComposedLayout, Swizzle, make_composed_layout

__all__ = [
    "ArithTuple", "E", "ScaledBasis", "make_basis_like",
    "SymbolicInt", "Underscore", "_", "ceil_div", "compatible", "congruent", "crd2crd", "crd2idx", "depth",
    "dice", "elem_scale", "evenly_divides", "flatten", "has_underscore", "idx2crd", "inner_product", "is_int",
    "is_static", "is_tuple", "is_underscore", "prefix_product", "product", "product_each", "rank",
    "repeat_like", "shape_div", "slice_", "suffix_product", "unflatten", "weakly_congruent",
    "Layout", "LayoutLeft", "LayoutRight", "append", "blocked_product", "coalesce", "complement",
    "composition", "cosize", "downcast", "filter", "filter_zeros", "flat_divide", "flat_product",
    "flatten_layout", "get", "group", "is_layout", "left_inverse", "logical_divide", "logical_product",
    "make_identity_layout", "make_layout", "make_ordered_layout", "max_common_layout", "max_common_vector",
    "nullspace", "prepend", "raked_product", "recast_layout", "replace", "right_inverse", "select", "shape",
    "size", "slice_and_offset", "stride", "take", "tile_to_shape", "tile_unzip", "tiled_divide",
    "tiled_product", "upcast", "zip_layouts", "zipped_divide", "zipped_product",
    "Picture", "draw", "draw_tv", "layout_table", "print_layout",
    "ComposedLayout", "Swizzle", "make_composed_layout",
]
