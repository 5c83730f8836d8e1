"""tilecraft: CuTe and CUTLASS in Python.

The layout algebra and host tensors load eagerly (pure Python); the GPU stack (cuda.core, torch) loads
only when a GPU layer is first touched, so `import tilecraft` stays fast.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

from tilecraft.layout import *  # noqa: F401,F403  (the layout layer defines __all__)
from tilecraft.layout import __all__ as _layout_all
# The tensor layer's divide/composition/coalesce accept tensors and layouts alike, so they shadow
# the layout-only versions.
from tilecraft.tensor import *  # noqa: F401,F403
from tilecraft.tensor import __all__ as _tensor_all

_LAZY_SUBMODULES = ("runtime", "bench", "dsl", "atoms", "gemm", "quant")
# The kernel language (tilecraft.dsl), reachable as tc.kernel, tc.range, ... without importing it eagerly.
# Its thread-level gemm stays tc.dsl.gemm: tc.gemm is the GEMM library.
_DSL_NAMES = frozenset({
    "kernel", "Constexpr", "TraceError", "range", "if_", "else_", "where", "syncthreads", "launch_bounds", "ptxas_options",
    "compiler_barrier",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "smem_tensor", "make_rmem_tensor", "make_gmem_ptr",
    "make_smem_ptr", "elem_less", "copy", "copy_if", "read_if", "axpby", "clear", "fill",
})


# Copy and MMA atoms (tilecraft.atoms), reachable as tc.make_tiled_mma, tc.ldmatrix, ...
_ATOM_NAMES = frozenset({
    "CopyAtom", "GmmaDescriptor", "MMAAtom", "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x32_S32S8S8S32_TN", "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_ATOMS",
    "SM89_16x8x32_F32E4M3E4M3F32_TN", "ThrCopy", "ThrMMA", "TiledCopy", "TiledMMA", "cp_async", "draw_tiled_copy",
    "draw_tiled_mma", "gmma_layout_atom", "ldmatrix", "make_gmma_desc", "make_tiled_copy", "make_tiled_copy_A",
    "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
    "partition_shape_C", "shared_memory_wavefronts", "smem_swizzle_atom", "stmatrix", "tv_owners",
    "universal_copy", "wgmma_atom",
})


# The GEMM API (tilecraft.gemm); tc.gemm itself is the (callable) package.
_GEMM_NAMES = frozenset({"GemmOp", "TensorOpConfig"})


def __getattr__(name: str):
    if name in _GEMM_NAMES:
        return getattr(importlib.import_module("tilecraft.gemm"), name)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"tilecraft.{name}")
    if name in _DSL_NAMES:
        return getattr(importlib.import_module("tilecraft.dsl"), name)
    if name in _ATOM_NAMES:
        return getattr(importlib.import_module("tilecraft.atoms"), name)
    raise AttributeError(f"module 'tilecraft' has no attribute {name!r}")


__all__ = sorted(set(_layout_all) | set(_tensor_all)) + ["__version__"]
