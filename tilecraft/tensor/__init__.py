"""Layer 2: tensors (an engine plus a layout) and partitioning, eager on host arrays."""
from tilecraft.tensor.engine import CoordEngine, Engine, ListEngine, NumpyEngine, TorchEngine
from tilecraft.tensor.picture import draw_partition, draw_tensor
from tilecraft.tensor.tensor import (
    Tensor, coalesce, composition, domain_offset, flat_divide, inner_partition, is_tensor, local_partition,
    local_tile, logical_divide, make_fragment_like, make_identity_tensor, make_layout_like, make_tensor,
    make_tensor_like, outer_partition, print_tensor, recast, tensor_str, tiled_divide, zipped_divide,
)

__all__ = [
    "CoordEngine", "Engine", "ListEngine", "NumpyEngine", "TorchEngine", "draw_partition", "draw_tensor",
    "Tensor", "coalesce", "composition", "domain_offset", "flat_divide", "inner_partition", "is_tensor",
    "local_partition", "local_tile", "logical_divide", "make_fragment_like", "make_identity_tensor",
    "make_layout_like", "make_tensor", "make_tensor_like", "outer_partition", "print_tensor", "recast",
    "tensor_str", "tiled_divide", "zipped_divide",
]
