"""Layer 4: copy and MMA atoms, CuTe's way: a thread-value layout plus the instruction.

Everything about which thread holds which element is a layout, computed by the layout algebra and
checkable on host tensors; the instructions themselves live in ``tilecraft/atoms.cuh``.
"""
from tilecraft.atoms.copy import (
    CopyAtom, ThrCopy, TiledCopy, cp_async, ldmatrix, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B,
    make_tiled_copy_C, stmatrix, universal_copy,
)
from tilecraft.atoms.mma import (
    SM80_16x8x8_F32TF32TF32F32_TN, SM80_16x8x16_F16F16F16F16_TN, SM80_16x8x16_F32BF16BF16F32_TN,
    SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x32_S32S8S8S32_TN, SM80_ATOMS, SM89_16x8x32_F32E4M3E4M3F32_TN, MMAAtom,
    ThrMMA, TiledMMA, make_tiled_mma, partition_shape_A, partition_shape_B, partition_shape_C, wgmma_atom,
)
from tilecraft.atoms.picture import draw_tiled_copy, draw_tiled_mma, tv_owners
from tilecraft.atoms.smem import (
    GmmaDescriptor, gmma_layout_atom, make_gmma_desc, shared_memory_wavefronts, smem_swizzle_atom,
)

__all__ = [
    "CopyAtom", "ThrCopy", "TiledCopy", "cp_async", "ldmatrix", "make_tiled_copy", "make_tiled_copy_A",
    "make_tiled_copy_B", "make_tiled_copy_C", "stmatrix", "universal_copy",
    "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x32_S32S8S8S32_TN", "SM80_ATOMS", "SM89_16x8x32_F32E4M3E4M3F32_TN",
    "MMAAtom", "ThrMMA", "TiledMMA", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
    "partition_shape_C", "wgmma_atom",
    "draw_tiled_copy", "draw_tiled_mma", "tv_owners",
    "GmmaDescriptor", "gmma_layout_atom", "make_gmma_desc", "shared_memory_wavefronts", "smem_swizzle_atom",
]
