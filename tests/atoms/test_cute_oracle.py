"""tilecraft's atoms against CuTe C++: tiled MMAs, tiled copies, partitions and retiles, exactly.

Every value in CUTE was printed by CuTe C++ itself (host code against CUTLASS's include/ at commit
7107b05, run once outside this repository), underscores of static integers removed. The file holds
only those printed facts as literals: it needs neither CuTe nor a compiler.
"""
from __future__ import annotations

import numpy as np
import pytest

from tilecraft.atoms import (
    SM80_16x8x8_F32TF32TF32F32_TN, SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x32_S32S8S8S32_TN,
    SM89_16x8x32_F32E4M3E4M3F32_TN, cp_async, gmma_layout_atom, ldmatrix, make_tiled_copy, make_tiled_copy_A,
    make_tiled_copy_B, make_tiled_copy_C, make_tiled_mma, partition_shape_A, partition_shape_B,
    partition_shape_C, stmatrix, universal_copy, wgmma_atom,
)
from tilecraft.layout import Layout, LayoutRight, Swizzle, composition, make_layout, tile_to_shape
from tilecraft.tensor import make_tensor

CUTE = {
    'm16n8k16_1x1.vmnk': '(32,1,1,1):(1,0,0,0)',
    'm16n8k16_1x1.tile': '(16,8,16)',
    'm16n8k16_1x1.A_TV': '((4,8),((2,2,2),(1,1))):((32,1),((16,8,128),(0,0)))',
    'm16n8k16_1x1.B_TV': '((4,8),((2,2),(1,1))):((16,1),((8,64),(0,0)))',
    'm16n8k16_1x1.C_TV': '((4,8),((2,2),(1,1))):((32,1),((16,8),(0,0)))',
    'm16n8k16_1x1.thrfrg_A': '(((4,8),(1,1)),((2,2,2),(1,1))):(((32,1),(0,0)),((16,8,128),(0,0)))',
    'm16n8k16_1x1.thrfrg_B': '(((4,8),(1,1)),((2,2),(1,1))):(((16,1),(0,0)),((8,64),(0,0)))',
    'm16n8k16_1x1.thrfrg_C': '(((4,8),(1,1)),((2,2),(1,1))):(((32,1),(0,0)),((16,8),(0,0)))',
    'm16n8k16_1x1.shape_A': '((2,2,2),1,1)',
    'm16n8k16_1x1.shape_B': '((2,2),1,1)',
    'm16n8k16_1x1.shape_C': '((2,2),1,1)',
    'm16n8k16_1x1.part_A': '((2,2,2),1,1):((1,128,8),0,0)',
    'm16n8k16_1x1.part_B': '((2,2),1,1):((1,8),0,0)',
    'm16n8k16_1x1.part_C': '((2,2),1,1):((1,64),0,0)',
    'm16n8k16_1x1.frag_A': '((2,2,2),1,1):((1,2,4),0,0)',
    'm16n8k16_1x1.frag_C': '((2,2),1,1):((1,2),0,0)',
    'm16n8k16_2x2.vmnk': '(32,2,2,1):(1,32,64,0)',
    'm16n8k16_2x2.tile': '(32,16,16)',
    'm16n8k16_2x2.A_TV': '((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))',
    'm16n8k16_2x2.B_TV': '((4,8,2,2),((2,2),(1,1))):((32,1,0,8),((16,128),(0,0)))',
    'm16n8k16_2x2.C_TV': '((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))',
    'm16n8k16_2x2.thrfrg_A': '(((4,8),(2,1)),((2,2,2),(2,2))):(((128,1),(16,0)),((64,8,512),(32,1024)))',
    'm16n8k16_2x2.thrfrg_B': '(((4,8),(2,1)),((2,2),(2,2))):(((64,1),(8,0)),((32,256),(16,512)))',
    'm16n8k16_2x2.thrfrg_C': '(((4,8),(2,2)),((2,2),(2,2))):(((128,1),(16,512)),((64,8),(32,1024)))',
    'm16n8k16_2x2.shape_A': '((2,2,2),2,2)',
    'm16n8k16_2x2.shape_B': '((2,2),2,2)',
    'm16n8k16_2x2.shape_C': '((2,2),2,2)',
    'm16n8k16_2x2.part_A': '((2,2,2),2,2):((1,256,8),1024,16)',
    'm16n8k16_2x2.part_B': '((2,2),2,2):((1,8),512,16)',
    'm16n8k16_2x2.part_C': '((2,2),2,2):((1,256),1024,16)',
    'm16n8k16_2x2.frag_A': '((2,2,2),2,2):((1,2,4),16,8)',
    'm16n8k16_2x2.frag_C': '((2,2),2,2):((1,2),4,8)',
    'm16n8k16_2x2_p32x32x16.vmnk': '(32,2,2,1):(1,32,64,0)',
    'm16n8k16_2x2_p32x32x16.tile': '(32,32,16)',
    'm16n8k16_2x2_p32x32x16.A_TV': '((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))',
    'm16n8k16_2x2_p32x32x16.B_TV': '((4,8,2,2),((2,2),(2,1))):((64,1,0,8),((32,256),(16,0)))',
    'm16n8k16_2x2_p32x32x16.C_TV': '((4,8,2,2),((2,2),(1,2))):((64,1,16,256),((32,8),(0,512)))',
    'm16n8k16_2x2_p32x32x16.thrfrg_A': '(((4,8),(2,1)),((2,2,2),(2,2))):(((128,1),(16,0)),((64,8,512),(32,1024)))',
    'm16n8k16_2x2_p32x32x16.thrfrg_B': '(((4,8),(2,1)),((2,2),(4,2))):(((128,1),(8,0)),((64,512),(16,1024)))',
    'm16n8k16_2x2_p32x32x16.thrfrg_C': '(((4,8),(2,2)),((2,2),(2,4))):(((128,1),(16,512)),((64,8),(32,1024)))',
    'm16n8k16_2x2_p32x32x16.shape_A': '((2,2,2),2,2)',
    'm16n8k16_2x2_p32x32x16.shape_B': '((2,2),4,2)',
    'm16n8k16_2x2_p32x32x16.shape_C': '((2,2),2,4)',
    'm16n8k16_2x2_p32x32x16.part_A': '((2,2,2),2,2):((1,256,8),1024,16)',
    'm16n8k16_2x2_p32x32x16.part_B': '((2,2),4,2):((1,8),512,16)',
    'm16n8k16_2x2_p32x32x16.part_C': '((2,2),2,4):((1,512),2048,16)',
    'm16n8k16_2x2_p32x32x16.frag_A': '((2,2,2),2,2):((1,2,4),16,8)',
    'm16n8k16_2x2_p32x32x16.frag_C': '((2,2),2,4):((1,2),4,8)',
    'm16n8k16_2x2_pN.vmnk': '(32,2,2,1):(1,32,64,0)',
    'm16n8k16_2x2_pN.tile': '(32,32,16)',
    'm16n8k16_2x2_pN.A_TV': '((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))',
    'm16n8k16_2x2_pN.B_TV': '((4,8,2,2),((2,2),(2,1))):((64,1,0,16),((32,256),(8,0)))',
    'm16n8k16_2x2_pN.C_TV': '((4,8,2,2),((2,2),(1,2))):((64,1,16,512),((32,8),(0,256)))',
    'm16n8k16_2x2_pN.thrfrg_A': '(((4,8),(2,1)),((2,2,2),(1,2))):(((64,1),(16,0)),((32,8,256),(0,512)))',
    'm16n8k16_2x2_pN.thrfrg_B': '(((4,8),(2,1)),((2,2),(2,2))):(((64,1),(16,0)),((32,256),(8,512)))',
    'm16n8k16_2x2_pN.thrfrg_C': '(((4,8),(2,2)),((2,2),(1,2))):(((64,1),(16,512)),((32,8),(0,256)))',
    'm16n8k16_2x2_pN.shape_A': '((2,2,2),1,2)',
    'm16n8k16_2x2_pN.shape_B': '((2,2),2,2)',
    'm16n8k16_2x2_pN.shape_C': '((2,2),1,2)',
    'm16n8k16_2x2_pN.part_A': '((2,2,2),1,2):((1,256,8),0,16)',
    'm16n8k16_2x2_pN.part_B': '((2,2),2,2):((1,8),256,16)',
    'm16n8k16_2x2_pN.part_C': '((2,2),1,2):((1,256),0,8)',
    'm16n8k16_2x2_pN.frag_A': '((2,2,2),1,2):((1,2,4),0,8)',
    'm16n8k16_2x2_pN.frag_C': '((2,2),1,2):((1,2),0,4)',
    'm16n8k16_2x2_rowmajor.vmnk': '(32,2,2,1):(1,64,32,0)',
    'm16n8k16_2x2_rowmajor.tile': '(32,16,16)',
    'm16n8k16_2x2_rowmajor.A_TV': '(((4,8),2,2),((2,2,2),(1,1))):(((64,1),0,16),((32,8,256),(0,0)))',
    'm16n8k16_2x2_rowmajor.B_TV': '(((4,8),2,2),((2,2),(1,1))):(((32,1),8,0),((16,128),(0,0)))',
    'm16n8k16_2x2_rowmajor.C_TV': '(((4,8),2,2),((2,2),(1,1))):(((64,1),256,16),((32,8),(0,0)))',
    'm16n8k16_2x2_rowmajor.thrfrg_A': '(((4,8),(2,1)),((2,2,2),(1,1))):(((64,1),(16,0)),((32,8,256),(0,0)))',
    'm16n8k16_2x2_rowmajor.thrfrg_B': '(((4,8),(2,1)),((2,2),(1,1))):(((32,1),(8,0)),((16,128),(0,0)))',
    'm16n8k16_2x2_rowmajor.thrfrg_C': '(((4,8),(2,2)),((2,2),(1,1))):(((64,1),(16,256)),((32,8),(0,0)))',
    'm16n8k16_2x2_rowmajor.shape_A': '((2,2,2),1,1)',
    'm16n8k16_2x2_rowmajor.shape_B': '((2,2),1,1)',
    'm16n8k16_2x2_rowmajor.shape_C': '((2,2),1,1)',
    'm16n8k16_2x2_rowmajor.part_A': '((2,2,2),1,1):((1,128,8),0,0)',
    'm16n8k16_2x2_rowmajor.part_B': '((2,2),1,1):((1,8),0,0)',
    'm16n8k16_2x2_rowmajor.part_C': '((2,2),1,1):((1,128),0,0)',
    'm16n8k16_2x2_rowmajor.frag_A': '((2,2,2),1,1):((1,2,4),0,0)',
    'm16n8k16_2x2_rowmajor.frag_C': '((2,2),1,1):((1,2),0,0)',
    'm16n8k8_tf32_2x1.vmnk': '(32,2,1,1):(1,32,0,0)',
    'm16n8k8_tf32_2x1.tile': '(32,8,8)',
    'm16n8k8_tf32_2x1.A_TV': '((4,8,2),((2,2),(1,1))):((32,1,16),((8,128),(0,0)))',
    'm16n8k8_tf32_2x1.B_TV': '((4,8,2),(2,(1,1))):((8,1,0),(32,(0,0)))',
    'm16n8k8_tf32_2x1.C_TV': '((4,8,2),((2,2),(1,1))):((64,1,16),((32,8),(0,0)))',
    'm16n8k8_tf32_2x1.thrfrg_A': '(((4,8),(2,1)),((2,2),(1,2))):(((32,1),(16,0)),((8,128),(0,256)))',
    'm16n8k8_tf32_2x1.thrfrg_B': '(((4,8),(1,1)),(2,(1,2))):(((8,1),(0,0)),(32,(0,64)))',
    'm16n8k8_tf32_2x1.thrfrg_C': '(((4,8),(2,1)),((2,2),(1,2))):(((64,1),(16,0)),((32,8),(0,256)))',
    'm16n8k8_tf32_2x1.shape_A': '((2,2),1,2)',
    'm16n8k8_tf32_2x1.shape_B': '(2,1,2)',
    'm16n8k8_tf32_2x1.shape_C': '((2,2),1,2)',
    'm16n8k8_tf32_2x1.part_A': '((2,2),1,2):((128,4),0,8)',
    'm16n8k8_tf32_2x1.part_B': '(2,1,2):(4,0,8)',
    'm16n8k8_tf32_2x1.part_C': '((2,2),1,2):((1,128),0,8)',
    'm16n8k8_tf32_2x1.frag_A': '((2,2),1,2):((1,2),0,4)',
    'm16n8k8_tf32_2x1.frag_C': '((2,2),1,2):((1,2),0,4)',
    'm16n8k32_s8_1x2.vmnk': '(32,1,2,1):(1,0,32,0)',
    'm16n8k32_s8_1x2.tile': '(16,16,32)',
    'm16n8k32_s8_1x2.A_TV': '((4,8,2),((4,2,2),(1,1))):((64,1,0),((16,8,256),(0,0)))',
    'm16n8k32_s8_1x2.B_TV': '((4,16),((4,2),(1,1))):((64,1),((16,256),(0,0)))',
    'm16n8k32_s8_1x2.C_TV': '((4,8,2),((2,2),(1,1))):((32,1,128),((16,8),(0,0)))',
    'm16n8k32_s8_1x2.thrfrg_A': '(((4,8),(1,1)),((4,2,2),(1,2))):(((64,1),(0,0)),((16,8,256),(0,512)))',
    'm16n8k32_s8_1x2.thrfrg_B': '(((4,8),(2,1)),((4,2),(1,2))):(((64,1),(8,0)),((16,256),(0,512)))',
    'm16n8k32_s8_1x2.thrfrg_C': '(((4,8),(1,2)),((2,2),(1,1))):(((32,1),(0,128)),((16,8),(0,0)))',
    'm16n8k32_s8_1x2.shape_A': '((4,2,2),1,2)',
    'm16n8k32_s8_1x2.shape_B': '((4,2),1,2)',
    'm16n8k32_s8_1x2.shape_C': '((2,2),1,1)',
    'm16n8k32_s8_1x2.part_A': '((4,2,2),1,2):((1,512,16),0,32)',
    'm16n8k32_s8_1x2.part_B': '((4,2),1,2):((1,16),0,32)',
    'm16n8k32_s8_1x2.part_C': '((2,2),1,1):((1,128),0,0)',
    'm16n8k32_s8_1x2.frag_A': '((4,2,2),1,2):((1,4,8),0,16)',
    'm16n8k32_s8_1x2.frag_C': '((2,2),1,1):((1,2),0,0)',
    'm16n8k32_e4m3_1x1.vmnk': '(32,1,1,1):(1,0,0,0)',
    'm16n8k32_e4m3_1x1.tile': '(16,8,32)',
    'm16n8k32_e4m3_1x1.A_TV': '((4,8),((4,2,2),(1,1))):((64,1),((16,8,256),(0,0)))',
    'm16n8k32_e4m3_1x1.B_TV': '((4,8),((4,2),(1,1))):((32,1),((8,128),(0,0)))',
    'm16n8k32_e4m3_1x1.C_TV': '((4,8),((2,2),(1,1))):((32,1),((16,8),(0,0)))',
    'm16n8k32_e4m3_1x1.thrfrg_A': '(((4,8),(1,1)),((4,2,2),(1,1))):(((64,1),(0,0)),((16,8,256),(0,0)))',
    'm16n8k32_e4m3_1x1.thrfrg_B': '(((4,8),(1,1)),((4,2),(1,1))):(((32,1),(0,0)),((8,128),(0,0)))',
    'm16n8k32_e4m3_1x1.thrfrg_C': '(((4,8),(1,1)),((2,2),(1,1))):(((32,1),(0,0)),((16,8),(0,0)))',
    'm16n8k32_e4m3_1x1.shape_A': '((4,2,2),1,1)',
    'm16n8k32_e4m3_1x1.shape_B': '((4,2),1,1)',
    'm16n8k32_e4m3_1x1.shape_C': '((2,2),1,1)',
    'm16n8k32_e4m3_1x1.part_A': '((4,2,2),1,1):((1,256,16),0,0)',
    'm16n8k32_e4m3_1x1.part_B': '((4,2),1,1):((1,16),0,0)',
    'm16n8k32_e4m3_1x1.part_C': '((2,2),1,1):((1,64),0,0)',
    'm16n8k32_e4m3_1x1.frag_A': '((4,2,2),1,1):((1,4,8),0,0)',
    'm16n8k32_e4m3_1x1.frag_C': '((2,2),1,1):((1,2),0,0)',
    'wgmma_64x64x16_ss.vmnk': '(128,1,1,1):(1,0,0,0)',
    'wgmma_64x64x16_ss.tile': '(64,64,16)',
    'wgmma_64x64x16_ss.A_TV': '(128,((64,16),(1,1))):(0,((1,64),(0,0)))',
    'wgmma_64x64x16_ss.B_TV': '(128,((64,16),(1,1))):(0,((1,64),(0,0)))',
    'wgmma_64x64x16_ss.C_TV': '((4,8,4),((2,2,8),(1,1))):((128,1,16),((64,8,512),(0,0)))',
    'wgmma_64x64x16_ss.thrfrg_A': '((128,(1,1)),((64,16),(1,1))):((0,(0,0)),((1,64),(0,0)))',
    'wgmma_64x64x16_ss.thrfrg_B': '((128,(1,1)),((64,16),(1,1))):((0,(0,0)),((1,64),(0,0)))',
    'wgmma_64x64x16_ss.thrfrg_C': '(((4,8,4),(1,1)),((2,2,8),(1,1))):(((128,1,16),(0,0)),((64,8,512),(0,0)))',
    'wgmma_64x64x16_ss.shape_A': '((64,16),1,1)',
    'wgmma_64x64x16_ss.shape_B': '((64,16),1,1)',
    'wgmma_64x64x16_ss.shape_C': '((2,2,8),1,1)',
    'wgmma_64x64x16_ss.part_A': '((64,16),1,1):((16,1),0,0)',
    'wgmma_64x64x16_ss.part_B': '((64,16),1,1):((16,1),0,0)',
    'wgmma_64x64x16_ss.part_C': '((2,2,8),1,1):((1,512,8),0,0)',
    'wgmma_64x64x16_ss.frag_C': '((2,2,8),1,1):((1,2,4),0,0)',
    'wgmma_64x128x16_rs_2x1.vmnk': '(128,2,1,1):(1,128,0,0)',
    'wgmma_64x128x16_rs_2x1.tile': '(128,128,16)',
    'wgmma_64x128x16_rs_2x1.A_TV': '((4,8,8),((2,2,2),(1,1))):((256,1,16),((128,8,1024),(0,0)))',
    'wgmma_64x128x16_rs_2x1.B_TV': '(256,((128,16),(1,1))):(0,((1,128),(0,0)))',
    'wgmma_64x128x16_rs_2x1.C_TV': '((4,8,8),((2,2,16),(1,1))):((256,1,16),((128,8,1024),(0,0)))',
    'wgmma_64x128x16_rs_2x1.thrfrg_A': '(((4,8,4),(2,1)),((2,2,2),(1,2))):(((256,1,16),(64,0)),((128,8,1024),(0,2048)))',
    'wgmma_64x128x16_rs_2x1.thrfrg_B': '((128,(1,1)),((128,16),(1,2))):((0,(0,0)),((1,128),(0,2048)))',
    'wgmma_64x128x16_rs_2x1.thrfrg_C': '(((4,8,4),(2,1)),((2,2,16),(1,1))):(((256,1,16),(64,0)),((128,8,1024),(0,0)))',
    'wgmma_64x128x16_rs_2x1.shape_A': '((2,2,2),1,2)',
    'wgmma_64x128x16_rs_2x1.shape_B': '((128,16),1,2)',
    'wgmma_64x128x16_rs_2x1.shape_C': '((2,2,16),1,1)',
    'wgmma_64x128x16_rs_2x1.part_A': '((2,2,2),1,2):((1,256,8),0,16)',
    'wgmma_64x128x16_rs_2x1.part_B': '((128,16),1,2):((32,1),0,16)',
    'wgmma_64x128x16_rs_2x1.part_C': '((2,2,16),1,1):((1,1024,8),0,0)',
    'wgmma_64x128x16_rs_2x1.frag_A': '((2,2,2),1,2):((1,2,4),0,8)',
    'wgmma_64x128x16_rs_2x1.frag_C': '((2,2,16),1,1):((1,2,4),0,0)',
    'wgmma_64x32x32_e4m3_rs.vmnk': '(128,1,1,1):(1,0,0,0)',
    'wgmma_64x32x32_e4m3_rs.tile': '(64,32,32)',
    'wgmma_64x32x32_e4m3_rs.A_TV': '((4,8,4),((4,2,2),(1,1))):((256,1,16),((64,8,1024),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.B_TV': '(128,((32,32),(1,1))):(0,((1,32),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.C_TV': '((4,8,4),((2,2,4),(1,1))):((128,1,16),((64,8,512),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.thrfrg_A': '(((4,8,4),(1,1)),((4,2,2),(1,1))):(((256,1,16),(0,0)),((64,8,1024),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.thrfrg_B': '((128,(1,1)),((32,32),(1,1))):((0,(0,0)),((1,32),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.thrfrg_C': '(((4,8,4),(1,1)),((2,2,4),(1,1))):(((128,1,16),(0,0)),((64,8,512),(0,0)))',
    'wgmma_64x32x32_e4m3_rs.shape_A': '((4,2,2),1,1)',
    'wgmma_64x32x32_e4m3_rs.shape_B': '((32,32),1,1)',
    'wgmma_64x32x32_e4m3_rs.shape_C': '((2,2,4),1,1)',
    'wgmma_64x32x32_e4m3_rs.part_A': '((4,2,2),1,1):((1,256,16),0,0)',
    'wgmma_64x32x32_e4m3_rs.part_B': '((32,32),1,1):((32,1),0,0)',
    'wgmma_64x32x32_e4m3_rs.part_C': '((2,2,4),1,1):((1,256,8),0,0)',
    'wgmma_64x32x32_e4m3_rs.frag_A': '((4,2,2),1,1):((1,4,8),0,0)',
    'wgmma_64x32x32_e4m3_rs.frag_C': '((2,2,4),1,1):((1,2,4),0,0)',
    'ldsm_x4_A_m2.S_TV': '((16,2,2,2),(8,1)):((1,256,16,0),(32,0))',
    'ldsm_x4_A_m2.D_TV': '((4,8,2,2),((2,2,2),1)):((64,1,16,0),((32,8,256),0))',
    'ldsm_x4_A_m2.tidfrg_S': '((16,2,2,2),(8,1),(2,2)):((32,8,512,0),(1,0),(1024,16))',
    'ldsm_x4_A_m2.part_S': '((8,1),2,2):((1,0),1024,16)',
    'ldsm_x4_A_m2.part_D': '(((2,2,2),1),2,2):(((1,256,8),0),1024,16)',
    'ldsm_x4_B_m4.S_TV': '((8,2,2,2,2),(8,1)):((1,256,8,0,16),(32,0))',
    'ldsm_x4_B_m4.D_TV': '((4,8,2,2),((2,2,2),1)):((64,1,0,16),((32,256,8),0))',
    'ldsm_x4_B_m4.tidfrg_S': '((8,2,2,2,2),(8,1),(1,2)):((32,8,256,0,512),(1,0),(0,16))',
    'ldsm_x4_B_m4.part_S': '((8,1),1,2):((1,0),0,16)',
    'ldsm_x4_B_m4.part_D': '(((2,2,2),1),1,2):(((1,8,256),0),0,16)',
    'ldsm_x2_B_m2.S_TV': '((8,2,4,2),(8,1)):((1,128,0,8),(16,0))',
    'ldsm_x2_B_m2.D_TV': '((4,8,2,2),((2,2),1)):((32,1,0,8),((16,128),0))',
    'ldsm_x2_B_m2.tidfrg_S': '((8,2,4,2),(8,1),(2,2)):((32,8,0,256),(1,0),(512,16))',
    'ldsm_x2_B_m2.part_S': '((8,1),2,2):((1,0),512,16)',
    'ldsm_x2_B_m2.part_D': '(((2,2),1),2,2):(((1,8),0),512,16)',
    'ldsm_x1_A_m1.S_TV': '((8,4),(8,(2,2))):((1,0),(16,(8,128)))',
    'ldsm_x1_A_m1.D_TV': '((4,8),(2,(2,2))):((32,1),(16,(8,128)))',
    'ldsm_x1_A_m1.tidfrg_S': '((8,4),(8,(2,2)),(1,1)):((16,0),(1,(128,8)),(0,0))',
    'ldsm_x1_A_m1.part_S': '((8,(2,2)),1,1):((1,(128,8)),0,0)',
    'ldsm_x1_A_m1.part_D': '((2,(2,2)),1,1):((1,(128,8)),0,0)',
    'ldsm_t_x4_B_m4.S_TV': '((16,2,2,2),(8,1)):((32,8,0,16),(1,0))',
    'ldsm_t_x4_B_m4.D_TV': '((4,8,2,2),((2,2,2),1)):((64,1,0,16),((32,256,8),0))',
    'ldsm_t_x4_B_m4.tidfrg_S': '((16,2,2,2),(8,1),(1,2)):((1,256,0,512),(32,0),(0,16))',
    'ldsm_t_x4_B_m4.part_S': '((8,1),1,2):((32,0),0,16)',
    'ldsm_t_x4_B_m4.part_D': '(((2,2,2),1),1,2):(((1,8,256),0),0,16)',
    'ldsm_t_x2_B_m2.S_TV': '((16,4,2),(8,1)):((16,0,8),(1,0))',
    'ldsm_t_x2_B_m2.D_TV': '((4,8,2,2),((2,2),1)):((32,1,0,8),((16,128),0))',
    'ldsm_t_x2_B_m2.tidfrg_S': '((16,4,2),(8,1),(2,2)):((1,0,256),(32,0),(512,16))',
    'ldsm_t_x2_B_m2.part_S': '((8,1),2,2):((32,0),512,16)',
    'ldsm_t_x2_B_m2.part_D': '(((2,2),1),2,2):(((1,8),0),512,16)',
    'stsm_x4_C_m3.S_TV': '((4,8,2,2),((2,2,2),1)):((64,1,16,256),((32,8,512),0))',
    'stsm_x4_C_m3.D_TV': '((16,2,2,2),(8,1)):((1,512,16,256),(32,0))',
    'stsm_x4_C_m3.tidfrg_S': '((4,8,2,2),((2,2,2),1),(1,1)):((2,32,512,8),((1,256,16),0),(0,0))',
    'stsm_x4_C_m3.part_S': '(((2,2,2),1),1,1):(((1,256,16),0),0,0)',
    'stsm_x4_C_m3.part_D': '((8,1),1,1):((1,0),0,0)',
    'univ_C_m2.S_TV': '((4,8,2,2),(1,(2,2))):((64,1,16,256),(0,(32,8)))',
    'univ_C_m2.D_TV': '((4,8,2,2),(1,(2,2))):((64,1,16,256),(0,(32,8)))',
    'univ_C_m2.tidfrg_S': '((4,8,2,2),(1,(2,2)),(2,2)):((2,32,512,8),(0,(1,256)),(1024,16))',
    'univ_C_m2.part_S': '((1,(2,2)),2,2):((0,(1,256)),1024,16)',
    'univ_C_m2.part_D': '((1,(2,2)),2,2):((0,(1,256)),1024,16)',
    'cpasync16_16x8.S_TV': '((8,16),(8,1)):((128,1),(16,0))',
    'cpasync16_16x8.D_TV': '((8,16),(8,1)):((128,1),(16,0))',
    'cpasync16_16x8.tidfrg_S': '((8,16),(8,1),(4,1)):((8,64),(1,0),(1024,0))',
    'cpasync16_16x8.part_S': '((8,1),4,1):((1,0),1024,0)',
    'cpasync16_16x8.part_D': '((8,1),4,1):((1,0),1024,0)',
    'cpasync8_32x4_colmajor.S_TV': '(128,(4,1)):(4,(1,0))',
    'cpasync8_32x4_colmajor.D_TV': '(128,(4,1)):(4,(1,0))',
    'cpasync8_32x4_colmajor.tidfrg_S': '((32,4),(4,1),(1,2)):((32,1),(8,0),(0,4))',
    'cpasync8_32x4_colmajor.part_S': '((4,1),1,2):((8,0),0,4)',
    'cpasync8_32x4_colmajor.part_D': '((4,1),1,2):((8,0),0,4)',
    'univ32_float_8x32.S_TV': '((32,8),(1,1)):((8,1),(0,0))',
    'univ32_float_8x32.D_TV': '((32,8),(1,1)):((8,1),(0,0))',
    'univ32_float_8x32.tidfrg_S': '((32,8),(1,1),(2,2)):((1,64),(0,0),(512,32))',
    'univ32_float_8x32.part_S': '((1,1),2,2):((0,0),512,32)',
    'univ32_float_8x32.part_D': '((1,1),2,2):((0,0),512,32)',
    'retile.ldsm_x4_A_m2.frag': '((2,2,2),2,2):((1,2,4),8,16)',
    'retile.ldsm_x4_A_m2': '((8,1),2,2):((1,0),8,16)',
    'retile.ldsm_x4_B_m4.frag': '((2,2),2,2):((1,2),4,8)',
    'retile.ldsm_x4_B_m4': '((8,1),1,2):((1,0),0,8)',
    'retile.stsm_x4_C_m3.frag': '((2,2),1,2):((1,2),0,4)',
    'retile.stsm_x4_C_m3': '((8,1),1,1):((1,0),0,0)',
    'smem.sA': 'Sw<3,3,3> o 0 o ((8,8),(64,1)):((64,512),(1,0))',
    'smem.ldsm_part_S.0': '0,1,2,3,4,5,6,7,2048,2049,2050,2051,2052,2053,2054,2055,16,17,18,19,20,21,22,23,2064,2065,2066,2067,2068,2069,2070,2071,32,33,34,35,36,37,38,39,2080,2081,2082,2083,2084,2085,2086,2087,48,49,50,51,52,53,54,55,2096,2097,2098,2099,2100,2101,2102,2103',
    'smem.ldsm_part_S.5': '360,361,362,363,364,365,366,367,2408,2409,2410,2411,2412,2413,2414,2415,376,377,378,379,380,381,382,383,2424,2425,2426,2427,2428,2429,2430,2431,328,329,330,331,332,333,334,335,2376,2377,2378,2379,2380,2381,2382,2383,344,345,346,347,348,349,350,351,2392,2393,2394,2395,2396,2397,2398,2399',
    'smem.ldsm_part_S.37': '1384,1385,1386,1387,1388,1389,1390,1391,3432,3433,3434,3435,3436,3437,3438,3439,1400,1401,1402,1403,1404,1405,1406,1407,3448,3449,3450,3451,3452,3453,3454,3455,1352,1353,1354,1355,1356,1357,1358,1359,3400,3401,3402,3403,3404,3405,3406,3407,1368,1369,1370,1371,1372,1373,1374,1375,3416,3417,3418,3419,3420,3421,3422,3423',
    'smem.ldsm_part_S.100': '1312,1313,1314,1315,1316,1317,1318,1319,3360,3361,3362,3363,3364,3365,3366,3367,1328,1329,1330,1331,1332,1333,1334,1335,3376,3377,3378,3379,3380,3381,3382,3383,1280,1281,1282,1283,1284,1285,1286,1287,3328,3329,3330,3331,3332,3333,3334,3335,1296,1297,1298,1299,1300,1301,1302,1303,3344,3345,3346,3347,3348,3349,3350,3351',
    'smem.cpasync_part_D.0': '0,1,2,3,4,5,6,7,1024,1025,1026,1027,1028,1029,1030,1031,2048,2049,2050,2051,2052,2053,2054,2055,3072,3073,3074,3075,3076,3077,3078,3079',
    'smem.cpasync_part_D.9': '64,65,66,67,68,69,70,71,1088,1089,1090,1091,1092,1093,1094,1095,2112,2113,2114,2115,2116,2117,2118,2119,3136,3137,3138,3139,3140,3141,3142,3143',
    'smem.cpasync_part_D.127': '960,961,962,963,964,965,966,967,1984,1985,1986,1987,1988,1989,1990,1991,3008,3009,3010,3011,3012,3013,3014,3015,4032,4033,4034,4035,4036,4037,4038,4039',
    'gmma.K_SW128_half': 'Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)',
    'gmma.MN_SW128_half': 'Sw<3,4,3> o smem_ptr[16b](unset) o (64,8):(1,64)',
    'gmma.K_SW64_e4m3': 'Sw<2,4,3> o smem_ptr[8b](unset) o (8,64):(64,1)',
    'gmma.MN_SW32_tf32': 'Sw<1,4,3> o smem_ptr[32b](unset) o (8,8):(1,8)',
    'gmma.K_INTER_half': 'Sw<0,4,3> o smem_ptr[16b](unset) o (8,8):(8,1)',
}

MMAS = {
    # name: (tiled MMA, A tile (M,K), B tile (N,K), C tile (M,N))
    "m16n8k16_1x1": (make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN), (16, 16), (8, 16), (16, 8)),
    "m16n8k16_2x2": (make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2, 2, 1)), (64, 32), (32, 32), (64, 32)),
    "m16n8k16_2x2_p32x32x16": (make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2, 2, 1), (32, 32, 16)),
                               (64, 32), (64, 32), (64, 64)),
    "m16n8k16_2x2_pN": (make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2, 2, 1),
                                       (32, Layout((8, 2, 2), (1, 16, 8)), 16)), (32, 32), (32, 32), (32, 32)),
    "m16n8k16_2x2_rowmajor": (make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, Layout((2, 2), (2, 1))),
                              (32, 16), (16, 16), (32, 16)),
    "m16n8k8_tf32_2x1": (make_tiled_mma(SM80_16x8x8_F32TF32TF32F32_TN, (2, 1, 1)), (32, 16), (8, 16), (32, 16)),
    "m16n8k32_s8_1x2": (make_tiled_mma(SM80_16x8x32_S32S8S8S32_TN, (1, 2, 1)), (16, 64), (16, 64), (16, 16)),
    "m16n8k32_e4m3_1x1": (make_tiled_mma(SM89_16x8x32_F32E4M3E4M3F32_TN), (16, 32), (8, 32), (16, 8)),
    "wgmma_64x64x16_ss": (make_tiled_mma(wgmma_atom(64, "f16")), (64, 16), (64, 16), (64, 64)),
    "wgmma_64x128x16_rs_2x1": (make_tiled_mma(wgmma_atom(128, "f16", operands="rs"), (2, 1, 1)),
                               (128, 32), (128, 32), (128, 128)),
    "wgmma_64x32x32_e4m3_rs": (make_tiled_mma(wgmma_atom(32, "e4m3", operands="rs")), (64, 32), (32, 32), (64, 32)),
}


def _row_major(shape):
    return make_layout(shape, LayoutRight)


def _host(shape):
    """A host tensor over 0, 1, 2, ... laid out row-major (what the oracle partitions)."""
    lay = _row_major(shape)
    return make_tensor(np.arange(lay.cosize(), dtype=np.int32), lay)


@pytest.mark.parametrize("name", sorted(MMAS))
def test_tiled_mma_layouts_match_cute(name):
    mma, sa, sb, sc = MMAS[name]
    got = {
        "vmnk": mma.thr_layout_vmnk, "tile": "(%d,%d,%d)" % mma.tile_shape,
        "A_TV": mma.get_layoutA_TV(), "B_TV": mma.get_layoutB_TV(), "C_TV": mma.get_layoutC_TV(),
        "thrfrg_A": mma.thrfrg_A(Layout(sa)), "thrfrg_B": mma.thrfrg_B(Layout(sb)), "thrfrg_C": mma.thrfrg_C(Layout(sc)),
    }
    for key, value in got.items():
        assert str(value) == CUTE[f"{name}.{key}"], key


def _shape_str(s):
    return "(" + ",".join(_shape_str(e) for e in s) + ")" if isinstance(s, tuple) else str(s)


@pytest.mark.parametrize("name", sorted(MMAS))
def test_partition_shapes_match_cute(name):
    mma, sa, sb, sc = MMAS[name]
    assert _shape_str(partition_shape_A(mma, sa)) == CUTE[f"{name}.shape_A"]
    assert _shape_str(partition_shape_B(mma, sb)) == CUTE[f"{name}.shape_B"]
    assert _shape_str(partition_shape_C(mma, sc)) == CUTE[f"{name}.shape_C"]


@pytest.mark.parametrize("name", sorted(MMAS))
def test_thread_partitions_match_cute(name):
    mma, sa, sb, sc = MMAS[name]
    thr = mma.get_slice(mma.size() - 3)
    # Partitioning a layout and partitioning a tensor are one code path: compare both.
    assert str(thr.partition_A(_row_major(sa))) == CUTE[f"{name}.part_A"]
    assert str(thr.partition_B(_row_major(sb))) == CUTE[f"{name}.part_B"]
    assert str(thr.partition_C(_row_major(sc))) == CUTE[f"{name}.part_C"]
    assert str(thr.partition_C(_host(sc)).layout) == CUTE[f"{name}.part_C"]
    assert str(thr.partition_fragment_C(_host(sc)).layout) == CUTE[f"{name}.frag_C"]
    if f"{name}.frag_A" in CUTE:
        assert str(thr.partition_fragment_A(_host(sa)).layout) == CUTE[f"{name}.frag_A"]


_M2 = MMAS["m16n8k16_2x2"][0]
_M3 = MMAS["m16n8k16_2x2_p32x32x16"][0]
_M4 = MMAS["m16n8k16_2x2_pN"][0]
_M1 = MMAS["m16n8k16_1x1"][0]
COPIES = {
    # name: (tiled copy, tile shape, thread)
    "ldsm_x4_A_m2": (make_tiled_copy_A(ldmatrix(4), _M2), (64, 32), 37),
    "ldsm_x4_B_m4": (make_tiled_copy_B(ldmatrix(4), _M4), (32, 32), 37),
    "ldsm_x2_B_m2": (make_tiled_copy_B(ldmatrix(2), _M2), (32, 32), 5),
    "ldsm_x1_A_m1": (make_tiled_copy_A(ldmatrix(1), _M1), (16, 16), 5),
    "ldsm_t_x4_B_m4": (make_tiled_copy_B(ldmatrix(4, trans=True), _M4), (32, 32), 37),
    "ldsm_t_x2_B_m2": (make_tiled_copy_B(ldmatrix(2, trans=True), _M2), (32, 32), 7),
    "stsm_x4_C_m3": (make_tiled_copy_C(stmatrix(4), _M3), (32, 32), 37),
    "univ_C_m2": (make_tiled_copy_C(universal_copy(32, "f32"), _M2), (64, 32), 100),
    "cpasync16_16x8": (make_tiled_copy(cp_async(16, "f16", cache="global"), Layout((16, 8), (8, 1)), Layout((1, 8))),
                       (64, 64), 9),
    "cpasync8_32x4_colmajor": (make_tiled_copy(cp_async(8, "f16"), Layout((32, 4)), Layout((4, 1))), (128, 8), 33),
    "univ32_float_8x32": (make_tiled_copy(universal_copy(32, "f32"), Layout((8, 32), (32, 1))), (16, 64), 40),
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_tiled_copy_layouts_match_cute(name):
    tc_, shape, thr = COPIES[name]
    assert str(tc_.get_layoutS_TV()) == CUTE[f"{name}.S_TV"]
    assert str(tc_.get_layoutD_TV()) == CUTE[f"{name}.D_TV"]
    assert str(tc_.tidfrg_S(_row_major(shape))) == CUTE[f"{name}.tidfrg_S"]
    assert str(tc_.get_slice(thr).partition_S(_row_major(shape))) == CUTE[f"{name}.part_S"]
    assert str(tc_.get_slice(thr).partition_D(_host(shape)).layout) == CUTE[f"{name}.part_D"]


@pytest.mark.parametrize("name, copy, mma, frag", [
    ("ldsm_x4_A_m2", COPIES["ldsm_x4_A_m2"][0], _M2, lambda t: _M2.get_slice(0).partition_fragment_A(t)),
    ("ldsm_x4_B_m4", COPIES["ldsm_x4_B_m4"][0], _M4, lambda t: _M4.get_slice(0).partition_fragment_B(t)),
    ("stsm_x4_C_m3", COPIES["stsm_x4_C_m3"][0], _M3, lambda t: _M3.get_slice(0).partition_fragment_C(t)),
])
def test_retile_matches_cute(name, copy, mma, frag):
    shape = {"ldsm_x4_A_m2": (64, 32), "ldsm_x4_B_m4": (32, 32), "stsm_x4_C_m3": (32, 32)}[name]
    fr = frag(make_tensor(np.zeros(shape[0] * shape[1], dtype=np.float16), Layout(shape)))
    assert str(fr.layout) == CUTE[f"retile.{name}.frag"]
    assert str(copy.get_slice(0).retile_D(fr).layout) == CUTE[f"retile.{name}"]
    assert str(copy.get_slice(0).retile_S(fr.layout)) == CUTE[f"retile.{name}"]


def _ints(s):
    return [int(v) for v in s.split(",")]


def test_swizzled_smem_partitions_address_what_cute_addresses():
    sw = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    sA = tile_to_shape(sw, (64, 64))
    assert str(sA) == CUTE["smem.sA"]
    smem = make_tensor(np.arange(64 * 64, dtype=np.int32), sA)
    s2r = COPIES["ldsm_x4_A_m2"][0]
    for t in (0, 5, 37, 100):
        assert s2r.get_slice(t).partition_S(smem).tolist() == _ints(CUTE[f"smem.ldsm_part_S.{t}"])
    g2s = COPIES["cpasync16_16x8"][0]
    for t in (0, 9, 127):
        assert g2s.get_slice(t).partition_D(smem).tolist() == _ints(CUTE[f"smem.cpasync_part_D.{t}"])


@pytest.mark.parametrize("key, major, swizzle_bytes, elem", [
    ("gmma.K_SW128_half", "K", 128, "f16"), ("gmma.MN_SW128_half", "MN", 128, "f16"),
    ("gmma.K_SW64_e4m3", "K", 64, "e4m3"), ("gmma.MN_SW32_tf32", "MN", 32, "tf32"),
    ("gmma.K_INTER_half", "K", 0, "f16"),
])
def test_gmma_layout_atoms_match_cute(key, major, swizzle_bytes, elem):
    """CuTe spells the swizzle in bytes (Sw<B,4,3> on the byte address); ours acts on element offsets,
    so its base is 4 - log2(element bytes)."""
    atom = gmma_layout_atom(major, swizzle_bytes, elem)
    sw, inner = CUTE[key].split(" o smem_ptr")[0], CUTE[key].split(" o ")[-1]
    assert str(atom.inner) == inner
    elem_bytes_log2 = {"f16": 1, "e4m3": 0, "tf32": 2}[elem]
    b = int(sw[3])
    assert (atom.outer.bits, atom.outer.base + elem_bytes_log2, atom.outer.shift) == (b, 4, 3)
